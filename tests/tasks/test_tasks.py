"""Durable tasks: the state machine, checkpoints in the store, the runner, the MCP tools, and
kill -9 then resume."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import ROOT, SAMPLE, SAMPLE_GRAPH, settings_for
from generate import write_export
from helpers import fingerprint, load_and_kill, select
from labbrain.core import LabBrain
from labbrain.errors import InputError, InvalidTransition, ItemNotFound, TaskCancelled
from labbrain.mcp.server import build_server
from labbrain.mcp.tools import semantic as semantic_tools
from labbrain.ops.workflows import ingest_params, task_runner
from labbrain.rdf.namespaces import TASKS_GRAPH
from labbrain.store.journal import JOURNAL_DIR, JOURNAL_MARKER
from labbrain.tasks.ledger import (
    STATUSES,
    TRANSITIONS,
    WORKFLOWS,
    TaskLedger,
    TaskState,
    new_task,
    transition,
)

INGEST_STEPS = ["read", "repair_context", "parse", "write", "derive", "index"]
BIG_GRAPH = "urn:labbrain:dataset:bench-20000"
EVENTS = ["start", "advance", "complete", "fail", "cancel", "interrupt", "resume"]


@pytest.fixture(scope="module")
def export_20k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-20000.jsonld"
    write_export(path, 20_000, seed=11)
    return path


@pytest.fixture(scope="module")
def reference_20k(tmp_path_factory: pytest.TempPathFactory, export_20k: Path) -> Any:
    """The fingerprint of a store after an uninterrupted load of the 20k export."""
    store = tmp_path_factory.mktemp("reference") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(export_20k))
        return fingerprint(brain)


# ---------------------------------------------------------------------------------------
# The state machine
# ---------------------------------------------------------------------------------------


def _in_status(status: str) -> Any:
    """A reindex task brought to ``status`` by allowed events only."""
    state = new_task("reindex")
    path = {
        "pending": [],
        "in_progress": ["start"],
        "completed": ["start", "advance", "advance", "complete"],
        "error": ["start", "fail"],
        "cancelled": ["cancel"],
        "interrupted": ["start", "interrupt"],
    }[status]
    for event in path:
        state = transition(state, event, "boom" if event == "fail" else "")  # type: ignore[arg-type]
    assert state.status == status
    return state


@pytest.mark.parametrize(("status", "event"), list(itertools.product(STATUSES, EVENTS)))
def test_every_transition_follows_the_table(status: str, event: str) -> None:
    state = _in_status(status)
    allowed = TRANSITIONS.get((status, event))
    if event == "complete" and status == "in_progress":
        allowed = None  # only once every step is done (tested below)
    if event == "advance" and status == "in_progress":
        allowed = "in_progress"
    if allowed is None:
        with pytest.raises(InvalidTransition, match=f"is {status}: it cannot {event}"):
            transition(state, event)  # type: ignore[arg-type]
        return
    after = transition(state, event)  # type: ignore[arg-type]
    assert after.status == allowed
    assert state.status == status  # the old state is left as it was
    assert after.history[-1].time >= state.history[-1].time


def test_steps_advance_in_order_and_complete_needs_every_step() -> None:
    state = transition(new_task("ingest", {"source": "x"}), "start")
    assert (state.current_step, state.progress.done, state.progress.total) == ("read", 0, 6)
    seen = []
    for step in INGEST_STEPS:
        with pytest.raises(InvalidTransition):
            transition(state, "complete")
        assert state.current_step == step
        state = transition(state, "advance")
        seen.append((state.last_completed_step, state.progress.done))
    assert seen == [(step, n) for n, step in enumerate(INGEST_STEPS, 1)]
    assert state.current_step is None
    with pytest.raises(InvalidTransition):
        transition(state, "advance")
    done = transition(state, "complete", results={"quads": 3})
    assert (done.status, done.results, done.finished) == ("completed", {"quads": 3}, True)
    assert [h.step for h in done.history if h.message == "done"] == INGEST_STEPS


def test_fail_records_the_step_and_resume_starts_after_the_last_completed_step() -> None:
    state = transition(new_task("ingest"), "start")
    state = transition(transition(state, "advance"), "advance")
    failed = transition(state, "fail", "invalid JSON at 3:4")
    assert failed.errors[-1].model_dump() == {"step": "parse", "message": "invalid JSON at 3:4"}
    interrupted = transition(state, "interrupt")
    resumed = transition(interrupted, "resume")
    assert (resumed.status, resumed.current_step) == ("in_progress", "parse")
    assert resumed.last_completed_step == "repair_context"


def test_workflows_are_declared_as_data() -> None:
    assert WORKFLOWS["ingest"].steps == tuple(INGEST_STEPS)
    assert WORKFLOWS["reindex"].steps == ("scan", "index")
    assert WORKFLOWS["embed"].steps == ("scan", "embed", "prune")
    with pytest.raises(Exception, match="known task kinds: ingest, reindex, embed"):
        new_task("defragment")


# ---------------------------------------------------------------------------------------
# The ledger: durable, queryable, interrupted at the next writable open
# ---------------------------------------------------------------------------------------


def test_checkpoints_survive_a_reopen_and_answer_sparql(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        ledger = TaskLedger(brain.store)
        state = transition(transition(new_task("ingest", {"source": "/x"}), "start"), "advance")
        ledger.save(state)
        rows = select(
            brain,
            "SELECT ?status ?step ?done WHERE { GRAPH <urn:labbrain:tasks> "
            "{ ?t a lb:Task ; lb:status ?status ; lb:currentStep ?step ; lb:progressDone ?done } }",
        )
        assert rows == [{"status": "in_progress", "step": "repair_context", "done": "1"}]
        ledger.save(transition(state, "advance"))  # replaces, never accumulates
        assert len(ledger.all()) == 1
        assert brain.store.count(TASKS_GRAPH) == 10
    # The process that ran it is gone: the next writer records the task as interrupted.
    with LabBrain(settings_for(store_dir)) as brain:
        [interrupted] = brain.interrupted_tasks
        assert interrupted.task_id == state.task_id
        stored = TaskLedger(brain.store).load(state.task_id)
        assert stored.status == "interrupted"
        assert stored.last_completed_step == "repair_context"
        assert stored.current_step == "parse"
        assert (
            stored.history[-1].message
            == "interrupted: the process running it stopped during step parse"
        )


def test_a_pending_task_of_a_gone_process_is_interrupted_at_the_next_writable_open(
    store_dir: Path,
) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        runner = task_runner(brain)
        pending = runner.create("reindex")  # recorded, never started
        done = runner.start(runner.create("reindex").task_id)  # run inline to completion
        assert done.status == "completed"
        assert TaskLedger(brain.store).load(pending.task_id).status == "pending"
    with LabBrain(settings_for(store_dir)) as brain:
        assert [s.task_id for s in brain.interrupted_tasks] == [pending.task_id]
        stored = TaskLedger(brain.store).load(pending.task_id)
        assert stored.status == "interrupted"
        assert stored.history[-1].message == "interrupted: the process running it stopped"
        assert TaskLedger(brain.store).load(done.task_id).status == "completed"


def test_a_read_only_view_shows_a_dead_writers_task_as_interrupted(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        task = task_runner(brain).create("reindex")
        TaskLedger(brain.store).save(transition(task, "start"))
    with LabBrain(settings_for(store_dir), read_only=True) as viewer:
        runner = task_runner(viewer)
        assert runner.get(task.task_id).status == "interrupted"
        assert [s.status for s in runner.list_tasks()] == ["interrupted"]
        with pytest.raises(Exception, match="opened read-only"):
            runner.create("reindex")


def test_unknown_task_and_status() -> None:
    with LabBrain(settings_for(":memory:")) as brain:
        runner = task_runner(brain)
        with pytest.raises(ItemNotFound, match="no task 'nope'; list_tasks"):
            runner.get("nope")
        with pytest.raises(Exception, match="invalid status: 'done'"):
            runner.list_tasks("done")


# ---------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------


def test_an_ingest_task_loads_and_records_every_step(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        runner = task_runner(brain)
        seen: list[tuple[str, str | None, int]] = []
        task = runner.create("ingest", ingest_params(str(SAMPLE)))
        final = runner.start(
            task.task_id,
            listener=lambda s: seen.append((s.status, s.current_step, s.progress.done)),
        )
        assert final.status == "completed"
        assert final.results["nodes"] == 150 and final.results["graph"] == SAMPLE_GRAPH
        assert final.results["loadId"] == task.params["loadId"]
        assert [d["loadId"] for d in brain.datasets()] == [task.params["loadId"]]
        assert [h.step for h in final.history if h.message == "done"] == INGEST_STEPS
        done = [n for _, _, n in seen]
        assert done == sorted(done) and done[-1] == 6
        assert [step for _, step, _ in seen if step][:1] == ["read"]
    with LabBrain(settings_for(store_dir), read_only=True) as viewer:
        assert task_runner(viewer).get(task.task_id) == final


def test_a_failing_task_reports_its_step_and_error_and_the_store_is_unchanged(
    store_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.jsonld"
    broken.write_text('{"@context": {"dct": "http://purl.org/dc/terms/"}, "@graph": [')
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        before = fingerprint(brain)
        runner = task_runner(brain)
        task = runner.create("ingest", ingest_params(str(broken)))
        with pytest.raises(InputError, match="broken.jsonld"):
            runner.start(task.task_id)
        failed = runner.get(task.task_id)
        assert failed.status == "error"
        assert failed.errors[0].step == "repair_context"
        assert "broken.jsonld" in failed.errors[0].message
        assert fingerprint(brain) == before


def test_resume_of_a_committed_load_does_not_write_again(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        params = ingest_params(str(SAMPLE))
        task = task_runner(brain).create("ingest", params)
        # The load committed, then the process died before its last checkpoint.
        brain.load(str(SAMPLE), load_id=params["loadId"])
        state = transition(task, "start")
        for _ in range(5):
            state = transition(state, "advance")
        TaskLedger(brain.store).save(state)
        loaded_at = brain.datasets()[0]["loadedAt"]
    with LabBrain(settings_for(store_dir)) as brain:
        runner = task_runner(brain)
        assert runner.get(task.task_id).status == "interrupted"
        final = runner.resume(task.task_id)
        assert final.status == "completed"
        assert final.results["note"] == "the write had been committed before the interruption"
        [dataset] = brain.datasets()
        assert (dataset["loadId"], dataset["loadedAt"]) == (params["loadId"], loaded_at)


def test_resume_refuses_a_file_that_changed(store_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "sample.jsonld"
    source.write_bytes(SAMPLE.read_bytes())
    with LabBrain(settings_for(store_dir)) as brain:
        runner = task_runner(brain)
        task = runner.create("ingest", ingest_params(str(source)))
        state = transition(transition(task, "start"), "advance")
        state.results["sourceDigest"] = "0" * 64
        TaskLedger(brain.store).save(state)
    with LabBrain(settings_for(store_dir)) as brain:
        runner = task_runner(brain)
        with pytest.raises(InputError, match="changed since the task read it first"):
            runner.resume(task.task_id)
        assert runner.get(task.task_id).status == "error"
        assert brain.datasets() == []


def test_cancel_mid_way_leaves_the_store_as_it_was(store_dir: Path, export_20k: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        before = fingerprint(brain)
        runner = task_runner(brain)
        task = runner.create("ingest", ingest_params(str(export_20k)))
        runner.start(task.task_id, background=True)
        journal = store_dir / JOURNAL_DIR / JOURNAL_MARKER
        deadline = time.monotonic() + 120
        while not journal.exists():  # the atomic write has begun
            assert time.monotonic() < deadline
            time.sleep(0.005)
        runner.cancel(task.task_id)
        runner.join(task.task_id)
        state = runner.get(task.task_id)
        assert state.status == "cancelled"
        assert state.history[-1].message.startswith("cancelled during ")
        assert "cancellation requested" in [h.message for h in state.history]
        assert fingerprint(brain) == before
        assert BIG_GRAPH not in brain.store.graphs()
        assert brain.index.count(BIG_GRAPH) == 0
        with pytest.raises(InvalidTransition, match="is cancelled: it cannot cancel"):
            runner.cancel(task.task_id)


def test_cancelling_a_pending_task_and_the_cancel_error_path() -> None:
    with LabBrain(settings_for(":memory:")) as brain:
        runner = task_runner(brain)
        task = runner.create("reindex")
        assert runner.cancel(task.task_id).status == "cancelled"
        with pytest.raises(InvalidTransition):
            runner.start(task.task_id)
        assert issubclass(TaskCancelled, Exception)


# ---------------------------------------------------------------------------------------
# The MCP tools
# ---------------------------------------------------------------------------------------


def _mcp(brain: LabBrain, work: Any) -> Any:
    async def main() -> Any:
        async with Client(build_server(brain)) as client:
            return await work(client)

    return asyncio.run(main())


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    directory = tmp_path / "exports"
    directory.mkdir()
    return directory


@pytest.fixture
def mcp_brain(store_dir: Path, allowed: Path) -> Iterator[LabBrain]:
    with LabBrain(settings_for(store_dir, load_dirs=[allowed])) as brain:
        yield brain


@pytest.mark.slow
def test_a_20k_load_over_mcp_returns_at_once_and_progress_only_goes_up(
    mcp_brain: LabBrain, allowed: Path, export_20k: Path, reference_20k: Any
) -> None:
    os.link(export_20k, allowed / "big.jsonld")  # a symlink out of the directory is refused

    async def work(client: Client) -> tuple[Any, list[Any]]:
        started = await client.call_tool("load_dataset", {"path": "big.jsonld"})
        polled = []
        while True:
            answer = await client.call_tool(
                "get_task", {"taskId": started.structured_content["taskId"]}
            )
            polled.append(answer.structured_content)
            if answer.structured_content["status"] not in ("pending", "in_progress"):
                return started, polled
            await asyncio.sleep(0.05)

    started, polled = _mcp(mcp_brain, work)
    assert not started.is_error
    assert started.structured_content["status"] == "in_progress"
    assert started.structured_content["progress"]["done"] < 6
    done = [p["progress"]["done"] for p in polled]
    assert done == sorted(done) and len(set(done)) >= 3
    final = polled[-1]
    assert final["status"] == "completed", final
    assert final["results"]["nodes"] == 20_000
    assert final["results"]["source"] == "big.jsonld"
    assert fingerprint(mcp_brain)[BIG_GRAPH] == reference_20k[BIG_GRAPH]


def test_progress_notifications_while_waiting(mcp_brain: LabBrain, allowed: Path) -> None:
    (allowed / "sample.jsonld").write_bytes(SAMPLE.read_bytes())
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        reports.append((value, total, message))

    async def work(client: Client) -> Any:
        return await client.call_tool(
            "load_dataset",
            {"path": str(allowed / "sample.jsonld"), "waitSeconds": 30},
            progress_callback=progress,
        )

    result = _mcp(mcp_brain, work)
    assert result.structured_content["status"] == "completed"
    values = [value for value, _, _ in reports]
    assert values == sorted(values) and values[-1] == 6
    assert {total for _, total, _ in reports} == {6}
    assert reports[-1][2] == "completed"


def test_list_and_get_tasks_over_mcp(mcp_brain: LabBrain, allowed: Path) -> None:
    (allowed / "sample.jsonld").write_bytes(SAMPLE.read_bytes())

    async def work(client: Client) -> Any:
        first = await client.call_tool("load_dataset", {"path": "sample.jsonld", "waitSeconds": 30})
        listed = await client.call_tool("list_tasks", {})
        completed = await client.call_tool("list_tasks", {"status": "completed"})
        failed = await client.call_tool("list_tasks", {"status": "error"})
        unknown = await client.call_tool("get_task", {"taskId": "nope"})
        cancel_done = await client.call_tool(
            "cancel_task", {"taskId": first.structured_content["taskId"]}
        )
        return first, listed, completed, failed, unknown, cancel_done

    first, listed, completed, failed, unknown, cancel_done = _mcp(mcp_brain, work)
    task_id = first.structured_content["taskId"]
    [summary] = listed.structured_content["tasks"]
    assert summary["taskId"] == task_id and summary["progress"] == "6/6"
    assert summary["source"] == "sample.jsonld" and summary["error"] is None
    assert completed.structured_content["total"] == 1
    assert failed.structured_content["tasks"] == []
    assert unknown.is_error and "no task 'nope'" in unknown.content[0].text
    assert cancel_done.is_error and "is completed: it cannot cancel" in cancel_done.content[0].text


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.jsonld", "outside the directories"),
        ("{outside}", "outside the directories"),
        ("link.jsonld", "outside the directories"),
        ("missing.jsonld", "no such file"),
        ("sub", "no such file"),
    ],
)
def test_load_dataset_refuses_paths_outside_the_allowed_directories(
    mcp_brain: LabBrain, allowed: Path, path: str, reason: str
) -> None:
    outside = allowed.parent / "outside.jsonld"
    outside.write_bytes(SAMPLE.read_bytes())
    (allowed / "link.jsonld").symlink_to(outside)
    (allowed / "sub").mkdir()

    async def work(client: Client) -> Any:
        refused = await client.call_tool("load_dataset", {"path": path.format(outside=outside)})
        tasks = await client.call_tool("list_tasks", {})
        return refused, tasks

    refused, tasks = _mcp(mcp_brain, work)
    assert refused.is_error
    assert reason in refused.content[0].text
    assert str(allowed) not in refused.content[0].text  # the allowed directories stay private
    assert tasks.structured_content["total"] == 0  # no task, nothing read
    assert mcp_brain.datasets() == []


def test_load_dataset_refuses_everything_when_no_directory_is_allowed(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir)) as brain:

        async def work(client: Client) -> Any:
            return await client.call_tool("load_dataset", {"path": str(SAMPLE)})

        refused = _mcp(brain, work)
    assert refused.is_error and "LABBRAIN_LOAD_DIRS" in refused.content[0].text


def test_a_read_only_server_lists_tasks_but_cannot_load(
    mcp_brain: LabBrain, store_dir: Path, allowed: Path
) -> None:
    (allowed / "sample.jsonld").write_bytes(SAMPLE.read_bytes())
    with LabBrain(settings_for(store_dir, load_dirs=[allowed]), read_only=True) as viewer:

        async def work(client: Client) -> Any:
            refused = await client.call_tool("load_dataset", {"path": "sample.jsonld"})
            listed = await client.call_tool("list_tasks", {})
            return refused, listed

        refused, listed = _mcp(viewer, work)
    assert refused.is_error and "read-only" in refused.content[0].text
    assert not listed.is_error


# ---------------------------------------------------------------------------------------
# kill -9, then resume
# ---------------------------------------------------------------------------------------


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labbrain", "--store", str(store), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.subprocess
@pytest.mark.slow
def test_kill_mid_load_then_resume_gives_the_uninterrupted_dataset(
    tmp_path: Path, export_20k: Path, reference_20k: Any
) -> None:
    store = tmp_path / "store"
    load_and_kill(store, export_20k, 0.5)
    listed = json.loads(_cli(store, "tasks", "list", "--json").stdout)
    [task] = listed
    assert task["status"] == "interrupted"
    # The checkpoints written inside the atomic write went with it; the last durable one is
    # the step before the write.
    assert task["lastCompletedStep"] == "repair_context"
    assert task["currentStep"] == "parse"
    resumed = _cli(store, "tasks", "resume", task["taskId"], "--json")
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    assert final["status"] == "completed"
    assert final["results"]["nodes"] == 20_000
    messages = [h["message"] for h in final["history"]]
    assert messages.count("resume") == 1
    with LabBrain(settings_for(store), read_only=True) as brain:
        got = fingerprint(brain)
        # The load record and the change record hold the load's own time and id; the change
        # record of one load of the same file is the same size.
        volatile = ("urn:labbrain:system", "urn:labbrain:changes")
        assert got == reference_20k | {graph: got[graph] for graph in volatile}
        assert got["urn:labbrain:changes"][0] == reference_20k["urn:labbrain:changes"][0]
        [dataset] = brain.datasets()
        assert dataset["loadId"] == final["params"]["loadId"]
    shown = _cli(store, "tasks", "show", task["taskId"])
    assert json.loads(shown.stdout)["status"] == "completed"


def test_a_load_that_fails_while_waited_for_is_an_error_answer(
    mcp_brain: LabBrain, allowed: Path
) -> None:
    """A broken export loaded with waitSeconds: the answer is isError, naming the task, the
    step and the reason, and saying the store is as before; get_task still reports the
    failed task as its state (not an error)."""
    (allowed / "sample.jsonld").write_bytes(SAMPLE.read_bytes())
    (allowed / "broken.jsonld").write_text('{"@context": {}, "@graph": [', encoding="utf-8")

    async def load_good(client: Client) -> Any:
        return await client.call_tool("load_dataset", {"path": "sample.jsonld", "waitSeconds": 30})

    async def work(client: Client) -> Any:
        bad = await client.call_tool("load_dataset", {"path": "broken.jsonld", "waitSeconds": 30})
        listed = await client.call_tool("list_tasks", {"status": "error"})
        [failed] = listed.structured_content["tasks"]
        polled = await client.call_tool("get_task", {"taskId": failed["taskId"]})
        return bad, failed, polled

    good = _mcp(mcp_brain, load_good)
    before = fingerprint(mcp_brain)
    bad, failed, polled = _mcp(mcp_brain, work)
    after = fingerprint(mcp_brain)
    before.pop(str(TASKS_GRAPH), None), after.pop(str(TASKS_GRAPH), None)  # task states
    assert after == before
    assert not good.is_error and good.structured_content["status"] == "completed"
    assert bad.is_error
    text = bad.content[0].text
    assert f"task {failed['taskId']} (ingest) failed during " in text
    assert "broken.jsonld" in text and "nothing was written" in text
    assert str(allowed) not in text
    assert not polled.is_error and polled.structured_content["status"] == "error"
    assert str(allowed) not in json.dumps(polled.structured_content)


def test_a_cancelled_load_says_to_load_again() -> None:
    """The message of a load cancelled mid-way says the dataset is as before and to load
    again (the load itself is stood in for by one that is cancelled at its write)."""
    with LabBrain(settings_for(":memory:")) as brain:
        runner = task_runner(brain)

        def cancelled(state: Any, steps: Any) -> dict[str, Any]:
            steps.enter("write")
            raise TaskCancelled(state.task_id)

        runner.executors["ingest"] = cancelled
        task = runner.create("ingest", ingest_params(str(SAMPLE)))
        with pytest.raises(TaskCancelled):
            runner.start(task.task_id)
        state = runner.get(task.task_id)
        assert state.status == "cancelled"
        assert state.history[-1].message == (
            "cancelled during write; nothing was written and the dataset is as before; "
            "load again to load it"
        )


def test_embed_nodes_is_served_only_with_the_semantic_extra(
    mcp_brain: LabBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def names() -> list[str]:
        async with Client(build_server(mcp_brain, ("semantic", "tasks"))) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    monkeypatch.setattr(semantic_tools, "semantic_installed", lambda: True)
    assert "embed_nodes" in asyncio.run(names())
    monkeypatch.setattr(semantic_tools, "semantic_installed", lambda: False)
    listed = asyncio.run(names())
    assert "embed_nodes" not in listed and "get_task" in listed


def test_a_task_state_speaks_camel_case_and_reads_either_spelling() -> None:
    """Answers use taskId / currentStep / lastCompletedStep; a state stored by an earlier
    version in snake_case still reads back, field for field."""
    state = new_task("reindex")
    dumped = state.model_dump(mode="json")
    assert {"taskId", "currentStep", "lastCompletedStep"} <= set(dumped)
    assert not {"task_id", "current_step", "last_completed_step"} & set(dumped)
    snake = {
        "task_id"
        if key == "taskId"
        else "current_step"
        if key == "currentStep"
        else "last_completed_step"
        if key == "lastCompletedStep"
        else key: value
        for key, value in dumped.items()
    }
    assert TaskState.model_validate(snake) == state
    assert TaskState.model_validate_json(state.model_dump_json()) == state
