"""The discourse-graph questions an assistant asks, answered from the store and its index.

:class:`DiscourseReader` is the library side of the MCP tools: search, node details, links,
schema, contributions, relationships, neighbourhoods, paths, claim status and gaps. Relations
come from SPARQL templates (``queries/*.rq``); node identity and attribution (uid, type, title,
creator, dates) come from the text index, which holds one row per node, and so do a node's
links (its read model of the ``node_edges`` template, asked for a whole breadth-first frontier
at once; see :mod:`labbrain.index.links`). Every answer names
its nodes with :class:`~labbrain.discourse.models.NodeRef`, attribution included, and every list is
capped with a note saying how to get more.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from labbrain.core import LabBrain
from labbrain.discourse.models import (
    CONCISE_TYPES,
    CitedNode,
    ClaimStatusResult,
    ContributionsResult,
    CreatorStance,
    CreatorStats,
    DatasetInfo,
    Detail,
    Direction,
    Edge,
    GapsResult,
    Link,
    LinkedNodesResult,
    NeighborhoodResult,
    NeighborNode,
    NodeDetail,
    NodeImagesResult,
    NodeRef,
    NodeTypeInfo,
    PathResult,
    PathStep,
    Relationship,
    RelationshipsResult,
    RelationTypeInfo,
    RelationTypesResult,
    SchemaResult,
    SearchNodesResult,
    SearchResult,
    StanceNode,
)
from labbrain.errors import InvalidArgument, NodeNotFound
from labbrain.index.links import NodeLink
from labbrain.index.search_query import SearchQuery, dataset_graphs, node_type_labels
from labbrain.index.text import IndexedNode, SearchHit
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX, PREFIXES
from labbrain.store import templates
from labbrain.store.ontology import vocabulary

MAX_LINKS = 200
MAX_NEIGHBORS = 300
MAX_PATHS = 5
MAX_LIST = 100

Answer = TypeVar("Answer", bound=BaseModel)


def _slug(graph: str) -> str:
    return graph.removeprefix(DATASET_GRAPH_PREFIX)


def node_ref(node: IndexedNode) -> NodeRef:
    """The attributed reference of an indexed node."""
    return NodeRef(
        uid=node.uid,
        dataset=_slug(node.graph),
        nodeType=node.node_type,
        title=node.title,
        creator=node.creator,
        created=node.created,
        url=node.iri,
    )


def search_result(hit: SearchHit) -> SearchResult:
    """The answer's entry for a search hit: the node attributed, its snippet and score."""
    node = hit.node
    return SearchResult(
        uid=node.uid,
        dataset=_slug(node.graph),
        nodeType=node.node_type,
        title=node.title,
        creator=node.creator,
        created=node.created,
        url=node.iri,
        modified=node.modified,
        snippet=hit.snippet,
        imageCount=node.images,
        score=hit.score,
    )


def cited(ref: CitedNode) -> CitedNode:
    """``ref`` as a concise answer that names its dataset once cites it: every field of it
    (uid, type, title, creator, created, url, and those of a subclass) but the dataset, as a
    plain :class:`CitedNode`."""
    return CitedNode(**ref.model_dump(include=set(CitedNode.model_fields) - {"dataset"}))


def compact_relation(source: str, label: str | None, destination: str) -> str:
    """A relation (or, with no label, a text link) as one string: ``source -Label->
    destination``, ``source -(text)-> destination`` (uids)."""
    return f"{source} -{label if label is not None else '(text)'}-> {destination}"


def _one_dataset(refs: Iterable[CitedNode]) -> str | None:
    """The dataset of all ``refs`` if they share exactly one, else None."""
    datasets = {ref.dataset for ref in refs}
    return datasets.pop() if len(datasets) == 1 else None


class DiscourseReader:
    """Read-side questions over the discourse graphs of one opened store."""

    def __init__(self, brain: LabBrain) -> None:
        self.brain = brain
        self._gap_cache: dict[tuple[tuple[str, str], ...], dict[str, set[tuple[str, str]]]] = {}
        #: Answers over all loaded datasets, by name, with the state they were computed at.
        self._answers: dict[str, tuple[tuple[tuple[str, str], ...], BaseModel]] = {}

    # ------------------------------------------------------------------ resolving
    def datasets(self, dataset: str | None = None) -> list[str] | None:
        """The dataset graphs to look in: all (None) or the one named (slug or IRI), as the
        index holds them (DatasetNotFound lists them)."""
        if dataset is None or dataset == "":
            return None
        return dataset_graphs(self.brain.index, [dataset])

    def resolve(self, uid: str, dataset: str | None = None) -> tuple[IndexedNode, list[str]]:
        """The node with this uid (and the other datasets that also hold one)."""
        if not uid or not uid.strip():
            raise InvalidArgument("uid", "give the uid of a node (search_nodes finds uids)")
        found = self.brain.index.nodes_by_uid(uid.strip(), self.datasets(dataset))
        if not found:
            raise NodeNotFound(uid)
        return found[0], [_slug(n.graph) for n in found[1:]]

    def node_types_matching(self, node_type: str | None) -> list[str] | None:
        """Type labels (lower case) a ``nodeType`` filter selects: a label or a [[XXX]]
        code, any case (see :func:`~labbrain.index.search_query.node_type_labels`)."""
        return node_type_labels(self.brain.index, node_type)

    def _refs(self, iris: Iterable[str], graph: str) -> dict[str, NodeRef]:
        return {
            iri: node_ref(node) for iri, node in self.brain.index.nodes_by_iri(iris, graph).items()
        }

    # ------------------------------------------------------------------ search
    def search_nodes(self, query: SearchQuery) -> SearchNodesResult:
        """Search over titles and content, filtered and ordered: keyword (BM25), semantic
        (embeddings) or hybrid (both fused); without a mode, hybrid when vectors exist, else
        keyword (see :mod:`labbrain.index.hybrid`)."""
        if not query.text.strip():
            raise InvalidArgument("query", "give one or more words to search for")
        found = self.brain.search(query.resolved(self.brain.index))
        results = [search_result(hit) for hit in found.hits]
        limit = query.limit
        note = None
        if len(results) == limit:
            note = f"showing the first {limit}; raise limit (up to 100) or add filters for more"
        elif not results:
            note = "no match; try other words, or get_schema for node types and datasets"
        if found.note:
            note = f"{found.note}; {note}" if note else found.note
        return SearchNodesResult(results=results, listed=len(results), mode=found.mode, note=note)

    # ------------------------------------------------------------------ one node
    def _edges(self, node: IndexedNode) -> list[NodeLink]:
        """The node's typed relations and text links, both directions, as the ``node_edges``
        template answers (rows and order), from the index."""
        return self.brain.index.links_of(node.graph, [node.iri])[node.iri]

    def _frontier_edges(self, graph: str, frontier: list[IndexedNode]) -> dict[str, list[NodeLink]]:
        """:meth:`_edges` of every node of ``frontier`` (all in ``graph``), by IRI, in one
        index lookup."""
        return self.brain.index.links_of(graph, (node.iri for node in frontier))

    def _links(self, node: IndexedNode, direction: Direction) -> list[Link]:
        rows = [e for e in self._edges(node) if direction in ("both", e.direction)]
        refs = self._refs((e.other for e in rows), node.graph)
        links: list[Link] = []
        seen: set[tuple[str, str, str | None]] = set()
        for edge in rows:
            ref = refs.get(edge.other)
            key = (edge.direction, edge.other, edge.label)
            if ref is None or key in seen:
                continue
            if edge.kind == "text" and (edge.direction, edge.other, None) in seen:
                continue
            seen.add(key)
            links.append(
                Link(
                    direction=edge.direction,  # type: ignore[arg-type]
                    kind=edge.kind,  # type: ignore[arg-type]
                    relationshipType=edge.label,
                    node=ref,
                )
            )
        # typed relations first, then text references
        links.sort(key=lambda link: (link.kind != "typed", link.direction, link.node.uid))
        return links

    def get_node(self, uid: str, dataset: str | None = None) -> NodeDetail:
        """A node in full: markdown, attribution, typed and text links, images."""
        node, elsewhere = self.resolve(uid, dataset)
        links = self._links(node, "both")
        images = self._images(node)
        return NodeDetail(
            **node_ref(node).model_dump(),
            modified=node.modified,
            content=self.brain.index.content(node.graph, node.iri),
            imageUrls=images,
            imageCount=len(images),
            linkedNodes=links[:MAX_LINKS],
            linkedNodesTruncated=len(links) > MAX_LINKS,
            alsoIn=elsewhere,
        )

    def get_linked_nodes(
        self, uid: str, direction: Direction = "both", dataset: str | None = None
    ) -> LinkedNodesResult:
        """The typed relations and text references of a node, in one or both directions."""
        node, _ = self.resolve(uid, dataset)
        links = self._links(node, direction)
        note = None
        if len(links) > MAX_LINKS:
            note = f"showing {MAX_LINKS} of {len(links)}; get_relationships filters by type"
        elif not links:
            note = "no linked nodes; get_node_neighborhood looks further"
        return LinkedNodesResult(
            node=node_ref(node),
            direction=direction,
            linkedNodes=links[:MAX_LINKS],
            listed=min(len(links), MAX_LINKS),
            total=len(links),
            truncated=len(links) > MAX_LINKS,
            note=note,
        )

    def _images(self, node: IndexedNode) -> list[str]:
        """The node's image URLs in the order its markdown shows them."""
        if not node.images:  # the index counts them: most nodes have none
            return []
        rows = templates.run(self.brain.store, "node_images", node=node.iri, graph=node.graph)
        content = self.brain.index.content(node.graph, node.iri)

        def position(url: str) -> tuple[int, str]:
            found = content.find(url)
            return (found if found >= 0 else len(content), url)

        return sorted((row["image"] for row in rows), key=position)

    def get_node_images(self, uid: str, dataset: str | None = None) -> NodeImagesResult:
        """The image URLs embedded in a node (never fetched here)."""
        node, _ = self.resolve(uid, dataset)
        images = self._images(node)
        return NodeImagesResult(
            node=node_ref(node),
            imageUrls=images,
            keyImage=images[0] if images else None,
            imageCount=len(images),
            note=None if images else "this node embeds no images",
        )

    # ------------------------------------------------------------------ schema
    def relation_types(self) -> list[RelationTypeInfo]:
        """Every forward relation type of every dataset, most used first."""
        return [
            RelationTypeInfo(
                relation=row["relation"],
                label=row["label"],
                sourceType=row["sourceType"],
                destinationType=row["destinationType"],
                inverseLabel=row["inverseLabel"],
                coreRelation=_prefixed(row["core"]),
                count=row["count"],
                dataset=_slug(row["graph"]),
            )
            for row in templates.run(self.brain.store, "relation_types")
        ]

    def _version(self) -> tuple[tuple[str, str], ...]:
        """The state of the loaded datasets: answers derived from all of them are cached by it."""
        return tuple(sorted((d["graph"], d["loadId"]) for d in self.brain.datasets()))

    def get_schema(self) -> SchemaResult:
        """Node types (with descriptions from the ontology and counts), relation types, datasets.

        Cached until a dataset is loaded, replaced or dropped."""
        return self._per_version("schema", self._schema)

    def _per_version(self, name: str, build: Callable[[], Answer]) -> Answer:
        """``build()``'s answer, computed once per state of the loaded datasets (see
        :meth:`_version`); each caller gets its own deep copy, free to change it."""
        version = self._version()
        cached = self._answers.get(name)
        if cached is None or cached[0] != version:
            cached = self._answers[name] = (version, build())
        return cast(Answer, cached[1].model_copy(deep=True))

    def _schema(self) -> SchemaResult:
        counts: Counter[str] = Counter()
        datasets_of: dict[str, set[str]] = defaultdict(set)
        for graph, node_type, count in self.brain.index.type_counts():
            counts[node_type] += count
            datasets_of[node_type].add(_slug(graph))
        described: dict[str, tuple[str | None, str]] = {}
        for row in templates.run(self.brain.store, "node_type_codes"):
            described.setdefault(row["label"], (row["code"], row["description"] or ""))
        vocab = vocabulary()
        types = []
        for label in sorted(counts, key=lambda t: (-counts[t], t)):
            code, description = described.get(label, (None, ""))
            kind = vocab.node_kind_by_label(label)
            if kind is not None:
                code = code or kind.abbreviation
                description = description or kind.description
            types.append(
                NodeTypeInfo(
                    label=label,
                    code=code,
                    description=description or "a node type defined by this graph",
                    count=counts[label],
                    datasets=sorted(datasets_of[label]),
                )
            )
        datasets = [
            DatasetInfo(
                dataset=row["slug"],
                graph=row["graph"],
                domain=row["exportId"],
                nodes=row["nodes"],
                loadedAt=row["loadedAt"],
            )
            for row in self.brain.datasets()
        ]
        return SchemaResult(nodeTypes=types, relationTypes=self.relation_types(), datasets=datasets)

    def get_relation_types(self) -> RelationTypesResult:
        """Every relation type with its instance count."""
        return RelationTypesResult(relationTypes=self.relation_types())

    # ------------------------------------------------------------------ people
    def get_researcher_contributions(
        self,
        creator: str | None = None,
        node_type: str | None = None,
        limit: int = MAX_LIST,
        detail: Detail = "full",
    ) -> ContributionsResult:
        """Per creator: counts by type and first/last contribution; or one creator's nodes.

        ``dataset`` names the one dataset of all the nodes listed, if they share one. Concise
        detail lists the same creators (totals and dates), the same nodes, in the same order,
        each attributed, but each creator's :data:`CONCISE_TYPES` largest types only (most
        nodes first, then by name) and the nodes without their dataset when ``dataset``
        names it."""
        if not creator and not node_type:  # everyone: the same answer until a load
            result = self._per_version("contributions", lambda: self._contributions(None, None, 0))
        else:
            result = self._contributions(creator, node_type, limit)
        if detail == "full":
            return result
        for entry in result.creators:
            largest = sorted(entry.byType.items(), key=lambda item: (-item[1], item[0]))
            entry.byType = dict(largest[:CONCISE_TYPES])
            left_out = sum(count for _, count in largest[CONCISE_TYPES:])
            entry.otherTypes = left_out or None
        if result.dataset is not None:
            result.nodes = [cited(node) for node in result.nodes]
        return result

    def _contributions(
        self, creator: str | None, node_type: str | None, limit: int
    ) -> ContributionsResult:
        """The full contributions answer (see :meth:`get_researcher_contributions`)."""
        rows = self.brain.index.contributions(creator or None)
        types = self.node_types_matching(node_type)
        tallies: dict[str, _Tally] = {}
        for name, kind, count, first, last in rows:
            if types is not None and kind.lower() not in types:
                continue
            tally = tallies.get(name)
            if tally is None:
                tally = tallies[name] = _Tally()
            tally.total += count
            tally.by_type[kind] = tally.by_type.get(kind, 0) + count
            tally.first = _earliest(tally.first, first)
            tally.last = _latest(tally.last, last)
        creators = [
            CreatorStats(
                creator=name,
                total=tally.total,
                byType=tally.by_type,
                firstContribution=tally.first,
                lastContribution=tally.last,
            )
            for name, tally in sorted(tallies.items(), key=lambda item: (-item[1].total, item[0]))
        ]
        if not creator:
            return ContributionsResult(
                creators=creators,
                note="pass creator to list one researcher's nodes" if creators else None,
            )
        if not rows:
            known = self.brain.index.creators()
            raise InvalidArgument(
                "creator", f"no nodes by {creator!r}; creators: {', '.join(known[:30])}"
            )
        if not creators:
            return ContributionsResult(
                creators=[], note=f"{creator} has no nodes of type {node_type}"
            )
        nodes, total = self.brain.index.nodes(creator=creator, node_types=types, limit=limit)
        refs: list[CitedNode] = [node_ref(n) for n in nodes]
        return ContributionsResult(
            dataset=_one_dataset(refs),
            creators=creators,
            nodes=refs,
            listed=len(nodes),
            total=total,
            truncated=total > len(nodes),
            note=f"showing the newest {len(nodes)} of {total}; narrow with nodeType"
            if total > len(nodes)
            else None,
        )

    # ------------------------------------------------------------------ relations
    def get_relationships(
        self,
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
            source, _ = self.resolve(source_uid, dataset)
            params["source"], graph = source.iri, source.graph
        if destination_uid:
            destination, _ = self.resolve(destination_uid, dataset)
            params["destination"] = destination.iri
            if graph is not None and destination.graph != graph:
                apart = "the two nodes are in different datasets"
                return RelationshipsResult(relationships=[], listed=0, total=0, note=apart)
            graph = destination.graph
        if graph is None:
            scoped = self.datasets(dataset)
            graph = scoped[0] if scoped else None
        if graph is not None:
            params["graph"] = graph
        if relationship_type:
            exact = {t.label.lower(): t.label for t in self.relation_types()}
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
            counted(templates.rows(self.brain.store, "relationships", **params)),
            key=lambda r: (r["graph"], r["label"], r["source"], r["destination"]),
        )
        relationships = []
        by_graph: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_graph[row["graph"]].append(row)
        for graph_iri, graph_rows in by_graph.items():
            refs = self._refs(
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
            labels = sorted({t.label for t in self.relation_types()})
            note = f"no relationships match; relationship types: {', '.join(labels)}"
        shared = _one_dataset(
            end
            for r in relationships
            for end in (r.source, r.destination)
            if not isinstance(end, str)
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

    # ------------------------------------------------------------------ traversal
    def get_node_neighborhood(
        self,
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
        say) and each edge as :func:`compact_relation` says it."""
        if not 1 <= depth <= 4:
            raise InvalidArgument("depth", f"{depth} is outside 1..4")
        start, _ = self.resolve(uid, dataset)
        types = self.node_types_matching(node_type_filter)
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
            frontier_edges = self._frontier_edges(start.graph, frontier)
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
            nodes = self.brain.index.nodes_by_iri(ends, start.graph)
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
            dataset=_slug(start.graph),
            start=cited(node_ref(start)) if concise else node_ref(start),
            depth=depth,
            direction=direction,
            nodesByHop=[[cited(n) for n in hop] if concise else list(hop) for hop in hops[1:]],
            edges=[
                compact_relation(e.sourceUid, e.relationshipType, e.destinationUid)
                if concise
                else e
                for e in edges
            ],
            listed=total,
            truncated=truncated,
            note=f"stopped at {limit} nodes; lower depth or add filters" if truncated else None,
        )

    def find_path(
        self,
        from_uid: str,
        to_uid: str,
        max_hops: int = 4,
        relationship_types: list[str] | None = None,
        dataset: str | None = None,
    ) -> PathResult:
        """Shortest paths over typed relations (either direction), up to ``max_hops``."""
        if not 1 <= max_hops <= 6:
            raise InvalidArgument("maxHops", f"{max_hops} is outside 1..6")
        start, goal = self._path_ends(from_uid, to_uid, dataset)
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
            frontier_edges = self._frontier_edges(start.graph, frontier)
            typed = {
                current.iri: [
                    e
                    for e in frontier_edges[current.iri]
                    if e.kind == "typed" and (labels is None or (e.label or "").lower() in labels)
                ]
                for current in frontier
            }
            found = self.brain.index.nodes_by_iri(
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
        self, from_uid: str, to_uid: str, dataset: str | None
    ) -> tuple[IndexedNode, IndexedNode]:
        """The two nodes of a path, in the first dataset that holds both (paths follow the
        relations of one export). Raises NodeNotFound for a uid no dataset in scope holds, and
        InvalidArgument naming each node's datasets when no dataset holds both."""
        starts = {n.graph: n for n in self._all_with_uid(from_uid, dataset)}
        goals = {n.graph: n for n in self._all_with_uid(to_uid, dataset)}
        for graph, start in starts.items():
            if graph in goals:
                return start, goals[graph]

        def where(nodes: dict[str, IndexedNode]) -> str:
            return ", ".join(_slug(graph) for graph in nodes)

        raise InvalidArgument(
            "toUid",
            f"{to_uid.strip()} is in dataset {where(goals)} and {from_uid.strip()} in "
            f"{where(starts)}; a path stays inside one dataset (relations do not cross "
            "exports): pick two nodes of the same dataset",
        )

    def _all_with_uid(self, uid: str, dataset: str | None) -> list[IndexedNode]:
        """Every node with this uid in the datasets in scope, at least one (else NodeNotFound)."""
        first, _ = self.resolve(uid, dataset)
        return [first, *self.brain.index.nodes_by_uid(uid.strip(), self.datasets(dataset))[1:]]

    # ------------------------------------------------------------------ analysis
    def get_claim_status(
        self, uid: str, dataset: str | None = None, detail: Detail = "full"
    ) -> ClaimStatusResult:
        """Supporting and opposing nodes of a claim (direct and through one node), by creator,
        all in the claim's dataset (the answer's ``dataset``).

        Concise detail has the same nodes, counts and flags, each node attributed but without
        its dataset, and the intermediate node of an indirect one as its uid (that node is
        listed too, as a direct one)."""
        status = self._claim_status(uid, dataset)
        if detail == "full":
            return status
        for side in (status.supporting, status.opposing):
            side[:] = [
                StanceNode(
                    **cited(node).model_dump(),
                    relationshipType=node.relationshipType,
                    via=node.via.uid if isinstance(node.via, CitedNode) else node.via,
                )
                for node in side
            ]
        status.claim = cited(status.claim)
        status.sources = [cited(source) for source in status.sources]
        return status

    def _claim_status(self, uid: str, dataset: str | None) -> ClaimStatusResult:
        """The full claim status (see :meth:`get_claim_status`)."""
        claim, _ = self.resolve(uid, dataset)
        rows = templates.run(self.brain.store, "claim_stance", node=claim.iri, graph=claim.graph)
        refs = self._refs(
            [r["other"] for r in rows] + [r["via"] for r in rows if r["via"]], claim.graph
        )
        supporting: list[StanceNode] = []
        opposing: list[StanceNode] = []
        seen: set[tuple[str, str, str | None]] = set()
        for row in rows:
            other = refs.get(row["other"])
            via = refs.get(row["via"]) if row["via"] else None
            if other is None or (row["via"] and via is None):
                continue
            key = (row["stance"], row["other"], row["via"])
            direct_key = (row["stance"], row["other"], None)
            if key in seen or (row["via"] and direct_key in seen):
                continue
            seen.add(key)
            node = StanceNode(**other.model_dump(), relationshipType=row["label"], via=via)
            (supporting if row["stance"] == "supports" else opposing).append(node)
        by_creator: dict[str, CreatorStance] = {}
        for stance_nodes, field in ((supporting, "supporting"), (opposing, "opposing")):
            for node in stance_nodes:
                entry = by_creator.setdefault(node.creator or "(unknown)", CreatorStance())
                setattr(entry, field, getattr(entry, field) + 1)
        sources = self._sources_of([n for n in supporting + opposing if n.via is None], claim)
        creators = {n.creator for n in supporting + opposing}
        evidence = supporting + opposing
        single = bool(evidence) and (len(sources) <= 1 if sources else len(creators) <= 1)
        note = None
        if not evidence:
            note = "nothing supports or opposes this node yet; find_gaps lists such claims"
        return ClaimStatusResult(
            dataset=_slug(claim.graph),
            claim=node_ref(claim),
            supporting=supporting,
            opposing=opposing,
            countsByCreator=dict(sorted(by_creator.items())),
            sources=sources,
            contested=bool(supporting) and bool(opposing),
            singleSource=single,
            note=note,
        )

    def _sources_of(self, evidence: list[StanceNode], claim: IndexedNode) -> list[CitedNode]:
        """Source nodes the given evidence links to (by relation or in its text)."""
        found: dict[str, CitedNode] = {}
        nodes = self.brain.index.nodes_by_iri((item.url for item in evidence), claim.graph)
        edges = self._frontier_edges(claim.graph, list(nodes.values()))
        others = [e.other for rows in edges.values() for e in rows]
        for ref in self._refs(others, claim.graph).values():
            if ref.nodeType.lower() in ("source", "source document"):
                found[ref.uid] = ref
        return sorted(found.values(), key=lambda r: r.uid)

    def find_gaps(
        self, node_type: str | None = None, dataset: str | None = None, limit: int = 50
    ) -> GapsResult:
        """Questions nothing addresses, claims without evidence, hypotheses without results,
        evidence without a source."""
        types = self.node_types_matching(node_type)
        if types is not None and not any(kind in types for kind in _GAP_KINDS.values()):
            raise InvalidArgument(
                "nodeType", "find_gaps covers Question, Claim, Hypothesis and Evidence"
            )
        scoped = self.datasets(dataset)
        gaps = self._gaps()
        grouped: dict[str, list[NodeRef]] = {gap: [] for gap in _GAP_KINDS}
        counts: Counter[str] = Counter()
        for gap, kind in _GAP_KINDS.items():
            if types is not None and kind not in types:
                continue
            chosen = sorted(
                (graph, iri) for graph, iri in gaps[gap] if scoped is None or graph in scoped
            )
            counts[gap] = len(chosen)
            for graph in dict.fromkeys(g for g, _ in chosen[:limit]):
                refs = self._refs((iri for g, iri in chosen[:limit] if g == graph), graph)
                grouped[gap].extend(refs[iri] for g, iri in chosen[:limit] if iri in refs)
        truncated = any(counts[g] > len(grouped[g]) for g in grouped)
        return GapsResult(
            **grouped,
            counts={gap: counts[gap] for gap in _GAP_KINDS},
            truncated=truncated,
            note=f"each list shows at most {limit}; narrow with nodeType or dataset"
            if truncated
            else None,
        )

    def _gaps(self) -> dict[str, set[tuple[str, str]]]:
        """(graph, node) of every gap, computed from three scans and cached per store state."""
        version = self._version()
        cached = self._gap_cache.get(version)
        if cached is not None:
            return cached
        store = self.brain.store
        kinds: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for row in templates.run(store, "core_kinds"):
            kinds[row["kind"].rsplit("#", 1)[-1]].add((row["graph"], row["node"]))
        stance = {
            (t.dataset, t.relation)
            for t in self.relation_types()
            if t.coreRelation in ("dg:supports", "dg:opposes")
        }
        addressed: set[tuple[str, str]] = set()
        argued: set[tuple[str, str]] = set()
        tested: set[tuple[str, str]] = set()
        linked: set[tuple[str, str, str]] = set()
        for row in templates.run(store, "typed_edges"):
            graph, source, target = row["graph"], row["source"], row["destination"]
            addressed.add((graph, target))
            if (_slug(graph), row["relation"]) in stance:
                argued.add((graph, target))
            if (graph, source) in kinds["Result"]:
                tested.add((graph, target))
            linked.update({(graph, source, target), (graph, target, source)})
        for row in templates.run(store, "text_edges"):
            graph, source, target = row["graph"], row["source"], row["destination"]
            linked.update({(graph, source, target), (graph, target, source)})
        sourced = {
            (graph, node) for graph, node, other in linked if (graph, other) in kinds["Source"]
        }
        gaps = {
            "unaddressedQuestions": kinds["Question"] - addressed,
            "claimsWithoutEvidence": kinds["Claim"] - argued,
            "hypothesesWithoutResults": kinds["Hypothesis"] - tested,
            "evidenceWithoutSource": kinds["Evidence"] - sourced,
        }
        self._gap_cache = {version: gaps}
        return gaps


_GAP_KINDS = {
    "unaddressedQuestions": "question",
    "claimsWithoutEvidence": "claim",
    "hypothesesWithoutResults": "hypothesis",
    "evidenceWithoutSource": "evidence",
}


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


def _prefixed(iri: str | None) -> str | None:
    if iri is None:
        return None
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return iri


@dataclass
class _Tally:
    """One creator's counts while they are summed up (see ``_contributions``)."""

    total: int = 0
    by_type: dict[str, int] = dataclasses.field(default_factory=dict)
    first: str | None = None
    last: str | None = None


def _earliest(current: str | None, candidate: str | None) -> str | None:
    values = [v for v in (current, candidate) if v]
    return min(values) if values else None


def _latest(current: str | None, candidate: str | None) -> str | None:
    values = [v for v in (current, candidate) if v]
    return max(values) if values else None
