"""Tool annotations tell the truth: a tool the server lists as read-only changes no graph.

Every tool annotated ``readOnlyHint: true`` is called on a store where everything that a read
could touch exists (a loaded export, an active project with a visit and a finding, a selected
memory domain with connected memories, a proposition, a finished task), once with no project
active and once with one, and every graph (the task ledger included) must be exactly as before.
A new read-only tool fails the test until it has arguments here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from conftest import SAMPLE, settings_for
from helpers import InProcessTools, count, snapshot
from labbrain.core import LabBrain
from labbrain.mcp.tools import DEFAULT_TOOLSETS, TOOLSETS
from labbrain.rdf.namespaces import LB, SYSTEM_GRAPH

Json = Any

#: Arguments that make each read-only tool do its work on the sample (``{memory}``,
#: ``{proposition}``, ``{task}`` are filled in with the ids made in the fixture).
READ_CALLS: dict[str, Json] = {
    "search_nodes": {"query": "membrane tension"},
    "get_linked_nodes": {"uid": "B77kMS_GY"},
    "get_schema": {},
    "get_researcher_contributions": {"creator": "Matt Akamatsu"},
    "get_node_images": {"uid": "B77kMS_GY"},
    "get_relationships": {"relationshipType": "Supports"},
    "get_relation_types": {},
    "get_node_neighborhood": {"uid": "B77kMS_GY", "depth": 2},
    "find_path": {"fromUid": "B77kMS_GY", "toUid": "z7rB78j3b"},
    "get_claim_status": {"uid": "B77kMS_GY"},
    "find_gaps": {},
    "sparql_query": {"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 5"},
    "get_task": {"taskId": "{task}"},
    "list_tasks": {},
    "list_projects": {},
    "get_project_context": {"project": "membrane-tension"},
    "list_findings": {"project": "membrane-tension"},
    "suggest_next_steps": {"project": "membrane-tension"},
    "get_related_pages": {"uid": "B77kMS_GY"},
    "list_domains": {},
    "get_memory": {"id": "{memory}"},
    "search_memories": {"query": "tension"},
    "traverse_memories": {"start": "{memory}", "maxDepth": 2},
    "get_proposition": {"id": "{proposition}"},
    "list_propositions": {},
    "find_lineage": {"fromConcept": "membrane tension", "toConcept": "actin"},
    "find_contradictions": {"claim": "{proposition}"},
}

#: A write of each agent-side toolset that answers with suggested actions.
WRITE_CALLS: dict[str, Json] = {
    "log_finding": {"content": "Dynamin assembles faster under low tension."},
    "create_project": {"name": "Scission"},
    "store_memory": {"content": "Low tension favours scission."},
    "add_proposition": {"content": "Tension delays scission.", "confidence": 0.6},
}


def read_only_tools(tools: InProcessTools) -> list[str]:
    """The tools the server lists with ``readOnlyHint: true``."""

    async def listing() -> list[str]:
        async with Client(tools.server) as client:
            listed = (await client.list_tools()).tools
        return [t.name for t in listed if t.annotations and t.annotations.read_only_hint]

    return asyncio.run(listing())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[InProcessTools, Json]]:
    """A store on disk with every kind of record a read could touch, and their ids."""
    store = tmp_path_factory.mktemp("annotations") / "store"
    with LabBrain(settings_for(str(store), load_dirs=[SAMPLE.parent])) as brain:
        tools = InProcessTools(brain)
        task = tools.ok("load_dataset", path=SAMPLE.name, waitSeconds=60)["taskId"]
        tools.ok("create_project", name="Membrane tension", activate=True)
        tools.ok("record_visit", uid="n2rGK8We9")
        tools.ok("log_finding", content="Tension slows endocytosis.", sourceUid="B77kMS_GY")
        tools.ok("create_domain", id="mechanics", name="Mechanics", select=True)
        first = tools.ok("store_memory", content="Membrane tension resists actin pushing.")
        second = tools.ok("store_memory", content="Arp2/3 branches actin under load.")
        ids = {"memory": first["memory"]["id"], "task": task}
        tools.ok(
            "connect_memories",
            source=ids["memory"],
            target=second["memory"]["id"],
            type="supports",
            strength=0.8,
        )
        proposition = tools.ok(
            "add_proposition", content="Tension recruits Arp2/3.", confidence=0.7
        )
        ids["proposition"] = proposition["proposition"]["id"]
        yield tools, ids


def arguments(tool: str, ids: Json) -> Json:
    """The tool's arguments with the fixture's ids filled in."""
    return {
        key: ids[value[1:-1]] if isinstance(value, str) and value[1:-1] in ids else value
        for key, value in READ_CALLS[tool].items()
    }


@pytest.mark.parametrize("active", [True, False], ids=["project-active", "no-project"])
def test_every_read_only_tool_changes_no_graph(
    world: tuple[InProcessTools, Json], active: bool
) -> None:
    tools, ids = world
    listed = read_only_tools(tools)
    assert set(listed) == set(READ_CALLS), "give every read-only tool arguments in READ_CALLS"
    if not active:
        tools.brain.store.update(
            f"DELETE WHERE {{ GRAPH <{SYSTEM_GRAPH}> {{ ?agent <{LB}activeProject> ?p }} }}"
        )
    assert "get_node" not in listed  # it records a visit while a project is active
    changed = []
    for tool in listed:
        before = snapshot(tools.brain)
        tools.ok(tool, arguments(tool, ids))
        if snapshot(tools.brain) != before:
            changed.append(tool)
    assert changed == [], f"annotated read-only, but changed a graph: {changed}"


def listed_read_only(tools: InProcessTools) -> dict[str, bool]:
    """Each listed tool's ``readOnlyHint``."""

    async def listing() -> dict[str, bool]:
        async with Client(tools.server) as client:
            listed = (await client.list_tools()).tools
        return {t.name: bool(t.annotations and t.annotations.read_only_hint) for t in listed}

    return asyncio.run(listing())


def visits(brain: LabBrain) -> int:
    """The visits recorded in every project."""
    return count(brain, f"GRAPH ?g {{ ?v a <{LB}Visit> }}")


def test_get_node_is_a_pure_read_where_no_tool_reads_visits(
    world: tuple[InProcessTools, Json],
) -> None:
    """The default toolsets (discourse, sparql, notes) serve no tool that reads visits: get_node
    is listed read-only and records none, even with a project active (left by an earlier
    server with every toolset); beside the notebook it writes its visit, and says so."""
    full, _ = world
    brain = full.brain
    full.ok("set_active_project", project="membrane-tension")
    default = InProcessTools(brain, DEFAULT_TOOLSETS)
    assert listed_read_only(default)["get_node"] is True
    before, graphs = visits(brain), snapshot(brain)
    default.ok("get_node", uid="B77kMS_GY")
    assert visits(brain) == before and snapshot(brain) == graphs

    notebook = InProcessTools(brain, ("discourse", "notebook"))
    assert listed_read_only(notebook)["get_node"] is False
    notebook.ok("get_node", uid="B77kMS_GY")
    assert visits(brain) == before + 1


def test_suggested_actions_name_only_the_tools_served(world: tuple[InProcessTools, Json]) -> None:
    """log_finding suggests list_findings, suggest_next_steps and get_related_pages; the
    default toolsets serve only the first, every toolset serves all three."""
    full, _ = world
    full.ok("set_active_project", project="membrane-tension")
    everything = full.ok("log_finding", content="Arp2/3 density rises with load.")
    assert everything["availableActions"] == [
        "list_findings",
        "suggest_next_steps",
        "get_related_pages",
    ]
    default = InProcessTools(full.brain, DEFAULT_TOOLSETS)
    served = set(listed_read_only(default))
    assert {"suggest_next_steps", "get_related_pages"} - served == {
        "suggest_next_steps",
        "get_related_pages",
    }
    logged = default.ok("log_finding", content="Tension slows scission.")
    assert logged["availableActions"] == ["list_findings"]
    assert logged["finding"]["content"] == "Tension slows scission."


def test_every_suggested_action_is_served_in_every_toolset(
    world: tuple[InProcessTools, Json],
) -> None:
    """Each toolset served alone: no write answer suggests a tool the server does not list."""
    full, _ = world
    for name in TOOLSETS:
        tools = InProcessTools(full.brain, (name,))
        served = set(listed_read_only(tools))
        for tool, args in WRITE_CALLS.items():
            if tool not in served:
                continue
            answer = tools.ok(tool, args)
            assert set(answer.get("availableActions", [])) <= served, (name, tool)
