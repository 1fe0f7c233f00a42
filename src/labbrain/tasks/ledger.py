"""Durable task state: workflows and transitions declared as data, checkpoints in the store.

A task is one run of a workflow (``ingest``, ``reindex``, ``embed``): a fixed list of steps.
Its state (:class:`TaskState`) changes only through events, and only as :data:`TRANSITIONS` allows::

    pending ──start──▶ in_progress ──advance──▶ in_progress ──complete──▶ completed
       │                  │  │  └──fail──▶ error
       │                  │  └──cancel──▶ cancelled
       │                  └──interrupt──▶ interrupted ──resume──▶ in_progress
       └──cancel / interrupt──▶ cancelled / interrupted          └──cancel──▶ cancelled

``advance`` completes the current step and moves to the next; ``complete`` is allowed only
once every step is done. :class:`TaskLedger` keeps the states in ``urn:labbrain:tasks``: every
transition is written as one store transaction (the state as JSON plus a few queryable
triples), so a task's last checkpoint survives a crash. A task found ``in_progress`` or
``pending`` by the next process that owns the store was interrupted: the process that ran it
is gone (only the writer-lock holder runs tasks).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pyoxigraph import Literal as RdfLiteral
from pyoxigraph import NamedNode, Quad

from labbrain.errors import InvalidArgument, InvalidTransition, ItemNotFound
from labbrain.rdf.namespaces import DCT, LB, RDF, TASK_PREFIX, TASKS_GRAPH
from labbrain.rdf.terms import integer, now, text, timestamp
from labbrain.store.base import QuadStore

TaskStatus = Literal["pending", "in_progress", "completed", "error", "cancelled", "interrupted"]
TaskEvent = Literal["start", "advance", "complete", "fail", "cancel", "interrupt", "resume"]
STATUSES: tuple[str, ...] = get_args(TaskStatus)
FINISHED: frozenset[str] = frozenset({"completed", "error", "cancelled"})

#: The state machine: (status, event) -> new status. Anything else is an InvalidTransition.
TRANSITIONS: dict[tuple[str, str], TaskStatus] = {
    ("pending", "start"): "in_progress",
    ("pending", "cancel"): "cancelled",
    ("pending", "interrupt"): "interrupted",
    ("in_progress", "advance"): "in_progress",
    ("in_progress", "complete"): "completed",
    ("in_progress", "fail"): "error",
    ("in_progress", "cancel"): "cancelled",
    ("in_progress", "interrupt"): "interrupted",
    ("interrupted", "resume"): "in_progress",
    ("interrupted", "cancel"): "cancelled",
}


@dataclass(frozen=True)
class Workflow:
    """A kind of task: its steps, in order, and what it does."""

    kind: str
    steps: tuple[str, ...]
    description: str


#: Every workflow labbrain runs as a task: the one declaration of their steps. Executors (see
#: :mod:`labbrain.ops.workflows`) enter the steps by name; the ingest steps are entered by the
#: loader itself (:func:`labbrain.ingest.load.load_source`, which cannot import this layer).
WORKFLOWS: dict[str, Workflow] = {
    workflow.kind: workflow
    for workflow in (
        Workflow(
            "ingest",
            ("read", "repair_context", "parse", "write", "derive", "index"),
            "load one file into its dataset graph, replacing the graph atomically",
        ),
        Workflow(
            "reindex",
            ("scan", "index"),
            "rebuild the text index of every dataset from the store",
        ),
        Workflow(
            "embed",
            ("scan", "embed", "prune"),
            "compute the embeddings of new or changed nodes for semantic search",
        ),
    )
}


class HistoryEntry(BaseModel):
    """One thing that happened to a task."""

    step: str | None = Field(description="the step it concerns (None: the task as a whole)")
    time: str = Field(description="when, ISO 8601 UTC")
    message: str


class TaskProgress(BaseModel):
    """How far a task is: steps done out of steps in its workflow."""

    done: int
    total: int


class TaskErrorInfo(BaseModel):
    """An error a task met, and at which step."""

    step: str | None
    message: str


#: Task answers speak camelCase, as every other answer (``taskId``, ``currentStep``), while
#: the code keeps its snake_case names; a state stored in either spelling reads back.
CAMEL_CASE = ConfigDict(
    alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
)


class TaskState(BaseModel):
    """Everything known about one task. Changed only through :func:`transition`."""

    model_config = CAMEL_CASE

    task_id: str
    kind: str
    status: TaskStatus
    current_step: str | None = Field(description="the step being worked on (None: none)")
    last_completed_step: str | None = None
    history: list[HistoryEntry] = Field(default_factory=list)
    results: dict[str, Any] = Field(default_factory=dict)
    errors: list[TaskErrorInfo] = Field(default_factory=list)
    progress: TaskProgress
    params: dict[str, Any] = Field(
        default_factory=dict, description="what the task was asked to do (enough to resume it)"
    )
    created: str
    updated: str

    @property
    def finished(self) -> bool:
        """True once the task is completed, failed or cancelled (no event can change it)."""
        return self.status in FINISHED

    @property
    def workflow(self) -> Workflow:
        """The task's workflow."""
        return WORKFLOWS[self.kind]

    def completed_steps(self) -> tuple[str, ...]:
        """The steps done so far, in order."""
        if self.last_completed_step is None:
            return ()
        steps = self.workflow.steps
        return steps[: steps.index(self.last_completed_step) + 1]


def new_task(kind: str, params: dict[str, Any] | None = None) -> TaskState:
    """A task of workflow ``kind`` in its initial state (pending). Raises InvalidArgument for
    an unknown kind."""
    if kind not in WORKFLOWS:
        raise InvalidArgument("kind", f"{kind!r}; known task kinds: {', '.join(WORKFLOWS)}")
    moment = now().isoformat()
    return TaskState(
        task_id=uuid.uuid4().hex[:12],
        kind=kind,
        status="pending",
        current_step=None,
        progress=TaskProgress(done=0, total=len(WORKFLOWS[kind].steps)),
        params=dict(params or {}),
        created=moment,
        updated=moment,
        history=[HistoryEntry(step=None, time=moment, message="created")],
    )


def transition(
    state: TaskState,
    event: TaskEvent,
    message: str = "",
    *,
    results: dict[str, Any] | None = None,
) -> TaskState:
    """The state after ``event``: a new object; ``state`` is left as it was.

    Raises InvalidTransition when the event is not allowed in the current status (or, for
    ``complete``, before every step is done). ``advance`` marks the current step done and moves
    to the next one (None after the last); ``resume`` restarts at the step after the last one
    completed; ``fail`` records ``message`` as an error of the current step.
    """
    status = TRANSITIONS.get((state.status, event))
    steps = state.workflow.steps
    if status is None or (event == "complete" and state.current_step is not None):
        raise InvalidTransition(state.task_id, state.status, event)
    moment = now().isoformat()
    changed = state.model_copy(deep=True)
    changed.status = status
    changed.updated = moment
    if results:
        changed.results.update(results)
    step = state.current_step
    if event in ("start", "resume"):
        done = len(state.completed_steps())
        changed.current_step = steps[done] if done < len(steps) else None
        step = changed.current_step
    elif event == "advance":
        if step is None:
            raise InvalidTransition(state.task_id, "past its last step", event)
        changed.last_completed_step = step
        position = steps.index(step) + 1
        changed.current_step = steps[position] if position < len(steps) else None
    elif event == "fail":
        changed.errors.append(TaskErrorInfo(step=step, message=message))
    changed.progress = TaskProgress(done=len(changed.completed_steps()), total=len(steps))
    note = message or {"advance": "done"}.get(event, event)
    if event == "fail":
        note = f"failed: {message}"
    changed.history.append(HistoryEntry(step=step, time=moment, message=note))
    return changed


def task_iri(task_id: str) -> NamedNode:
    """The IRI of a task's description in the tasks graph."""
    return NamedNode(TASK_PREFIX + task_id)


class TaskLedger:
    """Task states kept durably in ``urn:labbrain:tasks``, one transaction per checkpoint."""

    def __init__(self, store: QuadStore) -> None:
        self.store = store

    def save(self, state: TaskState) -> None:
        """Replace the stored state of the task with ``state`` (one transaction)."""
        subject = task_iri(state.task_id)
        old = list(self.store.quads(TASKS_GRAPH, subject))
        self.store.apply(old, list(_state_quads(state)))

    def load(self, task_id: str) -> TaskState:
        """The stored state of a task; raises ItemNotFound for an unknown id."""
        state = self._read(task_iri(task_id))
        if state is None:
            raise ItemNotFound("task", task_id, "list_tasks (or `labbrain tasks list`) lists them")
        return state

    def all(self, status: str | None = None) -> list[TaskState]:
        """Every stored task (optionally only those with ``status``), newest first."""
        if status is not None and status not in STATUSES:
            raise InvalidArgument("status", f"{status!r}; one of {', '.join(STATUSES)}")
        subjects = {
            quad.subject
            for quad in self.store.quads(TASKS_GRAPH, predicate=NamedNode(LB + "state"))
            if isinstance(quad.subject, NamedNode)
        }
        states = [s for s in (self._read(subject) for subject in subjects) if s is not None]
        states.sort(key=lambda s: (s.created, s.task_id), reverse=True)
        return [s for s in states if status is None or s.status == status]

    def _read(self, subject: NamedNode) -> TaskState | None:
        for quad in self.store.quads(TASKS_GRAPH, subject, NamedNode(LB + "state")):
            if isinstance(quad.object, RdfLiteral):
                return TaskState.model_validate_json(quad.object.value)
        return None

    def interrupt_orphans(self) -> list[TaskState]:
        """Mark every pending or in-progress task interrupted and return them.

        Call only in the process that just took the store's writer lock: any task still
        running by the record was run by a process that is gone.
        """
        orphans = [s for s in self.all() if s.status in ("pending", "in_progress")]
        marked = []
        for state in orphans:
            message = "interrupted: the process running it stopped"
            if state.current_step is not None:
                message += f" during step {state.current_step}"
            changed = transition(state, "interrupt", message)
            self.save(changed)
            marked.append(changed)
        return marked


def _state_quads(state: TaskState) -> Iterable[Quad]:
    """The quads describing a task: its JSON state plus queryable status triples."""
    graph = NamedNode(TASKS_GRAPH)
    subject = task_iri(state.task_id)
    facts: list[tuple[str, NamedNode | RdfLiteral]] = [
        (RDF + "type", NamedNode(LB + "Task")),
        (LB + "kind", text(state.kind)),
        (LB + "status", text(state.status)),
        (LB + "progressDone", integer(state.progress.done)),
        (LB + "progressTotal", integer(state.progress.total)),
        (DCT + "created", timestamp(datetime.fromisoformat(state.created))),
        (DCT + "modified", timestamp(datetime.fromisoformat(state.updated))),
        (LB + "state", text(state.model_dump_json())),
    ]
    if state.current_step is not None:
        facts.append((LB + "currentStep", text(state.current_step)))
    if state.last_completed_step is not None:
        facts.append((LB + "lastCompletedStep", text(state.last_completed_step)))
    return (Quad(subject, NamedNode(predicate), value, graph) for predicate, value in facts)
