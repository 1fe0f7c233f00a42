"""The paraphrase task of ``labbrain eval-retrieval``: questions in other words than the nodes
they ask for, scored per split (tune / report), from the shipped set or a lab's own file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain import cli
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument
from labbrain.ops.retrieval_eval import PARAPHRASES, evaluate, read_paraphrases
from labbrain.ops.workflows import task_runner

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"


@pytest.fixture(scope="module")
def brain() -> Iterator[LabBrain]:
    """The sample in memory, every node embedded."""
    with LabBrain(settings_for(":memory:")) as loaded:
        loaded.load(str(SAMPLE))
        runner = task_runner(loaded)
        assert runner.start(runner.create("embed").task_id).status == "completed"
        yield loaded


def titled(brain: LabBrain, count: int) -> list[tuple[str, str]]:
    """(IRI, title) of the first ``count`` sample nodes with a title of several words."""
    nodes, _ = brain.index.nodes(limit=brain.index.count())
    chosen = sorted((n.iri, n.title) for n in nodes if len(n.title.split()) >= 4)
    return chosen[:count]


def write_questions(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_questions_are_scored_per_split_and_only_when_their_nodes_are_loaded(
    brain: LabBrain, tmp_path: Path
) -> None:
    (x, x_title), (y, y_title), (z, _) = titled(brain, 3)
    questions = write_questions(
        tmp_path / "q.jsonl",
        [
            {"id": "a", "question": x_title, "expected": [x], "split": "tune"},
            {"id": "b", "question": y_title, "expected": [y, z], "split": "report"},
            {"id": "c", "question": "anything", "expected": [PAGE + "nope"], "split": "report"},
            {"id": "d", "question": "anything", "expected": [x, PAGE + "nope"], "split": "tune"},
        ],
    )
    report = evaluate(brain, modes=["keyword", "hybrid"], questions=questions)
    tasks = {task.task: task for task in report.tasks}
    assert (tasks["paraphrase-tune"].queries, tasks["paraphrase-tune"].pairs) == (1, 1)
    assert (tasks["paraphrase-report"].queries, tasks["paraphrase-report"].pairs) == (1, 2)
    assert tasks["paraphrase-tune"].label == "paraphrase → node (tune)"
    # keyword figures recomputed from the text index: every node type, the sample's graph
    for task, (question, gold) in {
        "paraphrase-tune": (x_title, {x}),
        "paraphrase-report": (y_title, {y, z}),
    }.items():
        ranked = [h.node.iri for h in brain.index.search(question, limit=51, graphs=[SAMPLE_GRAPH])]
        keyword = next(s for s in tasks[task].scores if s.mode == "keyword")
        first = next((i for i, iri in enumerate(ranked[:50], 1) if iri in gold), None)
        assert keyword.mrr == pytest.approx(1 / first if first else 0.0)
        assert keyword.hit[10] == (1.0 if gold & set(ranked[:10]) else 0.0)
        assert keyword.recall[10] == pytest.approx(len(gold & set(ranked[:10])) / len(gold))
    assert [s.mode for s in tasks["paraphrase-report"].scores] == ["keyword", "hybrid"]


def test_the_shipped_set_asks_the_questions_about_the_sample(brain: LabBrain) -> None:
    shipped = [json.loads(line) for line in PARAPHRASES.read_text().splitlines() if line]
    about = [q for q in shipped if all(iri.startswith(PAGE) for iri in q["expected"])]
    report = evaluate(brain, modes=["keyword"])
    tasks = {task.task: task for task in report.tasks}
    for split in ("tune", "report"):
        mine = [q for q in about if q["split"] == split]
        assert tasks[f"paraphrase-{split}"].queries == len(mine) > 0
        assert tasks[f"paraphrase-{split}"].pairs == sum(len(q["expected"]) for q in mine)
    none = evaluate(brain, modes=["keyword"], questions=None)
    assert [task.task for task in none.tasks] == ["claim-evidence", "question-claims-evidence"]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected an object"),
        ('{"id": "a", "question": "q", "expected": ["urn:x"], "split": "tune"}', "unique"),
        ('{"question": "q", "expected": ["urn:x"], "split": "tune"}', "unique string id"),
        ('{"id": "b", "question": " ", "expected": ["urn:x"], "split": "tune"}', "question"),
        ('{"id": "b", "question": "q", "expected": [], "split": "tune"}', "node IRIs"),
        ('{"id": "b", "question": "q", "expected": "urn:x", "split": "tune"}', "node IRIs"),
        ('{"id": "b", "question": "q", "expected": [""], "split": "tune"}', "node IRIs"),
        ('{"id": "b", "question": "q", "expected": ["urn:x"], "split": "train"}', "split"),
    ],
)
def test_a_malformed_question_file_is_one_clear_error(
    tmp_path: Path, line: str, fragment: str
) -> None:
    path = tmp_path / "q.jsonl"
    first = '{"id": "a", "question": "q", "expected": ["urn:x"], "split": "tune"}'
    path.write_text(f"{first}\n{line}\n", encoding="utf-8")
    with pytest.raises(InvalidArgument) as caught:
        read_paraphrases(path)
    assert fragment in caught.value.reason and str(path) in caught.value.reason


def test_an_unreadable_question_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot be read"):
        read_paraphrases(tmp_path / "missing.jsonl")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"id": "\xe9"}\n')
    with pytest.raises(InvalidArgument, match="cannot be read"):
        read_paraphrases(tmp_path / "latin1.jsonl")


def test_blank_lines_are_skipped_and_the_shipped_set_reads(tmp_path: Path) -> None:
    path = write_questions(
        tmp_path / "q.jsonl",
        [{"id": "a", "question": " q ", "expected": ["urn:x", "urn:x"], "split": "report"}],
    )
    path.write_text("\n" + path.read_text() + "\n\n", encoding="utf-8")
    (only,) = read_paraphrases(path)
    assert (only.id, only.question, only.expected, only.split) == (
        "a",
        "q",
        frozenset({"urn:x"}),
        "report",
    )
    assert len(read_paraphrases()) == len(PARAPHRASES.read_text().splitlines())


def invoke(store: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--store", str(store), *args])


def test_eval_retrieval_reports_the_paraphrase_splits(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli.out, "width", 1000)
    assert invoke(store_dir, "load", str(SAMPLE)).exit_code == 0
    shown = invoke(store_dir, "eval-retrieval", "--no-chart", "--mode", "keyword")
    assert shown.exit_code == 0, shown.stderr
    text = ANSI.sub("", shown.stdout)
    assert "paraphrase → node (tune)" in text and "paraphrase → node (report)" in text
    assert "hit@10" in text
    without = invoke(store_dir, "eval-retrieval", "--no-chart", "--no-questions", "--json")
    assert [t["task"] for t in json.loads(without.stdout)["tasks"]] == [
        "claim-evidence",
        "question-claims-evidence",
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    failed = invoke(store_dir, "eval-retrieval", "--no-chart", "--questions", str(bad))
    assert failed.exit_code == InvalidArgument.exit_code
    lines = ANSI.sub("", failed.stderr).strip().splitlines()
    assert len(lines) == 1 and "line 1: needs a unique string id" in lines[0]
