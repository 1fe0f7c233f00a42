"""The real `labbrain mcp` process over stdio: the SDK's stdio client and the MCP Inspector CLI."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import REAL, SAMPLE, settings_for
from labbrain.core import LabBrain
from labbrain.mcp.tools import DEFAULT_TOOLSETS, TOOLSETS

pytestmark = pytest.mark.subprocess

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
LABBRAIN = str(Path(sys.executable).with_name("labbrain"))


def _server(store: Path, data_path: Path | None = None) -> StdioServerParameters:
    env = {"DATA_PATH": str(data_path)} if data_path else {}
    return StdioServerParameters(command=LABBRAIN, args=["--store", str(store), "mcp"], env=env)


def _session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def run() -> list[Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            results: list[Any] = [await client.list_tools()]
            for name, arguments in calls:
                results.append(await client.call_tool(name, arguments))
            return results

    return asyncio.run(run())


@pytest.mark.needs_corpus
def test_stdio_server_with_data_path(tmp_path: Path) -> None:
    """DATA_PATH loads the export at start, as the reference server's config expects."""
    store = tmp_path / "store"
    listing, search, node, missing = _session(
        _server(store, REAL),
        [
            ("search_nodes", {"query": "polarization", "limit": 3}),
            ("get_node", {"uid": "pqyDoNken"}),
            ("get_node", {"uid": "no-such-uid"}),
        ],
    )
    names = {tool.name for tool in listing.tools}
    assert {
        "search_nodes",
        "get_node",
        "get_node_neighborhood",
        "find_path",
        "sparql_query",
    } <= names
    assert not search.is_error and len(search.structured_content["results"]) == 3
    for hit in search.structured_content["results"]:
        assert (
            hit["creator"] and hit["created"] and hit["url"].startswith("https://roamresearch.com/")
        )
    assert node.structured_content["creator"] == "Flavia Batista"
    assert json.loads(node.content[0].text)["uid"] == "pqyDoNken"  # compact JSON text too
    assert missing.is_error
    assert "no node with uid no-such-uid; search_nodes finds uids" in missing.content[0].text
    assert (
        str(tmp_path) not in missing.content[0].text and "Traceback" not in missing.content[0].text
    )
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert [d["nodes"] for d in brain.datasets()] == [268]


def test_data_path_already_loaded_is_not_reloaded(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        first = brain.load(str(SAMPLE))
    _session(_server(store, SAMPLE), [("get_schema", {})])
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert [d["loadId"] for d in brain.datasets()] == [first.load_id]


def test_bad_data_path_fails_with_a_message(tmp_path: Path) -> None:
    result = subprocess.run(
        [LABBRAIN, "--store", str(tmp_path / "s"), "mcp"],
        env={"DATA_PATH": str(tmp_path / "missing.jsonld"), "PATH": "/usr/bin:/bin"},
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "DATA_PATH" in result.stderr and "no such file" in result.stderr


@pytest.fixture(scope="module")
def npx() -> str:
    path = shutil.which("npx")
    assert path is not None, "Node.js (npx) is needed for the MCP Inspector test"
    return path


def _inspector(npx: str, store: Path, *method: str, toolsets: str | None = None) -> Any:
    env = ["-e", f"LABBRAIN_TOOLSETS={toolsets}"] if toolsets else []
    # Bundles go beside the store, never into the home directory's bundle folder.
    env += ["-e", f"LABBRAIN_BUNDLE_DIR={store.parent / 'bundles'}"]
    result = subprocess.run(
        [npx, "-y", INSPECTOR, "--cli", *env, LABBRAIN, "--store", str(store), "mcp", *method],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.needs_npx
def test_mcp_inspector_cli(tmp_path: Path, npx: str) -> None:
    """The official MCP Inspector, as a real client, lists and calls the tools."""
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    listing = _inspector(npx, store, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert list(tools) == [spec.name for name in DEFAULT_TOOLSETS for spec in TOOLSETS[name]]
    assert tools["search_nodes"]["annotations"]["readOnlyHint"] is True
    # the default toolsets serve no tool that reads visits: get_node records none, a pure read
    assert tools["get_node"]["annotations"]["readOnlyHint"] is True
    assert "outputSchema" in tools["search_nodes"]
    called = _inspector(
        npx,
        store,
        "--method",
        "tools/call",
        "--tool-name",
        "search_nodes",
        "--tool-arg",
        "query=membrane tension",
        "--tool-arg",
        "nodeType=Claim",
    )
    assert not called.get("isError")
    results = called["structuredContent"]["results"]
    assert results and all(r["nodeType"] == "Claim" for r in results)


#: One tool of each toolset, with arguments, and a key its answer must have.
ONE_OF_EACH = {
    "discourse": ("get_schema", [], "nodeTypes"),
    "sparql": ("sparql_query", ["query=ASK { ?s ?p ?o }"], "boolean"),
    "notes": ("list_findings", [], "findings"),
    "notebook": ("list_projects", [], "projects"),
    "memory": ("list_domains", [], "domains"),
    "claims": ("list_propositions", [], "propositions"),
    "tasks": ("list_tasks", [], "tasks"),
    "semantic": ("embed_nodes", ["waitSeconds=0"], "taskId"),
    "bundles": ("bundle_evidence", ["uid=u5gSj-de1", "name=evd-u5gsj"], "bundle"),
}


@pytest.mark.needs_npx
@pytest.mark.parametrize("toolset", list(ONE_OF_EACH))
def test_mcp_inspector_calls_a_tool_of_each_toolset(tmp_path: Path, npx: str, toolset: str) -> None:
    assert set(ONE_OF_EACH) == set(TOOLSETS)
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    tool, arguments, key = ONE_OF_EACH[toolset]
    listing = _inspector(npx, store, "--method", "tools/list", toolsets=toolset)
    assert [t["name"] for t in listing["tools"]] == [spec.name for spec in TOOLSETS[toolset]]
    words = [word for argument in arguments for word in ("--tool-arg", argument)]
    called = _inspector(
        npx, store, "--method", "tools/call", "--tool-name", tool, *words, toolsets=toolset
    )
    assert not called.get("isError"), called
    assert key in called["structuredContent"]
    if toolset == "bundles":
        assert (tmp_path / "bundles" / "evd-u5gsj" / "ro-crate-metadata.json").is_file()


def test_second_server_on_a_busy_store_serves_read_only(tmp_path: Path) -> None:
    """Two assistants on one store: the second server reads while the first holds the lock."""
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))

    async def two() -> tuple[Any, Any]:
        async with Client(_server(store), read_timeout_seconds=120) as first:
            await first.call_tool("get_schema", {})
            async with Client(_server(store), read_timeout_seconds=120) as second:
                found = await second.call_tool("search_nodes", {"query": "membrane tension"})
            return found, await first.call_tool("search_nodes", {"query": "actin"})

    found, still = asyncio.run(two())
    assert not found.is_error and found.structured_content["results"]
    assert not still.is_error and still.structured_content["results"]


@pytest.mark.needs_corpus
def test_busy_store_cannot_take_a_new_data_path(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as writer:
        writer.load(str(SAMPLE))
        result = subprocess.run(
            [LABBRAIN, "--store", str(store), "mcp"],
            env={"DATA_PATH": str(REAL), "PATH": "/usr/bin:/bin"},
            input="",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 3
        assert "serving it read-only, as it is after each of its writes" in result.stderr
        assert "is not loaded yet and another labbrain process holds the store" in result.stderr
        assert [d["nodes"] for d in writer.datasets()] == [150]


def test_agent_memory_and_tasks_survive_a_server_restart(tmp_path: Path) -> None:
    """Over real stdio, in two server processes one after the other: a load as a task, a
    project with a visit and a finding, a memory; the second process replays the keyed writes
    (same answers, nothing written) and finds everything the first one wrote."""
    store = tmp_path / "store"
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "sample.jsonld").write_bytes(SAMPLE.read_bytes())
    env = {"LABBRAIN_LOAD_DIRS": str(exports)}  # a plain path, as the refusal invites
    params = StdioServerParameters(
        command=LABBRAIN, args=["--store", str(store), "mcp", "--toolsets", "all"], env=env
    )
    finding = {
        "content": "Tension raises filament number.",
        "sourceUid": "D6SNboBqO",
        "idempotencyKey": "f-1",
    }
    memory = {
        "content": "Cytosim needs no tension sensor.",
        "tags": ["cytosim"],
        "idempotencyKey": "m-1",
    }
    _, load, project, node, logged, domain, stored = _session(
        params,
        [
            ("load_dataset", {"path": "sample.jsonld", "waitSeconds": 60}),
            ("create_project", {"name": "Membrane tension", "description": "tension and actin"}),
            ("get_node", {"uid": "D6SNboBqO"}),
            ("log_finding", finding),
            ("create_domain", {"id": "actin-models", "name": "Actin models"}),
            ("store_memory", memory),
        ],
    )
    for result in (load, project, node, logged, domain, stored):
        assert not result.is_error, result.content[0].text
    assert load.structured_content["status"] == "completed"
    assert load.structured_content["results"]["nodes"] == 150
    _, again_finding, again_memory, context, tasks = _session(
        params,
        [
            ("log_finding", finding),
            ("store_memory", memory),
            ("get_project_context", {}),
            ("list_tasks", {}),
        ],
    )
    assert again_finding.structured_content == logged.structured_content
    assert again_memory.structured_content == stored.structured_content
    summary = context.structured_content["project"]
    assert (summary["findings"], summary["visits"]) == (1, 1)
    assert tasks.structured_content["total"] == 1
    with LabBrain(settings_for(store), read_only=True) as brain:
        rows = brain.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s a lb:MemoryNode } }")
        assert [int(row["n"].value) for row in rows] == [1]  # type: ignore[union-attr]
