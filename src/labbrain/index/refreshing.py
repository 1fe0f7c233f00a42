"""The local text index of a remote store, kept in step with loads made by any process.

A remote endpoint is shared: another labbrain process may load or drop a dataset at any time.
:class:`RefreshingTextIndex` is the ordinary SQLite index (one file per endpoint, see
:func:`labbrain.store.remote.store.index_directory`) that, before answering, re-checks the
endpoint's load records at most every ``interval`` seconds and re-indexes what changed (one small
query when nothing did). ``interval`` 0 checks before every answer.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from labbrain.index.text import SyncReport, TextIndex
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

    def _before_read(self) -> None:
        """Every read answers from a fresh enough index."""
        self.refresh()
