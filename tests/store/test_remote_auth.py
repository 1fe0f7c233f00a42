"""Credentials for the remote store: the digest computation against RFC 7616's examples, where
credentials come from (settings, a netrc file), how each scheme is sent to a stub server that
checks it from first principles, the one error a refused credential gives (without the
secret), and HTTP Digest against a real Virtuoso server."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from click.testing import CliRunner, Result
from pydantic import SecretStr
from pyoxigraph import Literal, NamedNode, Quad

from labbrain.cli import main
from labbrain.errors import EndpointError, EndpointReadOnly, SettingsError
from labbrain.settings import Settings
from labbrain.store.remote import auth
from labbrain.store.remote.auth import (
    Authenticator,
    Challenge,
    Credentials,
    credentials_from_settings,
    digest_authorization,
    digest_response,
    parse_challenges,
)
from labbrain.store.remote.store import Endpoints, RemoteStore
from virtuoso_server import VirtuosoServer, virtuoso_server

USER, PASSWORD, TOKEN = "lab", "pass-w0rd-zq", "t0ken-kx7"
WRONG = "not-the-pass-9q"
REALM = "labbrain-test"
OPAQUE = "0paque-value"
USER_VARS = "LABBRAIN_ENDPOINT_USER and LABBRAIN_ENDPOINT_PASSWORD"


@pytest.fixture(autouse=True)
def _own_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A home directory of the test's own: no ~/.netrc unless the test writes one."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env or {})


# ------------------------------------------------------------------ RFC 7616, section 3.9.1
RFC_CHALLENGE = (
    'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm={algorithm}, '
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
    'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"'
)
RFC_CNONCE = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
#: The responses printed in RFC 7616, section 3.9.1 (user "Mufasa", password "Circle of Life",
#: GET /dir/index.html, nc=00000001).
RFC_RESPONSES = {
    "MD5": "8ca523f5e9506fed4657c9700eebdbec",
    "SHA-256": "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
}


@pytest.mark.parametrize("algorithm", sorted(RFC_RESPONSES))
def test_the_digest_is_the_one_rfc_7616_prints(algorithm: str) -> None:
    response = digest_response(
        algorithm=algorithm,
        user="Mufasa",
        realm="http-auth@example.org",
        password="Circle of Life",
        method="GET",
        uri="/dir/index.html",
        nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
        nc=1,
        cnonce=RFC_CNONCE,
    )
    assert response == RFC_RESPONSES[algorithm]


@pytest.mark.parametrize("algorithm", sorted(RFC_RESPONSES))
def test_the_authorization_header_is_the_one_rfc_7616_prints(algorithm: str) -> None:
    (challenge,) = parse_challenges([RFC_CHALLENGE.format(algorithm=algorithm)])
    header = digest_authorization(
        challenge,
        user="Mufasa",
        password="Circle of Life",
        method="GET",
        uri="/dir/index.html",
        nc=1,
        cnonce=RFC_CNONCE,
    )
    assert header.startswith("Digest ")
    assert _params(header) == {
        "username": "Mufasa",
        "realm": "http-auth@example.org",
        "uri": "/dir/index.html",
        "algorithm": algorithm,
        "nonce": "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
        "nc": "00000001",
        "cnonce": RFC_CNONCE,
        "qop": "auth",
        "response": RFC_RESPONSES[algorithm],
        "opaque": "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS",
    }


def test_challenges_are_split_as_rfc_7235_writes_them() -> None:
    (digest,) = parse_challenges([RFC_CHALLENGE.format(algorithm="SHA-256")])
    assert digest == Challenge(
        "digest",
        {
            "realm": "http-auth@example.org",
            "qop": "auth, auth-int",
            "algorithm": "SHA-256",
            "nonce": "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
            "opaque": "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS",
        },
    )
    two = parse_challenges(['Digest realm="a, b", nonce = "n\\"1", Basic realm="c"', "Negotiate"])
    assert two == [
        Challenge("digest", {"realm": "a, b", "nonce": 'n"1'}),
        Challenge("basic", {"realm": "c"}),
        Challenge("negotiate", {}),
    ]


def test_the_strongest_digest_offered_is_answered() -> None:
    """RFC 7616, section 3.7: a server may offer SHA-256 and MD5; SHA-256 is chosen, in
    whichever order they come."""
    offers = [RFC_CHALLENGE.format(algorithm="MD5"), RFC_CHALLENGE.format(algorithm="SHA-256")]
    for order in (offers, offers[::-1]):
        authenticator = Authenticator(
            Credentials("test", user="Mufasa", password="Circle of Life"),
            cnonce=lambda: RFC_CNONCE,
        )
        answer = authenticator.challenged("server", "GET", "/dir/index.html", order, None)
        assert answer is not None and answer.scheme == "digest"
        assert _params(answer.value)["response"] == RFC_RESPONSES["SHA-256"]


# ------------------------------------------------------------------ where credentials come from
def _settings(**values: object) -> Settings:
    return Settings(endpoint="http://127.0.0.1:9/query", **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "names"),
    [
        (
            {"endpoint_token": TOKEN, "endpoint_user": USER, "endpoint_password": PASSWORD},
            ["LABBRAIN_ENDPOINT_TOKEN", USER_VARS],
        ),
        (
            {"endpoint_auth": f"Bearer {TOKEN}", "endpoint_token": TOKEN},
            ["LABBRAIN_ENDPOINT_AUTH", "LABBRAIN_ENDPOINT_TOKEN"],
        ),
        ({"endpoint_password": PASSWORD}, ["LABBRAIN_ENDPOINT_USER is not set"]),
        ({"endpoint_user": USER}, ["LABBRAIN_ENDPOINT_PASSWORD is not set"]),
        ({"endpoint_token": f"{TOKEN}\r\nX-Evil: 1"}, ["LABBRAIN_ENDPOINT_TOKEN", "control"]),
        ({"netrc": "/nonexistent/netrc"}, ["LABBRAIN_NETRC", "/nonexistent/netrc"]),
    ],
    ids=["token and user", "raw and token", "no user", "no password", "line break", "no file"],
)
def test_inconsistent_credentials_are_one_settings_error(
    values: dict[str, object], names: list[str]
) -> None:
    with pytest.raises(SettingsError) as raised:
        Endpoints.from_settings(_settings(**values))
    text = str(raised.value)
    for name in names:
        assert name in text
    assert PASSWORD not in text and TOKEN not in text


def test_a_malformed_netrc_file_is_named_without_its_contents(tmp_path: Path) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER}\n  {PASSWORD}\n", encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        Endpoints.from_settings(_settings(netrc=netrc))
    # The parser's own message would quote the stray password.
    assert str(raised.value).startswith(f"settings: the netrc file {netrc} is malformed near line")
    assert PASSWORD not in str(raised.value)


def test_netrc_entries_are_found_by_host_and_the_environment_wins(
    tmp_path: Path, _own_home: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(
        f"machine lab.example.org login other password other-pass\n"
        f"machine 127.0.0.1 login {USER} password {PASSWORD}\n",
        encoding="utf-8",
    )
    found = credentials_from_settings(_settings(netrc=netrc))
    assert found == Credentials(
        f"the netrc file {netrc} (machine 127.0.0.1)", user=USER, password=PASSWORD
    )
    assert PASSWORD not in repr(found)
    env = credentials_from_settings(
        _settings(netrc=netrc, endpoint_user="u2", endpoint_password="p2")
    )
    assert env == Credentials(USER_VARS, user="u2", password="p2")
    # The default entry serves any other host; ~/.netrc is read when LABBRAIN_NETRC is unset.
    (_own_home / ".netrc").write_text(
        f"machine lab.example.org login other password x\ndefault login {USER} password {PASSWORD}",
        encoding="utf-8",
    )
    fallback = credentials_from_settings(_settings())
    assert fallback == Credentials(
        f"the netrc file {_own_home / '.netrc'} (its default entry)", user=USER, password=PASSWORD
    )
    (_own_home / ".netrc").write_text("machine lab.example.org login o password x\n")
    assert credentials_from_settings(_settings()) is None


def test_secrets_stay_out_of_reprs() -> None:
    for values in (
        {"endpoint_user": USER, "endpoint_password": PASSWORD},
        {"endpoint_token": TOKEN},
        {"endpoint_auth": f"Bearer {TOKEN}"},
    ):
        endpoints = Endpoints.from_settings(_settings(**values))
        assert endpoints.authorization is not None
        for text in (repr(endpoints), repr(endpoints.authorization), str(_settings(**values))):
            assert PASSWORD not in text and TOKEN not in text, text


# ------------------------------------------------------------------ a server that checks them
def _params(header: str) -> dict[str, str]:
    """The parameters of an Authorization header (quoted strings unescaped)."""
    found = re.findall(r'([\w*]+)=(?:"((?:[^"\\]|\\.)*)"|([^,\s]+))', header.split(" ", 1)[1])
    return {k: re.sub(r"\\(.)", r"\1", q) if q or not b else b for k, q, b in found}


def _h(algorithm: str, text: str) -> str:
    name = {"MD5": "md5", "SHA-256": "sha256"}[algorithm]
    return hashlib.new(name, text.encode()).hexdigest()


@dataclass
class Seen:
    """One request the server got, and its answer's status."""

    method: str
    path: str
    authorization: str | None
    body: bytes
    status: int

    @property
    def nc(self) -> int | None:
        """The nonce count of a digest sent, else None."""
        digest = self.digest
        return int(digest["nc"], 16) if digest else None

    @property
    def nonce(self) -> str | None:
        """The nonce of a digest sent, else None."""
        digest = self.digest
        return digest["nonce"] if digest else None

    @property
    def digest(self) -> dict[str, str] | None:
        """The parameters of a digest sent, else None."""
        given = self.authorization or ""
        return _params(given) if given.startswith("Digest ") else None


class AuthServer:
    """A SPARQL endpoint on loopback that takes only ``scheme`` credentials ("basic",
    "bearer", "digest", or "negotiate", which nothing passes), checked from first principles:
    Basic is base64 of USER:PASSWORD; a bearer token is TOKEN; a digest is RFC 7616's, for
    the server's current nonce, with ``qop=auth``, the request's method and path, and a nonce
    count above the last one it accepted for that nonce. :meth:`expire` makes the current
    nonce stale (its next use gets a 401 with ``stale=true`` and a new nonce). Answers ASK
    with true, other queries with no rows, updates with 204 (with 403 what ``forbid`` names:
    "writes" or "all"); records every request."""

    def __init__(self, scheme: str, algorithm: str = "MD5") -> None:
        self.scheme = scheme
        self.algorithm = algorithm
        #: What it refuses with 403 to credentials it accepts: "", "writes" or "all".
        self.forbid = ""
        #: Answer the next right digest with stale=true for the current nonce.
        self.stale_once = False
        self.seen: list[Seen] = []
        self.nonce = secrets.token_hex(8)
        self.last_nc: dict[str, int] = {self.nonce: 0}
        self.stale: set[str] = set()
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                given = self.headers.get("Authorization")
                with server.lock:
                    verdict = server.check(self.command, self.path, given)
                    writing = b"update=" in body
                    status = 401 if verdict else (204 if writing else 200)
                    forbidden = server.forbid == "all" or (server.forbid == "writes" and writing)
                    if status != 401 and forbidden:
                        status = 403
                    server.seen.append(Seen(self.command, self.path, given, body, status))
                    challenge = server.challenge(stale=verdict == "stale") if verdict else ""
                if status == 401:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", challenge)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                query = parse_qs(body.decode()).get("query", [""])[0]
                data = (
                    b'{"head":{},"boolean":true}'
                    if "ASK" in query
                    else json.dumps({"head": {"vars": ["g"]}, "results": {"bindings": []}}).encode()
                )
                if status in (204, 403):
                    data = b""
                self.send_response(status)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/query"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def challenge(self, *, stale: bool) -> str:
        if self.scheme == "basic":
            return f'Basic realm="{REALM}"'
        if self.scheme == "bearer":
            return f'Bearer realm="{REALM}"'
        if self.scheme == "negotiate":
            return "Negotiate"
        return (
            f'Digest realm="{REALM}", qop="auth", algorithm={self.algorithm}, '
            f'nonce="{self.nonce}", opaque="{OPAQUE}"' + (", stale=true" if stale else "")
        )

    def expire(self) -> None:
        """The current nonce becomes stale; a new one is the current one."""
        with self.lock:
            self.stale.add(self.nonce)
            self.nonce = secrets.token_hex(8)
            self.last_nc[self.nonce] = 0

    def forget(self) -> None:
        """Every nonce is forgotten (as by a restart): a digest for one is refused without
        ``stale=true``, and a new nonce is the current one."""
        with self.lock:
            self.nonce = secrets.token_hex(8)
            self.last_nc = {self.nonce: 0}
            self.stale.clear()

    def check(self, method: str, path: str, given: str | None) -> str:
        """ "" when ``given`` is right; "stale" for a right digest of a stale nonce; else
        "refused"."""
        if self.scheme == "basic":
            right = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            return "" if given == right else "refused"
        if self.scheme == "bearer":
            return "" if given == f"Bearer {TOKEN}" else "refused"
        if self.scheme != "digest" or not (given or "").startswith("Digest "):
            return "refused"
        assert given is not None
        p = _params(given)
        nonce, nc = p.get("nonce", ""), int(p.get("nc", "0"), 16)
        a = self.algorithm
        expected = _h(
            a,
            f"{_h(a, f'{USER}:{REALM}:{PASSWORD}')}:{nonce}:{p.get('nc')}:{p.get('cnonce')}:auth:"
            f"{_h(a, f'{method}:{path}')}",
        )
        if not (
            p.get("username") == USER
            and p.get("realm") == REALM
            and p.get("uri") == path
            and p.get("qop") == "auth"
            and p.get("algorithm") == a
            and p.get("opaque") == OPAQUE
            and p.get("response") == expected
            and nonce in self.last_nc
            and nc > self.last_nc[nonce]
        ):
            return "refused"
        self.last_nc[nonce] = nc
        if nonce in self.stale:
            return "stale"
        if self.stale_once:  # e.g. a count that came in after a higher one: stale, same nonce
            self.stale_once = False
            return "stale"
        return ""

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., AuthServer]]:
    """Start AuthServers (``serve(scheme, algorithm)``); all stopped after the test."""
    started: list[AuthServer] = []

    def start(scheme: str, algorithm: str = "MD5") -> AuthServer:
        started.append(AuthServer(scheme, algorithm))
        return started[-1]

    yield start
    for server in started:
        server.close()


def _user(server: AuthServer, password: str = PASSWORD) -> Settings:
    return Settings(
        endpoint=server.url,
        endpoint_user=USER,
        endpoint_password=SecretStr(password),
    )


def test_basic_goes_only_to_a_server_that_asked_for_it_then_with_every_request(
    serve: Callable[..., AuthServer],
) -> None:
    server = serve("basic")
    with RemoteStore.from_settings(_user(server), read_only=True) as store:
        assert store.ask("ASK {}") and store.ask("ASK {}")
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert [(s.authorization, s.status) for s in server.seen] == [
        (None, 401),
        (basic, 200),
        (basic, 200),
        (basic, 200),
    ]


def test_a_token_goes_as_bearer_with_every_request(serve: Callable[..., AuthServer]) -> None:
    server = serve("bearer")
    settings = Settings(endpoint=server.url, endpoint_token=SecretStr(TOKEN))
    with RemoteStore.from_settings(settings) as store:
        store.update("INSERT DATA { <urn:test:s> <urn:test:p> 1 }")
    assert [(s.path, s.authorization, s.status) for s in server.seen] == [
        ("/query", f"Bearer {TOKEN}", 200),  # the ASK of the open
        ("/query", f"Bearer {TOKEN}", 200),  # its look for staging graphs left over
        ("/query", f"Bearer {TOKEN}", 200),  # and for first loads left over
        ("/update", f"Bearer {TOKEN}", 204),
    ]


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-256"])
def test_a_digest_challenge_is_answered_once_then_its_nonce_serves_the_next_requests(
    serve: Callable[..., AuthServer], algorithm: str
) -> None:
    server = serve("digest", algorithm)
    first = server.nonce
    with RemoteStore.from_settings(_user(server)) as store:  # ASK, then two SELECTs
        assert store.ask("ASK {}")
        server.expire()
        store.update("INSERT DATA { <urn:test:s> <urn:test:p> 1 }")
        assert store.ask("ASK {}")
        second = server.nonce
        server.stale_once = True
        assert store.ask("ASK {}")
        server.forget()
        assert store.ask("ASK {}")
    third = server.nonce
    assert [(s.path, s.status, s.nonce, s.nc) for s in server.seen] == [
        ("/query", 401, None, None),
        ("/query", 200, first, 1),
        ("/query", 200, first, 2),
        ("/query", 200, first, 3),
        ("/query", 200, first, 4),
        ("/update", 401, first, 5),  # stale=true and a new nonce: answered with that one
        ("/update", 204, second, 1),
        ("/query", 200, second, 2),
        ("/query", 401, second, 3),  # stale=true, the same nonce: answered with the next count
        ("/query", 200, second, 4),
        ("/query", 401, second, 5),  # a new nonce without stale=true: answered with it
        ("/query", 200, third, 1),
    ]
    assert server.seen[5].body == server.seen[6].body and b"INSERT" in server.seen[6].body
    # A fresh client nonce each time (the server checked the rest of every digest).
    cnonces = [_params(s.authorization)["cnonce"] for s in server.seen if s.authorization]
    assert len(set(cnonces)) == len(cnonces)


@pytest.mark.parametrize("scheme", ["digest", "basic"])
def test_a_wrong_password_is_one_error_naming_where_it_comes_from(
    serve: Callable[..., AuthServer], scheme: str
) -> None:
    server = serve(scheme)
    with pytest.raises(EndpointError) as raised:
        RemoteStore.from_settings(_user(server, WRONG), read_only=True)
    text = f"{raised.value} {raised.value!r} {raised.value.args}"
    assert str(raised.value) == (
        f"SPARQL endpoint {server.url}: refused the credentials (HTTP 401) from {USER_VARS}; "
        "check them"
    )
    assert WRONG not in text and PASSWORD not in text
    assert [s.status for s in server.seen] == [401, 401]  # sent twice at most


def test_a_refused_digest_is_not_resent_for_the_same_nonce(
    serve: Callable[..., AuthServer],
) -> None:
    """Once a server has challenged, a wrong password costs one request, not a loop."""
    server = serve("digest")
    store = RemoteStore(Endpoints.from_settings(_user(server, WRONG)), read_only=True)
    with store:
        for _ in range(2):
            with pytest.raises(EndpointError, match="refused the credentials"):
                store.ask("ASK {}")
    assert [(s.status, s.nc) for s in server.seen] == [(401, None), (401, 1), (401, 2)]


def test_a_wrong_token_is_one_error_naming_its_variable(
    serve: Callable[..., AuthServer],
) -> None:
    server = serve("bearer")
    result = invoke(
        "--endpoint", server.url, "graphs", env={"LABBRAIN_ENDPOINT_TOKEN": f"{TOKEN}-old"}
    )
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert result.stderr.strip() == (
        f"error: SPARQL endpoint {server.url}: refused the credentials (HTTP 401) from "
        "LABBRAIN_ENDPOINT_TOKEN; check them"
    )
    assert [s.status for s in server.seen] == [401]


def test_without_credentials_or_with_a_scheme_not_spoken_the_error_says_what_to_do(
    serve: Callable[..., AuthServer],
) -> None:
    with pytest.raises(EndpointError) as asked:
        RemoteStore.from_settings(Settings(endpoint=serve("digest").url))
    assert "asks for credentials (HTTP 401); set LABBRAIN_ENDPOINT_USER and " in str(asked.value)
    for name in ("LABBRAIN_ENDPOINT_TOKEN", "LABBRAIN_ENDPOINT_AUTH", "LABBRAIN_NETRC"):
        assert name in str(asked.value)
    negotiate = serve("negotiate")
    with pytest.raises(EndpointError) as unspoken:
        RemoteStore.from_settings(_user(negotiate))
    assert "by a scheme labbrain does not speak (Negotiate)" in str(unspoken.value)
    assert [s.authorization for s in negotiate.seen] == [None]


def test_a_refused_write_names_where_the_credentials_come_from(
    serve: Callable[..., AuthServer],
) -> None:
    server = serve("bearer")
    server.forbid = "writes"
    settings = Settings(endpoint=server.url, endpoint_token=SecretStr(TOKEN))
    with RemoteStore.from_settings(settings) as store, pytest.raises(EndpointReadOnly) as refused:
        store.update("INSERT DATA { <urn:test:s> <urn:test:p> 1 }")
    update = server.url.removesuffix("query") + "update"
    assert str(refused.value) == (
        f"SPARQL endpoint {update}: refused the write (HTTP 403): the endpoint is read-only, "
        "or the credentials from LABBRAIN_ENDPOINT_TOKEN may not write"
    )
    assert server.seen[-1].authorization == f"Bearer {TOKEN}"
    server.forbid = "all"
    with pytest.raises(EndpointError) as unread:
        RemoteStore.from_settings(settings, read_only=True)
    assert str(unread.value) == (
        f"SPARQL endpoint {server.url}: refused the request (HTTP 403); the credentials from "
        "LABBRAIN_ENDPOINT_TOKEN may not read it"
    )


@pytest.mark.parametrize("entry", ["machine 127.0.0.1", "default"])
def test_a_netrc_entry_gives_the_user_and_password(
    serve: Callable[..., AuthServer], tmp_path: Path, entry: str
) -> None:
    server = serve("digest", "SHA-256")
    netrc = tmp_path / "netrc"
    netrc.write_text(f"{entry} login {USER} password {PASSWORD}\n", encoding="utf-8")
    settings = Settings(endpoint=server.url, netrc=netrc)
    with RemoteStore.from_settings(settings, read_only=True) as store:
        assert store.ask("ASK {}")
    assert [s.status for s in server.seen] == [401, 200, 200]
    netrc.write_text(f"{entry} login {USER} password {WRONG}\n", encoding="utf-8")
    result = invoke("--endpoint", server.url, "graphs", env={"LABBRAIN_NETRC": str(netrc)})
    which = "machine 127.0.0.1" if entry.startswith("machine") else "its default entry"
    assert result.stderr.strip() == (
        f"error: SPARQL endpoint {server.url}: refused the credentials (HTTP 401) from the "
        f"netrc file {netrc} ({which}); check them"
    )


@pytest.mark.parametrize(
    ("scheme", "env", "secret"),
    [
        (
            "digest",
            {"LABBRAIN_ENDPOINT_USER": USER, "LABBRAIN_ENDPOINT_PASSWORD": PASSWORD},
            PASSWORD,
        ),
        ("bearer", {"LABBRAIN_ENDPOINT_TOKEN": TOKEN}, TOKEN),
    ],
)
def test_info_masks_the_secrets(
    serve: Callable[..., AuthServer], scheme: str, env: dict[str, str], secret: str
) -> None:
    server = serve(scheme)
    result = invoke("--endpoint", server.url, "info", env={**env, "COLUMNS": "250"})
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert secret not in result.stdout and secret not in result.stderr
    # each secret setting shows as ten stars (table cells may be cut, never the stars)
    secrets_set = [name for name in env if name != "LABBRAIN_ENDPOINT_USER"]
    assert result.stdout.count("**********") == len(secrets_set)
    if "LABBRAIN_ENDPOINT_USER" in env:
        assert any(
            line.split()[:2] == ["LABBRAIN_ENDPOINT_USER", "lab"]
            for line in result.stdout.splitlines()
        )
    assert any(s.status == 200 and s.authorization for s in server.seen)


def test_credentials_in_an_endpoint_url_are_refused_naming_where_they_go() -> None:
    result = invoke("--endpoint", f"http://{USER}:{PASSWORD}@127.0.0.1:9/query", "info")
    assert result.exit_code == 2
    line = result.stderr.strip()
    for name in ("LABBRAIN_ENDPOINT_USER", "LABBRAIN_ENDPOINT_TOKEN", "LABBRAIN_NETRC"):
        assert name in line
    assert PASSWORD not in line


# ------------------------------------------------------------------ against Virtuoso
@pytest.fixture(scope="module")
def virtuoso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtuosoServer]:
    """One Virtuoso server for the module's tests; its /sparql-auth endpoint takes HTTP
    Digest, as user dba (password dba)."""
    with virtuoso_server(tmp_path_factory.mktemp("virtuoso-auth")) as server:
        yield server


@pytest.mark.remote
@pytest.mark.needs_virtuoso
def test_virtuoso_takes_updates_and_queries_through_digest(
    virtuoso: VirtuosoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    challenges: list[str] = []
    answer = auth.Authenticator.challenged

    def counted(self: Authenticator, *args: object, **kwargs: object) -> object:
        challenges.append(str(args[2]))
        return answer(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(auth.Authenticator, "challenged", counted)
    graph = NamedNode("urn:test:through-digest")
    triple = (NamedNode("urn:test:s"), NamedNode("urn:test:p"), Literal("behind digest"))
    settings = Settings(
        endpoint=virtuoso.base + "/sparql-auth",
        endpoint_user="dba",
        endpoint_password=SecretStr("dba"),
    )
    with RemoteStore.from_settings(settings) as store:
        store.update(f"INSERT DATA {{ GRAPH {graph} {{ {' '.join(map(str, triple))} }} }}")
        assert list(store.quads(graph.value)) == [Quad(*triple, graph)]
    assert challenges == ["/sparql-auth"]  # one challenge; its nonce served the rest
    # The write is there for anyone who reads the open endpoint.
    with RemoteStore.from_settings(Settings(endpoint=virtuoso.query), read_only=True) as anyone:
        assert list(anyone.quads(graph.value)) == [Quad(*triple, graph)]


@pytest.mark.remote
@pytest.mark.needs_virtuoso
def test_virtuoso_refusing_a_wrong_password_is_one_clear_error(virtuoso: VirtuosoServer) -> None:
    url = virtuoso.base + "/sparql-auth"
    result = invoke(
        "--endpoint",
        url,
        "graphs",
        env={"LABBRAIN_ENDPOINT_USER": "dba", "LABBRAIN_ENDPOINT_PASSWORD": WRONG},
    )
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert result.stderr.strip() == (
        f"error: SPARQL endpoint {url}: refused the credentials (HTTP 401) from {USER_VARS}; "
        "check them"
    )
    assert WRONG not in result.stdout
