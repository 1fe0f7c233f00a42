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
- ``semantic``: compute the embeddings of semantic search;
- ``bundles``: write an evidence bundle (RO-Crate) of a Result or Evidence node, under the
  bundle directory of the settings only.

:data:`DEFAULT_TOOLSETS` is what a new user needs on day one; ``all`` names every toolset.
A read-only server (:func:`offered` with ``read_only``) lists no tool that writes, and its
``get_node`` records no visit.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Iterator, Mapping

from labbrain.errors import SettingsError
from labbrain.mcp.common import READ_ONLY, ToolSpec

log = logging.getLogger(__name__)

#: Where each toolset's tools are listed: (module of this package, its tuple of ToolSpec).
_SOURCES: dict[str, tuple[str, str]] = {
    "discourse": ("discourse", "TOOLS"),
    "sparql": ("sparql", "TOOLS"),
    "notes": ("projects", "NOTES"),
    "notebook": ("projects", "TOOLS"),
    "memory": ("memory", "TOOLS"),
    "claims": ("claims", "TOOLS"),
    "tasks": ("tasks", "TOOLS"),
    "semantic": ("semantic", "TOOLS"),
    "bundles": ("bundles", "TOOLS"),
}


class Toolsets(Mapping[str, tuple[ToolSpec, ...]]):
    """Every toolset by name, in the order the server registers (and lists) its tools.

    A toolset's module (and the agent-side services and answer models it imports) is
    imported the first time its tools are asked for, so that a server offering the default
    toolsets starts without importing the others. Names and order never import anything."""

    def __getitem__(self, name: str) -> tuple[ToolSpec, ...]:
        module, attribute = _SOURCES[name]
        specs: tuple[ToolSpec, ...] = getattr(
            importlib.import_module(f"{__name__}.{module}"), attribute
        )
        return specs

    def __iter__(self) -> Iterator[str]:
        return iter(_SOURCES)

    def __len__(self) -> int:
        return len(_SOURCES)


#: Every toolset by name (see :class:`Toolsets`).
TOOLSETS: Mapping[str, tuple[ToolSpec, ...]] = Toolsets()

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
    side effect the read-only server leaves out (``get_node``'s visit), annotated read-only.
    A tool this install cannot serve (``embed_nodes`` without the semantic extra) is left out,
    with a warning saying why.
    Such a read is annotated read-only too where the toolset its side effect serves is not
    asked for (:func:`keeps_side_effect`)."""
    chosen = set(toolsets)
    seen: set[str] = set()
    tools: list[ToolSpec] = []
    for name in TOOLSETS:  # only the toolsets asked for are imported
        if name not in chosen:
            continue
        specs = TOOLSETS[name]
        if any(other != name and _names(specs) < _names(TOOLSETS[other]) for other in chosen):
            continue  # a part of another toolset asked for (notes of the notebook) is listed there
        for spec in specs:
            if spec.name in seen:
                continue
            seen.add(spec.name)
            why = spec.unavailable() if spec.unavailable is not None else None
            if why is not None:
                log.warning("%s is not served: %s", spec.name, why)
                continue
            if spec.side_effect_for is not None and not keeps_side_effect(
                spec, chosen, read_only=read_only
            ):
                tools.append(spec._replace(annotations=READ_ONLY))
            elif not read_only or spec.annotations.read_only_hint:
                tools.append(spec)
    return tools


def keeps_side_effect(spec: ToolSpec, toolsets: Iterable[str], *, read_only: bool) -> bool:
    """Whether a server of ``toolsets`` makes ``spec``'s side effect: it writes, and it serves
    the toolset the side effect is kept for (get_node's visits are read by the notebook's
    tools; a server without them records none)."""
    return not read_only and spec.side_effect_for is not None and spec.side_effect_for in toolsets


def _names(specs: Iterable[ToolSpec]) -> set[str]:
    return {spec.name for spec in specs}
