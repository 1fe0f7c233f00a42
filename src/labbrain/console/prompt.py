"""Reading console input: when a statement is complete, and the prompt_toolkit session.

The rule: a dot command (``.help``) runs at Enter; a query runs at Enter on an empty line
when its brackets are balanced (outside strings, IRIs and comments), so blank lines inside
``{ ... }`` are kept. Alt-Enter (Esc Enter) runs the text at once. Scripts piped to the
console are split by the same rule.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from platformdirs import user_data_dir
from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.completion import Completer
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import PygmentsLexer

from labbrain.rdf.sparql_policy import code_only

HISTORY_FILE = "console_history"
PROMPT = "sparql> "
CONTINUATION = "   ...> "
RULE = "Enter on an empty line runs the query, Alt-Enter runs it at once"
#: The rule as the bottom toolbar says it (its first item).
TOOLBAR_RULE = "Enter on empty line or Alt-Enter runs"
#: The width assumed when no terminal says its own.
DEFAULT_COLUMNS = 80

#: The commands that leave the console (kept out of the history).
QUIT_COMMANDS = (".quit", ".exit", ".q")

_PAIRS = {"{": "}", "(": ")", "[": "]"}


def balanced(text: str) -> bool:
    """True when every bracket opened in ``text`` (outside strings, IRIs and comments) is
    closed. Stray closing brackets count as balanced: the parser reports them."""
    depth = 0
    for char in code_only(text):
        if char in _PAIRS:
            depth += 1
        elif char in _PAIRS.values():
            depth = max(0, depth - 1)
    return depth == 0


def is_command(text: str) -> bool:
    """True for a dot command (``.format csv``): it runs at the first Enter."""
    return text.lstrip().startswith(".")


def runs_now(document: Document) -> bool:
    """True when Enter should run what was typed (see the module docstring)."""
    text = document.text
    if not text.strip() or (is_command(text) and "\n" not in text.strip()):
        return True
    return document.is_cursor_at_the_end and document.current_line.strip() == "" and balanced(text)


def split_script(text: str) -> Iterator[str]:
    """The statements of a script: dot commands one per line, queries ended by an empty line
    with balanced brackets (or by the end of the text)."""
    pending: list[str] = []
    for line in text.splitlines():
        if not pending:
            if not line.strip():
                continue
            if is_command(line):
                yield line.strip()
                continue
        if not line.strip() and balanced("\n".join(pending)):
            yield "\n".join(pending).strip()
            pending = []
            continue
        pending.append(line)
    if any(line.strip() for line in pending):
        yield "\n".join(pending).strip()


class _SkipQuit(History):
    """A history that does not keep the commands that leave the console, so that arrow-up
    in the next session recalls the last statement run."""

    def append_string(self, string: str) -> None:
        if string.strip() not in QUIT_COMMANDS:
            super().append_string(string)


class ConsoleFileHistory(_SkipQuit, FileHistory):
    """The history file of a store directory."""


class ConsoleMemoryHistory(_SkipQuit, InMemoryHistory):
    """The history of a session on an in-memory store (or an unwritable directory)."""


def history_for(store_location: str, *, remote: bool = False) -> tuple[History, Path | None]:
    """The input history, kept across sessions: ``console_history`` in the store directory,
    or for a remote store a file per endpoint in the user data directory. In memory (gone at
    exit) for in-memory stores or a directory this user cannot write. Returns the history and
    its file, if any."""
    if store_location == ":memory:":
        return ConsoleMemoryHistory(), None
    if remote:
        digest = hashlib.sha256(store_location.encode()).hexdigest()[:16]
        directory = Path(user_data_dir("labbrain", appauthor=False)) / "console"
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            return ConsoleMemoryHistory(), None
        path = directory / f"history-{digest}"
    else:
        path = Path(store_location) / HISTORY_FILE
    writable = os.access(path, os.W_OK) if path.exists() else os.access(path.parent, os.W_OK)
    if not writable:
        return ConsoleMemoryHistory(), None
    return ConsoleFileHistory(str(path)), path


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None:
            buffer.complete_state = None  # keep the completion chosen, do not run yet
            return
        if runs_now(buffer.document):
            buffer.validate_and_handle()
            return
        buffer.insert_text("\n")

    return bindings


def fit_toolbar(parts: Sequence[str], width: int) -> str:
    """The bottom toolbar in at most ``width`` columns: ``parts`` (most important first)
    after one space, separated by `` | ``. Whole parts are left out from the end while the
    line is too wide, so it always starts with its first word; a first part wider than the
    terminal is cut after its last whole word that fits, marked with "…"."""
    line = ""
    for part in parts:
        longer = f"{line} | {part}" if line else f" {part}"
        if len(longer) > width:
            break
        line = longer
    if line or not parts:
        return line
    words = f" {parts[0]}".split(" ")
    for count in range(len(words) - 1, 1, -1):
        cut = " ".join(words[:count]) + "…"
        if len(cut) <= width:
            return cut
    return " …"[-width:] if width > 0 else ""


def _columns() -> int:
    """The width of the terminal the running prompt draws on."""
    app = get_app_or_none()
    return app.output.get_size().columns if app is not None else DEFAULT_COLUMNS


def _continuation(width: int, line_number: int, wrap_count: int) -> FormattedText:
    return FormattedText([("class:continuation", CONTINUATION)])


def prompt_session(
    history: History, completer: Completer, toolbar: Callable[[], Sequence[str]]
) -> PromptSession[str]:
    """A multi-line prompt with SPARQL highlighting, Tab completion, the Enter rule above and
    a bottom toolbar: the items ``toolbar`` gives at each redraw, fitted to the terminal's
    width (see fit_toolbar)."""
    return PromptSession(
        message=PROMPT,
        multiline=True,
        prompt_continuation=_continuation,
        key_bindings=_key_bindings(),
        lexer=PygmentsLexer.from_filename("query.rq"),  # Pygments' SPARQL lexer
        completer=completer,
        complete_while_typing=False,
        history=history,
        bottom_toolbar=lambda: fit_toolbar(toolbar(), _columns()),
        enable_history_search=False,
    )
