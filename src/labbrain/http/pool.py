"""Where the endpoint's queries run: worker processes with a time limit that holds.

pyoxigraph has no query timeout and a running query cannot be interrupted, so each query of
an on-disk store runs in one of a few long-lived worker processes, each with a read-only view
of the store. The caller waits at most the time limit; past it the worker is killed (taking
its query with it) and a fresh one takes its place, so the server stays up and the next query
runs normally.

A worker keeps its read-only view open between queries and reopens it when the store's files
change (any write, by this process or another: store.fresh), so answers are always as fresh as
the last committed write, at the cost of a few ``stat`` calls per query. A worker opens its view
as it starts and then reports ready; the pool's start waits for that, so the first queries do
not wait for interpreters to start. Jobs and replies go over one socket per worker, kept for
its life.

Stores that cannot be opened by another process (in memory, or a remote backend with its own
limits) run queries in-process instead, with the row cap but no time limit of labbrain's own.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from labbrain.errors import (
    LabbrainError,
    QueryError,
    QueryNotAllowed,
    QuerySyntaxError,
    QueryTimeout,
    StoreError,
)
from labbrain.http.errors import HttpError
from labbrain.http.results import Answer, write_answer
from labbrain.rdf.sparql_policy import looks_like_update
from labbrain.store.base import QuadStore
from labbrain.store.fresh import Snapshot

log = logging.getLogger("labbrain.http")

#: What a worker sends once it has started (before any reply).
READY = ("ready", None)

UPDATE_AS_QUERY = (
    "this is a SPARQL update: send it as an update (form field `update` or "
    "Content-Type application/sparql-update) to an endpoint started with --allow-update"
)


@dataclass(frozen=True)
class QueryJob:
    """One query to run: its text, the client's Accept header and ``format`` parameter, the
    row cap, and whether the default graph is the union of all graphs (not when the query
    has FROM / FROM NAMED: those define its dataset)."""

    query: str
    accept: str | None
    format: str | None
    max_rows: int
    union: bool = True
    #: What relative IRIs in the query are resolved against (the endpoint's URL).
    base_iri: str | None = None


class QueryRunner(Protocol):
    """Runs endpoint queries. ``run`` blocks (call it from a worker thread)."""

    def start(self) -> None:
        """Get ready to run queries (e.g. start worker processes)."""
        ...

    def run(self, job: QueryJob) -> Answer:
        """Run one query and serialise its answer; raise a LabbrainError or HttpError."""
        ...

    def close(self) -> None:
        """Stop everything started; queries in flight fail."""
        ...


def execute(store: QuadStore, job: QueryJob) -> Answer:
    """Run ``job`` on ``store`` and serialise the answer. An update sent as a query is
    refused with QueryNotAllowed."""
    try:
        result = store.query(job.query, union=job.union, base_iri=job.base_iri)
    except QuerySyntaxError:
        if looks_like_update(job.query):
            raise QueryNotAllowed(UPDATE_AS_QUERY) from None
        raise
    try:
        return write_answer(result, job.accept, job.format, job.max_rows, query=job.query)
    except (OSError, RuntimeError, ValueError) as error:
        # Raised by the engine while evaluating (e.g. a type it cannot handle).
        raise QueryError(_first_line(error)) from None


def run_here(store: QuadStore, job: QueryJob) -> Answer:
    """Run ``job`` on ``store`` in this process, failing exactly as the same job fails on a
    worker: every error becomes the LabbrainError or HttpError a worker would report."""
    try:
        return execute(store, job)
    except Exception as error:  # as worker_main does
        payload = _error_payload(error)
    _raise_payload(payload)
    raise AssertionError("unreachable")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class InProcessRunner:
    """Queries run in this process (in the calling thread): row cap, no time limit."""

    def __init__(self, store: QuadStore) -> None:
        self._store = store

    def start(self) -> None:
        """Nothing to start."""

    def run(self, job: QueryJob) -> Answer:
        """Run ``job`` on the store."""
        return execute(self._store, job)

    def close(self) -> None:
        """Nothing to stop (the store belongs to its opener)."""


# ---------------------------------------------------------------------------- worker side
def _error_payload(error: BaseException) -> dict[str, Any]:
    """An error as plain data for the pipe (see _raise_payload)."""
    if isinstance(error, HttpError):
        return {
            "kind": "http",
            "status": error.status,
            "type": error.type,
            "message": error.message,
        }
    if isinstance(error, QuerySyntaxError):
        raw = str(error).partition(": ")[2]
        return {"kind": "syntax", "message": raw, "line": error.line, "column": error.column}
    if isinstance(error, QueryNotAllowed):
        return {"kind": "refused", "message": error.reason}
    if isinstance(error, StoreError):
        return {"kind": "store", "message": str(error)}
    if isinstance(error, LabbrainError):
        return {"kind": "query", "message": str(error)}
    return {"kind": "query", "message": _first_line(error)}


def _raise_payload(payload: dict[str, Any]) -> None:
    """Raise the error a worker reported."""
    kind = payload["kind"]
    if kind == "http":
        raise HttpError(payload["status"], payload["type"], payload["message"])
    if kind == "syntax":
        raise QuerySyntaxError(payload["message"], payload["line"], payload["column"])
    if kind == "refused":
        raise QueryNotAllowed(payload["message"])
    if kind == "store":
        raise StoreError(payload["message"])
    raise QueryError(payload["message"])


def worker_main(conn: Connection, location: str) -> None:
    """A worker process: answer jobs from ``conn`` until it closes or sends None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the server's to handle
    snapshot = Snapshot(location)
    # Open the view now, then say so: the server counts a worker as started once ready. A
    # store that cannot be opened reports its error on each query instead.
    with contextlib.suppress(Exception):
        snapshot.store()
    try:
        conn.send(READY)
    except (OSError, ValueError):
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        try:
            reply: tuple[str, Any] = (
                "ok",
                execute(snapshot.store(), QueryJob(**message)).to_wire(),
            )
        except Exception as error:  # every failure goes back to the server as data
            reply = ("error", _error_payload(error))
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


# ---------------------------------------------------------------------------- server side
class _Timeout(Exception):
    pass


class _Worker:
    """One worker process (``python -m labbrain.http.pool``, a fresh interpreter: nothing of
    the server's threads, open store or main module is inherited) and the server's end of
    the socket pair it reads jobs from."""

    def __init__(self, location: str, number: int) -> None:
        server_end, worker_end = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, str(worker_end.fileno()), location],
                pass_fds=(worker_end.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            server_end.close()
            raise
        finally:
            worker_end.close()
        self.number = number
        self.conn = Connection(server_end.detach())
        self.ready = False

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def wait_ready(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for the worker to have started (its view of the store
        open); True once it has. Raise EOFError / OSError when it died meanwhile."""
        if not self.ready and self.conn.poll(seconds):
            message = self.conn.recv()
            if message != READY:
                raise OSError(f"query worker {self.number} sent {message!r} before starting")
            self.ready = True
        return self.ready

    def call(self, job: QueryJob, seconds: float) -> tuple[str, Any]:
        """Send ``job`` and wait at most ``seconds`` for the reply (a worker still starting
        takes its start from the same time)."""
        if not self.ready:
            started = time.monotonic()
            if not self.wait_ready(seconds):
                raise _Timeout
            seconds = max(0.0, seconds - (time.monotonic() - started))
        self.conn.send(asdict(job))
        if not self.conn.poll(seconds):
            raise _Timeout
        reply: tuple[str, Any] = self.conn.recv()
        return reply

    def kill(self) -> None:
        """Stop the process now (SIGKILL) and release the socket."""
        if self.alive():
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self.conn.close()

    def stop(self, grace: float = 2.0) -> None:
        """Ask the process to exit, killing it if it does not within ``grace`` seconds."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        self.kill()


class QueryPool:
    """``size`` worker processes over the on-disk store at ``location``; each runs one
    query at a time, for at most ``seconds``."""

    def __init__(self, location: str, *, size: int, seconds: float) -> None:
        self.location = location
        self.size = size
        self.seconds = seconds
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        self._workers: set[_Worker] = set()
        self._lock = threading.Lock()
        self._spawned = 0
        self._closed = False
        #: How long start() waits for the workers to be ready.
        self.start_seconds = 60.0

    def start(self) -> None:
        """Start the worker processes, and wait (at most :attr:`start_seconds`) until each is
        ready, so that the first queries find them started, not importing."""
        workers = [self._spawn() for _ in range(self.size)]
        deadline = time.monotonic() + self.start_seconds
        for worker in workers:
            with contextlib.suppress(EOFError, OSError):  # run() replaces a dead worker
                worker.wait_ready(max(0.0, deadline - time.monotonic()))
            self._idle.put(worker)

    def _spawn(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise StoreError("the endpoint is shutting down")
            self._spawned += 1
            number = self._spawned
        worker = _Worker(self.location, number)
        with self._lock:
            self._workers.add(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._workers.discard(worker)

    def _replace(self) -> None:
        """Put a new worker in the slot of a retired one (None if it cannot start: the next
        run() tries again)."""
        worker: _Worker | None = None
        try:
            worker = self._spawn()
        except Exception:
            if not self._closed:
                log.exception("could not start a query worker")
        self._idle.put(worker)

    def run(self, job: QueryJob) -> Answer:
        """Run ``job`` on an idle worker (waiting for one if all are busy). Raise QueryTimeout
        when it runs past the time limit: its worker is then killed and replaced."""
        worker = self._idle.get()
        try:
            if worker is None or not worker.alive():
                if worker is not None:
                    self._retire(worker)
                    worker = None
                worker = self._spawn()
            status, payload = worker.call(job, self.seconds)
        except _Timeout:
            log.warning("query stopped after %g s: %s", self.seconds, job.query[:200])
            self._discard(worker)
            raise QueryTimeout(self.seconds) from None
        except (EOFError, OSError):
            self._discard(worker)
            raise QueryError(
                "the query's worker process died (out of memory?); narrow the query"
            ) from None
        except BaseException:
            self._discard(worker)
            raise
        self._idle.put(worker)
        if status == "ok":
            return Answer.from_wire(payload)
        _raise_payload(payload)
        raise AssertionError("unreachable")

    def _discard(self, worker: _Worker | None) -> None:
        """Kill ``worker`` and fill its slot with a new one, in the background."""
        if worker is not None:
            self._retire(worker)
        threading.Thread(target=self._replace, name="labbrain-query-respawn", daemon=True).start()

    def close(self) -> None:
        """Stop every worker (idle ones politely, busy ones at once)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers)
            self._workers.clear()
        idle = []
        while True:
            try:
                idle.append(self._idle.get_nowait())
            except queue.Empty:
                break
        for worker in workers:
            if worker in idle:
                worker.stop()
            else:
                worker.kill()
        # Let any request still waiting for a worker fail instead of hanging.
        for _ in range(self.size):
            self._idle.put(None)


def runner_for(store: QuadStore, *, workers: int, seconds: float) -> QueryRunner:
    """A worker pool for an on-disk store, else in-process execution."""
    if store.directory is not None:
        return QueryPool(str(store.directory), size=workers, seconds=seconds)
    return InProcessRunner(store)


if __name__ == "__main__":  # a worker process, started by _Worker
    worker_main(Connection(int(sys.argv[1])), sys.argv[2])
