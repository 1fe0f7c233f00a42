"""kill -9 in the middle of a big load: the store reopens exactly as it was before the load."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from generate import write_export
from helpers import canonical, fingerprint, load_and_kill
from labbrain.core import LabBrain
from labbrain.store.journal import JOURNAL_DIR

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

BIG_GRAPH = "urn:labbrain:dataset:bench-20000"


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-20000.jsonld"
    write_export(path, 20_000, seed=7)
    return path


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


def test_kill_during_reload_keeps_the_previous_version(tmp_path: Path, big_export: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        first = brain.load(str(big_export))
        before = fingerprint(brain)
        hits = [h.node.iri for h in brain.search("membrane tension actin", limit=5).hits]
    load_and_kill(store, big_export, 0.8)
    with LabBrain(settings_for(store)) as brain:
        assert fingerprint(brain) == before
        assert brain.store.count(BIG_GRAPH) == first.quads
        assert [d["loadId"] for d in brain.datasets()] == [first.load_id]
        assert brain.index.count(BIG_GRAPH) == 20_000
        assert [h.node.iri for h in brain.search("membrane tension actin", limit=5).hits] == hits
    # and a load after the crash completes normally
    with LabBrain(settings_for(store)) as brain:
        again = brain.load(str(big_export))
        assert again.quads == first.quads
