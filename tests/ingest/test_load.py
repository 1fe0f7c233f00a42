"""Concurrency under load: many assistants reading and writing one store at once.

Two end-to-end runs of the shared workload (``bench/concurrency_mix.py``) on a 20,000-node
store, 8 clients for 60 s each: on one ``labbrain serve --mcp`` (streamable HTTP), and on 8
``labbrain mcp --endpoint`` stdio servers writing through one ``labbrain serve
--allow-update``. Every write carries its own idempotency key and a share is sent twice (again
after the answer, or at the same moment from another client). Nothing here depends on time:
the runs assert that no call failed and that the store holds exactly one resource per key.

The unit tests below pin the mechanism that makes the second run hold: two writers (two
processes, on one remote store) whose writes interleave. Each agent write is a conditional
update on the store's write stamp, planned again when another write landed first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel
from pyoxigraph import Literal, NamedNode, Quad

import labbrain.agent.writer as agent_module
from concurrency_mix import (
    READS,
    WRITES,
    Mix,
    Outcome,
    Targets,
    build_store,
    copy_store,
    pick_targets,
    run_endpoint,
    run_http,
)
from conftest import BACKENDS, MakeSettings
from labbrain.agent.writer import (
    LAST_WRITE,
    WRITE_STAMP,
    WRITE_STAMP_SUBJECT,
    AgentWriter,
    WritePlan,
)
from labbrain.core import LabBrain
from labbrain.errors import WriteConflict
from labbrain.rdf.namespaces import LB, SYSTEM_GRAPH
from labbrain.store.base import QuadStore

#: The issue's figures: 8 concurrent clients for 60 s on a 20,000-node store.
CLIENTS = 8
SECONDS = 60.0
NODES = 20_000


# ---------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Targets]:
    """A 20,000-node generated export (seed 7) loaded once; each run writes a copy."""
    work = tmp_path_factory.mktemp("load")
    store = work / "store"
    build_store(store, NODES, seed=7, work=work)
    return store, pick_targets(store)


def assert_exact(outcome: Outcome) -> None:
    """No call failed, and the store holds one resource per key sent, by the tools' counts
    and by SPARQL; retries (also concurrent ones) got the first answer."""
    report = outcome.report
    assert report.error_count == 0, report.errors
    assert {c.tool for c in outcome.calls} == set(READS) | set(WRITES)
    assert all(report.keys.values()), report.keys
    assert report.retried > 0 and report.retried_concurrently > 0
    assert report.replay_mismatches == []
    assert report.by_tools == report.keys
    assert report.by_sparql == report.keys
    assert report.lost == dict.fromkeys(WRITES, 0)
    assert report.duplicates == dict.fromkeys(WRITES, 0)
    assert report.key_record_duplicates == 0
    assert report.order_collisions == {"log_finding": 0, "add_proposition": 0}
    assert report.clean


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.subprocess
def test_eight_clients_on_one_mcp_http_server(
    big_store: tuple[Path, Targets], tmp_path: Path
) -> None:
    source, targets = big_store
    store = copy_store(source, tmp_path / "store")
    outcome = asyncio.run(run_http(store, tmp_path, targets, Mix(seconds=SECONDS), CLIENTS))
    assert_exact(outcome)


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.subprocess
def test_eight_stdio_servers_on_one_endpoint(
    big_store: tuple[Path, Targets], tmp_path: Path
) -> None:
    source, targets = big_store
    store = copy_store(source, tmp_path / "store")
    outcome = asyncio.run(run_endpoint(store, tmp_path, targets, Mix(seconds=SECONDS), CLIENTS))
    assert_exact(outcome)


# ---------------------------------------------------------------------------- the mechanism
@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each test below runs on the embedded store and on a real Oxigraph server."""
    return str(request.param)


class Made(BaseModel):
    """The answer of a test write: the resource it made and what it read."""

    id: str
    seen: int


COUNTER = NamedNode("urn:labbrain:test:counter")
VALUE = NamedNode(LB + "value")
GRAPH = NamedNode("urn:labbrain:project:race")


def _value(store: QuadStore) -> int:
    values = [int(q.object.value) for q in store.quads(GRAPH.value, COUNTER, VALUE)]
    return max(values, default=0)


def increment(
    store: QuadStore, name: str, meanwhile: Callable[[], None] | None = None
) -> Callable[[], WritePlan[Made]]:
    """A plan that reads the counter and writes it plus one (and a resource ``name``);
    ``meanwhile`` runs between the read and the write, as another process would."""

    def plan() -> WritePlan[Made]:
        seen = _value(store)
        if meanwhile is not None:
            meanwhile()
        old = [Quad(COUNTER, VALUE, Literal(str(seen)), GRAPH)] if seen else []
        add = [
            Quad(COUNTER, VALUE, Literal(str(seen + 1)), GRAPH),
            Quad(NamedNode(f"urn:labbrain:test:{name}"), VALUE, Literal(name), GRAPH),
        ]
        return WritePlan(Made(id=name, seen=seen), add=add, remove=old)

    return plan


def _made(store: QuadStore) -> list[str]:
    return sorted(
        q.object.value for q in store.quads(GRAPH.value, None, VALUE) if q.subject != COUNTER
    )


def test_a_write_planned_before_another_landed_is_planned_again(
    make_settings: MakeSettings,
) -> None:
    with LabBrain(make_settings()) as brain:
        first, second = AgentWriter(brain.store), AgentWriter(brain.store)  # two processes
        runs: list[int] = []

        def other() -> None:
            if not runs:
                second.write("test", increment(brain.store, "b"))
            runs.append(1)

        made = first.write("test", increment(brain.store, "a", other))
        assert len(runs) == 2  # planned again after the other write landed
        assert made.seen == 1  # and then it saw that write
        assert _value(brain.store) == 2  # no lost update
        assert _made(brain.store) == ["a", "b"]
        stamps = list(brain.store.quads(SYSTEM_GRAPH, WRITE_STAMP_SUBJECT, WRITE_STAMP))
        assert len(stamps) == 1
        for writer in (first, second):  # each session's marker names its own last write
            (marker,) = brain.store.quads(SYSTEM_GRAPH, writer.session, LAST_WRITE)
            assert marker.object.value


def test_one_key_sent_by_two_writers_at_once_writes_once(make_settings: MakeSettings) -> None:
    with LabBrain(make_settings()) as brain:
        first, second = AgentWriter(brain.store), AgentWriter(brain.store)
        arguments = {"what": "the same call"}

        def other() -> None:  # the other process sends the same key while this one plans
            if not _made(brain.store):
                second.write(
                    "test", increment(brain.store, "b"), key="k-1", arguments=arguments, model=Made
                )

        made = first.write(
            "test", increment(brain.store, "a", other), key="k-1", arguments=arguments, model=Made
        )
        assert made == Made(id="b", seen=0)  # the first answer, replayed
        assert _made(brain.store) == ["b"] and _value(brain.store) == 1
        records = [q for q in brain.store.quads(SYSTEM_GRAPH, None, NamedNode(LB + "result"))]
        assert len(records) == 1


def test_a_writer_always_overtaken_gives_up_with_nothing_written(
    make_settings: MakeSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_module, "MAX_WRITE_ATTEMPTS", 3)
    with LabBrain(make_settings()) as brain:
        first, second = AgentWriter(brain.store), AgentWriter(brain.store)
        count = iter(range(100))

        def other() -> None:
            second.write("test", increment(brain.store, f"b{next(count)}"))

        with pytest.raises(WriteConflict, match=r"test was not written: other processes wrote"):
            first.write("test", increment(brain.store, "a", other), key="k-2", model=Made)
        assert _made(brain.store) == ["b0", "b1", "b2"] and _value(brain.store) == 3
        assert not list(brain.store.quads(SYSTEM_GRAPH, first.session, LAST_WRITE))
