"""`labbrain backup`, `labbrain restore` and `labbrain check`: consistent copies beside a live
writer, verified restores that change nothing when they fail, and every check's problem made
for real (then repaired)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from mcp import Client, StdioServerParameters

from conftest import (
    REMOTE,
    ROOT,
    SAMPLE,
    SAMPLE_GRAPH,
    SAMPLE_V0,
    VIRTUOSO,
    OxigraphServer,
    VirtuosoServer,
    remote_server,
    remote_settings,
    require,
    settings_for,
)
from generate import write_export
from helpers import fingerprint
from labbrain.agent.memory.memories import Memories
from labbrain.agent.writer import AgentWriter
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.index import vectors as vectors_module
from labbrain.index.search_query import SearchQuery
from labbrain.index.vectors import VECTORS_FILE, VectorIndex
from labbrain.ops import backup as backup_module
from labbrain.ops.backup import MANIFEST
from labbrain.rdf.namespaces import TASKS_GRAPH
from labbrain.store.journal import (
    JOURNAL_DIR,
    JOURNAL_MARKER,
    RESTORE_ASIDE,
    RESTORED,
    present_files,
)
from labbrain.store.remote.sparql import new_staging_graph
from labbrain.tasks.ledger import TaskLedger, new_task, transition

LABBRAIN = str(Path(sys.executable).with_name("labbrain"))
V0_GRAPH = "urn:labbrain:dataset:v0-sample"
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"
ONTOLOGY_GRAPH = "urn:labbrain:ontology"
CHANGES_GRAPH = "urn:labbrain:changes"


def _ontology_quads() -> int:
    with LabBrain(settings_for(":memory:")) as brain:
        return brain.store.count(ONTOLOGY_GRAPH)


def _change_quads() -> int:
    """The size of the sample's first-load change record (its content is tested in
    tests/ingest/test_changes.py; here it is one more graph a backup must keep)."""
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(SAMPLE))
        return brain.store.count(CHANGES_GRAPH)


#: Quads per graph of a store holding only the sample (2,499 quads, as the load says; the
#: system graph holds the ontology digest and the load record; the changes graph what the
#: load changed).
SAMPLE_GRAPHS = {
    SAMPLE_GRAPH: 2499,
    ONTOLOGY_GRAPH: _ontology_quads(),
    "urn:labbrain:system": 12,
    CHANGES_GRAPH: _change_quads(),
}
SAMPLE_QUADS = sum(SAMPLE_GRAPHS.values())
SEARCHES = ("membrane tension", "actin branching endocytosis", "Cytosim simulation")
STALE_STAGING = "urn:labbrain:staging:20200101T000000Z-0123456789abcdef"


def run(
    store: Path | str, *args: str, endpoint: OxigraphServer | VirtuosoServer | None = None
) -> Result:
    """`labbrain --store STORE ARGS` (or `--endpoint`) in-process."""
    where = ["--endpoint", endpoint.query] if endpoint else ["--store", str(store)]
    return CliRunner().invoke(main, [*where, *args])


def as_json(result: Result) -> Any:
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


def findings(result: Result) -> dict[str, dict[str, Any]]:
    """The findings of `check --json`, by check name."""
    return {f["check"]: f for f in as_json(result)["findings"]}


def statuses(result: Result) -> dict[str, str]:
    return {name: f["status"] for name, f in findings(result).items()}


def answers(brain: LabBrain) -> list[list[tuple[str, str]]]:
    """What the sample searches answer: (iri, snippet) of each hit, in order."""
    return [
        [(h.node.iri, h.snippet) for h in brain.search(SearchQuery(text, limit=8)).hits]
        for text in SEARCHES
    ]


def store_files(store: Path) -> dict[str, str]:
    """Every file of a store directory (but the lock) with its SHA-256."""
    return {
        p.relative_to(store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(store.rglob("*"))
        if p.is_file() and p.name != "writer.lock"
    }


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Made once: a closed store holding the sample, a backup of it, and a closed store
    holding the v0 sample; tests work on copies."""
    root = tmp_path_factory.mktemp("pristine")
    with LabBrain(settings_for(root / "sample")) as brain:
        brain.load(str(SAMPLE))
    with LabBrain(settings_for(root / "v0")) as brain:
        brain.load(str(SAMPLE_V0))
    backup_module.backup_store(settings_for(root / "sample"), root / "backup")
    return {"sample": root / "sample", "v0": root / "v0", "backup": root / "backup"}


@pytest.fixture
def sample_store(pristine: dict[str, Path], tmp_path: Path) -> Path:
    """An on-disk store holding the sample, closed."""
    return Path(shutil.copytree(pristine["sample"], tmp_path / "store"))


@pytest.fixture
def sample_backup(pristine: dict[str, Path], tmp_path: Path) -> Path:
    """A backup of a store holding the sample."""
    return Path(shutil.copytree(pristine["backup"], tmp_path / "backup"))


@pytest.fixture
def v0_store(pristine: dict[str, Path], tmp_path: Path) -> Path:
    """An on-disk store holding the v0 sample, closed."""
    return Path(shutil.copytree(pristine["v0"], tmp_path / "other"))


# ---------------------------------------------------------------------------- backup, restore
def test_backup_and_restore_round_trip(sample_store: Path, tmp_path: Path) -> None:
    _embed_all(sample_store)
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        before, searched = fingerprint(brain), answers(brain)
    target = tmp_path / "backup"
    result = run(sample_store, "backup", str(target), "--json")
    assert result.exit_code == 0, result.stderr
    summary = as_json(result)
    assert summary["graphs"] == SAMPLE_GRAPHS and summary["quads"] == SAMPLE_QUADS
    assert summary["datasets"] == ["akamatsulab-sample"] and summary["skipped"] == {}
    assert summary["source"] == str(sample_store) and summary["format"] == 1
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["datasets"][0]["nodes"] == 150 and manifest["datasets"][0]["quads"] == 2499
    assert {"index.sqlite", "vectors.sqlite", "oxigraph/CURRENT"} <= set(manifest["files"])
    assert not any(name.endswith("writer.lock") for name in manifest["files"])
    assert not list(tmp_path.glob("backup.partial-*"))

    restored = tmp_path / "restored"
    result = run(restored, "restore", str(target), "--json")
    assert result.exit_code == 0, result.stderr
    report = as_json(result)
    assert report["replaced"] is False and report["quads"] == SAMPLE_QUADS
    assert report["reindexed"] == {} and report["removedFromIndex"] == []  # index copied as is
    with LabBrain(settings_for(restored), read_only=True) as brain:
        assert fingerprint(brain) == before
        assert answers(brain) == searched
    assert sorted(p.name for p in restored.iterdir()) == [
        "index.fulltext",
        "index.sqlite",
        "index.sqlite-shm",
        "index.sqlite-wal",
        "oxigraph",
        "vectors.sqlite",
        "writer.lock",
    ]
    check = run(restored, "check", "--json")
    assert check.exit_code == 0 and set(statuses(check).values()) == {"ok"}
    assert findings(check)["vector index"]["detail"] == "150 vectors, all current (test-hash-8)"
    # reading a backup changes none of its files: it restores again
    assert run(tmp_path / "again", "restore", str(target)).exit_code == 0


def test_backup_text_output_and_refusals(sample_store: Path, tmp_path: Path) -> None:
    target = tmp_path / "backup"
    result = run(sample_store, "backup", str(target))
    assert result.exit_code == 0
    assert f"backed up {sample_store} to {target}: {SAMPLE_QUADS:,} quads in 4 graphs, " in (
        result.stdout
    )
    assert " 1 dataset(s), " in result.stdout
    again = run(sample_store, "backup", str(target))
    assert again.exit_code == 2
    assert f"{target} already exists and is not empty; name a new directory" in again.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert run(sample_store, "backup", str(a_file)).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(sample_store, "backup", str(empty)).exit_code == 0
    assert (empty / MANIFEST).is_file()
    missing = run(tmp_path / "no-store", "backup", str(tmp_path / "b2"))
    assert missing.exit_code == 3 and "no labbrain store at" in missing.stderr
    assert not (tmp_path / "b2").exists() and not list(tmp_path.glob("b2.partial-*"))
    memory = run(":memory:", "backup", str(tmp_path / "b3"))
    assert memory.exit_code == 2 and "needs a store directory, not :memory:" in memory.stderr


def test_backup_skips_a_corrupt_index_and_restore_rebuilds_it(
    sample_store: Path, tmp_path: Path
) -> None:
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        searched = answers(brain)
    (sample_store / "index.sqlite").write_bytes(b"\x00garbage" * 512)
    result = run(sample_store, "backup", str(tmp_path / "backup"))
    assert result.exit_code == 0
    assert "warning: index.sqlite not copied: not a usable SQLite database" in result.stderr
    assert "index.sqlite" not in json.loads((tmp_path / "backup" / MANIFEST).read_text())["files"]
    restored = run(tmp_path / "restored", "restore", str(tmp_path / "backup"), "--json")
    assert restored.exit_code == 0, restored.stderr
    assert as_json(restored)["reindexed"] == {SAMPLE_GRAPH: 150}
    with LabBrain(settings_for(tmp_path / "restored"), read_only=True) as brain:
        assert answers(brain) == searched


def test_backup_and_restore_refuse_an_endpoint(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/query"  # never contacted: refused before any request
    for args in (["backup", str(tmp_path / "b")], ["restore", str(tmp_path / "b")]):
        result = CliRunner().invoke(main, ["--endpoint", url, *args])
        assert result.exit_code == 2, result.stderr
        assert f"works on an embedded store only, not on the SPARQL endpoint {url}" in (
            result.stderr
        )
        assert "back that server up with its own tools" in result.stderr
    assert not (tmp_path / "b").exists()
    memory = CliRunner().invoke(main, ["--store", ":memory:", "restore", str(tmp_path / "b")])
    assert memory.exit_code == 2 and "restore needs a store directory, not :memory:" in (
        memory.stderr
    )


def test_interrupted_backup_leaves_only_a_partial_directory(
    sample_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(backup_module, "_fsync_tree", broken)
    target = tmp_path / "backup"
    with pytest.raises(OSError, match="disk full"):
        backup_module.backup_store(settings_for(sample_store), target)
    assert not target.exists() and not list(tmp_path.glob("backup.partial-*"))


def _corrupt_sst(backup: Path) -> None:
    sst = max((backup / "oxigraph").glob("*.sst"), key=lambda p: p.stat().st_size)
    data = bytearray(sst.read_bytes())
    data[len(data) // 2] ^= 0xFF
    sst.write_bytes(bytes(data))


def _edit_manifest(backup: Path, **changes: Any) -> None:
    manifest = json.loads((backup / MANIFEST).read_text())
    for key, value in changes.items():
        if key == "graphs":
            manifest["graphs"].update(value)
        else:
            manifest[key] = value
    (backup / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: shutil.rmtree(b), "no such directory"),
        (lambda b: (b / MANIFEST).unlink(), "no labbrain-backup.json"),
        (lambda b: (b / MANIFEST).write_text("{not json"), "unreadable labbrain-backup.json"),
        (lambda b: _edit_manifest(b, format=99), "backup format 99; this labbrain reads 1"),
        (lambda b: (b / "index.sqlite").unlink(), "1 file(s) missing, e.g. index.sqlite"),
        (_corrupt_sst, "changed since the backup was written"),
        (
            lambda b: _edit_manifest(b, graphs={SAMPLE_GRAPH: 2350}),
            f"does not hold the quads the manifest records (1 graph(s) differ, e.g. "
            f"{SAMPLE_GRAPH})",
        ),
    ],
    ids=["missing", "no-manifest", "bad-manifest", "format", "file-missing", "corrupt", "counts"],
)
def test_restore_refuses_a_bad_backup(
    sample_backup: Path, v0_store: Path, tmp_path: Path, damage: Any, message: str
) -> None:
    damage(sample_backup)
    # into an empty store: nothing is created
    empty = tmp_path / "new-store"
    result = run(empty, "restore", str(sample_backup))
    assert result.exit_code == 2, result.stderr
    assert f"backup {sample_backup} refused: " in result.stderr and message in result.stderr
    assert "nothing was changed" in result.stderr and "Traceback" not in result.stderr
    assert not empty.exists() or not (empty / "oxigraph").exists()
    # over a store with data (even with --replace): unchanged
    other = v0_store
    files = store_files(other)
    assert run(other, "restore", "--replace", str(sample_backup)).exit_code == 2
    assert store_files(other) == files


def test_restore_refuses_an_unfinished_backup(sample_backup: Path, tmp_path: Path) -> None:
    partial = tmp_path / "backup.partial-1a2b3c4d"
    shutil.copytree(sample_backup, partial)
    (partial / MANIFEST).unlink()
    result = run(tmp_path / "new", "restore", str(partial))
    assert result.exit_code == 2
    assert "an unfinished backup (it was interrupted)" in result.stderr


def test_restore_refuses_a_store_with_data_unless_replace(
    sample_backup: Path, v0_store: Path, tmp_path: Path
) -> None:
    other = v0_store
    with LabBrain(settings_for(other), read_only=True) as brain:
        searched = [h.node.iri for h in brain.search(SearchQuery("actin")).hits]
    files = store_files(other)
    refused = run(other, "restore", str(sample_backup))
    assert refused.exit_code == 2
    assert f"store {other} holds data; restore into an empty store, or add --replace" in (
        refused.stderr
    )
    assert store_files(other) == files
    replaced = run(other, "restore", "--replace", str(sample_backup), "--json")
    assert replaced.exit_code == 0, replaced.stderr
    assert as_json(replaced)["replaced"] is True
    with LabBrain(settings_for(other), read_only=True) as brain:
        assert brain.store.graphs() == sorted(SAMPLE_GRAPHS)
        assert brain.index.indexed_loads().keys() == {SAMPLE_GRAPH}
        assert [h.node.iri for h in brain.search(SearchQuery("actin")).hits] != searched
    assert not (other / RESTORE_ASIDE).exists() and not (other / "restore.partial").exists()
    # a store that has only labbrain's own graphs counts as empty
    fresh = tmp_path / "fresh"
    LabBrain(settings_for(fresh)).close()
    assert run(fresh, "restore", str(sample_backup)).exit_code == 0


def test_restore_refuses_a_locked_store(sample_backup: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    with LabBrain(settings_for(target)):
        result = run(target, "restore", "--replace", str(sample_backup))
    assert result.exit_code == 3
    assert f"store {target} is locked by another labbrain process (held by pid {os.getpid()})" in (
        result.stderr
    )


def test_restore_into_a_file_is_one_line_and_leaves_the_file(
    sample_backup: Path, tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    result = run(target, "restore", str(sample_backup))
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines() == [
        f"error: {target} is a file, not a labbrain store directory; use another store "
        "location (--store or LABBRAIN_STORE)"
    ]
    assert target.read_text() == "my notes\n"


class Failure(Exception):
    """Injected into a restore."""


def _fail_on_rename(monkeypatch: pytest.MonkeyPatch, nth: int) -> None:
    """Make the ``nth`` Path.rename from now on raise (once)."""
    real = Path.rename
    calls = {"n": 0}

    def rename(self: Path, target: Any) -> Path:
        calls["n"] += 1
        if calls["n"] == nth:
            raise Failure(f"rename of {self} failed")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", rename)


def _fail_sync(monkeypatch: pytest.MonkeyPatch, nth: int) -> None:
    del nth

    def broken(directory: Path) -> Any:
        raise Failure("index sync failed")

    monkeypatch.setattr(backup_module, "_sync_index", broken)


@pytest.mark.parametrize(
    "phase", ["while-setting-aside", "while-moving-in", "at-index-sync", "at-commit"]
)
def test_failure_mid_restore_leaves_the_store_unchanged(
    sample_backup: Path, v0_store: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    other = v0_store
    with LabBrain(settings_for(other), read_only=True) as brain:
        before, searched = (
            fingerprint(brain),
            [h.node.iri for h in brain.search(SearchQuery("actin")).hits],
        )
    files, names = store_files(other), sorted(p.name for p in other.iterdir())
    # The restore renames each current item aside, then each staged item (the database and
    # the index) in, then the aside directory (the commit).
    current = len(present_files(other, RESTORED))
    assert current >= 2
    if phase == "at-index-sync":
        _fail_sync(monkeypatch, 0)
    else:
        staged = len(present_files(sample_backup, RESTORED))
        nth = {
            "while-setting-aside": 2,
            "while-moving-in": current + 2,
            "at-commit": current + staged + 1,
        }
        _fail_on_rename(monkeypatch, nth[phase])
    with pytest.raises(Failure) as failed:
        backup_module.restore_store(settings_for(other), sample_backup, replace=True)
    monkeypatch.undo()
    where = {
        "while-setting-aside": f"rename of {other}/",
        "while-moving-in": f"rename of {other}/restore.partial/index.sqlite",
        "at-commit": f"rename of {other}/{RESTORE_ASIDE} ",
        "at-index-sync": "index sync failed",
    }
    assert str(failed.value).startswith(where[phase])
    assert store_files(other) == files
    assert sorted(p.name for p in other.iterdir()) == names
    with LabBrain(settings_for(other)) as brain:
        assert fingerprint(brain) == before
        assert [h.node.iri for h in brain.search(SearchQuery("actin")).hits] == searched
        assert brain.index_sync is not None and not brain.index_sync.changed


@pytest.mark.parametrize("opener", ["check", "writer"])
@pytest.mark.parametrize("when", ["before-moving-in", "at-index-sync"])
def test_a_stopped_restore_is_undone_at_the_next_open(
    sample_backup: Path, v0_store: Path, monkeypatch: pytest.MonkeyPatch, when: str, opener: str
) -> None:
    """A restore stopped after setting the old content aside (with no database in place, or
    the restored one not yet committed) is undone by whatever opens the store next: `check`
    reports it, and a server starting for writing gets the old content, never an empty store."""
    other = v0_store
    with LabBrain(settings_for(other), read_only=True) as brain:
        before = fingerprint(brain)
    if when == "at-index-sync":
        _fail_sync(monkeypatch, 0)
    else:
        _fail_on_rename(monkeypatch, len(present_files(other, RESTORED)) + 1)
    monkeypatch.setattr(
        backup_module, "roll_back_restore", lambda directory, aside: None
    )  # "killed"
    with pytest.raises(Failure):
        backup_module.restore_store(settings_for(other), sample_backup, replace=True)
    monkeypatch.undo()
    assert (other / RESTORE_ASIDE / "oxigraph").is_dir()
    if opener == "check":
        check = run(other, "check", "--json")
        assert check.exit_code == 0, check.stdout
        assert statuses(check)["store"] == "repaired"
        assert findings(check)["store"]["detail"].startswith(
            "a restore stopped midway was undone when the store was opened"
        )
    else:
        with LabBrain(settings_for(other)) as brain:
            assert brain.store.restore_undone
            assert fingerprint(brain) == before
    assert not (other / RESTORE_ASIDE).exists()
    with LabBrain(settings_for(other), read_only=True) as brain:
        assert fingerprint(brain) == before


# ---------------------------------------------------------------------------- live writers
def _mcp_params(store: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=LABBRAIN, args=["--store", str(store), "mcp", "--toolsets", "all"], env={}
    )


def _labbrain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LABBRAIN, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


@pytest.mark.subprocess
def test_backup_while_an_mcp_server_holds_the_store_and_writes(
    sample_store: Path, tmp_path: Path
) -> None:
    """The server's latest memories are still only in its write-ahead log: the backup has
    them, restores to the same fingerprint, and restore into the held store is refused."""
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        uid = brain.index.nodes(limit=1)[0][0].uid
    target = tmp_path / "backup"

    async def session() -> tuple[dict[str, Any], Any, Any, Any]:
        async with Client(_mcp_params(sample_store), read_timeout_seconds=120) as client:
            await client.call_tool("create_domain", {"id": "actin-models", "name": "Actin"})
            first = await client.call_tool("store_memory", {"content": "Arp2/3 branches at 70°"})
            second = await client.call_tool("store_memory", {"content": "Tension slows CME"})
            ids = [r.structured_content["memory"]["id"] for r in (first, second)]
            for target_id in (ids[1], uid):
                edge = await client.call_tool(
                    "connect_memories",
                    {"source": ids[0], "target": target_id, "type": "supports"},
                )
                assert not edge.is_error, edge.content
            # The server is still running and holds the store.
            with LabBrain(settings_for(sample_store), read_only=True) as brain:
                at_backup = fingerprint(brain)
            taken = await asyncio.to_thread(
                _labbrain, "--store", str(sample_store), "backup", str(target)
            )
            locked = await asyncio.to_thread(
                _labbrain, "--store", str(sample_store), "restore", "--replace", str(target)
            )
            check = await asyncio.to_thread(
                _labbrain, "--store", str(sample_store), "check", "--json"
            )
            return at_backup, taken, locked, check

    at_backup, taken, locked, check = asyncio.run(session())
    assert taken.returncode == 0, taken.stderr
    assert locked.returncode == 3
    assert "is locked by another labbrain process (held by pid" in locked.stderr
    assert "stop that process or use a read-only command" in locked.stderr
    assert check.returncode == 0, check.stdout  # read-only: works beside the server
    domains = [g for g in at_backup if g.startswith("urn:labbrain:domain:")]
    assert domains == ["urn:labbrain:domain:actin-models"]
    restored = tmp_path / "restored"
    result = run(restored, "restore", str(target))
    assert result.exit_code == 0, result.stderr
    with LabBrain(settings_for(restored), read_only=True) as brain:
        assert fingerprint(brain) == at_backup
        memories = brain.query(
            "SELECT (COUNT(?m) AS ?n) WHERE { GRAPH <urn:labbrain:domain:actin-models> "
            "{ ?m a lb:MemoryNode } }"
        )
        assert [int(row["n"].value) for row in memories] == [2]  # type: ignore[union-attr]
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["graphs"][SAMPLE_GRAPH] == 2499
    assert TASKS_GRAPH not in at_backup and "urn:labbrain:domain:actin-models" in manifest["graphs"]


@pytest.mark.slow
def test_backup_beside_a_writing_thread_is_one_consistent_snapshot(
    sample_store: Path, tmp_path: Path
) -> None:
    """Memories written one after another while backups run: every backup holds a prefix
    of them (never memory n+1 without memory n) and restores to what its manifest says."""
    stop = threading.Event()
    with LabBrain(settings_for(sample_store)) as brain:
        memory = Memories(brain, DiscourseReader(brain), AgentWriter(brain.store))
        memory.domains.create_domain("log", "Log", "")
        written: list[str] = []

        def write() -> None:
            while not stop.is_set() and len(written) < 200:
                written.append(memory.store_memory(f"note {len(written)}").memory.content)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            targets = []
            for n in range(3):
                while len(written) < 10 * (n + 1):
                    time.sleep(0.01)
                targets.append(tmp_path / f"backup-{n}")
                backup_module.backup_store(settings_for(sample_store), targets[-1])
        finally:
            stop.set()
            writer.join()
    seen = []
    for n, target in enumerate(targets):
        restored = tmp_path / f"restored-{n}"
        backup_module.restore_store(settings_for(restored), target)
        with LabBrain(settings_for(restored), read_only=True) as brain:
            rows = brain.query(
                "SELECT ?c WHERE { GRAPH <urn:labbrain:domain:log> { ?m a lb:MemoryNode ; "
                "sioc:content ?c } }"
            )
            contents = {row["c"].value for row in rows}  # type: ignore[union-attr]
        assert contents == {f"note {i}" for i in range(len(contents))}
        seen.append(len(contents))
    assert seen == sorted(seen) and seen[0] >= 10


@pytest.fixture(scope="module")
def export_5000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-5000.jsonld"
    write_export(path, 5_000, seed=11)
    return path


def _start_load(store: Path, export: Path) -> subprocess.Popen[bytes]:
    """`labbrain load EXPORT` in a child, stopped (SIGSTOP) in the middle of its bulk write."""
    child = subprocess.Popen(
        [LABBRAIN, "--store", str(store), "load", str(export)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = store / JOURNAL_DIR / JOURNAL_MARKER
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert child.poll() is None, "the load ended before its bulk write started"
        assert time.monotonic() < deadline, "the bulk write never started"
        time.sleep(0.002)
    os.kill(child.pid, signal.SIGSTOP)
    assert marker.exists(), "the bulk write ended before the load could be stopped"
    return child


def _kill(child: subprocess.Popen[bytes]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)


@pytest.mark.subprocess
@pytest.mark.slow
def test_backup_during_a_bulk_write_captures_the_state_before_it(
    sample_store: Path, tmp_path: Path, export_5000: Path
) -> None:
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        before = fingerprint(brain)
    child = _start_load(sample_store, export_5000)
    try:
        result = run(sample_store, "backup", str(tmp_path / "backup"), "--json")
        check = run(sample_store, "check", "--json")
    finally:
        _kill(child)
    assert check.exit_code == 0, check.stdout
    assert findings(check)["store"]["detail"].startswith("a bulk write is in flight")
    assert result.exit_code == 0, result.stderr
    assert as_json(result)["datasets"] == ["akamatsulab-sample"]
    restored = tmp_path / "restored"
    report = run(restored, "restore", str(tmp_path / "backup"), "--json")
    assert report.exit_code == 0, report.stderr
    with LabBrain(settings_for(restored), read_only=True) as brain:
        assert fingerprint(brain) == before
        assert brain.index.indexed_loads().keys() == {SAMPLE_GRAPH}
        assert brain.index.count() == 150


@pytest.mark.subprocess
@pytest.mark.slow
def test_check_after_a_killed_load_rolls_back_and_resumes_the_task(
    sample_store: Path, export_5000: Path
) -> None:
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        before = fingerprint(brain)
    _kill(_start_load(sample_store, export_5000))
    first = run(sample_store, "check", "--json")
    assert first.exit_code == 1, first.stdout
    found = findings(first)
    assert found["store"]["status"] == "repaired"
    assert "rolled back when the store was opened" in found["store"]["detail"]
    assert found["tasks"]["status"] == "problem"
    assert found["tasks"]["detail"] == "1 interrupted (1 resumable without loss)"
    task_id = found["tasks"]["examples"][0].split()[0]
    assert found["tasks"]["fix"].startswith(f"`labbrain tasks resume {task_id}`")
    assert found["tasks"]["examples"][0].startswith(f"{task_id} (ingest, at ")
    assert found["tasks"]["examples"][0].endswith("): --repair resumes it")
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert fingerprint(brain) == before  # rolled back, nothing else changed
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 0, repaired.stdout
    assert statuses(repaired)["tasks"] == "repaired"
    assert "1 task(s) resumed and completed" in findings(repaired)["tasks"]["detail"]
    again = run(sample_store, "check", "--json")
    assert again.exit_code == 0 and set(statuses(again).values()) == {"ok"}
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert [d["nodes"] for d in brain.datasets()] == [150, 5000]
        assert brain.index.count() == 5150


# ---------------------------------------------------------------------------- check
def test_check_a_healthy_store_prints_a_table(sample_store: Path) -> None:
    result = run(sample_store, "check")
    assert result.exit_code == 0, result.stdout
    for words in ("store", "text index", "vector index", "staging graphs", "tasks", "dangling"):
        assert words in result.stdout
    assert "150 nodes, matches the load" in result.stdout and "problem" not in result.stdout


@pytest.mark.parametrize("how", ["deleted", "garbage", "torn-page", "old-schema"])
def test_check_finds_and_rebuilds_a_broken_text_index(sample_store: Path, how: str) -> None:
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        searched = answers(brain)
    index = sample_store / "index.sqlite"
    if how == "deleted":
        index.unlink()
        expected = "index.sqlite missing"
    elif how == "garbage":
        index.write_bytes(b"this is not a database" * 100)
        expected = "index.sqlite corrupt (file is not a database)"
    elif how == "torn-page":
        with sqlite3.connect(index) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page = int(db.execute("PRAGMA page_size").fetchone()[0])
            root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'nodes'").fetchone()
        db.close()
        data = bytearray(index.read_bytes())
        start = (int(root[0]) - 1) * page
        data[start : start + page] = b"\xa5" * page
        index.write_bytes(bytes(data))
        expected = "index.sqlite corrupt"
    else:
        with sqlite3.connect(index) as db:
            db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        db.close()
        expected = "index.sqlite outdated or foreign schema (1)"
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["text index"]
    assert found["status"] == "problem" and found["detail"].startswith(expected)
    assert found["fix"] == "--repair (or `labbrain reindex`)"
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 0, repaired.stdout
    assert statuses(repaired)["text index"] == "repaired"
    assert "1 graph(s) re-indexed" in findings(repaired)["text index"]["detail"]
    assert run(sample_store, "check").exit_code == 0
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert answers(brain) == searched


def test_check_finds_an_index_stale_behind_the_load_records(sample_store: Path) -> None:
    with LabBrain(settings_for(sample_store)) as brain:
        searched = answers(brain)
        brain.load(str(SAMPLE_V0))
        # Behind the index's back: a new load id for the sample, and v0's record gone.
        brain.store.update(
            "DELETE { GRAPH <urn:labbrain:system> { ?g lb:loadId ?old } } "
            "INSERT { GRAPH <urn:labbrain:system> { ?g lb:loadId 'changed' } } "
            f"WHERE {{ GRAPH <urn:labbrain:system> {{ ?g lb:loadId ?old }} "
            f"FILTER(?g = <{SAMPLE_GRAPH}>) }}"
        )
        brain.store.update(
            f"DELETE WHERE {{ GRAPH <urn:labbrain:system> {{ <{V0_GRAPH}> ?p ?o }} }}"
        )
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["text index"]
    assert found["detail"] == (
        "stale: 1 graph(s) not indexed as loaded, 1 graph(s) indexed but no longer loaded"
    )
    assert found["examples"] == [SAMPLE_GRAPH, V0_GRAPH]
    assert run(sample_store, "check", "--repair").exit_code == 0
    assert run(sample_store, "check").exit_code == 0
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert brain.index.indexed_loads() == {SAMPLE_GRAPH: "changed"}
        assert answers(brain) == searched


class HashEmbedder:
    """A stand-in embedding model: unit vectors from the SHA-256 of each text."""

    model_id = "test-hash-8"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> Any:
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(
                np.float32
            )
            + 1.0
            for t in texts
        ]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), 8)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _embed_all(store: Path) -> None:
    with LabBrain(settings_for(store)) as brain:
        vectors = VectorIndex(store / VECTORS_FILE)
        provider = HashEmbedder()
        vectors.update(provider, vectors.plan(brain.index, provider.model_id))


def test_check_removes_kept_search_matrix_files_no_search_will_read(
    sample_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept int8 search matrices (``vectors.sqlite.snapshot-*``) of vectors that changed or
    are gone are a problem ``--repair`` removes; the one of the current vectors is kept."""
    leftovers = [
        sample_store / f"{VECTORS_FILE}.snapshot-0123456789abcdef0123{s}"
        for s in (
            ".npy",
            ".keys",
        )
    ]
    for leftover in leftovers:
        leftover.write_bytes(b"x" * 500_000)
    found = findings(run(sample_store, "check", "--json"))["vector index"]  # no vectors.sqlite
    assert (found["status"], found["fix"]) == ("problem", "--repair (removes them)")
    assert found["detail"] == (
        "2 kept search-matrix file(s) of vectors that changed or are gone (1.0 MB)"
    )
    repaired = findings(run(sample_store, "check", "--repair", "--json"))["vector index"]
    assert repaired["detail"].endswith("-> 2 kept search-matrix file(s) removed")
    assert not any(leftover.exists() for leftover in leftovers)
    _embed_all(sample_store)  # 150 vectors: too few for a kept matrix, so any is stale
    for leftover in leftovers:
        leftover.write_bytes(b"x")
    assert findings(run(sample_store, "check", "--json"))["vector index"]["status"] == "problem"
    assert run(sample_store, "check", "--repair").exit_code == 0
    assert not any(leftover.exists() for leftover in leftovers)
    monkeypatch.setattr(vectors_module, "LARGE", 1)  # now the current vectors' matrix is kept
    require("usearch", importlib.util.find_spec("usearch") is not None, "the semantic extra")
    assert VectorIndex(sample_store / VECTORS_FILE).keep_snapshot()
    kept = sorted(sample_store.glob(f"{VECTORS_FILE}.snapshot-*"))
    assert len(kept) == 2
    after = findings(run(sample_store, "check", "--json"))["vector index"]
    assert after == {**after, "status": "ok", "detail": "150 vectors, all current (test-hash-8)"}
    assert sorted(sample_store.glob(f"{VECTORS_FILE}.snapshot-*")) == kept


def test_check_finds_vectors_of_gone_nodes_and_prunes_them(sample_store: Path) -> None:
    with LabBrain(settings_for(sample_store)) as brain:
        brain.load(str(SAMPLE_V0))
    _embed_all(sample_store)
    assert run(sample_store, "check").exit_code == 0
    assert findings(run(sample_store, "check", "--json"))["vector index"]["detail"] == (
        "158 vectors, all current (test-hash-8)"
    )
    with LabBrain(settings_for(sample_store)) as brain:
        brain.drop(V0_GRAPH)
        brain.load(str(ROOT / "data" / "dct-sample.jsonld"))
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["vector index"]
    assert found["detail"] == "8 vector(s) of nodes no longer indexed"
    assert found["fix"] == "--repair (prunes them)"
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 0
    assert findings(repaired)["vector index"]["detail"].startswith(
        "8 vector(s) of nodes no longer indexed -> 8 vector(s) pruned; 8 node(s) new or changed"
    )
    after = findings(run(sample_store, "check", "--json"))["vector index"]
    assert after["status"] == "warning" and after["fix"] == "`labbrain embed`"
    assert after["detail"] == (
        "8 node(s) new or changed since embedded (150 current, model test-hash-8)"
    )
    assert VectorIndex(sample_store / VECTORS_FILE, read_only=True).count() == 150


def test_check_removes_a_corrupt_vector_index(sample_store: Path) -> None:
    (sample_store / VECTORS_FILE).write_bytes(os.urandom(8192))
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["vector index"]
    assert found["detail"].startswith("vectors.sqlite corrupt")
    assert found["fix"] == "--repair (removes it), then `labbrain embed`"
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 0
    assert "removed; run `labbrain embed`" in findings(repaired)["vector index"]["detail"]
    assert not (sample_store / VECTORS_FILE).exists()
    assert run(sample_store, "check").exit_code == 0


def test_check_drops_stale_staging_graphs_only(sample_store: Path) -> None:
    live = new_staging_graph()
    with LabBrain(settings_for(sample_store)) as brain:
        before = fingerprint(brain)
        for graph in (STALE_STAGING, live):
            brain.store.update(f"INSERT DATA {{ GRAPH <{graph}> {{ <urn:x> <urn:y> 1 }} }}")
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["staging graphs"]
    assert found["detail"] == "1 left by loads that died; 1 of a load in flight (left alone)"
    assert found["examples"] == [STALE_STAGING]
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 0 and statuses(repaired)["staging graphs"] == "repaired"
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert STALE_STAGING not in brain.store.graphs() and live in brain.store.graphs()
        assert {g: v for g, v in fingerprint(brain).items() if g != live} == before
    assert findings(run(sample_store, "check", "--json"))["staging graphs"]["detail"] == (
        "none left over; 1 of a load in flight (left alone)"
    )


def test_check_reports_dangling_relation_ends_and_never_deletes_them(sample_store: Path) -> None:
    inserts = (
        f"GRAPH <{SAMPLE_GRAPH}> {{ <{PAGE}nowhere1> <{PAGE}_SUPP-rel> <{PAGE}nowhere2> }}",
        "GRAPH <urn:labbrain:claims:main> { <urn:labbrain:proposition-relation:1> a "
        "lb:PropositionRelation ; rdf:subject <urn:labbrain:proposition:gone> ; "
        f"rdf:predicate lb:supports ; rdf:object <{PAGE}nowhere3> }}",
        "GRAPH <urn:labbrain:domain:d> { <urn:labbrain:link:1> a lb:Link ; "
        "lb:linkSource <urn:labbrain:memory:gone> ; lb:linkTarget <urn:labbrain:memory:gone2> }",
    )
    with LabBrain(settings_for(sample_store)) as brain:
        brain.store.update("INSERT DATA { " + " ".join(inserts) + " }")
        before = fingerprint(brain)
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 0  # a warning: the data is kept as it is
    found = findings(result)["dangling relation ends"]
    assert found["status"] == "warning"
    assert found["detail"] == (
        "1 memory edge(s), 1 proposition relation(s), 1 typed relation(s) with an end that "
        "does not exist (kept: deleting would lose data)"
    )
    assert found["examples"][2] == (
        f"typed relation in {SAMPLE_GRAPH}: {PAGE}nowhere1 -> {PAGE}nowhere2"
    )
    assert run(sample_store, "check", "--repair").exit_code == 0
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert fingerprint(brain) == before


def test_check_resumes_only_tasks_that_lose_nothing(sample_store: Path, tmp_path: Path) -> None:
    changed = tmp_path / "changed.jsonld"
    shutil.copy(SAMPLE_V0, changed)
    with LabBrain(settings_for(sample_store)) as brain:
        ledger = TaskLedger(brain.store)
        made = {}
        for name, kind, params, results in [
            ("reindex", "reindex", {}, {}),
            ("stdin", "ingest", {"source": "-", "label": "-", "loadId": "a"}, {}),
            ("gone", "ingest", {"source": str(tmp_path / "gone.jsonld"), "loadId": "b"}, {}),
            ("changed", "ingest", {"source": str(changed), "loadId": "c"}, {"sourceDigest": "0"}),
        ]:
            state = transition(new_task(kind, params), "start")
            state.results.update(results)
            state = transition(state, "interrupt", "interrupted: the process running it stopped")
            ledger.save(state)
            made[name] = state.task_id
    result = run(sample_store, "check", "--json")
    assert result.exit_code == 1
    found = findings(result)["tasks"]
    assert found["detail"] == "4 interrupted (1 resumable without loss)"
    examples = "\n".join(found["examples"])
    assert f"{made['reindex']} (reindex, at scan): --repair resumes it" in examples
    assert f"{made['stdin']} (ingest, at read): not resumable: it read stdin" in examples
    assert f"not resumable: {tmp_path / 'gone.jsonld'} is gone" in examples
    assert f"not resumable: {changed} changed since the load read it" in examples
    repaired = run(sample_store, "check", "--repair", "--json")
    assert repaired.exit_code == 1  # three remain, named with their fix
    after = findings(repaired)["tasks"]
    assert after["status"] == "problem"
    assert after["detail"] == (
        "3 interrupted (0 resumable without loss) (--repair: 1 task(s) resumed and completed)"
    )
    assert after["fix"].startswith("`labbrain tasks resume ") and "cancel" in after["fix"]
    with LabBrain(settings_for(sample_store), read_only=True) as brain:
        assert TaskLedger(brain.store).load(made["reindex"]).status == "completed"
        assert TaskLedger(brain.store).load(made["stdin"]).status == "interrupted"


def test_check_beside_a_writer_and_its_error_paths(sample_store: Path, tmp_path: Path) -> None:
    with LabBrain(settings_for(sample_store)):
        beside = run(sample_store, "check")
        assert beside.exit_code == 0, beside.stdout
        (sample_store / "index.sqlite").unlink()
        locked = run(sample_store, "check", "--repair")
    assert locked.exit_code == 3 and "is locked by another labbrain process" in locked.stderr
    missing = run(tmp_path / "none", "check")
    assert missing.exit_code == 3 and "no labbrain store at" in missing.stderr
    memory = run(":memory:", "check")
    assert memory.exit_code == 2 and "not :memory:" in memory.stderr


@pytest.mark.parametrize("backend", [REMOTE, VIRTUOSO])
def test_check_a_remote_store(tmp_path: Path, backend: str) -> None:
    with remote_server(backend, tmp_path / backend) as server:
        _check_a_remote_store(server)


def _check_a_remote_store(oxigraph: OxigraphServer | VirtuosoServer) -> None:
    settings = remote_settings(oxigraph)
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE))
        brain.store.update(f"INSERT DATA {{ GRAPH <{STALE_STAGING}> {{ <urn:x> <urn:y> 1 }} }}")
    result = run("", "check", "--json", endpoint=oxigraph)
    assert result.exit_code == 1
    found = findings(result)
    assert found["store"]["detail"] == "remote store: nothing to recover here"
    assert found["staging graphs"]["examples"] == [STALE_STAGING]
    assert found["text index"]["status"] in ("ok", "repaired")
    repaired = run("", "check", "--repair", "--json", endpoint=oxigraph)
    assert repaired.exit_code == 0, repaired.stdout
    assert statuses(repaired)["staging graphs"] == "repaired"
    with LabBrain(settings, read_only=True) as brain:
        assert STALE_STAGING not in {str(r["graph"]) for r in brain.graphs()}
        assert brain.index.count() == 150
