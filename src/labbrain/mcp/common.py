"""What every group of MCP tools shares: the context they run in, registration, answers.

``mcp_server`` builds the server and registers its discourse-graph tools; the agent-side
tool groups (tasks, projects, memory domains, propositions) live in ``mcp_<group>`` modules,
each with a ``register(server, context)`` function, and use the helpers here so that every
tool answers the same way: a pydantic model as structured content plus compact JSON text, and
library errors as ``isError`` results whose message tells the model what to do next.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import LabbrainError
from labbrain.mcp import caps

Model = TypeVar("Model", bound=BaseModel)
ToolFn = TypeVar(
    "ToolFn", bound=Callable[..., CallToolResult] | Callable[..., Awaitable[CallToolResult]]
)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

IdempotencyKey = Annotated[
    str | None,
    Field(
        description="any unique string (e.g. a UUID) to make this write safe to retry: a retry "
        "with the same key returns the first result and writes nothing",
        max_length=200,
    ),
]


@dataclass
class ToolContext:
    """What tools run against: the opened store, the discourse graph over it, and the
    writer that applies agent writes with provenance and idempotency."""

    brain: LabBrain
    graph: DiscourseReader
    writer: AgentWriter


def answer(model: BaseModel, *extra: ImageContent) -> CallToolResult:
    """A tool result: the model as structured content and as compact JSON text. The server
    (:class:`~labbrain.mcp_caps.CappedServer`) fits it under the output cap: an answer under
    the cap costs this one serialisation."""
    data = model.model_dump(mode="json")
    text = caps.dumps(data)
    return CallToolResult(
        content=[TextContent(type="text", text=text), *extra], structured_content=data
    )


def call(work: Callable[[], Model]) -> CallToolResult:
    """Run a tool's work; library errors become messages for the model (isError)."""
    try:
        return answer(work())
    except LabbrainError as error:
        raise ToolError(str(error)) from None


def tool(
    server: MCPServer, title: str, annotations: ToolAnnotations = READ_ONLY
) -> Callable[[ToolFn], ToolFn]:
    """Register a tool whose description is its docstring, dedented.

    Tool descriptions are documentation for the model: what the tool does, when to use it,
    what comes back and what to call next. Write tools pass WRITE or DESTRUCTIVE.
    """

    def register(fn: ToolFn) -> ToolFn:
        description = inspect.cleandoc(fn.__doc__ or "")
        return server.tool(title=title, description=description, annotations=annotations)(fn)

    return register
