"""DATA_PATH at start: a file the store already holds is not loaded again, and a file
unchanged since its digest was recorded (in the user's cache of checked files, not in the
store) is not even read again."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain.core import LabBrain
from labbrain.mcp import server
from labbrain.mcp.server import load_data_path
from labbrain.store.local import CHECKED_FILE, checked

HOUR_NS = 3600 * 10**9


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache of checked files is this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _aged_copy(tmp_path: Path) -> Path:
    """A copy of the sample, last modified an hour ago (well past the racy window)."""
    export = tmp_path / "export" / "lab.jsonld"
    export.parent.mkdir()
    shutil.copyfile(SAMPLE, export)
    past = time.time_ns() - HOUR_NS
    os.utime(export, ns=(past, past))
    return export


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("DATA_PATH was read again")

    monkeypatch.setattr(server, "read_input", refused)


def _recorded(export: Path) -> list[str] | None:
    return checked(f"data-path:{export.absolute()}")


def test_an_unchanged_file_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export, store = _aged_copy(tmp_path), tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        report = load_data_path(brain, str(export))
        assert report is not None and report.graph == SAMPLE_GRAPH
    recorded = _recorded(export)
    assert recorded is not None and len(recorded[1]) == 64  # what the file was, its digest
    assert sorted(p.name for p in store.iterdir() if p.suffix == ".json") == []
    _no_reading(monkeypatch)
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is None


def test_a_file_changed_in_place_is_read_and_loaded_again(tmp_path: Path) -> None:
    """Same size, modification time put back: its change time still tells."""
    export, store = _aged_copy(tmp_path), tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is not None
    before = export.stat()
    text = export.read_text(encoding="utf-8")
    changed = text.replace("Akamatsu", "Akamatsa", 1)
    assert changed != text and len(changed) == len(text)
    export.write_text(changed, encoding="utf-8")
    os.utime(export, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert export.stat().st_size == before.st_size
    with LabBrain(settings_for(store)) as brain:
        report = load_data_path(brain, str(export))
        assert report is not None  # a new digest: loaded again


def test_a_file_just_written_is_not_recorded(tmp_path: Path) -> None:
    """A second change within the file system's time resolution would not show."""
    export, store = tmp_path / "lab.jsonld", tmp_path / "store"
    shutil.copyfile(SAMPLE, export)
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is not None
        assert load_data_path(brain, str(export)) is None  # read, found loaded
    assert _recorded(export) is None


def test_a_recorded_file_whose_dataset_was_dropped_is_loaded_again(tmp_path: Path) -> None:
    export, store = _aged_copy(tmp_path), tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is not None
        brain.drop(SAMPLE_GRAPH)
        report = load_data_path(brain, str(export))
        assert report is not None and report.graph == SAMPLE_GRAPH


def test_a_read_only_server_records_nothing(tmp_path: Path) -> None:
    export, store = _aged_copy(tmp_path), tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(export))
    with LabBrain(settings_for(store), read_only=True) as reader:
        assert load_data_path(reader, str(export)) is None
    assert _recorded(export) is None


def test_a_damaged_record_means_a_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export, store = _aged_copy(tmp_path), tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is not None
    cache = tmp_path / "cache" / "labbrain" / CHECKED_FILE
    cache.write_text('{"not": "a record"', encoding="utf-8")
    with LabBrain(settings_for(store)) as brain:
        assert load_data_path(brain, str(export)) is None  # read and hashed again
    assert _recorded(export) is not None


def test_a_missing_file_is_still_an_error(tmp_path: Path) -> None:
    from labbrain.errors import InputError

    with (
        LabBrain(settings_for(tmp_path / "store")) as brain,
        pytest.raises(InputError, match="DATA_PATH"),
    ):
        load_data_path(brain, str(tmp_path / "missing.jsonld"))
