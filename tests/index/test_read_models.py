"""The index's read models (contributions, links): derived with the text rows, equal to what
the raw export says, replaced and dropped with their graph, rebuilt with an older index file.
The links are the same whether a load or a re-index wrote them, and answer per node exactly
what the ``node_edges`` template (their definition) answers."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import (
    REAL,
    REAL_DCT,
    REAL_GRAPH,
    SAMPLE,
    SAMPLE_DCT,
    SAMPLE_GRAPH,
    SAMPLE_V0,
    settings_for,
)
from generate import generate_export
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.index.links import LinkRow, NodeLink
from labbrain.index.text import normalise_timestamp
from labbrain.ingest.load import LoadProgress
from labbrain.ingest.roam_export import analyse_export
from labbrain.store import templates
from labbrain.store.ontology import vocabulary

Json = dict[str, Any]


def _raw_exports() -> ModuleType:
    """The plain-``json`` export reader of the MCP tool tests (an independent parser)."""
    path = Path(__file__).parents[1] / "mcp" / "test_mcp_tools.py"
    spec = importlib.util.spec_from_file_location("raw_exports_for_index_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


EXPORT = _raw_exports().SAMPLE_EXPORT

Row = tuple[str, str, int, str | None, str | None]


def expected_contributions() -> list[Row]:
    """(creator, node type, nodes, first created, last created) from the raw export."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for page in EXPORT.pages.values():
        if page.creator is not None:
            groups[(page.creator, page.node_type)].append(normalise_timestamp(page.created) or "")
    return [
        (creator, kind, len(created), min(created), max(created))
        for (creator, kind), created in sorted(groups.items())
    ]


def table(path: Path, graph: str) -> list[Row]:
    """The contributions rows of ``graph`` in the index file, sorted."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT creator, node_type, nodes, first_created, last_created FROM contributions"
            " WHERE graph = ? ORDER BY creator, node_type",
            (graph,),
        ).fetchall()
    finally:
        db.close()
    return [tuple(row) for row in rows]


def _one_creator(tmp_path: Path) -> Path:
    """The sample with every page by one new creator."""
    document: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    document["@graph"] = [
        {**entry, "creator": "Someone Else"} if "title" in entry else entry
        for entry in document["@graph"]
    ]
    path = tmp_path / "changed.jsonld"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_contributions_equal_the_raw_export_and_sum_over_graphs(
    store_dir: Path, tmp_path: Path
) -> None:
    expected = expected_contributions()
    assert len(expected) > 5
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        assert table(store_dir / INDEX_FILE, SAMPLE_GRAPH) == expected
        assert brain.index.contributions() == expected
        # a second dataset by one creator adds its counts to theirs
        brain.load(str(_one_creator(tmp_path)), graph="copy")
        pages = len(EXPORT.pages)
        total = dict(((c, t), n) for c, t, n, _, _ in brain.index.contributions())
        assert sum(n for (c, _), n in total.items() if c == "Someone Else") == pages
        assert brain.index.contributions("Matt Akamatsu") == [
            row for row in expected if row[0] == "Matt Akamatsu"
        ]


def test_reload_reindex_and_drop_replace_the_rows(store_dir: Path, tmp_path: Path) -> None:
    index_file = store_dir / INDEX_FILE
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        brain.load(str(_one_creator(tmp_path)), graph=SAMPLE_GRAPH)
        assert {row[0] for row in table(index_file, SAMPLE_GRAPH)} == {"Someone Else"}
        brain.load(str(SAMPLE))
        brain.reindex()
        assert table(index_file, SAMPLE_GRAPH) == expected_contributions()
        brain.drop(SAMPLE_GRAPH)
        assert table(index_file, SAMPLE_GRAPH) == [] and brain.index.contributions() == []


def test_an_index_of_the_previous_schema_is_rebuilt_with_its_contributions(
    store_dir: Path,
) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    db = sqlite3.connect(store_dir / INDEX_FILE)
    db.executescript("DROP TABLE contributions; UPDATE meta SET value = '2' WHERE key = 'schema';")
    db.close()
    with LabBrain(settings_for(store_dir)) as brain:
        assert brain.index.contributions() == expected_contributions()


# ------------------------------------------------------------------ links


def page_url(export: Any, uid: str) -> str:
    """The IRI of page ``uid`` of ``export``."""
    return str(export.page_base) + uid


def expected_links(export: Any) -> set[LinkRow]:
    """(source, destination, kind, label) of every link of an export, from its raw JSON: each
    relation instance with both ends in the export, through its relationDef's label; each
    wikilink or page URL to another page; each textRefersToNode reference, to whatever it
    names."""
    typed = {
        (page_url(export, r.source), page_url(export, r.destination), "typed", r.label)
        for r in export.relations
    }
    text = {
        (page_url(export, source), page_url(export, destination), "text", None)
        for source, destination in export.text_links
    }
    text |= {
        (page_url(export, uid), page_url(export, target), "text", None)
        for uid, page in export.pages.items()
        for target in page.refers_to
    }
    return typed | text


def links_table(path: Path, graph: str) -> list[LinkRow]:
    """The links of ``graph`` in the index file as (source, destination, kind, label), sorted
    (repeats kept)."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT s.iri, d.iri, kind, label FROM links"
            " JOIN link_ends s ON s.id = links.source JOIN link_ends d ON d.id = links.destination"
            " WHERE s.graph = ? ORDER BY s.iri, d.iri, kind, label",
            (graph,),
        ).fetchall()
        # every link's two ends are numbered in the same graph
        assert all(
            graph == ends
            for (ends,) in db.execute(
                "SELECT d.graph FROM links JOIN link_ends s ON s.id = links.source"
                " JOIN link_ends d ON d.id = links.destination WHERE s.graph = ?",
                (graph,),
            )
        )
    finally:
        db.close()
    return [tuple(row) for row in rows]


def template_links(brain: LabBrain, graph: str, iri: str) -> list[NodeLink]:
    """What the ``node_edges`` template (the definition of a node's links) answers."""
    return [
        NodeLink(row["direction"], row["kind"], row["label"], row["other"])
        for row in templates.run(brain.store, "node_edges", node=iri, graph=graph)
    ]


def _rewritten(path: Path, tmp_path: Path, name: str, change: Callable[[Json], Json]) -> Path:
    """``path`` with every ``@graph`` entry passed through ``change``, as a new file."""
    document: Json = json.loads(path.read_text(encoding="utf-8"))
    document["@graph"] = [change(entry) for entry in document["@graph"]]
    out = tmp_path / name
    out.write_text(json.dumps(document), encoding="utf-8")
    return out


def _reversed_relations(entry: Json) -> Json:
    """A relation instance pointing the other way; other entries as they are."""
    if entry.get("@type") == "relationInstance":
        return {**entry, "source": entry["destination"], "destination": entry["source"]}
    return entry


def _generated(tmp_path: Path, variant: str) -> Path:
    path = tmp_path / f"generated-{variant}.jsonld"
    path.write_text(json.dumps(generate_export(1_500, seed=5, variant=variant)), encoding="utf-8")
    return path


#: The exports whose links both ways of filling the index must agree on.
EXPORT_FILES = [
    pytest.param(lambda tmp: SAMPLE, id="sample"),
    pytest.param(lambda tmp: SAMPLE_V0, id="sample-v0"),
    pytest.param(lambda tmp: SAMPLE_DCT, id="sample-dct"),
    pytest.param(lambda tmp: REAL, id="real", marks=pytest.mark.needs_corpus),
    pytest.param(lambda tmp: REAL_DCT, id="real-dct", marks=pytest.mark.needs_corpus),
    pytest.param(lambda tmp: _generated(tmp, "2025-12"), id="generated-2025-12"),
    pytest.param(lambda tmp: _generated(tmp, "2026-06"), id="generated-2026-06"),
]


def test_links_equal_the_raw_export(store_dir: Path) -> None:
    expected = expected_links(EXPORT)
    assert {kind for _, _, kind, _ in expected} == {"typed", "text"}
    assert any(page.refers_to for page in EXPORT.pages.values())
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        loaded = links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH)
        assert loaded == sorted(expected, key=_row_order)  # no repeats, nothing else
        brain.reindex()
        assert links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH) == loaded


@pytest.mark.needs_corpus
def test_links_equal_the_raw_real_corpus(store_dir: Path) -> None:
    real = _raw_exports().REAL_EXPORT
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(REAL))
        rows = links_table(store_dir / INDEX_FILE, REAL_GRAPH)
    assert rows == sorted(expected_links(real), key=_row_order)


def _row_order(row: LinkRow) -> tuple[str, str, str, bool, str]:
    """SQLite's order of link rows (a NULL label first)."""
    source, destination, kind, label = row
    return (source, destination, kind, label is not None, label or "")


@pytest.mark.parametrize("make", EXPORT_FILES)
def test_a_load_and_a_reindex_give_the_same_links(
    make: Callable[[Path], Path], store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert analyse_export(document, str(path), vocabulary()).links_exact
    with LabBrain(settings_for(store_dir)) as brain:
        # the load takes its links from its own analysis, never from the store
        with monkeypatch.context() as patch:
            patch.setattr(brain.index, "index_graph", _must_not_run)
            report = brain.load(str(path))
        loaded = links_table(store_dir / INDEX_FILE, report.graph)
        assert loaded and len({row[2] for row in loaded}) == 2
        brain.reindex()
        assert links_table(store_dir / INDEX_FILE, report.graph) == loaded


def _must_not_run(*args: object, **kwargs: object) -> int:
    raise AssertionError("the load indexed the graph from the store")


@pytest.mark.parametrize("make", EXPORT_FILES)
def test_links_of_answers_what_node_edges_answers(
    make: Callable[[Path], Path], store_dir: Path, tmp_path: Path
) -> None:
    path = make(tmp_path)
    with LabBrain(settings_for(store_dir)) as brain:
        graph = brain.load(str(path)).graph
        # the same pages with every relation the other way round, in a second graph
        other = brain.load(
            str(_rewritten(path, tmp_path, "reversed.jsonld", _reversed_relations)),
            graph="reversed",
        ).graph
        for dataset in (graph, other):
            nodes, _ = brain.index.nodes(graphs=[dataset], limit=100_000)
            iris = [node.iri for node in nodes]
            batched = brain.index.links_of(dataset, [*iris, "https://example.org/not-a-node"])
            assert batched["https://example.org/not-a-node"] == []
            linked = 0
            for iri in iris:
                expected = template_links(brain, dataset, iri)
                assert brain.index.links_of(dataset, [iri]) == {iri: expected}
                assert batched[iri] == expected
                linked += bool(expected)
            assert linked > len(iris) / 3
            # links between two sets: the same links, kept where the other end is in the set
            targets = iris[::3]
            between = brain.index.links_between(
                dataset, [*iris, "https://example.org/not-a-node"], targets
            )
            assert between["https://example.org/not-a-node"] == set()
            for iri in iris:
                ends = {link.other for link in batched[iri]}
                assert between[iri] == ends & set(targets)
            assert any(between.values())
            everything = brain.index.links_between(dataset, iris, iris)  # past 250 a chunk
            assert everything == {iri: {link.other for link in batched[iri]} for iri in iris}
            assert brain.index.links_between(dataset, iris[:5], []) == {i: set() for i in iris[:5]}


def test_unlabelled_relations_and_lone_references_are_followed_by_the_load(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document: Json = json.loads(SAMPLE.read_text(encoding="utf-8"))
    entries: list[Json] = document["@graph"]
    instances = [e for e in entries if e.get("@type") == "relationInstance"]
    labels = {e["@id"]: e["label"] for e in entries if e.get("@type") == "relationDef"}
    unlabelled = instances[0]["predicate"]  # a relationDef in use, about to lose its label
    pages = [e for e in entries if "title" in e]
    linked = {(s, d) for s, d, _, _ in expected_links(EXPORT)}
    # references that are a node's only link to a page, and one to a page not exported
    lonely = next(
        (a, b)
        for a in pages
        for b in pages
        if a is not b
        and (page_url(EXPORT, uid(a["@id"])), page_url(EXPORT, uid(b["@id"]))) not in linked
    )
    lonely[0]["textRefersToNode"] = [*_listed(lonely[0].get("textRefersToNode")), lonely[1]["@id"]]
    lonely[1]["textRefersToNode"] = [*_listed(lonely[1].get("textRefersToNode")), "page:gone0001"]
    raw = _raw_exports().export_from_document(document, SAMPLE)  # labels still given
    for entry in entries:
        if entry.get("@id") == unlabelled:
            del entry["label"]
    path = tmp_path / "unlabelled.jsonld"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert analyse_export(json.loads(path.read_text()), str(path), vocabulary()).links_exact

    def url(reference: str) -> str:
        return page_url(EXPORT, uid(reference))

    typed = {
        (url(e["source"]), url(e["destination"]), "typed", labels[e["predicate"]])
        for e in instances
        if e["predicate"] != unlabelled
        and uid(e["source"]) in EXPORT.pages
        and uid(e["destination"]) in EXPORT.pages
    }
    text = {row for row in expected_links(raw) if row[2] == "text"}
    assert (url(lonely[0]["@id"]), url(lonely[1]["@id"]), "text", None) in text
    assert (url(lonely[1]["@id"]), url("page:gone0001"), "text", None) in text
    with LabBrain(settings_for(store_dir)) as brain:
        with monkeypatch.context() as patch:
            patch.setattr(brain.index, "index_graph", _must_not_run)
            brain.load(str(path))
        loaded = links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH)
        assert loaded == sorted(typed | text, key=_row_order)
        brain.reindex()
        assert links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH) == loaded


def _listed(value: Any) -> list[Any]:
    """A JSON value that may be one item or a list, as a list."""
    return value if isinstance(value, list) else [] if value is None else [value]


def test_references_the_load_does_not_follow_are_read_from_the_store(
    store_dir: Path, tmp_path: Path
) -> None:
    def odd(entry: Json) -> Json:
        if "textRefersToNode" in entry:  # a full IRI, not a page reference of the export
            return {**entry, "textRefersToNode": ["https://example.org/elsewhere"]}
        return entry

    path = _rewritten(SAMPLE, tmp_path, "odd.jsonld", odd)
    analysis = analyse_export(json.loads(path.read_text(encoding="utf-8")), str(path), vocabulary())
    assert not analysis.links_exact
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(path))
        loaded = links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH)
        brain.reindex()
        assert links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH) == loaded
    elsewhere = [row for row in loaded if row[1] == "https://example.org/elsewhere"]
    entries = json.loads(SAMPLE.read_text(encoding="utf-8"))["@graph"]
    assert len(elsewhere) == sum("textRefersToNode" in e for e in entries) > 0


def uid(reference: str) -> str:
    """``pages:abc`` / ``page:abc`` -> ``abc``."""
    return reference.split(":", 1)[1]


def test_links_go_with_their_graph(store_dir: Path, tmp_path: Path) -> None:
    index_file = store_dir / INDEX_FILE
    reversed_sample = _rewritten(SAMPLE, tmp_path, "reversed.jsonld", _reversed_relations)
    expected = sorted(expected_links(EXPORT), key=_row_order)
    flipped = sorted(
        {(d, s, k, lab) if k == "typed" else (s, d, k, lab) for s, d, k, lab in expected},
        key=_row_order,
    )
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        brain.load(str(reversed_sample), graph="copy")
        copy = "urn:labbrain:dataset:copy"
        assert links_table(index_file, copy) == flipped
        # a re-load replaces the rows, leaving none of the old ones
        brain.load(str(reversed_sample))
        assert links_table(index_file, SAMPLE_GRAPH) == flipped
        brain.load(str(SAMPLE))
        assert links_table(index_file, SAMPLE_GRAPH) == expected
        brain.drop(copy)
        assert links_table(index_file, copy) == []
        assert links_table(index_file, SAMPLE_GRAPH) == expected
        brain.drop(SAMPLE_GRAPH)
        assert links_table(index_file, SAMPLE_GRAPH) == []


def test_a_load_that_is_rolled_back_leaves_no_links_of_it(store_dir: Path, tmp_path: Path) -> None:
    index_file = store_dir / INDEX_FILE
    reversed_sample = _rewritten(SAMPLE, tmp_path, "reversed.jsonld", _reversed_relations)
    expected = sorted(expected_links(EXPORT), key=_row_order)

    def fail_at_commit(step: LoadProgress) -> None:
        if step.name == "index":  # after the load's rows were indexed, before the commit
            raise RuntimeError("stopped")

    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        with pytest.raises(RuntimeError, match="stopped"):
            brain.load(str(reversed_sample), progress=fail_at_commit)
        assert links_table(index_file, SAMPLE_GRAPH) == expected
        # an index left at another load (as by a process that died) is re-synced whole
        brain.index.replace_graph(SAMPLE_GRAPH, "an-old-load", [], [("a:b", "c:d", "text", None)])
        assert brain.index.sync(brain.store).reindexed
        assert links_table(index_file, SAMPLE_GRAPH) == expected


def test_an_index_without_links_is_rebuilt_with_them(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    db = sqlite3.connect(store_dir / INDEX_FILE)
    db.executescript("DROP TABLE links; UPDATE meta SET value = '4' WHERE key = 'schema';")
    db.close()
    with LabBrain(settings_for(store_dir)) as brain:
        expected = sorted(expected_links(EXPORT), key=_row_order)
        assert links_table(store_dir / INDEX_FILE, SAMPLE_GRAPH) == expected
        assert brain.index.links_of(SAMPLE_GRAPH, [expected[0][0]])[expected[0][0]]


def test_everyones_contributions_follow_each_load_and_drop(store_dir: Path, tmp_path: Path) -> None:
    """The answer for everyone is kept between calls, but never past a load, a reload or a
    drop; and a caller changing its copy changes nothing for the next."""

    def totals(reader: DiscourseReader) -> dict[str, int]:
        return {c.creator: c.total for c in reader.get_researcher_contributions().creators}

    with LabBrain(settings_for(store_dir)) as brain:
        reader = DiscourseReader(brain)
        brain.load(str(SAMPLE))
        first = totals(reader)
        assert sum(first.values()) == sum(row[2] for row in expected_contributions())
        answer = reader.get_researcher_contributions(detail="full")
        answer.creators[0].byType.clear()
        assert reader.get_researcher_contributions(detail="full").creators[0].byType
        brain.load(str(_one_creator(tmp_path)), graph="copy")
        assert totals(reader)["Someone Else"] == len(EXPORT.pages)
        brain.load(str(_one_creator(tmp_path)), graph=SAMPLE_GRAPH)  # a reload
        assert set(totals(reader)) == {"Someone Else"}
        brain.drop("urn:labbrain:dataset:copy")
        assert totals(reader) == {"Someone Else": len(EXPORT.pages)}
