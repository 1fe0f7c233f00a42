"""Recovery of an embedded store directory: the bulk-write journal and stopped restores.

A bulk write first takes a hard-link backup into ``journal/`` and marks it complete; a restore
stages its copy and sets the old content aside. The functions here undo whatever such a write
or restore left half-done, so every open sees the store as it was before it. Call them with
the writer lock held.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

DB_DIR = "oxigraph"
LOCK_FILE = "writer.lock"
#: The pid of the lock's holder, beside the lock (see labbrain.store.local.WriterLock).
PID_FILE = "writer.pid"
JOURNAL_DIR = "journal"
JOURNAL_MARKER = "COMPLETE"
DISCARD_DIR = "oxigraph.discard"
#: What ``labbrain restore`` replaces in a store directory (SQLite side files go along).
RESTORED = (DB_DIR, "index.sqlite", "index.fulltext", "vectors.sqlite", "console_history")
SQLITE_SIDE_FILES = ("-wal", "-shm")
#: Where a restore stages its copy, sets the current content aside, and marks its commit.
RESTORE_STAGING = "restore.partial"
RESTORE_ASIDE = "restore.previous"
RESTORE_DISCARD = "restore.discard"
ALL_ASIDE = "all-aside"


def fsync_dir(path: Path) -> None:
    """Flush the directory entry changes of ``path`` (renames, new files) to disk.

    Does nothing where a directory cannot be opened (no ``os.O_DIRECTORY``: Windows, whose
    file system journals these changes itself).
    """
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover(directory: Path) -> bool:
    """Undo an interrupted bulk write in store ``directory``; return True if one was undone.

    Safe to call at any time the writer lock is held; idempotent if itself interrupted.
    """
    journal = directory / JOURNAL_DIR
    backup = journal / DB_DIR
    marker = journal / JOURNAL_MARKER
    main = directory / DB_DIR
    discard = directory / DISCARD_DIR
    restored = False
    if marker.exists():
        if backup.exists():
            if main.exists():
                main.rename(discard)
            backup.rename(main)
            fsync_dir(directory)
        marker.unlink()
        restored = True
    shutil.rmtree(journal, ignore_errors=True)
    shutil.rmtree(discard, ignore_errors=True)
    return restored


def present_files(directory: Path, names: Iterable[str]) -> list[str]:
    """The store files among ``names`` (with SQLite side files) present in ``directory``."""
    found = []
    for name in names:
        for candidate in (name, *(name + suffix for suffix in SQLITE_SIDE_FILES)):
            if (directory / candidate).exists():
                found.append(candidate)
    return found


def restore_left_behind(directory: Path) -> bool:
    """True when a restore stopped midway left the old content set aside in ``directory``."""
    return (directory / RESTORE_ASIDE).is_dir()


def roll_back_restore(directory: Path, aside: Path) -> None:
    """Put the content set aside in ``aside`` back into ``directory`` (removing whatever a
    restore moved in or wrote meanwhile), then remove ``aside``."""
    marker = aside / ALL_ASIDE
    if marker.exists():
        for name in present_files(directory, RESTORED):
            remove_path(directory / name)
        marker.unlink()
    for item in sorted(aside.iterdir()):
        item.rename(directory / item.name)
    fsync_dir(directory)
    aside.rmdir()


def recover_restore(directory: Path) -> bool:
    """Undo a restore of store ``directory`` that was stopped midway (the old content comes
    back), finish deleting what a committed one set aside, and drop a staged copy. Returns
    True when a stopped restore was undone. Call with the writer lock held; every open that
    can take the lock calls it, so nothing ever runs on a half-restored store."""
    aside = directory / RESTORE_ASIDE
    undone = aside.is_dir()
    if undone:
        roll_back_restore(directory, aside)
    shutil.rmtree(directory / RESTORE_DISCARD, ignore_errors=True)
    shutil.rmtree(directory / RESTORE_STAGING, ignore_errors=True)
    return undone


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree at ``path`` (a missing file is no error)."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
