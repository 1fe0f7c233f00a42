"""What a tool call costs beside the tool's own work, kept without losing a guarantee: the
listing's output schemas follow no reference where none is needed, the SDK does not validate
an answer dumped from its model a moment before, and an answer of the wrong model fails."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import BaseModel

from conftest import SAMPLE
from labbrain.core import LabBrain
from labbrain.mcp.caps import CappedServer
from labbrain.mcp.common import ToolContext, ToolSpec, sdk_tool
from labbrain.mcp.listing import inline_single_use, lean_output
from labbrain.mcp.server import build_server
from labbrain.mcp.tools import TOOLSETS
from labbrain.settings import Settings

Json = Any


# ------------------------------------------------------------------ definitions used once
def _refs(node: Json) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


REF = {"$ref": "#/$defs/Ref"}
SCHEMA: Json = {
    "type": "object",
    "properties": {
        "once": {"$ref": "#/$defs/Once"},
        "twice_a": {"$ref": "#/$defs/Twice"},
        "twice_b": {"type": "array", "items": {"$ref": "#/$defs/Twice"}},
        "tree": {"$ref": "#/$defs/Tree"},
        "annotated": {"$ref": "#/$defs/Annotated", "description": "kept as a reference"},
    },
    "required": ["once"],
    "$defs": {
        "Once": {
            "type": "object",
            "properties": {"inner": {"$ref": "#/$defs/Inner"}},
            "required": ["inner"],
        },
        "Inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "Twice": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
        "Tree": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        },
        "Annotated": {"type": "string"},
        "Orphan": {"type": "array", "items": {"$ref": "#/$defs/Orphan"}},  # used by itself only
    },
}

GOOD: list[Json] = [
    {"once": {"inner": {"n": 1}}},
    {"once": {"inner": {"n": 1}}, "twice_a": {"s": "x"}, "twice_b": [{"s": "y"}]},
    {"once": {"inner": {"n": 2}}, "tree": {"children": [{"children": [{}]}]}, "annotated": "a"},
]
BAD: list[Json] = [
    {},
    {"once": {"inner": {}}},
    {"once": {"inner": {"n": "one"}}},
    {"once": {"inner": {"n": 1}}, "twice_a": {}},
    {"once": {"inner": {"n": 1}}, "twice_b": [{"s": 1}]},
    {"once": {"inner": {"n": 1}}, "tree": {"children": [{"children": 3}]}},
    {"once": {"inner": {"n": 1}}, "annotated": 5},
]


def _valid(schema: Json, document: Json) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(document))


def test_definitions_used_once_are_written_in_place_and_the_rest_kept() -> None:
    lean = inline_single_use(json.loads(json.dumps(SCHEMA)))
    assert lean["properties"]["once"]["properties"]["inner"]["required"] == ["n"]
    assert set(lean["$defs"]) == {"Twice", "Tree", "Annotated", "Orphan"}
    assert all(ref.removeprefix("#/$defs/") in lean["$defs"] for ref in _refs(lean))
    for document in GOOD:
        assert _valid(lean, document) and _valid(SCHEMA, document)
    for document in BAD:
        assert not _valid(lean, document) and not _valid(SCHEMA, document)


def test_a_schema_left_without_definitions_drops_them() -> None:
    schema = {"type": "array", "items": {"$ref": "#/$defs/A"}, "$defs": {"A": {"type": "string"}}}
    assert inline_single_use(schema) == {"type": "array", "items": {"type": "string"}}


def test_every_listed_output_schema_resolves_and_is_no_longer() -> None:
    with LabBrain(Settings(store=":memory:")) as brain:
        server = build_server(brain, tuple(TOOLSETS))
        full = {t.name: t.output_schema for t in asyncio.run(CappedServer.list_tools(server))}
        listed = asyncio.run(server.list_tools())
    inlined = 0
    for tool in listed:
        schema = tool.output_schema
        if schema is None:
            continue
        jsonschema.Draft202012Validator.check_schema(schema)
        assert all(ref.removeprefix("#/$defs/") in schema.get("$defs", {}) for ref in _refs(schema))
        original = full[tool.name]
        assert original is not None
        inlined += len(original.get("$defs", {})) - len(schema.get("$defs", {}))
        assert lean_output(original) == schema
    assert inlined > 20  # most answer models are used once (a node, a link, a page)


# ------------------------------------------------------------------ validating answers once
def _call(server: CappedServer, name: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:  # it validates answers against the schemas
            return await client.call_tool(name, arguments)

    return asyncio.run(main())


def test_the_sdk_does_not_validate_an_answer_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer was dumped from its model: no second pass through the model's validator."""

    def refused(self: FuncMetadata, output_model: Any) -> Any:
        raise AssertionError("the structured answer was validated again")

    with LabBrain(Settings(store=":memory:")) as brain:
        brain.load(str(SAMPLE))
        server = build_server(brain)
        monkeypatch.setattr(FuncMetadata, "_output_adapter", refused)
        node = _call(server, "get_node", {"uid": "n2rGK8We9"})
    assert not node.is_error, node.content
    assert node.structured_content["uid"] == "n2rGK8We9"


class Declared(BaseModel):
    name: str


class Other(BaseModel):
    label: str


def wrong_model(context: ToolContext) -> Declared:
    """Answers a model other than the one it declares."""
    del context
    return Other(label="x")  # type: ignore[return-value]


def right_model(context: ToolContext) -> Declared:
    """Answers the model it declares."""
    del context
    return Declared(name="x")


def test_an_answer_of_another_model_than_declared_is_an_error() -> None:
    with LabBrain(Settings(store=":memory:")) as brain:
        context = ToolContext.open(brain)
        specs = [ToolSpec(wrong_model, "Wrong"), ToolSpec(right_model, "Right")]
        tools = [sdk_tool(spec, context) for spec in specs]
        server = CappedServer(name="t", max_chars=10_000, tools=tools)
        wrong = _call(server, "wrong_model", {})
        right = _call(server, "right_model", {})
    assert wrong.is_error and "wrong_model" in wrong.content[0].text  # not Other's content
    assert not right.is_error and right.structured_content == {"name": "x"}
