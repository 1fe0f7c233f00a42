"""Load benchmark: labbrain's full load against raw pyoxigraph and rdflib, side by side.

For each size N this script generates (or reuses) ``bench/out/dg-N.jsonld`` with
``bench/generate.py``, then times three ways of loading it, interleaved round-robin over
several rounds, each measurement in a fresh subprocess with a fresh, empty store directory:

``labbrain``
    ``LabBrain(Settings(store=DIR)).load(FILE)`` and ``close()``: context repair, bulk load,
    analysis and derived triples, text index. The whole job a user waits for.
``floor``
    ``pyoxigraph.Store(DIR).bulk_load(path=FILE, format=RdfFormat.JSON_LD)``, ``flush()`` and
    release: the raw file parsed and written by the same engine, with no labbrain work at all.
``rdflib``
    ``rdflib.Dataset().parse(FILE, format="json-ld")`` in memory, the common pure-Python way.

Timing happens inside each child around the work only (interpreter start-up and imports are
excluded); the child reports its numbers as one JSON line on stdout. Results go to
``bench/results/load.md`` and ``bench/results/load.json``; see ``bench/README.md``.

Usage::

    python bench/bench_load.py --sizes 1000,20000,100000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"
GENERATOR = BENCH_DIR / "generate.py"

METHODS: tuple[str, ...] = ("labbrain", "floor", "rdflib")
"""Methods in the order of the first round; later rounds rotate it (see :func:`round_order`)."""

LARGE_N = 100_000
"""From this size on, ``--repeat-large`` and ``--skip-rdflib-large`` apply."""

TARGET_N = 100_000
TARGET_RATIO = 1.5
"""The target: labbrain's load takes at most this many times the floor's at ``TARGET_N``."""

MB = 1_000_000
"""File and store sizes are reported in MB of 10^6 bytes."""

Record = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Child side: one measurement, run in a fresh interpreter
# --------------------------------------------------------------------------------------------


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


def child_labbrain(file: str, store: str) -> Record:
    """Time ``LabBrain(Settings(store=store)).load(file)`` and ``close()`` on an empty store."""
    from pyoxigraph import Store

    from labbrain.core import LabBrain
    from labbrain.settings import Settings

    gc.collect()
    t0 = time.perf_counter()
    brain = LabBrain(Settings(store=store))
    t1 = time.perf_counter()
    report = brain.load(file)
    t2 = time.perf_counter()
    brain.close()
    t3 = time.perf_counter()
    # Outside the timing: every quad the store holds (dataset + ontology + load record).
    reopened = Store.read_only(str(Path(store) / "oxigraph"))
    store_quads = len(reopened)
    del reopened
    return {
        "seconds": t3 - t0,
        "phases": {"open": t1 - t0, "load": t2 - t1, "close": t3 - t2},
        "quads": report.quads,
        "nodes": report.nodes,
        "indexed": report.indexed,
        "warnings": len(report.warnings),
        "report_seconds": report.seconds,
        "store_quads": store_quads,
    }


def child_floor(file: str, store: str) -> Record:
    """Time a raw pyoxigraph bulk load of ``file`` into an empty on-disk store at ``store``."""
    from pyoxigraph import RdfFormat, Store

    gc.collect()
    t0 = time.perf_counter()
    db = Store(store)
    t1 = time.perf_counter()
    db.bulk_load(path=file, format=RdfFormat.JSON_LD)
    t2 = time.perf_counter()
    db.flush()
    t3 = time.perf_counter()
    quads = len(db)  # a scan: not part of the load, so outside the timed span
    t4 = time.perf_counter()
    del db
    gc.collect()
    t5 = time.perf_counter()
    return {
        "seconds": (t3 - t0) + (t5 - t4),
        "phases": {"open": t1 - t0, "load": t2 - t1, "flush": t3 - t2, "close": t5 - t4},
        "quads": quads,
    }


def child_rdflib(file: str, store: str) -> Record:
    """Time ``rdflib.Dataset().parse(file, format="json-ld")`` (in memory; ``store`` unused)."""
    # Import the JSON-LD parser plugin now, so that its import stays out of the timing.
    import rdflib
    import rdflib.plugins.parsers.jsonld

    del store
    gc.collect()
    t0 = time.perf_counter()
    dataset = rdflib.Dataset()
    dataset.parse(file, format="json-ld")
    t1 = time.perf_counter()
    return {"seconds": t1 - t0, "phases": {"parse": t1 - t0}, "quads": len(dataset)}


CHILDREN: dict[str, Callable[[str, str], Record]] = {
    "labbrain": child_labbrain,
    "floor": child_floor,
    "rdflib": child_rdflib,
}


def run_child(method: str, file: str, store: str) -> int:
    """Run one measurement in this process and print its record as one JSON line."""
    record = CHILDREN[method](file, store)
    record["method"] = method
    record["peak_rss_mb"] = _peak_rss_mb()
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------------------------
# Parent side: inputs, measurements, machine description
# --------------------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks (also warms the page cache)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _load_generator() -> Any:
    """Import ``bench/generate.py`` as a module without touching ``sys.path``."""
    spec = importlib.util.spec_from_file_location("labbrain_bench_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def ensure_export(n_nodes: int, seed: int, variant: str, out_dir: Path) -> Record:
    """Return facts about ``out_dir/dg-N.jsonld``, generating it unless a matching one exists.

    A file is reused when its sidecar ``dg-N.jsonld.meta.json`` names the same N, seed,
    variant and generator source, and the file's SHA-256 still matches the one recorded there.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"dg-{n_nodes}.jsonld"
    meta_path = path.with_name(path.name + ".meta.json")
    wanted = {
        "n_nodes": n_nodes,
        "seed": seed,
        "variant": variant,
        "quirks": True,
        "generator_sha256": sha256_file(GENERATOR),
    }
    if path.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        if all(meta.get(k) == v for k, v in wanted.items()):
            digest = sha256_file(path)
            if digest == meta.get("sha256"):
                return {
                    **wanted,
                    "path": str(path),
                    "bytes": path.stat().st_size,
                    "sha256": digest,
                    "generated": False,
                    "generate_seconds": None,
                }
    generator = _load_generator()
    started = time.perf_counter()
    generator.write_export(path, n_nodes, seed=seed, variant=variant)
    elapsed = time.perf_counter() - started
    digest = sha256_file(path)
    meta = {**wanted, "sha256": digest, "bytes": path.stat().st_size}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return {
        **meta,
        "path": str(path),
        "generated": True,
        "generate_seconds": elapsed,
    }


def disk_usage(path: Path) -> tuple[int, int]:
    """(bytes allocated on disk like ``du``, apparent bytes) of everything under ``path``."""
    allocated = apparent = 0
    seen: set[tuple[int, int]] = set()
    if not path.exists():
        return 0, 0
    candidates = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for item in candidates:
        st = item.lstat()
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        allocated += st.st_blocks * 512
        apparent += st.st_size
    return allocated, apparent


def _clean_env() -> dict[str, str]:
    """The environment for children: no ``LABBRAIN_*`` overrides of the default settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}


def measure(method: str, file: Path, tmp_parent: str | None, timeout: float | None) -> Record:
    """Run one measurement of ``method`` on ``file`` in a fresh child with a fresh store."""
    with tempfile.TemporaryDirectory(prefix="labbrain-bench-", dir=tmp_parent) as tmp:
        store = Path(tmp) / "store"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            method,
            "--file",
            str(file),
            "--store",
            str(store),
        ]
        wall = time.perf_counter()
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=_clean_env(),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {
                "method": method,
                "status": "timeout",
                "timeout_seconds": timeout,
                "child_wall_seconds": time.perf_counter() - wall,
            }
        child_wall = time.perf_counter() - wall
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            return {
                "method": method,
                "status": "error",
                "returncode": done.returncode,
                "error": done.stderr.strip()[-2000:],
                "child_wall_seconds": child_wall,
            }
        record: Record = json.loads(lines[-1])
        record["status"] = "ok"
        record["child_wall_seconds"] = child_wall
        if method != "rdflib":
            allocated, apparent = disk_usage(store)
            record["store_bytes"] = allocated
            record["store_apparent_bytes"] = apparent
            if method == "labbrain":
                record["oxigraph_bytes"] = disk_usage(store / "oxigraph")[0]
                record["index_bytes"] = sum(disk_usage(p)[0] for p in store.glob("index.sqlite*"))
        return record


def round_order(round_index: int, methods: Sequence[str]) -> list[str]:
    """Methods of one round: the list rotated by the round number, so none is always first."""
    if not methods:
        return []
    shift = round_index % len(methods)
    return list(methods[shift:]) + list(methods[:shift])


def _read_proc(path: str, key: str) -> str | None:
    """The value of ``key: value`` in a /proc file, or None."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name.strip() == key:
                    return value.strip()
    except OSError:
        return None
    return None


def _os_name() -> str:
    """Distribution name (from /etc/os-release) and kernel."""
    pretty = None
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    kernel = f"{platform.system()} {platform.release()} {platform.machine()}"
    return f"{pretty} ({kernel})" if pretty else kernel


def _filesystem(path: str) -> str:
    """Filesystem type of the mount holding ``path`` (from /proc/mounts), or ``unknown``."""
    best, fstype = "", "unknown"
    target = os.path.realpath(path)
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount = parts[1].replace("\\040", " ")
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, fstype = mount, parts[2]
    except OSError:
        pass
    return fstype


def _version(distribution: str) -> str:
    """The installed version of ``distribution``."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def _loadavg() -> str | None:
    """The 1, 5 and 15 minute load averages, e.g. ``0.52 0.61 0.70``, or None."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
    except OSError:
        return None


def run_lines(result: Record) -> list[str]:
    """The lines that open a result page: when, which command, on what machine and at which
    commit (``result`` holds ``date``, ``wall_seconds``, ``command``, ``machine`` from
    :func:`machine_info` and ``source`` from :func:`source_revision`)."""
    machine = result["machine"]
    return [
        f"- Date: {result['date']}; {result['wall_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {machine['cpu']}; {machine['cores']} cores; RAM {machine['ram_gb']:.1f} GB",
        f"- OS: {machine['os']}; Python {machine['python']}; labbrain "
        f"{machine['versions']['labbrain']}, pyoxigraph {machine['versions']['pyoxigraph']}; "
        f"source commit {(result['source'].get('commit') or 'unknown')[:12]}"
        + (" (src modified)" if result["source"].get("src_modified") else ""),
    ]


def source_revision() -> Record:
    """The git commit of the source tree and whether ``src/`` has uncommitted changes."""
    root = BENCH_DIR.parent

    def git(*argv: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *argv],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--", "src")
    return {"commit": commit, "src_modified": bool(changes) if changes is not None else None}


def machine_info(tmp_parent: str | None) -> Record:
    """CPU, cores, RAM, OS, Python and library versions of this run."""
    mem_kib = _read_proc("/proc/meminfo", "MemTotal")
    ram_gb = int(mem_kib.split()[0]) * 1024 / 1e9 if mem_kib else None
    tmp = tmp_parent or tempfile.gettempdir()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu": _read_proc("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gb": ram_gb,
        "os": _os_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "versions": {
            "labbrain": _version("labbrain"),
            "pyoxigraph": _version("pyoxigraph"),
            "pyld": _version("PyLD"),
            "rdflib": _version("rdflib"),
        },
        "store_tmp_dir": tmp,
        "store_tmp_fs": _filesystem(tmp),
    }


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _ok(records: list[Record], method: str) -> list[Record]:
    return [r for r in records if r["method"] == method and r["status"] == "ok"]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(size: Record) -> Record:
    """Medians, ratios and rates of one size from its per-round records."""
    records: list[Record] = size["measurements"]
    summary: Record = {"n": size["n"], "rounds": size["rounds"], "file_mb": size["file_bytes"] / MB}
    for method in METHODS:
        ok = _ok(records, method)
        secs = [r["seconds"] for r in ok]
        entry: Record = {
            "runs": len(ok),
            "median_s": _median(secs),
            "min_s": min(secs) if secs else None,
            "max_s": max(secs) if secs else None,
            "statuses": [r["status"] for r in records if r["method"] == method],
        }
        timeouts = [
            r["timeout_seconds"]
            for r in records
            if r["method"] == method and r["status"] == "timeout"
        ]
        if timeouts:
            entry["timeout_seconds"] = max(timeouts)
        if ok:
            entry["quads"] = ok[0]["quads"]
            entry["quads_per_s"] = ok[0]["quads"] / entry["median_s"] if entry["median_s"] else None
            entry["peak_rss_mb"] = _median([r["peak_rss_mb"] for r in ok])
            if "store_bytes" in ok[0]:
                entry["store_mb"] = _median([r["store_bytes"] / MB for r in ok])
        summary[method] = entry
    per_round: list[float] = []
    for index in range(size["rounds"]):
        lb = [r for r in _ok(records, "labbrain") if r["round"] == index]
        fl = [r for r in _ok(records, "floor") if r["round"] == index]
        if lb and fl and fl[0]["seconds"] > 0:
            per_round.append(lb[0]["seconds"] / fl[0]["seconds"])
    summary["ratio_per_round"] = per_round
    summary["ratio_median_of_rounds"] = _median(per_round)
    lb_med, fl_med = summary["labbrain"]["median_s"], summary["floor"]["median_s"]
    summary["ratio_of_medians"] = lb_med / fl_med if lb_med and fl_med else None
    return summary


def assess_target(summaries: list[Record]) -> Record:
    """Whether labbrain was within ``TARGET_RATIO`` x the floor at ``TARGET_N`` in this run."""
    found = [s for s in summaries if s["n"] == TARGET_N]
    base: Record = {"n": TARGET_N, "max_ratio": TARGET_RATIO}
    if not found or found[0]["ratio_median_of_rounds"] is None:
        reason = (
            f"N = {TARGET_N:,} was not in --sizes"
            if not found
            else f"no successful labbrain and floor round at N = {TARGET_N:,}"
        )
        return {**base, "assessed": False, "met": None, "reason": reason}
    summary = found[0]
    ratio = summary["ratio_median_of_rounds"]
    return {
        **base,
        "assessed": True,
        "met": ratio <= TARGET_RATIO,
        "ratio_median_of_rounds": ratio,
        "ratio_of_medians": summary["ratio_of_medians"],
        "rounds": summary["rounds"],
    }


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

MAIN_COLUMNS: tuple[str, ...] = (
    "N",
    "rounds",
    "file MB",
    "labbrain s (median)",
    "floor s (median)",
    "labbrain/floor (median of per-round ratios)",
    "labbrain/floor (ratio of medians)",
    "rdflib s (median)",
    "labbrain quads/s",
    "floor quads/s",
    "store MB labbrain",
    "store MB floor",
)


CONSOLE_HEADERS: dict[str, str] = {
    "labbrain s (median)": "labbrain s\n(median)",
    "floor s (median)": "floor s\n(median)",
    "labbrain/floor (median of per-round ratios)": "labbrain/floor\n(median of\nround ratios)",
    "labbrain/floor (ratio of medians)": "labbrain/floor\n(ratio of\nmedians)",
    "rdflib s (median)": "rdflib s\n(median)",
    "labbrain quads/s": "labbrain\nquads/s",
    "floor quads/s": "floor\nquads/s",
    "store MB labbrain": "store MB\nlabbrain",
    "store MB floor": "store MB\nfloor",
}
"""Shorter, wrapped headers for the console table (the markdown keeps ``MAIN_COLUMNS``)."""


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _rdflib_cell(entry: Record) -> str:
    statuses = entry["statuses"]
    if not statuses:
        return "skipped"
    if entry["median_s"] is not None:
        text = f"{entry['median_s']:.3f}"
        failed = len(statuses) - entry["runs"]
        return f"{text} ({failed} of {len(statuses)} failed)" if failed else text
    if "timeout" in statuses:
        return f"timeout (> {entry['timeout_seconds']:g} s)"
    return "error"


def main_rows(summaries: list[Record]) -> list[list[str]]:
    """Cells of the main table, one row per size."""
    rows = []
    for s in summaries:
        lb, fl = s["labbrain"], s["floor"]
        rows.append(
            [
                f"{s['n']:,}",
                str(s["rounds"]),
                f"{s['file_mb']:.1f}",
                _fmt(lb["median_s"], ".3f"),
                _fmt(fl["median_s"], ".3f"),
                _fmt(s["ratio_median_of_rounds"], ".2f"),
                _fmt(s["ratio_of_medians"], ".2f"),
                _rdflib_cell(s["rdflib"]),
                _fmt(lb.get("quads_per_s"), ",.0f"),
                _fmt(fl.get("quads_per_s"), ",.0f"),
                _fmt(lb.get("store_mb"), ".1f"),
                _fmt(fl.get("store_mb"), ".1f"),
            ]
        )
    return rows


RAW_COLUMNS: tuple[str, ...] = (
    "N",
    "round",
    "slot",
    "method",
    "status",
    "seconds",
    "phases (s)",
    "quads",
    "nodes",
    "indexed",
    "store MB",
    "peak RSS MB",
)


def raw_rows(sizes: list[Record]) -> list[list[str]]:
    """Cells of the per-measurement table, in the order the measurements ran."""
    rows = []
    for size in sizes:
        for r in size["measurements"]:
            ok = r["status"] == "ok"
            phases = ", ".join(f"{k} {v:.3f}" for k, v in r.get("phases", {}).items())
            store = r.get("store_bytes")
            status = r["status"]
            if status == "timeout":
                status = f"timeout (> {r['timeout_seconds']:g} s)"
            rows.append(
                [
                    f"{size['n']:,}",
                    str(r["round"] + 1),
                    str(r["slot"] + 1),
                    r["method"],
                    status,
                    f"{r['seconds']:.3f}" if ok else "—",
                    phases or "—",
                    f"{r['quads']:,}" if ok else "—",
                    f"{r['nodes']:,}" if ok and "nodes" in r else "—",
                    f"{r['indexed']:,}" if ok and r.get("indexed") is not None else "—",
                    f"{store / MB:.1f}" if store is not None else "—",
                    f"{r['peak_rss_mb']:.0f}" if ok else "—",
                ]
            )
    return rows


def target_sentence(target: Record) -> str:
    """One sentence: the target, and whether this run met it."""
    goal = f"labbrain load within {TARGET_RATIO:g}x of the floor at {TARGET_N:,} nodes"
    if not target["assessed"]:
        return f"Target: {goal}. This run: not assessed ({target['reason']})."
    verdict = "met" if target["met"] else "NOT met"
    return (
        f"Target: {goal} (median of per-round labbrain/floor ratios). This run: {verdict}, "
        f"{target['ratio_median_of_rounds']:.2f}x over {target['rounds']} round(s) "
        f"(ratio of medians {target['ratio_of_medians']:.2f}x)."
    )


def _md_table(columns: Sequence[str], rows: list[list[str]]) -> list[str]:
    right = "|".join(
        "---:" if c not in ("method", "status", "phases (s)") else "---" for c in columns
    )
    lines = ["| " + " | ".join(columns) + " |", "|" + right + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _revision(source: Record) -> str:
    """``commit abc1234`` (with ``+ local changes in src/`` when the tree differs)."""
    if not source.get("commit"):
        return "not a git checkout"
    text = f"commit {source['commit'][:12]}"
    return text + " + local changes in src/" if source.get("src_modified") else text


def header_lines(result: Record) -> list[str]:
    """The machine and run description shared by the markdown report and the console."""
    m = result["machine"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    return [
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- Versions: labbrain {v['labbrain']}, pyoxigraph {v['pyoxigraph']}, "
        f"pyld {v['pyld']}, rdflib {v['rdflib']}; source {_revision(result['source'])}",
        f"- Stores in: {m['store_tmp_dir']} ({m['store_tmp_fs']}); "
        f"load average at start {result['loadavg_start']}, at end {result['loadavg_end']}",
    ]


def render_markdown(result: Record) -> str:
    """The full ``load.md`` report."""
    lines = ["# Load benchmark", ""]
    lines += header_lines(result)
    lines += ["", target_sentence(result["target"]), ""]
    lines += _md_table(MAIN_COLUMNS, main_rows(result["summaries"]))
    lines += [
        "",
        "Seconds are medians over rounds, timed inside a fresh child process around the work "
        "only. Quads/s divide each method's own quad count by its median seconds (labbrain "
        "counts the quads of the dataset graph it wrote, including derived triples; the floor "
        "counts every quad of the raw file). Store MB is disk usage (like `du`) of the store "
        "directory after close, in MB of 10^6 bytes. Timings compare only within this run.",
        "",
        "## Inputs",
        "",
    ]
    for size in result["sizes"]:
        f = size["file"]
        how = f"generated in {f['generate_seconds']:.1f} s" if f["generated"] else "reused"
        lines.append(
            f"- N = {size['n']:,}: `{Path(f['path']).name}`, {f['bytes']:,} bytes, seed "
            f"{f['seed']}, variant {f['variant']}, sha256 `{f['sha256']}` ({how})"
        )
    lines += ["", "## Every measurement", ""]
    lines += _md_table(RAW_COLUMNS, raw_rows(result["sizes"]))
    errors = [
        (size["n"], r)
        for size in result["sizes"]
        for r in size["measurements"]
        if r["status"] == "error"
    ]
    if errors:
        lines += ["", "## Errors", ""]
        for n, r in errors:
            lines += [f"- N = {n:,}, round {r['round'] + 1}, {r['method']}:", "", "```"]
            lines += [r.get("error", ""), "```"]
    return "\n".join(lines) + "\n"


def print_console(result: Record, width: int | None) -> None:
    """Print the summary table (and the target verdict) to stdout with rich."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=width or (None if sys.stdout.isatty() else 160))
    for line in header_lines(result):
        console.print(line, markup=False, highlight=False)
    table = Table(title="Load benchmark (seconds are medians over rounds)")
    for column in MAIN_COLUMNS:
        table.add_column(CONSOLE_HEADERS.get(column, column), justify="right")
    for row in main_rows(result["summaries"]):
        table.add_row(*row)
    console.print(table)
    console.print(target_sentence(result["target"]), markup=False, highlight=False)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of integers: {text}"
        ) from None
    if not sizes or any(n < 0 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be non-negative integers")
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options (the ``--child`` ones are internal)."""
    parser = argparse.ArgumentParser(
        prog="bench_load.py",
        description="Time labbrain's load of synthetic discourse-graph exports against raw "
        "pyoxigraph (the floor) and rdflib, in fresh processes, interleaved round-robin.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[1000, 20000, 100000],
        metavar="N,N,...",
        help="page-node counts to benchmark (default 1000,20000,100000)",
    )
    parser.add_argument(
        "--repeat", type=_positive, default=3, metavar="R", help="rounds per size (default 3)"
    )
    parser.add_argument(
        "--repeat-large",
        type=_positive,
        default=1,
        metavar="R",
        help=f"rounds per size for N >= {LARGE_N:,}, for every method (default 1)",
    )
    parser.add_argument(
        "--skip-rdflib-large",
        action="store_true",
        help=f"do not run rdflib for N >= {LARGE_N:,}",
    )
    parser.add_argument(
        "--rdflib-timeout",
        type=float,
        default=900.0,
        metavar="S",
        help="record an rdflib run as 'timeout' after this many seconds (default 900)",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
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
        help="where load.md and load.json are written (bench/results)",
    )
    parser.add_argument(
        "--tmp-dir",
        default=None,
        help="parent directory of the throwaway stores (default: the system temp directory)",
    )
    parser.add_argument("--width", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> Record:
    """Generate the inputs, run every measurement, and return the complete result."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    result: Record = {
        "benchmark": "load",
        "started": started.isoformat(timespec="seconds"),
        "command": shlex.join(sys.orig_argv),
        "options": {
            "sizes": args.sizes,
            "repeat": args.repeat,
            "repeat_large": args.repeat_large,
            "large_n": LARGE_N,
            "skip_rdflib_large": args.skip_rdflib_large,
            "rdflib_timeout": args.rdflib_timeout,
            "seed": args.seed,
            "variant": args.variant,
        },
        "machine": machine_info(args.tmp_dir),
        "source": source_revision(),
        "loadavg_start": _loadavg(),
        "sizes": [],
    }
    for n in args.sizes:
        _log(f"N = {n:,}: preparing {args.out_dir / f'dg-{n}.jsonld'}")
        file_info = ensure_export(n, args.seed, args.variant, args.out_dir)
        file = Path(file_info["path"])
        _log(
            f"  {'generated' if file_info['generated'] else 'reused'} {file_info['bytes']:,} "
            f"bytes, sha256 {file_info['sha256'][:16]}…"
        )
        large = n >= LARGE_N
        rounds = args.repeat_large if large else args.repeat
        methods = [m for m in METHODS if not (m == "rdflib" and large and args.skip_rdflib_large)]
        measurements: list[Record] = []
        for index in range(rounds):
            for slot, method in enumerate(round_order(index, methods)):
                timeout = args.rdflib_timeout if method == "rdflib" else None
                record = measure(method, file, args.tmp_dir, timeout)
                record.update(round=index, slot=slot)
                measurements.append(record)
                shown = (
                    f"{record['seconds']:.3f} s, {record['quads']:,} quads"
                    if record["status"] == "ok"
                    else record["status"]
                )
                _log(f"  round {index + 1}/{rounds} {method:<8} {shown}")
        result["sizes"].append(
            {
                "n": n,
                "rounds": rounds,
                "methods": methods,
                "file": file_info,
                "file_bytes": file_info["bytes"],
                "measurements": measurements,
            }
        )
    result["loadavg_end"] = _loadavg()
    result["elapsed_seconds"] = time.perf_counter() - clock
    result["summaries"] = [summarise(size) for size in result["sizes"]]
    result["target"] = assess_target(result["summaries"])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or, with ``--child``, one measurement); return the exit status."""
    args = parse_args(argv)
    if args.child:
        if not args.file or not args.store:
            _log("--child needs --file and --store")
            return 2
        return run_child(args.child, args.file, args.store)
    result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    write_result(
        args.results_dir / "load.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    )
    write_result(args.results_dir / "load.md", render_markdown(result))
    print_console(result, args.width)
    _log(f"wrote {args.results_dir / 'load.md'} and {args.results_dir / 'load.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
