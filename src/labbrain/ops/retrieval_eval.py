"""Retrieval quality measured on the lab's own graph: which search mode to trust.

The gold answers are the lab's typed relations, with no hand labels and no language model:

- **claim → evidence**: for each Claim, the Evidence that supports or opposes it;
- **question → claims, evidence**: for each Question, the Claims and Evidence that address or
  inform it.

Each query node's text (its title, the claim or question itself) is searched in every mode,
restricted to the task's target node types (the node types of all its gold answers in the
dataset) and to the query's dataset, the query node itself left out. Per mode the report gives
recall@k (the share of a query's gold answers among its first k results, averaged over
queries), hit@k (the share of queries with a gold answer among their first k results) and MRR
(the mean of 1 / rank of the first gold answer among the first :data:`DEPTH` results, 0 if
none).

- **paraphrase → node**: hand-written questions that say what a node says in other words (no
  content word shared with its title), each with its expected node(s); searched in the expected
  nodes' dataset among every node type. The set shipped with labbrain
  (``paraphrases.jsonl`` beside this module: questions about the real CC0 corpus and the sample
  data) is split in two: ``tune`` (what the fusion constants of
  :mod:`labbrain.index.hybrid` were chosen on) and ``report`` (never used for choosing), reported
  as two tasks. Only questions whose expected nodes are loaded are asked; a lab can pass its own
  set (same format) with ``questions=``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from labbrain.core import LabBrain
from labbrain.errors import DatasetNotFound, InvalidArgument, SemanticUnavailable
from labbrain.index.embeddings import INSTALL_HINT, provider_for, require_semantic
from labbrain.index.hybrid import EMBED_HINT, MODES
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import IndexedNode
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX, DG, LB, dataset_graph
from labbrain.store import templates

DEPTH = 50
KS: tuple[int, ...] = (5, 10)
#: The paraphrase questions shipped with labbrain (see module doc).
PARAPHRASES = Path(__file__).with_name("paraphrases.jsonl")
SPLITS = ("tune", "report")


@dataclass(frozen=True)
class EvalTask:
    """One kind of question the graph answers: query nodes of a kind, and as gold the nodes
    of the target kinds related to them by the given core relations."""

    name: str
    label: str
    query_kind: str
    relations: frozenset[str]
    target_kinds: frozenset[str]


TASKS: tuple[EvalTask, ...] = (
    EvalTask(
        "claim-evidence",
        "claim → evidence",
        DG + "Claim",
        frozenset({DG + "supports", DG + "opposes"}),
        frozenset({DG + "Evidence"}),
    ),
    EvalTask(
        "question-claims-evidence",
        "question → claims, evidence",
        DG + "Question",
        frozenset({DG + "addresses", LB + "informs"}),
        frozenset({DG + "Claim", DG + "Evidence"}),
    ),
)


@dataclass(frozen=True)
class GoldQuery:
    """One query node and the IRIs of its gold answers (in the query's dataset)."""

    node: IndexedNode
    gold: frozenset[str]
    target_types: tuple[str, ...]


@dataclass(frozen=True)
class Paraphrase:
    """One hand-written question, the IRIs of the nodes it asks for, and its split."""

    id: str
    question: str
    expected: frozenset[str]
    split: str


@dataclass
class ModeScores:
    """The scores of one mode on one task."""

    mode: str
    recall: dict[int, float]
    mrr: float
    hit: dict[int, float] = field(default_factory=dict)


@dataclass
class TaskReport:
    """One task: how many queries and gold pairs it has, and the scores of each mode."""

    task: str
    label: str
    queries: int
    pairs: int
    scores: list[ModeScores] = field(default_factory=list)


@dataclass
class EvalReport:
    """Every task's scores, and the modes that could not run (with why)."""

    datasets: list[str]
    ks: tuple[int, ...]
    depth: int
    tasks: list[TaskReport]
    skipped: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return asdict(self)

    def metric_names(self) -> list[str]:
        """Names of the figures a table or chart shows per mode: recall@k for each k,
        hit@ the largest k, MRR."""
        return [f"recall@{k}" for k in self.ks] + [f"hit@{max(self.ks)}", "MRR"]

    def metric_values(self, scores: ModeScores) -> list[float]:
        """The figures of :meth:`metric_names`, in that order."""
        top = max(self.ks)
        return [scores.recall[k] for k in self.ks] + [scores.hit.get(top, 0.0), scores.mrr]


def gold_queries(brain: LabBrain, graphs: Sequence[str]) -> dict[str, list[GoldQuery]]:
    """Task name -> its queries with their gold answers, from the typed relations of
    ``graphs``; queries ordered by dataset and uid, only nodes the text index holds."""
    pairs: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for graph in graphs:
        for row in templates.run(brain.store, "retrieval_gold", graph=graph):
            for task in TASKS:
                if (
                    row["relation"] in task.relations
                    and row["queryKind"] == task.query_kind
                    and row["targetKind"] in task.target_kinds
                ):
                    pairs[(task.name, row["graph"], row["query"])].add(row["target"])
    found: dict[str, list[GoldQuery]] = {task.name: [] for task in TASKS}
    by_graph: dict[str, set[str]] = defaultdict(set)
    for (_, graph, query), targets in pairs.items():
        by_graph[graph].update({query, *targets})
    nodes = {
        (graph, iri): node
        for graph, iris in by_graph.items()
        for iri, node in brain.index.nodes_by_iri(iris, graph).items()
    }
    answers: dict[tuple[str, str], list[tuple[IndexedNode, list[IndexedNode]]]] = defaultdict(list)
    for (task_name, graph, query), targets in pairs.items():
        node = nodes.get((graph, query))
        known = [nodes[(graph, t)] for t in targets if (graph, t) in nodes and t != query]
        if node is not None and known and node.title.strip():
            answers[(task_name, graph)].append((node, known))
    for (task_name, _graph), asked in answers.items():
        # Every query of a task searches the same node types: those of the task's answers.
        types = tuple(sorted({target.node_type for _, known in asked for target in known}))
        for node, known in asked:
            gold = frozenset(target.iri for target in known)
            found[task_name].append(GoldQuery(node, gold, types))
    for listed in found.values():
        listed.sort(key=lambda q: (q.node.graph, q.node.uid))
    return found


def unavailable_modes(brain: LabBrain, graphs: Sequence[str]) -> dict[str, str]:
    """The modes among semantic and hybrid that cannot run here, with why."""
    try:
        require_semantic()
        provider = provider_for(brain.settings)
        if not brain.vectors.usable(provider.model_id, graphs):
            raise SemanticUnavailable(f"no vectors of {provider.model_id} yet; {EMBED_HINT}")
    except SemanticUnavailable as error:
        return {"semantic": error.reason, "hybrid": error.reason}
    return {}


def score(
    ranked: Sequence[str], gold: frozenset[str], ks: Iterable[int]
) -> tuple[dict[int, float], float]:
    """(recall@k for each k, reciprocal rank of the first gold answer) of one ranking."""
    recall = {k: len(gold.intersection(ranked[:k])) / len(gold) for k in ks}
    first = next((rank for rank, iri in enumerate(ranked, 1) if iri in gold), None)
    return recall, (1.0 / first if first else 0.0)


def read_paraphrases(path: Path = PARAPHRASES) -> list[Paraphrase]:
    """The questions of a paraphrase set: JSON lines of ``{"id", "question", "expected":
    [IRI, ...], "split": "tune" | "report"}``. Raises InvalidArgument naming the line and
    what is wrong with it (unreadable file, bad JSON, a missing or mistyped field, a
    repeated id)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgument("questions", f"{path}: cannot be read ({error})") from None
    found: list[Paraphrase] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            item = json.loads(line)
        except ValueError as error:
            raise InvalidArgument("questions", f"{where}: not JSON ({error})") from None
        if not isinstance(item, dict):
            raise InvalidArgument("questions", f"{where}: expected an object")
        ident, question = item.get("id"), item.get("question")
        expected, split = item.get("expected"), item.get("split")
        if not isinstance(ident, str) or not ident or ident in seen:
            raise InvalidArgument("questions", f"{where}: needs a unique string id")
        if not isinstance(question, str) or not question.strip():
            raise InvalidArgument("questions", f"{where}: needs a non-empty question")
        if (
            not isinstance(expected, list)
            or not expected
            or not all(isinstance(iri, str) and iri for iri in expected)
        ):
            raise InvalidArgument("questions", f"{where}: expected must list node IRIs")
        if split not in SPLITS:
            raise InvalidArgument("questions", f"{where}: split must be one of {SPLITS}")
        seen.add(ident)
        found.append(Paraphrase(ident, question.strip(), frozenset(expected), split))
    return found


def paraphrase_queries(
    brain: LabBrain, graphs: Sequence[str], questions: Sequence[Paraphrase]
) -> dict[str, list[tuple[Paraphrase, str]]]:
    """Split -> (question, the dataset graph of its expected nodes) for the questions whose
    expected nodes are all indexed in one of ``graphs``."""
    wanted = set().union(*(q.expected for q in questions)) if questions else set()
    where: dict[str, set[str]] = defaultdict(set)
    for graph in graphs:
        for iri in brain.index.nodes_by_iri(sorted(wanted), graph):
            where[iri].add(graph)
    asked: dict[str, list[tuple[Paraphrase, str]]] = {split: [] for split in SPLITS}
    for question in questions:
        holders = set.intersection(*(where.get(iri, set()) for iri in question.expected))
        if holders:
            asked[question.split].append((question, min(holders)))
    return asked


@dataclass(frozen=True)
class _Asked:
    """One search of an evaluation: its text, where it looks, and the answers it should find."""

    text: str
    graph: str
    node_types: tuple[str, ...] | None
    gold: frozenset[str]
    leave_out: str | None = None


def _scores(
    brain: LabBrain, mode: str, asked: Sequence[_Asked], ks: tuple[int, ...], depth: int
) -> ModeScores:
    """recall@k, hit@k and MRR of ``mode`` over ``asked`` (zeros when nothing is asked)."""
    recalls = {k: 0.0 for k in ks}
    hits = {k: 0.0 for k in ks}
    reciprocal = 0.0
    for query in asked:
        found = brain.search(
            SearchQuery(
                query.text,
                mode=mode,
                limit=depth + 1,
                graphs=(query.graph,),
                node_types=query.node_types or None,
            )
        )
        ranked = [h.node.iri for h in found.hits if h.node.iri != query.leave_out][:depth]
        recall, rr = score(ranked, query.gold, ks)
        for k in ks:
            recalls[k] += recall[k]
            hits[k] += 1.0 if query.gold.intersection(ranked[:k]) else 0.0
        reciprocal += rr
    count = max(len(asked), 1)
    return ModeScores(
        mode,
        {k: recalls[k] / count for k in ks},
        reciprocal / count,
        {k: hits[k] / count for k in ks},
    )


def evaluate(
    brain: LabBrain,
    dataset: str | None = None,
    *,
    modes: Sequence[str] = MODES,
    ks: tuple[int, ...] = KS,
    depth: int = DEPTH,
    questions: Path | None = PARAPHRASES,
) -> EvalReport:
    """Run every task's queries in every mode (see module doc) over one dataset (slug or IRI)
    or all of them: the relation tasks, then the paraphrase questions of ``questions`` (None:
    none) that ask for loaded nodes, as one task per split. Modes that cannot run (no extra,
    model or vectors) are reported in ``skipped``. Raises DatasetNotFound for an unknown
    dataset and InvalidArgument for a malformed question file."""
    known = [row["graph"] for row in brain.datasets()]
    if dataset:
        graph = dataset if dataset.startswith(DATASET_GRAPH_PREFIX) else dataset_graph(dataset)
        if graph not in known:
            raise DatasetNotFound(dataset, [g.removeprefix(DATASET_GRAPH_PREFIX) for g in known])
        graphs = [graph]
    else:
        graphs = sorted(known)
    for mode in modes:
        if mode not in MODES:
            raise InvalidArgument("mode", f"{mode!r}; one of {', '.join(MODES)}")
    paraphrases = read_paraphrases(questions) if questions is not None else []
    skipped = {m: r for m, r in unavailable_modes(brain, graphs).items() if m in modes}
    runnable = [m for m in modes if m not in skipped]
    report = EvalReport(
        datasets=[g.removeprefix(DATASET_GRAPH_PREFIX) for g in graphs],
        ks=ks,
        depth=depth,
        tasks=[],
        skipped=skipped,
    )
    gold = gold_queries(brain, graphs)
    work: list[tuple[TaskReport, list[_Asked]]] = []
    for task in TASKS:
        relation_queries = gold[task.name]
        entry = TaskReport(
            task.name,
            task.label,
            len(relation_queries),
            sum(len(q.gold) for q in relation_queries),
        )
        work.append(
            (
                entry,
                [
                    _Asked(q.node.title, q.node.graph, q.target_types, q.gold, q.node.iri)
                    for q in relation_queries
                ],
            )
        )
    if paraphrases:
        for split, pairs in paraphrase_queries(brain, graphs, paraphrases).items():
            entry = TaskReport(
                f"paraphrase-{split}",
                f"paraphrase → node ({split})",
                len(pairs),
                sum(len(q.expected) for q, _ in pairs),
            )
            work.append((entry, [_Asked(q.question, g, None, q.expected) for q, g in pairs]))
    for entry, asked in work:
        for mode in runnable:
            entry.scores.append(_scores(brain, mode, asked, ks, depth))
        report.tasks.append(entry)
    return report


def write_chart(report: EvalReport, path: Path) -> Path:
    """Draw the report as grouped bars (one panel per task with queries) into a PNG file.
    Raises SemanticUnavailable when matplotlib (in the semantic extra) is missing."""
    try:
        import matplotlib
    except ImportError:
        raise SemanticUnavailable(f"the chart needs matplotlib; {INSTALL_HINT}") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in report.tasks if t.queries and t.scores]
    panels = max(len(tasks), 1)
    figure, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    metrics = report.metric_names()
    colours = {"keyword": "#4c72b0", "semantic": "#dd8452", "hybrid": "#55a868"}
    for axis, task in zip(axes[0], tasks, strict=False):
        width = 0.8 / len(task.scores)
        for position, scores in enumerate(task.scores):
            values = report.metric_values(scores)
            xs = [i + (position - (len(task.scores) - 1) / 2) * width for i in range(len(metrics))]
            bars = axis.bar(
                xs, values, width, label=scores.mode, color=colours.get(scores.mode, "#8c8c8c")
            )
            axis.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        axis.set_xticks(range(len(metrics)), metrics)
        axis.set_ylim(0, 1.08)
        axis.set_title(f"{task.label} ({task.queries} queries, {task.pairs} pairs)", fontsize=10)
        axis.legend(fontsize=8, loc="upper left")
    if not tasks:
        axes[0][0].text(0.5, 0.5, "no queries with gold answers", ha="center", va="center")
        axes[0][0].set_axis_off()
    figure.suptitle(
        f"Search quality on {', '.join(report.datasets) or 'no datasets'}\n"
        "(gold answers: the lab's typed relations; paraphrases: the expected nodes)",
        fontsize=10,
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
