"""The task tools: start a load as a task, poll it, list, cancel and resume tasks.

The SDK does not implement the MCP tasks extension, so long work is job-style: a tool starts
a task and answers at once with its id; ``get_task`` polls it. A client that sends a progress
token and asks to wait (``waitSeconds``) gets ``notifications/progress`` for every step while
it waits. Tasks run in this process, in the background, on the context's task runner;
``embed_nodes`` (in :mod:`labbrain.mcp.tools.semantic`) starts its task the same way.
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from labbrain.discourse.models import listed_count, total_count
from labbrain.errors import TaskError
from labbrain.mcp.allowlist import allowed_file
from labbrain.mcp.common import DESTRUCTIVE, READ_ONLY, WRITE, ToolContext, ToolSpec
from labbrain.ops.workflows import ingest_params
from labbrain.store.threads import confined
from labbrain.tasks.ledger import CAMEL_CASE, TaskState
from labbrain.tasks.runner import TaskRunner

POLL_SECONDS = 0.1

TaskId = Annotated[str, Field(description="taskId from load_dataset or list_tasks")]
WaitSeconds = Annotated[
    float,
    Field(ge=0, description="seconds to wait for it to end, with progress"),
]


class TaskSummary(BaseModel):
    """One task in a listing."""

    model_config = CAMEL_CASE

    task_id: str
    kind: str
    status: str
    current_step: str | None
    last_completed_step: str | None
    progress: str = Field(description="steps done / steps in all")
    created: str
    updated: str
    source: str | None = Field(description="the file an ingest task loads")
    error: str | None = Field(description="the last error, for failed tasks")


class TaskList(BaseModel):
    """Tasks, newest first."""

    tasks: list[TaskSummary]
    listed: int = listed_count("tasks")
    total: int = total_count("tasks of that status, however many are listed")
    note: str | None = None


def for_model(state: TaskState) -> TaskState:
    """The state as a model may see it: the file named as the model gave it, not by the
    server's full path (in its parameters, errors and history)."""
    if "label" not in state.params:
        return state
    shown = state.model_copy(deep=True)
    full, label = str(shown.params.get("source", "")), shown.params.pop("label")
    shown.params["source"] = label
    if full:  # messages name the file as the model gave it too
        for error in shown.errors:
            error.message = error.message.replace(full, label)
        for entry in shown.history:
            entry.message = entry.message.replace(full, label)
    return shown


def summary(state: TaskState) -> TaskSummary:
    """The listing view of a task."""
    return TaskSummary(
        task_id=state.task_id,
        kind=state.kind,
        status=state.status,
        current_step=state.current_step,
        last_completed_step=state.last_completed_step,
        progress=f"{state.progress.done}/{state.progress.total}",
        created=state.created,
        updated=state.updated,
        source=for_model(state).params.get("source"),
        error=state.errors[-1].message if state.errors else None,
    )


async def _wait(runner: TaskRunner, task_id: str, seconds: float, ctx: Context) -> TaskState:
    """The task's state once it finished or ``seconds`` passed, reporting each new step as
    progress to a client that sent a progress token."""
    deadline = time.monotonic() + seconds
    reported: tuple[int, str | None] | None = None
    while True:
        state = runner.get(task_id)
        where = (state.progress.done, state.current_step)
        if where != reported:
            reported = where
            message = state.current_step or state.status
            await ctx.report_progress(state.progress.done, state.progress.total, message)
        if state.finished or state.status == "interrupted" or time.monotonic() >= deadline:
            return state
        await anyio.sleep(POLL_SECONDS)


async def waited(context: ToolContext, task_id: str, seconds: float, ctx: Context) -> TaskState:
    """The task as the model sees it once it finished or ``seconds`` passed (at most the
    longest wait the settings allow)."""
    longest = context.brain.settings.task_wait_max_seconds
    return for_model(await _wait(context.runner, task_id, min(seconds, longest), ctx))


#: What a failed run of a workflow left, for the model (default: nothing said).
FAILED_NOTES = {"ingest": "nothing was written and the dataset is as before"}


def succeeded(state: TaskState) -> TaskState:
    """``state``, unless the task failed: then a TaskError (the model's ``isError``) naming
    the task, its step and its error, and what the failure left. For the tools that start or
    resume work; get_task reports a failed task as its state."""
    if state.status != "error":
        return state
    error = state.errors[-1] if state.errors else None
    where = f" during {error.step}" if error is not None and error.step else ""
    why = error.message if error is not None else "no error recorded"
    left = FAILED_NOTES.get(state.kind)
    raise TaskError(
        f"task {state.task_id} ({state.kind}) failed{where}: {why}"
        + (f"; {left}" if left else "")
        + f" (get_task {state.task_id} for its history)"
    )


async def load_dataset(
    context: ToolContext,
    path: Annotated[
        str,
        Field(
            description="export (.jsonld) or RDF (.ttl, .trig, .nt, .nq) file, relative to "
            "an allowed directory"
        ),
    ],
    ctx: Context,
    graph: Annotated[
        str | None,
        Field(description="dataset slug (default: from the export's @id)"),
    ] = None,
    format: Annotated[
        Literal["jsonld", "turtle", "trig", "nanopub", "ntriples", "nquads"] | None,
        Field(description="default: from the file suffix (a .trig of nanopublications is nanopub)"),
    ] = None,
    allowUnverified: Annotated[
        bool,
        Field(
            description="load nanopublications whose signature fails (or unsigned ones), "
            "marked unverified; default: reported in the warnings and left out"
        ),
    ] = False,
    waitSeconds: WaitSeconds = 0,
) -> TaskState:
    """Load a discourse-graph export (or RDF file) as a background task, replacing that
    dataset atomically. Poll get_task until completed (counts, warnings) or error (store
    unchanged); a load that fails within waitSeconds is answered as an error.

    Next: get_schema or search_nodes."""
    source = allowed_file(path, context.brain.settings.load_dirs)
    params = ingest_params(str(source), graph=graph, fmt=format, allow_unverified=allowUnverified)
    params["label"] = path
    task = context.runner.create("ingest", params)
    context.runner.start(task.task_id, background=True)
    return succeeded(await waited(context, task.task_id, waitSeconds, ctx))


async def get_task(
    context: ToolContext, taskId: TaskId, ctx: Context, waitSeconds: WaitSeconds = 0
) -> TaskState:
    """Read a task's state: status, steps, progress, history, results and errors. Poll
    it after load_dataset or embed_nodes.

    Next: resume_task for an interrupted task."""
    return await waited(context, taskId, waitSeconds, ctx)


def list_tasks(
    context: ToolContext,
    status: Annotated[
        Literal["pending", "in_progress", "completed", "error", "cancelled", "interrupted"] | None,
        Field(description="only this status"),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> TaskList:
    """List tasks (loads, reindexing, embedding), newest first, with status, progress,
    file and last error. Use it to find a task id or interrupted work.

    Next: get_task."""
    states = context.runner.list_tasks(status)
    note = None
    if len(states) > limit:
        note = f"showing {limit} of {len(states)}; raise limit or filter by status"
    return TaskList(
        tasks=[summary(s) for s in states[:limit]],
        listed=len(states[:limit]),
        total=len(states),
        note=note,
    )


async def cancel_task(
    context: ToolContext, taskId: TaskId, ctx: Context, waitSeconds: WaitSeconds = 5
) -> TaskState:
    """Cancel an unfinished task; a running load stops at its next step and is rolled
    back, leaving the store as before.

    Next: get_task if still in_progress."""
    await anyio.to_thread.run_sync(confined(context.runner.cancel), taskId)
    return await waited(context, taskId, waitSeconds, ctx)


async def resume_task(
    context: ToolContext, taskId: TaskId, ctx: Context, waitSeconds: WaitSeconds = 0
) -> TaskState:
    """Continue an interrupted task (its process stopped) from its last checkpoint, in
    the background; a load restarts its atomic write and never writes twice.

    Next: poll get_task."""
    context.runner.resume(taskId, background=True)
    return succeeded(await waited(context, taskId, waitSeconds, ctx))


TOOLS = (
    ToolSpec(load_dataset, "Load a dataset", WRITE),
    ToolSpec(get_task, "Get task", READ_ONLY),
    ToolSpec(list_tasks, "List tasks", READ_ONLY),
    ToolSpec(cancel_task, "Cancel task", DESTRUCTIVE),
    ToolSpec(resume_task, "Resume task", WRITE),
)
