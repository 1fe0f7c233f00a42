"""One thread writes a graph being replaced: what pyoxigraph's bulk loader allows.

Two bulk loads into one on-disk store from two threads at once crashed ``labbrain load`` (a
native fault, about once in a few hundred loads: the export's bulk load in the loading thread
and the derived triples' in the analysis thread). The writer of ``replace_graph`` is bound to
the thread that replaces the graph, and a load writes every part from that thread, one after
the other.
"""

from __future__ import annotations

import functools
import gc
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, QueryTriples, RdfFormat, Store, Triple

from conftest import REAL, ROOT, SAMPLE, SAMPLE_GRAPH
from labbrain.core import LabBrain
from labbrain.settings import Settings
from labbrain.store import local
from labbrain.store.base import GraphWriter, RdfDocument, ThreadBoundWriter
from labbrain.store.local import OxigraphStore
from labbrain.store.threads import confined

GRAPH = "urn:labbrain:dataset:threads"


def _triples(n: int, tag: str) -> list[Triple]:
    return [
        Triple(NamedNode(f"urn:{tag}:{i}"), NamedNode("urn:p"), NamedNode(f"urn:o:{i}"))
        for i in range(n)
    ]


@pytest.fixture(params=["disk", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> OxigraphStore:
    location = str(tmp_path / "store") if request.param == "disk" else None
    opened = OxigraphStore(location)
    request.addfinalizer(opened.close)
    return opened


def test_a_writer_refuses_parts_from_another_thread(store: OxigraphStore) -> None:
    store.replace_graph(GRAPH, lambda w: w.write(_triples(5, "old")))
    seen: list[BaseException] = []

    def fill(writer: GraphWriter) -> None:
        writer.write(_triples(3, "mine"))  # the replacing thread: fine

        def elsewhere() -> None:
            try:
                writer.write(_triples(4, "theirs"))
            except BaseException as error:
                seen.append(error)

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        if seen:
            raise seen[0]

    with pytest.raises(RuntimeError, match="only by the thread that replaces it"):
        store.replace_graph(GRAPH, fill)
    # Refused before anything was written, and the whole replacement rolled back.
    subjects = {q.subject.value for q in store.quads(GRAPH)}
    assert subjects == {f"urn:old:{i}" for i in range(5)}


def test_a_writer_refuses_a_document_from_another_thread_too() -> None:
    class Probe(ThreadBoundWriter):
        def write(self, part: object) -> None:
            self._check_thread()

    probe = Probe()
    probe.write(None)  # made here, used here
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _record(errors, probe.write, None))
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)


def _record(errors: list[BaseException], call: object, *args: object) -> None:
    try:
        call(*args)  # type: ignore[operator]
    except BaseException as error:
        errors.append(error)


@pytest.mark.parametrize("source", [SAMPLE, REAL], ids=["sample", "real-corpus"])
def test_a_load_writes_the_store_from_the_loading_thread_one_part_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path
) -> None:
    if not source.is_file():
        pytest.skip(f"needs {source}")
    calls: list[tuple[int, float, float, str]] = []
    write = local._BulkWriter.write

    def recorded(self: local._BulkWriter, part: object) -> None:
        started = time.perf_counter()
        # Bypass the writer's own thread check, so that the record shows what the loader did.
        self._thread = threading.get_ident()
        write(self, part)  # type: ignore[arg-type]
        kind = part.format.name if isinstance(part, RdfDocument) else "quads"
        calls.append((threading.get_ident(), started, time.perf_counter(), kind))

    monkeypatch.setattr(local._BulkWriter, "write", recorded)
    with LabBrain(Settings(store=str(tmp_path / "store"))) as brain:
        report = brain.load(str(source))
    assert report.nodes > 0
    # The export and its derived triples, both by the thread that called load ...
    assert [kind for *_, kind in calls] == [RdfFormat.JSON_LD.name, RdfFormat.N_TRIPLES.name]
    assert {ident for ident, *_ in calls} == {threading.get_ident()}
    # ... one after the other.
    (_, _, first_end, _), (_, second_start, _, _) = calls
    assert first_end <= second_start


def test_derived_triples_are_still_written(tmp_path: Path) -> None:
    """The derived triples, written after the export now, land in the dataset graph: one
    direct ``dg:supports`` triple per Supports relation instance of the file whose two ends
    are nodes of the file (counted from the JSON here, not through labbrain)."""
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))["@graph"]
    supports = {
        e["@id"] for e in document if e.get("@type") == "relationDef" and e["label"] == "Supports"
    }
    pages = {e["@id"] for e in document if "title" in e}
    expected = {
        (e["source"], e["destination"])
        for e in document
        if e.get("@type") == "relationInstance"
        and e["predicate"] in supports
        and {e["source"], e["destination"]} <= pages
    }
    with LabBrain(Settings(store=str(tmp_path / "store"))) as brain:
        brain.load(str(SAMPLE))
        rows = list(
            brain.store.query(
                f"SELECT ?e ?c WHERE {{ GRAPH <{SAMPLE_GRAPH}> {{ ?e dg:supports ?c }} }}"
            )
        )
    assert len(expected) == 72  # data/README.md: 73 Supports, one with a missing end
    assert len(rows) == len(expected)


# ------------------------------------------------------------------ results stay in their thread
def _query_then_fail(store: Store) -> None:
    result = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert isinstance(result, QueryTriples)
    raise ValueError("failed after the query")  # the frame still holds the result


def _error_from_worker(call: Callable[[], object]) -> BaseException:
    """Run ``call`` in a worker thread and hand its error to this thread (as anyio does)."""
    box: list[BaseException] = []

    def work() -> None:
        try:
            call()
        except BaseException as error:
            box.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return box.pop()


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What Python reports as unraisable (a failed drop) while the test runs."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: seen.append(str(hook.exc_value)))
    return seen


def test_an_error_from_a_worker_does_not_carry_a_query_result_across(
    unraisable: list[str],
) -> None:
    store = Store()
    error = _error_from_worker(confined(functools.partial(_query_then_fail, store)))
    assert str(error) == "failed after the query"
    del error  # dropped here, in another thread than the result's
    gc.collect()
    assert unraisable == []


def test_without_confined_the_result_is_dropped_on_the_wrong_thread(
    unraisable: list[str],
) -> None:
    """The control for the test above: the same error, not confined, takes the result along,
    and dropping it here is what pyoxigraph refuses."""
    store = Store()
    error = _error_from_worker(functools.partial(_query_then_fail, store))
    del error
    gc.collect()
    assert any("unsendable" in text for text in unraisable)


def test_release_frames_follows_the_errors_an_error_was_raised_from(
    unraisable: list[str],
) -> None:
    store = Store()

    def wrapped() -> None:
        try:
            _query_then_fail(store)
        except ValueError as error:
            raise LookupError("while answering") from error

    error = _error_from_worker(confined(wrapped))
    assert isinstance(error.__cause__, ValueError)
    del error
    gc.collect()
    assert unraisable == []


def test_confined_refuses_to_hand_a_query_result_to_another_thread() -> None:
    store = Store()
    ask = confined(lambda: store.query("SELECT * WHERE { ?s ?p ?o }"))
    with pytest.raises(TypeError, match="read it there and return plain data"):
        ask()
    assert confined(lambda: 42)() == 42


def test_every_call_handed_to_a_worker_thread_is_confined() -> None:
    """Each ``anyio.to_thread.run_sync`` in the package runs its call through confined."""
    calls = []
    for path in (ROOT / "src" / "labbrain").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"to_thread\.run_sync\(\s*([^,)]*)", text):
            calls.append((path.name, match.group(1)))
    assert len(calls) >= 10  # the endpoint's, the console's and the MCP server's
    assert [c for c in calls if not c[1].startswith("confined(")] == []
