"""The MCP server: the discourse-graph tools over stdio, a thin adapter over DiscourseReader.

Tool names and arguments are those of the reference Discourse Graph MCP server, so an
existing client configuration keeps working (``DATA_PATH`` included); the answers carry more:
attribution on every node, typed and text links, datasets, caps with notes. Tools return
pydantic models (clients get an outputSchema and structured content) and compact JSON text.
Errors the model should read become ``isError`` results with a message saying what to do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, ImageContent
from pydantic import Field

from labbrain import __version__
from labbrain.agent.projects.projects import Projects
from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
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
    SparqlResult,
)
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import InputError, LabbrainError, NodeNotFound, StoreError
from labbrain.ingest.load import LoadReport
from labbrain.mcp.caps import CappedServer
from labbrain.mcp.common import ToolContext, ToolFn, answer, call, tool
from labbrain.mcp.images import ImageRefused, fetch_image
from labbrain.mcp.sandbox import run_query
from labbrain.mcp.tools import claims, memory, projects, tasks

log = logging.getLogger("labbrain.mcp")

INSTRUCTIONS = """\
labbrain serves a lab's discourse graph: Questions, Claims, Evidence, Results, Hypotheses,
Sources and the typed relations between them (Supports, Opposes, Informs, Addresses).
Start with search_nodes (or get_schema to see node types and datasets), read a node with
get_node, follow its relations with get_linked_nodes or get_node_neighborhood. To judge a
claim use get_claim_status; to see what is missing use find_gaps. Every node comes with its
creator, creation date and Roam URL: cite them when you report a finding."""

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


def build_server(brain: LabBrain) -> CappedServer:
    """The MCP server over an opened store. The discourse-graph tools only read; the agent-side
    groups write their own graphs (never a dataset graph) and run tasks."""
    graph = DiscourseReader(brain)
    settings = brain.settings
    server = CappedServer(
        name="labbrain",
        title="labbrain discourse graph",
        instructions=INSTRUCTIONS,
        version=__version__,
        max_chars=settings.mcp_max_chars,  # every tool answer fits (mcp_caps)
    )

    context = ToolContext(brain, graph, AgentWriter(brain.store, agent=settings.agent_name))
    projects = Projects(brain, graph, context.writer)  # get_node records visits

    def read_tool(title: str) -> Callable[[ToolFn], ToolFn]:
        return tool(server, title)

    @read_tool("Search nodes")
    def search_nodes(
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
    ) -> Annotated[CallToolResult, SearchNodesResult]:
        """Find discourse nodes (Questions, Claims, Evidence, Results, ...) by keywords or
        by meaning.

        Keyword mode is full-text BM25 over titles and content, title matches first;
        semantic mode compares meanings (embeddings), so "kids are less susceptible" finds
        "children have a lower attack rate"; hybrid fuses both rankings. Filter by node type,
        creator or dataset, or sort by date or title. Each result has uid, type, title,
        creator, created date, url, a snippet and its image count; `mode` says how they were
        found. Next: get_node(uid) for the full text and links; cite creator and url."""
        return call(
            lambda: graph.search_nodes(
                query,
                node_type=nodeType,
                creator=creator,
                order_by=orderBy,
                descending=sortDirection == "desc",
                limit=limit,
                dataset=dataset,
                mode=mode,
            )
        )

    @read_tool("Get node")
    def get_node(uid: Uid, dataset: Dataset = None) -> Annotated[CallToolResult, NodeDetail]:
        """Read one node in full: its markdown, type, title, creator, dates, url, image URLs,
        and every linked node (typed relations with label and direction, and text
        references), each with its own attribution.

        Use after search_nodes. Next: get_claim_status for a claim, get_node_neighborhood to
        look further, get_node_images for figures. While a project is active (see
        set_active_project), the read is recorded as a visit in it."""
        return call(lambda: projects.note_read(graph.get_node(uid, dataset)))

    @read_tool("Get linked nodes")
    def get_linked_nodes(
        uid: Uid, direction: DirectionArg = "both", dataset: Dataset = None
    ) -> Annotated[CallToolResult, LinkedNodesResult]:
        """List the nodes linked to or from a node: typed relations (e.g. this Evidence
        Supports that Claim) with their label and direction, then text references (links
        in the markdown). Each linked node comes with type, title, creator and url.

        Use to trace reasoning one step; get_node_neighborhood goes several hops."""
        return call(lambda: graph.get_linked_nodes(uid, direction, dataset))

    @read_tool("Get schema")
    def get_schema() -> Annotated[CallToolResult, SchemaResult]:
        """Describe what the loaded graphs contain: the node types (label, code such as CLM,
        meaning, count), the relation types (e.g. Evidence Supports Claim, with counts) and
        the loaded datasets with the Roam graph each came from.

        Call it first when you do not know the graph's vocabulary."""
        return call(graph.get_schema)

    @read_tool("Researcher contributions")
    def get_researcher_contributions(
        creator: Annotated[
            str | None, Field(description="one researcher; omit for everyone's statistics")
        ] = None,
        nodeType: NodeTypeArg = None,
    ) -> Annotated[CallToolResult, ContributionsResult]:
        """Who contributed what: per researcher, node counts by type and first and last
        contribution dates; with a creator, also that researcher's nodes (newest first).

        Use for attribution and to find whose work to read."""
        return call(lambda: graph.get_researcher_contributions(creator, nodeType))

    @read_tool("Get node images")
    def get_node_images(
        uid: Uid, dataset: Dataset = None
    ) -> Annotated[CallToolResult, NodeImagesResult]:
        """List the figures (image URLs) embedded in a node; keyImage is the first, usually
        the main figure. The key image is attached as image content only where the user
        enabled fetching (and its host is allowed); otherwise the URLs are returned.

        Show the key image with markdown ![legend](url) and say what it shows."""
        try:
            result = graph.get_node_images(uid, dataset)
        except LabbrainError as error:
            raise ToolError(str(error)) from None
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

    @read_tool("Get relationships")
    def get_relationships(
        sourceUid: Annotated[str | None, Field(description="only relations from this node")] = None,
        destinationUid: Annotated[
            str | None, Field(description="only relations to this node")
        ] = None,
        relationshipType: Annotated[
            str | None, Field(description="only this label, e.g. 'Supports', 'Opposes'")
        ] = None,
        dataset: Dataset = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> Annotated[CallToolResult, RelationshipsResult]:
        """Query typed relations between nodes (e.g. which Evidence Supports which Claim),
        filtered by source node, destination node and/or relation label. Both ends come
        with attribution.

        get_relation_types lists the labels."""
        return call(
            lambda: graph.get_relationships(
                sourceUid, destinationUid, relationshipType, dataset, limit
            )
        )

    @read_tool("Get relation types")
    def get_relation_types() -> Annotated[CallToolResult, RelationTypesResult]:
        """List the relation types of the loaded graphs (label, source and destination node
        types, inverse label, the core relation it specialises) with how many instances
        each has, per dataset.

        Use the labels with get_relationships, get_node_neighborhood (relationshipTypeFilter)
        or find_path (relationshipTypes)."""
        return call(graph.get_relation_types)

    @read_tool("Node neighborhood")
    def get_node_neighborhood(
        uid: Uid,
        depth: Annotated[int, Field(ge=1, le=4, description="hops to go out, 1-4")] = 2,
        direction: DirectionArg = "both",
        nodeTypeFilter: NodeTypeArg = None,
        relationshipTypeFilter: Annotated[
            str | None, Field(description="only follow this relation label (e.g. 'Supports')")
        ] = None,
        dataset: Dataset = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="at most this many nodes")] = 300,
    ) -> Annotated[CallToolResult, NeighborhoodResult]:
        """Explore around a node: breadth-first over typed relations and text links, up to
        4 hops, nodes grouped by hop (each with the node and relation that reached it) plus
        the edges among them. Filter by node type or relation label.

        Use for local context and multi-step reasoning chains; find_path joins two nodes."""
        return call(
            lambda: graph.get_node_neighborhood(
                uid, depth, direction, nodeTypeFilter, relationshipTypeFilter, dataset, limit
            )
        )

    @read_tool("Find path")
    def find_path(
        fromUid: Uid,
        toUid: Uid,
        maxHops: Annotated[int, Field(ge=1, le=6, description="longest path to look for")] = 4,
        relationshipTypes: Annotated[
            list[str] | None, Field(description="only follow these relation labels")
        ] = None,
        dataset: Dataset = None,
    ) -> Annotated[CallToolResult, PathResult]:
        """Find the shortest chains of typed relations joining two nodes (relations may be
        followed against their direction; each hop says which). Every hop names its
        relation and both nodes with attribution.

        Use to explain how a result bears on a question or a claim."""
        return call(lambda: graph.find_path(fromUid, toUid, maxHops, relationshipTypes, dataset))

    @read_tool("Claim status")
    def get_claim_status(
        uid: Uid, dataset: Dataset = None
    ) -> Annotated[CallToolResult, ClaimStatusResult]:
        """Weigh a claim (or hypothesis, conclusion): the nodes that support and oppose it,
        directly or through one intermediate node, counts by creator, the sources the
        evidence cites, and flags: contested (both sides present), singleSource.

        Report both sides with their creators; get_node reads any of them in full."""
        return call(lambda: graph.get_claim_status(uid, dataset))

    @read_tool("Find gaps")
    def find_gaps(
        nodeType: Annotated[
            str | None, Field(description="only gaps of this type: Question, Claim, ...")
        ] = None,
        dataset: Dataset = None,
    ) -> Annotated[CallToolResult, GapsResult]:
        """List where the graph is thin: questions nothing addresses or informs, claims
        with no supporting or opposing evidence, hypotheses no result bears on, evidence
        linked to no source. Each list is capped and counted.

        Use to suggest what to read, test or write next; get_node reads any of them."""
        return call(lambda: graph.find_gaps(nodeType, dataset))

    @read_tool("SPARQL query")
    def sparql_query(
        query: Annotated[
            str,
            Field(
                description="SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE; prefixes dg:, dgb:,"
                " lb:, dct:, sioc:, rdfs:, owl:, prov:, xsd: are predeclared"
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=1000, description="at most this many rows")] = 100,
    ) -> Annotated[CallToolResult, SparqlResult]:
        """Run a read-only SPARQL query over every graph (the default graph is their union).
        Nodes are Roam page URLs; dg:supports / dg:opposes / lb:informs link them;
        dct:title, dct:creator, dct:created and sioc:content describe them.

        Rows and characters are capped and the query is time-limited; SERVICE and updates
        are refused. Prefer the other tools; use this for questions they cannot answer."""
        return call(
            lambda: run_query(
                brain.store,
                query,
                limit=limit,
                max_chars=server.max_chars,  # stop reading there; the server cuts to fit
                seconds=settings.query_timeout_seconds,
            )
        )

    @server.resource(
        "labbrain://node/{uid}",
        name="node",
        title="Discourse node",
        description="A node as markdown with YAML front matter (type, creator, dates, url).",
        mime_type="text/markdown",
    )
    def node_resource(uid: str) -> str:
        try:
            node = graph.get_node(uid)
        except NodeNotFound as error:
            raise ResourceNotFoundError(str(error)) from None
        front = {
            "uid": node.uid,
            "title": node.title,
            "type": node.nodeType,
            "creator": node.creator,
            "created": node.created,
            "modified": node.modified,
            "url": node.url,
            "dataset": node.dataset,
        }
        lines = ["---", *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items())]
        links = [
            f"- {link.direction} {link.relationshipType or 'text link'}: {link.node.title} "
            f"({link.node.nodeType}, {link.node.creator}) {link.node.url}"
            for link in node.linkedNodes
        ]
        body = [*lines, "---", "", node.content.strip(), ""]
        if links:
            body += ["## Linked nodes", "", *links, ""]
        return "\n".join(body)

    @server.resource(
        "labbrain://schema",
        name="schema",
        title="Schema of the loaded graphs",
        description="Node types, relation types and datasets, as JSON (same as get_schema).",
        mime_type="application/json",
    )
    def schema_resource() -> str:
        return graph.get_schema().model_dump_json()

    @server.prompt(title="Review the evidence on a question")
    def review_question(question: str) -> str:
        """Gather and weigh what the lab's graph says about a research question."""
        return (
            f"Review what the lab's discourse graph says about: {question}\n\n"
            "1. search_nodes for the question's key terms (try Question and Claim types).\n"
            "2. For each relevant claim, get_claim_status: list supporting and opposing\n"
            "   evidence and results with their creators and dates.\n"
            "3. Note contested claims, single-source claims, and gaps (find_gaps).\n"
            "4. Answer with citations: title, creator, created date and url of every node."
        )

    @server.prompt(title="Audit a claim")
    def audit_claim(uid: str) -> str:
        """Check how well one claim is supported."""
        return (
            f"Audit the claim with uid {uid}.\n"
            "Call get_node and get_claim_status; read the strongest supporting and opposing\n"
            "nodes with get_node; use find_path to see how results reach the claim. Say whether\n"
            "the claim is contested or rests on a single source, citing creator and url."
        )

    # Agent-side tool groups, one module each (mcp_<group>.register).
    register_agent_tools(server, context)
    return server


def register_agent_tools(server: MCPServer, context: ToolContext) -> None:
    """Register the agent-side tool groups: tasks, projects, memory domains, propositions."""
    for group in (tasks, projects, memory, claims):
        group.register(server, context)


def load_data_path(brain: LabBrain, path: str) -> LoadReport | None:
    """Load the export at ``path`` unless the store already holds it unchanged.

    Returns the load report, or None when the file's digest matches a loaded dataset.
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"DATA_PATH {path}: no such file")
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if any(dataset["sourceDigest"] == digest for dataset in brain.datasets()):
        return None
    if brain.read_only:
        raise StoreError(
            f"DATA_PATH {path} is not loaded yet and another labbrain process holds the store "
            "for writing; stop it (or load the file with `labbrain load` once it is free)"
        )
    return brain.load(path, data=data)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While inside, ``sys.stdout`` and file descriptor 1 (used by C code and child
    processes) both write to stderr; both are restored on exit. Stdout carries the JSON-RPC
    stream, so nothing else may reach it (the SDK does the same while it serves)."""
    sys.stdout.flush()
    saved_fd, saved_stdout = os.dup(1), sys.stdout
    try:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        sys.stderr.flush()
        sys.stdout = saved_stdout
        os.dup2(saved_fd, 1)
        os.close(saved_fd)


def serve_stdio(brain: LabBrain) -> None:
    """Load ``DATA_PATH`` if set (and new), then serve MCP over stdio until stdin closes.

    Stdout carries only JSON-RPC messages: output during the load goes to stderr."""
    data_path = os.environ.get("DATA_PATH")
    if data_path:
        with stdout_to_stderr():
            report = load_data_path(brain, data_path)
        if report is None:
            log.info("DATA_PATH %s is already loaded", data_path)
        else:
            log.info("loaded %s: %d nodes into %s", data_path, report.nodes, report.graph)
    build_server(brain).run("stdio")
