"""The text index: kept in step with loads, detected stale or corrupt, rebuilt, and searched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REAL, REAL_GRAPH, SAMPLE, SAMPLE_GRAPH, require_corpus, settings_for
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.index.fulltext import query_words
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import IndexRecord, TextIndex


@pytest.fixture
def loaded_dir(store_dir: Path) -> Path:
    require_corpus()
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        brain.load(str(REAL))
    return store_dir


def _results(brain: LabBrain, text: str = "membrane tension actin") -> list[tuple[str, float]]:
    """The hits, scores to four decimals: a rebuilt index holds the same documents, but the
    engine's writer threads share them between segments in no fixed way, which moves a score
    in its seventh digit."""
    return [(h.node.iri, round(h.score, 4)) for h in brain.search(SearchQuery(text, limit=20)).hits]


def test_search_hits_carry_attribution(sample_brain: LabBrain) -> None:
    hits = sample_brain.search(SearchQuery("membrane tension", limit=5)).hits
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
    claims = sample_brain.search(SearchQuery("actin", node_types=("claim",), limit=50)).hits
    assert claims and all(h.node.node_type == "Claim" for h in claims)
    by_matt = sample_brain.search(SearchQuery("actin", creator="Matt Akamatsu", limit=50)).hits
    assert by_matt and all(h.node.creator == "Matt Akamatsu" for h in by_matt)
    assert (
        sample_brain.search(SearchQuery("actin", graphs=("urn:labbrain:dataset:nothing",))).hits
        == []
    )
    assert sample_brain.search(SearchQuery("   ")).hits == []


@pytest.mark.needs_corpus
def test_title_matches_rank_first(memory_brain: LabBrain) -> None:
    memory_brain.load(str(REAL))
    top = memory_brain.search(SearchQuery("polarization", limit=1)).hits[0]
    assert "polariz" in top.node.title.lower()


_WORDS_INDEX = TextIndex(None)
_WORDS_INDEX.replace_graph(
    "urn:labbrain:dataset:words",
    "load-1",
    [
        IndexRecord(
            iri="https://roamresearch.com/#/app/words/page/abcdefghi",
            title="[[CLM]] - Membrane tension slows endocytosis",
            content="Under high membrane tension, actin assembly ... résumé AND OR NOT ( ) * : ^",
            node_type="Claim",
            creator="A",
            created=None,
            modified=None,
        )
    ],
)


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=0, max_size=40))
def test_query_syntax_never_leaks(text: str) -> None:
    """Any user text is searched as plain words: no query syntax, no error, and a hit only
    when one of its words is in the node."""
    hits = _WORDS_INDEX.search(text)
    node_words = set(
        query_words(
            "Membrane tension slows endocytosis Under high membrane"
            " tension, actin assembly résumé AND OR NOT"
        )
    )
    assert bool(hits) == bool(set(query_words(text)) & node_words)


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
            h.node.graph == SAMPLE_GRAPH
            for h in brain.search(SearchQuery("polarization social media")).hits
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
    hits = [
        h.node.iri.rsplit("/", 1)[1] for h in memory_brain.search(SearchQuery("actin myosin")).hits
    ]
    assert hits[0] == "b"
    assert sorted(hits) == ["a", "b", "c"]


# ---------------------------------------------------------------------------------------
# ranking: small corpora built so that one rule decides the order
# ---------------------------------------------------------------------------------------

#: Nodes without any query word: they make the query words rare, so BM25 weighs them.
FILLER = [
    (f"filler-{i}", "SourceDocument", f"zeta eta theta {i}", "iota kappa lambda", None, None)
    for i in range(6)
]


def ranked(
    brain: LabBrain,
    tmp_path: Path,
    nodes: list[tuple[str, str, str, str, str | None, str | None]],
    text: str,
    **filters: object,
) -> list[str]:
    """Load ``nodes`` (name, dg: type, title, content, creator, created) plus the filler as
    one dataset, search ``text`` with ``filters``, and return the names of the hits."""
    lines = [
        "@prefix dct: <http://purl.org/dc/terms/> .",
        "@prefix sioc: <http://rdfs.org/sioc/ns#> .",
        "@prefix dg: <https://discoursegraphs.com/schema/dg_core#> .",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
    ]
    for name, kind, title, content, creator, created in [*nodes, *FILLER]:
        node = f"<http://example.org/{name}> a dg:{kind} ; dct:title {title!r}"
        node = node.replace("'", '"') + f' ; sioc:content "{content}"'
        if creator:
            node += f' ; dct:creator "{creator}"'
        if created:
            node += f' ; dct:created "{created}T00:00:00Z"^^xsd:dateTime'
        lines.append(node + " .")
    path = tmp_path / "ranking.ttl"
    path.write_text("\n".join(lines) + "\n")
    if not brain.datasets():
        brain.load(str(path))
    hits = brain.search(SearchQuery(text, limit=20, **filters)).hits  # type: ignore[arg-type]
    return [hit.node.iri.rsplit("/", 1)[1] for hit in hits]


def test_a_word_in_the_title_outranks_the_same_word_twice_in_the_content(
    memory_brain: LabBrain, tmp_path: Path
) -> None:
    # Same lengths in each field; the content holds the word twice, the title once. Equal
    # field weights would put the content node first (tf 2 > tf 1); titles weigh four times.
    nodes = [
        ("in-content", "Claim", "gamma delta", "actin actin epsilon", None, None),
        ("in-title", "Claim", "actin delta", "gamma zeta epsilon", None, None),
    ]
    assert ranked(memory_brain, tmp_path, nodes, "actin") == ["in-title", "in-content"]


def test_nodes_holding_every_word_come_before_stronger_partial_matches(
    memory_brain: LabBrain, tmp_path: Path
) -> None:
    # By BM25 alone, "only-actin" (the word three times in its short title, where words
    # weigh four times) and "only-myosin" (the other word in its title) score more than
    # "both", which holds the two words once each in a long content. "both" comes first.
    nodes = [
        ("only-actin", "Claim", "actin actin actin", "epsilon", None, None),
        (
            "both",
            "Claim",
            "gamma delta",
            "actin and myosin with several more words after them here",
            None,
            None,
        ),
        ("only-myosin", "Claim", "myosin", "epsilon", None, None),
    ]
    assert ranked(memory_brain, tmp_path, nodes, "actin myosin") == [
        "both",
        "only-actin",
        "only-myosin",
    ]


#: Four nodes that all hold "actin" once in the title, differing by type, creator and date;
#: "a-claim" holds "myosin" too, so it alone holds both words.
FILTERED = [
    ("a-claim", "Claim", "actin myosin", "epsilon", "Ada", "2021-03-01"),
    ("b-evidence", "Evidence", "actin delta", "epsilon", "Ada", "2023-05-01"),
    ("c-claim", "Claim", "actin gamma", "epsilon", "Bo", "2022-01-01"),
    ("d-question", "Question", "actin beta", "epsilon", "Bo", None),
]


@pytest.mark.parametrize(
    ("text", "filters", "expected"),
    [
        # equal scores: the iri breaks the tie; "a-claim" holds both words
        ("actin myosin", {}, ["a-claim", "b-evidence", "c-claim", "d-question"]),
        ("actin", {}, ["a-claim", "b-evidence", "c-claim", "d-question"]),
        # the filter holds in the every-word pass and in the any-word pass
        ("actin myosin", {"node_types": "claim"}, ["a-claim", "c-claim"]),
        ("actin myosin", {"node_types": ["Evidence", "Question"]}, ["b-evidence", "d-question"]),
        ("actin myosin", {"creator": "Bo"}, ["c-claim", "d-question"]),
        ("actin", {"creator": "ada"}, []),  # creators match exactly
        # sorted by a field: nodes without it last, whatever the direction
        ("actin", {"order_by": "created"}, ["b-evidence", "c-claim", "a-claim", "d-question"]),
        (
            "actin",
            {"order_by": "created", "descending": False},
            ["a-claim", "c-claim", "b-evidence", "d-question"],
        ),
        ("actin", {"order_by": "title"}, ["a-claim", "c-claim", "b-evidence", "d-question"]),
        (
            "actin",
            {"order_by": "title", "descending": False, "creator": "Ada"},
            ["b-evidence", "a-claim"],
        ),
        # relevance is best first whatever the direction says
        ("actin myosin", {"descending": False}, ["a-claim", "b-evidence", "c-claim", "d-question"]),
    ],
)
def test_filters_and_orders_decide_the_exact_order(
    memory_brain: LabBrain,
    tmp_path: Path,
    text: str,
    filters: dict[str, object],
    expected: list[str],
) -> None:
    assert ranked(memory_brain, tmp_path, FILTERED, text, **filters) == expected
