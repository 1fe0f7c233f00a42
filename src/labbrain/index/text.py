"""The text index: node rows and read models in SQLite, words in a full-text engine
(:mod:`labbrain.index.fulltext`: BM25 with top-k pruning, snippets), beside the store and
derived from it.

The index is rebuildable at any time from the store (``labbrain reindex``). Each dataset graph
is indexed together with the *load id* its load record carries in the system graph; when the
two differ (a new load, a rollback, a deleted or corrupt index file), :meth:`TextIndex.sync`
re-indexes that graph. Deleting the index file loses nothing.

Beside the searchable node rows the file holds two read models of the same graphs, written in
the same transaction as a graph's nodes and removed with them: ``contributions``, per (graph,
creator, node type) the number of nodes and the first and last ``created``, so that
everyone's contributions is a sum over a few hundred rows instead of a pass over the nodes;
and ``links`` (:mod:`labbrain.index.links`), every typed relation and text link, so that a
node's links and a neighbourhood are index lookups instead of a SPARQL query per node.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labbrain.errors import DiskFull
from labbrain.index.dataset_state import DatasetState, NodeState, content_digest
from labbrain.index.fulltext import (
    Filters,
    FullText,
    FullTextDoc,
    FullTextUnusable,
    query_words,
    split_key,
)
from labbrain.index.links import (
    LINKS_SCHEMA,
    LinkRow,
    NodeLink,
    change_links,
    delete_links,
    links_between,
    links_of,
    write_links,
)
from labbrain.index.titles import clean_title
from labbrain.store import templates
from labbrain.store.base import QuadStore

SCHEMA_VERSION = "7"

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (graph TEXT PRIMARY KEY, load_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY,
    graph TEXT NOT NULL,
    iri TEXT NOT NULL,
    uid TEXT NOT NULL,
    title TEXT NOT NULL,
    clean_title TEXT NOT NULL,
    content TEXT NOT NULL,
    node_type TEXT NOT NULL,
    creator TEXT,
    created TEXT,
    modified TEXT,
    images INTEGER NOT NULL DEFAULT 0,
    load_id TEXT NOT NULL,
    UNIQUE (graph, iri)
);
CREATE INDEX IF NOT EXISTS nodes_uid ON nodes (uid);
CREATE INDEX IF NOT EXISTS nodes_iri ON nodes (iri);
CREATE INDEX IF NOT EXISTS nodes_creator ON nodes (creator, created DESC, iri);
-- covers a creator's contributions (count, first and last by type) of one graph
CREATE INDEX IF NOT EXISTS nodes_contributions ON nodes (graph, creator, node_type, created);
CREATE TABLE IF NOT EXISTS contributions (
    graph TEXT NOT NULL,
    creator TEXT NOT NULL,
    node_type TEXT NOT NULL,
    nodes INTEGER NOT NULL,
    first_created TEXT,
    last_created TEXT,
    PRIMARY KEY (creator, node_type, graph)
) WITHOUT ROWID;
"""
    + LINKS_SCHEMA
)


def normalise_timestamp(value: str | None) -> str | None:
    """One spelling for a timestamp, whichever lexical form it came in: UTC, milliseconds,
    ``Z`` (``2022-12-01T06:54:56.18Z`` and ``...56.180Z`` both give ``...56.180Z``).
    Values that are not ISO 8601 timestamps are kept as they are."""
    if not value:
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        return moment.isoformat(timespec="milliseconds")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class IndexRecord:
    """What the index stores of one node. Built from the store (re-index) or from a parsed
    export (load); both give the same record for the same node (timestamps are normalised,
    since the store keeps only the canonical lexical form of a dateTime)."""

    iri: str
    title: str
    content: str
    node_type: str
    creator: str | None
    created: str | None
    modified: str | None
    images: int = 0


def uid_of(iri: str) -> str:
    """The Roam uid of a node IRI (its last path segment)."""
    return iri.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class IndexedNode:
    """A node as the index knows it: identity, attribution and type, without its content."""

    graph: str
    iri: str
    uid: str
    title: str  # without the [[XXX]] - prefix
    node_type: str
    creator: str | None
    created: str | None
    modified: str | None
    images: int


_NODE_COLUMNS = "graph, iri, uid, clean_title, node_type, creator, created, modified, images"
#: The page cache of each connection, at most 32 MiB (SQLite's default is 2 MiB): the node rows
#: of a hub's links (hundreds of random reads) stay in memory after the first answer, and a
#: server at 100,000 nodes stays under 300 MB.
_PAGE_CACHE = "PRAGMA cache_size = -32768"
_SORT_FIELDS = {"created": "created", "modified": "modified", "title": "sort_title"}
#: The full-text engine's directory beside the SQLite file (``index.sqlite`` -> ``index.fulltext``).
ENGINE_SUFFIX = ".fulltext"


@dataclass(frozen=True)
class SearchHit:
    """One search result, with its attribution."""

    node: IndexedNode
    snippet: str
    score: float


@dataclass(frozen=True)
class SyncReport:
    """What :meth:`TextIndex.sync` changed."""

    reindexed: dict[str, int]
    removed: list[str]
    rebuilt_file: bool

    @property
    def changed(self) -> bool:
        """True when anything was (re)indexed or removed."""
        return bool(self.reindexed or self.removed or self.rebuilt_file)


class TextIndex:
    """The text index at ``path`` (None: in memory, for in-memory stores): node rows and read
    models in SQLite, words in the full-text engine beside it (:mod:`labbrain.index.fulltext`).

    A writable index repairs itself: a corrupt, foreign or outdated file is replaced by an
    empty one (``rebuilt_file`` tells), to be refilled by :meth:`sync`. A read-only index
    never writes; if its file is missing or unusable it starts empty (and so reads as stale).
    Several processes can use one index file: it runs in WAL mode with a busy timeout.
    """

    def __init__(self, path: Path | None, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.rebuilt_file = False
        self._engine_problem: str | None = None
        self._db = self._open_read_only() if read_only else self._connect()
        self._fulltext = self._open_engine_read_only() if read_only else self._match_engine()

    def _engine_directory(self) -> Path | None:
        return self.path.with_suffix(ENGINE_SUFFIX) if self.path is not None else None

    def _open_engine_read_only(self) -> FullText:
        """The engine as it is; if it is missing or unusable, the whole index starts empty
        (and so reads as stale), as with an unusable SQLite file."""
        try:
            return FullText(self._engine_directory(), create=False)
        except FullTextUnusable as problem:
            self._engine_problem = str(problem)
            self._db.close()
            self._db = sqlite3.connect(":memory:", check_same_thread=False)
            self._db.executescript(_SCHEMA)
            return FullText(None, create=True)

    def _match_engine(self) -> FullText:
        """The engine, made to agree with the SQLite rows: a missing or damaged engine is
        made anew, and when its documents are not exactly those of the recorded loads (a
        crash between the two commits, a file copied without the other) both are emptied,
        for :meth:`sync` to refill (``rebuilt_file`` tells). Checked under SQLite's write
        lock, so no other writer is between its two commits."""
        engine = FullText(self._engine_directory(), create=True)
        with _disk_full_as_error(), self._db:
            self._begin_write()
            loads = self.indexed_loads()
            if not _agree(self._db, engine) or (engine.created and loads):
                tables = self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta'"
                ).fetchall()
                for (table,) in tables:
                    self._db.execute(f'DELETE FROM "{table}"')
                engine.clear()
                self.rebuilt_file = self.rebuilt_file or bool(loads)
        return engine

    def _connect(self) -> sqlite3.Connection:
        """Open the index for writing, replacing a corrupt or outdated file with an empty one."""
        try:
            return self._open_checked()
        except sqlite3.OperationalError:
            raise  # locked or unreachable: not a reason to throw the file away
        except sqlite3.DatabaseError:
            if self.path is None:
                raise
            self.path.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            self.rebuilt_file = True
            return self._open_checked()

    def _open_checked(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            str(self.path) if self.path else ":memory:", timeout=30, check_same_thread=False
        )
        try:
            db.execute(_PAGE_CACHE)
            if self.path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            existing = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            version = (
                db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                if existing
                else None
            )
            if existing and (version is None or version[0] != SCHEMA_VERSION):
                raise sqlite3.DatabaseError("index schema version changed")
            db.executescript(_SCHEMA)
            if version is None:
                db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                db.commit()
            _require_intact(db, self.path, record=True)
            return db
        except sqlite3.Error:
            db.close()
            raise

    def _open_read_only(self) -> sqlite3.Connection:
        if self.path is not None and self.path.exists():
            db = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, timeout=30, check_same_thread=False
            )
            try:
                db.execute(_PAGE_CACHE)
                version = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                _require_intact(db, self.path)
                if version is not None and version[0] == SCHEMA_VERSION:
                    return db
            except sqlite3.Error:
                pass
            db.close()
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.executescript(_SCHEMA)
        return db

    def engine_state(self) -> str | None:
        """Why the full-text engine cannot answer for the node rows (unusable at open, or
        holding other documents than the recorded loads), or None when it can. Reads only."""
        if self._engine_problem is not None:
            return f"index{ENGINE_SUFFIX} {self._engine_problem}"
        if not _agree(self._db, self._fulltext):
            return (
                f"index{ENGINE_SUFFIX} does not hold the indexed loads' words "
                "(a write was cut short or a file replaced)"
            )
        return None

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    # ------------------------------------------------------------------ freshness
    def indexed_loads(self) -> dict[str, str]:
        """Indexed dataset graph -> the load id it was indexed from."""
        return dict(self._db.execute("SELECT graph, load_id FROM datasets").fetchall())

    @staticmethod
    def store_loads(store: QuadStore) -> dict[str, str]:
        """Dataset graph -> current load id, from the store's load records."""
        return {row["graph"]: row["loadId"] for row in templates.run(store, "datasets")}

    def stale_graphs(self, store: QuadStore) -> tuple[list[str], list[str]]:
        """(graphs to re-index, graphs to remove) for the index to match the store."""
        current = self.store_loads(store)
        indexed = self.indexed_loads()
        stale = sorted(g for g, load in current.items() if indexed.get(g) != load)
        gone = sorted(set(indexed) - set(current))
        return stale, gone

    def sync(self, store: QuadStore, *, force: bool = False) -> SyncReport:
        """Bring the index in line with the store; ``force`` re-indexes every dataset."""
        current = self.store_loads(store)
        stale, gone = self.stale_graphs(store)
        if force:
            stale = sorted(current)
        reindexed = {g: self.index_graph(store, g, current[g]) for g in stale}
        for graph in gone:
            with _disk_full_as_error(), self._db:
                self._begin_write()
                self._delete_graph(graph)
                self._db.execute("DELETE FROM datasets WHERE graph = ?", (graph,))
                self._fulltext.delete(graph)
        report = SyncReport(reindexed, gone, self.rebuilt_file)
        self.rebuilt_file = False
        return report

    def index_graph(self, store: QuadStore, graph: str, load_id: str) -> int:
        """Replace the index rows of ``graph`` with its nodes and links from the store (the
        links in one query over the whole graph); return how many nodes."""
        records: dict[str, IndexRecord] = {}
        images = {
            row["node"]: row["images"] for row in templates.run(store, "image_counts", graph=graph)
        }
        for row in templates.run(store, "index_nodes", graph=graph):
            records.setdefault(
                row["node"],
                IndexRecord(
                    iri=row["node"],
                    title=row["title"],
                    content=row["content"] or "",
                    node_type=row["type"],
                    creator=row["creator"],
                    created=row["created"],
                    modified=row["modified"],
                    images=images.get(row["node"], 0),
                ),
            )
        links = [
            (row["source"], row["destination"], row["kind"], row["label"])
            for row in templates.run(store, "index_links", graph=graph)
        ]
        return self.replace_graph(graph, load_id, records.values(), links)

    def replace_graph(
        self,
        graph: str,
        load_id: str,
        records: Iterable[IndexRecord],
        links: Iterable[LinkRow] = (),
    ) -> int:
        """Make the index hold exactly ``records`` and ``links`` (the graph's links read
        model, see :mod:`labbrain.index.links`) for ``graph``, marked as of ``load_id``.

        One SQLite transaction, with the full-text engine's commit inside it: readers see the
        old rows or the new ones, never a mix (a search may for a moment rank the new rows by
        the old documents). A full device rolls it back and raises DiskFull.
        """
        rows = [_node_row(graph, load_id, r) for r in records]
        docs = (
            FullTextDoc(graph, row[1], row[4], row[5], row[6], row[7], row[8], row[9])
            for row in rows
        )
        with _disk_full_as_error(), self._db:
            self._begin_write()
            # The engine's documents are made in a thread of their own, beside the rows;
            # they are committed last, inside the SQLite write lock (which serialises every
            # writer of the file): a failure before that rolls both back, and a crash after
            # the engine's commit but before SQLite's leaves the engine's count for the
            # recorded load wrong, which the next open sees (_match_engine) and re-indexes.
            with (
                self._fulltext.replacing(graph, load_id) as add,
                ThreadPoolExecutor(1, thread_name_prefix="labbrain-search-index") as pool,
            ):
                adding = pool.submit(add, docs)
                try:
                    self._delete_graph(graph)
                    self._db.executemany(_INSERT_NODE, rows)
                    self._count_contributions(graph)
                    write_links(self._db, graph, links)
                    self._db.execute(
                        "INSERT OR REPLACE INTO datasets (graph, load_id) VALUES (?, ?)",
                        (graph, load_id),
                    )
                finally:
                    adding.result()
        return len(rows)

    def apply_changes(
        self,
        graph: str,
        load_id: str,
        removed: Iterable[str],
        records: Iterable[IndexRecord],
        links_removed: Iterable[LinkRow] = (),
        links_added: Iterable[LinkRow] = (),
    ) -> int:
        """Change the index rows of ``graph`` by a part: remove the nodes ``removed`` (IRIs),
        write ``records`` (nodes added or changed: each replaces the node's row), remove the
        links ``links_removed`` and add ``links_added`` (see
        :func:`~labbrain.index.links.change_links`); mark the graph as of ``load_id``.

        Afterwards the rows are those :meth:`replace_graph` writes for the graph as it is now
        (the node rows written here carry ``load_id``, the others the load they came from).
        One SQLite transaction with the engine's commit inside, as in :meth:`replace_graph`.
        Returns how many nodes the graph has."""
        new = list(records)
        touched = list(dict.fromkeys([*removed, *(r.iri for r in new)]))
        rows = [_node_row(graph, load_id, r) for r in new]
        with _disk_full_as_error(), self._db:
            self._begin_write()
            with self._fulltext.replacing(graph, load_id, only=touched) as add:
                # The contributions of the creators of the nodes touched, before and after.
                creators = {r.creator for r in new if r.creator is not None}
                for start in range(0, len(touched), 500):
                    chunk = touched[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    creators.update(
                        creator
                        for (creator,) in self._db.execute(
                            f"SELECT DISTINCT creator FROM nodes WHERE graph = ? AND iri IN"
                            f" ({marks}) AND creator IS NOT NULL",
                            [graph, *chunk],
                        )
                    )
                    self._db.execute(
                        f"DELETE FROM nodes WHERE graph = ? AND iri IN ({marks})", [graph, *chunk]
                    )
                self._db.executemany(_INSERT_NODE, rows)
                for creator in sorted(creators):
                    self._db.execute(
                        "DELETE FROM contributions WHERE graph = ? AND creator = ?",
                        (graph, creator),
                    )
                    self._count_contributions(graph, creator)
                change_links(self._db, graph, links_removed, links_added)
                self._db.execute(
                    "INSERT OR REPLACE INTO datasets (graph, load_id) VALUES (?, ?)",
                    (graph, load_id),
                )
                add(
                    FullTextDoc(graph, row[1], row[4], row[5], row[6], row[7], row[8], row[9])
                    for row in rows
                )
        return self.count(graph)

    def _count_contributions(self, graph: str, creator: str | None = None) -> None:
        """Write the contributions rows of ``graph`` (of one ``creator``, when given)."""
        self._db.execute(
            "INSERT INTO contributions SELECT graph, creator, node_type, count(*),"
            " min(created), max(created) FROM nodes WHERE graph = ? AND creator IS NOT NULL"
            + (" AND creator = ?" if creator is not None else "")
            + " GROUP BY creator, node_type",
            (graph,) if creator is None else (graph, creator),
        )

    def _begin_write(self) -> None:
        """Take SQLite's write lock now, not at the first change, so that the engine's writer
        (used inside the same transaction) is only ever held by one connection at a time."""
        if not self._db.in_transaction:
            self._db.execute("BEGIN IMMEDIATE")

    def _delete_graph(self, graph: str) -> None:
        self._db.execute("DELETE FROM nodes WHERE graph = ?", (graph,))
        self._db.execute("DELETE FROM contributions WHERE graph = ?", (graph,))
        delete_links(self._db, graph)

    # ------------------------------------------------------------------ searching
    def _before_read(self) -> None:
        """Called first by every read below (nothing here); a subclass that must catch up
        with its store before answering overrides it (see
        :class:`~labbrain.index.refreshing.RefreshingTextIndex`)."""

    def graphs(self) -> list[str]:
        """The indexed dataset graphs, sorted."""
        self._before_read()
        return [
            str(row[0]) for row in self._db.execute("SELECT graph FROM datasets ORDER BY graph")
        ]

    def count(self, graph: str | None = None) -> int:
        """Number of indexed nodes (in ``graph``, or overall)."""
        self._before_read()
        if graph is None:
            return int(self._db.execute("SELECT count(*) FROM nodes").fetchone()[0])
        return int(
            self._db.execute("SELECT count(*) FROM nodes WHERE graph = ?", (graph,)).fetchone()[0]
        )

    def nodes_by_uid(self, uid: str, graphs: Iterable[str] | None = None) -> list[IndexedNode]:
        """Every indexed node with this uid (one per dataset holding it), by graph."""
        self._before_read()
        filters, args = _filters(graphs, None, None)
        sql = f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE uid = ?{filters} ORDER BY graph"
        return [IndexedNode(*row) for row in self._db.execute(sql, [uid, *args])]

    def nodes_by_iri(self, iris: Iterable[str], graph: str | None = None) -> dict[str, IndexedNode]:
        """The indexed nodes among ``iris`` (in ``graph`` when given), by IRI."""
        self._before_read()
        wanted = list(dict.fromkeys(iris))
        found: dict[str, IndexedNode] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = f"SELECT {_NODE_COLUMNS} FROM nodes WHERE iri IN ({','.join('?' * len(chunk))})"
            args: list[Any] = list(chunk)
            if graph is not None:
                sql += " AND graph = ?"
                args.append(graph)
            for row in self._db.execute(sql + " ORDER BY graph DESC", args):
                found[row[1]] = IndexedNode(*row)
        return found

    def links_of(self, graph: str, iris: Iterable[str]) -> dict[str, list[NodeLink]]:
        """The typed relations and text links of each of ``iris`` in ``graph``, both
        directions: for each node exactly the rows, in the order, that the ``node_edges``
        template answers (see :func:`labbrain.index.links.links_of`). A few index probes per
        500 nodes, so a whole breadth-first frontier is asked for at once."""
        self._before_read()
        return links_of(self._db, graph, iris)

    def links_between(
        self, graph: str, iris: Iterable[str], others: Iterable[str]
    ) -> dict[str, set[str]]:
        """Each of ``iris`` -> those of ``others`` it is linked to in ``graph``, either
        direction, any kind (see :func:`labbrain.index.links.links_between`): one probe per
        pair, so a hub's other links cost nothing."""
        self._before_read()
        return links_between(self._db, graph, iris, others)

    def contributions(self, creator: str | None = None) -> list[tuple[str, str, int, str, str]]:
        """(creator, node type, nodes, first created, last created), by creator and type, over
        every indexed graph: a sum over the per-graph counts kept with the nodes (a few rows
        per creator), not a pass over the nodes."""
        self._before_read()
        sql = (
            "SELECT creator, node_type, sum(nodes), min(first_created), max(last_created)"
            " FROM contributions"
        )
        args: list[Any] = []
        if creator is not None:
            sql += " WHERE creator = ?"
            args.append(creator)
        sql += " GROUP BY creator, node_type ORDER BY creator, node_type"
        return [tuple(row) for row in self._db.execute(sql, args)]

    def creators(self) -> list[str]:
        """Every creator of an indexed node, sorted."""
        self._before_read()
        rows = self._db.execute(
            "SELECT DISTINCT creator FROM nodes WHERE creator IS NOT NULL ORDER BY creator"
        )
        return [str(row[0]) for row in rows]

    def has_node_type(self, labels: Iterable[str]) -> bool:
        """True when some indexed node's type label is one of ``labels`` (any case)."""
        self._before_read()
        wanted = [label.lower() for label in labels]
        row = self._db.execute(
            f"SELECT 1 FROM nodes WHERE lower(node_type) IN ({','.join('?' * len(wanted))})"
            " LIMIT 1",
            wanted,
        ).fetchone()
        return row is not None

    def type_counts(self) -> list[tuple[str, str, int]]:
        """(graph, node type label, number of nodes) for every indexed type."""
        self._before_read()
        rows = self._db.execute(
            "SELECT graph, node_type, count(*) FROM nodes GROUP BY graph, node_type"
            " ORDER BY graph, node_type"
        )
        return [(str(g), str(t), int(n)) for g, t, n in rows]

    def dataset_state(self, graph: str) -> DatasetState:
        """Every indexed node of ``graph`` (title, type, creator and a digest of its content,
        by IRI) and its typed relations: what a load's changes are computed against."""
        self._before_read()
        nodes = {
            iri: NodeState(title, node_type, creator, content_digest(content))
            for iri, title, node_type, creator, content in self._db.execute(
                "SELECT iri, title, node_type, creator, content FROM nodes WHERE graph = ?",
                (graph,),
            )
        }
        relations = {
            (source, str(label), destination)
            for source, label, destination in self._db.execute(
                "SELECT s.iri, l.label, d.iri FROM links l JOIN link_ends s ON l.source = s.id"
                " JOIN link_ends d ON l.destination = d.id"
                " WHERE s.graph = ? AND l.kind = 'typed'",
                (graph,),
            )
        }
        return DatasetState(nodes, relations)

    def content(self, graph: str, iri: str) -> str:
        """The markdown content of one indexed node ('' if unknown)."""
        self._before_read()
        row = self._db.execute(
            "SELECT content FROM nodes WHERE graph = ? AND iri = ?", (graph, iri)
        ).fetchone()
        return str(row[0]) if row else ""

    def nodes(
        self,
        *,
        graphs: Iterable[str] | None = None,
        node_types: Iterable[str] | None = None,
        creator: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[IndexedNode], int]:
        """Indexed nodes matching the filters, newest first, and how many match in all."""
        self._before_read()
        filters, args = _filters(graphs, node_types, creator)
        condition = "1 = 1" + filters
        total = int(
            self._db.execute(f"SELECT count(*) FROM nodes n WHERE {condition}", args).fetchone()[0]
        )
        rows = self._db.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE {condition}"
            " ORDER BY created DESC, iri LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
        return [IndexedNode(*row) for row in rows], total

    def search(
        self,
        text: str,
        *,
        limit: int = 10,
        graphs: Iterable[str] | None = None,
        node_type: str | Iterable[str] | None = None,
        creator: str | None = None,
        order_by: str = "relevance",
        descending: bool = True,
    ) -> list[SearchHit]:
        """Nodes matching the words of ``text`` (BM25), with a snippet around the match.

        Nodes holding every word come first, then nodes holding some; title matches weigh
        more than content matches. ``order_by`` is ``relevance`` (best
        first, whatever ``descending`` says), ``created``, ``modified`` or ``title``. The
        node type filter takes one label or several (case-insensitive); other filters are
        exact. Returns at most ``limit`` hits.
        """
        self._before_read()
        words = query_words(text)
        if not words:
            return []
        kinds = [node_type] if isinstance(node_type, str) else node_type
        filters = Filters(
            graphs=list(graphs) if graphs is not None else None,
            node_types=list(kinds) if kinds else None,
            creator=creator or None,
        )
        order = _SORT_FIELDS.get(order_by)
        # Nodes with every word first, then (if too few) nodes with any of them.
        ranked: list[tuple[str, float]] = []
        for every_word in (True, False) if len(words) > 1 else (True,):
            ranked += self._fulltext.search(
                words,
                every_word=every_word,
                filters=filters,
                limit=limit - len(ranked),
                order_by=order,
                descending=descending,
                exclude=[key for key, _ in ranked],
            )
            if len(ranked) >= limit:
                break
        found: list[tuple[IndexedNode, str, float]] = []
        for key, score in ranked:
            graph, iri = split_key(key)
            row = self._db.execute(
                f"SELECT {_NODE_COLUMNS}, content FROM nodes WHERE graph = ? AND iri = ?",
                (graph, iri),
            ).fetchone()
            if row is not None:  # else indexed a moment ago by another process, not yet here
                found.append((IndexedNode(*row[:-1]), row[-1], score))
        snippets = self._fulltext.snippets(words, [(node.title, text) for node, text, _ in found])
        hits = [
            SearchHit(node, snippet, score)
            for (node, _, score), snippet in zip(found, snippets, strict=True)
        ]
        return hits


def _agree(db: sqlite3.Connection, engine: FullText) -> bool:
    """True when ``engine`` holds one document per node row, of the load (or change) the
    row was written by, and nothing else."""
    sizes = db.execute(
        "SELECT graph, load_id, count(*) FROM nodes GROUP BY graph, load_id"
    ).fetchall()
    if engine.total() != sum(size for _, _, size in sizes):
        return False
    return all(engine.count(graph, load) == size for graph, load, size in sizes)


_INSERT_NODE = (
    "INSERT INTO nodes (graph, iri, uid, title, clean_title, content,"
    " node_type, creator, created, modified, images, load_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _node_row(graph: str, load_id: str, r: IndexRecord) -> tuple[Any, ...]:
    """The ``nodes`` row of ``r`` (in :data:`_INSERT_NODE`'s order)."""
    return (
        graph,
        r.iri,
        uid_of(r.iri),
        r.title,
        clean_title(r.title),
        r.content,
        r.node_type,
        r.creator,
        normalise_timestamp(r.created),
        normalise_timestamp(r.modified),
        r.images,
        load_id,
    )


@contextmanager
def _disk_full_as_error() -> Iterator[None]:
    """Raise DiskFull when an index write fails because the device is full (SQLite has
    rolled the transaction back by then)."""
    try:
        yield
    except sqlite3.OperationalError as err:
        full = getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
        if full or "database or disk full" in str(err):
            raise DiskFull() from err
        raise


def _require_intact(
    db: sqlite3.Connection, path: Path | None = None, *, record: bool = False
) -> None:
    """Raise DatabaseError unless every page of the index file at ``path`` (None: in memory)
    is well-formed, as far as ``PRAGMA quick_check`` can tell.

    ``quick_check`` reads the whole file (~70 ms at 20,000 nodes, about a second at 100,000):
    a cheaper look misses damaged pages of a table or index it does not visit, which would
    later fail reads or answer wrongly. So the whole file is read only when it may have
    changed since it last passed. When ``record`` is set (writable opens; read-only ones
    record nothing), a file that passed is recorded as it is (its schema version and
    :func:`~labbrain.store.local.file_identity`: device, inode, size, modification and
    change times) in the user's cache of checked files, outside the store; an open that
    finds the file exactly as recorded, with no write-ahead log content, skips the check.
    Whatever changes the file afterwards (SQLite writing back its log, another program, a
    truncation, a copy, a replaced file) changes what is recorded, so the next open reads
    the whole file again; ``labbrain check`` always does.
    """
    from labbrain.store.local import checked, file_identity, record_checked

    key = f"index:{path.absolute()}" if path is not None else None

    def identity() -> str | None:
        """The file as it would be recorded, or None when it cannot be (in memory, or
        content in the write-ahead log, which the check reads but the file's times miss)."""
        if path is None:
            return None
        wal = path.with_name(f"{path.name}-wal")
        try:
            if wal.exists() and wal.stat().st_size > 0:
                return None
        except OSError:
            return None
        found = file_identity(path)
        return f"{SCHEMA_VERSION} {found}" if found is not None else None

    before = identity()
    if key is not None and before is not None and checked(key) == [before]:
        return
    rows = db.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError(f"index file damaged: {rows[0][0]}")
    if record and key is not None and before is not None and identity() == before:
        record_checked(key, [before])  # unchanged while it was read: recorded as checked


def _filters(
    graphs: Iterable[str] | None, node_type: str | Iterable[str] | None, creator: str | None
) -> tuple[str, list[Any]]:
    """SQL conditions on the joined ``nodes n`` row for the search filters."""
    sql = ""
    args: list[Any] = []
    if graphs is not None:
        chosen = list(graphs)
        sql += f" AND n.graph IN ({','.join('?' * len(chosen))})"
        args.extend(chosen)
    if node_type:
        kinds = [node_type] if isinstance(node_type, str) else list(node_type)
        sql += f" AND lower(n.node_type) IN ({','.join('?' * len(kinds))})"
        args.extend(k.lower() for k in kinds)
    if creator:
        sql += " AND n.creator = ?"
        args.append(creator)
    return sql, args
