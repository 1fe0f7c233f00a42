"""Bounded lookups: the queries the endpoint may answer in its own process, without a worker.

A query runs in a worker process so that it can be killed at the time limit. A query whose
work is bounded by the row cap needs no killing: :func:`bounded_rows` recognises one shape,

    [PREFIX / BASE declarations]
    SELECT (* | ?var ...) [WHERE] { s p o [.] } [LIMIT n]
    CONSTRUCT WHERE { s p o [.] } [LIMIT n]

with exactly one triple pattern whose subject is an IRI or a variable, predicate an IRI, a
variable or ``a``, object an IRI, a variable or a literal, and no variable used twice in it.
No FROM, FILTER, OPTIONAL, UNION, GRAPH, property path, subquery, DISTINCT, ORDER BY, GROUP
BY, OFFSET, expression or blank node: any token the grammar does not expect rejects the
query, which then goes to a worker as before. Signed numbers are not read at all (``?s
dg:p +1`` is the path ``dg:p+``, not a number), nor any escape outside a string.

Why that is bounded: the engine evaluates such a query lazily, as one scan of one index
range, and every index entry it visits is one solution (a variable used twice would make it
skip entries: ``?x ?p ?x`` visits the whole store for a few answers; the union default graph
is read from the named graphs' indexes and keeps duplicates, so nothing is skipped there
either). The endpoint stops reading at the row cap (``write_answer``), and ``LIMIT`` stops
the engine; so at most ``min(LIMIT, cap)`` rows are answered and one more entry visited, and
each solution of a CONSTRUCT WHERE gives exactly one triple. :func:`bounded_rows` returns
that bound, and the endpoint answers in process only when it is at most :data:`MOST_ROWS`
(the default row cap). A point lookup answers a few rows in well under a millisecond; the
largest answer allowed here (10,000 rows, some MB of JSON) takes about a tenth of a second,
during which the server's event loop waits.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: The largest bound (rows answered) of a query answered in the server's own process.
MOST_ROWS = 10_000

#: Longest query text considered (a lookup is short; longer texts go to a worker unread).
MAX_TEXT = 4_096

_TOKEN_RE = re.compile(
    r"""
    (?P<space>\s+|\#[^\n]*)
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+)
    | (?P<string>"(?:[^"\\\n\r]|\\.)*"|'(?:[^'\\\n\r]|\\.)*')
    | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
    | (?P<datatype>\^\^)
    | (?P<number>\d+\.\d*[eE][+-]?\d+|\.?\d+[eE][+-]?\d+|\d*\.\d+|\d+)
    | (?P<pname>(?:[A-Za-z\u00c0-\uffff](?:[\w.\u00b7-]*[\w\u00b7-])?)?:
                (?:[\w\u00c0-\uffff:](?:[\w.:\u00b7-]*[\w:\u00b7-])?)?)
    | (?P<word>[A-Za-z]+)
    | (?P<punct>[{}.*])
    """,
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]] | None:
    """(kind, text) of every token but spaces and comments; None when some text is not a
    token of the recognised subset."""
    found: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        match = _TOKEN_RE.match(text, at)
        if match is None or match.end() == at:
            return None
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            found.append((kind, match.group(0)))
        at = match.end()
    return found


class _Reject(Exception):
    pass


class _Reader:
    """A cursor over the tokens; every unexpected token raises _Reject."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, *kinds: str) -> str:
        kind, text = self.peek()
        if kind not in kinds:
            raise _Reject
        self.at += 1
        return text

    def keyword(self, word: str) -> bool:
        """Consume the keyword ``word`` (any case) if it comes next."""
        kind, text = self.peek()
        if kind == "word" and text.upper() == word:
            self.at += 1
            return True
        return False

    def punct(self, char: str) -> bool:
        """Consume the punctuation ``char`` if it comes next."""
        if self.peek() == ("punct", char):
            self.at += 1
            return True
        return False


def _object(reader: _Reader) -> str | None:
    """Read the object of the pattern; its variable name, or None for a constant."""
    kind, text = reader.peek()
    if kind in ("iri", "pname", "var", "number"):
        reader.at += 1
        return text[1:] if kind == "var" else None
    if kind == "word" and text in ("true", "false"):
        reader.at += 1
        return None
    reader.take("string")
    if reader.peek()[0] == "lang":
        reader.at += 1
    elif reader.peek()[0] == "datatype":
        reader.at += 1
        reader.take("iri", "pname")
    return None


def _pattern(reader: _Reader) -> None:
    """Read ``{ s p o [.] }``; reject a variable used twice."""
    if not reader.punct("{"):
        raise _Reject
    subject = reader.take("iri", "pname", "var")
    if reader.peek() == ("word", "a"):
        reader.at += 1
        predicate = "a"
    else:
        predicate = reader.take("iri", "pname", "var")
    names = [term[1:] for term in (subject, predicate) if term[0] in "?$"]
    obj = _object(reader)
    if obj is not None:
        names.append(obj)
    if len(set(names)) != len(names):
        raise _Reject
    reader.punct(".")
    if not reader.punct("}"):
        raise _Reject


def _limit(reader: _Reader) -> int | None:
    """Read an optional ``LIMIT n``."""
    if not reader.keyword("LIMIT"):
        return None
    text = reader.take("number")
    if not text.isdigit():
        raise _Reject
    return int(text)


@lru_cache(maxsize=1024)
def _shape(text: str) -> tuple[bool, int | None]:
    """(whether ``text`` has the bounded shape, its LIMIT)."""
    tokens = _tokens(text)
    if tokens is None:
        return False, None
    reader = _Reader(tokens)
    try:
        while True:
            if reader.keyword("PREFIX"):
                name = reader.take("pname")
                if not name.endswith(":") or name.count(":") != 1:
                    raise _Reject
                reader.take("iri")
            elif reader.keyword("BASE"):
                reader.take("iri")
            else:
                break
        if reader.keyword("SELECT"):
            if not reader.punct("*"):
                reader.take("var")
                while reader.peek()[0] == "var":
                    reader.at += 1
            reader.keyword("WHERE")
        elif reader.keyword("CONSTRUCT"):
            if not reader.keyword("WHERE"):
                raise _Reject
        else:
            raise _Reject
        _pattern(reader)
        limit = _limit(reader)
        reader.take("end")
    except _Reject:
        return False, None
    return True, limit


def bounded_rows(query: str, max_rows: int) -> int | None:
    """The most rows an answer to ``query`` holds under a row cap of ``max_rows`` when the
    query has the bounded shape (module docstring: the engine then visits at most one index
    entry more), else None."""
    if len(query) > MAX_TEXT:
        return None
    bounded, limit = _shape(query)
    if not bounded:
        return None
    return max_rows if limit is None else min(limit, max_rows)


def answers_in_process(query: str, max_rows: int) -> bool:
    """True when ``query`` may run in the server's own process: bounded (see
    :func:`bounded_rows`) by at most :data:`MOST_ROWS` rows."""
    bound = bounded_rows(query, max_rows)
    return bound is not None and bound <= MOST_ROWS
