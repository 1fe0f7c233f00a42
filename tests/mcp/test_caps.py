"""The output cap of the MCP tools (``mcp.caps``): no answer is longer than
``LABBRAIN_MCP_MAX_CHARS``, a cut answer says so and how to get more, and following that
hint gets the next part.

Unit tests of :func:`labbrain.mcp.caps.fit` first; then the server on the sample; then every
tool the server lists, called with arguments that maximise its answer, on a 100,000-node store
(slow: the store is generated and loaded once for the module).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, ValidationError

from conftest import SAMPLE, settings_for
from generate import write_export
from labbrain.core import LabBrain
from labbrain.mcp.caps import (
    DEFAULT_HINT,
    HINTS,
    LONG_STRING,
    PAGED,
    CappedServer,
    _chars,
    cut_text,
    dumps,
    fit,
    fit_answer,
    hint_for,
)
from labbrain.mcp.server import build_server
from labbrain.settings import Settings

Json = Any
SMALL_CAP = 4_000
DEFAULT_CAP = Settings.model_fields["mcp_max_chars"].default


def words(n: int, seed: int = 0) -> str:
    """``n`` characters of plain words, different for each seed."""
    vocabulary = ["actin", "membrane", "tension", "endocytosis", "force", "coat", "pit", "arp"]
    out: list[str] = []
    i, size = seed, 0
    while size < n:
        out.append(vocabulary[i % len(vocabulary)] + str(i % 97))
        size += len(out[-1]) + 1
        i += 7
    return " ".join(out)[:n]


def marker_hint(answer: Json) -> str | None:
    """The hint of a cut answer's marker (a note or a ``truncated`` object), or None."""
    if isinstance(answer.get("truncated"), dict):
        hint = answer["truncated"]["hint"]
        assert answer["truncated"]["cutTo"] <= answer["truncated"]["of"]
        return str(hint)
    note = answer.get("note")
    if isinstance(note, str) and note.startswith("answer cut to fit"):
        assert answer.get("truncated", True) is True
        return note.split("To get more: ", 1)[1]
    return None


# ------------------------------------------------------------------------ the fitting function
def test_an_answer_under_the_cap_is_unchanged_byte_for_byte() -> None:
    data = {"results": [{"uid": "a", "title": "é " * 50}], "count": 1, "note": None}
    text = dumps(data)
    fitted = fit(data, len(text))
    assert fitted.data is data and fitted.text == text and not fitted.cut
    assert fit(data, len(text), text=text).text is text  # no second serialisation
    assert fit_answer(data, len(text), "search_nodes").data is data


def test_the_longest_list_is_cut_from_the_end_and_a_short_one_kept() -> None:
    data = {
        "results": [{"uid": f"u{i}", "title": words(80, i)} for i in range(100)],
        "tags": ["a", "b", "c"],
        "count": 100,
    }
    fitted = fit(data, 2_000)
    assert len(fitted.text) <= 2_000 and json.loads(fitted.text) == fitted.data
    kept = fitted.data["results"]
    assert 1 <= len(kept) < 100 and kept == data["results"][: len(kept)]
    assert fitted.data["tags"] == ["a", "b", "c"] and fitted.data["count"] == 100
    assert fitted.lists == {"results": (len(kept), 100)} and fitted.kept() == len(kept)
    assert len(data["results"]) == 100  # the input is not modified


def test_two_long_lists_are_cut_to_about_the_same_length() -> None:
    data = {
        "supporting": [{"uid": f"s{i}", "t": words(90, i)} for i in range(60)],
        "opposing": [{"uid": f"o{i}", "t": words(90, i)} for i in range(20)],
    }
    fitted = fit(data, 3_000)
    supporting, opposing = fitted.data["supporting"], fitted.data["opposing"]
    assert len(fitted.text) <= 3_000
    assert abs(len(supporting) - len(opposing)) <= 1
    assert supporting == data["supporting"][: len(supporting)]
    assert opposing == data["opposing"][: len(opposing)]


def test_a_list_of_lists_loses_its_last_items_first() -> None:
    hops = [[{"uid": f"h{h}n{i}", "t": words(60, i)} for i in range(10)] for h in range(3)]
    data = {"nodesByHop": hops, "hopCounts": [10, 10, 10]}
    fitted = fit(data, 1_500)
    cut = fitted.data["nodesByHop"]
    flat = [n for hop in cut for n in hop]
    assert len(cut) == 3 and flat == [n for hop in hops for n in hop][: len(flat)]
    assert cut[0] == hops[0][: len(cut[0])] and cut[2] == []  # the farthest hop goes first
    assert fitted.data["hopCounts"] == [10, 10, 10]
    assert fitted.lists == {"nodesByHop": (len(flat), 30)}


def test_items_holding_lists_are_dropped_before_their_inner_lists() -> None:
    pages = [{"uid": f"p{i}", "reasons": [words(50, j) for j in range(4)]} for i in range(40)]
    fitted = fit({"related": pages}, 2_500)
    related = fitted.data["related"]
    assert related == pages[: len(related)]  # whole pages kept, each with all its reasons
    assert list(fitted.lists) == ["related"]  # the reasons lost with their pages are not named


def test_long_strings_are_shortened_with_a_marker_and_ids_never() -> None:
    content = words(9_000)
    data = {
        "id": "urn:x:" + "9" * 400,
        "url": "https://example.org/" + "p" * 300,
        "content": content,
    }
    fitted = fit(data, 1_200)
    assert len(fitted.text) <= 1_200 and fitted.strings == 1
    assert fitted.data["id"] == data["id"] and fitted.data["url"] == data["url"]
    head, _, tail = fitted.data["content"].partition("…[cut ")
    assert content.startswith(head) and tail == f"{len(content) - len(head)} chars]"
    short = {"title": "t" * LONG_STRING, "items": []}
    assert fit(short, 100).data["title"] == short["title"]  # never shortened: it cannot fit


def test_strings_are_shortened_only_after_lists_are_down_to_one_item() -> None:
    data = {
        "content": words(3_000),
        "links": [{"uid": f"l{i}", "t": words(100, i)} for i in range(30)],
    }
    fitted = fit(data, 3_500)
    assert fitted.data["content"] == data["content"] and len(fitted.data["links"]) < 30
    fitted = fit(data, 1_000)
    assert len(fitted.data["links"]) == 1 and fitted.strings == 1


def test_maps_lose_entries_only_when_the_schema_says_they_are_maps() -> None:
    schema = {
        "type": "object",
        "properties": {
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "fixed": {"$ref": "#/$defs/Fixed"},
        },
        "$defs": {
            "Fixed": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
        },
    }
    data = {"counts": {f"creator {i}": i for i in range(200)}, "fixed": {"a": 1}}
    without = fit(data, 1_000)
    assert not without.fits and without.data["counts"] == data["counts"]
    fitted = fit(data, 1_000, schema)
    assert fitted.fits and len(fitted.text) <= 1_000 and fitted.data["fixed"] == {"a": 1}
    counts = fitted.data["counts"]
    assert list(counts) == list(data["counts"])[: len(counts)]
    jsonschema.validate(fitted.data, schema)


def test_lists_inside_objects_are_found_through_refs_and_keys_the_schema_lacks() -> None:
    """Objects whose schema allows only plain values are not searched for lists; one that
    can hold a list (through a ``$ref``, or in a key its schema does not name) is."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "meta": {"$ref": "#/$defs/Meta"}},
            },
            "Meta": {
                "type": "object",
                "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
            },
            "Plain": {
                "type": "object",
                "properties": {"name": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            },
        },
    }
    tags = [f"tag {i}" for i in range(100)]
    data = {"items": [{"name": "a", "meta": {"tags": tags}}, {"name": "b", "meta": {"tags": tags}}]}
    fitted = fit(data, 600, schema)
    assert fitted.fits and fitted.data["items"] and fitted.strings == 0
    assert all(0 < len(item["meta"]["tags"]) < len(tags) for item in fitted.data["items"])
    plain = {
        **schema,
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Plain"}}},
    }
    extra = {"items": [{"name": "a", "extra": tags}, {"name": None, "extra": tags}]}
    fitted = fit(extra, 600, plain)
    assert fitted.fits and fitted.data["items"] and fitted.strings == 0
    assert all(0 < len(item["extra"]) < len(tags) for item in fitted.data["items"])


def test_a_list_keeps_the_items_its_schema_requires() -> None:
    schema = {
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
    }
    data = {"xs": [words(100, i) for i in range(20)], "ys": [words(100, i) for i in range(20)]}
    fitted = fit(data, 300, schema)
    assert len(fitted.data["xs"]) == 2 and fitted.data["ys"] == []
    jsonschema.validate(fitted.data, schema)


def test_a_text_is_cut_to_the_cap_exactly() -> None:
    text = words(5_000)
    cut = cut_text(text, 1_000)
    assert len(cut) == 1_000 and text.startswith(cut.split("…[cut ")[0])
    assert cut.endswith(f"…[cut {len(text) - len(cut.split('…[cut ')[0])} chars]")
    assert cut_text("short", 1_000) == "short"


def test_an_answer_whose_fixed_fields_exceed_the_cap_does_not_fit() -> None:
    data = {f"field{i}": i for i in range(200)}
    fitted = fit(data, 500)
    assert not fitted.fits
    assert not fit_answer(data, 500, "get_schema").fits


def test_the_marker_sets_the_models_fields_or_adds_a_truncated_object() -> None:
    listing = {"findings": [{"id": f"f{i}", "c": words(300, i)} for i in range(20)], "note": "x"}
    fitted = fit_answer(listing, 2_000, "list_findings")
    assert len(fitted.text) <= 2_000 and json.loads(fitted.text) == fitted.data
    kept = len(fitted.data["findings"])
    assert fitted.data["note"].startswith(
        f"answer cut to fit 2000 characters ({len(dumps(listing))}"
    )
    assert f"kept {kept} of 20 findings" in fitted.data["note"]
    assert marker_hint(fitted.data) == HINTS["list_findings"].replace("{kept}", str(kept))

    flagged = {"edges": [words(200, i) for i in range(30)], "truncated": False, "note": None}
    assert fit_answer(flagged, 2_000, "get_node_neighborhood").data["truncated"] is True

    node = {"uid": "u", "linkedNodes": [{"uid": f"l{i}", "t": words(200, i)} for i in range(30)]}
    fitted = fit_answer(node, 2_000, "get_node")
    marker = fitted.data["truncated"]
    assert marker["cutTo"] == len(fitted.text) <= 2_000 and marker["of"] == len(dumps(node))
    assert marker["kept"] == f"kept {len(fitted.data['linkedNodes'])} of 30 linkedNodes"
    assert marker["hint"] == HINTS["get_node"]


def test_a_sparql_answer_cut_in_its_text_gets_the_text_hint() -> None:
    fitted = fit_answer(
        {"kind": "construct", "turtle": words(9_000), "note": None}, 2_000, "sparql_query"
    )
    assert hint_for("sparql_query", fitted) == HINTS["sparql_query/text"]
    assert marker_hint(fitted.data) == HINTS["sparql_query/text"]


def test_fitting_is_deterministic() -> None:
    data = {"a": [words(300, i) for i in range(50)], "b": {"c": [words(40, i) for i in range(90)]}}
    assert fit(data, 3_000).text == fit(data, 3_000).text


def is_cut_of(cut: Json, original: Json) -> bool:
    """True when ``cut`` is ``original`` with items dropped from the ends of lists and
    strings shortened with an exact marker; every object keeps all its keys."""
    if isinstance(original, dict):
        return (
            isinstance(cut, dict)
            and list(cut) == list(original)
            and all(is_cut_of(cut[k], original[k]) for k in original)
        )
    if isinstance(original, list):
        return (
            isinstance(cut, list)
            and len(cut) <= len(original)
            and all(is_cut_of(c, o) for c, o in zip(cut, original, strict=False))
        )
    if isinstance(original, str) and cut != original:
        head, marker, tail = cut.rpartition("…[cut ")
        return (
            bool(marker)
            and original.startswith(head)
            and tail == f"{len(original) - len(head)} chars]"
        )
    return bool(cut == original)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=400),
    lambda children: (
        st.lists(children, max_size=12) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=80,
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=8), json_values, max_size=6), cap=st.integers(50, 3_000)
)
def test_any_answer_fits_or_says_it_cannot(data: Json, cap: int) -> None:
    fitted = fit(data, cap)
    assert json.loads(fitted.text) == fitted.data
    assert is_cut_of(fitted.data, data)
    if fitted.fits:
        assert len(fitted.text) <= cap
    if len(dumps(data)) <= cap:
        assert fitted.data is data


# --------------------------------------------------------------------- the server on the sample
def call_all(server: CappedServer, calls: list[tuple[str, Json]]) -> list[tuple[bool, Json, str]]:
    """(isError, structured content, text) of each call, in one client session (which
    checks every structured answer against the tool's output schema)."""

    async def main() -> list[tuple[bool, Json, str]]:
        answers = []
        async with Client(server) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                answers.append((bool(result.is_error), result.structured_content, text))
        return answers

    return asyncio.run(main())


def test_the_cap_comes_from_the_environment_and_applies_to_every_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LABBRAIN_MCP_MAX_CHARS", "1500")
    with LabBrain(Settings(store=":memory:")) as brain:
        brain.load(str(SAMPLE))
        server = build_server(brain)
        assert isinstance(server, CappedServer) and server.max_chars == 1500
        (_, search, text), (_, node, node_text) = call_all(
            server,
            [
                ("search_nodes", {"query": "actin", "limit": 100}),
                ("get_node", {"uid": "n2rGK8We9"}),
            ],
        )
    assert len(text) <= 1500 and json.loads(text) == search
    assert search["listed"] == len(search["results"]) >= 1
    assert f"kept {search['listed']} of " in search["note"]
    assert marker_hint(search) == HINTS["search_nodes"]
    assert len(node_text) <= 1500 and json.loads(node_text) == node


class Listing(BaseModel):
    items: list[str]
    note: str | None = None


def test_images_are_exempt_and_a_tool_built_any_way_is_capped() -> None:
    server = CappedServer(name="caps", max_chars=1_000)
    image = ImageContent(type="image", data="A" * 20_000, mime_type="image/png")

    @server.tool()
    def figure() -> Annotated[CallToolResult, Listing]:
        data = Listing(items=["a figure"]).model_dump(mode="json")
        return CallToolResult(
            content=[TextContent(type="text", text=dumps(data)), image], structured_content=data
        )

    @server.tool()
    def listing() -> Listing:  # the SDK builds this answer, not labbrain's answer()
        return Listing(items=[words(100, i) for i in range(50)])

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            return await client.call_tool("figure", {}), await client.call_tool("listing", {})

    pictured, listed = asyncio.run(main())
    assert pictured.content[1].data == image.data  # 20,000 characters of image, not cut
    assert pictured.structured_content == {"items": ["a figure"], "note": None}
    text = listed.content[0].text
    assert len(text) <= 1_000 and json.loads(text) == listed.structured_content
    items = listed.structured_content["items"]
    assert 1 <= len(items) < 50 and marker_hint(listed.structured_content) == DEFAULT_HINT


def test_the_cap_must_leave_room_for_an_answer() -> None:
    with pytest.raises(ValidationError):
        Settings(mcp_max_chars=999)


def test_a_long_error_message_is_cut_too(sample_brain: LabBrain) -> None:
    server = build_server(sample_brain)
    server.max_chars = 1_000
    [(is_error, _, text)] = call_all(server, [("get_node", {"uid": "x" * 5_000})])
    assert is_error and len(text) <= 1_000 and text.endswith(" chars]")


def test_an_answer_under_the_cap_is_what_the_tool_built(sample_brain: LabBrain) -> None:
    """The cap costs an answer under it nothing: the text is the compact JSON of the
    structured content, unmarked, and holds the node as the export has it."""
    [raw] = [
        entry
        for entry in json.loads(SAMPLE.read_text())["@graph"]
        if entry.get("@id") == "pages:n2rGK8We9"
    ]
    [(_, node, text)] = call_all(build_server(sample_brain), [("get_node", {"uid": "n2rGK8We9"})])
    assert text == json.dumps(node, ensure_ascii=False, separators=(",", ":"))
    assert "truncated" not in node and "…[cut" not in text
    assert node["title"] == raw["title"].removeprefix("[[CLM]] - ")
    assert (node["creator"], node["nodeType"]) == (raw["creator"], "Claim")
    assert node["content"].strip() == raw["content"].strip()


# ------------------------------------------------------------------- every tool at 100k nodes
@dataclass
class Lab:
    """A 100,000-node store with agent data written through the tools, and what the
    recipes need: ids of a hub node, memories, findings, propositions, tasks."""

    brain: LabBrain
    load_dir: Path
    hub: str
    other: str
    project: str
    memories: list[str] = field(default_factory=list)
    edges: list[str] = field(default_factory=list)
    other_memory: str = ""
    victims: dict[str, list[str]] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    propositions: list[str] = field(default_factory=list)
    tasks: dict[str, str] = field(default_factory=dict)


Recipe = Callable[[Lab, int], Json]

#: Arguments that maximise each tool's answer (pass 0 and 1 write different things).
RECIPES: dict[str, Recipe] = {
    "search_nodes": lambda lab, p: {
        "query": "actin membrane tension force",
        "limit": 100,
        "mode": "keyword",
    },
    "get_node": lambda lab, p: {"uid": lab.hub},
    "get_linked_nodes": lambda lab, p: {"uid": lab.hub},
    "get_schema": lambda lab, p: {},
    "get_researcher_contributions": lambda lab, p: {"creator": "Maria Akamatsu", "detail": "full"},
    "get_node_images": lambda lab, p: {"uid": lab.hub},
    "get_relationships": lambda lab, p: {"limit": 500, "detail": "full"},
    "get_relation_types": lambda lab, p: {},
    "get_node_neighborhood": lambda lab, p: {
        "uid": lab.hub,
        "depth": 4,
        "limit": 1000,
        "detail": "full",
    },
    "find_path": lambda lab, p: {"fromUid": lab.hub, "toUid": lab.other, "maxHops": 6},
    "get_claim_status": lambda lab, p: {"uid": lab.hub, "detail": "full"},
    "find_gaps": lambda lab, p: {},
    "what_changed": lambda lab, p: {"since": "36500d", "limit": 200},
    "sparql_query": lambda lab, p: {
        "query": "SELECT ?s ?title ?content WHERE { ?s dct:title ?title ; sioc:content ?content }",
        "limit": 1000,
    },
    "load_dataset": lambda lab, p: {"path": "sample.jsonld", "waitSeconds": 60},
    "embed_nodes": lambda lab, p: {"waitSeconds": 30},  # fails: no embedding model (below)
    "get_task": lambda lab, p: {"taskId": lab.tasks["load"]},
    "list_tasks": lambda lab, p: {"limit": 200},
    "cancel_task": lambda lab, p: {"taskId": lab.tasks.get("embed", lab.tasks["load"])},
    "resume_task": lambda lab, p: {"taskId": lab.tasks["load"]},
    # the most linked Result of the lab: the largest lineage a bundle holds
    "bundle_evidence": lambda lab, p: {
        "uid": max(
            lab.brain.index.nodes(node_types=["Result"], limit=500)[0],
            key=lambda n: len(lab.brain.index.links_of(n.graph, [n.iri])[n.iri]),
        ).uid,
        "name": f"caps-pass-{p}",
        "replace": True,
    },
    "create_project": lambda lab, p: {
        "name": f"Caps pass {p}",
        "description": words(4_900, p),
        "activate": False,
    },
    "set_active_project": lambda lab, p: {"project": lab.project},
    "list_projects": lambda lab, p: {},
    "get_project_context": lambda lab, p: {"project": lab.project},
    # the project create_project made in this pass (listed before these two)
    "update_project": lambda lab, p: {
        "project": f"caps-pass-{p}",
        "description": words(4_900, p + 1),
    },
    "delete_project": lambda lab, p: {"project": f"caps-pass-{p}"},
    "record_visit": lambda lab, p: {"uid": lab.hub},
    "log_finding": lambda lab, p: {
        "content": words(9_900, p),
        "sourceUid": lab.hub,
        "tags": [f"tag{i}-{p}" for i in range(20)],
    },
    "list_findings": lambda lab, p: {"limit": 100},
    "delete_finding": lambda lab, p: {"findingId": lab.findings[p]},
    "suggest_next_steps": lambda lab, p: {},
    "get_related_pages": lambda lab, p: {"uid": lab.hub, "limit": 100},
    "create_domain": lambda lab, p: {
        "id": f"caps-pass-{p}",
        "name": f"Caps pass {p}",
        "description": words(1_900, p),
        "select": False,
    },
    "list_domains": lambda lab, p: {},
    "select_domain": lambda lab, p: {"id": "caps-main"},
    # the domain create_domain made in this pass (listed before these two)
    "update_domain": lambda lab, p: {"id": f"caps-pass-{p}", "description": words(1_900, p + 1)},
    "delete_domain": lambda lab, p: {"id": f"caps-pass-{p}"},
    "store_memory": lambda lab, p: {
        "content": words(19_900, p),
        "path": "/actin/branching",
        "tags": [f"t{i}" for i in range(30)],
        "summary": words(400, p),
    },
    "get_memory": lambda lab, p: {"id": lab.memories[0]},
    "update_memory": lambda lab, p: {"id": lab.memories[1], "content": words(19_900, p + 5)},
    "delete_memory": lambda lab, p: {"id": lab.victims["delete"][p]},
    "search_memories": lambda lab, p: {"query": "actin membrane", "limit": 100},
    "connect_memories": lambda lab, p: {
        "source": lab.memories[2 + p],
        "target": lab.memories[10 + p],
        "type": "refines",
    },
    "update_edge_strength": lambda lab, p: {"edge": lab.edges[0], "strength": 0.9 - p / 10},
    "remove_edge": lambda lab, p: {"edge": lab.edges[1 + p]},
    "traverse_memories": lambda lab, p: {"start": lab.memories[0], "maxDepth": 10},
    "add_cross_reference": lambda lab, p: {
        "source": lab.memories[4 + p],
        "target": lab.other_memory,
        "description": words(1_900, p),
    },
    "transfer_memory": lambda lab, p: {"id": lab.victims["transfer"][p], "toDomain": "caps-other"},
    "add_proposition": lambda lab, p: {"content": words(1_990, 50 + p), "confidence": 0.5},
    "get_proposition": lambda lab, p: {"id": lab.propositions[0]},
    "list_propositions": lambda lab, p: {"limit": 100},
    "connect_propositions": lambda lab, p: {
        "a": lab.propositions[3 + p],
        "b": lab.propositions[20 + p],
        "relation": "extends",
        "reasoning": words(3_900, p),
    },
    "find_lineage": lambda lab, p: {"fromConcept": lab.propositions[5], "toConcept": lab.hub},
    "find_contradictions": lambda lab, p: {"claim": lab.propositions[0]},
}

#: Tools whose answer at the small cap must have been cut (their recipe makes it long).
MUST_BE_CUT = {
    "search_nodes",
    "get_node",
    "get_linked_nodes",
    "get_researcher_contributions",
    "get_relationships",
    "get_node_neighborhood",
    "get_claim_status",
    "find_gaps",
    "what_changed",
    "sparql_query",
    "list_projects",
    "get_project_context",
    "log_finding",
    "list_findings",
    "list_domains",
    "store_memory",
    "get_memory",
    "update_memory",
    "search_memories",
    "traverse_memories",
    "get_proposition",
    "list_propositions",
}


class Session:
    """Calls to one server, each through an in-process client."""

    def __init__(self, server: CappedServer) -> None:
        self.server = server

    def ok(self, name: str, arguments: Json) -> Json:
        """The structured answer of a call that must succeed (its text is the same JSON)."""
        [(is_error, answer, text)] = call_all(self.server, [(name, arguments)])
        assert not is_error, text
        assert json.loads(text) == answer
        return answer


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The 100,000-node export loaded, then agent data written through the tools."""
    root = tmp_path_factory.mktemp("caps")
    export = root / "dg-100000.jsonld"
    write_export(export, 100_000, seed=0)
    load_dir = root / "allowed"
    load_dir.mkdir()
    (load_dir / "sample.jsonld").write_bytes(SAMPLE.read_bytes())
    settings = settings_for(
        root / "store",
        mcp_max_chars=SMALL_CAP,
        load_dirs=[load_dir],
        embedding_model=str(root / "no-model"),  # embed_nodes fails at once, embedding nothing
    )
    with LabBrain(settings) as brain:
        brain.load(str(export))
        export.unlink()
        rows = brain.query(
            "SELECT ?n (COUNT(?e) AS ?c) WHERE { GRAPH ?g { ?e dg:supports ?n } } GROUP BY ?n "
            "ORDER BY DESC(?c) ?n LIMIT 2"
        )
        hub, other = (str(row["n"].value).rsplit("/", 1)[1] for row in rows)  # type: ignore[union-attr]
        lab = Lab(brain, load_dir, hub, other, project="caps-main")
        _write_agent_data(lab, Session(build_server(brain)))
        yield lab


def _write_agent_data(lab: Lab, tools: Session) -> None:
    """Projects, findings, visits, domains, memories with many edges, propositions with many
    relations: enough for every listing tool to exceed the default cap."""

    async def main() -> None:
        async with Client(tools.server) as client:

            async def ok(tool: str, /, **arguments: Any) -> Json:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content
                return result.structured_content

            for i in range(14):
                await ok(
                    "create_project",
                    name=f"Lab project {i}",
                    description=words(4_900, i),
                    activate=False,
                )
            await ok("create_project", name="Caps main", description=words(3_000), activate=True)
            for i in range(40):
                found = await ok(
                    "log_finding", content=words(1_500, i), sourceUid=lab.hub, tags=[f"tag{i % 7}"]
                )
                lab.findings.append(found["finding"]["id"])
            for uid in (lab.hub, lab.other):
                await ok("record_visit", uid=uid)
            await ok("create_domain", id="caps-other", name="Other", description=words(1_900, 1))
            other = await ok("store_memory", content=words(2_000, 3), tags=["actin"])
            lab.other_memory = other["memory"]["id"]
            for i in range(20):
                await ok(
                    "create_domain",
                    id=f"caps-extra-{i}",
                    name=f"Extra {i}",
                    description=words(1_900, i),
                    select=False,
                )
            await ok("create_domain", id="caps-main", name="Main", description=words(1_000, 2))
            for i in range(44):
                stored = await ok(
                    "store_memory",
                    content=words(1_500, i),
                    path=f"/actin/{i % 5}",
                    tags=["actin", f"t{i % 3}"],
                    summary=words(300, i),
                )
                lab.memories.append(stored["memory"]["id"])
            hub, rest = lab.memories[0], lab.memories[1:40]
            for target in rest:
                edge = await ok("connect_memories", source=hub, target=target, type="relates_to")
                lab.edges.append(edge["edge"]["id"])
            for victim, kind in zip(
                lab.memories[40:], ["delete", "delete", "transfer", "transfer"], strict=True
            ):
                lab.victims.setdefault(kind, []).append(victim)
                for target in rest[:15]:
                    await ok("connect_memories", source=victim, target=target, type="supports")
            for i in range(40):
                added = await ok(
                    "add_proposition", content=words(1_900, i), confidence=0.5 + i / 100
                )
                lab.propositions.append(added["proposition"]["id"])
            first = lab.propositions[0]
            for i, other_id in enumerate(lab.propositions[1:31]):
                relation = "contradicts" if i % 3 == 0 else "supports"
                await ok(
                    "connect_propositions",
                    a=other_id,
                    b=first,
                    relation=relation,
                    reasoning=words(500, i),
                )
            await ok("connect_propositions", a=first, b=lab.hub, relation="supports")

    asyncio.run(main())


def _run_every_tool(lab: Lab, cap: int, p: int) -> dict[str, tuple[bool, Json, str]]:
    """Each listed tool called once with its recipe through one client session on a server
    capped at ``cap``; also checks each structured answer against the output schema."""
    server = build_server(lab.brain)
    server.max_chars = cap
    answers: dict[str, tuple[bool, Json, str]] = {}

    async def main() -> list[Any]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            names = [t.name for t in tools]
            missing = sorted(set(names) - set(RECIPES))
            assert not missing, f"no argument recipe for {missing}: add one to RECIPES"
            for tool in tools:
                result = await client.call_tool(tool.name, RECIPES[tool.name](lab, p))
                text = "".join(getattr(c, "text", "") for c in result.content)
                answers[tool.name] = (bool(result.is_error), result.structured_content, text)
                if not result.is_error:
                    jsonschema.validate(result.structured_content, tool.output_schema or {})
                if tool.name == "load_dataset" and not result.is_error:
                    lab.tasks["load"] = result.structured_content["taskId"]
                if tool.name == "embed_nodes" and not result.is_error:
                    lab.tasks["embed"] = result.structured_content["taskId"]
            return list(tools)

    tools = asyncio.run(main())
    inputs = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
    for name, (is_error, answer, text) in answers.items():
        assert len(text) <= cap, (name, len(text))
        if is_error:
            continue
        assert json.loads(text) == answer, name
        hint = marker_hint(answer)
        if hint is not None:  # the hint names an argument of the tool or another tool
            named = {w.strip("(),.;:='") for w in hint.replace("(", " ").split()}
            assert named & (inputs[name] | set(inputs)), (name, hint)
    return answers


@pytest.mark.slow
def test_every_tool_answers_within_the_small_cap(lab: Lab) -> None:
    answers = _run_every_tool(lab, SMALL_CAP, 0)
    cut = {
        name
        for name, (is_error, answer, _) in answers.items()
        if not is_error and marker_hint(answer)
    }
    assert cut >= MUST_BE_CUT, sorted(MUST_BE_CUT - cut)
    errors = {name for name, (is_error, _, _) in answers.items() if is_error}
    assert errors <= {"embed_nodes", "cancel_task", "resume_task"}, errors


@pytest.mark.slow
def test_every_tool_answers_within_the_default_cap(lab: Lab) -> None:
    answers = _run_every_tool(lab, DEFAULT_CAP, 1)
    cut = {
        name
        for name, (is_error, answer, _) in answers.items()
        if not is_error and marker_hint(answer)
    }
    # the default cap still cuts what has no upper bound of its own
    assert {
        "get_node_neighborhood",
        "get_relationships",
        "get_claim_status",
        "list_projects",
        "list_propositions",
    } <= cut
    errors = {name for name, (is_error, _, _) in answers.items() if is_error}
    assert errors <= {"embed_nodes", "cancel_task", "resume_task"}, errors


def test_every_tool_has_a_hint_and_every_hint_a_tool() -> None:
    with LabBrain(Settings(store=":memory:")) as brain:
        server = build_server(brain)
        names = {tool.name for tool in asyncio.run(server.list_tools())}
    assert set(RECIPES) == names
    assert {name.split("/")[0] for name in HINTS} == names
    assert set(PAGED) <= names


# --------------------------------------------------------------------- following the hints
@pytest.mark.slow
def test_following_next_offset_reads_every_finding_once(lab: Lab) -> None:
    tools = Session(build_server(lab.brain))
    everything = tools.ok("list_findings", {"limit": 100})
    assert everything["total"] >= 40 and "answer cut" in everything["note"]
    reference = build_server(lab.brain)
    reference.max_chars = 10**8
    full = Session(reference).ok("list_findings", {"limit": 100})["findings"]
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = tools.ok("list_findings", {"limit": 100, "offset": offset})
        seen += [f["id"] for f in page["findings"]]
        assert page["nextOffset"] in (None, offset + len(page["findings"]))
        offset = page["nextOffset"]
    assert seen == [f["id"] for f in full]


@pytest.mark.slow
def test_following_next_cursor_reads_every_proposition_once(lab: Lab) -> None:
    tools = Session(build_server(lab.brain))
    reference = build_server(lab.brain)
    reference.max_chars = 10**8
    full = Session(reference).ok("list_propositions", {"limit": 100})["propositions"]
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = tools.ok(
            "list_propositions", {"limit": 100, **({"cursor": cursor} if cursor else {})}
        )
        pages += 1
        seen += [p["id"] for p in page["propositions"]]
        if page["nextCursor"] is None:
            break
        assert "pass nextCursor as cursor" in (marker_hint(page) or page["note"])
        cursor = page["nextCursor"]
    assert pages > 10 and seen == [p["id"] for p in full]


@pytest.mark.slow
def test_following_the_sparql_hint_reads_the_next_rows(lab: Lab) -> None:
    url = f"https://roamresearch.com/#/app/bench-100000/page/{lab.hub}"
    query = f"SELECT ?s ?title WHERE {{ ?s dg:supports <{url}> ; dct:title ?title }} ORDER BY ?s"
    tools = Session(build_server(lab.brain))
    first = tools.ok("sparql_query", {"query": query, "limit": 1000})
    kept = len(first["rows"])
    hint = marker_hint(first)
    assert hint is not None and f"OFFSET {kept}" in hint and 0 < kept < 100
    following = tools.ok("sparql_query", {"query": f"{query} OFFSET {kept}", "limit": 1000})
    reference = build_server(lab.brain)
    reference.max_chars = 10**8
    rows = Session(reference).ok("sparql_query", {"query": query, "limit": 1000})["rows"]
    assert len(rows) > 300  # the hub's supporters
    assert first["rows"] == rows[:kept]
    assert following["rows"] == rows[kept : kept + len(following["rows"])]
    assert len(following["rows"]) > 0


@given(st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=3)))
def test_an_items_size_is_the_length_of_its_json(value: Any) -> None:
    """The sizes the fitting counts with are those of the text it writes (strings with and
    without characters JSON escapes, and other values)."""
    assert _chars(value) == len(dumps(value))
