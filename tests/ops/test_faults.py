"""Faults: kill -9 during every kind of write, a damaged text index, a second writer beside a
live MCP server, and a full disk during a load.

Each test runs the faulting work in a child process (the real ``labbrain`` command, or
``tests/ops/fault_child.py``, which prints one line per write after it returned), kills it or
lets it fail, then reopens the store and asserts exact counts: every acknowledged write is
there, the one in flight is there completely or not at all, nothing partial is visible.
kill -9 during a first load and a reload is tested in test_kill.py, during an ingest task's
write then resumed in test_tasks.py.
"""

from __future__ import annotations

import array
import asyncio
import errno
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import termios
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from pyoxigraph import Literal, NamedNode

from conftest import ROOT, SAMPLE, SAMPLE_DCT, SAMPLE_GRAPH, settings_for
from fault_child import (
    AGENT,
    DOMAIN,
    KINDS,
    PROJECT_SLUG,
    AgentTools,
    agent_write,
    content_of,
    key_of,
    ledger_plan,
    prepare_agent_store,
)
from generate import write_export
from helpers import InProcessTools, fingerprint
from labbrain.cli import main
from labbrain.core import INDEX_FILE, LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import TextIndex
from labbrain.index.vectors import VECTORS_FILE, digest_of, node_text
from labbrain.ops.workflows import task_runner
from labbrain.rdf.namespaces import (
    AGENT_PREFIX,
    CLAIMS_GRAPH,
    DOMAIN_PREFIX,
    IDEMPOTENCY_PREFIX,
    LB,
    PROV,
    RDF,
    SIOC,
    SYSTEM_GRAPH,
    TASKS_GRAPH,
)
from labbrain.store import local as store_module
from labbrain.store.journal import JOURNAL_DIR
from labbrain.store.local import OxigraphStore
from labbrain.tasks.ledger import STATUSES, TaskLedger

pytestmark = pytest.mark.subprocess

LABBRAIN = [sys.executable, "-m", "labbrain"]
CHILD = [sys.executable, str(Path(__file__).with_name("fault_child.py"))]
#: Lines this long fill a pipe within a few writes: the child then blocks printing one (after
#: the write it reports committed).
PIPE_FULL = {"FAULT_CHILD_PAD": "16000"}
BIG_GRAPH = "urn:labbrain:dataset:bench-20000"
PROJECT_GRAPH = "urn:labbrain:project:" + PROJECT_SLUG
DOMAIN_GRAPH = DOMAIN_PREFIX + DOMAIN
#: Where each kind of agent write lands, and its class.
RESOURCES = {
    "finding": (PROJECT_GRAPH, LB + "Finding"),
    "memory": (DOMAIN_GRAPH, LB + "MemoryNode"),
    "proposition": (CLAIMS_GRAPH, LB + "Proposition"),
}
QUERIES = ("membrane tension actin", "clathrin pit lifetime", "osmotic shock")
SAMPLE_UIDS = ("D6SNboBqO", "n2rGK8We9", "24MbeSyHQ")


# ---------------------------------------------------------------------------------------
# Children and kills
# ---------------------------------------------------------------------------------------


class Child:
    """A child process whose stdout is read line by line, with a deadline."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            args,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        assert self.process.stdout is not None
        self._fd = self.process.stdout.fileno()
        self._buffer = b""
        self.lines: list[str] = []

    def read_line(self, deadline: float) -> str | None:
        """The next line, or None at the end of the output."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no output from the child in time: {self.lines[-3:]}"
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    def wait_for_lines(self, count: int, timeout: float = 120) -> None:
        """Read until ``count`` lines after ``ready`` were printed."""
        deadline = time.monotonic() + timeout
        while len([line for line in self.lines if line != "ready"]) < count:
            line = self.read_line(deadline)
            assert line is not None and line != "finished", f"the child ended: {self.lines}"

    def wait_until_blocked(self, lines: int, timeout: float = 120) -> None:
        """Stop reading and wait until the child (started with FAULT_CHILD_PAD) is blocked
        writing to its full pipe after ``lines`` lines: in the middle of the next line, i.e.
        after the write that line reports."""
        deadline = time.monotonic() + timeout
        pad = int(PIPE_FULL["FAULT_CHILD_PAD"])
        pending = array.array("i", [0])
        since, seen = time.monotonic(), -1
        while True:
            fcntl.ioctl(self._fd, termios.FIONREAD, pending)
            if pending[0] != seen:
                since, seen = time.monotonic(), pending[0]
            if seen >= lines * pad:
                wchan = Path(f"/proc/{self.process.pid}/wchan").read_text()
                if "pipe_write" in wchan:
                    return
                if not wchan.strip("0") and time.monotonic() - since > 1:
                    return  # no kernel symbols here: a full pipe that stopped growing
            assert self.process.poll() is None, "the child ended"
            assert time.monotonic() < deadline, f"the pipe never filled ({seen} bytes)"
            time.sleep(0.01)

    def kill(self) -> list[str]:
        """SIGKILL the child (it must still be running) and return every line it printed."""
        assert self.process.poll() is None, "the child finished before it could be killed"
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        assert self.process.returncode == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while self.read_line(deadline) is not None:
            pass
        return [line for line in self.lines if line not in ("ready", "finished")]


def kill_when(child: Child, condition: Callable[[], bool], timeout: float = 300) -> None:
    """Poll ``condition`` every 5 ms and SIGKILL the child as soon as it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert child.process.poll() is None, "the child ended before the kill point"
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.005)
    child.kill()


def wal_size(store: Path, name: str = INDEX_FILE) -> int:
    """Size of the SQLite write-ahead log of ``name`` in the store (-1: none)."""
    try:
        return (store / (name + "-wal")).stat().st_size
    except FileNotFoundError:
        return -1


def copy_store(source: Path, tmp_path: Path) -> Path:
    """A copy of a closed store directory (a valid store: see test_store.py)."""
    target = tmp_path / "store"
    shutil.copytree(source, target)
    return target


# ---------------------------------------------------------------------------------------
# 1. kill -9 during agent writes
# ---------------------------------------------------------------------------------------


def resources(brain: LabBrain, kind: str) -> dict[str, str]:
    """IRI -> content of every stored resource of ``kind``."""
    graph, cls = RESOURCES[kind]
    found: dict[str, str] = {}
    for quad in brain.store.quads(graph, predicate=NamedNode(RDF + "type")):
        if quad.object == NamedNode(cls):
            subject = quad.subject
            assert isinstance(subject, NamedNode)
            contents = list(brain.store.quads(graph, subject, NamedNode(SIOC + "content")))
            assert len(contents) == 1
            found[subject.value] = contents[0].object.value
    return found


def shape(brain: LabBrain, graph: str, subject: str) -> list[str]:
    """The predicates of ``subject`` in ``graph``, sorted, with repeats."""
    return sorted(q.predicate.value for q in brain.store.quads(graph, NamedNode(subject)))


def key_subject(key: str) -> str:
    return IDEMPOTENCY_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def number_of(content: str) -> int:
    """The write number a stored content names (see fault_child.content_of)."""
    return int(content.split(" ", 2)[1].rstrip(":"))


@pytest.fixture(scope="module")
def agent_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed store with the sample, the fault project and the fault domain."""
    store = tmp_path_factory.mktemp("agent") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        prepare_agent_store(brain)
    return store


@pytest.fixture(scope="module")
def agent_shapes(agent_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The predicates of one resource of each kind and of its key record, written without a
    fault (on a copy of the store)."""
    store = copy_store(agent_store, tmp_path_factory.mktemp("agent-reference"))
    with LabBrain(settings_for(store, agent_name=AGENT)) as brain:
        tools = AgentTools.open(brain)
        written = [agent_write(tools, number) for number in range(len(KINDS))]
        shapes = {
            kind: shape(brain, RESOURCES[kind][0], iri)
            for kind, iri in zip(KINDS, written, strict=True)
        }
        shapes["key"] = shape(brain, SYSTEM_GRAPH, key_subject(key_of(0)))
    return shapes


def test_reference_shapes_carry_provenance_and_the_key_record(agent_shapes: Any) -> None:
    for kind in KINDS:
        for predicate in ("generatedAtTime", "wasAttributedTo"):
            assert agent_shapes[kind].count(PROV + predicate) == 1
        assert agent_shapes[kind].count(LB + "session") == 1
    assert agent_shapes["finding"].count(PROV + "wasDerivedFrom") == 1
    assert agent_shapes["finding"].count(LB + "tag") == 2
    assert len(agent_shapes["key"]) == 7  # type, key, tool, digest, result, time, session


def start_and_kill(args: list[str], kill_at: str) -> list[str]:
    """Run a fault child and SIGKILL it once it acknowledged N writes (``after-N``), or while
    it is blocked acknowledging a committed write (``committed-unacknowledged``); return
    the lines it acknowledged."""
    if kill_at == "committed-unacknowledged":
        child = Child(args, PIPE_FULL)
        child.wait_until_blocked(4)
    else:
        child = Child(args)
        child.wait_for_lines(int(kill_at.removeprefix("after-")))
    return child.kill()


KILL_POINTS = ["after-1", "after-5", "after-13", "committed-unacknowledged"]


@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_kill_during_agent_writes(
    tmp_path: Path, agent_store: Path, agent_shapes: Any, kill_at: str
) -> None:
    store = copy_store(agent_store, tmp_path)
    lines = start_and_kill([*CHILD, "agent", str(store), "500"], kill_at)
    acked = {int(n): iri for n, iri in (line.split() for line in lines)}
    assert sorted(acked) == list(range(len(acked)))
    in_flight = len(acked)
    with LabBrain(settings_for(store, agent_name=AGENT)) as brain:
        assert not (store / JOURNAL_DIR).exists()
        stored = {kind: resources(brain, kind) for kind in KINDS}
        for kind in KINDS:
            expected = {iri for n, iri in acked.items() if KINDS[n % len(KINDS)] == kind}
            extra = set(stored[kind]) - expected
            assert expected <= set(stored[kind])
            may_have_landed = KINDS[in_flight % len(KINDS)] == kind
            assert len(extra) <= (1 if may_have_landed else 0), extra
            for iri, content in stored[kind].items():
                number = number_of(content)
                assert content == content_of(number)
                assert acked.get(number, iri) == iri
                assert number in acked or number == in_flight
                # complete: every triple of the resource, provenance included
                assert shape(brain, RESOURCES[kind][0], iri) == agent_shapes[kind]
                attributed = brain.store.quads(
                    RESOURCES[kind][0], NamedNode(iri), NamedNode(PROV + "wasAttributedTo")
                )
                assert [q.object.value for q in attributed] == [AGENT_PREFIX + AGENT]
                # and its idempotency-key record, naming it, landed in the same transaction
                subject = key_subject(key_of(number))
                assert shape(brain, SYSTEM_GRAPH, subject) == agent_shapes["key"]
                [result] = brain.store.quads(
                    SYSTEM_GRAPH, NamedNode(subject), NamedNode(LB + "result")
                )
                assert iri.rsplit(":", 1)[-1] in result.object.value
        total = sum(len(found) for found in stored.values())
        if kill_at == "committed-unacknowledged":
            assert total == len(acked) + 1  # the write whose line was cut off landed whole
        keys = [
            q
            for q in brain.store.quads(SYSTEM_GRAPH, predicate=NamedNode(RDF + "type"))
            if q.object == NamedNode(LB + "IdempotencyKey")
        ]
        assert len(keys) == total  # no key without its resource, no resource without its key
        assert total in (len(acked), len(acked) + 1)
        findings = [n for n in acked if KINDS[n % len(KINDS)] == "finding"]
        landed = len(stored["finding"])
        assert landed in (len(findings), len(findings) + 1)
        # log positions and proposition sequence numbers stay gapless
        positions = sorted(
            int(q.object.value)
            for q in brain.store.quads(PROJECT_GRAPH, predicate=NamedNode(LB + "logPosition"))
        )
        assert positions == list(range(1, landed + 1))
        sequences = sorted(
            int(q.object.value)
            for q in brain.store.quads(CLAIMS_GRAPH, predicate=NamedNode(LB + "sequence"))
        )
        assert sequences == list(range(1, len(stored["proposition"]) + 1))
        # the domain was touched by each memory write in its transaction: one access time
        accessed = brain.store.quads(DOMAIN_GRAPH, predicate=NamedNode(LB + "lastAccessed"))
        assert len(list(accessed)) == 1
        # replaying the unacknowledged key gives exactly one resource; an acknowledged one
        # answers its first result and writes nothing
        tools = AgentTools.open(brain)
        kind = KINDS[in_flight % len(KINDS)]
        before = set(stored[kind])
        replayed = agent_write(tools, in_flight)
        after = resources(brain, kind)
        assert [iri for iri, c in after.items() if c == content_of(in_flight)] == [replayed]
        assert set(after) == before | {replayed}
        first_kind = resources(brain, KINDS[0])
        assert agent_write(tools, 0) == acked[0]
        assert resources(brain, KINDS[0]) == first_kind


# ---------------------------------------------------------------------------------------
# 2. kill -9 while the task ledger is being written
# ---------------------------------------------------------------------------------------


def _running(status: str) -> bool:
    return status in ("pending", "in_progress")


@pytest.mark.parametrize("kill_at", ["after-4", "after-45", "committed-unacknowledged"])
def test_kill_while_the_task_ledger_is_written(
    tmp_path: Path, agent_store: Path, kill_at: str
) -> None:
    store = copy_store(agent_store, tmp_path)
    tasks = 200
    plan = ledger_plan(tasks)
    args = [*CHILD, "ledger", str(store), str(tasks)]
    lines = [line.split() for line in start_and_kill(args, kill_at)]
    assert [(int(n), status) for n, _, status in lines] == plan[: len(lines)]
    last: dict[int, str] = {}
    checkpoints: Counter[int] = Counter()
    for n, _, status in lines:
        last[int(n)] = status
        checkpoints[int(n)] += 1
    in_flight = plan[len(lines)]
    with LabBrain(settings_for(store)) as brain:
        # every stored state parses (the sample's own load task aside)
        states = [s for s in TaskLedger(brain.store).all() if "number" in s.params]
        by_number = {state.params["number"]: state for state in states}
        assert len(by_number) == len(states)
        marked = {s.task_id: s for s in brain.interrupted_tasks}
        landed = False
        for number, state in by_number.items():
            assert state.status in STATUSES
            # each checkpoint adds one history entry (creation: one), reopening one more
            entries = len(state.history) - (state.task_id in marked)
            assert entries in (checkpoints[number], checkpoints[number] + 1)
            if entries == checkpoints[number] + 1:
                assert number == in_flight[0]  # only the write in flight may have landed
                written = in_flight[1]
                landed = True
            else:
                written = last[number]
            assert state.status == ("interrupted" if _running(written) else written)
            # exactly the tasks left pending or in progress were marked interrupted
            assert (state.task_id in marked) == _running(written)
            # the queryable triples agree with the JSON state: no half-written checkpoint
            subject = NamedNode("urn:labbrain:task:" + state.task_id)
            facts = {
                q.predicate.value.removeprefix(LB): q.object.value
                for q in brain.store.quads(TASKS_GRAPH, subject)
                if isinstance(q.object, Literal)
            }
            assert facts["status"] == state.status
            assert int(facts["progressDone"]) == state.progress.done
            assert len(list(brain.store.quads(TASKS_GRAPH, subject, NamedNode(LB + "state")))) == 1
        assert set(by_number) == set(last) | ({in_flight[0]} if landed else set())
        assert len(marked) == len([s for s in states if s.task_id in marked])
        for state in marked.values():
            assert state.history[-1].message.startswith("interrupted: the process running it")
        if kill_at == "committed-unacknowledged":
            assert landed  # the checkpoint whose line was cut off is there, whole


# ---------------------------------------------------------------------------------------
# 3. kill -9 during `labbrain reindex` on a 20k store
# ---------------------------------------------------------------------------------------


def answers(brain: LabBrain, uids: tuple[str, ...]) -> dict[str, Any]:
    """What readers of the index see: search hits with snippets and scores, and nodes.

    Scores are compared to four decimals: the search engine's writer threads share the
    documents out between segments in no fixed way, which moves a score in its seventh
    digit (``5.00177145`` against ``5.001770973``)."""
    reader = DiscourseReader(brain)
    return {
        "search": {
            text: [
                (h.node.iri, h.snippet, round(h.score, 4))
                for h in brain.search(SearchQuery(text, limit=20)).hits
            ]
            for text in QUERIES
        },
        "nodes": {uid: reader.get_node(uid).model_dump() for uid in uids},
        "count": brain.index.count(),
    }


@pytest.fixture(scope="module")
def export_20k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 20,000-node export (26 MB)."""
    export = tmp_path_factory.mktemp("exports") / "dg-20000.jsonld"
    write_export(export, 20_000, seed=7)
    return export


@pytest.fixture(scope="module")
def store_20k(
    tmp_path_factory: pytest.TempPathFactory, export_20k: Path
) -> tuple[Path, tuple[str, ...], Any]:
    """A closed store holding the 20,000-node export, some of its uids, and the answers of
    its intact index."""
    export = export_20k
    store = tmp_path_factory.mktemp("big") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(export))
        nodes, _ = brain.index.nodes(limit=3)
        uids = tuple(node.uid for node in nodes)
        return store, uids, answers(brain, uids)


def _reindex_task_in_step(store: Path, step: str) -> bool:
    """True when the ledger (read through a fresh read-only view) shows a reindex task
    working on ``step``."""
    view = OxigraphStore(str(store), read_only=True)
    try:
        return any(
            s.kind == "reindex" and s.status == "in_progress" and s.current_step == step
            for s in TaskLedger(view).all()
        )
    finally:
        view.close()


@pytest.mark.slow
@pytest.mark.parametrize("point", ["reading", "writing", "rebuilding"])
def test_kill_during_reindex(tmp_path: Path, store_20k: Any, point: str) -> None:
    """reading: the index step is reading the store; writing: its SQLite transaction is
    under way; rebuilding: the index file was deleted and the open is refilling it."""
    source, uids, before = store_20k
    store = copy_store(source, tmp_path)
    if point == "rebuilding":
        (store / INDEX_FILE).unlink()
    child = Child([*LABBRAIN, "--store", str(store), "reindex"])
    if point == "reading":
        kill_when(child, lambda: _reindex_task_in_step(store, "index"))
        assert wal_size(store) <= 0  # nothing of the new index was written yet
    else:
        kill_when(child, lambda: wal_size(store) > 4_000_000)
    with LabBrain(settings_for(store)) as brain:
        assert brain.index_sync is not None
        if point == "rebuilding":
            # the killed rebuild left no trace: the index is seen as stale and rebuilt
            assert brain.index_sync.reindexed == {BIG_GRAPH: 20_000}
            assert brain.interrupted_tasks == []  # killed during the open, before the task
        else:
            # the killed transaction rolled back: the previous index is intact and current
            assert brain.index_sync.reindexed == {} and not brain.index_sync.rebuilt_file
            [task] = brain.interrupted_tasks
            assert (task.kind, task.current_step, task.last_completed_step) == (
                "reindex",
                "index",
                "scan",
            )
        assert brain.index.stale_graphs(brain.store) == ([], [])
        assert answers(brain, uids) == before
        if point == "writing":
            final = task_runner(brain).resume(task.task_id)
            assert final.status == "completed"
            assert final.results["indexed"] == {BIG_GRAPH: 20_000}
            assert answers(brain, uids) == before


# ---------------------------------------------------------------------------------------
# 4. kill -9 during `labbrain embed`
# ---------------------------------------------------------------------------------------

EMBED_NODES = 40
EMBED_BATCH = 4
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_HOME": "/nonexistent/labbrain-test-hf-home"}


def vector_rows(store: Path) -> list[tuple[str, str, str, bytes]]:
    """(graph, iri, digest, vector) of every stored vector, read without writing."""
    path = store / VECTORS_FILE
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute("SELECT graph, iri, digest, vector FROM vectors").fetchall()
    except sqlite3.OperationalError:
        return []  # the file exists but its tables are not created yet
    finally:
        db.close()


def check_vectors(brain: LabBrain, store: Path) -> int:
    """Assert every stored vector is whole and was computed from its node's current text;
    return how many there are."""
    nodes, total = brain.index.nodes(limit=1000)
    texts = {
        (n.graph, n.iri): node_text(n.title, brain.index.content(n.graph, n.iri)) for n in nodes
    }
    rows = vector_rows(store)
    for graph, iri, digest, blob in rows:
        assert digest == digest_of(texts[(graph, iri)])
        vector = np.frombuffer(blob, dtype=np.float32)
        assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-4
    assert len({(g, i) for g, i, _, _ in rows}) == len(rows) <= total
    return len(rows)


@pytest.mark.slow
def test_kill_during_embed_then_resume(tmp_path: Path) -> None:
    export = tmp_path / "dg-40.jsonld"
    write_export(export, EMBED_NODES, seed=3)
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(export))
        assert brain.index.count() == EMBED_NODES
    env = {**OFFLINE, "LABBRAIN_EMBEDDING_BATCH_SIZE": str(EMBED_BATCH)}
    child = Child([*LABBRAIN, "--store", str(store), "embed"], env)
    kill_when(child, lambda: len(vector_rows(store)) >= 2 * EMBED_BATCH)
    with LabBrain(settings_for(store)) as brain:
        kept = check_vectors(brain, store)
        assert kept % EMBED_BATCH == 0 and 2 * EMBED_BATCH <= kept < EMBED_NODES
        [task] = brain.interrupted_tasks
        assert (task.kind, task.current_step) == ("embed", "embed")
    resumed = subprocess.run(
        [*LABBRAIN, "--store", str(store), "tasks", "resume", task.task_id, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    assert final["status"] == "completed"
    results = final["results"]
    assert (results["toEmbed"], results["embedded"]) == (EMBED_NODES - kept, EMBED_NODES - kept)
    assert (results["unchanged"], results["removed"], results["vectors"]) == (kept, 0, EMBED_NODES)
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert check_vectors(brain, store) == EMBED_NODES  # one vector per node


# ---------------------------------------------------------------------------------------
# 5. a deleted, truncated or overwritten text index
# ---------------------------------------------------------------------------------------


def _damage(path: Path, how: str) -> None:
    size = path.stat().st_size
    if how == "deleted":
        path.unlink()
    elif how == "truncated":
        os.truncate(path, size // 2)
    elif how == "garbage":
        path.write_bytes(os.urandom(size))
    else:  # "damaged-pages": intact header and schema, three pages of noise in the middle
        with path.open("r+b") as handle:
            handle.seek(size // 3 // 4096 * 4096)
            handle.write(os.urandom(3 * 4096))


def _hits(printed: str) -> list[dict[str, Any]]:
    """``labbrain search --json``'s hits, scores to four decimals (see :func:`answers`)."""
    hits: list[dict[str, Any]] = json.loads(printed)
    return [{**hit, "score": round(hit["score"], 4)} for hit in hits]


def _cli_search(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LABBRAIN, "--store", str(store), "search", QUERIES[0], "--json", "--limit", "20"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, str]:
    """A closed store holding the sample, its answers, and `labbrain search --json`'s."""
    store = tmp_path_factory.mktemp("sample") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        before = answers(brain, SAMPLE_UIDS)
    searched = _cli_search(store)
    assert searched.returncode == 0 and searched.stderr == ""
    return store, before, searched.stdout


@pytest.mark.parametrize("how", ["deleted", "truncated", "garbage", "damaged-pages"])
def test_a_damaged_text_index_is_detected_and_rebuilt(
    tmp_path: Path, sample_store: Any, how: str
) -> None:
    source, before, searched = sample_store
    store = copy_store(source, tmp_path)
    _damage(store / INDEX_FILE, how)
    # A read-only command never writes: it sees an empty index and says it is out of date.
    stale = _cli_search(store)
    assert stale.returncode == 0, stale.stderr
    assert json.loads(stale.stdout) == []
    assert stale.stderr.strip() == (
        "warning: the text index is out of date; run `labbrain reindex`"
    )
    # The next writable open detects the damage and rebuilds the index from the store.
    with LabBrain(settings_for(store)) as brain:
        assert brain.index_sync is not None
        assert brain.index_sync.reindexed == {SAMPLE_GRAPH: 150}
        assert brain.index_sync.rebuilt_file == (how in ("truncated", "garbage", "damaged-pages"))
        assert answers(brain, SAMPLE_UIDS) == before
    again = _cli_search(store)
    assert (again.returncode, again.stderr) == (0, "")
    assert _hits(again.stdout) == _hits(searched)


# ---------------------------------------------------------------------------------------
# 6. a second writer beside a live `labbrain mcp` doing writes
# ---------------------------------------------------------------------------------------


def _finding_shapes(brain: LabBrain) -> list[list[str]]:
    graph = "urn:labbrain:project:membrane-tension"
    return [
        shape(brain, graph, q.subject.value)
        for q in brain.store.quads(graph, predicate=NamedNode(RDF + "type"))
        if q.object == NamedNode(LB + "Finding")
    ]


def test_a_second_writer_is_refused_and_the_live_server_keeps_writing(
    tmp_path: Path, sample_store: Any
) -> None:
    source, _, _ = sample_store
    store = copy_store(source, tmp_path)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "labbrain", "--store", str(store), "mcp", "--toolsets", "all"],
    )

    def finding(n: int) -> dict[str, Any]:
        return {"content": f"finding {n}", "sourceUid": SAMPLE_UIDS[n % 3], "tags": ["t"]}

    def second_writer(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*LABBRAIN, "--store", str(store), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    async def session() -> tuple[list[Any], list[Any], str, Any, Any]:
        async with Client(server, read_timeout_seconds=120) as first:
            calls = [await first.call_tool("create_project", {"name": "Membrane tension"})]
            calls += [await first.call_tool("log_finding", finding(n)) for n in range(2)]
            holder = (store / "writer.pid").read_text().strip()  # the server's pid
            assert holder.isdigit() and os.path.isdir(f"/proc/{holder}")
            refused = [
                second_writer("load", str(SAMPLE_DCT)),
                second_writer("reindex"),
                second_writer("drop", "akamatsulab-sample"),
            ]
            # a second MCP server comes up read-only: it offers no tool that writes
            async with Client(server, read_timeout_seconds=120) as second:
                offered = {tool.name for tool in (await second.list_tools()).tools}
                denied = await second.call_tool("log_finding", finding(9))
                assert "log_finding" not in offered and "list_findings" in offered
            calls += [await first.call_tool("log_finding", finding(n)) for n in range(2, 4)]
            listed = await first.call_tool("list_findings", {})
            return calls, refused, holder, denied, listed

    calls, refused, holder, denied, listed = asyncio.run(session())
    for call in calls:
        assert not call.is_error, call.content[0].text
    assert [c.structured_content["findings"] for c in calls[1:]] == [1, 2, 3, 4]
    for result in refused:
        assert result.returncode == 3
        assert result.stdout == ""
        assert result.stderr.strip() == (
            f"error: store {store} is locked by another labbrain process (held by pid "
            f"{holder}); stop that process or use a read-only command"
        )
    assert denied.is_error and "Unknown tool: log_finding" in denied.content[0].text
    assert listed.structured_content["total"] == 4
    with LabBrain(settings_for(store), read_only=True) as brain:
        shapes = _finding_shapes(brain)
        assert len(shapes) == 4 and all(s == shapes[0] for s in shapes)
        assert [d["graph"] for d in brain.datasets()] == [SAMPLE_GRAPH]


# ---------------------------------------------------------------------------------------
# 7. a full disk during a load
# ---------------------------------------------------------------------------------------

DISK_FULL = (
    "error: no space left on the device holding the store; the write was undone and the "
    "store is unchanged: free some space and try again"
)
#: Set in the run of the disk-full test inside a user namespace (not LABBRAIN_*: the
#: tests clear those).
IN_NAMESPACE = "FAULTS_IN_USER_NAMESPACE"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LABBRAIN, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _mounted(directory: Path) -> bool:
    return any(
        line.split()[1] == str(directory) for line in Path("/proc/mounts").read_text().splitlines()
    )


def _disk_full_scenario(disk: Path, export: Path) -> None:
    """On the (small, empty) file system at ``disk``: a store with the sample, a filler
    file, a load too big for the space left, then the filler removed and a small load."""
    store = disk / "store"
    assert _run("--store", str(store), "load", str(SAMPLE)).returncode == 0
    filler = disk / "filler"
    filler.write_bytes(b"\0" * 2_000_000)
    with LabBrain(settings_for(store), read_only=True) as brain:
        before = fingerprint(brain)
    failed = _run("--store", str(store), "load", str(export))
    assert (failed.returncode, failed.stdout, failed.stderr.strip()) == (3, "", DISK_FULL)
    assert not (store / JOURNAL_DIR).exists()
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert fingerprint(brain) == before
        assert brain.index.count() == 150
        assert brain.index.stale_graphs(brain.store) == ([], [])
        [task, _] = TaskLedger(brain.store).all()
        assert (task.status, task.current_step) == ("error", "write")
        assert [e.message for e in task.errors] == [DISK_FULL.removeprefix("error: ")]
    searched = _run("--store", str(store), "search", QUERIES[0], "--json")
    assert searched.returncode == 0 and len(json.loads(searched.stdout)) == 10
    filler.unlink()
    small = _run("--store", str(store), "load", str(SAMPLE_DCT), "--json")
    assert small.returncode == 0, small.stderr
    assert json.loads(small.stdout)[0]["nodes"] == 8
    with LabBrain(settings_for(store), read_only=True) as brain:
        after = fingerprint(brain)
        assert after[SAMPLE_GRAPH] == before[SAMPLE_GRAPH]
        assert after["urn:labbrain:dataset:dct-sample"][0] == 186
        assert brain.index.count() == 158


def _inject_disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every bulk write of this process write its part, then fail with ENOSPC."""
    original = store_module._BulkWriter.write

    def full(self: Any, part: Any) -> None:
        original(self, part)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module._BulkWriter, "write", full)


def _injected_disk_full_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk-full scenario without a small file system: ENOSPC injected into the load."""
    store = tmp_path / "store"
    runner = CliRunner()
    assert runner.invoke(main, ["--store", str(store), "load", str(SAMPLE)]).exit_code == 0
    with LabBrain(settings_for(store), read_only=True) as brain:
        before = fingerprint(brain)
    with monkeypatch.context() as patch:
        _inject_disk_full(patch)
        failed = runner.invoke(main, ["--store", str(store), "load", str(SAMPLE_DCT)])
    assert (failed.exit_code, failed.stderr.strip()) == (3, DISK_FULL)
    assert not (store / JOURNAL_DIR).exists()
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert fingerprint(brain) == before
    assert runner.invoke(main, ["--store", str(store), "load", str(SAMPLE_DCT)]).exit_code == 0


@pytest.mark.slow
def test_disk_full_during_a_load(
    tmp_path: Path, export_20k: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real full disk: a 10 MB tmpfs, mounted here (root), else inside a user namespace;
    only if neither is allowed, ENOSPC is injected instead (with a warning saying so)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=10M", "tmpfs", str(disk)]
    mounted = subprocess.run(mount, capture_output=True, text=True)
    if mounted.returncode != 0:
        assert not os.environ.get(IN_NAMESPACE), mounted.stderr
        # Not allowed here (no root): run this test again inside a user namespace, where
        # mounting a tmpfs is allowed.
        inner = subprocess.run(
            [
                *("unshare", "--user", "--map-root-user", "--mount"),
                *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
                f"{Path(__file__)}::test_disk_full_during_a_load",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, IN_NAMESPACE: "1"},
        )
        if "unshare failed" not in inner.stderr:
            print(f"mount refused ({mounted.stderr.strip()}): ran inside a user namespace")
            assert inner.returncode == 0, inner.stdout[-3000:] + inner.stderr[-2000:]
            return
        warnings.warn(
            f"no tmpfs: mount refused ({mounted.stderr.strip()}) and unshare refused "
            f"({inner.stderr.strip()}); the disk-full scenario ran with ENOSPC injected",
            stacklevel=1,
        )
        _injected_disk_full_scenario(tmp_path, monkeypatch)
        return
    try:
        _disk_full_scenario(disk, export_20k)
    finally:
        subprocess.run(["umount", str(disk)], check=False)
        if _mounted(disk):
            subprocess.run(["umount", "-l", str(disk)], check=False)
    assert not _mounted(disk)


def test_injected_disk_full_during_a_load_is_one_clean_error(
    tmp_path: Path, sample_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC from the bulk writer after it wrote its part: the CLI prints one line, and an
    MCP load task records the error; the store, its index and the journal are as before."""
    source, before_answers, _ = sample_store
    store = copy_store(source, tmp_path)
    exports = tmp_path / "exports"
    exports.mkdir()
    shutil.copy(SAMPLE_DCT, exports / "dct.jsonld")
    with LabBrain(settings_for(store), read_only=True) as brain:
        before = fingerprint(brain)
    _inject_disk_full(monkeypatch)
    result = CliRunner().invoke(main, ["--store", str(store), "load", str(exports / "dct.jsonld")])
    assert result.exit_code == 3, result.exception
    assert (result.stdout, result.stderr.strip()) == ("", DISK_FULL)
    assert not (store / JOURNAL_DIR).exists()
    with LabBrain(settings_for(store, load_dirs=[exports])) as brain:
        tools = InProcessTools(brain)
        message = tools.error("load_dataset", path="dct.jsonld", waitSeconds=60)
        assert message.startswith("task ") and " (ingest) failed during write: " in message
        assert DISK_FULL.removeprefix("error: ") in message
        task_id = message.split()[1]
        task = tools.ok("get_task", taskId=task_id)
        assert task["status"] == "error"
        assert [e["message"] for e in task["errors"]] == [DISK_FULL.removeprefix("error: ")]
        assert fingerprint(brain) == before
        assert answers(brain, SAMPLE_UIDS) == before_answers
        assert brain.index.stale_graphs(brain.store) == ([], [])
        failed = [s for s in TaskLedger(brain.store).all() if s.status == "error"]
        assert len(failed) == 2 and all(s.current_step == "write" for s in failed)
    assert not (store / JOURNAL_DIR).exists()


def test_injected_disk_full_in_the_text_index_during_a_load(
    tmp_path: Path, sample_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "database or disk full" while the load indexes the new nodes: the same one
    line, the store write is undone and the index holds what it held."""
    source, before_answers, _ = sample_store
    store = copy_store(source, tmp_path)
    with LabBrain(settings_for(store), read_only=True) as brain:
        before = fingerprint(brain)
    original = TextIndex._delete_graph
    calls = []

    def full(self: TextIndex, graph: str) -> None:
        calls.append(graph)
        if len(calls) == 1:  # the load's own index write; the clean-up after it works
            raise sqlite3.OperationalError("database or disk full")
        original(self, graph)

    with monkeypatch.context() as patch:
        patch.setattr(TextIndex, "_delete_graph", full)
        result = CliRunner().invoke(main, ["--store", str(store), "load", str(SAMPLE_DCT)])
    assert (result.exit_code, result.stderr.strip()) == (3, DISK_FULL), result.exception
    assert calls[0] == "urn:labbrain:dataset:dct-sample"
    with LabBrain(settings_for(store)) as brain:
        assert fingerprint(brain) == before
        assert brain.index.count() == 150 and brain.index_sync is not None
        assert not brain.index_sync.changed
        assert answers(brain, SAMPLE_UIDS) == before_answers


class _FullDevice:
    """A pyoxigraph store whose transactional writes fail as on a full device."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise OSError(f"IO error: {os.strerror(errno.ENOSPC)}: While appending to file: 000009.log")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_injected_disk_full_during_an_agent_write_is_a_tool_error(
    tmp_path: Path, sample_store: Any
) -> None:
    """pyoxigraph's IO error (no errno, the system's message only) during a transaction: the
    tool answers isError with the same message, and nothing was written."""
    source, _, _ = sample_store
    store = copy_store(source, tmp_path)
    with LabBrain(settings_for(store)) as brain:
        tools = InProcessTools(brain)
        tools.ok("create_project", name="Membrane tension")
        before = fingerprint(brain)
        embedded = brain.store
        assert isinstance(embedded, OxigraphStore)
        database = embedded._store
        embedded._store = _FullDevice(database)  # type: ignore[assignment]
        message = tools.error("log_finding", content="x", sourceUid=SAMPLE_UIDS[0])
        assert message == DISK_FULL.removeprefix("error: ")
        embedded._store = database
        assert fingerprint(brain) == before
        assert tools.ok("log_finding", content="x", sourceUid=SAMPLE_UIDS[0])["findings"] == 1
