"""A 100,000-node export replaced while four MCP clients read: no client error, and every
answer from the old dataset or the new one, never a mix.

A writer (``labbrain watch EXPORT``) holds the store and follows the export. Four
``labbrain mcp --read-only`` stdio servers over the same store (each following the writer's
commits) serve four clients that call, in a loop:

- ``sparql_query`` counting the probe nodes whose title carries the new version's mark: the
  answer must be 0 (old dataset) or every probe (new dataset), never a part;
- ``get_node`` on a probe: no error;
- ``search_nodes`` for a common word (keyword): no error.

Then the new version is written beside the export and renamed over it (as an editor saves);
the writer loads it and the clients go on until each has seen the new dataset a few times.
Reported: calls, client errors, mixed answers, the time from the save to the writer's report
and to each client's first answer from the new dataset.

Usage::

    python bench/bench_replace.py --nodes 100000 --clients 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_load import ensure_export, machine_info, run_lines, source_revision
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
LABBRAIN = str(Path(sys.executable).parent / "labbrain")
MARK = " (revised)"
PROBES = 20
#: A client that has not seen the new dataset this long after the save gives up (an error).
NOT_SEEN_SECONDS = 900.0
#: A client stops after this many errors.
MAX_ERRORS = 50
Record = dict[str, Any]


def clean_env() -> dict[str, str]:
    """This process's environment without LABBRAIN_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}


def new_version(export: Path, target: Path, seed: int) -> list[tuple[str, str]]:
    """Write ``export`` with :data:`PROBES` page titles marked to ``target``; return the
    probes' (uid, IRI)."""
    document = json.loads(export.read_text(encoding="utf-8"))
    pages_base = document["@context"]["pages"]
    pages = [e for e in document["@graph"] if isinstance(e, dict) and "title" in e]
    probes = random.Random(seed).sample(pages, PROBES)
    for page in probes:
        page["title"] = page["title"] + MARK
    target.write_text(json.dumps(document), encoding="utf-8")
    uids = [p["@id"].split(":", 1)[-1] for p in probes]
    return [(uid, pages_base + uid) for uid in uids]


@dataclass
class ClientLog:
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    mixed: list[str] = field(default_factory=list)
    first_new: float | None = None
    new_answers: int = 0


class Writer:
    """``labbrain watch EXPORT --json`` in a child process, its events read in a thread."""

    def __init__(self, store: Path, export: Path) -> None:
        self.process = subprocess.Popen(
            [LABBRAIN, "--store", str(store), "watch", str(export), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=clean_env(),
        )
        self.events: list[tuple[float, Record]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append((time.perf_counter(), json.loads(line)))

    def wait_for_load(self, after: float, timeout: float) -> tuple[float, Record]:
        """The first ``loaded`` or ``failed`` event reported after time ``after``, waiting up
        to ``timeout`` s (``unchanged`` events are skipped: the watcher checks its sources
        again when the watch starts)."""
        deadline = time.perf_counter() + timeout
        while True:
            for at, event in list(self.events):
                if at > after and event.get("outcome") in ("loaded", "failed"):
                    return at, event
            if self.process.poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"no load reported; events: {self.events}")
            time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


async def read_loop(
    client: Any, probes: list[tuple[str, str]], log: ClientLog, saved: list[float], enough: int
) -> None:
    """Call the tools until this client has seen the new dataset ``enough`` times."""
    rng = random.Random(id(log))
    nodes = " ".join(f"<{iri}>" for _, iri in probes)
    count_query = (
        f"SELECT (COUNT(DISTINCT ?n) AS ?c) WHERE {{ VALUES ?n {{ {nodes} }} "
        f"?n <http://purl.org/dc/terms/title> ?t FILTER(STRENDS(?t, {json.dumps(MARK)})) }}"
    )
    while log.new_answers < enough:
        if len(log.errors) > MAX_ERRORS:
            return
        if saved and time.perf_counter() - saved[0] > NOT_SEEN_SECONDS:
            log.errors.append(f"the new dataset not seen {NOT_SEEN_SECONDS:.0f} s after the save")
            return
        step = log.calls % 3
        try:
            if step == 0:
                answer = await client.call_tool("sparql_query", {"query": count_query})
                if answer.is_error:
                    log.errors.append(str(answer.content)[:200])
                else:
                    found = int(answer.structured_content["rows"][0]["c"])
                    if found not in (0, len(probes)):
                        log.mixed.append(f"{found} of {len(probes)} probes marked")
                    elif found and saved:
                        log.new_answers += 1
                        if log.first_new is None:
                            log.first_new = time.perf_counter() - saved[0]
            elif step == 1:
                uid, _ = rng.choice(probes)
                answer = await client.call_tool("get_node", {"uid": uid})
                if answer.is_error:
                    log.errors.append(str(answer.content)[:200])
            else:
                answer = await client.call_tool(
                    "search_nodes", {"query": "membrane tension", "mode": "keyword"}
                )
                if answer.is_error:
                    log.errors.append(str(answer.content)[:200])
        except Exception as error:  # a transport error is a client error too
            log.errors.append(f"{type(error).__name__}: {error}"[:200])
            await asyncio.sleep(0.1)  # and no busy loop on a client that keeps failing
        log.calls += 1


async def run_clients(
    store: Path,
    count: int,
    probes: list[tuple[str, str]],
    export: Path,
    v2: Path,
    writer: Writer,
    enough: int,
) -> tuple[list[ClientLog], float, float]:
    """Start the clients, let them read, replace the export, and read on; return the logs,
    the save's time and the writer's report delay."""
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=LABBRAIN, args=["--store", str(store), "mcp", "--read-only"], env=clean_env()
    )
    logs = [ClientLog() for _ in range(count)]
    saved: list[float] = []
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(params, read_timeout_seconds=300, cache=None))
            for _ in range(count)
        ]
        tasks = [
            asyncio.create_task(read_loop(c, probes, log, saved, enough))
            for c, log in zip(clients, logs, strict=True)
        ]
        await asyncio.sleep(5)  # reading the old dataset
        os.replace(v2, export)
        saved.append(time.perf_counter())
        at, event = await asyncio.to_thread(writer.wait_for_load, saved[0], 1800)
        if event.get("outcome") != "loaded":
            raise RuntimeError(f"the writer did not load the new version: {event}")
        await asyncio.gather(*tasks)
    return logs, saved[0], at - saved[0]


def render(result: Record) -> str:
    lines = [
        "# An export replaced while MCP clients read",
        "",
        *run_lines(result),
        f"- Export: {result['nodes']:,} nodes ({result['export_mb']:.0f} MB); the new version "
        f"retitles {PROBES} probe nodes",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| clients | {result['clients']} |",
        f"| tool calls answered | {result['calls']:,} |",
        f"| client errors | {result['errors']} |",
        f"| answers mixing the old and the new dataset | {result['mixed']} |",
        f"| save to the writer's report of the new load, s | {result['writer_seconds']:.1f} |",
        f"| save to a client's first answer from the new dataset, median s | "
        f"{result['first_new_median']:.1f} |",
        "",
        "The writer is `labbrain watch EXPORT`; the clients' servers are `labbrain mcp "
        "--read-only` over the same store, each following the writer's commits. A client calls "
        "sparql_query (how many probes carry the new title: 0 or all), get_node on a probe "
        "and search_nodes in turn, and stops once it has seen the "
        f"new dataset {result['enough']} times.",
    ]
    if result["error_examples"] or result["mixed_examples"]:
        lines += ["", "Examples: " + "; ".join(result["error_examples"] + result["mixed_examples"])]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--enough", type=int, default=5, help="new answers per client")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmp-dir", help="where the store and the export copy go")
    parser.add_argument("--no-write", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    facts = ensure_export(args.nodes, args.seed, "2025-12", BENCH_DIR / "out")
    original = Path(facts["path"])
    with tempfile.TemporaryDirectory(prefix="labbrain-replace-", dir=args.tmp_dir) as scratch:
        work = Path(scratch)
        export = work / "lab.jsonld"
        export.write_bytes(original.read_bytes())
        v2 = work / "lab.jsonld.next"
        probes = new_version(export, v2, args.seed)
        store = work / "store"
        writer = Writer(store, export)
        try:
            writer.wait_for_load(0.0, 1800)  # the first load
            logs, _, writer_seconds = asyncio.run(
                run_clients(store, args.clients, probes, export, v2, writer, args.enough)
            )
        finally:
            writer.stop()
    errors = [e for log in logs for e in log.errors]
    mixed = [m for log in logs for m in log.mixed]
    firsts = [log.first_new for log in logs if log.first_new is not None]
    result: Record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/bench_replace.py " + " ".join(sys.argv[1:]),
        "machine": machine_info(args.tmp_dir),
        "source": source_revision(),
        "nodes": args.nodes,
        "export_mb": original.stat().st_size / 1e6,
        "clients": args.clients,
        "enough": args.enough,
        "calls": sum(log.calls for log in logs),
        "errors": len(errors),
        "mixed": len(mixed),
        "error_examples": errors[:3],
        "mixed_examples": mixed[:3],
        "writer_seconds": writer_seconds,
        "first_new_median": statistics.median(firsts) if firsts else float("nan"),
        "wall_seconds": time.perf_counter() - started,
    }
    page = render(result)
    print(page)
    if not args.no_write:
        results = BENCH_DIR / "results"
        write_result(results / "replace.md", page)
        write_result(results / "replace.json", json.dumps(result, indent=2) + "\n")
    return 0 if not errors and not mixed else 1


if __name__ == "__main__":
    raise SystemExit(main())
