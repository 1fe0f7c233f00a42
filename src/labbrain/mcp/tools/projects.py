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
    FindingList,
    FindingResult,
    NextSteps,
    ProjectContext,
    ProjectList,
    ProjectResult,
    RelatedPages,
    VisitResult,
)
from labbrain.mcp.common import DESTRUCTIVE, READ_ONLY, WRITE, IdempotencyKey, ToolContext, ToolSpec

Project = Annotated[
    str | None,
    Field(description="project name or slug (list_projects lists them); default: the active one"),
]
Uid = Annotated[
    str, Field(description="a lab node's uid, e.g. 'CnOU48Obk' (search_nodes finds uids)")
]
Dataset = Annotated[
    str | None, Field(description="the dataset slug, when the uid is in several (see get_schema)")
]


def create_project(
    context: ToolContext,
    name: Annotated[
        str, Field(description="the project's name, e.g. 'Membrane tension and actin'")
    ],
    description: Annotated[
        str,
        Field(
            description="what the project is about: questions, topics, methods (its key "
            "terms seed suggest_next_steps)"
        ),
    ] = "",
    activate: Annotated[
        bool, Field(description="make it the active project (default true)")
    ] = True,
    idempotencyKey: IdempotencyKey = None,
) -> ProjectResult:
    """Start a research project: a named context (its own graph) that collects the lab
    nodes you read and the findings you log, and makes it the active project unless
    activate is false. The project's slug comes from its name; a name whose slug is taken
    is refused.

    While a project is active, every get_node records a visit in it. Next:
    suggest_next_steps for where to start, log_finding to record what you learn."""
    return context.projects.create_project(name, description, activate=activate, key=idempotencyKey)


def set_active_project(
    context: ToolContext,
    project: Annotated[
        str | None,
        Field(description="project name or slug; omit (or null) to deactivate projects"),
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> ActiveProjectResult:
    """Choose the project you are working in: visits of nodes read with get_node and
    findings logged without a project go there. It stays active across restarts until
    changed; without a project, visits are not recorded.

    Returns the active project's summary and the previous one. Next:
    get_project_context to pick up where you left off."""
    return context.projects.set_active_project(project, key=idempotencyKey)


def list_projects(context: ToolContext) -> ProjectList:
    """List every research project with its description, creation time, numbers of
    findings and visits, and which one is active.

    Use it to choose a project for set_active_project or get_project_context."""
    return context.projects.list_projects()


def get_project_context(context: ToolContext, project: Project = None) -> ProjectContext:
    """Pick up a project where you left off: its description, counts (findings, visits,
    distinct nodes visited, sessions), the tags of its findings, and its newest findings
    and visits, each lab node with creator, date and url.

    Next: suggest_next_steps for concrete actions, list_findings for all findings."""
    return context.projects.get_project_context(project)


def record_visit(
    context: ToolContext,
    uid: Uid,
    dataset: Dataset = None,
    project: Project = None,
    idempotencyKey: IdempotencyKey = None,
) -> VisitResult:
    """Record that you read a lab node in a project, with the time and this session.
    get_node already records a visit in the active project; use this for nodes you read
    another way (search results, resources) or for another project.

    Visits drive suggest_next_steps and the temporal reasons of get_related_pages."""
    return context.projects.record_visit(uid, dataset, project, key=idempotencyKey)


def log_finding(
    context: ToolContext,
    content: Annotated[
        str, Field(description="what you learned, in a few sentences", max_length=10_000)
    ],
    sourceUid: Annotated[str | None, Field(description="uid of the lab node it came from")] = None,
    sourceUrl: Annotated[
        str | None, Field(description="http(s) URL of the web page it came from")
    ] = None,
    tags: Annotated[
        list[str] | None, Field(description="short labels to group findings, e.g. ['force']")
    ] = None,
    dataset: Dataset = None,
    project: Project = None,
    idempotencyKey: IdempotencyKey = None,
) -> FindingResult:
    """Record a finding (something you learned) in a project, timestamped, linked to the
    lab node it came from (sourceUid, answered with its creator and url) or to a web page
    (sourceUrl), with optional tags.

    Findings are what suggest_next_steps builds on: it turns them into claims to
    formulate and contradictions to check. Next: list_findings, suggest_next_steps."""
    return context.findings.log_finding(
        content, sourceUid, sourceUrl, tags, dataset, project, key=idempotencyKey
    )


def list_findings(
    context: ToolContext,
    project: Project = None,
    query: Annotated[
        str | None, Field(description="words to rank findings by (BM25); default: newest")
    ] = None,
    tag: Annotated[str | None, Field(description="only findings with this tag")] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="at most this many")] = 20,
    offset: Annotated[int, Field(ge=0, description="skip this many (see nextOffset)")] = 0,
) -> FindingList:
    """List a project's findings, newest first (or best match first for a query),
    optionally only one tag, a page at a time: nextOffset gives the next page.

    Each finding has its id (for delete_finding), text, tags, time, and its source node
    (with creator and url) or URL."""
    return context.findings.list_findings(project, query=query, tag=tag, limit=limit, offset=offset)


def delete_finding(
    context: ToolContext,
    findingId: Annotated[str, Field(description="the finding's id, from list_findings")],
    project: Annotated[
        str | None, Field(description="the project holding it; default: any project")
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> DeletedFinding:
    """Delete one finding for good (a wrong or duplicate one); answers with what was
    deleted, so it can be logged again if needed.

    An unknown id is an error: list_findings lists the ids."""
    return context.findings.delete_finding(findingId, project, key=idempotencyKey)


def suggest_next_steps(context: ToolContext, project: Project = None) -> NextSteps:
    """Suggest what to do next in a project, as concrete tool calls with the reason for
    each, from the stage the project is at: coldStart (searches for the key terms of its
    description), exploration (visited nodes to reread and synthesise with log_finding),
    convergence (claims to formulate with add_proposition, open questions, contradictions
    to weigh with get_claim_status).

    Make the suggested calls (fill in placeholders such as <...> yourself)."""
    return suggest.suggest_next_steps(context.projects, project)


def get_related_pages(
    context: ToolContext,
    uid: Uid,
    project: Project = None,
    dataset: Dataset = None,
    limit: Annotated[int, Field(ge=1, le=100, description="at most this many nodes")] = 20,
) -> RelatedPages:
    """Find lab nodes related to a node, each with every reason it is related:
    structural (linked to the same source, question, claim or other node), temporal
    (visited in the same session as this node, in the project) and semantic (similar
    text). Each node comes with creator, date and url; most reasons first.

    Use it to widen a reading list; get_node reads any of them."""
    return context.related.find(uid, project, dataset, limit)


TOOLS = (
    ToolSpec(create_project, "Create project", WRITE),
    ToolSpec(set_active_project, "Set active project", WRITE),
    ToolSpec(list_projects, "List projects", READ_ONLY),
    ToolSpec(get_project_context, "Get project context", READ_ONLY),
    ToolSpec(record_visit, "Record visit", WRITE),
    ToolSpec(log_finding, "Log finding", WRITE),
    ToolSpec(list_findings, "List findings", READ_ONLY),
    ToolSpec(delete_finding, "Delete finding", DESTRUCTIVE),
    ToolSpec(suggest_next_steps, "Suggest next steps", READ_ONLY),
    ToolSpec(get_related_pages, "Get related pages", READ_ONLY),
)
