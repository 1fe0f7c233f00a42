"""The project notebook: an assistant's per-project research context (projects, visits,
findings).

Each project is one named graph, ``urn:labbrain:project:<slug>`` (slug from its name). The
graph describes the project under its own IRI (``lb:Project``, ``dct:title``,
``dct:description``) and holds the project's log:

- a **visit** (``lb:Visit``) records that the assistant read a lab node (``lb:visited``);
  reading a node with ``get_node`` while a project is active records one, and
  ``record_visit`` records one explicitly;
- a **finding** (``lb:Finding``) is something the assistant learned (``sioc:content``,
  ``lb:tag``), linked to the lab node (``lb:sourceNode``) or web page (``lb:sourceUrl``) it
  came from.

Both carry PROV provenance (when, by which agent, in which session, derived from which node),
``dct:isPartOf`` their project and ``lb:logPosition``, their place in the project's log, which
orders entries written within the same millisecond. Which project is active is kept per agent
in the system graph (``<agent> lb:activeProject <project>``), so it survives a restart.

Every write is one :class:`~labbrain.agent.writer.AgentWriter` transaction with an optional
idempotency key (:meth:`Projects.write`). Findings are logged, listed and deleted by
:mod:`labbrain.agent.projects.findings`; next steps and related pages are in
:mod:`labbrain.agent.projects.suggest` and :mod:`labbrain.agent.projects.related`. Lab nodes are
resolved and attributed through :class:`~labbrain.discourse.reader.DiscourseReader`; agent data
never goes into a dataset graph.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.agent.projects.models import (
    ActiveProjectResult,
    DeletedProject,
    Finding,
    ProjectContext,
    ProjectList,
    ProjectResult,
    ProjectSummary,
    UpdatedProject,
    Visit,
    VisitResult,
)
from labbrain.agent.writer import AgentWriter, WritePlan
from labbrain.core import LabBrain
from labbrain.discourse.models import NodeDetail, NodeRef
from labbrain.discourse.reader import DiscourseReader, node_ref
from labbrain.errors import InvalidArgument, ItemNotFound, LabbrainError
from labbrain.index.text import IndexedNode, normalise_timestamp
from labbrain.rdf.namespaces import (
    DCT,
    LB,
    PROJECT_PREFIX,
    PROV,
    RDF,
    SIOC,
    SYSTEM_GRAPH,
    VISIT_PREFIX,
    slugify,
)
from labbrain.rdf.terms import integer, new_iri, now, text
from labbrain.store import templates

log = logging.getLogger("labbrain.projects")


MAX_NAME = 200
MAX_DESCRIPTION = 5_000
RECENT_FINDINGS = 5
RECENT_VISITS = 10

NO_PROJECT_HINT = "list_projects lists them; create_project makes one"

TYPE = NamedNode(RDF + "type")
TITLE = NamedNode(DCT + "title")
DESCRIPTION = NamedNode(DCT + "description")
PART_OF = NamedNode(DCT + "isPartOf")
CONTENT = NamedNode(SIOC + "content")
GENERATED = NamedNode(PROV + "generatedAtTime")
PROJECT = NamedNode(LB + "Project")
FINDING = NamedNode(LB + "Finding")
VISIT = NamedNode(LB + "Visit")
ACTIVE = NamedNode(LB + "activeProject")
VISITED = NamedNode(LB + "visited")
SOURCE_NODE = NamedNode(LB + "sourceNode")
SOURCE_URL = NamedNode(LB + "sourceUrl")
TAG = NamedNode(LB + "tag")
POSITION = NamedNode(LB + "logPosition")
SESSION = NamedNode(LB + "session")

_HAS_WORD = re.compile(r"[a-z0-9]", re.IGNORECASE)


def iso(moment: datetime) -> str:
    """A time as the store gives it back: UTC, milliseconds, ``Z``."""
    return normalise_timestamp(moment.isoformat()) or moment.isoformat()


def project_graph(slug: str) -> str:
    """The named graph (and IRI) of the project with this slug."""
    return PROJECT_PREFIX + slug


@dataclass(frozen=True)
class Entry:
    """One finding or visit as read from a project graph."""

    iri: str
    kind: str  # "Finding" or "Visit"
    position: int
    at: str
    session: str
    node: str | None  # the visited node, or the lab node a finding came from
    content: str = ""
    tags: tuple[str, ...] = ()
    source_url: str | None = None

    @property
    def id(self) -> str:
        """The short id tools take: the last segment of the IRI."""
        return self.iri.rsplit(":", 1)[-1]


@dataclass(frozen=True)
class ProjectLog:
    """What one project graph holds, read at once; entries oldest first."""

    slug: str
    name: str
    description: str
    created: str | None
    findings: list[Entry]
    visits: list[Entry]

    @property
    def graph(self) -> str:
        return project_graph(self.slug)


def _first(values: list[Any], default: str = "") -> str:
    return str(values[0].value) if values else default


def _entry(iri: str, kind: str, facts: dict[str, list[Any]]) -> Entry:
    node = facts.get(SOURCE_NODE.value if kind == "Finding" else VISITED.value, [])
    url = facts.get(SOURCE_URL.value, [])
    return Entry(
        iri=iri,
        kind=kind,
        position=int(_first(facts.get(POSITION.value, []), "0")),
        at=normalise_timestamp(_first(facts.get(GENERATED.value, []))) or "",
        session=_first(facts.get(SESSION.value, [])).rsplit(":", 1)[-1],
        node=_first(node) or None,
        content=_first(facts.get(CONTENT.value, [])),
        tags=tuple(sorted(str(tag.value) for tag in facts.get(TAG.value, []))),
        source_url=_first(url) or None,
    )


class Projects:
    """Projects, visits and findings of one opened store, written through ``writer``."""

    def __init__(self, brain: LabBrain, reader: DiscourseReader, writer: AgentWriter) -> None:
        self.brain = brain
        self.reader = reader
        self.writer = writer
        self.store = brain.store

    # ------------------------------------------------------------------ projects: reading
    def exists(self, slug: str) -> bool:
        """True when a project with this slug has been created."""
        iri = project_graph(slug)
        return any(q.object == PROJECT for q in self.store.quads(iri, NamedNode(iri), TYPE))

    def active_slug(self) -> str | None:
        """The slug of this agent's active project, or None."""
        for quad in self.store.quads(SYSTEM_GRAPH, self.writer.agent, ACTIVE):
            if isinstance(quad.object, NamedNode):
                slug = quad.object.value.removeprefix(PROJECT_PREFIX)
                if self.exists(slug):
                    return slug
        return None

    def resolve_optional(self, project: str | None) -> str | None:
        """The slug of the project named (by name, slug or IRI), else of the active project,
        else None. Raises ItemNotFound for a project that does not exist."""
        if project is None or not project.strip():
            return self.active_slug()
        wanted = project.strip()
        slug = slugify(wanted.removeprefix(PROJECT_PREFIX))
        if not _HAS_WORD.search(wanted) or not self.exists(slug):
            raise ItemNotFound("project", wanted, NO_PROJECT_HINT)
        return slug

    def resolve(self, project: str | None) -> str:
        """Like :meth:`resolve_optional`, but a project is required: with none named and none
        active, raises InvalidArgument saying how to choose one."""
        slug = self.resolve_optional(project)
        if slug is None:
            raise InvalidArgument(
                "project",
                "no project is active; name one, or call set_active_project (list_projects "
                "lists them, create_project makes one)",
            )
        return slug

    def read(self, slug: str) -> ProjectLog:
        """Everything the project graph holds, grouped by resource."""
        facts: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
        for quad in self.store.quads(project_graph(slug)):
            if isinstance(quad.subject, NamedNode):
                facts[quad.subject.value][quad.predicate.value].append(quad.object)
        about = facts.get(project_graph(slug), {})
        entries: dict[str, list[Entry]] = {"Finding": [], "Visit": []}
        for iri, properties in facts.items():
            for kind_node in properties.get(TYPE.value, []):
                kind = kind_node.value.removeprefix(LB)
                if kind in entries:
                    entries[kind].append(_entry(iri, kind, properties))
        for found in entries.values():
            found.sort(key=lambda entry: (entry.position, entry.at, entry.iri))
        return ProjectLog(
            slug=slug,
            name=_first(about.get(TITLE.value, []), slug),
            description=_first(about.get(DESCRIPTION.value, [])),
            created=normalise_timestamp(_first(about.get(GENERATED.value, []))) or None,
            findings=entries["Finding"],
            visits=entries["Visit"],
        )

    def summary(self, project: ProjectLog, active: str | None) -> ProjectSummary:
        """The summary of a project read with :meth:`read`."""
        return ProjectSummary(
            project=project.slug,
            name=project.name,
            description=project.description,
            graph=project.graph,
            created=project.created,
            active=project.slug == active,
            findings=len(project.findings),
            visits=len(project.visits),
        )

    def list_projects(self) -> ProjectList:
        """Every project with its counts, by slug, and which one is active."""
        active = self.active_slug()
        projects = [
            ProjectSummary(
                project=row["project"].removeprefix(PROJECT_PREFIX),
                name=row["name"],
                description=row["description"] or "",
                graph=row["project"],
                created=normalise_timestamp(row["created"]),
                active=row["project"] == project_graph(active or ""),
                findings=row["findings"] or 0,
                visits=row["visits"] or 0,
            )
            for row in templates.run(self.store, "projects_list")
        ]
        note = None if projects else "no projects yet; create_project makes one"
        return ProjectList(projects=projects, active=active, listed=len(projects), note=note)

    def get_project_context(self, project: str | None = None) -> ProjectContext:
        """A project at a glance: summary, distinct nodes and sessions, tags, and its newest
        findings and visits (attributed)."""
        slug = self.resolve(project)
        data = self.read(slug)
        findings = list(reversed(data.findings[-RECENT_FINDINGS:]))
        visits = list(reversed(data.visits[-RECENT_VISITS:]))
        refs = self.refs(e.node for e in [*findings, *visits])
        sessions = {e.session for e in [*data.findings, *data.visits]}
        tags = Counter(tag for finding in data.findings for tag in finding.tags)
        note = None
        if not data.findings and not data.visits:
            note = (
                "nothing recorded yet: get_node records a visit while the project is active, "
                "log_finding records what you learn; suggest_next_steps says where to start"
            )
        return ProjectContext(
            project=self.summary(data, self.active_slug()),
            visitedNodes=len({v.node for v in data.visits}),
            sessions=len(sessions),
            tags=dict(sorted(tags.items(), key=lambda item: (-item[1], item[0]))),
            recentFindings=[self.finding_model(slug, finding, refs) for finding in findings],
            recentVisits=self.visit_models(visits, refs),
            note=note,
        )

    # ------------------------------------------------------------------ projects: writing
    def create_project(
        self, name: str, description: str = "", *, activate: bool = True, key: str | None = None
    ) -> ProjectResult:
        """Create a project (its graph) and, with ``activate``, make it the active one.
        Raises InvalidArgument when a project of the same slug exists."""
        arguments = {"name": name, "description": description, "activate": activate}
        clean_name = required(name, "name", MAX_NAME)
        clean_description = bounded(description, "description", MAX_DESCRIPTION)
        if not _HAS_WORD.search(clean_name):
            raise InvalidArgument("name", "must contain an ASCII letter or digit (for its slug)")
        slug = slugify(clean_name)

        def plan() -> WritePlan[ProjectResult]:
            if self.exists(slug):
                raise InvalidArgument(
                    "name",
                    f"a project {slug!r} exists already; set_active_project works in it, or "
                    "choose another name",
                )
            graph = NamedNode(project_graph(slug))
            moment = now()
            add = [
                Quad(graph, TYPE, PROJECT, graph),
                Quad(graph, TITLE, text(clean_name), graph),
                Quad(graph, DESCRIPTION, text(clean_description), graph),
                *self.writer.provenance(graph, graph, at=moment),
            ]
            remove: list[Quad] = []
            if activate:
                remove, activation = self._activation(graph)
                add += activation
            summary = ProjectSummary(
                project=slug,
                name=clean_name,
                description=clean_description,
                graph=graph.value,
                created=iso(moment),
                active=activate,
                findings=0,
                visits=0,
            )
            actions = ["log_finding", "suggest_next_steps", "get_project_context"]
            if not activate:
                actions.insert(0, "set_active_project")
            return WritePlan(ProjectResult(project=summary, availableActions=actions), add, remove)

        return self.writer.write(
            "create_project", plan, key=key, arguments=arguments, model=ProjectResult
        )

    def set_active_project(
        self, project: str | None, *, key: str | None = None
    ) -> ActiveProjectResult:
        """Make ``project`` this agent's active project; None (or blank) deactivates."""
        arguments = {"project": project}

        def plan() -> WritePlan[ActiveProjectResult]:
            previous = self.active_slug()
            slug = self.resolve_optional(project) if project and project.strip() else None
            remove, add = self._activation(NamedNode(project_graph(slug)) if slug else None)
            summary = self.summary(self.read(slug), slug) if slug else None
            actions = (
                ["get_project_context", "suggest_next_steps", "log_finding", "get_node"]
                if slug
                else ["list_projects", "create_project"]
            )
            result = ActiveProjectResult(
                active=summary, previous=previous, availableActions=actions
            )
            return WritePlan(result, add, remove)

        return self.writer.write(
            "set_active_project", plan, key=key, arguments=arguments, model=ActiveProjectResult
        )

    def update_project(
        self,
        project: str | None,
        *,
        name: str | None = None,
        description: str | None = None,
        key: str | None = None,
    ) -> UpdatedProject:
        """Give a project a new name and/or description. A name with another slug moves the
        project, with everything it holds, to the graph of the new slug, and every agent whose
        active project it was follows it; one transaction. Raises InvalidArgument when
        neither is given or the new slug is taken."""
        if name is None and description is None:
            raise InvalidArgument("name", "give a new name, a new description, or both")
        new_name = required(name, "name", MAX_NAME) if name is not None else None
        if new_name is not None and not _HAS_WORD.search(new_name):
            raise InvalidArgument("name", "must contain an ASCII letter or digit (for its slug)")
        new_description = (
            bounded(description, "description", MAX_DESCRIPTION)
            if description is not None
            else None
        )
        arguments = {"project": project, "name": name, "description": description}

        def plan() -> WritePlan[UpdatedProject]:
            slug = self.resolve(project)
            data = self.read(slug)
            target = slugify(new_name) if new_name is not None else slug
            if target != slug and self.exists(target):
                raise InvalidArgument(
                    "name", f"a project {target!r} exists already; choose another name"
                )
            old, new = NamedNode(project_graph(slug)), NamedNode(project_graph(target))
            remove = list(self.store.quads(old.value))
            add = []
            for quad in remove:
                if quad.subject == old and new_name is not None and quad.predicate == TITLE:
                    continue
                if (
                    quad.subject == old
                    and new_description is not None
                    and quad.predicate == DESCRIPTION
                ):
                    continue
                add.append(_moved(quad, old, new))
            if new_name is not None:
                add.append(Quad(new, TITLE, text(new_name), new))
            if new_description is not None:
                add.append(Quad(new, DESCRIPTION, text(new_description), new))
            for pointer in self._pointers_to(old):  # every agent's active project follows it
                remove.append(pointer)
                add.append(Quad(pointer.subject, pointer.predicate, new, pointer.graph_name))
            summary = self.summary(data, self.active_slug()).model_copy(
                update={
                    "project": target,
                    "graph": new.value,
                    "name": new_name if new_name is not None else data.name,
                    "description": (
                        new_description if new_description is not None else data.description
                    ),
                }
            )
            result = UpdatedProject(
                project=summary,
                renamedFrom=slug if target != slug else None,
                availableActions=["get_project_context", "list_projects"],
            )
            return WritePlan(result, add, remove)

        return self.writer.write(
            "update_project", plan, key=key, arguments=arguments, model=UpdatedProject
        )

    def delete_project(self, project: str, *, key: str | None = None) -> DeletedProject:
        """Delete the project named (by name or slug, never implied) with all its visits and
        findings, and deactivate it for every agent that had it active; one transaction.
        Raises ItemNotFound for an unknown project."""
        if not project or not project.strip():
            raise InvalidArgument(
                "project", "name the project to delete (list_projects lists them)"
            )
        arguments = {"project": project}

        def plan() -> WritePlan[DeletedProject]:
            slug = self.resolve(project)
            data = self.read(slug)
            graph = NamedNode(project_graph(slug))
            remove = list(self.store.quads(graph.value)) + self._pointers_to(graph)
            result = DeletedProject(
                deleted=self.summary(data, self.active_slug()),
                availableActions=["list_projects", "create_project"],
            )
            return WritePlan(result, [], remove)

        return self.writer.write(
            "delete_project", plan, key=key, arguments=arguments, model=DeletedProject
        )

    def _pointers_to(self, project: NamedNode) -> list[Quad]:
        """Every agent's ``lb:activeProject`` quad naming ``project``."""
        return [
            quad for quad in self.store.quads(SYSTEM_GRAPH, None, ACTIVE) if quad.object == project
        ]

    def _activation(self, project: NamedNode | None) -> tuple[list[Quad], list[Quad]]:
        """Quads to remove and add so that ``project`` (or none) is the active project."""
        remove = list(self.store.quads(SYSTEM_GRAPH, self.writer.agent, ACTIVE))
        add = [Quad(self.writer.agent, ACTIVE, project, NamedNode(SYSTEM_GRAPH))] if project else []
        return remove, add

    # ------------------------------------------------------------------ visits
    def record_visit(
        self,
        uid: str,
        dataset: str | None = None,
        project: str | None = None,
        *,
        key: str | None = None,
    ) -> VisitResult:
        """Record that the assistant read the node ``uid`` (in ``project`` or the active one)."""
        arguments = {"uid": uid, "dataset": dataset, "project": project}
        node, _ = self.reader.resolve(uid, dataset)
        slug = self.resolve(project)
        return self.writer.write(
            "record_visit",
            lambda: self._visit_plan(slug, node),
            key=key,
            arguments=arguments,
            model=VisitResult,
        )

    def note_read(self, detail: NodeDetail) -> NodeDetail:
        """Record a visit of a node just read with get_node, when a project is active and the
        store is writable; return ``detail`` unchanged. A read never fails for this."""
        if self.brain.read_only:
            return detail
        try:
            slug = self.active_slug()
            if slug is None:
                return detail
            node, _ = self.reader.resolve(detail.uid, detail.dataset)
            self.writer.write("get_node", lambda: self._visit_plan(slug, node))
        except LabbrainError as error:
            log.warning("visit of %s not recorded: %s", detail.uid, error)
        return detail

    def _visit_plan(self, slug: str, node: IndexedNode) -> WritePlan[VisitResult]:
        graph = NamedNode(project_graph(slug))
        visit = new_iri(VISIT_PREFIX)
        target = NamedNode(node.iri)
        moment = now()
        provenance = self.writer.provenance(visit, graph, derived_from=[target], at=moment)
        add = [
            Quad(visit, TYPE, VISIT, graph),
            Quad(visit, VISITED, target, graph),
            Quad(visit, PART_OF, graph, graph),
            Quad(visit, POSITION, integer(self.next_position(slug)), graph),
            *provenance,
        ]
        earlier = self.count(slug, VISITED, target)
        result = VisitResult(
            project=slug,
            visit=Visit(
                id=visit.value.rsplit(":", 1)[-1],
                node=node_ref(node),
                visitedAt=iso(moment),
                session=self.writer.session_id,
            ),
            visitsOfNode=earlier + 1,
            availableActions=["log_finding", "get_related_pages", "suggest_next_steps"],
        )
        return WritePlan(result, add)

    # ------------------------------------------------------------------ shared
    def refs(self, iris: Iterable[str | None]) -> dict[str, IndexedNode]:
        """The indexed lab nodes among ``iris``, by IRI (unknown and None ones left out)."""
        return self.brain.index.nodes_by_iri(iri for iri in iris if iri)

    def finding_model(self, slug: str, entry: Entry, refs: dict[str, IndexedNode]) -> Finding:
        """The answer model of a finding read from a project graph."""
        source = refs.get(entry.node) if entry.node else None
        return Finding(
            id=entry.id,
            project=slug,
            content=entry.content,
            tags=list(entry.tags),
            source=node_ref(source) if source else None,
            sourceUrl=entry.source_url,
            createdAt=entry.at,
            session=entry.session,
        )

    def visit_models(self, visits: list[Entry], refs: dict[str, IndexedNode]) -> list[Visit]:
        """Answer models of visits whose node is still loaded (others are left out)."""
        return [
            Visit(id=v.id, node=node_ref(refs[v.node]), visitedAt=v.at, session=v.session)
            for v in visits
            if v.node in refs
        ]

    def node_refs(self, iris: Iterable[str | None]) -> dict[str, NodeRef]:
        """Attributed references of the loaded lab nodes among ``iris``, by IRI."""
        return {iri: node_ref(node) for iri, node in self.refs(iris).items()}

    def count(self, slug: str, predicate: NamedNode, value: NamedNode) -> int:
        """How many quads of the project graph have this predicate and object."""
        quads = self.store.quads(project_graph(slug), None, predicate)
        return sum(1 for quad in quads if quad.object == value)

    def next_position(self, slug: str) -> int:
        """The log position of the next finding or visit of the project (1 for the first).
        Call it inside a write plan, where the writer's lock keeps it unique."""
        values = [
            int(q.object.value)
            for q in self.store.quads(project_graph(slug), None, POSITION)
            if isinstance(q.object, Literal)
        ]
        return max(values, default=0) + 1


# ---------------------------------------------------------------------- validation
def _moved(quad: Quad, old: NamedNode, new: NamedNode) -> Quad:
    """``quad`` in graph ``new``, with the term ``old`` (the project's IRI) made ``new``."""
    subject = new if quad.subject == old else quad.subject
    value = new if quad.object == old else quad.object
    return Quad(subject, quad.predicate, value, new)


def required(value: str, name: str, limit: int) -> str:
    """``value`` stripped; InvalidArgument naming ``name`` when empty or over ``limit``."""
    clean = value.strip()
    if not clean:
        raise InvalidArgument(name, "must not be empty")
    return bounded(clean, name, limit)


def bounded(value: str, name: str, limit: int) -> str:
    """``value`` stripped; InvalidArgument naming ``name`` when over ``limit`` characters."""
    clean = value.strip()
    if len(clean) > limit:
        raise InvalidArgument(name, f"is {len(clean)} characters long; at most {limit}")
    return clean
