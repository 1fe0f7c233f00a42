"""Resource notifications: subscribed clients hear when a dataset, a node or the list changes.

Every load, replacement and update by part commits a load record and a change record
(:mod:`labbrain.ingest.changes`), whichever process wrote it (a watcher of this server,
``labbrain load`` beside it). :class:`LoadsSeen` compares the store's loads with those seen
before and names the resources a new load changed: the dataset's (``labbrain://dataset/<slug>``),
the schema, and the node of every entry of its change record (added, edited or removed); a
dataset that comes or goes changes the resource list. :class:`Announcer` tells the clients
that asked, in both protocol eras:

- 2026-07-28 and later: a ``subscriptions/listen`` stream naming the URIs (and asking for
  list changes) gets ``notifications/resources/updated`` and ``.../list_changed`` on it;
- earlier versions: ``resources/subscribe`` (and ``resources/unsubscribe``) per URI, and the
  ``listChanged`` capability; a client that listed the resources hears when the list changes.

The store is looked at only while someone listens: every :data:`POLL_SECONDS`, and at once
when the server's own watcher reports a load (:meth:`Announcer.poke`). What was committed
before a client subscribed is never announced to it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
    SubscriptionBus,
)
from mcp_types import (
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from labbrain.core import LabBrain
from labbrain.index.text import uid_of
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX
from labbrain.store import templates
from labbrain.store.threads import confined

log = logging.getLogger(__name__)

#: How often (s) the store's loads are compared while someone listens.
POLL_SECONDS = 2.0
#: How often (s) the announcer checks for a poke from the server's watcher.
STEP_SECONDS = 0.1

SCHEMA_URI = "labbrain://schema"
NODE_URI = "labbrain://node/"
DATASET_URI = "labbrain://dataset/"


def node_uri(uid: str) -> str:
    """The resource URI of the node ``uid``."""
    return NODE_URI + uid


def dataset_uri(slug: str) -> str:
    """The resource URI of the dataset ``slug``."""
    return DATASET_URI + slug


@dataclass(frozen=True)
class Announcement:
    """What loads committed since the last look changed: the URIs of the resources updated,
    whether the list of datasets changed, and whether every node may have (a change record
    whose entries were cut, or a dataset dropped)."""

    uris: frozenset[str]
    listed: bool = False
    every_node: bool = False


class LoadsSeen:
    """The loads and change records of the store at one moment; :meth:`since` names what
    the loads committed after it changed and moves the moment on. One thread at a time."""

    def __init__(self, brain: LabBrain) -> None:
        self.brain = brain
        self._loads = self._current()
        self._changes = {str(row["change"]) for row in templates.run(brain.store, "changes")}

    def _current(self) -> dict[str, str]:
        return {str(row["graph"]): str(row["loadId"]) for row in self.brain.datasets()}

    def since(self) -> Announcement | None:
        """What changed since the last look (None: no load was committed)."""
        loads = self._current()
        if loads == self._loads:
            return None
        uris = {SCHEMA_URI}
        for graph in loads.keys() | self._loads.keys():
            if loads.get(graph) != self._loads.get(graph):
                uris.add(dataset_uri(graph.removeprefix(DATASET_GRAPH_PREFIX)))
        dropped = bool(self._loads.keys() - loads.keys())
        every_node = dropped
        for row in templates.run(self.brain.store, "changes"):
            change = str(row["change"])
            if change in self._changes:
                continue
            self._changes.add(change)
            every_node = every_node or bool(row["truncated"])
            for entry in templates.run(self.brain.store, "change_entries", change=change):
                if entry.get("node") is not None:
                    uris.add(node_uri(uid_of(str(entry["node"]))))
        listed = loads.keys() != self._loads.keys()
        self._loads = loads
        return Announcement(frozenset(uris), listed=listed, every_node=every_node)


@dataclass
class _Listeners:
    """Who listens for what. The URIs of each stream (2026-07-28; the SDK's handler sends it
    list changes when it asked for them), by a token of its own; subscriptions of earlier
    clients by URI, and the sessions that listed the resources, by connection."""

    streams: dict[object, frozenset[str]] = field(default_factory=dict)
    subscribed: dict[str, dict[object, ServerSession]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    listing: dict[object, ServerSession] = field(default_factory=dict)

    def any(self) -> bool:
        return bool(self.streams or self.listing or any(self.subscribed.values()))

    def node_uris(self) -> set[str]:
        wanted = {uri for uris in self.streams.values() for uri in uris}
        wanted |= {uri for uri, sessions in self.subscribed.items() if sessions}
        return {uri for uri in wanted if uri.startswith(NODE_URI)}

    def forget(self, connection: object) -> None:
        """Drop a connection that can no longer be written to."""
        self.listing.pop(connection, None)
        for sessions in self.subscribed.values():
            sessions.pop(connection, None)


def _connection(session: ServerSession) -> object:
    """What identifies the client behind ``session`` (a proxy made anew for each request)."""
    return getattr(session, "_connection", session)


class Announcer:
    """Tells subscribed clients of the server over ``brain`` which resources changed (see the
    module's doc). :meth:`run` does the work while the server serves; :meth:`attach` declares
    the handlers on the server."""

    def __init__(self, brain: LabBrain, bus: SubscriptionBus) -> None:
        self.brain = brain
        self.bus = bus
        self.listeners = _Listeners()
        self._seen: LoadsSeen | None = None
        self._lock = anyio.Lock()
        self._poked = threading.Event()
        #: How many announcements were made (for the log and tests).
        self.announced = 0

    # ------------------------------------------------------------------ from other threads
    def poke(self) -> None:
        """Look at the store now (thread-safe; the server's watcher calls it after a load)."""
        self._poked.set()

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        """Look at the store while anyone listens, and announce what changed, until
        cancelled. A failed look is logged and tried again at the next step."""
        last = time.monotonic()
        while True:
            await anyio.sleep(STEP_SECONDS)
            if not self.listeners.any():
                self._seen = None  # the next listener starts from the store as it is then
                self._poked.clear()
                continue
            if not self._poked.is_set() and time.monotonic() - last < POLL_SECONDS:
                continue
            self._poked.clear()
            last = time.monotonic()
            try:
                await self.announce_now()
            except Exception:  # a store error must not end the server
                log.exception("could not look for changes to announce")

    async def announce_now(self) -> Announcement | None:
        """Compare the store with what was seen, and announce what changed."""
        async with self._lock:
            seen = self._seen
            if seen is None:
                return None
            found = await anyio.to_thread.run_sync(confined(seen.since))
        if found is not None:
            await self._announce(found)
        return found

    async def _baseline(self) -> None:
        """Start from the store as it is now, unless already looking (a new listener hears
        of every load committed after its subscription is answered)."""
        async with self._lock:
            if self._seen is None:
                self._seen = await anyio.to_thread.run_sync(confined(LoadsSeen), self.brain)

    async def _announce(self, found: Announcement) -> None:
        uris = set(found.uris)
        if found.every_node:
            uris |= self.listeners.node_uris()
        self.announced += 1
        if found.listed:
            await self.bus.publish(ResourcesListChanged())
            for connection, session in list(self.listeners.listing.items()):
                await self._send(connection, session.send_resource_list_changed())
        wanted = {uri for uris_ in self.listeners.streams.values() for uri in uris_}
        for uri in sorted(uris & wanted):
            await self.bus.publish(ResourceUpdated(uri=uri))
        for uri in sorted(uris):
            for connection, session in list(self.listeners.subscribed.get(uri, {}).items()):
                await self._send(connection, session.send_resource_updated(uri))

    async def _send(self, connection: object, sending: Any) -> None:
        try:
            await sending
        except Exception as error:  # the client is gone: stop writing to it
            log.debug("dropping a listener: %s", error)
            self.listeners.forget(connection)

    # ------------------------------------------------------------------ the handlers
    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        """``resources/subscribe`` (before 2026-07-28): updates of ``params.uri``."""
        await self._baseline()
        self.listeners.subscribed[str(params.uri)][_connection(ctx.session)] = ctx.session
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        """``resources/unsubscribe``: no more updates of ``params.uri``."""
        self.listeners.subscribed.get(str(params.uri), {}).pop(_connection(ctx.session), None)
        return EmptyResult()

    async def listed(self, session: ServerSession) -> None:
        """A client listed the resources: a client before 2026-07-28 hears when the list
        changes (``listChanged``), on its connection."""
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await self._baseline()
            self.listeners.listing[_connection(session)] = session

    def attach(self, server: MCPServer[Any]) -> None:
        """Serve ``resources/subscribe``, ``resources/unsubscribe`` and ``subscriptions/listen``
        on ``server`` (whose bus must be :attr:`bus`), and declare ``listChanged`` for the
        resources to clients before 2026-07-28 (later ones learn it from the listen method)."""
        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe
        )
        lowlevel.add_request_handler(
            "subscriptions/listen", SubscriptionsListenRequestParams, self._listen_handler()
        )
        lowlevel.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            lowlevel.create_initialization_options, NotificationOptions(resources_changed=True)
        )

    def _listen_handler(self) -> Callable[..., Any]:
        """``subscriptions/listen`` (2026-07-28): the SDK's stream, with the URIs and list
        interest of each open stream known here."""
        handler = ListenHandler(self.bus)

        async def listen(
            ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams
        ) -> SubscriptionsListenResult:
            asked = params.notifications
            token = object()
            await self._baseline()
            self.listeners.streams[token] = frozenset(asked.resource_subscriptions or ())
            try:
                return await handler(ctx, params)
            finally:
                self.listeners.streams.pop(token, None)

        return listen
