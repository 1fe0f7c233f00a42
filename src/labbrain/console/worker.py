"""Running one console query where it can be stopped, and bringing its result back.

pyoxigraph has no query timeout and a running query ignores signals, so a console query on an
on-disk store runs in a child process over a fresh read-only view of the store; the
console waits at most the time limit, and kills the child on timeout or Ctrl-C. In-memory
stores cannot be shared with a child: their queries run in the console's own process. A
remote store (``--endpoint``) is queried from this process with the limit as the request's
time limit.

The result crosses the process boundary as bytes in a lossless standard form: SPARQL TSV
results for SELECT (at most ``cap`` rows), ``true`` / ``false`` for ASK, N-Triples for
CONSTRUCT and DESCRIBE. :mod:`labbrain.console.formats` turns them into tables and files.
The default graph of a console query is the union of all graphs.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal as Kind

from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
    serialize,
)

from labbrain.errors import (
    QuerySyntaxError,
)
from labbrain.rdf.sparql_policy import check_query, looks_like_update
from labbrain.settings import MEMORY_STORE
from labbrain.store.base import BASE_IRI, QuadStore, read_query
from labbrain.store.isolated import run_isolated
from labbrain.store.local import open_store


@dataclass(frozen=True)
class Outcome:
    """The result of one query, as bytes (see the module docstring for their form).

    ``rows`` counts solutions (SELECT) or triples (CONSTRUCT / DESCRIBE) kept; ``truncated``
    is True when the query had more than the cap; ``seconds`` is the time spent running the
    query and reading its results.
    """

    kind: Kind["select", "ask", "graph"]
    data: bytes
    rows: int
    truncated: bool
    seconds: float


def statement_kind(text: str) -> Kind["query", "update"]:
    """Whether ``text`` is a query or an update, without running it against the store.

    Raises QuerySyntaxError (with its position) when it is neither, QueryNotAllowed for
    SERVICE (checked first: the engine would call the endpoint). A query is tried on an empty
    in-memory store, which answers at once.
    """
    check_query(text)
    probe = open_store(MEMORY_STORE)
    try:
        probe.query(text, base_iri=BASE_IRI)
    except QuerySyntaxError:
        if looks_like_update(text):
            return "update"
        raise
    finally:
        probe.close()
    return "query"


def term_text(term: NamedNode | BlankNode | Literal | Triple) -> str:
    """A term in the syntax of SPARQL TSV results (N-Triples, triple terms as ``<<( )>>``)."""
    if isinstance(term, Triple):
        parts = (term_text(term.subject), term_text(term.predicate), term_text(term.object))
        return "<<( " + " ".join(parts) + " )>>"
    return str(term)


def tsv_results(variables: list[str], rows: Iterator[list[str]]) -> bytes:
    """SPARQL TSV results from variable names and rows of cells already in term syntax."""
    lines = ["\t".join("?" + v for v in variables)]
    lines.extend("\t".join(row) for row in rows)
    return ("\n".join(lines) + "\n").encode("utf-8")


def execute(store: QuadStore, text: str, cap: int) -> Outcome:
    """Run a read-only query on ``store`` (default graph: the union of all graphs, unless
    the query names its dataset with FROM / FROM NAMED), keeping
    at most ``cap`` solutions or triples. SERVICE, and FROM / FROM NAMED naming a graph the
    store does not hold, are refused."""
    started = time.perf_counter()
    result = read_query(store, text)
    if isinstance(result, QueryBoolean):
        data = b"true" if bool(result) else b"false"
        return Outcome("ask", data, 1, False, time.perf_counter() - started)
    if isinstance(result, QueryTriples):
        triples: list[Triple] = []
        truncated = False
        for triple in result:
            if len(triples) >= cap:
                truncated = True
                break
            triples.append(triple)
        data = serialize(triples, format=RdfFormat.N_TRIPLES) or b""
        return Outcome("graph", data, len(triples), truncated, time.perf_counter() - started)
    assert isinstance(result, QuerySolutions)
    variables = [v.value for v in result.variables]
    rows: list[list[str]] = []
    truncated = False
    for solution in result:
        if len(rows) >= cap:
            truncated = True
            break
        rows.append(
            ["" if solution[i] is None else term_text(solution[i]) for i in range(len(variables))]
        )
    data = tsv_results(variables, iter(rows))
    return Outcome("select", data, len(rows), truncated, time.perf_counter() - started)


def run_query(store: QuadStore, text: str, *, cap: int, seconds: float) -> Outcome:
    """Run a read-only query with a time limit that holds (on-disk and remote stores).

    On disk, the query runs in a child process over a fresh read-only view of the store, so it
    sees every committed write. The child is killed after ``seconds`` (QueryTimeout) or when
    the caller is interrupted (KeyboardInterrupt propagates after the kill). A remote store's
    server runs the query, with ``seconds`` as the request's time limit; Ctrl-C abandons the
    request. In-memory stores run the query in this process, without a time limit.
    """
    return run_isolated(store, functools.partial(execute, text=text, cap=cap), seconds)
