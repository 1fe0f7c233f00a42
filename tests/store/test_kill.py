"""kill -9 in the middle of a load: the store reopens exactly as it was before the load."""

from __future__ import annotations

import gc
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, Store

from conftest import ROOT, SAMPLE, SAMPLE_DCT, SAMPLE_GRAPH, settings_for
from generate import write_export
from helpers import canonical, fingerprint, load_and_kill, snapshot
from labbrain.core import LabBrain
from labbrain.index.search_query import SearchQuery
from labbrain.store.journal import DB_DIR, JOURNAL_DIR, JOURNAL_MARKER

pytestmark = pytest.mark.subprocess

BIG_GRAPH = "urn:labbrain:dataset:bench-20000"
DCT_GRAPH = "urn:labbrain:dataset:dct-sample"
FAULT_CHILD = ROOT / "tests" / "ops" / "fault_child.py"


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-20000.jsonld"
    write_export(path, 20_000, seed=7)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.4, 1.2])
def test_kill_during_first_load(tmp_path: Path, big_export: Path, delay: float) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        before = fingerprint(brain)
        sample = canonical(brain, SAMPLE_GRAPH)
    load_and_kill(store, big_export, delay)
    with LabBrain(settings_for(store)) as brain:
        assert brain.store.recovered
        assert fingerprint(brain) == before
        assert canonical(brain, SAMPLE_GRAPH) == sample
        assert BIG_GRAPH not in brain.store.graphs()
        assert brain.index.count(BIG_GRAPH) == 0  # entries the killed load indexed are gone
        assert brain.index.count(SAMPLE_GRAPH) == 150
        assert brain.index.stale_graphs(brain.store) == ([], [])
    assert not (store / JOURNAL_DIR).exists()


@pytest.mark.slow
def test_kill_during_reload_keeps_the_previous_version(tmp_path: Path, big_export: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        first = brain.load(str(big_export))
        before = fingerprint(brain)
        hits = [
            h.node.iri for h in brain.search(SearchQuery("membrane tension actin", limit=5)).hits
        ]
    load_and_kill(store, big_export, 0.8)
    with LabBrain(settings_for(store)) as brain:
        assert fingerprint(brain) == before
        assert brain.store.count(BIG_GRAPH) == first.quads
        assert [d["loadId"] for d in brain.datasets()] == [first.load_id]
        assert brain.index.count(BIG_GRAPH) == 20_000
        assert [
            h.node.iri for h in brain.search(SearchQuery("membrane tension actin", limit=5)).hits
        ] == hits
    # and a load after the crash completes normally
    with LabBrain(settings_for(store)) as brain:
        again = brain.load(str(big_export))
        assert again.quads == first.quads


def _kill_between_bulk_writes(store: Path, source: Path) -> int:
    """Load ``source`` in a child that stops after the first of the load's bulk writes
    (tests/ops/fault_child.py, mode ``bulk``), SIGKILL it there; the quads the target graph
    held in the live database at the kill."""
    child = subprocess.Popen(
        [sys.executable, str(FAULT_CHILD), "bulk", str(store), "1", str(source)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    output = b""
    deadline = time.monotonic() + 120
    try:
        while b"partial" not in output or not output.endswith(b"\n"):
            assert child.poll() is None, f"the child ended early: {output!r}"
            assert time.monotonic() < deadline, f"the child never held a write: {output!r}"
            if select.select([child.stdout], [], [], 0.1)[0]:
                output += os.read(child.stdout.fileno(), 4096)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return int(output.decode().split("partial", 1)[1].split()[0])


def _quads_on_disk(store: Path, graph: str) -> int:
    """Quads of ``graph`` in the store's database as it lies on disk (no recovery)."""
    database = Store.read_only(str(store / DB_DIR))
    try:
        return sum(1 for _ in database.quads_for_pattern(None, None, None, NamedNode(graph)))
    finally:
        del database
        gc.collect()


@pytest.mark.parametrize(
    ("source", "graph"), [(SAMPLE_DCT, DCT_GRAPH), (SAMPLE, SAMPLE_GRAPH)], ids=["load", "reload"]
)
def test_a_load_killed_between_two_bulk_writes_is_rolled_back(
    tmp_path: Path, source: Path, graph: str
) -> None:
    """The kill lands where the database holds part of the load for certain (one of its two
    bulk writes done, the other held back); the next open restores every graph exactly."""
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        before = snapshot(brain)
    assert set(before) >= {SAMPLE_GRAPH} and DCT_GRAPH not in before
    partial = _kill_between_bulk_writes(store, source)
    assert (store / JOURNAL_DIR / JOURNAL_MARKER).exists()
    # What the kill left: part of the load in the database, neither before nor after it.
    assert _quads_on_disk(store, graph) == partial > 0
    if graph in before:
        assert partial != len(before[graph])
    with LabBrain(settings_for(store)) as brain:
        assert brain.store.recovered
        assert snapshot(brain) == before
        assert brain.index.count(SAMPLE_GRAPH) == 150
        assert brain.index.count(DCT_GRAPH) == 0
        assert brain.index.stale_graphs(brain.store) == ([], [])
    assert not (store / JOURNAL_DIR).exists()
