"""Toolsets and the read-only server: which tools a server lists, how many characters the
listing costs a model, and that a read-only server writes nothing and holds no lock.

The budgets are measured on ``tools/list`` through the real stdio server (``labbrain mcp``)
with the SDK client: descriptions plus input schemas, and output schemas, as compact JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from conftest import SAMPLE, SAMPLE_DCT, settings_for
from helpers import ClientSession, InProcessTools, snapshot
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import SettingsError
from labbrain.mcp.server import build_server
from labbrain.mcp.tools import DEFAULT_TOOLSETS, TOOLSETS, resolve_toolsets

LABBRAIN = str(Path(sys.executable).with_name("labbrain"))

#: What a new user gets: the reference server's nine tools, paths, claim status, gaps and
#: what changed, one SPARQL tool, and the two note tools.
DEFAULT_TOOLS = [
    "search_nodes",
    "get_node",
    "get_linked_nodes",
    "get_schema",
    "get_researcher_contributions",
    "get_node_images",
    "get_relationships",
    "get_relation_types",
    "get_node_neighborhood",
    "find_path",
    "get_claim_status",
    "find_gaps",
    "what_changed",
    "sparql_query",
    "log_finding",
    "list_findings",
]

#: Characters a model reads before its first question (descriptions + input schemas) and
#: the output schemas, at most.
BUDGETS = {"default": (12_000, 20_000), "all": (33_000, 62_000)}


# ------------------------------------------------------------------------ choosing toolsets
def test_toolset_names_resolve_in_one_order() -> None:
    assert resolve_toolsets("default") == DEFAULT_TOOLSETS == ("discourse", "sparql", "notes")
    assert resolve_toolsets("all") == tuple(TOOLSETS)
    assert resolve_toolsets(" Memory, discourse ,memory") == ("discourse", "memory")
    assert resolve_toolsets(["claims", "default"]) == ("discourse", "sparql", "notes", "claims")


@pytest.mark.parametrize("names", ["banana", "discourse,banana", "", " , "])
def test_an_unknown_or_missing_toolset_is_an_error_naming_the_known_ones(names: str) -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_toolsets(names)
    known = (
        "discourse, sparql, notes, notebook, memory, claims, tasks, semantic, bundles, default, all"
    )
    assert str(raised.value).endswith(f"toolsets: {known}")


def listed(server: Any) -> list[Any]:
    async def tools() -> list[Any]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(tools())


def test_the_default_server_lists_the_default_tools(sample_brain: LabBrain) -> None:
    names = [tool.name for tool in listed(build_server(sample_brain, DEFAULT_TOOLSETS))]
    assert names == DEFAULT_TOOLS


def test_all_lists_every_tool_once(sample_brain: LabBrain) -> None:
    every = {spec.name for specs in TOOLSETS.values() for spec in specs}
    names = [tool.name for tool in listed(build_server(sample_brain, tuple(TOOLSETS)))]
    assert len(names) == len(set(names)) == len(every) == 55


# ------------------------------------------------------------------------ read-only
def test_a_read_only_server_lists_no_tool_that_writes_and_records_no_visit(
    tmp_path: Path,
) -> None:
    with LabBrain(settings_for(tmp_path / "store")) as brain:
        brain.load(str(SAMPLE))
        writer = InProcessTools(brain)
        writer.ok("create_project", name="Membrane tension", activate=True)
        full = {tool.name: tool for tool in listed(writer.server)}
        server = build_server(brain, tuple(TOOLSETS), read_only=True)
        reading = {tool.name: tool for tool in listed(server)}
        writes = {name for name, tool in full.items() if not tool.annotations.read_only_hint}
        assert writes >= {"log_finding", "store_memory", "load_dataset", "get_node"}
        # reads whose one write is a side effect (a visit, when the client last asked)
        assert set(reading) == set(full) - writes | {"get_node", "what_changed"}
        assert all(tool.annotations.read_only_hint for tool in reading.values())
        before = snapshot(brain)
        is_error, node, _ = ClientSession(server).call("get_node", {"uid": "n2rGK8We9"})
        assert not is_error and node is not None and node["uid"] == "n2rGK8We9"
        assert snapshot(brain) == before  # no visit recorded in the active project
        is_error, changes, _ = ClientSession(server).call("what_changed", {})
        assert not is_error and changes is not None and changes["loads"]
        assert snapshot(brain) == before  # when the client asked is not recorded either
        writer.ok("get_node", uid="n2rGK8We9")  # the writing server records one
        assert snapshot(brain) != before


def test_toolsets_and_read_only_come_from_the_environment(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["--store", str(tmp_path / "store"), "mcp"],
        env={"LABBRAIN_TOOLSETS": "discourse,banana"},
    )
    assert result.exit_code != 0
    assert result.stderr.strip().splitlines() == [
        "error: settings: unknown toolset 'banana'; toolsets: discourse, sparql, notes, notebook, "
        "memory, claims, tasks, semantic, bundles, default, all"
    ]


# ------------------------------------------------------------------------ over stdio
def _params(store: Path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    return StdioServerParameters(
        command=LABBRAIN, args=["--store", str(store), "mcp", *args], env=environment | (env or {})
    )


def _stdio_listing(params: StdioServerParameters) -> list[Any]:
    async def tools() -> list[Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(tools())


def _size(tools: list[Any]) -> tuple[int, int]:
    """(descriptions + input schemas, output schemas) in characters of compact JSON."""

    def dumps(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    read_first = sum(len(t.description or "") + len(dumps(t.input_schema)) for t in tools)
    outputs = sum(len(dumps(t.output_schema)) for t in tools if t.output_schema is not None)
    return read_first, outputs


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("toolsets") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    return store


@pytest.mark.subprocess
@pytest.mark.parametrize("toolsets", ["default", "all"])
def test_the_listing_fits_its_budget_over_stdio(loaded_store: Path, toolsets: str) -> None:
    args = [] if toolsets == "default" else ["--toolsets", toolsets]
    tools = _stdio_listing(_params(loaded_store, *args))
    expected = DEFAULT_TOOLS if toolsets == "default" else None
    if expected is not None:
        assert [t.name for t in tools] == expected
    else:
        assert len(tools) == 55
    read_first, outputs = _size(tools)
    budget_read_first, budget_outputs = BUDGETS[toolsets]
    assert read_first <= budget_read_first, f"{toolsets}: {read_first} characters"
    assert outputs <= budget_outputs, f"{toolsets}: {outputs} characters of output schemas"


@pytest.mark.subprocess
def test_each_toolset_alone_over_stdio_from_the_environment(loaded_store: Path) -> None:
    for name, specs in TOOLSETS.items():
        tools = _stdio_listing(_params(loaded_store, env={"LABBRAIN_TOOLSETS": name}))
        assert [t.name for t in tools] == [spec.name for spec in specs], name


@pytest.mark.subprocess
def test_a_read_only_stdio_server_holds_no_lock_and_follows_a_load(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))

    async def session() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        params = _params(store, "--read-only")
        async with Client(params, read_timeout_seconds=120) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            before = (await client.call_tool("get_schema", {})).structured_content
            loaded = await asyncio.to_thread(
                subprocess.run,
                [LABBRAIN, "--store", str(store), "load", str(SAMPLE_DCT)],
                capture_output=True,
                text=True,
            )
            assert loaded.returncode == 0, loaded.stderr  # no lock held by the server
            after = (await client.call_tool("get_schema", {})).structured_content
        return names, before, after

    names, before, after = asyncio.run(session())
    assert "log_finding" not in names and "get_node" in names
    datasets = lambda schema: sorted(d["dataset"] for d in schema["datasets"])  # noqa: E731
    assert len(datasets(after)) == len(datasets(before)) + 1


# ------------------------------------------------------------------------ the server's log
@pytest.mark.subprocess
def test_the_servers_warnings_reach_the_client_as_log_messages(tmp_path: Path) -> None:
    """A server that finds the store held by another writer says so on stderr and, with
    the first call, to the client as a notifications/message at level warning."""
    store = tmp_path / "store"
    received: list[Any] = []

    async def on_log(params: Any) -> None:
        received.append(params)

    async def session() -> dict[str, Any]:
        params = _params(store)
        async with Client(
            params, read_timeout_seconds=120, logging_callback=on_log, log_level="warning"
        ) as client:
            answer = await client.call_tool("get_schema", {})
            assert answer.structured_content is not None
            return answer.structured_content

    with LabBrain(settings_for(store)) as holder:  # holds the writer lock
        holder.load(str(SAMPLE))
        schema = asyncio.run(session())
    assert [d["dataset"] for d in schema["datasets"]] == ["akamatsulab-sample"]
    warnings = [p for p in received if p.level == "warning"]
    assert len(warnings) == 1, received
    assert f"store {store} is locked by another labbrain process" in warnings[0].data
    assert "serving it read-only" in warnings[0].data and warnings[0].logger == "labbrain.mcp"


# ------------------------------------------------------------------------ the lean schemas
def test_lean_schemas_keep_the_shape_and_drop_the_bulk() -> None:
    from labbrain.mcp.listing import lean_input, lean_output

    schema = {
        "title": "Answer",
        "description": "the answer",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string", "description": "a node's title"},
            "default": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    assert lean_output(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "default": {"type": ["integer", "null"]},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        },
        "required": ["title"],
    }
    assert lean_input(schema) == {
        "description": "the answer",
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "a node's title"},
            "default": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title"],
    }
    assert schema["title"] == "Answer"  # the schemas given are not changed
