"""Read-only SPARQL for untrusted callers (an assistant), with a time limit that holds.

The query runs through :func:`labbrain.store.isolated.run_isolated`: in a child process killed
at the time limit on disk, in this process without a limit in memory, and on a remote store
(``--endpoint``) on the server, with the limit as the request's time limit (the answer is
dropped unread when it comes later; set the server's own limit too, e.g. ``oxigraph serve
--timeout-s``, so that it stops working on it). Results are capped in rows and characters.
"""

from __future__ import annotations

import functools
from typing import Any

from pyoxigraph import QueryBoolean, QuerySolutions, QueryTriples, RdfFormat

from labbrain.discourse.models import SparqlResult
from labbrain.errors import (
    QueryNotAllowed,
    QuerySyntaxError,
)
from labbrain.rdf.sparql_policy import check_query, looks_like_update
from labbrain.store.base import BASE_IRI, QuadStore, read_query
from labbrain.store.isolated import run_isolated
from labbrain.store.local import open_store
from labbrain.store.templates import python_value


def _answer(store: QuadStore, query: str, limit: int, max_chars: int) -> SparqlResult:
    result = read_query(store, query)
    if isinstance(result, QueryBoolean):
        return SparqlResult(kind="ask", boolean=bool(result))
    if isinstance(result, QueryTriples):
        text = (result.serialize(format=RdfFormat.TURTLE) or b"").decode("utf-8")
        truncated = len(text) > max_chars
        return SparqlResult(
            kind="construct",
            turtle=text[:max_chars],
            truncated=truncated,
            note=f"cut at {max_chars} characters; add LIMIT" if truncated else None,
        )
    assert isinstance(result, QuerySolutions)
    columns = [v.value for v in result.variables]
    rows: list[dict[str, str | None]] = []
    size = 0
    truncated = False
    for solution in result:
        if len(rows) >= limit or size > max_chars:
            truncated = True
            break
        row = {c: _text(python_value(solution[c])) for c in columns}
        size += sum(len(v or "") for v in row.values())
        rows.append(row)
    note = None
    if truncated:
        note = f"stopped at {len(rows)} rows / {max_chars} characters; add LIMIT or filters"
    return SparqlResult(
        kind="select",
        columns=columns,
        rows=rows,
        rowCount=len(rows),
        truncated=truncated,
        note=note,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_query(
    store: QuadStore,
    query: str,
    *,
    limit: int,
    max_chars: int,
    seconds: float,
) -> SparqlResult:
    """Run a read-only SELECT / ASK / CONSTRUCT / DESCRIBE; the default graph is the union of
    all graphs unless the query names its dataset (FROM / FROM NAMED). Updates, SERVICE, LOAD
    and FROM naming a graph the store lacks are refused; the time limit holds on disk and
    remote stores."""
    check_query(query, graphs=store.graphs)
    _check_parses(query)
    work = functools.partial(_answer, query=query, limit=limit, max_chars=max_chars)
    return run_isolated(store, work, seconds)


def _check_parses(query: str) -> None:
    """Raise QuerySyntaxError (or QueryNotAllowed for an update) before running anything:
    the query is tried on an empty store, which answers at once."""
    try:
        open_store(":memory:").query(query, base_iri=BASE_IRI)
    except QuerySyntaxError:
        if looks_like_update(query):
            raise QueryNotAllowed("updates are not allowed here; this tool only reads") from None
        raise
