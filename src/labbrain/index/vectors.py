"""The vector index: node embeddings beside the text index, derived from it and rebuildable.

``vectors.sqlite`` sits next to ``index.sqlite`` (in memory for in-memory stores). It holds one
float32 vector per indexed node, keyed by (dataset graph, node IRI), with the SHA-256 of the
text it was computed from, and the model that computed them. It is derived data: deleting the
file loses nothing but the time to embed again.

Updates are incremental: :meth:`VectorIndex.plan` compares the text index with what is stored
and lists only the nodes that are new or whose text changed (and the vectors of nodes that are
gone); :meth:`VectorIndex.update` embeds them batch by batch, committing each batch, so an
interrupted run keeps its work and the next one continues from there. A different model
replaces every vector. Computing vectors is a task (``labbrain embed``), never a side effect
of a search.

Search compares the query with every vector: the vectors are loaded into one matrix, kept while
the file does not change. Up to :data:`LARGE` vectors the matrix is float32 and the comparison
a dot product (numpy, ~10 ms at 100k nodes). From :data:`LARGE` vectors on, when usearch is
installed (the semantic extra brings it), the matrix is kept as int8 (each unit vector scaled
by 127: a quarter of the memory) and searched with usearch's SIMD kernels: at 1,000,000
vectors about 55 ms against 90-130 ms for float32, and 0.4 GB against 1.5 GB. Scores are then
the int8 dot product scaled back (within about 0.01 of the cosine); the order is the same but
for vectors whose cosines differ by less than that. ``labbrain embed`` keeps that int8 matrix
beside the file (:meth:`VectorIndex.keep_snapshot`, :mod:`labbrain.index.vector_snapshot`),
and a new process maps it instead of reading every vector for its first search.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labbrain.index import vector_snapshot
from labbrain.index.text import IndexedNode, IndexRecord, TextIndex

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from labbrain.index.embeddings import EmbeddingProvider

VECTORS_FILE = "vectors.sqlite"
SCHEMA_VERSION = "1"
MAX_TEXT_CHARS = 2000
#: From this many vectors on, search keeps them as int8 and runs on usearch (module doc).
LARGE = 200_000
_SCALE = 127.0
_READ_ROWS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    graph TEXT NOT NULL,
    iri TEXT NOT NULL,
    digest TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (graph, iri)
);
"""
_FRONT_MATTER = re.compile(r"\A\s*---\n.*?\n---\s*\n", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_SPACE = re.compile(r"\s+")

Key = tuple[str, str]


def node_text(title: str, content: str) -> str:
    """The text a node is embedded from, at most MAX_TEXT_CHARS characters: its title on the
    first line, then its markdown without the front matter, images and URLs on the second,
    whitespace collapsed in each (a titled text, see
    :meth:`labbrain.index.embeddings.EmbeddingProvider.embed`). One line when either is
    empty."""
    body = _URL.sub(" ", _IMAGE.sub(" ", _FRONT_MATTER.sub("", content)))
    parts = [_SPACE.sub(" ", part).strip() for part in (title, body)]
    return "\n".join(part for part in parts if part)[:MAX_TEXT_CHARS]


def one_line(text: str) -> str:
    """``text`` with its whitespace collapsed: embedded as a whole, with no title line."""
    return _SPACE.sub(" ", text).strip()


def _in_graphs(graphs: Iterable[str] | None) -> tuple[str, list[str]]:
    """(SQL condition, its parameters) keeping the vectors of ``graphs`` (all when None)."""
    if graphs is None:
        return "", []
    chosen = list(graphs)
    return f" WHERE graph IN ({','.join('?' * len(chosen))})", chosen


def digest_of(text: str) -> str:
    """The SHA-256 a vector's text is recorded with."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PendingText:
    """A node whose vector is missing or stale, with the text to embed."""

    graph: str
    iri: str
    text: str
    digest: str


@dataclass(frozen=True)
class EmbedPlan:
    """What an update has to do to match the text index."""

    model: str
    todo: list[PendingText]
    orphans: list[Key]
    unchanged: int


@dataclass(frozen=True)
class VectorHit:
    """One nearest neighbour: the node's key and its cosine similarity to the query."""

    graph: str
    iri: str
    score: float


class VectorIndex:
    """The vectors at ``path`` (None: in memory). See module doc.

    A file-backed index opens its file for each operation and closes it after, so it holds
    no file open between calls. A writable index replaces a corrupt or outdated file with an
    empty one, and creates the file only when it first writes; a read-only one never writes.
    A missing or unusable file reads as empty. Thread-safe.
    """

    def __init__(self, path: Path | None, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._lock = threading.RLock()
        self._matrix: tuple[tuple[str, ...], list[Key], Any] | None = None
        self._memory = _empty() if path is None else None

    # ------------------------------------------------------------------ opening
    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection for one operation (writes: to the file, created or repaired)."""
        with self._lock:
            if self._memory is not None:
                yield self._memory
                return
            if write:
                self._require_writable()
                db = self._connect()
            else:
                db = self._open_for_reading()
            try:
                yield db
            finally:
                db.close()

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        try:
            return _open_checked(self.path)
        except sqlite3.OperationalError:
            raise  # locked or unreachable: not a reason to throw the file away
        except sqlite3.DatabaseError:
            for suffix in ("", "-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            return _open_checked(self.path)

    def _open_for_reading(self) -> sqlite3.Connection:
        assert self.path is not None
        if self.path.exists():
            mode = "ro" if self.read_only else "rw"
            db = sqlite3.connect(
                f"file:{self.path}?mode={mode}", uri=True, timeout=30, check_same_thread=False
            )
            try:
                version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                # The table is there and readable (one row, not a count: that reads them all).
                db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone()
                if version is not None and version[0] == SCHEMA_VERSION:
                    return db
            except sqlite3.Error:
                pass
            db.close()
        return _empty()

    def close(self) -> None:
        """Release the in-memory database (a file-backed index holds nothing open)."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _meta(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    @property
    def model(self) -> str | None:
        """The id of the model the stored vectors come from (None: no vectors yet)."""
        with self._db() as db:
            return self._meta(db, "model")

    @property
    def dimension(self) -> int | None:
        """The length of the stored vectors (None: no vectors yet)."""
        with self._db() as db:
            value = self._meta(db, "dimension")
        return int(value) if value else None

    def count(self, graphs: Iterable[str] | None = None) -> int:
        """Number of stored vectors (in ``graphs``, or overall)."""
        where, args = _in_graphs(graphs)
        with self._db() as db:
            return int(db.execute(f"SELECT count(*) FROM vectors{where}", args).fetchone()[0])

    def has_any(self, graphs: Iterable[str] | None = None) -> bool:
        """True when at least one vector is stored (in ``graphs``, or at all): a probe of the
        key index, whatever the number of vectors (``count`` reads them all)."""
        where, args = _in_graphs(graphs)
        with self._db() as db:
            sql = f"SELECT EXISTS (SELECT 1 FROM vectors{where})"
            return bool(db.execute(sql, args).fetchone()[0])

    def usable(self, model: str, graphs: Iterable[str] | None = None) -> bool:
        """True when vectors of ``model`` exist (in ``graphs``, or anywhere)."""
        return self.model == model and self.has_any(graphs)

    def vector_of(self, graph: str, iri: str) -> NDArray[np.float32] | None:
        """The stored vector of one node, or None."""
        import numpy as np

        with self._db() as db:
            row = db.execute(
                "SELECT vector FROM vectors WHERE graph = ? AND iri = ?", (graph, iri)
            ).fetchone()
        return np.frombuffer(row[0], dtype=np.float32) if row else None

    def digests(self) -> dict[Key, str]:
        """(graph, iri) -> the digest of the text each stored vector was computed from."""
        with self._db() as db:
            rows = db.execute("SELECT graph, iri, digest FROM vectors").fetchall()
        return {(graph, iri): digest for graph, iri, digest in rows}

    # ------------------------------------------------------------------ planning
    def plan(self, index: TextIndex, model: str) -> EmbedPlan:
        """What to embed (new or changed nodes, or every node for another model; shortest
        texts first) and which vectors to drop (nodes no longer in the text index) for
        ``model``."""
        stored = self.digests() if self.model == model else {}
        nodes, _ = index.nodes(limit=max(index.count(), 1))
        todo: list[PendingText] = []
        present: set[Key] = set()
        unchanged = 0
        for node in sorted(nodes, key=lambda n: (n.graph, n.iri)):
            key = (node.graph, node.iri)
            present.add(key)
            text = node_text(node.title, index.content(node.graph, node.iri))
            digest = digest_of(text)
            if stored.get(key) == digest:
                unchanged += 1
            else:
                todo.append(PendingText(node.graph, node.iri, text, digest))
        orphans = sorted(set(stored) - present)
        # Texts of similar length share a batch: less padding, faster batches.
        todo.sort(key=lambda item: (len(item.text), item.graph, item.iri))
        return EmbedPlan(model=model, todo=todo, orphans=orphans, unchanged=unchanged)

    def plan_nodes(
        self, graph: str, records: Iterable[IndexRecord], removed: Iterable[str], model: str
    ) -> EmbedPlan:
        """What to embed and drop so that the vectors of some nodes of ``graph`` match them:
        ``records`` (nodes added or changed) whose text differs from the one their vector was
        computed from, or that have none; ``removed`` (node IRIs) that have one. Vectors of
        another model than ``model`` are not planned for (an empty plan): ``plan`` redoes
        them all."""
        if self.model != model:
            return EmbedPlan(model=model, todo=[], orphans=[], unchanged=0)
        pending = {
            record.iri: PendingText(graph, record.iri, text, digest_of(text))
            for record in records
            for text in [node_text(record.title, record.content)]
        }
        gone = list(removed)
        stored: dict[str, str] = {}
        wanted = [*pending, *gone]
        with self._db() as db:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                stored.update(
                    db.execute(
                        f"SELECT iri, digest FROM vectors WHERE graph = ? AND iri IN ({marks})",
                        [graph, *chunk],
                    ).fetchall()
                )
        todo = [item for iri, item in pending.items() if stored.get(iri) != item.digest]
        orphans = [(graph, iri) for iri in gone if iri in stored and iri not in pending]
        return EmbedPlan(
            model=model, todo=todo, orphans=orphans, unchanged=len(pending) - len(todo)
        )

    # ------------------------------------------------------------------ writing
    def update(
        self,
        provider: EmbeddingProvider,
        plan: EmbedPlan,
        *,
        batch_size: int = 32,
        before_batch: Callable[[int], None] | None = None,
    ) -> int:
        """Embed ``plan.todo`` in batches, one committed transaction per batch, and return
        how many were embedded. ``before_batch(done)`` runs before each batch (it may raise
        to stop: the batches committed so far are kept). A plan for another model than the
        stored one first removes every stored vector."""
        import numpy as np

        self._require_writable()
        if plan.model != provider.model_id:
            raise ValueError(f"plan for {plan.model}, provider {provider.model_id}")
        done = 0
        for start in range(0, len(plan.todo), batch_size):
            if before_batch is not None:
                before_batch(done)
            batch = plan.todo[start : start + batch_size]
            rows = provider.embed([item.text for item in batch])
            with self._db(write=True) as db, db:
                _claim(db, provider.model_id, provider.dimension)
                db.executemany(
                    "INSERT OR REPLACE INTO vectors (graph, iri, digest, vector)"
                    " VALUES (?, ?, ?, ?)",
                    [
                        (item.graph, item.iri, item.digest, np.asarray(row, np.float32).tobytes())
                        for item, row in zip(batch, rows, strict=True)
                    ],
                )
                _bump(db)
            done += len(batch)
        return done

    def remove(self, keys: Iterable[Key]) -> int:
        """Drop the vectors of these nodes; return how many there were."""
        chosen = list(keys)
        if not chosen:
            return 0
        with self._db(write=True) as db, db:
            before = db.total_changes
            db.executemany("DELETE FROM vectors WHERE graph = ? AND iri = ?", chosen)
            removed = db.total_changes - before
            _bump(db)
            return removed

    def clear(self) -> None:
        """Drop every vector and the model record."""
        with self._db(write=True) as db, db:
            db.execute("DELETE FROM vectors")
            db.execute("DELETE FROM meta WHERE key IN ('model', 'dimension')")
            _bump(db)

    def _require_writable(self) -> None:
        if self.read_only:
            from labbrain.errors import StoreReadOnly

            raise StoreReadOnly("computing embeddings")

    # ------------------------------------------------------------------ searching
    def _loaded(self) -> tuple[list[Key], Any]:
        """(keys, matrix) of every stored vector, reloaded when the index changed: float32
        rows, or int8 rows (scaled by 127) from :data:`LARGE` vectors on when usearch is
        installed. The int8 matrix of a file-backed index is mapped from its snapshot when
        one of this exact state exists (:meth:`keep_snapshot`), else read from the file."""
        with self._db() as db:
            version = self._version(db)
            if self._matrix is None or self._matrix[0] != version:
                self._matrix = None  # let the old matrix go before the new one is read
                dimension = int(self._meta(db, "dimension") or 1)
                count = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
                compact = _compact(count)
                path = self.path if compact else None
                found = vector_snapshot.read(path, version, count, dimension) if path else None
                if found is None:
                    found = _read_rows(db, count, dimension, compact)
                self._matrix = (version, *found)
            return self._matrix[1], self._matrix[2]

    def _version(self, db: sqlite3.Connection) -> tuple[str, ...]:
        """What names the stored vectors' exact state: instance id, write stamp, generation."""
        version = tuple(self._meta(db, key) or "" for key in ("instance", "stamp"))
        return (*version, self._meta(db, "generation") or "0")

    def stale_snapshots(self) -> list[Path]:
        """The kept search-matrix files beside the file that no search will read: those of
        other states of the vectors, or every one when the vectors are too few to be kept (or
        the file is gone). Reads only."""
        if self.path is None:
            return []
        wanted = None
        if self.path.exists() and _compact(self.count()):
            with self._db() as db:
                wanted = self._version(db)
        return vector_snapshot.stale(self.path, wanted)

    def drop_stale_snapshots(self) -> int:
        """Remove :meth:`stale_snapshots`; how many files were removed (none when
        read-only)."""
        return 0 if self.read_only else vector_snapshot.remove(self.stale_snapshots())

    def keep_snapshot(self) -> bool:
        """Keep the int8 search matrix of the current vectors beside the file (see
        :mod:`labbrain.index.vector_snapshot`) when there are :data:`LARGE` or more, so that
        the first search of the next process maps it instead of reading every vector; with
        fewer, remove any snapshot. True when a snapshot of the current vectors exists
        afterwards. A read-only or in-memory index does nothing."""
        import numpy as np

        if self.path is None or self.read_only:
            return False
        with self._lock:
            if not _compact(self.count()):  # a float32 matrix: none is kept
                self.drop_stale_snapshots()
                return False
            keys, matrix = self._loaded()
            assert self._matrix is not None
            if isinstance(matrix, np.memmap):  # mapped from this very snapshot
                return True
            return vector_snapshot.write(self.path, self._matrix[0], keys, matrix)

    def search(
        self,
        query: NDArray[np.float32],
        *,
        limit: int = 10,
        graphs: Iterable[str] | None = None,
        allowed: set[Key] | None = None,
    ) -> list[VectorHit]:
        """The ``limit`` stored vectors most similar to ``query`` (cosine, best first; ties by
        key), only in ``graphs`` and among ``allowed`` keys when given."""
        import numpy as np

        keys, matrix = self._loaded()
        if not keys or limit <= 0:
            return []
        chosen_graphs = set(graphs) if graphs is not None else None
        mask = None
        if chosen_graphs is not None or allowed is not None:
            mask = np.fromiter(
                (
                    (chosen_graphs is None or key[0] in chosen_graphs)
                    and (allowed is None or key in allowed)
                    for key in keys
                ),
                dtype=bool,
                count=len(keys),
            )
        if matrix.dtype == np.int8:
            return _search_compact(keys, matrix, query, limit, mask)
        scores = matrix @ np.asarray(query, dtype=np.float32)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        take = min(limit, len(keys))
        top = np.argpartition(-scores, take - 1)[:take]
        ordered = sorted(top.tolist(), key=lambda i: (-float(scores[i]), keys[i]))
        return [
            VectorHit(keys[i][0], keys[i][1], float(scores[i]))
            for i in ordered
            if np.isfinite(scores[i])
        ]


def _read_rows(
    db: sqlite3.Connection, count: int, dimension: int, compact: bool
) -> tuple[list[Key], Any]:
    """(keys, matrix) of every stored vector, in key order: float32 rows, or int8 rows scaled
    by 127 when ``compact``. Read in blocks into one array (never a second copy of every
    vector)."""
    import numpy as np

    matrix = np.zeros((count, dimension), dtype=np.int8 if compact else np.float32)
    keys: list[Key] = []
    cursor = db.execute("SELECT graph, iri, vector FROM vectors ORDER BY graph, iri")
    while rows := cursor.fetchmany(_READ_ROWS):
        block = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        block = block.reshape(len(rows), dimension)
        at = len(keys)
        if compact:
            block = np.rint(block * _SCALE)
        matrix[at : at + len(rows)] = block
        keys += [(graph, iri) for graph, iri, _ in rows]
    return keys, matrix[: len(keys)]


def _compact(count: int) -> bool:
    """True when ``count`` vectors are searched as an int8 matrix (:data:`LARGE` or more,
    usearch installed)."""
    return count >= LARGE and _usearch_present()


def _usearch_present() -> bool:
    """True when usearch can be imported (it is not imported here)."""
    import importlib.util

    return importlib.util.find_spec("usearch") is not None


def _search_compact(
    keys: list[Key], matrix: Any, query: Any, limit: int, mask: Any | None
) -> list[VectorHit]:
    """The ``limit`` int8 rows of ``matrix`` nearest to ``query`` by dot product (among the
    rows ``mask`` keeps), best first, ties by key; scores scaled back to cosines."""
    import os

    import numpy as np
    from usearch.index import search as nearest

    rows = np.flatnonzero(mask) if mask is not None else None
    chosen = matrix if rows is None else matrix[rows]
    if not len(chosen):
        return []
    target = np.rint(np.asarray(query, dtype=np.float32) * _SCALE).astype(np.int8)
    # A few more than asked for, so that a tie across the cut is broken by key too.
    take = min(limit + 8, len(chosen))
    found = nearest(chosen, target, take, "ip", exact=True, threads=os.cpu_count() or 1)
    hits = []
    for position, distance in zip(found.keys.tolist(), found.distances.tolist(), strict=True):
        index = int(position) if rows is None else int(rows[position])
        # usearch's inner-product distance is 1 - dot, the dot of the int8 rows
        hits.append((keys[index], (1.0 - float(distance)) / (_SCALE * _SCALE)))
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return [VectorHit(key[0], key[1], score) for key, score in hits[:limit]]


def _empty() -> sqlite3.Connection:
    """An empty index in memory (what a missing or unusable file reads as)."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
    db.execute("INSERT INTO meta VALUES ('instance', ?)", (uuid.uuid4().hex,))
    db.commit()
    return db


def _open_checked(path: Path) -> sqlite3.Connection:
    """Open (creating it if needed) the index file; raise DatabaseError if it is not one."""
    db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if version is None:
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            db.execute("INSERT INTO meta VALUES ('instance', ?)", (uuid.uuid4().hex,))
            db.commit()
        elif version[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError("vector index schema version changed")
        db.execute("SELECT count(*) FROM vectors").fetchone()
        return db
    except sqlite3.Error:
        db.close()
        raise


def _claim(db: sqlite3.Connection, model: str, dimension: int) -> None:
    """Inside a write transaction: make the index hold vectors of ``model`` (dropping those
    of any other model)."""
    current = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('model', 'dimension')"))
    if current.get("model") == model and current.get("dimension") == str(dimension):
        return
    db.execute("DELETE FROM vectors")
    db.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [("model", model), ("dimension", str(dimension))],
    )


def _bump(db: sqlite3.Connection) -> None:
    """Inside a write transaction: count one more change and draw a new stamp (readers reload
    their matrix; a snapshot of the matrix is only ever read for the stamp it was made at,
    even in a file put back from a copy and written again)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    generation = int(row[0]) + 1 if row else 1
    db.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [("generation", str(generation)), ("stamp", uuid.uuid4().hex)],
    )


def nodes_of(index: TextIndex, hits: Iterable[VectorHit]) -> list[tuple[IndexedNode, float]]:
    """The indexed nodes of vector hits, in order, with their scores (hits whose node is no
    longer indexed are left out)."""
    chosen = list(hits)
    by_graph: dict[str, list[str]] = {}
    for hit in chosen:
        by_graph.setdefault(hit.graph, []).append(hit.iri)
    found = {
        (graph, iri): node
        for graph, iris in by_graph.items()
        for iri, node in index.nodes_by_iri(iris, graph).items()
    }
    return [
        (found[(hit.graph, hit.iri)], hit.score) for hit in chosen if (hit.graph, hit.iri) in found
    ]
