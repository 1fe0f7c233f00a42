"""Shaping a console query's result (:class:`labbrain.console.worker.Outcome`) for people
and files: table cells with the predeclared prefixes, SPARQL JSON / CSV / TSV results, Turtle
(and JSON-LD) for CONSTRUCT and DESCRIBE, and plain-text tables for files.

Serialisation is pyoxigraph's own, so files are standard SPARQL results and RDF documents.
"""

from __future__ import annotations

import io
from pathlib import Path

from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    Triple,
    parse,
    parse_query_results,
    serialize,
)
from rich.console import Console
from rich.table import Table

from labbrain.console.worker import Outcome, term_text, tsv_results
from labbrain.errors import InvalidArgument
from labbrain.rdf.namespaces import PREFIXES

#: The formats of the console, the first one the default.
FORMATS = ("table", "json", "csv", "tsv", "turtle")

#: Export file suffixes and the format they mean.
SUFFIXES = {
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".txt": "table",
}

_RESULTS_FORMATS = {
    "json": QueryResultsFormat.JSON,
    "csv": QueryResultsFormat.CSV,
    "tsv": QueryResultsFormat.TSV,
}
_GRAPH_COLUMNS = ["subject", "predicate", "object"]
_LONGEST_FIRST = sorted(PREFIXES.items(), key=lambda item: -len(item[1]))


def compact(iri: str) -> str:
    """``iri`` as a prefixed name when a predeclared prefix covers it, else the IRI itself."""
    for prefix, namespace in _LONGEST_FIRST:
        if iri.startswith(namespace):
            local = iri[len(namespace) :]
            if local and all(c.isalnum() or c in "_-." for c in local) and local[-1] != ".":
                return f"{prefix}:{local}"
    return iri


def cell(term: NamedNode | BlankNode | Literal | Triple | None) -> str:
    """How a term reads in a table: prefixed names, literal values, ``_:`` blank nodes."""
    if term is None:
        return ""
    if isinstance(term, NamedNode):
        return compact(term.value)
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if isinstance(term, Literal):
        return term.value
    return f"<< {cell(term.subject)} {cell(term.predicate)} {cell(term.object)} >>"


def solutions(outcome: Outcome) -> QuerySolutions:
    """The solutions of a SELECT outcome (a fresh iterator on every call)."""
    parsed = parse_query_results(outcome.data, QueryResultsFormat.TSV)
    assert isinstance(parsed, QuerySolutions)
    return parsed


def triples(outcome: Outcome) -> list[Triple]:
    """The triples of a CONSTRUCT / DESCRIBE outcome."""
    return [q.triple for q in parse(outcome.data, RdfFormat.N_TRIPLES)]


def table_rows(outcome: Outcome) -> tuple[list[str], list[list[str]]]:
    """Column names and cell texts of an outcome (ASK: one ``boolean`` column)."""
    if outcome.kind == "ask":
        return ["boolean"], [[outcome.data.decode()]]
    if outcome.kind == "graph":
        return _GRAPH_COLUMNS, [
            [cell(t.subject), cell(t.predicate), cell(t.object)] for t in triples(outcome)
        ]
    result = solutions(outcome)
    width = len(result.variables)
    columns = [v.value for v in result.variables]
    return columns, [[cell(s[i]) for i in range(width)] for s in result]


def results_table(columns: list[str], rows: list[list[str]]) -> Table:
    """A rich table of ``rows`` under ``columns``; long values fold onto more lines rather
    than being cut."""
    table = Table()
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def text(outcome: Outcome, fmt: str) -> bytes:
    """The outcome as a document in ``fmt`` (json, csv, tsv or turtle; not table).

    SELECT and ASK give SPARQL results; CONSTRUCT and DESCRIBE give Turtle, JSON-LD (json)
    or subject/predicate/object rows (csv, tsv). Turtle for a SELECT or ASK raises
    InvalidArgument.
    """
    if outcome.kind == "graph":
        found = triples(outcome)
        if fmt == "turtle":
            return serialize(found, format=RdfFormat.TURTLE, prefixes=PREFIXES) or b""
        if fmt == "json":
            return serialize(found, format=RdfFormat.JSON_LD) or b""
        rows = ([term_text(t.subject), term_text(t.predicate), term_text(t.object)] for t in found)
        parsed = parse_query_results(tsv_results(_GRAPH_COLUMNS, rows), QueryResultsFormat.TSV)
        return parsed.serialize(format=_RESULTS_FORMATS[fmt]) or b""
    if fmt == "turtle":
        raise InvalidArgument(
            "format", "turtle is for CONSTRUCT and DESCRIBE results; use table, json, csv or tsv"
        )
    parsed = parse_query_results(outcome.data, QueryResultsFormat.TSV)
    return parsed.serialize(format=_RESULTS_FORMATS[fmt]) or b""


def plain_table(outcome: Outcome) -> bytes:
    """The outcome as a plain-text table (no colours), every row, for a file."""
    if outcome.kind == "ask":
        return outcome.data + b"\n"
    columns, rows = table_rows(outcome)
    buffer = io.StringIO()
    writer = Console(file=buffer, width=10_000, color_system=None, highlight=False, markup=False)
    writer.print(results_table(columns, rows), crop=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()).encode() + b"\n"


def format_for(path: Path, current: str) -> str:
    """The format a file gets: from its suffix when known, else the current format."""
    return SUFFIXES.get(path.suffix.lower(), current)


def document(outcome: Outcome, fmt: str) -> bytes:
    """The outcome in ``fmt``, tables included, as the bytes of a file."""
    return plain_table(outcome) if fmt == "table" else text(outcome, fmt)
