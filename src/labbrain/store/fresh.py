"""Reading an on-disk store that another process writes, always as of its last commit.

A read-only view of an embedded store (``Store.read_only``) is a snapshot: it never sees a
write committed after it was opened. :class:`Snapshot` keeps one view and reopens it when the
store's files have changed since (:class:`StoreWatch`: any write, by any process), at the cost
of a few ``stat`` calls per read. The endpoint's query workers read through one each;
:class:`FreshStore` gives the server's own process the same, behind the store interface, so
that a read-only ``labbrain serve`` holds no lock (``labbrain load`` runs beside it) and
everything it answers itself (the graphs FROM may name, the graph store, the service
description, the console's settings, the MCP tools) follows the writer's commits.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

from pyoxigraph import NamedNode, Quad, RdfFormat

from labbrain.errors import StoreReadOnly
from labbrain.store.base import Fill, QuadStore, QueryResult, Substitutions
from labbrain.store.journal import DB_DIR, JOURNAL_DIR, JOURNAL_MARKER
from labbrain.store.local import open_store

#: How long (ns) after the store directory itself last changed its listing is not trusted:
#: file systems stamp times from a clock that ticks every few milliseconds, so a file created
#: within the same tick as an earlier listing leaves the directory's times unchanged.
RACY_NS = 1_000_000_000
#: How many times a view is opened (or a read done again) before an error is the caller's.
OPEN_ATTEMPTS = 3

T = TypeVar("T")


#: RocksDB files never written in place: tables and blobs (written once), options files and
#: the identity (written as new files), the lock (locked, never written), and its info logs
#: (written on every open, by readers too).
_IMMUTABLE = (".sst", ".blob")
_NEVER_REWRITTEN = ("OPTIONS-", "IDENTITY", "LOCK", "LOG")


class StoreWatch:
    """Tells, cheaply, whether the on-disk store at ``location`` has been written.

    RocksDB never changes a table file (``*.sst``) once written: a commit appends to the
    write-ahead log, a flush, compaction or bulk load creates and removes files (changing the
    directory) and appends to the MANIFEST. So :meth:`stamp` stats the directory and the few
    files that are written in place (the write-ahead logs, the MANIFEST, CURRENT),
    and lists the directory again only when the directory has changed, or changed so recently
    (:data:`RACY_NS`) that a later change could carry the same time stamp. Not thread-safe:
    callers serialise (Snapshot does)."""

    def __init__(self, location: str) -> None:
        self.directory = os.path.join(location, DB_DIR)
        self.marker = os.path.join(location, JOURNAL_DIR, JOURNAL_MARKER)
        self._directory_key: tuple[int, ...] | None = None
        self._mutable: tuple[tuple[str, str], ...] = ()  # (name, path)
        self._trusted = False
        #: How many times the directory was listed (to check that a listing is skipped).
        self.listings = 0

    def _list(self) -> None:
        """Record the names of the files written in place, and whether the listing may be
        trusted while the directory looks unchanged."""
        listed_at = time.time_ns()
        names = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.startswith(_NEVER_REWRITTEN) or entry.name.endswith(_IMMUTABLE):
                    continue
                names.append((entry.name, entry.path))
        self._mutable = tuple(sorted(names))
        self.listings += 1
        changed = max(self._directory_key[0], self._directory_key[1]) if self._directory_key else 0
        self._trusted = listed_at - changed >= RACY_NS

    def stamp(self) -> tuple[Any, ...]:
        """A value that differs from every earlier one whenever the store has been written
        since: the directory's identity and times, the size and time of each file written in
        place, and whether a bulk write is in flight (store.journal)."""
        info = os.stat(self.directory)
        key = (info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_size)
        if key != self._directory_key or not self._trusted:
            self._directory_key = key
            self._list()
        files = []
        for name, path in self._mutable:
            try:
                found = os.stat(path)
            except FileNotFoundError:  # removed since the listing (then the directory changed)
                files.append((name, -1, -1))
                continue
            files.append((name, found.st_size, found.st_mtime_ns))
        return (os.path.exists(self.marker), key, tuple(files))


def read_committed(location: str, work: Callable[[QuadStore], T]) -> T:
    """``work`` on a read-only view of the on-disk store at ``location``, opened for it and
    closed after it. While a writer's bulk write is in flight the view reads the journal's
    snapshot of the store before it (:mod:`labbrain.store.journal`), whose files the writer
    removes at its commit: a read that loses one of them (an OSError) is done again on a view
    opened anew, of the store as committed, up to :data:`OPEN_ATTEMPTS` times in all. ``work``
    must only read (it may run more than once)."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            store = open_store(location, read_only=True)
        except OSError:
            if attempt == OPEN_ATTEMPTS - 1:
                raise
            time.sleep(0.05)
            continue
        try:
            return work(store)
        except OSError:
            if attempt == OPEN_ATTEMPTS - 1:
                raise
            time.sleep(0.05)
        finally:
            store.close()
    raise AssertionError("unreachable")  # the last attempt returns or raises


class Snapshot:
    """A read-only view of the on-disk store at ``location``, reopened when the store has
    changed since it was opened. Thread-safe."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._store: QuadStore | None = None
        self._stamp: tuple[Any, ...] | None = None
        self._lock = threading.Lock()
        self.watch = StoreWatch(location)

    def store(self) -> QuadStore:
        """A view holding every write committed before this call."""
        # The stamp is taken before opening: a write in between makes the next call reopen
        # (harmless), never leaves a stale view behind.
        with self._lock:
            for attempt in range(OPEN_ATTEMPTS):
                stamp = self.watch.stamp()
                if self._store is not None and stamp == self._stamp:
                    break
                try:
                    # The old view is dropped, not closed: a reader in another thread may
                    # still be using it (the last reference gone, it closes).
                    self._store = open_store(self.location, read_only=True)
                except OSError:
                    # A file the open was reading went with a commit of the writer (its
                    # journal's snapshot); the store as it is now opens on the next try.
                    if attempt == OPEN_ATTEMPTS - 1:
                        raise
                    time.sleep(0.05)
                    continue
                self._stamp = stamp
                break
            assert self._store is not None
            return self._store

    def current(self) -> QuadStore | None:
        """The open view when it holds every write committed before this call, else None
        (nothing is opened: a caller that must not wait for an open calls store() where it
        may wait)."""
        with self._lock:
            if self._store is not None and self.watch.stamp() == self._stamp:
                return self._store
            return None

    def close(self) -> None:
        """Close the current view (the next call to store() opens a new one)."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


class FreshStore:
    """The store interface over an on-disk store that other processes may write: read-only,
    no lock held, and every read goes to a view holding every write committed before it
    (one view per call: a call sees one consistent state)."""

    def __init__(self, directory: Path) -> None:
        self.location = str(directory)
        self.directory: Path | None = directory
        self.read_only = True
        self.shared = False
        self.recovered = False
        self.restore_undone = False
        self._snapshot = Snapshot(self.location)
        self._snapshot.store()  # fails now (StoreNotFound, ...) rather than at a later read

    def _view(self) -> QuadStore:
        return self._snapshot.store()

    def view(self) -> QuadStore:
        """A read-only view holding every write committed before this call (opened when
        there is none yet, or a write was committed since the last one)."""
        return self._snapshot.store()

    def current_view(self) -> QuadStore | None:
        """The open view when it holds every write committed before this call, else None
        (without opening one: see :meth:`view`)."""
        return self._snapshot.current()

    # ------------------------------------------------------------------ reading
    def query(
        self,
        sparql: str,
        *,
        substitutions: Substitutions | None = None,
        union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query on the store as of now."""
        return self._view().query(
            sparql, substitutions=substitutions, union=union, base_iri=base_iri
        )

    def quads(
        self, graph: str, subject: NamedNode | None = None, predicate: NamedNode | None = None
    ) -> Iterator[Quad]:
        """Quads of ``graph`` as of now, optionally only with this subject and/or predicate."""
        return self._view().quads(graph, subject, predicate)

    def count(self, graph: str) -> int:
        """Number of quads in ``graph`` now."""
        return self._view().count(graph)

    def graphs(self) -> list[str]:
        """The store's named graphs now, sorted."""
        return self._view().graphs()

    def has_graph(self, graph: str) -> bool:
        """True when the named graph exists now."""
        return self._view().has_graph(graph)

    def dump(
        self,
        output: IO[bytes],
        fmt: RdfFormat,
        graphs: list[str] | None = None,
        prefixes: Mapping[str, str] | None = None,
    ) -> None:
        """Serialise the given graphs (all named graphs when None), all from one view."""
        self._view().dump(output, fmt, graphs, prefixes)

    def writer_alive(self) -> bool:
        """True when some process holds the store for writing now."""
        return self._view().writer_alive()

    def index_home(self) -> Path | None:
        """The store directory, where its derived indexes live."""
        return self.directory

    def with_timeout(self, seconds: float) -> QuadStore | None:
        """None: an embedded store cannot stop a running query (use a child process)."""
        del seconds
        return None

    def close(self) -> None:
        """Close the current view."""
        self._snapshot.close()

    # ------------------------------------------------------------------ writing: refused
    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Refused: StoreReadOnly."""
        del base_iri
        raise StoreReadOnly("a SPARQL update")

    def add_quads(self, quads: Iterable[Quad]) -> None:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly("adding quads")

    def remove_quads(self, quads: Iterable[Quad]) -> None:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly("removing quads")

    def apply(self, remove: Iterable[Quad], add: Iterable[Quad]) -> None:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly("changing quads")

    def replace_graph(
        self,
        graph: str,
        fill: Fill,
        *,
        on_commit: Callable[[QuadStore], None] | None = None,
    ) -> None:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly(f"replacing graph {graph}")

    def drop_graph(self, graph: str) -> None:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly(f"dropping graph {graph}")

    def drop_stale_staging(self) -> list[str]:
        """Refused: StoreReadOnly."""
        raise StoreReadOnly("dropping staging graphs")
