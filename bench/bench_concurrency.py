"""Many assistants at once: latency, throughput and exactness of concurrent MCP clients.

What it does (the workload is ``concurrency_mix.py``, the same as ``tests/ingest/test_load.py``):

1. writes a synthetic 20,000-node export (``generate.write_export``, seeded) and loads it
   with ``labbrain load`` into a fresh store;
2. scenario ``http``: starts ``labbrain serve --mcp`` on a copy of the store and runs 8 MCP
   clients (streamable HTTP) for 60 s;
3. scenario ``endpoint``: starts ``labbrain serve --allow-update`` on another copy and runs 8
   ``labbrain mcp --endpoint .../sparql`` stdio servers (one per client) for 60 s, every
   write going through the endpoint with the update token;
4. each client loops reads (search_nodes, get_node, get_node_neighborhood, find_path) and
   writes (log_finding, store_memory, add_proposition) with unique idempotency keys, 10% of
   the writes sent twice (again after the answer, or at once from another client);
5. reads back what the store holds (through the tools and with SPARQL) and reports, per
   scenario and tool, p50 / p99 latency and calls per second, and the errors, lost writes
   and duplicates, in ``bench/results/concurrency.md`` and ``concurrency.json``.

The clients run in this process (one asyncio loop) on the same machine as the servers: the
figures are what the whole machine gives, load generator included, not a server capacity.

Usage::

    python bench/bench_concurrency.py [--seconds 60] [--clients 8] [--nodes 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"

sys.path.insert(0, str(BENCH_DIR))
from bench_load import machine_info, source_revision  # noqa: E402
from concurrency_mix import (  # noqa: E402
    READS,
    WRITES,
    Mix,
    Outcome,
    build_store,
    copy_store,
    latency_table,
    pick_targets,
    report_dict,
    run_endpoint,
    run_http,
)
from results_file import write_result  # noqa: E402

SCENARIOS = {
    "http": "8 MCP clients on one `labbrain serve --mcp` (streamable HTTP, one process)",
    "endpoint": "8 `labbrain mcp --endpoint` stdio servers writing through one "
    "`labbrain serve --allow-update` (9 processes, one store)",
}


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
    except OSError:
        return "unknown"


def summarise(outcome: Outcome) -> dict[str, Any]:
    """One scenario's figures: latency per tool, and the exactness report."""
    report = outcome.report
    errors_by_tool: dict[str, int] = {}
    for call in outcome.calls:
        if call.error is not None:
            errors_by_tool[call.tool] = errors_by_tool.get(call.tool, 0) + 1
    return {
        "what": SCENARIOS[outcome.scenario],
        "servers": outcome.servers,
        "clients": outcome.clients,
        "seconds": outcome.seconds,
        "latency": latency_table(outcome.calls, outcome.seconds),
        "errors_by_tool": errors_by_tool,
        "report": report_dict(report),
    }


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    v = m["versions"]
    revision = result["source"].get("commit") or "unknown"
    lines = [
        "# Concurrency benchmark",
        "",
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); "
        f"RAM {m['ram_gb']:.1f} GB",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- Versions: labbrain {v['labbrain']}, pyoxigraph {v['pyoxigraph']}; source commit "
        f"{revision[:12]}"
        + (" + local changes in src/" if result["source"].get("src_modified") else ""),
        f"- Data: {result['nodes']:,}-node generated export (seed {result['seed']}), loaded "
        "once; each scenario runs on its own copy of the store",
        f"- Load: {result['clients']} clients per scenario for {result['seconds']:g} s, in this "
        "process (one asyncio loop, mcp SDK client) on the same machine as the servers: the "
        "load generator shares the 2 cores with them",
        f"- Mix: {1 - result['mix']['write_share']:.0%} reads (search_nodes, get_node, "
        "get_node_neighborhood depth 2, find_path up to 3 hops) and "
        f"{result['mix']['write_share']:.0%} writes (log_finding, store_memory, "
        f"add_proposition), each write with its own idempotency key; "
        f"{result['mix']['retry_share']:.0%} of the writes sent twice with the same key "
        "(half again after the answer, half at the same moment from another client); "
        "get_node also records a visit in the active project (a write)",
        f"- Load average at start {result['loadavg_start']}, at end {result['loadavg_end']}",
        "",
        "## Exactness",
        "",
        "| scenario | calls | errors | keys sent | sent twice (at once) | stored (tools) "
        "| stored (SPARQL) | lost | duplicates | replies differing from the first |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["scenarios"].items():
        r = row["report"]
        keys = sum(r["keys"].values())
        lines.append(
            f"| `{name}` | {r['calls']:,} | {r['error_count']} | {keys:,} "
            f"| {r['retried']} ({r['retried_concurrently']}) | {sum(r['by_tools'].values()):,} "
            f"| {sum(r['by_sparql'].values()):,} | {sum(r['lost'].values())} "
            f"| {sum(r['duplicates'].values()) + r['key_record_duplicates']} "
            f"| {len(r['replay_mismatches'])} |"
        )
    lines += [
        "",
        "*keys sent*: distinct idempotency keys (one per write); *stored*: findings, memories "
        "and propositions in the store after the run, counted by the tools (`list_findings`, "
        "`list_domains`, `list_propositions`) and by SPARQL; *lost*: writes answered whose "
        "resource is not in the store; *duplicates*: keys that made two resources, resources "
        "no key made, and keys with two stored results. Proposition sequence numbers and "
        "finding positions given to two resources: "
        + ", ".join(
            f"`{n}` {sum(row['report']['order_collisions'].values())}"
            for n, row in result["scenarios"].items()
        )
        + ".",
        "",
    ]
    for name, row in result["scenarios"].items():
        lines += [
            f"## `{name}`: {row['what']}",
            "",
            f"Servers: {'; '.join(f'`{s}`' for s in row['servers'])}. "
            f"{row['latency']['all']['calls']:,} calls in {row['seconds']:.1f} s.",
            "",
            "| tool | kind | calls | calls/s | p50 ms | p99 ms | errors |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for tool in (*READS, *WRITES, "all"):
            t = row["latency"].get(tool)
            if t is None:
                continue
            kind = "read" if tool in READS else "write" if tool in WRITES else ""
            errors = (
                sum(row["errors_by_tool"].values())
                if tool == "all"
                else row["errors_by_tool"].get(tool, 0)
            )
            lines.append(
                f"| `{tool}` | {kind} | {t['calls']:,} | {t['per_second']:.1f} "
                f"| {t['p50_ms']:.0f} | {t['p99_ms']:.0f} | {errors} |"
            )
        lines.append("")
    lines += [
        "Latency is per call, from the client's send to its parsed answer (validated "
        "against the tool's output schema), retries and concurrent sends included; calls/s is "
        "calls answered divided by the run's wall time (from the common start to the last "
        "answer). p99 is the value at rank 0.99 n.",
        "",
        "What the two scenarios cost: over `/mcp` one process holds the store, reads run on "
        "threads beside each other, and writes of the process are serialised by its writer "
        "lock. Through the endpoint every read and write is SPARQL over HTTP to `labbrain "
        "serve`, and each agent write is a conditional update on the store's write stamp: "
        "when another process's write lands between a write's reads and its update, the "
        "write is planned again (with a growing random pause), so writes queue behind each "
        "other across the 8 processes; that is the price of exactness there (without the "
        "condition, concurrent sends of one key each wrote their own resource).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--scenarios", default="http,endpoint", help="comma-separated: http, endpoint"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    started = datetime.now(UTC)
    clock = time.monotonic()
    load_start = loadavg()
    mix = Mix(seconds=args.seconds)
    work = Path(tempfile.mkdtemp(prefix="labbrain-bench-concurrency-"))
    try:
        store = work / "store"
        build_store(store, args.nodes, seed=args.seed, work=work)
        targets = pick_targets(store)
        scenarios: dict[str, Any] = {}
        for name in args.scenarios.split(","):
            run = {"http": run_http, "endpoint": run_endpoint}[name]
            scratch = work / name
            scratch.mkdir()
            copy = copy_store(store, scratch / "store")
            outcome = asyncio.run(run(copy, scratch, targets, mix, args.clients))
            scenarios[name] = summarise(outcome)
            every = scenarios[name]["latency"]["all"]
            report = scenarios[name]["report"]
            print(
                f"{name:9} {every['calls']:6,} calls {every['per_second']:6.1f}/s  p50 "
                f"{every['p50_ms']:6.0f} ms  p99 {every['p99_ms']:6.0f} ms  errors "
                f"{report['error_count']}  exact {report['clean']}",
                flush=True,
            )
        result = {
            "started": started.isoformat(timespec="seconds"),
            "elapsed_seconds": time.monotonic() - clock,
            "command": shlex.join(["python", "bench/bench_concurrency.py", *sys.argv[1:]]),
            "machine": machine_info(str(work)),
            "source": source_revision(),
            "nodes": args.nodes,
            "seed": args.seed,
            "clients": args.clients,
            "seconds": args.seconds,
            "mix": {"write_share": mix.write_share, "retry_share": mix.retry_share},
            "loadavg_start": load_start,
            "loadavg_end": loadavg(),
            "scenarios": scenarios,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_result(args.out / "concurrency.json", json.dumps(result, indent=2) + "\n")
    write_result(args.out / "concurrency.md", render(result) + "\n")
    print(f"wrote {args.out / 'concurrency.md'}")


if __name__ == "__main__":
    main()
