"""The SPARQL 1.1 Protocol's dataset parameters (``default-graph-uri``, ``named-graph-uri``).

The protocol gives them the meaning of FROM and FROM NAMED clauses, overriding any the query
has (SPARQL 1.1 Protocol, 2.1.4); an update's ``using-graph-uri`` / ``using-named-graph-uri``
have the meaning of USING and USING NAMED clauses on every operation with a WHERE clause, and
an update that has USING, USING NAMED or WITH of its own is refused with them (2.2.3):
:func:`with_using` writes them in. The endpoint's stores take the dataset from the query text,
so :func:`with_dataset` writes the parameters into the query as its dataset clause: the
query's own FROM / FROM NAMED clauses are blanked out and the new ones go where a dataset
clause belongs (before the WHERE clause; after a CONSTRUCT template; at the end of a DESCRIBE
without one). Comments, strings and IRIs are masked first, so text inside them never counts.
Nothing but the dataset clause changes, and no line breaks are added or removed, so a syntax
error keeps its line number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyoxigraph import NamedNode

from labbrain.http.errors import HttpError
from labbrain.rdf.sparql_policy import code_only
from labbrain.store.base import QUERY_FORMS

#: The parameters that set the dataset of a query, and those that would set an update's.
QUERY_PARAMS = ("default-graph-uri", "named-graph-uri")
UPDATE_PARAMS = ("using-graph-uri", "using-named-graph-uri")


def _keyword(words: str) -> re.Pattern[str]:
    """A SPARQL keyword (any case), not part of a prefixed name or a variable."""
    return re.compile(rf"(?<![\w:?$.-])(?:{words})(?![\w:.-])", re.IGNORECASE)


_FORM_RE = _keyword("|".join(QUERY_FORMS))
_OWN_DATASET_RE = _keyword("USING|WITH")
_DELETE_RE = re.compile(r"(?<![\w:?$.-])DELETE\s*$", re.IGNORECASE)
_FROM_RE = _keyword("FROM")
_NAMED_RE = re.compile(r"\s*(?:NAMED(?![\w:.-])\s*)?", re.IGNORECASE)
_WHERE_RE = _keyword("WHERE")
_MODIFIER_RE = _keyword("ORDER|GROUP|HAVING|LIMIT|OFFSET|VALUES")
_IRI_RE = re.compile(r"<[^<>\"{}|^`\\\s]*>")
_PNAME_RE = re.compile(r"(?:[A-Za-z\u00c0-\uffff][\w.\u00b7-]*)?:[\w.:%\u00b7-]*")


@dataclass(frozen=True)
class Dataset:
    """The graphs a request names: the default graph's and the named graphs, in order."""

    default: tuple[str, ...] = ()
    named: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.default or self.named)

    def clause(self, keyword: str = "FROM") -> str:
        """The dataset as FROM / FROM NAMED clauses (or USING / USING NAMED), on one line."""
        parts = [f"{keyword} <{iri}>" for iri in self.default]
        parts += [f"{keyword} NAMED <{iri}>" for iri in self.named]
        return " ".join(parts)


def _iri(name: str, value: str) -> str:
    """``value`` if it is an absolute IRI; else HttpError 400 naming the parameter."""
    try:
        NamedNode(value)
    except ValueError:
        raise HttpError(
            400, "ProtocolError", f"{name} must be an absolute IRI, not {value!r}"
        ) from None
    return value


def query_dataset(params: Mapping[str, list[str]]) -> Dataset:
    """The dataset the protocol parameters of a query name (empty when they name none).
    Raise HttpError 400 for a value that is not an absolute IRI."""
    default, named = (
        tuple(_iri(name, value) for value in params.get(name, [])) for name in QUERY_PARAMS
    )
    return Dataset(default, named)


def update_dataset(params: Mapping[str, list[str]]) -> Dataset:
    """The dataset an update's protocol parameters name (``using-graph-uri``,
    ``using-named-graph-uri``; empty when none). Raise HttpError 400 for a query's dataset
    parameters on an update, or a value that is not an absolute IRI."""
    for name in QUERY_PARAMS:
        if name in params:
            raise HttpError(
                400,
                "ProtocolError",
                f"{name} applies to queries, not updates; an update's graphs are set with "
                "using-graph-uri and using-named-graph-uri (or USING, USING NAMED, WITH)",
            )
    default, named = (
        tuple(_iri(name, value) for value in params.get(name, [])) for name in UPDATE_PARAMS
    )
    return Dataset(default, named)


def refuse_for_query(params: Mapping[str, list[str]]) -> None:
    """Raise HttpError 400 when a query request carries an update's dataset parameters."""
    for name in UPDATE_PARAMS:
        if name in params:
            raise HttpError(
                400,
                "ProtocolError",
                f"{name} applies to updates, not queries; a query's graphs are set with "
                "default-graph-uri and named-graph-uri (or FROM, FROM NAMED)",
            )


def _clause_end(text: str, start: int) -> int | None:
    """Where the FROM clause whose keyword ends at ``start`` ends (None: no graph name)."""
    named = _NAMED_RE.match(text, start)
    begin = named.end() if named else start
    match = _IRI_RE.match(text, begin) or _PNAME_RE.match(text, begin)
    return match.end() if match and match.end() > begin else None


def _from_spans(text: str, code: str) -> list[tuple[int, int]]:
    """The spans of the query's FROM / FROM NAMED clauses."""
    spans = []
    for match in _FROM_RE.finditer(code):
        end = _clause_end(text, match.end())
        if end is not None:
            spans.append((match.start(), end))
    return spans


def _closing_brace(code: str, start: int) -> int:
    """The index after the ``}`` that closes the ``{`` at ``start`` (the end if none)."""
    depth = 0
    for index in range(start, len(code)):
        if code[index] == "{":
            depth += 1
        elif code[index] == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(code)


def _ends_clause(code: str, index: int, *, describe: bool) -> bool:
    """True when a WHERE clause (or, for a DESCRIBE, a solution modifier) starts at
    ``index``."""
    if code[index] == "{" or _WHERE_RE.match(code, index):
        return True
    return describe and _MODIFIER_RE.match(code, index) is not None


def _before_where(code: str, start: int, *, describe: bool) -> int:
    """Where a dataset clause goes after a SELECT or DESCRIBE clause that ends somewhere
    after ``start``: before the WHERE keyword or the group pattern's ``{`` (outside the
    parentheses of projected expressions); for a DESCRIBE without a WHERE clause, before its
    solution modifiers or at the end."""
    depth = 0
    for index in range(start, len(code)):
        char = code[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and _ends_clause(code, index, describe=describe):
            return index
    return len(code)


def _insertion_point(code: str) -> int | None:
    """Where a dataset clause belongs in a query with none (None: no query form found)."""
    form = _FORM_RE.search(code)
    if form is None:
        return None
    kind = form.group(0).upper()
    if kind == "ASK":
        return form.end()
    if kind == "CONSTRUCT":
        after = len(code) - len(code[form.end() :].lstrip())
        if after < len(code) and code[after] == "{":
            return _closing_brace(code, after)
        return form.end()
    return _before_where(code, form.end(), describe=kind == "DESCRIBE")


def with_dataset(query: str, dataset: Dataset) -> str:
    """``query`` with ``dataset`` as its dataset clause, replacing the FROM / FROM NAMED
    clauses it had. Returned unchanged when ``dataset`` is empty or the text has no query
    form (the engine then reports the syntax error)."""
    if not dataset:
        return query
    code = code_only(query)
    spans = _from_spans(query, code)
    if spans:
        blanked = query
        for start, end in spans:  # blank out, keeping line breaks (and so line numbers)
            kept = re.sub(r"[^\n]", " ", blanked[start:end])
            blanked = blanked[:start] + kept + blanked[end:]
        first = spans[0][0]
        return f"{blanked[:first]}{dataset.clause()}{blanked[first:]}"
    at = _insertion_point(code)
    if at is None:
        return query
    return f"{query[:at]} {dataset.clause()} {query[at:]}"


def with_using(update: str, dataset: Dataset) -> str:
    """``update`` with ``dataset`` as the USING / USING NAMED clauses of each of its
    operations that has a WHERE clause (``DELETE WHERE { P }`` is written out as the
    ``DELETE { P } USING ... WHERE { P }`` it stands for). Returned unchanged when
    ``dataset`` is empty. Raise HttpError 400 when the update has USING, USING NAMED or WITH
    of its own (the protocol forbids both at once). Line breaks are kept (but for a DELETE
    WHERE's pattern, written twice), so a syntax error keeps its line."""
    if not dataset:
        return update
    code = code_only(update)
    if _OWN_DATASET_RE.search(code):
        raise HttpError(
            400,
            "ProtocolError",
            "the update has USING, USING NAMED or WITH of its own: give the graphs either "
            "there or as using-graph-uri / using-named-graph-uri, not both",
        )
    clause = dataset.clause("USING")
    edits: list[tuple[int, str]] = []
    depth = 0
    for index, char in enumerate(code):
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and _WHERE_RE.match(code, index):
            before = code[:index].rstrip()
            if before.endswith("}"):  # DELETE { ... } INSERT { ... } WHERE
                edits.append((index, f"{clause} "))
            elif _DELETE_RE.search(before):  # DELETE WHERE { P }
                start = code.find("{", index)
                if start >= 0:
                    pattern = update[start : _closing_brace(code, start)]
                    edits.append((index, f"{pattern} {clause} "))
    for index, text in reversed(edits):
        update = f"{update[:index]}{text}{update[index:]}"
    return update
