"""Choose the ONNX encoder's title weight on the tune split of the paraphrase set.

A node is embedded from a titled text (its title on the first line, then its body); the
encoder's vector of it is the whole text's plus ``w`` times its title's (the title's word
pieces pooled in the context of the whole text), normalised (``labbrain.index.onnx_encoder``).

Loads the real corpus (``../shared/data``) and the sample data into an in-memory store,
encodes every node's text once into its two parts (``OnnxProvider.encode_parts``), and for
each weight ``w`` of a grid ranks the nodes by cosine to each query, as semantic search does
below its large-index size (exact, within the query's dataset and node types; each list's top
``labbrain.index.hybrid.DEPTH``). The queries are those of ``bench/tune_fusion.py``: the
paraphrase set's questions and ``labbrain eval-retrieval``'s claim → evidence. The choice is
the best hit@10 + MRR on the **tune** split among the weights that keep semantic claim →
evidence within 0.01 of ``w = 0`` (the whole text alone) in recall@10 and in MRR; the report
split is never looked at for it. Run ``bench/tune_fusion.py`` after a change of weight: the
fusion constants are chosen on the vectors the encoder makes.

Writes ``bench/results/title-weight.md`` and ``.json``::

    python bench/tune_title_weight.py
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

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
from labbrain.core import LabBrain  # noqa: E402
from labbrain.index.embeddings import provider_for  # noqa: E402
from labbrain.index.hybrid import DEPTH  # noqa: E402
from labbrain.index.onnx_encoder import OnnxProvider  # noqa: E402
from labbrain.index.vectors import node_text, one_line  # noqa: E402
from labbrain.settings import Settings  # noqa: E402
from results_file import write_result  # noqa: E402
from tune_fusion import GUARD, guarded, load_exports, queries, summarise  # noqa: E402

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)
BATCH = 32


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=HERE / "results" / "title-weight.md")
    args = parser.parse_args()
    settings = Settings(store=":memory:")
    provider = provider_for(settings)
    if not isinstance(provider, OnnxProvider):
        parser.error("the title weight is the ONNX runtime's; unset LABBRAIN_EMBEDDING_RUNTIME")
    with LabBrain(settings) as brain:
        load_exports(brain)
        nodes, _ = brain.index.nodes(limit=brain.index.count())
        texts = [node_text(n.title, brain.index.content(n.graph, n.iri)) for n in nodes]
        asked = queries(brain)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    whole = np.zeros((len(texts), provider.dimension), np.float32)
    title = np.zeros_like(whole)
    for start in range(0, len(order), BATCH):
        rows = order[start : start + BATCH]
        whole[rows], title[rows] = provider.encode_parts([texts[i] for i in rows])
    graphs = np.array([n.graph for n in nodes])
    types = np.array([n.node_type or "" for n in nodes])
    iris = [n.iri for n in nodes]
    found: dict[str, list[tuple[Any, np.ndarray, frozenset[str], str | None]]] = {}
    for task, items in asked.items():
        found[task] = []
        for text, graph, node_types, gold, leave in items:
            among = graphs == graph
            if node_types:
                among &= np.isin(types, node_types)
            query = provider.embed([one_line(text)])[0]
            found[task].append((query, np.flatnonzero(among), gold, leave))
    grid = [{"weight": w, **measure(w, whole, title, iris, found)} for w in WEIGHTS]
    plain = grid[0]["claim-evidence"]

    def kept(row: dict[str, Any]) -> bool:
        return guarded(row, plain)

    chosen = max(
        (row for row in grid if kept(row)),
        key=lambda r: (r["paraphrase-tune"]["hit10"] + r["paraphrase-tune"]["mrr"], -r["weight"]),
    )
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": provider.model_id,
        "nodes": len(nodes),
        "queries": {task: len(items) for task, items in asked.items()},
        "chosen": chosen["weight"],
        "grid": grid,
    }
    write(result, kept, args.output)
    print(json.dumps({"chosen": chosen["weight"]}))
    return 0


def measure(
    weight: float,
    whole: np.ndarray,
    title: np.ndarray,
    iris: list[str],
    found: dict[str, list[tuple[Any, np.ndarray, frozenset[str], str | None]]],
) -> dict[str, dict[str, float]]:
    """Task -> recall@10, hit@10 and MRR of exact cosine ranking over the vectors made with
    ``weight``."""
    vectors = whole + weight * title
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out: dict[str, dict[str, float]] = {}
    for task, items in found.items():
        ranked = []
        for query, among, gold, leave in items:
            best = among[np.argsort(-(vectors[among] @ query), kind="stable")]
            ranked.append(([iris[i] for i in best[: DEPTH + 1] if iris[i] != leave][:DEPTH], gold))
        out[task] = summarise(ranked)
    return out


def write(result: dict[str, Any], kept: Any, path: Path) -> None:
    """The results as markdown (every weight, the chosen one marked) and as JSON."""
    load = os.getloadavg()
    lines = [
        "# Title weight of the ONNX encoder, chosen on the tune split",
        "",
        f"- Date: {result['date']}; command `python bench/tune_title_weight.py`",
        f"- Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average at the end {load[0]:.2f}",
        f"- Model: {result['model']} (the weight in its name is the shipped one; every row "
        "below was computed from the same two parts of each vector)",
        f"- Nodes: {result['nodes']}; queries: "
        + ", ".join(f"{task} {count}" for task, count in result["queries"].items()),
        "",
        "A node's vector is `normalise(whole + w * title)`: its whole text's vector and its "
        "title's (the title's word pieces pooled in the context of the whole text), from one "
        "run of the model. Semantic search alone, exact cosine ranking. The choice maximises "
        "hit@10 + MRR on the paraphrase set's **tune** split among the weights that keep "
        f"claim → evidence within {GUARD} of w = 0 in recall@10 and MRR. The report split is "
        "shown, never used.",
        "",
        "| w | tune hit@10 | tune MRR | report hit@10 | report MRR | claim → evidence "
        "recall@10 | claim → evidence MRR | kept |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["grid"]:
        tune, report, ce = row["paraphrase-tune"], row["paraphrase-report"], row["claim-evidence"]
        mark = "**" if row["weight"] == result["chosen"] else ""
        lines.append(
            f"| {mark}{row['weight']}{mark} | {tune['hit10']:.3f} | {tune['mrr']:.3f} | "
            f"{report['hit10']:.3f} | {report['mrr']:.3f} | {ce['recall10']:.3f} | "
            f"{ce['mrr']:.3f} | {'yes' if kept(row) else 'no'} |"
        )
    lines += ["", f"Chosen: w = {result['chosen']}.", ""]
    write_result(path.with_suffix(".md"), "\n".join(lines))
    write_result(path.with_suffix(".json"), json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
