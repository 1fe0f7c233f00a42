"""The tool listing as a model reads it: the JSON schemas of the tools, without their bulk.

Every model reads the whole ``tools/list`` answer before its first question, so its size is
paid on every conversation. The SDK derives the schemas from the tools' signatures and answer
models with everything pydantic writes; :func:`lean_input` and :func:`lean_output` keep what a
model and a validating client need:

- no ``title`` keys (pydantic titles each property with its own name, re-spelt);
- an optional value is ``{"type": "string"}`` in an input schema (leaving the argument out
  is how to say none) and ``{"type": ["string", "null"]}`` in an output schema (null stays
  valid), instead of an ``anyOf`` with a null branch;
- output schemas keep their structure (properties, required, items, ``$defs`` shared within
  the tool, enums, bounds and the ``counts`` key :mod:`labbrain.mcp.caps` reads) but not the
  prose of each field (what an answer means is in the tool's description) nor defaults;
- a definition used once in an output schema is written where it is used (no ``$ref``):
  the listing is no longer, and a client validating every answer against the schema
  follows no reference (with the ``jsonschema`` package, resolving ``$ref`` costs about a
  third of the validation of an answer holding many linked nodes).

Both return a new schema; whatever validated against the SDK's schema validates against the
lean one and the other way round (an input schema also accepts a value left out as before).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Schema = dict[str, Any]

#: Keys whose value maps names to schemas (each value is a schema, not a keyword).
_NAMED = ("properties", "$defs", "patternProperties")


def lean_input(schema: Mapping[str, Any]) -> Schema:
    """An input schema without titles, optional arguments typed without their null branch."""
    lean: Schema = _lean(schema, output=False)
    return lean


def lean_output(schema: Mapping[str, Any]) -> Schema:
    """An output schema without titles or field descriptions, nullable fields as type lists,
    its definitions used once written in place (:func:`inline_single_use`)."""
    lean: Schema = inline_single_use(_lean(schema, output=True))
    if isinstance(schema.get("description"), str):
        lean.pop("description", None)  # the tool's description says what the answer is
    return lean


def inline_single_use(schema: Schema) -> Schema:
    """``schema`` with each ``$defs`` entry referenced exactly once (by a ``{"$ref":
    "#/$defs/Name"}`` with no other key) written in place of that reference and removed from
    ``$defs`` (dropped when empty). Definitions used more than once, or by themselves, stay.

    Validates exactly the same documents; modifies ``schema`` (a fresh lean copy)."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    while True:
        sites: dict[str, list[tuple[Any, Any]]] = {name: [] for name in defs}
        for owner, key, node in _refs(schema):
            name = node["$ref"].removeprefix(_DEFS)
            if name in sites:
                sites[name].append((owner, key) if len(node) == 1 else (None, None))
        once = [
            name
            for name, found in sites.items()
            if len(found) == 1 and found[0][0] is not None and not _uses(defs[name], name)
        ]
        if not once:
            break
        name = once[0]
        owner, key = sites[name][0]
        owner[key] = defs.pop(name)
    if not defs:
        del schema["$defs"]
    return schema


_DEFS = "#/$defs/"


def _refs(node: Any, owner: Any = None, key: Any = None) -> Iterator[tuple[Any, Any, Schema]]:
    """(container, key or index, node) of every ``$ref`` node to a ``$defs`` entry."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS):
            yield owner, key, node
        for k, value in node.items():
            yield from _refs(value, node, k)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _refs(item, node, i)


def _uses(node: Any, name: str) -> bool:
    return any(ref["$ref"] == _DEFS + name for _, _, ref in _refs(node))


def _lean(node: Any, *, output: bool) -> Any:
    if isinstance(node, list):
        return [_lean(item, output=output) for item in node]
    if not isinstance(node, Mapping):
        return node
    lean: Schema = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if output and key in ("description", "default"):
            continue  # prose, and defaults that say nothing about an answer's shape
        if key in _NAMED and isinstance(value, Mapping):
            lean[key] = {name: _lean(item, output=output) for name, item in value.items()}
        else:
            lean[key] = _lean(value, output=output)
    return _without_null_branch(lean, output=output)


def _without_null_branch(node: Schema, *, output: bool) -> Schema:
    """``anyOf: [{type: T}, {type: null}]`` as ``type: T`` (input; a null default dropped)
    or ``type: [T, null]`` (output). Other ``anyOf`` are kept."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    [other] = [branch for branch in branches if branch != {"type": "null"}]
    if not isinstance(other, Mapping) or not isinstance(other.get("type"), str):
        return node
    if output and set(other) != {"type"}:
        return node  # e.g. a nullable array with items: keep the anyOf
    lean = {key: value for key, value in node.items() if key != "anyOf"}
    if output:
        lean["type"] = [other["type"], "null"]
        return lean
    if lean.get("default", 0) is None:
        del lean["default"]
    return {**other, **lean}
