"""``bench/results/remote.md``: the report that ``bench_remote.py`` and ``bench_scale.py
--backend`` write together, rendered from their JSON results in one place.

:func:`write_markdown` writes the whole file: ``bench_remote.py``'s section from
``remote.json`` (:func:`section_lines`) and the 1,000,000-node section from the
``remote-scale-BACKEND.json`` files (:func:`remote_scale_lines`). Both scripts import it from
here, with the constants that their runs and the report share.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench_mcp import CASES, FLOOR_TOOL, MB, _case_name, _describe, _fmt, _left
from results_file import write_result

Record = dict[str, Any]

# --------------------------------------------------------------------------------------------
# bench_remote.py's section: loads and two reads at 1,000 and 20,000 nodes
# --------------------------------------------------------------------------------------------

METHODS = ("embedded", "remote gsp", "remote insert")
"""``bench_remote.py``'s ways to load, in its table's order."""
READS = 20
"""``bench_remote.py``'s calls of each read per measurement (their median is reported)."""


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else None


def section_lines(data: Mapping[str, Any]) -> list[str]:
    """``bench_remote.py``'s section of ``remote.md`` from ``remote.json``: the run, the
    table, the method."""
    rows: list[dict[str, Any]] = data["rows"]
    lines = ["## Loads and two reads at 1,000 and 20,000 nodes (`bench_remote.py`)", ""]
    if "machine" in data:
        m, v = data["machine"], data["versions"]
        lines += [
            f"- Date: {data['finished']}; {data['seconds']:.0f} s in all",
            f"- Command: `{data['command']}`",
            f"- Machine: {m['cpu']}, {m['cores']} cores; {m['platform']}; Python "
            f"{m['python']}; load average at start "
            f"{' '.join(f'{x:.2f}' for x in data['loadavg_start'])}",
            f"- Versions: labbrain {v['labbrain']}, pyoxigraph {v['pyoxigraph']}, "
            f"oxigraph server {v['oxigraph']}; server and client on one machine (loopback)",
            "",
        ]
    lines += [
        "| N | method | rounds | quads | load s (median) | vs embedded | reload s | "
        "stats() ms | get_node ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sorted({r["n"] for r in rows}):
        base = _median([r for r in rows if r["n"] == n and r["method"] == "embedded"], "seconds")
        for method in METHODS:
            chosen = [r for r in rows if r["n"] == n and r["method"] == method]
            if not chosen:
                continue
            load_s = _median(chosen, "seconds") or 0.0
            reload_s = _median(chosen, "reload_seconds")
            lines.append(
                f"| {n:,} | {method} | {len(chosen)} | {chosen[0]['quads']:,} | {load_s:.2f} | "
                f"{load_s / base if base else 0:.1f}x | "
                f"{'' if reload_s is None else f'{reload_s:.2f}'} | "
                f"{_median(chosen, 'stats_ms'):.1f} | {_median(chosen, 'get_node_ms'):.1f} |"
            )
    lines += [
        "",
        "Medians over rounds, timed in one process around `LabBrain.load` (parse, analysis, "
        "index, and for the remote store the staging writes and the commit) and around the "
        f"reads ({READS} calls each, median). The remote stores are fresh `oxigraph serve` "
        "processes over empty directories. Timings compare only within this run.",
    ]
    return lines


def write_markdown(results_dir: Path) -> str:
    """Write ``remote.md`` in ``results_dir`` from the JSON results there: the
    ``remote.json`` of ``bench_remote.py`` and the ``remote-scale-BACKEND.json`` of
    ``bench_scale.py --backend`` (each section only when its results exist); return the
    text."""
    lines = [
        "# Remote store benchmark",
        "",
        "labbrain's remote backend (`--endpoint`, `--gsp-endpoint`) against the embedded "
        "store: loads and two reads at 1,000 and 20,000 nodes on an Oxigraph server "
        "(`bench/bench_remote.py`), and the MCP read tools at 1,000,000 nodes on an Oxigraph "
        "and a Virtuoso server (`bench/bench_scale.py --backend`). This file is written by "
        "both scripts from their JSON results (`python bench/bench_remote.py --render` writes "
        "it again); see `bench/README.md`.",
    ]
    small = results_dir / "remote.json"
    if small.is_file():
        data = json.loads(small.read_text(encoding="utf-8"))
        if isinstance(data, list):  # an older remote.json: the rows alone
            data = {"rows": data}
        lines += ["", *section_lines(data)]
    scale = {
        path.stem.removeprefix("remote-scale-"): json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(results_dir.glob("remote-scale-*.json"))
    }
    if scale:
        lines += ["", *remote_scale_lines(scale)]
    text = "\n".join(lines) + "\n"
    write_result(results_dir / "remote.md", text)
    return text


# --------------------------------------------------------------------------------------------
# bench_scale.py --backend's section: the three stores side by side at 1,000,000 nodes
# --------------------------------------------------------------------------------------------

BACKENDS: tuple[str, ...] = ("embedded", "oxigraph", "virtuoso")
"""The stores ``--backend`` measures, in ``remote.md``'s order."""

WRITE_TIMEOUT_S = 7200
"""``LABBRAIN_ENDPOINT_WRITE_TIMEOUT_SECONDS`` of the remote loads (labbrain's default is
3600): a part carries some 1.5 million quads, and a commit may copy them all once more."""

STORE_LABEL = {
    "embedded": "embedded (`--store`)",
    "oxigraph": "Oxigraph server (`--endpoint`)",
    "virtuoso": "Virtuoso (`--endpoint`)",
}


def _mb(size: Record, *names: str) -> float | None:
    """The bytes on disk of the named parts of a store size, in MB (None if none is there)."""
    found = [size[name]["bytes"] for name in names if name in size]
    return sum(found) / MB if found else None


def _quads(result: Record) -> int:
    return sum(d["quads"] for d in result["datasets"])


def _loaders_peak(result: Record) -> float | None:
    loads = result["loads"]
    if not loads:
        return None
    peak = loads[-1]["loaders_peak_rss_mb_so_far"]
    return peak if peak > result.get("children_peak_rss_mb_before_loads", 0) else None


def remote_run_lines(backend: str, result: Record) -> list[str]:
    """One bullet on one store's run: when, how, on which source, and its warnings."""
    o = result["options"]
    server = result.get("server")
    what = f"{server['name']} ({server['version']}); " if server else ""
    line = (
        f"- {STORE_LABEL.get(backend, backend)}: {what}{result['started']}, "
        f"{result['elapsed_seconds']:.0f} s in all; `{result['command']}`; labbrain "
        f"{_describe(result['source'])}; {o['calls']} calls per case, {o['starts']} starts; "
        f"load average at start {result['loadavg_start']}, before the MCP servers "
        f"{result['loadavg_before_servers']}, at end {result['loadavg_end']}"
    )
    if server and server["settings"]:
        line += "; " + ", ".join(f"{k} = {v:,}" for k, v in server["settings"].items())
    if result.get("checkpoint_seconds") is not None:
        line += f"; sized after a `checkpoint` ({result['checkpoint_seconds']:.1f} s)"
    lines = [line]
    revisions = result["labbrain_source"]
    before, after = revisions.get("before"), revisions.get("after")
    if before is not None and after is not None and before != after:
        lines.append(
            f"  - Warning: the labbrain source changed during labbrain's session "
            f"({_describe(before)} before, {_describe(after)} after)"
        )
    if o["store_reused"]:
        lines.append("  - Warning: the store was reused (`--store`): the load was not measured")
    lines += [f"  - Warning: {problem}" for problem in result["store_problems"]]
    return lines


def remote_load_rows(results: dict[str, Record]) -> list[list[str]]:
    """One row per store: load time, throughput, size on disk, peak RSS."""
    rows = []
    for backend, result in results.items():
        loads = result["loads"] or []
        seconds = [load["seconds"] for load in loads]
        total = sum(seconds) if seconds else None
        quads = _quads(result)
        size = result["store_size"]
        if result.get("server"):
            store_mb, index_mb = _mb(size, "server"), _mb(size, "local index")
        else:
            store_mb, index_mb = _mb(size, "oxigraph"), _mb(size, "index.sqlite", "index.fulltext")
        per_part = (
            f"{min(seconds):.1f} / {statistics.median(seconds):.1f} / {max(seconds):.1f}"
            if seconds
            else "—"
        )
        rows.append(
            [
                STORE_LABEL.get(backend, backend),
                f"{result['nodes']:,}",
                f"{quads:,}",
                f"**{total:,.1f}**" if total else "—",
                per_part,
                f"**{quads / total:,.0f}**" if total else "—",
                _fmt(store_mb, ",.0f"),
                _fmt(index_mb, ",.0f"),
                _fmt(_mb(size, "total"), ",.0f"),
                _fmt(_loaders_peak(result), ",.0f"),
                _fmt(result.get("server_peak_rss_mb"), ",.0f"),
            ]
        )
    return rows


REMOTE_LOAD_COLUMNS: tuple[str, ...] = (
    "store",
    "nodes",
    "quads",
    "load s (sum of parts)",
    "load s per part (min / median / max)",
    "quads/s",
    "RDF store MB",
    "text index MB",
    "total MB",
    "loaders' peak RSS MB",
    "SPARQL server peak RSS MB",
)


def remote_part_lines(results: dict[str, Record]) -> list[str]:
    """Seconds per part and store, with the parts' quads (as the first store records them)."""
    first = next(iter(results.values()))
    datasets = {d["slug"]: d for d in first["datasets"]}
    columns = ["part", "file MB", "quads", *(f"{backend} s" for backend in results)]
    rows = []
    for index, part in enumerate(first["parts"]):
        cells = [
            part["graph"],
            _fmt(part["bytes"], ",.0f", 1 / MB),
            f"{datasets.get(part['graph'], {}).get('quads', 0):,}",
        ]
        for result in results.values():
            loads = result["loads"] or []
            cells.append(_fmt(loads[index]["seconds"] if index < len(loads) else None, ".1f"))
        rows.append(cells)
    return _left(columns, rows)


def remote_tool_lines(results: dict[str, Record]) -> list[str]:
    """p50 and p95 per case and store, the floor, and each MCP server's start and RSS."""
    columns = ["tool"] + [f"{b} {q} ms" for b in results for q in ("p50", "p95")]
    rows = []
    for key, _, _ in CASES:
        cells = [_case_name(key)]
        for result in results.values():
            s = result["summary"]["labbrain"]["tools"].get(key, {})
            cells += [_fmt(s.get("p50_s"), ".1f", 1000), _fmt(s.get("p95_s"), ".1f", 1000)]
        rows.append(cells)
    floor = [f"floor: `{FLOOR_TOOL}` (constant answer)"]
    for result in results.values():
        s = result["summary"]["floor"]["tools"].get(FLOOR_TOOL, {})
        floor += [_fmt(s.get("p50_s"), ".2f", 1000), _fmt(s.get("p95_s"), ".2f", 1000)]
    rows.append(floor)
    server_rows = []
    for backend, result in results.items():
        lb = result["summary"]["labbrain"]
        tools = lb["tools"].values()
        server_rows.append(
            [
                STORE_LABEL.get(backend, backend),
                _fmt(lb["start_median_s"], ".2f"),
                f"{lb['failed_starts']} of {lb['starts']}",
                _fmt(lb["peak_rss_mb"], ",.0f"),
                str(sum(t["errors"] for t in tools)),
                str(sum(t["cut"] for t in tools)),
            ]
        )
    server_columns = (
        "store",
        "start-to-first-answer s (median)",
        "failed starts",
        "MCP server peak RSS MB",
        "errors",
        "answers cut short",
    )
    errors = [
        (backend, key, stats["error_samples"])
        for backend, result in results.items()
        for key, stats in result["summary"]["labbrain"]["tools"].items()
        if stats["errors"]
    ]
    lines = [*_left(columns, rows), "", *_left(server_columns, server_rows)]
    if errors:
        lines += ["", "Errors (first samples):", ""]
        lines += [f"- {backend}, `{key}`: " + "; ".join(s) for backend, key, s in errors]
    return lines


def remote_scale_lines(results: dict[str, Record]) -> list[str]:
    """``remote.md``'s section on the ``remote-scale-BACKEND.json`` results (by backend): the
    machine, each store's run, load and store, and the MCP read tools, side by side."""
    ordered = {b: results[b] for b in BACKENDS if b in results}
    ordered |= {b: r for b, r in results.items() if b not in ordered}
    first = next(iter(ordered.values()))
    o = first["options"]
    m = first["machine"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    lines = [
        f"## The MCP read tools at {first['n']:,} nodes: embedded, Oxigraph server, Virtuoso "
        "(`bench_scale.py --backend`)",
        "",
        f"- Machine: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}; "
        f"{m['os']}; Python {m['python']}; servers and clients on one machine (loopback)",
        f"- labbrain {v['labbrain']}, pyoxigraph {v['pyoxigraph']}, mcp {v['mcp']}",
    ]
    machines = {json.dumps(r["machine"], sort_keys=True) for r in ordered.values()}
    if len(machines) > 1:
        lines.append("- Warning: the stores ran on different machines or versions (see the JSON)")
    missing = [b for b in BACKENDS if b not in ordered]
    if missing:
        lines.append(
            "- No result (not run, or the run failed; a failed run writes none): "
            + ", ".join(f"`--backend {b}`" for b in missing)
        )
    for backend, result in ordered.items():
        lines += remote_run_lines(backend, result)
        if result["n"] != first["n"] or result["options"]["calls"] != o["calls"]:
            lines.append(
                f"  - Warning: {result['n']:,} nodes and {result['options']['calls']} "
                "calls per case, unlike the first store"
            )
    lines += [
        "",
        f"**What this is.** `bench_scale.py`'s run (see `scale.md`) on each store: "
        f"{first['n']:,} nodes as {o['parts']} exports of {o['part_size']:,} nodes "
        f"({o['parts']} labs, `generate.py --seed S --graph lab-I`), each loaded with "
        "`labbrain OPTIONS load FILE` in its own process, one after the other into one store, "
        "then `labbrain OPTIONS mcp` "
        f"(`DATA_PATH` = lab-0's export, already loaded) started {o['starts']} times and driven "
        f"by `bench_mcp.py`'s client with its cases, {o['calls']} calls per case, arguments "
        "drawn from lab-0. OPTIONS is `--store DIR` (embedded) or `--endpoint QUERY_URL "
        "--gsp-endpoint GSP_URL` (remote: each part goes by Graph Store Protocol POSTs into a "
        "staging graph, then one update moves it into place). The servers are fresh "
        "processes on 127.0.0.1 over empty directories: `oxigraph serve` (queries `/query`, "
        "updates `/update`, Graph Store `/store`) and Debian's `virtuoso-t` (`/sparql`, "
        "`/sparql-graph-crud`; started as `tests/virtuoso_server.py` starts the tests' server, "
        "with the buffers and limits above). Every labbrain child runs without outside "
        "`LABBRAIN_*` settings, with `LABBRAIN_ENDPOINT_WRITE_TIMEOUT_SECONDS` = "
        f"{WRITE_TIMEOUT_S} for a remote store, and with `XDG_DATA_HOME` in the run's "
        "directory, where a remote store keeps its local text index "
        "(`labbrain/remote/HASH/`); the MCP server keeps labbrain's default "
        "`LABBRAIN_ENDPOINT_INDEX_REFRESH_SECONDS` (it rechecks the load records at most "
        "every 5 s).",
        "",
        "### Load and store",
        "",
        "Load time is timed around each `labbrain load` process (start-up included) and summed "
        "over the parts; quads are the datasets' as labbrain records them. RDF store: the "
        "store's Oxigraph directory (embedded) or the server's whole database directory "
        "(remote; Virtuoso's log, transaction and temporary files included); text index: "
        "`index.sqlite` and `index.fulltext` (embedded) or the whole local index directory "
        "(remote); total: the store directory (embedded) or both (remote); MB on disk "
        "(blocks allocated), 10^6 bytes. Loaders' peak RSS: the largest `labbrain load` "
        "process; SPARQL server peak RSS: the server's VmHWM at the end (Virtuoso's holds its "
        "buffer pool, up to NumberOfBuffers × 8 KB; embedded: the store lives in the loader "
        "and in the MCP server).",
        "",
        *_left(REMOTE_LOAD_COLUMNS, remote_load_rows(ordered)),
        "",
        "Load seconds per part:",
        "",
        *remote_part_lines(ordered),
        "",
        "### MCP read tools",
        "",
        "Each call timed around `client.call_tool` in one client process (p95 interpolated "
        "between ranks); the floor is `bench_mcp.py`'s trivial server in the same run.",
        "",
        *remote_tool_lines(ordered),
    ]
    return lines
