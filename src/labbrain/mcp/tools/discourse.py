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
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ImageContent
from pydantic import Field

from labbrain.discourse.changes import WhatChangedResult, parse_since
from labbrain.discourse.changes import what_changed as changes_since
from labbrain.discourse.models import (
    ClaimStatusResult,
    ContributionsResult,
    Detail,
    Direction,
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
from labbrain.index.search_query import SearchQuery
from labbrain.mcp.common import VISITS_READ_BY, WRITE, ToolContext, ToolSpec, answer
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX

Uid = Annotated[str, Field(description="node uid, e.g. 'CnOU48Obk'")]
Dataset = Annotated[str | None, Field(description="only this dataset (slug); default: all")]
NodeTypeArg = Annotated[str | None, Field(description="type label or code: 'Claim', 'CLM'")]
DetailArg = Annotated[Detail, Field(description="how much of each node (see description)")]


def search_nodes(
    context: ToolContext,
    query: Annotated[str, Field(description="keywords, e.g. 'membrane tension'")],
    nodeType: NodeTypeArg = None,
    creator: Annotated[str | None, Field(description="only this researcher's")] = None,
    orderBy: Literal["relevance", "created", "modified", "title"] = "relevance",
    sortDirection: Literal["asc", "desc"] = "desc",
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    dataset: Dataset = None,
    mode: Annotated[
        Literal["keyword", "semantic", "hybrid"] | None,
        Field(
            description="default: hybrid once embeddings exist, else keyword; semantic "
            "for a question worded unlike the lab's notes"
        ),
    ] = None,
) -> SearchNodesResult:
    """Find discourse nodes (Questions, Claims, Evidence, Results, ...) by keywords
    (BM25, title matches first) or by meaning (semantic: finds paraphrases sharing no
    word; hybrid fuses both), filtered or sorted.

    Each hit is attributed (creator, created, url) with a snippet. Next: get_node(uid)
    for the full text and links; cite creator and url."""
    return context.reader.search_nodes(
        SearchQuery(
            query,
            mode=mode,
            limit=limit,
            graphs=(dataset,) if dataset else None,
            node_types=(nodeType,) if nodeType else None,
            creator=creator,
            order_by=orderBy,
            descending=sortDirection == "desc",
        )
    )


def get_node(context: ToolContext, uid: Uid, dataset: Dataset = None) -> NodeDetail:
    """Read one node in full: markdown, type, title, creator, dates, url, image URLs and
    every linked node (typed relations and text references), each attributed.

    Next: get_claim_status for a claim, get_node_neighborhood to look further. With a
    project active, the read is recorded as a visit (where the notebook tools are served)."""
    node = context.reader.get_node(uid, dataset)
    return context.projects.note_read(node) if context.records_visits else node


def get_linked_nodes(
    context: ToolContext, uid: Uid, direction: Direction = "both", dataset: Dataset = None
) -> LinkedNodesResult:
    """List the nodes linked to or from a node: typed relations (e.g. this Evidence
    Supports that Claim) with label and direction, then text references, each attributed.

    Traces reasoning one step; get_node_neighborhood goes several hops."""
    return context.reader.get_linked_nodes(uid, direction, dataset)


def get_schema(context: ToolContext) -> SchemaResult:
    """Describe what the loaded graphs contain: node types (label, code such as CLM,
    count), relation types (e.g. Evidence Supports Claim, with counts) and datasets.

    Call it first when you do not know the graph's vocabulary."""
    return context.reader.get_schema()


def get_researcher_contributions(
    context: ToolContext,
    creator: Annotated[str | None, Field(description="one researcher; omit for all")] = None,
    nodeType: NodeTypeArg = None,
    detail: DetailArg = "concise",
) -> ContributionsResult:
    """Who contributed what: per researcher, node counts by type and first and last
    dates; with a creator, also that researcher's nodes, newest first.

    detail: concise (default) counts each researcher's 3 largest types, full every type.
    Use for attribution and to find whose work to read."""
    return context.reader.get_researcher_contributions(creator, nodeType, detail=detail)


def get_node_images(
    context: ToolContext, uid: Uid, dataset: Dataset = None
) -> Annotated[CallToolResult, NodeImagesResult]:
    """List the figures (image URLs) embedded in a node; keyImage is the first, usually
    the main figure, attached as an image where the user enabled fetching.

    Show it with markdown ![legend](url) and say what it shows."""
    settings = context.brain.settings
    result = context.reader.get_node_images(uid, dataset)
    if result.keyImage is None or not settings.image_fetch:
        if result.keyImage is not None:
            result.note = "images are not fetched (LABBRAIN_IMAGE_FETCH is off); use the URLs"
        return answer(result)
    from labbrain.mcp.images import ImageRefused, fetch_image  # only where fetching is on

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
    sourceUid: str | None = None,
    destinationUid: str | None = None,
    relationshipType: Annotated[str | None, Field(description="a label, e.g. 'Supports'")] = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
    detail: DetailArg = "concise",
) -> RelationshipsResult:
    """Query typed relations (e.g. which Evidence Supports which Claim), filtered by
    source uid, destination uid and/or label, both ends attributed.

    detail: concise (default) gives a node in full once, then its uid; full gives both
    ends every time. get_relation_types lists the labels."""
    return context.reader.get_relationships(
        sourceUid, destinationUid, relationshipType, dataset, limit, detail=detail
    )


def get_relation_types(context: ToolContext) -> RelationTypesResult:
    """List the relation types (label, source and destination types, inverse label,
    core relation) with their counts per dataset.

    Use the labels with get_relationships, get_node_neighborhood or find_path."""
    return context.reader.get_relation_types()


def get_node_neighborhood(
    context: ToolContext,
    uid: Uid,
    depth: Annotated[int, Field(ge=1, le=4, description="hops")] = 2,
    direction: Direction = "both",
    nodeTypeFilter: NodeTypeArg = None,
    relationshipTypeFilter: Annotated[str | None, Field(description="a label to follow")] = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="most nodes")] = 300,
    detail: DetailArg = "concise",
) -> NeighborhoodResult:
    """Explore around a node: breadth-first over typed relations and text links, up to
    4 hops, attributed nodes grouped by hop plus the edges among them.

    detail: concise (default) gives edges as 'uid -Label-> uid'; full adds what reached
    each node. For local context; find_path joins two nodes."""
    return context.reader.get_node_neighborhood(
        uid,
        depth,
        direction,
        nodeTypeFilter,
        relationshipTypeFilter,
        dataset,
        limit,
        detail=detail,
    )


def find_path(
    context: ToolContext,
    fromUid: Uid,
    toUid: Uid,
    maxHops: Annotated[int, Field(ge=1, le=6)] = 4,
    relationshipTypes: Annotated[list[str] | None, Field(description="labels to follow")] = None,
    dataset: Dataset = None,
) -> PathResult:
    """Find the shortest chains of typed relations joining two nodes of one dataset,
    each hop naming its relation, its direction and both nodes, attributed.

    Use to explain how a result bears on a question or a claim."""
    return context.reader.find_path(fromUid, toUid, maxHops, relationshipTypes, dataset)


def get_claim_status(
    context: ToolContext,
    uid: Uid,
    dataset: Dataset = None,
    detail: DetailArg = "concise",
) -> ClaimStatusResult:
    """Weigh a claim (or hypothesis, conclusion): what supports and opposes it, directly
    or through one node, counts by creator, cited sources, contested and singleSource.

    detail: concise (default) names an intermediate node by uid, full gives it whole.
    Report both sides with their creators."""
    return context.reader.get_claim_status(uid, dataset, detail=detail)


def find_gaps(
    context: ToolContext,
    nodeType: Annotated[str | None, Field(description="Question, Claim, ...")] = None,
    dataset: Dataset = None,
) -> GapsResult:
    """List where the graph is thin: unaddressed questions, claims without evidence,
    hypotheses no result bears on, evidence with no source; capped and counted.

    Use to suggest what to read, test or write next."""
    return context.reader.find_gaps(nodeType, dataset)


def what_changed(
    context: ToolContext,
    ctx: Context,
    since: Annotated[
        str | None,
        Field(
            description="'7d', '24h', '2w' or an ISO date or time; omit for: since you last "
            "asked (the last 7 days the first time)"
        ),
    ] = None,
    nodeType: NodeTypeArg = None,
    creator: Annotated[str | None, Field(description="only this researcher's nodes")] = None,
    dataset: Dataset = None,
    catchUp: Annotated[
        bool,
        Field(description="a summary per person instead of every node and relation"),
    ] = False,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
) -> WhatChangedResult:
    """What changed in the lab's graph since a time, or since you last asked: every load
    or update of a dataset with its counts, the nodes added, edited and removed (title,
    type, creator) and the relations added and removed, filtered by node type, creator or
    dataset; and per person what they added (catchUp: only that, for "catch me up").

    Next: get_node(uid) on a changed node, get_claim_status on a changed claim."""
    client = _client_name(ctx)
    now = datetime.now(UTC)
    asked = context.asked.last(client) if since is None else None
    moment = parse_since(since) if since is not None else asked or now - timedelta(days=7)
    types = context.reader.node_types_matching(nodeType)
    graphs = context.reader.datasets(dataset)  # an unknown dataset is an error that lists them
    slug = graphs[0].removeprefix(DATASET_GRAPH_PREFIX) if graphs else None
    result = changes_since(
        context.brain, moment, dataset=slug, node_type=types, creator=creator, limit=limit
    )
    context.asked.note(client, now)
    if since is None:
        told = f"since you last asked ({result.since})" if asked else "over the last 7 days"
        result.note = f"changes {told}" + (f"; {result.note}" if result.note else "")
    if catchUp:
        result.nodes, result.relations = [], []
    return result


def _client_name(ctx: Context | None) -> str:
    """The MCP client's name, as it introduced itself (``client`` when it did not)."""
    session = getattr(ctx, "session", None) if ctx is not None else None
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) and name.strip() else "client"


TOOLS = (
    ToolSpec(search_nodes, "Search nodes"),
    # not read-only: while a project is active, each read is recorded as a visit
    ToolSpec(get_node, "Get node", WRITE, side_effect_for=VISITS_READ_BY),
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
    # not read-only: remembers when this client asked (for "since you last asked")
    ToolSpec(what_changed, "What changed", WRITE, side_effect_for="discourse"),
)
