"""Semantic search benchmark: embedding throughput and query latency per mode at N nodes.

Generates (or reuses) ``bench/out/dg-N.jsonld`` with ``bench/generate.py``, loads it into a
fresh store in a temporary directory, then:

``throughput``
    embeds the texts of ``--embed`` nodes (the texts ``labbrain embed`` computes vectors of)
    with the configured provider, batch by batch, through ``VectorIndex.update``: texts per
    second, one run (the model is loaded and warmed up first, outside the timing).
``latency``
    fills the vector index up to all N nodes (the nodes not embedded above get random unit
    vectors unless ``--embed-all``: a search's cost does not depend on the vectors' values),
    then times ``search_nodes`` in keyword, semantic and hybrid mode for ``--queries``
    distinct queries (titles of random nodes, so the query is embedded each time), median and
    95th percentile per mode, interleaved query by query.

Results go to ``bench/results/semantic.md`` and ``.json``.

Usage::

    python bench/bench_semantic.py --nodes 20000 --embed 1000 --queries 50
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import write_export  # noqa: E402
from labbrain.core import LabBrain  # noqa: E402
from labbrain.discourse.reader import DiscourseReader  # noqa: E402
from labbrain.index.embeddings import provider_for  # noqa: E402
from labbrain.index.vectors import EmbedPlan, digest_of  # noqa: E402
from labbrain.settings import Settings  # noqa: E402

MODES = ("keyword", "semantic", "hybrid")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run(nodes: int, embed: int, queries: int, embed_all: bool, seed: int) -> dict[str, Any]:
    import numpy as np

    source = HERE / "out" / f"dg-{nodes}.jsonld"
    source.parent.mkdir(exist_ok=True)
    if not source.exists():
        write_export(source, nodes, seed=1)
    with (
        tempfile.TemporaryDirectory() as folder,
        LabBrain(Settings(store=str(Path(folder) / "store"))) as brain,
    ):
        brain.load(str(source))
        provider = provider_for(brain.settings)
        provider.embed(["warm-up text for the model"])
        vectors = brain.vectors
        plan = vectors.plan(brain.index, provider.model_id)
        # a random sample of the nodes (the plan lists the shortest texts first)
        sample = random.Random(seed).sample(plan.todo, min(embed, len(plan.todo)))
        chosen = plan.todo if embed_all else sorted(sample, key=lambda item: len(item.text))
        started = time.perf_counter()
        done = vectors.update(
            provider,
            EmbedPlan(plan.model, chosen, [], 0),
            batch_size=brain.settings.embedding_batch_size,
        )
        seconds = time.perf_counter() - started
        characters = sorted(len(item.text) for item in chosen)
        taken = {(item.graph, item.iri) for item in chosen}
        rest = [item for item in plan.todo if (item.graph, item.iri) not in taken]
        if rest:
            rng = np.random.default_rng(seed)
            fake = rng.standard_normal((len(rest), provider.dimension)).astype(np.float32)
            fake /= np.linalg.norm(fake, axis=1, keepdims=True)

            class Random:
                model_id = provider.model_id
                dimension = provider.dimension

                def __init__(self) -> None:
                    self.at = 0

                def embed(self, texts: list[str]) -> Any:
                    rows = fake[self.at : self.at + len(texts)]
                    self.at += len(texts)
                    return rows

            vectors.update(Random(), EmbedPlan(plan.model, rest, [], 0), batch_size=2048)  # type: ignore[arg-type]
        assert vectors.count() == len(plan.todo)
        reader = DiscourseReader(brain)
        all_nodes, _ = brain.index.nodes(limit=brain.index.count())
        picked = random.Random(seed).sample(all_nodes, queries)
        texts = [n.title for n in picked]
        reader.search_nodes("warm up the matrix", mode="hybrid")
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        cache = provider.embed.__self__._cache  # type: ignore[attr-defined]
        for text in texts:
            for mode in MODES:
                cache.clear()  # every mode embeds the query itself
                begin = time.perf_counter()
                reader.search_nodes(text, mode=mode, limit=10)
                times[mode].append(time.perf_counter() - begin)
        return {
            "nodes": len(plan.todo),
            "embedded": done,
            "randomVectors": len(rest),
            "embedSeconds": round(seconds, 2),
            "textsPerSecond": round(done / seconds, 1),
            "medianTextChars": characters[len(characters) // 2] if characters else 0,
            "batchSize": brain.settings.embedding_batch_size,
            "queries": queries,
            "latencyMs": {
                mode: {
                    "median": round(statistics.median(values) * 1000, 1),
                    "p95": round(percentile(values, 0.95) * 1000, 1),
                }
                for mode, values in times.items()
            },
            "digest": digest_of(source.name),
        }


def report(result: dict[str, Any], command: str, path: Path) -> None:
    import torch

    load = os.getloadavg()
    lines = [
        "# Semantic search benchmark",
        "",
        f"- Date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- Command: `{command}`",
        f"- CPU: {platform.processor() or platform.machine()}; {os.cpu_count()} cores; "
        f"torch {torch.__version__} with {torch.get_num_threads()} threads",
        f"- Versions: labbrain {metadata.version('labbrain')}, sentence-transformers "
        f"{metadata.version('sentence-transformers')}, model all-MiniLM-L6-v2 (384 dimensions)",
        f"- Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (the machine "
        "was shared with other work; absolute figures vary with it)",
        "",
        "## Embedding throughput",
        "",
        "| texts embedded | median text (chars) | batch | seconds | texts/s |",
        "|---:|---:|---:|---:|---:|",
        f"| {result['embedded']:,} | {result['medianTextChars']:,} | {result['batchSize']} | "
        f"{result['embedSeconds']} | {result['textsPerSecond']} |",
        "",
        f"At this rate, embedding all {result['nodes']:,} nodes takes about "
        f"{result['nodes'] / result['textsPerSecond'] / 60:.0f} minutes (`labbrain embed` runs "
        "it as a task with progress, and only new or changed nodes are embedded afterwards).",
        "",
        f"## Query latency at {result['nodes']:,} nodes",
        "",
        f"{result['queries']} distinct queries (node titles), limit 10, each run in every mode "
        "in turn; the semantic and hybrid times include embedding the query. "
        f"{result['randomVectors']:,} of the {result['nodes']:,} vectors are random unit "
        "vectors (search cost does not depend on their values).",
        "",
        "| mode | median ms | p95 ms |",
        "|---|---:|---:|",
    ]
    for mode, value in result["latencyMs"].items():
        lines.append(f"| {mode} | {value['median']} | {value['p95']} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--embed", type=int, default=1000)
    parser.add_argument("--embed-all", action="store_true")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "semantic.md")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(args.nodes, args.embed, args.queries, args.embed_all, args.seed)
    command = "python bench/bench_semantic.py " + " ".join(sys.argv[1:])
    report(result, command.strip(), args.output)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
