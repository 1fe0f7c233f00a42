"""Opening the text index: the whole-file integrity check runs when the file may have changed
since it last passed, and is skipped when the file is exactly as recorded then (in the user's
cache of checked files, never in the store directory)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.index.text import _require_intact
from labbrain.store.local import CHECKED_FILE, checked

PAGE = 4096


def _database(path: Path, rows: int = 400) -> None:
    """A WAL-mode SQLite file of a few hundred pages, closed (its log written back)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    db.execute("CREATE INDEX t_body ON t (body)")
    db.executemany("INSERT INTO t (body) VALUES (?)", [(f"{i:05d}" * 150,) for i in range(rows)])
    db.commit()
    db.close()


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache of checked files is this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _recorded(path: Path) -> list[str] | None:
    return checked(f"index:{path.absolute()}")


def _damage_in_place(path: Path) -> None:
    """Noise over three pages in the middle; the file keeps its size."""
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(size // 3 // PAGE * PAGE)
        handle.write(os.urandom(3 * PAGE))


class Opened:
    """A connection to ``path`` whose statements are recorded."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
        self.db = sqlite3.connect(uri, uri=True)
        self.statements: list[str] = []
        self.db.set_trace_callback(self.statements.append)

    def checked(self) -> bool:
        """True when ``quick_check`` ran on this connection."""
        return any("quick_check" in statement for statement in self.statements)


@pytest.fixture
def opened() -> Iterator[list[Opened]]:
    connections: list[Opened] = []
    yield connections
    for connection in connections:
        connection.db.close()


def _open(opened: list[Opened], path: Path, *, read_only: bool = False) -> Opened:
    connection = Opened(path, read_only=read_only)
    opened.append(connection)
    return connection


def test_a_file_that_passed_is_not_read_again_until_it_changes(
    tmp_path: Path, opened: list[Opened]
) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    first = _open(opened, path)
    _require_intact(first.db, path, record=True)
    assert first.checked() and _recorded(path) is not None
    again = _open(opened, path)
    _require_intact(again.db, path, record=True)
    assert not again.checked()  # exactly as recorded: not read again
    # A change through SQLite (written back to the file at close) is checked at the next open.
    first.db.execute("INSERT INTO t (body) VALUES ('more')")
    first.db.commit()
    first.db.close()
    again.db.close()
    later = _open(opened, path)
    _require_intact(later.db, path, record=True)
    assert later.checked()


def test_damage_in_place_after_a_check_is_found(tmp_path: Path, opened: list[Opened]) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    _require_intact(_open(opened, path).db, path, record=True)
    size = path.stat().st_size
    _damage_in_place(path)
    assert path.stat().st_size == size
    with pytest.raises(sqlite3.DatabaseError):  # found by the check, which ran
        _require_intact(_open(opened, path).db, path, record=True)


def test_damage_with_the_modification_time_put_back_is_found(
    tmp_path: Path, opened: list[Opened]
) -> None:
    """Only the change time, which no program can set back, still tells."""
    path = tmp_path / "index.sqlite"
    _database(path)
    _require_intact(_open(opened, path).db, path, record=True)
    before = path.stat()
    _damage_in_place(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(sqlite3.DatabaseError):  # found by the check, which ran
        _require_intact(_open(opened, path).db, path, record=True)


def test_a_copy_or_a_replaced_file_is_checked(tmp_path: Path, opened: list[Opened]) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    _require_intact(_open(opened, path).db, path, record=True)
    copy = tmp_path / "copy" / "index.sqlite"
    copy.parent.mkdir()
    shutil.copy2(path, copy)  # same size and modification time, another inode
    path.rename(tmp_path / "aside.sqlite")
    copy.rename(path)  # in the checked file's place
    copied = _open(opened, path)
    _require_intact(copied.db, copy, record=True)
    assert copied.checked()


def test_a_read_only_open_checks_and_never_records(tmp_path: Path, opened: list[Opened]) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    reader = _open(opened, path, read_only=True)
    _require_intact(reader.db, path)
    assert reader.checked() and _recorded(path) is None
    # ... but it trusts what a writable open recorded.
    _require_intact(_open(opened, path).db, path, record=True)
    trusting = _open(opened, path, read_only=True)
    _require_intact(trusting.db, path)
    assert not trusting.checked()


def test_a_file_with_log_content_is_checked_and_not_recorded(
    tmp_path: Path, opened: list[Opened]
) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    _require_intact(_open(opened, path).db, path, record=True)
    writer = _open(opened, path)
    writer.db.execute("PRAGMA wal_autocheckpoint=0")
    writer.db.execute("INSERT INTO t (body) VALUES ('in the log only')")
    writer.db.commit()  # in the write-ahead log; the file itself is unchanged
    assert path.with_name(f"{path.name}-wal").stat().st_size > 0
    recorded = _recorded(path)
    reader = _open(opened, path)
    _require_intact(reader.db, path, record=True)
    assert reader.checked() and _recorded(path) == recorded


def test_an_unreadable_cache_means_a_check(tmp_path: Path, opened: list[Opened]) -> None:
    path = tmp_path / "index.sqlite"
    _database(path)
    _require_intact(_open(opened, path).db, path, record=True)
    (tmp_path / "cache" / "labbrain" / CHECKED_FILE).write_bytes(b"\xff\xfe not a record")
    connection = _open(opened, path)
    _require_intact(connection.db, path, record=True)
    assert connection.checked() and _recorded(path) is not None


def test_in_memory_is_always_checked(opened: list[Opened]) -> None:
    connection = Opened(Path(":memory:"))
    opened.append(connection)
    _require_intact(connection.db)
    assert connection.checked()


# ------------------------------------------------------------------- through the store's open
def test_a_store_damaged_in_place_after_a_clean_session_is_rebuilt(tmp_path: Path) -> None:
    """The next writable open finds pages damaged since the last (verified) open, and
    rebuilds the index from the store, as for a damaged file never verified."""
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        before = [hit.node.uid for hit in brain.index.search("actin", limit=20)]
    with LabBrain(settings_for(store)):
        pass  # checked and recorded here (after the load's writes)
    index = store / INDEX_FILE
    assert _recorded(index) is not None
    assert sorted(p.name for p in store.iterdir() if p.name.startswith(INDEX_FILE)) == [
        INDEX_FILE
    ]  # nothing beside the index file
    with LabBrain(settings_for(store)) as brain:
        assert brain.index_sync is not None and not brain.index_sync.rebuilt_file
    _damage_in_place(index)
    with LabBrain(settings_for(store)) as brain:
        assert brain.index_sync is not None and brain.index_sync.rebuilt_file
        assert brain.index_sync.reindexed == {SAMPLE_GRAPH: 150}
        assert [hit.node.uid for hit in brain.index.search("actin", limit=20)] == before
