"""The index's contributions read model: derived with the text rows, equal to what the raw
export says, replaced and dropped with its graph, rebuilt with an older index file."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.index.text import normalise_timestamp


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
