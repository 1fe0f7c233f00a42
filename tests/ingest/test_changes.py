"""Every load records what it changed; what_changed and `labbrain changes` read it back.

Expected values come from the edits the tests make to a generated vault, not from labbrain."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from generate_vault import Lab, make_lab, note_path, write_vault
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.discourse.changes import parse_since, what_changed
from labbrain.errors import ExportFormatError, InvalidArgument
from labbrain.ingest import changes as change_module
from labbrain.rdf.namespaces import CHANGES_GRAPH
from labbrain.settings import Settings

LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)


@pytest.fixture
def lab() -> Lab:
    return make_lab(21, nodes=24, relations=20)


@pytest.fixture
def vault(lab: Lab, tmp_path: Path) -> Path:
    return write_vault(lab, tmp_path / "v")


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[LabBrain]:
    with LabBrain(Settings(store=str(tmp_path / "store"))) as opened:
        yield opened


def test_a_first_load_records_every_node_and_relation_as_added(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    brain.load(str(vault))
    found = what_changed(brain, LONG_AGO, limit=1000)
    [load] = found.loads
    assert (load.nodesAdded, load.nodesRemoved, load.nodesEdited) == (24, 0, 0)
    assert (load.relationsAdded, load.relationsRemoved) == (len(lab.relations), 0)
    assert {n.uid for n in found.nodes} == {n.instance_id for n in lab.nodes}
    by_type = Counter(n.type_name for n in lab.nodes)
    assert found.addedByPerson == {"Maya Chen": dict(sorted(by_type.items()))}
    assert {(r.sourceUid, r.label, r.destinationUid) for r in found.relations} == {
        (lab.nodes[r.source].instance_id, r.label, lab.nodes[r.destination].instance_id)
        for r in lab.relations
    }


def test_edits_removals_and_relation_changes_are_told_apart(
    lab: Lab, vault: Path, brain: LabBrain
) -> None:
    brain.load(str(vault))
    first_load = datetime.now(UTC)
    edited, removed = lab.nodes[2], lab.nodes[5]
    note = vault / note_path(lab, edited)
    note.write_text(note.read_text() + "\nOne more observation.\n")
    # Renaming a note changes its title, not its identity: an edit, not a removal.
    renamed = lab.nodes[7]
    (vault / note_path(lab, renamed)).rename(vault / "Discourse Nodes" / "CLM - renamed.md")
    (vault / note_path(lab, removed)).unlink()
    data = json.loads((vault / "relations.json").read_text())
    kept = {
        k: v
        for k, v in data["relations"].items()
        if removed.instance_id not in (v["source"], v["destination"])
    }
    dropped_id, dropped = next(iter(kept.items()))
    del kept[dropped_id]
    data["relations"] = kept
    (vault / "relations.json").write_text(json.dumps(data))
    brain.load(str(vault))
    found = what_changed(brain, first_load - timedelta(seconds=1), limit=1000)
    second = found.loads[-1]
    assert (second.nodesAdded, second.nodesRemoved, second.nodesEdited) == (0, 1, 2)
    changed = {(n.change, n.uid) for n in found.nodes if n.at == second.at}
    assert changed == {
        ("edited", edited.instance_id),
        ("edited", renamed.instance_id),
        ("removed", removed.instance_id),
    }
    gone = [r for r in found.relations if r.change == "removed"]
    touching = sum(
        1
        for r in lab.relations
        if removed.instance_id
        in (lab.nodes[r.source].instance_id, lab.nodes[r.destination].instance_id)
    )
    assert second.relationsRemoved == touching + 1 == len(gone)
    assert (dropped["source"], dropped["destination"]) in {
        (r.sourceUid, r.destinationUid) for r in gone
    }
    titles = {n.uid: n.title for n in found.nodes if n.change == "edited"}
    assert titles[renamed.instance_id] == "CLM - renamed"


def test_an_unchanged_reload_records_a_load_that_changed_nothing(
    vault: Path, brain: LabBrain
) -> None:
    brain.load(str(vault))
    brain.load(str(vault))
    loads = what_changed(brain, LONG_AGO).loads
    assert len(loads) == 2
    assert loads[1].model_dump(exclude={"at", "source", "dataset"}) == {
        "nodesAdded": 0,
        "nodesRemoved": 0,
        "nodesEdited": 0,
        "relationsAdded": 0,
        "relationsRemoved": 0,
    }


def test_a_failed_load_records_no_change(vault: Path, brain: LabBrain) -> None:
    brain.load(str(vault))
    before = brain.store.count(CHANGES_GRAPH)
    (vault / "relations.json").write_text("{")
    with pytest.raises(ExportFormatError):
        brain.load(str(vault))
    assert brain.store.count(CHANGES_GRAPH) == before


def test_filters_and_the_entry_cap(
    lab: Lab, vault: Path, brain: LabBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_module, "MAX_ENTRIES", 3)
    brain.load(str(vault))
    found = what_changed(brain, LONG_AGO, limit=1000)
    assert found.truncated and len(found.nodes) + len(found.relations) == 3
    assert found.loads[0].nodesAdded == 24  # the counts stay complete
    claims = sum(n.type_name == "Claim" for n in lab.nodes)
    assert what_changed(brain, LONG_AGO, node_type="claim").addedByPerson == {
        "Maya Chen": {"Claim": claims}
    }
    assert what_changed(brain, LONG_AGO, creator="Nobody").addedByPerson == {}
    assert what_changed(brain, datetime.now(UTC) + timedelta(minutes=1)).loads == []


def test_labbrain_changes_prints_the_changes_as_json(vault: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "cli")
    runner = CliRunner()
    assert runner.invoke(main, ["--store", store, "load", str(vault)]).exit_code == 0
    done = runner.invoke(main, ["--store", store, "changes", "--since", "1h", "--json"])
    assert done.exit_code == 0, done.output
    answer = json.loads(done.output)
    assert answer["loads"][0]["nodesAdded"] == 24
    bad = runner.invoke(main, ["--store", store, "changes", "--since", "last tuesday"])
    assert bad.exit_code != 0 and "no time" in bad.output


def test_parse_since() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("24h", now) == now - timedelta(hours=24)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    assert parse_since("2w", now) == now - timedelta(weeks=2)
    assert parse_since("2026-11-23", now) == datetime(2026, 11, 23, tzinfo=UTC)
    assert parse_since("2026-11-23T09:00Z", now) == datetime(2026, 11, 23, 9, tzinfo=UTC)
    with pytest.raises(InvalidArgument):
        parse_since("soon", now)
