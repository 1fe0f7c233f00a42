"""Signing the lab's claims as nanopublications: `labbrain export --format nanopub --key`.

A generated export (5,000 nodes by default: about 1,100 Claims, each with the Evidence that
argues it, the Results behind that Evidence and the Questions it addresses) is loaded once;
every creator gets an ORCID iD in the people map. Then, as a user runs it:

- **first publication**: every node and relation is new, each nanopublication is built,
  signed (RSA 2048, trusty URI) and written; measured on a fresh copy of the loaded store in
  each round, so every round signs everything;
- **unchanged**: the same command again on a store that has published it all (each
  nanopublication is built and signed again, and comes out with the same URI).

Reported: wall seconds of the whole command (median of the rounds), nanopublications per
second, peak RSS of the command, and how many claims, nodes and relations were published.
Target (issue 30): 1,000 claims with their evidence chains exported and signed in under 60 s.

Usage::

    python bench/bench_publish.py --nodes 5000 --rounds 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_load import ensure_export, machine_info, run_lines, source_revision
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
LABBRAIN = str(Path(sys.executable).parent / "labbrain")
TARGET_CLAIMS = 1000
TARGET_SECONDS = 60.0


def orcid(number: int) -> str:
    """A well-formed ORCID iD (ISO 7064 11,2 check digit) made from ``number``."""
    digits = f"{number:015d}"
    total = 0
    for digit in digits:
        total = (total + int(digit)) * 2
    check = (12 - total % 11) % 11
    tail = "X" if check == 10 else str(check)
    body = digits + tail
    return "-".join(body[i : i + 4] for i in range(0, 16, 4))


def labbrain(store: Path, *args: str) -> tuple[float, int, str]:
    """Run ``labbrain --store STORE ARGS`` and return (seconds, peak RSS in KiB, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [LABBRAIN, "--store", str(store), *args], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"labbrain {' '.join(args)} failed: {done.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before), done.stderr


def counts(stderr: str) -> dict[str, int]:
    """The numbers of the command's summary line (nanopublications, nodes, relations, ...)."""
    line = next(text for text in stderr.splitlines() if "nanopublications (" in text)
    words = line.replace("(", " ").replace(")", " ").replace(",", " ").replace(";", " ").split()
    found: dict[str, int] = {}
    for number, word in itertools.pairwise(words):
        if number.isdigit():
            found[word] = int(number)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", help="where the stores go (default: the system's temp dir)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    facts = ensure_export(args.nodes, args.seed, "2026-06", BENCH_DIR / "out")
    export = json.loads(Path(facts["path"]).read_text(encoding="utf-8"))
    schemas = {e["@id"]: e.get("label") for e in export["@graph"] if e.get("@type") == "nodeSchema"}
    kinds: dict[str, int] = {}
    creators: set[str] = set()
    for entry in export["@graph"]:
        label = schemas.get(entry.get("@type"))
        if label:
            kinds[label] = kinds.get(label, 0) + 1
            if entry.get("creator"):
                creators.add(entry["creator"])
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        work = Path(tmp)
        key = work / "id_rsa.pem"
        subprocess.run(
            [
                "openssl",
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                str(key),
            ],
            check=True,
            capture_output=True,
        )
        loaded = work / "loaded"
        labbrain(loaded, "load", facts["path"])
        people = work / "people.json"
        people.write_text(
            json.dumps({name: orcid(i + 1) for i, name in enumerate(sorted(creators))}),
            encoding="utf-8",
        )
        labbrain(loaded, "people", "import", str(people))
        signer = orcid(1)
        command = ["export", "--format", "nanopub", "--key", str(key), "--signer", signer]
        first: list[dict[str, Any]] = []
        again: list[dict[str, Any]] = []
        for round_number in range(args.rounds):
            store = work / f"round-{round_number}"
            shutil.copytree(loaded, store)
            out = work / f"np-{round_number}.trig"
            seconds, peak, stderr = labbrain(store, *command, "-o", str(out))
            first.append({"seconds": seconds, "peak_kib": peak, **counts(stderr)})
            seconds, peak, stderr = labbrain(store, *command, "-o", str(out) + ".again")
            again.append({"seconds": seconds, "peak_kib": peak, **counts(stderr)})
            shutil.rmtree(store)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "command": "python bench/bench_publish.py " + " ".join(argv or sys.argv[1:]),
        "machine": machine_info(args.tmp),
        "source": source_revision(),
        "export": {"nodes": args.nodes, "bytes": facts["bytes"], "kinds": kinds},
        "first": first,
        "unchanged": again,
    }
    out_dir = BENCH_DIR / "results"
    write_result(out_dir / "publish.json", json.dumps(result, indent=2) + "\n")
    write_result(out_dir / "publish.md", report(result))
    print(report(result))
    return 0


def report(result: dict[str, Any]) -> str:
    """The result page."""
    kinds = result["export"]["kinds"]
    lines = [
        "# Nanopublications signed",
        "",
        *run_lines(result),
        f"- Export: {result['export']['nodes']:,} nodes "
        f"({result['export']['bytes'] / 1e6:.0f} MB), "
        f"{kinds.get('Claim', 0):,} Claims, {kinds.get('Evidence', 0):,} Evidence, "
        f"{kinds.get('Result', 0):,} Results, {kinds.get('Question', 0):,} Questions",
        "",
        "| run | nanopublications | nodes | relations | median s | min s | max s | "
        "per second | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in (("first publication", result["first"]), ("unchanged", result["unchanged"])):
        seconds = [r["seconds"] for r in runs]
        median = statistics.median(seconds)
        lines.append(
            f"| {name} | {runs[0]['nanopublications']:,} | {runs[0]['nodes']:,} | "
            f"{runs[0]['relations']:,} | {median:.1f} | {min(seconds):.1f} | {max(seconds):.1f} | "
            f"{runs[0]['nanopublications'] / median:,.0f} | "
            f"{max(r['peak_kib'] for r in runs) / 1024:.0f} |"
        )
    median = statistics.median(r["seconds"] for r in result["first"])
    claims = kinds.get("Claim", 0)
    verdict = "met" if claims >= TARGET_CLAIMS and median < TARGET_SECONDS else "not met"
    lines += [
        "",
        f"Target: {TARGET_CLAIMS:,} claims with their evidence chains signed in under "
        f"{TARGET_SECONDS:.0f} s: {verdict} ({claims:,} claims and their chains in "
        f"{median:.1f} s, the whole command: start, reads, signing, writing).",
        "",
        "Each round signs on a fresh copy of the loaded store (nothing published yet); "
        "'unchanged' runs the same command again on that store, when every nanopublication "
        "comes out with the URI it had. Peak RSS is the largest of the command's processes "
        "(`getrusage` of the children). Nodes without a creator are left out of a signed "
        "publication, as the command says.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
