"""Running tasks: the operations on a task, over work it is handed.

:class:`TaskRunner` offers the state-manager operations (create a task in its initial state,
start it, advance it with an event, get its state, cancel it, resume it) over one store. It
knows no workflow's work: it is handed an *executor* per workflow kind (the composition above
it, :mod:`labbrain.ops.workflows`, binds them to an opened store).

It runs a task inline (the CLI) or in a background thread (the MCP server), checkpoints the
state in the store at every step (see :class:`~labbrain.tasks.ledger.TaskLedger`), and tells
listeners of every change, which is how the CLI draws its progress bar and the MCP server sends
progress notifications.

Each workflow's work is an *executor*: a function that does the work and announces each step
as it enters it (:meth:`StepContext.enter`). Entering a step checkpoints the steps before it as
done, and is where a cancellation takes effect: :class:`~labbrain.errors.TaskCancelled` is
raised there, and the work it interrupts rolls back (a load's atomic write is undone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from labbrain.errors import (
    InputError,
    InvalidArgument,
    LabbrainError,
    StoreReadOnly,
    TaskCancelled,
)
from labbrain.rdf.terms import now
from labbrain.store.base import QuadStore
from labbrain.tasks.ledger import (
    STATUSES,
    HistoryEntry,
    TaskEvent,
    TaskLedger,
    TaskState,
    new_task,
    transition,
)

log = logging.getLogger("labbrain.tasks")

Listener = Callable[[TaskState], None]


class StepContext:
    """What an executor uses to report its steps; owned by the runner for one run."""

    def __init__(self, runner: TaskRunner, task_id: str, inputs: dict[str, Any]) -> None:
        self._runner = runner
        self.task_id = task_id
        #: Inputs given to this run only, never stored (e.g. the bytes read from stdin).
        self.inputs = inputs

    @property
    def state(self) -> TaskState:
        """The task's current state."""
        return self._runner.get(self.task_id)

    def enter(self, step: str) -> None:
        """The work is starting ``step``: every step before it is done (and checkpointed).

        A step already done or under way (a resumed task replaying its in-memory steps) is
        a no-op. Raises TaskCancelled when the task was asked to stop.
        """
        self._runner._enter(self.task_id, step)

    def note(self, **results: Any) -> None:
        """Add to the task's results; they are checkpointed with its next step."""
        self._runner._note(self.task_id, results)


#: The work of one workflow: it does the work, entering each step as it starts it, and
#: returns the task's results.
Executor = Callable[[TaskState, StepContext], dict[str, Any]]


class TaskRunner:
    """Creates, runs and tracks tasks on one writable store (see module doc).

    Thread-safe. Live states (of tasks this runner is running) are kept in memory too, so
    ``get`` is current between checkpoints; everything else is read from the store.
    """

    def __init__(
        self,
        store: QuadStore,
        executors: Mapping[str, Executor],
        *,
        read_only: bool = False,
        cancel_notes: Mapping[str, str] | None = None,
    ) -> None:
        """Run tasks on ``store`` with ``executors`` (one per workflow kind); a ``read_only``
        runner only reads task states. ``cancel_notes`` say, per kind, what a cancelled run
        leaves behind (default: nothing)."""
        self.store = store
        self.read_only = read_only
        self.executors = dict(executors)
        self.cancel_notes = dict(cancel_notes or {})
        self.ledger = TaskLedger(store)
        self._live: dict[str, TaskState] = {}
        self._cancel: dict[str, threading.Event] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._listeners: dict[str, list[Listener]] = {}
        self._changed = threading.Condition(threading.RLock())

    # ------------------------------------------------------------------ operations
    def create(self, kind: str, params: dict[str, Any] | None = None) -> TaskState:
        """A new task of ``kind`` in its initial (pending) state, checkpointed."""
        self._require_writable()
        state = new_task(kind, params)
        self.ledger.save(state)
        return state

    def start(
        self,
        task_id: str,
        *,
        background: bool = False,
        listener: Listener | None = None,
        inputs: dict[str, Any] | None = None,
    ) -> TaskState:
        """Run a pending task: in a background thread (returns at once, in progress), or
        inline, returning its final state; inline, a failure is also raised (after it was
        recorded), so a command can report it. ``inputs`` reach the work but are not stored."""
        return self._launch(task_id, "start", background, listener, inputs or {})

    def resume(
        self, task_id: str, *, background: bool = False, listener: Listener | None = None
    ) -> TaskState:
        """Continue an interrupted task from its last checkpoint (see ``start``)."""
        return self._launch(task_id, "resume", background, listener, {})

    def advance(self, task_id: str, event: TaskEvent, message: str = "") -> TaskState:
        """Apply one event to a task that is not running here, and checkpoint it.

        For running tasks the runner advances them itself; use ``cancel`` to stop one.
        """
        self._require_writable()
        with self._changed:
            if task_id in self._live:
                raise InputError(f"task {task_id} is running; only cancel applies to it")
            state = transition(self.ledger.load(task_id), event, message)
            self.ledger.save(state)
            return state

    def get(self, task_id: str) -> TaskState:
        """The task's current state; raises ItemNotFound for an unknown id."""
        with self._changed:
            live = self._live.get(task_id)
        return live if live is not None else self._view(self.ledger.load(task_id))

    def list_tasks(self, status: str | None = None) -> list[TaskState]:
        """Every task (optionally only those with ``status``), newest first."""
        if status is not None and status not in STATUSES:
            raise InvalidArgument("status", f"{status!r}; one of {', '.join(STATUSES)}")
        with self._changed:
            live = dict(self._live)
        states = [live.get(s.task_id, self._view(s)) for s in self.ledger.all()]
        return [s for s in states if status is None or s.status == status]

    def _view(self, state: TaskState) -> TaskState:
        """A stored state as it really is: seen read-only while no process holds the store,
        a task still marked running was interrupted (the next writer records it so)."""
        running = state.status in ("pending", "in_progress")
        if running and self.read_only and not self.store.writer_alive():
            return transition(state, "interrupt", "interrupted: no process is running it")
        return state

    def cancel(self, task_id: str, *, wait: float = 0.0) -> TaskState:
        """Stop a task. A running one stops at its next step (its work is rolled back);
        waits up to ``wait`` seconds for that and returns the state then. A pending or
        interrupted one is cancelled at once. Raises InvalidTransition for a finished task."""
        with self._changed:
            if task_id in self._live:
                self._cancel[task_id].set()
                self._add_history(task_id, "cancellation requested")
            else:
                return self.advance(task_id, "cancel", "cancelled before it ran")
        return self.wait(task_id, wait)

    def wait(self, task_id: str, timeout: float, on_change: Listener | None = None) -> TaskState:
        """Wait up to ``timeout`` seconds for the task to finish; call ``on_change`` with each
        new state seen meanwhile. Returns the state at the end."""
        deadline = time.monotonic() + timeout
        seen: TaskState | None = None
        with self._changed:
            while True:
                state = self.get(task_id)
                if on_change is not None and state != seen:
                    on_change(state)
                seen = state
                remaining = deadline - time.monotonic()
                if state.finished or task_id not in self._live or remaining <= 0:
                    return state
                self._changed.wait(remaining)

    def join(self, task_id: str) -> None:
        """Wait for a background task's thread to end (tests and shutdown)."""
        thread = self._threads.get(task_id)
        if thread is not None:
            thread.join()

    # ------------------------------------------------------------------ running
    def _require_writable(self) -> None:
        if self.read_only:
            raise StoreReadOnly("running a task")

    def _launch(
        self,
        task_id: str,
        event: TaskEvent,
        background: bool,
        listener: Listener | None,
        inputs: dict[str, Any],
    ) -> TaskState:
        self._require_writable()
        with self._changed:
            if task_id in self._live:
                raise InputError(f"task {task_id} is already running")
            state = transition(self.ledger.load(task_id), event)
            self.ledger.save(state)
            self._live[task_id] = state
            self._cancel[task_id] = threading.Event()
            self._listeners[task_id] = [listener] if listener else []
        self._notify(state)
        context = StepContext(self, task_id, inputs)
        if not background:
            self._run(context, raise_errors=True)
            return self.get(task_id)
        thread = threading.Thread(
            target=self._run, args=(context,), name=f"labbrain-task-{task_id}", daemon=True
        )
        self._threads[task_id] = thread
        thread.start()
        return state

    def _run(self, context: StepContext, *, raise_errors: bool = False) -> None:
        task_id = context.task_id
        state = self._live[task_id]
        executor = self.executors[state.kind]
        try:
            results = executor(state, context)
            # The work is done (and committed): no cancellation applies any more.
            self._advance_to(task_id, state.workflow.steps[-1])
            self._finish(task_id, "advance", "done")
            self._finish(task_id, "complete", "completed", results)
        except TaskCancelled:
            where = self._live[task_id].current_step
            kept = self.cancel_notes.get(state.kind, "nothing was kept")
            self._finish(task_id, "cancel", f"cancelled during {where}; {kept}")
            if raise_errors:
                raise
        except KeyboardInterrupt:
            self._finish(task_id, "cancel", "stopped by the user; nothing was kept")
            raise
        except LabbrainError as error:
            self._finish(task_id, "fail", str(error))
            if raise_errors:
                raise
        except Exception as error:  # a bug, not bad input: keep the task's record honest
            log.exception("task %s failed", task_id)
            self._finish(task_id, "fail", f"internal error: {type(error).__name__}: {error}")
            if raise_errors:
                raise
        finally:
            with self._changed:
                self._live.pop(task_id, None)
                self._cancel.pop(task_id, None)
                self._listeners.pop(task_id, None)
                self._changed.notify_all()

    def _finish(
        self,
        task_id: str,
        event: TaskEvent,
        message: str,
        results: dict[str, Any] | None = None,
    ) -> None:
        with self._changed:
            state = transition(self._live[task_id], event, message, results=results)
            self.ledger.save(state)
            self._live[task_id] = state
        self._notify(state)

    def _enter(self, task_id: str, step: str) -> None:
        with self._changed:
            if self._cancel[task_id].is_set():
                raise TaskCancelled(task_id)
        self._advance_to(task_id, step)

    def _advance_to(self, task_id: str, step: str) -> None:
        """Mark every step before ``step`` done, one checkpoint each."""
        with self._changed:
            state = self._live[task_id]
            steps = state.workflow.steps
            if step not in steps:
                raise ValueError(f"{state.kind} has no step {step!r}")
            while state.current_step is not None and steps.index(state.current_step) < (
                steps.index(step)
            ):
                state = transition(state, "advance")
                self.ledger.save(state)
                self._live[task_id] = state
        self._notify(state)

    def _note(self, task_id: str, results: dict[str, Any]) -> None:
        with self._changed:
            state = self._live[task_id].model_copy(deep=True)
            state.results.update(results)
            self._live[task_id] = state

    def _add_history(self, task_id: str, message: str) -> None:
        with self._changed:
            state = self._live[task_id].model_copy(deep=True)
            state.history.append(
                HistoryEntry(step=state.current_step, time=now().isoformat(), message=message)
            )
            self._live[task_id] = state

    def _notify(self, state: TaskState) -> None:
        with self._changed:
            listeners = list(self._listeners.get(state.task_id, []))
            self._changed.notify_all()
        for listener in listeners:
            listener(state)
