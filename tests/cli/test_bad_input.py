"""Bad input: a clear error naming the file (and position), and the store left exactly as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL, SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import canonical, snapshot
from labbrain.core import LabBrain
from labbrain.errors import (
    ExportFormatError,
    InputError,
    InputTooLarge,
    RemoteContextRefused,
    UnsupportedFormat,
)


@pytest.fixture
def loaded(store_dir: Path) -> Iterator[LabBrain]:
    """An on-disk store holding the sample (so rollbacks go through the journal)."""
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        yield brain


def _sample_document() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text())


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _assert_unchanged(brain: LabBrain, before: dict[str, Any], store_dir: Path) -> None:
    assert snapshot(brain) == before
    assert brain.index.count(SAMPLE_GRAPH) == 150
    assert brain.index.stale_graphs(brain.store) == ([], [])
    assert not (store_dir / "journal").exists()


def test_invalid_json_names_line_and_column(
    loaded: LabBrain, tmp_path: Path, store_dir: Path
) -> None:
    before = snapshot(loaded)
    path = _write(tmp_path, "broken.jsonld", '{"@context": {},\n "@graph": [1, 2,, 3]}')
    with pytest.raises(ExportFormatError) as caught:
        loaded.load(str(path))
    assert caught.value.position == "line 2, column 18"
    assert str(path) in str(caught.value)
    _assert_unchanged(loaded, before, store_dir)


def test_invalid_utf8_names_the_byte(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    path = _write(tmp_path, "latin1.jsonld", b'{"@graph": ["caf\xe9"]}')
    with pytest.raises(ExportFormatError, match="invalid UTF-8") as caught:
        loaded.load(str(path))
    assert caught.value.position == "byte 16"
    _assert_unchanged(loaded, before, store_dir)


def test_nan_is_not_json(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    path = _write(tmp_path, "nan.jsonld", '{"@context": {"x": "http://x/"}, "x:v": NaN}')
    with pytest.raises(ExportFormatError, match="NaN"):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_json_that_is_not_jsonld(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    path = _write(tmp_path, "plain.json", '{"name": "not linked data", "items": [1, 2]}')
    with pytest.raises(ExportFormatError, match="not JSON-LD"):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_structural_error_in_an_export_names_the_entry(
    loaded: LabBrain, tmp_path: Path, store_dir: Path
) -> None:
    """The export's bulk is already being written when the analysis finds the fault: the
    write is rolled back."""
    before = snapshot(loaded)
    document = _sample_document()
    index = next(
        i for i, e in enumerate(document["@graph"]) if e.get("@type") == "relationInstance"
    )
    del document["@graph"][index]["destination"]
    document["@id"] = "https://roamresearch.com/#/app/other-graph"  # a new dataset
    path = _write(tmp_path, "broken-export.jsonld", json.dumps(document))
    with pytest.raises(ExportFormatError, match="relation instance has no 'destination'") as caught:
        loaded.load(str(path))
    assert caught.value.position == f"@graph[{index}]"
    _assert_unchanged(loaded, before, store_dir)


def test_failed_reload_keeps_the_previous_version(
    loaded: LabBrain, tmp_path: Path, store_dir: Path
) -> None:
    before = snapshot(loaded)
    document = _sample_document()
    document["@graph"].append("not an object")
    path = _write(tmp_path, "same-graph.jsonld", json.dumps(document))
    with pytest.raises(ExportFormatError, match="expected an object"):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


@pytest.mark.needs_corpus
def test_strict_load_refuses_warnings(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir, strict_load=True)) as brain:
        brain.load(str(REAL))  # the real corpus loads cleanly, without warnings
        before = snapshot(brain)
        with pytest.raises(ExportFormatError, match="strict load refused: .*dangling end"):
            brain.load(str(SAMPLE))
        assert snapshot(brain) == before
        assert SAMPLE_GRAPH not in brain.store.graphs()
        assert brain.index.count(SAMPLE_GRAPH) == 0


def test_too_large(store_dir: Path) -> None:
    with LabBrain(settings_for(store_dir, max_input_bytes=10_000)) as brain:
        with pytest.raises(InputTooLarge, match="10000-byte input limit"):
            brain.load(str(SAMPLE))
        assert brain.store.graphs() == ["urn:labbrain:ontology", "urn:labbrain:system"]


def test_too_deep_plain_jsonld(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    nested: Any = {"@id": "http://example.org/leaf"}
    for _ in range(200):
        nested = {"http://example.org/p": nested}
    path = _write(tmp_path, "deep.jsonld", json.dumps(nested))
    with pytest.raises(InputTooLarge, match="nested deeper than 64"):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_too_deep_inside_an_export(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    document = _sample_document()
    nested: Any = "leaf"
    for _ in range(100):
        nested = [nested]
    document["@graph"][20]["extra"] = nested
    path = _write(tmp_path, "deep-export.jsonld", json.dumps(document))
    with pytest.raises(InputTooLarge):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_json_bomb_of_nesting_is_bounded(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    path = _write(tmp_path, "bomb.jsonld", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputTooLarge):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_remote_context_is_refused(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    document = {
        "@context": "https://example.org/context.jsonld",
        "@id": "https://example.org/x",
        "name": "y",
    }
    path = _write(tmp_path, "remote.jsonld", json.dumps(document))
    with pytest.raises(RemoteContextRefused, match="https://example.org/context.jsonld"):
        loaded.load(str(path))
    _assert_unchanged(loaded, before, store_dir)


def test_remote_context_with_a_local_copy(tmp_path: Path) -> None:
    local = _write(
        tmp_path, "context.jsonld", json.dumps({"@context": {"name": "http://schema.org/name"}})
    )
    document = {
        "@context": "https://example.org/context.jsonld",
        "@id": "https://example.org/x",
        "name": "y",
    }
    path = _write(tmp_path, "remote.jsonld", json.dumps(document))
    contexts = {"https://example.org/context.jsonld": local}
    with LabBrain(settings_for(":memory:", jsonld_contexts=contexts)) as brain:
        report = brain.load(str(path))
        assert report.quads == 1
        assert "not a discourse-graph export: loaded as plain RDF" in report.notices


def test_unknown_suffix_and_stdin_without_format(memory_brain: LabBrain, tmp_path: Path) -> None:
    path = _write(tmp_path, "notes.txt", "hello")
    with pytest.raises(UnsupportedFormat, match="pass --format"):
        memory_brain.load(str(path))
    with pytest.raises(UnsupportedFormat, match="stdin needs --format"):
        memory_brain.load("-")


def test_missing_file(memory_brain: LabBrain) -> None:
    with pytest.raises(InputError, match="no such file"):
        memory_brain.load("/nonexistent/export.jsonld")


def test_turtle_syntax_error_rolls_back(loaded: LabBrain, tmp_path: Path, store_dir: Path) -> None:
    before = snapshot(loaded)
    good = "".join(f"<http://example.org/s{i}> <http://example.org/p> {i} .\n" for i in range(5000))
    path = _write(tmp_path, "akamatsulab-sample.ttl", good + "<http://example.org/broken> <p\n")
    with pytest.raises(ExportFormatError, match="invalid Turtle: .*line 5001"):
        loaded.load(str(path), graph="akamatsulab-sample")  # would replace the sample's graph
    _assert_unchanged(loaded, before, store_dir)


def test_bad_graph_names(memory_brain: LabBrain) -> None:
    for name in ("urn:labbrain:system", "http://example.org/g"):
        with pytest.raises(InputError, match="give a slug"):
            memory_brain.load(str(SAMPLE), graph=name)


def test_graph_member_not_last_still_loads(memory_brain: LabBrain, tmp_path: Path) -> None:
    """The fast path assumes @graph comes last, as the exporter writes it; other orders work."""
    document = _sample_document()
    reordered = {"@graph": document.pop("@graph"), **document}
    path = _write(tmp_path, "reordered.jsonld", json.dumps(reordered))
    report = memory_brain.load(str(path), graph="reordered")
    reference = memory_brain.load(str(SAMPLE))
    assert report.nodes == 150
    assert canonical(memory_brain, report.graph) == canonical(memory_brain, reference.graph)
    trailing = dict(document)
    trailing["@graph"] = _sample_document()["@graph"]
    trailing["zz:later"] = "a member after @graph"
    path = _write(tmp_path, "trailing.jsonld", json.dumps(trailing))
    report = memory_brain.load(str(path), graph="trailing")
    assert report.nodes == 150


def test_reference_lists_must_hold_references(
    loaded: LabBrain, tmp_path: Path, store_dir: Path
) -> None:
    before = snapshot(loaded)
    document = _sample_document()
    index = next(i for i, e in enumerate(document["@graph"]) if "textRefersToNode" in e)
    document["@graph"][index]["textRefersToNode"] = ["page:ok", {"@id": "nested"}]
    path = _write(tmp_path, "bad-refs.jsonld", json.dumps(document))
    with pytest.raises(
        ExportFormatError, match="'textRefersToNode' must hold page references"
    ) as caught:
        loaded.load(str(path))
    assert caught.value.position == f"@graph[{index}]"
    _assert_unchanged(loaded, before, store_dir)
