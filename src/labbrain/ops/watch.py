"""Watched sources: a dataset follows its export file or Obsidian vault as it changes.

:class:`SourceWatcher` loads each source once (unless the store already holds it unchanged),
then waits for file-system events (``watchfiles``, on inotify / FSEvents / ReadDirectoryChanges;
polling where events are unavailable: a network file system, or the inotify watch limit
reached, which is named in the log) and loads a source again when it changed. Each load is the
ordinary one (:meth:`~labbrain.core.LabBrain.load`): all or nothing, so readers see the old
dataset or the new one, never a mix. A source that cannot be read as it is now (an export
half-written by a browser, a vault whose ``relations.json`` is being saved) leaves the dataset
as it was; the problem is reported and the next change is tried again. An event is reported
for every load, skip and failure (``on_event``).

A vault is followed by part: the watcher keeps what it read of each file
(:class:`~labbrain.ingest.obsidian.ReadCache`: an unchanged note is not read or parsed again)
and what each note and relation contributed to the dataset
(:class:`~labbrain.ingest.delta.DocumentModel`), and writes only what a change changes, in one
transaction with the index beside it (:meth:`~labbrain.core.LabBrain.apply_change`): the
dataset and its index end as a load of the whole vault would leave them. A change the model
does not follow by part (the plugin's settings, another process's load of the same dataset in
between) is loaded whole. What does not bear on the graph is not watched: Obsidian's
workspace and cache files, other plugins' settings, editors' swap and partial files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from labbrain.core import LabBrain
from labbrain.errors import LabbrainError, StaleDataset
from labbrain.index.text import IndexRecord
from labbrain.index.vectors import EmbedPlan
from labbrain.ingest.delta import DocumentModel
from labbrain.ingest.load import (
    LoadReport,
    collection_paused,
    detect_format,
    read_input,
    vault_input,
)
from labbrain.ingest.obsidian import (
    PLUGIN_FOLDER,
    ReadCache,
    VaultRead,
    read_vault,
    reread_notes,
    settings_file,
)
from labbrain.store.ontology import vocabulary

log = logging.getLogger(__name__)

#: How long (ms) events are gathered into one change at most: events come as one change once
#: the files have been quiet for 50 ms (``step``), or after this long; a save of many files,
#: or an export written in several chunks, is one change.
DEBOUNCE_MS = 400
#: How long after a sync a scanned source is read whole again (see SourceWatcher._follow_scans).
POLL_RECHECK_SECONDS = 1.2
#: A followed vault is read whole at least this often (s), even when file events name the
#: files that changed: an event lost (an overflowing queue) is made good within that time.
WHOLE_READ_SECONDS = 300.0
#: How often (ms) polled sources are scanned: every MIN_POLL_MS, or less often for many
#: files (a scan stats every file), one ms per FILES_PER_POLL_MS files, up to MAX_POLL_MS.
MIN_POLL_MS = 300
MAX_POLL_MS = 5_000
FILES_PER_POLL_MS = 25
#: File names (endings) that are partial or temporary files of editors and browsers.
_PARTIAL = (".tmp", ".part", ".crdownload", ".download", ".swp", ".swx", "~")


@dataclass(frozen=True)
class WatchEvent:
    """What became of one source at one moment: ``loaded`` whole or ``changed`` by part (with
    its report), ``unchanged`` (the store holds it as it is), or ``failed`` (``error`` says
    why; the dataset is as it was)."""

    source: str
    outcome: str
    report: LoadReport | None = None
    error: str | None = None
    seconds: float = 0.0


class SourceWatcher:
    """Keeps the datasets of ``sources`` (export files and vault directories) in step with
    them, on ``brain`` (opened for writing), until :meth:`stop`.

    Guarantees: every source is checked at :meth:`run`'s start; after that, a change to a
    source is loaded within about ``debounce_ms`` of the last write to it; a failed load
    changes nothing stored. ``run`` blocks: call it from the thread that is to do the loads
    (the CLI's main thread, or a thread of the MCP server's).
    """

    def __init__(
        self,
        brain: LabBrain,
        sources: Iterable[str],
        *,
        on_event: Callable[[WatchEvent], None] | None = None,
        debounce_ms: int = DEBOUNCE_MS,
        force_polling: bool | None = None,
    ) -> None:
        self.brain = brain
        self.sources = [os.path.abspath(source) for source in sources]
        for source in self.sources:
            detect_format(source, None)  # a one-line error now, not in the loop
        self.on_event = on_event
        #: The settings files of each vault source that bear on its graph.
        self._settings = {
            source: {
                str(Path(source) / ".obsidian" / "plugins" / PLUGIN_FOLDER / "data.json"),
                str(settings_file(Path(source)) or ""),
            }
            for source in self.sources
            if os.path.isdir(source)
        }
        self._vectors = VectorsInStep(brain)
        self._vaults = {
            source: VaultFollower(brain, source)
            for source in self.sources
            if source in self._settings
        }
        self.debounce_ms = debounce_ms
        self.force_polling = force_polling
        self.polling = False
        #: How often a polled source is scanned (ms); see :func:`poll_delay_ms`.
        self.poll_delay_ms = MIN_POLL_MS
        self._stop = threading.Event()
        self._started = threading.Event()

    # ------------------------------------------------------------------ control
    def stop(self) -> None:
        """Make :meth:`run` return (within a step of the watcher)."""
        self._stop.set()

    def wait_started(self, timeout: float | None = None) -> bool:
        """Wait until the first check of every source is done and events are watched."""
        return self._started.wait(timeout)

    # ------------------------------------------------------------------ work
    def sync(self, source: str, paths: Iterable[str] | None = None) -> WatchEvent:
        """Bring ``source``'s dataset in line with it, unless the store holds it as it is
        (``paths``: the files of a vault that changed, when the events named them all)."""
        started = time.perf_counter()
        try:
            if source in self._vaults:
                event = self._vaults[source].sync(paths)
            else:
                read = read_input(source, self.brain.settings)
                loaded = {dataset["sourceDigest"] for dataset in self.brain.datasets()}
                if read.digest in loaded:
                    event = WatchEvent(source, "unchanged")
                else:
                    report = self.brain.load(source, read=read)
                    self._vectors.after_load(report.graph)
                    event = WatchEvent(source, "loaded", report=report)
        except (LabbrainError, OSError) as error:
            event = WatchEvent(source, "failed", error=str(error))
        event = WatchEvent(
            event.source, event.outcome, event.report, event.error, time.perf_counter() - started
        )
        if event.outcome == "failed":
            log.warning("%s: not loaded (%s); the dataset is as it was", source, event.error)
        if self.on_event is not None:
            self.on_event(event)
        return event

    def run(self) -> None:
        """Check every source, then load each one again when it changes, until stopped: on
        file-system events, or by scanning the sources where there are none."""
        for source in self.sources:
            self.sync(source)
        if not self.force_polling:
            # The error watchfiles raises when it cannot make an event watcher at all (every
            # inotify instance of the user taken); the package does not export it.
            from watchfiles._rust_notify import WatchfilesRustInternalError

            try:
                self._follow_events()
                return
            except (OSError, WatchfilesRustInternalError) as error:
                # inotify's watch limit reached (OSError), no inotify instance left, or a
                # file system without events.
                log.warning("file-system events unavailable (%s); polling the sources", error)
        self._follow_scans()

    def _follow_events(self) -> None:
        """Sync the sources on file-system events (watchfiles), until stopped."""
        import watchfiles

        roots = sorted({s if os.path.isdir(s) else os.path.dirname(s) for s in self.sources})
        changes = watchfiles.watch(
            *roots,
            watch_filter=self._relevant,
            debounce=self.debounce_ms,
            step=50,
            stop_event=self._stop,
            force_polling=False,
            rust_timeout=500,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        for batch in changes:
            if not self._started.is_set():
                # Watching now (the first yield comes after a timeout at the latest): check
                # again what may have changed before the watch began.
                for source in self.sources:
                    self.sync(source)
                self._started.set()
                continue
            changed = {path for _, path in batch}
            for source in self._touched(changed):
                self.sync(source, changed)

    def _follow_scans(self) -> None:
        """Sync the sources when a scan of their files finds one changed (polling), until
        stopped. The scan is this module's own: watchfiles' polling follows symbolic links,
        and stops at a link that loops, which a vault must not be able to do to its watcher.
        """
        files = self.scan()
        self.polling = True
        self.poll_delay_ms = max(MIN_POLL_MS, min(MAX_POLL_MS, len(files) // FILES_PER_POLL_MS))
        log.info("scanning %d files every %.1f s", len(files), self.poll_delay_ms / 1000)
        for source in self.sources:  # what changed before the first scan
            self.sync(source)
        self._started.set()
        recheck: dict[str, float] = {}
        while not self._stop.wait(self.poll_delay_ms / 1000):
            now_files = self.scan()
            changed = {
                p for p in files.keys() | now_files.keys() if files.get(p) != now_files.get(p)
            }
            files = now_files
            now = time.monotonic()
            due = {source for source, at in recheck.items() if at <= now}
            for source in due:
                del recheck[source]
            for source in due | set(self._touched(changed)):
                # A source checked again is read whole: a second save within the tick of the
                # file times of the one just synced would not show in a scan.
                self.sync(source, None if source in due else changed)
                if source not in due:
                    recheck[source] = time.monotonic() + POLL_RECHECK_SECONDS

    def scan(self) -> dict[str, tuple[int, int, int, int]]:
        """Every file of the sources that may bear on their graphs (see :meth:`_relevant`):
        path -> (size, modification time, change time, inode). Symbolic links are never
        followed; dot-folders are passed over, except the plugin's settings."""
        found: dict[str, tuple[int, int, int, int]] = {}

        def add(path: str) -> None:
            try:
                info = os.lstat(path)
            except OSError:
                return  # gone since its folder was listed
            if stat.S_ISREG(info.st_mode):
                found[path] = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)

        for source in self.sources:
            if not os.path.isdir(source):
                add(source)
                continue
            settings = self._settings.get(source, set())
            for path in settings:
                if path:
                    add(path)
            for folder, dirs, names in os.walk(source, followlinks=False):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for name in names:
                    if name.endswith((".md", ".json")) and not name.startswith("."):
                        add(os.path.join(folder, name))
        return found

    def _touched(self, paths: set[str]) -> list[str]:
        """The sources that the changed ``paths`` belong to."""
        touched = []
        for source in self.sources:
            if os.path.isdir(source):
                prefix = source.rstrip(os.sep) + os.sep
                if any(p.startswith(prefix) for p in paths):
                    touched.append(source)
            elif source in paths:
                touched.append(source)
        return touched

    def _relevant(self, change: object, path: str) -> bool:
        """Whether a change at ``path`` may bear on a watched source's graph."""
        del change
        name = os.path.basename(path)
        if name.endswith(_PARTIAL) or name.startswith(".#"):
            return False
        for source in self.sources:
            if not os.path.isdir(source):
                if path == source:
                    return True
                continue
            if not path.startswith(source.rstrip(os.sep) + os.sep):
                continue
            parts = Path(os.path.relpath(path, source)).parts
            if parts and parts[0] == ".obsidian":
                # Only the plugin's settings bear on the graph (not the workspace, caches
                # or other plugins).
                return path in self._settings.get(source, ())
            if any(part.startswith(".") for part in parts[:-1]):
                return False  # .trash and other dot-folders
            return name.endswith((".md", ".json")) or os.path.isdir(path)
        return False


class VaultFollower:
    """Keeps the dataset of the vault at ``source`` in line with it, by part (see the
    module's doc). One thread calls :meth:`sync`."""

    def __init__(self, brain: LabBrain, source: str) -> None:
        self.brain = brain
        self.source = source
        self._cache = ReadCache()
        self._model: DocumentModel | None = None
        self.vectors = VectorsInStep(brain)
        #: The load the model is of (its dataset as that load left it).
        self._load_id: str | None = None
        #: The vault as last read, and when it was last read whole.
        self._read: VaultRead | None = None
        self._whole_at = 0.0
        #: How many syncs read only the files named (the rest read the vault whole).
        self.reads_by_part = 0

    def sync(self, paths: Iterable[str] | None = None) -> WatchEvent:
        """Read the vault; write what changed since the last sync (by part when the model
        follows it, else the whole vault), or nothing when the store holds it as it is.
        ``paths``: every file changed since the last sync, when the caller knows them (file
        events): edits of notes' bodies are then read from those files alone. The vault is
        read whole anyway when it was not for :data:`WHOLE_READ_SECONDS` (events can be
        lost)."""
        with collection_paused():  # tens of thousands of objects made, none in a cycle
            return self._sync(paths)

    def _read_vault(self, paths: Iterable[str] | None) -> VaultRead:
        settings = self.brain.settings
        due = time.monotonic() - self._whole_at > WHOLE_READ_SECONDS
        if paths is not None and self._read is not None and not due:
            read = reread_notes(
                self._read, paths, max_bytes=settings.max_input_bytes, cache=self._cache
            )
            if read is not None:
                self.reads_by_part += 1
                return read
        read = read_vault(self.source, max_bytes=settings.max_input_bytes, cache=self._cache)
        self._whole_at = time.monotonic()
        return read

    def _sync(self, paths: Iterable[str] | None) -> WatchEvent:
        try:
            return self._bring_in_line(self._read_vault(paths))
        except BaseException:
            self._read = None  # read whole next time: the model may be of another read
            raise

    def _bring_in_line(self, vault: VaultRead) -> WatchEvent:
        held = {row["sourceDigest"]: row for row in self.brain.datasets()}.get(vault.digest)
        if held is not None:
            if self._load_id != held["loadId"]:
                self._follow(vault, held["graph"], held["loadId"])
            self._read = vault
            return WatchEvent(self.source, "unchanged")
        if self._model is not None and self._load_id is not None:
            # Notes read alone were made from the read the model is of (see _read_vault).
            change = self._model.plan(vault.document, rewritten=vault.rewritten)
            if change is not None:
                try:
                    report = self.brain.apply_change(
                        self.source, vault, change, expected_load=self._load_id
                    )
                except StaleDataset as stale:
                    log.info("%s; loading the vault whole", stale)
                else:
                    self._model.commit(change)
                    self._load_id = report.load_id
                    self._read = vault
                    self.vectors.after_change(change.graph, change.records, change.removed_nodes)
                    return WatchEvent(self.source, "changed", report=report)
        self._model = self._load_id = self._read = None
        report = self.brain.load(self.source, read=vault_input(vault, self.source))
        self._follow(vault, report.graph, report.load_id)
        self._read = vault
        self.vectors.after_load(report.graph)
        return WatchEvent(self.source, "loaded", report=report)

    def _follow(self, vault: VaultRead, graph: str, load_id: str) -> None:
        """Take ``vault`` as what ``graph`` holds since load ``load_id``."""
        settings = self.brain.settings
        self._model = self._load_id = None
        if settings.jsonld_engine != "native":
            return  # the model parses entries as the native engine does
        model = DocumentModel(
            vault.document, graph, vocabulary(), self.source, settings.jsonld_contexts
        )
        if model.usable:
            self._model, self._load_id = model, load_id


class VectorsInStep:
    """Keeps the vectors of a watched dataset in step with it, where it has any (vectors are
    made by ``labbrain embed``; a dataset never embedded is left so): after a change by part
    the nodes added or whose text changed are embedded and the vectors of the nodes removed
    dropped; after a whole load, every node of the dataset is checked. Written after the
    change itself (a reader in between finds the node's earlier vector for a moment); a
    failure is logged and leaves the vectors for ``labbrain embed``, never the change undone.
    The model is loaded at the first need, by the thread that syncs (ONNX Runtime sessions
    may run from several threads, so a search embedding a query meanwhile is safe)."""

    def __init__(self, brain: LabBrain) -> None:
        self.brain = brain
        #: How many vectors were computed and dropped, over all syncs.
        self.embedded = 0
        self.dropped = 0

    def after_change(self, graph: str, records: list[IndexRecord], removed: list[str]) -> None:
        """Bring the vectors of these nodes of ``graph`` in line (see the class doc)."""
        self._run(
            graph, lambda model: self.brain.vectors.plan_nodes(graph, records, removed, model)
        )

    def after_load(self, graph: str) -> None:
        """Bring the vectors of every node of ``graph`` in line."""

        def plan(model: str) -> EmbedPlan:
            whole = self.brain.vectors.plan(self.brain.index, model)
            return EmbedPlan(
                model=model,
                todo=[item for item in whole.todo if item.graph == graph],
                orphans=[key for key in whole.orphans if key[0] == graph],
                unchanged=whole.unchanged,
            )

        self._run(graph, plan)

    def _run(self, graph: str, plan_for: Callable[[str], EmbedPlan]) -> None:
        vectors = self.brain.vectors
        try:
            if not vectors.has_any([graph]):
                return
            from labbrain.index.embeddings import provider_for

            provider = provider_for(self.brain.settings)
            plan = plan_for(provider.model_id)
            if plan.todo:
                self.embedded += vectors.update(
                    provider, plan, batch_size=self.brain.settings.embedding_batch_size
                )
            self.dropped += vectors.remove(plan.orphans)
        except Exception as error:  # the change is written; the vectors can be made later
            log.warning(
                "the vectors of %s were not brought in step (%s); `labbrain embed` does it",
                graph,
                error,
            )


def log_event(event: WatchEvent) -> None:
    """A watched source's event, in the process's log (a server's stderr)."""
    report = event.report
    if report is not None and report.changed is not None:
        counts = ", ".join(f"{k} {v}" for k, v in report.changed.items() if v)
        log.info(
            "updated %s by part (%s) in %.2fs", event.source, counts or "no change", event.seconds
        )
    elif report is not None:
        log.info("reloaded %s: %d nodes in %.2fs", event.source, report.nodes, event.seconds)
    elif event.error is None:
        log.debug("%s is unchanged", event.source)


@contextlib.contextmanager
def watching(
    brain: LabBrain, sources: Iterable[str], on_event: Callable[[WatchEvent], None] = log_event
) -> Iterator[SourceWatcher]:
    """Keep ``sources`` followed (:class:`SourceWatcher`) in a thread of its own for the
    duration of the block, as a server runs it beside its requests. A source that is not one
    (no such file, not an export or vault) raises here, before the thread starts."""
    watcher = SourceWatcher(brain, sources, on_event=on_event)
    thread = threading.Thread(target=watcher.run, name="labbrain-watch", daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(5)
