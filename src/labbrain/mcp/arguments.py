"""A tool call's arguments that do not fit the tool's schema, said in one line.

The SDK answers such a call with pydantic's report: several lines per argument, the error
type and a documentation URL. :func:`argument_problems` says the same in one line an
assistant can act on: each argument, the value given, and what is allowed.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

#: The longest rendering of a value given (a long text is cut).
VALUE_CHARS = 60


def _value(given: Any) -> str:
    text = repr(given)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _allowed(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not an argument of this tool"
    message = str(error["msg"])
    for lead in ("Input should be ", "Value error, "):
        if message.startswith(lead):
            message = message[len(lead) :]
            return f"should be {message}" if lead == "Input should be " else message
    return message[:1].lower() + message[1:]


def argument_problems(error: ValidationError) -> str:
    """One line naming each argument that does not fit: ``name = value: what is allowed``
    (the value left out where none was given), joined by ``; ``."""
    parts = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"]) or "arguments"
        given = "" if problem["type"] == "missing" else f" = {_value(problem.get('input'))}"
        parts.append(f"{name}{given}: {_allowed(problem)}")
    return "invalid arguments: " + "; ".join(parts)
