"""Evidence bundles (RO-Crate) made by the library: valid crates, the lineage the export holds,
people, what the node does not say, figures, hostile input.

Expected values come from the export files, read here with ``json`` and ``re``. The crates
are checked by the RO-Crate validator (``roc-validator``) at requirement level REQUIRED and read
back by the reference library (``rocrate``). This machine has no internet: the validator runs
offline, on an HTTP cache seeded with the RO-Crate JSON-LD context that the ``rocrate`` package
ships (``rocrate/data/ro-crate.jsonld``, the 1.3 context), served for the 1.2 and 1.1 context
URLs. RO-Crate contexts only add terms from version to version, so a crate using a term new in
1.3 would pass unnoticed; :data:`PUBLISHED_TERMS` guards against that: every term a crate uses
must be among the terms checked (by hand, once) to be in the published 1.1 and 1.2 contexts,
with the same IRIs as in the 1.3 one.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import InvalidArgument, NodeNotFound, UnusablePath
from labbrain.publish import bundle as bundle_module
from labbrain.publish.bundle import BundleOptions, BundleReport, make_bundle
from labbrain.publish.people import People
from labbrain.settings import Settings

# Not from conftest: this folder has a conftest of its own, which shadows the top one's name.
DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = DATA / "akamatsu-sample.jsonld"
VAULT = DATA / "obsidian-sample"
VAULT_EVIDENCE = "019b8a10-4c00-7a05-c3d4-7e9f1a3b5c05"  # embeds ![[lifetimes-swelling.png]]
VAULT_IMAGE = VAULT / "Lab" / "Imaging" / "lifetimes-swelling.png"
CONTEXTS = ("https://w3id.org/ro/crate/1.2/context", "https://w3id.org/ro/crate/1.1/context")
ORCID = "https://orcid.org/0000-0002-1825-0097"  # ORCID's own example iD (valid check digit)

#: The terms (properties and classes) a bundle may use, each checked to be defined, with the
#: same IRI, in the published RO-Crate 1.1 and 1.2 contexts and in the 1.3 context served for
#: them here. Anything else must be a compact IRI of the crate's own prefixes.
PUBLISHED_TERMS = frozenset(
    [
        "name",
        "description",
        "datePublished",
        "license",
        "hasPart",
        "about",
        "mentions",
        "citation",
        "isBasedOn",
        "author",
        "conformsTo",
        "encodingFormat",
        "File",
        "Dataset",
        "CreativeWork",
        "text",
        "measurementTechnique",
        "variableMeasured",
        "image",
        "identifier",
        "genre",
        "url",
        "creator",
        "dateCreated",
        "dateModified",
        "ScholarlyArticle",
        "contentSize",
        "Person",
        "softwareVersion",
        "CreateAction",
        "agent",
        "instrument",
        "object",
        "result",
        "endTime",
    ]
)
OWN_PREFIXES = ("dg:", "dgb:", "lb:", "prov:")


# ------------------------------------------------------------------------------ the export
@dataclass(frozen=True)
class Page:
    uid: str
    title: str
    node_type: str
    creator: str | None
    content: str
    refers_to: tuple[str, ...]


@dataclass
class Export:
    """What an export file says, read with plain Python."""

    domain: str
    pages: dict[str, Page]
    relations: set[tuple[str, str, str]]  # (source uid, label, destination uid)

    def text_links(self) -> set[tuple[str, str]]:
        """(from, to): wikilinks by full title, page URLs of the graph, textRefersToNode."""
        by_title = {" ".join(p.title.split()): p.uid for p in self.pages.values()}
        url = re.compile(re.escape(self.domain + "/page/") + r"([A-Za-z0-9_-]+)")
        found: set[tuple[str, str]] = set()
        for page in self.pages.values():
            targets = {by_title[t] for t in _outer_wikilinks(page.content) if t in by_title}
            targets |= {uid for uid in url.findall(page.content) if uid in self.pages}
            targets |= {uid for uid in page.refers_to if uid in self.pages}
            targets.discard(page.uid)
            found |= {(page.uid, t) for t in targets}
        return found

    def neighbours(self, uid: str, *, typed_only: bool) -> set[str]:
        found = {d for s, _, d in self.relations if s == uid}
        found |= {s for s, _, d in self.relations if d == uid}
        if not typed_only:
            links = self.text_links()
            found |= {d for s, d in links if s == uid} | {s for s, d in links if d == uid}
        return found

    def of(self, uids: set[str], types: set[str]) -> set[str]:
        return {u for u in uids if self.pages[u].node_type in types}


def _outer_wikilinks(text: str) -> list[str]:
    """The squashed texts of the outermost ``[[...]]`` links."""
    links, depth, start, i = [], 0, 0, 0
    while i < len(text) - 1:
        pair = text[i : i + 2]
        if pair == "[[":
            start = i + 2 if depth == 0 else start
            depth, i = depth + 1, i + 2
        elif pair == "]]" and depth > 0:
            depth -= 1
            if depth == 0:
                links.append(" ".join(text[start:i].split()))
            i += 2
        else:
            i += 1
    return links


def read_export(document: dict[str, Any]) -> Export:
    entries = document["@graph"]
    schemas = {
        e["@id"]: e["label"] for e in entries if e.get("@type") == "nodeSchema" and "title" not in e
    }
    codes = {re.search(r"_([A-Z]+)-node", s)[1]: label for s, label in schemas.items() if "_" in s}  # type: ignore[index]
    pages: dict[str, Page] = {}
    for e in entries:
        if "title" not in e:
            continue
        if e["@type"] in schemas:
            node_type = schemas[e["@type"]]
        else:
            node_type = codes[re.match(r"\[\[([A-Z]+)\]\]", e["title"])[1]]  # type: ignore[index]
        refers = e.get("textRefersToNode") or []
        pages[e["@id"].split(":", 1)[1]] = Page(
            uid=e["@id"].split(":", 1)[1],
            title=e["title"],
            node_type=node_type,
            creator=e.get("creator"),
            content=e.get("content", ""),
            refers_to=tuple(r.split(":", 1)[1] for r in refers),
        )
    labels = {e["@id"]: e["label"] for e in entries if e.get("@type") == "relationDef"}
    relations = set()
    for e in entries:
        if e.get("@type") == "relationInstance":
            s, d = e["source"].split(":", 1)[1], e["destination"].split(":", 1)[1]
            if s in pages and d in pages:
                relations.add((s, labels[e["predicate"]], d))
    return Export(document["@id"], pages, relations)


@pytest.fixture(scope="module")
def sample_document() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def export(sample_document: dict[str, Any]) -> Export:
    return read_export(sample_document)


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabBrain]:
    """The sample export and the sample vault in one in-memory store."""
    with LabBrain(Settings(store=":memory:")) as opened:
        opened.load(str(SAMPLE))
        opened.load(str(VAULT))
        yield opened


@pytest.fixture(scope="module")
def reader(brain: LabBrain) -> DiscourseReader:
    return DiscourseReader(brain)


def crate_of(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "ro-crate-metadata.json").read_text(encoding="utf-8"))


def entities(crate: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entity["@id"]: entity for entity in crate["@graph"]}


def ids(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [v["@id"] for v in values]


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# ------------------------------------------------------------------------------ the validator
@pytest.fixture(scope="session")
def validator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HTTP cache for the validator's offline mode, holding the RO-Crate context the
    ``rocrate`` package ships for the 1.2 and 1.1 context URLs (nothing is fetched)."""
    import requests
    from requests_cache import CachedSession
    from urllib3.response import HTTPResponse

    shipped = json.loads(resources.files("rocrate").joinpath("data/ro-crate.jsonld").read_text())
    body = json.dumps({"@context": shipped["@context"]}).encode()
    path = tmp_path_factory.mktemp("roc-validator") / "http-cache"
    session = CachedSession(cache_name=str(path), backend="sqlite", expire_after=-1)
    for url in CONTEXTS:
        response = requests.Response()
        response.status_code, response.url, response._content = 200, url, body
        response.headers["Content-Type"] = "application/ld+json"
        response.request = requests.Request("GET", url).prepare()
        response.raw = HTTPResponse(
            body=io.BytesIO(body),
            headers=dict(response.headers),
            status=200,
            preload_content=False,
            request_url=url,
        )
        session.cache.save_response(response)
    session.close()
    return path


def validation_issues(cache: Path, crate: Path, version: str) -> list[str]:
    """The validator's findings on ``crate`` at level REQUIRED, offline."""
    from rocrate_validator import services
    from rocrate_validator.models import ValidationSettings

    settings = ValidationSettings(
        rocrate_uri=str(crate),
        profile_identifier=f"ro-crate-{version}",
        requirement_severity="REQUIRED",
        offline=True,
        cache_path=cache,
    )
    result = services.validate(settings)
    issues = [
        f"{issue.check.identifier if issue.check else '?'} ({issue.severity.name}): {issue.message}"
        for issue in result.get_issues()
    ]
    if not result.passed():
        assert issues, "the validator failed the crate without saying why"
    return issues


def assert_published_terms(crate: dict[str, Any]) -> None:
    """Every term of the crate is one of :data:`PUBLISHED_TERMS` or a compact IRI of ours."""
    used: set[str] = set()
    for entity in crate["@graph"]:
        used |= {key for key in entity if not key.startswith("@")}
        types = entity["@type"] if isinstance(entity["@type"], list) else [entity["@type"]]
        used |= set(types)
    unknown = {t for t in used if t not in PUBLISHED_TERMS and not t.startswith(OWN_PREFIXES)}
    assert not unknown, f"terms not checked against the published contexts: {sorted(unknown)}"


def assert_reads_back(directory: Path) -> None:
    """The reference library reads the crate with the same entities (ids and types)."""
    from rocrate.rocrate import ROCrate

    written = {
        e["@id"]: sorted(e["@type"] if isinstance(e["@type"], list) else [e["@type"]])
        for e in crate_of(directory)["@graph"]
    }
    read = ROCrate(str(directory))
    found = {
        e.id: sorted(e.type if isinstance(e.type, list) else [e.type]) for e in read.get_entities()
    }
    assert found == written
    assert read.root_dataset.id == "./"


# ------------------------------------------------------------------------------ valid crates
@pytest.mark.parametrize(
    ("uid", "version"),
    [
        pytest.param("ar5rfh34m", "1.2", id="result-1.2"),
        pytest.param("z7rB78j3b", "1.1", id="evidence-1.1"),
        # the validator takes seconds a crate: the default run checks one of each version
        pytest.param(VAULT_EVIDENCE, "1.2", id="vault-evidence-1.2", marks=pytest.mark.slow),
        pytest.param(VAULT_EVIDENCE, "1.1", id="vault-evidence-1.1", marks=pytest.mark.slow),
        pytest.param("1Q-JVOtcr", "1.1", id="result-1.1", marks=pytest.mark.slow),
    ],
)
def test_crate_passes_the_validator_and_reads_back(
    reader: DiscourseReader, validator_cache: Path, tmp_path: Path, uid: str, version: str
) -> None:
    target = tmp_path / "bundle"
    make_bundle(reader, uid, target, BundleOptions(crate_version=version, agent="assistant"))  # type: ignore[arg-type]
    crate = crate_of(target)
    assert crate["@context"][0] == f"https://w3id.org/ro/crate/{version}/context"
    descriptor = entities(crate)["ro-crate-metadata.json"]
    assert descriptor["conformsTo"] == {"@id": f"https://w3id.org/ro/crate/{version}"}
    issues = validation_issues(validator_cache, target, version)
    assert not issues, "\n".join(issues)
    assert_published_terms(crate)
    assert_reads_back(target)


@pytest.mark.slow
def test_the_offline_validator_bites(validator_cache: Path, tmp_path: Path) -> None:
    """A crate with an undefined term and no root name fails: the seeded validator really
    reads the context and checks the crate."""
    crate = tmp_path / "broken"
    crate.mkdir()
    document = {
        "@context": CONTEXTS[0],
        "@graph": [
            {
                "@id": "ro-crate-metadata.json",
                "@type": "CreativeWork",
                "conformsTo": {"@id": "https://w3id.org/ro/crate/1.2"},
                "about": {"@id": "./"},
            },
            {
                "@id": "./",
                "@type": "Dataset",
                "description": "x",
                "datePublished": "2026-01-01",
                "license": {"@id": "https://spdx.org/licenses/MIT"},
                "notARoCrateTerm": "x",
            },
        ],
    }
    (crate / "ro-crate-metadata.json").write_text(json.dumps(document))
    issues = validation_issues(validator_cache, crate, "1.2")
    assert any("notARoCrateTerm" in issue for issue in issues), issues
    assert any("`name`" in issue for issue in issues), issues


# ------------------------------------------------------------------------------ lineage
def expected_lineage(export: Export, uid: str) -> dict[str, set[str]]:
    """The lineage of ``uid`` as the export holds it (see labbrain.publish.lineage)."""
    bearers = {uid}
    evidence: set[str] = set()
    if export.pages[uid].node_type == "Result":
        evidence = export.of(export.neighbours(uid, typed_only=False), {"Evidence"})
        bearers |= evidence
    typed = {n for b in bearers for n in export.neighbours(b, typed_only=True)}
    statements = export.of(typed, {"Claim", "Hypothesis", "Conclusion"}) - {uid}
    around = typed | {n for s in statements for n in export.neighbours(s, typed_only=True)}
    questions = export.of(around, {"Question"})
    linked = {n for b in bearers for n in export.neighbours(b, typed_only=False)}
    sources = export.of(linked, {"Source"})
    return {
        "evidence": evidence,
        "statements": statements,
        "questions": questions,
        "sources": sources,
    }


def test_lineage_of_every_result_and_evidence_is_the_exports(
    reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    bundled = [p.uid for p in export.pages.values() if p.node_type in ("Result", "Evidence")]
    assert len(bundled) == 57  # 25 Result + 32 Evidence (data/README.md)
    for number, uid in enumerate(sorted(bundled)):
        report = make_bundle(reader, uid, tmp_path / str(number))
        expected = expected_lineage(export, uid)
        found = {role: set(getattr(report, role)) for role in expected}
        assert found == expected, uid
        # each typed relation of the node itself is in the crate as its core property
        node = entities(crate_of(tmp_path / str(number)))[f"{export.domain}/page/{uid}"]
        for prop, label in (("dg:supports", "Supports"), ("dg:opposes", "Opposes")):
            want = {
                f"{export.domain}/page/{d}"
                for s, lab, d in export.relations
                if s == uid and lab == label
            }
            assert set(ids(node.get(prop, []))) == want & {
                f"{export.domain}/page/{u}" for u in found["statements"]
            }, (uid, prop)


def test_evidence_crate_names_its_claims_questions_and_source(
    reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    """z7rB78j3b: opposes one claim, supports another, informs a question, cites a source."""
    uid = "z7rB78j3b"
    make_bundle(reader, uid, tmp_path / "b")
    found = entities(crate_of(tmp_path / "b"))
    url = f"{export.domain}/page/"
    node = found[url + uid]
    assert "dg:Evidence" in node["@type"]
    page = export.pages[uid]
    assert node["dg:observationStatement"] == re.sub(r"^\[\[EVD\]\] - ", "", page.title)
    relations = {(lab, d) for s, lab, d in export.relations if s == uid}
    assert set(ids(node["dg:supports"])) == {url + d for lab, d in relations if lab == "Supports"}
    assert set(ids(node["dg:opposes"])) == {url + d for lab, d in relations if lab == "Opposes"}
    assert set(ids(node["lb:informs"])) == {url + d for lab, d in relations if lab == "Informs"}
    for claim in {d for lab, d in relations if lab in ("Supports", "Opposes")}:
        assert "dg:Claim" in found[url + claim]["@type"]
        addressed = {url + d for s, lab, d in export.relations if s == claim and lab == "Addresses"}
        assert set(ids(found[url + claim].get("dg:addresses", []))) == addressed
    root = found["./"]
    assert root["about"] == {"@id": url + uid}
    mentioned = set(ids(root["mentions"]))
    assert url + "hZrKqzdx-" in mentioned  # the source it refers to in its text


def test_a_results_lineage_runs_through_each_of_its_evidence(
    sample_document: dict[str, Any], tmp_path: Path
) -> None:
    """The sample links no Result to an Evidence node: here a copy's first Result refers in
    its text (``textRefersToNode``) to the first two Evidence nodes that oppose a claim. Its
    crate holds both, and every claim either of them supports or opposes."""
    document = json.loads(json.dumps(sample_document))
    export = read_export(document)
    result = min(u for u, p in export.pages.items() if p.node_type == "Result")
    opposing = sorted({s for s, label, _ in export.relations if label == "Opposes"})
    chosen = [u for u in opposing if export.pages[u].node_type == "Evidence"][:2]
    claims = {
        d
        for s, label, d in export.relations
        if s in chosen and label in ("Supports", "Opposes") and export.pages[d].node_type == "Claim"
    }
    for entry in document["@graph"]:
        if entry.get("@id") == f"pages:{result}":
            entry["textRefersToNode"] = [f"pages:{u}" for u in chosen]
    edited = read_export(document)
    expected = expected_lineage(edited, result)
    # the edit is what links them: before it, the Result had no Evidence
    assert expected_lineage(export, result)["evidence"] == set()
    assert expected["evidence"] == set(chosen) and len(chosen) == 2
    assert claims <= expected["statements"] and len(claims) >= 3
    path = tmp_path / "linked.jsonld"
    path.write_text(json.dumps(document), encoding="utf-8")
    with LabBrain(Settings(store=":memory:")) as opened:
        opened.load(str(path))
        report = make_bundle(DiscourseReader(opened), result, tmp_path / "b")
    assert {role: set(getattr(report, role)) for role in expected} == expected
    found = entities(crate_of(tmp_path / "b"))
    url = f"{export.domain}/page/"
    assert set(ids(found[url + result]["lb:linksTo"])) >= {url + u for u in chosen}
    mentioned = set(ids(found["./"]["mentions"]))
    assert {url + u for u in [*chosen, *claims]} <= mentioned
    for claim in claims:
        assert "dg:Claim" in found[url + claim]["@type"], claim
    for evidence in chosen:
        for prop, label in (("dg:supports", "Supports"), ("dg:opposes", "Opposes")):
            want = {url + d for s, lab, d in edited.relations if s == evidence and lab == label}
            assert set(ids(found[url + evidence].get(prop, []))) == want, (evidence, prop)


# ------------------------------------------------------------------------------ people
def test_people_with_orcid_are_named_by_it(
    brain: LabBrain, reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    uid = "z7rB78j3b"
    creator = export.pages[uid].creator
    assert creator == "Sagar Agarwal"
    People(brain.store).set(creator, ORCID)
    try:
        report = make_bundle(reader, uid, tmp_path / "b", BundleOptions(human="Ada Example"))
    finally:
        People(brain.store).remove(creator)
    found = entities(crate_of(tmp_path / "b"))
    assert found[ORCID] == {"@id": ORCID, "@type": "Person", "name": creator}
    node = found[f"{export.domain}/page/{uid}"]
    assert node["creator"] == {"@id": ORCID}
    assert found["./"]["author"] == {"@id": ORCID}
    others = {
        export.pages[u].creator
        for u in report.statements + report.questions + report.sources
        if export.pages[u].creator not in (None, creator)
    }
    persons = {e["name"]: e["@id"] for e in found.values() if e["@type"] == "Person"}
    assert set(persons) == {creator, "Ada Example", *others}
    for name in others | {"Ada Example"}:
        assert persons[name].startswith("#person-"), name
    action = found["#bundle"]
    assert action["@type"] == "CreateAction"
    assert {"@id": persons["Ada Example"]} in action["agent"]
    assert {p.name: p.orcid for p in report.people}[creator] == ORCID


# ------------------------------------------------------------------------------ not stated
def test_missing_method_system_observable_are_listed_not_invented(
    reader: DiscourseReader, tmp_path: Path
) -> None:
    report = make_bundle(reader, "z7rB78j3b", tmp_path / "b")
    assert report.missing == ["method", "system", "observable"]
    assert report.stated == {}
    found = entities(crate_of(tmp_path / "b"))
    node = found["https://roamresearch.com/#/app/akamatsulab-sample/page/z7rB78j3b"]
    assert node["lb:notStated"] == ["method", "system", "observable"]
    assert found["./"]["lb:notStated"] == ["method", "system", "observable"]
    for key in ("lb:method", "lb:system", "lb:observable", "measurementTechnique"):
        assert key not in node
    readme = (tmp_path / "b" / "README.md").read_text(encoding="utf-8")
    assert "does not say its method, system, observable" in readme


@pytest.fixture(scope="module")
def edited_brain(
    sample_document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LabBrain]:
    """The sample with an evidence node that states its method and system, a source with a
    DOI, and an evidence node whose title is 1 MB."""
    document = json.loads(json.dumps(sample_document))
    for entry in document["@graph"]:
        if entry.get("@id") == "pages:z7rB78j3b":
            entry["content"] += (
                "\n- Method:: cryo-electron tomography\n- **System**: SK-MEL-2 cells"
            )
        if entry.get("@id") == "pages:hZrKqzdx-":
            entry["content"] += "\n- URL:: https://doi.org/10.1083/jcb.202206038."
        if entry.get("@id") == "pages:X6tmSkeWo":
            entry["title"] = "[[EVD]] - " + "x" * 1_000_000
    path = tmp_path_factory.mktemp("edited") / "edited.jsonld"
    path.write_text(json.dumps(document), encoding="utf-8")
    with LabBrain(Settings(store=":memory:")) as opened:
        opened.load(str(path))
        yield opened


def test_stated_fields_and_dois_come_from_the_text(edited_brain: LabBrain, tmp_path: Path) -> None:
    report = make_bundle(DiscourseReader(edited_brain), "z7rB78j3b", tmp_path / "b")
    assert report.stated == {"method": "cryo-electron tomography", "system": "SK-MEL-2 cells"}
    assert report.missing == ["observable"]
    doi = "https://doi.org/10.1083/jcb.202206038"
    assert report.dois == [doi]
    found = entities(crate_of(tmp_path / "b"))
    node = found["https://roamresearch.com/#/app/akamatsulab-sample/page/z7rB78j3b"]
    assert node["lb:method"] == node["measurementTechnique"] == "cryo-electron tomography"
    assert node["lb:system"] == "SK-MEL-2 cells"
    assert node["lb:notStated"] == ["observable"]
    assert found[doi]["@type"] == "ScholarlyArticle"
    assert found[doi]["name"] == "@serwas2022MechanisticInsightsActin"
    assert {"@id": doi} in found["./"]["citation"]


# ------------------------------------------------------------------------------ refusals
def test_a_claim_is_refused_and_nothing_is_written(
    reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    claim = export.pages["B77kMS_GY"]
    assert claim.node_type == "Claim"
    with pytest.raises(InvalidArgument) as raised:
        make_bundle(reader, claim.uid, tmp_path / "b")
    assert "Claim" in str(raised.value) and "Result or Evidence" in str(raised.value)
    with pytest.raises(NodeNotFound):
        make_bundle(reader, "no-such-uid", tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_target_rules(reader: DiscourseReader, tmp_path: Path) -> None:
    """New or empty: fine; an earlier bundle: only with replace; anything else: refused."""
    (tmp_path / "empty").mkdir()
    make_bundle(reader, "z7rB78j3b", tmp_path / "empty")
    with pytest.raises(UnusablePath, match="holds a bundle already"):
        make_bundle(reader, "ar5rfh34m", tmp_path / "empty")
    report = make_bundle(reader, "ar5rfh34m", tmp_path / "empty", BundleOptions(replace=True))
    assert entities(crate_of(tmp_path / "empty"))["./"]["about"]["@id"].endswith("ar5rfh34m")
    assert report.node.uid == "ar5rfh34m"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(UnusablePath, match="holds other files"):
        make_bundle(reader, "z7rB78j3b", tmp_path / "mine", BundleOptions(replace=True))
    assert files_under(tmp_path / "mine") == {"notes.txt"}
    (tmp_path / "file").write_text("x")
    with pytest.raises(UnusablePath):
        make_bundle(reader, "z7rB78j3b", tmp_path / "file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "file", "mine"]


def test_a_failed_write_leaves_nothing(
    reader: DiscourseReader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = []

    def failing(path: Path, content: bytes) -> None:
        written.append(path.name)
        if path.name == "README.md":
            raise OSError(28, "No space left on device")
        path.write_bytes(content)

    monkeypatch.setattr(bundle_module, "_write_file", failing)
    with pytest.raises(UnusablePath, match="no space left"):
        make_bundle(reader, "z7rB78j3b", tmp_path / "b")
    assert written and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ figures
def test_remote_images_stay_references(
    reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    uid = "1Q-JVOtcr"  # a Result with two firebase images
    urls = re.findall(r"!\[\]\((https://[^)]+)\)", export.pages[uid].content)
    assert len(urls) == 2
    report = make_bundle(reader, uid, tmp_path / "b")
    assert files_under(tmp_path / "b") == {"README.md", "ro-crate-metadata.json"}
    found = entities(crate_of(tmp_path / "b"))
    assert set(urls) <= set(ids(found["./"]["hasPart"]))
    for url in urls:
        assert found[url]["@type"] == "File"
    assert [f.inCrate for f in report.figures] == urls
    assert not any(f.copied for f in report.figures)


def test_a_vault_attachment_is_copied(reader: DiscourseReader, tmp_path: Path) -> None:
    report = make_bundle(reader, VAULT_EVIDENCE, tmp_path / "b")
    copied = tmp_path / "b" / "figures" / "lifetimes-swelling.png"
    assert copied.read_bytes() == VAULT_IMAGE.read_bytes()
    found = entities(crate_of(tmp_path / "b"))
    figure = found["figures/lifetimes-swelling.png"]
    assert figure["@type"] == "File"
    assert figure["encodingFormat"] == "image/png"
    assert figure["contentSize"] == str(VAULT_IMAGE.stat().st_size)
    assert {"@id": "figures/lifetimes-swelling.png"} in found["./"]["hasPart"]
    assert [(f.copied, f.inCrate) for f in report.figures] == [
        (True, "figures/lifetimes-swelling.png")
    ]


def test_an_attachment_outside_the_vault_is_not_copied(tmp_path: Path) -> None:
    """A note embedding a file beside the vault (``../``), and one through a symbolic link
    pointing out of it: neither is read nor copied, and the crate says so."""
    import shutil

    vault = tmp_path / "vault"
    shutil.copytree(VAULT, vault, ignore=shutil.ignore_patterns(".trash"))
    (tmp_path / "secret.png").write_bytes(b"outside the vault")
    (vault / "Lab" / "Imaging" / "link.png").symlink_to(tmp_path / "secret.png")
    note = vault / "Lab" / "Imaging" / "EVD - Flat coats last twice as long in swollen cells.md"
    note.write_text(
        note.read_text(encoding="utf-8") + "\n![[../secret.png]]\n![[link.png]]\n",
        encoding="utf-8",
    )
    with LabBrain(Settings(store=":memory:")) as opened:
        opened.load(str(vault))
        report = make_bundle(DiscourseReader(opened), VAULT_EVIDENCE, tmp_path / "out" / "b")
    assert files_under(tmp_path / "out" / "b") == {
        "README.md",
        "ro-crate-metadata.json",
        "figures",
        "figures/lifetimes-swelling.png",
    }
    notes = [f.note for f in report.figures if not f.copied]
    assert notes and all("outside the vault" in (n or "") for n in notes), report.figures
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["b"]


# ------------------------------------------------------------------------------ hostile sizes
def test_a_one_megabyte_title_gives_a_bounded_crate(edited_brain: LabBrain, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report: BundleReport = make_bundle(DiscourseReader(edited_brain), "X6tmSkeWo", out / "b")
    size = sum(p.stat().st_size for p in (out / "b").rglob("*") if p.is_file())
    assert size < 200_000, size
    assert any("1,000,000" in note or "1,000,010" in note for note in report.notes), report.notes
    assert len(report.node.title) <= 1_000
    assert len(report.model_dump_json()) < 20_000
    assert sorted(p.name for p in out.iterdir()) == ["b"]


@pytest.mark.slow
def test_the_bounded_crate_of_a_huge_title_is_valid(
    edited_brain: LabBrain, validator_cache: Path, tmp_path: Path
) -> None:
    make_bundle(DiscourseReader(edited_brain), "X6tmSkeWo", tmp_path / "b")
    issues = validation_issues(validator_cache, tmp_path / "b", "1.2")
    assert not issues, "\n".join(issues)


def test_licence(reader: DiscourseReader, tmp_path: Path) -> None:
    make_bundle(reader, "z7rB78j3b", tmp_path / "a", BundleOptions(license="CC0-1.0"))
    found = entities(crate_of(tmp_path / "a"))
    assert found["./"]["license"] == {"@id": "https://spdx.org/licenses/CC0-1.0"}
    assert found["https://spdx.org/licenses/CC0-1.0"]["identifier"] == "CC0-1.0"
    with pytest.raises(InvalidArgument, match="license"):
        make_bundle(reader, "z7rB78j3b", tmp_path / "b", BundleOptions(license="not a licence"))
    assert not (tmp_path / "b").exists()


def test_two_names_with_one_orcid_are_one_person(
    brain: LabBrain, reader: DiscourseReader, export: Export, tmp_path: Path
) -> None:
    """The people map may give two spellings one iD: the crate holds one Person for it."""
    creators = {export.pages[u].creator for u in ("z7rB78j3b", "B77kMS_GY")}
    assert creators == {"Sagar Agarwal", "Matt Akamatsu"}
    People(brain.store).set_many(dict.fromkeys(creators, ORCID))
    try:
        make_bundle(reader, "z7rB78j3b", tmp_path / "b")
    finally:
        for name in creators:
            People(brain.store).remove(name)
    crate = crate_of(tmp_path / "b")
    assert [e["@id"] for e in crate["@graph"]].count(ORCID) == 1
    assert_reads_back(tmp_path / "b")
