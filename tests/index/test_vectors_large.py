"""The vector index from :data:`labbrain.index.vectors.LARGE` vectors on: int8 rows searched
with usearch, checked against the exact float32 answer computed here with numpy."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import require
from labbrain.index import vectors as vectors_module
from labbrain.index.vectors import EmbedPlan, PendingText, VectorIndex

GRAPHS = ("urn:g:a", "urn:g:b")
COUNT, DIMENSION = 3000, 384


class Fixed:
    """A provider that returns prepared rows in order."""

    model_id = "fixed"
    dimension = DIMENSION

    def __init__(self, rows: np.ndarray) -> None:
        self.rows, self.at = rows, 0

    def embed(self, texts: list[str]) -> np.ndarray:
        out = self.rows[self.at : self.at + len(texts)]
        self.at += len(texts)
        return out


def needs_usearch() -> None:
    require(
        "usearch",
        importlib.util.find_spec("usearch") is not None,
        "it comes with the semantic extra (pip install -e '.[test,semantic]')",
    )


@pytest.fixture(scope="module")
def stored() -> Iterator[tuple[VectorIndex, list[tuple[str, str]], np.ndarray]]:
    needs_usearch()
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((COUNT, DIMENSION)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = [(GRAPHS[i % 2], f"urn:n:{i:05d}") for i in range(COUNT)]
    index = VectorIndex(None)
    todo = [PendingText(g, iri, iri, iri) for g, iri in keys]
    index.update(Fixed(rows), EmbedPlan("fixed", todo, [], 0), batch_size=1000)  # type: ignore[arg-type]
    yield index, keys, rows
    index.close()


@pytest.fixture
def int8_stored(
    stored: tuple[VectorIndex, list[tuple[str, str]], np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[VectorIndex, list[tuple[str, str]], np.ndarray]:
    """The stored index with :data:`~labbrain.index.vectors.LARGE` at 1, so that its matrix,
    loaded again, is int8."""
    monkeypatch.setattr(vectors_module, "LARGE", 1)
    stored[0]._matrix = None
    return stored


def exact(
    keys: list[tuple[str, str]], rows: np.ndarray, query: np.ndarray, keep: set[int] | None = None
) -> list[tuple[tuple[str, str], float]]:
    scores = rows @ query
    order = sorted(
        (i for i in range(len(keys)) if keep is None or i in keep),
        key=lambda i: (-scores[i], keys[i]),
    )
    return [(keys[i], float(scores[i])) for i in order]


def queries(rows: np.ndarray) -> list[np.ndarray]:
    rng = np.random.default_rng(9)
    picked = rows[rng.integers(0, len(rows), 12)]
    noisy = picked + 0.03 * rng.standard_normal(picked.shape).astype(np.float32)
    return list(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))


def test_the_int8_search_finds_what_the_exact_one_finds(
    int8_stored: tuple[VectorIndex, list[tuple[str, str]], np.ndarray],
) -> None:
    index, keys, rows = int8_stored
    assert index._loaded()[1].dtype == np.int8
    for query in queries(rows):
        truth = exact(keys, rows, query)
        found = index.search(query, limit=10)
        assert len(found) == 10
        assert (found[0].graph, found[0].iri) == truth[0][0]  # the vector the query came from
        cosine = dict(truth)
        tenth = truth[9][1]
        for hit in found:
            assert abs(hit.score - cosine[(hit.graph, hit.iri)]) < 0.01
            assert cosine[(hit.graph, hit.iri)] > tenth - 0.02
        assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)


def test_the_int8_search_keeps_the_filters(
    int8_stored: tuple[VectorIndex, list[tuple[str, str]], np.ndarray],
) -> None:
    index, keys, rows = int8_stored
    query = queries(rows)[0]
    in_b = index.search(query, limit=5, graphs=[GRAPHS[1]])
    truth_b = exact(keys, rows, query, {i for i, k in enumerate(keys) if k[0] == GRAPHS[1]})
    assert {h.graph for h in in_b} == {GRAPHS[1]}
    assert (in_b[0].graph, in_b[0].iri) == truth_b[0][0]
    allowed = {keys[i] for i in (3, 50, 700)}
    few = index.search(query, limit=10, allowed=allowed)
    assert {(h.graph, h.iri) for h in few} == allowed
    assert index.search(query, limit=10, allowed=set()) == []


def test_below_the_threshold_the_matrix_stays_float(
    stored: tuple[VectorIndex, list[tuple[str, str]], np.ndarray],
) -> None:
    index, keys, rows = stored
    index._matrix = None
    assert vectors_module.LARGE > COUNT
    keys_loaded, matrix = index._loaded()
    assert matrix.dtype == np.float32 and keys_loaded == sorted(keys)
    order = sorted(range(COUNT), key=lambda i: keys[i])
    assert np.array_equal(matrix, rows[order])
    query = queries(rows)[1]
    found = index.search(query, limit=3)
    assert [((h.graph, h.iri), pytest.approx(h.score, abs=1e-5)) for h in found] == [
        (key, score) for key, score in exact(keys, rows, query)[:3]
    ]


# ---------------------------------------------------------------------- the matrix snapshot
@pytest.fixture
def filed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, list[tuple[str, str]], np.ndarray]:
    """A file-backed index of 600 vectors, with :data:`~labbrain.index.vectors.LARGE` at 1."""
    needs_usearch()
    monkeypatch.setattr(vectors_module, "LARGE", 1)
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((600, DIMENSION)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = [(GRAPHS[i % 2], f"urn:n:{i:05d}") for i in range(600)]
    path = tmp_path / "vectors.sqlite"
    write(VectorIndex(path), keys, rows)
    return path, keys, rows


def write(index: VectorIndex, keys: list[tuple[str, str]], rows: np.ndarray) -> None:
    todo = [PendingText(g, iri, iri, iri) for g, iri in keys]
    index.update(Fixed(rows), EmbedPlan("fixed", todo, [], 0), batch_size=1000)  # type: ignore[arg-type]


def snapshots(path: Path) -> list[str]:
    return sorted(p.name.rsplit(".", 1)[1] for p in path.parent.glob("vectors.sqlite.snapshot-*"))


def rows_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the vectors were read from the file")

    monkeypatch.setattr(vectors_module, "_read_rows", refuse)


def test_the_next_process_maps_the_kept_matrix(
    filed: tuple[Path, list[tuple[str, str]], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, keys, rows = filed
    query = queries(rows)[0]
    before = VectorIndex(path).search(query, limit=10)
    assert snapshots(path) == []  # a search never writes one
    assert VectorIndex(path).keep_snapshot() is True
    assert snapshots(path) == ["keys", "npy"]
    rows_never_read(monkeypatch)
    later = VectorIndex(path, read_only=True)
    assert later.search(query, limit=10) == before
    in_a = later.search(query, limit=5, graphs=[GRAPHS[0]])
    assert {h.graph for h in in_a} == {GRAPHS[0]} and len(in_a) == 5
    assert isinstance(later._loaded()[1], np.memmap)
    assert (before[0].graph, before[0].iri) == exact(keys, rows, query)[0][0]
    assert VectorIndex(path).keep_snapshot() is True  # already there: nothing rewritten


def test_a_snapshot_is_read_only_for_the_vectors_it_was_made_from(
    filed: tuple[Path, list[tuple[str, str]], np.ndarray], tmp_path: Path
) -> None:
    path, keys, rows = filed
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    query = queries(rows)[2]
    target = exact(keys, rows, query)[0][0]
    # the query's own vector changes: a snapshot of the vectors after that change is kept
    write(VectorIndex(path), [target], -rows[:1])
    assert VectorIndex(path).keep_snapshot() is True
    kept = VectorIndex(path).search(query, limit=3)
    assert target not in [(h.graph, h.iri) for h in kept]
    # the older file is put back and written once more, to the same number of writes
    shutil.copyfile(copy, path)
    write(VectorIndex(path), [target], query[None, :])
    found = VectorIndex(path).search(query, limit=3)
    assert (found[0].graph, found[0].iri) == target and found[0].score > 0.99
    assert snapshots(path) == ["keys", "npy"]  # the stale one is there, and was not read


def test_a_damaged_snapshot_is_ignored(
    filed: tuple[Path, list[tuple[str, str]], np.ndarray],
) -> None:
    path, _, rows = filed
    query = queries(rows)[3]
    expected = VectorIndex(path).search(query, limit=10)
    assert VectorIndex(path).keep_snapshot()
    (keys_file,) = path.parent.glob("*.snapshot-*.keys")
    (matrix_file,) = path.parent.glob("*.snapshot-*.npy")
    text = keys_file.read_text()
    for damage in ("not json\n1\tx", text.rsplit("\n", 1)[0]):  # garbage; a key missing
        keys_file.write_text(damage)
        assert VectorIndex(path).search(query, limit=10) == expected
    keys_file.write_text(text)
    matrix_file.write_bytes(matrix_file.read_bytes()[:1000])  # cut short
    assert VectorIndex(path).search(query, limit=10) == expected


def test_only_a_writable_large_file_index_keeps_a_snapshot(
    filed: tuple[Path, list[tuple[str, str]], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, _ = filed
    assert VectorIndex(path, read_only=True).keep_snapshot() is False
    assert snapshots(path) == []
    assert VectorIndex(None).keep_snapshot() is False
    assert VectorIndex(path).keep_snapshot() is True
    monkeypatch.setattr(vectors_module, "LARGE", 10_000)  # now a small set: float32 rows
    assert VectorIndex(path).keep_snapshot() is False
    assert snapshots(path) == []  # the old snapshot is removed


def test_a_snapshot_that_cannot_be_written_leaves_nothing(
    filed: tuple[Path, list[tuple[str, str]], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, rows = filed
    query = queries(rows)[4]
    expected = VectorIndex(path).search(query, limit=10)

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(np, "save", full_disk)  # the keys are written, the matrix fails
        assert VectorIndex(path).keep_snapshot() is False
    assert sorted(p.name for p in path.parent.iterdir() if "snapshot" in p.name) == []
    # a write cut short by a crash leaves a hidden partial file: it is stale
    crashed = path.with_name(f".{path.name}.snapshot-0123.npy.beef.partial")
    crashed.write_bytes(b"x")
    assert VectorIndex(path).stale_snapshots() == [crashed]
    assert VectorIndex(path).keep_snapshot() is True
    assert not crashed.exists() and snapshots(path) == ["keys", "npy"]
    assert VectorIndex(path, read_only=True).search(query, limit=10) == expected


def test_keys_a_line_cannot_hold_are_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_usearch()
    monkeypatch.setattr(vectors_module, "LARGE", 1)
    path = tmp_path / "vectors.sqlite"
    rows = np.eye(3, DIMENSION, dtype=np.float32)
    write(
        VectorIndex(path),
        [("urn:g:a", "urn:n:1"), ("urn:g:a", "urn:n:2\tx"), ("urn:g:a", "urn:n:3")],
        rows,
    )
    assert VectorIndex(path).keep_snapshot() is False
    assert snapshots(path) == []
    found = VectorIndex(path).search(rows[1], limit=1)
    assert (found[0].graph, found[0].iri) == ("urn:g:a", "urn:n:2\tx")


def test_has_any_probes_by_dataset(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "vectors.sqlite")
    assert not index.has_any() and not index.has_any([GRAPHS[0]])
    write(
        index, [(GRAPHS[0], f"urn:n:{i}") for i in range(4)], np.eye(4, DIMENSION, dtype=np.float32)
    )
    assert index.has_any() and index.has_any([GRAPHS[0]]) and index.has_any(GRAPHS)
    assert not index.has_any([GRAPHS[1]]) and not index.has_any([])
    assert index.usable("fixed", [GRAPHS[0]]) and not index.usable("fixed", [GRAPHS[1]])
    assert not index.usable("other", [GRAPHS[0]])


def test_a_search_never_counts_the_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting the stored vectors reads every row (400 ms a search at 1,000,000 vectors,
    when each open of the file counted them): once the matrix is loaded, opening the file,
    the usable-vectors checks and a search count nothing."""
    import sqlite3

    index = VectorIndex(tmp_path / "vectors.sqlite")
    rows = np.eye(4, DIMENSION, dtype=np.float32)
    write(index, [(GRAPHS[i % 2], f"urn:n:{i}") for i in range(4)], rows)
    assert [h.iri for h in index.search(rows[2], limit=1)] == ["urn:n:2"]  # loads the matrix
    statements: list[str] = []
    connect = sqlite3.connect

    def tracing(*args: object, **kwargs: object) -> sqlite3.Connection:
        db = connect(*args, **kwargs)  # type: ignore[arg-type]
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", tracing)
    assert index.usable("fixed", [GRAPHS[0]]) and index.has_any()
    assert [h.iri for h in index.search(rows[3], limit=1, graphs=[GRAPHS[1]])] == ["urn:n:3"]
    assert statements, "the index opened no file: nothing was checked"
    assert [s for s in statements if "count(" in s.lower()] == []
