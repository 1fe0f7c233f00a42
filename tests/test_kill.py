"""kill -9 in the middle of a big load: the store reopens exactly as it was before the load."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE, SAMPLE_GRAPH, settings_for
from generate import write_export
from helpers import canonical, fingerprint
from labbrain.core import LabBrain
from labbrain.store import JOURNAL_DIR, JOURNAL_MARKER

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

BIG_GRAPH = "urn:labbrain:dataset:bench-20000"


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-20000.jsonld"
    write_export(path, 20_000, seed=7)
    return path


def _load_and_kill(store: Path, export: Path, delay: float) -> None:
    """Start `labbrain load` in a child process and SIGKILL it ``delay`` s into its bulk write."""
    child = subprocess.Popen(
        [sys.executable, "-m", "labbrain", "--store", str(store), "load", str(export)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = store / JOURNAL_DIR / JOURNAL_MARKER
    deadline = time.monotonic() + 120
    try:
        while not marker.exists():
            assert child.poll() is None, "the load ended before its bulk write started"
            assert time.monotonic() < deadline, "the bulk write never started"
            time.sleep(0.005)
        time.sleep(delay)
        assert child.poll() is None, "the load finished before it could be killed"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert marker.exists(), "the kill left the journal of the interrupted write"


@pytest.mark.parametrize("delay", [0.0, 0.4, 1.2])
def test_kill_during_first_load(tmp_path: Path, big_export: Path, delay: float) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        before = fingerprint(brain)
        sample = canonical(brain, SAMPLE_GRAPH)
    _load_and_kill(store, big_export, delay)
    with LabBrain(settings_for(store)) as brain:
        assert brain.store.recovered
        assert fingerprint(brain) == before
        assert canonical(brain, SAMPLE_GRAPH) == sample
        assert BIG_GRAPH not in brain.store.graphs()
        assert brain.index.count(BIG_GRAPH) == 0  # entries the killed load indexed are gone
        assert brain.index.count(SAMPLE_GRAPH) == 150
        assert brain.index.stale_graphs(brain.store) == ([], [])
    assert not (store / JOURNAL_DIR).exists()


def test_kill_during_reload_keeps_the_previous_version(tmp_path: Path, big_export: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        first = brain.load(str(big_export))
        before = fingerprint(brain)
        hits = [h.node.iri for h in brain.search("membrane tension actin", limit=5)]
    _load_and_kill(store, big_export, 0.8)
    with LabBrain(settings_for(store)) as brain:
        assert fingerprint(brain) == before
        assert brain.store.count(BIG_GRAPH) == first.quads
        assert [d["loadId"] for d in brain.datasets()] == [first.load_id]
        assert brain.index.count(BIG_GRAPH) == 20_000
        assert [h.node.iri for h in brain.search("membrane tension actin", limit=5)] == hits
    # and a load after the crash completes normally
    with LabBrain(settings_for(store)) as brain:
        again = brain.load(str(big_export))
        assert again.quads == first.quads
