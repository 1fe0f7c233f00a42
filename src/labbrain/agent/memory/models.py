"""Answer models of the memory-domain tools (the assistant's memory graph).

Field names are wire names (camelCase). Domains are named by their id (a slug; the named graph
is ``urn:labbrain:domain:<id>``), memory nodes and edges by their IRIs
(``urn:labbrain:memory:<hex>``, ``urn:labbrain:link:<hex>``), lab nodes by their uid with
full attribution (:class:`~labbrain.discourse.models.NodeRef`). Write answers carry
``availableActions``: the tools that make sense next.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from labbrain.discourse.models import NodeRef, listed_count

LinkTypeName = Literal["follows", "relates_to", "supports", "contradicts", "refines", "synthesizes"]
TraverseDirection = Literal["outgoing", "incoming", "both"]


class DomainInfo(BaseModel):
    """A memory domain with its counts and when it was last accessed."""

    id: str = Field(description="the domain's id; pass it to select_domain")
    name: str
    description: str
    graph: str = Field(description="the named graph holding the domain (for SPARQL)")
    created: str = Field(description="when the domain was created, ISO 8601")
    lastAccessed: str = Field(
        description="when the domain was last selected or written, ISO 8601 (reads do not count)"
    )
    memoryCount: int
    edgeCount: int = Field(description="edges between memory nodes of the domain and to lab nodes")
    crossReferenceCount: int = Field(
        description="cross-domain references from or to memory nodes of the domain"
    )
    active: bool = Field(description="true for the domain the memory tools work in")


class DomainResult(BaseModel):
    """A domain just created or selected."""

    domain: DomainInfo
    note: str | None = None
    availableActions: list[str] = Field(description="tools that make sense next")


class DeletedDomain(BaseModel):
    """A memory domain just deleted with everything it held."""

    deleted: DomainInfo
    crossReferencesRemoved: int = Field(
        description="cross-domain references from other domains into it, removed with it"
    )
    availableActions: list[str] = Field(description="tools that make sense next")


class DomainListResult(BaseModel):
    """Every memory domain, most recently accessed first."""

    domains: list[DomainInfo]
    listed: int = listed_count("domains")
    active: str | None = Field(description="id of the active domain, if one is selected")
    note: str | None = None


class MemoryRef(BaseModel):
    """A memory node in brief."""

    id: str = Field(description="the memory's id (an IRI); pass it to get_memory")
    domain: str = Field(description="id of the domain holding it")
    summary: str = Field(
        description="its summary, or the start of its content when it has no summary"
    )
    path: str = Field(description="where it is filed, e.g. /actin/branching")
    tags: list[str]
    created: str = Field(description="when it was stored, ISO 8601")


class EdgeEnd(BaseModel):
    """The target of an edge: a memory node or a discourse node of the lab."""

    kind: Literal["memory", "node"]
    id: str = Field(description="memory id, or the lab node's uid")
    memory: MemoryRef | None = None
    node: NodeRef | None = Field(
        default=None, description="the lab node with attribution (null if no longer loaded)"
    )


class EdgeInfo(BaseModel):
    """A typed, weighted edge; a cross-domain reference joins memories of two domains."""

    id: str = Field(description="the edge's id (an IRI); pass it to update_edge_strength")
    type: LinkTypeName
    strength: float = Field(description="0 (weak) to 1 (strong)")
    source: MemoryRef
    target: EdgeEnd
    crossDomain: bool = Field(description="true for a cross-domain reference")
    bidirectional: bool = Field(description="a cross-domain reference that reads both ways")
    description: str | None = Field(description="what a cross-domain reference says")
    domain: str = Field(description="the domain the edge is kept in (its source's)")
    created: str
    modified: str | None = None


class MemoryDetail(MemoryRef):
    """A memory node in full, with its edges and cross-domain references."""

    content: str
    hasSummary: bool = Field(description="false when summary is only the start of the content")
    modified: str | None = Field(description="when it was last updated, ISO 8601")
    attributedTo: str | None = Field(description="the agent that stored it")
    session: str | None = Field(description="the session it was stored in")
    edges: list[EdgeInfo] = Field(description="edges from and to it within its domain")
    crossReferences: list[EdgeInfo] = Field(description="references from and to other domains")


class MemoryResult(BaseModel):
    """A memory node just stored or updated."""

    memory: MemoryDetail
    availableActions: list[str] = Field(description="tools that make sense next")


class DeleteMemoryResult(BaseModel):
    """What deleting a memory node removed."""

    id: str
    domain: str
    removedEdges: list[str] = Field(description="ids of the edges from and to it")
    removedCrossReferences: list[str] = Field(description="ids of cross-domain references")
    availableActions: list[str] = Field(description="tools that make sense next")


class MemoryHit(MemoryRef):
    """One search result."""

    score: float = Field(description="BM25 relevance, higher is better (0 without a query)")
    matched: list[str] = Field(description="the query words it holds")


class SearchMemoriesResult(BaseModel):
    """Memory nodes of the active domain matching a query and filters, best first."""

    domain: str
    results: list[MemoryHit]
    listed: int = listed_count("results")
    note: str | None = None


class EdgeResult(BaseModel):
    """An edge or cross-domain reference just made or changed."""

    edge: EdgeInfo
    availableActions: list[str] = Field(description="tools that make sense next")


class RemoveEdgeResult(BaseModel):
    """An edge or cross-domain reference just removed."""

    id: str
    domain: str
    crossDomain: bool
    availableActions: list[str] = Field(description="tools that make sense next")


class TraversalNode(BaseModel):
    """A node reached by a traversal."""

    kind: Literal["memory", "node"]
    id: str = Field(description="memory id, or the lab node's uid")
    depth: int
    viaEdge: str | None = Field(description="id of the edge it was first reached by")
    memory: MemoryRef | None = None
    node: NodeRef | None = Field(
        default=None, description="the lab node with attribution (null if no longer loaded)"
    )


class TraversalLevel(BaseModel):
    """The nodes first reached at one depth (0 is the start)."""

    depth: int
    nodes: list[TraversalNode]


class TraversedEdge(BaseModel):
    """An edge the traversal followed."""

    id: str
    type: LinkTypeName
    strength: float
    source: str = Field(description="memory id")
    target: str = Field(description="memory id, or lab node uid")
    crossDomain: bool
    bidirectional: bool


class TraversalResult(BaseModel):
    """Breadth-first traversal from a memory node: nodes by depth, and the edges followed."""

    start: MemoryRef
    levels: list[TraversalLevel]
    edges: list[TraversedEdge]
    nodeCount: int
    truncated: bool = False
    note: str | None = None


class TransferResult(BaseModel):
    """A memory node moved to another domain, and what became of its edges."""

    memory: MemoryRef
    fromDomain: str
    toDomain: str
    edgesMoved: list[str] = Field(description="edges that moved along (e.g. to lab nodes)")
    edgesBecameCrossReferences: list[str] = Field(
        description="edges to nodes left behind, now cross-domain references"
    )
    crossReferencesBecameEdges: list[str] = Field(
        description="references to nodes of the target domain, now ordinary edges"
    )
    note: str
    availableActions: list[str] = Field(description="tools that make sense next")
