"""A node given by more than one ``@graph`` entry is loaded from one of them, and the load
report names it.

The rule (docs/commands.md, "Duplicate nodes"): the entry changed last wins (its ``modified``
date, else its ``created`` date; no date ranks first); on equal dates the later entry in
``@graph`` wins. The store, the text
index and the report then hold exactly what an export with only the winning entries holds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE, settings_for
from helpers import canonical
from labbrain.core import LabBrain
from labbrain.index.search_query import SearchQuery

Json = Any


def _nodes(document: Json) -> list[Json]:
    return [entry for entry in document["@graph"] if "title" in entry]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Json]:
    """(export with duplicates, the same export as the rule says it loads, the two uids).

    The first node gets a second entry later in the file but modified a year earlier (the
    date rule keeps the first); the second node gets a second entry later in the file with
    the same modified date and another title (the tie rule keeps the later one)."""
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    first, second = [node for node in _nodes(document) if node.get("modified")][:2]
    older = copy.deepcopy(first)
    older["title"] = "[[QUE]] - Stale wording of the first node"
    older["content"] = "stale content"
    older["modified"] = "2000-01-01T00:00:00.000Z"
    tie = copy.deepcopy(second)
    tie["title"] = "[[CLM]] - Reworded second node"
    tie["content"] = "reworded content"
    assert tie["modified"] == second["modified"]
    duplicated = copy.deepcopy(document)
    duplicated["@graph"] += [older, tie]

    expected = copy.deepcopy(document)
    index = expected["@graph"].index(second)
    expected["@graph"][index] = tie  # the tie: the later entry; the date: the first entry

    folder = tmp_path_factory.mktemp("duplicates")
    dup_path, expected_path = folder / "duplicated.jsonld", folder / "expected.jsonld"
    dup_path.write_text(json.dumps(duplicated), encoding="utf-8")
    expected_path.write_text(json.dumps(expected), encoding="utf-8")
    positions = {
        "first": [document["@graph"].index(first), len(document["@graph"])],
        "second": [document["@graph"].index(second), len(document["@graph"]) + 1],
    }
    uids = {
        "first": first["@id"].split(":", 1)[1],
        "second": second["@id"].split(":", 1)[1],
        "positions": positions,
    }
    return dup_path, expected_path, uids


@pytest.mark.parametrize("engine", ["native", "pyld"])
def test_one_entry_per_node_is_loaded_by_the_documented_rule(
    exports: tuple[Path, Path, Json], engine: str
) -> None:
    duplicated, expected, uids = exports
    with LabBrain(settings_for(":memory:", jsonld_engine=engine)) as brain:
        report = brain.load(str(duplicated), graph="dup")
        reference = brain.load(str(expected), graph="expected")
        assert canonical(brain, report.graph) == canonical(brain, reference.graph)
        assert report.quads == reference.quads
        assert report.nodes == reference.nodes == 150

        first, second = uids["positions"]["first"], uids["positions"]["second"]
        assert report.duplicates == [
            {
                "uid": uids["first"],
                "entries": [f"@graph[{i}]" for i in first],
                "kept": f"@graph[{first[0]}]",
            },
            {
                "uid": uids["second"],
                "entries": [f"@graph[{i}]" for i in second],
                "kept": f"@graph[{second[1]}]",
            },
        ]
        assert report.as_dict()["duplicates"] == report.duplicates
        (warning,) = [w for w in report.warnings if "more than once" in w]
        assert warning.startswith("2 node(s) appear more than once in @graph")
        assert uids["first"] in warning and uids["second"] in warning

        # The index holds the winning titles only.
        hits = brain.search(SearchQuery("Reworded second node", graphs=(report.graph,))).hits
        assert [hit.node.uid for hit in hits][:1] == [uids["second"]]
        assert hits[0].node.title == "Reworded second node"
        stale = brain.search(SearchQuery("Stale wording", graphs=(report.graph,))).hits
        assert all("Stale" not in hit.node.title for hit in stale)
        assert brain.index.count(report.graph) == 150


def test_duplicates_refuse_a_strict_load(exports: tuple[Path, Path, Json]) -> None:
    duplicated, _, uids = exports
    with LabBrain(settings_for(":memory:", strict_load=True)) as brain:
        with pytest.raises(Exception, match="more than once") as raised:
            brain.load(str(duplicated), graph="dup")
        assert uids["first"] in str(raised.value)
        assert brain.datasets() == []


def test_an_export_without_duplicates_reports_none() -> None:
    with LabBrain(settings_for(":memory:")) as brain:
        report = brain.load(str(SAMPLE))
        assert report.duplicates == []
        assert not any("more than once" in w for w in report.warnings)
