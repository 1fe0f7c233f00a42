"""The MCP server: the tool groups, resources and prompts over stdio.

Tool names and arguments of the discourse-graph tools are those of the reference Discourse
Graph MCP server, so an existing client configuration keeps working (``DATA_PATH`` included).
The tools themselves live in :mod:`labbrain.mcp.tools`, one module per group; this module
registers those of the toolsets asked for, from their data, on one capped server with a lean
listing (:class:`LabbrainServer`), and serves it over stdio. Tools return pydantic models
(clients get an outputSchema and structured content) and compact JSON text; errors the model
should read become ``isError`` results with a message saying what to do
(:func:`labbrain.mcp.common.bind`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp_types import (
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
)
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from labbrain import __version__
from labbrain.core import LabBrain
from labbrain.errors import InputError, StoreError
from labbrain.ingest.load import LoadReport, read_input
from labbrain.mcp import resources
from labbrain.mcp.announce import Announcer, dataset_uri
from labbrain.mcp.arguments import argument_problems
from labbrain.mcp.caps import CappedServer
from labbrain.mcp.common import ToolContext, sdk_tool
from labbrain.mcp.listing import lean_input, lean_output
from labbrain.mcp.tools import DEFAULT_TOOLSETS, TOOLSETS, offered
from labbrain.ops.watch import WatchEvent, log_event, watching
from labbrain.store.local import checked, file_identity, record_checked
from labbrain.store.threads import confined

log = logging.getLogger("labbrain.mcp")

INSTRUCTIONS = """\
labbrain serves a lab's discourse graph: Questions, Claims, Evidence, Results, Hypotheses,
Sources and the typed relations between them (Supports, Opposes, Informs, Addresses).
Start with search_nodes (or get_schema to see node types and datasets), read a node with
get_node, follow its relations with get_linked_nodes or get_node_neighborhood. To judge a
claim use get_claim_status; to see what is missing use find_gaps. Every node comes with its
creator, creation date and Roam URL: cite them when you report a finding."""


class LabbrainServer(CappedServer):
    """The capped server whose tool listing is lean (:mod:`labbrain.mcp.listing`): the
    schemas a model reads before its first question, without titles, null branches and the
    prose of every answer field. Its resources list the loaded datasets, and subscribed
    clients hear of their changes (:class:`~labbrain.mcp.announce.Announcer`, set by
    :func:`build_server`)."""

    announcer: Announcer | None = None

    async def list_resources(self) -> list[MCPResource]:
        """The declared resources, then one per loaded dataset."""
        listed = await super().list_resources()
        if self.announcer is None:
            return listed
        rows = await anyio.to_thread.run_sync(confined(self.announcer.brain.datasets))
        return listed + [
            MCPResource(
                uri=dataset_uri(str(row["slug"])),
                name=f"dataset-{row['slug']}",
                title=f"Dataset {row['slug']}",
                description=f"{int(row['nodes'])} nodes, loaded {row['loadedAt']}"
                + (f" from {row['sourceFile']}" if row.get("sourceFile") else ""),
                mime_type="application/json",
            )
            for row in rows
        ]

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        if self.announcer is not None:  # a client that lists hears when the list changes
            await self.announcer.listed(ctx.session)
        return await super()._handle_list_resources(ctx, params)

    async def run_stdio_async(self) -> None:
        """Serve over stdio, announcing changes to subscribed clients meanwhile."""
        async with anyio.create_task_group() as group:
            if self.announcer is not None:
                group.start_soon(self.announcer.run)
            await super().run_stdio_async()
            group.cancel_scope.cancel()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call the tool; arguments that do not fit its schema are one line naming each with
        its value and what is allowed (:func:`~labbrain.mcp.arguments.argument_problems`)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            problems = argument_problems(error.__cause__)
            raise ToolError(f"Error executing tool {name}: {problems}") from error.__cause__

    async def list_tools(self) -> list[MCPTool]:
        """Every registered tool, its input and output schemas made lean."""
        return [
            tool.model_copy(
                update={
                    "input_schema": lean_input(tool.input_schema),
                    "output_schema": lean_output(tool.output_schema)
                    if tool.output_schema is not None
                    else None,
                }
            )
            for tool in await super().list_tools()
        ]


def build_server(
    brain: LabBrain, toolsets: Iterable[str] = tuple(TOOLSETS), *, read_only: bool = False
) -> LabbrainServer:
    """The MCP server over an opened store: the tools of ``toolsets`` (default: all of them;
    see :func:`~labbrain.mcp.tools.offered`), the resources and the prompts. With
    ``read_only``, no tool writes (none is listed that does, and get_node records no visit);
    get_node records visits only beside the notebook toolset, and answers suggest only the
    tools served.
    The discourse-graph tools only read; the agent-side toolsets write their own graphs
    (never a dataset graph) and run tasks."""
    settings = brain.settings
    bus = InMemorySubscriptionBus()
    toolsets = tuple(toolsets)
    tools = offered(toolsets, read_only=read_only)
    context = ToolContext.open(
        brain, cap=lambda: server.max_chars, read_only=read_only, served=tools, toolsets=toolsets
    )
    server = LabbrainServer(
        name="labbrain",
        title="labbrain discourse graph",
        instructions=INSTRUCTIONS,
        version=__version__,
        max_chars=settings.mcp_max_chars,  # every tool answer fits (mcp.caps)
        subscriptions=bus,
        tools=[sdk_tool(spec, context) for spec in tools],
    )
    server.announcer = Announcer(brain, bus)
    server.announcer.attach(server)
    context.client_log.attach(server)  # warnings reach the client (notifications/message)
    resources.register(server, context.reader)
    return server


#: A file modified less than this long before it is read is not recorded: a second change
#: within the file system's time resolution would not show in its times.
SETTLED_NS = 2_000_000_000


def load_data_path(brain: LabBrain, path: str) -> LoadReport | None:
    """Load the export at ``path`` unless the store already holds it unchanged.

    Returns the load report, or None when the file's digest matches a loaded dataset. The
    digest is the SHA-256 of the file's bytes, read and hashed at each start, except when the
    file is exactly as it was when a writable server last read it (its
    :func:`~labbrain.store.local.file_identity`, recorded with the digest in the user's cache
    of checked files): then that digest is used and the file is not read. Any change to the
    file, even one that keeps its size and modification time, changes its change time, so
    it is read again.
    """
    key = f"data-path:{os.path.abspath(path)}"
    before = file_identity(Path(path), settled_ns=SETTLED_NS)
    loaded = {dataset["sourceDigest"] for dataset in brain.datasets()}
    known = checked(key) if before is not None else None
    if known is not None and len(known) == 2 and known[0] == before and known[1] in loaded:
        return None
    try:  # checked, read, format detected and hashed once
        read = read_input(path, brain.settings)
    except InputError as error:
        raise InputError(f"DATA_PATH: {error}") from None
    after = file_identity(Path(path), settled_ns=SETTLED_NS) if before is not None else None
    if before is not None and after == before and not brain.read_only:  # unchanged while read
        record_checked(key, [before, read.digest])
    if read.digest in loaded:
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


def serve_stdio(
    brain: LabBrain,
    toolsets: Iterable[str] = DEFAULT_TOOLSETS,
    *,
    read_only: bool = False,
    watch: bool = False,
) -> None:
    """Load ``DATA_PATH`` if set (and new), then serve the tools of ``toolsets`` over stdio
    until stdin closes (``read_only``: none that writes, see :func:`build_server`). With
    ``watch`` (and a writable store), ``DATA_PATH`` is loaded again whenever it changes, in a
    thread of its own, while the tools answer (:class:`~labbrain.ops.watch.SourceWatcher`).

    Stdout carries only JSON-RPC messages: output during the load goes to stderr."""
    data_path = os.environ.get("DATA_PATH")
    if data_path:
        with stdout_to_stderr():
            report = load_data_path(brain, data_path)
        if report is None:
            log.info("DATA_PATH %s is already loaded", data_path)
        else:
            log.info("loaded %s: %d nodes into %s", data_path, report.nodes, report.graph)
    following = data_path if watch and not read_only else None
    if watch and not following:
        log.warning("--watch needs DATA_PATH and a writable store; nothing is watched")
    server = build_server(brain, toolsets, read_only=read_only)
    with (
        watching(brain, [following], on_event=announcing(server))
        if following
        else contextlib.nullcontext()
    ):
        server.run("stdio")


def announcing(server: LabbrainServer) -> Callable[[WatchEvent], None]:
    """A watcher's event handler that logs the event and has ``server`` look for changes to
    announce at once (rather than at its next poll)."""

    def on_event(event: WatchEvent) -> None:
        log_event(event)
        if server.announcer is not None and event.outcome in ("loaded", "changed"):
            server.announcer.poke()

    return on_event
