"""Read-only work on a store with a time limit that holds.

pyoxigraph has no query timeout and a running query cannot be interrupted (signals wait for it),
so on an on-disk store the work runs in a child process over a fresh read-only view of the
store: it sees every committed write, and the parent kills it at the time limit. How the child
starts is chosen in one place, :func:`process_context`, for every platform; the work and its
result cross to and from the child by pickle. A remote store's server does the work, with the
limit as the request's time limit. In-memory stores cannot be shared with a child: their work
runs in this process, without a time limit.

The MCP ``sparql_query`` tool (``mcp.sandbox``) and the console (``console.worker``) both run
their queries through :func:`run_isolated`. A caller that may go away before the answer (a
cancelled MCP call) runs the work inside :func:`cancellable`: setting its event stops the
child at once.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, TypeVar

from labbrain.errors import (
    LabbrainError,
    QueryCancelled,
    QueryError,
    QueryNotAllowed,
    QuerySyntaxError,
    QueryTimeout,
)
from labbrain.store.base import QuadStore
from labbrain.store.fresh import read_committed

if TYPE_CHECKING:  # ForkServerContext does not exist on Windows
    from multiprocessing.context import ForkServerContext, SpawnContext

T = TypeVar("T")


#: An error as it crosses the pipe from the child: its kind and what rebuilds it.
_Encoded = tuple[str, Any]

#: The event that cancels the isolated work run in this context (None: nobody cancels).
_CANCEL: ContextVar[threading.Event | None] = ContextVar("labbrain_cancel", default=None)
#: How often a cancellable wait for the child looks at its event, in seconds.
CANCEL_POLL_SECONDS = 0.05


@contextlib.contextmanager
def cancellable(event: threading.Event) -> Iterator[None]:
    """Inside, :func:`run_isolated` stops its child and raises QueryCancelled within
    :data:`CANCEL_POLL_SECONDS` of ``event`` being set (from any thread)."""
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def process_context() -> ForkServerContext | SpawnContext:
    """How a child for isolated work starts, the same choice on every platform that has it.

    ``forkserver`` where the platform offers it (POSIX): each child is forked from a server
    process started once, a fresh interpreter without threads (so forking it is safe, unlike
    forking this process, which may run an MCP server's or a prompt's threads). The server
    first imports the labbrain modules imported here when it starts, so a child starts in
    tens of milliseconds. Elsewhere (Windows) ``spawn``: a fresh interpreter for each child,
    about 0.3 s. ``fork`` is never used.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Only read when the server starts (the first child of this process).
        context.set_forkserver_preload(_labbrain_modules())
        return context
    return multiprocessing.get_context("spawn")


def _labbrain_modules() -> list[str]:
    """The labbrain modules imported in this process from files (not ``__main__`` ones: they
    run the command line)."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if (name == "labbrain" or name.startswith("labbrain."))
        and not name.endswith("__main__")
        and getattr(getattr(module, "__spec__", None), "origin", None) is not None
    )


def run_isolated(store: QuadStore, work: Callable[[QuadStore], T], seconds: float) -> T:
    """``work(store)``, stopped after ``seconds`` with QueryTimeout on disk and remote stores.

    On disk ``work`` and its result cross to and from a child process, so both must pickle:
    make ``work`` a module-level function or a ``functools.partial`` of one (no lambda, no
    nested function). A child that dies without an answer (killed for memory, say) gives
    QueryError; the child's errors come back as the same labbrain errors (syntax errors keep
    their position). When the caller is interrupted (KeyboardInterrupt), the child is killed
    first and the interrupt propagates; inside :func:`cancellable`, setting its event kills
    the child and raises QueryCancelled.
    """
    limited = store.with_timeout(seconds)
    if limited is not None:  # the backend stops the query itself
        try:
            return work(limited)
        finally:
            limited.close()
    if store.directory is None:  # in memory: no other process can see it
        return work(store)
    context = process_context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(sender, str(store.directory), work), daemon=True)
    started = False
    try:
        # A Ctrl-C while the child is being made would leave it running, untracked (seen
        # under load: the query went on after "cancelled"); it is held until the child is
        # known, then raised here, where the child is killed.
        with _interrupts_held():
            child.start()
            started = True
        sender.close()
        _wait_for_answer(receiver, seconds, _CANCEL.get())
        try:
            status, payload = receiver.recv()
        except EOFError:
            raise QueryError("the query process ended without an answer (out of memory?)") from None
    finally:
        if started:
            if child.is_alive():
                child.kill()
            child.join(timeout=5)
        sender.close()
        receiver.close()
    if status == "ok":
        return payload  # type: ignore[no-any-return]
    raise _decode(payload)


def _wait_for_answer(receiver: Connection, seconds: float, cancel: threading.Event | None) -> None:
    """Return once the child's answer can be read; QueryTimeout after ``seconds``,
    QueryCancelled soon after ``cancel`` is set."""
    if cancel is None:
        if not receiver.poll(seconds):
            raise QueryTimeout(seconds)
        return
    deadline = time.monotonic() + seconds
    while not receiver.poll(max(0.0, min(CANCEL_POLL_SECONDS, deadline - time.monotonic()))):
        if cancel.is_set():
            raise QueryCancelled()
        if time.monotonic() >= deadline:
            raise QueryTimeout(seconds)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """While inside, a Ctrl-C (SIGINT) is noted, not acted on; on exit it is acted on as the
    handler that was there says (a KeyboardInterrupt, by default). Only the main thread
    handles signals: elsewhere this does nothing. (Blocking the signal would not do: the
    kernel hands a process's SIGINT to any thread that does not block it.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: pressed.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pressed and previous is not signal.SIG_IGN:
            if callable(previous):
                previous(signal.SIGINT, None)
            else:
                raise KeyboardInterrupt


def _child(conn: Connection, location: str, work: Callable[[QuadStore], Any]) -> None:
    # Ctrl-C reaches the whole foreground process group; the parent decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # The view of a bulk write's journal may lose its files to the writer's commit:
        # read_committed reads again from the store as committed then.
        conn.send(("ok", read_committed(location, work)))
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
