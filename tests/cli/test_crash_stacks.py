"""A native crash in the ``labbrain`` command leaves every thread's Python stack on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

#: Runs one labbrain command in-process, then dies of a segmentation fault in native code
#: (reading address 0 through ctypes) while a second thread waits: what a crash inside a
#: native library looks like to the process.
CRASH = textwrap.dedent(
    """
    import ctypes, sys, threading
    from labbrain.cli import main
    try:
        main(sys.argv[1:], prog_name="labbrain")
    except SystemExit:
        pass
    waiting = threading.Event()
    def parked_in_a_second_thread():
        waiting.wait()
    threading.Thread(target=parked_in_a_second_thread, daemon=True).start()
    ctypes.string_at(0)
    """
)


def _crash_after(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    env["LABBRAIN_STORE"] = str(tmp_path / "store")
    return subprocess.run(
        [sys.executable, "-c", CRASH, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_a_native_crash_prints_the_stack_of_every_thread(tmp_path: Path) -> None:
    done = _crash_after(tmp_path, "mcp-config", "claude-code")
    assert done.returncode == -11  # SIGSEGV
    assert "Fatal Python error: Segmentation fault" in done.stderr
    # Both threads, each with its own Python frames.
    assert "parked_in_a_second_thread" in done.stderr
    assert "Current thread" in done.stderr
    assert done.stdout.startswith("claude mcp add")  # stdout is the command's alone


def test_without_the_command_a_crash_prints_nothing(tmp_path: Path) -> None:
    """The control: the same crash without a labbrain command run first is silent, so the
    stacks above come from the command switching the fault handler on."""
    done = _crash_after(tmp_path, "--help")  # --help exits before any command runs
    assert done.returncode == -11
    assert "Fatal Python error" not in done.stderr
