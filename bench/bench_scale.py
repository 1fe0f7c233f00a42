"""Scale benchmark: labbrain's MCP read tools at 1,000,000 nodes, as ten 100,000-node labs.

``bench_mcp.py`` measures labbrain against the reference server at 1,000, 20,000 and 100,000
nodes. This script adds a 1,000,000-node point for labbrain alone. A single 1,000,000-node
export (1.3 GB of JSON) cannot be loaded on a 24 GB machine: the loader parses the whole JSON
document in memory, and its peak RSS passed 20 GB (it was killed above 20 GB after 4 min
38 s; a 100,000-node export takes about 2.5 GB). So the 1,000,000 nodes are ten exports of
100,000 nodes each, ten labs (``bench/generate.py N --seed 100+I --graph lab-I``), loaded one
after the other into one store with ``labbrain --store STORE load FILE``:

- every part's load is timed (as ``bench_mcp.labbrain_load`` times its setup load), with the
  quads the store records for it, the store's size after it and the loaders' peak RSS;
- the store's size on disk is measured (Oxigraph's directory, ``index.sqlite``,
  ``index.fulltext``, everything);
- then labbrain's MCP server (``labbrain --store STORE mcp``, ``DATA_PATH`` = part 0's export,
  started as ``bench_mcp.server_spec`` starts it) and the floor server (``bench_mcp``'s) are
  started ``--starts`` times each and driven by the same client, with the cases of
  ``bench_mcp.CASES`` and arguments drawn by ``bench_mcp.derive_arguments`` from part 0's
  export (lab-0): search runs over the whole store (all ten labs at once), while the
  per-node tools (``get_node``, ``get_linked_nodes``, ``get_node_neighborhood``) start from
  nodes of lab-0 and so walk inside one 100,000-node lab's graph.

Results go to ``bench/results/scale.md`` and ``scale.json``, and the chart
``bench/results/mcp-scaling.png`` is drawn again from ``mcp.json`` (1,000 to 100,000 nodes,
both servers) plus this run's point; see ``bench/README.md``.

With ``--backend`` the same run measures one store of three, for ``remote.md``: ``embedded``
(the store above), ``oxigraph`` (labbrain's remote backend on an ``oxigraph serve`` started
over a fresh directory under ``--tmp-dir``) or ``virtuoso`` (the same on a Virtuoso Open
Source 7 server, started as ``tests/virtuoso_server.py`` starts it, with a larger buffer
pool). Every ``labbrain`` child then selects the store with ``--endpoint QUERY_URL
--gsp-endpoint GSP_URL`` and gets ``XDG_DATA_HOME`` in the run's directory (where a remote
store's local text index lives, so that it is measured); the server's database directory and
that index are the store's size, the server's VmHWM its peak RSS. The result goes to
``remote-scale-BACKEND.json`` (scale.md, scale.json and the chart are left alone), and
``remote.md`` is written again from the results there (``remote_report.write_markdown``).

With ``--vectors`` every node of the loaded store gets a random unit vector under the configured
model's id (as if ``labbrain embed`` had run, int8 search matrix kept), so that ``search_nodes``
without a mode runs hybrid search, the default of a lab with vectors: the query embedded by the
model at every call, every vector searched, fused with the keyword list, re-ranked by links.
The result goes to ``scale-hybrid.md`` and ``scale-hybrid.json``.

Usage::

    python bench/bench_scale.py                                   # the official run
    python bench/bench_scale.py --exports-dir ~/labbrain-bench/m1  # parts already generated
    python bench/bench_scale.py --parts 2 --part-size 2000 --calls 5 --results-dir /tmp/r
    python bench/bench_scale.py --render bench/results/scale.json  # scale.md and chart again
    python bench/bench_scale.py --exports-dir ~/labbrain-bench/m1 --tmp-dir ~/labbrain-bench \\
        --backend virtuoso                                        # one store for remote.md
    python bench/bench_scale.py --render-remote                   # remote.md again
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio

BENCH_DIR = Path(__file__).resolve().parent
TESTS_DIR = BENCH_DIR.parent / "tests"
sys.path.insert(0, str(BENCH_DIR))
from bench_load import _loadavg, _positive, disk_usage  # noqa: E402
from bench_mcp import (  # noqa: E402
    CASE_LABEL,
    CASE_TOOL,
    CASES,
    CHART_NAME,
    FLOOR_COLUMNS,
    FLOOR_MARGIN_S,
    FLOOR_NODE_TOOL,
    FLOOR_TOOL,
    TARGET_CASES,
    StoreLocation,
    _case_name,
    _describe,
    _fmt,
    _left,
    _status_mb,
    derive_arguments,
    floor_comparison,
    labbrain_env,
    labbrain_load,
    machine_info,
    run_starts,
    server_spec,
    source_revision,
    store_options,
    summarise_server,
    write_chart,
    write_floor_server,
)
from bench_remote import OXIGRAPH, oxigraph_server  # noqa: E402
from remote_report import BACKENDS, WRITE_TIMEOUT_S, remote_scale_lines, write_markdown  # noqa: E402
from results_file import write_result  # noqa: E402

OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"
GENERATOR = BENCH_DIR / "generate.py"

PARTS = 10
PART_SIZE = 100_000
SEED_BASE = 100
"""Part I is ``generate.py PART_SIZE --seed SEED_BASE+I --graph lab-I``."""
VARIANT = "2025-12"
"""The exporter @context variant of every part (generate.py's default)."""

TARGET_P50_S = 0.050
"""search_nodes (rare and frequent) and get_node_neighborhood depth 2 (random node and hub)
p50 must stay at or below this at the full scale, each case on its own."""

HYBRID_TARGET_P50_S = 0.100
"""With ``--vectors`` search_nodes runs hybrid (the query embedded, 1,000,000 vectors
searched, fused with the keyword list): its p50 target is semantic search's at 1,000,000
vectors (``bench/results/semantic.md``)."""

VECTOR_BATCH = 4096

SINGLE_EXPORT_NOTE = (
    "A single 1,000,000-node export (1.3 GB of JSON) does not fit in memory on this "
    "24 GB machine: labbrain's loader parses the whole JSON document in memory, and loading "
    "it was killed above 20 GB RSS after 4 min 38 s (a 100,000-node export peaks at about "
    "2.5 GB)."
)
"""Why the full scale is ten parts: measured once, outside this script."""

SERVER_ORDER: tuple[str, ...] = ("floor", "labbrain")
"""The servers, one after the other (never at the same time)."""

DATASETS_QUERY = """SELECT ?slug ?quads ?nodes ?sourceDigest ?loadedAt WHERE {
  GRAPH <urn:labbrain:system> {
    ?graph a lb:Dataset ; lb:slug ?slug ; lb:quadCount ?quads ; lb:nodeCount ?nodes ;
      lb:loadedAt ?loadedAt .
    OPTIONAL { ?graph lb:sourceDigest ?sourceDigest }
  }
} ORDER BY ?slug"""
"""The load record of every dataset (as ``queries/datasets.rq``, fewer columns)."""

VIRTUOSO_BUFFERS = (680_000, 500_000)
"""Virtuoso's ``NumberOfBuffers`` and ``MaxDirtyBuffers`` (8 KB pages: 5.6 GB and 4.1 GB)
for some 15 million quads; the tests' server has 20,000 and 15,000."""

VIRTUOSO_MAX_ROWS = 1_000_000
"""Virtuoso's ``ResultSetMaxRows`` (the tests' server has 100,000); its
``MaxQueryExecutionTime`` is off (the tests' server has 60 s)."""

MB = 1_000_000
KIB = 1024

Record = dict[str, Any]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _labbrain_exe() -> str:
    """The ``labbrain`` executable next to the running Python (as bench_mcp runs it)."""
    return str(Path(sys.executable).with_name("labbrain"))


def _max_json_objects() -> int:
    """labbrain's default ``LABBRAIN_MAX_JSON_OBJECTS`` (a limit per input file)."""
    from labbrain.settings import Settings

    default = Settings.model_fields["max_json_objects"].default
    return int(default)


# --------------------------------------------------------------------------------------------
# The parts: ten exports of ten labs
# --------------------------------------------------------------------------------------------


def part_name(index: int) -> str:
    """The graph name (and dataset slug) of part ``index``: ``lab-I``."""
    return f"lab-{index}"


def file_facts(path: Path) -> Record:
    """Size, SHA-256 and ``{`` count of a file in one pass (labbrain's object-count check
    counts ``{`` bytes too, so this is what it compares with ``LABBRAIN_MAX_JSON_OBJECTS``)."""
    digest = hashlib.sha256()
    braces = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            braces += chunk.count(b"{")
    return {
        "path": str(path),
        "bytes": path.stat().st_size,
        "sha256": digest.hexdigest(),
        "json_objects": braces,
    }


def ensure_part(index: int, part_size: int, seed: int, directory: Path, generate: bool) -> Record:
    """Facts about part ``index`` (``directory/lab-I.jsonld``), generated when allowed and
    missing or stale.

    With ``generate`` (``--out-dir``), a file is reused when its sidecar ``lab-I.jsonld.meta.json``
    names the same size, seed, graph, variant and generator source and the file's SHA-256
    still matches; otherwise ``generate.py`` writes it again. Without it (``--exports-dir``),
    the file must exist and is used as it is.
    """
    graph = part_name(index)
    path = directory / f"{graph}.jsonld"
    meta_path = path.with_name(path.name + ".meta.json")
    wanted = {
        "n_nodes": part_size,
        "seed": seed,
        "graph": graph,
        "variant": VARIANT,
        "generator_sha256": hashlib.sha256(GENERATOR.read_bytes()).hexdigest(),
    }
    base: Record = {"index": index, "graph": graph, "seed": seed, "n_nodes": part_size}
    if not generate:
        if not path.is_file():
            raise RuntimeError(f"{path} is missing (--exports-dir uses existing parts only)")
        return {**base, **file_facts(path), "generated": False, "generate_seconds": None}
    if path.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        if all(meta.get(k) == v for k, v in wanted.items()):
            facts = file_facts(path)
            if facts["sha256"] == meta.get("sha256"):
                return {**base, **facts, "generated": False, "generate_seconds": None}
    directory.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(GENERATOR), str(part_size), "--seed", str(seed)]
    argv += ["--graph", graph, "--variant", VARIANT, "-o", str(path)]
    _log(f"  $ {shlex.join(argv)}")
    began = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - began
    facts = file_facts(path)
    meta_path.write_text(
        json.dumps({**wanted, "sha256": facts["sha256"], "bytes": facts["bytes"]}, indent=2) + "\n",
        encoding="utf-8",
    )
    return {**base, **facts, "generated": True, "generate_seconds": seconds}


# --------------------------------------------------------------------------------------------
# Where the store is: a directory, or a SPARQL server started for the run
# --------------------------------------------------------------------------------------------


@dataclass
class Target:
    """The store under test and how every ``labbrain`` child of the run reaches it."""

    backend: str
    """``embedded``, ``oxigraph`` or ``virtuoso``."""
    store: StoreLocation
    """The store directory, or the global options that select the remote store."""
    database: Path
    """Where its data lies on disk: the store directory, or the server's database directory."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to every labbrain child's environment (which has no outside ``LABBRAIN_*``)."""
    index_home: Path | None = None
    """A remote store's local indexes: ``$XDG_DATA_HOME/labbrain`` of the run's children."""
    server_pid: int | None = None
    """The SPARQL server's process (its VmHWM is its peak RSS)."""
    server: Record | None = None
    """The SPARQL server: name, version, endpoints, the settings it was started with."""
    checkpoint: Callable[[], None] | None = None
    """Writes the server's dirty pages to its database file (Virtuoso), before sizing it."""

    @property
    def remote(self) -> bool:
        return self.server is not None

    def describe(self) -> str:
        """The store for a report: its directory, or its ``labbrain`` options."""
        return shlex.join(store_options(self.store)) if self.remote else str(self.store)


def _server_version(argv: Sequence[str]) -> str:
    """The first line a server prints for ``argv`` (its version), or ``unknown``."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except OSError:
        return "unknown"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return " ".join(lines[:2]) if lines else "unknown"


def _remote_env(xdg: Path) -> dict[str, str]:
    return {
        "XDG_DATA_HOME": str(xdg),
        "LABBRAIN_ENDPOINT_WRITE_TIMEOUT_SECONDS": str(WRITE_TIMEOUT_S),
    }


@contextmanager
def open_target(backend: str, work: Path) -> Iterator[Target]:
    """The store of ``backend`` in the run's directory ``work``: ``work/store`` (embedded), or
    a SPARQL server on 127.0.0.1 over a fresh database directory in ``work``, started here and
    stopped at the end (also on error); the remote store's local index goes to ``work/xdg``."""
    if backend == "embedded":
        yield Target(backend, work / "store", work / "store")
        return
    xdg = work / "xdg"
    xdg.mkdir()
    if backend == "oxigraph":
        database = work / "oxigraph"
        with oxigraph_server(database) as (base, process):
            endpoints = {
                "query": base + "/query",
                "update": base + "/update",
                "gsp": base + "/store",
            }
            yield Target(
                backend,
                ["--endpoint", endpoints["query"], "--gsp-endpoint", endpoints["gsp"]],
                database,
                env=_remote_env(xdg),
                index_home=xdg / "labbrain",
                server_pid=process.pid,
                server={
                    "name": "oxigraph serve",
                    "version": _server_version([str(OXIGRAPH), "--version"]),
                    "endpoints": endpoints,
                    "settings": {},
                },
            )
        return
    if backend != "virtuoso":
        raise ValueError(f"unknown backend {backend!r}")
    sys.path.insert(0, str(TESTS_DIR))
    from virtuoso_server import VIRTUOSO, virtuoso_server

    database = work / "virtuoso"
    with virtuoso_server(
        database,
        max_rows=VIRTUOSO_MAX_ROWS,
        buffers=VIRTUOSO_BUFFERS,
        max_query_seconds=None,
    ) as server:
        endpoints = {"query": server.query, "update": server.update, "gsp": server.store}
        yield Target(
            backend,
            ["--endpoint", server.query, "--gsp-endpoint", server.store],
            database,
            env=_remote_env(xdg),
            index_home=xdg / "labbrain",
            server_pid=server.process.pid,
            server={
                "name": VIRTUOSO,
                "version": _server_version([VIRTUOSO, "-?"]),
                "endpoints": endpoints,
                "settings": {
                    "NumberOfBuffers": VIRTUOSO_BUFFERS[0],
                    "MaxDirtyBuffers": VIRTUOSO_BUFFERS[1],
                    "ResultSetMaxRows": VIRTUOSO_MAX_ROWS,
                    "MaxQueryExecutionTime": 0,
                },
            },
            checkpoint=lambda: server.sql("checkpoint;", timeout=WRITE_TIMEOUT_S),
        )


# --------------------------------------------------------------------------------------------
# The store: load, datasets, size on disk
# --------------------------------------------------------------------------------------------


def _children_peak_rss_mb() -> float:
    """The largest peak RSS of any child process waited for so far (getrusage), in MB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * KIB / MB


def load_parts(target: Target, parts: list[Record]) -> list[Record]:
    """Load every part into the store, one ``labbrain load`` process each, timed per part
    (with :func:`bench_mcp.labbrain_load`); the store's size and the loaders' peak RSS so far
    are read after each part (for a remote store also its local index's size and the
    server's peak RSS so far)."""
    loads = []
    for part in parts:
        before = _loadavg()
        load = labbrain_load(target.store, Path(part["path"]), target.env)
        allocated, apparent = disk_usage(target.database)
        entry: Record = {
            "graph": part["graph"],
            "seconds": load["seconds"],
            "loadavg_before": before,
            "store_bytes_after": allocated,
            "store_apparent_bytes_after": apparent,
            "loaders_peak_rss_mb_so_far": _children_peak_rss_mb(),
        }
        shown = f"store {allocated / MB:,.0f} MB"
        if target.index_home is not None:
            entry["index_bytes_after"] = disk_usage(target.index_home)[0]
            entry["server_peak_rss_mb_so_far"] = _status_mb(target.server_pid, "VmHWM")
            shown = (
                f"server database {allocated / MB:,.0f} MB, local index "
                f"{entry['index_bytes_after'] / MB:,.0f} MB; server peak RSS "
                f"{_fmt(entry['server_peak_rss_mb_so_far'], ',.0f')} MB"
            )
        loads.append(entry)
        _log(
            f"  load {part['graph']}: {load['seconds']:.1f} s; {shown}; loaders' peak RSS "
            f"{_children_peak_rss_mb():,.0f} MB"
        )
    return loads


def store_datasets(target: Target) -> list[Record]:
    """The load record of every dataset in the store (slug, quads, nodes, source digest),
    read with ``labbrain query`` in a child process, which opens the store read-only."""
    done = subprocess.run(
        [
            _labbrain_exe(),
            *store_options(target.store),
            "query",
            DATASETS_QUERY,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=labbrain_env(target.env),
    )
    if done.returncode != 0:
        raise RuntimeError(f"labbrain query failed ({done.returncode}):\n{done.stderr}")
    rows = []
    for binding in json.loads(done.stdout)["results"]["bindings"]:
        row: Record = {key: value["value"] for key, value in binding.items()}
        row["quads"] = int(row["quads"])
        row["nodes"] = int(row["nodes"])
        rows.append(row)
    return rows


def store_size(store: Path) -> Record:
    """Bytes on disk (like ``du``) and apparent bytes of the store and its parts: Oxigraph's
    directory, ``index.sqlite`` with its ``-wal`` and ``-shm`` files, ``index.fulltext``
    (tantivy), everything in the store directory (``total``: a file with several hard links
    counted once) and ``other``, the rest (the bulk-write journal's own files, locks)."""
    groups = {
        "oxigraph": [store / "oxigraph"],
        "index.sqlite": [store / f"index.sqlite{tail}" for tail in ("", "-wal", "-shm")],
        "index.fulltext": [store / "index.fulltext"],
        "total": [store],
    }
    sizes: Record = {}
    for name, paths in groups.items():
        used = [disk_usage(path) for path in paths]
        sizes[name] = {"bytes": sum(a for a, _ in used), "apparent_bytes": sum(b for _, b in used)}
    sizes["other"] = {
        key: sizes["total"][key] - sum(sizes[name][key] for name in list(groups)[:3])
        for key in ("bytes", "apparent_bytes")
    }
    return sizes


def remote_store_size(target: Target) -> Record:
    """Bytes on disk (like ``du``) and apparent bytes of a remote store: the server's database
    directory (``server``: everything the server keeps there, logs and temporary database
    included), labbrain's local indexes (``local index``: ``$XDG_DATA_HOME/labbrain``, the
    per-endpoint ``index.sqlite`` with its ``-wal`` and ``-shm`` files and ``index.fulltext``
    among them) and both (``total``)."""
    assert target.index_home is not None
    homes = sorted((target.index_home / "remote").glob("*"))
    groups = {
        "server": [target.database],
        "index.sqlite": [h / f"index.sqlite{tail}" for h in homes for tail in ("", "-wal", "-shm")],
        "index.fulltext": [h / "index.fulltext" for h in homes],
        "local index": [target.index_home],
    }
    sizes: Record = {}
    for name, paths in groups.items():
        used = [disk_usage(path) for path in paths]
        sizes[name] = {"bytes": sum(a for a, _ in used), "apparent_bytes": sum(b for _, b in used)}
    sizes["total"] = {
        key: sizes["server"][key] + sizes["local index"][key] for key in ("bytes", "apparent_bytes")
    }
    return sizes


def target_size(target: Target) -> Record:
    """The store's size on disk: :func:`store_size` or :func:`remote_store_size`."""
    return remote_store_size(target) if target.remote else store_size(Path(target.database))


# --------------------------------------------------------------------------------------------
# The server sessions
# --------------------------------------------------------------------------------------------


async def measure_servers(
    target: Target,
    export: Path,
    floor_dir: Path,
    plan: dict[str, list[dict[str, Any]]],
    args: argparse.Namespace,
    errlog: TextIO,
) -> tuple[dict[str, list[Record]], Record]:
    """Every start of the floor and of labbrain's server, the last with the calls (as
    ``bench_mcp.measure_size`` runs them); also the labbrain source before and after."""
    runs: dict[str, list[Record]] = {}
    revisions: Record = {}
    for name in SERVER_ORDER:
        if name == "floor":
            # The floor's script lies beside a store path in this run's own directory, never
            # beside the store under test.
            spec = server_spec(name, export, floor_dir / "store", {})
        else:
            spec = server_spec(name, export, target.store, {}, target.env)
            revisions["before"] = source_revision()
        runs[name] = await run_starts(name, spec, plan, args, errlog, name)
        if name == "labbrain":
            revisions["after"] = source_revision()
    return runs, revisions


# --------------------------------------------------------------------------------------------
# Targets and the run
# --------------------------------------------------------------------------------------------


def assess_targets(summary: Record, n: int, hybrid: bool = False) -> Record:
    """Whether each case of ``bench_mcp.TARGET_CASES`` has a p50 at most TARGET_P50_S
    (``search_nodes`` in hybrid mode: HYBRID_TARGET_P50_S)."""
    targets: Record = {"n": n, "limit_s": TARGET_P50_S}
    for key in TARGET_CASES:
        p50 = summary["labbrain"]["tools"].get(key, {}).get("p50_s")
        searched = hybrid and CASE_TOOL[key] == "search_nodes"
        limit = HYBRID_TARGET_P50_S if searched else TARGET_P50_S
        targets[key] = {
            "goal": f"{CASE_TOOL[key]} ({CASE_LABEL[key]}{', hybrid' if searched else ''}) "
            f"p50 at most {limit * 1000:g} ms at {n:,} nodes",
            "value": p50,
            "met": p50 is not None and p50 <= limit,
        }
    return targets


def fill_vectors(store: Path, seed: int) -> Record:
    """Give every node of the embedded ``store`` a random unit vector under the configured
    model's id, as if ``labbrain embed`` had run (and, as it does, keep the int8 search
    matrix beside the vectors); then ``search_nodes`` without a mode searches hybrid. The
    query is still embedded by the model at every call."""
    from bench_semantic import RandomVectors
    from labbrain.core import LabBrain
    from labbrain.discourse.reader import DiscourseReader
    from labbrain.index.embeddings import configured_model_id, provider_for
    from labbrain.index.search_query import SearchQuery
    from labbrain.index.vectors import EmbedPlan, PendingText
    from labbrain.settings import Settings

    with LabBrain(Settings(store=str(store))) as brain:
        model = configured_model_id(brain.settings)
        dimension = provider_for(brain.settings).dimension
        nodes, _ = brain.index.nodes(limit=brain.index.count())
        todo = [PendingText(n.graph, n.iri, "", "random") for n in nodes]
        began = time.perf_counter()
        written = brain.vectors.update(
            RandomVectors(model, dimension, seed),
            EmbedPlan(model, todo, [], 0),
            batch_size=VECTOR_BATCH,
        )
        filled = time.perf_counter() - began
        began = time.perf_counter()
        kept = brain.vectors.keep_snapshot()
        snapshot = time.perf_counter() - began
        mode = DiscourseReader(brain).search_nodes(SearchQuery("membrane tension", limit=1)).mode
    _log(f"  {written:,} random vectors in {filled:.1f} s, int8 matrix kept in {snapshot:.1f} s")
    return {
        "model": model,
        "vectors": written,
        "fill_seconds": filled,
        "snapshot_kept": bool(kept),
        "snapshot_seconds": snapshot,
        "default_mode": mode,
    }


def check_store(datasets: list[Record], parts: list[Record]) -> list[str]:
    """What does not match between the store's datasets and the parts (nothing: empty)."""
    problems = []
    by_slug = {d["slug"]: d for d in datasets}
    for part in parts:
        found = by_slug.get(part["graph"])
        if found is None:
            problems.append(f"the store has no dataset {part['graph']}")
        elif found.get("sourceDigest") not in (None, part["sha256"]):
            problems.append(f"dataset {part['graph']} was loaded from another file")
    extra = sorted(set(by_slug) - {p["graph"] for p in parts})
    if extra:
        problems.append("the store also holds " + ", ".join(extra))
    return problems


def run(args: argparse.Namespace) -> Record:
    """Prepare the parts, load them (unless ``--store``), start the servers, measure."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    reused = args.store is not None
    result: Record = {
        "benchmark": "scale",
        "started": started.isoformat(timespec="seconds"),
        "command": shlex.join(sys.orig_argv),
        "options": {
            "parts": args.parts,
            "part_size": args.part_size,
            "seed_base": args.seed_base,
            "variant": VARIANT,
            "calls": args.calls,
            "starts": args.starts,
            "mode": args.mode,
            "start_timeout": args.start_timeout,
            "call_timeout": args.call_timeout,
            "seed": args.seed,
            "cases": [list(case) for case in CASES],
            "floor_margin_s": FLOOR_MARGIN_S,
            "target_p50_s": TARGET_P50_S,
            "store_reused": reused,
            "vectors": args.vectors,
        },
        "machine": machine_info(),
        "source": source_revision(),
        "loadavg_start": _loadavg(),
        "max_json_objects": _max_json_objects(),
    }
    generate = args.exports_dir is None
    directory = args.exports_dir or args.out_dir / f"scale-{args.part_size}"
    _log(f"{args.parts} parts of {args.part_size:,} nodes in {directory}")
    parts = [
        ensure_part(i, args.part_size, args.seed_base + i, directory, generate)
        for i in range(args.parts)
    ]
    result["parts"] = parts
    export = Path(parts[0]["path"])
    derived = derive_arguments(export, args.calls, args.seed)
    plan = derived.pop("plan")
    _log(
        f"  arguments from {export.name}: {derived['nodes']:,} nodes; hub "
        f"{derived['hub_node']['uid']} ({derived['hub_node']['links']} links), hub claim "
        f"{derived['hub_claim']['uid']} ({derived['hub_claim']['links']} links)"
    )
    backend = args.backend or "embedded"
    if args.backend is not None:
        result["backend"] = backend
    prefix = "labbrain-bench-scale-" + ("" if args.backend is None else f"{backend}-")
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=args.tmp_dir))
    try:
        with ExitStack() as servers:  # a SPARQL server started here stops before work goes
            write_floor_server(work)
            if reused:
                target = Target("embedded", args.store, args.store)
                _log(f"reusing the loaded store {target.store}: the load is not measured")
                result["loads"] = None
            else:
                target = servers.enter_context(open_target(backend, work))
                if target.server is not None:
                    result["server"] = target.server
                    _log(
                        f"{target.server['name']} on {target.server['endpoints']['query']}, "
                        f"database in {target.database}"
                    )
                _log(f"loading {args.parts} parts into {target.describe()}")
                result["children_peak_rss_mb_before_loads"] = _children_peak_rss_mb()
                result["loads"] = load_parts(target, parts)
            result["store"] = target.describe()
            result["datasets"] = store_datasets(target)
            result["store_problems"] = check_store(result["datasets"], parts)
            for problem in result["store_problems"]:
                _log(f"  warning: {problem}")
            if target.remote:
                result["server_peak_rss_mb_after_loads"] = _status_mb(target.server_pid, "VmHWM")
            if target.checkpoint is not None:
                began = time.perf_counter()
                target.checkpoint()
                result["checkpoint_seconds"] = time.perf_counter() - began
                _log(f"  checkpoint: {result['checkpoint_seconds']:.1f} s")
            if args.vectors:
                result["vectors"] = fill_vectors(target.store, args.seed)
            result["store_size"] = target_size(target)
            _log(f"  store {result['store_size']['total']['bytes'] / MB:,.0f} MB on disk")
            args.out_dir.mkdir(parents=True, exist_ok=True)
            log_path = args.out_dir / "bench-scale-servers.log"
            _log(f"server stderr goes to {log_path}")
            result["loadavg_before_servers"] = _loadavg()
            with log_path.open("w", encoding="utf-8") as errlog:
                runs, revisions = anyio.run(
                    measure_servers, target, export, work, plan, args, errlog
                )
            if target.remote:
                result["server_peak_rss_mb"] = _status_mb(target.server_pid, "VmHWM")
            if not reused and args.keep_store:
                kept = args.out_dir / f"scale-store-{args.parts}x{args.part_size}"
                shutil.rmtree(kept, ignore_errors=True)
                shutil.move(str(target.store), kept)
                result["kept_store"] = str(kept)
                _log(f"store kept in {kept}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {name: summarise_server(runs[name]) for name in SERVER_ORDER}
    n = args.parts * args.part_size
    result.update(
        {
            "n": n,
            "nodes": sum(d["nodes"] for d in result["datasets"]),
            "arguments": {**derived, "plan": plan},
            "labbrain_source": revisions,
            "runs": runs,
            "summary": summary,
            "floor": floor_comparison(summary),
            "targets": assess_targets(summary, n, hybrid=with_vectors(result)),
            "loadavg_end": _loadavg(),
            "elapsed_seconds": time.perf_counter() - clock,
        }
    )
    return result


# --------------------------------------------------------------------------------------------
# The chart: bench_mcp's sizes plus this run's point
# --------------------------------------------------------------------------------------------


def write_combined_chart(result: Record, mcp_json: Path, path: Path) -> bool:
    """Draw ``bench_mcp.write_chart`` with the sizes of ``mcp_json`` (labbrain, the reference
    and the floor) and this run's point (labbrain and the floor; no reference) into ``path``.
    False (and nothing written) when ``mcp_json`` is missing or matplotlib is."""
    if not mcp_json.is_file():
        _log(f"{mcp_json} is missing: no chart")
        return False
    mcp = json.loads(mcp_json.read_text(encoding="utf-8"))
    point = {
        "n": result["n"],
        "summary": {
            "labbrain": result["summary"]["labbrain"],
            "floor": result["summary"]["floor"],
            "reference": {"tools": {}, "start_median_s": None},
        },
    }
    sizes = sorted([*mcp["sizes"], point], key=lambda size: size["n"])
    m = result["machine"]
    earlier = ", ".join(f"{size['n']:,}" for size in mcp["sizes"])
    title = (
        "MCP read tools over stdio: p50 against nodes\n"
        f"{earlier}: labbrain and the reference "
        f"(bench_mcp.py, {mcp['started'][:10]});\n{result['n']:,}: labbrain alone, "
        f"{result['options']['parts']} labs of {result['options']['part_size']:,} nodes in one "
        f"store (bench_scale.py, {result['started'][:10]}); "
        f"{result['options']['calls']} calls per case; {m['cpu']}, {m['usable_cores']} cores"
    )
    return write_chart({**mcp, "sizes": sizes}, path, title=title)


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

CASE_COLUMNS: tuple[str, ...] = (
    "tool",
    "p50 ms",
    "p95 ms",
    "min ms",
    "max ms",
    "errors",
    "KB (median)",
    "items (median)",
    "matched (median)",
    "answers cut short",
)


def case_rows(summary: Record) -> list[list[str]]:
    """One row per case of labbrain's session with calls."""
    rows = []
    for key, _, _ in CASES:
        s = summary["labbrain"]["tools"].get(key)
        if s is None:
            rows.append([_case_name(key), "not offered", *([""] * (len(CASE_COLUMNS) - 2))])
            continue
        rows.append(
            [
                _case_name(key),
                _fmt(s["p50_s"], ".1f", 1000),
                _fmt(s["p95_s"], ".1f", 1000),
                _fmt(s["min_s"], ".1f", 1000),
                _fmt(s["max_s"], ".1f", 1000),
                str(s["errors"]),
                _fmt(s["median_bytes"], ",.1f", 1 / 1000),
                _fmt(s["median_items"], ",.0f"),
                _fmt(s["median_matched"], ",.0f"),
                f"{s['cut']} of {s['answered']}",
            ]
        )
    return rows


def load_lines(result: Record) -> list[str]:
    """The per-part load table with the total and the throughput."""
    datasets = {d["slug"]: d for d in result["datasets"]}
    quads_total = sum(d["quads"] for d in datasets.values())
    loads = result["loads"]
    if loads is None:
        lines = [
            f"Load: **not measured** (`--store {result['store']}`: the store was loaded "
            "beforehand and reused, for development only). The store holds:",
            "",
        ]
        rows = [
            [
                part["graph"],
                str(part["seed"]),
                _fmt(part["bytes"], ",.0f", 1 / MB),
                f"{datasets.get(part['graph'], {}).get('quads', 0):,}",
                f"{datasets.get(part['graph'], {}).get('nodes', 0):,}",
            ]
            for part in result["parts"]
        ]
        lines += _left(("part", "seed", "file MB", "quads", "nodes"), rows)
        lines += ["", f"{quads_total:,} quads in the parts' datasets in all."]
        return lines
    rows = []
    for part, load in zip(result["parts"], loads, strict=True):
        quads = datasets.get(part["graph"], {}).get("quads")
        rows.append(
            [
                part["graph"],
                str(part["seed"]),
                _fmt(part["bytes"], ",.0f", 1 / MB),
                _fmt(load["seconds"], ".1f"),
                f"{quads:,}" if quads is not None else "—",
                _fmt(quads / load["seconds"] if quads else None, ",.0f"),
                _fmt(load["store_bytes_after"], ",.0f", 1 / MB),
                str(load["loadavg_before"]),
            ]
        )
    seconds = sum(load["seconds"] for load in loads)
    peak = loads[-1]["loaders_peak_rss_mb_so_far"]
    if peak > result.get("children_peak_rss_mb_before_loads", 0):
        rss = f"Peak RSS of the loaders (the largest part): {peak:,.0f} MB."
    else:
        rss = "The loaders' peak RSS was not measured (a generator process peaked higher)."
    rows.append(
        [
            "**total**",
            "",
            _fmt(sum(p["bytes"] for p in result["parts"]), ",.0f", 1 / MB),
            f"**{seconds:.1f}**",
            f"{quads_total:,}",
            f"**{quads_total / seconds:,.0f}**" if seconds else "—",
            _fmt(loads[-1]["store_bytes_after"], ",.0f", 1 / MB),
            "",
        ]
    )
    columns = (
        "part",
        "seed",
        "file MB",
        "load s",
        "quads",
        "quads/s",
        "store MB after",
        "load average before",
    )
    return [
        "Load: each part with `labbrain --store STORE load FILE` in its own process, one after "
        "the other into the same store, without `LABBRAIN_*` settings (timed around the "
        "process, start-up included, as `bench_mcp.py` times its setup load). Quads are the "
        f"dataset's as labbrain records them (the export's plus the derived triples). {rss}",
        "",
        *_left(columns, rows),
    ]


def size_lines(result: Record) -> list[str]:
    """The store's size on disk, by part of the store."""
    s = result["store_size"]
    when = "as found in the reused store" if result["loads"] is None else "after the load"
    rows = [
        [
            name,
            _fmt(s[name]["bytes"], ",.0f", 1 / MB),
            _fmt(s[name]["apparent_bytes"], ",.0f", 1 / MB),
        ]
        for name in ("oxigraph", "index.sqlite", "index.fulltext", "other", "total")
    ]
    return [
        f"Store on disk {when} (`du`-like: blocks allocated; apparent: file sizes; "
        "`index.sqlite` with its `-wal` and `-shm` files; `other` is the rest, such as the "
        "bulk-write journal's files that are not hard links of Oxigraph's; `total` is the "
        "whole store directory, each file counted once):",
        "",
        *_left(("store part", "MB on disk", "MB apparent"), rows),
    ]


def server_lines(result: Record) -> list[str]:
    """Start-to-first-answer, RSS and the floor comparison."""
    lb, floor = result["summary"]["labbrain"], result["summary"]["floor"]
    ftools = floor["tools"]
    node = lb["tools"].get("get_node", {})
    rows = [
        [
            f"floor: `{FLOOR_TOOL}` (constant answer)",
            _fmt(ftools.get(FLOOR_TOOL, {}).get("p50_s"), ".2f", 1000),
            _fmt(ftools.get(FLOOR_TOOL, {}).get("p95_s"), ".2f", 1000),
            _fmt(floor["start_median_s"], ".0f", 1000),
            _fmt(floor["peak_rss_mb"], ".0f"),
        ],
        [
            f"floor: `{FLOOR_NODE_TOOL}` (constant node-sized answer)",
            _fmt(ftools.get(FLOOR_NODE_TOOL, {}).get("p50_s"), ".2f", 1000),
            _fmt(ftools.get(FLOOR_NODE_TOOL, {}).get("p95_s"), ".2f", 1000),
            "",
            "",
        ],
        [
            "labbrain: `get_node`",
            _fmt(node.get("p50_s"), ".2f", 1000),
            _fmt(node.get("p95_s"), ".2f", 1000),
            _fmt(lb["start_median_s"], ".0f", 1000),
            _fmt(lb["peak_rss_mb"], ".0f"),
        ],
    ]
    c = result["floor"]
    starts = f"{lb['starts']} starts, {lb['failed_starts']} failed"
    return [
        f"labbrain's server: start-to-first-answer {_fmt(lb['start_median_s'], '.2f')} s "
        f"(median; min {_fmt(lb['start_min_s'], '.2f')} s, max {_fmt(lb['start_max_s'], '.2f')}"
        f" s; {starts}), peak RSS {_fmt(lb['peak_rss_mb'], ',.0f')} MB (VmHWM after the "
        f"calls), RSS at the first answer {_fmt(lb['rss_at_first_answer_mb'], ',.0f')} MB "
        f"(median); protocol {lb['protocol_version']}.",
        "",
        "Floor (`bench_mcp.py`'s trivial server on the same `mcp` SDK, same client, same run):",
        "",
        *_left(FLOOR_COLUMNS, rows),
        "",
        f"- {c['goal']}: {'met' if c['met'] else 'NOT met'} (get_node "
        f"{_fmt(c['get_node_p50_s'], '.2f', 1000)} ms, floor + {FLOOR_MARGIN_S * 1000:g} ms = "
        f"{_fmt(c['limit_s'], '.2f', 1000)} ms)",
    ]


def scaling_lines(result: Record, mcp: Record | None) -> list[str]:
    """p50 per case: bench_mcp's sizes (both servers) and this run's point (the chart's
    numbers), with labbrain's growth from the largest bench_mcp size."""
    point = result["summary"]["labbrain"]["tools"]
    sizes = mcp["sizes"] if mcp else []
    last = sizes[-1] if sizes else None
    columns = [
        "p50 ms",
        *(f"{who} {s['n']:,}" for s in sizes for who in ("reference", "labbrain")),
        f"labbrain {result['n']:,}",
    ]
    if last:
        columns.append(f"labbrain {result['n']:,} / {last['n']:,}")
    rows = []
    for key, _, _ in CASES:
        cells = [_case_name(key)]
        for s in sizes:
            for who in ("reference", "labbrain"):
                cells.append(
                    _fmt(s["summary"][who]["tools"].get(key, {}).get("p50_s"), ".1f", 1000)
                )
        p50 = point.get(key, {}).get("p50_s")
        cells.append(_fmt(p50, ".1f", 1000))
        if last:
            before = last["summary"]["labbrain"]["tools"].get(key, {}).get("p50_s")
            cells.append(_fmt(p50 / before if p50 and before else None, ".1f") + "x")
        rows.append(cells)
    floor = [f"floor: `{FLOOR_TOOL}`"]
    for s in sizes:
        floor += [
            "",
            _fmt(s["summary"]["floor"]["tools"].get(FLOOR_TOOL, {}).get("p50_s"), ".2f", 1000),
        ]
    floor.append(
        _fmt(result["summary"]["floor"]["tools"].get(FLOOR_TOOL, {}).get("p50_s"), ".2f", 1000)
    )
    if last:
        floor.append("")
    rows.append(floor)
    source = "no `mcp.json` was found"
    if mcp:
        revision = _describe(mcp["source"])
        ran_on = (last or {}).get("labbrain_source", {}).get("before")
        if last and ran_on and ran_on != mcp["source"]:
            revision += f"; N = {last['n']:,} ran on {_describe(ran_on)}"
        source = (
            f"`mcp.json` (bench_mcp.py, {mcp['started']}, on {revision}; its exports had "
            "seed 0, so other hubs)"
        )
    chart = result.get("chart")
    return [
        f"p50 per case against the node count: 1,000 to 100,000 from {source}, another run "
        f"under other machine load; {result['n']:,} from this run, on "
        f"{_describe(result['source'])}" + (f" (chart: `{chart}`)" if chart else "") + ":",
        "",
        *_left(columns, rows),
    ]


def header_lines(result: Record) -> list[str]:
    """The machine and run description."""
    m = result["machine"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    o = result["options"]
    lines = [
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- labbrain {v['labbrain']} ({_describe(result['source'])}), pyoxigraph "
        f"{v['pyoxigraph']}, mcp {v['mcp']} (client and labbrain's server)",
        f"- Client mode `{o['mode']}`; {o['calls']} calls per case; {o['starts']} starts per "
        f"server; load average at start {result['loadavg_start']}, before the servers "
        f"{result['loadavg_before_servers']}, at end {result['loadavg_end']}",
    ]
    revisions = result["labbrain_source"]
    before, after = revisions.get("before"), revisions.get("after")
    if before is not None and after is not None and before != after:
        lines.append(
            "- Warning: the labbrain source changed during labbrain's session "
            f"({_describe(before)} before, {_describe(after)} after)"
        )
    elif before is not None and before != result["source"]:
        lines.append(f"- Warning: labbrain's session ran on {_describe(before)}")
    vectors = result.get("vectors")
    if vectors:
        lines.append(
            f"- Vectors: every node has a random unit vector under `{vectors['model']}` "
            f"({vectors['vectors']:,}, written in {vectors['fill_seconds']:.0f} s; the int8 "
            f"search matrix kept in {vectors['snapshot_seconds']:.1f} s, as `labbrain embed` "
            f"keeps it), so `search_nodes` without a mode runs `{vectors['default_mode']}` "
            f"(the server's answers said {searched_modes(result) or 'nothing'}): the "
            "query embedded by the model at every call, searched among every vector, fused "
            "with the keyword list and re-ranked by links. Random vectors rank nonsense; the "
            "time is what a lab with every node embedded waits"
        )
    if o["store_reused"]:
        lines.append(
            f"- Warning: the store `{result['store']}` was reused (`--store`): the load was "
            "not measured; for development only, the official run loads the parts itself"
        )
    lines += [f"- Warning: {problem}" for problem in result["store_problems"]]
    return lines


def with_vectors(result: Record) -> bool:
    """Whether the run gave every node a vector (``--vectors``: search_nodes ran hybrid)."""
    return bool(result.get("vectors"))


def searched_modes(result: Record) -> str:
    """The modes labbrain's ``search_nodes`` answers reported, e.g. ``hybrid``."""
    tools = result["summary"]["labbrain"]["tools"]
    found = {
        m
        for key, tool, _ in CASES
        if tool == "search_nodes"
        for m in tools.get(key, {}).get("modes", [])
    }
    return ", ".join(f"`{mode}`" for mode in sorted(found))


def target_lines(result: Record) -> list[str]:
    """The p50 targets at the full scale, one bullet each, with this run's verdict."""
    t = result["targets"]
    lines = [f"Targets at {t['n']:,} nodes:", ""]
    for key in TARGET_CASES:
        entry = t[key]
        verdict = "met" if entry["met"] else "NOT met"
        lines.append(f"- {entry['goal']}: {verdict} ({_fmt(entry['value'], '.1f', 1000)} ms)")
    return lines


def method_lines(result: Record) -> list[str]:
    """What was measured and how, with the caveat about the ten labs."""
    o = result["options"]
    a = result["arguments"]
    hub, claim = a["hub_node"], a["hub_claim"]
    objects = max(p["json_objects"] for p in result["parts"])
    return [
        f"**What this is.** {result['n']:,} nodes are {o['parts']} exports of "
        f"{o['part_size']:,} nodes each, {o['parts']} labs: "
        f"`bench/generate.py {o['part_size']} --seed S --graph lab-I` with seeds "
        f"{o['seed_base']} to {o['seed_base'] + o['parts'] - 1} "
        f"and graphs lab-0 to lab-{o['parts'] - 1}, loaded one after the other into one "
        f"store: {result['nodes']:,} nodes in one store. {SINGLE_EXPORT_NOTE} "
        "`LABBRAIN_MAX_JSON_OBJECTS` "
        f"({result['max_json_objects']:,} by default) limits each file, not the store: each "
        f"part holds at most {objects:,} `{{` bytes (the count labbrain checks).",
        "",
        "**What the tools see.** `search_nodes` searches the whole store, all labs at once. "
        "`get_researcher_contributions`, `get_relationships` and `get_schema` also cover "
        "every lab (the labs share their creators' names). The arguments are drawn by "
        "`bench_mcp.derive_arguments` from lab-0's export alone, so the per-node tools "
        "(`get_node`, `get_linked_nodes`, `get_node_neighborhood`) start from lab-0's nodes "
        f"and walk inside one {o['part_size']:,}-node lab's graph (wikilinks resolve within "
        "their own export, so no link joins two labs). Rare search words are two adjacent "
        "words of a lab-0 title; frequent words are lab-0's most frequent words and word pairs ("
        + ", ".join(
            f"{t['terms']} {t['share']:.0%}"
            for t in a["frequent_terms"]["words"][:3] + a["frequent_terms"]["pairs"][:2]
        )
        + f" of lab-0's nodes; as common in every lab). Hub node `{hub['uid']}` "
        f"({hub['links']} typed and `textRefersToNode` links, {hub['all_links']} with "
        f"wikilinks), hub claim `{claim['uid']}` ({claim['links']}, {claim['all_links']}); "
        f"the median lab-0 node has {a['median_links']:g} ({a['median_all_links']:g}).",
        "",
        "**How.** As `bench_mcp.py` measures labbrain: the server is `labbrain --store STORE "
        "mcp` with `DATA_PATH` set to lab-0's export (already loaded, so only its digest is "
        "checked), started "
        f"{o['starts']} times; start-to-first-answer runs from the spawn to the first "
        "`search_nodes` answer (start-up, handshake, tool listing). The last session makes "
        f"the calls: {o['calls']} per case, round-robin, each timed around `client.call_tool` "
        "in one client process (the client validates structured answers against the tools' "
        "output schemas; p95 interpolated between ranks). Peak RSS is the server's VmHWM "
        "after the calls. The floor, `bench_mcp.py`'s trivial server on the same SDK, runs "
        "first, the same way. MB and KB are 10^6 and 10^3 bytes.",
    ]


def render_markdown(result: Record, mcp: Record | None) -> str:
    """The full ``scale.md`` report."""
    parts = result["options"]["parts"]
    hybrid = " with vectors (hybrid search)" if with_vectors(result) else ""
    lines = [
        f"# Scale benchmark: labbrain at {result['n']:,} nodes ({parts} labs in one store)"
        + hybrid,
        "",
    ]
    lines += header_lines(result)
    lines += ["", *target_lines(result), ""]
    lines += method_lines(result)
    lines += ["", "## Tools", ""]
    lines += _left(CASE_COLUMNS, case_rows(result["summary"]))
    lines += ["", *server_lines(result)]
    if not with_vectors(result):  # bench_mcp's sizes search in keyword mode: no comparison
        lines += ["", "## Scaling", "", *scaling_lines(result, mcp)]
    lines += ["", "## Load and store", "", *load_lines(result), "", *size_lines(result)]
    notes = [
        (key, sample)
        for key, _, _ in CASES
        for sample in result["summary"]["labbrain"]["tools"].get(key, {}).get("cut_samples", [])[:1]
    ]
    if notes:
        lines += ["", "What labbrain said when it cut an answer short (first note per case):", ""]
        lines += [f"- {_case_name(key)}: {sample}" for key, sample in notes]
    lines += ["", "## Inputs", ""]
    lines += [
        f"- `{Path(p['path']).name}`: graph {p['graph']}, seed {p['seed']}, {p['bytes']:,} bytes, "
        f"sha256 `{p['sha256'][:16]}…`" + (" (generated now)" if p["generated"] else "")
        for p in result["parts"]
    ]
    errors = [
        (name, key, stats["error_samples"])
        for name in SERVER_ORDER
        for key, stats in result["summary"][name]["tools"].items()
        if stats["errors"]
    ]
    failed = [
        (name, run.get("error") or run["status"])
        for name in SERVER_ORDER
        for run in result["runs"][name]
        if run["status"] != "ok"
    ]
    if errors or failed:
        lines += ["", "## Errors", ""]
        lines += [f"- {name}, start: {text}" for name, text in failed]
        lines += [f"- {name}, `{key}`: " + "; ".join(s) for name, key, s in errors]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# remote.md: this run's JSON, then the whole file again (remote_report.write_markdown)
# --------------------------------------------------------------------------------------------


def write_remote_results(result: Record, results_dir: Path) -> Path:
    """Write one ``--backend`` run to ``remote-scale-BACKEND.json`` and ``remote.md`` again."""
    path = results_dir / f"remote-scale-{result['backend']}.json"
    write_result(path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    write_markdown(results_dir)
    return path


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

EPILOG = """\
official run (loads the ten parts into a fresh store under --tmp-dir, which needs
some 15 GB free; run it on a quiet machine):

  python bench/bench_scale.py --exports-dir ~/labbrain-bench/m1 --tmp-dir ~/labbrain-bench

  or, generating the parts into bench/out/scale-100000/ first:

  python bench/bench_scale.py

development only (reuses a loaded store; the load is not measured and the report says so):

  python bench/bench_scale.py --store ~/labbrain-bench/m1/store --exports-dir ~/labbrain-bench/m1
  python bench/bench_scale.py --parts 2 --part-size 2000 --calls 5 --results-dir /tmp/scale

re-render scale.md and the chart from a result:

  python bench/bench_scale.py --render bench/results/scale.json

the same run on each of three stores, for remote.md (each writes
bench/results/remote-scale-BACKEND.json and remote.md again; the servers' database
directories go under --tmp-dir, Virtuoso's buffers take some 6 GB of RAM):

  python bench/bench_scale.py --exports-dir ~/labbrain-bench/m1 --tmp-dir ~/labbrain-bench \\
      --backend embedded                          # then oxigraph, then virtuoso
  python bench/bench_scale.py --render-remote     # remote.md again from the JSON results
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(
        prog="bench_scale.py",
        description="Time labbrain's MCP read tools at 1,000,000 nodes: ten 100,000-node "
        "exports (ten labs) loaded into one store, with bench_mcp.py's cases and client.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--parts", type=_positive, default=PARTS, metavar="K", help="exports (labs) (10)"
    )
    parser.add_argument(
        "--part-size",
        type=_positive,
        default=PART_SIZE,
        metavar="N",
        help="page nodes per export (100000)",
    )
    parser.add_argument(
        "--seed-base",
        type=int,
        default=SEED_BASE,
        metavar="S",
        help="part I is generated with seed S+I and graph lab-I (100)",
    )
    parser.add_argument(
        "--calls", type=_positive, default=30, metavar="R", help="calls per case (30)"
    )
    parser.add_argument(
        "--starts",
        type=_positive,
        default=3,
        metavar="K",
        help="starts per server; the last one also makes the calls (3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="argument seed, as bench_mcp's (0)")
    parser.add_argument(
        "--mode", default="auto", help="the client's protocol negotiation: auto or legacy"
    )
    parser.add_argument(
        "--start-timeout", type=float, default=600.0, metavar="S", help="per start (600)"
    )
    parser.add_argument(
        "--call-timeout", type=float, default=300.0, metavar="S", help="per call (300)"
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=OUT_DIR,
        help="where missing parts are generated (in scale-N/) and the servers' stderr is "
        "logged (bench/out)",
    )
    parser.add_argument(
        "--exports-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="use the existing parts DIR/lab-0.jsonld ... instead of generating them",
    )
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        metavar="DIR",
        help="reuse a store that already holds the parts: no load, not measured (development only)",
    )
    parser.add_argument(
        "--keep-store",
        action="store_true",
        help="keep the loaded store in --out-dir (scale-store-KxN/) instead of deleting it",
    )
    parser.add_argument(
        "--tmp-dir",
        default=None,
        help="parent of the throwaway store and the floor server (default: system temp)",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where scale.md, scale.json and the chart are written (bench/results)",
    )
    parser.add_argument(
        "--mcp-json",
        type=Path,
        default=RESULTS_DIR / "mcp.json",
        metavar="JSON",
        help="bench_mcp.py's result, for the chart and the scaling table (bench/results/mcp.json)",
    )
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="JSON",
        help="measure nothing: write scale.md and the chart again from this scale.json",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help="measure this store for remote.md: the embedded store, or labbrain's remote "
        "backend on an Oxigraph or a Virtuoso server started under --tmp-dir; writes "
        "remote-scale-BACKEND.json and remote.md (not scale.md) in --results-dir",
    )
    parser.add_argument(
        "--vectors",
        action="store_true",
        help="give every node a random vector under the configured model's id after the "
        "loads, so that search_nodes runs hybrid; writes scale-hybrid.md and .json (not "
        "scale.md, nor the chart)",
    )
    parser.add_argument(
        "--render-remote",
        action="store_true",
        help="measure nothing: write remote.md again from remote.json and "
        "remote-scale-*.json in --results-dir",
    )
    args = parser.parse_args(argv)
    if args.backend not in (None, "embedded") and (args.store or args.keep_store):
        parser.error("--store and --keep-store are for the embedded store only")
    if args.vectors and (args.backend not in (None, "embedded") or args.store):
        parser.error("--vectors fills a store this run loads into the embedded backend")
    if args.backend is not None and args.render is not None:
        parser.error("--render re-renders scale.md; use --render-remote for remote.md")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or re-render), write ``scale.md``, ``scale.json`` and the chart
    (with ``--backend``: ``remote-scale-BACKEND.json`` and ``remote.md`` instead)."""
    args = parse_args(argv)
    if args.render_remote:
        print(write_markdown(args.results_dir), end="")
        return 0
    if args.render is not None:
        result = json.loads(args.render.read_text(encoding="utf-8"))
    else:
        if args.backend is not None:
            # A SIGTERM unwinds like Ctrl-C, so the SPARQL server started here is stopped too.
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    if args.backend is not None:
        path = write_remote_results(result, args.results_dir)
        _log(f"wrote {path} and {args.results_dir / 'remote.md'}")
        print("\n".join(remote_scale_lines({args.backend: result})))
        return 0
    mcp_json: Path = args.mcp_json
    mcp = json.loads(mcp_json.read_text(encoding="utf-8")) if mcp_json.is_file() else None
    name = "scale-hybrid" if with_vectors(result) else "scale"
    if not with_vectors(result):
        chart = args.results_dir / CHART_NAME
        result.pop("chart", None)
        if write_combined_chart(result, mcp_json, chart):
            result["chart"] = chart.name
    write_result(
        args.results_dir / f"{name}.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    )
    markdown = render_markdown(result, mcp)
    write_result(args.results_dir / f"{name}.md", markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
