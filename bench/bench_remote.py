"""Remote-store benchmark: the same loads and reads on the embedded store and on a real
Oxigraph server (``oxigraph serve``), side by side in one run.

For each size N it generates (or reuses) ``bench/out/dg-N.jsonld`` with ``generate.py`` and
times, each on a fresh store (a new directory, or a new server over a new directory):

``embedded``
    ``LabBrain(Settings(store=DIR)).load(FILE)``.
``remote gsp``
    the same load with ``--endpoint .../query --gsp-endpoint .../store``: the data goes to a
    staging graph by Graph Store Protocol POSTs, then one update moves it into place.
``remote insert``
    the same without a GSP endpoint: the data goes by chunked ``INSERT DATA`` updates.
``remote reload``
    loading the same file again over GSP (the commit also drops the old graph).

and then, on each store, the median of 20 ``stats()`` calls (four template queries) and of
20 ``get_node`` tool calls. Methods rotate between rounds. Results go to ``remote.json`` in
``bench/results/``.

This script writes the whole of ``bench/results/remote.md`` (``remote_report.write_markdown``):
its own section from ``remote.json``, and the 1,000,000-node section from the
``remote-scale-BACKEND.json`` files that ``bench_scale.py --backend BACKEND`` writes (the
MCP read tools over ten labs loaded into an Oxigraph or a Virtuoso server, and the embedded
store for comparison). ``--render`` writes ``remote.md`` again from those files alone.

Usage::

    python bench/bench_remote.py --sizes 1000,20000 --repeat 3 --repeat-large 1
    python bench/bench_remote.py --render
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"
OXIGRAPH = Path(sysconfig.get_path("scripts")) / "oxigraph"

sys.path.insert(0, str(BENCH_DIR))
from generate import write_export  # noqa: E402
from labbrain.core import LabBrain  # noqa: E402
from labbrain.discourse.reader import DiscourseReader  # noqa: E402
from labbrain.settings import Settings  # noqa: E402
from remote_report import METHODS, READS, write_markdown  # noqa: E402
from results_file import write_result  # noqa: E402


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def oxigraph_server(directory: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """An Oxigraph server over ``directory`` on a free loopback port; yields its base URL
    (queries at ``/query``, updates at ``/update``, the Graph Store at ``/store``) and its
    process, and stops it at the end."""
    port = _free_port()
    process = subprocess.Popen(
        [str(OXIGRAPH), "serve", "--location", str(directory), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/query?query=ASK%7B%7D", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("oxigraph did not start") from None
                time.sleep(0.01)
        yield base, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def oxigraph(directory: Path) -> Iterator[str]:
    """An Oxigraph server over ``directory``; yields its base URL."""
    with oxigraph_server(directory) as (base, _process):
        yield base


def _reads(brain: LabBrain, uid: str) -> dict[str, float]:
    reader = DiscourseReader(brain)
    stats, nodes = [], []
    for _ in range(READS):
        started = time.perf_counter()
        brain.stats()
        stats.append(time.perf_counter() - started)
        started = time.perf_counter()
        reader.get_node(uid)
        nodes.append(time.perf_counter() - started)
    return {
        "stats_ms": statistics.median(stats) * 1000,
        "get_node_ms": statistics.median(nodes) * 1000,
    }


def measure(method: str, export: Path, scratch: Path) -> dict[str, Any]:
    """One measurement on a fresh store; seconds of the load (and reload), read latencies."""
    os.environ["XDG_DATA_HOME"] = str(scratch / "xdg")
    with store_settings(method, scratch) as settings, LabBrain(settings) as brain:
        started = time.perf_counter()
        report = brain.load(str(export))
        seconds = time.perf_counter() - started
        result: dict[str, Any] = {"method": method, "seconds": seconds, "quads": report.quads}
        if method == "remote gsp":
            started = time.perf_counter()
            brain.load(str(export))
            result["reload_seconds"] = time.perf_counter() - started
        uid = brain.index.nodes(limit=1)[0][0].uid
        result.update(_reads(brain, uid))
    return result


@contextmanager
def store_settings(method: str, scratch: Path) -> Iterator[Settings]:
    if method == "embedded":
        yield Settings(store=str(scratch / "store"))
        return
    with oxigraph(scratch / "oxigraph") as base:
        gsp = base + "/store" if method == "remote gsp" else None
        yield Settings(endpoint=base + "/query", gsp_endpoint=gsp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-large", type=int, default=1, help="rounds for N >= 20,000")
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: write remote.md again from remote.json and remote-scale-*.json",
    )
    args = parser.parse_args(argv)
    if args.render:
        print(write_markdown(RESULTS_DIR), end="")
        return 0
    for name in [n for n in os.environ if n.startswith("LABBRAIN_")]:
        del os.environ[name]
    OUT_DIR.mkdir(exist_ok=True)
    RESULTS_DIR.mkdir(exist_ok=True)
    started = time.time()
    load_at_start = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for n in [int(s) for s in args.sizes.split(",")]:
        export = OUT_DIR / f"dg-{n}.jsonld"
        if not export.exists():
            write_export(export, n, seed=0)
        rounds = args.repeat_large if n >= 20_000 else args.repeat
        for number in range(rounds):
            order = METHODS[number % 3 :] + METHODS[: number % 3]
            for method in order:
                with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
                    row = measure(method, export, Path(scratch))
                row.update(n=n, round=number + 1)
                rows.append(row)
                print(json.dumps(row), flush=True)
    write_results(rows, args, time.time() - started, load_at_start)
    return 0


def write_results(
    rows: list[dict[str, Any]], args: argparse.Namespace, seconds: float, load: tuple[float, ...]
) -> None:
    """Write ``remote.json`` (this run: its description and rows) and ``remote.md`` again."""
    data = {
        "benchmark": "remote",
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": seconds,
        "command": f"python bench/bench_remote.py --sizes {args.sizes} --repeat {args.repeat}"
        f" --repeat-large {args.repeat_large}",
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "loadavg_start": list(load),
        "versions": {
            "labbrain": version("labbrain"),
            "pyoxigraph": version("pyoxigraph"),
            "oxigraph": version("oxigraph"),
        },
        "rows": rows,
    }
    write_result(RESULTS_DIR / "remote.json", json.dumps(data, indent=1))
    write_markdown(RESULTS_DIR)


if __name__ == "__main__":
    raise SystemExit(main())
