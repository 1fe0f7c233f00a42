"""The full-text engine beside the index's SQLite file: kept in agreement with the node rows
(checked at open, rebuilt when damaged or cut short), weighting words as Okapi BM25 does,
marking snippets, and shared by several readers and writers of one index."""

from __future__ import annotations

import errno
import json
import shutil
import threading
from pathlib import Path

import pytest

from conftest import SAMPLE, settings_for
from labbrain.core import LabBrain
from labbrain.errors import DiskFull
from labbrain.index import fulltext
from labbrain.index.fulltext import FullTextDoc
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import ENGINE_SUFFIX, IndexRecord, TextIndex
from labbrain.ops.check import run_check

GRAPH = "urn:labbrain:dataset:lab"
OTHER = "urn:labbrain:dataset:other"


def record(uid: str, title: str, content: str, **fields: str | None) -> IndexRecord:
    return IndexRecord(
        iri=f"https://roamresearch.com/#/app/lab/page/{uid}",
        title=f"[[CLM]] - {title}",
        content=content,
        node_type=fields.get("node_type") or "Claim",
        creator=fields.get("creator", "Ada"),
        created=fields.get("created"),
        modified=fields.get("modified"),
    )


#: Six nodes; "the" is in every one, "actin" in two, "myosin" in one.
NODES = [
    record("n1", "the actin cortex", "the cortex holds actin"),
    record("n2", "the membrane", "the membrane bends"),
    record("n3", "the myosin motor", "the motor walks"),
    record("n4", "the endocytic pit", "the pit grows actin"),
    record("n5", "the vesicle", "the vesicle buds"),
    record("n6", "the coat", "the coat assembles"),
]


def uids(index: TextIndex, text: str, **filters: object) -> list[str]:
    return [hit.node.uid for hit in index.search(text, **filters)]  # type: ignore[arg-type]


def engine_dir(path: Path) -> Path:
    return path.with_suffix(ENGINE_SUFFIX)


@pytest.fixture
def index_file(tmp_path: Path) -> Path:
    path = tmp_path / "index.sqlite"
    index = TextIndex(path)
    index.replace_graph(GRAPH, "load-1", NODES)
    index.close()
    return path


def test_words_most_nodes_hold_weigh_almost_nothing() -> None:
    # Okapi BM25 weighs a word held by n of N nodes ln((N - n + 0.5) / (n + 0.5)): below zero
    # for "the" (6 of 6), so at the floor (a millionth); "actin" (2 of 6) weighs ln(4.5/2.5).
    index = TextIndex(None)
    index.replace_graph(GRAPH, "load-1", NODES)
    common = index.search("the", limit=10)
    assert len(common) == 6 and all(0 < hit.score < 1e-4 for hit in common)
    rare = index.search("actin", limit=10)
    assert {hit.node.uid for hit in rare} == {"n1", "n4"}
    assert all(hit.score > 0.1 for hit in rare)
    # the common word does not reorder what the rare one decides
    first = [hit.node.uid for hit in rare]
    assert uids(index, "the actin") == first + [u for u in uids(index, "the") if u not in first]


def test_snippets_mark_each_match_and_the_cut_ends() -> None:
    index = TextIndex(None)
    long_text = "Ça résumé " + "filler word " * 40 + "the actin network grows " + "tail " * 40
    index.replace_graph(
        GRAPH,
        "load-1",
        [
            record("s1", "Crème brûlée", long_text),
            record("s2", "Actin in the title only", "nothing here"),
            record("s3", "other", "ééé actin ééé actin"),
        ],
    )
    hits = {hit.node.uid: hit.snippet for hit in index.search("actin", limit=5)}
    assert "**actin**" in hits["s1"]
    assert hits["s1"].startswith("…") and hits["s1"].endswith("…")
    assert "Ça" not in hits["s1"] and len(hits["s1"]) < 200
    # the title, whole, when the content lacks the word
    assert hits["s2"] == "**Actin** in the title only"
    # the engine's offsets count bytes: past letters of two bytes, the marks still fit
    assert hits["s3"] == "ééé **actin** ééé **actin**"


def test_a_reader_sees_each_commit_of_a_writer(index_file: Path) -> None:
    reader = TextIndex(index_file, read_only=True)
    writer = TextIndex(index_file)
    try:
        assert uids(reader, "kinesin") == []
        writer.replace_graph(OTHER, "load-9", [record("k1", "kinesin steps", "along microtubules")])
        assert uids(reader, "kinesin") == ["k1"]
        assert sorted(uids(reader, "actin", limit=10)) == ["n1", "n4"]
    finally:
        reader.close()
        writer.close()


def test_two_writers_of_one_index_take_turns(index_file: Path) -> None:
    """Two writable indexes on one file (as two processes share a remote store's index):
    their writes wait for each other instead of failing on the engine's writer lock."""
    errors: list[BaseException] = []

    def write(graph: str, word: str) -> None:
        index = TextIndex(index_file)
        try:
            for round_ in range(4):
                nodes = [record(f"{word}{i}", f"{word} {round_}", word) for i in range(30)]
                index.replace_graph(graph, f"{word}-{round_}", nodes)
        except BaseException as error:
            errors.append(error)
        finally:
            index.close()

    threads = [threading.Thread(target=write, args=args) for args in ((GRAPH, "a"), (OTHER, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    index = TextIndex(index_file, read_only=True)
    try:
        assert index.engine_state() is None
        assert index.indexed_loads() == {GRAPH: "a-3", OTHER: "b-3"}
        assert len(index.search("a", limit=100)) == 30 == len(index.search("b", limit=100))
    finally:
        index.close()


def _damage(directory: Path, how: str) -> None:
    if how == "deleted":
        shutil.rmtree(directory)
    elif how == "meta-garbage":
        (directory / "meta.json").write_text("{ not json", encoding="utf-8")
    elif how == "segments-removed":
        for path in directory.iterdir():
            if path.suffix in (".idx", ".term", ".store", ".fast", ".fieldnorm", ".pos"):
                path.unlink()
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["deleted", "meta-garbage", "segments-removed"])
def test_a_damaged_engine_reads_as_stale_and_is_rebuilt_by_a_writable_open(
    index_file: Path, how: str
) -> None:
    _damage(engine_dir(index_file), how)
    reader = TextIndex(index_file, read_only=True)
    try:
        # a reader never writes: it starts empty (so every graph reads as stale) and says why
        assert reader.indexed_loads() == {} and uids(reader, "actin") == []
        assert (reader.engine_state() or "").startswith("index.fulltext ")
    finally:
        reader.close()
    writer = TextIndex(index_file)
    try:
        # the writable open makes a new engine and empties the rows, for sync to refill
        assert writer.rebuilt_file and writer.indexed_loads() == {} and writer.count() == 0
        writer.replace_graph(GRAPH, "load-1", NODES)
        assert sorted(uids(writer, "actin")) == ["n1", "n4"] and writer.engine_state() is None
    finally:
        writer.close()


def test_an_engine_ahead_of_the_rows_is_seen_and_rebuilt(index_file: Path) -> None:
    """A write cut between the engine's commit and SQLite's: the engine holds another load's
    documents than the rows record. Readers are told; the next writable open starts over."""
    index = TextIndex(index_file)
    docs = [FullTextDoc(GRAPH, r.iri, r.title, "", "claim", None, None, None) for r in NODES]
    index._fulltext.replace(GRAPH, "load-2", docs)  # as the cut-short write left it
    index.close()
    reader = TextIndex(index_file, read_only=True)
    try:
        assert "does not hold the indexed loads' words" in (reader.engine_state() or "")
    finally:
        reader.close()
    index = TextIndex(index_file)
    try:
        assert index.rebuilt_file and index.indexed_loads() == {}
        assert index.engine_state() is None
    finally:
        index.close()


def test_an_engine_with_documents_of_no_recorded_graph_is_rebuilt(index_file: Path) -> None:
    index = TextIndex(index_file)
    index._fulltext.replace(OTHER, "load-7", [FullTextDoc(OTHER, "x", "t", "", "c", *[None] * 3)])
    index.close()
    index = TextIndex(index_file)
    try:
        assert index.rebuilt_file and index.indexed_loads() == {}
    finally:
        index.close()


def test_check_reports_a_damaged_engine_and_repair_rebuilds_it(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "store")
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE))
        before = [(h.node.iri, h.snippet) for h in brain.search(SearchQuery("actin", limit=8)).hits]
    assert before
    _damage(tmp_path / "store" / f"index{ENGINE_SUFFIX}", "meta-garbage")
    report = run_check(settings)
    finding = next(f for f in report.findings if f.check == "text index")
    assert finding.status == "problem" and finding.detail.startswith("index.fulltext ")
    repaired = run_check(settings, repair=True)
    after = next(f for f in repaired.findings if f.check == "text index")
    assert after.status == "repaired", json.dumps(repaired.as_dict())
    with LabBrain(settings, read_only=True) as brain:
        assert [
            (h.node.iri, h.snippet) for h in brain.search(SearchQuery("actin", limit=8)).hits
        ] == before


def test_a_full_device_while_the_engine_writes_is_disk_full_and_keeps_the_old_index(
    index_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC from the engine's write is one DiskFull; the SQLite rows roll back and the
    engine keeps its last commit, so the index still answers as before, in agreement."""
    index = TextIndex(index_file)
    try:
        before = uids(index, "actin")

        def full(load_id: str, doc: FullTextDoc) -> str:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(fulltext, "_document", full)
        with pytest.raises(DiskFull):
            index.replace_graph(GRAPH, "load-2", [record("k1", "kinesin", "steps")])
        monkeypatch.undo()
        assert index.indexed_loads() == {GRAPH: "load-1"} and index.count() == len(NODES)
        assert uids(index, "actin") == before and uids(index, "kinesin") == []
        assert index.engine_state() is None
    finally:
        index.close()


def test_an_order_by_time_is_chronological_with_unreadable_times_last(tmp_path: Path) -> None:
    """Times order by the moment they name, whatever their zone or spelling; a value that is
    not a timestamp orders like a missing one: last, both ways."""
    index = TextIndex(tmp_path / "index.sqlite")
    nodes = [
        # 10:00 in UTC+02:00 is 08:00Z: before "b", though its text sorts after it.
        record("a", "actin one", "x", created="2024-03-01T10:00:00+02:00"),
        record("b", "actin two", "x", created="2024-03-01T09:00:00Z"),
        record("c", "actin three", "x", created="2024-03-01T08:30:00"),  # no zone: UTC
        record("d", "actin four", "x", created="last spring"),
        record("e", "actin five", "x", created=None),
        record("f", "actin six", "x", created="1969-12-31T23:59:59.999Z"),  # before 1970
    ]
    index.replace_graph(GRAPH, "load-1", nodes)
    newest = uids(index, "actin", order_by="created")
    oldest = uids(index, "actin", order_by="created", descending=False)
    assert newest[:4] == ["b", "c", "a", "f"]
    assert oldest[:4] == ["f", "a", "c", "b"]
    assert set(newest[4:]) == set(oldest[4:]) == {"d", "e"}
    index.close()


def test_instant_reads_iso_timestamps_as_milliseconds_since_1970() -> None:
    assert fulltext.instant("1970-01-01T00:00:01.5Z") == 1500
    assert fulltext.instant("1970-01-01T01:00:00+01:00") == 0
    assert fulltext.instant("1970-01-01T00:00:00") == 0
    assert fulltext.instant("1969-12-31T23:59:59.999Z") == -1
    assert fulltext.instant("yesterday") is None
    assert fulltext.instant("") is None
    assert fulltext.instant(None) is None


def test_a_failed_row_write_leaves_the_engine_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's documents are made beside the rows: when the rows fail, the engine's
    write is rolled back with them."""
    path = tmp_path / "index.sqlite"
    index = TextIndex(path)
    index.replace_graph(GRAPH, "load-1", NODES)

    def broken(*args: object) -> int:
        raise RuntimeError("links could not be written")

    monkeypatch.setattr("labbrain.index.text.write_links", broken)
    with pytest.raises(RuntimeError, match="links could not be written"):
        index.replace_graph(GRAPH, "load-2", [record("n9", "the myosin tail", "x")])
    assert sorted(uids(index, "the", limit=20)) == ["n1", "n2", "n3", "n4", "n5", "n6"]
    assert index.indexed_loads() == {GRAPH: "load-1"}
    index.close()
    reopened = TextIndex(path)
    assert not reopened.rebuilt_file
    assert uids(reopened, "myosin") == ["n3"]
    reopened.close()


def test_a_snippet_comes_from_the_content_when_the_title_holds_the_word_too() -> None:
    """The content is what a snippet shows; the title only stands in for a content that
    lacks every word of the query."""
    index = TextIndex(None)
    index.replace_graph(
        GRAPH, "load-1", [record("b1", "actin at the cortex", "the cortex holds actin filaments")]
    )
    (hit,) = index.search("actin", limit=5)
    assert hit.snippet == "the cortex holds **actin** filaments"


def test_equal_scores_at_the_limit_are_cut_by_key_not_by_the_order_of_writing() -> None:
    """Twelve nodes with the same words score the same; a limit that cuts through them keeps
    the first by key (graph, then IRI), whichever order they were indexed in."""
    tied = [record(f"t{i:02}", "the same claim", "the same words") for i in range(12)]
    index = TextIndex(None)
    index.replace_graph(GRAPH, "load-1", list(reversed(tied)))
    hits = index.search("same words", limit=3)
    assert len({hit.score for hit in index.search("same words", limit=12)}) == 1
    assert [hit.node.uid for hit in hits] == ["t00", "t01", "t02"]
    assert uids(index, "same words", limit=5) == ["t00", "t01", "t02", "t03", "t04"]
