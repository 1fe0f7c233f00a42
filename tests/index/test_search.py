"""The text index: kept in step with loads, detected stale or corrupt, rebuilt, and searched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REAL, REAL_GRAPH, SAMPLE, SAMPLE_GRAPH, require_corpus, settings_for
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.index.text import fts_query


@pytest.fixture
def loaded_dir(store_dir: Path) -> Path:
    require_corpus()
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        brain.load(str(REAL))
    return store_dir


def _results(brain: LabBrain, text: str = "membrane tension actin") -> list[tuple[str, float]]:
    return [(h.node.iri, round(h.score, 6)) for h in brain.search(text, limit=20).hits]


def test_search_hits_carry_attribution(sample_brain: LabBrain) -> None:
    hits = sample_brain.search("membrane tension", limit=5).hits
    assert len(hits) == 5
    assert hits == sorted(hits, key=lambda h: -h.score)
    for hit in hits:
        assert hit.node.graph == SAMPLE_GRAPH
        assert hit.node.iri.startswith("https://roamresearch.com/#/app/akamatsulab-sample/page/")
        assert not hit.node.title.startswith("[[")
        assert hit.node.creator is None or hit.node.creator in {
            "Rebecca Lee",
            "Matt Akamatsu",
            "Sagar Agarwal",
            "Aidan Stern",
            "Abhishek Raghunathan",
        }
        assert hit.node.created and hit.node.created.startswith("20")
        assert "**" in hit.snippet  # the match is marked
        assert hit.node.node_type in {
            "Evidence",
            "Claim",
            "Result",
            "Hypothesis",
            "Question",
            "Conclusion",
            "Issue",
            "Source",
        }


def test_filters(sample_brain: LabBrain) -> None:
    claims = sample_brain.search("actin", node_types="claim", limit=50).hits
    assert claims and all(h.node.node_type == "Claim" for h in claims)
    by_matt = sample_brain.search("actin", creator="Matt Akamatsu", limit=50).hits
    assert by_matt and all(h.node.creator == "Matt Akamatsu" for h in by_matt)
    assert sample_brain.search("actin", graphs=["urn:labbrain:dataset:nothing"]).hits == []
    assert sample_brain.search("   ").hits == []


@pytest.mark.needs_corpus
def test_title_matches_rank_first(memory_brain: LabBrain) -> None:
    memory_brain.load(str(REAL))
    top = memory_brain.search("polarization", limit=1).hits[0]
    assert "polariz" in top.node.title.lower()


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=40))
def test_fts_syntax_never_leaks(text: str) -> None:
    """Any user text becomes a safe FTS5 query of quoted words."""
    query = fts_query(text)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    db.execute("INSERT INTO t VALUES ('membrane tension')")
    if query:
        db.execute("SELECT * FROM t WHERE t MATCH ?", (query,)).fetchall()
    assert '"' not in query.replace('" OR "', "").strip('"')


def test_index_file_deleted_is_rebuilt_with_same_answers(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = _results(brain)
    (loaded_dir / INDEX_FILE).unlink()
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.index_sync is not None
        assert brain.index_sync.reindexed == {REAL_GRAPH: 268, SAMPLE_GRAPH: 150}
        assert _results(brain) == before


def test_corrupt_index_is_detected_and_rebuilt(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = _results(brain)
    (loaded_dir / INDEX_FILE).write_bytes(b"this is not a database" * 1000)
    for suffix in ("-wal", "-shm"):
        (loaded_dir / (INDEX_FILE + suffix)).unlink(missing_ok=True)
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.index_sync is not None and brain.index_sync.rebuilt_file
        assert _results(brain) == before


def test_stale_index_is_detected_and_reindexed(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = _results(brain)
        brain.index.replace_graph(SAMPLE_GRAPH, "an-old-load", [])  # as if a load was undone
        assert brain.index.stale_graphs(brain.store) == ([SAMPLE_GRAPH], [])
    with LabBrain(settings_for(loaded_dir), read_only=True) as reader:
        assert reader.index.stale_graphs(reader.store) == (
            [SAMPLE_GRAPH],
            [],
        )  # readers never write
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.index_sync is not None and brain.index_sync.reindexed == {SAMPLE_GRAPH: 150}
        assert _results(brain) == before


def test_reindex_matches_the_index_built_at_load(loaded_dir: Path) -> None:
    """Loading indexes from the parsed export; reindex reads the store: same records."""

    def rows(brain: LabBrain) -> list[tuple[object, ...]]:
        return brain.index._db.execute(
            "SELECT graph, iri, title, clean_title, content, node_type, creator, created, modified"
            " FROM nodes ORDER BY graph, iri"
        ).fetchall()

    with LabBrain(settings_for(loaded_dir)) as brain:
        at_load = rows(brain)
        report = brain.reindex()
        assert report.reindexed == {REAL_GRAPH: 268, SAMPLE_GRAPH: 150}
        assert rows(brain) == at_load
        assert len(at_load) == 418


def test_index_of_a_dropped_graph_is_removed(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        brain.drop(REAL_GRAPH)
        assert brain.index.count(REAL_GRAPH) == 0
        assert all(
            h.node.graph == SAMPLE_GRAPH for h in brain.search("polarization social media").hits
        )


def test_sparql_update_keeps_index_in_step(memory_brain: LabBrain) -> None:
    memory_brain.load(str(SAMPLE))
    memory_brain.query(f"DROP GRAPH <{SAMPLE_GRAPH}>", update=True)
    memory_brain.query(
        f"DELETE WHERE {{ GRAPH <urn:labbrain:system> {{ <{SAMPLE_GRAPH}> ?p ?o }} }}", update=True
    )
    assert memory_brain.index.count() == 0


def test_index_of_an_older_schema_is_rebuilt(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = _results(brain)
    index = loaded_dir / INDEX_FILE
    for suffix in ("", "-wal", "-shm"):
        (loaded_dir / (INDEX_FILE + suffix)).unlink(missing_ok=True)
    old = sqlite3.connect(index)
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '0');"
        "CREATE TABLE nodes (id INTEGER PRIMARY KEY, graph TEXT, iri TEXT);"
    )
    old.close()
    with LabBrain(settings_for(loaded_dir), read_only=True) as reader:
        assert reader.index.count() == 0  # a reader never rewrites it: it reads as stale
        assert reader.index.stale_graphs(reader.store) == ([SAMPLE_GRAPH, REAL_GRAPH], [])
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.index_sync is not None and brain.index_sync.rebuilt_file
        assert _results(brain) == before


def test_an_open_index_holds_no_write_lock(loaded_dir: Path) -> None:
    """Opening the index (with its integrity check) leaves no transaction open, so another
    connection (a backup, a check) can take the write lock while the store is open."""
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.index.count() > 0
        other = sqlite3.connect(loaded_dir / INDEX_FILE, timeout=0.1)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
        finally:
            other.close()


def test_nodes_with_every_word_come_first(memory_brain: LabBrain, tmp_path: Path) -> None:
    turtle = tmp_path / "words.ttl"
    turtle.write_text(
        "@prefix dct: <http://purl.org/dc/terms/> .\n"
        '<http://example.org/a> dct:title "actin actin actin actin" .\n'
        '<http://example.org/b> dct:title "actin filaments and myosin motors in a long title" .\n'
        '<http://example.org/c> dct:title "myosin" .\n'
    )
    memory_brain.load(str(turtle))
    hits = [h.node.iri.rsplit("/", 1)[1] for h in memory_brain.search("actin myosin").hits]
    assert hits[0] == "b"
    assert sorted(hits) == ["a", "b", "c"]
