"""Credentials for the remote store: where they come from, and the Authorization header each
request to it carries.

**Sources** (:func:`credentials_from_settings`), one kind at a time, never the command line:

- ``LABBRAIN_ENDPOINT_AUTH``: an Authorization header value, sent as it is;
- ``LABBRAIN_ENDPOINT_TOKEN``: sent as ``Bearer <token>``;
- ``LABBRAIN_ENDPOINT_USER`` with ``LABBRAIN_ENDPOINT_PASSWORD``;
- when none of these is set, a netrc file (``LABBRAIN_NETRC``; default ``~/.netrc`` when it
  exists): the entry of the query endpoint's host (``machine HOST login USER password PASS``),
  else its ``default`` entry, as a user and password.

**Schemes** (:class:`Authenticator`, whose :meth:`~Authenticator.flow` is the httpx2 auth
flow of the remote store's client). A header (raw or bearer) goes with every request. A user
and password go only to a server that asked for them: the first request to a server carries
none, and a ``401`` answer naming Digest (RFC 7616: MD5 or SHA-256, ``qop=auth``; preferred) or
Basic is answered by sending the request once more with credentials. From then on every request
to that server carries them directly: Basic as it is, Digest computed for the server's last
nonce with the next nonce count, so one challenge serves many requests. A ``401`` to a digest
with ``stale=true`` or with a new nonce is answered the same way; a ``401`` to credentials just
computed for the same nonce means the server refused them. A request is sent at most twice.

The digest is computed here with :mod:`hashlib` (:func:`digest_response`); challenges are split
with :func:`urllib.request.parse_http_list` and :func:`urllib.request.parse_keqv_list`.
:class:`httpx2.DigestAuth` is not used: it answers the first digest challenge rather than the
strongest, keeps one nonce count for all servers and threads without a lock, and on a ``401``
to a digest it sent starts again at nonce count 1 for the same nonce, ``stale`` or not (a
server that checks counts refuses that, and a wrong password costs two requests, not one).
urllib's ``AbstractDigestAuthHandler`` is not used either: in Python 3.11 it knows no SHA-256.

Secrets appear in no message, exception, log line or repr: errors name where the credentials
come from (:attr:`Credentials.source`), never what they are.
"""

from __future__ import annotations

import base64
import hashlib
import netrc
import secrets
import threading
from collections.abc import Callable, Generator, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit
from urllib.request import parse_http_list, parse_keqv_list

from pydantic import SecretStr

from labbrain.errors import SettingsError
from labbrain.settings import Settings

if TYPE_CHECKING:  # httpx is imported by a remote store's client only (see http.py)
    import httpx2

#: How to give the remote store credentials (for messages).
HOW_TO_SET = (
    "set LABBRAIN_ENDPOINT_USER and LABBRAIN_ENDPOINT_PASSWORD, LABBRAIN_ENDPOINT_TOKEN or "
    "LABBRAIN_ENDPOINT_AUTH, or give the endpoint's host an entry in a netrc file "
    "(LABBRAIN_NETRC, default ~/.netrc)"
)
_USER_PASSWORD = "LABBRAIN_ENDPOINT_USER and LABBRAIN_ENDPOINT_PASSWORD"
#: The digest algorithms spoken: their RFC 7616 names and hashlib's.
_HASHES = {"MD5": "md5", "SHA-256": "sha256"}
#: Preferred first when a server offers several digest challenges.
_STRENGTH = {"SHA-256": 2, "MD5": 1}
#: Schemes answered without computing anything (Basic; Bearer through a token).
_FIXED = ("basic", "bearer")


# ---------------------------------------------------------------------------- credentials
@dataclass(frozen=True)
class Credentials:
    """What requests to the remote store authenticate with: a fixed ``header`` value, or a
    ``user`` and ``password``. ``source`` names where they come from (environment variables,
    or a netrc file and its entry) and never holds a secret; the repr shows no secret."""

    source: str
    header: str | None = field(default=None, repr=False)
    user: str | None = None
    password: str | None = field(default=None, repr=False)


def credentials_from_settings(settings: Settings) -> Credentials | None:
    """The credentials the settings give for ``settings.endpoint`` (see the module docstring),
    or None when there are none.

    Raises SettingsError, naming settings and files but no secret, when more than one kind is
    set, a user comes without a password (or the reverse), a value holds a control character
    (a line break would end the header), or the netrc file named cannot be read or parsed.
    """
    raw = _secret(settings.endpoint_auth)
    token = _secret(settings.endpoint_token)
    user = settings.endpoint_user or None
    password = _secret(settings.endpoint_password)
    kinds = [
        name
        for name, given in (
            ("LABBRAIN_ENDPOINT_AUTH", raw is not None),
            ("LABBRAIN_ENDPOINT_TOKEN", token is not None),
            (_USER_PASSWORD, user is not None or password is not None),
        )
        if given
    ]
    if len(kinds) > 1:
        raise SettingsError(
            f"credentials for the endpoint are set in more than one way ({', '.join(kinds)}); "
            "set one"
        )
    if raw is not None:
        _refuse_control("LABBRAIN_ENDPOINT_AUTH", raw)
        return Credentials("LABBRAIN_ENDPOINT_AUTH", header=raw.strip())
    if token is not None:
        _refuse_control("LABBRAIN_ENDPOINT_TOKEN", token)
        return Credentials("LABBRAIN_ENDPOINT_TOKEN", header=f"Bearer {token.strip()}")
    if user is not None or password is not None:
        if user is None or password is None:
            missing = "LABBRAIN_ENDPOINT_USER" if user is None else "LABBRAIN_ENDPOINT_PASSWORD"
            raise SettingsError(f"{_USER_PASSWORD} go together; {missing} is not set")
        _refuse_control("LABBRAIN_ENDPOINT_USER", user)
        return Credentials(_USER_PASSWORD, user=user, password=password)
    return _from_netrc(settings)


def _secret(value: SecretStr | None) -> str | None:
    """The value of a secret setting, None when unset or blank."""
    if value is None:
        return None
    text = value.get_secret_value()
    return text if text.strip() else None


def _has_control(text: str) -> bool:
    """True when ``text`` holds a control character (it would break a header)."""
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def _refuse_control(name: str, value: str) -> None:
    if _has_control(value.strip()):
        raise SettingsError(f"{name} holds a control character (a line break?); remove it")


def _from_netrc(settings: Settings) -> Credentials | None:
    """The user and password of the endpoint's host (or the default entry) in the netrc file,
    or None when the file or the entry is missing (a file LABBRAIN_NETRC names must exist)."""
    if settings.netrc is not None:
        path = settings.netrc.expanduser()
        if not path.is_file():
            raise SettingsError(f"LABBRAIN_NETRC names {path}, which is not a file")
    else:
        path = Path.home() / ".netrc"
        if not path.is_file():
            return None
    host = urlsplit(settings.endpoint or "").hostname or ""
    try:
        entries = netrc.netrc(str(path))
    except netrc.NetrcParseError as err:
        # Its message may quote a token of the file (a password): only the line is named.
        raise SettingsError(f"the netrc file {path} is malformed near line {err.lineno}") from None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else "not text"
        raise SettingsError(f"cannot read the netrc file {path} ({reason})") from None
    entry = entries.authenticators(host)
    if entry is None:
        return None
    login, _account, password = entry
    which = f"machine {host}" if host in entries.hosts else "its default entry"
    source = f"the netrc file {path} ({which})"
    if not login or not password:
        raise SettingsError(f"{source} has no login or no password")
    if _has_control(login):
        raise SettingsError(f"the login of {source} holds a control character")
    return Credentials(source, user=login, password=password)


# ---------------------------------------------------------------------------- challenges
@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header: its scheme (lowercased) and its
    parameters (names lowercased, values unquoted)."""

    scheme: str
    params: dict[str, str]

    @property
    def algorithm(self) -> str:
        """The digest algorithm, uppercased (MD5 when the challenge names none)."""
        return self.params.get("algorithm", "MD5").upper()


def parse_challenges(values: Iterable[str]) -> list[Challenge]:
    """The challenges of ``WWW-Authenticate`` header values, in order (one header may hold
    several: ``Digest realm="a", nonce="n", Basic realm="a"``). A parameter given no value
    is kept as empty; a token68 (``Negotiate abc==``) is not interpreted."""
    found: list[tuple[str, list[str]]] = []
    for value in values:
        for item in parse_http_list(value):
            item = item.strip()
            head, _, rest = item.partition(" ")
            if head and "=" not in head and not rest.lstrip().startswith("="):
                found.append((head.lower(), []))  # a scheme, maybe with its first parameter
                item = rest.strip()
            key, equals, value_text = item.partition("=")
            key = key.strip()
            if found and equals and key and " " not in key:
                found[-1][1].append(key + "=" + (value_text.strip() or '""'))
    challenges = []
    for scheme, items in found:
        pairs = parse_keqv_list(items)
        challenges.append(Challenge(scheme, {k.strip().lower(): v for k, v in pairs.items()}))
    return challenges


def _usable_digest(challenges: list[Challenge]) -> Challenge | None:
    """The strongest digest challenge labbrain can answer (algorithm spoken, qop=auth
    offered, a realm and a nonce, no control characters), or None."""
    usable = [
        c
        for c in challenges
        if c.scheme == "digest"
        and c.algorithm in _HASHES
        and "auth" in {q.strip().lower() for q in c.params.get("qop", "").split(",")}
        and "realm" in c.params
        and c.params.get("nonce")
        and not any(_has_control(v) for v in c.params.values())
    ]
    return max(usable, key=lambda c: _STRENGTH[c.algorithm], default=None)


def refusal(sent_from: str | None, challenges: Iterable[str]) -> str:
    """Why a ``401`` answer ended a request, for an error message: the credentials sent (from
    ``sent_from``, a :attr:`Credentials.source`) were refused, or the server asks for
    credentials and how to give them, or it asks for a scheme labbrain does not speak. Holds
    no secret."""
    if sent_from is not None:
        return f"refused the credentials (HTTP 401) from {sent_from}; check them"
    parsed = parse_challenges(challenges)
    spoken = _usable_digest(parsed) is not None or any(c.scheme in _FIXED for c in parsed)
    if parsed and not spoken:
        offered = ", ".join(
            f"Digest {c.algorithm}" if c.scheme == "digest" else c.scheme.capitalize()
            for c in parsed
        )
        return (
            f"asks for credentials (HTTP 401) by a scheme labbrain does not speak ({offered}); "
            "it speaks Basic, Digest (MD5 or SHA-256, qop=auth) and Bearer tokens"
        )
    return f"asks for credentials (HTTP 401); {HOW_TO_SET}"


# ---------------------------------------------------------------------------- digest
def digest_response(
    *,
    algorithm: str,
    user: str,
    realm: str,
    password: str,
    method: str,
    uri: str,
    nonce: str,
    nc: int,
    cnonce: str,
) -> str:
    """The ``response`` of RFC 7616 section 3.4.1 for ``qop=auth``, as lowercase hex:
    ``KD(H(A1), nonce ":" nc ":" cnonce ":auth:" H(A2))`` with ``A1 = user:realm:password``,
    ``A2 = method:uri``, ``KD(s, d) = H(s ":" d)``, ``nc`` as eight hex digits, and every
    string hashed as UTF-8. Raises KeyError for an algorithm other than MD5 or SHA-256."""
    name = _HASHES[algorithm.upper()]

    def h(text: str) -> str:
        return hashlib.new(name, text.encode("utf-8")).hexdigest()

    ha1 = h(f"{user}:{realm}:{password}")
    ha2 = h(f"{method}:{uri}")
    return h(f"{ha1}:{nonce}:{nc:08x}:{cnonce}:auth:{ha2}")


def digest_authorization(
    challenge: Challenge,
    *,
    user: str,
    password: str,
    method: str,
    uri: str,
    nc: int,
    cnonce: str,
) -> str:
    """The Authorization header value answering a usable digest ``challenge`` (see
    :func:`_usable_digest`) for a request ``method uri``, with nonce count ``nc``: username
    (``username*`` in RFC 8187 form when it is not ASCII), realm, uri, algorithm, nonce, nc,
    cnonce, ``qop=auth``, response, and opaque when the challenge has one."""
    params = challenge.params
    algorithm = challenge.algorithm
    response = digest_response(
        algorithm=algorithm,
        user=user,
        realm=params["realm"],
        password=password,
        method=method,
        uri=uri,
        nonce=params["nonce"],
        nc=nc,
        cnonce=cnonce,
    )
    name = (
        f"username={_quoted(user)}"
        if user.isascii()
        else f"username*=UTF-8''{quote(user, safe='')}"
    )
    parts = [
        name,
        f"realm={_quoted(params['realm'])}",
        f"uri={_quoted(uri)}",
        f"algorithm={algorithm}",
        f"nonce={_quoted(params['nonce'])}",
        f"nc={nc:08x}",
        f"cnonce={_quoted(cnonce)}",
        "qop=auth",
        f'response="{response}"',
    ]
    if "opaque" in params:
        parts.append(f"opaque={_quoted(params['opaque'])}")
    return "Digest " + ", ".join(parts)


def _quoted(value: str) -> str:
    """An HTTP quoted-string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def new_cnonce() -> str:
    """A fresh client nonce: 128 random bits, as hex."""
    return secrets.token_hex(16)


# ---------------------------------------------------------------------------- sending
@dataclass(frozen=True)
class Authorization:
    """An Authorization header value as sent, with its scheme (``header``, ``basic`` or
    ``digest``) and, for a digest, the nonce it answered. The repr shows no secret."""

    value: str = field(repr=False)
    scheme: str
    nonce: str | None = None


@dataclass
class _DigestState:
    """A server's last usable digest challenge and the last nonce count sent for its nonce."""

    challenge: Challenge
    count: int


class Authenticator:
    """The Authorization header of each request for one set of credentials, and the answer
    to a ``401`` challenge; remembers per server which scheme it asked for and, for Digest,
    its last nonce and the nonce count. Thread-safe."""

    def __init__(self, credentials: Credentials, *, cnonce: Callable[[], str] = new_cnonce) -> None:
        self.credentials = credentials
        self._cnonce = cnonce
        self._lock = threading.Lock()
        self._basic: set[Hashable] = set()
        self._digest: dict[Hashable, _DigestState] = {}

    @property
    def source(self) -> str:
        """Where the credentials come from (no secret)."""
        return self.credentials.source

    def flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        """httpx's auth flow: ``request`` with what :meth:`first` gives, and once more with
        what :meth:`challenged` gives when it is answered ``401`` (never a third time)."""
        url = request.url
        server, method, uri = (url.scheme, url.host, url.port), request.method, url.raw_path
        given = self.first(server, method, uri.decode("ascii"))
        if given is not None:
            request.headers["Authorization"] = given.value
        answer = yield request
        if answer.status_code != 401:
            return
        challenges = answer.headers.get_list("WWW-Authenticate")
        again = self.challenged(server, method, uri.decode("ascii"), challenges, given)
        if again is not None:
            request.headers["Authorization"] = again.value
            yield request

    def first(self, server: Hashable, method: str, uri: str) -> Authorization | None:
        """The Authorization to send a new request ``method uri`` to ``server`` with: the
        fixed header (a token or a raw header); Basic once the server asked for Basic; a
        digest for the server's last nonce with the next nonce count once it sent a digest
        challenge; else None (a user and password go only to a server that asked)."""
        if self.credentials.header is not None:
            return Authorization(self.credentials.header, "header")
        with self._lock:
            state = self._digest.get(server)
            if state is not None:
                state.count += 1
                return self._digest_for(state, method, uri)
            if server in self._basic:
                return self._basic_value()
        return None

    def challenged(
        self,
        server: Hashable,
        method: str,
        uri: str,
        challenges: Iterable[str],
        sent: Authorization | None,
    ) -> Authorization | None:
        """After a ``401`` with ``challenges`` (its ``WWW-Authenticate`` values) to a request
        sent with ``sent``: the Authorization to send it with once more, or None when that
        cannot help: the credentials are a fixed header, the server asks for no scheme spoken
        here, or it refused what was computed for its current challenge (a digest for the
        same nonce without ``stale=true``, or Basic after Basic)."""
        if self.credentials.header is not None:
            return None
        parsed = parse_challenges(challenges)
        digest = _usable_digest(parsed)
        if digest is not None:
            stale = digest.params.get("stale", "").strip().lower() == "true"
            nonce = digest.params["nonce"]
            if sent is not None and sent.scheme == "digest" and sent.nonce == nonce and not stale:
                return None
            with self._lock:
                state = self._digest.get(server)
                if state is None or state.challenge.params["nonce"] != nonce:
                    state = _DigestState(digest, count=0)
                    self._digest[server] = state
                state.count += 1
                self._basic.discard(server)
                return self._digest_for(state, method, uri)
        if any(c.scheme == "basic" for c in parsed):
            if sent is not None and sent.scheme == "basic":
                return None
            with self._lock:
                self._basic.add(server)
                self._digest.pop(server, None)
            return self._basic_value()
        return None

    def _digest_for(self, state: _DigestState, method: str, uri: str) -> Authorization:
        user, password = self.credentials.user, self.credentials.password
        assert user is not None and password is not None
        value = digest_authorization(
            state.challenge,
            user=user,
            password=password,
            method=method,
            uri=uri,
            nc=state.count,
            cnonce=self._cnonce(),
        )
        return Authorization(value, "digest", state.challenge.params["nonce"])

    def _basic_value(self) -> Authorization:
        pair = f"{self.credentials.user}:{self.credentials.password}".encode()
        return Authorization("Basic " + base64.b64encode(pair).decode("ascii"), "basic")
