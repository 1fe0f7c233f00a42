"""HTTP for the remote store: one request, one complete answer, within a time limit.

:class:`HttpClient` sends a request and returns the whole body, or raises
:class:`TransportError`. It keeps one connection per thread and server alive between requests
and never reuses one that the server may have left in an unknown state: after an error, an
answer the server marks ``Connection: close``, or when the socket has become readable while
idle (the server closed it or sent something unasked). Labbrain never sends HEAD (a HEAD for a
missing graph corrupts the next answer on an Oxigraph server's kept-alive connection).

A body cut short (a chunked stream or ``Content-Length`` not completed) is an error, not an
answer. Redirects are not followed. The time limit covers the whole exchange, body included.

Credentials are handed to an :class:`~labbrain.store.remote.auth.Authenticator`, which says
what each request carries and answers a ``401`` challenge: the request (its body is bytes) is
then sent once more, never more than once.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from labbrain import __version__
from labbrain.store.remote.auth import Authenticator, Authorization, Credentials

#: The header a labbrain endpoint sets on an answer cut at its row cap.
TRUNCATED_HEADER = "X-Labbrain-Truncated"

_READ_CHUNK = 1 << 16
USER_AGENT = f"labbrain/{__version__}"


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


_Key = tuple[str, str, int]


class HttpClient:
    """Requests with a time limit over kept-alive connections (one per thread and server).

    ``authorization``: the credentials requests authenticate with (see
    :mod:`labbrain.store.remote.auth`); they appear in no error message.
    """

    def __init__(self, *, timeout: float, authorization: Credentials | None = None) -> None:
        self.timeout = timeout
        self._auth = Authenticator(authorization) if authorization is not None else None
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._all_lock = threading.Lock()

    # ------------------------------------------------------------------ connections
    def _pool(self) -> dict[_Key, http.client.HTTPConnection]:
        pool: dict[_Key, http.client.HTTPConnection] | None = getattr(self._local, "pool", None)
        if pool is None:
            pool = {}
            self._local.pool = pool
        return pool

    def _connection(self, key: _Key, timeout: float) -> http.client.HTTPConnection:
        pool = self._pool()
        conn = pool.get(key)
        if conn is not None and _dropped(conn):
            self._discard(key)
            conn = None
        if conn is None:
            scheme, host, port = key
            if scheme == "https":
                conn = http.client.HTTPSConnection(
                    host, port, timeout=timeout, context=ssl.create_default_context()
                )
            else:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            pool[key] = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _discard(self, key: _Key) -> None:
        conn = self._pool().pop(key, None)
        if conn is not None:
            conn.close()
            with self._all_lock:
                if conn in self._all:
                    self._all.remove(conn)

    def close(self) -> None:
        """Close every connection of every thread."""
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()

    # ------------------------------------------------------------------ requests
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
        deadline = time.monotonic() + limit
        parts = urlsplit(url)
        scheme = parts.scheme
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent = {"User-Agent": USER_AGENT, **(headers or {})}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        auth = self._auth
        if auth is None:
            return self._send(key, method, target, body, sent, deadline, limit, retry)
        given = auth.first(key, method, target)
        answer = self._send(key, method, target, body, _with(sent, given), deadline, limit, retry)
        if answer.status == 401:
            again = auth.challenged(key, method, target, answer.challenges, given)
            if again is not None:
                given = again
                answer = self._send(
                    key, method, target, body, _with(sent, given), deadline, limit, retry
                )
        return replace(answer, credentials=auth.source if given is not None else None)

    def _send(
        self,
        key: _Key,
        method: str,
        target: str,
        body: bytes | None,
        sent: dict[str, str],
        deadline: float,
        limit: float,
        retry: bool,
    ) -> Response:
        """One request, sent again on a new connection when ``retry`` allows (see
        :meth:`request`)."""
        while True:
            conn = self._connection(key, limit)
            reused = conn.sock is not None
            try:
                return self._exchange(conn, key, method, target, body, sent, deadline, limit)
            except TransportError as err:
                if not (retry and reused and err.stale):
                    raise
                retry = False

    def _exchange(
        self,
        conn: http.client.HTTPConnection,
        key: _Key,
        method: str,
        target: str,
        body: bytes | None,
        sent: dict[str, str],
        deadline: float,
        limit: float,
    ) -> Response:
        """One request on ``conn``; see :meth:`request`."""
        try:
            _set_timeout(conn, deadline)
            conn.request(method, target, body=body, headers=sent)
            _set_timeout(conn, deadline)
            answer = conn.getresponse()
            data = _read_all(conn, answer, deadline)
        except TimeoutError:
            self._discard(key)
            raise TransportError(f"no complete answer within {limit:g} s", timed_out=True) from None
        except http.client.IncompleteRead as err:
            self._discard(key)
            raise TransportError(
                f"the answer was cut short after {len(err.partial)} bytes"
            ) from None
        except (http.client.HTTPException, OSError) as err:
            self._discard(key)
            stale = isinstance(
                err, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError
            )
            raise TransportError(_describe(err), stale=stale) from None
        if answer.will_close:
            self._discard(key)
        media = (answer.getheader("Content-Type") or "").split(";", 1)[0].strip().lower()
        truncated = (answer.getheader(TRUNCATED_HEADER) or "").strip().lower() == "true"
        challenges = (
            tuple(answer.msg.get_all("WWW-Authenticate") or ()) if answer.status == 401 else ()
        )
        return Response(
            answer.status,
            media,
            data,
            answer.getheader("Location"),
            truncated,
            challenges,
            server=answer.getheader("Server"),
        )


def _with(headers: dict[str, str], authorization: Authorization | None) -> dict[str, str]:
    """``headers`` plus the Authorization header, when there is one."""
    if authorization is None:
        return headers
    return {**headers, "Authorization": authorization.value}


def _set_timeout(conn: http.client.HTTPConnection, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    conn.timeout = remaining
    if conn.sock is not None:
        conn.sock.settimeout(remaining)


def _read_all(
    conn: http.client.HTTPConnection, answer: http.client.HTTPResponse, deadline: float
) -> bytes:
    """The whole body, checking the deadline between reads (IncompleteRead if cut short)."""
    chunks = []
    while True:
        _set_timeout(conn, deadline)
        chunk = answer.read(_READ_CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
    if answer.length not in (None, 0):
        raise http.client.IncompleteRead(b"".join(chunks), answer.length)
    return b"".join(chunks)


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection must not be reused: the server closed it, or
    it holds bytes nobody asked for."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _describe(err: BaseException) -> str:
    """A short, credential-free reason for a connection failure."""
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(err, socket.gaierror):
        return "host name not found"
    if isinstance(err, ssl.SSLError):
        return f"TLS failure ({err.reason or 'handshake'})"
    if isinstance(err, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(err, http.client.HTTPException):
        return f"broken HTTP answer ({type(err).__name__})"
    text = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
    return f"connection failed ({text})"
