"""Output-cap benchmark: what fitting MCP answers under ``LABBRAIN_MCP_MAX_CHARS`` costs.

Loads a generated export of ``--nodes`` nodes (``bench/generate.py``) into a fresh store in a
temporary directory (or opens ``--store``, a store already holding it), then, in one run:

``under the cap``
    a ``get_node`` answer (a node with few links, well under the cap) called through an
    in-process MCP client on the capped server, median of ``--repeat`` calls, beside the
    median time of the cap's own check of that answer (``fit`` given the tool's text: a
    length comparison, no serialisation) and of one ``json.dumps`` of it, for scale;
``over the cap``
    the answers of the hub node's neighbourhood (depth 4, 1,000 nodes), of 500 relationships
    and of the hub's claim status, each fitted under 4,000 and 50,000 characters
    (``fit_answer`` with the tool's output schema): full size, fitted size, what was kept,
    median seconds of the fitting alone.

Results go to ``bench/results/caps.md`` and ``.json``.

Usage::

    python bench/bench_caps.py --nodes 100000 --repeat 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import write_export  # noqa: E402
from labbrain import __version__  # noqa: E402
from labbrain.core import LabBrain  # noqa: E402
from labbrain.discourse.reader import DiscourseReader  # noqa: E402
from labbrain.index.search_query import SearchQuery  # noqa: E402
from labbrain.mcp.caps import dumps, fit, fit_answer  # noqa: E402
from labbrain.mcp.server import build_server  # noqa: E402
from labbrain.settings import Settings  # noqa: E402
from results_file import write_result  # noqa: E402

CAPS = (4_000, 50_000)


def median_seconds(work: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(brain: LabBrain, repeat: int) -> dict[str, Any]:
    rows = list(
        brain.query(  # type: ignore[union-attr]
            "SELECT ?n (COUNT(?e) AS ?c) WHERE { GRAPH ?g { ?e dg:supports ?n } } GROUP BY ?n "
            "ORDER BY DESC(?c) ?n LIMIT 1"
        )
    )
    hub = str(rows[0]["n"].value).rsplit("/", 1)[1]
    quiet = (
        DiscourseReader(brain).search_nodes(SearchQuery("membrane tension", limit=1)).results[0].uid
    )
    server = build_server(brain)
    server.max_chars = 10**9  # the raw answers, to fit here
    schemas = {t.name: t.output_schema for t in asyncio.run(server.list_tools())}

    async def call_tool(name: str, arguments: dict[str, Any], cap: int) -> tuple[Any, str, float]:
        server.max_chars = cap
        start = time.perf_counter()
        result = await server.call_tool(name, arguments)
        seconds = time.perf_counter() - start
        text = "".join(getattr(c, "text", "") for c in result.content)  # type: ignore[union-attr]
        return result.structured_content, text, seconds  # type: ignore[union-attr]

    # under the cap: get_node of a quiet node
    calls = [asyncio.run(call_tool("get_node", {"uid": quiet}, 50_000)) for _ in range(repeat)]
    data, text, _ = calls[-1]
    under = {
        "tool": "get_node",
        "chars": len(text),
        "callMedianMs": statistics.median(c[2] for c in calls) * 1000,
        "capCheckMedianUs": median_seconds(lambda: fit(data, 50_000, text=text), repeat * 50) * 1e6,
        "jsonDumpsMedianUs": median_seconds(lambda: dumps(data), repeat * 50) * 1e6,
    }

    over = []
    for name, arguments in (
        ("get_node_neighborhood", {"uid": hub, "depth": 4, "limit": 1000}),
        ("get_relationships", {"limit": 500}),
        ("get_claim_status", {"uid": hub}),
    ):
        data, text, seconds = asyncio.run(call_tool(name, arguments, 10**9))
        for cap in CAPS:
            fitted = fit_answer(data, cap, name, schemas[name])
            times = median_seconds(lambda: fit_answer(data, cap, name, schemas[name]), 5)  # noqa: B023
            over.append(
                {
                    "tool": name,
                    "cap": cap,
                    "fullChars": len(text),
                    "fittedChars": len(fitted.text),
                    "kept": fitted.summary(),
                    "toolSeconds": seconds,
                    "fitMedianSeconds": times,
                }
            )
    return {"hub": hub, "node": quiet, "under": under, "over": over}


def write(results: dict[str, Any], out: Path, command: str) -> None:
    under = results["under"]
    lines = [
        "# Output-cap benchmark",
        "",
        f"- Date: {results['date']}",
        f"- Command: `{command}`",
        f"- Machine: {results['machine']}",
        f"- Versions: labbrain {__version__}, Python {platform.python_version()}",
        f"- Load average at the end: {results['loadavg']} (the machine was shared with other "
        "work; absolute figures vary with it)",
        "",
        f"## An answer under the cap ({results['nodes']:,} nodes)",
        "",
        "| tool | answer chars | call median ms | cap check median µs | one json.dumps median µs |",
        "|---|---:|---:|---:|---:|",
        f"| {under['tool']} | {under['chars']:,} | {under['callMedianMs']:.2f} | "
        f"{under['capCheckMedianUs']:.2f} | {under['jsonDumpsMedianUs']:.1f} |",
        "",
        "The check of an answer under the cap compares the length of the text the tool already "
        "built: it costs "
        f"{under['capCheckMedianUs'] / (under['callMedianMs'] * 1000):.4%} of the call.",
        "",
        "## Answers over the cap (hub node " + results["hub"] + ")",
        "",
        "| tool | cap | full chars | fitted chars | kept | tool s | fitting median s |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for row in results["over"]:
        lines.append(
            f"| {row['tool']} | {row['cap']:,} | {row['fullChars']:,} | {row['fittedChars']:,} | "
            f"{row['kept']} | {row['toolSeconds']:.2f} | {row['fitMedianSeconds']:.3f} |"
        )
    write_result(out.with_suffix(".md"), "\n".join(lines) + "\n")
    write_result(out.with_suffix(".json"), json.dumps(results, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--store", help="an existing store holding the generated export")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        if args.store:
            brain = LabBrain(Settings(store=args.store), read_only=True)
        else:
            export = Path(scratch) / f"dg-{args.nodes}.jsonld"
            write_export(export, args.nodes, seed=0)
            brain = LabBrain(Settings(store=str(Path(scratch) / "store")))
            brain.load(str(export))
        with brain:
            results = run(brain, args.repeat)
    results.update(
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        nodes=args.nodes,
        machine=f"{platform.machine()}, {os.cpu_count()} cores",
        loadavg=" ".join(f"{x:.2f}" for x in os.getloadavg()),
    )
    command = "python bench/bench_caps.py " + " ".join(sys.argv[1:])
    write(results, HERE / "results" / "caps", command)
    print((HERE / "results" / "caps.md").read_text())


if __name__ == "__main__":
    main()
