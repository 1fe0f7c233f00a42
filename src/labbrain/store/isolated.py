"""Read-only work on a store with a time limit that holds.

pyoxigraph has no query timeout and a running query cannot be interrupted (signals wait for it),
so on an on-disk store the work runs in a forked child over a fresh read-only view of the
store: it sees every committed write, and the parent kills it at the time limit. A remote
store's server does the work, with the limit as the request's time limit. In-memory stores
cannot be shared with a child: their work runs in this process, without a time limit.

The MCP ``sparql_query`` tool (``sandbox``) and the console (``console_worker``) both run
their queries through :func:`run_isolated`.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from labbrain.errors import (
    LabbrainError,
    QueryError,
    QueryNotAllowed,
    QuerySyntaxError,
    QueryTimeout,
)
from labbrain.store.base import QuadStore
from labbrain.store.local import open_store

T = TypeVar("T")


#: An error as it crosses the pipe from the child: its kind and what rebuilds it.
_Encoded = tuple[str, Any]


def run_isolated(store: QuadStore, work: Callable[[QuadStore], T], seconds: float) -> T:
    """``work(store)``, stopped after ``seconds`` with QueryTimeout on disk and remote stores.

    On disk the result crosses a pipe, so it must pickle. A child that dies without an answer
    (killed for memory, say) gives QueryError; the child's errors come back as the same
    labbrain errors (syntax errors keep their position). When the caller is interrupted
    (KeyboardInterrupt), the child is killed first and the interrupt propagates.
    """
    limited = store.with_timeout(seconds)
    if limited is not None:  # the backend stops the query itself
        try:
            return work(limited)
        finally:
            limited.close()
    if store.directory is None:  # in memory: no other process can see it
        return work(store)
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, str(store.directory), work), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(seconds):
            raise QueryTimeout(seconds)
        try:
            status, payload = receiver.recv()
        except EOFError:
            raise QueryError("the query process ended without an answer (out of memory?)") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
        receiver.close()
    if status == "ok":
        return payload  # type: ignore[no-any-return]
    raise _decode(payload)


def _child(conn: Connection, location: str, work: Callable[[QuadStore], Any]) -> None:
    # Ctrl-C reaches the whole foreground process group; the parent decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        store = open_store(location, read_only=True)
        try:
            conn.send(("ok", work(store)))
        finally:
            store.close()
    except Exception as error:  # every error is reported to the parent
        conn.send(("error", _encode(error)))
    finally:
        conn.close()


def _encode(error: Exception) -> _Encoded:
    if isinstance(error, QuerySyntaxError):
        return "syntax", (error.message, error.line, error.column)
    if isinstance(error, QueryNotAllowed):
        return "refused", error.reason
    if isinstance(error, LabbrainError):
        return "error", str(error)
    text = str(error)
    return "error", text.splitlines()[0] if text else type(error).__name__


def _decode(encoded: _Encoded) -> QueryError:
    kind, payload = encoded
    if kind == "syntax":
        message, line, column = payload
        return QuerySyntaxError(message, line, column)
    if kind == "refused":
        return QueryNotAllowed(payload)
    return QueryError(payload)
