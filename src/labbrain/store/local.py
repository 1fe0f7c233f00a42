"""The embedded backend: the only module that opens a ``pyoxigraph.Store`` on disk.

(The remote backend, :mod:`labbrain.store.remote.store`, makes throwaway in-memory ones only:
to check the syntax of a query or update, and to hold a CONSTRUCT answer.)

:class:`OxigraphStore` implements :class:`~labbrain.store.base.QuadStore` on an embedded
store, on disk or in memory, with a writer lock and the journal of
:mod:`labbrain.store.journal`.

On-disk layout of a store directory::

    <store>/oxigraph/     the RocksDB database
    <store>/writer.lock   locked (portalocker) by the one process allowed to write
    <store>/writer.pid    that process's pid, while it holds the lock
    <store>/journal/      a hard-link backup taken before a bulk write, present only while
                          the write is in flight (or after a crash, until recovery)
    <store>/index.sqlite  derived text index (see labbrain.index.text)

Nothing else is written there: what labbrain remembers about files it checked (the index
file passing its whole-file check, the digest of a ``DATA_PATH`` export) is a cache in the
user's cache directory (:func:`checked`), outside every store.

Atomic graph replacement on disk: pyoxigraph's bulk writer is fast but not transactional, so
before a bulk write the store takes a consistent hard-link backup into ``journal/`` and marks
it complete. If the write fails, or the process dies, the next open (or the failing call
itself) puts the backup back: the store is exactly as it was before the write. While the write
is in flight, readers in other processes, and other threads of the writing process, read that
backup: nobody sees a half-replaced graph.
"""

from __future__ import annotations

import errno
import gc
import itertools
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import portalocker
from platformdirs import user_cache_dir
from pyoxigraph import (
    BlankNode,
    NamedNode,
    Quad,
    QuerySolutions,
    RdfFormat,
    Store,
    Variable,
)

from labbrain.errors import (
    DiskFull,
    ExportFormatError,
    GraphNotFound,
    StoreError,
    StoreLocationInvalid,
    StoreLocked,
    StoreNotFound,
    StoreReadOnly,
)
from labbrain.rdf.namespaces import PREFIXES, SYSTEM_GRAPH
from labbrain.store.base import (
    Fill,
    GraphPart,
    GraphWriter,
    QuadStore,
    QueryResult,
    RdfDocument,
    Substitutions,
    ThreadBoundWriter,
    dump_graphs,
    parse_syntax_error,
)
from labbrain.store.journal import (
    DB_DIR,
    JOURNAL_DIR,
    JOURNAL_MARKER,
    LOCK_FILE,
    PID_FILE,
    fsync_dir,
    recover,
    recover_restore,
    restore_left_behind,
)
from labbrain.store.remote.sparql import staging_is_stale


def _open_snapshot(path: Path, attempts: int = 20) -> Store:
    """Open a read-only view of the database at ``path``, retrying while a live writer's
    compaction removes files between the reader's listing and opening them."""
    for attempt in range(1, attempts + 1):
        try:
            return Store.read_only(str(path))
        except (OSError, RuntimeError) as err:
            transient = "No such file" in str(err) or "Corruption" in str(err)
            if not transient or attempt == attempts:
                raise
            time.sleep(0.05 * attempt)
    raise AssertionError("unreachable")


def _reason(err: OSError) -> str:
    """The system's reason for ``err`` ("Permission denied", "File name too long", ...)."""
    return err.strerror or str(err)


def _unusable(directory: Path, action: str, err: OSError) -> StoreLocationInvalid:
    """The error for a store ``directory`` that cannot be ``action`` ("read", ...)."""
    return StoreLocationInvalid(
        str(directory), f"the store directory {directory} cannot be {action} ({_reason(err)})"
    )


def _make_directory(directory: Path) -> None:
    """Create ``directory`` with its missing parents, or none of them: on failure the parents
    created here are removed again and StoreLocationInvalid gives the system's reason."""
    chain = [directory, *directory.parents]
    missing = list(itertools.takewhile(lambda path: not os.path.lexists(path), chain))
    made: list[Path] = []
    try:
        for path in reversed(missing):
            try:
                path.mkdir()
            except FileExistsError:  # made meanwhile by another process
                if not path.is_dir():
                    raise
                continue
            made.append(path)
    except OSError as err:
        for path in reversed(made):
            with suppress(OSError):
                path.rmdir()
        raise _unusable(directory, "created there", err) from None


def check_location(directory: Path, *, create: bool) -> bool:
    """Check that ``directory`` can be a store directory; True when it exists (``create``
    makes it when missing, with its parents), False when it is missing and ``create`` is not
    set. Raises StoreLocationInvalid, having written nothing, when it is a file, or when it
    cannot be read or created there (with the system's reason: permission denied, name too
    long, a parent that is a file, ...)."""
    action = "created there" if create else "read"
    try:
        info = directory.stat()
    except FileNotFoundError:
        if not create:
            return False
        _make_directory(directory)
        return True
    except OSError as err:
        raise _unusable(directory, action, err) from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else "not a directory"
        raise StoreLocationInvalid(
            str(directory), f"{directory} is {kind}, not a labbrain store directory"
        )
    try:
        with os.scandir(directory):
            pass
    except OSError as err:
        raise _unusable(directory, "read", err) from None
    return True


class WriterLock:
    """An exclusive, non-blocking lock on ``<store>/writer.lock`` naming the holder's pid.

    portalocker takes it: ``flock`` on POSIX, a byte-range lock on Windows. The holder writes
    its pid to ``<store>/writer.pid`` (a file of its own: on Windows no other process can read
    a locked file) and removes it before letting go of the lock.
    """

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self.pid_path = directory / PID_FILE
        self._fd: int | None = None

    def _take(self) -> int | None:
        """The lock file's descriptor holding the exclusive lock, or None when another
        holder has it. StoreLocationInvalid when the lock file cannot be made or locked."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as err:
            raise _unusable(self.path.parent, "written", err) from None
        try:
            portalocker.lock(
                fd, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.AlreadyLocked:
            os.close(fd)
            return None
        except portalocker.LockException as err:
            os.close(fd)
            cause = err.__cause__ if isinstance(err.__cause__, OSError) else OSError(str(err))
            raise _unusable(self.path.parent, "locked", cause) from None
        return fd

    @staticmethod
    def _let_go(fd: int) -> None:
        """Unlock and close ``fd`` (closed even when unlocking fails)."""
        try:
            portalocker.unlock(fd)
        finally:
            os.close(fd)

    def holder(self) -> str | None:
        """The holder as "pid N", from the pid file it wrote; None when that is unknown."""
        try:
            text = self.pid_path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return None
        return f"pid {text}" if text else None

    def acquire(self) -> None:
        """Take the lock or raise StoreLocked naming the store and the holder's pid."""
        fd = self._take()
        if fd is None:
            raise StoreLocked(str(self.path.parent), self.holder())
        self._fd = fd
        with suppress(OSError):  # the pid only names the holder in a refusal
            self.pid_path.write_text(str(os.getpid()), encoding="ascii")

    def is_free(self) -> bool:
        """True when no process holds the lock right now."""
        fd = self._take()
        if fd is None:
            return False
        self._let_go(fd)
        return True

    def held(self) -> bool:
        """True when some process (this one included) holds the lock now.

        Probes with a shared lock, taken and dropped at once; a writer starting in that
        instant could see the store as locked, so this is for display, not for control.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        try:
            try:
                portalocker.lock(
                    fd, portalocker.LockFlags.SHARED | portalocker.LockFlags.NON_BLOCKING
                )
            except portalocker.AlreadyLocked:
                return True
            portalocker.unlock(fd)
            return False
        finally:
            os.close(fd)

    def release(self) -> None:
        """Release the lock if held (its pid file goes first)."""
        if self._fd is not None:
            with suppress(OSError):
                self.pid_path.unlink()
            fd, self._fd = self._fd, None
            self._let_go(fd)


def _is_disk_full(err: OSError) -> bool:
    """True for "no space left on device" or "disk quota exceeded" (pyoxigraph's IO errors
    carry no errno, only the system's message)."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(os.strerror(code) in str(err) for code in (errno.ENOSPC, errno.EDQUOT))


@contextmanager
def _disk_full_as_error() -> Iterator[None]:
    """Raise DiskFull for a write that failed because the device is full (the write has
    been undone by then: a transaction never lands in part, a bulk write is rolled back)."""
    try:
        yield
    except OSError as err:
        if _is_disk_full(err):
            raise DiskFull() from err
        raise


class OxigraphStore:
    """An embedded pyoxigraph store on disk (``path``) or in memory (``path=None``).

    Writers hold an exclusive lock for their lifetime; read-only stores take no lock and see
    a consistent snapshot. Not shareable across processes except through that lock.
    """

    def __init__(self, path: str | None, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self.location = path or ":memory:"
        self.shared = False
        self._dir = Path(path) if path else None
        self.directory = self._dir
        self._lock: WriterLock | None = None
        self._write_mutex = threading.RLock()
        self.recovered = False  # a crashed bulk write was rolled back at open
        self.restore_undone = False  # a stopped restore was undone at open
        self._store = self._open()
        # While a bulk write is in flight on disk, other threads read the journal's snapshot
        # (the state before the write), as other processes do: never a half-replaced graph.
        self._snapshot: Store | None = None
        self._bulk_writer_thread: int | None = None

    # ------------------------------------------------------------------ opening
    def _open(self) -> Store:
        if self._dir is None:
            if self.read_only:
                raise StoreNotFound(":memory:")
            return Store()
        if self.read_only:
            return self._open_read_only(self._dir)
        check_location(self._dir, create=True)
        self._lock = WriterLock(self._dir)
        self._lock.acquire()
        try:
            self.restore_undone = recover_restore(self._dir)
            self.recovered = recover(self._dir)
            return Store(str(self._dir / DB_DIR))
        except BaseException:
            self._lock.release()
            raise

    def _open_read_only(self, directory: Path) -> Store:
        if not check_location(directory, create=False):
            raise StoreNotFound(str(directory))
        lock = WriterLock(directory)
        if restore_left_behind(directory) and lock.is_free():
            # A restore was stopped midway: put the old content back before reading.
            lock.acquire()
            try:
                self.restore_undone = recover_restore(directory)
            finally:
                lock.release()
        if not (directory / DB_DIR).is_dir():
            raise StoreNotFound(str(directory))
        journal_backup = directory / JOURNAL_DIR / DB_DIR
        if (directory / JOURNAL_DIR / JOURNAL_MARKER).exists():
            if lock.is_free():
                # A crashed writer left a journal: finish its rollback before reading.
                lock.acquire()
                try:
                    self.recovered = recover(directory)
                finally:
                    lock.release()
            else:
                # A live writer is mid-way through a bulk write: read the state before it.
                return _open_snapshot(journal_backup)
        return _open_snapshot(directory / DB_DIR)

    def writer_alive(self) -> bool:
        """True when some process (this one included) holds the store for writing."""
        if not self.read_only or self._dir is None:
            return True
        return WriterLock(self._dir).held()

    def drop_stale_staging(self) -> list[str]:
        """Drop staging graphs older than a day (an embedded store writes none itself, but a
        backup of a remote store may carry them); return them."""
        stale = [g for g in self.graphs() if staging_is_stale(g)]
        for graph in stale:
            self.drop_graph(graph)
        return stale

    def index_home(self) -> Path | None:
        """The store directory, where the derived indexes live; None in memory."""
        return self._dir

    def with_timeout(self, seconds: float) -> None:
        """None: pyoxigraph cannot stop a running query (run it in a child process)."""
        del seconds
        return None

    def close(self) -> None:
        """Release the pyoxigraph store and the writer lock. The object is unusable after."""
        self._store = None  # type: ignore[assignment]
        gc.collect()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> OxigraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _reader(self) -> Store:
        """The database reads go to: the pre-write snapshot for threads other than the one
        running a bulk write, else the live database."""
        snapshot = self._snapshot
        if snapshot is not None and threading.get_ident() != self._bulk_writer_thread:
            return snapshot
        return self._store

    def _require_write(self, operation: str) -> None:
        if self.read_only:
            raise StoreReadOnly(operation)

    # ------------------------------------------------------------------ reading
    def query(
        self,
        sparql: str,
        *,
        substitutions: Substitutions | None = None,
        union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query with ``substitutions`` bound engine-side (never spliced)."""
        subs = {Variable(k): v for k, v in (substitutions or {}).items()}
        try:
            return self._reader().query(
                sparql,
                prefixes=PREFIXES,
                substitutions=subs or None,
                use_default_graph_as_union=union,
                base_iri=base_iri,
            )
        except SyntaxError as err:
            raise parse_syntax_error(err, sparql) from None

    def graphs(self) -> list[str]:
        """Named graphs holding at least one quad, sorted by IRI."""
        return sorted(g.value for g in self._reader().named_graphs() if isinstance(g, NamedNode))

    def has_graph(self, graph: str) -> bool:
        """True when ``graph`` holds at least one quad."""
        return self._reader().contains_named_graph(NamedNode(graph))

    def quads(
        self, graph: str, subject: NamedNode | None = None, predicate: NamedNode | None = None
    ) -> Iterator[Quad]:
        """Quads of ``graph``, optionally only those with this subject and/or predicate."""
        return iter(self._reader().quads_for_pattern(subject, predicate, None, NamedNode(graph)))

    def dump(
        self,
        output: IO[bytes],
        fmt: RdfFormat,
        graphs: list[str] | None = None,
        prefixes: Mapping[str, str] | None = None,
    ) -> None:
        """Write ``graphs`` (default: all named graphs) to ``output`` in ``fmt``, streaming."""
        dump_graphs(self, output, fmt, graphs, prefixes)

    # ------------------------------------------------------------------ writing
    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update in one transaction."""
        self._require_write("update")
        with self._write_mutex, _disk_full_as_error():
            try:
                self._store.update(sparql, prefixes=PREFIXES, base_iri=base_iri)
            except SyntaxError as err:
                raise parse_syntax_error(err, sparql, update=True) from None

    def add_quads(self, quads: Iterable[Quad]) -> None:
        """Add ``quads`` in one transaction."""
        self._require_write("add")
        with self._write_mutex, _disk_full_as_error():
            self._store.extend(quads)

    def remove_quads(self, quads: Iterable[Quad]) -> None:
        """Remove the given quads (absent ones are ignored)."""
        self._require_write("remove")
        with self._write_mutex:
            for quad in quads:
                self._store.remove(quad)

    def apply(self, remove: Iterable[Quad], add: Iterable[Quad]) -> None:
        """Remove ``remove`` and add ``add`` in one transaction: both happen or neither.

        Quads must not hold blank nodes (agent data and task states use IRIs only).
        """
        self._require_write("write")
        update = _data_update(list(remove), list(add))
        if not update:
            return
        with self._write_mutex, _disk_full_as_error():
            self._store.update(update)

    def drop_graph(self, graph: str) -> None:
        """Remove ``graph``; raise GraphNotFound if it does not exist."""
        self._require_write("drop")
        with self._write_mutex:
            if not self.has_graph(graph):
                raise GraphNotFound(graph)
            self._store.remove_graph(NamedNode(graph))

    def replace_graph(
        self,
        graph: str,
        fill: Fill,
        *,
        on_commit: Callable[[QuadStore], None] | None = None,
    ) -> None:
        """Make ``graph`` hold exactly what ``fill`` writes through the writer it is given.

        All or nothing: if ``fill`` raises, a part fails to parse or write, or ``on_commit``
        (run before the write is made final, e.g. to record the load) raises, the store is
        left exactly as it was and the error propagates (a full device as DiskFull).
        """
        self._require_write("replace graph")
        target = NamedNode(graph)
        with self._write_mutex, _disk_full_as_error():
            if self._dir is None:
                self._replace_in_memory(target, fill, on_commit)
            else:
                self._replace_on_disk(self._dir, target, fill, on_commit)

    def count(self, graph: str) -> int:
        """Number of quads in ``graph``."""
        result = self._reader().query(
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
            substitutions={Variable("g"): NamedNode(graph)},
        )
        assert isinstance(result, QuerySolutions)
        rows = list(result)
        return int(rows[0]["n"].value) if rows else 0

    def _writer(self, target: NamedNode) -> GraphWriter:
        return _BulkWriter(self, target)

    def _replace_in_memory(
        self,
        target: NamedNode,
        fill: Fill,
        on_commit: Callable[[QuadStore], None] | None,
    ) -> None:
        # In memory there is no journal: keep a copy of what the write may touch, the target
        # graph and the system graph (where on_commit hooks record the write).
        touched = {target, NamedNode(SYSTEM_GRAPH)}
        saved = {g: list(self._store.quads_for_pattern(None, None, None, g)) for g in touched}
        try:
            self._store.remove_graph(target)
            fill(self._writer(target))
            if on_commit is not None:
                on_commit(self)
        except BaseException:
            for graph, quads in saved.items():
                self._store.remove_graph(graph)
                self._store.extend(quads)
            raise

    def _replace_on_disk(
        self,
        directory: Path,
        target: NamedNode,
        fill: Fill,
        on_commit: Callable[[QuadStore], None] | None,
    ) -> None:
        journal = directory / JOURNAL_DIR
        shutil.rmtree(journal, ignore_errors=True)
        journal.mkdir()
        self._store.flush()
        self._store.backup(str(journal / DB_DIR))
        (journal / JOURNAL_MARKER).write_text("bulk write in flight\n")
        fsync_dir(journal)
        try:
            self._begin_snapshot(journal / DB_DIR)
            if self._store.contains_named_graph(target):
                self._store.remove_graph(target)
            fill(self._writer(target))
            if on_commit is not None:
                on_commit(self)
            self._store.flush()
        except BaseException:
            self._end_snapshot()
            self._rollback(directory)
            raise
        self._end_snapshot()
        (journal / JOURNAL_MARKER).unlink()
        fsync_dir(journal)
        shutil.rmtree(journal, ignore_errors=True)

    def _begin_snapshot(self, backup: Path) -> None:
        """Send other threads' reads to the read-only database at ``backup`` until
        :meth:`_end_snapshot`."""
        self._bulk_writer_thread = threading.get_ident()
        self._snapshot = _open_snapshot(backup)

    def _end_snapshot(self) -> None:
        """Send reads back to the live database and release the snapshot's files."""
        self._snapshot = None
        self._bulk_writer_thread = None
        gc.collect()

    def _rollback(self, directory: Path) -> None:
        """Close the database, put the journal backup back, and reopen it.

        If the database cannot be reopened here, the journal stays in place and the next
        open of the store finishes the rollback; this store object is then closed.
        """
        self._store = None  # type: ignore[assignment]
        gc.collect()
        try:
            recover(directory)
            self._store = Store(str(directory / DB_DIR))
        except OSError as err:
            self.close()
            raise StoreError(
                f"the failed write to {directory} could not be undone in this process ({err}); "
                "it will be undone the next time the store is opened"
            ) from err


def _data_block(quads: list[Quad]) -> str:
    """Quads as the body of a SPARQL DELETE DATA / INSERT DATA block (terms in N-Triples
    syntax, which SPARQL accepts verbatim; no text is spliced in any other way)."""
    lines = []
    for quad in quads:
        if isinstance(quad.subject, BlankNode) or isinstance(quad.object, BlankNode):
            raise ValueError("transactional writes take no blank nodes")
        triple = f"{quad.subject} {quad.predicate} {quad.object} ."
        if isinstance(quad.graph_name, NamedNode):
            lines.append(f"GRAPH {quad.graph_name} {{ {triple} }}")
        else:
            lines.append(triple)
    return "\n".join(lines)


def _data_update(remove: list[Quad], add: list[Quad]) -> str:
    """One SPARQL update removing then adding the given quads (empty when both are)."""
    parts = []
    if remove:
        parts.append("DELETE DATA {\n" + _data_block(remove) + "\n}")
    if add:
        parts.append("INSERT DATA {\n" + _data_block(add) + "\n}")
    return " ;\n".join(parts)


class _BulkWriter(ThreadBoundWriter):
    """Bulk writes into one target graph (see GraphWriter), from the thread that made it
    only (ThreadBoundWriter): one bulk load at a time into the store.

    It reaches the pyoxigraph store through its owner, never holding it itself, so that a
    rollback can close the database even while a traceback still references the writer.
    """

    def __init__(self, owner: OxigraphStore, target: NamedNode) -> None:
        super().__init__()
        self._owner = owner
        self._target = target

    def write(self, part: GraphPart) -> None:
        self._check_thread()
        target = self._target
        if isinstance(part, RdfDocument):
            try:
                self._owner._store.bulk_load(part.data, part.format, to_graph=target)
            except SyntaxError as err:
                raise ExportFormatError(
                    part.label, f"invalid {part.format.name}: {str(err).strip()}"
                ) from None
        else:
            self._owner._store.bulk_extend(
                Quad(item.subject, item.predicate, item.object, target) for item in part
            )


# ----------------------------------------------------------------------- files checked once
#: The cache of what files were when labbrain last checked them, in the user's cache
#: directory (``$XDG_CACHE_HOME/labbrain`` on Linux): losing it only costs a check.
CHECKED_FILE = "checked-files.json"
#: Entries kept (the least recently recorded are dropped).
CHECKED_KEPT = 256


def file_identity(path: Path, *, settled_ns: int = 0) -> str | None:
    """What the regular file at ``path`` is now: its device, inode, size, modification and
    change times. Any write to the file, a truncation, a copy or a replacement changes it; so
    does setting its modification time back (the change time cannot be set). None when it is
    not a regular file, cannot be looked at, or was modified less than ``settled_ns``
    nanoseconds ago (a second change within the file system's time resolution would not
    show)."""
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or time.time_ns() - st.st_mtime_ns < settled_ns:
        return None
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"


def _checked_file() -> Path:
    return Path(user_cache_dir("labbrain", appauthor=False)) / CHECKED_FILE


def _checked_entries() -> dict[str, list[str]]:
    try:
        data = json.loads(_checked_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        key: value
        for key, value in data.items()
        if isinstance(value, list) and all(isinstance(item, str) for item in value)
    }


def checked(key: str) -> list[str] | None:
    """What was recorded for ``key`` (e.g. ``index:<path>``) by :func:`record_checked`, or
    None (nothing recorded, or the cache is missing or unreadable)."""
    return _checked_entries().get(key)


def record_checked(key: str, value: list[str]) -> None:
    """Record ``value`` for ``key``, replacing what was recorded. Best effort: a cache that
    cannot be written, or a record lost to another process writing at the same moment, only
    costs a check next time."""
    entries = _checked_entries()
    entries.pop(key, None)
    entries[key] = value
    kept = dict(list(entries.items())[-CHECKED_KEPT:])
    target = _checked_file()
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(kept, indent=0), encoding="utf-8")
        partial.replace(target)
    except OSError:
        with suppress(OSError):
            partial.unlink()


def open_store(location: str, *, read_only: bool = False) -> OxigraphStore:
    """Open the embedded store at ``location`` (a directory, or ':memory:')."""
    if location == ":memory:":
        return OxigraphStore(None, read_only=read_only)
    return OxigraphStore(str(Path(location).expanduser()), read_only=read_only)
