"""Typed relations filtered by source, destination and label (``get_relationships``), from the
``relationships`` template, grouped by dataset.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from labbrain.discourse.models import CitedNode, Detail, Relationship, RelationshipsResult
from labbrain.discourse.refs import cited, one_dataset
from labbrain.discourse.schema import relation_types
from labbrain.discourse.scope import MAX_LIST, ReadScope
from labbrain.store import templates


def get_relationships(
    scope: ReadScope,
    source_uid: str | None = None,
    destination_uid: str | None = None,
    relationship_type: str | None = None,
    dataset: str | None = None,
    limit: int = MAX_LIST,
    detail: Detail = "full",
) -> RelationshipsResult:
    """Typed relations, filtered by source, destination and/or label, grouped by dataset.

    ``dataset`` names the one dataset of all the relations listed, if they share one.
    Concise detail lists the same relations in the same order; each node is given in full
    (attributed; without its dataset when ``dataset`` names it) at its first mention in
    its dataset and by its uid alone after that, so every prefix of the list (what the
    output cap keeps) still attributes every node it names."""
    params: dict[str, Any] = {}
    graph: str | None = None
    if source_uid:
        source, _ = scope.resolve(source_uid, dataset)
        params["source"], graph = source.iri, source.graph
    if destination_uid:
        destination, _ = scope.resolve(destination_uid, dataset)
        params["destination"] = destination.iri
        if graph is not None and destination.graph != graph:
            apart = "the two nodes are in different datasets"
            return RelationshipsResult(relationships=[], listed=0, total=0, note=apart)
        graph = destination.graph
    if graph is None:
        scoped = scope.datasets(dataset)
        graph = scoped[0] if scoped else None
    if graph is not None:
        params["graph"] = graph
    if relationship_type:
        exact = {t.label.lower(): t.label for t in relation_types(scope)}
        params["label"] = exact.get(relationship_type.strip().lower(), relationship_type)
    total = 0

    def counted(found: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        nonlocal total
        for row in found:
            total += 1
            yield row

    # The first ``limit`` in order, without holding every match (a common type has
    # tens of thousands).
    rows = heapq.nsmallest(
        limit,
        counted(templates.rows(scope.brain.store, "relationships", **params)),
        key=lambda r: (r["graph"], r["label"], r["source"], r["destination"]),
    )
    relationships = []
    by_graph: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_graph[row["graph"]].append(row)
    for graph_iri, graph_rows in by_graph.items():
        refs = scope.refs(
            [r["source"] for r in graph_rows] + [r["destination"] for r in graph_rows],
            graph_iri,
        )
        for row in graph_rows:
            if row["source"] in refs and row["destination"] in refs:
                relationships.append(
                    Relationship(
                        relationshipType=row["label"],
                        source=refs[row["source"]],
                        destination=refs[row["destination"]],
                    )
                )
    note: str | None = None
    if total > limit:
        note = f"showing {limit} of {total}; filter by sourceUid, destinationUid or type"
    elif total == 0:
        labels = sorted({t.label for t in relation_types(scope)})
        note = f"no relationships match; relationship types: {', '.join(labels)}"
    shared = one_dataset(
        end for r in relationships for end in (r.source, r.destination) if not isinstance(end, str)
    )
    if detail == "concise":
        relationships = _first_mentions(relationships, shared is not None)
    return RelationshipsResult(
        dataset=shared,
        relationships=relationships,
        listed=len(relationships),
        total=total,
        truncated=total > limit,
        note=note,
    )


def _first_mentions(relationships: list[Relationship], named: bool) -> list[Relationship]:
    """``relationships`` (grouped by dataset) with each end after the first mention of its
    node in its dataset replaced by its uid; the first mentions lose their dataset when the
    answer names it (``named``)."""
    seen: set[tuple[str | None, str]] = set()

    def end(ref: CitedNode | str) -> CitedNode | str:
        if isinstance(ref, str):
            return ref
        key = (ref.dataset, ref.uid)
        if key in seen:
            return ref.uid
        seen.add(key)
        return cited(ref) if named else ref

    return [
        Relationship(
            relationshipType=r.relationshipType,
            source=end(r.source),
            destination=end(r.destination),
        )
        for r in relationships
    ]
