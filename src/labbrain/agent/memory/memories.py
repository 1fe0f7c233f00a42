"""The assistant's memory graph: isolated domains of memory nodes joined by typed edges.

Each domain is a named graph ``urn:labbrain:domain:<id>`` that describes itself and holds its
memory nodes and their edges::

    <urn:labbrain:domain:<id>>  a lb:Domain ; rdfs:label ; dct:description ; dct:created ;
                                lb:lastAccessed ; PROV
    <urn:labbrain:memory:<hex>> a lb:MemoryNode ; sioc:content ; dct:abstract (summary) ;
                                lb:tag ; lb:path ; dct:created ; dct:modified ; PROV
    <urn:labbrain:link:<hex>>   a lb:Link ; lb:linkSource ; lb:linkTarget ; lb:linkType ;
                                lb:strength ; dct:created ; dct:modified ; PROV

An edge lives in the graph of its source. It joins two memory nodes of one domain, or a
memory node to a discourse node of the lab (``prov:wasDerivedFrom`` names that node too). A
*cross-domain reference* is an edge between memory nodes of two domains, typed
``lb:CrossReference`` as well, with a ``dct:description`` and ``lb:bidirectional``.

The active domain is per agent and durable: ``<agent> lb:activeDomain <domain>`` in
``urn:labbrain:system`` (see :mod:`labbrain.agent.memory.domains`). A domain is *accessed* when it
is selected or written (a memory stored, updated, deleted, moved in or out, an edge made,
changed or removed); reads (get, search, traverse, list) do not count. On a read-only store
the selection holds for the process only, and nothing is recorded.

Every write goes through :class:`~labbrain.agent.writer.AgentWriter`: one transaction, PROV
provenance, optional idempotency key. The vocabulary, the records read from quads and the
checks of user values are in :mod:`labbrain.agent.memory.records`; the breadth-first walk is in
:mod:`labbrain.agent.memory.traverse`; the answer models in :mod:`labbrain.agent.memory.models`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.agent.memory.domains import Domains
from labbrain.agent.memory.models import (
    DeleteMemoryResult,
    EdgeEnd,
    EdgeInfo,
    EdgeResult,
    LinkTypeName,
    MemoryDetail,
    MemoryHit,
    MemoryResult,
    RemoveEdgeResult,
    SearchMemoriesResult,
    TransferResult,
    TraversalResult,
    TraverseDirection,
)
from labbrain.agent.memory.records import (
    CONTENT,
    LINK_CLASS,
    MAX_CONTENT,
    MAX_DEPTH,
    MAX_DESCRIPTION,
    MAX_SHORT,
    MEMORY_CLASS,
    PATH,
    STRENGTH,
    SUMMARY,
    TAG,
    LinkRecord,
    MemoryRecord,
    accessed,
    as_cross_reference,
    as_edge,
    check_link_type,
    check_strength,
    check_text,
    cross_facts,
    domain_id,
    link_quads,
    load_domain,
    memory_quads,
    memory_ref,
    normalize_path,
    normalize_tags,
    path_matches,
    read_link,
    read_memory,
    regraph,
    resource_iri,
    revise,
)
from labbrain.agent.memory.traverse import Limits, NodeKind, traversal_result, traverse
from labbrain.agent.writer import AgentWriter, WritePlan
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader, node_ref
from labbrain.errors import InvalidArgument, ItemNotFound, NodeNotFound
from labbrain.index.analysis import terms
from labbrain.index.bm25 import rank
from labbrain.rdf.namespaces import LINK_PREFIX, MEMORY_PREFIX
from labbrain.rdf.terms import new_iri, now, number, text
from labbrain.store import templates


class Memories:
    """The memory tools' operations over one opened store (see module doc).

    Reads need an active domain; writes also need a writable store. Errors are from the
    error tree: NoDomainSelected, ItemNotFound (domain, memory, edge), NodeNotFound,
    InvalidArgument (bad values, ids from another domain, duplicates), StoreReadOnly.
    """

    def __init__(self, brain: LabBrain, reader: DiscourseReader, writer: AgentWriter) -> None:
        self.brain = brain
        self.reader = reader
        self.writer = writer
        self.domains = Domains(brain, writer)
        self.max_nodes = brain.settings.memory_traverse_max_nodes

    # ------------------------------------------------------------------ lookups
    def _locate(self, iri: str, kind: NamedNode) -> str | None:
        rows = templates.run(self.brain.store, "memory_locate", resource=iri)
        return next((row["graph"] for row in rows if row["kind"] == kind.value), None)

    def find_memory(self, iri: str) -> MemoryRecord | None:
        """The memory node ``iri`` in whichever domain holds it, or None."""
        graph = self._locate(iri, MEMORY_CLASS)
        if graph is None:
            return None
        return read_memory(iri, graph, self.brain.store.quads(graph, NamedNode(iri)))

    def memory(self, ident: str) -> MemoryRecord:
        """The memory node a user-given id names, in any domain, or ItemNotFound."""
        iri = resource_iri(ident, MEMORY_PREFIX)
        record = self.find_memory(iri) if iri else None
        if record is None:
            raise ItemNotFound(
                "memory", ident, "search_memories finds memory ids in the active domain"
            )
        return record

    def _memory_here(self, ident: str, graph: str, argument: str = "id") -> MemoryRecord:
        record = self.memory(ident)
        if record.graph != graph:
            raise InvalidArgument(
                argument,
                f"memory {record.iri} is in domain {domain_id(record.graph)!r}, not in the "
                f"active domain {domain_id(graph)!r}; select_domain {domain_id(record.graph)!r} "
                "first",
            )
        return record

    def _find_link(self, ident: str) -> LinkRecord | None:
        iri = resource_iri(ident, LINK_PREFIX)
        where = self._locate(iri, LINK_CLASS) if iri else None
        if iri is None or where is None:
            return None
        return read_link(iri, where, self.brain.store.quads(where, NamedNode(iri)))

    def _link_here(self, ident: str, graph: str) -> LinkRecord:
        link = self._find_link(ident)
        if link is None:
            raise ItemNotFound("edge", ident, "get_memory lists a memory's edges with their ids")
        if link.graph != graph:
            raise InvalidArgument(
                "edge",
                f"edge {link.iri} is kept in domain {domain_id(link.graph)!r} (its source's), "
                f"not in the active domain {domain_id(graph)!r}; select_domain "
                f"{domain_id(link.graph)!r} first",
            )
        return link

    def links_touching(self, iri: str) -> list[LinkRecord]:
        """Every edge and cross-domain reference from or to ``iri``, in any domain."""
        found: list[LinkRecord] = []
        for row in templates.run(self.brain.store, "memory_references", node=iri):
            quads = self.brain.store.quads(row["graph"], NamedNode(row["link"]))
            link = read_link(row["link"], row["graph"], quads)
            if link is not None:
                found.append(link)
        return sorted(found, key=lambda link: (link.created, link.iri))

    # ------------------------------------------------------------------ answers
    def _ends(self, iris: Iterable[str], known: dict[str, MemoryRecord]) -> dict[str, EdgeEnd]:
        wanted = list(dict.fromkeys(iris))
        lab = self.brain.index.nodes_by_iri(i for i in wanted if not i.startswith(MEMORY_PREFIX))
        ends: dict[str, EdgeEnd] = {}
        for iri in wanted:
            if iri.startswith(MEMORY_PREFIX):
                record = known.get(iri) or self.find_memory(iri)
                ref = memory_ref(record) if record else None
                ends[iri] = EdgeEnd(kind="memory", id=iri, memory=ref)
            else:
                node = lab.get(iri)
                ident = node.uid if node else iri
                ends[iri] = EdgeEnd(kind="node", id=ident, node=node_ref(node) if node else None)
        return ends

    def edge_infos(
        self, links: Iterable[LinkRecord], known: dict[str, MemoryRecord] | None = None
    ) -> list[EdgeInfo]:
        """The answers for ``links``, each end resolved (memory ref or attributed lab node)."""
        chosen = list(links)
        ends = self._ends((i for e in chosen for i in (e.source, e.target)), dict(known or {}))
        infos = []
        for link in chosen:
            source = ends[link.source].memory
            if source is None:
                continue
            infos.append(
                EdgeInfo(
                    id=link.iri,
                    type=link.type,
                    strength=link.strength,
                    source=source,
                    target=ends[link.target],
                    crossDomain=link.cross,
                    bidirectional=link.bidirectional,
                    description=link.description,
                    domain=domain_id(link.graph),
                    created=link.created,
                    modified=link.modified,
                )
            )
        return infos

    def detail(self, record: MemoryRecord, links: list[LinkRecord] | None = None) -> MemoryDetail:
        """A memory node in full, with its edges and cross-domain references."""
        touching = self.links_touching(record.iri) if links is None else links
        infos = self.edge_infos(touching, {record.iri: record})
        return MemoryDetail(
            **memory_ref(record).model_dump(),
            content=record.content,
            hasSummary=record.summary is not None,
            modified=record.modified,
            attributedTo=record.attributed_to,
            session=record.session,
            edges=[info for info in infos if not info.crossDomain],
            crossReferences=[info for info in infos if info.crossDomain],
        )

    # ------------------------------------------------------------------ memory nodes
    def store_memory(
        self,
        content: str,
        *,
        path: str = "/",
        tags: Iterable[str] = (),
        summary: str | None = None,
        key: str | None = None,
    ) -> MemoryResult:
        """Store a new memory node in the active domain."""
        body = check_text("content", content, MAX_CONTENT)
        where = normalize_path(path)
        labels = normalize_tags(tags)
        brief = check_text("summary", summary, MAX_SHORT, required=False) if summary else ""
        arguments = {"content": content, "path": path, "tags": list(labels), "summary": summary}

        def plan() -> WritePlan[MemoryResult]:
            graph = self.domains.active()
            at = now()
            node = new_iri(MEMORY_PREFIX)
            quads = [
                *memory_quads(node, graph, body, where, labels, brief, at),
                *self.writer.provenance(node, NamedNode(graph), at=at),
            ]
            record = read_memory(node.value, graph, quads)
            assert record is not None
            remove, touched = accessed(self.brain.store, [graph], at)
            actions = ["connect_memories", "add_cross_reference", "search_memories"]
            result = MemoryResult(memory=self.detail(record, []), availableActions=actions)
            return WritePlan(result, quads + touched, remove)

        return self.domains.writer.write(
            "store_memory", plan, key=key, arguments=arguments, model=MemoryResult
        )

    def get_memory(self, ident: str) -> MemoryDetail:
        """A memory node in full (from any domain; the answer names it), once a domain is
        active."""
        self.domains.active()
        return self.detail(self.memory(ident))

    def update_memory(
        self,
        ident: str,
        *,
        content: str | None = None,
        summary: str | None = None,
        tags: Iterable[str] | None = None,
        path: str | None = None,
        key: str | None = None,
    ) -> MemoryResult:
        """Change what is given (an empty summary removes it, empty tags clear them); the
        created time and provenance stay, ``dct:modified`` is set."""
        if content is None and summary is None and tags is None and path is None:
            raise InvalidArgument("update", "give at least one of content, summary, tags, path")
        changes: dict[NamedNode, list[Literal]] = {}
        if content is not None:
            changes[CONTENT] = [text(check_text("content", content, MAX_CONTENT))]
        if summary is not None:
            brief = check_text("summary", summary, MAX_SHORT, required=False)
            changes[SUMMARY] = [text(brief)] if brief else []
        if tags is not None:
            changes[TAG] = [text(tag) for tag in normalize_tags(tags)]
        if path is not None:
            changes[PATH] = [text(normalize_path(path))]
        arguments = {
            "id": ident,
            "content": content,
            "summary": summary,
            "tags": None if tags is None else [tag.value for tag in changes[TAG]],
            "path": path,
        }

        def plan() -> WritePlan[MemoryResult]:
            graph = self.domains.active()
            record = self._memory_here(ident, graph)
            at = now()
            remove, add, quads = revise(record.quads, changes, at)
            updated = read_memory(record.iri, graph, quads)
            assert updated is not None
            touched_remove, touched_add = accessed(self.brain.store, [graph], at)
            actions = ["get_memory", "connect_memories", "search_memories"]
            result = MemoryResult(memory=self.detail(updated), availableActions=actions)
            return WritePlan(result, add + touched_add, remove + touched_remove)

        return self.domains.writer.write(
            "update_memory", plan, key=key, arguments=arguments, model=MemoryResult
        )

    def delete_memory(self, ident: str, *, key: str | None = None) -> DeleteMemoryResult:
        """Delete a memory node of the active domain with every edge and cross-domain
        reference from or to it (in any domain)."""

        def plan() -> WritePlan[DeleteMemoryResult]:
            graph = self.domains.active()
            record = self._memory_here(ident, graph)
            links = self.links_touching(record.iri)
            remove = [*record.quads, *(q for link in links for q in link.quads)]
            touched_remove, touched_add = accessed(
                self.brain.store, [graph, *(e.graph for e in links)], now()
            )
            result = DeleteMemoryResult(
                id=record.iri,
                domain=domain_id(graph),
                removedEdges=[e.iri for e in links if not e.cross],
                removedCrossReferences=[e.iri for e in links if e.cross],
                availableActions=["search_memories", "store_memory"],
            )
            return WritePlan(result, touched_add, remove + touched_remove)

        return self.domains.writer.write(
            "delete_memory", plan, key=key, arguments={"id": ident}, model=DeleteMemoryResult
        )

    def search_memories(
        self,
        query: str,
        *,
        tags: Iterable[str] = (),
        path: str | None = None,
        limit: int = 10,
    ) -> SearchMemoriesResult:
        """Memory nodes of the active domain holding the query's words (BM25, best first;
        an empty query lists them newest first), with all ``tags`` and under ``path``."""
        graph = self.domains.active()
        if not 1 <= limit <= 100:
            raise InvalidArgument("limit", "must be 1 to 100")
        wanted = {tag.lower() for tag in normalize_tags(tags)}
        under = normalize_path(path) if path else "/"
        candidates = [
            m
            for m in load_domain(self.brain.store, graph).memories.values()
            if path_matches(m.path, under) and wanted <= {t.lower() for t in m.tags}
        ]
        if terms(query):
            ranked = rank(query, candidates, _searchable)
            hits = [
                MemoryHit(
                    **memory_ref(r.item).model_dump(), score=r.score, matched=sorted(r.matched)
                )
                for r in ranked
            ]
        else:
            newest = sorted(candidates, key=lambda m: (m.created, m.iri), reverse=True)
            hits = [MemoryHit(**memory_ref(m).model_dump(), score=0.0, matched=[]) for m in newest]
        note = None
        if len(hits) > limit:
            note = f"showing {limit} of {len(hits)}; raise limit (up to 100) or add tags/path"
        elif not hits:
            note = "no memory matches; try other words or fewer filters (store_memory adds one)"
        shown = hits[:limit]
        return SearchMemoriesResult(
            domain=domain_id(graph), results=shown, listed=len(shown), note=note
        )

    # ------------------------------------------------------------------ edges
    def _target(
        self, ident: str, dataset: str | None
    ) -> tuple[str, MemoryRecord | None, NamedNode | None]:
        """The IRI an edge target names, with its memory record or its lab node IRI."""
        if resource_iri(ident, MEMORY_PREFIX) is not None:
            record = self.memory(ident)
            return record.iri, record, None
        try:
            node, _ = self.reader.resolve(ident, dataset)
        except NodeNotFound:
            raise ItemNotFound(
                "memory or lab node",
                ident,
                "memory ids come from search_memories, lab node uids from search_nodes",
            ) from None
        return node.iri, None, NamedNode(node.iri)

    def _new_link(
        self,
        graph: str,
        source: str,
        target: str,
        kind: LinkTypeName,
        strength: float,
        *,
        derived_from: list[NamedNode],
        at: datetime,
    ) -> tuple[NamedNode, list[Quad]]:
        node = new_iri(LINK_PREFIX)
        provenance = self.writer.provenance(
            node, NamedNode(graph), derived_from=derived_from, at=at
        )
        return node, link_quads(node, graph, source, target, kind, strength, at) + provenance

    def _refuse_duplicate(self, source: MemoryRecord, target: str, kind: str) -> None:
        for link in self.links_touching(source.iri):
            if link.source == source.iri and link.target == target and link.type == kind:
                raise InvalidArgument(
                    "type",
                    f"a {kind} edge from {source.iri} to that target already exists "
                    f"({link.iri}); update_edge_strength changes its strength",
                )

    def connect_memories(
        self,
        source: str,
        target: str,
        kind: str,
        strength: float,
        *,
        dataset: str | None = None,
        key: str | None = None,
    ) -> EdgeResult:
        """A typed, weighted edge from a memory node of the active domain to another one of
        the same domain, or to a lab discourse node (by uid)."""
        link_type = check_link_type(kind)
        weight = check_strength(strength)
        arguments = {
            "source": source,
            "target": target,
            "type": link_type,
            "strength": weight,
            "targetDataset": dataset,
        }

        def plan() -> WritePlan[EdgeResult]:
            graph = self.domains.active()
            start = self._memory_here(source, graph, "source")
            end, other, lab = self._target(target, dataset)
            if end == start.iri:
                raise InvalidArgument("target", "an edge joins two different nodes")
            if other is not None and other.graph != graph:
                raise InvalidArgument(
                    "target",
                    f"memory {end} is in domain {domain_id(other.graph)!r}; add_cross_reference "
                    "links memories of two domains",
                )
            self._refuse_duplicate(start, end, link_type)
            at = now()
            derived = [lab] if lab is not None else []
            node, quads = self._new_link(
                graph, start.iri, end, link_type, weight, derived_from=derived, at=at
            )
            link = read_link(node.value, graph, quads)
            assert link is not None
            remove, touched = accessed(self.brain.store, [graph], at)
            actions = ["traverse_memories", "update_edge_strength", "remove_edge"]
            info = self.edge_infos([link], {start.iri: start})[0]
            result = EdgeResult(edge=info, availableActions=actions)
            return WritePlan(result, quads + touched, remove)

        return self.domains.writer.write(
            "connect_memories", plan, key=key, arguments=arguments, model=EdgeResult
        )

    def add_cross_reference(
        self,
        source: str,
        target: str,
        description: str,
        *,
        bidirectional: bool = False,
        kind: str = "relates_to",
        strength: float = 1.0,
        key: str | None = None,
    ) -> EdgeResult:
        """A described reference from a memory node of the active domain to one of another
        domain (kept with the source; ``bidirectional`` makes it read both ways)."""
        link_type = check_link_type(kind)
        weight = check_strength(strength)
        about = check_text("description", description, MAX_DESCRIPTION)
        arguments = {
            "source": source,
            "target": target,
            "description": description,
            "bidirectional": bidirectional,
            "type": link_type,
            "strength": weight,
        }

        def plan() -> WritePlan[EdgeResult]:
            graph = self.domains.active()
            start = self._memory_here(source, graph, "source")
            end = self.memory(target)
            if end.graph == graph:
                raise InvalidArgument(
                    "target",
                    f"both memories are in domain {domain_id(graph)!r}; connect_memories "
                    "links memories of one domain",
                )
            self._refuse_duplicate(start, end.iri, link_type)
            at = now()
            node, quads = self._new_link(
                graph, start.iri, end.iri, link_type, weight, derived_from=[], at=at
            )
            quads += cross_facts(node, graph, about, bidirectional)
            link = read_link(node.value, graph, quads)
            assert link is not None
            remove, touched = accessed(self.brain.store, [graph], at)
            info = self.edge_infos([link], {start.iri: start, end.iri: end})[0]
            actions = ["traverse_memories", "get_memory", "remove_edge"]
            return WritePlan(
                EdgeResult(edge=info, availableActions=actions), quads + touched, remove
            )

        return self.domains.writer.write(
            "add_cross_reference", plan, key=key, arguments=arguments, model=EdgeResult
        )

    def update_edge_strength(
        self, edge: str, strength: float, *, key: str | None = None
    ) -> EdgeResult:
        """Set the strength of an edge kept in the active domain."""
        weight = check_strength(strength)

        def plan() -> WritePlan[EdgeResult]:
            graph = self.domains.active()
            link = self._link_here(edge, graph)
            at = now()
            remove, add, quads = revise(link.quads, {STRENGTH: [number(weight)]}, at)
            updated = read_link(link.iri, graph, quads)
            assert updated is not None
            touched_remove, touched_add = accessed(self.brain.store, [graph], at)
            actions = ["traverse_memories", "remove_edge", "get_memory"]
            result = EdgeResult(edge=self.edge_infos([updated])[0], availableActions=actions)
            return WritePlan(result, add + touched_add, remove + touched_remove)

        arguments = {"edge": edge, "strength": weight}
        return self.domains.writer.write(
            "update_edge_strength", plan, key=key, arguments=arguments, model=EdgeResult
        )

    def remove_edge(self, edge: str, *, key: str | None = None) -> RemoveEdgeResult:
        """Remove an edge or cross-domain reference kept in the active domain."""

        def plan() -> WritePlan[RemoveEdgeResult]:
            graph = self.domains.active()
            link = self._link_here(edge, graph)
            touched_remove, touched_add = accessed(self.brain.store, [graph], now())
            result = RemoveEdgeResult(
                id=link.iri,
                domain=domain_id(graph),
                crossDomain=link.cross,
                availableActions=["get_memory", "connect_memories"],
            )
            return WritePlan(result, touched_add, [*link.quads, *touched_remove])

        return self.domains.writer.write(
            "remove_edge", plan, key=key, arguments={"edge": edge}, model=RemoveEdgeResult
        )

    # ------------------------------------------------------------------ traversal
    def traverse_memories(
        self,
        start: str,
        *,
        max_depth: int = 2,
        types: Iterable[str] | None = None,
        min_strength: float = 0.0,
        cross_domains: bool = False,
        direction: TraverseDirection = "both",
    ) -> TraversalResult:
        """Breadth-first from a memory node of the active domain (see agent.memory.traverse)."""
        graph = self.domains.active()
        origin = self._memory_here(start, graph, "start")
        if not 1 <= max_depth <= MAX_DEPTH:
            raise InvalidArgument("maxDepth", f"must be 1 to {MAX_DEPTH}")
        if direction not in ("outgoing", "incoming", "both"):
            raise InvalidArgument("direction", "use outgoing, incoming or both")
        chosen = (
            frozenset(check_link_type(t, "types") for t in types) if types is not None else None
        )
        limits = Limits(
            max_depth=max_depth,
            types=chosen,
            min_strength=check_strength(min_strength, "minStrength"),
            cross_domains=cross_domains,
            direction=direction,
            max_nodes=self.max_nodes,
        )
        graphs = self.domains.all() if cross_domains else [graph]
        contents = [load_domain(self.brain.store, g) for g in graphs]
        memories = {iri: m for c in contents for iri, m in c.memories.items()}
        links = [link for c in contents for link in c.links.values()]

        def kind_of(iri: str) -> NodeKind | None:
            if iri in memories:
                return "memory"
            return None if iri.startswith(MEMORY_PREFIX) else "node"

        walk = traverse(origin.iri, links, kind_of, limits)
        lab = self.brain.index.nodes_by_iri(
            n.iri for level in walk.levels for n in level if n.kind == "node"
        )
        unfollowed = 0
        if not cross_domains:  # say so when a cross-domain reference leads out
            reached = {n.iri for level in walk.levels for n in level if n.kind == "memory"}
            unfollowed = sum(
                1 for link in links if link.cross and {link.source, link.target} & reached
            )
        return traversal_result(origin, walk, memories, lab, self.max_nodes, unfollowed)

    # ------------------------------------------------------------------ transfer
    def transfer_memory(
        self, ident: str, to_domain: str, *, key: str | None = None
    ) -> TransferResult:
        """Move a memory node of the active domain to another domain, keeping its id,
        created time and provenance, in one transaction. Its edges to lab nodes and its
        cross-domain references move along; edges to memories left behind become
        cross-domain references; references to memories of the target domain become
        ordinary edges."""

        def plan() -> WritePlan[TransferResult]:
            graph = self.domains.active()
            record = self._memory_here(ident, graph)
            target = self.domains.graph(to_domain)
            if target == graph:
                raise InvalidArgument("toDomain", f"the memory is already in domain {to_domain!r}")
            at = now()
            remove = list(record.quads)
            add = regraph(record.quads, target)
            moved: list[str] = []
            became_cross: list[str] = []
            became_edge: list[str] = []
            touched = [graph, target]
            for link in self.links_touching(record.iri):
                outgoing = link.source == record.iri
                other = link.target if outgoing else link.source
                home = target if outgoing else link.graph
                other_memory = self.find_memory(other) if other.startswith(MEMORY_PREFIX) else None
                crosses = other_memory is not None and other_memory.graph != target
                if other_memory is None or crosses == link.cross:
                    if home == link.graph:
                        continue
                    moved.append(link.iri)
                    new = regraph(link.quads, home)
                elif crosses:
                    became_cross.append(link.iri)
                    about = (
                        f"was a {link.type} edge in domain {domain_id(graph)!r} until "
                        f"{record.iri} moved to {domain_id(target)!r}"
                    )
                    new = as_cross_reference(link, home, about, at)
                else:
                    became_edge.append(link.iri)
                    new = as_edge(link, home, at)
                remove.extend(link.quads)
                add.extend(new)
                touched.append(link.graph)
            touched_remove, touched_add = accessed(self.brain.store, touched, at)
            moved_record = replace(record, graph=target, quads=tuple(regraph(record.quads, target)))
            note = (
                f"moved to domain {domain_id(target)!r} with its id, created time and "
                f"provenance; {len(moved)} edge(s) moved along, {len(became_cross)} edge(s) to "
                f"memories left in {domain_id(graph)!r} became cross-domain references, "
                f"{len(became_edge)} cross-domain reference(s) became ordinary edges"
            )
            result = TransferResult(
                memory=memory_ref(moved_record),
                fromDomain=domain_id(graph),
                toDomain=domain_id(target),
                edgesMoved=moved,
                edgesBecameCrossReferences=became_cross,
                crossReferencesBecameEdges=became_edge,
                note=note,
                availableActions=["select_domain", "get_memory", "traverse_memories"],
            )
            return WritePlan(result, add + touched_add, remove + touched_remove)

        arguments = {"id": ident, "toDomain": to_domain}
        return self.domains.writer.write(
            "transfer_memory", plan, key=key, arguments=arguments, model=TransferResult
        )


# ---------------------------------------------------------------------------------- helpers
def _searchable(record: MemoryRecord) -> str:
    return " ".join([record.summary or "", record.content, *record.tags])
