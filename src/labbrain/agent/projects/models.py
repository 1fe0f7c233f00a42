"""Answer models of the project notebook tools: projects, visits, findings, next steps,
related pages.

Field names are the wire names (camelCase, like the discourse-graph tools). Every lab node an
answer names is an attributed :class:`~labbrain.discourse.models.NodeRef` (creator, created,
url). Write answers carry ``availableActions``: the tools the assistant can call next.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from labbrain.discourse.models import NodeRef, listed_count

Stage = Literal["coldStart", "exploration", "convergence"]
StepKind = Literal["search", "read", "synthesise", "formulate", "openQuestion", "contradiction"]
RelatedKind = Literal["structural", "temporal", "semantic"]
RelatedBasis = Literal[
    "sameSource",
    "sameQuestion",
    "sameClaim",
    "sharedRelation",
    "sameSession",
    "similarText",
    "similarMeaning",
]


class ProjectSummary(BaseModel):
    """A project: its name, description and how much its graph holds."""

    project: str = Field(description="the project's slug; pass it as `project` to other tools")
    name: str
    description: str
    graph: str = Field(description="the named graph holding the project's findings and visits")
    created: str | None = Field(description="when the project was created, ISO 8601")
    active: bool = Field(description="true for the active project (visits are recorded there)")
    findings: int = Field(description="findings logged in the project")
    visits: int = Field(description="node visits recorded in the project")


class ProjectResult(BaseModel):
    """A project just created."""

    project: ProjectSummary
    availableActions: list[str]


class UpdatedProject(BaseModel):
    """A project just renamed or described anew."""

    project: ProjectSummary
    renamedFrom: str | None = Field(
        description="the slug it had before, when the new name gave it a new slug"
    )
    availableActions: list[str]


class DeletedProject(BaseModel):
    """A project just deleted with everything it held."""

    deleted: ProjectSummary
    availableActions: list[str]


class ActiveProjectResult(BaseModel):
    """Which project is active now (None: no project, visits are not recorded)."""

    active: ProjectSummary | None
    previous: str | None = Field(description="slug of the project active before, if any")
    availableActions: list[str]


class ProjectList(BaseModel):
    """Every project, by slug."""

    projects: list[ProjectSummary]
    active: str | None = Field(description="slug of the active project")
    listed: int = listed_count("projects")
    note: str | None = None


class Visit(BaseModel):
    """The assistant read a lab node, at a time, in a session."""

    id: str = Field(description="the visit's id")
    node: NodeRef
    visitedAt: str = Field(description="ISO 8601")
    session: str = Field(description="id of the server session the visit happened in")


class Finding(BaseModel):
    """Something the assistant learned, with the node or web page it came from."""

    id: str = Field(description="the finding's id; pass it to delete_finding")
    project: str = Field(description="slug of the project holding it")
    content: str
    tags: list[str]
    source: NodeRef | None = Field(description="the lab node it came from, attributed")
    sourceUrl: str | None = Field(description="the web page it came from")
    createdAt: str = Field(description="ISO 8601")
    session: str = Field(description="id of the server session that logged it")


class ProjectContext(BaseModel):
    """A project at a glance: description, counts, recent findings and visits."""

    project: ProjectSummary
    visitedNodes: int = Field(description="distinct lab nodes visited")
    sessions: int = Field(description="distinct sessions that visited nodes or logged findings")
    tags: dict[str, int] = Field(description="tags of the findings with how often each is used")
    recentFindings: list[Finding] = Field(description="newest first")
    recentVisits: list[Visit] = Field(description="newest first")
    note: str | None = None


class VisitResult(BaseModel):
    """A visit just recorded."""

    project: str
    visit: Visit
    visitsOfNode: int = Field(description="how often the project has visited this node")
    availableActions: list[str]


class FindingResult(BaseModel):
    """A finding just logged."""

    finding: Finding
    findings: int = Field(description="findings the project holds now")
    availableActions: list[str]


class FindingList(BaseModel):
    """A page of a project's findings: newest first, or best match first for a query."""

    project: str
    findings: list[Finding]
    listed: int = listed_count("findings")
    total: int = Field(description="findings matching, over all pages")
    offset: int
    nextOffset: int | None = Field(description="pass as offset for the next page; None: no more")
    note: str | None = None


class DeletedFinding(BaseModel):
    """A finding just deleted."""

    deleted: Finding
    findings: int = Field(description="findings the project holds now")
    availableActions: list[str]


class ToolCall(BaseModel):
    """A tool call to make: its name and arguments."""

    tool: str
    arguments: dict[str, Any]


class NextStep(BaseModel):
    """One concrete next action: the call to make and why."""

    kind: StepKind
    call: ToolCall
    why: str
    node: NodeRef | None = Field(description="the lab node the step is about, attributed")


class NextSteps(BaseModel):
    """What to do next in a project, given the stage its graph is at."""

    project: str
    stage: Stage = Field(
        description="coldStart: little read yet; exploration: much read, little logged; "
        "convergence: enough findings to formulate claims"
    )
    stageReason: str
    visits: int
    findings: int
    steps: list[NextStep]
    note: str | None = None


class RelatedReason(BaseModel):
    """Why a node is related to the one asked about."""

    kind: RelatedKind
    basis: RelatedBasis
    why: str
    via: str | None = Field(
        default=None,
        description="uid of the node both link to (structural reasons): in viaNodes",
    )
    score: float | None = Field(default=None, description="similarity (semantic), higher is better")
    sharedTerms: list[str] = Field(
        default_factory=list, description="key terms both texts hold (semantic)"
    )
    session: str | None = Field(
        default=None, description="the session both were visited in (temporal)"
    )
    #: The node ``via`` names, for the answer's ``viaNodes`` (not part of the reason's JSON).
    via_node: NodeRef | None = Field(default=None, exclude=True)


class RelatedPage(NodeRef):
    """A related lab node with every reason it is related."""

    reasons: list[RelatedReason]


class RelatedPages(BaseModel):
    """Lab nodes related to one node, most reasons first."""

    node: NodeRef
    project: str | None = Field(description="the project whose visits gave temporal reasons")
    related: list[RelatedPage]
    viaNodes: list[NodeRef] = Field(
        default_factory=list,
        description="each node a listed structural reason goes through (via), once",
    )
    listed: int = listed_count("related")
    total: int = Field(description="related nodes found before the cap")
    note: str | None = None
