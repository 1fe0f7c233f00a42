"""The local text index of a remote store, kept in step with loads made by any process.

A remote endpoint is shared: another labbrain process may load or drop a dataset at any
time. :class:`RefreshingTextIndex` is the ordinary SQLite index (one file per endpoint, see
:func:`labbrain.remote.index_directory`) that, before answering, re-checks the endpoint's
load records at most every ``interval`` seconds and re-indexes what changed (one small query
when nothing did). ``interval`` 0 checks before every answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from labbrain.index.text import IndexedNode, SearchHit, SyncReport, TextIndex
from labbrain.store.base import QuadStore


class RefreshingTextIndex(TextIndex):
    """A writable text index that follows ``store``'s load records (see the module)."""

    def __init__(self, path: Path | None, store: QuadStore, interval: float) -> None:
        super().__init__(path, read_only=False)
        # Other processes write this file too: hold no transaction between operations (the
        # integrity check at open leaves one open).
        if self._db.in_transaction:
            self._db.commit()
        self._store = store
        self._interval = interval
        self._checked = float("-inf")
        self._lock = threading.Lock()

    def sync(self, store: QuadStore, *, force: bool = False) -> SyncReport:
        """As :meth:`TextIndex.sync`; also restarts the refresh interval."""
        with self._lock:
            report = super().sync(store, force=force)
            self._checked = time.monotonic()
        return report

    def refresh(self) -> None:
        """Sync with the store if the last check is older than the interval."""
        if time.monotonic() - self._checked >= self._interval:
            self.sync(self._store)

    # Every read answers from a fresh enough index.
    def count(self, graph: str | None = None) -> int:
        self.refresh()
        return super().count(graph)

    def nodes_by_uid(self, uid: str, graphs: Iterable[str] | None = None) -> list[IndexedNode]:
        self.refresh()
        return super().nodes_by_uid(uid, graphs)

    def nodes_by_iri(self, iris: Iterable[str], graph: str | None = None) -> dict[str, IndexedNode]:
        self.refresh()
        return super().nodes_by_iri(iris, graph)

    def contributions(self, creator: str | None = None) -> list[tuple[str, str, int, str, str]]:
        self.refresh()
        return super().contributions(creator)

    def creators(self) -> list[str]:
        self.refresh()
        return super().creators()

    def type_counts(self) -> list[tuple[str, str, int]]:
        self.refresh()
        return super().type_counts()

    def content(self, graph: str, iri: str) -> str:
        self.refresh()
        return super().content(graph, iri)

    def nodes(
        self,
        *,
        graphs: Iterable[str] | None = None,
        node_types: Iterable[str] | None = None,
        creator: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[IndexedNode], int]:
        self.refresh()
        return super().nodes(
            graphs=graphs, node_types=node_types, creator=creator, limit=limit, offset=offset
        )

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
        self.refresh()
        return super().search(
            text,
            limit=limit,
            graphs=graphs,
            node_type=node_type,
            creator=creator,
            order_by=order_by,
            descending=descending,
        )
