"""``labbrain check``: what is wrong with a store, and ``--repair`` for what can be mended.

Each check gives one :class:`Finding`:

- ``store``: a bulk write a crash left half-done (rolled back when the check opened the store,
  as every open does), one in flight in the process holding the store, or a restore stopped
  midway (``--repair`` puts the old content back);
- ``text index``: ``index.sqlite`` missing, corrupt (SQLite integrity, schema), its search engine
  ``index.fulltext`` unusable or not holding the indexed loads, or
  stale (its load ids differ from the load records; graphs missing or extra) -> rebuilt;
- ``vector index`` (when ``vectors.sqlite`` exists): corrupt -> removed (then `labbrain
  embed`); vectors of nodes no longer indexed -> pruned; kept search-matrix files
  (``vectors.sqlite.snapshot-*``) of vectors that changed or are gone -> removed; nodes new
  or changed since they were embedded -> a warning naming `labbrain embed` (repairing needs
  no model);
- ``staging graphs``: ``urn:labbrain:staging:*`` graphs of remote loads that died (also looked
  for in an embedded store) -> dropped once stale (``staging_is_stale``), never a live load's;
- ``tasks``: tasks left interrupted -> resumed when that loses nothing (a reindex; a load
  whose file is unchanged; an embed whose model is at hand), the others named with
  `labbrain tasks resume ID`;
- ``dangling relation ends``: typed relations, proposition relations and memory edges whose
  end does not exist -> a warning with a count and examples; never deleted (that would lose
  data).

Statuses: ``ok``, ``warning`` (worth knowing, nothing to repair), ``problem`` and
``repaired``. Without ``--repair`` the store is opened read-only and nothing is written (a
crashed bulk write is still rolled back by the open, as any reader's open does), so a check
runs beside a live server. With ``--repair`` the store is then opened for writing (the writer
lock is needed), the repairs are made, and every check runs again.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from labbrain.core import LabBrain
from labbrain.errors import LabbrainError, SemanticUnavailable, SettingsError
from labbrain.index.text import SCHEMA_VERSION as INDEX_SCHEMA
from labbrain.index.vectors import SCHEMA_VERSION as VECTORS_SCHEMA
from labbrain.index.vectors import VectorIndex
from labbrain.ops.backup import VECTORS_FILE
from labbrain.ops.workflows import task_runner
from labbrain.rdf.namespaces import STAGING_PREFIX
from labbrain.settings import Settings
from labbrain.store import templates
from labbrain.store.journal import (
    JOURNAL_DIR,
    JOURNAL_MARKER,
    SQLITE_SIDE_FILES,
    restore_left_behind,
)
from labbrain.store.remote.sparql import staging_is_stale
from labbrain.tasks.ledger import TaskState

Status = Literal["ok", "warning", "problem", "repaired"]
CHECKS = (
    "store",
    "text index",
    "vector index",
    "staging graphs",
    "tasks",
    "dangling relation ends",
    "load warnings",
)
EXAMPLES = 3


@dataclass
class Finding:
    """The outcome of one check: its status, what was found, and how to fix it."""

    check: str
    status: Status
    detail: str
    fix: str | None = None
    examples: list[str] = field(default_factory=list)
    #: A problem ``--repair`` can mend.
    repairable: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data."""
        return {
            "check": self.check,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
            "examples": self.examples,
        }


@dataclass(frozen=True)
class CheckReport:
    """Every finding of one ``labbrain check`` run."""

    store: str
    findings: list[Finding]
    repaired: bool

    @property
    def ok(self) -> bool:
        """True when no problem remains (warnings do not count)."""
        return not any(f.status == "problem" for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "store": self.store,
            "ok": self.ok,
            "repairRan": self.repaired,
            "findings": [f.as_dict() for f in self.findings],
        }


# ---------------------------------------------------------------------------- running
def run_check(settings: Settings, *, repair: bool = False) -> CheckReport:
    """Run every check on the store of ``settings``; with ``repair``, mend what can be mended
    and check again. Guarantees: without ``repair`` nothing is written but what any reader's
    open writes (the rollback of a crashed bulk write or of a stopped restore); with it, data
    is never deleted (only derived files and stale staging graphs).
    Raises StoreNotFound when there is no store, StoreLocked when ``repair`` needs the lock
    another process holds."""
    if settings.in_memory and not settings.endpoint:
        raise SettingsError("check needs a store directory or an endpoint, not :memory:")
    with LabBrain(settings, read_only=True) as brain:
        before = diagnose(brain, settings)
    if not repair or not any(f.status == "problem" and f.repairable for f in before):
        return CheckReport(_shown_store(settings), before, repaired=False)
    with LabBrain(settings) as brain:
        actions = _repair(brain, settings)
        after = diagnose(brain, settings)
    return CheckReport(_shown_store(settings), _merge(before, after, actions), repaired=True)


def _shown_store(settings: Settings) -> str:
    return settings.endpoint or settings.store


def diagnose(brain: LabBrain, settings: Settings) -> list[Finding]:
    """Every check on an opened store, in :data:`CHECKS` order."""
    state = sqlite_state(brain.index.path, "index")
    index_state = f"index.sqlite {state}" if state is not None else brain.index.engine_state()
    in_flight = _bulk_write_in_flight(brain)
    return [
        _check_store(brain),
        _check_text_index(brain, index_state, in_flight=in_flight),
        _check_vectors(brain, index_ok=index_state is None and not in_flight),
        _check_staging(brain),
        _check_tasks(brain, settings),
        _check_dangling(brain),
        _check_load_warnings(brain),
    ]


def _merge(before: list[Finding], after: list[Finding], actions: dict[str, str]) -> list[Finding]:
    """The findings after a repair: a problem gone is ``repaired`` (saying what was done)."""
    merged = []
    for old, new in zip(before, after, strict=True):
        action = actions.get(new.check)
        if old.status == "repaired" and new.status == "ok":
            merged.append(old)  # mended before the repair ran (e.g. by opening the store)
        elif old.status == "problem" and new.status in ("ok", "warning"):
            detail = f"{old.detail} -> {action or 'repaired'}"
            if new.status == "warning":
                detail += f"; {new.detail}"
            merged.append(Finding(new.check, "repaired", detail, new.fix, new.examples))
        else:
            if new.status == "problem" and action:
                new.detail += f" (--repair: {action})"
            merged.append(new)
    return merged


# ---------------------------------------------------------------------------- files
def sqlite_state(path: Path | None, checks: Literal["index", "vectors"]) -> str | None:
    """Why the SQLite file at ``path`` is unusable (``missing``, or what is wrong), or None
    when it is fine. The file is read, never written: the checks run on an in-memory copy.
    ``checks`` names the expected schema: ``index`` or ``vectors``."""
    if path is None:
        return None
    if not path.exists():
        return "missing"
    try:
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            copy = sqlite3.connect(":memory:")
            source.backup(copy)
        finally:
            source.close()
        try:
            result = copy.execute("PRAGMA integrity_check").fetchone()
            if result is None or result[0] != "ok":
                return f"corrupt (SQLite integrity check: {result[0] if result else 'no answer'})"
            schema = copy.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            expected = INDEX_SCHEMA if checks == "index" else VECTORS_SCHEMA
            if schema is None or schema[0] != expected:
                return f"outdated or foreign schema ({schema[0] if schema else 'none'})"
            table = "nodes" if checks == "index" else "vectors"
            copy.execute(f"SELECT count(*) FROM {table}").fetchone()
        finally:
            copy.close()
    except sqlite3.Error as error:
        return f"corrupt ({error})"
    return None


def _remove_sqlite(path: Path) -> None:
    for suffix in ("", *SQLITE_SIDE_FILES):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


# ---------------------------------------------------------------------------- checks
def _check_store(brain: LabBrain) -> Finding:
    store = brain.store
    if store.shared:
        return Finding("store", "ok", "remote store: nothing to recover here")
    directory = store.directory
    if store.recovered:
        return Finding(
            "store",
            "repaired",
            "a bulk write interrupted by a crash was rolled back when the store was opened; "
            "the store is as it was before that write",
        )
    if store.restore_undone:
        return Finding(
            "store",
            "repaired",
            "a restore stopped midway was undone when the store was opened; the store is as "
            "it was before that restore",
        )
    if directory is not None and restore_left_behind(directory):
        return Finding("store", "ok", "a restore is under way in another process")
    if _bulk_write_in_flight(brain):
        return Finding(
            "store",
            "ok",
            "a bulk write is in flight in the process holding the store; this check read "
            "the state before it",
        )
    return Finding("store", "ok", "no interrupted write")


def _bulk_write_in_flight(brain: LabBrain) -> bool:
    """True when another process is in the middle of a bulk write to the embedded store
    (this check then reads the state before it, while the text index may be ahead)."""
    store = brain.store
    if store.directory is None or not store.read_only:
        return False
    marker = store.directory / JOURNAL_DIR / JOURNAL_MARKER
    return marker.exists() and store.writer_alive()


def _check_text_index(brain: LabBrain, state: str | None, *, in_flight: bool) -> Finding:
    fix = "--repair (or `labbrain reindex`)"
    if state is not None:
        return Finding("text index", "problem", state, fix, repairable=True)
    stale, gone = brain.index.stale_graphs(brain.store)
    if (stale or gone) and in_flight:
        return Finding(
            "text index",
            "ok",
            "not compared: the index already follows the bulk write in flight; check again "
            "once it is done",
        )
    if stale or gone:
        parts = []
        if stale:
            parts.append(f"{len(stale)} graph(s) not indexed as loaded")
        if gone:
            parts.append(f"{len(gone)} graph(s) indexed but no longer loaded")
        return Finding(
            "text index",
            "problem",
            "stale: " + ", ".join(parts),
            fix,
            examples=(stale + gone)[:EXAMPLES],
            repairable=True,
        )
    synced = brain.index_sync
    if brain.remote and synced is not None and synced.changed:
        return Finding(
            "text index",
            "repaired",
            f"re-synced with the endpoint's load records when opened "
            f"({len(synced.reindexed)} graph(s) re-indexed, {len(synced.removed)} removed)",
        )
    return Finding("text index", "ok", f"{brain.index.count():,} nodes, matches the load records")


def _vectors_path(brain: LabBrain) -> Path | None:
    path = brain.index.path
    return path.with_name(VECTORS_FILE) if path is not None else None


def _check_vectors(brain: LabBrain, *, index_ok: bool) -> Finding:
    path = _vectors_path(brain)
    if path is None:
        return Finding("vector index", "ok", "none (`labbrain embed` makes one)")
    vectors = VectorIndex(path, read_only=True)
    stale = vectors.stale_snapshots()
    if not path.exists():
        if stale:
            return _stale_matrix(stale)
        return Finding("vector index", "ok", "none (`labbrain embed` makes one)")
    state = sqlite_state(path, "vectors")
    if state is not None:
        return Finding(
            "vector index",
            "problem",
            f"vectors.sqlite {state}",
            "--repair (removes it), then `labbrain embed`",
            repairable=True,
        )
    model = vectors.model
    if model is None:
        return _stale_matrix(stale) if stale else Finding("vector index", "ok", "empty")
    if not index_ok or _index_stale(brain):
        return Finding(
            "vector index",
            "ok",
            "not compared with the text index until that is repaired",
        )
    plan = vectors.plan(brain.index, model)
    if plan.orphans:
        return Finding(
            "vector index",
            "problem",
            f"{len(plan.orphans)} vector(s) of nodes no longer indexed",
            "--repair (prunes them)",
            examples=[iri for _, iri in plan.orphans[:EXAMPLES]],
            repairable=True,
        )
    if stale:
        return _stale_matrix(stale)
    if plan.todo:
        return Finding(
            "vector index",
            "warning",
            f"{len(plan.todo)} node(s) new or changed since embedded ({plan.unchanged:,} "
            f"current, model {model})",
            "`labbrain embed`",
            examples=[item.iri for item in plan.todo[:EXAMPLES]],
        )
    return Finding("vector index", "ok", f"{plan.unchanged:,} vectors, all current ({model})")


def _stale_matrix(files: list[Path]) -> Finding:
    """The finding for kept search-matrix files that no search will read."""
    size = sum(f.stat().st_size for f in files if f.exists()) / 1e6
    return Finding(
        "vector index",
        "problem",
        f"{len(files)} kept search-matrix file(s) of vectors that changed or are gone "
        f"({size:,.1f} MB)",
        "--repair (removes them)",
        examples=[f.name for f in files[:EXAMPLES]],
        repairable=True,
    )


def _index_stale(brain: LabBrain) -> bool:
    stale, gone = brain.index.stale_graphs(brain.store)
    return bool(stale or gone)


def _staging_graphs(brain: LabBrain) -> list[str]:
    return [
        str(row["graph"])
        for row in templates.run(brain.store, "graph_sizes")
        if str(row["graph"]).startswith(STAGING_PREFIX)
    ]


def _check_staging(brain: LabBrain) -> Finding:
    found = _staging_graphs(brain)
    stale = [g for g in found if staging_is_stale(g)]
    live = len(found) - len(stale)
    note = f"; {live} of a load in flight (left alone)" if live else ""
    if stale:
        return Finding(
            "staging graphs",
            "problem",
            f"{len(stale)} left by loads that died{note}",
            "--repair (drops them)",
            examples=stale[:EXAMPLES],
            repairable=True,
        )
    return Finding("staging graphs", "ok", f"none left over{note}")


def _check_tasks(brain: LabBrain, settings: Settings) -> Finding:
    states = task_runner(brain).list_tasks()
    interrupted = [s for s in states if s.status == "interrupted"]
    running = sum(1 for s in states if s.status in ("pending", "in_progress"))
    note = f"; {running} running" if running else ""
    if not interrupted:
        return Finding("tasks", "ok", f"none interrupted{note}")
    examples = []
    can = 0
    for state in interrupted:
        reason = not_resumable(brain, state, settings, load_model=False)
        can += reason is None
        where = state.current_step or state.last_completed_step or "start"
        verdict = "--repair resumes it" if reason is None else f"not resumable: {reason}"
        examples.append(f"{state.task_id} ({state.kind}, at {where}): {verdict}")
    first = interrupted[0].task_id
    return Finding(
        "tasks",
        "problem",
        f"{len(interrupted)} interrupted ({can} resumable without loss){note}",
        f"`labbrain tasks resume {first}` (or `labbrain tasks cancel {first}`)"
        + ("; --repair resumes the resumable ones" if can else ""),
        examples=examples,
        repairable=can > 0,
    )


def not_resumable(
    brain: LabBrain, state: TaskState, settings: Settings, *, load_model: bool
) -> str | None:
    """Why resuming the interrupted ``state`` could lose or redo work wrongly (None: it can
    be resumed safely). An embed needs the semantic extra and its model (loaded only when
    ``load_model``)."""
    if state.kind == "ingest":
        params = state.params
        if any(d["loadId"] == params.get("loadId") for d in brain.datasets()):
            return None  # its write was committed: resuming only re-indexes
        source = str(params.get("source", "-"))
        if source == "-":
            return "it read stdin, which cannot be read again"
        path = Path(source)
        if not path.is_file():
            return f"{params.get('label', source)} is gone"
        expected = state.results.get("sourceDigest")
        if expected is not None and expected != _file_sha256(path):
            return f"{params.get('label', source)} changed since the load read it"
        return None
    if state.kind == "embed":
        from labbrain.index.embeddings import provider_for, semantic_installed
        from labbrain.install import install_command

        if not semantic_installed():
            return f"embedding needs the semantic extra: {install_command('semantic')}"
        if load_model:
            try:
                provider_for(settings)
            except SemanticUnavailable as error:
                return error.reason
        return None
    return None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _check_dangling(brain: LabBrain) -> Finding:
    rows = templates.run(brain.store, "check_dangling_ends")
    if not rows:
        return Finding("dangling relation ends", "ok", "every relation end exists")
    by_kind: dict[str, int] = defaultdict(int)
    for row in rows:
        by_kind[str(row["kind"])] += 1
    counts = ", ".join(f"{n} {kind}(s)" for kind, n in sorted(by_kind.items()))
    return Finding(
        "dangling relation ends",
        "warning",
        f"{counts} with an end that does not exist (kept: deleting would lose data)",
        "edit the source data and load it again, or remove them with a SPARQL update",
        examples=[
            f"{row['kind']} in {row['graph']}: {row['source']} -> {row['target']}"
            for row in rows[:EXAMPLES]
        ],
    )


def _check_load_warnings(brain: LabBrain) -> Finding:
    rows = templates.run(brain.store, "load_warnings")
    if not rows:
        return Finding("load warnings", "ok", "no dataset's source had anything wrong")
    graphs = sorted({str(row["graph"]) for row in rows})
    return Finding(
        "load warnings",
        "warning",
        f"{len(rows)} warning(s) from the last load of {len(graphs)} dataset(s) (what was "
        "wrong in the source was left out of the dataset)",
        "fix the source (the export or the vault) and load it again",
        examples=[f"{row['graph']}: {row['warning']}" for row in rows[:EXAMPLES]],
    )


# ---------------------------------------------------------------------------- repairs
def _repair(brain: LabBrain, settings: Settings) -> dict[str, str]:
    """Mend what can be mended on a writable store; return what was done, by check.

    The writable open itself has already rolled back a crashed bulk write, rebuilt a
    missing or corrupt text index, re-indexed stale graphs and (remote) dropped stale
    staging graphs."""
    done: dict[str, str] = {}
    synced = brain.index_sync
    if synced is not None and synced.changed:
        rebuilt = "file rebuilt, " if synced.rebuilt_file else ""
        done["text index"] = (
            f"{rebuilt}{len(synced.reindexed)} graph(s) re-indexed, {len(synced.removed)} removed"
        )
    path = _vectors_path(brain)
    if path is not None:
        vectors = VectorIndex(path)
        mended = []
        if path.exists() and sqlite_state(path, "vectors") is not None:
            _remove_sqlite(path)
            mended.append("removed; run `labbrain embed` to compute the vectors again")
        elif path.exists():
            model = vectors.model
            if model is not None and not _index_stale(brain):
                orphans = vectors.plan(brain.index, model).orphans
                if orphans:
                    mended.append(f"{vectors.remove(orphans)} vector(s) pruned")
        dropped = vectors.drop_stale_snapshots()
        if dropped:
            mended.append(f"{dropped} kept search-matrix file(s) removed")
        if mended:
            done["vector index"] = "; ".join(mended)
    stale = brain.store.drop_stale_staging()
    if stale:
        done["staging graphs"] = f"{len(stale)} stale staging graph(s) dropped"
    resumed = _resume_tasks(brain, settings)
    if resumed:
        done["tasks"] = resumed
    return done


def _resume_tasks(brain: LabBrain, settings: Settings) -> str:
    """Resume every interrupted task that can be resumed without loss; say how it went (a
    resumed task that fails records its error in its own state)."""
    runner = task_runner(brain)
    resumed: list[str] = []
    failed: list[str] = []
    for state in runner.list_tasks("interrupted"):
        if not_resumable(brain, state, settings, load_model=True) is not None:
            continue
        try:
            final = runner.resume(state.task_id)
        except LabbrainError:
            failed.append(state.task_id)
            continue
        (resumed if final.status == "completed" else failed).append(state.task_id)
    if not resumed and not failed:
        return ""
    text = f"{len(resumed)} task(s) resumed and completed"
    if failed:
        text += f"; {len(failed)} failed ({', '.join(failed)}): `labbrain tasks show ID`"
    return text
