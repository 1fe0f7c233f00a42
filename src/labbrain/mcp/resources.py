"""The MCP resources and prompts: a node as markdown, a dataset and the schema as JSON, two
review prompts.

:func:`node_markdown`, :func:`dataset_json` and :func:`schema_json` render what the resources
serve from a :class:`~labbrain.discourse.reader.DiscourseReader`; the prompts are plain
functions whose docstring is their description; :func:`register` declares them all on a server.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import NodeNotFound
from labbrain.store import templates


def node_markdown(reader: DiscourseReader, uid: str) -> str:
    """The node as markdown with YAML front matter, then its linked nodes."""
    try:
        node = reader.get_node(uid)
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


def dataset_json(reader: DiscourseReader, slug: str) -> str:
    """The dataset ``slug``: its load record (source, format, when, counts) and what its
    latest load changed, as JSON."""
    brain = reader.brain
    record = next((row for row in brain.datasets() if str(row["slug"]) == slug), None)
    if record is None:
        known = ", ".join(sorted(str(row["slug"]) for row in brain.datasets())) or "none"
        raise ResourceNotFoundError(f"no dataset {slug!r} is loaded (loaded: {known})")
    latest = None
    for row in templates.run(brain.store, "changes"):
        if row["graph"] == record["graph"]:
            latest = row
    answer: dict[str, Any] = {
        "dataset": slug,
        "graph": str(record["graph"]),
        "source": record.get("sourceFile"),
        "format": record.get("format"),
        "loadId": record.get("loadId"),
        "loadedAt": str(record["loadedAt"]),
        "nodes": int(record["nodes"]),
        "quads": int(record["quads"]),
        "lastChange": None
        if latest is None
        else {key: int(latest[key]) for key in CHANGE_COUNTS} | {"at": str(latest["at"])},
    }
    return json.dumps(answer, ensure_ascii=False)


#: The counts of a change record (the changes template's columns).
CHANGE_COUNTS = ("nodesAdded", "nodesRemoved", "nodesEdited", "relationsAdded", "relationsRemoved")


def schema_json(reader: DiscourseReader) -> str:
    """Node types, relation types and datasets, as JSON (the answer of get_schema)."""
    return reader.get_schema().model_dump_json()


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


def audit_claim(uid: str) -> str:
    """Check how well one claim is supported."""
    return (
        f"Audit the claim with uid {uid}.\n"
        "Call get_node and get_claim_status; read the strongest supporting and opposing\n"
        "nodes with get_node; use find_path to see how results reach the claim. Say whether\n"
        "the claim is contested or rests on a single source, citing creator and url."
    )


def register(server: MCPServer, reader: DiscourseReader) -> None:
    """Declare the resources (over ``reader``) and the prompts on ``server``."""

    @server.resource(
        "labbrain://node/{uid}",
        name="node",
        title="Discourse node",
        description="A node as markdown with YAML front matter (type, creator, dates, url).",
        mime_type="text/markdown",
    )
    def node_resource(uid: str) -> str:
        return node_markdown(reader, uid)

    @server.resource(
        "labbrain://dataset/{slug}",
        name="dataset",
        title="Loaded dataset",
        description="A dataset's load record and what its latest load changed, as JSON; "
        "subscribe to hear of every load, replacement and update.",
        mime_type="application/json",
    )
    def dataset_resource(slug: str) -> str:
        return dataset_json(reader, slug)

    @server.resource(
        "labbrain://schema",
        name="schema",
        title="Schema of the loaded graphs",
        description="Node types, relation types and datasets, as JSON (same as get_schema).",
        mime_type="application/json",
    )
    def schema_resource() -> str:
        return schema_json(reader)

    server.prompt(title="Review the evidence on a question")(review_question)
    server.prompt(title="Audit a claim")(audit_claim)
