"""Loading discourse-graph exports: counts, context variants, derived triples, warnings."""

from __future__ import annotations

import gc
import json
from pathlib import Path

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
from helpers import canonical, count, select
from labbrain.core import LabBrain
from labbrain.errors import ExportFormatError
from labbrain.ingest.load import collection_paused

PAGES = "https://roamresearch.com/#/app/akamatsulab-sample/page/"
REAL_PAGES = "https://roamresearch.com/#/app/dg-social-media-polarization/page/"


# ---------------------------------------------------------------- the real CC0 corpus
@pytest.mark.needs_corpus
@pytest.mark.parametrize("path", [REAL, REAL_DCT], ids=["2025-12", "2026-06"])
def test_real_corpus_counts(memory_brain: LabBrain, path: Path) -> None:
    report = memory_brain.load(str(path))
    assert report.graph == REAL_GRAPH
    assert report.nodes == 268
    assert dict(report.nodes_by_type) == {"Claim": 123, "Evidence": 91, "Source": 49, "Question": 5}
    assert dict(report.relations) == {"Supports": 65, "Opposes": 8, "Informs": 1}
    assert len(report.creators) == 5
    assert report.indexed == 268
    # The same counts straight from the store, through the SPARQL templates.
    stats = memory_brain.stats(REAL_GRAPH)
    assert {r["type"]: r["count"] for r in stats.nodes_by_type} == dict(report.nodes_by_type)
    assert {r["label"]: r["count"] for r in stats.relations} == dict(report.relations)
    assert count(memory_brain, f"GRAPH <{REAL_GRAPH}> {{ ?r a dgb:RelationInstance }}") == 74


@pytest.mark.needs_corpus
def test_real_corpus_variants_give_the_same_rdf(memory_brain: LabBrain) -> None:
    memory_brain.load(str(REAL), graph="real-2025")
    memory_brain.load(str(REAL_DCT), graph="real-2026")
    first = canonical(memory_brain, "urn:labbrain:dataset:real-2025")
    second = canonical(memory_brain, "urn:labbrain:dataset:real-2026")
    assert first == second
    assert len(first) > 3000


def _supports_from_json(path: Path) -> dict[str, set[str]]:
    """Destination uid -> uids of the nodes supporting it, read from the raw export."""
    doc = json.loads(path.read_text())
    graph = doc["@graph"]
    nodes = {e["@id"] for e in graph if "title" in e}
    support_defs = {
        e["@id"] for e in graph if e.get("@type") == "relationDef" and e.get("label") == "Supports"
    }
    supports: dict[str, set[str]] = {}
    for e in graph:
        is_support = e.get("@type") == "relationInstance" and e["predicate"] in support_defs
        if is_support and e["source"] in nodes and e["destination"] in nodes:
            uid = e["destination"].split(":", 1)[1]
            supports.setdefault(uid, set()).add(e["source"].split(":", 1)[1])
    return supports


@pytest.mark.parametrize(
    ("path", "base", "claim"),
    [
        pytest.param(REAL, REAL_PAGES, "pqyDoNken", marks=pytest.mark.needs_corpus),
        pytest.param(REAL_DCT, REAL_PAGES, "pqyDoNken", marks=pytest.mark.needs_corpus),
        (SAMPLE, PAGES, None),
        (SAMPLE_V0, "https://roamresearch.com/#/app/v0-sample/page/", None),
        (SAMPLE_DCT, "https://roamresearch.com/#/app/dct-sample/page/", None),
    ],
    ids=["real-2025-12", "real-2026-06", "sample-2025-12", "sample-v0", "sample-2026-06"],
)
def test_supporting_evidence_is_one_triple_pattern(
    memory_brain: LabBrain, path: Path, base: str, claim: str | None
) -> None:
    memory_brain.load(str(path))
    supports = _supports_from_json(path)
    if claim is None:  # the most supported node of the file
        claim = max(sorted(supports), key=lambda uid: len(supports[uid]))
    expected = supports[claim]
    assert expected
    rows = select(
        memory_brain,
        f"SELECT ?evidence WHERE {{ GRAPH ?g {{ ?evidence dg:supports <{base}{claim}> }} }}",
    )
    assert {r["evidence"].removeprefix(base) for r in rows} == expected


@pytest.mark.parametrize(
    ("path", "graph", "types", "relations"),
    [
        (
            SAMPLE_V0,
            "urn:labbrain:dataset:v0-sample",
            {"Question": 2, "Claim": 2, "Evidence": 3, "Source": 1},
            {"Supports": 2, "Informs": 2, "Addresses": 2},
        ),
        (
            SAMPLE_DCT,
            "urn:labbrain:dataset:dct-sample",
            {"Question": 1, "Claim": 2, "Evidence": 3, "Result": 2},
            {"Supports": 2, "Opposes": 1, "Addresses": 2, "Informs": 1},
        ),
    ],
    ids=["v0", "2026-06"],
)
def test_small_variants(
    memory_brain: LabBrain,
    path: Path,
    graph: str,
    types: dict[str, int],
    relations: dict[str, int],
) -> None:
    report = memory_brain.load(str(path))
    assert report.graph == graph
    assert dict(report.nodes_by_type) == types
    assert dict(report.relations) == relations
    assert report.warnings == []
    # every relation also materialised as its core property where the label has one
    core = {
        "Supports": "dg:supports",
        "Opposes": "dg:opposes",
        "Addresses": "dg:addresses",
        "Informs": "lb:informs",
    }
    for label, n in relations.items():
        assert count(memory_brain, f"GRAPH <{graph}> {{ ?s {core[label]} ?o }}") == n


# ---------------------------------------------------------------- the sample, in depth
def test_sample_summary(sample_brain: LabBrain) -> None:
    report = sample_brain.load(str(SAMPLE))
    assert report.replaced
    assert dict(report.nodes_by_type) == {
        "Evidence": 32,
        "Claim": 30,
        "Result": 25,
        "Source": 20,
        "Hypothesis": 13,  # 12 typed + 1 typed "nodeSchema", typed from its [[HYP]] prefix
        "Question": 12,
        "Conclusion": 10,
        "Issue": 8,
    }
    # one Supports instance has a dangling destination: not materialised, not counted
    assert dict(report.relations) == {"Supports": 72, "Informs": 67, "Addresses": 22, "Opposes": 9}
    assert dict(report.creators) == {
        "Rebecca Lee": 40,
        "Matt Akamatsu": 31,
        "Sagar Agarwal": 28,
        "Aidan Stern": 26,
        "Abhishek Raghunathan": 22,
    }
    warnings = " | ".join(report.warnings)
    assert "1 relation instance(s) have a dangling end" in warnings
    assert "1 node(s) have no known node type; typed from their title prefix" in warnings
    assert "3 node(s) have no creator" in warnings


def test_schema_and_relation_definitions_become_ontology(sample_brain: LabBrain) -> None:
    g = SAMPLE_GRAPH
    assert (
        count(sample_brain, f"GRAPH <{g}> {{ <{PAGES}_CLM-node> rdfs:subClassOf dg:Claim }}") == 1
    )
    assert (
        count(sample_brain, f"GRAPH <{g}> {{ <{PAGES}_RES-node> rdfs:subClassOf lb:Result }}") == 1
    )
    assert count(sample_brain, f"GRAPH <{g}> {{ ?c a owl:Class }}") == 10
    supp = f"<{PAGES}_SUPP-rel>"
    for pattern in (
        f"{supp} a owl:ObjectProperty",
        f"{supp} rdfs:subPropertyOf dg:supports",
        f"{supp} rdfs:domain <{PAGES}_EVD-node>",
        f"{supp} rdfs:range <{PAGES}_CLM-node>",
        f"{supp} rdfs:label 'Supports'",
        f"<{PAGES}_SUPP-rel-inverse> owl:inverseOf {supp}",
        f"<{PAGES}_SUPP-rel-inverse> rdfs:subPropertyOf dg:supportedBy",
    ):
        assert count(sample_brain, f"GRAPH <{g}> {{ {pattern} }}") == 1, pattern
    assert count(sample_brain, f"GRAPH <{g}> {{ ?p a owl:ObjectProperty }}") == 18


def test_relation_instances_reified_and_direct(sample_brain: LabBrain) -> None:
    g = SAMPLE_GRAPH
    assert count(sample_brain, f"GRAPH <{g}> {{ ?r a dgb:RelationInstance }}") == 171
    reified = f"GRAPH <{g}> {{ ?r a dgb:RelationInstance ; rdf:predicate ?p ; dgb:source ?s ; dgb:destination ?d . FILTER(isIRI(?p) && isIRI(?s) && isIRI(?d)) }}"
    assert count(sample_brain, reified) == 171
    assert count(sample_brain, f"GRAPH <{g}> {{ ?s <{PAGES}_SUPP-rel> ?d }}") == 37
    assert count(sample_brain, f"GRAPH <{g}> {{ ?s dg:supports ?d }}") == 37 + 18 + 17
    assert count(sample_brain, f"GRAPH <{g}> {{ ?s dg:opposes ?d }}") == 9
    assert count(sample_brain, f"GRAPH <{g}> {{ ?s lb:informs ?d }}") == 67
    # every direct relation joins two page nodes of the export
    dangling = f"GRAPH <{g}> {{ ?s dg:supports ?d FILTER NOT EXISTS {{ ?d dct:title ?t }} }}"
    assert count(sample_brain, dangling) == 0


def test_quirky_references_become_iris(sample_brain: LabBrain) -> None:
    g = SAMPLE_GRAPH
    refers = f"GRAPH <{g}> {{ <{PAGES}pp7ENMIvy> dgb:textRefersToNode <{PAGES}B77kMS_GY> }}"
    assert count(sample_brain, refers) == 1  # written with the undefined singular page: prefix
    assert (
        count(sample_brain, f"GRAPH <{g}> {{ ?s dgb:textRefersToNode ?o FILTER(!isIRI(?o)) }}") == 0
    )
    referring = f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ GRAPH <{g}> {{ ?s dgb:textRefersToNode ?o }} }}"
    assert int(select(sample_brain, referring)[0]["n"]) == 15
    backlink = f"GRAPH <{g}> {{ <{PAGES}s1ocJHkCc> dg:backlink <{PAGES}s67duqFBw> }}"
    assert count(sample_brain, backlink) == 1  # plural "backlinks" key
    # nothing stays a compact-IRI string, and no bogus dg_base IRIs without '#'
    leftovers = f"GRAPH <{g}> {{ ?s ?p ?o FILTER(isLiteral(?o) && REGEX(STR(?o), '^pages?:')) }}"
    assert count(sample_brain, leftovers) == 0
    bogus = f"GRAPH <{g}> {{ ?s ?p ?o FILTER(STRSTARTS(STR(?p), 'https://discoursegraphs.com/schema/dg_base') && !STRSTARTS(STR(?p), 'https://discoursegraphs.com/schema/dg_base#')) }}"
    assert count(sample_brain, bogus) == 0


def test_links_and_images(sample_brain: LabBrain) -> None:
    g = SAMPLE_GRAPH
    wikilink = f"GRAPH <{g}> {{ <{PAGES}ar5rfh34m> lb:linksTo <{PAGES}Ey9_W_LjE> }}"
    assert count(sample_brain, wikilink) == 1  # [[[[HYP]] - ...]] resolved by title
    url_link = f"GRAPH <{g}> {{ <{PAGES}frObY-c8i> lb:linksTo <{PAGES}1RDhRooKE> }}"
    assert count(sample_brain, url_link) == 1  # a Roam page URL in the text
    linking = f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ GRAPH <{g}> {{ ?s lb:linksTo ?o }} }}"
    assert int(select(sample_brain, linking)[0]["n"]) >= 32
    images = f"GRAPH <{g}> {{ ?s lb:image ?url FILTER(isIRI(?url) && CONTAINS(STR(?url), 'firebasestorage')) }}"
    assert count(sample_brain, images) == 20
    with_images = f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ GRAPH <{g}> {{ ?s lb:image ?o }} }}"
    assert int(select(sample_brain, with_images)[0]["n"]) == 15


def test_node_literals(sample_brain: LabBrain) -> None:
    g = SAMPLE_GRAPH
    typed = f"GRAPH <{g}> {{ ?n dct:created ?c FILTER(DATATYPE(?c) = xsd:dateTime) }}"
    assert count(sample_brain, typed) == 150 + 10  # pages and node schemas
    assert count(sample_brain, f"GRAPH <{g}> {{ ?n dct:title ?t ; sioc:content ?c }}") == 150
    untyped_fallback = f"GRAPH <{g}> {{ <{PAGES}5nRu3DAr8> a lb:Hypothesis }}"
    assert count(sample_brain, untyped_fallback) == 1
    export = f"GRAPH <{g}> {{ <https://roamresearch.com/#/app/akamatsulab-sample> prov:generatedAtTime ?t }}"
    assert count(sample_brain, export) == 1


def test_reload_replaces_and_is_idempotent(memory_brain: LabBrain) -> None:
    first = memory_brain.load(str(SAMPLE))
    before = canonical(memory_brain, SAMPLE_GRAPH)
    second = memory_brain.load(str(SAMPLE))
    assert not first.replaced and second.replaced
    assert second.quads == first.quads
    assert canonical(memory_brain, SAMPLE_GRAPH) == before
    assert second.load_id != first.load_id
    datasets = memory_brain.datasets()
    assert [d["loadId"] for d in datasets] == [second.load_id]


@pytest.mark.needs_corpus
@pytest.mark.parametrize("engine", ["native", "pyld"])
def test_engines_give_the_same_dataset(engine: str) -> None:
    """The fast native path and the pyld reference path agree on the whole load."""
    with (
        LabBrain(settings_for(":memory:")) as reference,
        LabBrain(settings_for(":memory:", jsonld_engine=engine)) as other,
    ):
        for path in (SAMPLE, REAL):
            reference.load(str(path), graph="x")
            other.load(str(path), graph="x")
            assert canonical(other, "urn:labbrain:dataset:x") == canonical(
                reference, "urn:labbrain:dataset:x"
            )


def test_on_disk_load(disk_brain: LabBrain, store_dir: Path) -> None:
    report = disk_brain.load(str(SAMPLE))
    assert report.nodes == 150
    assert not (store_dir / "journal").exists()
    disk_brain.close()
    with LabBrain(settings_for(store_dir), read_only=True) as reader:
        assert reader.store.count(SAMPLE_GRAPH) == report.quads
        assert reader.index.count(SAMPLE_GRAPH) == 150


def test_unknown_node_schema_is_a_warning_or_a_strict_error(tmp_path: Path) -> None:
    document = json.loads(SAMPLE_DCT.read_text())
    node = next(e for e in document["@graph"] if str(e.get("title", "")).startswith("[[CLM]]"))
    node["@type"] = "pages:_NOPE-node"  # a schema the export does not define
    path = tmp_path / "unknown-schema.jsonld"
    path.write_text(json.dumps(document))
    with LabBrain(settings_for(":memory:")) as brain:
        report = brain.load(str(path))
        assert "unknown node schema pages:_NOPE-node on 1 node(s)" in report.warnings
        assert report.nodes_by_type["Claim"] == 2  # typed from its [[CLM]] title prefix
    with LabBrain(settings_for(":memory:", strict_load=True)) as brain:
        with pytest.raises(ExportFormatError, match="unknown node schema"):
            brain.load(str(path))
        assert brain.datasets() == []


def test_nodes_with_no_known_type_stay_untyped(memory_brain: LabBrain, tmp_path: Path) -> None:
    document = json.loads(SAMPLE_DCT.read_text())
    node = next(e for e in document["@graph"] if "title" in e)
    node["@type"] = "nodeSchema"
    node["title"] = "A page with no type prefix"
    path = tmp_path / "untyped.jsonld"
    path.write_text(json.dumps(document))
    report = memory_brain.load(str(path))
    assert report.nodes_by_type["Untyped"] == 1
    assert "1 node(s) have no known node type and stay untyped" in report.warnings


def test_a_load_pauses_the_cycle_collector_and_puts_it_back(
    memory_brain: LabBrain, tmp_path: Path
) -> None:
    """The collector is off while a load runs (progress reports come from inside it), and
    as it was afterwards: on after a load that worked and after one that failed, and still
    off when it was off before."""
    seen: list[bool] = []
    assert gc.isenabled()
    memory_brain.load(str(SAMPLE), progress=lambda _: seen.append(gc.isenabled()))
    assert seen and not any(seen)
    assert gc.isenabled()
    broken = tmp_path / "broken.jsonld"
    broken.write_text('{"@context": {"nodeSchema": "x"}, "@graph": [1, 2,,]}', encoding="utf-8")
    with pytest.raises(ExportFormatError):
        memory_brain.load(str(broken))
    assert gc.isenabled()
    gc.disable()
    try:
        memory_brain.load(str(SAMPLE))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_paused_collection_ends_with_the_last_of_several_blocks() -> None:
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("which", ["sample", pytest.param("real", marks=pytest.mark.needs_corpus)])
def test_every_page_node_has_its_clean_title_as_rdfs_label(
    memory_brain: LabBrain, which: str
) -> None:
    """dct:title keeps the source's title; rdfs:label is the title without its "[[XXX]] -"
    prefix, one per node, as the JSON gives it (expected values stripped here by hand)."""
    path = SAMPLE if which == "sample" else REAL
    report = memory_brain.load(str(path), graph=which)
    document = json.loads(path.read_text(encoding="utf-8"))
    expected = {}
    for entry in document["@graph"]:
        title = entry.get("title")
        if not title:
            continue
        if title.startswith("[[") and "]]" in title[:9]:
            title = title[title.index("]]") + 2 :].lstrip(" -")
        expected[entry["@id"].split(":", 1)[1]] = title.strip()
    rows = select(
        memory_brain,
        f"SELECT ?node ?label ?raw WHERE {{ GRAPH <{report.graph}> {{ "
        "?node dct:title ?raw . OPTIONAL { ?node rdfs:label ?label } } }",
    )
    labels: dict[str, list[str]] = {}
    for row in rows:
        labels.setdefault(row["node"].rsplit("/", 1)[-1], []).append(row["label"])
    assert {uid: sorted(found) for uid, found in labels.items()} == {
        uid: [title] for uid, title in expected.items()
    }
    raw = {row["raw"] for row in rows}
    assert any(title.startswith("[[") for title in raw)  # the source's titles are kept
