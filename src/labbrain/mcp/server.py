"""The MCP server: the tool groups, resources and prompts over stdio.

Tool names and arguments of the discourse-graph tools are those of the reference Discourse
Graph MCP server, so an existing client configuration keeps working (``DATA_PATH`` included).
The tools themselves live in :mod:`labbrain.mcp.tools`, one module per group; this module
registers them all, from their data, on one :class:`~labbrain.mcp.caps.CappedServer`, and
serves it over stdio. Tools return pydantic models (clients get an outputSchema and
structured content) and compact JSON text; errors the model should read become ``isError``
results with a message saying what to do (:func:`labbrain.mcp.common.bind`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from labbrain import __version__
from labbrain.core import LabBrain
from labbrain.errors import StoreError
from labbrain.ingest.load import LoadReport, read_input
from labbrain.mcp import resources
from labbrain.mcp.caps import CappedServer
from labbrain.mcp.common import ToolContext, register
from labbrain.mcp.tools import GROUPS

log = logging.getLogger("labbrain.mcp")

INSTRUCTIONS = """\
labbrain serves a lab's discourse graph: Questions, Claims, Evidence, Results, Hypotheses,
Sources and the typed relations between them (Supports, Opposes, Informs, Addresses).
Start with search_nodes (or get_schema to see node types and datasets), read a node with
get_node, follow its relations with get_linked_nodes or get_node_neighborhood. To judge a
claim use get_claim_status; to see what is missing use find_gaps. Every node comes with its
creator, creation date and Roam URL: cite them when you report a finding."""


def build_server(brain: LabBrain) -> CappedServer:
    """The MCP server over an opened store: every tool of every group (:data:`GROUPS`),
    the resources and the prompts. The discourse-graph tools only read; the agent-side groups
    write their own graphs (never a dataset graph) and run tasks."""
    settings = brain.settings
    server = CappedServer(
        name="labbrain",
        title="labbrain discourse graph",
        instructions=INSTRUCTIONS,
        version=__version__,
        max_chars=settings.mcp_max_chars,  # every tool answer fits (mcp.caps)
    )
    context = ToolContext.open(brain, cap=lambda: server.max_chars)
    for tools in GROUPS.values():
        for spec in tools:
            register(server, context, spec)
    resources.register(server, context.reader)
    return server


def load_data_path(brain: LabBrain, path: str) -> LoadReport | None:
    """Load the export at ``path`` unless the store already holds it unchanged.

    Returns the load report, or None when the file's digest matches a loaded dataset.
    """
    read = read_input(path, brain.settings)  # checked, read, format detected and hashed once
    if any(dataset["sourceDigest"] == read.digest for dataset in brain.datasets()):
        return None
    if brain.read_only:
        raise StoreError(
            f"DATA_PATH {path} is not loaded yet and another labbrain process holds the store "
            "for writing; stop it (or load the file with `labbrain load` once it is free)"
        )
    return brain.load(path, read=read)


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
