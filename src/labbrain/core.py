"""The labbrain library facade: one object per opened store, used by every adapter.

:class:`LabBrain` opens the store (creating it and loading the ontology when writable),
keeps the text index in step with it, and offers the operations the CLI, MCP server and HTTP
endpoint expose. Adapters parse their input, call one method here, and shape the output.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from labbrain import __version__
from labbrain.errors import (
    GraphNotFound,
    InputError,
    QueryNotAllowed,
    QuerySyntaxError,
    StoreLocked,
)
from labbrain.index import hybrid
from labbrain.index.refreshing import RefreshingTextIndex
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import SyncReport, TextIndex
from labbrain.index.vectors import VECTORS_FILE, VectorIndex
from labbrain.ingest.delta import GraphChange
from labbrain.ingest.load import (
    LoadReport,
    Progress,
    SourceInput,
    check_loaded_as,
    load_source,
    write_change,
)
from labbrain.ingest.obsidian import VaultRead
from labbrain.rdf.namespaces import ONTOLOGY_GRAPH, SYSTEM_GRAPH, graph_iri, is_listed_graph
from labbrain.rdf.sparql_policy import check_update, looks_like_update
from labbrain.settings import Settings
from labbrain.store import templates
from labbrain.store.backends import open_backend
from labbrain.store.base import BASE_IRI, QuadStore, QueryResult, read_query
from labbrain.store.export import export as export_graphs
from labbrain.store.fresh import FreshStore
from labbrain.store.ontology import ensure_ontology
from labbrain.tasks.ledger import TaskLedger, TaskState

INDEX_FILE = "index.sqlite"


@dataclass(frozen=True)
class Stats:
    """What a store holds: graphs with sizes, nodes by type, relations by label, creators."""

    graphs: list[dict[str, Any]]
    nodes_by_type: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    creators: list[dict[str, Any]]


log = logging.getLogger("labbrain")


class LabBrain:
    """An opened labbrain store with its text index.

    Writable instances hold the store's single-writer lock until :meth:`close`. Read-only
    instances never write the store; they use the text index as it is.

    With ``settings.endpoint`` the store is a remote SPARQL store
    (:mod:`labbrain.store.remote.store`): no lock (many processes may share it), ``read_only``
    refuses writes in this process, and the text index is a local file per endpoint, synced at open
    and kept fresh with the endpoint's load records (also when read-only: it is derived data, not
    the store).
    """

    def __init__(self, settings: Settings | None = None, *, read_only: bool = False) -> None:
        self.settings = settings or Settings()
        self.read_only = read_only
        self.store: QuadStore = open_backend(self.settings, read_only=read_only)
        try:
            self.index_sync: SyncReport | None = None
            #: Tasks found unfinished at open: their process is gone (see labbrain.tasks).
            self.interrupted_tasks: list[TaskState] = []
            if self.store.shared:
                self.index = self._shared_index(self.store)
            else:
                self.index = TextIndex(self._index_path(), read_only=read_only)
            index_path = self.index.path
            #: The vector index beside the text index (in memory for an in-memory store).
            self.vectors = VectorIndex(
                index_path.with_name(VECTORS_FILE) if index_path is not None else None,
                read_only=read_only,
            )
            if not read_only:
                ensure_ontology(self.store)
            if self.store.shared:
                # Other processes may be running tasks on a shared endpoint: none is an orphan.
                self.index_sync = self.index.sync(self.store)
            elif not read_only:
                self.index_sync = self.index.sync(self.store)
                self.interrupted_tasks = TaskLedger(self.store).interrupt_orphans()
        except BaseException:
            self.store.close()
            raise

    @property
    def remote(self) -> bool:
        """True when the store is a remote SPARQL endpoint."""
        return self.store.shared

    def _shared_index(self, store: QuadStore) -> TextIndex:
        directory = store.index_home()
        assert directory is not None, "a shared store keeps its indexes on this machine"
        return RefreshingTextIndex(
            directory / INDEX_FILE, store, self.settings.endpoint_index_refresh_seconds
        )

    def _index_path(self) -> Path | None:
        home = self.store.index_home()
        return home / INDEX_FILE if home is not None else None

    def close(self) -> None:
        """Release the vector and text indexes and the store (and its writer lock)."""
        self.vectors.close()
        self.index.close()
        self.store.close()

    def __enter__(self) -> LabBrain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def load(
        self,
        source: str,
        *,
        graph: str | None = None,
        fmt: str | None = None,
        progress: Progress | None = None,
        read: SourceInput | None = None,
        load_id: str | None = None,
        allow_unverified: bool = False,
    ) -> LoadReport:
        """Load one file (or ``-`` stdin) into its dataset graph and index it; see
        :func:`~labbrain.ingest.load.load_source` (``read``: the input already read;
        ``allow_unverified``: load nanopublications whose signature fails, marked so)."""
        try:
            report = load_source(
                self.store,
                source,
                self.settings,
                graph=graph,
                fmt=fmt,
                progress=progress,
                read=read,
                index_sink=self.index.replace_graph,
                load_id=load_id,
                previous=self.index.dataset_state,
                allow_unverified=allow_unverified,
            )
        except BaseException:
            # The index may already hold entries of the load that did not land: re-sync.
            self.index.sync(self.store)
            raise
        if report.indexed is None:
            report.indexed = self.index.index_graph(self.store, report.graph, report.load_id)
        return report

    def apply_change(
        self, source: str, vault: VaultRead, change: GraphChange, *, expected_load: str
    ) -> LoadReport:
        """Write a change planned by part from a vault (see
        :func:`~labbrain.ingest.load.write_change`) to the store and the text index, as a
        load of the whole vault would leave them. The index is changed first, marked with the
        new load id: if the store's commit then fails, or the process dies before it, the
        index no longer matches the store's load record and is re-synced from the store.
        Raises StaleDataset, changing nothing, when another load replaced the dataset."""
        started = time.perf_counter()
        check_loaded_as(self.store, change.graph, expected_load)  # before the index changes
        load_id = uuid.uuid4().hex
        try:
            self.index.apply_changes(
                change.graph,
                load_id,
                change.removed_nodes,
                change.records,
                change.links_removed,
                change.links_added,
            )
            report = write_change(
                self.store, source, vault, change, load_id=load_id, expected_load=expected_load
            )
        except BaseException:
            self.index.sync(self.store)
            raise
        report.seconds = time.perf_counter() - started
        return report

    def drop(self, graph: str) -> None:
        """Remove a dataset (or any user) graph, its load record and its index rows."""
        iri = graph_iri(graph)
        if iri in (ONTOLOGY_GRAPH, SYSTEM_GRAPH):
            raise InputError(f"{iri} is managed by labbrain and cannot be dropped")
        if not self.store.has_graph(iri):
            raise GraphNotFound(iri)
        from pyoxigraph import NamedNode

        self.store.drop_graph(iri)
        self.store.remove_quads(list(self.store.quads(SYSTEM_GRAPH, NamedNode(iri))))
        self.index.sync(self.store)

    def reindex(self) -> SyncReport:
        """Rebuild the text index of every dataset from the store."""
        return self.index.sync(self.store, force=True)

    # ------------------------------------------------------------------ reading
    def query(
        self, sparql: str, *, update: bool = False, base_iri: str = BASE_IRI
    ) -> QueryResult | None:
        """Run a user's SPARQL query (or update, when ``update`` and the store is writable).

        The default graph of a query is the union of all named graphs unless it names its
        dataset (:func:`~labbrain.store.base.read_query`). SERVICE and LOAD are refused: they
        would make the store reach the network; so is a FROM / FROM NAMED naming a graph the
        store does not hold (a remote dataset). An update sent as a query is told to use
        ``--update``.
        """
        if update:
            if self.read_only:
                raise QueryNotAllowed("updates need a writable store (drop --read-only)")
            check_update(sparql)
            self.store.update(sparql, base_iri=base_iri)
            self.index.sync(self.store)
            return None
        try:
            return read_query(self.store, sparql, base_iri=base_iri)
        except QuerySyntaxError:
            if looks_like_update(sparql):
                raise QueryNotAllowed(
                    "this is a SPARQL update; run it with --update (it changes the store)"
                ) from None
            raise

    def graphs(self) -> list[dict[str, Any]]:
        """Every named graph with its triple count, sorted by IRI (a remote store's staging
        graphs, i.e. loads in flight or left by a process that died, are not listed)."""
        rows = templates.run(self.store, "graph_sizes")
        filling = {row["graph"] for row in templates.rows(self.store, "filling_graphs")}
        return [
            row
            for row in rows
            if is_listed_graph(str(row["graph"])) and row["graph"] not in filling
        ]

    def stats(self, graph: str | None = None) -> Stats:
        """Counts over the dataset graphs (or one of them)."""
        params = {"graph": graph_iri(graph)} if graph else {}
        return Stats(
            graphs=self.graphs(),
            nodes_by_type=templates.run(self.store, "nodes_by_type", **params),
            relations=templates.run(self.store, "relations_by_label", **params),
            creators=templates.run(self.store, "creators", **params),
        )

    def datasets(self) -> list[dict[str, Any]]:
        """The load record of every dataset."""
        return templates.run(self.store, "datasets")

    def search(self, query: SearchQuery) -> hybrid.ModeSearch:
        """Search nodes by keyword, meaning or both, as ``query`` asks (its mode None picks
        hybrid when usable vectors exist, keyword otherwise). The one search entry point; see
        :mod:`labbrain.index.hybrid`."""
        return hybrid.search(self.index, self.vectors, self.settings, query)

    def export(
        self, output: IO[bytes], fmt: str, graphs: list[str] | None = None, *, merge: bool = False
    ) -> None:
        """Serialise the graphs named (slugs or IRIs; default: the datasets and the agent's
        memory, see :func:`~labbrain.store.export.default_graphs`) to ``output``; ``merge``
        lets a triples-only format hold several graphs as one."""
        chosen = [graph_iri(g) for g in graphs] if graphs else None
        export_graphs(self.store, output, fmt, chosen, merge=merge)

    def info(self) -> dict[str, Any]:
        """Effective settings, store location and versions."""
        return {
            **versions(),
            "store": self.store.location,
            "readOnly": self.read_only,
            "indexedNodes": self.index.count(),
            "settings": self.settings.describe(),
        }


def open_reading(settings: Settings) -> LabBrain:
    """The store ``settings`` name, opened to read and follow a writer, holding no lock.

    On disk: opened writable for a moment when no other process holds it (created when
    missing, the ontology loaded, a crashed write rolled back, the text index synced), then
    read-only through a :class:`~labbrain.store.fresh.FreshStore`, whose every read sees the
    writes committed before it by any process (the text index, SQLite, already does), so that
    ``labbrain load`` runs beside a reading server. In memory or on a remote endpoint: opened
    as any other command opens it (no other process can write an in-memory store; a remote
    one has no lock)."""
    if settings.endpoint or settings.in_memory:
        return LabBrain(settings)
    try:
        LabBrain(settings).close()
    except StoreLocked as locked:
        log.info("%s; reading it as it is after each of its writes", locked)
    brain = LabBrain(settings, read_only=True)
    try:
        opened = brain.store
        assert opened.directory is not None, "an on-disk store has a directory"
        brain.store = FreshStore(opened.directory)
        opened.close()
    except BaseException:
        brain.close()
        raise
    return brain


def versions() -> dict[str, str]:
    """Versions of labbrain and the libraries that shape its answers."""
    found = {"labbrain": __version__}
    for name in ("pyoxigraph", "PyLD", "rdflib", "mcp"):
        try:
            found[name.lower()] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name.lower()] = "not installed"
    return found
