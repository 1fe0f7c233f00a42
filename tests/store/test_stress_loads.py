"""Hundreds of consecutive loads with readers querying during each: no crash, no reader
error, no half-written dataset seen, every store checked clean afterwards.

The loads run in child processes (bench/bench_stress_load.py), so that a native crash fails
this test with its exit status and the Python stacks of every thread, instead of taking the
test run down with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_stress_load import run_input
from conftest import REAL, SAMPLE

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

LOADS = 150


def _assert_clean(result: dict[str, object], loads: int) -> None:
    crashes = result["crashes"]
    assert not crashes, "\n\n".join(str(c) for c in crashes)  # type: ignore[union-attr]
    assert result["problems"] == []
    assert result["reader_errors"] == []
    assert result["loads_done"] == loads
    assert result["checks"] == loads  # checked after every load
    assert result["reads"] > loads  # the readers did read during the loads


def test_consecutive_loads_of_the_sample(tmp_path: Path) -> None:
    result = run_input(str(SAMPLE), LOADS, 50, 2, 1, str(tmp_path))
    _assert_clean(result, LOADS)
    assert result["nodes"] == 150  # data/README.md


@pytest.mark.needs_corpus
def test_consecutive_loads_of_the_real_corpus(tmp_path: Path) -> None:
    result = run_input(str(REAL), LOADS, 50, 2, 1, str(tmp_path))
    _assert_clean(result, LOADS)
    assert result["nodes"] == 268
