"""The checks every HTTP request passes before it reaches a route (the MCP endpoint too).

- **Host** must be one the server answers to: the bound host, localhost or 127.0.0.1 with
  the port, or one listed in the settings. A page on another site that rebinds its DNS name
  to 127.0.0.1 sends its own name as Host and is refused (421).
- **Origin**, when a browser sends one, must be the server's own (an allowed host) or listed
  in the settings (403). Listed origins get CORS headers; nothing else does.
- **Size**: a request body (or query string) over the cap is refused (413) without being
  kept. Requests carrying the update token have a larger cap of their own. The refused body
  is read and dropped first, up to :data:`DRAIN_BYTES`, so that a client that writes its whole
  body before reading (Python's ``http.client``) sees the 413 and not a reset connection.
"""

from __future__ import annotations

import hmac
from collections import deque
from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from labbrain.http.errors import error_response

_CORS_METHODS = "GET, POST, HEAD, OPTIONS"
#: How much of a refused body is read (and dropped) before the 413 is sent; past it the
#: connection is closed with the answer, as it would be without draining.
DRAIN_BYTES = 16 * 1024 * 1024
_CORS_HEADERS = "Accept, Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version"


def default_hosts(bound: str, port: int) -> list[str]:
    """The Host values a server bound to ``bound``:``port`` answers to by default."""
    names = [bound, "localhost", "127.0.0.1"]
    if bound in ("::1", "::"):
        names.append("[::1]")
    hosts: list[str] = []
    for name in names:
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"
        for value in (f"{name}:{port}", name) if port == 80 else (f"{name}:{port}",):
            if value not in hosts:
                hosts.append(value)
    return hosts


def _split_host(value: str) -> tuple[str, str | None]:
    """``name[:port]`` -> (name, port or None); IPv6 literals keep their brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[: end + 1], value[end + 1 :]
        return name, rest[1:] if rest.startswith(":") else None
    name, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        return value, None
    return name, port


def host_allowed(host: str | None, allowed: Iterable[str]) -> bool:
    """True when a Host header value matches an entry: ``*`` (any host), ``name:port``
    (exactly) or ``name`` (that name on any port)."""
    if not host:
        return False
    name, port = _split_host(host)
    for entry in allowed:
        if entry == "*":
            return True
        entry_name, entry_port = _split_host(entry)
        if entry_name == name and (entry_port is None or entry_port == port):
            return True
    return False


def _origin_netloc(origin: str) -> str | None:
    """The ``host:port`` an http(s) Origin names (default port filled in), else None."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    name = parts.hostname
    if ":" in name:
        name = f"[{name}]"
    return f"{name}:{port}"


class Guard:
    """ASGI middleware applying the Host, Origin and size checks to every HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: list[str],
        allowed_origins: list[str],
        max_body: int,
        token: str | None = None,
        max_token_body: int | None = None,
    ) -> None:
        self.app = app
        self.allowed_hosts = list(allowed_hosts)
        self.allowed_origins = [o.rstrip("/").lower() for o in allowed_origins]
        self.max_body = max_body
        self.token = token
        self.max_token_body = max_token_body or max_body

    def body_cap(self, headers: Headers) -> int:
        """The size cap of a request: the larger one when it carries the update token."""
        if self.token:
            scheme, _, value = headers.get("authorization", "").partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(
                value.strip().encode(), self.token.encode()
            ):
                return self.max_token_body
        return self.max_body

    def origin_allowed(self, origin: str) -> bool:
        """True for the server's own origins and the listed ones."""
        if origin.rstrip("/").lower() in self.allowed_origins:
            return True
        netloc = _origin_netloc(origin)
        return netloc is not None and host_allowed(netloc, self.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not host_allowed(host, self.allowed_hosts):
            response = error_response(
                421,
                "HostNotAllowed",
                f"this server does not answer to Host {host!r}; add it to "
                "LABBRAIN_HTTP_ALLOWED_HOSTS if it is a name of this server",
            )
            await response(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin):
            response = error_response(
                403,
                "OriginNotAllowed",
                f"requests from pages at {origin!r} are not allowed; list the origin in "
                "LABBRAIN_HTTP_ALLOWED_ORIGINS to allow them",
            )
            await response(scope, receive, send)
            return
        cors = origin is not None and origin.rstrip("/").lower() in self.allowed_origins
        if cors and scope["method"] == "OPTIONS":
            preflight = Response(
                status_code=204,
                headers={
                    **self._cors_headers(origin or ""),
                    "Access-Control-Allow-Methods": _CORS_METHODS,
                    "Access-Control-Allow-Headers": _CORS_HEADERS,
                    "Access-Control-Max-Age": "600",
                },
            )
            await preflight(scope, receive, send)
            return
        cap = self.body_cap(headers)
        if len(scope.get("query_string", b"")) > cap:
            await self._too_large(scope, receive, send, cap)
            return
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            await self._too_large(scope, receive, send, cap)
            return
        replay = await self._read_body(receive, cap)
        if replay is None:
            await self._too_large(scope, receive, send, cap, read=cap)
            return
        if cors:
            send = self._with_cors(send, origin or "")
        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive, cap: int) -> Receive | None:
        """Read the whole body (at most the cap) and return a receive that replays it; None
        when it is over the cap."""
        body = bytearray()
        pending: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)
                break
            body.extend(message.get("body", b""))
            if len(body) > cap:
                return None
            if not message.get("more_body", False):
                break
        pending.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            if pending:
                return pending.popleft()
            return await receive()

        return replay

    async def _too_large(
        self, scope: Scope, receive: Receive, send: Send, cap: int, *, read: int = 0
    ) -> None:
        """Answer 413, having read and dropped what is left of the body (up to
        :data:`DRAIN_BYTES` in all; ``read``: what was read of it already)."""
        while read <= DRAIN_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                break
            read += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        setting = (
            "LABBRAIN_HTTP_MAX_REQUEST_BYTES"
            if cap == self.max_body
            else "LABBRAIN_HTTP_MAX_UPDATE_BYTES"
        )
        response = error_response(
            413,
            "RequestTooLarge",
            f"the request is over {cap:,} bytes ({setting})",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)

    def _cors_headers(self, origin: str) -> dict[str, str]:
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}

    def _with_cors(self, send: Send, origin: str) -> Send:
        extra = self._cors_headers(origin)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in extra.items():
                    headers.append(key, value)
            await send(message)

        return sending


def sdk_security(hosts: list[str], origins: list[str]) -> TransportSecuritySettings:
    """The MCP SDK's own DNS-rebinding settings, allowing exactly what the Guard allows (the
    Guard runs first; this keeps the SDK's check from refusing what the Guard let through)."""
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sdk_hosts: list[str] = []
    sdk_origins = list(origins)
    for host in hosts:
        name, port = _split_host(host)
        variants = [host] if port is not None else [name, f"{name}:*"]
        sdk_hosts.extend(variants)
        for variant in variants:
            sdk_origins.extend([f"http://{variant}", f"https://{variant}"])
            if variant.endswith(":80"):
                sdk_origins.append(f"http://{variant[:-3]}")
            if variant.endswith(":443"):
                sdk_origins.append(f"https://{variant[:-4]}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sdk_hosts,
        allowed_origins=sdk_origins,
    )
