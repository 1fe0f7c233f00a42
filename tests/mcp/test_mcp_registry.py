"""The MCP tools as module-level functions, and their registration from each group's data.

A tool function runs on a store without any server; registration binds it to a context and
maps library errors to the message the model reads (once, in ``labbrain.mcp.common``); every
tool the server lists comes from exactly one group module, in the groups' order.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from conftest import SAMPLE_TYPES
from labbrain.core import LabBrain
from labbrain.errors import NodeNotFound
from labbrain.mcp.common import ToolContext, ToolSpec, bind
from labbrain.mcp.server import build_server
from labbrain.mcp.tools import TOOLSETS, discourse, projects, sparql

#: A claim of the sample export (data/akamatsu-sample.jsonld).
CLAIM = "n2rGK8We9"
CLAIM_TITLE = (
    "Hypo-osmotic shock raises plasma membrane tension enough to alter endocytic dynamics "
    "within minutes."
)


@pytest.fixture
def context(sample_brain: LabBrain) -> ToolContext:
    return ToolContext.open(sample_brain)


def test_discourse_tools_are_plain_functions_over_the_sample(context: ToolContext) -> None:
    node = discourse.get_node(context, CLAIM)
    assert (node.uid, node.nodeType, node.title) == (CLAIM, "Claim", CLAIM_TITLE)
    assert (node.creator, node.created) == ("Aidan Stern", "2026-08-19T13:36:34.765Z")
    assert node.dataset == "akamatsulab-sample"

    found = discourse.search_nodes(context, "hypo-osmotic shock membrane tension", limit=3)
    assert found.results[0].uid == CLAIM

    schema = discourse.get_schema(context)
    assert {t.label: t.count for t in schema.nodeTypes} == SAMPLE_TYPES

    rows = sparql.sparql_query(
        context,
        "SELECT ?title ?creator WHERE { ?node dct:title ?title ; dct:creator ?creator "
        f'FILTER(STRENDS(STR(?node), "/{CLAIM}")) }}',
    )
    assert rows.rows == [{"title": f"[[CLM]] - {CLAIM_TITLE}", "creator": "Aidan Stern"}]


def test_tools_of_one_context_share_its_services(context: ToolContext) -> None:
    """get_node (discourse) records its visit in the project the notebook tools made active."""
    created = projects.create_project(context, "Membrane tension", "osmotic shock and pits")
    assert created.project.active
    discourse.get_node(context, CLAIM)
    seen = projects.get_project_context(context)
    assert [v.node.uid for v in seen.recentVisits] == [CLAIM]
    assert seen.recentVisits[0].node.title == CLAIM_TITLE


def test_a_library_error_reaches_the_model_with_its_own_text(context: ToolContext) -> None:
    with pytest.raises(NodeNotFound) as raised:
        discourse.get_node(context, "noSuchUid")
    handler = bind(ToolSpec(discourse.get_node, "Get node"), context)
    with pytest.raises(ToolError) as mapped:
        asyncio.run(handler(uid="noSuchUid"))
    assert str(mapped.value) == str(raised.value) != ""


def test_a_bound_tool_answers_with_its_model_as_structured_content(
    context: ToolContext,
) -> None:
    handler = bind(ToolSpec(discourse.get_node, "Get node"), context)
    assert handler.__name__ == "get_node"
    assert "context" not in handler.__annotations__
    result = asyncio.run(handler(uid=CLAIM))
    assert result.structured_content["title"] == CLAIM_TITLE
    assert result.content[0].text.startswith('{"uid":"n2rGK8We9"')


def test_every_registered_tool_belongs_to_exactly_one_group(sample_brain: LabBrain) -> None:
    """Each module's tools form one toolset; ``notes`` alone is a part of another
    (``notebook``), the small way to keep notes."""
    listed = [tool.name for tool in asyncio.run(build_server(sample_brain).list_tools())]
    groups = {name: specs for name, specs in TOOLSETS.items() if name != "notes"}
    owners: dict[str, list[str]] = defaultdict(list)
    modules: dict[str, set[str]] = defaultdict(set)
    for group, specs in groups.items():
        for spec in specs:
            owners[spec.name].append(group)
            modules[group].add(spec.fn.__module__)
    assert {name: groups for name, groups in owners.items() if len(groups) != 1} == {}
    assert sorted(listed) == sorted(owners)
    # the server lists them group by group, in the order of the groups' data
    assert listed == [spec.name for specs in groups.values() for spec in specs]
    # one module per group, each under labbrain.mcp.tools, no module shared by two groups
    assert all(len(names) == 1 for names in modules.values())
    homes = [next(iter(names)) for names in modules.values()]
    assert len(set(homes)) == len(homes)
    assert all(home.startswith("labbrain.mcp.tools.") for home in homes)
    assert modules["notebook"] == {"labbrain.mcp.tools.projects"}
    assert [spec.name for spec in TOOLSETS["notes"]] == ["log_finding", "list_findings"]
    assert all(spec in TOOLSETS["notebook"] for spec in TOOLSETS["notes"])
