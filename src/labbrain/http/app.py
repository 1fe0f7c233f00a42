"""``labbrain serve``: one ASGI app (starlette, run by uvicorn) over an opened store.

Routes::

    /                 the web console (http.console)
    /static/{name}    its script, style and icon
    /console/config   prefixes, examples, graphs and limits for the page
    /sparql           SPARQL 1.1 Protocol: queries, updates, service description (http.sparql)
    /rdf-graphs       Graph Store Protocol, reading (http.sparql)
    /mcp              the MCP server over streamable HTTP (with ``mcp=True``)

Every request passes the Guard first (Host, Origin, size: http.guard); every error is
answered in one JSON shape (http.errors). Query requests are then answered by a middleware
ahead of the router (http.sparql.QueryRequests): in worker processes with a time limit
(http.pool), or here when the query is a bounded lookup that cannot run long (http.lookup);
updates run here, one at a time, behind a bearer token.

:func:`open_for_serving` opens the store the way the server needs it: a server that takes
updates holds the writer lock; a read-only one over an on-disk store holds none, so that
``labbrain load`` (or any writer) runs beside it, and reads the writer's commits as they
land (store.fresh).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from labbrain.core import LabBrain, open_reading
from labbrain.errors import LabbrainError, SettingsError
from labbrain.http.console import config, page, static
from labbrain.http.errors import (
    HttpError,
    error_response,
    from_http_error,
    from_library_error,
)
from labbrain.http.guard import Guard, default_hosts, sdk_security
from labbrain.http.pool import QueryPool, QueryRunner, runner_for
from labbrain.http.sparql import Endpoint, QueryRequests, graph_store, sparql
from labbrain.http.transport import http_protocol
from labbrain.ops.watch import WatchEvent, log_event, watching
from labbrain.settings import Settings
from labbrain.store.fresh import FreshStore
from labbrain.store.threads import confined

log = logging.getLogger("labbrain.http")

#: How long an idle client connection is kept open. Longer than HTTP clients keep an idle
#: pooled connection (httpx, which the MCP SDK's client uses, and Node's fetch: 5 s or less):
#: at uvicorn's default, 5 s, both ends gave up on a connection at the same moment, and a
#: request sent on it just as the server closed it failed with a reset connection.
KEEP_ALIVE_SECONDS = 75


@dataclass(frozen=True)
class Binding:
    """Where the server listens: the address and the port (the real one once bound)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        """The base URL of the server, e.g. ``http://127.0.0.1:7879/``."""
        name = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{name}:{self.port}/"


def open_for_serving(settings: Settings, *, allow_update: bool, watch: bool = False) -> LabBrain:
    """The store ``settings`` name, opened for ``labbrain serve``: with ``allow_update`` or
    ``watch`` writable (the server is the store's one writer; StoreLocked when another
    process holds it), else read-only, holding no lock and following a writer's commits
    (:func:`~labbrain.core.open_reading`)."""
    if allow_update or watch:
        return LabBrain(settings)
    return open_reading(settings)


def build_app(
    brain: LabBrain,
    *,
    binding: Binding | None = None,
    allow_update: bool = False,
    mcp: bool = False,
    runner: QueryRunner | None = None,
) -> Starlette:
    """The app serving ``brain``. Hosts allowed by default are those of ``binding`` (the
    settings' host and port when None). Raise SettingsError when updates are asked for
    without a token or on a read-only store."""
    settings = brain.settings
    binding = binding or Binding(settings.http_host, settings.http_port)
    token = settings.update_token.get_secret_value() if settings.update_token else None
    if allow_update and not token:
        raise SettingsError(
            "--allow-update needs a token: set LABBRAIN_UPDATE_TOKEN (clients send it as "
            "Authorization: Bearer <token>)"
        )
    if allow_update and brain.read_only:
        raise SettingsError("--allow-update needs the store open for writing")
    hosts = default_hosts(binding.host, binding.port) + list(settings.http_allowed_hosts)
    origins = list(settings.http_allowed_origins)
    runner = runner or runner_for(
        brain.store,
        workers=settings.http_query_workers,
        seconds=settings.http_query_timeout_seconds,
    )
    pooled = isinstance(runner, QueryPool)
    endpoint = Endpoint(
        brain=brain,
        runner=runner,
        max_rows=settings.http_max_rows,
        timeout_seconds=runner.seconds if isinstance(runner, QueryPool) else None,
        allow_update=allow_update,
        update_token=token,
        # Bounded lookups (http.lookup) need no worker to stop them: answered here, from
        # the store the workers read (its last commit), when queries run in workers at all.
        lookups=brain.store if pooled else None,
    )
    routes = [
        Route("/", page, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/console/config", config, methods=["GET"]),
        Route("/sparql", sparql, methods=["GET", "POST"]),
        Route("/rdf-graphs", graph_store, methods=["GET"]),
    ]
    session_manager = None
    server = None
    if mcp:
        from labbrain.mcp.server import build_server
        from labbrain.mcp.tools import resolve_toolsets

        # the toolsets of `labbrain mcp`; a server without updates offers no writing tool
        toolsets = resolve_toolsets(settings.toolsets)
        server = build_server(brain, toolsets, read_only=not allow_update)
        server.streamable_http_app(
            streamable_http_path="/mcp",
            transport_security=sdk_security(hosts, origins),
            max_request_body_size=settings.http_max_request_bytes,
            host=binding.host,
        )
        session_manager = server.session_manager
        routes.append(Route("/mcp", StreamableHTTPASGIApp(session_manager)))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(confined(runner.start))
        try:
            if session_manager is None:
                yield
            else:
                async with session_manager.run(), anyio.create_task_group() as group:
                    if server is not None and server.announcer is not None:
                        group.start_soon(server.announcer.run)  # resource notifications
                    yield
                    group.cancel_scope.cancel()
        finally:
            await anyio.to_thread.run_sync(confined(runner.close))

    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                Guard,
                allowed_hosts=hosts,
                allowed_origins=origins,
                max_body=settings.http_max_request_bytes,
                token=token if allow_update else None,
                max_token_body=settings.http_max_update_bytes,
            ),
            Middleware(QueryRequests, endpoint=endpoint),
        ],
        exception_handlers={
            HttpError: _on_http_error,
            LabbrainError: _on_library_error,
            HTTPException: _on_starlette_error,
            Exception: _on_unexpected,
        },
        lifespan=lifespan,
    )
    app.state.endpoint = endpoint
    app.state.mcp_server = server
    return app


async def _on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HttpError)
    return from_http_error(error)


async def _on_library_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, LabbrainError)
    return from_library_error(error)


_NAMES = {404: "NotFound", 405: "MethodNotAllowed"}


async def _on_starlette_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    kind = _NAMES.get(error.status_code, "HttpError")
    message = error.detail
    if error.status_code == 404:
        message = f"nothing at {request.url.path}; the console is at /, SPARQL at /sparql"
    elif error.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    return error_response(error.status_code, kind, message, headers=error.headers)


async def _on_unexpected(request: Request, error: Exception) -> Response:
    log.error("internal error answering %s %s", request.method, request.url.path, exc_info=error)
    return error_response(500, "InternalError", "internal error; the server log has details")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: any free port)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise SettingsError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    brain: LabBrain,
    *,
    allow_update: bool = False,
    mcp: bool = False,
    access_log: bool = False,
    watch: Sequence[str] = (),
) -> None:
    """Serve ``brain`` with uvicorn on the settings' host and port until interrupted; with
    ``watch`` (exports and vaults; ``brain`` writable), keep their datasets in line with
    them meanwhile (:func:`~labbrain.ops.watch.watching`)."""
    import uvicorn

    settings = brain.settings
    sock = bind_socket(settings.http_host, settings.http_port)
    binding = Binding(settings.http_host, sock.getsockname()[1])
    try:
        app = build_app(brain, binding=binding, allow_update=allow_update, mcp=mcp)
        endpoint: Endpoint = app.state.endpoint
        print(banner(brain, binding, endpoint, mcp=mcp), file=sys.stderr, flush=True)
        config = uvicorn.Config(
            app,
            http=http_protocol(),  # one write per answer (http.transport)
            log_level="info",
            access_log=access_log,
            timeout_graceful_shutdown=5,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        on_event: Callable[[WatchEvent], None] = log_event
        if app.state.mcp_server is not None:  # its subscribers hear of each load at once
            from labbrain.mcp.server import announcing

            on_event = announcing(app.state.mcp_server)
        with (
            watching(brain, watch, on_event=on_event) if watch else contextlib.nullcontext(),
            _signals_end_quietly(),
        ):
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def _signals_end_quietly() -> Iterator[None]:
    """uvicorn shuts down on SIGINT / SIGTERM and then raises the signal again for the
    handlers that were there before it; with these no-op handlers in place, the caller gets
    control back (and closes the store) instead of the process dying on the spot."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda number, frame: None) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def banner(brain: LabBrain, binding: Binding, endpoint: Endpoint, *, mcp: bool) -> str:
    """The line printed at start: where everything is and what the limits are."""
    parts = ["console /", "SPARQL /sparql", "graphs /rdf-graphs"]
    if mcp:
        parts.append("MCP /mcp")
    mode = "updates with the token" if endpoint.allow_update else "read-only"
    if isinstance(brain.store, FreshStore):
        mode += " (other processes may write the store: answers follow their writes)"
    limit = (
        f"queries stop after {endpoint.timeout_seconds:g} s"
        if endpoint.timeout_seconds
        else "no query time limit (in-memory store)"
    )
    return (
        f"labbrain serving {brain.store.location} at {binding.url} ({', '.join(parts)}); "
        f"{mode}; {limit}, {endpoint.max_rows:,} rows at most"
    )
