"""Helpers shared by tests: canonical views of graphs and store snapshots, an in-process MCP
client, and killing a load mid-write."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Coroutine, Iterable, Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from pyoxigraph import BlankNode, CanonicalizationAlgorithm, Dataset, NamedNode, Quad

from labbrain.core import LabBrain
from labbrain.mcp.server import build_server
from labbrain.rdf.namespaces import TASKS_GRAPH
from labbrain.store.journal import JOURNAL_DIR, JOURNAL_MARKER

ROOT = Path(__file__).resolve().parents[1]

_FIXED = NamedNode("urn:test:graph")

Json = dict[str, Any]


ToolAnswer = tuple[bool, Json | None, str]

#: Every ClientSession open now; conftest closes them after each test.
_OPEN: set[ClientSession] = set()


class ClientSession:
    """One in-process MCP client connected to ``server``, kept open across calls (connecting
    costs ten times a call): the client lives in an event loop of its own thread, which every
    call is handed to. Opened at the first call; ``close`` ends it (a later call reopens)."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._held: concurrent.futures.Future[None] | None = None

    async def _hold(self, ready: concurrent.futures.Future[Client]) -> None:
        try:
            self._stop = asyncio.Event()
            async with Client(self.server) as client:
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as failure:
            if not ready.done():
                ready.set_exception(failure)
            raise

    def _open(self) -> Client:
        if self._client is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="mcp-client", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
            ready: concurrent.futures.Future[Client] = concurrent.futures.Future()
            self._held = asyncio.run_coroutine_threadsafe(self._hold(ready), loop)
            _OPEN.add(self)
            self._client = ready.result(timeout=120)
        return self._client

    def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        """Run ``work`` (a coroutine using ``client``) in the session's loop; its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=600)

    @property
    def client(self) -> Client:
        return self._open()

    def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolAnswer:
        """(isError, structured content, text) of one call."""
        client = self._open()
        result = self.run(client.call_tool(tool, dict(arguments)))
        text = "".join(getattr(c, "text", "") for c in result.content)
        return bool(result.is_error), result.structured_content, text

    def close(self) -> None:
        _OPEN.discard(self)
        loop, thread, held, stop = self._loop, self._thread, self._held, self._stop
        self._loop = self._thread = self._client = self._held = self._stop = None
        if loop is None or thread is None:
            return
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        if held is not None:
            held.result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=60)
        loop.close()


def close_client_sessions() -> None:
    """Close every ClientSession still open (after each test)."""
    for session in list(_OPEN):
        session.close()


class InProcessTools:
    """The MCP tools of one server over ``brain``, called through one in-process client that
    stays connected until the end of the test. Arguments go as a mapping, as keywords, or
    both."""

    def __init__(self, brain: LabBrain, toolsets: Iterable[str] | None = None) -> None:
        self.brain = brain
        self.server = build_server(brain) if toolsets is None else build_server(brain, toolsets)
        self.session = ClientSession(self.server)

    def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, /, **more: Any
    ) -> ToolAnswer:
        """(isError, structured content, text) of one call."""
        return self.session.call(tool, {**(arguments or {}), **more})

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


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop a server a test started: SIGTERM, then SIGKILL if it has not ended within
    ``timeout`` seconds; returns once it has ended."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (a server started on it may still lose it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answers_ask(url: str) -> bool:
    """True when the SPARQL endpoint at ``url`` answers ``ASK {}`` with 200 (within 2 s)."""
    try:
        with urllib.request.urlopen(url + "?query=ASK%7B%7D", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def embed_all(brain: LabBrain) -> None:
    """Run the embed task (``labbrain embed``) on ``brain``; it must complete."""
    from labbrain.ops.workflows import task_runner

    runner = task_runner(brain)
    assert runner.start(runner.create("embed").task_id).status == "completed"
