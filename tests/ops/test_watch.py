"""Watched sources: a vault or an export file changes, the dataset follows; a source that
cannot be read as it is leaves the dataset as it was."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE
from generate_vault import make_lab, note_path, write_vault
from helpers import embed_all
from labbrain.core import LabBrain
from labbrain.index.search_query import SearchQuery
from labbrain.ops.watch import SourceWatcher, WatchEvent
from labbrain.settings import Settings

#: How long a test waits for an event before it fails (a bound, not a measurement).
PATIENCE = 30.0


class Watching:
    """A SourceWatcher running in a thread, its events in a queue."""

    def __init__(self, brain: LabBrain, sources: list[str], polling: bool | None) -> None:
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.watcher = SourceWatcher(
            brain, sources, on_event=self.events.put, debounce_ms=200, force_polling=polling
        )
        self.thread = threading.Thread(target=self.watcher.run)

    def next(self) -> WatchEvent:
        try:
            return self.events.get(timeout=PATIENCE)
        except queue.Empty:
            raise AssertionError(f"no watch event within {PATIENCE} s") from None

    def started(self) -> None:
        assert self.watcher.wait_started(PATIENCE)
        while not self.events.empty():  # the checks made when the watch began
            self.events.get()


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[LabBrain]:
    with LabBrain(Settings(store=str(tmp_path / "store"))) as opened:
        yield opened


@pytest.fixture(params=[None, True], ids=["events", "polling"])
def polling(request: pytest.FixtureRequest) -> bool | None:
    return request.param


def _watch(brain: LabBrain, source: Path, polling: bool | None) -> Iterator[Watching]:
    watching = Watching(brain, [str(source)], polling)
    watching.thread.start()
    try:
        yield watching
    finally:
        watching.watcher.stop()
        watching.thread.join(PATIENCE)


def test_a_vault_edit_is_loaded_and_a_broken_save_keeps_the_dataset(
    brain: LabBrain, tmp_path: Path, polling: bool | None
) -> None:
    lab = make_lab(5, nodes=12, relations=10)
    vault = write_vault(lab, tmp_path / "v")
    for watching in _watch(brain, vault, polling):
        first = watching.next()
        assert first.outcome == "loaded" and first.report is not None
        graph = first.report.graph
        watching.started()
        assert brain.search(SearchQuery("zyxomatic", graphs=(graph,))).hits == []
        note = vault / note_path(lab, lab.nodes[3])
        note.write_text(note.read_text() + "\nThe zyxomatic assay.\n")
        event = watching.next()
        assert event.outcome == "changed"  # by part: one note edited
        assert event.report is not None and event.report.changed is not None
        assert event.report.changed["nodesEdited"] == 1
        hits = brain.search(SearchQuery("zyxomatic", graphs=(graph,))).hits
        assert [h.node.uid for h in hits] == [lab.nodes[3].instance_id]
        quads = brain.store.count(graph)
        # A save that leaves relations.json unreadable: reported, the dataset as it was.
        (vault / "relations.json").write_text('{"version": 1, "relations": {')
        broken = watching.next()
        assert broken.outcome == "failed" and "relations.json" in (broken.error or "")
        assert brain.store.count(graph) == quads
        assert [
            h.node.uid for h in brain.search(SearchQuery("zyxomatic", graphs=(graph,))).hits
        ] == [lab.nodes[3].instance_id]
        # Deleting the note: the dataset loses it (and its relations).
        (vault / "relations.json").write_text(
            json.dumps({"version": 1, "lastModified": 1, "relations": {}})
        )
        assert watching.next().outcome == "changed"
        note.unlink()
        event = watching.next()
        assert event.outcome == "changed"
        assert event.report is not None and event.report.nodes == 11
        assert brain.search(SearchQuery("zyxomatic", graphs=(graph,))).hits == []


def test_a_half_written_export_never_replaces_the_dataset(brain: LabBrain, tmp_path: Path) -> None:
    from conftest import SAMPLE

    export = tmp_path / "lab.jsonld"
    good = SAMPLE.read_bytes()
    export.write_bytes(good)
    for watching in _watch(brain, export, None):
        first = watching.next()
        assert first.report is not None and first.report.nodes == 150
        graph = first.report.graph
        watching.started()
        quads = brain.store.count(graph)
        export.write_bytes(good[: len(good) // 2])  # a browser still writing it
        half = watching.next()
        assert half.outcome == "failed"
        assert brain.store.count(graph) == quads
        document = json.loads(good)
        document["@graph"] = [e for e in document["@graph"] if e.get("@id") != "pages:ar5rfh34m"]
        export.write_text(json.dumps(document))
        done = watching.next()
        assert done.report is not None and done.report.nodes == 149


def test_only_files_that_bear_on_the_graph_are_watched(brain: LabBrain, tmp_path: Path) -> None:
    lab = make_lab(6, nodes=4, relations=2)
    vault = write_vault(lab, tmp_path / "v")
    watcher = SourceWatcher(brain, [str(vault)])
    relevant = {
        "Discourse Nodes/CLM - x.md": True,
        "relations.json": True,
        "Deep/Folder/relations.json": True,
        ".obsidian/plugins/discourse-graphs/data.json": True,
        ".obsidian/workspace.json": False,
        ".obsidian/plugins/other/data.json": False,
        ".trash/CLM - gone.md": False,
        "Discourse Nodes/CLM - x.md.swp": False,
        "Discourse Nodes/.#CLM - x.md": False,
        "attachments/figure.png": False,
    }
    for path, expected in relevant.items():
        assert watcher._relevant(None, str(vault / path)) is expected, path
    assert watcher._relevant(None, str(tmp_path / "other.md")) is False


@pytest.mark.subprocess
def test_labbrain_watch_reports_each_load(tmp_path: Path) -> None:
    lab = make_lab(8, nodes=6, relations=4)
    vault = write_vault(lab, tmp_path / "v")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from labbrain.cli import main; main()",
            "--store",
            str(tmp_path / "s"),
            "watch",
            str(vault),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        assert first["outcome"] == "loaded" and first["report"]["nodes"] == 6
        note = vault / note_path(lab, lab.nodes[0])
        note.write_text(note.read_text() + "\nmore\n")
        while True:  # the check when the watch began may report "unchanged" first
            event = json.loads(process.stdout.readline())
            if event["outcome"] != "unchanged":
                break
        assert event["outcome"] == "changed"  # a vault edit is written by part
        assert event["report"]["changed"]["nodesEdited"] == 1
    finally:
        process.terminate()
        process.wait(PATIENCE)


@pytest.mark.subprocess
def test_serve_watch_answers_from_the_vault_as_it_is_edited(tmp_path: Path) -> None:
    """`labbrain serve --watch VAULT`: the endpoint answers from the vault loaded at start,
    and from the edited vault a moment after a save, without a restart."""
    import signal

    import httpx2 as httpx

    from helpers import free_port

    lab = make_lab(12, nodes=10, relations=8)
    vault = write_vault(lab, tmp_path / "v")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "labbrain", "--store", str(tmp_path / "store"), "serve",
         "--port", str(port), "--watch", str(vault)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    ask = "ASK { ?node <http://rdfs.org/sioc/ns#content> ?text FILTER(CONTAINS(?text, 'qwyzzle')) }"

    def answer(query: str) -> Any:
        response = httpx.get(f"http://127.0.0.1:{port}/sparql", params={"query": query})
        assert response.status_code == 200, response.text
        return response.json()

    try:
        deadline = time.monotonic() + 60
        nodes = "SELECT (COUNT(?n) AS ?c) WHERE { ?n <http://purl.org/dc/terms/title> ?t }"
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                count = answer(nodes)["results"]["bindings"][0]["c"]["value"]
                if int(count) >= 10:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not answer from the vault"
            time.sleep(0.2)
        assert answer(ask)["boolean"] is False
        note = vault / note_path(lab, lab.nodes[2])
        note.write_text(note.read_text() + "\nThe qwyzzle assay.\n")
        deadline = time.monotonic() + 30
        while not answer(ask)["boolean"]:
            assert time.monotonic() < deadline, "the edit did not reach the endpoint"
            time.sleep(0.2)
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 0


def test_serve_watch_refuses_what_is_no_source_before_serving(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labbrain.cli import main

    plain = tmp_path / "notes"
    plain.mkdir()
    result = CliRunner().invoke(
        main, ["--store", str(tmp_path / "store"), "serve", "--watch", str(plain)]
    )
    assert result.exit_code != 0
    [line] = result.stderr.strip().splitlines()
    assert "not a Discourse Graphs vault" in line
    assert not (tmp_path / "store").exists()  # refused before the store was opened


@pytest.mark.subprocess
def test_labbrain_watch_says_what_an_update_by_part_changed(tmp_path: Path) -> None:
    lab = make_lab(8, nodes=6, relations=4)
    vault = write_vault(lab, tmp_path / "v")
    process = subprocess.Popen(
        [sys.executable, "-c", "from labbrain.cli import main; main()",
         "--store", str(tmp_path / "s"), "watch", str(vault)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert ": loaded, 6 nodes" in process.stdout.readline()
        note = vault / note_path(lab, lab.nodes[0])
        note.write_text(note.read_text() + "\nmore\n")
        while True:  # the check when the watch began may report "unchanged" first
            line = process.stdout.readline()
            if not line.rstrip().endswith(": unchanged"):
                break
        assert ": updated by part, nodes +0 ~1 -0, relations +0 -0 in " in line
    finally:
        process.terminate()
        process.wait(PATIENCE)


def test_a_replaced_export_brings_its_vectors_in_step(
    brain: LabBrain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export with vectors, edited (one page's text changed, one page removed) and
    loaded again by the watcher: its vectors are those of the edited export embedded whole
    (by the digests of their texts), the removed page's is gone, and only one was computed."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    export = tmp_path / "lab.jsonld"
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    export.write_text(json.dumps(document), encoding="utf-8")
    brain.load(str(export))
    embed_all(brain)
    pages = [e for e in document["@graph"] if "title" in e and "content" in e]
    pages[0]["content"] += " One more observation."
    document["@graph"].remove(pages[-1])
    export.write_text(json.dumps(document), encoding="utf-8")
    watcher = SourceWatcher(brain, [str(export)])
    assert watcher.sync(str(export)).outcome == "loaded"
    with LabBrain(Settings(store=str(tmp_path / "fresh"))) as fresh:
        fresh.load(str(export))
        embed_all(fresh)
        assert brain.vectors.digests() == fresh.vectors.digests()
    assert watcher._vectors.embedded == 1 and watcher._vectors.dropped == 1


# ---------------------------------------------------------------------- no events left
_IN_MODIFY = 0x2


@contextmanager
def inotify_used_up(scratch: Path, what: str) -> Iterator[None]:
    """While inside, this user has no inotify ``instances`` left (making an event watcher
    fails) or no ``watches`` (a watcher is made, watching a folder fails), as on a machine
    whose editors, IDEs and sync clients took them all. Taken by this process through the
    kernel's own calls, and given back on exit."""
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    libc = ctypes.CDLL(None, use_errno=True)
    instances: list[int] = []
    try:
        if what == "instances":
            while (fd := libc.inotify_init1(0)) >= 0:
                instances.append(fd)
            assert ctypes.get_errno() == errno.EMFILE
        else:
            # Every (instance, file) pair is a watch: a few instances over 1,700 files reach
            # any usual limit (8,192 to 524,288) without creating 200,000 files.
            scratch.mkdir()
            files = []
            for number in range(1_700):
                (scratch / f"f{number}").touch()
                files.append(str(scratch / f"f{number}").encode())
            full = False
            while not full and len(instances) < 120:
                fd = libc.inotify_init1(0)
                assert fd >= 0, "no inotify instance to take watches with"
                instances.append(fd)
                full = any(libc.inotify_add_watch(fd, f, _IN_MODIFY) < 0 for f in files)
            assert full and ctypes.get_errno() == errno.ENOSPC, "the watch limit was not reached"
        yield
    finally:
        for fd in instances:
            os.close(fd)


@pytest.mark.slow  # takes every inotify instance of the user: nothing may run beside it
def test_with_no_inotify_instance_left_the_watcher_polls(
    brain: LabBrain, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lab = make_lab(21, nodes=6, relations=4)
    vault = write_vault(lab, tmp_path / "v")
    with inotify_used_up(tmp_path / "scratch", "instances"), caplog.at_level("WARNING"):
        for watching in _watch(brain, vault, None):
            assert watching.next().outcome == "loaded"
            watching.started()
            assert watching.watcher.polling
            note = vault / note_path(lab, lab.nodes[0])
            note.write_text(note.read_text(encoding="utf-8") + "\nEdited while polled.\n")
            event = watching.next()
            assert event.outcome == "changed" and event.report is not None
            assert event.report.changed is not None and event.report.changed["nodesEdited"] == 1
    assert "file-system events unavailable" in caplog.text and "polling" in caplog.text


@pytest.mark.slow  # takes every inotify watch of the user, and writes 100,000 files
def test_a_vault_of_100000_files_beyond_the_watch_limit_is_polled(
    brain: LabBrain, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A vault of 40 discourse notes among 100,000 files (daily notes in 1,000 folders) while
    no inotify watch is left: the watcher says so and scans the vault, less often for so
    many files (every 4 s: a ms per 25 files); an edit still reaches the dataset, and the
    plain notes never become nodes."""
    lab = make_lab(22, nodes=40, relations=30)
    vault = write_vault(lab, tmp_path / "v")
    for day in range(1_000):
        folder = vault / "Daily" / f"{day:04d}"
        folder.mkdir(parents=True)
        for number in range(100):
            (folder / f"note {number}.md").write_text(f"A plain note about [[day {day}]].\n")
    with inotify_used_up(tmp_path / "scratch", "watches"), caplog.at_level("INFO"):
        for watching in _watch(brain, vault, None):
            first = watching.next()
            assert first.outcome == "loaded" and first.report is not None
            assert first.report.nodes == 40
            watching.started()
            assert watching.watcher.polling
            # 100,000 daily notes and the vault's few graph files, a ms per 25 files
            assert 4_000 <= watching.watcher.poll_delay_ms < 4_010
            note = vault / note_path(lab, lab.nodes[0])
            note.write_text(note.read_text(encoding="utf-8") + "\nEdited while polled.\n")
            while (event := watching.next()).outcome == "unchanged":
                pass
            assert event.outcome == "changed" and event.report is not None
            assert event.report.nodes == 40
    assert "OS file watch limit reached" in caplog.text and "polling the sources" in caplog.text
    assert re.search(r"scanning 1000\d\d files every 4\.0 s", caplog.text)


def test_a_symlink_loop_and_a_link_out_of_the_vault_are_never_followed(
    brain: LabBrain, tmp_path: Path, polling: bool | None
) -> None:
    """A folder linked to the vault itself (a loop) and one linked outside it: the load
    reports both and reads neither, the watch starts (events or polling) and follows an edit,
    and a note saved outside the vault never reaches the dataset."""
    lab = make_lab(23, nodes=6, relations=4)
    vault = write_vault(lab, tmp_path / "v")
    outside = tmp_path / "outside"
    outside.mkdir()
    claim_type = lab.type_ids["Claim"]
    (outside / "CLM - not ours.md").write_text(f"---\nnodeTypeId: {claim_type}\n---\nsecret\n")
    (vault / "loop").symlink_to(vault, target_is_directory=True)
    (vault / "Discourse Nodes" / "out").symlink_to(outside, target_is_directory=True)
    for watching in _watch(brain, vault, polling):
        first = watching.next()
        assert first.outcome == "loaded" and first.report is not None
        assert first.report.nodes == 6
        linked = [w for w in first.report.warnings if "symbolic links" in w]
        assert linked and "loop" in linked[0] and "Discourse Nodes/out" in linked[0]
        watching.started()
        (outside / "CLM - also not ours.md").write_text(
            f"---\nnodeTypeId: {claim_type}\n---\nsecret too\n"
        )
        note = vault / note_path(lab, lab.nodes[1])
        note.write_text(note.read_text(encoding="utf-8") + "\nEdited beside a loop.\n")
        while (event := watching.next()).outcome == "unchanged":
            pass
        assert event.outcome == "changed" and event.report is not None
        assert event.report.nodes == 6
    assert not brain.search(SearchQuery("secret")).hits
