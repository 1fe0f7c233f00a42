"""MCP benchmark: labbrain's MCP server against the reference Discourse Graph MCP server.

For each size N this script generates (or reuses) ``bench/out/dg-N.jsonld`` with
``bench/generate.py`` and serves it over MCP stdio twice:

``reference``
    the TypeScript reference server (``DiscourseGraphs/discourse-graph-mcp``), built by this
    script outside the repository (``git clone``, ``npm ci``, ``npm run build``) and started as
    ``node DIR/dist/index.js`` with ``DATA_PATH=FILE``. It parses the whole export into memory
    at start-up and answers from in-memory arrays and maps.
``labbrain``
    ``labbrain --store STORE mcp`` with ``DATA_PATH=FILE``, on a store that already holds the
    export (loaded once beforehand with ``labbrain --store STORE load FILE``, not timed), so
    start-up only checks the file's digest and opens the store.

Both servers are driven by the same client, the ``mcp`` SDK's stdio client, with the same
sequence of tool calls whose arguments are drawn deterministically from the export. The
script measures the time from spawning the server until the first ``search_nodes`` answer,
the p50 and p95 latency of each tool, and the server process's peak RSS. Results go to
``bench/results/mcp.md`` and ``bench/results/mcp.json``; see ``bench/README.md``.

Usage::

    python bench/bench_mcp.py --sizes 1000,20000,100000 --calls 30
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, TextContent

from bench_load import (
    _loadavg,
    _md_table,
    _os_name,
    _positive,
    _read_proc,
    _sizes,
    _version,
    ensure_export,
)

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"

REFERENCE_SOURCE = "https://github.com/DiscourseGraphs/discourse-graph-mcp.git"
"""Where the reference server's source is cloned from (a URL or a local git directory)."""

REFERENCE_COMMIT = "a81362027e48350e8d4059208f136e192900b9fc"
"""The reference commit the published results were measured on (``--reference-commit``)."""

REFERENCE_DIR = Path(tempfile.gettempdir()) / "dg-mcp-reference"
"""Default build directory of the reference server, outside the repository."""

IMAGE_HOST = "firebasestorage.googleapis.com"
"""Where the exports' images live; the reference's ``get_node`` downloads from it."""

SERVERS: tuple[str, ...] = ("reference", "labbrain")
"""The two servers, in the order of the first size; later sizes alternate the order."""

TOOLS: tuple[str, ...] = (
    "search_nodes",
    "get_node",
    "get_linked_nodes",
    "get_node_neighborhood",
    "get_researcher_contributions",
    "get_relationships",
    "get_schema",
)
"""The tools timed on both servers, in the order of each round of calls."""

TARGET_N = 100_000
TARGET_SPEEDUP = 10.0
"""search_nodes and get_node_neighborhood p50 must be this many times faster at TARGET_N."""
TARGET_START_S = 2.0
"""labbrain's start-to-first-answer (store already loaded) must stay below this at TARGET_N."""

MB = 1_000_000
"""Memory and answer sizes are reported in MB of 10^6 bytes."""

_STOPWORD_TEXT = """
    about above after again against among and are because been before being below between
    both but can does doing down during each few for from further had has have having her
    here hers him his how into its itself just more most not now off once only other our ours
    out over own same she should some such than that the their theirs them then there these
    they this those through too under until very was were what when where which while who
    whom why will with within without you your yours
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Common English words never used as search terms (they say little about speed)."""

Record = dict[str, Any]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The reference server: clone and build outside the repository
# --------------------------------------------------------------------------------------------


def _run(argv: Sequence[str], cwd: Path | None = None) -> str:
    """Run a build command, echoing its output to stderr; raise if it fails."""
    _log(f"  $ {shlex.join(argv)}")
    done = subprocess.run(
        list(argv), cwd=cwd, capture_output=True, text=True, check=False, timeout=1800
    )
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({done.returncode}):\n{output}")
    return done.stdout.strip()


def source_revision() -> Record:
    """The git commit of labbrain's tree and whether the files it runs from have changed.

    labbrain runs from the working tree, so uncommitted changes to ``src/``, ``queries/``
    (its SPARQL) or ``ontology/`` change what is measured; ``modified`` says whether any exist.
    """
    root = BENCH_DIR.parent
    commit = _git_head(root)
    done = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--", "src", "queries", "ontology"],
        capture_output=True,
        text=True,
        check=False,
    )
    modified = bool(done.stdout.strip()) if done.returncode == 0 else None
    return {"commit": commit, "modified": modified}


def _git_head(directory: Path) -> str | None:
    """The commit checked out in ``directory``, or None if it is not a git work tree."""
    done = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_reference(source: str, commit: str | None, directory: Path) -> Record:
    """Clone, install and build the reference server in ``directory`` unless already built.

    A directory that is a checkout of the wanted commit (any commit when ``commit`` is None)
    with ``dist/index.js`` in it is used as it is. Anything else there is an error: the script
    never deletes a directory it did not create.
    """
    entry = directory / "dist" / "index.js"
    head = _git_head(directory) if directory.exists() else None
    built = head is not None and entry.is_file() and (commit is None or head == commit)
    if not built:
        if directory.exists() and any(directory.iterdir()):
            if head is None:
                raise RuntimeError(f"{directory} exists and is not a git checkout; remove it")
            if commit is not None and head != commit:
                _run(["git", "-C", str(directory), "fetch", "--quiet", "origin"])
                _run(["git", "-C", str(directory), "checkout", "--quiet", commit])
        else:
            directory.parent.mkdir(parents=True, exist_ok=True)
            _run(["git", "clone", "--quiet", source, str(directory)])
            if commit is not None:
                _run(["git", "-C", str(directory), "checkout", "--quiet", commit])
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH; install Node.js 18 or newer")
        has_lock = (directory / "package-lock.json").is_file()
        _run([npm, "ci" if has_lock else "install", "--no-audit", "--no-fund"], cwd=directory)
        _run([npm, "run", "build"], cwd=directory)
        if not entry.is_file():
            raise RuntimeError(f"the build did not produce {entry}")
    package = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    sdk_package = directory / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    sdk_version = (
        json.loads(sdk_package.read_text(encoding="utf-8")).get("version")
        if sdk_package.is_file()
        else None
    )
    return {
        "source": source,
        "directory": str(directory),
        "commit": _git_head(directory),
        "version": package.get("version"),
        "sdk_version": sdk_version,
        "entry": str(entry),
        "built_now": not built,
    }


# --------------------------------------------------------------------------------------------
# Tool arguments, drawn deterministically from the export
# --------------------------------------------------------------------------------------------

_TITLE_PREFIX = re.compile(r"^\[\[[A-Z]{3}\]\]\s*-?\s*")
_WORD = re.compile(r"[A-Za-z]+")


def _search_words(title: str) -> list[str]:
    """The plain words of a title usable as search terms: letters only, 4+ long, no stopwords.

    Words are taken from runs of letters that are whole tokens (``barbed-end`` and ``Arp2/3``
    are left out), so both servers' tokenisers see the same word.
    """
    words = []
    for token in _TITLE_PREFIX.sub("", title).split():
        token = token.strip(".,;:()\"'")
        if _WORD.fullmatch(token) and len(token) >= 4 and token.lower() not in STOPWORDS:
            words.append(token.lower())
    return words


def derive_arguments(path: Path, calls: int, seed: int) -> Record:
    """The argument sequences of every tool (``calls`` each), drawn from the export's nodes.

    Nodes are the page entries both servers treat as discourse nodes (a ``title``, an
    ``@id`` of ``pages:UID``, and not one of the exporter's special types). Uids and creators
    are drawn with one seeded ``random.Random`` stream; search queries are two adjacent plain
    words of a random node's title, so every query matches at least that node.
    """
    graph = json.loads(path.read_bytes())["@graph"]
    special = {"nodeSchema", "relationDef", "relationInstance"}
    nodes = [
        e
        for e in graph
        if isinstance(e, dict)
        and "title" in e
        and str(e.get("@id", "")).startswith("pages:")
        and e.get("@type") not in special
    ]
    del graph
    if not nodes:
        raise RuntimeError(f"{path} has no page nodes")
    rng = random.Random(f"bench-mcp-{seed}")
    uids = [str(e["@id"]).removeprefix("pages:") for e in nodes]
    with_images = {
        uid
        for uid, e in zip(uids, nodes, strict=True)
        if f"https://{IMAGE_HOST}/" in str(e.get("content", ""))
    }
    creators = [str(e["creator"]) for e in nodes if e.get("creator")]
    titled = [w for w in (_search_words(str(e["title"])) for e in nodes) if len(w) >= 2]
    if not titled or not creators:
        raise RuntimeError(f"{path} has no titles to search for or no creators")

    def query() -> str:
        words = rng.choice(titled)
        start = rng.randrange(len(words) - 1)
        return f"{words[start]} {words[start + 1]}"

    plan: dict[str, list[dict[str, Any]]] = {
        "search_nodes": [{"query": query(), "limit": 10} for _ in range(calls)],
        "get_node": [{"uid": rng.choice(uids)} for _ in range(calls)],
        "get_linked_nodes": [{"uid": rng.choice(uids)} for _ in range(calls)],
        "get_node_neighborhood": [{"uid": rng.choice(uids), "depth": 2} for _ in range(calls)],
        "get_researcher_contributions": [{"creator": rng.choice(creators)} for _ in range(calls)],
        "get_relationships": [{"relationshipType": "Supports"} for _ in range(calls)],
        "get_schema": [{} for _ in range(calls)],
    }
    return {
        "plan": plan,
        "nodes": len(nodes),
        "creators": len(set(creators)),
        "get_node_with_images": sum(a["uid"] in with_images for a in plan["get_node"]),
    }


# --------------------------------------------------------------------------------------------
# The server process: pid and memory from /proc
# --------------------------------------------------------------------------------------------


def _children(pid: int) -> dict[int, int]:
    """Child processes of ``pid`` as {child pid: start time in clock ticks}, from /proc."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may contain spaces.
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            found[int(entry.name)] = int(fields[19])
    return found


def _spawned_child(before: dict[int, int]) -> int | None:
    """The newest child of this process that was not among ``before``."""
    new = {pid: start for pid, start in _children(os.getpid()).items() if before.get(pid) != start}
    return max(new, key=lambda pid: new[pid]) if new else None


def _status_mb(pid: int | None, key: str) -> float | None:
    """A ``kB`` field of /proc/PID/status (VmHWM, VmRSS) in MB, or None."""
    if pid is None:
        return None
    value = _read_proc(f"/proc/{pid}/status", key)
    return int(value.split()[0]) * 1024 / MB if value else None


# --------------------------------------------------------------------------------------------
# One server session over MCP stdio
# --------------------------------------------------------------------------------------------


def _text(result: CallToolResult) -> str:
    """The text content of a tool result, concatenated."""
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def _items(tool: str, text: str) -> tuple[int | None, int | None]:
    """(items returned, items matched before any cap) read from a JSON answer, if present.

    The two servers shape their answers differently; this reads the count each one reports
    for the list that makes up most of the answer.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None

    def size(key: str) -> int | None:
        value = data.get(key)
        return len(value) if isinstance(value, list | dict) else None

    # labbrain says ``listed`` (items in the answer) and ``total`` (items matched); the
    # reference server says ``count`` and ``totalNodes``.
    if tool == "get_node_neighborhood":
        total = data.get("listed", data.get("totalNodes"))
        return total, total
    if tool == "get_researcher_contributions":
        shown = size("contributions") if "contributions" in data else size("nodes")
        return shown, data.get("total", data.get("totalNodes", data.get("count")))
    if tool == "get_node":
        return size("linkedNodes"), None
    if tool == "get_schema":
        return size("nodeTypes"), None
    count = data.get("listed", data.get("count"))
    return count, data.get("total", count)


async def call_tools(
    client: Client, plan: dict[str, list[dict[str, Any]]], call_timeout: float
) -> Record:
    """Call every tool of ``TOOLS`` the server offers, round-robin, with the plan's arguments.

    Each call is timed around ``client.call_tool``, which includes the client's validation of
    structured results against the tool's output schema.
    """
    offered = {tool.name for tool in (await client.list_tools()).tools}
    tools = [t for t in TOOLS if t in offered]
    calls: dict[str, list[Record]] = {t: [] for t in tools}
    for index in range(len(plan["search_nodes"])):
        for tool in tools:
            call: Record = {"index": index}
            begin = time.perf_counter()
            try:
                result = await client.call_tool(
                    tool, plan[tool][index], read_timeout_seconds=call_timeout
                )
            except Exception as error:
                call["seconds"] = time.perf_counter() - begin
                call["exception"] = f"{type(error).__name__}: {error}"
            else:
                call["seconds"] = time.perf_counter() - begin
                text = _text(result)
                call["bytes"] = len(text.encode("utf-8"))
                call["items"], call["matched"] = _items(tool, text)
                if result.is_error:
                    call["error"] = text[:300]
            calls[tool].append(call)
    return {
        "tools_offered": sorted(offered),
        "tools_missing": [t for t in TOOLS if t not in offered],
        "calls": calls,
    }


async def run_session(
    server: Record,
    first_args: dict[str, Any],
    plan: dict[str, list[dict[str, Any]]] | None,
    mode: str,
    start_timeout: float,
    call_timeout: float,
    errlog: TextIO,
) -> Record:
    """Start ``server``, time its first answer (``search_nodes`` with ``first_args``), then,
    given a plan, time the tools with :func:`call_tools`; return what was measured.

    The start is timed from just before the spawn until the first answer arrives, so it
    includes the interpreter or runtime start-up, the server's own start-up, the protocol
    handshake and the client's tool listing (the SDK lists tools before it checks the first
    result). A start that takes longer than ``start_timeout`` is abandoned (the SDK then
    closes the server's stdin and, failing that, kills it). Peak RSS is read from /proc
    while the server still runs.
    """
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server["env"]
    )
    record: Record = {"status": "timeout", "timeout_seconds": start_timeout}
    before = _children(os.getpid())
    started = time.perf_counter()
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + start_timeout) as scope:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                ready = time.perf_counter()
                first = await client.call_tool("search_nodes", first_args)
                answered = time.perf_counter()
                scope.deadline = math.inf
                pid = _spawned_child(before)
                record = {
                    "status": "ok",
                    "start_s": answered - started,
                    "handshake_s": ready - started,
                    "first_call_s": answered - ready,
                    "first_is_error": first.is_error,
                    "protocol_version": client.protocol_version,
                    "server_name": client.server_info.name if client.server_info else None,
                    "pid": pid,
                    "rss_at_first_answer_mb": _status_mb(pid, "VmRSS"),
                }
                if plan is not None:
                    record.update(await call_tools(client, plan, call_timeout))
                    record["rss_at_end_mb"] = _status_mb(pid, "VmRSS")
                record["peak_rss_mb"] = _status_mb(pid, "VmHWM")
    except Exception as error:
        record["status"] = "error"
        record["error"] = f"{type(error).__name__}: {error}"
    if scope.cancelled_caught:
        record = {"status": "timeout", "timeout_seconds": start_timeout}
    return record


def labbrain_load(store: Path, file: Path) -> Record:
    """``labbrain --store STORE load FILE`` in a child process (setup, reported but not timed)."""
    exe = str(Path(sys.executable).with_name("labbrain"))
    begin = time.perf_counter()
    done = subprocess.run(
        [exe, "--store", str(store), "load", str(file)],
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")},
    )
    if done.returncode != 0:
        raise RuntimeError(f"labbrain load failed ({done.returncode}):\n{done.stderr}")
    return {"seconds": time.perf_counter() - begin, "store": str(store)}


def server_spec(name: str, file: Path, store: Path, reference: Record) -> Record:
    """Command, arguments and extra environment of one server for one export."""
    if name == "labbrain":
        exe = str(Path(sys.executable).with_name("labbrain"))
        return {
            "command": exe,
            "args": ["--store", str(store), "mcp"],
            "env": {"DATA_PATH": str(file)},
        }
    node = shutil.which("node") or "node"
    return {"command": node, "args": [reference["entry"]], "env": {"DATA_PATH": str(file)}}


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise_tool(calls: list[Record]) -> Record:
    """p50, p95, min, max and mean (seconds), errors, and typical answer size of one tool."""
    answered = [c for c in calls if "exception" not in c]
    secs = [c["seconds"] for c in answered]
    items = [c["items"] for c in answered if c.get("items") is not None]
    matched = [c["matched"] for c in answered if c.get("matched") is not None]
    errors = [c for c in calls if "exception" in c or "error" in c]
    return {
        "calls": len(calls),
        "answered": len(answered),
        "p50_s": percentile(secs, 50),
        "p95_s": percentile(secs, 95),
        "min_s": min(secs) if secs else None,
        "max_s": max(secs) if secs else None,
        "mean_s": statistics.fmean(secs) if secs else None,
        "errors": len(errors),
        "error_samples": sorted({c.get("exception") or c["error"] for c in errors})[:3],
        "median_bytes": _median([c["bytes"] for c in answered]),
        "max_bytes": max((c["bytes"] for c in answered), default=None),
        "median_items": _median(items),
        "median_matched": _median(matched),
    }


def summarise_server(runs: list[Record]) -> Record:
    """Start times over every start, and per-tool statistics from the session with calls."""
    ok = [r for r in runs if r["status"] == "ok"]
    starts = [r["start_s"] for r in ok]
    main = next((r for r in ok if "calls" in r), None)
    return {
        "starts": len(runs),
        "failed_starts": len(runs) - len(ok),
        "start_median_s": _median(starts),
        "start_min_s": min(starts) if starts else None,
        "start_max_s": max(starts) if starts else None,
        "handshake_median_s": _median([r["handshake_s"] for r in ok]),
        "rss_at_first_answer_mb": _median([r["rss_at_first_answer_mb"] for r in ok]),
        "peak_rss_mb": main["peak_rss_mb"] if main else None,
        "protocol_version": ok[0]["protocol_version"] if ok else None,
        "tools_missing": main["tools_missing"] if main else list(TOOLS),
        "tools": {t: summarise_tool(c) for t, c in main["calls"].items()} if main else {},
    }


def _ratio(ref: float | None, lb: float | None) -> float | None:
    return ref / lb if ref is not None and lb else None


def assess_targets(sizes: list[Record]) -> Record:
    """The four targets at TARGET_N and whether this run met each of them."""
    found = [s for s in sizes if s["n"] == TARGET_N]
    if not found:
        return {"n": TARGET_N, "assessed": False, "reason": f"N = {TARGET_N:,} not in --sizes"}
    ref, lb = found[0]["summary"]["reference"], found[0]["summary"]["labbrain"]

    def speedup(tool: str) -> Record:
        r = ref["tools"].get(tool, {}).get("p50_s")
        b = lb["tools"].get(tool, {}).get("p50_s")
        value = _ratio(r, b)
        return {
            "goal": f"{tool} p50 at least {TARGET_SPEEDUP:g}x faster than the reference",
            "value": value,
            "met": value is not None and value >= TARGET_SPEEDUP,
        }

    start = lb["start_median_s"]
    rss_lb, rss_ref = lb["peak_rss_mb"], ref["peak_rss_mb"]
    return {
        "n": TARGET_N,
        "assessed": True,
        "search_nodes": speedup("search_nodes"),
        "get_node_neighborhood": speedup("get_node_neighborhood"),
        "start": {
            "goal": f"labbrain start-to-first-answer below {TARGET_START_S:g} s "
            "(store already loaded)",
            "value": start,
            "met": start is not None and start < TARGET_START_S,
        },
        "rss": {
            "goal": "labbrain peak RSS below the reference's",
            "value": _ratio(rss_lb, rss_ref),
            "labbrain_mb": rss_lb,
            "reference_mb": rss_ref,
            "met": rss_lb is not None and rss_ref is not None and rss_lb < rss_ref,
        },
    }


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

COLUMNS: tuple[str, ...] = (
    "tool",
    "reference p50 ms",
    "reference p95 ms",
    "labbrain p50 ms",
    "labbrain p95 ms",
    "speed-up (p50 ref/labbrain)",
    "errors ref / labbrain",
)

SIZE_COLUMNS: tuple[str, ...] = (
    "tool",
    "reference KB (median)",
    "reference items (median)",
    "labbrain KB (median)",
    "labbrain items (median)",
    "labbrain matched (median)",
)


def _fmt(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "—" if value is None else format(value * scale, spec)


def _left(columns: Sequence[str], rows: list[list[str]]) -> list[str]:
    """A markdown table (bench_load's) with the first column left-aligned."""
    lines = _md_table(columns, rows)
    lines[1] = "|---|" + lines[1].split("|", 2)[2]
    return lines


def latency_rows(summary: Record) -> list[list[str]]:
    """One row per tool, then start-to-first-answer and peak RSS."""
    ref, lb = summary["reference"], summary["labbrain"]
    rows = []
    for tool in TOOLS:
        r, b = ref["tools"].get(tool), lb["tools"].get(tool)
        cells = [f"`{tool}`"]
        for stats in (r, b):
            if stats is None:
                cells += ["not offered", "not offered"]
            else:
                cells += [_fmt(stats["p50_s"], ".1f", 1000), _fmt(stats["p95_s"], ".1f", 1000)]
        speedup = _ratio(r["p50_s"], b["p50_s"]) if r and b else None
        cells.append(_fmt(speedup, ".1f") + "x" if speedup is not None else "—")
        cells.append(f"{r['errors'] if r else '—'} / {b['errors'] if b else '—'}")
        rows.append(cells)
    starts = f"{ref['starts']} start(s) each, median"
    rows.append(
        [
            f"start-to-first-answer ({starts})",
            _fmt(ref["start_median_s"], ".0f", 1000),
            _fmt(ref["start_max_s"], ".0f", 1000) + " (max)",
            _fmt(lb["start_median_s"], ".0f", 1000),
            _fmt(lb["start_max_s"], ".0f", 1000) + " (max)",
            _fmt(_ratio(ref["start_median_s"], lb["start_median_s"]), ".1f") + "x",
            f"{ref['failed_starts']} / {lb['failed_starts']}",
        ]
    )
    rows.append(
        [
            "peak RSS MB (VmHWM)",
            _fmt(ref["peak_rss_mb"], ".0f"),
            "",
            _fmt(lb["peak_rss_mb"], ".0f"),
            "",
            _fmt(_ratio(ref["peak_rss_mb"], lb["peak_rss_mb"]), ".1f") + "x",
            "",
        ]
    )
    rows.append(
        [
            "RSS MB at first answer (median)",
            _fmt(ref["rss_at_first_answer_mb"], ".0f"),
            "",
            _fmt(lb["rss_at_first_answer_mb"], ".0f"),
            "",
            _fmt(_ratio(ref["rss_at_first_answer_mb"], lb["rss_at_first_answer_mb"]), ".1f") + "x",
            "",
        ]
    )
    return rows


def answer_rows(summary: Record) -> list[list[str]]:
    """Typical answer size per tool: KB of JSON text and the number of items returned."""
    ref, lb = summary["reference"], summary["labbrain"]
    rows = []
    for tool in TOOLS:
        r, b = ref["tools"].get(tool, {}), lb["tools"].get(tool, {})
        rows.append(
            [
                f"`{tool}`",
                _fmt(r.get("median_bytes"), ",.1f", 1 / 1000),
                _fmt(r.get("median_items"), ",.0f"),
                _fmt(b.get("median_bytes"), ",.1f", 1 / 1000),
                _fmt(b.get("median_items"), ",.0f"),
                _fmt(b.get("median_matched"), ",.0f"),
            ]
        )
    return rows


def target_lines(targets: Record) -> list[str]:
    """The targets at TARGET_N, one bullet each, with this run's verdict."""
    if not targets["assessed"]:
        return [f"Targets at {TARGET_N:,} nodes: not assessed ({targets['reason']})."]
    lines = [f"Targets at {TARGET_N:,} nodes:", ""]
    for key in ("search_nodes", "get_node_neighborhood"):
        t = targets[key]
        lines.append(
            f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} ({_fmt(t['value'], '.1f')}x)"
        )
    t = targets["start"]
    lines.append(f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} ({_fmt(t['value'], '.2f')} s)")
    t = targets["rss"]
    lines.append(
        f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} "
        f"({_fmt(t['labbrain_mb'], '.0f')} MB against {_fmt(t['reference_mb'], '.0f')} MB)"
    )
    return lines


def _describe(revision: Record) -> str:
    """``commit abc1234`` (with ``+ local changes`` when src/, queries/ or ontology/ differ)."""
    commit = revision.get("commit")
    text = f"commit {commit[:12]}" if commit else "not a git checkout"
    return text + " + local changes" if revision.get("modified") else text


def header_lines(result: Record) -> list[str]:
    """The machine and run description."""
    m, ref = result["machine"], result["reference"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    source = _describe(result["source"])
    changed = [
        f"N = {size['n']:,} ran on {_describe(rev)}"
        for size in result["sizes"]
        for rev in size["labbrain_source"].values()
        if rev != result["source"]
    ]
    warning = (
        ["- Warning: the labbrain source changed during the run: " + "; ".join(changed)]
        if changed
        else []
    )
    return [
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}",
        f"- OS: {m['os']}; Python {m['python']}; Node.js {m['node']}",
        f"- labbrain {v['labbrain']} ({source}), pyoxigraph {v['pyoxigraph']}, "
        f"mcp {v['mcp']} (client and labbrain's server)",
        f"- Reference: discourse-graph-mcp {ref['version']}, commit {ref['commit']}, "
        f"@modelcontextprotocol/sdk {ref['sdk_version']}",
        f"- Client mode `{result['options']['mode']}`; {result['options']['calls']} calls per "
        f"tool; load average at start {result['loadavg_start']}, at end {result['loadavg_end']}",
        *warning,
    ]


def difference_lines(result: Record) -> list[str]:
    """What the two servers do differently for the same call (read with the answer sizes)."""
    images = sum(size["arguments"]["get_node_with_images"] for size in result["sizes"])
    calls = result["options"]["calls"] * len(result["sizes"])
    reachable = "resolves" if result["image_host_resolves"] else "does not resolve"
    return [
        "The servers do not do the same work for the same call:",
        "",
        "- Text links: the reference follows only the export's `textRefersToNode` lists; "
        "labbrain also resolves the `[[title]]` wikilinks in each node's content, so "
        "`get_node`, `get_linked_nodes` and `get_node_neighborhood` return more nodes (see the "
        "answer tables).",
        "- Caps: the reference returns every matching relationship or contribution; labbrain "
        "returns at most 100 and reports the total (`matched`).",
        "- Export quirks: the reference keeps the relation whose destination is missing (as "
        "`Unknown`, one more `Supports` relation) and lists every `nodeSchema` entry as a node "
        "type, including the page the exporter typed `nodeSchema`; labbrain drops the "
        "dangling relation and lists only the node types that have nodes (compare the "
        "`get_schema` items).",
        "- Images: the reference's `get_node` downloads the node's first image "
        f"({images} of the {calls} `get_node` calls here); on this machine the image host "
        f"{reachable}. labbrain returns image URLs without fetching them.",
        "- Answers: the reference sends pretty-printed JSON text; labbrain sends structured "
        "content, which the client validates against the tool's output schema (timed), plus "
        "compact JSON text.",
    ]


def render_markdown(result: Record) -> str:
    """The full ``mcp.md`` report."""
    lines = ["# MCP benchmark: labbrain against the reference server", ""]
    lines += header_lines(result)
    lines += ["", *target_lines(result["targets"]), ""]
    lines += [
        "Latencies are wall times around `client.call_tool` in one client process, over the "
        f"same {result['options']['calls']} argument sets per tool for both servers (p95 "
        "interpolated between ranks). Start-to-first-answer runs from the spawn of the server "
        "process to the first `search_nodes` answer: start-up, handshake and the tool listing "
        "the client does before it checks the first result. labbrain starts on a store that "
        "already holds the export. Peak RSS is the server process's VmHWM after the calls. "
        "Speed-up is the reference's p50 divided by labbrain's: below 1x labbrain is slower. "
        "MB and KB are 10^6 and 10^3 bytes.",
        "",
        *difference_lines(result),
    ]
    for size in result["sizes"]:
        s = size["summary"]
        f = size["file"]
        lines += ["", f"## N = {size['n']:,}", ""]
        lines.append(
            f"`{Path(f['path']).name}`: {f['bytes']:,} bytes, sha256 `{f['sha256'][:16]}…`; "
            f"{size['arguments']['nodes']:,} page nodes, {size['arguments']['creators']} "
            f"creators; labbrain load (setup) {size['labbrain_load']['seconds']:.1f} s; "
            f"protocol {s['reference']['protocol_version']} (reference), "
            f"{s['labbrain']['protocol_version']} (labbrain)."
        )
        lines.append("")
        lines += _left(COLUMNS, latency_rows(s))
        lines += ["", "Typical answers (median over the calls):", ""]
        lines += _left(SIZE_COLUMNS, answer_rows(s))
    errors = [
        (size["n"], server, tool, stats["error_samples"])
        for size in result["sizes"]
        for server in SERVERS
        for tool, stats in size["summary"][server]["tools"].items()
        if stats["errors"]
    ]
    failed = [
        (size["n"], server, run.get("error") or run["status"])
        for size in result["sizes"]
        for server in SERVERS
        for run in size["runs"][server]
        if run["status"] != "ok"
    ]
    if errors or failed:
        lines += ["", "## Errors", ""]
        for n, server, text in failed:
            lines.append(f"- N = {n:,}, {server}, start: {text}")
        for n, server, tool, samples in errors:
            lines.append(f"- N = {n:,}, {server}, `{tool}`: " + "; ".join(samples))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(
        prog="bench_mcp.py",
        description="Time labbrain's MCP server against the reference Discourse Graph MCP "
        "server over stdio, with the same client and the same tool calls.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[1000, 20000, 100000],
        metavar="N,N,...",
        help="page-node counts to benchmark (default 1000,20000,100000)",
    )
    parser.add_argument(
        "--calls", type=_positive, default=30, metavar="R", help="calls per tool (default 30)"
    )
    parser.add_argument(
        "--starts",
        type=_positive,
        default=3,
        metavar="K",
        help="server starts per size and server for the start time; the last one also "
        "makes the calls (default 3)",
    )
    parser.add_argument(
        "--reference-dir",
        type=Path,
        default=REFERENCE_DIR,
        help=f"where the reference server is cloned and built (default {REFERENCE_DIR})",
    )
    parser.add_argument(
        "--reference-source",
        default=REFERENCE_SOURCE,
        help="git URL or local git directory of the reference server",
    )
    parser.add_argument(
        "--reference-commit",
        default=REFERENCE_COMMIT,
        help="commit to build ('HEAD' for whatever the clone checks out)",
    )
    parser.add_argument(
        "--mode",
        default="auto",
        help="the client's protocol negotiation: auto (the SDK default) or legacy",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="give up on a server start after S seconds (default 600)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="record a tool call as failed after S seconds (default 300)",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator and argument seed (0)")
    parser.add_argument(
        "--variant",
        choices=("2025-12", "2026-06", "v0"),
        default="2025-12",
        help="exporter @context variant (default 2025-12)",
    )
    parser.add_argument(
        "--out-dir", type=Path, default=OUT_DIR, help="where exports are generated (bench/out)"
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where mcp.md and mcp.json are written (bench/results)",
    )
    parser.add_argument(
        "--tmp-dir",
        default=None,
        help="parent directory of the throwaway labbrain stores (default: system temp)",
    )
    return parser.parse_args(argv)


def _resolves(host: str) -> bool:
    """Whether ``host`` resolves to an address (the reference fetches images from it)."""
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return False
    return True


def machine_info() -> Record:
    """CPU, cores, RAM, OS, Python, Node.js and library versions of this run."""
    mem_kib = _read_proc("/proc/meminfo", "MemTotal")
    node = shutil.which("node")
    node_version = (
        subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
        .stdout.strip()
        .lstrip("v")
        if node
        else "not installed"
    )
    return {
        "cpu": _read_proc("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gb": int(mem_kib.split()[0]) * 1024 / 1e9 if mem_kib else None,
        "os": _os_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "node": node_version,
        "versions": {
            "labbrain": _version("labbrain"),
            "pyoxigraph": _version("pyoxigraph"),
            "mcp": _version("mcp"),
        },
    }


async def measure_size(
    n: int, args: argparse.Namespace, reference: Record, order: Sequence[str], errlog: TextIO
) -> Record:
    """Every start and the tool calls of both servers for one size."""
    _log(f"N = {n:,}: preparing {args.out_dir / f'dg-{n}.jsonld'}")
    file_info = ensure_export(n, args.seed, args.variant, args.out_dir)
    file = Path(file_info["path"])
    derived = derive_arguments(file, args.calls, args.seed)
    plan = derived.pop("plan")
    _log(f"  {derived['nodes']:,} nodes; example query {plan['search_nodes'][0]['query']!r}")
    store_parent = tempfile.mkdtemp(prefix="labbrain-bench-mcp-", dir=args.tmp_dir)
    try:
        store = Path(store_parent) / "store"
        load = labbrain_load(store, file)
        _log(f"  labbrain load (setup): {load['seconds']:.1f} s")
        runs: dict[str, list[Record]] = {}
        revisions: dict[str, Record] = {}
        for name in order:
            spec = server_spec(name, file, store, reference)
            runs[name] = []
            if name == "labbrain":
                revisions["before"] = source_revision()
            for index in range(args.starts):
                last = index == args.starts - 1
                print(f"--- N = {n}, {name}, start {index + 1} ---", file=errlog, flush=True)
                run = await run_session(
                    spec,
                    plan["search_nodes"][0],
                    plan if last else None,
                    args.mode,
                    args.start_timeout,
                    args.call_timeout,
                    errlog,
                )
                runs[name].append(run)
                shown = f"{run['start_s']:.3f} s" if run["status"] == "ok" else run["status"]
                _log(f"  {name:<9} start {index + 1}/{args.starts}: first answer {shown}")
                if last and run["status"] == "ok":
                    for tool, calls in run["calls"].items():
                        stats = summarise_tool(calls)
                        _log(
                            f"    {tool:<28} p50 {_fmt(stats['p50_s'], '.1f', 1000):>9} ms  "
                            f"p95 {_fmt(stats['p95_s'], '.1f', 1000):>9} ms  "
                            f"errors {stats['errors']}"
                        )
                    _log(f"    peak RSS {_fmt(run['peak_rss_mb'], '.0f')} MB")
            if name == "labbrain":
                revisions["after"] = source_revision()
    finally:
        shutil.rmtree(store_parent, ignore_errors=True)
    return {
        "n": n,
        "file": file_info,
        "arguments": {**derived, "plan": plan},
        "labbrain_load": load,
        "order": list(order),
        "labbrain_source": revisions,
        "runs": runs,
        "summary": {name: summarise_server(runs[name]) for name in SERVERS},
    }


def run(args: argparse.Namespace) -> Record:
    """Build the reference, run every size, and return the complete result."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    _log(f"reference server in {args.reference_dir}")
    commit = None if args.reference_commit == "HEAD" else args.reference_commit
    reference = ensure_reference(args.reference_source, commit, args.reference_dir)
    _log(f"  commit {reference['commit']} ({'built now' if reference['built_now'] else 'reused'})")
    result: Record = {
        "benchmark": "mcp",
        "started": started.isoformat(timespec="seconds"),
        "command": shlex.join(sys.orig_argv),
        "options": {
            "sizes": args.sizes,
            "calls": args.calls,
            "starts": args.starts,
            "mode": args.mode,
            "start_timeout": args.start_timeout,
            "call_timeout": args.call_timeout,
            "seed": args.seed,
            "variant": args.variant,
            "tools": list(TOOLS),
        },
        "machine": machine_info(),
        "image_host_resolves": _resolves(IMAGE_HOST),
        "source": source_revision(),
        "reference": reference,
        "loadavg_start": _loadavg(),
        "sizes": [],
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    log_path = args.out_dir / "bench-mcp-servers.log"
    _log(f"server stderr goes to {log_path}")
    with log_path.open("w", encoding="utf-8") as errlog:
        for index, n in enumerate(args.sizes):
            order = SERVERS if index % 2 == 0 else tuple(reversed(SERVERS))
            size = anyio.run(measure_size, n, args, reference, order, errlog)
            result["sizes"].append(size)
    result["loadavg_end"] = _loadavg()
    result["elapsed_seconds"] = time.perf_counter() - clock
    result["targets"] = assess_targets(result["sizes"])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, write ``mcp.md`` and ``mcp.json``, print the report; exit status."""
    args = parse_args(argv)
    result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "mcp.json").write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    markdown = render_markdown(result)
    (args.results_dir / "mcp.md").write_text(markdown, encoding="utf-8")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
