"""A Ctrl-C pressed while a query's child process is being made: the child is killed, not
left running a runaway query untracked (seen under load in the console's cancel test: the
query went on after the interrupt, and the console hung or kept a worker)."""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from conftest import SAMPLE, settings_for
from labbrain.core import LabBrain
from labbrain.store import isolated
from labbrain.store.base import read_query

#: Every triple against every pair of triples: runs far longer than the test.
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


def test_a_ctrl_c_while_the_query_process_starts_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process_class = isolated.process_context().Process
    original = process_class.start
    made: list[Any] = []

    def interrupted_at_start(self: Any) -> None:
        original(self)
        made.append(self)
        os.kill(os.getpid(), signal.SIGINT)  # pressed before run_isolated has the child

    monkeypatch.setattr(process_class, "start", interrupted_at_start)
    # Ctrl-C as an interactive process has it (an earlier test may have left another handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    restore = functools.partial(signal.signal, signal.SIGINT, previous)
    try:
        with LabBrain(settings_for(tmp_path / "store")) as brain:
            brain.load(str(SAMPLE))
            with pytest.raises(KeyboardInterrupt):
                isolated.run_isolated(
                    brain.store, functools.partial(read_query, sparql=RUNAWAY), 120
                )
    finally:
        restore()
    (child,) = made
    child.join(10)
    assert not child.is_alive(), "the query process was left running"
