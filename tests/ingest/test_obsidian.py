"""Obsidian vaults of the Discourse Graphs plugin as datasets.

Vaults are written by ``vault_maker`` from the format document; what a load must give is read
back from the vault's own files here (settings, frontmatter, relations.json), never through
labbrain, and compared with what the store and the discourse tools answer.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pyoxigraph import NamedNode

from generate_vault import (
    Lab,
    VaultNode,
    VaultRelation,
    make_lab,
    note_path,
    roam_export,
    uuid7ish,
    write_node,
    write_vault,
)
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import ExportFormatError, UnusablePath
from labbrain.index.search_query import SearchQuery
from labbrain.ingest.load import VAULT_KIND
from labbrain.rdf.namespaces import LB
from labbrain.settings import Settings


# ------------------------------------------------------------------ reading a vault by hand
def read_by_hand(vault: Path) -> dict[str, Any]:
    """What the vault holds, read from its files with json and yaml only: node notes (by
    nodeInstanceId or path) with title and type name, and relations by label."""
    settings = json.loads(
        (vault / ".obsidian/plugins/discourse-graphs/data.json").read_text(encoding="utf-8")
    )
    type_names = {t["id"]: t["name"] for t in settings["nodeTypes"]}
    labels = {r["id"]: r["label"] for r in settings["relationTypes"]}
    notes: dict[str, dict[str, Any]] = {}
    for path in sorted(vault.rglob("*.md")):
        relative = path.relative_to(vault)
        if any(part.startswith(".") for part in relative.parts):
            continue
        text = path.read_text(encoding="utf-8")
        if not text.startswith("---\n"):
            continue
        try:
            front = yaml.safe_load(text.split("---\n")[1]) or {}
        except yaml.YAMLError:
            continue
        if front.get("nodeTypeId") not in type_names:
            continue
        key = front.get("nodeInstanceId") or str(relative)
        notes[key] = {
            "title": path.stem,
            "type": type_names[front["nodeTypeId"]],
            "rid": front.get("importedFromRid"),
            "path": str(relative),
        }
    by_rid = {n["rid"]: k for k, n in notes.items() if n["rid"]}
    relations: Counter[str] = Counter()
    data = json.loads((vault / "relations.json").read_text(encoding="utf-8"))
    seen = set()
    for relation in data["relations"].values():
        ends = [
            e if e in notes else by_rid.get(e)
            for e in (relation["source"], relation["destination"])
        ]
        if None in ends or relation["type"] not in labels or relation.get("tentative") is False:
            continue
        key = (relation["type"], *ends)
        if key in seen:
            continue
        seen.add(key)
        relations[labels[relation["type"]]] += 1
    return {"notes": notes, "relations": relations, "password": settings["spacePassword"]}


@pytest.fixture
def lab() -> Lab:
    return make_lab(7, nodes=40, relations=50)


@pytest.fixture
def vault(lab: Lab, tmp_path: Path) -> Path:
    return write_vault(lab, tmp_path / "vaults")


@pytest.fixture
def brain(tmp_path: Path) -> LabBrain:
    opened = LabBrain(Settings(store=str(tmp_path / "store")))
    yield opened  # type: ignore[misc]
    opened.close()


def _quads_text(brain: LabBrain) -> str:
    out = []
    for graph in brain.store.graphs():
        out += [str(q) for q in brain.store.quads(graph)]
    return "\n".join(out)


# ------------------------------------------------------------------ the same graph as Roam's
def test_a_vault_holds_the_nodes_and_relations_its_files_hold(vault: Path, brain: LabBrain) -> None:
    expected = read_by_hand(vault)
    report = brain.load(str(vault))
    assert report.kind == VAULT_KIND
    assert report.slug == "tension-lab"
    assert report.nodes == len(expected["notes"]) == 40
    assert dict(report.nodes_by_type) == dict(
        Counter(n["type"] for n in expected["notes"].values())
    )
    assert dict(report.relations) == dict(expected["relations"])
    assert report.warnings == []
    stats = brain.stats()
    assert {r["label"]: r["count"] for r in stats.relations} == dict(expected["relations"])
    reader = DiscourseReader(brain)
    for instance_id, note in expected["notes"].items():
        node = reader.get_node(instance_id)  # the uid of a vault node is its nodeInstanceId
        assert node.title == note["title"]
        assert node.nodeType == note["type"]
        assert node.creator == "Maya Chen"  # the vault's owner (settings.username)


def test_a_vault_answers_as_the_roam_export_of_the_same_graph(
    lab: Lab, vault: Path, tmp_path: Path, brain: LabBrain
) -> None:
    """Load the vault and a Roam export of the same nodes and relations into one store: every
    count, every node's attribution and every node's typed links are the same."""
    created, modified = {}, {}
    for index, node in enumerate(lab.nodes):
        stamp = os.stat(vault / note_path(lab, node))
        moment = _iso(stamp.st_mtime)
        created[index], modified[index] = (
            _iso(getattr(stamp, "st_birthtime", stamp.st_mtime)),
            moment,
        )
    export = tmp_path / "same-lab.jsonld"
    export.write_text(json.dumps(roam_export(lab, "same-lab", modified, created)), encoding="utf-8")
    from_vault = brain.load(str(vault))
    from_roam = brain.load(str(export))
    assert from_vault.nodes_by_type == from_roam.nodes_by_type
    assert from_vault.relations == from_roam.relations
    assert from_vault.creators == from_roam.creators
    reader = DiscourseReader(brain)
    roam_uid = {lab.title(n): f"n{i}" for i, n in enumerate(lab.nodes)}
    for node in lab.nodes:
        assert node.instance_id is not None
        mine = reader.get_node(node.instance_id)
        theirs = reader.get_node(roam_uid[lab.title(node)])
        for key in ("title", "nodeType", "creator", "created", "modified", "content"):
            assert getattr(mine, key) == getattr(theirs, key), key
        assert _typed(mine.linkedNodes) == _typed(theirs.linkedNodes)
        if node.type_name == "Claim":
            ours = reader.get_claim_status(node.instance_id)
            roams = reader.get_claim_status(roam_uid[lab.title(node)])
            assert sorted(s.title for s in ours.supporting) == sorted(
                s.title for s in roams.supporting
            )
            assert sorted(s.title for s in ours.opposing) == sorted(s.title for s in roams.opposing)
    # Every match (ties in score may order them differently).
    hits = {
        h.node.title
        for h in brain.search(SearchQuery("actin", graphs=(from_vault.graph,), limit=100)).hits
    }
    roam_hits = {
        h.node.title
        for h in brain.search(SearchQuery("actin", graphs=(from_roam.graph,), limit=100)).hits
    }
    assert hits == roam_hits and hits


def _iso(seconds: float) -> str:
    from datetime import UTC, datetime

    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _typed(links: list[Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (link.direction, link.relationshipType or "", link.node.title)
        for link in links
        if link.kind == "typed"
    )


# ------------------------------------------------------------------ identity
def test_a_rename_or_move_keeps_the_node_and_its_relations(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    node = next(n for n in lab.nodes if n.type_name == "Claim")
    assert node.instance_id is not None
    graph = brain.load(str(vault)).graph
    reader = DiscourseReader(brain)
    before = reader.get_node(node.instance_id)
    old = vault / note_path(lab, node)
    moved = vault / "Elsewhere" / "Deep" / "CLM - a new name for it.md"
    moved.parent.mkdir(parents=True)
    old.rename(moved)
    brain.load(str(vault))
    after = reader.get_node(node.instance_id)
    assert after.url == before.url  # the IRI
    assert after.title == "CLM - a new name for it"
    assert _typed(after.linkedNodes) == _typed(before.linkedNodes)
    rows = list(
        brain.store.quads(
            graph,
            NamedNode(before.url),
            NamedNode(LB + "sourcePath"),
        )
    )
    assert [r.object.value for r in rows] == ["Elsewhere/Deep/CLM - a new name for it.md"]


def test_a_node_without_an_instance_id_is_identified_by_its_path(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    fresh = VaultNode("Question", "What sets coat size", "Open.\n", None, folder="Inbox")
    write_node(lab, vault, fresh, mtime=1_770_000_000)
    report = brain.load(str(vault))
    assert report.nodes == 41
    import hashlib

    uid = "p-" + hashlib.sha256(b"Inbox/QUE - What sets coat size.md").hexdigest()[:20]
    node = DiscourseReader(brain).get_node(uid)
    assert node.title == "QUE - What sets coat size"


# ------------------------------------------------------------------ imports, tentative, legacy
def test_imported_nodes_relations_and_tentative_ones(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    rng = random.Random(3)
    source_vault = "00c6d07ef7b77e90"
    claim = next(i for i, n in enumerate(lab.nodes) if n.type_name == "Claim")
    imported = VaultNode(
        "Evidence",
        "Imported tension data",
        "From the Akamatsu lab.\n",
        uuid7ish(rng, 1_780_000_000_000),
        folder="import/Akamatsu Lab/Discourse Nodes",
        imported_from=source_vault,
        author_id=101,
        last_modified=1_778_544_000_000,
    )
    lab.nodes.append(imported)
    index = len(lab.nodes) - 1
    lab.relations.append(
        VaultRelation(
            "supports",
            index,
            claim,
            uuid7ish(rng, 1),
            1_781_913_600_000,
            tentative=True,
            imported=True,
            author_id=101,
        )
    )
    lab.relations.append(
        VaultRelation(
            "opposes",
            index,
            claim,
            uuid7ish(rng, 2),
            1_781_913_600_001,
            tentative=False,
            imported=True,
            author_id=101,
        )
    )
    vault = write_vault(lab, tmp_path / "v")
    (vault / "import/Akamatsu Lab/.dg.metadata").write_text(
        json.dumps({"spaceUri": f"obsidian:{source_vault}", "spaceName": "Akamatsu Lab"})
    )
    expected = read_by_hand(vault)
    report = brain.load(str(vault))
    assert dict(report.relations) == dict(expected["relations"])
    assert report.creators["Ravi Patel"] == 1  # authorId 101 through settings.userNames
    assert any("1 tentative relation" in n for n in report.notices)
    reader = DiscourseReader(brain)
    node = reader.get_node(imported.instance_id or "")
    assert node.creator == "Ravi Patel"
    assert node.modified == "2026-05-12T00:00:00.000Z"  # frontmatter lastModified
    rid = f"orn:obsidian.note:{source_vault}/{imported.instance_id}"
    graph = report.graph
    assert [
        q.object.value
        for q in brain.store.quads(graph, NamedNode(node.url), NamedNode(LB + "importedFrom"))
    ] == [rid]
    # The accepted imported relation counts; the tentative one is a TentativeRelation only.
    status = reader.get_claim_status(lab.nodes[claim].instance_id or "")
    assert imported.instance_id in {s.uid for s in status.supporting}
    assert imported.instance_id not in {s.uid for s in status.opposing}
    tentative = list(
        brain.store.query(
            f"SELECT ?r WHERE {{ GRAPH <{graph}> {{ ?r a lb:TentativeRelation ; "
            f"dgb:source <{node.url}> }} }}"
        )
    )
    assert len(tentative) == 1


def test_an_endpoint_given_as_the_rid_of_a_local_note_resolves(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    vault = write_vault(lab, tmp_path / "v")
    data = json.loads((vault / "relations.json").read_text())
    first = next(iter(data["relations"].values()))
    first["source"] = f"orn:obsidian.note:4283fefc63f0cd0e/{first['source']}"  # this vault's RID
    (vault / "relations.json").write_text(json.dumps(data))
    report = brain.load(str(vault))
    assert sum(report.relations.values()) == len(lab.relations)
    assert report.warnings == []


def test_relations_at_the_old_location_are_merged_the_root_winning(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    vault = write_vault(lab, tmp_path / "v", old_relations_location=True)
    old = vault / "Discourse Nodes" / "relations.json"
    data = json.loads(old.read_text())
    ids = list(data["relations"])
    root = {"version": 1, "lastModified": 1, "relations": {ids[0]: dict(data["relations"][ids[0]])}}
    # The root's copy of the first relation points the other way: the root wins.
    root["relations"][ids[0]]["type"] = lab.relation_ids["informs"]
    (vault / "relations.json").write_text(json.dumps(root))
    report = brain.load(str(vault))
    total = sum(report.relations.values())
    assert total == len(lab.relations)
    first = lab.relations[0]
    assert report.relations["informs"] == sum(r.label == "informs" for r in lab.relations) + (
        first.label != "informs"
    )


def test_legacy_frontmatter_relations_are_read_with_their_direction_inferred(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    lab.relations.clear()
    evidence = next(n for n in lab.nodes if n.type_name == "Evidence")
    claim = next(n for n in lab.nodes if n.type_name == "Claim")
    supports = lab.relation_ids["supports"]
    # Written into both notes, as plugin 0.4 did (the claim's side with ".md").
    claim.extra_front[supports] = [f"[[{lab.title(evidence)}.md]]"]
    evidence.extra_front[supports] = [f"[[{lab.title(claim)}]]"]
    vault = write_vault(lab, tmp_path / "v")
    (vault / "relations.json").write_text(
        json.dumps({"version": 1, "lastModified": 1, "relations": {}})
    )
    report = brain.load(str(vault))
    assert dict(report.relations) == {"supports": 1}
    status = DiscourseReader(brain).get_claim_status(claim.instance_id or "")
    assert [s.uid for s in status.supporting] == [evidence.instance_id]
    flagged = list(
        brain.store.query("SELECT ?r WHERE { GRAPH ?g { ?r lb:legacyDirectionInferred true } }")
    )
    assert len(flagged) == 1


# ------------------------------------------------------------------ reported, never guessed
def test_problems_are_reported_and_the_rest_loads(
    lab: Lab, vault: Path, tmp_path: Path, brain: LabBrain
) -> None:
    data = json.loads((vault / "relations.json").read_text())
    relations = data["relations"]
    rng = random.Random(9)
    claim = next(n for n in lab.nodes if n.type_name == "Claim")
    # A relation to a deleted note, one to a note only in .trash, one of a deleted type, a
    # duplicate of an existing one.
    first = next(iter(relations.values()))
    relations["dangling"] = dict(first, id="dangling", destination=uuid7ish(rng, 5))
    trashed = VaultNode("Claim", "Thrown away", "gone\n", uuid7ish(rng, 6), folder=".trash")
    write_node(lab, vault, trashed, mtime=1_770_000_000)
    relations["to-trash"] = dict(first, id="to-trash", destination=trashed.instance_id)
    relations["old-type"] = dict(first, id="old-type", type="relation_doesnotexist")
    relations["again"] = dict(first, id="again")
    (vault / "relations.json").write_text(json.dumps(data))
    # A note of a deleted node type, a note whose YAML does not parse, files that are no nodes.
    (vault / "Discourse Nodes" / "HYP - gone type.md").write_text(
        "---\nnodeTypeId: node_gone\n---\nx"
    )
    (vault / "Discourse Nodes" / "CLM - broken.md").write_text(
        f"---\nnodeTypeId: {lab.type_ids['Claim']}\ntitle: a: b\n---\nbody\n"
    )
    (vault / "Discourse Canvas").mkdir()
    (vault / "Discourse Canvas" / "Canvas-2026-03-04-1012.md").write_text(
        "---\ntldr-dg: true\n---\n{}"
    )
    (vault / "Claim Nodes.base").write_text("views: []\n")
    (vault / "Plain note CLM - lookalike.md").write_text("Just a note.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLM - secret.md").write_text(
        f"---\nnodeTypeId: {lab.type_ids['Claim']}\n---\nsecret\n"
    )
    (vault / "linked").symlink_to(outside, target_is_directory=True)
    expected = read_by_hand(vault)
    report = brain.load(str(vault))
    assert report.nodes == 40 == len(expected["notes"]) - 0
    assert dict(report.relations) == dict(expected["relations"])
    text = "\n".join(report.warnings)
    assert "1 dangling relations" not in text  # two of them
    assert "2 dangling relations" in text and "(only in .trash)" in text
    assert "1 relations of a type the settings no longer have" in text
    assert "1 duplicate relations" in text
    assert "HYP - gone type.md (node_gone)" in text
    assert "CLM - broken.md: line 3" in text  # the file's own line (after the opening ---)
    assert "symbolic links (never followed): linked" in text
    assert "secret" not in _quads_text(brain)
    assert claim.instance_id is not None


def test_the_sync_secret_is_never_stored_or_shown(vault: Path, brain: LabBrain) -> None:
    password = read_by_hand(vault)["password"]
    report = brain.load(str(vault))
    assert password not in json.dumps(report.as_dict())
    assert password not in _quads_text(brain)


def test_a_relations_file_that_is_not_json_stops_the_load_and_keeps_the_store(
    vault: Path, brain: LabBrain
) -> None:
    report = brain.load(str(vault))
    before = brain.store.count(report.graph)
    (vault / "relations.json").write_text('{"version": 1,\n  "relations": {\n  oops')
    with pytest.raises(ExportFormatError, match=r"relations\.json.*line 3"):
        brain.load(str(vault))
    assert brain.store.count(report.graph) == before


def test_a_yaml_bomb_and_a_huge_frontmatter_are_reported_not_expanded(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 12):
        bomb.append(
            f"{chr(97 + level)}: &{chr(97 + level)} ["
            + ", ".join([f"*{chr(96 + level)}"] * 10)
            + "]"
        )
    (vault / "Discourse Nodes" / "CLM - bomb.md").write_text(
        f"---\nnodeTypeId: {lab.type_ids['Claim']}\n" + "\n".join(bomb) + "\n---\nboom\n"
    )
    (vault / "Discourse Nodes" / "CLM - huge.md").write_text(
        f"---\nnodeTypeId: {lab.type_ids['Claim']}\nfiller: '" + "x" * (2 << 20) + "'\n---\nbig\n"
    )
    report = brain.load(str(vault))
    assert report.nodes == 40
    text = "\n".join(report.warnings)
    assert "CLM - bomb.md: 110 YAML aliases" in text
    assert "CLM - huge.md: frontmatter larger than" in text


def test_embedded_images_are_the_nodes_images(lab: Lab, tmp_path: Path, brain: LabBrain) -> None:
    node = lab.nodes[2]
    node.body += "\n![[fig 1 (TIRF).png]]\n![[not-an-image.pdf]]\n"
    vault = write_vault(lab, tmp_path / "v")
    (vault / "Discourse Nodes" / "fig 1 (TIRF).png").write_bytes(b"\x89PNG\r\n")
    brain.load(str(vault))
    images = DiscourseReader(brain).get_node_images(node.instance_id or "")
    assert images.imageUrls == [
        "obsidian://open?vault=Tension%20Lab&file=Discourse%20Nodes%2Ffig%201%20%28TIRF%29.png"
    ]


# ------------------------------------------------------------------ the command
def test_labbrain_load_takes_a_vault_and_refuses_other_directories(
    vault: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    store = str(tmp_path / "cli-store")
    done = runner.invoke(main, ["--store", store, "load", str(vault), "--json"])
    assert done.exit_code == 0, done.output
    [report] = json.loads(done.output)
    assert report["kind"] == VAULT_KIND and report["nodes"] == 40
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    refused = runner.invoke(main, ["--store", store, "load", str(plain)])
    assert refused.exit_code != 0
    assert "not a Discourse Graphs vault" in refused.output


def test_a_directory_that_is_no_vault_is_refused_by_the_reader(tmp_path: Path) -> None:
    from labbrain.ingest.obsidian import read_vault

    with pytest.raises(UnusablePath, match="not a Discourse Graphs vault"):
        read_vault(str(tmp_path), max_bytes=1 << 20)


def test_the_same_vault_gives_the_same_document(vault: Path) -> None:
    from labbrain.ingest.obsidian import read_vault

    assert (
        read_vault(str(vault), max_bytes=1 << 20).data()
        == read_vault(str(vault), max_bytes=1 << 20).data()
    )


def test_a_node_shared_between_two_labs_vaults_is_recognised_as_one(
    tmp_path: Path, brain: LabBrain
) -> None:
    """Lab A's own claim, imported into lab B's vault: the same uid in both datasets, and B's
    copy names the RID it was imported from."""
    lab_a = make_lab(11, nodes=8, relations=6, name="Lab A")
    lab_b = make_lab(12, nodes=8, relations=6, name="Lab B")
    shared = next(n for n in lab_a.nodes if n.type_name == "Claim")
    copy = VaultNode(
        "Claim",
        shared.content,
        shared.body,
        shared.instance_id,
        folder="import/Lab A/Discourse Nodes",
        imported_from="aaaa0000bbbb1111",
        author_id=87,
    )
    lab_b.nodes.append(copy)
    vault_a = write_vault(lab_a, tmp_path / "a")
    vault_b = write_vault(lab_b, tmp_path / "b")
    graph_a = brain.load(str(vault_a)).graph
    graph_b = brain.load(str(vault_b)).graph
    node = DiscourseReader(brain).get_node(shared.instance_id or "")
    assert node.title == lab_a.title(shared)
    assert {node.dataset, *node.alsoIn} == {"lab-a", "lab-b"}
    imported = list(
        brain.store.query(
            f"SELECT ?a ?b ?rid WHERE {{ GRAPH <{graph_a}> {{ ?a lb:nodeInstanceId ?id }} "
            f"GRAPH <{graph_b}> {{ ?b lb:nodeInstanceId ?id ; lb:importedFrom ?rid }} }}"
        )
    )
    assert len(imported) == 1
    assert imported[0]["rid"].value == f"orn:obsidian.note:aaaa0000bbbb1111/{shared.instance_id}"


def test_data_path_may_name_a_vault(vault: Path, tmp_path: Path) -> None:
    """The MCP server's DATA_PATH loads a vault once; a second start finds it unchanged."""
    from labbrain.mcp.server import load_data_path

    with LabBrain(Settings(store=str(tmp_path / "mcp-store"))) as opened:
        first = load_data_path(opened, str(vault))
        assert first is not None and first.nodes == 40
        assert load_data_path(opened, str(vault)) is None  # the same digest: not loaded again
    done = CliRunner().invoke(
        main, ["--store", str(tmp_path / "s"), "mcp-config", "claude-code", "--data", str(vault)]
    )
    assert done.exit_code == 0, done.output
    assert f"DATA_PATH={vault}" in done.output.replace("'", "")


def test_a_hand_copy_sharing_a_node_instance_id_is_identified_by_its_path(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    original = lab.nodes[1]
    copy = vault / "Copies" / f"{lab.title(original)} (copy).md"
    copy.parent.mkdir()
    copy.write_text((vault / note_path(lab, original)).read_text())
    report = brain.load(str(vault))
    assert report.nodes == 41
    assert any("share a nodeInstanceId" in w and "Copies/" in w for w in report.warnings)
    reader = DiscourseReader(brain)
    assert reader.get_node(original.instance_id or "").title == lab.title(original)
    import hashlib

    uid = "p-" + hashlib.sha256(str(copy.relative_to(vault)).encode()).hexdigest()[:20]
    assert reader.get_node(uid).title == f"{lab.title(original)} (copy)"


def test_labbrain_check_lists_what_a_load_left_out(vault: Path, tmp_path: Path) -> None:
    from labbrain.ops.check import run_check

    settings = Settings(store=str(tmp_path / "checked"))
    with LabBrain(settings) as opened:
        opened.load(str(vault))
    clean = {f.check: f for f in run_check(settings).findings}
    assert clean["load warnings"].status == "ok"
    data = json.loads((vault / "relations.json").read_text())
    first = next(iter(data["relations"].values()))
    data["relations"]["gone"] = dict(first, id="gone", destination="no-such-note")
    (vault / "relations.json").write_text(json.dumps(data))
    with LabBrain(settings) as opened:
        opened.load(str(vault))
    found = {f.check: f for f in run_check(settings).findings}["load warnings"]
    assert found.status == "warning"
    assert "gone: no-such-note" in found.examples[0]


# ------------------------------------------------------------------ frontmatter read fast
def test_simple_frontmatter_reads_as_yaml_does() -> None:
    """Plain ``key: value`` frontmatter is read without the YAML parser: whatever it reads
    must be what YAML reads, and what it is unsure of it leaves to YAML (None)."""
    from labbrain.ingest.obsidian import simple_frontmatter

    rng = random.Random(3)
    pieces = [
        "abc", "019b7c38-b9b8-7bb0-3ec9-597aa61105ea", "orn:obsidian.note:00c6/019b",
        "12", "0", "-7", "007", "1_000", "1.5", "1e5", "0x1F", "0b101", "0o17", "true", "No",
        "ON", "null", "~", "2024-01-01", "2024-01-01T10:00:00Z", ".inf", "-abc", "+1", "=",
        "<<", "y", "a:b", "a:", "x,y", "a#b", "1:30", "éte", "node-type_1", "Y",
    ]  # fmt: skip
    keys = ["nodeTypeId", "nodeInstanceId", "on", "yes", "authorId", "_x", "a1"]
    read_fast = 0
    for _ in range(3000):
        lines = [f"{rng.choice(keys)}: {rng.choice(pieces)}" for _ in range(rng.randint(1, 4))]
        raw = "\n".join(lines) + "\n"
        fast = simple_frontmatter(raw)
        if fast is not None:
            read_fast += 1
            expected = yaml.safe_load(raw)
            assert fast == {str(k): v for k, v in expected.items()}, raw
    assert read_fast > 100  # the plugin's own frontmatter is read fast
    plugin = "nodeTypeId: abc123\nnodeInstanceId: 019b7c38-b9b8-7bb0-3ec9-597aa61105ea\n"
    assert simple_frontmatter(plugin) == {
        "nodeTypeId": "abc123",
        "nodeInstanceId": "019b7c38-b9b8-7bb0-3ec9-597aa61105ea",
    }
    assert simple_frontmatter("links:\n  - a\n") is None  # lists go to YAML


# ------------------------------------------------------------------ as the plugin's code does
def _relations(vault: Path) -> dict[str, Any]:
    return json.loads((vault / "relations.json").read_text(encoding="utf-8"))


def _creators_of_relations(brain: LabBrain) -> set[str]:
    rows = brain.store.query(
        "SELECT DISTINCT ?who WHERE { GRAPH ?g { ?r a dgb:RelationInstance ; dct:creator ?who } }"
    )
    return {row["who"].value for row in rows}  # type: ignore[union-attr]


def test_the_owner_is_the_username_else_the_vault_folder_and_owns_unsigned_relations(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    """As the plugin names the vault's account: ``username``, else the vault's folder name
    (never the account id); a relation without an author is the owner's."""
    for rel in lab.relations:
        rel.author_id = None
    vault = write_vault(lab, tmp_path / "v")
    settings_path = vault / ".obsidian/plugins/discourse-graphs/data.json"
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    assert all("authorId" not in r for r in _relations(vault)["relations"].values())
    brain.load(str(vault))
    assert _creators_of_relations(brain) == {settings["username"]}
    del settings["username"]
    settings_path.write_text(json.dumps(settings), encoding="utf-8")
    report = brain.load(str(vault))
    assert set(report.creators) == {vault.name}  # the folder's name, not accountLocalId
    assert _creators_of_relations(brain) == {vault.name}


def test_of_a_tentative_copy_and_the_accepted_relation_the_accepted_one_counts(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    vault = write_vault(lab, tmp_path / "v")
    data = _relations(vault)
    first = next(iter(data["relations"].values()))
    # An imported, not yet accepted copy of the same relation, written first in the file.
    copy = dict(first, id="imported-copy", tentative=False)
    data["relations"] = {"imported-copy": copy, **data["relations"]}
    (vault / "relations.json").write_text(json.dumps(data), encoding="utf-8")
    report = brain.load(str(vault))
    expected = read_by_hand(vault)["relations"]
    assert report.relations == expected  # the accepted one counts
    tentative = list(
        brain.store.query("SELECT ?r WHERE { GRAPH ?g { ?r a lb:TentativeRelation } }")
    )
    assert tentative == []
    assert any("duplicate relations" in w for w in report.warnings)


def test_a_legacy_relation_written_as_one_string_is_read(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    lab.relations.clear()
    evidence = next(n for n in lab.nodes if n.type_name == "Evidence")
    claim = next(n for n in lab.nodes if n.type_name == "Claim")
    evidence.extra_front[lab.relation_ids["supports"]] = f'"[[{lab.title(claim)}]]"'
    vault = write_vault(lab, tmp_path / "v")
    (vault / "relations.json").write_text(
        json.dumps({"version": 1, "lastModified": 1, "relations": {}})
    )
    report = brain.load(str(vault))
    assert dict(report.relations) == {"supports": 1}
    status = DiscourseReader(brain).get_claim_status(claim.instance_id or "")
    assert [s.uid for s in status.supporting] == [evidence.instance_id]


def test_a_relation_stored_against_its_allowed_direction_is_loaded_the_other_way(
    lab: Lab, tmp_path: Path, brain: LabBrain
) -> None:
    """A canvas stores a relation drawn from a claim to its evidence as claim -supports->
    evidence (showing "is supported by"): loaded as evidence supports claim, flagged."""
    lab.relations.clear()
    evidence = next(n for n in lab.nodes if n.type_name == "Evidence")
    claim = next(n for n in lab.nodes if n.type_name == "Claim")
    vault = write_vault(lab, tmp_path / "v")
    drawn = {
        "id": "drawn-backwards",
        "type": lab.relation_ids["supports"],
        "source": claim.instance_id,
        "destination": evidence.instance_id,
        "created": 1_780_000_000_000,
    }
    (vault / "relations.json").write_text(
        json.dumps({"version": 1, "lastModified": 1, "relations": {"drawn-backwards": drawn}})
    )
    report = brain.load(str(vault))
    assert dict(report.relations) == {"supports": 1}
    assert any("against their allowed direction" in w for w in report.warnings)
    status = DiscourseReader(brain).get_claim_status(claim.instance_id or "")
    assert [s.uid for s in status.supporting] == [evidence.instance_id]
    flagged = list(
        brain.store.query("SELECT ?r WHERE { GRAPH ?g { ?r lb:directionReversed true } }")
    )
    assert len(flagged) == 1
