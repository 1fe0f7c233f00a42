"""Nanopublications out: `labbrain export --format nanopub` on the sample export, and back in.

Every nanopublication written is checked by nanopub-sign (the Rust nanopub library) called
here directly, not through labbrain's wrapper; expected nodes, relations, stances and authors
are read from the export file itself.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import nanopub_sign
import pytest
from click.testing import CliRunner, Result
from pyoxigraph import NamedNode, Quad, RdfFormat, parse, serialize

from conftest import DATA, SAMPLE, settings_for
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.publish.people import People, orcid_iri, read_people_file
from labbrain.rdf.namespaces import CITO, DCT, NP, NPX, PROV, RDF, RDFS

PUBLISHED_KINDS = {"Claim", "Evidence", "Question", "Result"}
VAULT = DATA / "obsidian-sample"
#: Made-up but well-formed ORCID iDs (valid check digits), one per creator of the sample.
IDS = [
    "0000-0002-1825-0097",
    "0000-0001-5109-3700",
    "0000-0002-1694-233X",
    "0000-0003-1419-2405",
    "0000-0002-9079-593X",
]
SIGNER = "0000-0002-1825-0097"


# ------------------------------------------------------------------ what the export says
def _export() -> dict[str, object]:
    data: dict[str, object] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return data


def _expand(value: str, base: str) -> str:
    return base + value.split(":", 1)[1] if value.startswith("pages:") else value


def expected() -> tuple[dict[str, dict[str, str]], set[tuple[str, str, str]]]:
    """From the export file: the published nodes (IRI -> title fields, creator, kind) and
    the relations between them (source IRI, relation label, destination IRI)."""
    doc = _export()
    base = doc["@context"]["pages"]  # type: ignore[index]
    graph = doc["@graph"]  # type: ignore[index]
    schemas = {e["@id"]: e.get("label") for e in graph if e.get("@type") == "nodeSchema"}
    nodes: dict[str, dict[str, str]] = {}
    for entry in graph:
        kind = schemas.get(entry.get("@type"))
        if kind in PUBLISHED_KINDS:
            nodes[_expand(entry["@id"], base)] = {
                "kind": kind,
                "creator": entry.get("creator") or "",
                "uid": entry["@id"].split(":", 1)[1],
            }
    defs = {e["@id"]: e for e in graph if e.get("@type") == "relationDef"}
    relations = set()
    for entry in graph:
        if entry.get("@type") != "relationInstance":
            continue
        rel = defs[entry["predicate"]]
        source, destination = entry["source"], entry["destination"]
        if rel.get("inverseOf"):
            rel, source, destination = defs[rel["inverseOf"]], destination, source
        s, d = _expand(source, base), _expand(destination, base)
        if s in nodes and d in nodes:
            relations.add((s, rel["label"], d))
    return nodes, relations


def creators() -> list[str]:
    nodes, _ = expected()
    return sorted({n["creator"] for n in nodes.values() if n["creator"]})


# ------------------------------------------------------------------ reading what was written
def nanopubs(path: Path) -> dict[str, list[Quad]]:
    """The file's nanopublications: URI -> its quads (head and the three graphs it names)."""
    quads = list(parse(path.read_bytes(), format=RdfFormat.TRIG))
    by_graph: dict[str, list[Quad]] = defaultdict(list)
    for quad in quads:
        by_graph[str(quad.graph_name)].append(quad)
    found: dict[str, list[Quad]] = {}
    for quad in quads:
        if quad.predicate == NamedNode(RDF + "type") and quad.object == NamedNode(
            NP + "Nanopublication"
        ):
            head = str(quad.graph_name)
            parts = [head] + [
                str(q.object) for q in by_graph[head] if q.predicate.value.startswith(NP + "has")
            ]
            found[quad.subject.value] = [q for g in parts for q in by_graph[g]]
    assert sum(len(v) for v in found.values()) == len(quads), "quads outside any nanopub"
    return found


def trig(quads: list[Quad]) -> str:
    return serialize(quads, format=RdfFormat.TRIG).decode("utf-8")


def part(quads: list[Quad], name: str) -> list[Quad]:
    """The quads of the nanopublication's graph ``name`` (Head, assertion, ...)."""
    return [q for q in quads if str(q.graph_name).rstrip(">").endswith("/" + name)]


def checked(uri: str, quads: list[Quad]) -> None:
    """nanopub-sign's own check: signed, trusty, valid (raises otherwise)."""
    info = nanopub_sign.Nanopub(trig(quads)).check().info()
    assert info["uri"]["value"] == uri
    assert info["trusty_hash"] and info["signature"], f"{uri} is not signed"


# ------------------------------------------------------------------ helpers
@pytest.fixture
def store(sample_store: Path) -> Path:
    return sample_store


@pytest.fixture
def key(signing_key_pem: Path) -> Path:
    return signing_key_pem


def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--store", str(store), *args])


def map_people(store: Path) -> dict[str, str]:
    mapping = dict(zip(creators(), IDS, strict=False))
    assert len(mapping) == len(creators()), "the sample has more creators than test iDs"
    for name, ident in mapping.items():
        assert run(store, "people", "set", name, ident).exit_code == 0
    return {name: orcid_iri(ident) for name, ident in mapping.items()}


def export(store: Path, out: Path, key: Path | None, *extra: str) -> Result:
    signing = ["--key", str(key), "--signer", SIGNER] if key else []
    return run(store, "export", "--format", "nanopub", "-o", str(out), *signing, *extra)


# ------------------------------------------------------------------ tests
def test_every_node_and_relation_is_a_signed_nanopub_the_library_accepts(
    store: Path, key: Path, tmp_path: Path
) -> None:
    people = map_people(store)
    out = tmp_path / "np.trig"
    result = export(store, out, key)
    assert result.exit_code == 0, result.output
    nodes, relations = expected()
    attributed = {iri: n for iri, n in nodes.items() if n["creator"]}
    written = nanopubs(out)
    introduced: dict[str, str] = {}
    stated: set[tuple[str, str, str]] = set()
    stances: set[tuple[str, str, str]] = set()
    for uri, quads in written.items():
        checked(uri, quads)
        for q in part(quads, "pubinfo"):
            if q.predicate.value == NPX + "introduces":
                introduced[q.object.value] = uri  # type: ignore[union-attr]
        assertion = part(quads, "assertion")
        labels = {
            q.subject.value: q.object.value  # type: ignore[union-attr]
            for q in assertion
            if q.predicate.value == RDFS + "label"
        }
        for q in assertion:
            if q.predicate.value in labels:
                stated.add((q.subject.value, labels[q.predicate.value], q.object.value))  # type: ignore[union-attr]
            if q.predicate.value.startswith(CITO):
                stances.add((q.subject.value, q.predicate.value, q.object.value))  # type: ignore[union-attr]
    # One nanopublication per attributed node of the four kinds, one per relation among them.
    assert set(introduced) == set(attributed)
    wanted = {r for r in relations if r[0] in attributed and r[2] in attributed}
    assert stated == wanted
    assert len(written) == len(attributed) + len(wanted)
    # CiTO beside Supports and Opposes, nothing beside the others.
    cito = {"Supports": CITO + "supports", "Opposes": CITO + "disputes"}
    assert stances == {(s, cito[label], d) for s, label, d in wanted if label in cito}
    # Each node's assertion is attributed to its creator's ORCID, with its kind and title.
    for iri, uri in introduced.items():
        quads = written[uri]
        authors = {
            q.object.value  # type: ignore[union-attr]
            for q in part(quads, "provenance")
            if q.predicate.value == PROV + "wasAttributedTo"
        }
        assert authors == {people[nodes[iri]["creator"]]}
        identifiers = [
            q.object.value  # type: ignore[union-attr]
            for q in part(quads, "assertion")
            if q.subject.value == iri and q.predicate.value == DCT + "identifier"
        ]
        assert identifiers == [nodes[iri]["uid"]]
    # The nodes without a creator are named, not silently dropped.
    missing = sorted(n["uid"] for n in nodes.values() if not n["creator"])
    for uid in missing:
        assert uid in result.output


def test_a_second_export_of_an_unchanged_graph_is_the_same_file(
    store: Path, key: Path, tmp_path: Path
) -> None:
    map_people(store)
    first, second = tmp_path / "1.trig", tmp_path / "2.trig"
    assert export(store, first, key).exit_code == 0
    result = export(store, second, key)
    assert result.exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    assert f"0 new, 0 superseding, {len(nanopubs(first))} unchanged" in result.output


def _changed_sample(tmp_path: Path, uid: str, title: str | None) -> Path:
    """The sample with one node's title changed (or the node and its relations gone)."""
    doc = _export()
    graph = []
    for entry in doc["@graph"]:  # type: ignore[attr-defined]
        if entry.get("@id") == f"pages:{uid}":
            if title is None:
                continue
            entry = {**entry, "title": title}
        if title is None and f"pages:{uid}" in (entry.get("source"), entry.get("destination")):
            continue
        graph.append(entry)
    path = tmp_path / "akamatsu-sample.jsonld"
    path.write_text(json.dumps({**doc, "@graph": graph}), encoding="utf-8")
    return path


def _a_claim_with_a_creator() -> tuple[str, str]:
    nodes, _ = expected()
    iri, node = next(
        (i, n) for i, n in sorted(nodes.items()) if n["kind"] == "Claim" and n["creator"]
    )
    return iri, node["uid"]


def test_a_changed_node_supersedes_its_earlier_nanopub_and_a_deleted_one_is_retracted(
    store: Path, key: Path, tmp_path: Path
) -> None:
    map_people(store)
    iri, uid = _a_claim_with_a_creator()
    first = tmp_path / "1.trig"
    assert export(store, first, key).exit_code == 0
    before = {
        q.object.value: uri  # type: ignore[union-attr]
        for uri, quads in nanopubs(first).items()
        for q in part(quads, "pubinfo")
        if q.predicate.value == NPX + "introduces"
    }
    # The title changes: a new nanopublication superseding the first.
    assert (
        run(store, "load", str(_changed_sample(tmp_path, uid, "A new claim title"))).exit_code == 0
    )
    second = tmp_path / "2.trig"
    result = export(store, second, key)
    assert result.exit_code == 0, result.output
    written = nanopubs(second)
    after = {
        q.object.value: uri  # type: ignore[union-attr]
        for uri, quads in written.items()
        for q in part(quads, "pubinfo")
        if q.predicate.value == NPX + "introduces"
    }
    assert after[iri] != before[iri]
    supersedes = {
        q.object.value  # type: ignore[union-attr]
        for q in part(written[after[iri]], "pubinfo")
        if q.predicate.value == NPX + "supersedes"
    }
    assert supersedes == {before[iri]}
    checked(after[iri], written[after[iri]])
    unchanged = [i for i in before if i != iri]
    assert all(after[i] == before[i] for i in unchanged)
    # Published again unchanged: the superseding nanopublication comes out as it was.
    again = tmp_path / "2b.trig"
    assert export(store, again, key).exit_code == 0
    assert again.read_bytes() == second.read_bytes()
    # --retract-deleted goes with whole datasets only.
    refused = export(store, tmp_path / "x.trig", key, "--retract-deleted", "--node", uid)
    assert refused.exit_code == 2 and "drop --node and --select" in refused.output
    # The node is deleted: a retraction of its last nanopublication and of those of its
    # relations (gone with it), and of nothing else (nodes without a creator still exist).
    assert run(store, "load", str(_changed_sample(tmp_path, uid, None))).exit_code == 0
    third = tmp_path / "3.trig"
    assert export(store, third, key, "--retract-deleted").exit_code == 0
    touching = {
        uri
        for uri, quads in written.items()
        if uri != after[iri]
        and any(iri in (q.subject.value, q.object.value) for q in part(quads, "assertion"))  # type: ignore[union-attr]
    }
    assert touching, "the claim has relations"
    assert retractions(third) == {after[iri]} | touching
    for uri, quads in nanopubs(third).items():
        checked(uri, quads)
    # Once retracted, not again.
    fourth = tmp_path / "4.trig"
    assert export(store, fourth, key, "--retract-deleted").exit_code == 0
    assert retractions(fourth) == set()
    # The node comes back: a new nanopublication, superseding nothing (its last was retracted).
    assert run(store, "load", str(SAMPLE)).exit_code == 0
    fifth = tmp_path / "5.trig"
    result = export(store, fifth, key)
    assert result.exit_code == 0
    back = {
        q.object.value: uri  # type: ignore[union-attr]
        for uri, quads in nanopubs(fifth).items()
        for q in part(quads, "pubinfo")
        if q.predicate.value == NPX + "introduces"
    }
    assert back[iri] not in (before[iri], after[iri])  # a retracted URI is never reused
    assert not [
        q
        for q in part(nanopubs(fifth)[back[iri]], "pubinfo")
        if q.predicate.value == NPX + "supersedes"
    ]
    assert f"{len(touching) + 1} new, 0 superseding" in result.output


def retractions(path: Path) -> set[str]:
    """The nanopublications the file's retractions retract."""
    return {
        q.object.value  # type: ignore[union-attr]
        for quads in nanopubs(path).values()
        for q in part(quads, "assertion")
        if q.predicate.value == NPX + "retracts"
    }


def test_nothing_is_signed_for_an_author_without_an_orcid(
    store: Path, key: Path, tmp_path: Path
) -> None:
    names = creators()
    assert run(store, "people", "set", names[0], IDS[0]).exit_code == 0
    out = tmp_path / "np.trig"
    result = export(store, out, key)
    assert result.exit_code == 2
    for name in names[1:]:
        assert repr(name) in result.output
    assert repr(names[0]) not in result.output
    assert not out.exists()


def test_an_unsigned_dry_run_says_so_and_remembers_nothing(
    store: Path, key: Path, tmp_path: Path
) -> None:
    out = tmp_path / "dry.trig"
    result = export(store, out, None)
    assert result.exit_code == 0, result.output
    assert "unsigned" in result.output
    written = nanopubs(out)
    assert written and all(uri.startswith("http://purl.org/nanopub/temp/") for uri in written)
    # A signed run afterwards publishes everything as new: the dry run recorded nothing.
    map_people(store)
    result = export(store, tmp_path / "np.trig", key)
    assert f"{len(nanopubs(tmp_path / 'np.trig'))} new" in result.output


RANK = {"Result": 0, "Evidence": 1, "Claim": 2, "Question": 3}


def chain_of(start: str) -> set[str]:
    """The evidence chain of ``start`` as docs/publishing.md defines it, from the export:
    the nodes reached by relations that climb Result -> Evidence -> Claim -> Question from it,
    and those reached by relations that descend it."""
    nodes, relations = expected()
    neighbours: dict[str, set[str]] = defaultdict(set)
    for s, _label, d in relations:
        neighbours[s].add(d)
        neighbours[d].add(s)
    chosen = {start}
    for climbing in (True, False):
        frontier = [start]
        while frontier:
            step = []
            for node in frontier:
                for other in neighbours[node]:
                    higher = RANK[nodes[other]["kind"]] > RANK[nodes[node]["kind"]]
                    same = RANK[nodes[other]["kind"]] == RANK[nodes[node]["kind"]]
                    if other not in chosen and not same and higher == climbing:
                        chosen.add(other)
                        step.append(other)
            frontier = step
    return chosen


@pytest.mark.parametrize("kind", sorted(RANK))
def test_a_node_with_its_evidence_chain_and_an_index(
    kind: str, store: Path, key: Path, tmp_path: Path
) -> None:
    map_people(store)
    nodes, relations = expected()
    attributed = {iri for iri, n in nodes.items() if n["creator"]}
    # The node of this kind with the longest chain, from the export.
    start = max(
        sorted(iri for iri in attributed if nodes[iri]["kind"] == kind),
        key=lambda iri: len(chain_of(iri) & attributed),
    )
    chain = chain_of(start) & attributed
    assert len(chain) > 1, f"the sample has a {kind} with a chain"
    out = tmp_path / "chain.trig"
    result = export(store, out, key, "--node", nodes[start]["uid"])
    assert result.exit_code == 0, result.output
    written = nanopubs(out)
    indexes = [
        uri
        for uri, quads in written.items()
        if any(q.object == NamedNode(NPX + "NanopubIndex") for q in part(quads, "pubinfo"))
    ]
    assert len(indexes) == 1
    elements = {
        q.object.value  # type: ignore[union-attr]
        for q in part(written[indexes[0]], "assertion")
        if q.predicate.value == NPX + "includesElement"
    }
    assert elements == set(written) - set(indexes)
    introduced = {
        q.object.value  # type: ignore[union-attr]
        for quads in written.values()
        for q in part(quads, "pubinfo")
        if q.predicate.value == NPX + "introduces"
    }
    assert introduced == chain
    between = {r for r in relations if r[0] in chain and r[2] in chain}
    assert len(written) == len(chain) + len(between) + 1
    for uri, quads in written.items():
        checked(uri, quads)


@pytest.mark.parametrize(
    ("ident", "ok"),
    [
        ("0000-0002-1825-0097", True),
        ("https://orcid.org/0000-0002-1694-233X", True),
        ("0000-0002-1825-0098", False),  # wrong check digit
        ("0000-0002-1825-009", False),
        ("orcid", False),
    ],
)
def test_orcid_ids_are_checked(ident: str, ok: bool, store: Path) -> None:
    result = run(store, "people", "set", "Someone", ident)
    assert (result.exit_code == 0) is ok, result.output
    listed = run(store, "people", "list", "--json")
    assert ("Someone" in json.loads(listed.output)) is ok


def test_people_files(tmp_path: Path) -> None:
    good = tmp_path / "people.csv"
    good.write_text("name,orcid\nAda Lovelace,0000-0002-1825-0097\n")
    assert read_people_file(good) == {"Ada Lovelace": "0000-0002-1825-0097"}
    as_json = tmp_path / "people.json"
    as_json.write_text(json.dumps([{"name": "Ada", "orcid": "0000-0002-1825-0097"}]))
    assert read_people_file(as_json) == {"Ada": "0000-0002-1825-0097"}
    bad = tmp_path / "bad.csv"
    bad.write_text("who,id\nAda,0000\n")
    with pytest.raises(Exception, match="columns name and orcid"):
        read_people_file(bad)


def test_a_bad_id_in_a_people_file_maps_nobody(store: Path, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text("name,orcid\nAda,0000-0002-1825-0097\nBob,0000-0002-1825-0098\n")
    result = run(store, "people", "import", str(path))
    assert result.exit_code == 2
    assert "check digit" in result.output
    with LabBrain(settings_for(store)) as brain:
        assert People(brain.store).all() == {}


def test_names_match_as_exports_spell_them(store: Path) -> None:
    with LabBrain(settings_for(store)) as brain:
        people = People(brain.store)
        people.set("Ada  Lovelace", "0000-0002-1825-0097")
        assert people.orcid("ada lovelace") == orcid_iri("0000-0002-1825-0097")
        assert people.orcid("Ada Byron") is None
        assert people.remove("ADA LOVELACE")
        assert people.all() == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "trig", "--node", "x"], "--node go with --format nanopub"),
        (["--format", "nanopub", "--key", "k.pem"], "--key and --signer go together"),
        (["--format", "nanopub", "--node", "no-such-uid"], "no-such-uid"),
    ],
)
def test_bad_export_arguments(store: Path, args: list[str], message: str) -> None:
    result = run(store, "export", *args)
    assert result.exit_code != 0
    assert message in result.output


def test_a_key_that_is_no_key_is_refused(store: Path, tmp_path: Path) -> None:
    map_people(store)
    bogus = tmp_path / "key.pem"
    bogus.write_text("not a key\n")
    out = tmp_path / "np.trig"
    result = export(store, out, bogus)
    assert result.exit_code == 2
    assert "no PEM private key" in result.output
    assert not out.exists()


def test_a_signer_unknown_to_the_people_map_is_refused(store: Path, key: Path) -> None:
    result = run(store, "export", "--format", "nanopub", "--key", str(key), "--signer", "Nobody")
    assert result.exit_code == 2
    assert "neither an ORCID iD nor a name of the people map" in result.output


def test_a_node_with_a_1_mb_title_is_refused_before_anything_is_written(
    key: Path, tmp_path: Path
) -> None:
    doc = _export()
    _, uid = _a_claim_with_a_creator()
    for entry in doc["@graph"]:  # type: ignore[attr-defined]
        if entry.get("@id") == f"pages:{uid}":
            entry["title"] = "[[CLM]] - " + "x" * (1 << 20)
    big = tmp_path / "big.jsonld"
    big.write_text(json.dumps(doc), encoding="utf-8")
    store = tmp_path / "store"
    assert run(store, "load", str(big)).exit_code == 0
    map_people(store)
    out = tmp_path / "np.trig"
    result = export(store, out, key)
    assert result.exit_code == 2
    assert uid in result.output and "at most 10,000 characters" in result.output
    assert not out.exists()
    with LabBrain(settings_for(store)) as brain:
        assert not list(brain.store.quads("urn:labbrain:published"))


# ------------------------------------------------------------------ round trip
TITLE_PREFIX = re.compile(r"^\[\[[A-Z]+\]\] - ")
STANCES = """
PREFIX lb: <https://w3id.org/labbrain/ns#>
SELECT ?subject ?stance ?target WHERE {
  GRAPH ?g { ?record a lb:Stance ; lb:stance ?stance ; lb:stanceSubject ?subject ;
             lb:stanceTarget ?target }
}
"""


def _export_nodes() -> dict[str, dict[str, str]]:
    """The attributed nodes of the four kinds, with their fields as the export gives them."""
    doc = json.loads(SAMPLE.read_text(encoding="utf-8"))
    base = doc["@context"]["pages"]
    wanted, _ = expected()
    fields = {}
    for entry in doc["@graph"]:
        iri = base + entry.get("@id", ":").split(":", 1)[1]
        if iri in wanted and wanted[iri]["creator"]:
            fields[iri] = {
                "uid": wanted[iri]["uid"],
                "type": wanted[iri]["kind"],
                "title": TITLE_PREFIX.sub("", entry["title"]),
                "creator": entry["creator"],
                "created": entry.get("created", ""),
            }
    return fields


def test_exported_nanopubs_load_back_as_the_same_nodes_relations_and_stances(
    sample_store: Path, signing_key_pem: Path, tmp_path: Path
) -> None:
    map_people(sample_store)
    out = tmp_path / "lab.trig"
    assert export(sample_store, out, signing_key_pem).exit_code == 0
    fresh = tmp_path / "fresh"
    loaded = run(fresh, "load", str(out))
    assert loaded.exit_code == 0, loaded.output
    nodes = _export_nodes()
    _, relations = expected()
    wanted_relations = {r for r in relations if r[0] in nodes and r[2] in nodes}
    with LabBrain(settings_for(fresh)) as brain:
        (graph,) = brain.index.graphs()
        found, total = brain.index.nodes(graphs=[graph], limit=10_000)
        assert total == len(nodes)
        assert {
            n.iri: {
                "uid": n.uid,
                "type": n.node_type,
                "title": n.title,
                "creator": n.creator,
                "created": n.created,
            }
            for n in found
        } == nodes
        assert brain.index.dataset_state(graph).relations == wanted_relations
        stances = {
            (row["subject"].value, row["stance"].value, row["target"].value)
            for row in brain.query(STANCES)  # type: ignore[union-attr]
        }
    word = {"Supports": "supports", "Opposes": "disputes"}
    assert stances == {(s, word[label], d) for s, label, d in wanted_relations if label in word}
    assert stances, "the sample has Supports and Opposes relations among published nodes"


def test_signing_with_another_key_supersedes_everything(
    store: Path, key: Path, tmp_path: Path
) -> None:
    map_people(store)
    first = tmp_path / "1.trig"
    assert export(store, first, key).exit_code == 0
    other = tmp_path / "other.pem"
    other.write_text(_new_key_pem())
    second = tmp_path / "2.trig"
    result = export(store, second, other)
    assert result.exit_code == 0, result.output
    count = len(nanopubs(first))
    assert f"0 new, {count} superseding, 0 unchanged" in result.output
    superseded = {
        q.object.value  # type: ignore[union-attr]
        for quads in nanopubs(second).values()
        for q in part(quads, "pubinfo")
        if q.predicate.value == NPX + "supersedes"
    }
    assert superseded == set(nanopubs(first))


def _new_key_pem() -> str:
    private = nanopub_sign.KeyPair().private
    lines = [private[i : i + 64] for i in range(0, len(private), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def test_two_datasets_with_the_same_nodes_are_published_apart(key: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    _, uid = _a_claim_with_a_creator()
    assert run(store, "load", str(SAMPLE), "--graph", "first").exit_code == 0
    changed = _changed_sample(tmp_path, uid, "Retitled in the second snapshot")
    assert run(store, "load", str(changed), "--graph", "second").exit_code == 0
    map_people(store)
    assert export(store, tmp_path / "1.trig", key).exit_code == 0
    again = export(store, tmp_path / "2.trig", key)
    assert again.exit_code == 0
    count = len(nanopubs(tmp_path / "1.trig"))
    assert f"0 new, 0 superseding, {count} unchanged" in again.output


def test_a_node_is_derived_from_the_dois_of_its_sources(key: Path, tmp_path: Path) -> None:
    doc = _export()
    base = doc["@context"]["pages"]  # type: ignore[index]
    graph = doc["@graph"]  # type: ignore[index]
    sources = {e["@id"] for e in graph if e.get("@type") == "pages:_SRC-node"}
    # An Evidence node that names a source in its text (textRefersToNode), from the export.
    evidence, source = next(
        (e, ref.replace("page:", "pages:"))
        for e in graph
        if e.get("@type") == "pages:_EVD-node" and e.get("creator")
        for ref in e.get("textRefersToNode") or []
        if ref.replace("page:", "pages:") in sources
    )
    doi = "10.1083/jcb.201604065"
    for entry in graph:
        if entry.get("@id") == source:
            entry["content"] = entry.get("content", "") + f"\n- DOI: https://doi.org/{doi}.\n"
    path = tmp_path / "akamatsu-sample.jsonld"
    path.write_text(json.dumps(doc), encoding="utf-8")
    store = tmp_path / "store"
    assert run(store, "load", str(path)).exit_code == 0
    map_people(store)
    out = tmp_path / "np.trig"
    assert export(store, out, key, "--node", evidence["@id"].split(":", 1)[1]).exit_code == 0
    iri = _expand(evidence["@id"], base)
    (quads,) = [
        q
        for q in nanopubs(out).values()
        if any(
            x.predicate.value == NPX + "introduces" and x.object.value == iri  # type: ignore[union-attr]
            for x in part(q, "pubinfo")
        )
    ]
    derived = {
        q.object.value  # type: ignore[union-attr]
        for q in part(quads, "provenance")
        if q.predicate.value == PROV + "wasDerivedFrom"
    }
    assert iri in derived  # its own page
    assert "https://doi.org/" + doi in derived  # the source's DOI, not the source's page
    assert _expand(source, base) not in derived


def test_a_vault_relation_is_attributed_to_its_own_author(key: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(VAULT, vault, symlinks=True)
    relations_file = vault / "relations.json"
    relations = json.loads(relations_file.read_text(encoding="utf-8"))
    settings = json.loads(
        (vault / ".obsidian/plugins/discourse-graphs/data.json").read_text(encoding="utf-8")
    )
    owner = settings["username"]
    other = next(name for name in settings["userNames"].values() if name != owner)
    _, relation = sorted(relations["relations"].items())[0]
    relation["author"] = other
    relation["created"] = 1774500000000  # 2026-03-26T04:40:00Z
    relations_file.write_text(json.dumps(relations), encoding="utf-8")
    store = tmp_path / "store"
    assert run(store, "load", str(vault)).exit_code == 0, "the vault loads"
    with LabBrain(settings_for(store)) as brain:
        names = brain.index.creators()
    ids = dict(zip(sorted({*names, other}), IDS, strict=False))
    for name, ident in ids.items():
        assert run(store, "people", "set", name, ident).exit_code == 0
    out = tmp_path / "np.trig"
    result = export(store, out, key)
    assert result.exit_code == 0, result.output
    relation_nanopubs = [
        quads
        for quads in nanopubs(out).values()
        if not any(q.predicate.value == NPX + "introduces" for q in part(quads, "pubinfo"))
    ]
    by_author = {
        (
            q.object.value,  # type: ignore[union-attr]
            next(
                (
                    t.object.value  # type: ignore[union-attr]
                    for t in part(quads, "provenance")
                    if t.predicate.value == PROV + "generatedAtTime"
                ),
                None,
            ),
        )
        for quads in relation_nanopubs
        for q in part(quads, "provenance")
        if q.predicate.value == PROV + "wasAttributedTo"
    }
    assert (orcid_iri(ids[other]), "2026-03-26T04:40:00Z") in {
        (a, (t or "").replace(".000Z", "Z")) for a, t in by_author
    }
