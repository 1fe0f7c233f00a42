"""The memory tools: memory domains, memory nodes, weighted edges, traversal, transfer.

A thin adapter over :class:`~labbrain.agent.memory.memories.Memories` (the context's
``memories``): each tool passes its arguments to one method and returns its model.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from labbrain.agent.memory.models import (
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
from labbrain.rdf.namespaces import LINK_PREFIX, MEMORY_PREFIX

DomainId = Annotated[
    str, Field(description="the domain's id, e.g. 'actin-models' (list_domains lists them)")
]
MemoryId = Annotated[
    str, Field(description=f"a memory id, '{MEMORY_PREFIX}<hex>' (search_memories finds them)")
]
EdgeId = Annotated[
    str, Field(description=f"an edge id, '{LINK_PREFIX}<hex>' (get_memory lists them)")
]
Strength = Annotated[
    float, Field(ge=0, le=1, description="how strong the edge is, from 0 (weak) to 1 (strong)")
]
EdgeType = Annotated[
    LinkTypeName,
    Field(
        description="follows (comes after), relates_to, supports, contradicts, refines "
        "(makes more precise), synthesizes (combines)"
    ),
]
Tags = Annotated[list[str] | None, Field(description="short labels, e.g. ['actin', 'todo']")]
MemoryPath = Annotated[
    str, Field(description="where the memory is filed, /-separated, e.g. /actin/branching")
]


def create_domain(
    context: ToolContext,
    id: Annotated[
        str, Field(description="new id: lowercase letters, digits, dashes, e.g. 'actin-models'")
    ],
    name: Annotated[str, Field(description="a human-readable name")],
    description: Annotated[str, Field(description="what the domain is for")] = "",
    select: Annotated[bool, Field(description="make it the active domain (default)")] = True,
    idempotencyKey: IdempotencyKey = None,
) -> DomainResult:
    """Create a memory domain: an isolated area of your memory (its own named graph),
    e.g. one per research topic. Memories of one domain never show up in another's
    search or traversal unless you ask for cross-domain traversal.

    By default the new domain becomes the active one, which every memory tool works in.
    Returns the domain with its counts. Next: store_memory; list_domains shows all."""
    return context.memories.domains.create_domain(
        id, name, description, select=select, key=idempotencyKey
    )


def list_domains(context: ToolContext) -> DomainListResult:
    """List every memory domain with its name, description, number of memories, edges
    and cross-domain references, when it was created and last accessed (selected or
    written), and which one is active.

    Most recently accessed first. Next: select_domain to work in one, create_domain for
    a new one."""
    return context.memories.domains.list_domains()


def select_domain(
    context: ToolContext, id: DomainId, idempotencyKey: IdempotencyKey = None
) -> DomainResult:
    """Make a domain the active one: store_memory, search_memories, connect_memories,
    traverse_memories and the other memory tools then work in it. The choice is kept
    across restarts, and the domain's last access time is updated.

    Returns the domain with its counts. Next: search_memories or store_memory."""
    return context.memories.domains.select_domain(id, key=idempotencyKey)


def store_memory(
    context: ToolContext,
    content: Annotated[str, Field(description="what to remember (markdown)")],
    path: MemoryPath = "/",
    tags: Tags = None,
    summary: Annotated[str | None, Field(description="a one-line summary")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> MemoryResult:
    """Store a new memory node in the active domain, filed under a path with optional
    tags and summary, attributed to you with the time and session.

    Returns the memory with its id. Next: connect_memories to link it to another memory
    or to a lab node, add_cross_reference for a memory of another domain."""
    return context.memories.store_memory(
        content, path=path, tags=tags or (), summary=summary, key=idempotencyKey
    )


def get_memory(context: ToolContext, id: MemoryId) -> MemoryDetail:
    """Read one memory node in full: content, summary, path, tags, created and modified
    times, who stored it, its edges (each with type, strength and the other end, a
    memory or an attributed lab node) and its cross-domain references.

    Works for a memory of any domain (the answer names its domain). Next:
    traverse_memories to go further, update_memory or connect_memories to change it."""
    return context.memories.get_memory(id)


def update_memory(
    context: ToolContext,
    id: MemoryId,
    content: Annotated[str | None, Field(description="new content (replaces it)")] = None,
    summary: Annotated[str | None, Field(description="new summary; '' removes it")] = None,
    tags: Annotated[
        list[str] | None, Field(description="new tags (replace them); [] clears them")
    ] = None,
    path: Annotated[str | None, Field(description="new path, e.g. /actin")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> MemoryResult:
    """Change a memory node of the active domain: only the fields given are replaced.
    Its id, created time and provenance stay; its modified time is set.

    Returns the memory as it is now. Next: get_memory or search_memories."""
    return context.memories.update_memory(
        id, content=content, summary=summary, tags=tags, path=path, key=idempotencyKey
    )


def delete_memory(
    context: ToolContext, id: MemoryId, idempotencyKey: IdempotencyKey = None
) -> DeleteMemoryResult:
    """Delete a memory node of the active domain together with every edge from or to
    it, including cross-domain references from other domains.

    Returns the ids of what was removed. This cannot be undone."""
    return context.memories.delete_memory(id, key=idempotencyKey)


def search_memories(
    context: ToolContext,
    query: Annotated[str, Field(description="keywords; '' lists by the filters alone")],
    tags: Annotated[
        list[str] | None, Field(description="only memories with all of these tags")
    ] = None,
    path: Annotated[
        str | None, Field(description="only memories filed at this path or below it")
    ] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="at most this many results")] = 10,
) -> SearchMemoriesResult:
    """Full-text search (BM25) over the memories of the active domain: summary, content
    and tags. Memories holding more of the words come first. Filter by tags (all must
    be present) and by path (/actin matches /actin and /actin/branching).

    Returns memory ids with summary, path, tags, score and matched words. Next:
    get_memory(id) or traverse_memories(id)."""
    return context.memories.search_memories(query, tags=tags or (), path=path, limit=limit)


def connect_memories(
    context: ToolContext,
    source: Annotated[str, Field(description="memory id in the active domain")],
    target: Annotated[
        str,
        Field(
            description="memory id in the active domain, or a lab node uid such as "
            "'n2rGK8We9' (search_nodes finds uids)"
        ),
    ],
    type: EdgeType,
    strength: Strength = 0.5,
    targetDataset: Annotated[
        str | None, Field(description="dataset of a lab node uid held by several")
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> EdgeResult:
    """Add a typed, weighted edge from a memory to another memory of the active domain,
    or to a discourse node of the lab (Claim, Evidence, ... by uid). Types: follows,
    relates_to, supports, contradicts, refines, synthesizes; strength 0 to 1.

    Returns the edge with its id and both ends (a lab node with its creator, date and
    url). Next: traverse_memories, update_edge_strength or remove_edge."""
    return context.memories.connect_memories(
        source, target, type, strength, dataset=targetDataset, key=idempotencyKey
    )


def update_edge_strength(
    context: ToolContext, edge: EdgeId, strength: Strength, idempotencyKey: IdempotencyKey = None
) -> EdgeResult:
    """Set the strength (0 to 1) of an edge or cross-domain reference kept in the active
    domain (edges are kept in their source's domain).

    Returns the edge as it is now. Next: traverse_memories with minStrength."""
    return context.memories.update_edge_strength(edge, strength, key=idempotencyKey)


def remove_edge(
    context: ToolContext, edge: EdgeId, idempotencyKey: IdempotencyKey = None
) -> RemoveEdgeResult:
    """Remove an edge or cross-domain reference kept in the active domain. The memories
    it joined stay.

    Returns the removed id. Next: get_memory to see the remaining edges."""
    return context.memories.remove_edge(edge, key=idempotencyKey)


def traverse_memories(
    context: ToolContext,
    start: Annotated[str, Field(description="memory id in the active domain")],
    maxDepth: Annotated[int, Field(ge=1, le=10, description="how many hops")] = 2,
    types: Annotated[
        list[LinkTypeName] | None, Field(description="follow only these edge types")
    ] = None,
    minStrength: Annotated[
        float, Field(ge=0, le=1, description="ignore edges weaker than this")
    ] = 0.0,
    crossDomains: Annotated[
        bool, Field(description="also follow cross-domain references into other domains")
    ] = False,
    direction: Annotated[
        TraverseDirection,
        Field(description="follow edges from a node (outgoing), to it (incoming) or both"),
    ] = "both",
) -> TraversalResult:
    """Walk the memory graph breadth-first from a memory: the memories (and lab nodes)
    reached at each depth, each first reached by which edge, and the edges followed.
    Limit it by depth, edge types and minimum strength; crossDomains also follows
    cross-domain references (each node names its domain).

    The answer is capped with a note. Next: get_memory on a node of interest."""
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
    source: Annotated[str, Field(description="memory id in the active domain")],
    target: Annotated[str, Field(description="memory id in another domain")],
    description: Annotated[str, Field(description="how the two memories relate")],
    bidirectional: Annotated[
        bool, Field(description="true: the reference reads both ways")
    ] = False,
    type: EdgeType = "relates_to",
    strength: Strength = 1.0,
    idempotencyKey: IdempotencyKey = None,
) -> EdgeResult:
    """Reference a memory of another domain from a memory of the active domain, with a
    description, one-way or bidirectional. Domains stay isolated: references are only
    followed by traverse_memories with crossDomains, and listed by get_memory.

    Returns the reference (an edge id). Next: traverse_memories with crossDomains."""
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
    """Move a memory node of the active domain to another domain, in one step, keeping
    its id, created time and provenance. Its edges to memories left behind become
    cross-domain references; references to memories of the target domain become
    ordinary edges; edges to lab nodes move along.

    The answer lists what became of each edge. Next: select_domain to work there."""
    return context.memories.transfer_memory(id, toDomain, key=idempotencyKey)


TOOLS = (
    ToolSpec(create_domain, "Create memory domain", WRITE),
    ToolSpec(list_domains, "List memory domains"),
    ToolSpec(select_domain, "Select memory domain", WRITE),
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
