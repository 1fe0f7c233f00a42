"""The MCP tools, one module per group; each module lists its tools as data (``TOOLS``).

Groups: ``discourse`` (search and read the lab's discourse graph), ``sparql`` (a read-only
SPARQL query), ``tasks`` (load a dataset as a background task, poll, list, cancel, resume),
``semantic`` (compute the embeddings of semantic search), ``notebook`` (research projects,
visits, findings, next steps; module :mod:`~labbrain.mcp.tools.projects`), ``memory`` (memory
domains, memories and weighted edges) and ``claims`` (propositions, lineage, contradictions).
"""

from __future__ import annotations

from labbrain.mcp.common import ToolSpec
from labbrain.mcp.tools import claims, discourse, memory, projects, semantic, sparql, tasks

#: Every tool group by name, in the order the server registers (and lists) them.
GROUPS: dict[str, tuple[ToolSpec, ...]] = {
    "discourse": discourse.TOOLS,
    "sparql": sparql.TOOLS,
    "tasks": tasks.TOOLS,
    "semantic": semantic.TOOLS,
    "notebook": projects.TOOLS,
    "memory": memory.TOOLS,
    "claims": claims.TOOLS,
}
