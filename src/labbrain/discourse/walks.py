"""Walks over a dataset's links: the breadth-first neighbourhood of a node
(``get_node_neighborhood``) and the shortest typed paths between two (``find_path``), a whole
frontier's links read from the index at once.
"""

from __future__ import annotations

from collections.abc import Iterable

from labbrain.discourse.models import (
    Detail,
    Direction,
    Edge,
    NeighborhoodResult,
    NeighborNode,
    PathResult,
    PathStep,
)
from labbrain.discourse.refs import cited, compact_relation, node_ref, slug
from labbrain.discourse.scope import ReadScope
from labbrain.errors import InvalidArgument
from labbrain.index.links import NodeLink
from labbrain.index.text import IndexedNode

MAX_NEIGHBORS = 300
MAX_PATHS = 5


def get_node_neighborhood(
    scope: ReadScope,
    uid: str,
    depth: int = 2,
    direction: Direction = "both",
    node_type_filter: str | None = None,
    relationship_type_filter: str | None = None,
    dataset: str | None = None,
    limit: int = MAX_NEIGHBORS,
    detail: Detail = "full",
) -> NeighborhoodResult:
    """Breadth-first neighbourhood: nodes grouped by hop, and the edges among them, all in
    the start node's dataset (the answer's ``dataset``).

    Concise detail has the same nodes by hop, in the same order, and the same edges: each
    node as its citation alone (uid, type, title, creator, created, url; no dataset, hop,
    or the node and relation that first reached it, which the edges and the hop lists
    say) and each edge as :func:`~labbrain.discourse.refs.compact_relation` says it."""
    if not 1 <= depth <= 4:
        raise InvalidArgument("depth", f"{depth} is outside 1..4")
    start, _ = scope.resolve(uid, dataset)
    types = scope.node_types_matching(node_type_filter)
    wanted_label = relationship_type_filter.lower() if relationship_type_filter else None
    hops: list[list[NeighborNode]] = [[]]
    visited = {start.iri: 0}
    edges: list[Edge] = []
    edge_keys: set[tuple[str, str, str | None]] = set()
    frontier = [start]
    truncated = False
    total = 0
    for hop in range(1, depth + 1):
        found: list[NeighborNode] = []
        next_frontier: list[IndexedNode] = []
        frontier_edges = scope.edges_of(start.graph, frontier)
        hop_edges = [
            (
                current,
                [
                    e
                    for e in frontier_edges[current.iri]
                    if direction in ("both", e.direction)
                    and (
                        wanted_label is None
                        or (e.kind == "typed" and (e.label or "").lower() == wanted_label)
                    )
                ],
            )
            for current in frontier
        ]
        ends: Iterable[str] = (e.other for _, rows in hop_edges for e in rows)
        if truncated:  # no node is added any more: only edges among those reached count
            ends = (iri for iri in ends if iri in visited)
        nodes = scope.brain.index.nodes_by_iri(ends, start.graph)
        for current, rows in hop_edges:
            for edge in rows:
                other = nodes.get(edge.other)
                if other is None:
                    continue
                if types is not None and other.node_type.lower() not in types:
                    continue
                source, target = (
                    (current, other) if edge.direction == "outgoing" else (other, current)
                )
                key = (source.uid, target.uid, edge.label)
                if key not in edge_keys:
                    edge_keys.add(key)
                    edges.append(
                        Edge(
                            sourceUid=source.uid,
                            destinationUid=target.uid,
                            relationshipType=edge.label,
                            kind=edge.kind,  # type: ignore[arg-type]
                        )
                    )
                if other.iri in visited:
                    continue
                if total >= limit:
                    truncated = True
                    continue
                visited[other.iri] = hop
                total += 1
                found.append(
                    NeighborNode(
                        **node_ref(other).model_dump(),
                        hop=hop,
                        viaUid=current.uid,
                        relationshipType=edge.label,
                    )
                )
                next_frontier.append(other)
        hops.append(found)
        frontier = next_frontier
        if not frontier:
            break
    reached = {start.uid} | {n.uid for hop_nodes in hops for n in hop_nodes}
    edges = [e for e in edges if e.sourceUid in reached and e.destinationUid in reached]
    concise = detail == "concise"
    return NeighborhoodResult(
        dataset=slug(start.graph),
        start=cited(node_ref(start)) if concise else node_ref(start),
        depth=depth,
        direction=direction,
        nodesByHop=[[cited(n) for n in hop] if concise else list(hop) for hop in hops[1:]],
        edges=[
            compact_relation(e.sourceUid, e.relationshipType, e.destinationUid) if concise else e
            for e in edges
        ],
        listed=total,
        truncated=truncated,
        note=f"stopped at {limit} nodes; lower depth or add filters" if truncated else None,
    )


def find_path(
    scope: ReadScope,
    from_uid: str,
    to_uid: str,
    max_hops: int = 4,
    relationship_types: list[str] | None = None,
    dataset: str | None = None,
) -> PathResult:
    """Shortest paths over typed relations (either direction), up to ``max_hops``."""
    if not 1 <= max_hops <= 6:
        raise InvalidArgument("maxHops", f"{max_hops} is outside 1..6")
    start, goal = _path_ends(scope, from_uid, to_uid, dataset)
    labels = {t.lower() for t in relationship_types} if relationship_types else None
    if start.iri == goal.iri:
        return PathResult(found=True, length=0, paths=[], note="the two uids are the same node")
    # breadth-first, remembering every parent on a shortest path
    parents: dict[str, list[tuple[str, NodeLink]]] = {start.iri: []}
    depth_of = {start.iri: 0}
    nodes = {start.iri: start}
    frontier = [start]
    for hop in range(1, max_hops + 1):
        next_frontier: list[IndexedNode] = []
        frontier_edges = scope.edges_of(start.graph, frontier)
        typed = {
            current.iri: [
                e
                for e in frontier_edges[current.iri]
                if e.kind == "typed" and (labels is None or (e.label or "").lower() in labels)
            ]
            for current in frontier
        }
        found = scope.brain.index.nodes_by_iri(
            (e.other for rows in typed.values() for e in rows), start.graph
        )
        for current in frontier:
            for edge in typed[current.iri]:
                other = found.get(edge.other)
                if other is None:
                    continue
                if other.iri not in depth_of:
                    depth_of[other.iri] = hop
                    nodes[other.iri] = other
                    parents[other.iri] = []
                    next_frontier.append(other)
                if depth_of[other.iri] == hop:
                    parents[other.iri].append((current.iri, edge))
        if goal.iri in depth_of:
            break
        frontier = next_frontier
        if not frontier:
            break
    if goal.iri not in depth_of:
        return PathResult(
            found=False,
            length=None,
            paths=[],
            note=f"no typed path of at most {max_hops} hops; raise maxHops or drop the "
            "relationship filter, or get_node_neighborhood to explore",
        )
    paths: list[list[PathStep]] = []
    truncated = False

    def walk(iri: str, tail: list[PathStep]) -> None:
        nonlocal truncated
        if iri == start.iri:
            if len(paths) >= MAX_PATHS:
                truncated = True
                return
            paths.append(tail)
            return
        for parent, edge in parents[iri]:
            here, there = node_ref(nodes[parent]), node_ref(nodes[iri])
            forward = edge.direction == "outgoing"
            step = PathStep(
                source=here if forward else there,
                relationshipType=edge.label or "",
                destination=there if forward else here,
                traversed="forward" if forward else "backward",
            )
            walk(parent, [step, *tail])

    walk(goal.iri, [])
    return PathResult(
        found=True,
        length=depth_of[goal.iri],
        paths=paths,
        truncated=truncated,
        note=f"showing {MAX_PATHS} of the shortest paths" if truncated else None,
    )


def _path_ends(
    scope: ReadScope, from_uid: str, to_uid: str, dataset: str | None
) -> tuple[IndexedNode, IndexedNode]:
    """The two nodes of a path, in the first dataset that holds both (paths follow the
    relations of one export). Raises NodeNotFound for a uid no dataset in scope holds, and
    InvalidArgument naming each node's datasets when no dataset holds both."""
    starts = {n.graph: n for n in _all_with_uid(scope, from_uid, dataset)}
    goals = {n.graph: n for n in _all_with_uid(scope, to_uid, dataset)}
    for graph, start in starts.items():
        if graph in goals:
            return start, goals[graph]

    def where(nodes: dict[str, IndexedNode]) -> str:
        return ", ".join(slug(graph) for graph in nodes)

    raise InvalidArgument(
        "toUid",
        f"{to_uid.strip()} is in dataset {where(goals)} and {from_uid.strip()} in "
        f"{where(starts)}; a path stays inside one dataset (relations do not cross "
        "exports): pick two nodes of the same dataset",
    )


def _all_with_uid(scope: ReadScope, uid: str, dataset: str | None) -> list[IndexedNode]:
    """Every node with this uid in the datasets in scope, at least one (else NodeNotFound)."""
    first, _ = scope.resolve(uid, dataset)
    return [first, *scope.brain.index.nodes_by_uid(uid.strip(), scope.datasets(dataset))[1:]]
