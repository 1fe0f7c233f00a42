"""Shared fixtures: sample and real data paths, stores in memory and on disk."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from labbrain.core import LabBrain
from labbrain.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SHARED = ROOT.parent / "shared" / "data"
BENCH = ROOT / "bench"

SAMPLE = DATA / "akamatsu-sample.jsonld"
SAMPLE_V0 = DATA / "v0-draft-sample.jsonld"
SAMPLE_DCT = DATA / "dct-sample.jsonld"
REAL = SHARED / "dg-social-media-polarization.jsonld"
REAL_DCT = SHARED / "dg-social-media-polarization.dct.jsonld"

SAMPLE_GRAPH = "urn:labbrain:dataset:akamatsulab-sample"

#: Page nodes of the sample by type (data/README.md): 12 typed Hypothesis nodes plus the one
#: whose @type is "nodeSchema", typed from its "[[HYP]] - " title prefix.
SAMPLE_TYPES = {
    "Evidence": 32,
    "Claim": 30,
    "Result": 25,
    "Source": 20,
    "Hypothesis": 13,
    "Question": 12,
    "Conclusion": 10,
    "Issue": 8,
}
REAL_GRAPH = "urn:labbrain:dataset:dg-social-media-polarization"

if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))


def settings_for(store: str | Path, **overrides: object) -> Settings:
    """Settings for a test store, ignoring any LABBRAIN_* variables of the environment."""
    return Settings(store=str(store), **overrides)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's own store or settings."""
    for name in list(__import__("os").environ):
        if name.startswith("LABBRAIN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def memory_brain(make_settings: MakeSettings) -> Iterator[LabBrain]:
    """An empty store: in memory, or a fresh remote store when the test module runs on both
    backends (see ``backend``)."""
    with LabBrain(make_settings()) as brain:
        yield brain


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A directory for an on-disk store (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def disk_brain(store_dir: Path) -> Iterator[LabBrain]:
    """An empty on-disk store, writable."""
    with LabBrain(settings_for(store_dir)) as brain:
        yield brain


@pytest.fixture
def sample_brain(make_settings: MakeSettings) -> Iterator[LabBrain]:
    """A store with the sample export loaded: in memory, or a fresh remote store when the
    test module runs on both backends (see ``backend``)."""
    with LabBrain(make_settings()) as brain:
        brain.load(str(SAMPLE))
        yield brain


# ---------------------------------------------------------------------------- remote stores
#: The two backends a test module can run on: the embedded store and a remote SPARQL store
#: (a real Oxigraph server started for the test).
BACKENDS = ["embedded", "remote"]
OXIGRAPH = Path(sysconfig.get_path("scripts")) / "oxigraph"


@dataclass
class OxigraphServer:
    """A running Oxigraph server (``oxigraph serve``) on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    base: str

    @property
    def query(self) -> str:
        return self.base + "/query"

    @property
    def update(self) -> str:
        return self.base + "/update"

    @property
    def store(self) -> str:
        return self.base + "/store"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/query?query=ASK%7B%7D", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@contextmanager
def oxigraph_server(
    directory: Path, *options: str, command: str = "serve"
) -> Iterator[OxigraphServer]:
    """Start ``oxigraph serve --location DIRECTORY --bind 127.0.0.1:PORT OPTIONS`` (or another
    ``command``, e.g. ``serve-read-only``) on a free port, wait until it answers a query, and
    stop it at the end."""
    directory.mkdir(parents=True, exist_ok=True)
    for _attempt in range(5):
        port = _free_port()
        process = subprocess.Popen(
            [
                str(OXIGRAPH),
                command,
                "--location",
                str(directory),
                "--bind",
                f"127.0.0.1:{port}",
                *options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while process.poll() is None and not _answers(base):
            assert time.monotonic() < deadline, "the Oxigraph server did not start"
            time.sleep(0.01)
        if process.poll() is None:
            break  # answering; else the port was taken meanwhile: try another
    else:
        raise AssertionError("the Oxigraph server did not start (5 attempts)")
    try:
        yield OxigraphServer(process, base)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def remote_settings(server: OxigraphServer, **overrides: object) -> Settings:
    """Settings for a remote store on ``server`` (queries, updates and Graph Store Protocol),
    checking the endpoint's load records before every index read."""
    values: dict[str, object] = {
        "endpoint": server.query,
        "gsp_endpoint": server.store,
        "endpoint_index_refresh_seconds": 0,
        **overrides,
    }
    return Settings(**values)  # type: ignore[arg-type]


MakeSettings = Callable[..., Settings]


@pytest.fixture
def oxigraph(tmp_path: Path) -> Iterator[OxigraphServer]:
    """A fresh Oxigraph server with an empty store, stopped after the test."""
    with oxigraph_server(tmp_path / "oxigraph") as server:
        yield server


@pytest.fixture
def backend() -> str:
    """The backend of the stores the shared fixtures open: "embedded" here; a test module
    that runs on both overrides this fixture with ``params=BACKENDS``."""
    return "embedded"


@pytest.fixture
def make_settings(backend: str, tmp_path: Path) -> Iterator[MakeSettings]:
    """Settings for a new, empty store of the test's backend, with overrides: in memory
    (embedded), or on an Oxigraph server started for it (remote; stopped after the test)."""
    with ExitStack() as servers:
        started = itertools.count()

        def make(**overrides: object) -> Settings:
            if backend == "embedded":
                return settings_for(":memory:", **overrides)
            directory = tmp_path / f"oxigraph-{next(started)}"
            return remote_settings(servers.enter_context(oxigraph_server(directory)), **overrides)

        yield make


#: Where a command-line test works: a store directory (embedded) or an Oxigraph server.
Target = Path | OxigraphServer


def cli_args(target: Target | str) -> list[str]:
    """The global ``labbrain`` options that select ``target``."""
    if isinstance(target, OxigraphServer):
        return ["--endpoint", target.query, "--gsp-endpoint", target.store]
    return ["--store", str(target)]


def settings_of(target: Target, **overrides: object) -> Settings:
    """Settings for the store at ``target`` (see settings_for and remote_settings)."""
    if isinstance(target, OxigraphServer):
        return remote_settings(target, **overrides)
    return settings_for(target, **overrides)


@pytest.fixture
def store_target(backend: str, store_dir: Path, tmp_path: Path) -> Iterator[Target]:
    """Where the test's store lives: ``store_dir`` (embedded, not created yet) or a fresh
    Oxigraph server (remote, stopped after the test)."""
    if backend == "embedded":
        yield store_dir
        return
    with oxigraph_server(tmp_path / "oxigraph-target") as server:
        yield server
