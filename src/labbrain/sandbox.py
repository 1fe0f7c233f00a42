"""Read-only SPARQL for untrusted callers (an assistant), with a time limit that holds.

pyoxigraph has no query timeout and a running query cannot be interrupted, so a query on an
on-disk store runs in a forked child process over a read-only snapshot; the parent waits at
most ``seconds`` and kills the child after that. Results are capped in rows and characters.
In-memory stores (tests, throwaway sessions) cannot be shared with a child: their queries run
in-process with the row and size caps but no time limit. On a remote store (``--endpoint``)
the server does the work: the query is sent from this process with the time limit as its
request time limit, and the answer is dropped unread when it comes later (set the server's
own limit too, e.g. ``oxigraph serve --timeout-s``, so that it stops working on it).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

from pyoxigraph import QueryBoolean, QuerySolutions, QueryTriples, RdfFormat

from labbrain.errors import (
    LabbrainError,
    QueryError,
    QueryNotAllowed,
    QuerySyntaxError,
    QueryTimeout,
)
from labbrain.models import SparqlResult
from labbrain.queries import python_value
from labbrain.remote import RemoteStore
from labbrain.sparql_policy import check_query, dataset_graphs, looks_like_update
from labbrain.store import OxigraphStore, QuadStore, open_store


def _answer(store: QuadStore, query: str, limit: int, max_chars: int) -> SparqlResult:
    result = store.query(query, union=not dataset_graphs(query))
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


def _child(conn: Connection, location: str, query: str, limit: int, max_chars: int) -> None:
    try:
        store = open_store(location, read_only=True)
        try:
            conn.send(("ok", _answer(store, query, limit, max_chars).model_dump()))
        finally:
            store.close()
    except LabbrainError as error:
        conn.send(("error", (type(error).__name__, str(error))))
    except Exception as error:  # reported to the parent as a plain message
        conn.send(("error", ("QueryError", str(error).splitlines()[0] if str(error) else "failed")))
    finally:
        conn.close()


def run_query(
    store: OxigraphStore | RemoteStore,
    query: str,
    *,
    limit: int,
    max_chars: int,
    seconds: float,
) -> SparqlResult:
    """Run a read-only SELECT / ASK / CONSTRUCT / DESCRIBE; the default graph is the union of
    all graphs unless the query names its dataset (FROM / FROM NAMED). Updates, SERVICE and
    LOAD are refused; the time limit holds on disk and remote stores."""
    check_query(query)
    _check_parses(query)
    if isinstance(store, RemoteStore):
        limited = store.with_timeout(seconds)
        try:
            return _answer(limited, query, limit, max_chars)
        finally:
            limited.close()
    if store.location == ":memory:":
        return _answer(store, query, limit, max_chars)
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_child, args=(sender, store.location, query, limit, max_chars), daemon=True
    )
    child.start()
    sender.close()
    try:
        if not receiver.poll(seconds):
            raise QueryTimeout(seconds)
        status, payload = receiver.recv()
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
        receiver.close()
    if status == "ok":
        return SparqlResult.model_validate(payload)
    name, message = payload
    raise QueryNotAllowed(message) if name == "QueryNotAllowed" else QueryError(message)


def _check_parses(query: str) -> None:
    """Raise QuerySyntaxError (or QueryNotAllowed for an update) before running anything:
    the query is tried on an empty store, which answers at once."""
    try:
        open_store(":memory:").query(query)
    except QuerySyntaxError:
        if looks_like_update(query):
            raise QueryNotAllowed("updates are not allowed here; this tool only reads") from None
        raise
