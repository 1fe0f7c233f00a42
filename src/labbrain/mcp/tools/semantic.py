"""The semantic-search tools: compute the embeddings that semantic and hybrid search use.

``embed_nodes`` starts a background task on the context's task runner, like ``load_dataset``
(:mod:`labbrain.mcp.tools.tasks`, whose ``get_task`` polls it); ``search_nodes`` (in
:mod:`labbrain.mcp.tools.discourse`) searches by meaning once the embeddings exist.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from labbrain.mcp.common import WRITE, ToolContext, ToolSpec
from labbrain.mcp.tools.tasks import WaitSeconds, waited
from labbrain.tasks.ledger import TaskState


async def embed_nodes(
    context: ToolContext, ctx: Context, waitSeconds: WaitSeconds = 0
) -> TaskState:
    """Compute the embeddings that semantic and hybrid search_nodes use, as a background
    task: only nodes that are new or changed since the last run are embedded (about 20-60
    nodes a second on a small CPU, so a big graph takes minutes).

    Answers at once with the task; poll get_task(task_id): results.embedded of
    results.toEmbed shows progress, and when completed search_nodes uses hybrid search by
    default. Fails with a message saying what to install when the semantic extra or the
    embedding model is missing. Cancelling keeps the vectors computed so far."""
    task = context.runner.create("embed")
    context.runner.start(task.task_id, background=True)
    return await waited(context, task.task_id, waitSeconds, ctx)


TOOLS = (ToolSpec(embed_nodes, "Compute embeddings", WRITE),)
