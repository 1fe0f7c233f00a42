"""Choose hybrid search's fusion constants on the tune split of the paraphrase set.

Loads the real corpus (``../shared/data``) and the sample data into an in-memory store, embeds
every node with the configured model, then takes, once per query, the keyword and the semantic
ranking (each list's top ``labbrain.index.hybrid.DEPTH``):

- every question of the paraphrase set shipped with labbrain (``paraphrases.jsonl``), in the
  expected nodes' dataset, all node types;
- every claim → evidence query of ``labbrain eval-retrieval`` (a claim's title, among Evidence).

For each (k, semantic weight, link weight, link depth) of a grid the rankings are fused with
``labbrain.index.hybrid.fuse``, re-ranked by ``labbrain.index.hybrid.link_rerank`` (link
weight 0: not re-ranked) and scored: hit@10 and MRR on each paraphrase split, recall@10 and
MRR on claim → evidence. The choice is the best hit@10 + MRR on the **tune** split among the
fusions that keep claim → evidence within 0.01 of the previous fusion (k=10, weight 0.5, no
re-ranking, measured in the same run) in recall@10 and in MRR; the report split is never
looked at for it.

Writes ``bench/results/fusion.md`` and ``.json``::

    python bench/tune_fusion.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
from labbrain.core import LabBrain  # noqa: E402
from labbrain.index.hybrid import DEPTH, fuse, link_rerank, links_among  # noqa: E402
from labbrain.index.search_query import SearchQuery  # noqa: E402
from labbrain.index.text import SearchHit  # noqa: E402
from labbrain.index.vectors import Key  # noqa: E402
from labbrain.ops.retrieval_eval import (  # noqa: E402
    gold_queries,
    paraphrase_queries,
    read_paraphrases,
    score,
)
from labbrain.ops.workflows import task_runner  # noqa: E402
from labbrain.settings import Settings  # noqa: E402
from results_file import write_result  # noqa: E402

EXPORTS = [
    ROOT.parent / "shared" / "data" / "dg-social-media-polarization.jsonld",
    ROOT / "data" / "akamatsu-sample.jsonld",
    ROOT / "data" / "dct-sample.jsonld",
    ROOT / "data" / "v0-draft-sample.jsonld",
]
KS = (1, 2, 3, 5, 10, 20, 60)
WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)
LINKS = ((0.0, 0), (0.25, 5), (0.25, 10), (0.5, 5), (0.5, 10), (1.0, 5), (1.0, 10))
#: The names of a fusion's constants, in the order of PREVIOUS and of a grid row's key.
CONSTANTS = ("k", "weight", "link_weight", "link_depth")
PREVIOUS = (10, 0.5, 0.0, 0)
GUARD = 0.01

Rankings = tuple[list[SearchHit], list[SearchHit], frozenset[str], str | None]


#: A query: (text, dataset graph, node types or None for all, gold IRIs, IRI to leave out).
Query = tuple[str, str, list[str] | None, frozenset[str], str | None]


def load_exports(brain: LabBrain) -> None:
    """Load :data:`EXPORTS` into ``brain`` (exits when one is missing)."""
    missing = [str(p) for p in EXPORTS if not p.exists()]
    if missing:
        raise SystemExit(f"missing exports: {', '.join(missing)}")
    for export in EXPORTS:
        brain.load(str(export))


def load_and_embed(brain: LabBrain) -> None:
    """Load :data:`EXPORTS` into ``brain`` and embed every node (exits when an export is
    missing or the embedding does not complete)."""
    load_exports(brain)
    runner = task_runner(brain)
    final = runner.start(runner.create("embed").task_id)
    if final.status != "completed":
        raise SystemExit(f"embed ended {final.status}")


def queries(brain: LabBrain) -> dict[str, list[Query]]:
    """Task (``claim-evidence``, ``paraphrase-tune``, ``paraphrase-report``) -> its queries
    over every dataset loaded in ``brain``."""
    graphs = sorted(row["graph"] for row in brain.datasets())
    asked: dict[str, list[Query]] = {
        "claim-evidence": [
            (q.node.title, q.node.graph, list(q.target_types), q.gold, q.node.iri)
            for q in gold_queries(brain, graphs)["claim-evidence"]
        ]
    }
    for split, pairs in paraphrase_queries(brain, graphs, read_paraphrases()).items():
        asked[f"paraphrase-{split}"] = [(q.question, g, None, q.expected, None) for q, g in pairs]
    return asked


def rankings(brain: LabBrain) -> dict[str, list[Rankings]]:
    """Task -> (keyword hits, semantic hits, gold IRIs, IRI to leave out) per query."""
    found: dict[str, list[Rankings]] = {}
    for task, asked in queries(brain).items():
        found[task] = []
        for text, graph, types, gold, leave in asked:
            legs = [
                brain.search(
                    SearchQuery(
                        text,
                        mode=mode,
                        limit=DEPTH + 1,
                        graphs=(graph,),
                        node_types=tuple(types) if types else None,
                    )
                ).hits
                for mode in ("keyword", "semantic")
            ]
            found[task].append((legs[0], legs[1], gold, leave))
    return found


def measure(
    found: list[Rankings],
    links: dict[Key, set[str]],
    k: int,
    weight: float,
    link_weight: float,
    link_depth: int,
) -> dict[str, float]:
    """recall@10, hit@10 and MRR of the fusion (k, weight) re-ranked by (link weight, link
    depth) over one task's queries."""
    ranked = []
    for keyword, semantic, gold, leave in found:
        fused = fuse([(keyword, 1.0), (semantic, weight)], k)
        if link_weight:
            fused = link_rerank(fused, links, weight=link_weight, depth=link_depth)
        ranked.append(([h.node.iri for h in fused if h.node.iri != leave][:DEPTH], gold))
    return summarise(ranked)


def summarise(ranked: list[tuple[list[str], frozenset[str]]]) -> dict[str, float]:
    """recall@10, hit@10 and MRR over (ranking, gold IRIs) pairs, one per query."""
    recall = hit = reciprocal = 0.0
    for iris, gold in ranked:
        at, rr = score(iris, gold, (10,))
        recall += at[10]
        hit += 1.0 if gold.intersection(iris[:10]) else 0.0
        reciprocal += rr
    count = max(len(ranked), 1)
    return {"recall10": recall / count, "hit10": hit / count, "mrr": reciprocal / count}


def guarded(row: dict[str, Any], base: dict[str, float]) -> bool:
    """Whether ``row`` keeps claim → evidence within :data:`GUARD` of ``base`` in recall@10
    and in MRR."""
    ce = row["claim-evidence"]
    return bool(ce["recall10"] >= base["recall10"] - GUARD and ce["mrr"] >= base["mrr"] - GUARD)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=HERE / "results" / "fusion.md")
    args = parser.parse_args()
    with LabBrain(Settings(store=":memory:")) as brain:
        load_and_embed(brain)
        model = brain.vectors.model
        found = rankings(brain)
        hits = [h for queries in found.values() for kw, sem, _, _ in queries for h in kw + sem]
        links = links_among(brain.index, hits, hits)
    grid: list[dict[str, Any]] = []
    for k in KS:
        for weight in WEIGHTS:
            for link_weight, link_depth in LINKS:
                row: dict[str, Any] = dict(
                    zip(CONSTANTS, (k, weight, link_weight, link_depth), strict=True)
                )
                for task, queries in found.items():
                    row[task] = measure(queries, links, k, weight, link_weight, link_depth)
                grid.append(row)
    previous = next(r for r in grid if key(r) == PREVIOUS)["claim-evidence"]

    def tune(row: dict[str, Any]) -> float:
        return float(row["paraphrase-tune"]["hit10"] + row["paraphrase-tune"]["mrr"])

    chosen = max(
        (r for r in grid if guarded(r, previous)),
        key=lambda r: (tune(r), -r["k"], r["weight"], -r["link_weight"], -r["link_depth"]),
    )
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": model,
        "queries": {task: len(q) for task, q in found.items()},
        "previous": dict(zip(CONSTANTS, PREVIOUS, strict=True)),
        "chosen": {name: chosen[name] for name in CONSTANTS},
        "grid": grid,
    }
    write(result, chosen, args.output)
    print(json.dumps(result["chosen"]))
    return 0


def key(row: dict[str, Any]) -> tuple[float, ...]:
    """A grid row's constants: (k, weight, link weight, link depth)."""
    return tuple(row[name] for name in CONSTANTS)


def write(result: dict[str, Any], chosen: dict[str, Any], path: Path) -> None:
    """The results as markdown (the best 15 fusions by the tune objective, and the previous
    and chosen ones) and as JSON."""
    load = os.getloadavg()
    grid = result["grid"]
    previous = next(r for r in grid if key(r) == PREVIOUS)
    plain = next(r for r in grid if key(r) == (chosen["k"], chosen["weight"], 0.0, 0))
    lines = [
        "# Hybrid fusion constants, chosen on the tune split",
        "",
        f"- Date: {result['date']}; command `python bench/tune_fusion.py`",
        f"- Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average at the end {load[0]:.2f}",
        f"- Model: {result['model']}",
        "- Queries: " + ", ".join(f"{task} {count}" for task, count in result["queries"].items()),
        "",
        "Hybrid search fuses the keyword and the semantic ranking (each list's top 50) by "
        "weighted reciprocal rank: a node scores `1/(k + keyword rank) + w/(k + semantic "
        "rank)`; then a node linked to one of the best d fused hits gains l times that hit's "
        "score (graph-aware re-ranking; l = 0: none). Every (k, w, l, d) below was scored on "
        "the same rankings. The choice maximises hit@10 + MRR on the paraphrase set's "
        "**tune** split, among the fusions that keep claim → evidence within "
        f"{GUARD} of the previous fusion (k={PREVIOUS[0]}, w={PREVIOUS[1]}, no re-ranking) in "
        "recall@10 and MRR. The report split is shown, never used.",
        "",
        "| k | w | l | d | tune hit@10 | tune MRR | report hit@10 | report MRR | claim → "
        "evidence recall@10 | claim → evidence MRR | kept |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def line(row: dict[str, Any], note: str = "") -> str:
        tune, report, ce = row["paraphrase-tune"], row["paraphrase-report"], row["claim-evidence"]
        ok = guarded(row, previous["claim-evidence"])
        return (
            f"| {row['k']} | {row['weight']} | {row['link_weight']} | {row['link_depth']} | "
            f"{tune['hit10']:.3f} | {tune['mrr']:.3f} | "
            f"{report['hit10']:.3f} | {report['mrr']:.3f} | {ce['recall10']:.3f} | "
            f"{ce['mrr']:.3f} | {'yes' if ok else 'no'}{note} |"
        )

    ranked = sorted(
        grid,
        key=lambda r: -(r["paraphrase-tune"]["hit10"] + r["paraphrase-tune"]["mrr"]),
    )
    for row in ranked[:15]:
        lines.append(line(row))
    lines += [
        "",
        "| fusion | k | w | l | d | tune hit@10 | tune MRR | report hit@10 | report MRR | "
        "claim → evidence recall@10 | claim → evidence MRR | kept |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        "| previous |" + line(previous)[1:],
        "| chosen without re-ranking |" + line(plain)[1:],
        "| **chosen** |" + line(chosen)[1:],
        "",
    ]
    write_result(path.with_suffix(".md"), "\n".join(lines))
    # One grid row a line: the file stays readable and its diffs small.
    head = json.dumps({k: v for k, v in result.items() if k != "grid"}, indent=2)[:-2]
    rows = ",\n".join("    " + json.dumps(row) for row in result["grid"])
    write_result(path.with_suffix(".json"), f'{head},\n  "grid": [\n{rows}\n  ]\n}}\n')


if __name__ == "__main__":
    raise SystemExit(main())
