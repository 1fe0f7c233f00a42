"""Loading TriG files of nanopublications (labbrain.ingest.nanopub): what is read, the
signature policy, hostile files, and what get_claim_status and find_gaps show.

Fixtures are written here as TriG and signed with nanopub_sign directly (never with
labbrain's own code); expected values come from the fixture texts and the sample export.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nanopub_sign
import pytest
from click.testing import CliRunner

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import ExportFormatError
from labbrain.index.search_query import SearchQuery
from labbrain.settings import Settings

ORCID = "https://orcid.org/0000-0002-1825-0097"
NAME = "Josiah Carberry"
OTHER_ORCID = "https://orcid.org/0000-0001-5109-3700"
DATE = "2026-03-04T05:06:07Z"
PREFIXES = """@prefix np: <http://www.nanopub.org/nschema#> .
@prefix npx: <http://purl.org/nanopub/x/> .
@prefix dct: <http://purl.org/dc/terms/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix cito: <http://purl.org/spar/cito/> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix dg: <https://discoursegraphs.com/schema/dg_core#> .
@prefix lb: <https://w3id.org/labbrain/ns#> .
@prefix kpxl: <https://w3id.org/kpxl/gen/terms/> .
@prefix hycl: <http://purl.org/petapico/o/hycl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
"""
LAB = "https://roamresearch.com/#/app/nplab/page/"
SAMPLE_PAGES = "https://roamresearch.com/#/app/akamatsulab-sample/page/"


def unsigned(assertion: str, name: str = "np1", *, author: str = ORCID, date: str = DATE) -> str:
    """One unsigned nanopublication (temporary URI ``…/temp/<name>``) in the shape labbrain's
    exporter writes: attributed to ``author``, published at ``date``."""
    return f"""{PREFIXES}
@prefix this: <http://purl.org/nanopub/temp/{name}> .
@prefix sub: <http://purl.org/nanopub/temp/{name}#> .
sub:Head {{ this: a np:Nanopublication ; np:hasAssertion sub:assertion ;
    np:hasProvenance sub:provenance ; np:hasPublicationInfo sub:pubinfo . }}
sub:assertion {{ {assertion} }}
sub:provenance {{ sub:assertion prov:wasAttributedTo <{author}> ;
    prov:generatedAtTime "2025-01-01T00:00:00Z"^^xsd:dateTime .
  <{author}> foaf:name "{NAME if author == ORCID else "Someone Else"}" . }}
sub:pubinfo {{ this: dct:creator <{author}> ; dct:created "{date}"^^xsd:dateTime ;
    dct:license <https://creativecommons.org/licenses/by/4.0/> . }}
"""


@pytest.fixture(scope="module")
def profile() -> Any:
    key = nanopub_sign.KeyPair()
    return nanopub_sign.NpProfile(key.private, ORCID, NAME, None)


def sign(profile: Any, trig: str) -> tuple[str, str]:
    """(trusty URI, signed TriG) of an unsigned nanopublication."""
    signed = nanopub_sign.Nanopub(trig).sign(profile)
    return str(signed.info()["uri"]["value"]), str(signed.rdf())


def node(uid: str, kind: str, title: str, content: str = "") -> str:
    core = {"Claim": "dg:Claim", "Evidence": "dg:Evidence", "Result": "lb:Result"}[kind]
    kpxl = {"Claim": ", kpxl:Claim", "Evidence": ", kpxl:Evidence"}.get(kind, "")
    described = f" ; dct:description {json.dumps(content)}" if content else ""
    return (
        f"<{LAB}{uid}> a {core}{kpxl} ; rdfs:label {json.dumps(title)} ; "
        f'dct:identifier "{uid}" ; lb:nodeType "{kind}"{described} .'
    )


def relation(source: str, label: str, destination: str, core: str, cito: str) -> str:
    definition = f"{LAB}_{label.upper()}-rel"
    return (
        f"<{LAB}{source}> <{definition}> <{LAB}{destination}> . "
        f'<{definition}> rdfs:label "{label}" ; rdfs:subPropertyOf {core} . '
        f"<{LAB}{source}> {cito} <{LAB}{destination}> ."
    )


def write(path: Path, *nanopubs: str) -> Path:
    path.write_text("\n".join(nanopubs), encoding="utf-8")
    return path


@pytest.fixture
def brain() -> Iterator[LabBrain]:
    with LabBrain(Settings(store=":memory:")) as opened:
        yield opened


def sample_claims() -> tuple[str, str]:
    """(a claim of the sample that its evidence supports, a claim nothing supports or
    opposes), as uids, from the sample file."""
    export = json.loads(SAMPLE.read_text(encoding="utf-8"))
    graph = export["@graph"]
    stance_defs = {
        e["@id"]
        for e in graph
        if e.get("@type") == "relationDef" and e.get("label") in ("Supports", "Opposes")
    }
    argued = [
        e["destination"]
        for e in graph
        if e.get("@type") == "relationInstance" and e.get("predicate") in stance_defs
    ]
    claims = [e["@id"] for e in graph if e.get("@type") == "pages:_CLM-node"]
    supported = next(c for c in claims if argued.count(c) >= 2)
    bare = next(c for c in claims if c not in argued)
    return supported.removeprefix("pages:"), bare.removeprefix("pages:")


def dataset_quads(brain: LabBrain, graph: str) -> int:
    return brain.store.count(graph) if brain.store.has_graph(graph) else 0


# ---------------------------------------------------------------------------- what is read
@pytest.fixture
def lab_file(tmp_path: Path, profile: Any) -> tuple[Path, dict[str, str]]:
    """Three signed nanopublications in the exporter's shape: an Evidence, a Claim and the
    Supports relation between them."""
    uris = {}
    texts = []
    for key, assertion in (
        ("evidence", node("evd1", "Evidence", "[[EVD]] - Pits slow under tension", "Seen *twice*")),
        ("claim", node("clm1", "Claim", "[[CLM]] - Tension slows endocytosis")),
        ("relation", relation("evd1", "Supports", "clm1", "dg:supports", "cito:supports")),
    ):
        uris[key], text = sign(profile, unsigned(assertion))
        texts.append(text)
    return write(tmp_path / "lab-nanopubs.trig", *texts), uris


def test_signed_file_loads_as_a_discourse_graph(
    brain: LabBrain, lab_file: tuple[Path, dict[str, str]]
) -> None:
    path, uris = lab_file
    report = brain.load(str(path))
    assert report.kind == "nanopublications (TriG)"
    assert report.graph == "urn:labbrain:dataset:lab-nanopubs"
    assert dict(report.nodes_by_type) == {"Claim": 1, "Evidence": 1}
    assert dict(report.relations) == {"Supports": 1}
    assert dict(report.creators) == {NAME: 2}
    assert report.warnings == []
    reader = DiscourseReader(brain)
    hits = reader.search_nodes(SearchQuery(text="tension pits")).results
    assert [hit.uid for hit in hits][:1] == ["evd1"]
    evidence = reader.get_node("evd1")
    assert evidence.title == "Pits slow under tension"
    assert evidence.content == "Seen *twice*"
    assert evidence.creator == NAME and evidence.nodeType == "Evidence"
    assert evidence.created is not None and evidence.created.startswith("2025-01-01")
    assert evidence.url == LAB + "evd1"
    status = reader.get_claim_status("clm1")
    assert [(n.uid, n.relationshipType) for n in status.supporting] == [("evd1", "Supports")]
    # the CiTO stance beside the typed relation is that relation, not an outside stance
    assert status.outside == [] and status.outsideCounts.supports == 0
    rows = brain.store.query(
        f"SELECT ?n ?v WHERE {{ GRAPH ?g {{ <{LAB}evd1> lb:fromNanopub ?n ; lb:verified ?v ; "
        f"lb:author <{ORCID}> }} }}"
    )
    assert [(r["n"].value, r["v"].value) for r in rows] == [(uris["evidence"], "true")]


def test_reloading_the_same_file_replaces_its_dataset(
    brain: LabBrain, lab_file: tuple[Path, dict[str, str]]
) -> None:
    path, _ = lab_file
    first = brain.load(str(path))
    again = brain.load(str(path))
    assert again.replaced and again.quads == first.quads == brain.store.count(first.graph)
    reader = DiscourseReader(brain)
    assert len(reader.get_claim_status("clm1").supporting) == 1
    assert [n.uid for n in reader.search_nodes(SearchQuery(text="tension")).results].count(
        "clm1"
    ) == 1


def test_a_node_given_by_several_nanopubs_is_loaded_from_the_latest(
    brain: LabBrain, tmp_path: Path, profile: Any
) -> None:
    """Four nanopublications of one node, in a file order that is not their date order: the
    node is the one with the latest ``dct:created`` (the middle of the file, not its first or
    last), and of two with that date, the later in the file."""
    dated = [
        ("Tension slows pits (June, first)", "2026-06-01T00:00:00Z"),
        ("Tension slows pits (March)", "2026-03-01T00:00:00Z"),
        ("Tension slows pits (June, second)", "2026-06-01T00:00:00Z"),
        ("Tension slows pits (January)", "2026-01-01T00:00:00Z"),
    ]
    signed = [sign(profile, unsigned(node("dup1", "Claim", t), date=d)) for t, d in dated]
    latest = max(d for _, d in dated)
    winner = [i for i, (_, d) in enumerate(dated) if d == latest][-1]
    assert 0 < winner < len(dated) - 1  # neither first nor last in the file
    report = brain.load(str(write(tmp_path / "versions.trig", *(text for _, text in signed))))
    assert dict(report.nodes_by_type) == {"Claim": 1}
    assert any(
        f"{len(dated) - 1} node(s) given by more than one nanopublication" in notice
        for notice in report.notices
    ), report.notices
    loaded = DiscourseReader(brain).get_node("dup1")
    assert loaded.title == dated[winner][0]
    assert loaded.modified is not None and loaded.modified.startswith(latest[:10])
    rows = brain.store.query(f"SELECT ?n WHERE {{ GRAPH ?g {{ <{LAB}dup1> lb:fromNanopub ?n }} }}")
    assert [r["n"].value for r in rows] == [signed[winner][0]]


def test_aida_sentence_and_lone_cito_stance_between_nodes(
    brain: LabBrain, tmp_path: Path, profile: Any
) -> None:
    aida = "http://purl.org/aida/Tension%20slows%20endocytosis."
    claim = sign(profile, unsigned(f"<{aida}> a hycl:AIDA-Sentence ."))[1]
    evidence = sign(profile, unsigned(node("evd9", "Evidence", "Pits stall")))[1]
    stance = sign(profile, unsigned(f"<{LAB}evd9> cito:refutes <{aida}> ."))[1]
    report = brain.load(str(write(tmp_path / "aida.trig", claim, evidence, stance)))
    assert dict(report.nodes_by_type) == {"Claim": 1, "Evidence": 1}
    assert dict(report.relations) == {"Opposes": 1}
    reader = DiscourseReader(brain)
    hit = reader.search_nodes(SearchQuery(text="endocytosis")).results[0]
    assert hit.title == "Tension slows endocytosis."
    status = reader.get_claim_status(hit.uid)
    assert [n.uid for n in status.opposing] == ["evd9"] and status.outside == []


# ---------------------------------------------------------------------------- outside stances
@pytest.fixture
def sample_brain_with_stances(
    brain: LabBrain, tmp_path: Path, profile: Any
) -> tuple[LabBrain, dict[str, str]]:
    supported, bare = sample_claims()
    brain.load(str(SAMPLE))
    uris = {}
    uris["dispute"], dispute = sign(
        profile,
        unsigned(f"<https://doi.org/10.1234/x> cito:disputes <{SAMPLE_PAGES}{supported}> ."),
    )
    uris["support"], support = sign(
        profile,
        unsigned(
            f"<{OTHER_ORCID}> cito:agreesWith <{SAMPLE_PAGES}{supported}> .",
            author=OTHER_ORCID,
            date="2026-05-01T00:00:00Z",
        ),
    )
    uris["bare"], on_bare = sign(
        profile, unsigned(f"<https://doi.org/10.1234/y> cito:confirms <{SAMPLE_PAGES}{bare}> .")
    )
    brain.load(str(write(tmp_path / "outside.trig", dispute, support, on_bare)))
    return brain, uris


def test_claim_status_shows_outside_stances_beside_the_labs(
    sample_brain_with_stances: tuple[LabBrain, dict[str, str]],
) -> None:
    brain, uris = sample_brain_with_stances
    supported, _ = sample_claims()
    status = DiscourseReader(brain).get_claim_status(supported, dataset="akamatsulab-sample")
    assert status.dataset == "akamatsulab-sample"
    assert len(status.supporting) >= 2  # the lab's own evidence is still there
    outside = [s.model_dump() for s in status.outside]
    assert outside == [
        {
            "stance": "supports",
            "property": "cito:agreesWith",
            "subject": OTHER_ORCID,
            "nanopub": uris["support"],
            "author": OTHER_ORCID,
            "authorName": "Someone Else",
            "date": "2026-05-01T00:00:00Z",
            "verified": True,
            "dataset": "outside",
        },
        {
            "stance": "disputes",
            "property": "cito:disputes",
            "subject": "https://doi.org/10.1234/x",
            "nanopub": uris["dispute"],
            "author": ORCID,
            "authorName": NAME,
            "date": DATE,
            "verified": True,
            "dataset": "outside",
        },
    ]
    assert status.outsideCounts.model_dump() == {"supports": 1, "disputes": 1, "unverified": 0}
    assert not status.contested  # the lab's own evidence decides "contested"
    concise = DiscourseReader(brain).get_claim_status(supported, detail="concise")
    assert concise.outside == status.outside


def test_an_unverified_stance_loaded_when_allowed_is_shown_unverified(
    brain: LabBrain, tmp_path: Path, profile: Any
) -> None:
    """A signed and an unsigned stance on one claim, loaded with allow_unverified (the CLI's
    ``--allow-unverified``): the claim's status keeps both, the unsigned one ``verified:
    false``, and counts it as unverified."""
    supported, _ = sample_claims()
    brain.load(str(SAMPLE))
    target = f"<{SAMPLE_PAGES}{supported}>"
    signed_uri, signed = sign(
        profile, unsigned(f"<https://doi.org/10.1234/s> cito:confirms {target} .", "np5")
    )
    plain = unsigned(
        f"<https://doi.org/10.1234/u> cito:refutes {target} .", "np6", date="2026-02-01T00:00:00Z"
    )
    path = write(tmp_path / "mixed-stances.trig", signed, plain)
    report = brain.load(str(path), allow_unverified=True)
    assert any("(loaded, marked lb:verified false)" in w for w in report.warnings)
    status = DiscourseReader(brain).get_claim_status(supported, dataset="akamatsulab-sample")
    assert [s.model_dump() for s in status.outside] == [
        {
            "stance": "supports",
            "property": "cito:confirms",
            "subject": "https://doi.org/10.1234/s",
            "nanopub": signed_uri,
            "author": ORCID,
            "authorName": NAME,
            "date": DATE,
            "verified": True,
            "dataset": "mixed-stances",
        },
        {
            "stance": "disputes",
            "property": "cito:refutes",
            "subject": "https://doi.org/10.1234/u",
            "nanopub": "http://purl.org/nanopub/temp/np6",
            "author": ORCID,
            "authorName": NAME,
            "date": "2026-02-01T00:00:00Z",
            "verified": False,
            "dataset": "mixed-stances",
        },
    ]
    assert status.outsideCounts.model_dump() == {"supports": 1, "disputes": 1, "unverified": 1}


def test_find_gaps_keeps_a_claim_with_only_outside_support(
    sample_brain_with_stances: tuple[LabBrain, dict[str, str]],
) -> None:
    brain, _ = sample_brain_with_stances
    supported, bare = sample_claims()
    gaps = DiscourseReader(brain).find_gaps(node_type="Claim", dataset="akamatsulab-sample")
    listed = {n.uid: n for n in gaps.claimsWithoutEvidence}
    assert bare in listed and supported not in listed
    assert listed[bare].outside is not None
    assert listed[bare].outside.model_dump() == {"supports": 1, "disputes": 0, "unverified": 0}
    assert all(n.outside is None for uid, n in listed.items() if uid != bare)
    status = DiscourseReader(brain).get_claim_status(bare, dataset="akamatsulab-sample")
    assert status.note is not None and "outside" in status.note


# ---------------------------------------------------------------------------- verification
@pytest.fixture
def mixed_file(tmp_path: Path, profile: Any) -> tuple[Path, dict[str, str]]:
    """A good, a tampered (changed after signing) and an unsigned nanopublication."""
    good_uri, good = sign(profile, unsigned(node("good1", "Claim", "Good claim")))
    bad_uri, bad = sign(profile, unsigned(node("bad1", "Claim", "Honest claim")))
    tampered = bad.replace("Honest claim", "Altered claim")
    assert tampered != bad
    plain = unsigned(node("raw1", "Claim", "Unsigned claim"), "np2")
    path = write(tmp_path / "mixed.trig", good, tampered, plain)
    return path, {
        "good": good_uri,
        "tampered": bad_uri,
        "unsigned": "http://purl.org/nanopub/temp/np2",
    }


def test_unverified_nanopubs_are_reported_and_left_out(
    brain: LabBrain, mixed_file: tuple[Path, dict[str, str]]
) -> None:
    path, uris = mixed_file
    report = brain.load(str(path))
    assert dict(report.nodes_by_type) == {"Claim": 1}
    (warning,) = [w for w in report.warnings if "not verified" in w]
    assert "2 nanopublication(s) not verified (not loaded" in warning
    assert f"<{uris['tampered']}>: " in warning and "hash" in warning
    assert f"<{uris['unsigned']}>: unsigned" in warning
    reader = DiscourseReader(brain)
    assert reader.get_node("good1").title == "Good claim"
    assert not reader.search_nodes(SearchQuery(text="altered")).results
    assert not reader.search_nodes(SearchQuery(text="unsigned")).results


def test_unverified_nanopubs_load_marked_when_allowed(
    brain: LabBrain, mixed_file: tuple[Path, dict[str, str]]
) -> None:
    path, _ = mixed_file
    report = brain.load(str(path), allow_unverified=True)
    assert dict(report.nodes_by_type) == {"Claim": 3}
    assert any("(loaded, marked lb:verified false)" in w for w in report.warnings)
    rows = brain.store.query(
        "SELECT ?node ?v WHERE { GRAPH ?g { ?node lb:verified ?v ; dct:title ?t } } ORDER BY ?node"
    )
    verified = {r["node"].value.removeprefix(LAB): r["v"].value for r in rows}
    assert verified == {"bad1": "false", "good1": "true", "raw1": "false"}
    assert DiscourseReader(brain).get_node("bad1").title == "Altered claim"


def test_strict_refuses_a_file_with_unverified_nanopubs(
    tmp_path: Path, mixed_file: tuple[Path, dict[str, str]]
) -> None:
    path, uris = mixed_file
    with LabBrain(settings_for(":memory:", strict_load=True)) as brain:
        with pytest.raises(ExportFormatError, match="strict load refused") as refused:
            brain.load(str(path), allow_unverified=True)
        assert uris["tampered"] in str(refused.value)
        assert dataset_quads(brain, "urn:labbrain:dataset:mixed") == 0


def test_cli_load_allow_unverified_and_strict(
    tmp_path: Path, mixed_file: tuple[Path, dict[str, str]]
) -> None:
    path, _ = mixed_file
    store = tmp_path / "store"
    runner = CliRunner()
    strict = runner.invoke(main, ["--store", str(store), "load", "--strict", str(path)])
    assert strict.exit_code == 2 and "strict load refused" in strict.output
    left_out = runner.invoke(main, ["--store", str(store), "load", "--json", str(path)])
    assert left_out.exit_code == 0, left_out.output
    assert json.loads(left_out.output)[0]["nodes"] == 1
    allowed = runner.invoke(
        main, ["--store", str(store), "load", "--json", "--allow-unverified", str(path)]
    )
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.output)[0]["nodes"] == 3


# ---------------------------------------------------------------------------- hostile files
HEAD = """@prefix this: <http://purl.org/nanopub/temp/np1> .
@prefix sub: <http://purl.org/nanopub/temp/np1#> .
"""
NP_URI = "http://purl.org/nanopub/temp/np1"
GRAPHS = {
    "head": "sub:Head { this: a np:Nanopublication ; np:hasAssertion sub:assertion ; "
    "np:hasProvenance sub:provenance ; np:hasPublicationInfo sub:pubinfo . }",
    "assertion": f"sub:assertion {{ {node('h1', 'Claim', 'Hostile')} }}",
    "provenance": f"sub:provenance {{ sub:assertion prov:wasAttributedTo <{ORCID}> . }}",
    "pubinfo": f'sub:pubinfo {{ this: dct:created "{DATE}"^^xsd:dateTime . }}',
}


def hostile(**changed: str) -> str:
    return PREFIXES + HEAD + "\n".join(changed.get(k, v) for k, v in GRAPHS.items())


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            hostile(provenance=""),
            f"nanopublication <{NP_URI}>: its head names the provenance graph "
            f"<{NP_URI}#provenance>, which the file does not hold",
        ),
        (
            hostile(head=GRAPHS["head"].replace("np:hasAssertion sub:assertion ;", "")),
            f"nanopublication <{NP_URI}>: its head <{NP_URI}#Head> names no assertion graph",
        ),
        (
            hostile(head=GRAPHS["head"].replace("sub:provenance", "sub:assertion")),
            "its provenance graph <http://purl.org/nanopub/temp/np1#assertion> is also the "
            "assertion graph",
        ),
        (
            hostile()
            + "\n<https://example.org/a> <https://example.org/b> <https://example.org/c> .",
            "quads in no nanopublication's graphs: the default graph (1 quads)",
        ),
        (
            hostile() + "\n<https://example.org/g> { <https://example.org/a> a dg:Claim . }",
            "quads in no nanopublication's graphs: <https://example.org/g> (1 quads)",
        ),
    ],
    ids=["missing-graph", "no-assertion", "graph-claimed-twice", "default-graph", "stray-graph"],
)
def test_broken_heads_are_refused_and_nothing_is_stored(
    brain: LabBrain, tmp_path: Path, text: str, says: str
) -> None:
    path = write(tmp_path / "hostile.trig", text)
    with pytest.raises(ExportFormatError) as refused:
        brain.load(str(path), allow_unverified=True)
    assert says in str(refused.value)
    assert dataset_quads(brain, "urn:labbrain:dataset:hostile") == 0
    assert brain.datasets() == []


def test_a_title_of_a_megabyte_is_refused_and_the_dataset_kept(
    brain: LabBrain, tmp_path: Path, profile: Any
) -> None:
    path = tmp_path / "big.trig"
    write(path, sign(profile, unsigned(node("ok1", "Claim", "Fine claim")))[1])
    before = brain.load(str(path))
    huge = "x" * (1 << 20)
    uri, text = sign(profile, unsigned(node("big1", "Claim", huge)))
    write(path, text)
    with pytest.raises(ExportFormatError) as refused:
        brain.load(str(path))
    assert f"nanopublication <{uri}>: the title of <{LAB}big1> is 1,048,576 characters" in str(
        refused.value
    )
    assert brain.store.count(before.graph) == before.quads
    assert DiscourseReader(brain).get_node("ok1").title == "Fine claim"


def test_plain_trig_still_loads_as_rdf_and_nanopub_format_needs_heads(
    brain: LabBrain, tmp_path: Path
) -> None:
    plain = write(
        tmp_path / "plain.trig",
        "<https://example.org/g> { <https://example.org/a> <http://www.nanopub.org/nschema#x> 1 . }",
    )
    report = brain.load(str(plain))
    assert report.kind == "trig" and report.quads == 1
    with pytest.raises(ExportFormatError, match="holds no nanopublication"):
        brain.load(str(plain), fmt="nanopub")


def test_sample_graph_untouched_by_a_nanopub_load(
    sample_brain_with_stances: tuple[LabBrain, dict[str, str]],
) -> None:
    brain, _ = sample_brain_with_stances
    datasets = {d["graph"] for d in brain.datasets()}
    assert datasets == {SAMPLE_GRAPH, "urn:labbrain:dataset:outside"}
