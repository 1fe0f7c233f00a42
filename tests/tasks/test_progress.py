"""A big load shows a progress bar on a terminal, and nothing of it when piped."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from generate import write_export

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]


@pytest.fixture(scope="module")
def export_12k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exports") / "dg-12000.jsonld"
    write_export(path, 12_000, seed=5)
    return path


def _run_on_terminal(args: list[str]) -> tuple[int, str]:
    """Run ``args`` with stdout and stderr on a pseudo-terminal; return (exit code, output)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    child = subprocess.Popen(args, stdout=follower, stderr=follower, cwd=ROOT, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return child.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal(tmp_path: Path, export_12k: Path) -> None:
    code, output = _run_on_terminal(
        [sys.executable, "-m", "labbrain", "--store", str(tmp_path / "s"), "load", str(export_12k)]
    )
    assert code == 0, output
    assert "step " in output and "/6" in output  # the step bar was drawn
    assert "12,000 nodes" in output


def test_no_progress_bar_when_piped(tmp_path: Path, export_12k: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "labbrain", "--store", str(tmp_path / "s"), "load", str(export_12k)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "step " not in result.stdout + result.stderr
    assert "12,000 nodes" in result.stdout


def test_no_progress_bar_for_small_loads(tmp_path: Path) -> None:
    code, output = _run_on_terminal(
        [
            sys.executable,
            "-m",
            "labbrain",
            "--store",
            str(tmp_path / "s"),
            "load",
            str(ROOT / "data" / "akamatsu-sample.jsonld"),
        ]
    )
    assert code == 0, output
    assert "step " not in output
    assert "150 nodes" in output
