"""The built wheel ships the ontology and the SPARQL templates, and the import-layers contract
catches an upward import. (ruff, mypy and lint-imports themselves run in stage 0 of .ci/run.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess


@pytest.mark.slow
def test_wheel_contains_ontology_and_queries(wheel_files: set[str]) -> None:
    names = wheel_files
    for ttl in (ROOT / "ontology").glob("*.ttl"):
        assert f"labbrain/ontology/{ttl.name}" in names
    for rq in (ROOT / "queries").glob("*.rq"):
        assert f"labbrain/queries/{rq.name}" in names
    assert "labbrain/cli.py" in names


def test_installed_resources_are_found_without_the_source_tree(tmp_path: Path) -> None:
    """Resources resolve from the package itself once installed (not from the checkout)."""
    from labbrain.rdf.resources import resource_dir

    assert {p.name for p in resource_dir("queries").iterdir()} >= {"datasets.rq", "index_nodes.rq"}


def _lint_imports(work: Path, source: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts over the package in ``source`` (its output
    without colour codes, which some releases write even to a pipe)."""
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert tool is not None, "import-linter is installed with the test extra"
    done = subprocess.run(
        [tool, "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(source)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    done.stdout = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    return done


def test_the_layers_contract_catches_an_upward_import(tmp_path: Path) -> None:
    """A copy of the package passes the contracts; the same copy with one upward import
    (rdf, the lowest layer but two, importing the command line) fails, naming the contract."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    (layers,) = [c["name"] for c in contracts if c["type"] == "layers"]
    source = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "labbrain",
        source / "labbrain",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    clean = _lint_imports(tmp_path, source)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"{layers} KEPT" in clean.stdout

    namespaces = source / "labbrain" / "rdf" / "namespaces.py"
    namespaces.write_text(namespaces.read_text(encoding="utf-8") + "\nimport labbrain.cli\n")
    broken = _lint_imports(tmp_path, source)
    assert broken.returncode != 0, broken.stdout
    assert f"{layers} BROKEN" in broken.stdout
    assert "labbrain.rdf.namespaces -> labbrain.cli" in broken.stdout


#: Run first in a child interpreter: the platform as Windows has it, for labbrain's own code.
#: Its imports of POSIX-only modules (``fcntl``, ``termios``, ...) fail, and only the ``spawn``
#: start method exists (``fork`` and ``forkserver`` are refused, and so is ``os.fork``); a
#: directory cannot be opened (there is no ``os.O_DIRECTORY``).
#: Third-party imports go through as they are: those libraries choose their Windows branch by
#: ``sys.platform`` (``mcp``'s stdio server and prompt_toolkit import ``fcntl`` only off
#: Windows; portalocker locks with msvcrt there).
WITHOUT_FORK_OR_FCNTL = r"""
import builtins
import multiprocessing
import os
import shutil
import sys

POSIX_ONLY = {"fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "posix", "syslog"}
_import = builtins.__import__


def import_as_on_windows(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if (
        level == 0
        and name.partition(".")[0] in POSIX_ONLY
        and (importer == "labbrain" or importer.startswith("labbrain."))
    ):
        raise ModuleNotFoundError(f"No module named {name!r} (on Windows)", name=name)
    return _import(name, globals, locals, fromlist, level)


_get_context = multiprocessing.get_context


def get_context(method=None):
    if method in ("fork", "forkserver"):
        raise ValueError(f"cannot find context for {method!r}")
    return _get_context(method)


def fork():
    raise OSError("os.fork does not exist on this platform")


_open = os.open


def open_as_on_windows(path, flags, mode=0o777, *, dir_fd=None):
    if dir_fd is None and os.path.isdir(path):
        raise PermissionError(13, "Permission denied", path)
    return _open(path, flags, mode, dir_fd=dir_fd)


builtins.__import__ = import_as_on_windows
os.open = open_as_on_windows  # a directory cannot be opened (to be synced)
del os.O_DIRECTORY
shutil._use_fd_functions = False  # rmtree by path, as on Windows
multiprocessing.set_start_method("spawn", force=True)
multiprocessing.get_context = get_context
multiprocessing.get_all_start_methods = lambda: ["spawn"]
os.fork = fork
"""

IMPORT_EVERY_MODULE = r"""
import importlib
import pkgutil

import labbrain

failed, imported = [], 0
for found in pkgutil.walk_packages(labbrain.__path__, "labbrain."):
    if found.name.endswith("__main__"):
        continue  # runs the command line
    try:
        importlib.import_module(found.name)
        imported += 1
    except Exception as error:
        failed.append(f"{found.name}: {type(error).__name__}: {error}")
print(imported)
print("\n".join(failed))
"""


def _run_as_on_windows(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a child interpreter set up by :data:`WITHOUT_FORK_OR_FCNTL`."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_FORK_OR_FCNTL + script, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_module_imports_without_fcntl_or_fork() -> None:
    """Every module of the package imports where ``fcntl`` and ``fork`` do not exist (as on
    Windows): none needs them at import time."""
    modules = [
        name
        for _, name, _ in __import__("pkgutil").walk_packages(
            [str(ROOT / "src" / "labbrain")], "labbrain."
        )
        if not name.endswith("__main__")
    ]
    result = _run_as_on_windows(IMPORT_EVERY_MODULE)
    assert result.returncode == 0, result.stderr[-3000:]
    count, *failed = result.stdout.splitlines()
    assert [line for line in failed if line] == []
    assert int(count) == len(modules) > 60


ISOLATED_WITH_SPAWN = r"""
import functools
import time

from pyoxigraph import Literal, NamedNode, Triple

from labbrain.console.worker import execute, run_query
from labbrain.errors import QuerySyntaxError, QueryTimeout, StoreLocked
from labbrain.store.isolated import run_isolated
from labbrain.store.local import open_store

location = sys.argv[1]
graph = NamedNode("urn:labbrain:dataset:spawned")
triples = [
    Triple(NamedNode(f"http://example.org/s{i}"), NamedNode("http://example.org/p"), Literal(str(i)))
    for i in range(200)
]
with open_store(location) as writer:
    writer.replace_graph(graph.value, lambda bulk: bulk.write(triples))  # journaled
    print("journal left:", os.path.exists(os.path.join(location, "journal")))
    try:
        open_store(location)
    except StoreLocked as refused:
        print("locked:", refused.holder == f"pid {os.getpid()}")
    with open_store(location, read_only=True) as reader:
        print("held:", reader.writer_alive())
    answer = run_query(writer, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", cap=5, seconds=60)
    print("rows:", answer.data.decode().split())
    try:
        run_isolated(writer, functools.partial(execute, text="SELECT * WHERE {\n  ?s ?p }", cap=5), 60)
    except QuerySyntaxError as error:
        print("syntax line:", error.line)
    runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    started = time.monotonic()
    try:
        run_query(writer, runaway, cap=5, seconds=2)
    except QueryTimeout:
        print("stopped:", time.monotonic() - started < 30)
with open_store(location, read_only=True) as reader:
    print("held after close:", reader.writer_alive())
"""


def test_isolated_queries_and_the_writer_lock_work_with_spawn_alone(tmp_path: Path) -> None:
    """Where ``spawn`` is the only start method and there is no ``fcntl`` (as on Windows), a
    query runs in a child process, its syntax error comes back with its line, a runaway query
    is stopped at the time limit, the writer lock refuses a second writer naming the holder's
    pid, and a journaled bulk write completes where a directory cannot be opened to be synced."""
    result = _run_as_on_windows(ISOLATED_WITH_SPAWN, str(tmp_path / "store"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "journal left: False",
        "locked: True",
        "held: True",
        "rows: ['?n', '\"200\"^^<http://www.w3.org/2001/XMLSchema#integer>']",
        "syntax line: 2",
        "stopped: True",
        "held after close: False",
    ]
