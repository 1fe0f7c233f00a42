"""Memory domains end to end through an in-process MCP client.

Domains, memory nodes, typed weighted edges (also to lab nodes of the sample export),
cross-domain references, search, traversal and transfer, checked field by field in the tool
answers and against what the store holds (SPARQL counts, PROV quads, export), on a store in
memory, on disk across a restart, and on a read-only snapshot beside a writer.
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import BACKENDS, MakeSettings, settings_for
from helpers import InProcessTools, Json, count, select
from labbrain.agent.memory.memories import Memories
from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import InvalidArgument

MEMORY_TOOLS = {
    "create_domain": False,
    "list_domains": True,
    "select_domain": False,
    "store_memory": False,
    "get_memory": True,
    "update_memory": False,
    "delete_memory": False,
    "search_memories": True,
    "connect_memories": False,
    "update_edge_strength": False,
    "remove_edge": False,
    "traverse_memories": True,
    "add_cross_reference": False,
    "transfer_memory": False,
}
DESTRUCTIVE_TOOLS = {"update_memory", "delete_memory", "remove_edge"}
MEMORY_ID_RE = re.compile(r"^urn:labbrain:memory:[0-9a-f]{32}$")
EDGE_ID_RE = re.compile(r"^urn:labbrain:link:[0-9a-f]{32}$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
NO_DOMAIN = (
    "no memory domain is selected; call create_domain to make one or select_domain to pick "
    "one (list_domains lists them)"
)
READ_ONLY = "needs write access, but the store was opened read-only"

# A Claim of the sample export (data/README.md; the README's own search example).
CLAIM_UID = "n2rGK8We9"
CLAIM_REF = {
    "uid": "n2rGK8We9",
    "dataset": "akamatsulab-sample",
    "nodeType": "Claim",
    "title": "Hypo-osmotic shock raises plasma membrane tension enough to alter endocytic "
    "dynamics within minutes.",
    "creator": "Aidan Stern",
    "created": "2026-08-19T13:36:34.765Z",
    "url": "https://roamresearch.com/#/app/akamatsulab-sample/page/n2rGK8We9",
}
AGENT = "urn:labbrain:agent:assistant"


class Tools(InProcessTools):
    """The tools of one server, with shortcuts for memory tests."""

    def server_session(self) -> str:
        """The session the server's writes were made in (recorded in the system graph)."""
        rows = select(
            self.brain, "SELECT ?s WHERE { GRAPH <urn:labbrain:system> { ?s a lb:Session } }"
        )
        assert len(rows) == 1
        return str(rows[0]["s"])

    def store(self, content: str, **arguments: Any) -> str:
        """Store a memory in the active domain; its id."""
        memory_id = self.ok("store_memory", content=content, **arguments)["memory"]["id"]
        assert MEMORY_ID_RE.match(memory_id)
        return str(memory_id)

    def connect(self, source: str, target: str, kind: str, strength: float) -> str:
        """Connect two nodes; the edge id."""
        answer = self.ok(
            "connect_memories", source=source, target=target, type=kind, strength=strength
        )
        assert EDGE_ID_RE.match(answer["edge"]["id"])
        return str(answer["edge"]["id"])

    def cross(self, source: str, target: str, **arguments: Any) -> str:
        """Add a cross-domain reference; its id."""
        answer = self.ok(
            "add_cross_reference",
            source=source,
            target=target,
            description=arguments.pop("description", "see also"),
            **arguments,
        )
        return str(answer["edge"]["id"])

    def domain(self, ident: str, **arguments: Any) -> Json:
        """Create a domain (selected unless select=False)."""
        return self.ok("create_domain", id=ident, name=ident.title(), **arguments)["domain"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here that uses a shared store fixture runs on the embedded store and on a
    remote Oxigraph server."""
    return str(request.param)


@pytest.fixture
def tools(memory_brain: LabBrain) -> Tools:
    return Tools(memory_brain)


@pytest.fixture
def lab(sample_brain: LabBrain) -> Tools:
    return Tools(sample_brain)


def graph_of(brain: LabBrain, iri: str) -> list[str]:
    """The graphs holding quads about ``iri``."""
    rows = select(brain, f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ <{iri}> ?p ?o }} }} ORDER BY ?g")
    return [row["g"] for row in rows]


def about(brain: LabBrain, iri: str) -> int:
    """How many quads mention ``iri`` as subject or object, in any graph."""
    return count(brain, f"GRAPH ?g {{ {{ <{iri}> ?p ?o }} UNION {{ ?s ?p <{iri}> }} }}")


# ---------------------------------------------------------------------------------------
# Tool listing
# ---------------------------------------------------------------------------------------


def test_memory_tools_are_listed_with_their_annotations(tools: Tools) -> None:
    async def listing() -> Any:
        async with Client(tools.server) as client:
            return await client.list_tools()

    listed = {tool.name: tool for tool in asyncio.run(listing()).tools}
    assert set(MEMORY_TOOLS) <= set(listed)
    for name, read_only in MEMORY_TOOLS.items():
        tool = listed[name]
        assert tool.annotations is not None and tool.title
        assert tool.annotations.read_only_hint is read_only, name
        assert tool.annotations.destructive_hint is (name in DESTRUCTIVE_TOOLS), name
        assert ("idempotencyKey" in tool.input_schema["properties"]) is not read_only, name
        assert len(tool.description or "") > 150 and "\n    " not in (tool.description or "")
    edge_type = listed["connect_memories"].input_schema["properties"]["type"]
    assert edge_type["enum"] == [
        "follows",
        "relates_to",
        "supports",
        "contradicts",
        "refines",
        "synthesizes",
    ]


# ---------------------------------------------------------------------------------------
# Domains
# ---------------------------------------------------------------------------------------


def test_memory_tools_without_a_domain_say_how_to_get_one(tools: Tools) -> None:
    memory = "urn:labbrain:memory:" + "0" * 32
    edge = "urn:labbrain:link:" + "0" * 32
    calls: list[tuple[str, Json]] = [
        ("store_memory", {"content": "x"}),
        ("get_memory", {"id": memory}),
        ("update_memory", {"id": memory, "content": "y"}),
        ("delete_memory", {"id": memory}),
        ("search_memories", {"query": "x"}),
        ("connect_memories", {"source": memory, "target": memory, "type": "follows"}),
        ("update_edge_strength", {"edge": edge, "strength": 0.5}),
        ("remove_edge", {"edge": edge}),
        ("traverse_memories", {"start": memory}),
        ("add_cross_reference", {"source": memory, "target": memory, "description": "d"}),
        ("transfer_memory", {"id": memory, "toDomain": "elsewhere"}),
    ]
    for name, arguments in calls:
        assert tools.error(name, **arguments) == NO_DOMAIN, name
    assert tools.ok("list_domains") == {
        "domains": [],
        "listed": 0,
        "active": None,
        "note": "no domains yet; create_domain makes one",
    }
    assert count(tools.brain, "GRAPH ?g { ?s a lb:MemoryNode }") == 0


def test_domain_lifecycle(tools: Tools) -> None:
    actin = tools.ok(
        "create_domain", id="actin", name="Actin", description="branched actin networks"
    )
    assert actin["availableActions"] == ["store_memory", "list_domains"]
    created = actin["domain"]
    assert TIME_RE.match(created["created"]) and created["lastAccessed"] == created["created"]
    assert created == {
        "id": "actin",
        "name": "Actin",
        "description": "branched actin networks",
        "graph": "urn:labbrain:domain:actin",
        "created": created["created"],
        "lastAccessed": created["created"],
        "memoryCount": 0,
        "edgeCount": 0,
        "crossReferenceCount": 0,
        "active": True,
    }
    tension = tools.domain("tension", select=False)
    assert tension["active"] is False

    first = tools.store("Arp2/3 branches filaments")
    second = tools.store("Capping protein stops growth")
    edge = tools.ok("connect_memories", source=first, target=second, type="follows")["edge"]
    assert edge["strength"] == 0.5  # the default
    listed = tools.ok("list_domains")
    assert listed["active"] == "actin"
    assert [
        (d["id"], d["memoryCount"], d["edgeCount"], d["crossReferenceCount"], d["active"])
        for d in listed["domains"]
    ] == [("actin", 2, 1, 0, True), ("tension", 0, 0, 0, False)]
    actin_listed = listed["domains"][0]
    assert actin_listed["created"] == created["created"]
    assert actin_listed["lastAccessed"] == edge["created"]  # the last write was an access

    # Reads are no access: the last access stays as the last write left it.
    tools.ok("search_memories", query="filaments")
    tools.ok("get_memory", id=first)
    assert tools.ok("list_domains")["domains"][0]["lastAccessed"] == actin_listed["lastAccessed"]

    selected = tools.ok("select_domain", id="tension")
    assert selected["domain"]["active"] is True
    assert selected["domain"]["lastAccessed"] >= actin_listed["lastAccessed"]
    assert selected["availableActions"] == ["search_memories", "store_memory", "traverse_memories"]
    listed = tools.ok("list_domains")
    assert listed["active"] == "tension"
    assert [(d["id"], d["active"]) for d in listed["domains"]] == [
        ("tension", True),
        ("actin", False),
    ]
    assert listed["domains"][0]["lastAccessed"] == selected["domain"]["lastAccessed"]

    # The active domain is kept per agent in the system graph.
    rows = select(
        tools.brain,
        "SELECT ?d WHERE { GRAPH <urn:labbrain:system> { ?agent lb:activeDomain ?d } }",
    )
    assert rows == [{"d": "urn:labbrain:domain:tension"}]


def test_domain_errors(tools: Tools) -> None:
    tools.domain("actin")
    assert tools.error("create_domain", id="actin", name="Again") == (
        "invalid id: a domain 'actin' already exists; select_domain selects it"
    )
    assert tools.error("create_domain", id="Actin Models", name="x") == (
        "invalid id: use 1 to 64 lowercase letters, digits and single dashes, e.g. 'actin-models'"
    )
    assert tools.error("create_domain", id="ok", name="   ") == "invalid name: must not be empty"
    assert tools.error("select_domain", id="nope") == (
        "no memory domain 'nope'; list_domains lists them; create_domain makes one"
    )
    memory = tools.store("A memory")
    assert tools.error("transfer_memory", id=memory, toDomain="nope") == (
        "no memory domain 'nope'; list_domains lists them; create_domain makes one"
    )
    assert tools.error("transfer_memory", id=memory, toDomain="actin") == (
        "invalid toDomain: the memory is already in domain 'actin'"
    )
    assert [d["id"] for d in tools.ok("list_domains")["domains"]] == ["actin"]


def test_a_dropped_active_domain_is_reported(tools: Tools) -> None:
    tools.domain("scratch")
    tools.brain.drop("urn:labbrain:domain:scratch")
    assert tools.error("search_memories", query="x") == (
        "the active memory domain 'scratch' no longer exists; call create_domain to make one "
        "or select_domain to pick one (list_domains lists them)"
    )


def test_domains_are_isolated(tools: Tools) -> None:
    tools.domain("actin")
    in_actin = tools.store("actin filaments branch at endocytic sites", tags=["actin"])
    also_actin = tools.store("actin capping limits growth")
    tools.connect(in_actin, also_actin, "relates_to", 0.9)
    tools.domain("tension")
    in_tension = tools.store("membrane tension slows actin-driven endocytosis", tags=["actin"])

    found = tools.ok("search_memories", query="actin endocytic")
    assert [hit["id"] for hit in found["results"]] == [in_tension]
    assert found["domain"] == "tension"
    assert [
        hit["id"] for hit in tools.ok("search_memories", query="", tags=["actin"])["results"]
    ] == [in_tension]
    walk = tools.ok("traverse_memories", start=in_tension, maxDepth=3)
    assert walk["nodeCount"] == 1 and walk["edges"] == []

    # Ids of the other domain: readable, but not writable or linkable from here.
    assert tools.ok("get_memory", id=in_actin)["domain"] == "actin"
    elsewhere = (
        f"memory {in_actin} is in domain 'actin', not in the active domain 'tension'; "
        "select_domain 'actin' first"
    )
    assert tools.error("update_memory", id=in_actin, content="x") == "invalid id: " + elsewhere
    assert tools.error("delete_memory", id=in_actin) == "invalid id: " + elsewhere
    assert tools.error("traverse_memories", start=in_actin) == "invalid start: " + elsewhere
    assert tools.error("connect_memories", source=in_actin, target=in_tension, type="follows") == (
        "invalid source: " + elsewhere
    )
    assert tools.error("connect_memories", source=in_tension, target=in_actin, type="follows") == (
        f"invalid target: memory {in_actin} is in domain 'actin'; add_cross_reference links "
        "memories of two domains"
    )
    assert tools.error(
        "add_cross_reference", source=in_tension, target=in_tension, description="self"
    ) == (
        "invalid target: both memories are in domain 'tension'; connect_memories links "
        "memories of one domain"
    )
    # Each domain's memories live in its own graph only.
    assert graph_of(tools.brain, in_actin) == ["urn:labbrain:domain:actin"]
    assert graph_of(tools.brain, in_tension) == ["urn:labbrain:domain:tension"]


# ---------------------------------------------------------------------------------------
# Memory nodes
# ---------------------------------------------------------------------------------------


def test_store_get_update(tools: Tools) -> None:
    tools.domain("actin")
    stored = tools.ok(
        "store_memory",
        content="Arp2/3 nucleates branched actin at endocytic sites.",
        path="actin//branching/",
        tags=["Actin", "structure", "actin"],
        summary="Arp2/3 makes branches",
    )
    assert stored["availableActions"] == [
        "connect_memories",
        "add_cross_reference",
        "search_memories",
    ]
    memory = stored["memory"]
    memory_id = memory["id"]
    session = tools.server_session()
    assert memory == {
        "id": memory_id,
        "domain": "actin",
        "summary": "Arp2/3 makes branches",
        "path": "/actin/branching",
        "tags": ["Actin", "structure"],
        "created": memory["created"],
        "content": "Arp2/3 nucleates branched actin at endocytic sites.",
        "hasSummary": True,
        "modified": None,
        "attributedTo": AGENT,
        "session": session,
        "edges": [],
        "crossReferences": [],
    }
    assert tools.ok("get_memory", id=memory_id) == memory
    bare = memory_id.removeprefix("urn:labbrain:memory:")
    assert tools.ok("get_memory", id=bare) == memory  # the bare hex id works too

    long_text = "word " * 60
    plain = tools.ok("store_memory", content=long_text)["memory"]
    assert plain["path"] == "/" and plain["tags"] == [] and plain["hasSummary"] is False
    assert plain["summary"] == ("word " * 32).strip() + "…" and len(plain["summary"]) == 160

    updated = tools.ok(
        "update_memory", id=memory_id, content="Arp2/3 branches actin.", tags=["branching"]
    )["memory"]
    assert updated["content"] == "Arp2/3 branches actin."
    assert updated["tags"] == ["branching"]
    assert updated["summary"] == "Arp2/3 makes branches" and updated["path"] == "/actin/branching"
    assert updated["created"] == memory["created"]
    assert TIME_RE.match(updated["modified"]) and updated["modified"] >= memory["created"]
    assert updated["attributedTo"] == AGENT and updated["session"] == session
    assert tools.ok("get_memory", id=memory_id) == updated

    cleared = tools.ok("update_memory", id=memory_id, summary="", tags=[], path="/done")["memory"]
    assert cleared["summary"] == "Arp2/3 branches actin." and cleared["hasSummary"] is False
    assert cleared["tags"] == [] and cleared["path"] == "/done"
    assert cleared["created"] == memory["created"]
    # One modified time, one content, the created time and PROV of the first write.
    iri = f"<{memory_id}>"
    assert count(tools.brain, f"GRAPH ?g {{ {iri} dct:modified ?m }}") == 1
    assert count(tools.brain, f"GRAPH ?g {{ {iri} sioc:content ?c }}") == 1
    assert count(tools.brain, f"GRAPH ?g {{ {iri} lb:tag ?t }}") == 0
    assert count(tools.brain, f"GRAPH ?g {{ {iri} dct:abstract ?t }}") == 0
    assert count(tools.brain, f"GRAPH ?g {{ {iri} prov:generatedAtTime ?t }}") == 1


def test_memory_value_errors(tools: Tools) -> None:
    tools.domain("actin")
    memory = tools.store("Something")
    assert tools.error("store_memory", content="  ") == "invalid content: must not be empty"
    assert tools.error("store_memory", content="x", path="/a/../b") == (
        "invalid path: use /-separated names, e.g. /actin/branching"
    )
    assert tools.error("store_memory", content="x", tags=[""]) == (
        "invalid tags: each tag is 1 to 100 printable characters"
    )
    assert tools.error("update_memory", id=memory) == (
        "invalid update: give at least one of content, summary, tags, path"
    )
    missing = "urn:labbrain:memory:" + "f" * 32
    assert tools.error("get_memory", id=missing) == (
        f"no memory '{missing}'; search_memories finds memory ids in the active domain"
    )
    assert tools.error("get_memory", id="not an id") == (
        "no memory 'not an id'; search_memories finds memory ids in the active domain"
    )
    assert tools.error("delete_memory", id=missing).startswith(f"no memory '{missing}'")
    assert tools.error("update_memory", id=missing, content="x").startswith("no memory")


def test_delete_removes_every_edge_to_and_from_the_memory(tools: Tools) -> None:
    tools.domain("other")
    outside = tools.store("A memory of another domain")
    tools.domain("actin")
    doomed = tools.store("Doomed")
    kept = tools.store("Kept")
    third = tools.store("Third")
    out_edge = tools.connect(doomed, kept, "supports", 0.7)
    in_edge = tools.connect(third, doomed, "refines", 0.4)
    control = tools.connect(kept, third, "follows", 0.5)
    out_ref = tools.cross(doomed, outside)
    tools.ok("select_domain", id="other")
    in_ref = tools.cross(outside, doomed, bidirectional=True)
    tools.ok("select_domain", id="actin")
    assert about(tools.brain, doomed) > 0

    deleted = tools.ok("delete_memory", id=doomed)
    assert deleted == {
        "id": doomed,
        "domain": "actin",
        "removedEdges": [out_edge, in_edge],
        "removedCrossReferences": [out_ref, in_ref],
        "availableActions": ["search_memories", "store_memory"],
    }
    assert about(tools.brain, doomed) == 0
    for edge in (out_edge, in_edge, out_ref, in_ref):
        assert about(tools.brain, edge) == 0
    assert count(tools.brain, "GRAPH ?g { ?e a lb:Link }") == 1
    assert [e["id"] for e in tools.ok("get_memory", id=kept)["edges"]] == [control]
    assert tools.ok("get_memory", id=outside)["crossReferences"] == []
    assert tools.error("get_memory", id=doomed).startswith(f"no memory '{doomed}'")


# ---------------------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------------------

CORPUS = {
    "branching": (
        "Arp2/3 nucleates branched actin networks at endocytic sites",
        "/actin/branching",
        ["actin", "structure"],
    ),
    "capping": ("Capping protein limits the growth of barbed ends", "/actin/capping", ["actin"]),
    "tension": (
        "High membrane tension slows clathrin-mediated endocytosis",
        "/tension",
        ["tension"],
    ),
    "interplay": (
        "Actin force overcomes membrane tension during internalization",
        "/tension/actin",
        ["actin", "tension"],
    ),
    "cytosim": ("Cytosim simulations of endocytic actin", "/simulation", ["simulation"]),
}


def test_search_ranks_and_filters(tools: Tools) -> None:
    tools.domain("lab")
    ids = {}
    for name, (content, path, tags) in CORPUS.items():
        ids[tools.store(content, path=path, tags=tags)] = name

    def names(**arguments: Any) -> list[str]:
        answer = tools.ok("search_memories", **arguments)
        assert answer["listed"] == len(answer["results"])
        return [ids[hit["id"]] for hit in answer["results"]]

    # Both words first; then one word, "tension" (in 2 of 5) weighing more than "actin"
    # (in 4 of 5), repeated words (text and tag) and short texts scoring higher.
    assert names(query="actin tension") == [
        "interplay",
        "tension",
        "branching",
        "cytosim",
        "capping",
    ]
    best = tools.ok("search_memories", query="actin tension")["results"][0]
    assert best["matched"] == ["actin", "tension"] and best["score"] > 0
    assert best["summary"] == CORPUS["interplay"][0] and best["tags"] == ["actin", "tension"]
    assert names(query="endocytic") == ["cytosim", "branching"]
    assert names(query="actin", tags=["ACTIN"]) == ["interplay", "branching", "capping"]
    assert names(query="actin", tags=["actin", "tension"]) == ["interplay"]
    assert names(query="actin", path="/actin") == ["branching", "capping"]
    assert names(query="actin", path="/tension/") == ["interplay"]
    assert names(query="tension", path="/tension") == ["tension", "interplay"]
    assert names(query="actin", path="/act") == []
    # No words: the filtered memories, newest first.
    assert names(query="", path="/tension") == ["interplay", "tension"]
    assert names(query="", tags=["simulation"]) == ["cytosim"]

    capped = tools.ok("search_memories", query="actin", limit=2)
    assert capped["listed"] == 2
    assert capped["note"] == "showing 2 of 4; raise limit (up to 100) or add tags/path"
    none = tools.ok("search_memories", query="myosin")
    assert none["results"] == [] and none["note"] == (
        "no memory matches; try other words or fewer filters (store_memory adds one)"
    )


# ---------------------------------------------------------------------------------------
# Edges
# ---------------------------------------------------------------------------------------


def test_every_edge_type_and_an_edge_to_a_lab_node(lab: Tools) -> None:
    lab.domain("tension")
    source = lab.store("Osmotic shock experiments", tags=["tension"])
    targets = [lab.store(f"Target {n}") for n in range(6)]
    kinds = ["follows", "relates_to", "supports", "contradicts", "refines", "synthesizes"]
    edges = [
        lab.connect(source, target, kind, 0.1 * (n + 1))
        for n, (target, kind) in enumerate(zip(targets, kinds, strict=True))
    ]
    to_claim = lab.ok(
        "connect_memories", source=source, target=CLAIM_UID, type="supports", strength=0.8
    )
    assert to_claim["availableActions"] == [
        "traverse_memories",
        "update_edge_strength",
        "remove_edge",
    ]
    edge = to_claim["edge"]
    assert edge["target"] == {"kind": "node", "id": CLAIM_UID, "memory": None, "node": CLAIM_REF}
    assert (edge["type"], edge["strength"], edge["crossDomain"], edge["domain"]) == (
        "supports",
        0.8,
        False,
        "tension",
    )
    assert edge["source"]["id"] == source and edge["description"] is None

    detail = lab.ok("get_memory", id=source)
    assert [(e["id"], e["type"], e["strength"]) for e in detail["edges"]] == [
        *(
            (e, k, round(0.1 * (n + 1), 4))
            for n, (e, k) in enumerate(zip(edges, kinds, strict=True))
        ),
        (edge["id"], "supports", 0.8),
    ]
    assert detail["edges"][-1]["target"]["node"] == CLAIM_REF
    incoming = lab.ok("get_memory", id=targets[0])["edges"]
    assert [(e["id"], e["source"]["id"]) for e in incoming] == [(edges[0], source)]

    # In RDF: an lb:Link in the domain graph, derived from the lab node it points to.
    rows = select(
        lab.brain,
        f"""SELECT ?type ?strength ?target ?from WHERE {{ GRAPH <urn:labbrain:domain:tension> {{
            <{edge["id"]}> a lb:Link ; lb:linkSource <{source}> ; lb:linkTarget ?target ;
              lb:linkType ?type ; lb:strength ?strength ; prov:wasDerivedFrom ?from }} }}""",
    )
    assert rows == [
        {
            "type": "https://w3id.org/labbrain/ns#supportsLink",
            "strength": "0.8",
            "target": CLAIM_REF["url"],
            "from": CLAIM_REF["url"],
        }
    ]
    # The lab's dataset graph is untouched by agent writes.
    assert (
        count(lab.brain, f"GRAPH <urn:labbrain:dataset:akamatsulab-sample> {{ <{source}> ?p ?o }}")
        == 0
    )


def test_edge_errors(lab: Tools) -> None:
    lab.domain("tension")
    one, two = lab.store("One"), lab.store("Two")
    assert lab.error("connect_memories", source=one, target=two, type="causes") == (
        "invalid arguments: type = 'causes': should be 'follows', 'relates_to', 'supports', "
        "'contradicts', 'refines' or 'synthesizes'"
    )
    text = lab.error("connect_memories", source=one, target=two, type="follows", strength=1.5)
    assert text == "invalid arguments: strength = 1.5: should be less than or equal to 1"
    text = lab.error("update_edge_strength", edge="x", strength=-0.1)
    assert text == "invalid arguments: strength = -0.1: should be greater than or equal to 0"
    assert lab.error("connect_memories", source=one, target="NoSuchUid", type="follows") == (
        "no memory or lab node 'NoSuchUid'; memory ids come from search_memories, lab node "
        "uids from search_nodes"
    )
    missing = "urn:labbrain:memory:" + "a" * 32
    assert lab.error("connect_memories", source=one, target=missing, type="follows") == (
        f"no memory '{missing}'; search_memories finds memory ids in the active domain"
    )
    assert lab.error("connect_memories", source=missing, target=one, type="follows").startswith(
        f"no memory '{missing}'"
    )
    assert lab.error("connect_memories", source=one, target=one, type="follows") == (
        "invalid target: an edge joins two different nodes"
    )
    edge = lab.connect(one, two, "follows", 0.5)
    assert lab.error("connect_memories", source=one, target=two, type="follows") == (
        f"invalid type: a follows edge from {one} to that target already exists ({edge}); "
        "update_edge_strength changes its strength"
    )
    lab.connect(one, two, "supports", 0.5)  # another type is another edge
    unknown = "urn:labbrain:link:" + "b" * 32
    for name, arguments in (
        ("update_edge_strength", {"edge": unknown, "strength": 0.5}),
        ("remove_edge", {"edge": unknown}),
        ("remove_edge", {"edge": one}),
    ):
        assert lab.error(name, **arguments) == (
            f"no edge '{arguments['edge']}'; get_memory lists a memory's edges with their ids"
        )
    assert count(lab.brain, "GRAPH ?g { ?e a lb:Link }") == 2


def test_library_checks_edge_values(sample_brain: LabBrain) -> None:
    memory = Memories(sample_brain, DiscourseReader(sample_brain), AgentWriter(sample_brain.store))
    memory.domains.create_domain("lib", "Library")
    one = memory.store_memory("One").memory.id
    two = memory.store_memory("Two").memory.id
    with pytest.raises(InvalidArgument) as bad_type:
        memory.connect_memories(one, two, "causes", 0.5)
    assert str(bad_type.value) == (
        "invalid type: 'causes' is not an edge type; use one of follows, relates_to, supports, "
        "contradicts, refines, synthesizes"
    )
    with pytest.raises(InvalidArgument) as bad_strength:
        memory.connect_memories(one, two, "follows", 1.5)
    assert str(bad_strength.value) == "invalid strength: must be between 0 and 1 (got 1.5)"
    with pytest.raises(InvalidArgument) as bad_depth:
        memory.traverse_memories(one, max_depth=11)
    assert str(bad_depth.value) == "invalid maxDepth: must be 1 to 10"
    with pytest.raises(InvalidArgument) as bad_types:
        memory.traverse_memories(one, types=["follows", "causes"])
    assert str(bad_types.value).startswith("invalid types: 'causes' is not an edge type")
    assert memory.connect_memories(one, two, "follows", 0.123456).edge.strength == 0.1235


def test_strength_update_and_edge_removal(tools: Tools) -> None:
    tools.domain("actin")
    one, two = tools.store("One"), tools.store("Two")
    edge = tools.connect(one, two, "supports", 0.9)
    changed = tools.ok("update_edge_strength", edge=edge, strength=0.25)
    assert changed["availableActions"] == ["traverse_memories", "remove_edge", "get_memory"]
    assert (changed["edge"]["id"], changed["edge"]["strength"]) == (edge, 0.25)
    assert TIME_RE.match(changed["edge"]["modified"])
    assert [(e["id"], e["strength"]) for e in tools.ok("get_memory", id=one)["edges"]] == [
        (edge, 0.25)
    ]
    rows = select(tools.brain, f"SELECT ?s WHERE {{ GRAPH ?g {{ <{edge}> lb:strength ?s }} }}")
    assert rows == [{"s": "0.25"}]
    walk = tools.ok("traverse_memories", start=one, minStrength=0.3)
    assert walk["nodeCount"] == 1
    # "at least minStrength": an edge exactly as strong as the bound is followed
    at_bound = tools.ok("traverse_memories", start=one, minStrength=0.25)
    assert at_bound["nodeCount"] == 2 and [e["id"] for e in at_bound["edges"]] == [edge]

    # Edges are kept in their source's domain and changed from there only.
    tools.domain("other")
    assert tools.error("remove_edge", edge=edge) == (
        f"invalid edge: edge {edge} is kept in domain 'actin' (its source's), not in the "
        "active domain 'other'; select_domain 'actin' first"
    )
    tools.ok("select_domain", id="actin")
    removed = tools.ok("remove_edge", edge=edge)
    assert removed == {
        "id": edge,
        "domain": "actin",
        "crossDomain": False,
        "availableActions": ["get_memory", "connect_memories"],
    }
    assert about(tools.brain, edge) == 0
    assert tools.ok("get_memory", id=one)["edges"] == []
    assert tools.ok("get_memory", id=two)["content"] == "Two"  # the memories stay


def test_cross_references(tools: Tools) -> None:
    tools.domain("tension")
    far = tools.store("Tension slows endocytosis")
    tools.domain("actin")
    near = tools.store("Actin force helps under tension")
    made = tools.ok(
        "add_cross_reference",
        source=near,
        target=far,
        description="actin is the answer to high tension",
        bidirectional=True,
    )
    assert made["availableActions"] == ["traverse_memories", "get_memory", "remove_edge"]
    reference = made["edge"]
    assert reference["target"]["memory"]["domain"] == "tension"
    assert (
        reference["type"],
        reference["strength"],
        reference["crossDomain"],
        reference["bidirectional"],
        reference["description"],
        reference["domain"],
    ) == ("relates_to", 1.0, True, True, "actin is the answer to high tension", "actin")
    # Listed by get_memory on both ends, never as an ordinary edge.
    for end in (near, far):
        detail = tools.ok("get_memory", id=end)
        assert [r["id"] for r in detail["crossReferences"]] == [reference["id"]]
        assert detail["edges"] == []
    assert tools.error("add_cross_reference", source=near, target=far, description="again") == (
        f"invalid type: a relates_to edge from {near} to that target already exists "
        f"({reference['id']}); update_edge_strength changes its strength"
    )
    assert tools.error("add_cross_reference", source=near, target=far, description=" ") == (
        "invalid description: must not be empty"
    )
    counts = {d["id"]: d["crossReferenceCount"] for d in tools.ok("list_domains")["domains"]}
    assert counts == {"actin": 1, "tension": 1}
    rows = select(
        tools.brain,
        f"""SELECT ?g ?bi WHERE {{ GRAPH ?g {{ <{reference["id"]}> a lb:CrossReference, lb:Link ;
            lb:bidirectional ?bi ; dct:description ?d }} }}""",
    )
    assert rows == [{"g": "urn:labbrain:domain:actin", "bi": "true"}]
    assert tools.ok("remove_edge", edge=reference["id"])["crossDomain"] is True
    assert tools.ok("get_memory", id=far)["crossReferences"] == []


# ---------------------------------------------------------------------------------------
# Traversal
# ---------------------------------------------------------------------------------------


def _chain(tools: Tools) -> tuple[dict[str, str], dict[str, str]]:
    """a -follows 0.9-> b -supports 0.6-> c -refines 0.3-> d, and a -contradicts 0.2-> e."""
    tools.domain("chain")
    nodes = {name: tools.store(f"memory {name}") for name in "abcde"}
    edges = {
        "ab": tools.connect(nodes["a"], nodes["b"], "follows", 0.9),
        "bc": tools.connect(nodes["b"], nodes["c"], "supports", 0.6),
        "cd": tools.connect(nodes["c"], nodes["d"], "refines", 0.3),
        "ae": tools.connect(nodes["a"], nodes["e"], "contradicts", 0.2),
    }
    return nodes, edges


def _levels(walk: Json, names: dict[str, str]) -> list[list[str]]:
    by_id = {v: k for k, v in names.items()}
    return [[by_id.get(n["id"], n["id"]) for n in level["nodes"]] for level in walk["levels"]]


def _edges(walk: Json, edges: dict[str, str]) -> list[str]:
    by_id = {v: k for k, v in edges.items()}
    return [by_id.get(e["id"], e["id"]) for e in walk["edges"]]


def test_traversal_depth_types_strength_and_direction(tools: Tools) -> None:
    nodes, edges = _chain(tools)

    def walk(start: str = "a", **arguments: Any) -> Json:
        return tools.ok("traverse_memories", start=nodes[start], **arguments)

    one = walk(maxDepth=1)
    assert _levels(one, nodes) == [["a"], ["b", "e"]]  # strongest edge first
    assert _edges(one, edges) == ["ab", "ae"]
    assert one["start"]["id"] == nodes["a"] and one["truncated"] is False and one["note"] is None
    first = one["levels"][1]["nodes"][0]
    assert first == {
        "kind": "memory",
        "id": nodes["b"],
        "depth": 1,
        "viaEdge": edges["ab"],
        "memory": first["memory"],
        "node": None,
    }
    assert first["memory"]["summary"] == "memory b" and first["memory"]["domain"] == "chain"
    assert one["edges"][0] == {
        "id": edges["ab"],
        "type": "follows",
        "strength": 0.9,
        "source": nodes["a"],
        "target": nodes["b"],
        "crossDomain": False,
        "bidirectional": False,
    }
    deep = walk(maxDepth=3)
    assert _levels(deep, nodes) == [["a"], ["b", "e"], ["c"], ["d"]]
    assert _edges(deep, edges) == ["ab", "ae", "bc", "cd"] and deep["nodeCount"] == 5
    assert _levels(walk(maxDepth=2), nodes) == [["a"], ["b", "e"], ["c"]]
    typed = walk(maxDepth=5, types=["follows", "supports"])
    assert _levels(typed, nodes) == [["a"], ["b"], ["c"]] and _edges(typed, edges) == ["ab", "bc"]
    strong = walk(maxDepth=5, minStrength=0.5)
    assert _levels(strong, nodes) == [["a"], ["b"], ["c"]]
    assert _levels(walk("c", maxDepth=5, direction="outgoing"), nodes) == [["c"], ["d"]]
    assert _levels(walk("c", maxDepth=5, direction="incoming"), nodes) == [["c"], ["b"], ["a"]]
    assert _levels(walk("c", maxDepth=5), nodes) == [["c"], ["b", "d"], ["a"], ["e"]]
    lonely = walk("d", maxDepth=3, direction="outgoing")
    assert _levels(lonely, nodes) == [["d"]] and lonely["note"] == (
        "no edge passes the filters from this memory; connect_memories adds edges"
    )


def test_traversal_is_capped_with_a_note(make_settings: MakeSettings) -> None:
    with LabBrain(make_settings(memory_traverse_max_nodes=3)) as brain:
        tools = Tools(brain)
        nodes, edges = _chain(tools)
        capped = tools.ok("traverse_memories", start=nodes["a"], maxDepth=5)
        assert capped["truncated"] is True and capped["nodeCount"] == 3
        assert _levels(capped, nodes) == [["a"], ["b", "e"]]
        assert _edges(capped, edges) == ["ab", "ae"]
        assert capped["note"] == (
            "stopped at 3 nodes; lower maxDepth, name types or raise minStrength to see the rest"
        )


def test_traversal_reaches_lab_nodes_as_leaves(lab: Tools) -> None:
    lab.domain("tension")
    start = lab.store("Osmotic shock")
    lab.ok("connect_memories", source=start, target=CLAIM_UID, type="supports", strength=0.7)
    walk = lab.ok("traverse_memories", start=start, maxDepth=3)
    (leaf,) = walk["levels"][1]["nodes"]
    assert leaf["kind"] == "node" and leaf["id"] == CLAIM_UID and leaf["node"] == CLAIM_REF
    assert leaf["memory"] is None and len(walk["levels"]) == 2
    assert walk["edges"][0]["target"] == CLAIM_UID


def test_traversal_crosses_domains_only_when_asked(tools: Tools) -> None:
    tools.domain("tension")
    far = tools.store("far")
    beyond = tools.store("beyond")
    tools.connect(far, beyond, "follows", 0.8)
    tools.domain("actin")
    near = tools.store("near")
    one_way = tools.cross(near, far, description="one way", strength=0.9)

    local = tools.ok("traverse_memories", start=near, maxDepth=3)
    assert local["nodeCount"] == 1 and local["edges"] == []
    assert local["note"] == (
        "no edge within this domain passes the filters from this memory; 1 cross-domain "
        "reference(s) lead out: pass crossDomains=true to follow them"
    )
    crossing = tools.ok("traverse_memories", start=near, maxDepth=3, crossDomains=True)
    assert [
        [(n["id"], n["memory"]["domain"]) for n in level["nodes"]] for level in crossing["levels"]
    ] == [
        [(near, "actin")],
        [(far, "tension")],
        [(beyond, "tension")],
    ]
    assert crossing["edges"][0]["crossDomain"] is True and crossing["edges"][0]["id"] == one_way
    shallow = tools.ok(
        "traverse_memories", start=near, maxDepth=3, crossDomains=True, minStrength=0.95
    )
    assert shallow["nodeCount"] == 1

    # From the other side: a one-way reference is followed backwards only when incoming
    # edges are; a bidirectional one is followed both ways.
    tools.ok("select_domain", id="tension")
    back = tools.ok(
        "traverse_memories", start=far, crossDomains=True, direction="outgoing", maxDepth=2
    )
    assert [[n["id"] for n in level["nodes"]] for level in back["levels"]] == [[far], [beyond]]
    both = tools.ok("traverse_memories", start=far, crossDomains=True, maxDepth=2)
    assert {n["id"] for n in both["levels"][1]["nodes"]} == {beyond, near}
    tools.ok("select_domain", id="actin")
    tools.ok("remove_edge", edge=one_way)
    tools.cross(near, far, bidirectional=True)
    tools.ok("select_domain", id="tension")
    again = tools.ok(
        "traverse_memories", start=far, crossDomains=True, direction="outgoing", maxDepth=2
    )
    assert [n["id"] for n in again["levels"][1]["nodes"]] == [near, beyond]


def test_a_traversal_names_the_cross_domain_references_it_did_not_follow(tools: Tools) -> None:
    tools.domain("tension")
    far = tools.store("far")
    tools.domain("actin")
    near, here = tools.store("near"), tools.store("here")
    tools.connect(near, here, "follows", 0.5)
    tools.cross(here, far, description="one way", strength=0.9)
    beside = tools.ok("traverse_memories", start=near, maxDepth=3)
    assert beside["nodeCount"] == 2
    assert beside["note"] == (
        "1 cross-domain reference(s) not followed: pass crossDomains=true to follow them"
    )
    crossing = tools.ok("traverse_memories", start=near, maxDepth=3, crossDomains=True)
    assert crossing["nodeCount"] == 3 and crossing["note"] is None


# ---------------------------------------------------------------------------------------
# Transfer
# ---------------------------------------------------------------------------------------


def test_transfer_moves_the_memory_and_rewires_its_edges(lab: Tools) -> None:
    brain = lab.brain
    lab.domain("target")
    resident = lab.store("Already in the target domain")
    lab.domain("source")
    moving = lab.store("The memory that moves", tags=["move"], summary="mover")
    left = lab.store("Stays behind")
    pointer = lab.store("Points at the mover")
    to_left = lab.connect(moving, left, "supports", 0.6)  # -> cross reference, moves along
    from_pointer = lab.connect(pointer, moving, "follows", 0.4)  # -> cross reference, stays
    to_claim = lab.ok(
        "connect_memories", source=moving, target=CLAIM_UID, type="relates_to", strength=0.5
    )["edge"]["id"]  # moves along
    lab.ok("select_domain", id="target")
    from_resident = lab.cross(resident, moving, description="was far away")  # -> edge
    lab.ok("select_domain", id="source")
    before = lab.ok("get_memory", id=moving)
    prov_before = select(
        brain,
        f"SELECT ?p ?o WHERE {{ GRAPH ?g {{ <{moving}> ?p ?o }} }} ORDER BY ?p ?o",
    )

    moved = lab.ok("transfer_memory", id=moving, toDomain="target")
    assert moved == {
        "memory": {
            "id": moving,
            "domain": "target",
            "summary": "mover",
            "path": "/",
            "tags": ["move"],
            "created": before["created"],
        },
        "fromDomain": "source",
        "toDomain": "target",
        "edgesMoved": [to_claim],
        "edgesBecameCrossReferences": [to_left, from_pointer],
        "crossReferencesBecameEdges": [from_resident],
        "note": "moved to domain 'target' with its id, created time and provenance; 1 edge(s) "
        "moved along, 2 edge(s) to memories left in 'source' became cross-domain references, "
        "1 cross-domain reference(s) became ordinary edges",
        "availableActions": ["select_domain", "get_memory", "traverse_memories"],
    }
    # Same quads (id, created time, PROV), now only in the target graph.
    assert graph_of(brain, moving) == ["urn:labbrain:domain:target"]
    after = select(
        brain, f"SELECT ?p ?o WHERE {{ GRAPH ?g {{ <{moving}> ?p ?o }} }} ORDER BY ?p ?o"
    )
    assert after == prov_before
    # Each edge is kept with its source, typed as it now is.
    assert graph_of(brain, to_left) == ["urn:labbrain:domain:target"]
    assert graph_of(brain, to_claim) == ["urn:labbrain:domain:target"]
    assert graph_of(brain, from_pointer) == ["urn:labbrain:domain:source"]
    assert graph_of(brain, from_resident) == ["urn:labbrain:domain:target"]
    crosses = select(brain, "SELECT ?e WHERE { GRAPH ?g { ?e a lb:CrossReference } } ORDER BY ?e")
    assert {row["e"] for row in crosses} == {to_left, from_pointer}

    detail = lab.ok("get_memory", id=moving)
    assert detail["domain"] == "target" and detail["created"] == before["created"]
    assert detail["attributedTo"] == before["attributedTo"]
    assert detail["session"] == before["session"]
    assert [(e["id"], e["crossDomain"]) for e in detail["edges"]] == [
        (to_claim, False),
        (from_resident, False),
    ]
    references = {r["id"]: r for r in detail["crossReferences"]}
    assert set(references) == {to_left, from_pointer}
    assert references[to_left]["description"] == (
        f"was a supports edge in domain 'source' until {moving} moved to 'target'"
    )
    assert (references[to_left]["type"], references[to_left]["strength"]) == ("supports", 0.6)
    assert references[to_left]["bidirectional"] is False
    counts = {
        d["id"]: (d["memoryCount"], d["edgeCount"], d["crossReferenceCount"])
        for d in lab.ok("list_domains")["domains"]
    }
    assert counts == {"source": (2, 0, 2), "target": (2, 2, 2)}
    # The moved memory is no longer in the source domain's search.
    assert lab.ok("search_memories", query="memory moves")["results"] == []


# ---------------------------------------------------------------------------------------
# Idempotency, read-only stores, restarts, provenance, export
# ---------------------------------------------------------------------------------------


def test_idempotency_keys(tools: Tools) -> None:
    tools.domain("actin")
    first = tools.ok("store_memory", content="Once only", idempotencyKey="k-1")
    again = tools.ok("store_memory", content="Once only", idempotencyKey="k-1")
    assert again == first
    assert count(tools.brain, "GRAPH ?g { ?m a lb:MemoryNode }") == 1
    assert tools.error("store_memory", content="Something else", idempotencyKey="k-1") == (
        "invalid idempotencyKey: 'k-1' was already used for a store_memory call with other "
        "arguments; use a new key for a new write"
    )
    assert tools.error("create_domain", id="other", name="Other", idempotencyKey="k-1") == (
        "invalid idempotencyKey: 'k-1' was already used with store_memory; use a new key for "
        "this write"
    )
    other = tools.store("Second")
    memory = first["memory"]["id"]
    edge = tools.ok(
        "connect_memories",
        source=memory,
        target=other,
        type="follows",
        strength=0.5,
        idempotencyKey="k-2",
    )
    replay = tools.ok(
        "connect_memories",
        source=memory,
        target=other,
        type="follows",
        strength=0.5,
        idempotencyKey="k-2",
    )
    assert replay == edge
    assert count(tools.brain, "GRAPH ?g { ?e a lb:Link }") == 1
    deleted = tools.ok("delete_memory", id=other, idempotencyKey="k-3")
    assert tools.ok("delete_memory", id=other, idempotencyKey="k-3") == deleted


def test_a_read_only_server_refuses_writes(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        writer = Tools(brain)
        writer.domain("actin")
        memory = writer.store("Arp2/3 branches actin")
        writer.domain("tension", select=False)
        with LabBrain(settings_for(store_dir), read_only=True) as snapshot:
            reader = Tools(snapshot)
            refused = {
                "create_domain": {"id": "new", "name": "New"},
                "store_memory": {"content": "x"},
                "update_memory": {"id": memory, "content": "y"},
                "delete_memory": {"id": memory},
                "connect_memories": {"source": memory, "target": memory, "type": "follows"},
                "remove_edge": {"edge": "urn:labbrain:link:" + "0" * 32},
                "transfer_memory": {"id": memory, "toDomain": "tension"},
            }
            for name, arguments in refused.items():
                assert reader.error(name, **arguments) == f"{name} {READ_ONLY}", name
            # Reads work on the snapshot, with the writer's active domain.
            assert [h["id"] for h in reader.ok("search_memories", query="actin")["results"]] == [
                memory
            ]
            assert reader.ok("get_memory", id=memory)["content"] == "Arp2/3 branches actin"
            selected = reader.ok("select_domain", id="tension")
            assert selected["domain"]["active"] is True
            assert selected["note"] == (
                "the store is read-only here (another process holds it): this selection lasts "
                "for this server process and the access is not recorded"
            )
            assert reader.ok("search_memories", query="actin")["domain"] == "tension"
        assert writer.ok("list_domains")["active"] == "actin"  # the writer's choice stands
        assert count(brain, "GRAPH ?g { ?m a lb:MemoryNode }") == 1


def test_memories_survive_a_restart(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        tools = Tools(brain)
        tools.domain("actin", description="branched actin")
        one = tools.store("Arp2/3 branches actin", tags=["actin"], path="/actin")
        two = tools.store("Capping protein caps")
        edge = tools.connect(one, two, "refines", 0.75)
        tools.ok("store_memory", content="keyed", idempotencyKey="before-restart")
        listed = tools.ok("list_domains")
    with LabBrain(settings_for(store_dir)) as reopened:
        tools = Tools(reopened)
        assert tools.ok("list_domains") == listed  # active domain, counts, last access
        hits = tools.ok("search_memories", query="actin", path="/actin")["results"]
        assert [h["id"] for h in hits] == [one]
        detail = tools.ok("get_memory", id=one)
        assert [(e["id"], e["type"], e["strength"]) for e in detail["edges"]] == [
            (edge, "refines", 0.75)
        ]
        walk = tools.ok("traverse_memories", start=one)
        assert [n["id"] for n in walk["levels"][1]["nodes"]] == [two]
        tools.ok("store_memory", content="keyed", idempotencyKey="before-restart")
        assert count(reopened, "GRAPH ?g { ?m a lb:MemoryNode }") == 3


def test_provenance_sparql_and_export(tools: Tools) -> None:
    tools.domain("actin", description="branched actin")
    memory = tools.store("Arp2/3 branches actin", tags=["actin"])
    other = tools.store("Capping protein caps")
    edge = tools.connect(memory, other, "supports", 0.5)
    session = tools.server_session()
    for subject in (memory, edge, "urn:labbrain:domain:actin"):
        rows = select(
            tools.brain,
            f"""SELECT ?agent ?session ?at WHERE {{ GRAPH ?g {{ <{subject}>
                prov:wasAttributedTo ?agent ; lb:session ?session ; prov:generatedAtTime ?at }} }}""",
        )
        assert [(r["agent"], r["session"]) for r in rows] == [(AGENT, session)], subject
    rows = select(
        tools.brain,
        """SELECT ?memory ?content ?tag ?path WHERE { GRAPH <urn:labbrain:domain:actin> {
            ?memory a lb:MemoryNode ; sioc:content ?content ; lb:path ?path .
            OPTIONAL { ?memory lb:tag ?tag } } } ORDER BY ?content""",
    )
    assert rows == [
        {"memory": memory, "content": "Arp2/3 branches actin", "tag": "actin", "path": "/"},
        {"memory": other, "content": "Capping protein caps", "tag": None, "path": "/"},
    ]
    out = io.BytesIO()
    tools.brain.export(out, "nquads")
    exported = out.getvalue().decode()
    domain_lines = [
        line for line in exported.splitlines() if "<urn:labbrain:domain:actin> ." in line
    ]
    assert len(domain_lines) == tools.brain.store.count("urn:labbrain:domain:actin")
    assert f'<{memory}> <http://rdfs.org/sioc/ns#content> "Arp2/3 branches actin"' in exported
    assert f"<{edge}> <https://w3id.org/labbrain/ns#strength>" in exported
    assert "urn:labbrain:system" not in exported  # the active domain stays internal


def test_search_finds_a_word_in_any_form_as_node_search_does(tools: Tools) -> None:
    """search_memories analyses words as the node index does (lower case, accents folded,
    English stems): a plural finds the singular and the singular the plural, and a match is
    shown as the query wrote it."""
    tools.domain("forms")
    singular = tools.store("A branched network of actin filaments pushes the membrane.")
    plural = tools.store("Cortical networks stiffen under tension.")
    tools.store("Myosin motors walk along the cortex.")
    for query in ("network", "networks", "NETWORKS"):
        answer = tools.ok("search_memories", query=query)
        assert {hit["id"] for hit in answer["results"]} == {singular, plural}, query
        assert {tuple(hit["matched"]) for hit in answer["results"]} == {(query.lower(),)}
    # the other way round: the memory says "filaments", the query "filament"
    (hit,) = tools.ok("search_memories", query="filament")["results"]
    assert hit["id"] == singular and hit["matched"] == ["filament"]
    # accents are folded as the index folds them
    accented = tools.store("Le réseau cortical.")
    assert [h["id"] for h in tools.ok("search_memories", query="reseau")["results"]] == [accented]


def test_a_domain_is_renamed_in_place(tools: Tools) -> None:
    made = tools.domain("actin")
    memory = tools.store("Arp2/3 branches at 70 degrees")
    renamed = tools.ok("update_domain", id="actin", name="Actin networks")["domain"]
    assert (renamed["id"], renamed["name"], renamed["graph"]) == (
        "actin",
        "Actin networks",
        made["graph"],
    )
    assert renamed["memoryCount"] == 1 and renamed["active"] is True
    described = tools.ok("update_domain", id="actin", description="branching and capping")
    assert described["domain"]["name"] == "Actin networks"
    assert described["domain"]["description"] == "branching and capping"
    listed = tools.ok("list_domains")["domains"]
    assert [(d["id"], d["name"], d["description"]) for d in listed] == [
        ("actin", "Actin networks", "branching and capping")
    ]
    assert tools.ok("get_memory", id=memory)["domain"] == "actin"
    assert "give a new name" in tools.error("update_domain", id="actin")
    assert "list_domains" in tools.error("update_domain", id="myosin", name="Myosin")


def test_a_deleted_domain_takes_its_memories_and_the_references_to_them(tools: Tools) -> None:
    tools.domain("tension")
    far = tools.store("far")
    tools.domain("actin")
    near = tools.store("near")
    kept = tools.store("kept")
    tools.connect(near, kept, "follows", 0.5)
    reference = tools.cross(near, far, description="into tension")
    actin_before = tools.brain.store.count("urn:labbrain:domain:actin")
    reference_quads = count(tools.brain, f"GRAPH ?g {{ <{reference}> ?p ?o }}")
    assert reference_quads > 0

    tools.ok("select_domain", id="tension")
    deleted = tools.ok("delete_domain", id="tension")
    assert deleted["deleted"]["id"] == "tension" and deleted["deleted"]["memoryCount"] == 1
    assert deleted["crossReferencesRemoved"] == 1
    assert tools.brain.store.count("urn:labbrain:domain:tension") == 0
    assert graph_of(tools.brain, reference) == []
    # the actin domain lost the reference and nothing else
    assert tools.brain.store.count("urn:labbrain:domain:actin") == actin_before - reference_quads
    assert [d["id"] for d in tools.ok("list_domains")["domains"]] == ["actin"]
    assert "no memory domain is selected" in tools.error("search_memories", query="far").lower()
    tools.ok("select_domain", id="actin")
    assert tools.ok("get_memory", id=kept)["domain"] == "actin"
    assert tools.ok("get_memory", id=near)["crossReferences"] == []
    walk = tools.ok("traverse_memories", start=near, maxDepth=2)
    assert walk["nodeCount"] == 2 and walk["note"] is None
