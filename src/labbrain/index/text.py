"""The full-text index: SQLite FTS5 (BM25, snippets) beside the store, derived from it.

The index is rebuildable at any time from the store (``labbrain reindex``). Each dataset graph
is indexed together with the *load id* its load record carries in the system graph; when the
two differ (a new load, a rollback, a deleted or corrupt index file), :meth:`TextIndex.sync`
re-indexes that graph. Deleting the index file loses nothing.

Beside the searchable node rows the file holds one read model of the same graphs, written in
the same transaction as a graph's nodes and removed with them: ``contributions``, per (graph,
creator, node type) the number of nodes and the first and last ``created``, so that
everyone's contributions is a sum over a few hundred rows instead of a pass over the nodes.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labbrain.errors import DiskFull
from labbrain.index.titles import clean_title
from labbrain.store import templates
from labbrain.store.base import QuadStore

SCHEMA_VERSION = "3"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)

_SCHEMA = """
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
    UNIQUE (graph, iri)
);
CREATE INDEX IF NOT EXISTS nodes_graph ON nodes (graph);
CREATE INDEX IF NOT EXISTS nodes_uid ON nodes (uid);
CREATE INDEX IF NOT EXISTS nodes_iri ON nodes (iri);
CREATE INDEX IF NOT EXISTS nodes_creator ON nodes (creator, node_type);
CREATE VIRTUAL TABLE IF NOT EXISTS nodes_fts USING fts5(
    clean_title, content, content='nodes', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS contributions (
    graph TEXT NOT NULL,
    creator TEXT NOT NULL,
    node_type TEXT NOT NULL,
    nodes INTEGER NOT NULL,
    first_created TEXT,
    last_created TEXT,
    PRIMARY KEY (graph, creator, node_type)
) WITHOUT ROWID;
"""


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


def fts_words(text: str) -> list[str]:
    """The words of ``text`` as quoted FTS5 strings (so no FTS syntax leaks), deduplicated."""
    return list(dict.fromkeys(f'"{token}"' for token in _TOKEN_RE.findall(text)))


def fts_query(text: str) -> str:
    """An FTS5 query matching any word of ``text``."""
    return " OR ".join(fts_words(text))


class TextIndex:
    """The FTS5 index at ``path`` (None: in memory, for in-memory stores).

    A writable index repairs itself: a corrupt, foreign or outdated file is replaced by an
    empty one (``rebuilt_file`` tells), to be refilled by :meth:`sync`. A read-only index
    never writes; if its file is missing or unusable it starts empty (and so reads as stale).
    Several processes can use one index file: it runs in WAL mode with a busy timeout.
    """

    def __init__(self, path: Path | None, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.rebuilt_file = False
        self._db = self._open_read_only() if read_only else self._connect()

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
            _require_intact(db)
            db.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('integrity-check')")
            db.commit()  # the check writes nothing, but its statement opened a transaction
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
                version = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
                db.execute("SELECT count(*) FROM nodes_fts").fetchone()
                _require_intact(db)
                if version is not None and version[0] == SCHEMA_VERSION:
                    return db
            except sqlite3.Error:
                pass
            db.close()
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.executescript(_SCHEMA)
        return db

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
                self._delete_graph(graph)
                self._db.execute("DELETE FROM datasets WHERE graph = ?", (graph,))
        report = SyncReport(reindexed, gone, self.rebuilt_file)
        self.rebuilt_file = False
        return report

    def index_graph(self, store: QuadStore, graph: str, load_id: str) -> int:
        """Replace the index rows of ``graph`` with its nodes from the store; return how many."""
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
        return self.replace_graph(graph, load_id, records.values())

    def replace_graph(self, graph: str, load_id: str, records: Iterable[IndexRecord]) -> int:
        """Make the index hold exactly ``records`` for ``graph``, marked as of ``load_id``.

        One SQLite transaction: readers see the old rows or the new ones, never a mix. A full
        device rolls it back and raises DiskFull.
        """
        rows = [
            (
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
            )
            for r in records
        ]
        with _disk_full_as_error(), self._db:
            self._delete_graph(graph)
            self._db.executemany(
                "INSERT INTO nodes (graph, iri, uid, title, clean_title, content, node_type,"
                " creator, created, modified, images) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._db.execute(
                "INSERT INTO nodes_fts (rowid, clean_title, content) "
                "SELECT id, clean_title, content FROM nodes WHERE graph = ?",
                (graph,),
            )
            self._db.execute(
                "INSERT INTO contributions SELECT graph, creator, node_type, count(*),"
                " min(created), max(created) FROM nodes WHERE graph = ? AND creator IS NOT NULL"
                " GROUP BY creator, node_type",
                (graph,),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO datasets (graph, load_id) VALUES (?, ?)", (graph, load_id)
            )
        return len(rows)

    def _delete_graph(self, graph: str) -> None:
        self._db.execute(
            "INSERT INTO nodes_fts (nodes_fts, rowid, clean_title, content) "
            "SELECT 'delete', id, clean_title, content FROM nodes WHERE graph = ?",
            (graph,),
        )
        self._db.execute("DELETE FROM nodes WHERE graph = ?", (graph,))
        self._db.execute("DELETE FROM contributions WHERE graph = ?", (graph,))

    # ------------------------------------------------------------------ searching
    def _before_read(self) -> None:
        """Called first by every read below (nothing here); a subclass that must catch up
        with its store before answering overrides it (see
        :class:`~labbrain.index.refreshing.RefreshingTextIndex`)."""

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
        words = fts_words(text)
        if not words:
            return []
        filters, filter_args = _filters(graphs, node_type, creator)
        direction = "DESC" if descending else "ASC"
        column = {"created": "n.created", "modified": "n.modified", "title": "n.clean_title"}
        if order_by in column:
            order = f"{column[order_by]} IS NULL, {column[order_by]} {direction}, rank"
        else:
            order = "rank, n.iri"
        # Nodes with every word first, then (if too few) nodes with any of them: fewer
        # matches to score, and the better answers on top.
        ranked: list[tuple[int, float]] = []
        for match in dict.fromkeys([" ".join(words), " OR ".join(words)]):
            seen = [rowid for rowid, _ in ranked]
            exclude = f" AND n.id NOT IN ({','.join('?' * len(seen))})" if seen else ""
            sql = (
                "SELECT n.id, bm25(nodes_fts, 4.0, 1.0) AS rank"
                " FROM nodes_fts JOIN nodes n ON n.id = nodes_fts.rowid"
                f" WHERE nodes_fts MATCH ?{filters}{exclude} ORDER BY {order} LIMIT ?"
            )
            rows = self._db.execute(sql, [match, *filter_args, *seen, limit - len(ranked)])
            ranked.extend((int(rowid), float(rank)) for rowid, rank in rows)
            if len(ranked) >= limit:
                break
        if not ranked:
            return []
        # Snippets only for the hits (computing them for every match is the slow part).
        ids = [rowid for rowid, _ in ranked]
        marks = ",".join("?" * len(ids))
        snippets = dict(
            self._db.execute(
                "SELECT rowid, snippet(nodes_fts, -1, '**', '**', ' … ', 24) FROM nodes_fts"
                f" WHERE nodes_fts MATCH ? AND rowid IN ({marks})",
                [" OR ".join(words), *ids],
            )
        )
        columns = ", ".join(c.strip() for c in _NODE_COLUMNS.split(","))
        nodes = {
            row[0]: IndexedNode(*row[1:])
            for row in self._db.execute(
                f"SELECT id, {columns} FROM nodes WHERE id IN ({marks})", ids
            )
        }
        return [SearchHit(nodes[rowid], snippets.get(rowid, ""), -rank) for rowid, rank in ranked]


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


def _require_intact(db: sqlite3.Connection) -> None:
    """Raise DatabaseError unless every page of the index file is well-formed.

    ``PRAGMA quick_check`` reads the whole file (~70 ms at 20,000 nodes): the FTS5 integrity
    check alone misses damaged pages of the ``nodes`` table and of the FTS index it does not
    visit, which would later fail searches or answer wrongly.
    """
    rows = db.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise sqlite3.DatabaseError(f"index file damaged: {rows[0][0]}")


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
