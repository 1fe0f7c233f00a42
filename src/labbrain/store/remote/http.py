"""HTTP for the remote store: one request, one complete answer, within a time limit.

:class:`HttpClient` is an :class:`httpx2.Client` (connection pool, HTTP/1.1, TLS, the
``401`` flow of :class:`~labbrain.store.remote.auth.Authenticator`) with three things httpx
does not do (httpx is imported with this module, which a remote store imports when it opens):

- **A time limit over the whole exchange**, body and a ``401`` round included: httpx's
  timeouts hold per socket operation, so an answer that trickles in could outlast any limit.
  Every connect, TLS handshake, read and write of a request waits at most for what is left
  of its limit (:class:`_DeadlineBackend`, the network backend under httpx's pool).
- **One resend of a read on a connection closed under it**: a kept-alive connection the
  server closed just before the request (no byte of an answer came, and no new connection
  was opened for it) is replaced and a request that changes nothing is sent once more.
- **No answer from a broken exchange**: a body cut short (a chunked stream or
  ``Content-Length`` not completed) is an error, not an answer.

What httpx's pool already does is relied on: a connection goes back to the pool only after
a complete answer that does not say ``Connection: close``, and an idle one whose socket has
become readable (the server closed it or sent something unasked) is dropped, never reused.
Labbrain never sends HEAD (a HEAD for a missing graph corrupts the next answer on an Oxigraph
server's kept-alive connection). Redirects are not followed, no proxy is used (the
environment's proxy variables are not read) and cookies are not kept. TLS certificates are
checked against the system's (or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, as OpenSSL reads them).
"""

from __future__ import annotations

import http.cookiejar
import logging
import socket
import ssl
import time
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2

from labbrain import __version__
from labbrain.store.remote.auth import Authenticator, Credentials

#: The header a labbrain endpoint sets on an answer cut at its row cap.
TRUNCATED_HEADER = "X-Labbrain-Truncated"

USER_AGENT = f"labbrain/{__version__}"
#: Writes go out in slices so that the time left is checked between them.
_WRITE_SLICE = 1 << 16


class TransportError(Exception):
    """A request got no complete answer. ``timed_out`` tells a time limit apart from a
    connection or protocol failure; ``str()`` says what happened, without credentials."""

    def __init__(self, reason: str, *, timed_out: bool = False, stale: bool = False) -> None:
        self.reason = reason
        self.timed_out = timed_out
        #: the connection was closed under the request (safe to resend a read on a new one)
        self.stale = stale
        super().__init__(reason)


@dataclass(frozen=True)
class Response:
    """A complete HTTP answer."""

    status: int
    content_type: str  # media type only, lowercased, without parameters
    body: bytes
    location: str | None = None
    #: The server said it cut the answer (a labbrain endpoint's ``X-Labbrain-Truncated``).
    truncated: bool = False
    #: The ``WWW-Authenticate`` values of a 401 answer.
    challenges: tuple[str, ...] = ()
    #: Where the credentials this request was sent with come from (``Credentials.source``,
    #: no secret); None when it carried none.
    credentials: str | None = None
    #: The ``Server`` header (the server's name and version), when it sent one.
    server: str | None = None

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300

    def text(self, limit: int = 300) -> str:
        """The first line of the body, shortened (for error messages)."""
        lines = self.body[: limit * 4].decode("utf-8", "replace").strip().splitlines()
        line = " ".join(lines[0].split()) if lines else ""
        return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------------------- the time limit
@dataclass
class _Exchange:
    """The request being sent by this thread: its deadline (``time.monotonic()``), and what
    happened on the wire since it was last (re)sent."""

    deadline: float
    connected: bool = False  # a new connection was opened
    received: int = 0  # bytes read


_EXCHANGE: ContextVar[_Exchange | None] = ContextVar("labbrain_http_exchange", default=None)


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to the time left of this thread's exchange; raises ``expired`` when
    none is left."""
    exchange = _EXCHANGE.get()
    if exchange is None:
        return timeout
    left = exchange.deadline - time.monotonic()
    if left <= 0:
        raise expired("no time left")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every operation waits at most for the time left (see
    :func:`_left`)."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._stream.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))
        exchange = _EXCHANGE.get()
        if exchange is not None:
            exchange.received += len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _WRITE_SLICE):
            piece = buffer[start : start + _WRITE_SLICE]
            self._stream.write(piece, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        left = _left(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore's socket backend, each connection a :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self._backend = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        left = _left(timeout, httpcore2.ConnectTimeout)
        exchange = _EXCHANGE.get()
        if exchange is not None:
            exchange.connected = True
        stream = self._backend.connect_tcp(host, port, left, local_address, socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _Auth(httpx2.Auth):
    """httpx's side of an :class:`~labbrain.store.remote.auth.Authenticator`."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        return self._authenticator.flow(request)


class _Transport(httpx2.BaseTransport):
    """httpx's transport over httpcore's connection pool on :class:`_DeadlineBackend`
    (httpx2.HTTPTransport takes no network backend). Errors are httpcore's."""

    def __init__(self) -> None:
        self._pool = httpcore2.ConnectionPool(
            # None: httpcore's default context, made for each TLS connection (making one reads
            # the system's certificates: slow enough to matter for a client made per query).
            ssl_context=None,
            max_connections=None,  # one per concurrent request, as many as there are threads
            network_backend=_DeadlineBackend(),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.SyncByteStream)
        url = request.url
        answer = self._pool.handle_request(
            httpcore2.Request(
                method=request.method,
                url=httpcore2.URL(
                    scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
                ),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,
            )
        )
        assert isinstance(answer.stream, Iterable)
        return httpx2.Response(
            answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class _Body(httpx2.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


def _quiet(record: logging.LogRecord) -> bool:
    """httpx logs every request at INFO: not those of this module (``labbrain mcp`` and
    ``serve`` log INFO to stderr)."""
    return record.levelno > logging.INFO or _EXCHANGE.get() is None


logging.getLogger("httpx2").addFilter(_quiet)


# ---------------------------------------------------------------------------- the client
class HttpClient:
    """Requests with a time limit over kept-alive connections (a pool per client, shared by
    its threads).

    ``authorization``: the credentials requests authenticate with (see
    :mod:`labbrain.store.remote.auth`); they appear in no error message.
    """

    def __init__(self, *, timeout: float, authorization: Credentials | None = None) -> None:
        self.timeout = timeout
        self._auth = Authenticator(authorization) if authorization is not None else None
        self._client = httpx2.Client(
            auth=_Auth(self._auth) if self._auth is not None else None,
            transport=_Transport(),
            trust_env=False,
            cookies=http.cookiejar.CookieJar(
                http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
            ),
        )
        # What http.client sent: no Accept unless asked, no compression.
        self._client.headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        for name in ("Accept", "Connection"):
            del self._client.headers[name]

    def close(self) -> None:
        """Close every connection."""
        self._client.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        retry: bool = False,
    ) -> Response:
        """Send one request and return the complete answer (any status).

        Raises TransportError when no complete answer came within ``timeout`` seconds (the
        client's default when None), the server could not be reached, or the body was cut.
        With ``retry`` (for requests that change nothing), a kept-alive connection the server
        closed just before the request is replaced and the request sent once more. With
        credentials, a ``401`` the authenticator can answer sends the request once more with
        them (within the same time limit); the answer's ``credentials`` then says where the
        credentials it was sent with come from.
        """
        if method == "HEAD":
            raise ValueError("HEAD is never sent (see the module docstring)")
        limit = self.timeout if timeout is None else timeout
        exchange = _Exchange(time.monotonic() + limit)
        token = _EXCHANGE.set(exchange)
        try:
            while True:
                exchange.connected, exchange.received = False, 0
                try:
                    return self._exchange(method, url, body, headers, limit)
                except TransportError as err:
                    if not (retry and err.stale and not exchange.connected):
                        raise
                    retry = False
        finally:
            _EXCHANGE.reset(token)

    def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        limit: float,
    ) -> Response:
        """One request and its answer; see :meth:`request`."""
        got = 0
        try:
            with self._client.stream(
                method, url, content=body, headers=headers, timeout=limit
            ) as answer:
                chunks = []
                try:
                    for chunk in answer.iter_bytes():
                        chunks.append(chunk)
                        got += len(chunk)
                except (httpcore2.RemoteProtocolError, httpcore2.ReadError):
                    raise TransportError(f"the answer was cut short after {got} bytes") from None
        except httpcore2.TimeoutException:
            raise TransportError(f"no complete answer within {limit:g} s", timed_out=True) from None
        except (httpcore2.ProtocolError, httpcore2.NetworkError, httpx2.HTTPError) as err:
            raise TransportError(_describe(err), stale=_closed(err)) from None
        sent = answer.request.headers.get("Authorization") is not None
        values = answer.headers
        challenges = tuple(values.get_list("WWW-Authenticate")) if answer.status_code == 401 else ()
        return Response(
            answer.status_code,
            (values.get("Content-Type") or "").split(";", 1)[0].strip().lower(),
            b"".join(chunks),
            values.get("Location"),
            (values.get(TRUNCATED_HEADER) or "").strip().lower() == "true",
            challenges,
            credentials=self._auth.source if self._auth is not None and sent else None,
            server=values.get("Server"),
        )


def _unanswered() -> bool:
    """True when no byte of an answer has come on this thread's exchange."""
    exchange = _EXCHANGE.get()
    return exchange is not None and exchange.received == 0


def _closed(err: BaseException) -> bool:
    """True when ``err`` says the server closed the connection before any answer."""
    cause = err.__cause__ or err.__context__
    closed = isinstance(err, httpcore2.RemoteProtocolError) or isinstance(
        cause, ConnectionResetError | BrokenPipeError
    )
    return closed and _unanswered()


def _describe(err: BaseException) -> str:
    """A short, credential-free reason for a connection failure."""
    cause = err.__cause__ or err.__context__ or err
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(cause, socket.gaierror):
        return "host name not found"
    if isinstance(cause, ssl.SSLError):
        return f"TLS failure ({cause.reason or 'handshake'})"
    if isinstance(err, httpcore2.RemoteProtocolError) and _unanswered():
        return "the server closed the connection without answering"
    if isinstance(err, httpcore2.ProtocolError | httpx2.HTTPError):
        return f"broken HTTP answer ({type(err).__name__})"
    text = cause.strerror if isinstance(cause, OSError) and cause.strerror else type(cause).__name__
    return f"connection failed ({text})"
