"""The ``what_changed`` tool: the changes every load records, since a time or since the client
last asked, filtered, and summarised per person ("catch me up").

Expected answers come from the export files themselves: which node the test edits, removes
or keeps, and who created what, read with ``json`` only.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE, settings_for
from helpers import InProcessTools
from labbrain.core import LabBrain

Json = dict[str, Any]


def pages(document: Json) -> list[Json]:
    return [e for e in document["@graph"] if "title" in e and "content" in e]


@pytest.fixture
def lab(tmp_path: Path) -> tuple[LabBrain, Path, Json]:
    export = tmp_path / "lab.jsonld"
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    export.write_text(json.dumps(document), encoding="utf-8")
    brain = LabBrain(settings_for(tmp_path / "store"))
    brain.load(str(export))
    yield brain, export, document  # type: ignore[misc]
    brain.close()


def edit(export: Path, document: Json) -> tuple[Json, Json]:
    """Edit the content of the first page and remove the last one; load-ready on disk.
    Returns (the edited page, the removed page)."""
    changed = json.loads(json.dumps(document))
    nodes = pages(changed)
    edited, removed = nodes[0], nodes[-1]
    edited["content"] = edited["content"] + "\nA new observation."
    changed["@graph"] = [e for e in changed["@graph"] if e is not removed]
    export.write_text(json.dumps(changed), encoding="utf-8")
    return edited, removed


def test_the_first_call_reports_the_last_seven_days_then_since_it_asked(
    lab: tuple[LabBrain, Path, Json],
) -> None:
    brain, export, document = lab
    tools = InProcessTools(brain)
    first = tools.ok("what_changed")
    assert first["note"].startswith("changes over the last 7 days")
    assert [load["nodesAdded"] for load in first["loads"]] == [len(pages(document))]
    edited, removed = edit(export, document)
    brain.load(str(export))
    second = tools.ok("what_changed")
    assert second["note"].startswith("changes since you last asked")
    assert len(second["loads"]) == 1  # the first load was before the last question
    load = second["loads"][0]
    assert (load["nodesAdded"], load["nodesEdited"], load["nodesRemoved"]) == (0, 1, 1)
    listed = {(n["change"], n["title"]) for n in second["nodes"]}
    assert listed == {("edited", edited["title"]), ("removed", removed["title"])}
    # Nothing since: the next question finds no load; a new server over the same store
    # remembers when this client asked.
    assert InProcessTools(brain).ok("what_changed")["loads"] == []


def test_since_filters_and_catch_up(lab: tuple[LabBrain, Path, Json]) -> None:
    brain, _, document = lab
    tools = InProcessTools(brain)
    claims = tools.ok("what_changed", since="1h", nodeType="CLM", limit=200)
    expected = sorted(p["title"] for p in pages(document) if "[[CLM]]" in p["title"])
    assert expected and sorted(n["title"] for n in claims["nodes"]) == expected
    assert claims["relations"] == []  # relations are not of a node type
    creators = Counter(p["creator"] for p in pages(document) if p.get("creator"))
    someone, made = creators.most_common(1)[0]
    theirs = tools.ok("what_changed", since="1h", creator=someone, limit=200)
    assert len(theirs["nodes"]) == made
    summary = tools.ok("what_changed", since="1h", catchUp=True)
    assert summary["nodes"] == [] and summary["relations"] == []
    people = {p["creator"]: sum(p["added"].values()) for p in summary["people"]}
    assert people == dict(creators) | (
        {"(no creator)": len(pages(document)) - creators.total()}
        if creators.total() < len(pages(document))
        else {}
    )
    top = summary["people"][0]
    assert top["creator"] == someone and len(top["addedTitles"]) == 5
    assert summary["loads"][0]["nodesAdded"] == len(pages(document))


def test_later_since_and_bad_arguments(lab: tuple[LabBrain, Path, Json]) -> None:
    brain, _, _ = lab
    tools = InProcessTools(brain)
    assert tools.ok("what_changed", since="2999-01-01")["loads"] == []
    assert "7d" in tools.error("what_changed", since="last tuesday")
    assert "lab" in tools.error("what_changed", dataset="nope")  # lists the datasets
    assert "nodeType" in tools.error("what_changed", nodeType="Banana")
