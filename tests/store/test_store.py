"""The store: single writer, read-only readers, atomic replacement and crash recovery."""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Triple

from conftest import ROOT, SAMPLE, SAMPLE_GRAPH, require, settings_for
from helpers import count, snapshot
from labbrain.cli import main
from labbrain.console.worker import run_query
from labbrain.core import LabBrain
from labbrain.errors import (
    GraphNotFound,
    StoreLocationInvalid,
    StoreLocked,
    StoreNotFound,
    StoreReadOnly,
)
from labbrain.rdf.namespaces import LB, ONTOLOGY_GRAPH, SYSTEM_GRAPH
from labbrain.store.base import RdfDocument
from labbrain.store.isolated import process_context
from labbrain.store.journal import JOURNAL_DIR, JOURNAL_MARKER
from labbrain.store.local import OxigraphStore, open_store
from labbrain.store.ontology import vocabulary

EX = "http://example.org/"


def _triples(n: int, prefix: str = "s") -> list[Triple]:
    return [
        Triple(NamedNode(f"{EX}{prefix}{i}"), NamedNode(f"{EX}p"), Literal(str(i)))
        for i in range(n)
    ]


@pytest.fixture
def loaded_dir(store_dir: Path) -> Path:
    """A closed on-disk store holding the sample."""
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    return store_dir


def test_second_writer_in_process_is_refused(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)):
        with pytest.raises(StoreLocked) as caught:
            LabBrain(settings_for(loaded_dir))
        assert str(loaded_dir) in str(caught.value)
        assert "pid" in str(caught.value)


@pytest.mark.subprocess
def test_second_writer_process_gets_store_locked(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as writer:
        result = subprocess.run(
            [sys.executable, "-m", "labbrain", "--store", str(loaded_dir), "load", str(SAMPLE)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert result.returncode == 3
        assert "locked" in result.stderr and str(loaded_dir) in result.stderr
        # read-only commands work alongside the writer
        result = subprocess.run(
            [sys.executable, "-m", "labbrain", "--store", str(loaded_dir), "graphs"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stderr
        assert SAMPLE_GRAPH in result.stdout
        # and the writer is unaffected
        assert writer.store.count(SAMPLE_GRAPH) > 2000
        writer.load(str(SAMPLE))


def test_the_refusal_names_the_holder_whose_pid_file_goes_with_the_lock(loaded_dir: Path) -> None:
    """The holder's pid is in ``writer.pid`` while it holds the lock (a file of its own: on
    Windows a locked file cannot be read); a refused writer names it; the shared-lock probe
    sees the lock held, then free once the holder closed."""
    pid_file = loaded_dir / "writer.pid"
    with LabBrain(settings_for(loaded_dir)):
        assert pid_file.read_text() == str(os.getpid())
        with pytest.raises(StoreLocked) as caught:
            open_store(str(loaded_dir))
        assert caught.value.holder == f"pid {os.getpid()}"
        with open_store(str(loaded_dir), read_only=True) as reader:
            assert reader.writer_alive()
    assert not pid_file.exists()
    with open_store(str(loaded_dir), read_only=True) as reader:
        assert not reader.writer_alive()


def test_reader_alongside_writer(loaded_dir: Path) -> None:
    with (
        LabBrain(settings_for(loaded_dir)) as writer,
        LabBrain(settings_for(loaded_dir), read_only=True) as reader,
    ):
        assert reader.store.count(SAMPLE_GRAPH) == writer.store.count(SAMPLE_GRAPH)
        with pytest.raises(StoreReadOnly):
            reader.store.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
        with pytest.raises(StoreReadOnly):
            reader.store.drop_graph(SAMPLE_GRAPH)


def test_read_only_store_must_exist(store_dir: Path) -> None:
    with pytest.raises(StoreNotFound, match="labbrain load"):
        LabBrain(settings_for(store_dir), read_only=True)
    assert not store_dir.exists()


def test_lock_is_released_on_close(loaded_dir: Path) -> None:
    LabBrain(settings_for(loaded_dir)).close()
    with LabBrain(settings_for(loaded_dir)) as again:
        assert SAMPLE_GRAPH in again.store.graphs()


def test_ontology_graph_reloaded_when_it_changed(loaded_dir: Path) -> None:
    store = open_store(str(loaded_dir))
    try:
        digest = NamedNode(LB + "ontologyDigest")
        subject = NamedNode(ONTOLOGY_GRAPH)
        store.remove_quads(list(store.quads(SYSTEM_GRAPH, subject, digest)))
        store.add_quads([Quad(subject, digest, Literal("outdated"), NamedNode(SYSTEM_GRAPH))])
        store.add_quads(
            [
                Quad(
                    NamedNode(f"{EX}stale"),
                    NamedNode(f"{EX}p"),
                    Literal("x"),
                    NamedNode(ONTOLOGY_GRAPH),
                )
            ]
        )
    finally:
        store.close()
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.store.count(ONTOLOGY_GRAPH) == len(vocabulary().triples)
        recorded = [q.object.value for q in brain.store.quads(SYSTEM_GRAPH, subject, digest)]
        assert recorded == [vocabulary().digest]


def test_ontology_not_rewritten_when_unchanged(loaded_dir: Path) -> None:
    from labbrain.store.ontology import ensure_ontology

    with LabBrain(settings_for(loaded_dir)) as brain:
        assert ensure_ontology(brain.store) is False


# ---------------------------------------------------------------- atomic replacement
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_replace_graph_failure_leaves_store_unchanged(tmp_path: Path, where: str) -> None:
    store = open_store(":memory:" if where == "memory" else str(tmp_path / "s"))
    graph = "urn:labbrain:dataset:x"
    try:
        store.replace_graph(graph, lambda w: w.write(_triples(100)))
        store.add_quads(
            [
                Quad(
                    NamedNode(f"{EX}rec"),
                    NamedNode(f"{EX}p"),
                    Literal("1"),
                    NamedNode(SYSTEM_GRAPH),
                )
            ]
        )
        before = {g: sorted(map(str, store.quads(g))) for g in store.graphs()}

        def failing_fill(writer: object) -> None:
            writer.write(_triples(5000, "new"))  # type: ignore[attr-defined]
            writer.write(
                RdfDocument(b"<http://example.org/a> <http://example.org/b> .", RdfFormat.N_TRIPLES)
            )  # type: ignore[attr-defined]

        def failing_commit(committing: object) -> None:
            store.add_quads(
                [
                    Quad(
                        NamedNode(f"{EX}rec"),
                        NamedNode(f"{EX}p"),
                        Literal("2"),
                        NamedNode(SYSTEM_GRAPH),
                    )
                ]
            )
            raise RuntimeError("commit hook failed")

        with pytest.raises(Exception, match="invalid N-Triples"):
            store.replace_graph(graph, failing_fill)
        with pytest.raises(RuntimeError, match="commit hook failed"):
            store.replace_graph(
                graph, lambda w: w.write(_triples(10, "other")), on_commit=failing_commit
            )
        after = {g: sorted(map(str, store.quads(g))) for g in store.graphs()}
        assert after == before
        if where == "disk":
            assert not (tmp_path / "s" / JOURNAL_DIR).exists()
    finally:
        store.close()


def test_crash_journal_is_rolled_back_on_open(loaded_dir: Path) -> None:
    """Simulate a process that died mid-write: journal complete, graph half-replaced."""
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = snapshot(brain)
        store: OxigraphStore = brain.store
        journal = loaded_dir / JOURNAL_DIR
        journal.mkdir()
        store._store.flush()
        store._store.backup(str(journal / "oxigraph"))
        (journal / JOURNAL_MARKER).write_text("bulk write in flight\n")
        store._store.remove_graph(NamedNode(SAMPLE_GRAPH))  # the "crash" happens after this
        store._store.bulk_extend(
            Quad(t.subject, t.predicate, t.object, NamedNode(SAMPLE_GRAPH)) for t in _triples(10)
        )
        assert store.count(SAMPLE_GRAPH) == 10
        store._lock.release()  # type: ignore[union-attr]  # as if the process had died
        store._lock = None
    # a reader opening now finishes the rollback before reading
    with LabBrain(settings_for(loaded_dir), read_only=True) as reader:
        assert reader.store.recovered
        assert snapshot(reader) == before
    assert not (loaded_dir / JOURNAL_DIR).exists()
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert not brain.store.recovered
        assert snapshot(brain) == before
        assert brain.index.count(SAMPLE_GRAPH) == 150


def test_incomplete_journal_is_discarded(loaded_dir: Path) -> None:
    """A crash while the backup itself was being taken: the store was not touched yet."""
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = snapshot(brain)
    (loaded_dir / JOURNAL_DIR / "oxigraph").mkdir(parents=True)
    (loaded_dir / JOURNAL_DIR / "oxigraph" / "partial-file").write_text("x")
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert not brain.store.recovered
        assert snapshot(brain) == before
    assert not (loaded_dir / JOURNAL_DIR).exists()


def test_interrupted_recovery_resumes(loaded_dir: Path) -> None:
    """Recovery itself can die after moving the live database aside: the next open finishes."""
    with LabBrain(settings_for(loaded_dir)) as brain:
        before = snapshot(brain)
        brain.store._store.flush()
        journal = loaded_dir / JOURNAL_DIR
        journal.mkdir()
        brain.store._store.backup(str(journal / "oxigraph"))
        (journal / JOURNAL_MARKER).write_text("bulk write in flight\n")
    (loaded_dir / "oxigraph").rename(loaded_dir / "oxigraph.discard")
    with LabBrain(settings_for(loaded_dir)) as brain:
        assert brain.store.recovered
        assert snapshot(brain) == before
    assert not (loaded_dir / "oxigraph.discard").exists()


def test_reader_sees_the_state_before_a_live_bulk_write(loaded_dir: Path) -> None:
    """While a writer is mid-way through a bulk write, readers read the journal snapshot."""
    with LabBrain(settings_for(loaded_dir)) as writer:
        before = snapshot(writer)
        seen: list[dict[str, object]] = []

        def fill(w: object) -> None:
            w.write(_triples(1000, "during"))  # type: ignore[attr-defined]
            with LabBrain(settings_for(loaded_dir), read_only=True) as reader:
                seen.append(snapshot(reader))

        writer.store.replace_graph(SAMPLE_GRAPH, fill)
        assert seen == [before]
        assert writer.store.count(SAMPLE_GRAPH) == 1000


def test_other_threads_of_the_writer_read_the_state_before_a_bulk_write(
    loaded_dir: Path,
) -> None:
    """In the writing process too, a thread reading while another runs a bulk write (an MCP
    tool during load_dataset) sees the state before it, never a half-replaced graph, and sees
    the new state once the write is done; the writing thread sees its own write."""
    with LabBrain(settings_for(loaded_dir)) as writer:
        before = writer.store.count(SAMPLE_GRAPH)
        halfway = threading.Event()
        resume = threading.Event()
        own: list[int] = []

        def fill(w: object) -> None:
            w.write(_triples(1000, "during"))  # type: ignore[attr-defined]
            own.append(writer.store.count(SAMPLE_GRAPH))
            halfway.set()
            assert resume.wait(60)
            w.write(_triples(500, "after"))  # type: ignore[attr-defined]

        thread = threading.Thread(target=writer.store.replace_graph, args=(SAMPLE_GRAPH, fill))
        thread.start()
        try:
            assert halfway.wait(60)
            assert writer.store.count(SAMPLE_GRAPH) == before
            assert writer.store.has_graph(SAMPLE_GRAPH)
            assert len(list(writer.store.quads(SAMPLE_GRAPH))) == before
            assert writer.store.graphs() == sorted(writer.store.graphs())
            assert count(writer, f"GRAPH <{SAMPLE_GRAPH}> {{ ?s ?p ?o }}") == before
        finally:
            resume.set()
            thread.join(60)
        assert own == [1000]
        assert writer.store.count(SAMPLE_GRAPH) == 1500
        assert not (loaded_dir / JOURNAL_DIR).exists()


def test_drop(memory_brain: LabBrain) -> None:
    memory_brain.load(str(SAMPLE))
    memory_brain.drop("akamatsulab-sample")
    assert SAMPLE_GRAPH not in memory_brain.store.graphs()
    assert memory_brain.datasets() == []
    assert memory_brain.index.count() == 0
    with pytest.raises(GraphNotFound):
        memory_brain.drop("akamatsulab-sample")


def test_store_copy_with_shutil_is_a_valid_store(loaded_dir: Path, tmp_path: Path) -> None:
    """A closed store directory is self-contained (moving it keeps data and index)."""
    moved = tmp_path / "moved"
    shutil.copytree(loaded_dir, moved)
    with LabBrain(settings_for(moved), read_only=True) as brain:
        assert brain.index.count(SAMPLE_GRAPH) == 150
        assert brain.index.stale_graphs(brain.store) == ([], [])


def test_iterator_errors_roll_back(memory_brain: LabBrain) -> None:
    def exploding() -> Iterator[Triple]:
        yield from _triples(10)
        raise ValueError("source went away")

    memory_brain.load(str(SAMPLE))
    before = snapshot(memory_brain)
    with pytest.raises(ValueError, match="source went away"):
        memory_brain.store.replace_graph(SAMPLE_GRAPH, lambda w: w.write(exploding()))
    assert snapshot(memory_brain) == before


# ---------------------------------------------------------------------------- store locations
ELSEWHERE = "use another store location (--store or LABBRAIN_STORE)"
NOTES = b"my notes, not a store\n"


def _tree(directory: Path) -> dict[str, bytes | None]:
    """Every path under ``directory`` with the content of its files (None for a directory)."""
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(directory.rglob("*"))
    }


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _refuse(monkeypatch: pytest.MonkeyPatch, name: str, code: int, where: Path) -> None:
    """Make ``os.<name>`` fail with ``code`` for ``where`` (and what lies under it), as the
    system does for a user without the permission (root has it)."""
    original = getattr(os, name)

    def refused(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(os.fsdecode(path)).is_relative_to(where):
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return original(path, *args, **kwargs)

    monkeypatch.setattr(os, name, refused)


def _read_only_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    parent = tmp_path / "read-only"
    parent.mkdir()
    if _as_root():
        _refuse(monkeypatch, "mkdir", errno.EACCES, parent)
    else:
        parent.chmod(0o555)
    return parent / "store"


def _read_only_store_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An existing, empty directory in which no file can be created."""
    directory = tmp_path / "read-only-store"
    directory.mkdir()
    if _as_root():
        _refuse(monkeypatch, "open", errno.EACCES, directory)
    else:
        directory.chmod(0o555)
    return directory


#: name -> (the store path under tmp_path, errno of a writable open, what a read-only open
#: says: errno, or None for "no labbrain store" since nothing is there)
LOCATIONS: dict[str, tuple[Any, int, int | None]] = {
    "under a file": (lambda tmp, _: tmp / "notes.txt" / "store", errno.ENOTDIR, errno.ENOTDIR),
    "name too long": (lambda tmp, _: tmp / ("s" * 300), errno.ENAMETOOLONG, errno.ENAMETOOLONG),
    "too long below a new folder": (
        lambda tmp, _: tmp / "new" / "deeper" / ("s" * 300),
        errno.ENAMETOOLONG,
        None,
    ),
    "parent read-only": (_read_only_parent, errno.EACCES, None),
    "in /proc": (lambda _, __: Path("/proc/1/labbrain-store"), errno.ENOENT, None),
}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A regular file where a store might be asked for."""
    path = tmp_path / "notes.txt"
    path.write_bytes(NOTES)
    return path


def test_a_file_as_the_store_is_refused_and_left_as_it_was(notes: Path) -> None:
    for read_only in (False, True):
        with pytest.raises(StoreLocationInvalid) as caught:
            open_store(str(notes), read_only=read_only)
        assert str(caught.value) == (
            f"{notes} is a file, not a labbrain store directory; {ELSEWHERE}"
        )
        assert caught.value.exit_code == 3
    assert _tree(notes.parent) == {"notes.txt": NOTES}


@pytest.mark.parametrize("case", list(LOCATIONS))
def test_a_store_directory_that_cannot_be_made_is_refused_with_the_reason(
    case: str, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, code, read_code = LOCATIONS[case]
    tmp_path = notes.parent
    path = make(tmp_path, monkeypatch)
    if case == "in /proc":
        require("/proc/1", Path("/proc/1").is_dir(), "a Linux process file system")
    before = _tree(tmp_path)
    with pytest.raises(StoreLocationInvalid) as caught:
        open_store(str(path))
    assert str(caught.value) == (
        f"the store directory {path} cannot be created there ({os.strerror(code)}); {ELSEWHERE}"
    )
    assert caught.value.exit_code == 3
    if read_code is None:
        with pytest.raises(StoreNotFound):
            open_store(str(path), read_only=True)
    else:
        with pytest.raises(StoreLocationInvalid) as caught:
            open_store(str(path), read_only=True)
        assert str(caught.value) == (
            f"the store directory {path} cannot be read ({os.strerror(read_code)}); {ELSEWHERE}"
        )
    assert _tree(tmp_path) == before  # nothing was written, no folder left behind


def test_a_store_directory_that_cannot_be_written_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _read_only_store_directory(tmp_path, monkeypatch)
    with pytest.raises(StoreLocationInvalid) as caught:
        open_store(str(directory))
    assert str(caught.value) == (
        f"the store directory {directory} cannot be written "
        f"({os.strerror(errno.EACCES)}); {ELSEWHERE}"
    )
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("command", [["load", str(SAMPLE)], ["stats"]])
@pytest.mark.parametrize("case", ["a file", *LOCATIONS])
def test_the_command_line_says_what_is_wrong_with_the_store_in_one_line(
    case: str, command: list[str], notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`labbrain --store <bad place> load|stats`: one line on stderr, exit code 3, nothing
    written."""
    tmp_path = notes.parent
    path = notes if case == "a file" else LOCATIONS[case][0](tmp_path, monkeypatch)
    if case == "in /proc":
        require("/proc/1", Path("/proc/1").is_dir(), "a Linux process file system")
    before = _tree(tmp_path)
    result = CliRunner().invoke(main, ["--store", str(path), *command])
    assert result.exit_code == 3, result.exception
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    if case == "a file":
        assert f"{path} is a file, not a labbrain store directory" in line
    elif command[0] == "load":
        code = LOCATIONS[case][1]
        assert f"{path} cannot be created there ({os.strerror(code)})" in line
    elif LOCATIONS[case][2] is None:
        assert line == f"error: no labbrain store at {path}; load data first with `labbrain load`"
    else:
        assert f"{path} cannot be read ({os.strerror(LOCATIONS[case][2])})" in line
    assert _tree(tmp_path) == before


@pytest.mark.subprocess
@pytest.mark.parametrize("case", ["a file", "under a file", "name too long", "in /proc"])
def test_the_labbrain_command_prints_no_traceback_for_a_bad_store_location(
    case: str, notes: Path
) -> None:
    """The real command, in a child process, for the locations of the report."""
    tmp_path = notes.parent
    path = notes if case == "a file" else LOCATIONS[case][0](tmp_path, None)
    if case == "in /proc":
        require("/proc/1", Path("/proc/1").is_dir(), "a Linux process file system")
    before = _tree(tmp_path)
    for command in (["load", str(SAMPLE)], ["stats"]):
        result = subprocess.run(
            [sys.executable, "-m", "labbrain", "--store", str(path), *command],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert result.returncode == 3, result.stderr
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert _tree(tmp_path) == before


# ---------------------------------------------------------------------------- isolated work
def test_isolated_work_starts_its_child_with_forkserver_or_spawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Never ``fork``: forkserver where the platform has it, else spawn (Windows)."""
    has_forkserver = "forkserver" in multiprocessing.get_all_start_methods()
    assert process_context().get_start_method() == ("forkserver" if has_forkserver else "spawn")
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert process_context().get_start_method() == "spawn"


@pytest.mark.subprocess
def test_isolated_work_runs_without_forking_this_process(
    loaded_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A console query on disk runs in a child process started without ``os.fork`` here
    (forking a process that runs threads is unsafe on macOS, and Windows has no fork)."""

    def refused() -> int:
        raise AssertionError("os.fork was called in the process that asked for the query")

    with LabBrain(settings_for(loaded_dir), read_only=True) as brain:
        quads = sum(1 for graph in brain.store.graphs() for _ in brain.store.quads(graph))
        monkeypatch.setattr(os, "fork", refused)
        outcome = run_query(
            brain.store,
            "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
            cap=5,
            seconds=60,
        )
    xsd_integer = "<http://www.w3.org/2001/XMLSchema#integer>"
    assert outcome.data.decode().split() == ["?n", f'"{quads}"^^{xsd_integer}']
