"""Backups of an embedded store, and restoring one: ``labbrain backup`` / ``labbrain restore``.

A backup is a directory laid out like a store, plus a manifest::

    <backup>/oxigraph/              a copy of the database (a pyoxigraph store)
    <backup>/index.sqlite           the text index, if the store had a usable one
    <backup>/vectors.sqlite         the vector index, if the store had one
    <backup>/console_history        the console's history, if any
    <backup>/labbrain-backup.json   format, versions, time, source, quads per graph, the load
                                    records, and the size and SHA-256 of every file above

Taking a backup needs no writer lock: the store is opened the way read-only commands open it,
so a backup taken while ``labbrain mcp`` or ``labbrain serve`` holds the store sees one
consistent snapshot, and during a bulk write in flight, the state before it. The database is
copied quad by quad from that snapshot into a fresh store (pyoxigraph's hard-link
``Store.backup`` of a read-only store leaves out the writes still in the live writer's
write-ahead log, such as an assistant's latest memories; the copy has them). The SQLite files
are copied with SQLite's backup API, consistent even while they are written. Everything is
written into ``<backup>.partial-<random>`` and renamed at the end: a directory named as the
backup is complete.

Restoring takes the writer lock, verifies the backup first (manifest, checksums, the database
opens, quads per graph as recorded), copies it next to the store, sets the current content
aside, moves the copy in, verifies it again and brings the text index in line with the data
(only stale graphs are re-indexed). Only then is the old content deleted; on any failure it is
moved back, so the store is exactly as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pyoxigraph import DefaultGraph, Quad, QuerySolutions

from labbrain import __version__
from labbrain.errors import BackupInvalid, InputError, SettingsError, StoreError
from labbrain.index.text import ENGINE_SUFFIX, SyncReport, TextIndex
from labbrain.rdf.namespaces import ONTOLOGY_GRAPH, SERVER_GRAPHS, SYSTEM_GRAPH
from labbrain.settings import Settings
from labbrain.store import templates
from labbrain.store.base import GraphWriter, QuadStore
from labbrain.store.journal import (
    ALL_ASIDE,
    DB_DIR,
    LOCK_FILE,
    RESTORE_ASIDE,
    RESTORE_DISCARD,
    RESTORE_STAGING,
    RESTORED,
    fsync_dir,
    present_files,
    recover,
    recover_restore,
    remove_path,
    roll_back_restore,
)
from labbrain.store.local import WriterLock, check_location, open_store

FORMAT_VERSION = 1
MANIFEST = "labbrain-backup.json"
INDEX_FILE = "index.sqlite"
#: The text index's full-text engine, a directory beside its SQLite file.
ENGINE_DIR = Path(INDEX_FILE).with_suffix(ENGINE_SUFFIX).name
_ENGINE_LOCKS = shutil.ignore_patterns(".tantivy-*.lock")
VECTORS_FILE = "vectors.sqlite"
HISTORY_FILE = "console_history"
_CHUNK = 1 << 20


class FileEntry(BaseModel):
    """Size and SHA-256 of one file of a backup."""

    bytes: int
    sha256: str


class Manifest(BaseModel):
    """What ``labbrain-backup.json`` records about a backup."""

    format: int = Field(description="the backup format version")
    labbrain: str = Field(description="the labbrain version that wrote it")
    created: str = Field(description="when the snapshot was taken, ISO 8601 UTC")
    source: str = Field(description="the store backed up, as it was given")
    graphs: dict[str, int] = Field(description="named graph -> quads")
    default_graph: int = Field(alias="defaultGraph", description="triples of the default graph")
    quads: int = Field(description="quads in all")
    datasets: list[dict[str, Any]] = Field(description="the load records of the datasets")
    files: dict[str, FileEntry] = Field(description="path in the backup -> size and SHA-256")
    skipped: dict[str, str] = Field(
        default_factory=dict, description="files of the store not copied, and why"
    )

    model_config = {"populate_by_name": True}

    def summary(self, directory: Path) -> dict[str, Any]:
        """What ``labbrain backup --json`` prints: the manifest without the checksums."""
        return {
            "directory": str(directory),
            "format": self.format,
            "labbrain": self.labbrain,
            "created": self.created,
            "source": self.source,
            "quads": self.quads,
            "graphs": self.graphs,
            "defaultGraph": self.default_graph,
            "datasets": [row.get("slug") for row in self.datasets],
            "files": len(self.files),
            "bytes": sum(entry.bytes for entry in self.files.values()),
            "skipped": self.skipped,
        }


# ---------------------------------------------------------------------------------- backup
def backup_store(settings: Settings, target: Path) -> Manifest:
    """Write a complete, verified backup of the embedded store of ``settings`` to ``target``.

    Guarantees: ``target`` appears only complete (the work happens in a ``.partial-*``
    sibling, removed on failure); the database copy is one consistent snapshot (the state
    before a bulk write in flight); the manifest's counts are those of the copy, checked by
    reopening it. Raises SettingsError for a remote or in-memory store, InputError when
    ``target`` exists and is not an empty directory, StoreNotFound when there is no store.
    """
    source = _embedded_store_dir(settings, "backup")
    _require_empty_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.partial-{secrets.token_hex(4)}")
    partial.mkdir()
    try:
        manifest = _write_backup_retrying(settings.store, source, partial)
        _fsync_tree(partial)
        if target.exists():
            target.rmdir()  # empty (checked above); rename() replaces only on some systems
        partial.rename(target)
        fsync_dir(target.parent)
        return manifest
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _embedded_store_dir(settings: Settings, operation: str) -> Path:
    """The store directory of ``settings``; SettingsError for a remote or in-memory store."""
    if settings.endpoint:
        raise SettingsError(
            f"{operation} works on an embedded store only, not on the SPARQL endpoint "
            f"{settings.endpoint}; back that server up with its own tools"
        )
    if settings.in_memory:
        raise SettingsError(f"{operation} needs a store directory, not :memory:")
    return Path(settings.store).expanduser()


def _require_empty_target(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError(
            f"{target} already exists and is not empty; name a new directory for the backup "
            "(or move the old one away first)"
        )


def _write_backup_retrying(given: str, source: Path, partial: Path, attempts: int = 3) -> Manifest:
    """:func:`_write_backup`, taken again from a fresh snapshot when the live writer's
    compaction removed a file the snapshot had still to read (a reader's transient error)."""
    for attempt in range(1, attempts + 1):
        try:
            return _write_backup(given, source, partial)
        except (OSError, RuntimeError) as error:
            transient = "No such file" in str(error) or "Corruption" in str(error)
            if not transient or attempt == attempts:
                raise
            for entry in list(partial.iterdir()):
                remove_path(entry)
    raise AssertionError("unreachable")


def _write_backup(given: str, source: Path, partial: Path) -> Manifest:
    """Copy the store at ``source`` into ``partial`` and write the manifest there."""
    created = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    skipped: dict[str, str] = {}
    with open_store(str(source), read_only=True) as snapshot:
        datasets = templates.run(snapshot, "datasets")
        expected = graph_counts(snapshot)
        default = list(_default_graph(snapshot))
        with open_store(str(partial)) as copy:
            for graph in expected:
                copy.replace_graph(graph, _copier(snapshot, graph))
            if default:
                copy.add_quads(default)
    (partial / LOCK_FILE).unlink(missing_ok=True)
    with open_store(str(partial), read_only=True) as reopened:
        counts, default_count = graph_counts(reopened), sum(1 for _ in _default_graph(reopened))
    if counts != expected or default_count != len(default):
        raise StoreError(f"the backup's copy of {given} does not hold what its snapshot held")
    for name in (INDEX_FILE, VECTORS_FILE):
        if (source / name).exists():
            reason = _copy_sqlite(source / name, partial / name)
            if reason:
                skipped[name] = reason
    if (source / ENGINE_DIR).is_dir() and INDEX_FILE not in skipped:
        reason = _copy_engine(source / ENGINE_DIR, partial / ENGINE_DIR)
        if reason:
            skipped[ENGINE_DIR] = reason
    if (source / HISTORY_FILE).is_file():
        shutil.copy2(source / HISTORY_FILE, partial / HISTORY_FILE)
    manifest = Manifest(
        format=FORMAT_VERSION,
        labbrain=__version__,
        created=created,
        source=given,
        graphs=counts,
        defaultGraph=default_count,
        quads=sum(counts.values()) + default_count,
        datasets=datasets,
        files=checksums(partial),
        skipped=skipped,
    )
    (partial / MANIFEST).write_text(
        json.dumps(manifest.model_dump(by_alias=True), indent=2, default=str) + "\n",
        encoding="utf-8",
    )
    return manifest


def graph_counts(store: QuadStore) -> dict[str, int]:
    """Named graph -> number of quads, for every named graph of ``store``, sorted."""
    return {
        str(row["graph"]): int(row["triples"])
        for row in templates.run(store, "graph_sizes")
        if str(row["graph"]) not in SERVER_GRAPHS
    }


def _default_graph(store: QuadStore) -> Iterator[Quad]:
    result = store.query(templates.template("backup_default_graph").text)
    assert isinstance(result, QuerySolutions)
    for row in result:
        yield Quad(row["s"], row["p"], row["o"], DefaultGraph())


def _copier(snapshot: QuadStore, graph: str) -> Callable[[GraphWriter], None]:
    def fill(writer: GraphWriter) -> None:
        writer.write(snapshot.quads(graph))

    return fill


def _copy_engine(source: Path, target: Path) -> str | None:
    """Copy the full-text engine's directory; return why it was not copied (a commit that
    removed a file during the copy). A copy older or newer than the copied SQLite file is
    no harm: the index finds the two disagree when it opens and rebuilds both."""
    try:
        shutil.copytree(source, target, ignore=_ENGINE_LOCKS)
    except (OSError, shutil.Error) as error:
        shutil.rmtree(target, ignore_errors=True)
        return f"not copied ({error}); it is rebuilt after a restore"
    return None


def _copy_sqlite(source: Path, target: Path) -> str | None:
    """Copy an SQLite database with its backup API (consistent while it is written); return
    why it was not copied when it is not a usable database (derived data: rebuilt later)."""
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
        try:
            dst = sqlite3.connect(str(target))
            try:
                src.backup(dst)
                check = dst.execute("PRAGMA quick_check").fetchone()
                if check is None or check[0] != "ok":
                    raise sqlite3.DatabaseError(f"integrity check: {check}")
                dst.execute("PRAGMA journal_mode=DELETE")
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as error:
        target.unlink(missing_ok=True)
        return f"not a usable SQLite database ({error}); it is rebuilt after a restore"
    return None


def checksums(directory: Path) -> dict[str, FileEntry]:
    """Relative path -> size and SHA-256 of every file under ``directory`` but the manifest."""
    found = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if name != MANIFEST:
            found[name] = FileEntry(bytes=path.stat().st_size, sha256=_sha256(path))
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_tree(directory: Path) -> None:
    """Flush every file and directory under ``directory`` to disk."""
    for path in directory.rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    for path in [directory, *(p for p in directory.rglob("*") if p.is_dir())]:
        fsync_dir(path)


# ---------------------------------------------------------------------------------- verify
def read_manifest(backup: Path) -> Manifest:
    """The manifest of the backup at ``backup``; BackupInvalid when it is missing, unreadable,
    of an unknown format, or the directory is an unfinished ``.partial-*`` one."""
    if not backup.is_dir():
        raise BackupInvalid(str(backup), "no such directory")
    path = backup / MANIFEST
    if not path.is_file():
        why = (
            "an unfinished backup (it was interrupted)"
            if ".partial-" in backup.name
            else f"no {MANIFEST}: not a labbrain backup, or an unfinished one"
        )
        raise BackupInvalid(str(backup), why)
    try:
        manifest = Manifest.model_validate_json(path.read_bytes())
    except (ValidationError, OSError) as error:
        raise BackupInvalid(str(backup), f"unreadable {MANIFEST} ({_first_line(error)})") from None
    if manifest.format != FORMAT_VERSION:
        raise BackupInvalid(
            str(backup), f"backup format {manifest.format}; this labbrain reads {FORMAT_VERSION}"
        )
    return manifest


def verify_backup(backup: Path) -> Manifest:
    """Check a backup completely without changing it: manifest, every file's size and
    SHA-256, no file missing, the database opens and holds the recorded quads per graph.
    Returns the manifest; raises BackupInvalid naming the first problem."""
    manifest = read_manifest(backup)
    present = {
        p.relative_to(backup).as_posix()
        for p in backup.rglob("*")
        if p.is_file() and p.name != MANIFEST
    }
    missing = sorted(set(manifest.files) - present)
    if missing:
        raise BackupInvalid(str(backup), f"{len(missing)} file(s) missing, e.g. {missing[0]}")
    for name, entry in manifest.files.items():
        path = backup / name
        if path.stat().st_size != entry.bytes or _sha256(path) != entry.sha256:
            raise BackupInvalid(str(backup), f"{name} changed since the backup was written")
    verify_database(backup, manifest, what="the backup's database")
    return manifest


def verify_database(directory: Path, manifest: Manifest, *, what: str) -> None:
    """Open the database of the store-like ``directory`` read-only and check that it holds
    the manifest's quads per graph; BackupInvalid otherwise."""
    try:
        with open_store(str(directory), read_only=True) as store:
            counts = graph_counts(store)
            default = sum(1 for _ in _default_graph(store))
    except (OSError, RuntimeError) as error:
        raise BackupInvalid(
            str(directory), f"{what} does not open ({_first_line(error)})"
        ) from None
    if counts != manifest.graphs or default != manifest.default_graph:
        differ = sorted(
            g for g in set(counts) | set(manifest.graphs) if counts.get(g) != manifest.graphs.get(g)
        )
        shown = differ[0] if differ else "the default graph"
        raise BackupInvalid(
            str(directory),
            f"{what} does not hold the quads the manifest records ({len(differ) or 1} "
            f"graph(s) differ, e.g. {shown})",
        )


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


# ---------------------------------------------------------------------------------- restore
@dataclass(frozen=True)
class RestoreReport:
    """What a restore did."""

    store: str
    backup: str
    manifest: Manifest
    replaced: bool
    index: SyncReport
    seconds: float
    undone_restore: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "store": self.store,
            "backup": self.backup,
            "created": self.manifest.created,
            "quads": self.manifest.quads,
            "graphs": self.manifest.graphs,
            "datasets": [row.get("slug") for row in self.manifest.datasets],
            "replaced": self.replaced,
            "reindexed": self.index.reindexed,
            "removedFromIndex": self.index.removed,
            "seconds": round(self.seconds, 3),
        }


def restore_store(settings: Settings, backup: Path, *, replace: bool = False) -> RestoreReport:
    """Make the embedded store of ``settings`` hold exactly the backup at ``backup``.

    Guarantees: the backup is verified (see :func:`verify_backup`) before anything changes;
    the writer lock is held throughout (StoreLocked when another process has the store); a
    store holding data is replaced only with ``replace``; the restored content is verified
    and the text index matches it before the old content is deleted; if anything fails
    (or the process is stopped), the store is as it was before (a stopped restore is
    undone by the next restore).
    """
    started = time.monotonic()
    directory = _embedded_store_dir(settings, "restore")
    manifest = verify_backup(backup)
    check_location(directory, create=True)  # a file or a place it cannot be: one clear error
    lock = WriterLock(directory)
    lock.acquire()
    try:
        recover(directory)  # a bulk write that died: roll it back first
        undone = recover_restore(directory)
        had_data = holds_data(directory)
        if had_data and not replace:
            raise InputError(
                f"store {directory} holds data; restore into an empty store, or add --replace "
                "to replace its content (kept until the restored copy is verified)"
            )
        staging = directory / RESTORE_STAGING
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _stage(backup, manifest, staging)
            index = _swap_in(directory, staging, manifest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        lock.release()
    return RestoreReport(
        store=settings.store,
        backup=str(backup),
        manifest=manifest,
        replaced=had_data,
        index=index,
        seconds=time.monotonic() - started,
        undone_restore=undone,
    )


def holds_data(directory: Path) -> bool:
    """True when the store at ``directory`` has any graph but labbrain's own ontology and
    system graphs (call with the writer lock held)."""
    if not (directory / DB_DIR).is_dir():
        return False
    with open_store(str(directory), read_only=True) as store:
        return any(g not in (ONTOLOGY_GRAPH, SYSTEM_GRAPH) for g in store.graphs()) or any(
            True for _ in _default_graph(store)
        )


def _stage(backup: Path, manifest: Manifest, staging: Path) -> None:
    """Copy the backup's files into ``staging`` and verify the copy of the database."""
    staging.mkdir()
    shutil.copytree(backup / DB_DIR, staging / DB_DIR)
    for name in (INDEX_FILE, VECTORS_FILE, HISTORY_FILE):
        if name in manifest.files:
            shutil.copy2(backup / name, staging / name)
    if any(name.startswith(ENGINE_DIR + "/") for name in manifest.files):
        shutil.copytree(backup / ENGINE_DIR, staging / ENGINE_DIR)
    verify_database(staging, manifest, what="the copy of the backup")


def _swap_in(directory: Path, staging: Path, manifest: Manifest) -> SyncReport:
    """Set the current content aside, move the staged copy in, verify it and sync the text
    index; put the old content back on any failure. Returns what the index sync did.

    ``restore.previous/`` existing means a restore is under way: it holds the old content,
    and its ``all-aside`` marker says every old file is in it (from then on, the store's
    files are the restored ones). Renaming it to ``restore.discard`` is the commit;
    :func:`recover_restore` rolls back an aside directory that was never renamed.
    """
    aside = directory / RESTORE_ASIDE
    aside.mkdir()
    fsync_dir(directory)
    try:
        for name in present_files(directory, RESTORED):
            (directory / name).rename(aside / name)
        (aside / ALL_ASIDE).touch()
        fsync_dir(aside)
        fsync_dir(directory)
        for name in present_files(staging, RESTORED):
            (staging / name).rename(directory / name)
        fsync_dir(directory)
        verify_database(directory, manifest, what="the restored database")
        report = _sync_index(directory)
        aside.rename(directory / RESTORE_DISCARD)  # the commit
    except BaseException:
        roll_back_restore(directory, aside)
        raise
    fsync_dir(directory)
    shutil.rmtree(directory / RESTORE_DISCARD, ignore_errors=True)
    return report


def _sync_index(directory: Path) -> SyncReport:
    """Bring the restored text index in line with the restored data (stale graphs only; a
    missing or unusable index file is rebuilt)."""
    with open_store(str(directory), read_only=True) as store:
        index = TextIndex(directory / INDEX_FILE)
        try:
            return index.sync(store)
        finally:
            index.close()
