"""Vault benchmark: loading an Obsidian vault against the Roam export of the same graph, and
how fast a watched vault follows an edit.

A vault of ``--nodes`` notes (bodies of ``--words`` words, about as long as real nodes) and
about ``--relations`` relations is written by ``bench/generate_vault.py``, with the Roam export
of the same nodes and relations beside it. Then:

``load``
    each source loaded into a fresh store (``LabBrain.load``) in a child process, the two
    alternating over ``--rounds`` rounds; quoted as the median of the per-round ratios
    vault / export (target: at most 1.5);
``watch``
    the vault loaded and watched (``SourceWatcher`` in a thread, as ``labbrain mcp --watch``
    runs it); ``--edits`` times a random note gets a new word, and the main thread waits for
    the watcher's report of the update, then searches for the word: the latency from the save
    (target: p95 at most 2 s), and the process's CPU time over the update (target: at most
    200 ms).

Results go to ``bench/results/vault.md`` and ``.json``.

Usage::

    python bench/bench_vault.py --nodes 20000 --relations 30000 --rounds 3 --edits 20
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_load import machine_info, run_lines, source_revision
from generate_vault import make_lab, note_path, roam_export, write_vault
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
Record = dict[str, Any]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_load(source: str, store: str) -> Record:
    """Load ``source`` into a fresh store ``store``; the seconds and CPU of the load."""
    from labbrain.core import LabBrain
    from labbrain.settings import Settings

    brain = LabBrain(Settings(store=store))
    started, cpu = time.perf_counter(), _cpu()
    report = brain.load(source)
    seconds, used = time.perf_counter() - started, _cpu() - cpu
    brain.close()
    return {"seconds": seconds, "cpu": used, "nodes": report.nodes, "quads": report.quads}


def write_inputs(nodes: int, relations: int, words: int, where: Path) -> tuple[Path, Path]:
    """The vault and the Roam export of the same graph, under ``where``."""
    lab = make_lab(0, nodes, relations, name="Bench Lab", body_words=words)
    vault = write_vault(lab, where)
    created, modified = {}, {}
    for index, node in enumerate(lab.nodes):
        stamp = os.stat(vault / note_path(lab, node))
        moment = datetime.fromtimestamp(stamp.st_mtime, UTC).isoformat(timespec="milliseconds")
        created[index] = modified[index] = moment.replace("+00:00", "Z")
    export = where / "bench-lab.jsonld"
    export.write_text(json.dumps(roam_export(lab, "bench-lab", modified, created)), "utf-8")
    return vault, export


def measure_loads(vault: Path, export: Path, rounds: int, tmp: Path) -> Record:
    """Both sources loaded in fresh child processes, alternating."""
    runs: list[Record] = []
    for round_number in range(rounds):
        order = ("vault", "export") if round_number % 2 == 0 else ("export", "vault")
        for kind in order:
            store = tmp / f"store-{kind}-{round_number}"
            source = str(vault if kind == "vault" else export)
            done = subprocess.run(
                [sys.executable, __file__, "--child", source, "--store", store.as_posix()],
                capture_output=True,
                text=True,
                check=True,
            )
            shutil.rmtree(store, ignore_errors=True)
            runs.append({"round": round_number, "kind": kind, **json.loads(done.stdout)})
    ratios = []
    for round_number in range(rounds):
        by = {r["kind"]: r for r in runs if r["round"] == round_number}
        ratios.append(by["vault"]["seconds"] / by["export"]["seconds"])
    return {
        "runs": runs,
        "vault_seconds": statistics.median(r["seconds"] for r in runs if r["kind"] == "vault"),
        "export_seconds": statistics.median(r["seconds"] for r in runs if r["kind"] == "export"),
        "ratio": statistics.median(ratios),
        "nodes": runs[0]["nodes"],
    }


def measure_watch(vault: Path, edits: int, tmp: Path) -> Record:
    """Latency and CPU of one-note edits on a watched vault (see the module's doc)."""
    from labbrain.core import LabBrain
    from labbrain.index.search_query import SearchQuery
    from labbrain.ops.watch import SourceWatcher, WatchEvent
    from labbrain.settings import Settings

    rng = random.Random(1)
    notes = sorted(vault.glob("Discourse Nodes/*.md"))
    brain = LabBrain(Settings(store=str(tmp / "watch-store")))
    events: queue.Queue[WatchEvent] = queue.Queue()
    watcher = SourceWatcher(brain, [str(vault)], on_event=events.put)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    assert watcher.wait_started(900), "the watch did not start"
    while not events.empty():
        events.get()
    latencies, cpus, outcomes = [], [], []
    for number in range(edits):
        note = rng.choice(notes)
        word = f"zq{number}x{rng.randrange(10**6)}"
        text = note.read_text(encoding="utf-8")
        cpu = _cpu()
        saved = time.perf_counter()
        note.write_text(text + f"\n{word}\n", encoding="utf-8")
        event = events.get(timeout=120)  # the main thread waits idle: the CPU is the update's
        latencies.append(time.perf_counter() - saved)
        cpus.append(_cpu() - cpu)
        outcomes.append(event.outcome)
        hits = brain.search(SearchQuery(word, limit=1)).hits
        assert hits and hits[0].node.title == note.stem, f"edit {number} not seen"
        time.sleep(0.5)  # let the next edit be a change of its own
    watcher.stop()
    thread.join(30)
    brain.close()
    ordered = sorted(latencies)
    return {
        "edits": edits,
        "latency_p50": statistics.median(latencies),
        "latency_p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "cpu_median": statistics.median(cpus),
        "cpu_max": max(cpus),
        "latencies": latencies,
        "cpus": cpus,
        "outcomes": dict(Counter(outcomes)),
        "polling": watcher.polling,
    }


def render(result: Record) -> str:
    load, watch = result["load"], result["watch"]
    lines = [
        "# Vault benchmark",
        "",
        *run_lines(result),
        f"- Vault: {result['nodes']:,} notes of about {result['words']} words, about "
        f"{result['relations']:,} relations; the Roam export of the same graph beside it",
        "",
        "| measure | value | target | met |",
        "|---|---:|---:|---|",
        f"| first load of the vault (median s) | {load['vault_seconds']:.2f} | | |",
        f"| load of the Roam export of the same graph (median s) | {load['export_seconds']:.2f}"
        " | | |",
        f"| vault / export (median of {result['rounds']} per-round ratios) | {load['ratio']:.2f}x"
        f" | 1.5x | {'yes' if load['ratio'] <= 1.5 else 'no'} |",
        f"| one-note edit seen by a search, p50 s ({watch['edits']} edits) | "
        f"{watch['latency_p50']:.2f} | | |",
        f"| same, p95 s | {watch['latency_p95']:.2f} | 2.0 | "
        f"{'yes' if watch['latency_p95'] <= 2.0 else 'no'} |",
        f"| process CPU per update, median s | {watch['cpu_median']:.2f} | 0.2 | "
        f"{'yes' if watch['cpu_median'] <= 0.2 else 'no'} |",
        "",
        "Loads run in fresh child processes, timed around `LabBrain.load` only. The watch runs "
        "in-process: latency is from the save to the watcher's report of the update (the "
        "change is committed and searchable then; a search checks it), so it includes the "
        "watcher's wait for the files to be quiet (50 ms; 0.4 s at most). The CPU per update "
        "is the process's (every thread, "
        "the search engine's writer threads included) from the save to that report, while "
        "the main thread waits idle. Events "
        + ("were polled." if watch["polling"] else "came from the file system (inotify).")
        + f" How the updates went: {watch['outcomes']} (changed: written by part).",
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--relations", type=int, default=30_000)
    parser.add_argument("--words", type=int, default=450, help="words per note body")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--tmp-dir", help="where the vault and stores go")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child_load(args.child, args.store)))
        return 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="labbrain-vault-", dir=args.tmp_dir) as scratch:
        tmp = Path(scratch)
        vault, export = write_inputs(args.nodes, args.relations, args.words, tmp / "inputs")
        load = measure_loads(vault, export, args.rounds, tmp)
        watch = measure_watch(vault, args.edits, tmp)
    result: Record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/bench_vault.py " + " ".join(sys.argv[1:]),
        "machine": machine_info(args.tmp_dir),
        "source": source_revision(),
        "nodes": args.nodes,
        "relations": args.relations,
        "words": args.words,
        "rounds": args.rounds,
        "load": load,
        "watch": watch,
        "wall_seconds": time.perf_counter() - started,
    }
    page = render(result)
    print(page)
    if not args.no_write:
        write_result(RESULTS_DIR / "vault.json", json.dumps(result, indent=2) + "\n")
        write_result(RESULTS_DIR / "vault.md", page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
