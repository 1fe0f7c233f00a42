"""The W3C SPARQL 1.1 Protocol tests (sparql11/protocol/manifest.ttl), each on a real
``labbrain serve --allow-update`` and on a real ``oxigraph serve``: it passes, or it is a
known deviation of that server (w3c_deviations.PROTOCOL), which must then still fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from w3c_deviations import PROTOCOL
from w3c_fixtures import serving, suite_or_require
from w3c_protocol import EXCHANGES, run
from w3c_servers import SERVERS, Server
from w3c_suite import protocol_entries

pytestmark = [pytest.mark.remote, pytest.mark.needs_oxigraph]


@pytest.fixture(scope="session")
def w3c_suite() -> Path:
    """The W3C suite's ``sparql11`` directory (skips, or fails under CI, without it)."""
    return suite_or_require()


@pytest.fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A fresh server of each kind, shared by the module's tests of that kind."""
    yield from serving(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx2.Client]:
    """One HTTP client for the module (never follows redirects)."""
    with httpx2.Client(timeout=60) as http:
        yield http


def test_every_test_of_the_manifest_is_encoded(w3c_suite: Path) -> None:
    assert list(EXCHANGES) == protocol_entries(w3c_suite)


@pytest.mark.parametrize("name", list(EXCHANGES))
def test_protocol(server: Server, client: httpx2.Client, name: str) -> None:
    outcome = run(client, server, name)
    known = PROTOCOL[server.kind].get(name)
    if known is None:
        assert outcome is None, f"{server.kind}, {name}: {outcome}"
        return
    assert outcome is not None, (
        f"{server.kind}, {name} passes now: remove it from w3c_deviations.PROTOCOL"
    )
    pytest.xfail(f"{known[0]}: {known[1]} ({outcome[:120]})")


def test_the_deviation_tables_name_real_tests() -> None:
    for kind, table in PROTOCOL.items():
        assert set(table) <= set(EXCHANGES), kind
