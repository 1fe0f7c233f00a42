"""The notebook tools: research projects, visits, findings, next steps and related pages.

A thin adapter over :class:`~labbrain.agent.projects.projects.Projects`,
:class:`~labbrain.agent.projects.findings.Findings`,
:func:`~labbrain.agent.projects.suggest.suggest_next_steps` and
:class:`~labbrain.agent.projects.related.RelatedPagesFinder`: each tool passes its arguments to
the core and returns its model. ``get_node`` (in :mod:`labbrain.mcp.tools.discourse`) records
visits through :meth:`Projects.note_read`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from labbrain.agent.projects import suggest
from labbrain.agent.projects.models import (
    ActiveProjectResult,
    DeletedFinding,
    DeletedProject,
    FindingList,
    FindingResult,
    NextSteps,
    ProjectContext,
    ProjectList,
    ProjectResult,
    RelatedPages,
    UpdatedProject,
    VisitResult,
)
from labbrain.mcp.common import DESTRUCTIVE, READ_ONLY, WRITE, IdempotencyKey, ToolContext, ToolSpec

Project = Annotated[
    str | None,
    Field(description="project name or slug; default: the active one"),
]
Uid = Annotated[str, Field(description="lab node uid (from search_nodes)")]
Dataset = Annotated[str | None, Field(description="dataset slug, if the uid is in several")]


def create_project(
    context: ToolContext,
    name: Annotated[str, Field(description="e.g. 'Membrane tension and actin'")],
    description: Annotated[
        str,
        Field(description="questions, topics, methods (they seed suggest_next_steps)"),
    ] = "",
    activate: Annotated[bool, Field(description="make it active")] = True,
    idempotencyKey: IdempotencyKey = None,
) -> ProjectResult:
    """Start a research project that collects the lab nodes you read and the findings
    you log; it becomes active, so get_node records visits in it. A taken slug is refused.

    Next: suggest_next_steps, log_finding."""
    return context.projects.create_project(name, description, activate=activate, key=idempotencyKey)


def set_active_project(
    context: ToolContext,
    project: Annotated[
        str | None,
        Field(description="name or slug; omit to deactivate"),
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> ActiveProjectResult:
    """Choose the project that get_node visits and findings without a project go to;
    kept across restarts (none: no visits recorded). Returns it and the previous one.

    Next: get_project_context."""
    return context.projects.set_active_project(project, key=idempotencyKey)


def list_projects(context: ToolContext) -> ProjectList:
    """List every research project with its description, creation time, finding and
    visit counts, and which one is active.

    Next: set_active_project or get_project_context."""
    return context.projects.list_projects()


def get_project_context(context: ToolContext, project: Project = None) -> ProjectContext:
    """Pick up a project where you left off: description, counts, finding tags, newest
    findings and visits (lab nodes attributed).

    Next: suggest_next_steps or list_findings."""
    return context.projects.get_project_context(project)


def record_visit(
    context: ToolContext,
    uid: Uid,
    dataset: Dataset = None,
    project: Project = None,
    idempotencyKey: IdempotencyKey = None,
) -> VisitResult:
    """Record that you read a lab node, in a project. get_node does so in the active
    project already: use this for nodes read otherwise or for another project. Visits
    feed suggest_next_steps and get_related_pages."""
    return context.projects.record_visit(uid, dataset, project, key=idempotencyKey)


def log_finding(
    context: ToolContext,
    content: Annotated[str, Field(description="a few sentences", max_length=10_000)],
    sourceUid: Annotated[str | None, Field(description="lab node uid it came from")] = None,
    sourceUrl: Annotated[str | None, Field(description="http(s) URL it came from")] = None,
    tags: Annotated[list[str] | None, Field(description="labels, e.g. ['force']")] = None,
    dataset: Dataset = None,
    project: Project = None,
    idempotencyKey: IdempotencyKey = None,
) -> FindingResult:
    """Record a finding (something you learned) in a project, with its source: a lab
    node (answered with creator and url) or a web page. suggest_next_steps builds on
    findings.

    Next: list_findings."""
    return context.findings.log_finding(
        content, sourceUid, sourceUrl, tags, dataset, project, key=idempotencyKey
    )


def list_findings(
    context: ToolContext,
    project: Project = None,
    query: Annotated[str | None, Field(description="words to rank by (BM25)")] = None,
    tag: Annotated[str | None, Field(description="only this tag")] = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    offset: Annotated[int, Field(ge=0, description="from nextOffset")] = 0,
) -> FindingList:
    """List a project's findings, newest first (best match first for a query), a page
    at a time. Each has its id (for delete_finding), text, tags, time and source (an
    attributed lab node or a URL)."""
    return context.findings.list_findings(project, query=query, tag=tag, limit=limit, offset=offset)


def delete_finding(
    context: ToolContext,
    findingId: Annotated[str, Field(description="from list_findings")],
    project: Annotated[str | None, Field(description="project holding it; default: any")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> DeletedFinding:
    """Delete one finding for good (a wrong or duplicate one). Answers with what was
    deleted, so it can be logged again; an unknown id is an error (list_findings lists
    ids)."""
    return context.findings.delete_finding(findingId, project, key=idempotencyKey)


def suggest_next_steps(context: ToolContext, project: Project = None) -> NextSteps:
    """Suggest what to do next in a project, as concrete tool calls with reasons fitted
    to its stage.

    Make the suggested calls, filling in <...> placeholders yourself."""
    return suggest.suggest_next_steps(context.projects, project)


def get_related_pages(
    context: ToolContext,
    uid: Uid,
    project: Project = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
) -> RelatedPages:
    """Find lab nodes related to a node, most reasons first, each attributed, with its
    reasons: structural (linked to the same node), temporal (read in the same session),
    semantic (similar text).

    Next: get_node."""
    return context.related.find(uid, project, dataset, limit)


def update_project(
    context: ToolContext,
    project: Project = None,
    name: Annotated[str | None, Field(description="the new name (its slug follows)")] = None,
    description: Annotated[str | None, Field(description="the new description")] = None,
    idempotencyKey: IdempotencyKey = None,
) -> UpdatedProject:
    """Rename a project and/or change its description, keeping everything it holds. A new
    name gives it a new slug (and graph); it stays active where it was.

    Next: get_project_context."""
    return context.projects.update_project(
        project, name=name, description=description, key=idempotencyKey
    )


def delete_project(
    context: ToolContext,
    project: Annotated[str, Field(description="project name or slug (never implied)")],
    idempotencyKey: IdempotencyKey = None,
) -> DeletedProject:
    """Delete a research project with all its visits and findings, for good, in one step;
    it is no longer active for any agent. The lab's graph and other projects are not
    touched.

    Next: list_projects."""
    return context.projects.delete_project(project, key=idempotencyKey)


#: The small way to keep notes: the default toolset ``notes``.
NOTES = (
    ToolSpec(log_finding, "Log finding", WRITE),
    ToolSpec(list_findings, "List findings", READ_ONLY),
)

TOOLS = (
    ToolSpec(create_project, "Create project", WRITE),
    ToolSpec(set_active_project, "Set active project", WRITE),
    ToolSpec(list_projects, "List projects", READ_ONLY),
    ToolSpec(get_project_context, "Get project context", READ_ONLY),
    ToolSpec(update_project, "Update project", WRITE),
    ToolSpec(delete_project, "Delete project", DESTRUCTIVE),
    ToolSpec(record_visit, "Record visit", WRITE),
    *NOTES,
    ToolSpec(delete_finding, "Delete finding", DESTRUCTIVE),
    ToolSpec(suggest_next_steps, "Suggest next steps", READ_ONLY),
    ToolSpec(get_related_pages, "Get related pages", READ_ONLY),
)
