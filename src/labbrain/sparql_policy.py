"""What user-sent SPARQL may do: no SERVICE (outbound HTTP from the query engine), no LOAD
(outbound HTTP from an update). Checked on the query text with comments, strings and IRIs
blanked out, so a keyword inside a literal or an IRI does not trip it."""

from __future__ import annotations

import re

from labbrain.errors import QueryNotAllowed

_MASK_RE = re.compile(
    r"""
    \#[^\n]*                        # comment
    | '''(?:[^'\\]|\\.|'(?!''))*''' # long single-quoted string
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"  # long double-quoted string
    | '(?:[^'\\\n]|\\.)*'           # short strings
    | "(?:[^"\\\n]|\\.)*"
    | <[^<>"{}|^`\\\s]*>            # IRIs
    """,
    re.VERBOSE,
)
# Keywords only: not a prefixed name (sioc:Service, ex:load-x) nor a variable (?service).
_SERVICE_RE = re.compile(r"(?<![\w:?$.-])SERVICE(?![\w:.-])", re.IGNORECASE)
_LOAD_RE = re.compile(r"(?<![\w:?$.-])LOAD(?![\w:.-])", re.IGNORECASE)
_UPDATE_RE = re.compile(
    r"(?<![\w:?$.-])(INSERT|DELETE|DROP|CLEAR|CREATE|LOAD|ADD|MOVE|COPY)(?![\w:.-])",
    re.IGNORECASE,
)


def code_only(sparql: str) -> str:
    """The query with comments, string literals and IRIs replaced by spaces."""
    return _MASK_RE.sub(lambda m: " " * len(m.group(0)), sparql)


def check_query(sparql: str) -> None:
    """Raise QueryNotAllowed if a query uses SERVICE."""
    if _SERVICE_RE.search(code_only(sparql)):
        raise QueryNotAllowed("SERVICE is not allowed: labbrain never queries remote endpoints")


def looks_like_update(sparql: str) -> bool:
    """True when the text uses an update keyword (to explain a parse failure as a query)."""
    return _UPDATE_RE.search(code_only(sparql)) is not None


def check_update(sparql: str) -> None:
    """Raise QueryNotAllowed if an update uses LOAD or SERVICE."""
    code = code_only(sparql)
    if _LOAD_RE.search(code):
        raise QueryNotAllowed("LOAD is not allowed: labbrain never fetches remote data")
    if _SERVICE_RE.search(code):
        raise QueryNotAllowed("SERVICE is not allowed: labbrain never queries remote endpoints")
