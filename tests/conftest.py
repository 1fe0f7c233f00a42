"""Shared fixtures: sample and real data paths, stores in memory and on disk; what a test
needs from outside the repository (the real corpus, Node.js, Chromium, the Oxigraph and
Virtuoso servers, PyTorch)."""

from __future__ import annotations

import gc
import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import answers_ask, close_client_sessions, free_port, stop_process
from labbrain.core import LabBrain
from labbrain.settings import Settings
from virtuoso_server import VirtuosoServer, virtuoso_server
from virtuoso_server import available as virtuoso_available

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


# ------------------------------------------------------------------ what lies outside the repo
def in_ci() -> bool:
    """True when the ``CI`` environment variable is set (to anything but "", 0, false, no)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(what: str, available: bool, reason: str) -> None:
    """Skip the running test when ``what`` is not ``available``; fail it instead under CI,
    which provides everything (see .ci/run)."""
    if available:
        return
    message = f"needs {what}: {reason}"
    if in_ci():
        pytest.fail(f"{message} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(message)


CHROMIUM = Path("/usr/bin/chromium")
OXIGRAPH = Path(sysconfig.get_path("scripts")) / "oxigraph"


def _have_corpus() -> bool:
    return REAL.is_file() and REAL_DCT.is_file()


def _have_npx() -> bool:
    return shutil.which("npx") is not None


def _have_chromium() -> bool:
    return CHROMIUM.is_file() and shutil.which("node") is not None and bool(shutil.which("npm"))


def _have_oxigraph() -> bool:
    return OXIGRAPH.is_file()


#: What the torch extra brings that the needs_torch tests import.
TORCH = ("torch", "sentence_transformers")


def _have_torch() -> bool:
    """PyTorch and sentence-transformers can be imported (they are located, not imported:
    importing torch takes seconds)."""
    return all(importlib.util.find_spec(name) is not None for name in TORCH)


#: marker -> (what, is it here, where it comes from); checked before each marked test.
NEEDS: dict[str, tuple[str, Callable[[], bool], str]] = {
    "needs_corpus": (
        "the real corpus",
        _have_corpus,
        f"../shared/data/{REAL.name} (and its .dct variant) beside the repository",
    ),
    "needs_npx": ("Node.js (npx)", _have_npx, "the MCP Inspector runs through npx"),
    "needs_chromium": (
        "Chromium, node and npm",
        _have_chromium,
        f"the web console test drives {CHROMIUM} through playwright-core from npm",
    ),
    "needs_oxigraph": (
        "the Oxigraph server",
        _have_oxigraph,
        f"{OXIGRAPH} comes with the oxigraph package of the test extra",
    ),
    "needs_virtuoso": (
        "the Virtuoso server",
        virtuoso_available,
        "virtuoso-t and isql-vt come with Debian's virtuoso-opensource package",
    ),
    "needs_torch": (
        "PyTorch and sentence-transformers",
        _have_torch,
        "the torch extra installs them (pip install -e '.[test,semantic,torch]': about 2 GB)",
    ),
}


def require_marked(markers: Iterable[str]) -> None:
    """``require`` every ``needs_*`` marker among ``markers``."""
    for name in markers:
        if name in NEEDS:
            what, available, reason = NEEDS[name]
            require(what, available(), reason)


#: The module whose first test last froze the collector's heap (pytest_runtest_setup).
_FROZEN_FOR: str | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``needs_*`` skips (fails under CI) before its fixtures are set up.

    At the first test of each module, what is alive then (imported modules, parameters, the
    session's fixtures; the previous module's fixtures are torn down by now) is moved out of
    the garbage collector's full passes: a store's close runs gc.collect(), which would walk
    all of it again each time, a tenth of a second and more in a long run."""
    global _FROZEN_FOR
    module = item.nodeid.split("::", 1)[0]
    if module != _FROZEN_FOR:
        _FROZEN_FOR = module
        gc.collect()
        gc.freeze()
    require_marked(sorted({mark.name for mark in item.iter_markers()}))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on the ``oxigraph`` fixture (a server of its own) is a remote test (before -m
    deselects: tryfirst)."""
    for item in items:
        if "oxigraph" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.remote)
            item.add_marker(pytest.mark.needs_oxigraph)


def require_corpus() -> None:
    """For code that reads the real corpus outside a marked test (a lazy export, a fixture)."""
    require_marked(["needs_corpus"])


#: The "remote" parameter of a test module that runs on both backends: marked ``remote``, which
#: the default run leaves out (pyproject.toml, addopts) and stage 2 of .ci/run runs.
REMOTE = pytest.param("remote", marks=[pytest.mark.remote, pytest.mark.needs_oxigraph])
#: The same on a Virtuoso server started for the test (Debian's virtuoso-opensource).
VIRTUOSO = pytest.param("virtuoso", marks=[pytest.mark.remote, pytest.mark.needs_virtuoso])


def settings_for(store: str | Path, **overrides: object) -> Settings:
    """Settings for a test store, ignoring any LABBRAIN_* variables of the environment."""
    return Settings(store=str(store), **overrides)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def _encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of built embedding encoders for the session (derived files: building the
    int8 encoder takes seconds, and every test would otherwise build its own)."""
    return tmp_path_factory.mktemp("labbrain-cache")


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, _encoder_cache: Path
) -> None:
    """No test reads the developer's own store or settings."""
    for name in list(__import__("os").environ):
        if name.startswith("LABBRAIN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("LABBRAIN_CACHE_DIR", str(_encoder_cache))


@pytest.fixture(autouse=True)
def _close_client_sessions() -> Iterator[None]:
    """The in-process MCP clients a test kept open (helpers.ClientSession) end with it."""
    yield
    close_client_sessions()


@pytest.fixture
def memory_brain(make_settings: MakeSettings) -> Iterator[LabBrain]:
    """An empty store: in memory, or a fresh remote store when the test module runs on both
    backends (see ``backend``)."""
    with LabBrain(make_settings()) as brain:
        yield brain


@pytest.fixture(scope="session")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The names of the files in labbrain's wheel, built once (``pip wheel``) for every test
    that looks into it."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    (wheel,) = out.glob("labbrain-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


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
#: The backends a test module can run on: the embedded store and a remote SPARQL store (a real
#: Oxigraph server, or a real Virtuoso server, started for the test).
BACKENDS = ["embedded", REMOTE, VIRTUOSO]


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


@contextmanager
def oxigraph_server(
    directory: Path, *options: str, command: str = "serve"
) -> Iterator[OxigraphServer]:
    """Start ``oxigraph serve --location DIRECTORY --bind 127.0.0.1:PORT OPTIONS`` (or another
    ``command``, e.g. ``serve-read-only``) on a free port, wait until it answers a query, and
    stop it at the end."""
    require_marked(["needs_oxigraph"])
    directory.mkdir(parents=True, exist_ok=True)
    for _attempt in range(5):
        port = free_port()
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
        while process.poll() is None and not answers_ask(base + "/query"):
            assert time.monotonic() < deadline, "the Oxigraph server did not start"
            time.sleep(0.01)
        if process.poll() is None:
            break  # answering; else the port was taken meanwhile: try another
    else:
        raise AssertionError("the Oxigraph server did not start (5 attempts)")
    try:
        yield OxigraphServer(process, base)
    finally:
        stop_process(process, timeout=10)


def remote_settings(server: OxigraphServer | VirtuosoServer, **overrides: object) -> Settings:
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
            directory = tmp_path / f"{backend}-{next(started)}"
            return remote_settings(
                servers.enter_context(remote_server(backend, directory)), **overrides
            )

        yield make


def remote_server(
    backend: str, directory: Path
) -> AbstractContextManager[OxigraphServer | VirtuosoServer]:
    """The server a remote backend's test starts in ``directory`` (a context manager)."""
    if backend == "virtuoso":
        return virtuoso_server(directory)
    return oxigraph_server(directory)


#: Where a command-line test works: a store directory (embedded) or a SPARQL server.
Target = Path | OxigraphServer | VirtuosoServer


def cli_args(target: Target | str) -> list[str]:
    """The global ``labbrain`` options that select ``target``."""
    if isinstance(target, OxigraphServer | VirtuosoServer):
        return ["--endpoint", target.query, "--gsp-endpoint", target.store]
    return ["--store", str(target)]


def settings_of(target: Target, **overrides: object) -> Settings:
    """Settings for the store at ``target`` (see settings_for and remote_settings)."""
    if isinstance(target, OxigraphServer | VirtuosoServer):
        return remote_settings(target, **overrides)
    return settings_for(target, **overrides)


@pytest.fixture
def store_target(backend: str, store_dir: Path, tmp_path: Path) -> Iterator[Target]:
    """Where the test's store lives: ``store_dir`` (embedded, not created yet) or a fresh
    Oxigraph server (remote, stopped after the test)."""
    if backend == "embedded":
        yield store_dir
        return
    with remote_server(backend, tmp_path / f"{backend}-target") as server:
        yield server


# ---------------------------------------------------------------------------- publishing
@pytest.fixture
def sample_store(tmp_path: Path) -> Iterator[Path]:
    """A store directory holding the sample export (closed: commands open it themselves)."""
    with LabBrain(settings_for(tmp_path / "store")) as brain:
        brain.load(str(SAMPLE))
    yield tmp_path / "store"


@pytest.fixture(scope="module")
def signing_key_pem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An RSA private key file in PEM, as the nanopub tools keep one (made by nanopub-sign)."""
    import nanopub_sign

    path = tmp_path_factory.mktemp("key") / "id_rsa.pem"
    private = nanopub_sign.KeyPair().private  # base64 PKCS#8
    lines = [private[i : i + 64] for i in range(0, len(private), 64)]
    path.write_text(
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    )
    return path
