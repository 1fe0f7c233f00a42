"""Answer models of the discourse-graph tools (pydantic, so MCP clients get an outputSchema).

Field names are the wire names (camelCase, as the reference Discourse Graph MCP server uses).
Every model that names a node carries its attribution: creator, created date and URL.

The answers whose size grows with the graph (neighbourhood, relationships, claim status,
contributions) come in two levels of :data:`Detail`. ``full`` is everything; ``concise`` keeps,
for every node, what a citation needs (uid, nodeType, title, creator, created, url) and cuts
what follows from the rest of the answer: the dataset every node shares is said once at the
top (the answer's ``dataset``), a relation is a compact ``uid -Label-> uid`` string where the
answer gives its two ends as nodes anyway, a node already given is named again by its uid.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Direction = Literal["outgoing", "incoming", "both"]
#: How much an answer says: ``concise`` what a model needs to use and cite it, ``full`` all.
Detail = Literal["concise", "full"]
#: Node types per creator a concise contributions answer lists (the largest ones).
CONCISE_TYPES = 3


def _absent(value: object) -> bool:
    return value is None


def listed_count(of: str, **field: Any) -> Any:
    """A field counting the items of the answer's list ``of`` (of a list of lists: the inner
    items). The schema names that list under ``counts``, and the MCP output cap keeps the
    count equal to what the answer lists after a cut (:mod:`labbrain.mcp.caps`)."""
    return Field(
        description=f"items in {of} in this answer", json_schema_extra={"counts": of}, **field
    )


def total_count(what: str = "items that matched, however many are listed", **field: Any) -> Any:
    """A field counting everything the request matched, however many the answer lists."""
    return Field(description=what, **field)


class CitedNode(BaseModel):
    """A node with its attribution, as an answer that takes ``detail`` cites it: always uid,
    type, title, creator, created and url; its dataset unless the answer names the one dataset
    of all its nodes (concise detail), where the node leaves it out."""

    uid: str = Field(description="Roam page uid; pass it to get_node")
    dataset: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="slug of the loaded export the node belongs to; left out where the "
        "answer's dataset names it",
    )
    nodeType: str = Field(description="node type label, e.g. Claim, Evidence, Result")
    title: str = Field(description="title without the [[XXX]] - prefix")
    creator: str | None = Field(description="researcher who created the node")
    created: str | None = Field(description="creation time, ISO 8601")
    url: str = Field(description="the node's Roam page")


class NodeRef(CitedNode):
    """A node with its attribution (its dataset included)."""

    dataset: str = Field(description="slug of the loaded export the node belongs to")


class SearchResult(NodeRef):
    """One search hit."""

    modified: str | None
    snippet: str = Field(description="text around the match, matches in **bold**")
    imageCount: int
    score: float = Field(
        description="relevance, higher is better: BM25 (keyword), cosine similarity "
        "(semantic) or reciprocal-rank fusion plus links to the best hits (hybrid)"
    )


class SearchNodesResult(BaseModel):
    """Search results, best first (or in the requested order)."""

    results: list[SearchResult]
    listed: int = listed_count("results")
    mode: Literal["keyword", "semantic", "hybrid"] = Field(
        default="keyword", description="how the results were found"
    )
    note: str | None = None


class Link(BaseModel):
    """A connection of a node: a typed relation (with its label) or a text reference."""

    direction: Literal["outgoing", "incoming"]
    kind: Literal["typed", "text"] = Field(
        description="typed: a discourse relation; text: the text links to or mentions the node"
    )
    relationshipType: str | None = Field(description="relation label, e.g. Supports; None for text")
    node: NodeRef


class NodeDetail(NodeRef):
    """A node in full."""

    modified: str | None
    content: str = Field(description="the node's markdown")
    imageUrls: list[str]
    imageCount: int
    linkedNodes: list[Link]
    linkedNodesTruncated: bool = False
    alsoIn: list[str] = Field(
        default_factory=list, description="other datasets holding a node with this uid"
    )


class LinkedNodesResult(BaseModel):
    """The connections of one node."""

    node: NodeRef
    direction: Direction
    linkedNodes: list[Link]
    listed: int = listed_count("linkedNodes")
    total: int = total_count()
    truncated: bool = False
    note: str | None = None


class NodeTypeInfo(BaseModel):
    """A node type of the loaded datasets."""

    label: str
    code: str | None = Field(description="the [[XXX]] title abbreviation, when it has one")
    description: str
    count: int
    datasets: list[str]


class RelationTypeInfo(BaseModel):
    """A relation type (relationDef) of the loaded datasets."""

    relation: str = Field(description="the relationDef's IRI")
    label: str
    sourceType: str | None
    destinationType: str | None
    inverseLabel: str | None
    coreRelation: str | None = Field(description="the dg:/lb: relation it specialises")
    count: int
    dataset: str


class DatasetInfo(BaseModel):
    """A loaded export."""

    dataset: str
    graph: str
    domain: str | None = Field(description="the Roam graph the export came from")
    nodes: int
    loadedAt: str


class SchemaResult(BaseModel):
    """The node types, relation types and datasets of the store."""

    nodeTypes: list[NodeTypeInfo]
    relationTypes: list[RelationTypeInfo]
    datasets: list[DatasetInfo]


class CreatorStats(BaseModel):
    """One researcher's contributions."""

    creator: str
    total: int
    byType: dict[str, int] = Field(
        description=f"nodes per type; concise detail: the {CONCISE_TYPES} largest types only"
    )
    otherTypes: int | None = Field(
        default=None,
        exclude_if=_absent,
        description="concise detail: the nodes of the types left out of byType (byType's "
        "counts and this add up to total)",
    )
    firstContribution: str | None
    lastContribution: str | None


class ContributionsResult(BaseModel):
    """Per-creator statistics, and the nodes of one creator when a creator was given."""

    dataset: str | None = Field(
        default=None, exclude_if=_absent, description="the dataset of every node listed, if one"
    )
    creators: list[CreatorStats]
    nodes: list[CitedNode] = Field(default_factory=list)
    listed: int = listed_count("nodes", default=0)
    total: int = total_count(
        "the creator's nodes (of nodeType), however many are listed", default=0
    )
    truncated: bool = False
    note: str | None = None


class NodeImagesResult(BaseModel):
    """The images a node embeds."""

    node: NodeRef
    imageUrls: list[str]
    keyImage: str | None = Field(description="the first image, usually the main figure")
    imageCount: int
    note: str | None = None


class Relationship(BaseModel):
    """One typed relation between two nodes. In concise detail an end given in full by an
    earlier relation of the answer (of the same dataset: relations come grouped by dataset)
    is its uid alone."""

    relationshipType: str
    source: CitedNode | str
    destination: CitedNode | str


class RelationshipsResult(BaseModel):
    """Typed relations matching the filters."""

    dataset: str | None = Field(
        default=None, exclude_if=_absent, description="the dataset of every relation, if one"
    )
    relationships: list[Relationship]
    listed: int = listed_count("relationships")
    total: int = total_count()
    truncated: bool = False
    note: str | None = None


class RelationTypesResult(BaseModel):
    """Every relation type with its instance count."""

    relationTypes: list[RelationTypeInfo]


class NeighborNode(NodeRef):
    """A node reached by a traversal, with the hop that reached it."""

    hop: int
    viaUid: str | None = Field(description="the node it was reached from")
    relationshipType: str | None = Field(description="relation of that hop; None for text links")


class Edge(BaseModel):
    """A connection between two nodes of a traversal result."""

    sourceUid: str
    destinationUid: str
    relationshipType: str | None
    kind: Literal["typed", "text"]


class NeighborhoodResult(BaseModel):
    """Nodes around a start node, grouped by hop, with the edges among them. In concise
    detail a node is its citation alone and an edge the string ``uid -Label-> uid`` (a text
    link ``uid -(text)-> uid``)."""

    dataset: str = Field(description="the dataset of every node (a traversal stays in one)")
    start: CitedNode
    depth: int
    direction: Direction
    nodesByHop: list[list[NeighborNode | CitedNode]]
    edges: list[Edge | str]
    listed: int = listed_count("nodesByHop")
    truncated: bool = False
    note: str | None = None


class PathStep(BaseModel):
    """One hop of a path: ``source`` -[relationshipType]-> ``destination``."""

    source: NodeRef
    relationshipType: str
    destination: NodeRef
    traversed: Literal["forward", "backward"] = Field(
        description="forward: the path follows the relation's direction"
    )


class PathResult(BaseModel):
    """The shortest typed paths between two nodes."""

    found: bool
    length: int | None
    paths: list[list[PathStep]]
    truncated: bool = False
    note: str | None = None


class StanceNode(CitedNode):
    """A node that supports or opposes a claim, directly or through an intermediate node
    (in concise detail: the intermediate node's uid; it is listed itself, as a direct one)."""

    relationshipType: str
    via: CitedNode | str | None = None


class OutsideStance(BaseModel):
    """A stance a loaded nanopublication takes on a node, beside the lab's own relations."""

    stance: Literal["supports", "disputes"]
    property: str = Field(description="the property it is stated with, e.g. cito:disputes")
    subject: NodeRef | str = Field(
        description="what takes the stance: a node of the nanopublication's dataset "
        "(attributed), else its IRI (a paper, a person, a node not loaded)"
    )
    nanopub: str = Field(description="the nanopublication's URI")
    author: str | None = Field(description="its author's ORCID iD (IRI)")
    authorName: str | None = Field(description="its author's name (the ORCID iD without one)")
    date: str | None = Field(description="when it was published, ISO 8601")
    verified: bool = Field(
        description="its signature and trusty hash held at load (false: loaded unverified)"
    )
    dataset: str = Field(description="the dataset the nanopublication was loaded into")


class OutsideCounts(BaseModel):
    """How many stances loaded nanopublications take on a node (however many are listed)."""

    supports: int = 0
    disputes: int = 0
    unverified: int = Field(default=0, description="of them, from unverified nanopublications")


class GapNode(NodeRef):
    """A node of a gap list; a claim that nanopublications take stances on has their counts."""

    outside: OutsideCounts | None = Field(
        default=None,
        exclude_if=_absent,
        description="stances of loaded nanopublications on it (left out when none)",
    )


class CreatorStance(BaseModel):
    """How many supporting / opposing nodes one creator contributed."""

    supporting: int = 0
    opposing: int = 0


class ClaimStatusResult(BaseModel):
    """The evidence on one claim."""

    dataset: str = Field(description="the dataset of every node (the claim's)")
    claim: CitedNode
    supporting: list[StanceNode]
    opposing: list[StanceNode]
    countsByCreator: dict[str, CreatorStance]
    sources: list[CitedNode] = Field(description="source nodes the evidence links to")
    contested: bool = Field(description="both supporting and opposing nodes exist")
    singleSource: bool = Field(
        description="all the evidence goes back to at most one source (or one creator)"
    )
    outside: list[OutsideStance] = Field(
        default_factory=list,
        description="stances loaded nanopublications take on the claim (other datasets, or "
        "this one's when no typed relation states them), supporting first",
    )
    outsideCounts: OutsideCounts = Field(
        default_factory=OutsideCounts, description="the outside stances, however many are listed"
    )
    note: str | None = None


class GapsResult(BaseModel):
    """Where the discourse graph is thin."""

    unaddressedQuestions: list[NodeRef]
    claimsWithoutEvidence: list[GapNode] = Field(
        description="claims nothing of their dataset supports or opposes; each with the "
        "stances loaded nanopublications take on it, if any (outside)"
    )
    hypothesesWithoutResults: list[NodeRef]
    evidenceWithoutSource: list[NodeRef]
    counts: dict[str, int]
    truncated: bool = False
    note: str | None = None


class SparqlResult(BaseModel):
    """The answer to a read-only SPARQL query."""

    kind: Literal["select", "ask", "construct"]
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, str | None]] = Field(default_factory=list)
    boolean: bool | None = None
    turtle: str | None = None
    rowCount: int = 0
    truncated: bool = False
    note: str | None = None
