"""JSON-LD reading and context repair, and the agreement of the two JSON-LD engines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyoxigraph import CanonicalizationAlgorithm, Dataset

from conftest import REAL, REAL_DCT, SAMPLE, SAMPLE_DCT, SAMPLE_V0
from generate import generate_export
from labbrain.errors import ExportFormatError, InputTooLarge
from labbrain.ingest import jsonld
from labbrain.rdf.namespaces import DCT, DG, DGB, OWL, RDF, RDFS, XSD

ALL_FILES = [
    SAMPLE,
    SAMPLE_V0,
    SAMPLE_DCT,
    pytest.param(REAL, marks=pytest.mark.needs_corpus),
    pytest.param(REAL_DCT, marks=pytest.mark.needs_corpus),
]


def _canonical(quads: Any) -> set[str]:
    dataset = Dataset(quads)
    dataset.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return {str(q) for q in dataset}


def _repaired(document: dict[str, Any]) -> dict[str, Any]:
    return {"@context": jsonld.repair_context(document["@context"]), "@graph": document["@graph"]}


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_repaired_context_is_canonical(path: Path) -> None:
    context = jsonld.repair_context(json.loads(path.read_text())["@context"])
    assert context["dgb"] == DGB and context["dg"] == DG
    assert context["source"] == {"@id": DGB + "source", "@type": "@id"}
    assert context["predicate"] == {"@id": RDF + "predicate", "@type": "@id"}
    assert context["inverseOf"] == {"@id": OWL + "inverseOf", "@type": "@id"}
    assert context["domain"] == {"@id": RDFS + "domain", "@type": "@id"}
    assert context["backlinks"] == {"@id": DG + "backlink", "@type": "@id"}
    assert context["title"] == DCT + "title"
    assert context["created"] == {"@id": DCT + "created", "@type": XSD + "dateTime"}
    assert context["page"] == context["pages"]
    assert context["pages"].startswith("https://roamresearch.com/#/app/")


def test_unrepaired_context_really_is_broken() -> None:
    """The quirks the repair exists for, shown on the raw 2025-12 context."""
    document = json.loads(SAMPLE.read_text())
    raw = _canonical(jsonld.quads_native(document, "raw"))
    text = "\n".join(raw)
    assert "dg_basesource" in text or "dgb:source" in text  # dgb without '#': bogus IRIs
    assert '"pages:' in text  # references left as string literals


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_engines_agree_on_files(path: Path) -> None:
    document = _repaired(json.loads(path.read_text()))
    native = _canonical(jsonld.quads_native(document, path.name))
    reference = _canonical(jsonld.quads_pyld(document, path.name))
    assert native == reference
    assert len(native) > 100


@pytest.mark.parametrize("variant", ["2025-12", "2026-06", "v0"])
@pytest.mark.parametrize("seed", [1, 2])
def test_engines_agree_on_generated_exports(variant: str, seed: int) -> None:
    document = _repaired(generate_export(300, seed=seed, variant=variant))  # type: ignore[arg-type]
    assert _canonical(jsonld.quads_native(document, "g")) == _canonical(
        jsonld.quads_pyld(document, "g")
    )


def test_context_variants_expand_alike() -> None:
    """The same generated graph in the 2025-12 and 2026-06 variants gives the same RDF once
    repaired (the 2026-06 exporter writes no backlinks, so those are left out)."""
    results = []
    for variant in ("2025-12", "2026-06"):
        document = _repaired(generate_export(200, seed=3, variant=variant))  # type: ignore[arg-type]
        quads = jsonld.quads_native(document, variant)
        results.append(_canonical(q for q in quads if q.predicate.value != DG + "backlink"))
    assert results[0] == results[1]


def test_read_json_records_spans_and_defers() -> None:
    text = b'{"@context": {"a": "http://a/"}, "@id": "x", "@graph": [ {"a": 1} ] }\n'
    parsed = jsonld.read_json(text, "t", 10, defer="@graph")
    assert parsed.deferred == "@graph"
    assert "@graph" not in parsed.value
    start, end = parsed.spans["@graph"]
    assert parsed.text[start:end].strip() == '[ {"a": 1} ]'
    assert parsed.complete() == {"@context": {"a": "http://a/"}, "@id": "x", "@graph": [{"a": 1}]}
    assert parsed.deferred is None


def test_member_bytes_are_the_span_in_utf8_without_a_copy() -> None:
    """Characters of several UTF-8 lengths before, inside and after the member: its bytes
    are exactly the UTF-8 of its text, taken from the input (not re-encoded)."""
    data = '{"@context": {"é": "http://a/€"}, "@graph": [{"名": "𝛼β"}] }\n'.encode()
    parsed = jsonld.read_json(data, "t", 10, defer="@graph")
    start, end = parsed.spans["@graph"]
    member = parsed.member_bytes("@graph")
    assert bytes(member) == parsed.text[start:end].encode("utf-8")
    assert isinstance(member, memoryview) and member.obj is data
    parsed.data = None  # text only: encoded on demand, the same bytes
    assert parsed.member_bytes("@graph") == bytes(member)


def test_deferred_member_followed_by_others() -> None:
    parsed = jsonld.read_json(b'{"@graph": [1], "b": 2}', "t", 10, defer="@graph")
    with pytest.raises(jsonld.DeferredMemberNotLast):
        parsed.complete()
    assert jsonld.read_json(b'{"@graph": [1], "b": 2}', "t", 10).value == {"@graph": [1], "b": 2}


def test_deferred_member_with_invalid_json_names_the_position() -> None:
    parsed = jsonld.read_json(b'{"@context": {},\n"@graph": [1,\n 2,,]}', "t", 10, defer="@graph")
    with pytest.raises(ExportFormatError) as caught:
        parsed.complete()
    assert caught.value.position == "line 3, column 4"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": 1,}', "line 1, column 9"),
        (b'{"a" 1}', "Expecting ':'"),
        (b'{"a": 1} trailing', "Extra data"),
        (b"", "Expecting value"),
        (b'{"a": Infinity}', "Infinity"),
    ],
)
def test_read_json_errors(data: bytes, message: str) -> None:
    with pytest.raises(ExportFormatError, match=message):
        jsonld.read_json(data, "t", 10)


def test_depth_limit() -> None:
    assert jsonld.read_json(b"[[[[1]]]]", "t", 4).value == [[[[1]]]]
    with pytest.raises(InputTooLarge):
        jsonld.read_json(b"[[[[[1]]]]]", "t", 4)
    with pytest.raises(InputTooLarge):
        jsonld.read_json(b'{"a": ' * 5000 + b"1" + b"}" * 5000, "t", 64)
