"""A read-only view of a store another process writes: an open, or a read, that fails because
a file of the bulk write's journal went with the writer's commit is done again (seen once in
about 40,000 reads during a replacement, in a query process)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from conftest import settings_for
from labbrain.core import LabBrain
from labbrain.store import fresh, isolated


def test_an_open_that_loses_a_file_to_a_commit_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    LabBrain(settings_for(store)).close()
    real = fresh.open_store
    calls = []

    def losing_once(location: str, *, read_only: bool = False) -> object:
        calls.append(location)
        if len(calls) == 1:
            raise OSError("IO error: No such file or directory: While opening a file")
        return real(location, read_only=read_only)

    monkeypatch.setattr(fresh, "open_store", losing_once)
    view = fresh.Snapshot(str(store)).store()
    assert len(calls) == 2
    assert view.graphs() is not None


def test_an_open_that_keeps_failing_is_the_callers_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    LabBrain(settings_for(store)).close()

    def failing(location: str, *, read_only: bool = False) -> object:
        raise OSError("IO error: gone")

    monkeypatch.setattr(fresh, "open_store", failing)
    with pytest.raises(OSError, match="gone"):
        fresh.Snapshot(str(store)).store()


class CountingOpen:
    """``fresh.open_store`` with the views it opened (to see each one closed)."""

    def __init__(self) -> None:
        self.real = fresh.open_store
        self.views: list[Any] = []

    def __call__(self, location: str, *, read_only: bool = False) -> Any:
        view = self.real(location, read_only=read_only)
        self.views.append(view)
        return view


def test_a_read_that_loses_a_journal_file_is_done_again_on_a_new_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a query process does (store/isolated.py): its view of a bulk write's journal
    loses a file to the writer's commit mid-read; the read is done again on a view opened
    anew, and both views are closed."""
    store = tmp_path / "store"
    LabBrain(settings_for(store)).close()
    opened = CountingOpen()
    monkeypatch.setattr(fresh, "open_store", opened)
    reads: list[Any] = []

    def read(view: Any) -> list[str]:
        reads.append(view)
        if len(reads) == 1:
            raise OSError("IO error: No such file or directory: While opening a file")
        return list(view.graphs())

    assert fresh.read_committed(str(store), read) == committed_graphs(store)
    assert reads == opened.views and len(reads) == 2
    for view in opened.views:
        with pytest.raises(Exception):  # noqa: B017 - closed: any read fails
            view.graphs()


def test_a_read_that_keeps_failing_is_the_callers_error_after_three_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    LabBrain(settings_for(store)).close()
    tries = []

    def read(view: Any) -> None:
        tries.append(view)
        raise OSError("IO error: gone")

    with pytest.raises(OSError, match="gone"):
        fresh.read_committed(str(store), read)
    assert len(tries) == fresh.OPEN_ATTEMPTS == 3


def test_a_query_process_reads_through_read_committed() -> None:
    """The child of run_isolated opens its view through read_committed (not open_store)."""
    source = inspect.getsource(isolated._child)
    assert "read_committed(" in source and "open_store(" not in source


def committed_graphs(store: Path) -> list[str]:
    with LabBrain(settings_for(store), read_only=True) as brain:
        return list(brain.store.graphs())
