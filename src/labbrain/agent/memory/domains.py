"""Memory domains: creating, listing and selecting them, the active domain, and guarded writes.

A domain is a named graph ``urn:labbrain:domain:<id>`` that describes itself (see
:mod:`labbrain.agent.memory.memories`). The active domain is per agent and durable:
``<agent> lb:activeDomain <domain>`` in ``urn:labbrain:system``. A domain is *accessed* when it
is selected or written; reads do not count. On a read-only store (another process holds it)
a selection holds for this process only and nothing is recorded; every write is refused.
"""

from __future__ import annotations

from typing import Any

from pyoxigraph import NamedNode, Quad

from labbrain.agent.memory.models import (
    DeletedDomain,
    DomainInfo,
    DomainListResult,
    DomainResult,
)
from labbrain.agent.memory.records import (
    ACTIVE_DOMAIN,
    DESCRIPTION,
    DOMAIN_ID_RE,
    LABEL,
    MAX_DESCRIPTION,
    MAX_SHORT,
    accessed,
    check_domain_id,
    check_text,
    domain_id,
    domain_quads,
    is_domain,
    iso,
    load_domain,
)
from labbrain.agent.writer import AgentWriter, WritePlan
from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument, ItemNotFound, NoDomainSelected
from labbrain.index.text import normalise_timestamp
from labbrain.rdf.namespaces import DOMAIN_PREFIX, SYSTEM_GRAPH
from labbrain.rdf.terms import now, text
from labbrain.store import templates


class Domains:
    """The domains of one opened store, and which one this agent works in."""

    def __init__(self, brain: LabBrain, writer: AgentWriter) -> None:
        self.brain = brain
        self.writer = writer
        self._local_active: str | None = None  # the selection on a read-only store

    # ------------------------------------------------------------------ lookups
    def graph(self, ident: str) -> str:
        """The graph of the domain with this id, or ItemNotFound."""
        slug = ident.strip()
        graph = DOMAIN_PREFIX + slug
        if not DOMAIN_ID_RE.fullmatch(slug) or not is_domain(self.brain.store, graph):
            raise ItemNotFound(
                "memory domain", ident, "list_domains lists them; create_domain makes one"
            )
        return graph

    def all(self) -> list[str]:
        """The graphs of every domain, sorted."""
        return [
            g
            for g in self.brain.store.graphs()
            if g.startswith(DOMAIN_PREFIX) and is_domain(self.brain.store, g)
        ]

    def selected(self) -> str | None:
        """The graph this agent selected (it may no longer exist), or None."""
        if self.brain.store.read_only and self._local_active is not None:
            return self._local_active
        for quad in self.brain.store.quads(SYSTEM_GRAPH, self.writer.agent, ACTIVE_DOMAIN):
            if isinstance(quad.object, NamedNode):
                return quad.object.value
        return None

    def active(self) -> str:
        """The graph of the active domain, or NoDomainSelected."""
        graph = self.selected()
        if graph is None:
            raise NoDomainSelected()
        if not is_domain(self.brain.store, graph):
            raise NoDomainSelected(domain_id(graph))
        return graph

    def info(self, graph: str, **overrides: Any) -> DomainInfo:
        """One domain with its counts, as stored (``overrides`` replace fields)."""
        rows = templates.run(self.brain.store, "memory_domains", domain=graph)
        return _domain_row(rows[0], self.selected()).model_copy(update=overrides)

    # ------------------------------------------------------------------ tools
    def create_domain(
        self,
        ident: str,
        name: str,
        description: str = "",
        *,
        select: bool = True,
        key: str | None = None,
    ) -> DomainResult:
        """Create an empty domain (and make it the active one when ``select``)."""
        slug = check_domain_id(ident)
        label = check_text("name", name, MAX_SHORT)
        about = check_text("description", description, MAX_DESCRIPTION, required=False)
        graph = DOMAIN_PREFIX + slug
        arguments = {"id": ident, "name": name, "description": description, "select": select}

        def plan() -> WritePlan[DomainResult]:
            if is_domain(self.brain.store, graph):
                raise InvalidArgument(
                    "id", f"a domain {slug!r} already exists; select_domain selects it"
                )
            at = now()
            node = NamedNode(graph)
            add = domain_quads(graph, label, about, at) + self.writer.provenance(node, node, at=at)
            remove = self._selection(graph, add) if select else []
            info = DomainInfo(
                id=slug,
                name=label,
                description=about,
                graph=graph,
                created=iso(at),
                lastAccessed=iso(at),
                memoryCount=0,
                edgeCount=0,
                crossReferenceCount=0,
                active=select,
            )
            actions = ["store_memory", "list_domains"] if select else ["select_domain"]
            return WritePlan(DomainResult(domain=info, availableActions=actions), add, remove)

        return self.writer.write(
            "create_domain", plan, key=key, arguments=arguments, model=DomainResult
        )

    def list_domains(self) -> DomainListResult:
        """Every domain with its counts and last access, most recently accessed first."""
        active = self.selected()
        rows = templates.run(self.brain.store, "memory_domains")
        domains = [_domain_row(row, active) for row in rows]
        chosen = next((d.id for d in domains if d.active), None)
        note = None if domains else "no domains yet; create_domain makes one"
        return DomainListResult(domains=domains, listed=len(domains), active=chosen, note=note)

    def select_domain(self, ident: str, *, key: str | None = None) -> DomainResult:
        """Make a domain the active one (durably, for this agent) and record the access."""
        actions = ["search_memories", "store_memory", "traverse_memories"]
        if self.brain.store.read_only:
            graph = self.graph(ident)
            self._local_active = graph
            note = (
                "the store is read-only here (another process holds it): this selection lasts "
                "for this server process and the access is not recorded"
            )
            return DomainResult(domain=self.info(graph), note=note, availableActions=actions)

        def plan() -> WritePlan[DomainResult]:
            graph = self.graph(ident)
            at = now()
            add: list[Quad] = []
            remove = self._selection(graph, add)
            touched_remove, touched_add = accessed(self.brain.store, [graph], at)
            info = self.info(graph, lastAccessed=iso(at), active=True)
            result = DomainResult(domain=info, availableActions=actions)
            return WritePlan(result, add + touched_add, remove + touched_remove)

        return self.writer.write(
            "select_domain", plan, key=key, arguments={"id": ident}, model=DomainResult
        )

    def update_domain(
        self,
        ident: str,
        *,
        name: str | None = None,
        description: str | None = None,
        key: str | None = None,
    ) -> DomainResult:
        """Give a domain a new display name and/or description (its id, which names its
        graph, stays); records the access. Raises InvalidArgument when neither is given."""
        if name is None and description is None:
            raise InvalidArgument("name", "give a new name, a new description, or both")
        label = check_text("name", name, MAX_SHORT) if name is not None else None
        about = (
            check_text("description", description, MAX_DESCRIPTION, required=False)
            if description is not None
            else None
        )
        arguments = {"id": ident, "name": name, "description": description}

        def plan() -> WritePlan[DomainResult]:
            graph = self.graph(ident)
            node = NamedNode(graph)
            remove: list[Quad] = []
            add: list[Quad] = []
            for predicate, value in ((LABEL, label), (DESCRIPTION, about)):
                if value is None:
                    continue
                remove += self.brain.store.quads(graph, node, predicate)
                if value:
                    add.append(Quad(node, predicate, text(value), node))
            at = now()
            touched_remove, touched_add = accessed(self.brain.store, [graph], at)
            changes: dict[str, Any] = {"lastAccessed": iso(at)}
            if label is not None:
                changes["name"] = label
            if about is not None:
                changes["description"] = about
            info = self.info(graph, **changes)
            result = DomainResult(domain=info, availableActions=["list_domains"])
            return WritePlan(result, add + touched_add, remove + touched_remove)

        return self.writer.write(
            "update_domain", plan, key=key, arguments=arguments, model=DomainResult
        )

    def delete_domain(self, ident: str, *, key: str | None = None) -> DeletedDomain:
        """Delete a domain with its memories and edges, the cross-domain references other
        domains hold to its memories, and every agent's selection of it; one transaction.
        Raises ItemNotFound for an unknown domain."""

        def plan() -> WritePlan[DeletedDomain]:
            graph = self.graph(ident)
            store = self.brain.store
            info = self.info(graph)
            remove = list(store.quads(graph))
            elsewhere = 0
            for memory in load_domain(store, graph).memories:
                for row in templates.run(store, "memory_references", node=memory):
                    if row["graph"] != graph:
                        remove += store.quads(row["graph"], NamedNode(row["link"]))
                        elsewhere += 1
            remove += [
                quad
                for quad in store.quads(SYSTEM_GRAPH, None, ACTIVE_DOMAIN)
                if quad.object == NamedNode(graph)
            ]
            if self._local_active == graph:
                self._local_active = None
            result = DeletedDomain(
                deleted=info,
                crossReferencesRemoved=elsewhere,
                availableActions=["list_domains", "select_domain", "create_domain"],
            )
            return WritePlan(result, [], list(dict.fromkeys(remove)))

        return self.writer.write(
            "delete_domain", plan, key=key, arguments={"id": ident}, model=DeletedDomain
        )

    def _selection(self, graph: str, add: list[Quad]) -> list[Quad]:
        """Make ``graph`` the agent's active domain: appends to ``add``, returns removals."""
        system = NamedNode(SYSTEM_GRAPH)
        add.append(Quad(self.writer.agent, ACTIVE_DOMAIN, NamedNode(graph), system))
        return list(self.brain.store.quads(SYSTEM_GRAPH, self.writer.agent, ACTIVE_DOMAIN))


def _domain_row(row: dict[str, Any], active: str | None) -> DomainInfo:
    return DomainInfo(
        id=domain_id(row["domain"]),
        name=row["name"],
        description=row["description"],
        graph=row["domain"],
        created=normalise_timestamp(row["created"]) or "",
        lastAccessed=normalise_timestamp(row["lastAccessed"]) or "",
        memoryCount=row["memories"],
        edgeCount=row["edges"],
        crossReferenceCount=row["crossReferences"],
        active=row["domain"] == active,
    )
