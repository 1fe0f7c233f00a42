"""The memory tools: memory domains, memory nodes, weighted edges, traversal, transfer.

A thin adapter over :class:`~labbrain.agent.memory.memories.Memories` (the context's
``memories``): each tool passes its arguments to one method and returns its model.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from labbrain.agent.memory.models import (
    DeletedDomain,
    DeleteMemoryResult,
    DomainListResult,
    DomainResult,
    EdgeResult,
    LinkTypeName,
    MemoryDetail,
    MemoryResult,
    RemoveEdgeResult,
    SearchMemoriesResult,
    TransferResult,
    TraversalResult,
    TraverseDirection,
)
from labbrain.mcp.common import DESTRUCTIVE, WRITE, IdempotencyKey, ToolContext, ToolSpec

DomainId = Annotated[str, Field(description="domain id (from list_domains)")]
MemoryId = Annotated[str, Field(description="memory id (from search_memories)")]
EdgeId = Annotated[str, Field(description="edge id (from get_memory)")]
Strength = Annotated[float, Field(ge=0, le=1, description="0 weak to 1 strong")]
EdgeType = Annotated[
    LinkTypeName,
    Field(description="refines: more precise; synthesizes: combines"),
]
Tags = Annotated[list[str] | None, Field(description="labels, e.g. ['actin', 'todo']")]
MemoryPath = Annotated[str, Field(description="folder path, e.g. /actin/branching")]
ActiveMemoryId = Annotated[str, Field(description="memory id in the active domain")]


def create_domain(
    context: ToolContext,
    id: Annotated[str, Field(description="lowercase letters, digits, dashes, e.g. 'actin-models'")],
    name: Annotated[str, Field(description="display name")],
    description: Annotated[str, Field(description="what it is for")] = "",
    select: Annotated[bool, Field(description="make it active")] = True,
    idempotencyKey: IdempotencyKey = None,
) -> DomainResult:
    """Create a memory domain (e.g. one per topic), isolated from other domains' search
    and traversal. It becomes the active domain, which every memory tool works in.

    Next: store_memory."""
    return context.memories.domains.create_domain(
        id, name, description, select=select, key=idempotencyKey
    )


def update_domain(
    context: ToolContext,
    id: Annotated[str, Field(description="the domain's id (list_domains)")],
    name: Annotated[str | None, Field(description="the new display name")] = None,
    description: Annotated[str | None, Field(description="the new description")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> DomainResult:
    """Rename a memory domain and/or change its description; its id, which names its
    graph and which the other memory tools take, stays the same. Records an access.

    Next: list_domains."""
    return context.memories.domains.update_domain(
        id, name=name, description=description, key=idempotencyKey
    )


def delete_domain(
    context: ToolContext,
    id: Annotated[str, Field(description="the domain's id (list_domains)")],
    idempotencyKey: IdempotencyKey = None,
) -> DeletedDomain:
    """Delete a memory domain with all its memories and edges, for good, and the
    cross-domain references other domains hold to it; it is no longer selected anywhere.

    Next: list_domains, select_domain."""
    return context.memories.domains.delete_domain(id, key=idempotencyKey)


def list_domains(context: ToolContext) -> DomainListResult:
    """List every memory domain, most recently accessed first, with its description,
    counts, times, and which is active.

    Next: select_domain or create_domain."""
    return context.memories.domains.list_domains()


def select_domain(
    context: ToolContext, id: DomainId, idempotencyKey: IdempotencyKey = None
) -> DomainResult:
    """Make a domain the active one, which every memory tool then works in; kept across
    restarts. Returns the domain with its counts.

    Next: search_memories or store_memory."""
    return context.memories.domains.select_domain(id, key=idempotencyKey)


def store_memory(
    context: ToolContext,
    content: Annotated[str, Field(description="what to remember (markdown)")],
    path: MemoryPath = "/",
    tags: Tags = None,
    summary: Annotated[str | None, Field(description="one line")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> MemoryResult:
    """Store a new memory in the active domain, attributed to you. Returns it with its
    id.

    Next: connect_memories (to a memory or lab node), add_cross_reference (to another
    domain)."""
    return context.memories.store_memory(
        content, path=path, tags=tags or (), summary=summary, key=idempotencyKey
    )


def get_memory(context: ToolContext, id: MemoryId) -> MemoryDetail:
    """Read one memory of any domain in full, with its edges (typed, weighted, to a
    memory or an attributed lab node) and cross-domain references.

    Next: traverse_memories or update_memory."""
    return context.memories.get_memory(id)


def update_memory(
    context: ToolContext,
    id: MemoryId,
    content: Annotated[str | None, Field(description="new content")] = None,
    summary: Annotated[str | None, Field(description="'' removes it")] = None,
    tags: Annotated[list[str] | None, Field(description="new tags; [] clears them")] = None,
    path: Annotated[str | None, Field(description="new path")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> MemoryResult:
    """Change a memory of the active domain: only the fields given are replaced; its
    id, created time and provenance stay. Returns the memory as it is now.

    Next: get_memory."""
    return context.memories.update_memory(
        id, content=content, summary=summary, tags=tags, path=path, key=idempotencyKey
    )


def delete_memory(
    context: ToolContext, id: MemoryId, idempotencyKey: IdempotencyKey = None
) -> DeleteMemoryResult:
    """Delete a memory of the active domain and every edge from or to it, including
    cross-domain references from other domains. Cannot be undone.

    Returns the removed ids."""
    return context.memories.delete_memory(id, key=idempotencyKey)


def search_memories(
    context: ToolContext,
    query: Annotated[str, Field(description="keywords; '' lists by the filters alone")],
    tags: Annotated[list[str] | None, Field(description="must have all of these")] = None,
    path: Annotated[str | None, Field(description="this path or below, e.g. /actin")] = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
) -> SearchMemoriesResult:
    """Full-text search (BM25) over the active domain's memories (summary, content,
    tags), best match first, with score and matched words.

    Next: get_memory or traverse_memories."""
    return context.memories.search_memories(query, tags=tags or (), path=path, limit=limit)


def connect_memories(
    context: ToolContext,
    source: ActiveMemoryId,
    target: Annotated[str, Field(description="memory id, or lab node uid (search_nodes)")],
    type: EdgeType,
    strength: Strength = 0.5,
    targetDataset: Annotated[
        str | None, Field(description="dataset, if the uid is in several")
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> EdgeResult:
    """Add a typed, weighted edge from a memory to another memory of the active domain
    or to a lab node (Claim, Evidence, ... by uid).

    Next: traverse_memories, update_edge_strength, remove_edge."""
    return context.memories.connect_memories(
        source, target, type, strength, dataset=targetDataset, key=idempotencyKey
    )


def update_edge_strength(
    context: ToolContext, edge: EdgeId, strength: Strength, idempotencyKey: IdempotencyKey = None
) -> EdgeResult:
    """Set the strength of an edge or cross-domain reference kept in the active domain
    (an edge is kept in its source's domain). Returns the edge.

    Next: traverse_memories with minStrength."""
    return context.memories.update_edge_strength(edge, strength, key=idempotencyKey)


def remove_edge(
    context: ToolContext, edge: EdgeId, idempotencyKey: IdempotencyKey = None
) -> RemoveEdgeResult:
    """Remove an edge or cross-domain reference kept in the active domain; the memories
    it joined stay. Returns the removed id.

    Next: get_memory to see the remaining edges."""
    return context.memories.remove_edge(edge, key=idempotencyKey)


def traverse_memories(
    context: ToolContext,
    start: ActiveMemoryId,
    maxDepth: Annotated[int, Field(ge=1, le=10, description="hops")] = 2,
    types: Annotated[list[LinkTypeName] | None, Field(description="only these edge types")] = None,
    minStrength: Annotated[float, Field(ge=0, le=1, description="skip weaker edges")] = 0.0,
    crossDomains: Annotated[bool, Field(description="also follow cross-domain references")] = False,
    direction: Annotated[TraverseDirection, Field(description="edges to follow")] = "both",
) -> TraversalResult:
    """Walk the memory graph breadth-first from a memory: the memories and lab nodes
    reached at each depth, the edge that first reached each, and the edges followed.

    Next: get_memory on a node of interest."""
    return context.memories.traverse_memories(
        start,
        max_depth=maxDepth,
        types=types,
        min_strength=minStrength,
        cross_domains=crossDomains,
        direction=direction,
    )


def add_cross_reference(
    context: ToolContext,
    source: ActiveMemoryId,
    target: Annotated[str, Field(description="memory id in another domain")],
    description: Annotated[str, Field(description="how they relate")],
    bidirectional: Annotated[bool, Field(description="reads both ways")] = False,
    type: EdgeType = "relates_to",
    strength: Strength = 1.0,
    idempotencyKey: IdempotencyKey = None,
) -> EdgeResult:
    """Reference a memory of another domain from one of the active domain. Domains stay
    isolated: get_memory lists references; only traverse_memories with crossDomains
    follows them."""
    return context.memories.add_cross_reference(
        source,
        target,
        description,
        bidirectional=bidirectional,
        kind=type,
        strength=strength,
        key=idempotencyKey,
    )


def transfer_memory(
    context: ToolContext,
    id: MemoryId,
    toDomain: DomainId,
    idempotencyKey: IdempotencyKey = None,
) -> TransferResult:
    """Move a memory of the active domain to another domain, keeping its id and
    provenance; edges now crossing domains become cross-domain references, and back.

    Next: select_domain to work there."""
    return context.memories.transfer_memory(id, toDomain, key=idempotencyKey)


TOOLS = (
    ToolSpec(create_domain, "Create memory domain", WRITE),
    ToolSpec(list_domains, "List memory domains"),
    ToolSpec(select_domain, "Select memory domain", WRITE),
    ToolSpec(update_domain, "Update memory domain", WRITE),
    ToolSpec(delete_domain, "Delete memory domain", DESTRUCTIVE),
    ToolSpec(store_memory, "Store memory", WRITE),
    ToolSpec(get_memory, "Get memory"),
    ToolSpec(update_memory, "Update memory", DESTRUCTIVE),
    ToolSpec(delete_memory, "Delete memory", DESTRUCTIVE),
    ToolSpec(search_memories, "Search memories"),
    ToolSpec(connect_memories, "Connect memories", WRITE),
    ToolSpec(update_edge_strength, "Update edge strength", WRITE),
    ToolSpec(remove_edge, "Remove edge", DESTRUCTIVE),
    ToolSpec(traverse_memories, "Traverse memories"),
    ToolSpec(add_cross_reference, "Add cross-domain reference", WRITE),
    ToolSpec(transfer_memory, "Transfer memory", WRITE),
)
