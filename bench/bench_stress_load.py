"""Stress run of consecutive loads: no native crash, readers never see half a load, every
store checked clean.

``labbrain load`` once died of a segmentation fault about once in a few hundred loads (two
threads bulk-loading one pyoxigraph store at once; see docs/reliability.md). This script loads
each input many times over and counts what went wrong:

- the loads run in child processes of ``--batch`` loads each (``--child``), so that a crash
  is counted with its exit status and the Python stacks ``faulthandler`` printed, and the run
  goes on with the next batch;
- even-numbered loads go into a fresh store, odd-numbered ones replace the dataset the load
  before wrote (the journal and the snapshot readers see meanwhile);
- ``--readers`` threads query the same store while each load runs: the dataset graph's quad
  count by SPARQL (it must be 0 or the full count, never a part) and a keyword search; any
  exception is an error;
- every load's report must give the same quad and node counts as the first;
- every ``--check-every``-th store is closed and checked (``labbrain check``'s run_check);
  any problem is counted.

Results go to ``bench/results/stress-load.md`` and ``.json``.

Usage::

    python bench/bench_stress_load.py \\
        --input ../shared/data/dg-social-media-polarization.jsonld:2000 \\
        --export-nodes 20000 --export-loads 200
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_load import ensure_export, machine_info, source_revision
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
OUT_DIR = BENCH_DIR / "out"
Record = dict[str, Any]
#: Words the readers search for (common in discourse graphs, so every search has hits).
WORDS = ("claim", "evidence", "the", "cells", "social")


# --------------------------------------------------------------------------------------------
# The child: one batch of loads
# --------------------------------------------------------------------------------------------
class Readers:
    """Threads that query ``brain`` until stopped, checking that the dataset graph is never
    seen half-written (its quad count is 0 or ``full``, when that is known)."""

    def __init__(self, brain: Any, graph: str | None, full: int | None, count: int) -> None:
        self.brain = brain
        self.graph = graph
        self.full = full
        self.stop = threading.Event()
        self.reads = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(count)
        ]

    def __enter__(self) -> Readers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _run(self, number: int) -> None:
        from labbrain.index.search_query import SearchQuery

        turn = number
        while not self.stop.is_set():
            turn += 1
            try:
                if turn % 2 == 0 and self.graph is not None:
                    seen = self.brain.store.count(self.graph)  # a SPARQL COUNT
                    if seen not in (0, self.full) and self.full is not None:
                        self._error(f"dataset graph seen with {seen} of {self.full} quads")
                else:
                    self.brain.search(SearchQuery(WORDS[turn % len(WORDS)], limit=5))
            except Exception as error:  # every exception a reader meets is an error
                self._error(f"{type(error).__name__}: {error}")
            with self._lock:
                self.reads += 1

    def _error(self, text: str) -> None:
        with self._lock:
            if len(self.errors) < 20:
                self.errors.append(text)


def run_batch(source: str, loads: int, readers: int, check_every: int, work: Path) -> Record:
    """Load ``source`` ``loads`` times (see the module's doc) and say what went wrong."""
    from labbrain.core import LabBrain
    from labbrain.ops.check import run_check
    from labbrain.settings import Settings

    seconds: list[float] = []
    expected: tuple[int, int] | None = None
    graph: str | None = None
    problems: list[str] = []
    reads = 0
    reader_errors: list[str] = []
    checks = 0
    store = work / "store"
    for number in range(loads):
        if number % 2 == 0:
            shutil.rmtree(store, ignore_errors=True)
        settings = Settings(store=str(store))
        brain = LabBrain(settings)
        try:
            full = expected[0] if expected else None
            with Readers(brain, graph, full, readers) as active:
                started = time.perf_counter()
                report = brain.load(source)
                seconds.append(time.perf_counter() - started)
            reads += active.reads
            reader_errors.extend(active.errors)
        finally:
            brain.close()
        graph = report.graph
        counts = (report.quads, report.nodes)
        if expected is None:
            expected = counts
        elif counts != expected:
            problems.append(f"load {number}: {counts} quads and nodes, expected {expected}")
        if check_every and number % check_every == 0:
            checks += 1
            found = run_check(Settings(store=str(store)))
            if not found.ok:
                bad = [f"{f.check}: {f.detail}" for f in found.findings if f.status == "problem"]
                problems.append(f"load {number}: check found " + "; ".join(bad))
    shutil.rmtree(store, ignore_errors=True)
    return {
        "loads": len(seconds),
        "seconds": seconds,
        "quads": expected[0] if expected else None,
        "nodes": expected[1] if expected else None,
        "reads": reads,
        "reader_errors": reader_errors,
        "checks": checks,
        "problems": problems,
    }


# --------------------------------------------------------------------------------------------
# The parent: batches in child processes
# --------------------------------------------------------------------------------------------
def run_input(
    source: str, loads: int, batch: int, readers: int, check_every: int, tmp: str | None
) -> Record:
    """Every load of one input, in child processes of ``batch`` loads; crashes counted."""
    done: list[Record] = []
    crashes: list[Record] = []
    started = time.perf_counter()
    left = loads
    while left > 0:
        size = min(batch, left)
        left -= size
        with tempfile.TemporaryDirectory(prefix="labbrain-stress-", dir=tmp) as work:
            argv = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                source,
                "--loads",
                str(size),
                "--readers",
                str(readers),
                "--check-every",
                str(check_every),
                "--work",
                work,
            ]
            env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
            child = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if child.returncode == 0:
            done.append(json.loads(child.stdout.strip().splitlines()[-1]))
        else:
            crashes.append(
                {
                    "returncode": child.returncode,
                    "loads_in_batch": size,
                    "stderr_tail": child.stderr[-4000:],
                }
            )
            print(f"  batch ended with status {child.returncode}", file=sys.stderr)
        total = sum(len(record["seconds"]) for record in done)
        print(f"  {source}: {total} loads done, {len(crashes)} crash(es)", file=sys.stderr)
    seconds = [s for record in done for s in record["seconds"]]
    return {
        "input": source,
        "loads_asked": loads,
        "loads_done": len(seconds),
        "batch": batch,
        "readers": readers,
        "check_every": check_every,
        "quads": next((r["quads"] for r in done if r["quads"] is not None), None),
        "nodes": next((r["nodes"] for r in done if r["nodes"] is not None), None),
        "crashes": crashes,
        "problems": [p for record in done for p in record["problems"]],
        "reader_errors": [e for record in done for e in record["reader_errors"]],
        "reads": sum(record["reads"] for record in done),
        "checks": sum(record["checks"] for record in done),
        "load_seconds_median": statistics.median(seconds) if seconds else None,
        "load_seconds_max": max(seconds) if seconds else None,
        "wall_seconds": time.perf_counter() - started,
    }


def render_markdown(result: Record) -> str:
    """The result as the Markdown page in bench/results."""
    machine = result["machine"]
    lines = [
        "# Stress run: consecutive loads",
        "",
        f"- Date: {result['date']}; {result['wall_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {machine['cpu']}; {machine['cores']} cores; RAM {machine['ram_gb']:.1f} GB",
        f"- OS: {machine['os']}; Python {machine['python']}",
        f"- Versions: labbrain {machine['versions']['labbrain']}, pyoxigraph "
        f"{machine['versions']['pyoxigraph']}; source commit "
        f"{(result['source'].get('commit') or 'unknown')[:12]}"
        + (" (src modified)" if result["source"].get("src_modified") else ""),
        "",
        "Each input is loaded again and again, in child processes of a batch of loads each: "
        "even-numbered loads into a fresh store, odd-numbered ones replacing the dataset of "
        "the load before, with reader threads querying the store during every load (the "
        "dataset's quad count must be 0 or the full count; a search must not fail).",
        "",
        "| input | loads | quads | nodes | readers | reads | checks | crashes | problems "
        "| reader errors | load s (median) | load s (max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in result["inputs"]:
        lines.append(
            f"| `{entry['input']}` | {entry['loads_done']:,} of {entry['loads_asked']:,} "
            f"| {entry['quads'] or 0:,} | {entry['nodes'] or 0:,} | {entry['readers']} "
            f"| {entry['reads']:,} | {entry['checks']:,} | {len(entry['crashes'])} "
            f"| {len(entry['problems'])} | {len(entry['reader_errors'])} "
            f"| {_seconds(entry['load_seconds_median'])} | {_seconds(entry['load_seconds_max'])} |"
        )
    for entry in result["inputs"]:
        for crash in entry["crashes"]:
            lines += [
                "",
                f"## Crash: `{entry['input']}`, exit status {crash['returncode']}",
                "",
                "```",
                crash["stderr_tail"].rstrip(),
                "```",
            ]
        for text in entry["problems"][:20] + entry["reader_errors"][:20]:
            lines.append(f"- `{entry['input']}`: {text}")
    return "\n".join(lines) + "\n"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="FILE:LOADS",
        help="an input and how many times to load it (repeatable)",
    )
    parser.add_argument("--export-nodes", type=int, default=0, help="also a generated export")
    parser.add_argument("--export-loads", type=int, default=200)
    parser.add_argument("--batch", type=int, default=100, help="loads per child process")
    parser.add_argument("--readers", type=int, default=2, help="reader threads per load")
    parser.add_argument("--check-every", type=int, default=10, help="0: never check")
    parser.add_argument("--tmp-dir", help="where the stores go (default: the system's)")
    parser.add_argument("--no-write", action="store_true", help="print, write no result files")
    parser.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--loads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        faulthandler.enable(all_threads=True)
        record = run_batch(args.child, args.loads, args.readers, args.check_every, Path(args.work))
        print(json.dumps(record))
        return 0
    inputs: list[tuple[str, int]] = []
    for text in args.input:
        path, _, count = text.rpartition(":")
        inputs.append((path, int(count)))
    if args.export_nodes:
        export = ensure_export(args.export_nodes, 0, "2025-12", OUT_DIR)
        inputs.append((export["path"], args.export_loads))
    if not inputs:
        raise SystemExit("nothing to load: give --input FILE:LOADS or --export-nodes N")
    started = time.perf_counter()
    result: Record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/bench_stress_load.py " + " ".join(sys.argv[1:]),
        "machine": machine_info(args.tmp_dir),
        "source": source_revision(),
        "inputs": [
            run_input(path, loads, args.batch, args.readers, args.check_every, args.tmp_dir)
            for path, loads in inputs
        ],
    }
    result["wall_seconds"] = time.perf_counter() - started
    page = render_markdown(result)
    print(page)
    if not args.no_write:
        write_result(RESULTS_DIR / "stress-load.json", json.dumps(result, indent=2) + "\n")
        write_result(RESULTS_DIR / "stress-load.md", page)
    failed = any(
        entry["crashes"]
        or entry["problems"]
        or entry["reader_errors"]
        or entry["loads_done"] != entry["loads_asked"]
        for entry in result["inputs"]
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
