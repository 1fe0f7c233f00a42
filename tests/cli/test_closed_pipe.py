"""A command whose reader goes away (``labbrain stats --full | head``) ends quietly.

The reader of stdout closes its end early, as ``head`` does: the command must end with the
status of a process killed by SIGPIPE (141, what the shell reports for ``yes | head``), with
nothing on stderr (no traceback, no error message), whatever writes its output: rich tables,
JSON, bytes written to stdout's buffer, click's echo.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import DATA
from labbrain.cli import main

pytestmark = pytest.mark.subprocess

#: What a process killed by SIGPIPE exits with, as a shell reports it (128 + 13).
CLOSED_PIPE = 141


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("pipe") / "store"
    paths = [*map(str, sorted(DATA.glob("*.jsonld"))), str(DATA / "obsidian-sample")]
    result = CliRunner().invoke(main, ["--store", str(store), "load", *paths])
    assert result.exit_code == 0, result.stderr
    return store


def _start(store: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    return subprocess.Popen(
        [sys.executable, "-m", "labbrain", "--store", str(store), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _ended(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    return process.wait(timeout=120), stderr


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "--full"],
        ["stats", "--json"],
        ["graphs"],
        ["info"],
        ["query", "SELECT * WHERE { ?s ?p ?o } LIMIT 50"],
        ["query", "SELECT * WHERE { ?s ?p ?o }", "--format", "csv"],
        ["export", "--format", "nquads"],
        ["mcp-config", "claude-code"],
    ],
    ids=" ".join,
)
def test_a_reader_gone_before_the_first_line_ends_the_command_quietly(
    store: Path, args: list[str]
) -> None:
    process = _start(store, *args)
    assert process.stdout is not None
    process.stdout.close()  # before the command writes anything: its first write fails
    status, stderr = _ended(process)
    assert (status, stderr) == (CLOSED_PIPE, "")


def test_head_after_the_first_line(store: Path) -> None:
    """The reader takes a line, then goes (``labbrain export | head -1``): the export goes
    on writing far more than a pipe holds."""
    process = _start(store, "export", "--format", "nquads")
    assert process.stdout is not None
    assert process.stdout.readline().endswith(b" .\n")
    process.stdout.close()
    status, stderr = _ended(process)
    assert (status, stderr) == (CLOSED_PIPE, "")


def test_a_command_that_prints_everything_still_ends_with_0(store: Path) -> None:
    process = _start(store, "stats", "--full")
    assert process.stdout is not None
    printed = process.stdout.read()
    status, stderr = _ended(process)
    assert (status, stderr) == (0, "")
    assert b"urn:labbrain:dataset:akamatsulab-sample" in printed
