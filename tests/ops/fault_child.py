"""Child processes for the fault tests (tests/ops/test_faults.py), killed with SIGKILL mid-run.

Run as ``python tests/ops/fault_child.py MODE STORE COUNT [FILE]``. Each mode opens the store for
writing, prints ``ready``, then does a known sequence of writes and prints one line per write
*after* it returned (flushed), so the parent knows exactly which writes were acknowledged:

- ``agent``: keyed agent writes, cycling finding / memory / proposition (:func:`agent_write`);
  the store must already hold the sample, the project :data:`PROJECT` and the domain
  :data:`DOMAIN` (active for :data:`AGENT`);
- ``ledger``: task-state checkpoints (:func:`ledger_plan`), each one ledger transaction;
- ``bulk``: loads the file given after COUNT, holding back every bulk write of the load after
  the first COUNT (:func:`hold_bulk_writes_after`): once those returned it prints
  ``partial N``, N the quads the target graph holds then, and waits to be killed. The store
  then holds part of the load for certain; a kill inside pyoxigraph's bulk loader left no
  partial graph in tests/store/test_kill.py's 20,000-node loads, so those pass even with the
  journal's rollback disabled.

The write sequences are functions of the write's number, so the parent can replay the one
that was in flight when the child died. With ``FAULT_CHILD_PAD=N`` in the environment, each
line carries N trailing spaces: a parent that stops reading then finds the child blocked in the
middle of printing a line, i.e. just after a write committed and before it was acknowledged.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from labbrain.agent.claims.propositions import Propositions
from labbrain.agent.memory.memories import Memories
from labbrain.agent.projects.findings import Findings
from labbrain.agent.projects.projects import Projects
from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.settings import Settings
from labbrain.store import local
from labbrain.tasks.ledger import TaskEvent, TaskLedger, TaskState, new_task, transition

AGENT = "fault-test"
PROJECT = "Fault project"
PROJECT_SLUG = "fault-project"
DOMAIN = "faults"
KINDS = ("finding", "memory", "proposition")
#: Sample nodes the findings and propositions come from (data/README.md).
SOURCES = ("D6SNboBqO", "n2rGK8We9", "24MbeSyHQ", "1uL1j6i-u")
PAD = " " * int(os.environ.get("FAULT_CHILD_PAD", "0"))


@dataclass
class AgentTools:
    """The agent-side models over one writable store, writing as :data:`AGENT`."""

    findings: Findings
    memories: Memories
    propositions: Propositions

    @classmethod
    def open(cls, brain: LabBrain) -> AgentTools:
        reader = DiscourseReader(brain)
        writer = AgentWriter(brain.store, agent=AGENT)
        return cls(
            Findings(Projects(brain, reader, writer)),
            Memories(brain, reader, writer),
            Propositions(brain, reader, writer),
        )


def content_of(number: int) -> str:
    """The text write ``number`` records (unique per write)."""
    kind = KINDS[number % len(KINDS)]
    return f"{kind} {number}: membrane tension changes endocytic actin assembly"


def key_of(number: int) -> str:
    """The idempotency key of write ``number``."""
    return f"fault-{KINDS[number % len(KINDS)]}-{number}"


def agent_write(tools: AgentTools, number: int) -> str:
    """Do write ``number`` of the agent sequence; return the IRI of what it recorded."""
    kind = KINDS[number % len(KINDS)]
    source = SOURCES[number % len(SOURCES)]
    if kind == "finding":
        found = tools.findings.log_finding(
            content_of(number),
            source_uid=source,
            tags=["fault", f"n{number}"],
            project=PROJECT_SLUG,
            key=key_of(number),
        )
        return f"urn:labbrain:finding:{found.finding.id}"
    if kind == "memory":
        stored = tools.memories.store_memory(
            content_of(number), path="/faults", tags=["fault"], key=key_of(number)
        )
        return stored.memory.id
    added = tools.propositions.add(content_of(number), 0.5, source, key=key_of(number))
    return added.proposition.id


def prepare_agent_store(brain: LabBrain) -> None:
    """Create the project and the memory domain the agent sequence writes into."""
    tools = AgentTools.open(brain)
    tools.findings.projects.create_project(PROJECT, "fault tests")
    tools.memories.domains.create_domain(DOMAIN, "Faults")


#: The event paths the ledger child drives its tasks through, in turn.
LEDGER_PATHS: tuple[tuple[TaskEvent, ...], ...] = (
    ("start", "advance", "advance", "complete"),
    ("start", "advance"),
    ("start", "fail"),
    ("cancel",),
    ("start", "interrupt", "resume", "advance"),
    (),
)


def ledger_plan(tasks: int) -> list[tuple[int, str]]:
    """The checkpoints of the ledger child: (task number, status written), in order. Each
    task's first checkpoint is its creation (pending)."""
    plan: list[tuple[int, str]] = []
    for number in range(tasks):
        state = new_task("reindex", {"number": number})
        plan.append((number, state.status))
        for event in LEDGER_PATHS[number % len(LEDGER_PATHS)]:
            state = transition(state, event, "boom" if event == "fail" else "")
            plan.append((number, state.status))
    return plan


def _run_ledger(brain: LabBrain, tasks: int) -> None:
    ledger = TaskLedger(brain.store)
    for number in range(tasks):
        state: TaskState = new_task("reindex", {"number": number})
        ledger.save(state)
        print(number, state.task_id, state.status, PAD, flush=True)
        for event in LEDGER_PATHS[number % len(LEDGER_PATHS)]:
            state = transition(state, event, "boom" if event == "fail" else "")
            ledger.save(state)
            print(number, state.task_id, state.status, PAD, flush=True)


def _run_agent(brain: LabBrain, count: int) -> None:
    tools = AgentTools.open(brain)
    for number in range(count):
        iri = agent_write(tools, number)
        print(number, iri, PAD, flush=True)


def hold_bulk_writes_after(count: int) -> None:
    """Let the first ``count`` bulk writes of this process through and hold back every later
    one before it writes anything; when the first ``count`` have returned, print ``partial N``
    (N: the quads of the target graph in the live database, flushed) and wait forever."""
    write = local._BulkWriter.write
    lock = threading.Lock()
    started, finished = [0], [0]

    def held_back(self: local._BulkWriter, part: Any) -> None:
        with lock:
            number = started[0]
            started[0] += 1
        if number >= count:
            threading.Event().wait()
        write(self, part)
        with lock:
            finished[0] += 1
            if finished[0] < count:
                return
            database = self._owner._store
            database.flush()
            quads = sum(1 for _ in database.quads_for_pattern(None, None, None, self._target))
            print("partial", quads, flush=True)
        threading.Event().wait()

    local._BulkWriter.write = held_back  # type: ignore[method-assign]


def _run_bulk(brain: LabBrain, count: int, source: str) -> None:
    hold_bulk_writes_after(count)
    brain.load(source)


def main(argv: list[str]) -> int:
    mode, store, count = argv[1], argv[2], int(argv[3])
    brain = LabBrain(Settings(store=store))
    print("ready", flush=True)
    if mode == "bulk":
        _run_bulk(brain, count, argv[4])
    else:
        runners: dict[str, Any] = {"agent": _run_agent, "ledger": _run_ledger}
        runners[mode](brain, count)
    brain.close()
    print("finished", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
