"""The semantic-search tools: compute the embeddings that semantic and hybrid search use.

``embed_nodes`` starts a background task on the context's task runner, like ``load_dataset``
(:mod:`labbrain.mcp.tools.tasks`, whose ``get_task`` polls it); ``search_nodes`` (in
:mod:`labbrain.mcp.tools.discourse`) searches by meaning once the embeddings exist.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from labbrain.index.embeddings import INSTALL_HINT, semantic_installed
from labbrain.mcp.common import WRITE, ToolContext, ToolSpec
from labbrain.mcp.tools.tasks import WaitSeconds, succeeded, waited
from labbrain.tasks.ledger import TaskState


async def embed_nodes(
    context: ToolContext, ctx: Context, waitSeconds: WaitSeconds = 0
) -> TaskState:
    """Compute the embeddings of semantic search_nodes as a background task, for new or
    changed nodes only (minutes for a big graph). Served only where the semantic extra is
    installed.

    Next: poll get_task; once completed, search_nodes is hybrid by default."""
    task = context.runner.create("embed")
    context.runner.start(task.task_id, background=True)
    return succeeded(await waited(context, task.task_id, waitSeconds, ctx))


def _without_the_extra() -> str | None:
    """Why embed_nodes cannot run here: the semantic extra is not installed (else None)."""
    return None if semantic_installed() else f"the semantic extra is not installed; {INSTALL_HINT}"


TOOLS = (ToolSpec(embed_nodes, "Compute embeddings", WRITE, unavailable=_without_the_extra),)
