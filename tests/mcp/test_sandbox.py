"""An assistant's SPARQL on an on-disk store runs in a child process that the time limit kills."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain.core import LabBrain
from labbrain.errors import QueryError, QueryNotAllowed, QuerySyntaxError, QueryTimeout
from labbrain.mcp.sandbox import run_query
from labbrain.store.base import QuadStore
from labbrain.store.isolated import run_isolated

pytestmark = pytest.mark.subprocess

# Four-way cross product of every triple: far more work than any time limit below allows.
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"


@pytest.fixture
def brain(store_dir: Path) -> LabBrain:
    with LabBrain(settings_for(store_dir)) as loaded:
        loaded.load(str(SAMPLE))
    return LabBrain(settings_for(store_dir))


def test_query_runs_in_a_child_and_answers(brain: LabBrain) -> None:
    with brain:
        result = run_query(
            brain.store,
            "SELECT ?e WHERE { ?e dg:supports ?c } ORDER BY ?e LIMIT 5",
            limit=3,
            max_chars=10_000,
            seconds=30,
        )
        assert result.kind == "select" and result.rowCount == 3 and result.truncated
        assert all(row["e"].startswith("https://roamresearch.com/") for row in result.rows)
        ask = run_query(brain.store, "ASK { ?s a dg:Claim }", limit=3, max_chars=100, seconds=30)
        assert ask.boolean is True


def test_runaway_query_is_stopped_and_the_store_stays_usable(brain: LabBrain) -> None:
    with brain:
        started = time.monotonic()
        with pytest.raises(QueryTimeout, match="stopped after 1 s"):
            run_query(brain.store, RUNAWAY, limit=10, max_chars=1000, seconds=1)
        assert time.monotonic() - started < 20
        # the server process carries on, writable
        assert brain.load(str(SAMPLE)).nodes == 150
        again = run_query(brain.store, "ASK { ?s ?p ?o }", limit=1, max_chars=100, seconds=30)
        assert again.boolean is True


def test_refusals_happen_before_any_child(brain: LabBrain) -> None:
    with brain:
        with pytest.raises(QueryNotAllowed, match="SERVICE"):
            run_query(
                brain.store,
                "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
                limit=1,
                max_chars=100,
                seconds=5,
            )
        with pytest.raises(QueryNotAllowed, match="updates are not allowed"):
            run_query(brain.store, "DELETE WHERE { ?s ?p ?o }", limit=1, max_chars=100, seconds=5)
        with pytest.raises(QuerySyntaxError):
            run_query(brain.store, "SELECT ?s WHERE { ?s ?p }", limit=1, max_chars=100, seconds=5)
        assert brain.store.count("urn:labbrain:dataset:akamatsulab-sample") > 2000


# ---------------------------------------------------------------------------- run_isolated
def _dies(_store: QuadStore) -> None:
    os._exit(9)  # a child killed without answering (as the kernel's OOM killer would)


def _fails_to_parse(store: QuadStore) -> None:
    store.query("SELECT * WHERE {\n  ?s ?p }")


def _breaks(_store: QuadStore) -> None:
    raise RuntimeError("engine trouble\nsecond line")


def _pid_and_count(view: QuadStore) -> tuple[int, int]:
    return os.getpid(), view.count(SAMPLE_GRAPH)


def _has_the_sample(view: QuadStore) -> bool:
    return view.has_graph(SAMPLE_GRAPH)


def test_isolated_work_returns_its_result_from_the_child(brain: LabBrain) -> None:
    with brain:
        parent = os.getpid()
        pid, count = run_isolated(brain.store, _pid_and_count, 30)
        assert pid != parent and count == brain.store.count(SAMPLE_GRAPH) > 0


def test_isolated_errors_come_back_as_labbrain_errors(brain: LabBrain) -> None:
    with brain:
        with pytest.raises(QueryError, match="ended without an answer"):
            run_isolated(brain.store, _dies, 30)
        with pytest.raises(QuerySyntaxError) as syntax:
            run_isolated(brain.store, _fails_to_parse, 30)
        assert syntax.value.line == 2
        with pytest.raises(QueryError, match=r"^engine trouble$"):
            run_isolated(brain.store, _breaks, 30)
        # the parent's store is untouched by any of it
        assert run_isolated(brain.store, _has_the_sample, 30)
