"""Opening the store the settings name: a remote endpoint, or the embedded store."""

from __future__ import annotations

from labbrain.settings import Settings
from labbrain.store.base import QuadStore
from labbrain.store.local import open_store
from labbrain.store.remote.store import RemoteStore


def open_backend(settings: Settings, *, read_only: bool = False) -> QuadStore:
    """The store ``settings`` name: the remote SPARQL store of ``settings.endpoint`` (checked
    to answer), else the embedded store at ``settings.store`` (with its writer lock unless
    ``read_only``). Raises the backend's own errors (StoreLocked, EndpointError, ...)."""
    if settings.endpoint:
        return RemoteStore.from_settings(settings, read_only=read_only)
    return open_store(settings.store, read_only=read_only)
