"""The MCP tools, one module per group, and the toolsets a server offers.

Each module lists its tools as data (``TOOLS``). A *toolset* is a named set of tools that
``labbrain mcp --toolsets`` (or ``LABBRAIN_TOOLSETS``) turns on:

- ``discourse``: search and read the lab's discourse graph (the reference server's tools plus
  paths, claim status and gaps);
- ``sparql``: one read-only SPARQL query;
- ``notes``: the small way to keep notes, ``log_finding`` and ``list_findings`` (findings go
  to the active project, else to the project "Notes");
- ``notebook``: research projects, visits, findings, next steps, related pages (module
  :mod:`~labbrain.mcp.tools.projects`; it holds the two ``notes`` tools too);
- ``memory``: memory domains, memories and weighted edges;
- ``claims``: propositions, lineage, contradictions;
- ``tasks``: load a dataset as a background task, poll, list, cancel, resume;
- ``semantic``: compute the embeddings of semantic search.

:data:`DEFAULT_TOOLSETS` is what a new user needs on day one; ``all`` names every toolset.
A read-only server (:func:`offered` with ``read_only``) lists no tool that writes, and its
``get_node`` records no visit.
"""

from __future__ import annotations

from collections.abc import Iterable

from labbrain.errors import SettingsError
from labbrain.mcp.common import READ_ONLY, ToolSpec
from labbrain.mcp.tools import claims, discourse, memory, projects, semantic, sparql, tasks

#: Every toolset by name, in the order the server registers (and lists) its tools.
TOOLSETS: dict[str, tuple[ToolSpec, ...]] = {
    "discourse": discourse.TOOLS,
    "sparql": sparql.TOOLS,
    "notes": projects.NOTES,
    "notebook": projects.TOOLS,
    "memory": memory.TOOLS,
    "claims": claims.TOOLS,
    "tasks": tasks.TOOLS,
    "semantic": semantic.TOOLS,
}

#: The toolsets of a server started without ``--toolsets``.
DEFAULT_TOOLSETS: tuple[str, ...] = ("discourse", "sparql", "notes")

#: Names that stand for several toolsets.
ALIASES: dict[str, tuple[str, ...]] = {"default": DEFAULT_TOOLSETS, "all": tuple(TOOLSETS)}


def resolve_toolsets(names: str | Iterable[str]) -> tuple[str, ...]:
    """The toolsets ``names`` asks for (comma-separated text or names; ``default`` and
    ``all`` stand for theirs), each once, in :data:`TOOLSETS` order. Raises SettingsError
    naming the known toolsets for an unknown name or when none is given."""
    given = names.split(",") if isinstance(names, str) else list(names)
    wanted: set[str] = set()
    for raw in given:
        name = raw.strip().lower()
        if not name:
            continue
        if name in ALIASES:
            wanted.update(ALIASES[name])
        elif name in TOOLSETS:
            wanted.add(name)
        else:
            raise SettingsError(
                f"unknown toolset {raw.strip()!r}; toolsets: {', '.join([*TOOLSETS, *ALIASES])}"
            )
    if not wanted:
        raise SettingsError(f"no toolset named; toolsets: {', '.join([*TOOLSETS, *ALIASES])}")
    return tuple(name for name in TOOLSETS if name in wanted)


def offered(toolsets: Iterable[str], *, read_only: bool = False) -> list[ToolSpec]:
    """The tools of ``toolsets`` (names as :func:`resolve_toolsets` gives them), each once,
    toolset by toolset (a toolset part of another one asked for is listed in that one). With
    ``read_only``: only the tools that change nothing, plus the reads whose only write is a
    side effect the read-only server leaves out (``get_node``'s visit), annotated read-only."""
    chosen = set(toolsets)
    seen: set[str] = set()
    tools: list[ToolSpec] = []
    for name, specs in TOOLSETS.items():
        if name not in chosen or any(
            other != name and _names(specs) < _names(TOOLSETS[other]) for other in chosen
        ):
            continue  # a part of another toolset asked for (notes of the notebook) is listed there
        for spec in specs:
            if spec.name in seen:
                continue
            seen.add(spec.name)
            if not read_only or spec.annotations.read_only_hint:
                tools.append(spec)
            elif spec.side_effect_only:
                tools.append(spec._replace(annotations=READ_ONLY))
    return tools


def _names(specs: Iterable[ToolSpec]) -> set[str]:
    return {spec.name for spec in specs}
