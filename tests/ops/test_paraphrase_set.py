"""The paraphrase questions of the retrieval evaluation (``labbrain/ops/paraphrases.jsonl``),
checked from first principles: the file's shape, the tune/report split, that every expected IRI
is a titled discourse node of the real corpus or of a sample export, and that no question shares
a content word with the title of a node it asks for.

Nothing here uses labbrain's own code: the exports are read with the json module and the word
rule is spelled out below, so a change to the search engine cannot change what these tests
accept."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PARAPHRASES = REPO / "src" / "labbrain" / "ops" / "paraphrases.jsonl"
#: The real corpus lives beside the repository and may be missing on some machines.
CORPUS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "dg-social-media-polarization.jsonld"
)
#: Where the corpus's ``pages:`` prefix points (its @context), known without reading it.
CORPUS_PAGES = "https://roamresearch.com/#/app/dg-social-media-polarization/page/"
SAMPLES = tuple(
    REPO / "data" / name
    for name in ("akamatsu-sample.jsonld", "dct-sample.jsonld", "v0-draft-sample.jsonld")
)

KEYS = ["id", "question", "expected", "split"]
SPLITS = ("tune", "report")
MIN_SPLIT_SHARE = 0.4
MIN_CORPUS_QUESTIONS = 100
MIN_SAMPLE_QUESTIONS = 25
#: A question is a short search: this many words (split on white space), both ends included.
MIN_WORDS, MAX_WORDS = 5, 20
#: Two words clash when equal or when both have at least this many letters and begin alike.
PREFIX = 5

#: English stop words (the common NLTK list, with contractions reduced to the pieces that
#: splitting on non-letters leaves): the only words a question may share with a title.
STOP_WORD_LIST = """
    a about above after again against ain all am an and any are aren as at be because been
    before being below between both but by can couldn d did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just ll m ma me mightn more
    most mustn my myself needn no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    wouldn y you your yours yourself yourselves
    """
STOP_WORDS = frozenset(STOP_WORD_LIST.split())


def in_ci() -> bool:
    """True when the ``CI`` environment variable is set (to anything but "", 0, false, no),
    as in tests/conftest.py."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def content_words(text: str) -> set[str]:
    """The words of ``text`` after lowercasing, splitting on what is not a letter or a digit,
    and dropping the stop words."""
    return {word for word in re.findall(r"[^\W_]+", text.lower()) if word not in STOP_WORDS}


def clash(word: str, other: str) -> bool:
    """Whether two content words count as shared: equal, or with the same first five letters
    ("polarized" and "polarization" clash; "divided" and "polarization" do not)."""
    if word == other:
        return True
    return len(word) >= PREFIX and len(other) >= PREFIX and word[:PREFIX] == other[:PREFIX]


def shared_words(question: str, title: str) -> list[tuple[str, str]]:
    """The (question word, title word) pairs that clash."""
    title_words = content_words(title)
    return sorted(
        (word, other)
        for word in content_words(question)
        for other in title_words
        if clash(word, other)
    )


@dataclass(frozen=True)
class Node:
    """A discourse node of an export: its expanded IRI, title and the export it comes from."""

    iri: str
    title: str
    export: str


def expand(compact: str, context: dict[str, Any]) -> str:
    """A compact IRI (``prefix:rest``) expanded with a prefix of ``context``; other IRIs as
    they are."""
    prefix, colon, rest = compact.partition(":")
    base = context.get(prefix)
    if colon and isinstance(base, str) and not rest.startswith("//"):
        return base + rest
    return compact


def read_nodes(path: Path) -> dict[str, Node]:
    """IRI -> node for the discourse nodes of one export: the @graph entries whose @type is one
    of the export's node schemas and that have a non-empty title (not node schemas, relation
    definitions or relation instances)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    context = document["@context"]
    graph = document["@graph"]
    schemas = {entry["@id"] for entry in graph if entry.get("@type") == "nodeSchema"}
    nodes: dict[str, Node] = {}
    for entry in graph:
        title = entry.get("title")
        if entry.get("@type") in schemas and isinstance(title, str) and title.strip():
            iri = expand(entry["@id"], context)
            nodes[iri] = Node(iri, title, path.name)
    return nodes


@dataclass(frozen=True)
class Question:
    """One line of the paraphrase set."""

    line: int
    ident: str
    text: str
    expected: tuple[str, ...]
    split: str

    @property
    def on_corpus(self) -> bool:
        """Whether it asks for nodes of the real corpus (by their IRIs)."""
        return any(iri.startswith(CORPUS_PAGES) for iri in self.expected)


def read_lines() -> list[tuple[int, Any]]:
    """(line number, parsed JSON) for every line of the paraphrase file."""
    lines = PARAPHRASES.read_text(encoding="utf-8").splitlines()
    parsed: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            parsed.append((number, json.loads(line)))
        except ValueError as error:
            pytest.fail(f"line {number} is not JSON: {error}")
    return parsed


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    """The paraphrase set, each line already checked to be an object with the four keys."""
    found = []
    for number, item in read_lines():
        assert isinstance(item, dict), f"line {number}: not an object"
        assert list(item) == KEYS, f"line {number}: keys {list(item)}, expected {KEYS} in order"
        found.append(
            Question(number, item["id"], item["question"], tuple(item["expected"]), item["split"])
        )
    return found


@pytest.fixture(scope="module")
def sample_nodes() -> dict[str, Node]:
    """The discourse nodes of the three sample exports (always in the repository)."""
    nodes: dict[str, Node] = {}
    for path in SAMPLES:
        nodes.update(read_nodes(path))
    return nodes


def check_targets(asked: Iterable[Question], nodes: dict[str, Node]) -> list[str]:
    """What is wrong with the expected nodes of ``asked`` given the nodes they should be among:
    an IRI that is no titled node, nodes from more than one export, a title word reused."""
    problems = []
    for question in asked:
        found = [nodes.get(iri) for iri in question.expected]
        missing = [iri for iri, node in zip(question.expected, found, strict=True) if not node]
        if missing:
            problems.append(f"{question.ident}: no titled discourse node {missing}")
            continue
        exports = {node.export for node in found if node}
        if len(exports) > 1:
            problems.append(f"{question.ident}: expected nodes span exports {sorted(exports)}")
        for node in found:
            assert node is not None
            clashes = shared_words(question.text, node.title)
            if clashes:
                problems.append(f"{question.ident}: shares {clashes} with {node.title!r}")
    return problems


# ------------------------------------------------------------------------------ the file's shape
def test_every_line_is_an_object_with_the_four_keys_in_order() -> None:
    lines = read_lines()
    assert lines, "the paraphrase set is empty"
    for number, item in lines:
        assert isinstance(item, dict), f"line {number}: not an object"
        assert list(item) == KEYS, f"line {number}: keys {list(item)}, expected {KEYS} in order"
        assert isinstance(item["question"], str) and item["question"].strip(), f"line {number}"
        expected = item["expected"]
        assert isinstance(expected, list) and expected, f"line {number}: expected is no list"
        assert all(isinstance(iri, str) and iri for iri in expected), f"line {number}"
        assert len(set(expected)) == len(expected), f"line {number}: an IRI is listed twice"


def test_ids_are_unique_and_numbered_in_file_order(questions: list[Question]) -> None:
    idents = [question.ident for question in questions]
    assert len(set(idents)) == len(idents), "repeated ids"
    for number, question in enumerate(questions, 1):
        assert re.fullmatch(r"p-\d{3}", question.ident), f"line {question.line}: {question.ident}"
        assert question.ident == f"p-{number:03d}", f"line {question.line}: out of order"


def test_splits_are_tune_or_report_and_both_hold_enough(questions: list[Question]) -> None:
    for question in questions:
        assert question.split in SPLITS, f"{question.ident}: split {question.split!r}"
    for split in SPLITS:
        share = sum(question.split == split for question in questions) / len(questions)
        assert share >= MIN_SPLIT_SHARE, f"{split} holds only {share:.0%} of the questions"


def test_questions_are_short_searches(questions: list[Question]) -> None:
    for question in questions:
        words = len(question.text.split())
        assert MIN_WORDS <= words <= MAX_WORDS, f"{question.ident}: {words} words"


def test_enough_questions_on_the_corpus_and_on_the_samples(
    questions: list[Question], sample_nodes: dict[str, Node]
) -> None:
    on_corpus = [question for question in questions if question.on_corpus]
    on_samples = [
        question for question in questions if all(iri in sample_nodes for iri in question.expected)
    ]
    assert len(on_corpus) >= MIN_CORPUS_QUESTIONS, f"{len(on_corpus)} corpus questions"
    assert len(on_samples) >= MIN_SAMPLE_QUESTIONS, f"{len(on_samples)} sample questions"


# ------------------------------------------------------------------------- the expected nodes
def test_sample_questions_ask_for_titled_nodes_without_their_words(
    questions: list[Question], sample_nodes: dict[str, Node]
) -> None:
    asked = [question for question in questions if not question.on_corpus]
    assert asked, "no question asks for sample nodes"
    problems = check_targets(asked, sample_nodes)
    assert not problems, "\n".join(problems)


def test_corpus_questions_ask_for_titled_nodes_without_their_words(
    questions: list[Question],
) -> None:
    if not CORPUS.is_file():
        reason = f"needs the real corpus at {CORPUS}"
        if in_ci():
            pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
        pytest.skip(reason)
    asked = [question for question in questions if question.on_corpus]
    problems = check_targets(asked, read_nodes(CORPUS))
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- the word rule
@pytest.mark.parametrize(
    ("question", "title", "shared"),
    [
        ("Are Twitter users divided?", "Polarization on Twitter", [("twitter", "twitter")]),
        ("polarized feeds", "[[CLM]] - polarization rises", [("polarized", "polarization")]),
        ("divided users", "[[CLM]] - Polarization rises", []),
        ("does it work for all of them", "What is it for?", []),
        ("the cell", "Cells crawl", []),
        ("pN/nm at 0.15", "0.15 pN/nm", [("0", "0"), ("15", "15"), ("nm", "nm"), ("pn", "pn")]),
    ],
)
def test_the_word_rule(question: str, title: str, shared: list[tuple[str, str]]) -> None:
    assert shared_words(question, title) == shared
