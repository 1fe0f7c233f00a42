"""A read-only view of a store another process writes: an open that fails because a file went
with the writer's commit is tried again (seen once in 40,366 reads during a replacement)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import settings_for
from labbrain.core import LabBrain
from labbrain.store import fresh


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
