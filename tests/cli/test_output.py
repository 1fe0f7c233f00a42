"""What ``labbrain load``, ``stats``, ``graphs`` and ``info`` print, in a pipe and on a terminal.

In a pipe (CliRunner's output is no terminal) the tables are plain text, every value whole
whatever the width the console guesses; on a terminal they are drawn, and a long value folds
onto more lines instead of being cut. ``load`` prints a line per path, ``stats`` a summary of
the datasets unless asked for everything (``--full``).

The counts expected here are those data/README.md gives for the sample files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from conftest import DATA
from labbrain import cli
from labbrain.cli import main
from labbrain.mcp.tools import TOOLSETS
from labbrain.settings import Settings

#: The README's quickstart: `labbrain load data/*.jsonld data/obsidian-sample`.
QUICKSTART = [*sorted(DATA.glob("*.jsonld")), DATA / "obsidian-sample"]
#: (nodes, relations) of each sample dataset (data/README.md; the dangling Supports instance
#: of the Roam sample, and the tentative and dangling relations of the vault, not counted).
DATASETS = {
    "akamatsulab-sample": (150, 170),
    "dct-sample": (8, 6),
    "v0-sample": (8, 6),
    "obsidian-sample": (10, 9),
}
BOX = re.compile("[│┃━─┏┓┗┛┡┩└┘]")
#: The longest summary of the quickstart's four datasets: a title, a header, four rows, the
#: totals, the other graphs and the hint.
SUMMARY_LINES = 9


def run(store: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--store", str(store), *args])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console that guesses a narrow width (a pipe's guess comes from the terminal that
    started it, or 80 columns): plain output must not depend on it."""
    monkeypatch.setattr(cli.out, "width", 40)


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    run(store, "load", *map(str, QUICKSTART))
    return store


def columns(line: str) -> list[str]:
    """The cells of a plain table line (columns are at least two spaces apart)."""
    return re.split(r"\s{2,}", line.strip())


def as_json(store: Path, *args: str) -> dict[str, list[dict[str, Any]]]:
    stats: dict[str, list[dict[str, Any]]] = json.loads(run(store, "stats", "--json", *args))
    return stats


def test_load_prints_a_line_per_path_and_no_tables(tmp_path: Path, narrow: None) -> None:
    out = run(tmp_path / "store", "load", *map(str, QUICKSTART))
    lines = out.splitlines()
    loaded = [line for line in lines if " -> urn:labbrain:dataset:" in line]
    assert [line.split(" -> ")[0] for line in loaded] == [str(path) for path in QUICKSTART]
    for slug, (nodes, relations) in DATASETS.items():
        (line,) = [line for line in loaded if f"urn:labbrain:dataset:{slug} (" in line]
        assert f" {nodes} nodes, {relations} relations, {nodes} indexed in " in line
    # everything else is a note or a warning, one line each
    others = [line for line in lines if line not in loaded]
    assert all(line.startswith(("note: ", "warning: ")) for line in others), others
    assert not BOX.search(out) and "…" not in out
    assert "Nodes by type" not in out and "Creators" not in out


def test_stats_prints_a_short_summary_of_the_datasets(quickstart: Path, narrow: None) -> None:
    out = run(quickstart, "stats")
    lines = out.splitlines()
    assert len(lines) <= SUMMARY_LINES, out
    assert not BOX.search(out) and "…" not in out
    triples = {row["graph"]: row["triples"] for row in as_json(quickstart)["graphs"]}
    rows = {cells[0]: cells[1:] for cells in map(columns, lines)}
    assert rows["dataset"] == ["nodes", "relations", "triples"]
    for slug, (nodes, relations) in DATASETS.items():
        size = triples[f"urn:labbrain:dataset:{slug}"]
        assert rows[slug] == [str(nodes), str(relations), f"{size:,}"]
    datasets = sum(size for graph, size in triples.items() if ":dataset:" in graph)
    assert rows["total (4 datasets)"] == ["176", "191", f"{datasets:,}"]
    other = sum(size for graph, size in triples.items() if ":dataset:" not in graph)
    assert f": {len(triples) - 4}, {other:,} triples" in out
    assert "labbrain stats --full" in lines[-1]


def test_stats_of_one_dataset_is_one_row(quickstart: Path) -> None:
    out = run(quickstart, "stats", "--graph", "dct-sample")
    rows = [columns(line) for line in out.splitlines()]
    assert rows[:3] == [["Datasets"], ["dataset", "nodes", "relations", "triples"], rows[2]]
    assert rows[2][:3] == ["dct-sample", "8", "6"]
    assert "total" not in out and "other graphs" not in out
    assert run(quickstart, "stats", "--graph", "nosuch").startswith("no dataset nosuch")


def test_stats_on_an_empty_store_says_how_to_load() -> None:
    assert run(Path(":memory:"), "stats") == "no datasets: `labbrain load PATH` loads one\n"


def test_stats_full_in_a_pipe_is_plain_text_with_every_value_whole(
    quickstart: Path, narrow: None
) -> None:
    out = run(quickstart, "stats", "--full")
    assert not BOX.search(out) and "…" not in out
    lines = [columns(line) for line in out.splitlines() if line.strip()]
    stats = as_json(quickstart)
    sections = {
        "Graphs": ("graphs", ["graph", "triples"]),
        "Nodes by type": ("nodes_by_type", ["graph", "type", "count"]),
        "Relations by label": ("relations", ["graph", "label", "count"]),
        "Creators": ("creators", ["graph", "creator", "nodes", "first", "last"]),
    }
    found: dict[str, list[list[str]]] = {}
    for cells in lines:
        if len(cells) == 1 and cells[0] in sections:
            title = cells[0]
            found[title] = []
        else:
            found[title].append(cells)
    assert list(found) == list(sections)
    for title, (key, header) in sections.items():
        expected = [
            [f"{v:,}" if isinstance(v, int) else str(v) for v in row.values()] for row in stats[key]
        ]
        assert found[title] == [header, *expected], title
    # every dataset graph by its full IRI, in each of the tables that name graphs
    for slug in DATASETS:
        iri = f"urn:labbrain:dataset:{slug}"
        assert sum(1 for cells in lines if cells[0] == iri) >= 4, iri


def test_on_a_terminal_the_tables_are_drawn_and_long_values_fold(
    quickstart: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Console(
        force_terminal=True,
        width=40,
        color_system=None,
        highlight=False,
        soft_wrap=True,
        markup=False,
        emoji=False,
    )
    monkeypatch.setattr(cli, "out", terminal)
    out = run(quickstart, "stats", "--full")
    assert BOX.search(out) and "…" not in out
    # the first column of the graphs table, its folded pieces joined, is every graph whole
    graphs = out.split("Nodes by type")[0]
    pieces = [line.split("│")[1].strip() for line in graphs.splitlines() if line.startswith("│")]
    joined = "".join(pieces)
    for row in as_json(quickstart)["graphs"]:
        assert row["graph"] in joined
    summary = run(quickstart, "stats")
    assert BOX.search(summary) and "…" not in summary
    for command in ("graphs", "info"):
        drawn = run(quickstart, command)
        assert BOX.search(drawn) and "…" not in drawn, command


def sections(out: str) -> dict[str, list[list[str]]]:
    """The plain tables of ``out`` by title (a title is a line of one cell followed by a
    header line), each a list of rows of cells, its header first, up to a blank line or a
    line of one cell; other lines are left out."""
    lines = out.splitlines()
    found: dict[str, list[list[str]]] = {}
    title = None
    for number, line in enumerate(lines):
        cells = columns(line)
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if line and not line.startswith(" ") and len(cells) == 1 and len(columns(following)) > 1:
            title = line
            found[title] = []
        elif len(cells) < 2:
            title = None
        elif title is not None:
            found[title].append(cells)
    return found


def test_graphs_in_a_pipe_is_plain_text_with_every_graph_whole(
    quickstart: Path, narrow: None
) -> None:
    out = run(quickstart, "graphs")
    assert not BOX.search(out) and "…" not in out
    expected = [[row["graph"], f"{row['triples']:,}"] for row in as_json(quickstart)["graphs"]]
    assert sections(out) == {"Graphs": [["graph", "triples"], *expected]}


def test_info_in_a_pipe_is_plain_text_with_every_value_whole(
    quickstart: Path, narrow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABBRAIN_JSONLD_CONTEXTS", '{"https://example.org/a/long/context": "x"}')
    out = run(quickstart, "info")
    assert not BOX.search(out) and "…" not in out
    tables = sections(out)
    assert list(tables) == ["Effective settings", "MCP toolsets (--toolsets)", "Datasets"]
    settings = tables["Effective settings"]
    assert settings[0] == ["setting (env)", "value", "meaning"]
    described = Settings(store=str(quickstart)).describe()
    assert [row[0] for row in settings[1:]] == [name for name, _, _ in described]
    for row, (name, value, doc) in zip(settings[1:], described, strict=True):
        shown = "" if value is None else str(value)
        assert row == ([name, shown, doc] if shown else [name, doc])
    contexts = next(row for row in settings if row[0] == "LABBRAIN_JSONLD_CONTEXTS")
    assert "https://example.org/a/long/context" in contexts[1]
    toolsets = {
        row[0].removesuffix(" (default)"): row[-1]
        for row in tables["MCP toolsets (--toolsets)"][1:]
    }
    assert toolsets == {name: ", ".join(s.name for s in specs) for name, specs in TOOLSETS.items()}
    datasets = tables["Datasets"]
    assert datasets[0] == ["slug", "nodes", "quads", "loadedAt", "sourceFile"]
    slugs = {row[0]: row[1] for row in datasets[1:]}
    assert slugs == {slug: str(nodes) for slug, (nodes, _) in DATASETS.items()}
