"""Breadth-first traversal of the memory graph, over edges already read from the store.

:func:`traverse` is pure: it is given the edges of the domains it may enter and a function
saying what each node is, and answers which nodes it reaches at which depth and which edges
it followed. :func:`traversal_result` turns that into the tool's answer.
:class:`~labbrain.agent.memory.memories.Memories` reads the edges and the lab nodes reached.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from labbrain.agent.memory.models import (
    TraversalLevel,
    TraversalNode,
    TraversalResult,
    TraversedEdge,
)
from labbrain.agent.memory.records import LinkRecord, MemoryRecord, memory_ref
from labbrain.discourse.reader import node_ref
from labbrain.index.text import IndexedNode

NodeKind = Literal["memory", "node"]


@dataclass(frozen=True)
class Reached:
    """A node reached at ``depth``, first by the edge ``via`` (None for the start)."""

    iri: str
    kind: NodeKind
    depth: int
    via: str | None


@dataclass
class Traversal:
    """Nodes by depth (``levels[0]`` is the start) and the edges followed between them."""

    levels: list[list[Reached]] = field(default_factory=list)
    edges: list[LinkRecord] = field(default_factory=list)
    truncated: bool = False


@dataclass(frozen=True)
class Limits:
    """What a traversal follows, and how far.

    ``types``: edge type names to follow (None: all); ``min_strength``: weaker edges are
    ignored; ``cross_domains``: also follow cross-domain references; ``direction``: follow
    edges from the node (outgoing), to it (incoming) or both (bidirectional cross-domain
    references are followed both ways whatever the direction); ``max_nodes``: stop there.
    """

    max_depth: int
    types: frozenset[str] | None = None
    min_strength: float = 0.0
    cross_domains: bool = False
    direction: Literal["outgoing", "incoming", "both"] = "both"
    max_nodes: int = 200

    def follows(self, edge: LinkRecord) -> bool:
        """True when ``edge`` passes the type, strength and cross-domain limits."""
        if self.types is not None and edge.type not in self.types:
            return False
        if edge.strength < self.min_strength:
            return False
        return self.cross_domains or not edge.cross


def _adjacency(
    edges: Iterable[LinkRecord], limits: Limits
) -> dict[str, list[tuple[LinkRecord, str]]]:
    """For each node, the (edge, other end) pairs the limits let it follow, strongest first
    (then oldest, then by id), so that a capped traversal keeps the strongest edges."""
    forward_ok = limits.direction in ("outgoing", "both")
    backward_ok = limits.direction in ("incoming", "both")
    adjacent: dict[str, list[tuple[LinkRecord, str]]] = defaultdict(list)
    for edge in edges:
        if not limits.follows(edge):
            continue
        both_ways = edge.cross and edge.bidirectional
        if forward_ok or both_ways:
            adjacent[edge.source].append((edge, edge.target))
        if backward_ok or both_ways:
            adjacent[edge.target].append((edge, edge.source))
    for pairs in adjacent.values():
        pairs.sort(key=lambda pair: (-pair[0].strength, pair[0].created, pair[0].iri))
    return adjacent


def traverse(
    start: str,
    edges: Iterable[LinkRecord],
    kind_of: Callable[[str], NodeKind | None],
    limits: Limits,
) -> Traversal:
    """Breadth-first from the memory node ``start`` along the edges ``limits`` allow.

    ``kind_of`` says whether a node is a memory node (expanded further) or a lab node (a
    leaf), or None for an end that no longer exists (its edges are skipped). Each node
    appears once, at the depth it was first reached; the edges returned are those followed
    from an expanded node to a reached one, each once. With more than ``max_nodes`` nodes
    the traversal stops and says so (``truncated``).
    """
    adjacent = _adjacency(edges, limits)
    result = Traversal(levels=[[Reached(start, "memory", 0, None)]])
    seen = {start}
    followed: dict[str, LinkRecord] = {}
    for depth in range(limits.max_depth):
        frontier = [node for node in result.levels[depth] if node.kind == "memory"]
        level: list[Reached] = []
        for node in frontier:
            for edge, other in adjacent.get(node.iri, []):
                if other in seen:
                    followed.setdefault(edge.iri, edge)
                    continue
                kind = kind_of(other)
                if kind is None:
                    continue
                if len(seen) >= limits.max_nodes:
                    result.truncated = True
                    continue
                seen.add(other)
                followed.setdefault(edge.iri, edge)
                level.append(Reached(other, kind, depth + 1, edge.iri))
        if not level:
            break
        result.levels.append(level)
    result.edges = list(followed.values())
    return result


def traversal_result(
    origin: MemoryRecord,
    walk: Traversal,
    memories: dict[str, MemoryRecord],
    lab: dict[str, IndexedNode],
    max_nodes: int,
    unfollowed_cross: int = 0,
) -> TraversalResult:
    """The answer for ``walk`` from ``origin``: memory nodes from ``memories``, lab nodes
    (by IRI) from ``lab`` with their attribution and uid, edges with their ends' ids.
    ``unfollowed_cross``: the cross-domain references from the memories reached that were
    not followed (no ``crossDomains``); the note says how to follow them."""
    levels = []
    for depth, reached in enumerate(walk.levels):
        nodes = []
        for n in reached:
            node = lab.get(n.iri)
            nodes.append(
                TraversalNode(
                    kind=n.kind,
                    id=node.uid if node is not None else n.iri,
                    depth=n.depth,
                    viaEdge=n.via,
                    memory=memory_ref(memories[n.iri]) if n.kind == "memory" else None,
                    node=node_ref(node) if node is not None else None,
                )
            )
        levels.append(TraversalLevel(depth=depth, nodes=nodes))
    edges = [
        TraversedEdge(
            id=e.iri,
            type=e.type,
            strength=e.strength,
            source=e.source,
            target=lab[e.target].uid if e.target in lab else e.target,
            crossDomain=e.cross,
            bidirectional=e.bidirectional,
        )
        for e in walk.edges
    ]
    count = sum(len(level.nodes) for level in levels)
    note = None
    if walk.truncated:
        note = (
            f"stopped at {max_nodes} nodes; lower maxDepth, name types or raise minStrength "
            "to see the rest"
        )
    elif count == 1 and unfollowed_cross:
        note = (
            f"no edge within this domain passes the filters from this memory; "
            f"{unfollowed_cross} cross-domain reference(s) lead out: pass crossDomains=true "
            "to follow them"
        )
    elif count == 1:
        note = "no edge passes the filters from this memory; connect_memories adds edges"
    elif unfollowed_cross:
        note = (
            f"{unfollowed_cross} cross-domain reference(s) not followed: pass crossDomains=true "
            "to follow them"
        )
    return TraversalResult(
        start=memory_ref(origin),
        levels=levels,
        edges=edges,
        nodeCount=count,
        truncated=walk.truncated,
        note=note,
    )
