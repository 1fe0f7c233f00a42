"""Helpers shared by tests: canonical views of graphs and store snapshots, an in-process MCP
client, and killing a load mid-write."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from pyoxigraph import BlankNode, CanonicalizationAlgorithm, Dataset, NamedNode, Quad

from labbrain.core import LabBrain
from labbrain.mcp.server import build_server
from labbrain.rdf.namespaces import TASKS_GRAPH
from labbrain.store.journal import JOURNAL_DIR, JOURNAL_MARKER

ROOT = Path(__file__).resolve().parents[1]

_FIXED = NamedNode("urn:test:graph")

Json = dict[str, Any]


class InProcessTools:
    """The MCP tools of one server over ``brain``, each call through its own in-process
    client. Arguments go as a mapping, as keywords, or both."""

    def __init__(self, brain: LabBrain) -> None:
        self.brain = brain
        self.server = build_server(brain)

    def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, /, **more: Any
    ) -> tuple[bool, Json | None, str]:
        """(isError, structured content, text) of one call."""

        async def main() -> tuple[bool, Json | None, str]:
            async with Client(self.server) as client:
                result = await client.call_tool(tool, {**(arguments or {}), **more})
            text = "".join(getattr(c, "text", "") for c in result.content)
            return bool(result.is_error), result.structured_content, text

        return asyncio.run(main())

    def ok(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **more: Any) -> Json:
        """The structured answer of a call that must succeed; its text is the same JSON."""
        is_error, structured, text = self.call(tool, arguments, **more)
        assert not is_error, text
        assert structured is not None and json.loads(text) == structured
        return structured

    def error(self, tool: str, arguments: Mapping[str, Any] | None = None, /, **more: Any) -> str:
        """The message of a call that must fail, without the SDK's prefix; it never shows a
        traceback or a server path."""
        is_error, _, text = self.call(tool, arguments, **more)
        assert is_error, text[:300]
        assert "Traceback" not in text and "/tmp" not in text
        return text.removeprefix(f"Error executing tool {tool}: ")


def canonical(brain: LabBrain, graph: str) -> set[str]:
    """The RDFC-1.0 canonical N-Quads lines of ``graph``, renamed to one fixed graph name."""
    dataset = Dataset(
        Quad(q.subject, q.predicate, q.object, _FIXED) for q in brain.store.quads(graph)
    )
    dataset.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return {str(q) for q in dataset}


def snapshot(brain: LabBrain) -> dict[str, Any]:
    """What a failed operation must not change: every graph's canonical content."""
    return {graph: canonical(brain, graph) for graph in brain.store.graphs()}


def select(brain: LabBrain, sparql: str) -> list[dict[str, Any]]:
    """Rows of a SELECT as dicts of plain strings."""
    result = brain.query(sparql)
    assert result is not None
    variables = [v.value for v in result.variables]  # type: ignore[union-attr]
    return [
        {v: (row[v].value if row[v] is not None else None) for v in variables}
        for row in result  # type: ignore[union-attr]
    ]


def count(brain: LabBrain, sparql_where: str) -> int:
    """COUNT(*) of a WHERE pattern (over all graphs)."""
    rows = select(brain, f"SELECT (COUNT(*) AS ?n) WHERE {{ {sparql_where} }}")
    return int(rows[0]["n"])


def fingerprint(brain: LabBrain) -> dict[str, tuple[int, str]]:
    """Per graph but the task ledger: quad count and a digest of its quads with blank-node
    labels blanked out (cheap enough for big graphs, unlike canonicalisation)."""
    prints = {}
    for graph in brain.store.graphs():
        if graph == TASKS_GRAPH:  # the ledger records the tasks themselves
            continue
        lines = sorted(
            " ".join(
                "_:b" if isinstance(t, BlankNode) else str(t)
                for t in (q.subject, q.predicate, q.object)
            )
            for q in brain.store.quads(graph)
        )
        prints[graph] = (len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest())
    return prints


def load_and_kill(store: Path, export: Path, delay: float) -> None:
    """Start `labbrain load` in a child process and SIGKILL it ``delay`` s into its bulk write."""
    child = subprocess.Popen(
        [sys.executable, "-m", "labbrain", "--store", str(store), "load", str(export)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = store / JOURNAL_DIR / JOURNAL_MARKER
    deadline = time.monotonic() + 120
    try:
        while not marker.exists():
            assert child.poll() is None, "the load ended before its bulk write started"
            assert time.monotonic() < deadline, "the bulk write never started"
            time.sleep(0.005)
        time.sleep(delay)
        assert child.poll() is None, "the load finished before it could be killed"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert marker.exists(), "the kill left the journal of the interrupted write"
