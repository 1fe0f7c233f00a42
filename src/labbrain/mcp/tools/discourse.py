"""The discourse-graph tools: search, read and walk the lab's nodes and typed relations.

A thin adapter over :class:`~labbrain.discourse.reader.DiscourseReader`. Tool names and
arguments are those of the reference Discourse Graph MCP server, so an existing client
configuration keeps working; the answers carry more: attribution on every node, typed and text
links, datasets, caps with notes. ``get_node`` records a visit in the active project
(:meth:`~labbrain.agent.projects.projects.Projects.note_read`); ``get_node_images`` attaches the
key figure where the user enabled image fetching.
"""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from mcp_types import CallToolResult, ImageContent
from pydantic import Field

from labbrain.discourse.models import (
    ClaimStatusResult,
    ContributionsResult,
    GapsResult,
    LinkedNodesResult,
    NeighborhoodResult,
    NodeDetail,
    NodeImagesResult,
    PathResult,
    RelationshipsResult,
    RelationTypesResult,
    SchemaResult,
    SearchNodesResult,
)
from labbrain.mcp.common import WRITE, ToolContext, ToolSpec, answer
from labbrain.mcp.images import ImageRefused, fetch_image

Uid = Annotated[
    str, Field(description="the node's uid, e.g. 'CnOU48Obk' (search_nodes finds uids)")
]
Dataset = Annotated[
    str | None,
    Field(description="only this loaded dataset (slug, see get_schema); default: all of them"),
]
NodeTypeArg = Annotated[
    str | None,
    Field(description="node type label or code, e.g. 'Claim', 'CLM', 'RES'; see get_schema"),
]
DirectionArg = Annotated[
    Literal["outgoing", "incoming", "both"],
    Field(description="outgoing: from this node; incoming: to this node; both"),
]


def search_nodes(
    context: ToolContext,
    query: Annotated[str, Field(description="keywords, e.g. 'membrane tension force capping'")],
    nodeType: NodeTypeArg = None,
    creator: Annotated[str | None, Field(description="only nodes by this researcher")] = None,
    orderBy: Annotated[
        Literal["relevance", "created", "modified", "title"],
        Field(description="relevance (default) or a field to sort by"),
    ] = "relevance",
    sortDirection: Annotated[
        Literal["asc", "desc"], Field(description="for created/modified/title")
    ] = "desc",
    limit: Annotated[int, Field(ge=1, le=100, description="at most this many results")] = 10,
    dataset: Dataset = None,
    mode: Annotated[
        Literal["keyword", "semantic", "hybrid"] | None,
        Field(
            description="keyword: BM25 over the words; semantic: by meaning (finds "
            "paraphrases that share no word); hybrid: both fused. Default: hybrid when "
            "embeddings were computed (embed_nodes), else keyword"
        ),
    ] = None,
) -> SearchNodesResult:
    """Find discourse nodes (Questions, Claims, Evidence, Results, ...) by keywords or
    by meaning.

    Keyword mode is full-text BM25 over titles and content, title matches first;
    semantic mode compares meanings (embeddings), so "kids are less susceptible" finds
    "children have a lower attack rate"; hybrid fuses both rankings. Filter by node type,
    creator or dataset, or sort by date or title. Each result has uid, type, title,
    creator, created date, url, a snippet and its image count; `mode` says how they were
    found. Next: get_node(uid) for the full text and links; cite creator and url."""
    return context.reader.search_nodes(
        query,
        node_type=nodeType,
        creator=creator,
        order_by=orderBy,
        descending=sortDirection == "desc",
        limit=limit,
        dataset=dataset,
        mode=mode,
    )


def get_node(context: ToolContext, uid: Uid, dataset: Dataset = None) -> NodeDetail:
    """Read one node in full: its markdown, type, title, creator, dates, url, image URLs,
    and every linked node (typed relations with label and direction, and text
    references), each with its own attribution.

    Use after search_nodes. Next: get_claim_status for a claim, get_node_neighborhood to
    look further, get_node_images for figures. While a project is active (see
    set_active_project), the read is recorded as a visit in it."""
    return context.projects.note_read(context.reader.get_node(uid, dataset))


def get_linked_nodes(
    context: ToolContext, uid: Uid, direction: DirectionArg = "both", dataset: Dataset = None
) -> LinkedNodesResult:
    """List the nodes linked to or from a node: typed relations (e.g. this Evidence
    Supports that Claim) with their label and direction, then text references (links
    in the markdown). Each linked node comes with type, title, creator and url.

    Use to trace reasoning one step; get_node_neighborhood goes several hops."""
    return context.reader.get_linked_nodes(uid, direction, dataset)


def get_schema(context: ToolContext) -> SchemaResult:
    """Describe what the loaded graphs contain: the node types (label, code such as CLM,
    meaning, count), the relation types (e.g. Evidence Supports Claim, with counts) and
    the loaded datasets with the Roam graph each came from.

    Call it first when you do not know the graph's vocabulary."""
    return context.reader.get_schema()


def get_researcher_contributions(
    context: ToolContext,
    creator: Annotated[
        str | None, Field(description="one researcher; omit for everyone's statistics")
    ] = None,
    nodeType: NodeTypeArg = None,
) -> ContributionsResult:
    """Who contributed what: per researcher, node counts by type and first and last
    contribution dates; with a creator, also that researcher's nodes (newest first).

    Use for attribution and to find whose work to read."""
    return context.reader.get_researcher_contributions(creator, nodeType)


def get_node_images(
    context: ToolContext, uid: Uid, dataset: Dataset = None
) -> Annotated[CallToolResult, NodeImagesResult]:
    """List the figures (image URLs) embedded in a node; keyImage is the first, usually
    the main figure. The key image is attached as image content only where the user
    enabled fetching (and its host is allowed); otherwise the URLs are returned.

    Show the key image with markdown ![legend](url) and say what it shows."""
    settings = context.brain.settings
    result = context.reader.get_node_images(uid, dataset)
    if result.keyImage is None or not settings.image_fetch:
        if result.keyImage is not None:
            result.note = "images are not fetched (LABBRAIN_IMAGE_FETCH is off); use the URLs"
        return answer(result)
    try:
        image = fetch_image(result.keyImage, settings)
    except ImageRefused as refusal:
        result.note = f"key image not fetched: {refusal}"
        return answer(result)
    result.note = "the key image is attached"
    encoded = base64.b64encode(image.data).decode("ascii")
    return answer(result, ImageContent(type="image", data=encoded, mime_type=image.mime_type))


def get_relationships(
    context: ToolContext,
    sourceUid: Annotated[str | None, Field(description="only relations from this node")] = None,
    destinationUid: Annotated[str | None, Field(description="only relations to this node")] = None,
    relationshipType: Annotated[
        str | None, Field(description="only this label, e.g. 'Supports', 'Opposes'")
    ] = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
) -> RelationshipsResult:
    """Query typed relations between nodes (e.g. which Evidence Supports which Claim),
    filtered by source node, destination node and/or relation label. Both ends come
    with attribution.

    get_relation_types lists the labels."""
    return context.reader.get_relationships(
        sourceUid, destinationUid, relationshipType, dataset, limit
    )


def get_relation_types(context: ToolContext) -> RelationTypesResult:
    """List the relation types of the loaded graphs (label, source and destination node
    types, inverse label, the core relation it specialises) with how many instances
    each has, per dataset.

    Use the labels with get_relationships, get_node_neighborhood (relationshipTypeFilter)
    or find_path (relationshipTypes)."""
    return context.reader.get_relation_types()


def get_node_neighborhood(
    context: ToolContext,
    uid: Uid,
    depth: Annotated[int, Field(ge=1, le=4, description="hops to go out, 1-4")] = 2,
    direction: DirectionArg = "both",
    nodeTypeFilter: NodeTypeArg = None,
    relationshipTypeFilter: Annotated[
        str | None, Field(description="only follow this relation label (e.g. 'Supports')")
    ] = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="at most this many nodes")] = 300,
) -> NeighborhoodResult:
    """Explore around a node: breadth-first over typed relations and text links, up to
    4 hops, nodes grouped by hop (each with the node and relation that reached it) plus
    the edges among them. Filter by node type or relation label.

    Use for local context and multi-step reasoning chains; find_path joins two nodes."""
    return context.reader.get_node_neighborhood(
        uid, depth, direction, nodeTypeFilter, relationshipTypeFilter, dataset, limit
    )


def find_path(
    context: ToolContext,
    fromUid: Uid,
    toUid: Uid,
    maxHops: Annotated[int, Field(ge=1, le=6, description="longest path to look for")] = 4,
    relationshipTypes: Annotated[
        list[str] | None, Field(description="only follow these relation labels")
    ] = None,
    dataset: Dataset = None,
) -> PathResult:
    """Find the shortest chains of typed relations joining two nodes (relations may be
    followed against their direction; each hop says which). Every hop names its
    relation and both nodes with attribution.

    Use to explain how a result bears on a question or a claim."""
    return context.reader.find_path(fromUid, toUid, maxHops, relationshipTypes, dataset)


def get_claim_status(context: ToolContext, uid: Uid, dataset: Dataset = None) -> ClaimStatusResult:
    """Weigh a claim (or hypothesis, conclusion): the nodes that support and oppose it,
    directly or through one intermediate node, counts by creator, the sources the
    evidence cites, and flags: contested (both sides present), singleSource.

    Report both sides with their creators; get_node reads any of them in full."""
    return context.reader.get_claim_status(uid, dataset)


def find_gaps(
    context: ToolContext,
    nodeType: Annotated[
        str | None, Field(description="only gaps of this type: Question, Claim, ...")
    ] = None,
    dataset: Dataset = None,
) -> GapsResult:
    """List where the graph is thin: questions nothing addresses or informs, claims
    with no supporting or opposing evidence, hypotheses no result bears on, evidence
    linked to no source. Each list is capped and counted.

    Use to suggest what to read, test or write next; get_node reads any of them."""
    return context.reader.find_gaps(nodeType, dataset)


TOOLS = (
    ToolSpec(search_nodes, "Search nodes"),
    # not read-only: while a project is active, each read is recorded as a visit
    ToolSpec(get_node, "Get node", WRITE),
    ToolSpec(get_linked_nodes, "Get linked nodes"),
    ToolSpec(get_schema, "Get schema"),
    ToolSpec(get_researcher_contributions, "Researcher contributions"),
    ToolSpec(get_node_images, "Get node images"),
    ToolSpec(get_relationships, "Get relationships"),
    ToolSpec(get_relation_types, "Get relation types"),
    ToolSpec(get_node_neighborhood, "Node neighborhood"),
    ToolSpec(find_path, "Find path"),
    ToolSpec(get_claim_status, "Claim status"),
    ToolSpec(find_gaps, "Find gaps"),
)
