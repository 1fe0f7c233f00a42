"""The output cap of the MCP tools: no answer is longer than ``LABBRAIN_MCP_MAX_CHARS``.

:func:`fit` is the one function that fits an answer under the cap. It works on the answer's
JSON (the structured content), so the text and the structured content stay the same JSON and
the structured content stays valid for the tool's output schema:

1. lists are cut first, the longest first (by their JSON length; water-filling: every list
   longer than a common level is cut down to it), dropping items from the end and keeping
   the order; a list of lists counts as one list of its inner items (the nodes of a
   neighbourhood by hop lose the farthest first); every list keeps at least one item;
2. then long strings (texts of more than :data:`LONG_STRING` characters, never ids or
   URLs) are shortened, the longest first, down to :data:`KEEP_STRING` characters, each
   ending with an explicit ``…[cut N chars]``;
3. then lists may lose their last item, then maps (objects the output schema declares with
   free keys, such as counts by creator) their entries, then long strings all but the
   marker;
4. an answer that still does not fit (a cap smaller than the answer's fixed fields) is not
   given: the server answers with an error saying how to ask for less.

The answer then carries a marker. A model with ``truncated`` / ``note`` fields gets them set
(``truncated: true``, the note saying what was kept and how to get more); any other answer
gets a top-level ``truncated`` object ``{"cutTo", "of", "kept", "hint"}`` (sizes in
characters). The hint names, per tool (:data:`HINTS`), the argument that gets the rest: an
offset or cursor, a lower limit or depth, a filter, or ``sparql_query`` with LIMIT / OFFSET.

:class:`CappedServer` applies it to every tool answer, whatever built it. Answers under the
cap pass untouched (their text length is all that is looked at); paged tools
(:data:`PAGED`) whose list was cut are asked again for just the items that fit, so that
their ``nextOffset`` / ``nextCursor`` continue right after the last item shown. Images
(``ImageContent``) are exempt: the cap counts characters of text, an image is bounded by
``LABBRAIN_IMAGE_MAX_BYTES`` and only attached when image fetching is enabled.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent

from labbrain.rdf.namespaces import DOMAIN_PREFIX, PROJECT_PREFIX, TASKS_GRAPH

Json = Any
Schema = Mapping[str, Any]

#: Strings at most this long are never shortened (titles, ids, URLs, dates stay whole).
LONG_STRING = 160
#: Characters of a long string kept in step 2 (step 3 may keep fewer).
KEEP_STRING = 120
#: Keys whose string values name something and are never shortened, whatever their length.
IDENTITY_KEYS = frozenset(
    {"id", "uid", "url", "iri", "graph", "dataset", "taskId", "nextCursor", "source", "target"}
)

DEFAULT_HINT = (
    "narrow the request (a filter, a lower limit or depth) or read the rest with "
    "sparql_query using LIMIT and OFFSET"
)

#: How to get more, per tool. ``{kept}`` is the number of items kept in the outermost list
#: cut; ``<tool>/text`` is the hint for an answer of that tool where no list was cut.
HINTS: dict[str, str] = {
    # discourse graph
    "search_nodes": "narrow with nodeType, creator or dataset (or sort with orderBy) to reach "
    "the results cut; get_node(uid) reads one result in full",
    "get_node": "get_linked_nodes(uid, direction) lists the links (get_relationships filters "
    "them by type); sparql_query for the node's sioc:content reads the whole text",
    "get_linked_nodes": "pass direction='outgoing' or 'incoming', or use get_relationships "
    "with sourceUid / destinationUid and relationshipType",
    "get_schema": "get_relation_types lists the relation types alone; sparql_query with "
    "LIMIT and OFFSET pages the node types",
    "get_researcher_contributions": "pass creator and nodeType to narrow; sparql_query with "
    "LIMIT and OFFSET pages a creator's nodes",
    "get_node_images": "sparql_query with LIMIT and OFFSET pages the node's image URLs",
    "get_relationships": "filter by sourceUid, destinationUid or relationshipType to reach the "
    "relations cut",
    "get_relation_types": "sparql_query with LIMIT and OFFSET over owl:ObjectProperty pages "
    "the relation types",
    "get_node_neighborhood": "lower depth or limit, pick a direction, or add nodeTypeFilter "
    "or relationshipTypeFilter",
    "find_path": "lower maxHops or pass relationshipTypes",
    "get_claim_status": "get_relationships(destinationUid=uid, relationshipType='Supports' "
    "or 'Opposes') lists each side",
    "find_gaps": "pass nodeType for one list at a time, or dataset",
    "what_changed": "pass a later since, a nodeType, creator or dataset, or catchUp=true for "
    "the summary per person",
    "sparql_query": "the first {kept} rows are shown: add ORDER BY and OFFSET {kept} (plus "
    "its own OFFSET) to the query for the next rows, or select fewer or shorter columns",
    "sparql_query/text": "add LIMIT and OFFSET to the query (with ORDER BY) to read the "
    "triples in parts, or narrow its pattern",
    # tasks
    "load_dataset": "get_task(taskId) reads the task again; list_tasks summarises tasks",
    "embed_nodes": "get_task(taskId) reads the task again; list_tasks summarises tasks",
    "get_task": "list_tasks summarises the task; sparql_query with LIMIT and OFFSET over the "
    f"graph {TASKS_GRAPH} reads its history",
    "list_tasks": "filter by status to reach the tasks cut; get_task(taskId) reads one task",
    "cancel_task": "get_task(taskId) reads the task again; list_tasks summarises tasks",
    "resume_task": "get_task(taskId) reads the task again; list_tasks summarises tasks",
    # evidence bundles
    "bundle_evidence": "the bundle on disk holds it all (its README and "
    "ro-crate-metadata.json); get_node(uid) reads a lineage node",
    # project notebook
    "create_project": "get_project_context(project) reads the project",
    "set_active_project": "get_project_context(project) reads the project",
    "list_projects": f"sparql_query with LIMIT and OFFSET over the {PROJECT_PREFIX} "
    "graphs pages the projects",
    "get_project_context": "list_findings(project, limit, offset) pages the findings",
    "update_project": "get_project_context(project) reads the project",
    "delete_project": "list_projects lists the projects left",
    "record_visit": "get_project_context(project) reads the project",
    "log_finding": "list_findings(project) pages the findings",
    "list_findings": "the first {kept} findings are shown: pass nextOffset as offset for the "
    "next ones",
    "delete_finding": "list_findings(project) pages the remaining findings",
    "suggest_next_steps": "make the first steps shown, then ask again",
    "get_related_pages": "get_linked_nodes(uid) and get_node_neighborhood(uid) reach the "
    "linked nodes; get_node reads one page in full",
    # memory domains
    "create_domain": "list_domains lists the domains",
    "list_domains": f"sparql_query with LIMIT and OFFSET over the {DOMAIN_PREFIX} graphs "
    "pages the domains",
    "select_domain": "list_domains lists the domains",
    "update_domain": "list_domains lists the domains",
    "delete_domain": "list_domains lists the domains left",
    "store_memory": "get_memory(id) reads the memory",
    "get_memory": "traverse_memories(id, maxDepth=1, types=[...]) lists its edges by type; "
    "sparql_query for its sioc:content reads the whole text",
    "update_memory": "get_memory(id) reads the memory",
    "delete_memory": "sparql_query with LIMIT and OFFSET lists what remains",
    "search_memories": "narrow with tags or path (or more query words) to reach the memories cut",
    "connect_memories": "get_memory(source) reads the memory and its edges",
    "update_edge_strength": "get_memory(source) reads the memory and its edges",
    "remove_edge": "get_memory(source) reads the memory and its edges",
    "traverse_memories": "lower maxDepth, raise minStrength, or pass types or direction",
    "add_cross_reference": "get_memory(source) reads the memory and its references",
    "transfer_memory": "get_memory(id) lists the memory's edges as they are now",
    # propositions
    "add_proposition": "get_proposition(id) reads the proposition",
    "get_proposition": "find_lineage or find_contradictions follow one relation at a time; "
    "sparql_query with LIMIT and OFFSET pages its relations",
    "list_propositions": "the first {kept} propositions are shown: pass nextCursor as cursor "
    "for the next ones",
    "connect_propositions": "get_proposition(id) reads either end",
    "find_lineage": "lower maxHops, or pass a proposition id or lab node uid instead of words",
    "find_contradictions": "pass a proposition id or lab node uid as claim instead of words; "
    "get_proposition(id) lists a proposition's relations",
}

#: Paged tools: the list they page and the argument that sizes a page. When the list was cut
#: to k items, the tool is asked again with that argument set to k, so that its own pointer
#: to the next page (nextOffset, nextCursor) continues right after the last item shown.
PAGED: dict[str, tuple[str, str]] = {
    "list_findings": ("findings", "limit"),
    "list_propositions": ("propositions", "limit"),
}


@dataclass
class Fitted:
    """An answer fitted under a cap: the data, its compact JSON text (``len(text) <= cap``
    unless ``fits`` is false), the size of the full answer, and what was cut: items kept of
    each list path that lost some (``path: (kept, of)``) and how many strings were shortened."""

    data: Json
    text: str
    full_chars: int
    lists: dict[str, tuple[int, int]] = field(default_factory=dict)
    strings: int = 0
    cut: bool = False
    fits: bool = True

    def kept(self) -> int:
        """Items kept of the outermost list cut (of those, the one that lost the most; 0
        when no list was cut)."""
        if not self.lists:
            return 0

        def rank(path: str) -> tuple[int, int, str]:
            kept, total = self.lists[path]
            return (path.count(".") + path.count("[]"), kept - total, path)

        return self.lists[min(self.lists, key=rank)][0]

    def summary(self) -> str:
        """What was cut, e.g. 'kept 8 of 100 results; shortened 2 texts'."""
        parts = [f"kept {k} of {n} {p}" for p, (k, n) in sorted(self.lists.items())]
        if self.strings:
            parts.append(f"shortened {self.strings} text{'s' if self.strings > 1 else ''}")
        return "; ".join(parts) or "dropped the note"


def dumps(data: Json) -> str:
    """The compact JSON text of an answer (as :func:`labbrain.mcp.common.answer` writes it)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def fit(data: Json, cap: int, schema: Schema | None = None, *, text: str | None = None) -> Fitted:
    """Fit ``data`` (JSON-compatible) so that its compact JSON is at most ``cap`` characters.

    Guarantees: ``data`` itself is never modified; an answer already under the cap comes
    back as the same object with the same text (``text``, when given, is taken to be
    ``dumps(data)`` and not recomputed); otherwise the result is a cut copy whose every list
    is a prefix of the original list, whose shortened strings end with ``…[cut N chars]``,
    whose object keys are all kept (except entries of maps, when ``schema`` says which
    objects are maps) and whose text is valid JSON of at most ``cap`` characters, or
    ``fits`` is false when even the answer's fixed fields do not fit. Deterministic.
    """
    full = dumps(data) if text is None else text
    if len(full) <= cap:
        return Fitted(data, full, len(full))
    work = json.loads(full)
    before = _list_lengths(work, schema)
    marked: int | None = None  # strings cut already (counted before strings are cut here)
    current = full
    for step in (_lists_to_one, _strings_to_floor, _lists_to_none, _maps, _strings_to_marker):
        if marked is None and step in _STRING_STEPS:
            marked = _cut_strings(work)
        current = step(work, cap, schema)
        if len(current) <= cap:
            break
    if _recount(work, schema):
        current = dumps(work)
    after = _list_lengths(work, schema)
    cut = [path for path, total in before.items() if after.get(path, 0) < total]
    lists = {  # lists inside a cut list lose items with it: only the outermost are named
        (path or "items"): (after.get(path, 0), before[path])
        for path in cut
        if not any(
            path[len(other) : len(other) + 1] in ("[", ".")
            for other in cut
            if path.startswith(other) and path != other
        )
    }
    strings = 0 if marked is None else _cut_strings(work) - marked
    return Fitted(work, current, len(full), lists, strings, True, len(current) <= cap)


def _cut_strings(work: Json) -> int:
    """How many strings of ``work`` end with a cut marker."""
    return sum(1 for value in _strings(work) if _is_cut(value))


def _recount(work: Json, schema: Schema | None) -> bool:
    """Set each count the schema ties to a list (a property with ``counts``: the list's name)
    to the items that list holds now (a list of lists: its inner items); True if one changed.
    Counts only fall, so the text never grows."""
    root = _resolve(schema, schema) if schema is not None else None
    properties = root.get("properties") if root is not None else None
    if not isinstance(work, dict) or not isinstance(properties, Mapping):
        return False
    changed = False
    for name, prop in properties.items():
        of = prop.get("counts") if isinstance(prop, Mapping) else None
        items = work.get(of) if isinstance(of, str) else None
        if not isinstance(items, list) or not isinstance(work.get(name), int):
            continue
        nested = bool(items) and all(isinstance(item, list) for item in items)
        now = sum(len(item) for item in items) if nested else len(items)
        if work[name] != now:
            work[name] = now
            changed = True
    return changed


# ------------------------------------------------------------------- finding what can be cut
@dataclass
class _Seq:
    """A list (a list of lists counts as one) or a map that can lose items from its end."""

    path: str
    order: int
    owners: list[Any]  # the lists (or one dict) holding the items, in order
    is_map: bool = False
    least: int = 0  # the schema's minItems / minProperties

    def units(self) -> list[tuple[Any, Any]]:
        """(owner, index or key) of each item, in order."""
        if self.is_map:
            owner = self.owners[0]
            return [(owner, key) for key in owner]
        return [(owner, i) for owner in self.owners for i in range(len(owner))]


def _walk(data: Json, schema: Schema | None) -> Iterator[_Seq]:
    """Every cuttable sequence of ``data``, outermost first, in document order."""
    order = 0

    def visit(node: Json, path: str, node_schema: Schema | None) -> Iterator[_Seq]:
        nonlocal order
        if isinstance(node, list):
            inner = [item for item in node if isinstance(item, list)]
            items_schema = _resolve(_items(node_schema), schema)
            if node and len(inner) == len(node):  # a list of lists: one sequence of items
                order += 1
                yield _Seq(path, order, list(node), least=_least(node_schema, "minItems"))
                inner_schema = _resolve(_items(items_schema), schema)
                for owner in node:
                    for item in owner:
                        if isinstance(item, list | dict):  # a plain value holds nothing
                            yield from visit(item, path + "[]", inner_schema)
                return
            order += 1
            yield _Seq(path, order, [node], least=_least(node_schema, "minItems"))
            for item in node:
                if isinstance(item, list | dict):
                    yield from visit(item, path + "[]", items_schema)
        elif isinstance(node, dict):
            if (
                node_schema is not None
                and _flat(node_schema, schema)
                and node.keys() <= (node_schema["properties"].keys())
            ):
                return  # an object of plain values (or of such objects): nothing to cut
            if node_schema is not None and _is_map(node_schema):
                order += 1
                yield _Seq(path, order, [node], True, _least(node_schema, "minProperties"))
                values = _resolve(node_schema.get("additionalProperties"), schema)
                for value in node.values():
                    yield from visit(value, f"{path}.*" if path else "*", values)
                return
            if not any(isinstance(value, list | dict) for value in node.values()):
                return  # plain values only, whatever the schema says: nothing to cut
            for key, value in node.items():
                child = _resolve(_property(node_schema, key), schema)
                yield from visit(value, f"{path}.{key}" if path else key, child)

    root = _resolve(schema, schema) if schema is not None else None
    yield from visit(data, "", root)


def _resolve(node: Any, root: Schema | None) -> Schema | None:
    """The schema node behind ``$ref`` and ``anyOf`` (the non-null branch), or None."""
    for _ in range(32):
        if not isinstance(node, Mapping):
            return None
        if "$ref" in node and root is not None:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            node = root.get("$defs", {}).get(name)
            continue
        branches = node.get("anyOf") or node.get("oneOf")
        if branches:
            useful = [b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
            if len(useful) != 1:
                return None
            node = useful[0]
            continue
        return node
    return None


_SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})


def _flat(node: Schema, root: Schema | None) -> bool:
    """True when ``node`` is an object schema with fixed properties, each a plain value
    (string, number, boolean, null, or a choice of those) or itself such an object: an
    object that holds no list or map, whatever its values."""
    key = (id(node), id(root))
    known = _FLAT.get(key)
    if known is not None and known[0] is node and known[1] is root:
        return known[2]
    properties = node.get("properties")
    flat = (
        node.get("type") == "object"
        and isinstance(properties, Mapping)
        and not node.get("additionalProperties")
        and all(_plain(prop, root) for prop in properties.values())
    )
    _FLAT[key] = (node, root, flat)
    return flat


def _plain(node: Any, root: Schema | None) -> bool:
    """True when every value ``node`` allows is a plain value or a :func:`_flat` object."""
    for _ in range(32):
        if not isinstance(node, Mapping):
            return False
        if "$ref" in node and root is not None:
            node = root.get("$defs", {}).get(str(node["$ref"]).rsplit("/", 1)[-1])
            continue
        break
    else:
        return False
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        return all(_plain(branch, root) for branch in branches)
    kind = node.get("type")
    if isinstance(kind, list):
        return bool(kind) and all(k in _SCALARS for k in kind)
    if kind in _SCALARS:
        return True
    return kind == "object" and _flat(node, root)


#: Memo of :func:`_flat` by schema node (the nodes are kept, so their ids stay theirs).
_FLAT: dict[tuple[int, int], tuple[Schema, Schema | None, bool]] = {}


def _least(node: Schema | None, key: str) -> int:
    """The schema's lower bound on items (``minItems`` / ``minProperties``), else 0."""
    value = node.get(key, 0) if node is not None else 0
    return value if isinstance(value, int) else 0


def _items(node: Schema | None) -> Any:
    return node.get("items") if node is not None else None


def _property(node: Schema | None, key: str) -> Any:
    if node is None:
        return None
    properties = node.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    return None


def _is_map(node: Schema) -> bool:
    """An object with free keys (``dict[str, X]``), whose entries may be dropped."""
    return (
        node.get("type") == "object"
        and "properties" not in node
        and bool(node.get("additionalProperties", False))
    )


def _list_lengths(data: Json, schema: Schema | None) -> dict[str, int]:
    """Items per sequence path (summed over sequences sharing a path)."""
    lengths: dict[str, int] = {}
    for seq in _walk(data, schema):
        lengths[seq.path] = lengths.get(seq.path, 0) + len(seq.units())
    return lengths


def _strings(node: Json) -> Iterator[str]:
    """Every string value that may be shortened (not under :data:`IDENTITY_KEYS`)."""
    for _, _, value in _string_slots(node):
        yield value


def _string_slots(node: Json) -> Iterator[tuple[Any, Any, str]]:
    """(owner, key or index, value) of every string that may be shortened, in order."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, str):
                yield node, i, item
            else:
                yield from _string_slots(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str):
                if key not in IDENTITY_KEYS:
                    yield node, key, value
            else:
                yield from _string_slots(value)


# ----------------------------------------------------------------------------- the four steps
def _drop_items(work: Json, cap: int, schema: Schema | None, keep: int, maps: bool) -> str:
    """Drop items from the ends of the longest lists (or, with ``maps``, entries of maps)
    until the text fits or each is down to ``keep`` items; the text of the result.

    Water-filling: every sequence longer than a common level is cut down to it, the level
    being the highest that saves enough (sequences below it keep every item)."""
    text = dumps(work)
    while len(text) > cap:
        seqs = [
            s
            for s in _walk(work, schema)
            if s.is_map == maps and len(s.units()) > max(keep, s.least)
        ]
        if not seqs:
            break
        prefixes = [list(accumulate(_unit_sizes(seq), initial=0)) for seq in seqs]
        floors = [max(keep, seq.least) for seq in seqs]
        level = _drop_level(prefixes, floors, len(text) - cap)
        for seq, prefix, floor in zip(seqs, prefixes, floors, strict=True):
            units = seq.units()
            for owner, key in reversed(units[_kept_units(prefix, level, floor) :]):
                del owner[key]
        text = dumps(work)
    return text


def _unit_sizes(seq: _Seq) -> list[int]:
    """Characters each item of ``seq`` takes in the text (with its comma, and its key in a
    map)."""
    if seq.is_map:
        return [_chars(key) + _chars(owner[key]) + 2 for owner, key in seq.units()]
    return [_chars(owner[key]) + 1 for owner, key in seq.units()]


#: What JSON escapes in a string (:func:`dumps` keeps other characters as they are).
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _chars(value: Json) -> int:
    """``len(dumps(value))``, without writing the text of a string that needs no escape."""
    if type(value) is str and _ESCAPED.search(value) is None:
        return len(value) + 2
    return len(dumps(value))


def _kept_units(prefix: list[int], level: int, keep: int) -> int:
    """How many leading items stay when a sequence is cut down to ``level`` characters."""
    return max(keep, bisect_right(prefix, level) - 1)


def _drop_level(prefixes: list[list[int]], floors: list[int], excess: int) -> int:
    """The highest level (in characters) to which cutting every longer sequence (never
    below its floor of items) saves ``excess`` characters; 0 if none does. Always below the
    longest sequence's size."""

    def saved(level: int) -> int:
        return sum(
            p[-1] - p[_kept_units(p, level, floor)]
            for p, floor in zip(prefixes, floors, strict=True)
        )

    return _highest_level(saved, 0, max(p[-1] for p in prefixes) - 1, excess)


def _lists_to_one(work: Json, cap: int, schema: Schema | None) -> str:
    return _drop_items(work, cap, schema, keep=1, maps=False)


def _lists_to_none(work: Json, cap: int, schema: Schema | None) -> str:
    return _drop_items(work, cap, schema, keep=0, maps=False)


def _maps(work: Json, cap: int, schema: Schema | None) -> str:
    return _drop_items(work, cap, schema, keep=0, maps=True)


def _shorten(work: Json, cap: int, floor: int) -> str:
    """Shorten the longest strings to one common length (water-filling, never below
    ``floor`` kept characters) until the text fits; the text of the result."""
    text = dumps(work)
    while len(text) > cap:
        slots = [
            (owner, key, value)
            for owner, key, value in _string_slots(work)
            if len(value) > LONG_STRING and _kept_chars(value) > floor
        ]
        if not slots:
            break
        kept = [_kept_chars(value) for _, _, value in slots]
        level = _level(kept, len(text) - cap, floor)
        changed = False
        for (owner, key, value), chars in zip(slots, kept, strict=True):
            if chars - level > _MARKER:  # a shorter cut would lengthen the string
                owner[key] = _shortened(value, level)
                changed = True
        if not changed:
            break
        text = dumps(work)
    return text


def _level(lengths: list[int], excess: int, floor: int) -> int:
    """The highest length L >= ``floor`` such that cutting every length above L down to L
    saves ``excess`` characters (each cut costs its marker); ``floor`` if none does."""

    def saved(level: int) -> int:
        return sum(n - level - _MARKER for n in lengths if n - level > _MARKER)

    high = max(lengths) - _MARKER - 1  # the longest string is always cut
    if high <= floor:
        return floor
    return _highest_level(saved, floor, high, excess)


def _highest_level(saved: Callable[[int], int], low: int, high: int, excess: int) -> int:
    """The highest level in ``low..high`` at which ``saved`` (falling as the level rises)
    still reaches ``excess``, by binary search; ``low`` when even ``low`` does not."""
    if saved(low) < excess:
        return low
    while low < high:
        middle = (low + high + 1) // 2
        if saved(middle) >= excess:
            low = middle
        else:
            high = middle - 1
    return low


_CUT = "…[cut "
_MARKER = len("…[cut 100000 chars]")


def _strings_to_floor(work: Json, cap: int, schema: Schema | None) -> str:
    return _shorten(work, cap, KEEP_STRING)


def _strings_to_marker(work: Json, cap: int, schema: Schema | None) -> str:
    return _shorten(work, cap, 0)


#: The steps of :func:`fit` that shorten strings (the others drop items).
_STRING_STEPS = (_strings_to_floor, _strings_to_marker)


def _is_cut(value: str) -> bool:
    return value.endswith(" chars]") and _CUT in value


def _kept_chars(value: str) -> int:
    """Characters of the original a (possibly already shortened) string still holds."""
    return value.rindex(_CUT) if _is_cut(value) else len(value)


def cut_text(text: str, cap: int) -> str:
    """``text`` if it has at most ``cap`` characters, else its start ending with
    ``…[cut N chars]``, ``cap`` characters at most in all (``cap`` >= 30)."""
    if len(text) <= cap:
        return text
    return _shortened(text, max(0, cap - len(f"{_CUT}{len(text)} chars]")))


def _shortened(value: str, keep: int) -> str:
    """``value`` cut to its first ``keep`` characters, the marker counting every character
    cut so far."""
    original, already = value, 0
    if _is_cut(value):
        start = value.rindex(_CUT)
        digits = value[start + len(_CUT) : -len(" chars]")]
        if digits.isdigit():
            original, already = value[:start], int(digits)
    keep = max(0, min(keep, len(original)))
    return f"{original[:keep]}{_CUT}{already + len(original) - keep} chars]"


# ------------------------------------------------------------------------------- the marker
def mark(fitted: Fitted, cap: int, hint: str) -> Json:
    """The fitted data with the marker: ``truncated`` / ``note`` set where the answer's model
    has them, else a top-level ``truncated`` object ``{cutTo, of, kept, hint}``."""
    data = fitted.data
    if not isinstance(data, dict):
        return data
    kept = fitted.summary()
    if "note" in data or isinstance(data.get("truncated"), bool):
        marked = dict(data)
        if isinstance(data.get("truncated"), bool):
            marked["truncated"] = True
        marked["note"] = (
            f"answer cut to fit {cap} characters ({fitted.full_chars} in full): {kept}. "
            f"To get more: {hint}"
        )
        return marked
    marker = {"cutTo": len(fitted.text), "of": fitted.full_chars, "kept": kept, "hint": hint}
    return {**data, "truncated": marker}


def hint_for(tool: str, fitted: Fitted) -> str:
    """How to get more of ``tool``'s cut answer: its hint (:data:`HINTS`; ``<tool>/text``
    when no list was cut and it has one), ``{kept}`` filled in."""
    hint = HINTS.get(tool, DEFAULT_HINT)
    if not fitted.lists:
        hint = HINTS.get(f"{tool}/text", hint)
    return hint.replace("{kept}", str(fitted.kept()))


def fit_answer(data: Json, cap: int, tool: str, schema: Schema | None = None) -> Fitted:
    """:func:`fit` plus the marker with ``tool``'s hint, all within ``cap`` characters;
    ``fits`` is false when that is impossible. An answer under the cap comes back unchanged
    (the same object and text)."""
    full = dumps(data)
    if len(full) <= cap:
        return Fitted(data, full, len(full))
    room = cap
    prepared = {**data, "note": None} if isinstance(data, dict) and "note" in data else data
    for _ in range(8):
        fitted = fit(prepared, room, schema)
        if not fitted.fits:
            break
        fitted.full_chars = len(full)
        marked = _marked_text(fitted, cap, hint_for(tool, fitted))
        if marked is not None:
            return marked
        marker = len(dumps(mark(fitted, cap, hint_for(tool, fitted)))) - len(fitted.text)
        room = min(room - 1, cap - marker - 8)  # room for the marker (its numbers may grow)
        if room <= 0:
            break
    return Fitted(data, full, len(full), cut=True, fits=False)


def _marked_text(fitted: Fitted, cap: int, hint: str) -> Fitted | None:
    """``fitted`` with its marker (``cutTo`` the final length), or None if over ``cap``."""
    marked = mark(fitted, cap, hint)
    text = dumps(marked)
    if isinstance(marked, dict) and isinstance(marked.get("truncated"), dict):
        marked["truncated"]["cutTo"] = len(text)
        text = dumps(marked)
    if len(text) > cap:
        return None
    return Fitted(marked, text, fitted.full_chars, fitted.lists, fitted.strings, True)


# ------------------------------------------------------------------------------ the server
class CappedServer(MCPServer[Any]):
    """An MCPServer whose every tool answer fits in ``max_chars`` characters of text.

    Answers under the cap pass untouched; longer ones are fitted by :func:`fit_answer` with
    the tool's hint and output schema; paged tools are asked again for the items that fit
    (:data:`PAGED`); a long error message is shortened. An answer whose fixed fields alone
    exceed the cap becomes an error saying how to ask for less."""

    def __init__(self, *args: Any, max_chars: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_chars = max_chars
        self._schemas: dict[str, dict[str, Any] | None] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call the tool; its answer, or its error message, within the cap."""
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as error:
            if len(str(error)) <= self.max_chars - _PREFIX:
                raise
            raise ToolError(cut_text(str(error), self.max_chars - _PREFIX)) from None
        if not isinstance(result, CallToolResult) or _text_chars(result) <= self.max_chars:
            return result
        fitted, capped = await self._fit(name, result)
        paged = PAGED.get(name)
        first = fitted
        for _ in range(4):  # ask a paged tool again for the items that fit
            if paged is None or fitted is None or first is None or paged[0] not in fitted.lists:
                break
            kept = fitted.lists[paged[0]][0]
            if kept < 1:
                break
            again = await super().call_tool(name, {**arguments, paged[1]: kept}, context)
            if not isinstance(again, CallToolResult) or again.structured_content is None:
                break
            page = Fitted(again.structured_content, _joined(again), first.full_chars)
            page.lists = {**first.lists, paged[0]: (kept, first.lists[paged[0]][1])}
            page.strings = first.strings
            marked = _marked_text(page, self.max_chars, hint_for(name, page))
            if marked is not None:
                return _result(marked, again)
            fitted, capped = await self._fit(name, again)
        return capped

    async def _fit(self, name: str, result: CallToolResult) -> tuple[Fitted | None, CallToolResult]:
        """(what was cut, or None for a text-only answer; the answer within the cap)."""
        if result.structured_content is None or result.is_error:
            text = cut_text(_joined(result), self.max_chars)
            others = [c for c in result.content if not isinstance(c, TextContent)]
            content = [TextContent(type="text", text=text), *others]
            return None, CallToolResult(content=content, is_error=result.is_error)
        schema = (await self._output_schemas()).get(name)
        fitted = fit_answer(result.structured_content, self.max_chars, name, schema)
        if not fitted.fits:
            raise ToolError(
                f"the answer of {name} does not fit in {self.max_chars} characters "
                f"(LABBRAIN_MCP_MAX_CHARS) even when cut; {HINTS.get(name, DEFAULT_HINT)}"
            )
        return fitted, _result(fitted, result)

    async def _output_schemas(self) -> dict[str, dict[str, Any] | None]:
        """Each tool's output schema (read once: tools are all registered by then)."""
        if self._schemas is None:
            self._schemas = {tool.name: tool.output_schema for tool in await self.list_tools()}
        return self._schemas


#: Room for the SDK's prefix of an error message ("Error executing tool <name>: ").
_PREFIX = 80


def _result(fitted: Fitted, original: CallToolResult) -> CallToolResult:
    """The fitted answer as a tool result, with the original's images."""
    others = [c for c in original.content if not isinstance(c, TextContent)]
    content = [TextContent(type="text", text=fitted.text), *others]
    return CallToolResult(content=content, structured_content=fitted.data)


def _text_chars(result: CallToolResult) -> int:
    return sum(len(c.text) for c in result.content if isinstance(c, TextContent))


def _joined(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))
