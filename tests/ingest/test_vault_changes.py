"""A watched vault followed by part: after any sequence of edits, renames, moves, deletions and
relation changes, the dataset graph, its load record and the text index are those a fresh
load of the same vault gives.

The edits are made to the vault's files directly (as Obsidian and the plugin write them); the
fresh load goes into a store of its own. Every step must also have gone by part (outcome
``changed``), or the comparison would only test the whole load against itself.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from generate_vault import Lab, frontmatter, make_lab, uuid7ish, write_vault
from helpers import embed_all
from labbrain.core import LabBrain
from labbrain.index.search_query import SearchQuery
from labbrain.ingest.delta import DocumentModel
from labbrain.ingest.obsidian import read_vault
from labbrain.ops.watch import VaultFollower
from labbrain.rdf.namespaces import CHANGES_GRAPH, LB, SYSTEM_GRAPH
from labbrain.settings import Settings
from labbrain.store.ontology import vocabulary

NOTES = "Discourse Nodes"


# ------------------------------------------------------------------ what the two stores hold
def dataset(brain: LabBrain, graph: str) -> set[str]:
    return {str(q) for q in brain.store.quads(graph)}


def load_record(brain: LabBrain, graph: str) -> dict[str, list[str]]:
    """The load record, without what differs between any two loads (id, time)."""
    facts: dict[str, list[str]] = {}
    for quad in brain.store.quads(SYSTEM_GRAPH):
        if quad.subject.value == graph and quad.predicate.value not in (
            LB + "loadId",
            LB + "loadedAt",
        ):
            facts.setdefault(quad.predicate.value, []).append(str(quad.object))
    return {k: sorted(v) for k, v in facts.items()}


def index_rows(brain: LabBrain, graph: str) -> dict[str, Any]:
    """The index's node rows, contributions and links of ``graph``, with the links named by
    their ends' IRIs (the ends' numbers are the index's own)."""
    db: sqlite3.Connection = brain.index._db
    nodes = db.execute(
        "SELECT iri, uid, title, clean_title, content, node_type, creator, created, modified,"
        " images FROM nodes WHERE graph = ? ORDER BY iri",
        (graph,),
    ).fetchall()
    contributions = db.execute(
        "SELECT creator, node_type, nodes, first_created, last_created FROM contributions"
        " WHERE graph = ? ORDER BY 1, 2",
        (graph,),
    ).fetchall()
    links = sorted(
        db.execute(
            "SELECT s.iri, d.iri, l.kind, coalesce(l.label, '') FROM links l"
            " JOIN link_ends s ON s.id = l.source JOIN link_ends d ON d.id = l.destination"
            " WHERE s.graph = ?",
            (graph,),
        ).fetchall()
    )
    ends = sorted(
        row[0] for row in db.execute("SELECT iri FROM link_ends WHERE graph = ?", (graph,))
    )
    return {"nodes": nodes, "contributions": contributions, "links": links, "ends": ends}


def assert_same_as_fresh_load(followed: LabBrain, vault: Path, tmp_path: Path, step: int) -> None:
    fresh = LabBrain(Settings(store=str(tmp_path / f"fresh-{step}")))
    try:
        graph = fresh.load(str(vault)).graph
        assert dataset(followed, graph) == dataset(fresh, graph)
        assert load_record(followed, graph) == load_record(fresh, graph)
        assert index_rows(followed, graph) == index_rows(fresh, graph)
        assert followed.index.engine_state() is None  # the words agree with the rows
        for word in ("zebrafish", "claim", "evidence"):
            found = [
                hit.node.iri
                for hit in followed.search(SearchQuery(word, mode="keyword", limit=50)).hits
            ]
            expected = [
                hit.node.iri
                for hit in fresh.search(SearchQuery(word, mode="keyword", limit=50)).hits
            ]
            assert found == expected, word
    finally:
        fresh.close()


# ------------------------------------------------------------------ editing the vault's files
class Editor:
    """Random edits of a vault's files, as the plugin and Obsidian make them."""

    def __init__(self, lab: Lab, vault: Path, rng: random.Random) -> None:
        self.lab = lab
        self.vault = vault
        self.rng = rng
        self.made = 0

    def notes(self) -> list[Path]:
        return sorted(p for p in self.vault.rglob("*.md") if ".trash" not in p.parts)

    def relations(self) -> dict[str, Any]:
        return json.loads((self.vault / "relations.json").read_text(encoding="utf-8"))

    def write_relations(self, data: dict[str, Any]) -> None:
        (self.vault / "relations.json").write_text(json.dumps(data, indent=2), encoding="utf-8")

    def front(self, path: Path) -> dict[str, Any]:
        import yaml

        return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1]) or {}

    def edit_body(self) -> str:
        path = self.rng.choice(self.notes())
        other = self.rng.choice(self.notes())
        line = f"\nNew finding on zebrafish {self.rng.randrange(1000)}: see [[{other.stem}]].\n"
        path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")
        return f"edit {path.name}"

    def link_to_missing_title(self) -> str:
        path = self.rng.choice(self.notes())
        title = f"CLM - Missing idea {self.made}"
        path.write_text(
            path.read_text(encoding="utf-8") + f"\nWaiting for [[{title}]].\n", encoding="utf-8"
        )
        return f"link {path.name} to missing {title}"

    def rename(self) -> str:
        path = self.rng.choice(self.notes())
        self.made += 1
        target = path.with_name(f"CLM - Renamed idea {self.made}.md")
        path.rename(target)
        return f"rename {path.name} -> {target.name}"

    def title_a_missing_link(self) -> str:
        """Give a note the title an earlier link waits for: that link now resolves."""
        path = self.rng.choice(self.notes())
        target = path.with_name(f"CLM - Missing idea {self.made}.md")
        if target.exists():
            return "no missing title to take"
        path.rename(target)
        return f"rename {path.name} -> {target.name} (a waiting link resolves)"

    def move(self) -> str:
        path = self.rng.choice(self.notes())
        folder = self.vault / self.rng.choice(["Moved", "Discourse Nodes/sub", NOTES])
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / path.name
        if target.exists():
            return "move onto itself"
        path.rename(target)
        return f"move {path.name} to {folder.name}"

    def delete(self) -> str:
        path = self.rng.choice(self.notes())
        path.unlink()
        return f"delete {path.name}"

    def add_note(self) -> str:
        self.made += 1
        type_name = self.rng.choice(sorted(self.lab.type_ids))
        front = {
            "nodeTypeId": self.lab.type_ids[type_name],
            "nodeInstanceId": uuid7ish(self.rng, 1_780_000_000_000 + self.made),
        }
        other = self.rng.choice(self.notes())
        path = self.vault / NOTES / f"EVD - New observation {self.made}.md"
        body = f"Observed zebrafish behaviour {self.made}; compare [[{other.stem}]].\n"
        path.write_text(frontmatter(front) + body, encoding="utf-8")
        return f"add {path.name}"

    def add_imported_note(self) -> str:
        """A note imported from another lab's vault: its creator is the other lab's author."""
        self.made += 1
        instance = uuid7ish(self.rng, 1_780_000_000_000 + self.made)
        front = {
            "nodeTypeId": self.lab.type_ids[self.rng.choice(sorted(self.lab.type_ids))],
            "nodeInstanceId": instance,
            "importedFromRid": f"orn:obsidian.note:00c6d07ef7b77e90/{instance}",
            "authorId": self.rng.choice([901, 902]),
            "lastModified": 1_780_000_000_000 + self.made,
        }
        folder = self.vault / "import" / "Other Lab"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"CLM - Imported idea {self.made}.md"
        path.write_text(frontmatter(front) + "An imported zebrafish claim.\n", encoding="utf-8")
        return f"add imported {path.name}"

    def untype(self) -> str:
        """A node note loses its nodeTypeId (it is no node any more), or gets one back."""
        path = self.rng.choice(self.notes())
        text = path.read_text(encoding="utf-8")
        if "nodeTypeId:" in text:
            path.write_text(text.replace("nodeTypeId:", "formerType:", 1), encoding="utf-8")
            return f"untype {path.name}"
        path.write_text(text.replace("formerType:", "nodeTypeId:", 1), encoding="utf-8")
        return f"retype {path.name}"

    def nodes_by_type(self) -> dict[str, list[str]]:
        """The nodeInstanceIds of the node notes, by node type name."""
        names = {type_id: name for name, type_id in self.lab.type_ids.items()}
        found: dict[str, list[str]] = {}
        for path in self.notes():
            front = self.front(path)
            if front.get("nodeInstanceId") and front.get("nodeTypeId") in names:
                found.setdefault(names[front["nodeTypeId"]], []).append(front["nodeInstanceId"])
        return found

    def add_relation(self) -> str:
        """A relation of an allowed triple (one that is not would change the settings'
        relation definitions, which is loaded whole)."""
        by_type = self.nodes_by_type()
        triples = [t for t in sorted(self.lab.triple_ids) if t[0] in by_type and t[2] in by_type]
        source_type, label, destination_type = self.rng.choice(triples)
        data = self.relations()
        self.made += 1
        rid = f"rel-new-{self.made}"
        data["relations"][rid] = {
            "id": rid,
            "type": self.lab.relation_ids[label],
            "source": self.rng.choice(by_type[source_type]),
            "destination": self.rng.choice(by_type[destination_type]),
            "created": 1_780_000_000_000 + self.made,
        }
        self.write_relations(data)
        return f"add relation {rid} ({label})"

    def remove_relation(self) -> str:
        data = self.relations()
        if not data["relations"]:
            return "no relation to remove"
        rid = self.rng.choice(sorted(data["relations"]))
        del data["relations"][rid]
        self.write_relations(data)
        return f"remove relation {rid}"

    def retarget_relation(self) -> str:
        """A relation's destination becomes another node of the same type."""
        data = self.relations()
        by_type = self.nodes_by_type()
        names = {type_id: name for name, type_id in self.lab.type_ids.items()}
        for rid in self.rng.sample(sorted(data["relations"]), len(data["relations"])):
            relation = data["relations"][rid]
            for path in self.notes():
                front = self.front(path)
                if front.get("nodeInstanceId") == relation["destination"]:
                    relation["destination"] = self.rng.choice(by_type[names[front["nodeTypeId"]]])
                    self.write_relations(data)
                    return f"retarget relation {rid}"
        return "no relation to retarget"

    def random_edit(self) -> str:
        edits = [
            self.edit_body,
            self.edit_body,
            self.link_to_missing_title,
            self.rename,
            self.title_a_missing_link,
            self.move,
            self.delete,
            self.add_note,
            self.add_imported_note,
            self.untype,
            self.add_relation,
            self.remove_relation,
            self.retarget_relation,
        ]
        return self.rng.choice(edits)()


@contextmanager
def followed_vault(
    tmp_path: Path, seed: int, nodes: int, relations: int
) -> Iterator[tuple[Lab, Path, LabBrain, VaultFollower]]:
    """The vault of ``make_lab(seed, nodes, relations)`` and a store following it, loaded
    whole once; the store is closed at the end."""
    lab = make_lab(seed, nodes=nodes, relations=relations)
    vault = write_vault(lab, tmp_path / "vaults")
    brain = LabBrain(Settings(store=str(tmp_path / "followed")))
    try:
        follower = VaultFollower(brain, str(vault))
        assert follower.sync().outcome == "loaded"
        yield lab, vault, brain, follower
    finally:
        brain.close()


def files_of(vault: Path) -> dict[str, tuple[int, int, int]]:
    """Every file of the vault (absolute path) with its size, modification time and inode."""
    found = {}
    for path in vault.rglob("*"):
        if path.is_file():
            info = path.stat()
            found[str(path)] = (info.st_size, info.st_mtime_ns, info.st_ino)
    return found


def changed_files(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The files created, changed or deleted: what file events name."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("named", [False, True], ids=["read-whole", "files-named"])
def test_any_edits_by_part_give_what_a_fresh_load_gives(
    seed: int, named: bool, tmp_path: Path
) -> None:
    """``named``: the follower is told which files changed (as file events tell it), and
    reads edited notes alone; otherwise it reads the vault whole each time."""
    with followed_vault(tmp_path, seed, 40, 60) as (lab, vault, brain, follower):
        editor = Editor(lab, vault, random.Random(seed))
        done = []
        for step in range(14):
            before = files_of(vault)
            done.append(editor.random_edit())
            if step % 2 == 0:
                done.append(editor.random_edit())  # two edits seen as one change
            paths = changed_files(before, files_of(vault)) if named else None
            event = follower.sync(paths)
            assert event.outcome in ("changed", "unchanged"), (done, event.error)
            assert_same_as_fresh_load(brain, vault, tmp_path, step)
        if named:
            assert follower.reads_by_part > 0  # body edits were read from their files alone
        else:
            assert follower.reads_by_part == 0


def test_a_change_by_part_records_what_it_changed(tmp_path: Path) -> None:
    with followed_vault(tmp_path, 11, 20, 20) as (lab, vault, brain, follower):
        editor = Editor(lab, vault, random.Random(5))
        editor.edit_body()
        editor.add_note()
        editor.delete()
        event = follower.sync()
        assert event.outcome == "changed"
        assert event.report is not None
        assert event.report.changed == {
            "nodesAdded": 1,
            "nodesEdited": 1,
            "nodesRemoved": 1,
            "relationsAdded": 0,
            # the deleted note's relations went with it (counted from relations.json)
            "relationsRemoved": event.report.changed["relationsRemoved"],
        }
        kinds = sorted(
            str(q.object.value)
            for q in brain.store.quads(CHANGES_GRAPH)
            if q.predicate.value == LB + "changeKind"
            and q.subject.value.startswith(f"urn:labbrain:change:{event.report.load_id}/n/")
        )
        assert kinds == ["added", "edited", "removed"]


def test_a_settings_change_loads_the_vault_whole(tmp_path: Path) -> None:
    with followed_vault(tmp_path, 4, 10, 10) as (_, vault, brain, follower):
        settings = vault / ".obsidian/plugins/discourse-graphs/data.json"
        data = json.loads(settings.read_text(encoding="utf-8"))
        data["relationTypes"][0]["label"] = "strongly supports"
        settings.write_text(json.dumps(data), encoding="utf-8")
        assert follower.sync().outcome == "loaded"
        assert_same_as_fresh_load(brain, vault, tmp_path, 0)


def test_another_load_in_between_makes_the_next_change_a_whole_load(tmp_path: Path) -> None:
    with followed_vault(tmp_path, 5, 10, 10) as (lab, vault, brain, follower):
        editor = Editor(lab, vault, random.Random(2))
        editor.edit_body()
        brain.load(str(vault))  # another writer's load: the model is of an older load
        editor.edit_body()
        assert follower.sync().outcome == "loaded"
        assert_same_as_fresh_load(brain, vault, tmp_path, 0)


def test_the_model_refuses_what_it_does_not_follow(tmp_path: Path) -> None:
    lab = make_lab(6, nodes=8, relations=6)
    vault = write_vault(lab, tmp_path / "vaults")
    document = read_vault(str(vault), max_bytes=1 << 20).document
    model = DocumentModel(document, "urn:labbrain:dataset:x", vocabulary(), "v", {})
    assert model.usable and model.nodes == 8
    same = model.plan(document)
    assert same is not None and same.empty
    nameless = json.loads(json.dumps(document))
    relation = next(e for e in nameless["@graph"] if e["@type"] == "relationInstance")
    del relation["@id"]  # its quads would have a blank node
    assert model.plan(nameless) is None
    twice = json.loads(json.dumps(document))
    twice["@graph"].append(twice["@graph"][-1])
    assert model.plan(twice) is None
    renamed = json.loads(json.dumps(document))
    next(e for e in renamed["@graph"] if e["@type"] == "relationDef")["label"] = "other"
    assert model.plan(renamed) is None


def test_a_relation_whose_end_comes_or_goes_is_worked_out_again(tmp_path: Path) -> None:
    """An export may keep a relation whose end is no node (a vault leaves such a relation
    out): its derived triple goes with the node and comes back with it."""
    lab = make_lab(8, nodes=8, relations=8)
    vault = write_vault(lab, tmp_path / "vaults")
    document = read_vault(str(vault), max_bytes=1 << 20).document
    graph = "urn:labbrain:dataset:x"
    model = DocumentModel(document, graph, vocabulary(), "v", {})
    relation = next(e for e in document["@graph"] if e["@type"] == "relationInstance")
    derived = f"<{relation['source']}> <{relation['predicate']}> <{relation['destination']}>"
    without = dict(document)
    without["@graph"] = [e for e in document["@graph"] if e.get("@id") != relation["source"]]
    gone = model.plan(without)
    assert gone is not None
    assert f"{derived} <{graph}>" in {str(q) for q in gone.remove}
    model.commit(gone)
    back = model.plan(document)
    assert back is not None
    assert f"{derived} <{graph}>" in {str(q) for q in back.add}


# ------------------------------------------------------------------ killed mid-update
_CHILD = """
import os, signal, sys
import labbrain.core as core
from labbrain.core import LabBrain
from labbrain.ops.watch import VaultFollower
from labbrain.settings import Settings

store, vault, where = sys.argv[1:4]
brain = LabBrain(Settings(store=store))
follower = VaultFollower(brain, vault)
print(follower.sync().outcome, flush=True)
sys.stdin.readline()  # the vault has been edited
real = core.write_change

def killed(*args, **kwargs):
    if where == "after-store":
        real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

core.write_change = killed
follower.sync()
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("where", ["before-store", "after-store"])
def test_killed_mid_update_the_dataset_is_before_or_after_and_the_index_agrees(
    where: str, tmp_path: Path
) -> None:
    """SIGKILL between the index's commit and the store's (the index is ahead: rolled back
    from the store at the next open) or just after the store's (the update stands)."""
    import subprocess
    import sys

    from click.testing import CliRunner

    from labbrain.cli import main

    lab = make_lab(9, nodes=20, relations=20)
    vault = write_vault(lab, tmp_path / "vaults")
    store = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(store), str(vault), where],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "loaded"
    before = tmp_path / "before"
    shutil.copytree(vault, before / vault.name)  # the vault as the dataset holds it
    Editor(lab, vault, random.Random(1)).edit_body()
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.wait(120) == -signal.SIGKILL

    graph = "urn:labbrain:dataset:tension-lab"
    with LabBrain(Settings(store=str(store))) as brain:
        reindexed = brain.index_sync.reindexed if brain.index_sync else {}
        if where == "before-store":
            # The partial state: the index had taken the update, the store had not; opening
            # the store rebuilt the graph's index rows from the store.
            assert graph in reindexed
            expected = before / vault.name
        else:
            assert graph not in reindexed  # both commits landed: nothing to redo
            expected = vault
        fresh = LabBrain(Settings(store=str(tmp_path / "fresh")))
        try:
            fresh.load(str(expected))
            assert dataset(brain, graph) == dataset(fresh, graph)
            assert index_rows(brain, graph) == index_rows(fresh, graph)
            assert brain.index.engine_state() is None
        finally:
            fresh.close()
    checked = CliRunner().invoke(main, ["--store", str(store), "check"])
    assert checked.exit_code == 0, checked.output


def test_body_edits_named_by_events_are_read_alone_and_give_a_fresh_load(tmp_path: Path) -> None:
    with followed_vault(tmp_path, 13, 30, 30) as (lab, vault, brain, follower):
        editor = Editor(lab, vault, random.Random(13))
        for step in range(6):
            before = files_of(vault)
            editor.edit_body()
            if step % 2:
                editor.link_to_missing_title()
            event = follower.sync(changed_files(before, files_of(vault)))
            assert event.outcome == "changed"
            assert follower.reads_by_part == step + 1
            assert_same_as_fresh_load(brain, vault, tmp_path, step)
        # A rename is no body edit: read whole, and still right.
        before = files_of(vault)
        editor.rename()
        assert follower.sync(changed_files(before, files_of(vault))).outcome == "changed"
        assert follower.reads_by_part == 6
        assert_same_as_fresh_load(brain, vault, tmp_path, 99)


def test_the_vectors_of_a_followed_vault_follow_its_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a vault's dataset has vectors, every change brings them in line: after random
    edits (bodies, renames, moves, deletions, new notes) the vectors were computed from the
    same texts as those of a fresh load embedded whole (their digests), none is left of a
    removed node, and only the changed nodes were embedded again."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with followed_vault(tmp_path, 6, 24, 30) as (lab, vault, brain, follower):
        embed_all(brain)
        first = brain.vectors.count()
        assert first > 0
        editor = Editor(lab, vault, random.Random(6))
        for _ in range(8):
            editor.random_edit()
            assert follower.sync().outcome in ("changed", "unchanged")
        with LabBrain(Settings(store=str(tmp_path / "fresh-embedded"))) as fresh:
            fresh.load(str(vault))
            embed_all(fresh)
            assert brain.vectors.digests() == fresh.vectors.digests()
        assert 0 < follower.vectors.embedded < first
