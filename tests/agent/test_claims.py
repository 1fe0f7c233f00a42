"""Propositions end to end through an in-process MCP client, on the sample export.

Lab nodes are checked against the raw JSON of data/akamatsu-sample.jsonld (uids, titles,
creators, dates and relations as data/README.md describes them); proposition answers are
checked field by field, and against what the store holds (SPARQL, export, PROV quads).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import BACKENDS, SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import InProcessTools, Json, canonical, count, select
from labbrain.agent.claims.propositions import (
    Propositions,
    decode_cursor,
    encode_cursor,
)
from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import InvalidArgument
from labbrain.index.text import normalise_timestamp
from labbrain.rdf.namespaces import CLAIMS_GRAPH, LB, PROV

CLAIMS_TOOLS = {
    "add_proposition": False,
    "get_proposition": True,
    "list_propositions": True,
    "connect_propositions": False,
    "find_lineage": True,
    "find_contradictions": True,
}
ID_RE = re.compile(r"^urn:labbrain:proposition:[0-9a-f]{32}$")
RELATION_ID_RE = re.compile(r"^urn:labbrain:proposition-relation:[0-9a-f]{32}$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
DOI = "10.1083/jcb.201604065"
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"

# Sample nodes used below (data/README.md): an Evidence that Opposes one Claim and Supports
# another, the Claim it opposes (which Addresses a Question), and a Claim opposed twice.
EVIDENCE = "1uL1j6i-u"  # [[EVD]] CK-666 treatment lengthened ... ; Opposes 24MbeSyHQ
CLAIM = "24MbeSyHQ"  # [[CLM]] Actin polymerization is required ... ; Addresses G1vFo969x
QUESTION = "G1vFo969x"
CONTESTED = "Z5inf-I_o"  # [[CLM]] Pit lifetime heterogeneity ...; Opposed by two Evidence
CONTESTED_OPPONENTS = ["A8AFJhR15", "x1rSdylei"]


# ---------------------------------------------------------------------------------------
# The sample, read independently of labbrain
# ---------------------------------------------------------------------------------------


@cache
def sample_json() -> Json:
    document: Json = json.loads(Path(SAMPLE).read_text())
    return document


def lab_ref(uid: str) -> Json:
    """The attributed NodeRef the export gives the node with ``uid``."""
    graph = sample_json()["@graph"]
    labels = {
        e["@id"]: e["label"] for e in graph if e.get("@type") == "nodeSchema" and "label" in e
    }
    page = next(e for e in graph if e.get("@id") == f"pages:{uid}")
    return {
        "uid": uid,
        "dataset": "akamatsulab-sample",
        "nodeType": labels[page["@type"]],
        "title": re.sub(r"^\[\[[A-Z]+\]\] -\s*", "", page["title"]),
        "creator": page.get("creator"),
        "created": page["created"],
        "url": PAGE + uid,
    }


def lab_relations(uid: str) -> set[tuple[str, str, str]]:
    """(source uid, relation label, destination uid) of every relation instance at ``uid``."""
    graph = sample_json()["@graph"]
    labels = {e["@id"]: e["label"] for e in graph if e.get("@type") == "relationDef"}
    return {
        (e["source"][6:], labels[e["predicate"]], e["destination"][6:])
        for e in graph
        if e.get("@type") == "relationInstance"
        and f"pages:{uid}" in (e["source"], e["destination"])
    }


def node_end(uid: str) -> Json:
    return {"kind": "node", "id": uid, "proposition": None, "node": lab_ref(uid)}


def prop_ref(added: Json) -> Json:
    """The PropositionRef part of a proposition answer."""
    return {k: added[k] for k in ("id", "content", "confidence", "created", "attributedTo")}


def prop_end(added: Json) -> Json:
    return {"kind": "proposition", "id": added["id"], "proposition": prop_ref(added), "node": None}


def test_sample_holds_the_relations_the_tests_rely_on() -> None:
    assert (EVIDENCE, "Opposes", CLAIM) in lab_relations(EVIDENCE)
    assert lab_relations(CLAIM) >= {(CLAIM, "Addresses", QUESTION), (EVIDENCE, "Opposes", CLAIM)}
    opposing = {
        s for s, label, d in lab_relations(CONTESTED) if label == "Opposes" and d == CONTESTED
    }
    assert sorted(opposing) == CONTESTED_OPPONENTS
    assert not any(
        s == CONTESTED and label == "Opposes" for s, label, _ in lab_relations(CONTESTED)
    )


# ---------------------------------------------------------------------------------------
# Driving the server
# ---------------------------------------------------------------------------------------


class Tools(InProcessTools):
    """The tools of one server, with shortcuts for propositions."""

    def add(self, content: str, confidence: float = 0.5, **extra: Any) -> Json:
        answer = self.ok("add_proposition", {"content": content, "confidence": confidence, **extra})
        return dict(answer["proposition"])

    def connect(self, a: str, b: str, relation: str, **extra: Any) -> Json:
        return self.ok("connect_propositions", {"a": a, "b": b, "relation": relation, **extra})


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here that uses a shared store fixture runs on the embedded store and on a
    remote Oxigraph server."""
    return str(request.param)


@pytest.fixture
def tools(sample_brain: LabBrain) -> Tools:
    return Tools(sample_brain)


def quads(brain: LabBrain) -> int:
    return count(brain, "GRAPH ?g { ?s ?p ?o }")


def claims_quads(brain: LabBrain) -> int:
    return brain.store.count(CLAIMS_GRAPH)


def test_tools_are_listed_with_write_hints_and_descriptions(tools: Tools) -> None:
    async def listing() -> Any:
        async with Client(tools.server) as client:
            return await client.list_tools()

    listed = {t.name: t for t in asyncio.run(listing()).tools}
    for name, read_only in CLAIMS_TOOLS.items():
        tool = listed[name]
        assert tool.annotations is not None and tool.annotations.read_only_hint is read_only
        assert tool.annotations.destructive_hint is False
        assert tool.description is not None and len(tool.description) > 150
        assert tool.output_schema is not None and tool.output_schema["properties"]
    assert "idempotencyKey" in listed["add_proposition"].input_schema["properties"]
    assert "idempotencyKey" in listed["connect_propositions"].input_schema["properties"]


# ---------------------------------------------------------------------------------------
# add / get with every source form
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        DOI,
        f"doi:{DOI}",
        f"DOI: {DOI}",
        f"https://doi.org/{DOI}",
        f"http://dx.doi.org/{DOI}",
        f"doi.org/{DOI}",
        "https://doi.org/10.1083%2Fjcb.201604065",
        f"  {DOI}  ",
    ],
)
def test_add_with_a_doi_in_any_spelling(tools: Tools, given: str) -> None:
    answer = tools.ok(
        "add_proposition",
        {
            "content": "  Arp2/3 inhibition slows pit maturation ",
            "confidence": 0.8,
            "source": given,
        },
    )
    added = answer["proposition"]
    assert ID_RE.match(added["id"])
    assert TIME_RE.match(added["created"])
    assert added == {
        "id": added["id"],
        "content": "Arp2/3 inhibition slows pit maturation",
        "confidence": 0.8,
        "created": added["created"],
        "attributedTo": "assistant",
        "sources": [{"kind": "doi", "iri": f"https://doi.org/{DOI}", "doi": DOI, "node": None}],
    }
    assert answer["availableActions"] == [
        "connect_propositions",
        "find_contradictions",
        "find_lineage",
        "get_proposition",
    ]
    assert answer["note"] is None
    read = tools.ok("get_proposition", {"id": added["id"]})
    assert read == {**added, "outgoing": [], "incoming": []}


def test_add_with_a_doi_holding_characters_iris_cannot(tools: Tools) -> None:
    doi = "10.1002/(SICI)1097-4636(199706)35:4<457::AID-JBM5>3.0.CO;2-F"
    added = tools.add("An old DOI with angle brackets", source=doi)
    assert added["sources"] == [
        {
            "kind": "doi",
            "iri": "https://doi.org/10.1002/(SICI)1097-4636(199706)35:4%3C457::AID-JBM5%3E3.0.CO;2-F",
            "doi": doi,
            "node": None,
        }
    ]
    assert tools.ok("get_proposition", {"id": added["id"]})["sources"] == added["sources"]


@pytest.mark.parametrize(
    "url",
    [
        "https://www.biorxiv.org/content/10.1101/2024.01.01.123456v1",
        "http://example.org/notes?id=7#part",
    ],
)
def test_add_with_a_url(tools: Tools, url: str) -> None:
    added = tools.add("Pits stall when tension is high", 0.4, source=url)
    assert added["sources"] == [{"kind": "url", "iri": url, "doi": None, "node": None}]
    assert tools.ok("get_proposition", {"id": added["id"]})["sources"] == added["sources"]


def test_add_with_a_lab_node_source_is_attributed_and_derived_from_it(tools: Tools) -> None:
    added = tools.add("CK-666 lengthens pit lifetimes", 0.9, source=EVIDENCE)
    assert added["sources"] == [
        {
            "kind": "node",
            "iri": PAGE + EVIDENCE,
            "doi": None,
            "node": lab_ref(EVIDENCE),
        }
    ]
    assert lab_ref(EVIDENCE)["creator"] == "Abhishek Raghunathan"
    rows = select(
        tools.brain,
        f"SELECT ?from WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ <{added['id']}> prov:wasDerivedFrom ?from }} }}",
    )
    assert rows == [{"from": PAGE + EVIDENCE}]
    assert tools.ok("get_proposition", {"id": added["id"]})["sources"] == added["sources"]


def test_add_without_source(tools: Tools) -> None:
    for source in ({}, {"source": None}, {"source": "   "}):
        added = tools.add("Tension gates actin", 0.0, **source)
        assert added["sources"] == [] and added["confidence"] == 0.0


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("nope", "'nope' is neither a DOI, a URL nor a known node uid"),
        ("Xx0000000", "'Xx0000000' is neither a DOI, a URL nor a known node uid"),
        ("doi:", "'doi:' holds no DOI"),
        ("https://doi.org/not-a-doi", "'https://doi.org/not-a-doi' holds no DOI"),
        ("https://exa mple.org/x", "'https://exa mple.org/x' is not a valid URL"),
        ("https://", "'https://' is not a valid URL"),
        ("ftp://example.org/file", "'ftp://example.org/file' is neither a DOI"),
    ],
)
def test_bad_sources_are_refused_with_the_accepted_forms(
    tools: Tools, source: str, reason: str
) -> None:
    before = quads(tools.brain)
    text = tools.error("add_proposition", {"content": "x", "confidence": 0.5, "source": source})
    assert f"invalid source: {reason}" in text
    assert "a DOI (10.1083/jcb.201604065, doi:10.1083/..., https://doi.org/10.1083/...)" in text
    assert "an http(s) URL, or the uid of a lab node" in text
    assert quads(tools.brain) == before


@pytest.mark.parametrize("confidence", [-0.01, 1.01, 7])
def test_confidence_outside_0_to_1_is_refused(tools: Tools, confidence: float) -> None:
    before = quads(tools.brain)
    text = tools.error("add_proposition", {"content": "x", "confidence": confidence})
    assert "confidence" in text
    assert quads(tools.brain) == before


def test_confidence_bounds_and_content_are_checked_by_the_library(sample_brain: LabBrain) -> None:
    propositions = Propositions(
        sample_brain, DiscourseReader(sample_brain), AgentWriter(sample_brain.store)
    )
    for confidence, message in ((float("nan"), "must be a number"), (1.5, "1.5 is outside 0..1")):
        with pytest.raises(InvalidArgument, match=message):
            propositions.add("x", confidence)
    with pytest.raises(InvalidArgument, match="content: must not be empty"):
        propositions.add("   ", 0.5)
    with pytest.raises(InvalidArgument, match="at most 2000"):
        propositions.add("x" * 2001, 0.5)
    assert propositions.add("x", 1).proposition.confidence == 1.0


def test_empty_content_is_refused(tools: Tools) -> None:
    assert "invalid content: must not be empty" in tools.error(
        "add_proposition", {"content": "  ", "confidence": 0.5}
    )


def test_same_content_twice_is_kept_with_a_note(tools: Tools) -> None:
    first = tools.add("Tension slows pits")
    answer = tools.ok("add_proposition", {"content": "Tension slows pits", "confidence": 0.2})
    assert answer["proposition"]["id"] != first["id"]
    assert answer["note"] == f"{first['id']} already states exactly this; both are kept"


def test_get_unknown_proposition(tools: Tools) -> None:
    for ident in ("urn:labbrain:proposition:" + "0" * 32, CLAIM, ""):
        text = tools.error("get_proposition", {"id": ident})
        assert f"no proposition {ident!r}; ids look like urn:labbrain:proposition:<hex>" in text
        assert "list_propositions lists them" in text


# ---------------------------------------------------------------------------------------
# list with cursors
# ---------------------------------------------------------------------------------------


def test_cursor_pages_have_no_gaps_or_repeats_even_when_one_is_added(tools: Tools) -> None:
    contents = [f"Proposition number {i:02d}" for i in range(25)]
    ids = [tools.add(c, i / 25)["id"] for i, c in enumerate(contents)]
    first = tools.ok("list_propositions", {"limit": 10})
    assert [p["id"] for p in first["propositions"]] == ids[:10]
    assert [p["content"] for p in first["propositions"]] == contents[:10]
    assert (first["listed"], first["total"]) == (10, 25)
    assert first["note"] == "15 more; pass nextCursor as cursor for the next page"
    late = tools.add("Recorded between two pages")["id"]
    second = tools.ok("list_propositions", {"limit": 10, "cursor": first["nextCursor"]})
    assert [p["id"] for p in second["propositions"]] == ids[10:20]
    assert second["total"] == 26
    third = tools.ok("list_propositions", {"limit": 10, "cursor": second["nextCursor"]})
    assert [p["id"] for p in third["propositions"]] == [*ids[20:], late]
    assert third["nextCursor"] is None and third["note"] is None
    assert third["propositions"][0]["confidence"] == 20 / 25
    everything = tools.ok("list_propositions", {"limit": 100})
    assert [p["id"] for p in everything["propositions"]] == [*ids, late]


def test_list_when_empty_and_bad_cursors(tools: Tools) -> None:
    empty = tools.ok("list_propositions", {})
    assert empty == {
        "propositions": [],
        "listed": 0,
        "total": 0,
        "nextCursor": None,
        "note": "no propositions yet; add_proposition records one",
    }
    for cursor in ("garbage!", "YWZ0ZXI6", encode_cursor(3)[:-1] + "@"):
        text = tools.error("list_propositions", {"cursor": cursor})
        assert "invalid cursor: not a cursor from list_propositions" in text
    assert decode_cursor(encode_cursor(1234)) == 1234
    assert "limit" in tools.error("list_propositions", {"limit": 0})


# ---------------------------------------------------------------------------------------
# connect
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("relation", ["supports", "refutes", "extends", "implies", "contradicts"])
def test_connect_each_relation_type(tools: Tools, relation: str) -> None:
    a = tools.add("Branched actin pushes the membrane", 0.7)
    b = tools.add("Actin force drives pit internalization", 0.6)
    answer = tools.connect(a["id"], b["id"], relation, reasoning="  the force balances  ")
    made = answer["relation"]
    assert RELATION_ID_RE.match(made["id"]) and TIME_RE.match(made["created"])
    assert made == {
        "id": made["id"],
        "relation": relation,
        "source": prop_end(a),
        "target": prop_end(b),
        "reasoning": "the force balances",
        "created": made["created"],
    }
    assert answer["created"] is True and answer["note"] is None
    opposing = relation in ("refutes", "contradicts")
    assert answer["availableActions"] == (
        ["find_contradictions", "get_proposition", "find_lineage"]
        if opposing
        else ["get_proposition", "find_lineage"]
    )
    read_a = tools.ok("get_proposition", {"id": a["id"]})
    read_b = tools.ok("get_proposition", {"id": b["id"]})
    assert (read_a["outgoing"], read_a["incoming"]) == ([made], [])
    assert (read_b["outgoing"], read_b["incoming"]) == ([], [made])
    # a resource with its type, and the direct triple for one-hop SPARQL
    direct = select(
        tools.brain,
        f"SELECT ?a ?b WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ ?a lb:{relation} ?b }} }}",
    )
    assert direct == [{"a": a["id"], "b": b["id"]}]
    reified = select(
        tools.brain,
        f"SELECT ?r ?p ?why WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ ?r a lb:PropositionRelation ; "
        "rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o ; lb:reasoning ?why } }",
    )
    assert reified == [{"r": made["id"], "p": LB + relation, "why": "the force balances"}]


def test_connect_lab_evidence_to_a_proposition(tools: Tools) -> None:
    proposition = tools.add("Arp2/3 activity shortens pit lifetimes", 0.8)
    answer = tools.connect(EVIDENCE, proposition["id"], "supports")
    assert answer["relation"]["source"] == node_end(EVIDENCE)
    assert answer["relation"]["target"] == prop_end(proposition)
    assert answer["relation"]["reasoning"] is None
    read = tools.ok("get_proposition", {"id": proposition["id"]})
    assert read["incoming"] == [answer["relation"]]
    derived = select(
        tools.brain,
        f"SELECT ?from WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ <{answer['relation']['id']}> prov:wasDerivedFrom ?from }} }}",
    )
    assert derived == [{"from": PAGE + EVIDENCE}]
    # the proposition can also refute a lab Claim
    refuted = tools.connect(proposition["id"], CLAIM, "refutes")
    assert refuted["relation"]["target"] == node_end(CLAIM)


def test_connect_refuses_self_loops_unknown_ends_and_two_lab_nodes(tools: Tools) -> None:
    p = tools.add("Membrane tension varies across the cell")["id"]
    before = quads(tools.brain)
    assert "invalid b: is the same as a" in tools.error(
        "connect_propositions", {"a": p, "b": p, "relation": "supports"}
    )
    unknown = "urn:labbrain:proposition:" + "f" * 32
    text = tools.error("connect_propositions", {"a": p, "b": unknown, "relation": "supports"})
    assert f"no proposition {unknown!r}" in text
    text = tools.error("connect_propositions", {"a": "Xx0000000", "b": p, "relation": "extends"})
    assert "no proposition or lab node 'Xx0000000'; give a proposition id" in text
    assert "or the uid of a lab node (search_nodes finds uids)" in text
    text = tools.error("connect_propositions", {"a": EVIDENCE, "b": CLAIM, "relation": "supports"})
    assert "a and b are both lab nodes; at least one end must be a proposition" in text
    assert "relation" in tools.error(
        "connect_propositions", {"a": p, "b": EVIDENCE, "relation": "causes"}
    )
    assert quads(tools.brain) == before


def test_connect_twice_records_one_relation(tools: Tools) -> None:
    a = tools.add("Pits near the edge live longer")["id"]
    b = tools.add("Edge tension is higher")["id"]
    first = tools.connect(a, b, "contradicts")
    before = quads(tools.brain)
    again = tools.connect(a, b, "contradicts")
    mirrored = tools.connect(b, a, "contradicts")
    for answer in (again, mirrored):
        assert answer["relation"] == first["relation"]
        assert answer["created"] is False
        assert answer["note"] == "this relation was already recorded; nothing was written"
    assert quads(tools.brain) == before
    # an asymmetric relation the other way round is a new relation
    assert tools.connect(b, a, "supports")["created"] is True


# ---------------------------------------------------------------------------------------
# lineage
# ---------------------------------------------------------------------------------------


def test_lineage_from_a_proposition_through_lab_evidence_to_a_lab_claim(tools: Tools) -> None:
    proposition = tools.add("CK-666 prolongs pit lifetimes in zebrafish cells", 0.6)
    supported = tools.connect(EVIDENCE, proposition["id"], "supports", reasoning="same drug")
    answer = tools.ok("find_lineage", {"fromConcept": proposition["id"], "toConcept": CLAIM})
    assert answer["found"] is True and answer["length"] == 2
    assert answer["hops"] == [
        {
            "source": node_end(EVIDENCE),
            "relation": "supports",
            "destination": prop_end(proposition),
            "traversed": "backward",
            "origin": "proposition",
            "relationId": supported["relation"]["id"],
            "reasoning": "same drug",
        },
        {
            "source": node_end(EVIDENCE),
            "relation": "Opposes",
            "destination": node_end(CLAIM),
            "traversed": "forward",
            "origin": "lab",
            "relationId": None,
            "reasoning": None,
        },
    ]
    assert answer["start"] == {
        "concept": proposition["id"],
        "chosen": prop_end(proposition),
        "reason": "given by its id",
        "candidates": [prop_end(proposition)],
    }
    assert answer["end"] == {
        "concept": CLAIM,
        "chosen": node_end(CLAIM),
        "reason": "given by its uid",
        "candidates": [node_end(CLAIM)],
    }
    assert answer["note"] is None
    # the same path found from words only the proposition holds
    assert tools.brain.index.search("zebrafish") == []
    by_words = tools.ok("find_lineage", {"fromConcept": "zebrafish", "toConcept": CLAIM})
    assert by_words["hops"] == answer["hops"]
    assert (
        by_words["start"]["reason"] == "best proposition match for 'zebrafish' (words: zebrafish)"
    )
    # too few hops allowed
    short = tools.ok(
        "find_lineage", {"fromConcept": proposition["id"], "toConcept": CLAIM, "maxHops": 1}
    )
    assert (short["found"], short["length"], short["hops"]) == (False, None, [])
    assert short["note"] == (
        "no path of at most 1 hops; raise maxHops, or connect_propositions to link what you know"
    )


def test_lineage_follows_a_proposition_source_then_lab_relations(tools: Tools) -> None:
    derived = tools.add("Actin is needed for endocytosis under high tension", 0.7, source=CLAIM)
    answer = tools.ok("find_lineage", {"fromConcept": derived["id"], "toConcept": QUESTION})
    assert answer["length"] == 2
    assert [
        (h["source"]["id"], h["relation"], h["destination"]["id"], h["origin"])
        for h in answer["hops"]
    ] == [
        (derived["id"], "wasDerivedFrom", CLAIM, "source"),
        (CLAIM, "Addresses", QUESTION, "lab"),
    ]
    assert answer["hops"][1]["destination"] == node_end(QUESTION)


def test_lineage_by_words_chooses_the_candidate_on_the_shortest_path(tools: Tools) -> None:
    proposition = tools.add("CK-666 lengthens clathrin-coated pit lifetimes", 0.8)
    tools.connect(EVIDENCE, proposition["id"], "supports")
    answer = tools.ok("find_lineage", {"fromConcept": "CK-666 pit lifetimes", "toConcept": CLAIM})
    assert answer["length"] == 1
    assert answer["hops"][0]["source"] == node_end(EVIDENCE)
    assert answer["hops"][0]["relation"] == "Opposes"
    start = answer["start"]
    assert start["chosen"] == node_end(EVIDENCE)
    assert start["reason"] == (
        "best lab node match for 'CK-666 pit lifetimes' (words: 666, ck, lifetimes, pit); "
        "preferred to better-ranked candidates as it is on the shortest path"
    )
    assert start["candidates"][:2] == [prop_end(proposition), node_end(EVIDENCE)]


def test_lineage_without_a_path_and_bad_concepts(tools: Tools) -> None:
    a = tools.add("Quokka tension sensors exist", 0.1)
    b = tools.add("Wombat pits are square", 0.1)
    answer = tools.ok("find_lineage", {"fromConcept": a["id"], "toConcept": b["id"]})
    assert (answer["found"], answer["hops"]) == (False, [])
    assert answer["start"]["chosen"] == prop_end(a) and answer["end"]["chosen"] == prop_end(b)
    by_words = tools.ok("find_lineage", {"fromConcept": "quokka", "toConcept": "square pits"})
    assert by_words["found"] is False
    assert by_words["end"]["chosen"] == prop_end(b)
    assert len(by_words["end"]["candidates"]) > 1
    assert by_words["end"]["reason"] == (
        "best proposition match for 'square pits' (words: pits, square); "
        "taken as the best-ranked, since no candidate is on a path"
    )
    text = tools.error("find_lineage", {"fromConcept": "quokka", "toConcept": "quokka sensors"})
    assert "invalid toConcept: it names the same node as fromConcept" in text
    text = tools.error("find_lineage", {"fromConcept": "xyzzyplugh", "toConcept": CLAIM})
    assert "invalid fromConcept: nothing matches 'xyzzyplugh'" in text
    text = tools.error(
        "find_lineage", {"fromConcept": "urn:labbrain:proposition:" + "0" * 32, "toConcept": CLAIM}
    )
    assert "no proposition 'urn:labbrain:proposition:" in text


# ---------------------------------------------------------------------------------------
# contradictions
# ---------------------------------------------------------------------------------------


def test_contradictions_recorded_on_a_proposition(tools: Tools) -> None:
    claim = tools.add("Membrane tension sets the lifetime of clathrin-coated pits", 0.7)
    rival = tools.add("Pit lifetimes do not depend on membrane tension", 0.6)
    swelling = tools.add("Osmotic swelling left pit lifetimes unchanged", 0.5)
    contradicting = tools.connect(rival["id"], claim["id"], "contradicts", reasoning="tethers")
    refuting = tools.connect(swelling["id"], claim["id"], "refutes")
    answer = tools.ok("find_contradictions", {"claim": claim["id"]})
    assert answer["subject"] == prop_end(claim)
    assert answer["subjectReason"] == "given by its proposition id"
    assert answer["contradictions"] == [
        {
            "item": prop_end(rival),
            "kind": "explicit",
            "relation": "contradicts",
            "relationId": contradicting["relation"]["id"],
            "reasoning": "tethers",
            "via": None,
            "why": "recorded: it contradicts this proposition",
        },
        {
            "item": prop_end(swelling),
            "kind": "explicit",
            "relation": "refutes",
            "relationId": refuting["relation"]["id"],
            "reasoning": None,
            "via": None,
            "why": "recorded: it refutes this proposition",
        },
    ]
    assert answer["listed"] == 2 and answer["note"] is None
    # the other side sees it too, and the same claim found by its exact wording
    other = tools.ok("find_contradictions", {"claim": rival["id"]})
    assert other["contradictions"][0]["item"] == prop_end(claim)
    assert other["contradictions"][0]["why"] == "recorded: this proposition contradicts it"
    worded = tools.ok(
        "find_contradictions",
        {"claim": "membrane tension sets the lifetime of clathrin-coated pits"},
    )
    assert worded["subject"] == prop_end(claim)
    assert worded["subjectReason"] == "the proposition worded exactly so"
    assert worded["contradictions"] == answer["contradictions"]


def test_contradictions_of_a_lab_claim_come_from_its_opposes_relations(tools: Tools) -> None:
    answer = tools.ok("find_contradictions", {"claim": CONTESTED})
    assert answer["subject"] == node_end(CONTESTED)
    assert answer["subjectReason"] == "given by its lab node uid"
    assert answer["contradictions"] == [
        {
            "item": node_end(uid),
            "kind": "lab",
            "relation": "Opposes",
            "relationId": None,
            "reasoning": None,
            "via": None,
            "why": "lab relation: it Opposes this node",
        }
        for uid in CONTESTED_OPPONENTS
    ]
    assert answer["similar"] == []
    # a proposition refuting the lab claim comes first, as an explicit contradiction
    refuter = tools.add("Pit lifetime heterogeneity persists at uniform tension", 0.4)
    tools.connect(refuter["id"], CONTESTED, "refutes")
    again = tools.ok("find_contradictions", {"claim": CONTESTED})
    assert [(c["item"]["id"], c["kind"]) for c in again["contradictions"]] == [
        (refuter["id"], "explicit"),
        *((uid, "lab") for uid in CONTESTED_OPPONENTS),
    ]
    assert again["contradictions"][0]["why"] == "recorded: it refutes this node"


def test_contradictions_of_a_proposition_resting_on_a_lab_claim(tools: Tools) -> None:
    title = lab_ref(CONTESTED)["title"]
    backer = tools.add("Local tension explains why pits differ", 0.7)
    tools.connect(backer["id"], CONTESTED, "supports")
    bystander = tools.add("Actin is required at high tension", 0.7)
    tools.connect(EVIDENCE, bystander["id"], "supports")  # rests on other evidence: not reported
    answer = tools.ok("find_contradictions", {"claim": backer["id"]})
    assert answer["contradictions"] == [
        {
            "item": node_end(uid),
            "kind": "lab",
            "relation": "Opposes",
            "relationId": None,
            "reasoning": None,
            "via": node_end(CONTESTED),
            "why": f"lab relation: it Opposes {title!r}, and this proposition supports that node",
        }
        for uid in CONTESTED_OPPONENTS
    ]
    # through a source node as well
    derived = tools.add("Actin matters only at high tension", 0.5, source=CLAIM)
    answer = tools.ok("find_contradictions", {"claim": derived["id"]})
    assert [(c["item"]["id"], c["kind"], c["via"]["id"]) for c in answer["contradictions"]] == [
        (EVIDENCE, "lab", CLAIM)
    ]
    assert answer["contradictions"][0]["why"] == (
        f"lab relation: it Opposes {lab_ref(CLAIM)['title']!r}, and this proposition derives from that node"
    )


def test_contradictions_through_similar_propositions(tools: Tools) -> None:
    local = tools.add("Pit lifetime heterogeneity reflects local membrane tension differences", 0.6)
    cargo = tools.add("Cargo load, not membrane tension, explains lifetime heterogeneity", 0.5)
    tools.add("Dynamin recruitment is unrelated", 0.5)
    relation = tools.connect(cargo["id"], local["id"], "contradicts")["relation"]
    answer = tools.ok(
        "find_contradictions", {"claim": "Membrane tension explains pit lifetime heterogeneity"}
    )
    assert answer["subject"] is None
    assert answer["subjectReason"] == (
        "no proposition or lab node is named or worded so: read as free text"
    )
    # the cargo proposition shares one key term more, so it ranks first
    assert answer["similar"] == [prop_ref(cargo), prop_ref(local)]
    assert answer["contradictions"] == [
        {
            "item": prop_end(local),
            "kind": "similar",
            "relation": "contradicts",
            "relationId": relation["id"],
            "reasoning": None,
            "via": prop_end(cargo),
            "why": "the similar proposition contradicts it (shared words: explains, "
            "heterogeneity, lifetime, membrane, tension)",
        },
        {
            "item": prop_end(cargo),
            "kind": "similar",
            "relation": "contradicts",
            "relationId": relation["id"],
            "reasoning": None,
            "via": prop_end(local),
            "why": "it contradicts the similar proposition (shared words: heterogeneity, "
            "lifetime, membrane, tension)",
        },
    ]


def test_no_contradictions_says_so(tools: Tools) -> None:
    lone = tools.add("Quokkas are cheerful", 0.9)
    answer = tools.ok("find_contradictions", {"claim": lone["id"]})
    assert answer["contradictions"] == [] and answer["listed"] == 0
    assert answer["note"] == (
        "nothing recorded or in the lab's graph conflicts with this claim; "
        "get_claim_status weighs a lab claim's evidence"
    )
    assert "invalid claim" in tools.error("find_contradictions", {"claim": "  "})


# ---------------------------------------------------------------------------------------
# idempotency, provenance, durability, read-only
# ---------------------------------------------------------------------------------------


def test_idempotent_retries_write_once(tools: Tools) -> None:
    arguments = {"content": "Tension slows pits", "confidence": 0.5, "source": DOI}
    first = tools.ok("add_proposition", {**arguments, "idempotencyKey": "k-add"})
    before = quads(tools.brain)
    for _ in range(3):
        assert tools.ok("add_proposition", {**arguments, "idempotencyKey": "k-add"}) == first
    assert quads(tools.brain) == before
    assert tools.ok("list_propositions", {})["total"] == 1
    pid = first["proposition"]["id"]
    link = {"a": EVIDENCE, "b": pid, "relation": "supports", "idempotencyKey": "k-link"}
    connected = tools.ok("connect_propositions", link)
    before = quads(tools.brain)
    for _ in range(3):
        assert tools.ok("connect_propositions", link) == connected
    assert quads(tools.brain) == before
    text = tools.error(
        "add_proposition", {**arguments, "confidence": 0.6, "idempotencyKey": "k-add"}
    )
    assert "'k-add' was already used for a add_proposition call with other arguments" in text
    text = tools.error("connect_propositions", {**link, "idempotencyKey": "k-add"})
    assert "'k-add' was already used with add_proposition" in text
    assert quads(tools.brain) == before


def test_replays_and_reads_survive_dropping_the_lab_dataset(tools: Tools) -> None:
    arguments = {"content": "CK-666 slows pits", "confidence": 0.5, "source": EVIDENCE}
    first = tools.ok("add_proposition", {**arguments, "idempotencyKey": "k-drop"})
    pid = first["proposition"]["id"]
    relation = tools.connect(EVIDENCE, pid, "supports")["relation"]
    tools.brain.drop("akamatsulab-sample")
    assert tools.ok("add_proposition", {**arguments, "idempotencyKey": "k-drop"}) == first
    read = tools.ok("get_proposition", {"id": pid})
    assert read["sources"] == [{"kind": "node", "iri": PAGE + EVIDENCE, "doi": None, "node": None}]
    gone = {"kind": "node", "id": EVIDENCE, "proposition": None, "node": None}
    assert read["incoming"] == [{**relation, "source": gone}]
    assert "invalid source: 'x1rSdylei' is neither" in tools.error(
        "add_proposition", {**arguments, "source": "x1rSdylei"}
    )


def test_every_write_carries_provenance(tools: Tools) -> None:
    added = tools.add("Tension slows pits", source=EVIDENCE)
    other = tools.add("Slow pits stall")
    relation = tools.connect(added["id"], other["id"], "implies")["relation"]
    (session,) = select(
        tools.brain,
        "SELECT ?s ?agent WHERE { GRAPH <urn:labbrain:system> { ?s a lb:Session ;"
        " prov:wasAssociatedWith ?agent } }",
    )
    assert session["s"].startswith("urn:labbrain:session:")
    assert session["agent"] == "urn:labbrain:agent:assistant"
    for written, derived in ((added, [PAGE + EVIDENCE]), (relation, []), (other, [])):
        rows = select(
            tools.brain,
            f"SELECT ?p ?o WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ <{written['id']}> ?p ?o }} "
            f"FILTER(STRSTARTS(STR(?p), '{PROV}') || ?p = lb:session) }}",
        )
        # the store keeps a time's value: compared in the one spelling the tools answer with
        assert {(r["p"], normalise_timestamp(r["o"])) for r in rows} == {
            (PROV + "generatedAtTime", written["created"]),
            (PROV + "wasAttributedTo", "urn:labbrain:agent:assistant"),
            (LB + "session", session["s"]),
            *((PROV + "wasDerivedFrom", d) for d in derived),
        }


def test_agent_writes_leave_the_dataset_graph_alone(tools: Tools) -> None:
    before = canonical(tools.brain, SAMPLE_GRAPH)
    p = tools.add("Tension slows pits", source=EVIDENCE)["id"]
    tools.connect(EVIDENCE, p, "supports")
    assert canonical(tools.brain, SAMPLE_GRAPH) == before
    assert claims_quads(tools.brain) > 0


def test_claims_are_queryable_with_sparql_and_exported(tools: Tools) -> None:
    p = tools.add("Tension slows pits", 0.25, source=DOI)
    q = tools.add("Slow pits stall", 0.75)
    tools.connect(p["id"], q["id"], "supports")
    rows = select(
        tools.brain,
        "SELECT ?p ?content ?confidence ?source WHERE { GRAPH ?g { ?p a lb:Proposition ;"
        " sioc:content ?content ; lb:confidence ?confidence . OPTIONAL { ?p dct:source ?source } } }"
        " ORDER BY ?confidence",
    )
    assert rows == [
        {
            "p": p["id"],
            "content": "Tension slows pits",
            "confidence": "0.25",
            "source": f"https://doi.org/{DOI}",
        },
        {"p": q["id"], "content": "Slow pits stall", "confidence": "0.75", "source": None},
    ]
    # one hop from a lab-style query: everything a proposition supports
    assert select(tools.brain, "SELECT ?b WHERE { GRAPH ?g { ?a lb:supports ?b } }") == [
        {"b": q["id"]}
    ]
    output = io.BytesIO()
    tools.brain.export(output, "nquads")
    exported = output.getvalue().decode()
    assert (
        f'<{p["id"]}> <http://rdfs.org/sioc/ns#content> "Tension slows pits" <{CLAIMS_GRAPH}> .'
        in exported
    )
    assert f"<{p['id']}> <{LB}supports> <{q['id']}> <{CLAIMS_GRAPH}> ." in exported


@pytest.fixture
def disk_sample(store_dir: Path) -> Iterator[Path]:
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    yield store_dir


def test_propositions_and_keys_survive_a_restart(disk_sample: Path) -> None:
    arguments = {
        "content": "Tension slows pits",
        "confidence": 0.5,
        "source": EVIDENCE,
        "idempotencyKey": "k1",
    }
    with LabBrain(settings_for(disk_sample)) as brain:
        tools = Tools(brain)
        added = tools.ok("add_proposition", arguments)
        pid = added["proposition"]["id"]
        other = tools.add("Slow pits stall")
        relation = tools.connect(pid, other["id"], "extends")["relation"]
        detail = tools.ok("get_proposition", {"id": pid})
        listing = tools.ok("list_propositions", {})
    with LabBrain(settings_for(disk_sample)) as brain:
        tools = Tools(brain)
        assert tools.ok("get_proposition", {"id": pid}) == detail
        assert detail["outgoing"] == [relation]
        assert tools.ok("list_propositions", {}) == listing
        before = quads(brain)
        assert tools.ok("add_proposition", arguments) == added  # a new session replays the key
        assert quads(brain) == before
        assert tools.add("Recorded after the restart")["id"] != pid
        assert tools.ok("list_propositions", {})["total"] == 3


def test_a_read_only_server_refuses_writes(disk_sample: Path) -> None:
    with LabBrain(settings_for(disk_sample)) as writer:
        pid = Tools(writer).add("Tension slows pits", 0.5)["id"]
        with LabBrain(settings_for(disk_sample), read_only=True) as reader:
            tools = Tools(reader)
            text = tools.error("add_proposition", {"content": "Another", "confidence": 0.5})
            assert "add_proposition needs write access, but the store was opened read-only" in text
            text = tools.error(
                "connect_propositions", {"a": pid, "b": EVIDENCE, "relation": "supports"}
            )
            assert (
                "connect_propositions needs write access, but the store was opened read-only"
                in text
            )
            assert [p["id"] for p in tools.ok("list_propositions", {})["propositions"]] == [pid]
            assert tools.ok("find_contradictions", {"claim": pid})["listed"] == 0


def test_created_times_are_written_as_the_store_reads_them() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from labbrain.rdf.terms import canonical_time, timestamp

    assert canonical_time(datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)) == (
        "2026-01-02T03:04:05.12Z"
    )
    assert canonical_time(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
    # another zone: written as the same moment in UTC
    plus_two = timezone(timedelta(hours=2))
    assert canonical_time(datetime(2026, 1, 2, 5, 4, 5, 500, tzinfo=plus_two)) == (
        "2026-01-02T03:04:05.0005Z"
    )
    assert timestamp(datetime(2026, 1, 2, 3, 4, 5, 100000, tzinfo=UTC)).value == (
        "2026-01-02T03:04:05.1Z"
    )


def test_a_proposition_rests_on_several_sources(tools: Tools) -> None:
    """source and sources together: a DOI (given twice, in two spellings), a URL and two lab
    nodes; each kept once, sorted by IRI, and the proposition derives from both nodes."""
    url = "https://example.org/preprint"
    added = tools.add(
        "Arp2/3 inhibition and tension both slow pit maturation",
        0.7,
        source=DOI,
        sources=[f"doi:{DOI}", url, EVIDENCE, CLAIM],
    )
    expected = sorted(
        [
            {"kind": "doi", "iri": f"https://doi.org/{DOI}", "doi": DOI, "node": None},
            {"kind": "url", "iri": url, "doi": None, "node": None},
            {"kind": "node", "iri": PAGE + EVIDENCE, "doi": None, "node": lab_ref(EVIDENCE)},
            {"kind": "node", "iri": PAGE + CLAIM, "doi": None, "node": lab_ref(CLAIM)},
        ],
        key=lambda source: source["iri"],
    )
    assert added["sources"] == expected
    assert tools.ok("get_proposition", {"id": added["id"]})["sources"] == expected
    derived = select(
        tools.brain,
        f"SELECT ?from WHERE {{ GRAPH <{CLAIMS_GRAPH}> {{ <{added['id']}> "
        "prov:wasDerivedFrom ?from }} ORDER BY ?from",
    )
    assert [row["from"] for row in derived] == sorted([PAGE + EVIDENCE, PAGE + CLAIM])
    # both lab sources anchor it: a lineage reaches it from the second one too
    lineage = tools.ok("find_lineage", {"fromConcept": added["id"], "toConcept": CLAIM})
    assert [(h["destination"]["id"], h["origin"]) for h in lineage["hops"]] == [(CLAIM, "source")]
    too_many = tools.error(
        "add_proposition",
        {"content": "x", "confidence": 0.5, "sources": [f"https://e.org/{i}" for i in range(21)]},
    )
    assert "sources" in too_many


def test_list_propositions_filters_by_words_source_and_confidence(tools: Tools) -> None:
    networks = tools.add("Branched networks push harder under load", 0.9, source=DOI)
    tools.add("A single network stalls at high tension", 0.3)
    tools.add("Coat proteins recruit dynamin", 0.6, source=EVIDENCE)

    def listed(**arguments: Any) -> tuple[list[str], int]:
        page = tools.ok("list_propositions", arguments)
        return [p["content"] for p in page["propositions"]], page["total"]

    # a plural finds the singular and back, as node search does
    assert listed(query="network") == (
        [
            "Branched networks push harder under load",
            "A single network stalls at high tension",
        ],
        2,
    )
    assert listed(query="networks tension") == (["A single network stalls at high tension"], 1)
    assert listed(source=f"https://doi.org/{DOI}") == ([networks["content"]], 1)
    assert listed(source=EVIDENCE) == (["Coat proteins recruit dynamin"], 1)
    assert listed(minConfidence=0.6) == (
        ["Branched networks push harder under load", "Coat proteins recruit dynamin"],
        2,
    )
    assert listed(minConfidence=0.6, query="network") == ([networks["content"]], 1)
    first = tools.ok("list_propositions", {"query": "network", "limit": 1})
    assert first["total"] == 2 and first["nextCursor"]
    second = tools.ok(
        "list_propositions", {"query": "network", "limit": 1, "cursor": first["nextCursor"]}
    )
    assert [p["content"] for p in second["propositions"]] == [
        "A single network stalls at high tension"
    ]
    nothing = tools.ok("list_propositions", {"query": "kinesin"})
    assert nothing["total"] == 0 and "without filters" in nothing["note"]
    assert listed() == (
        [
            "Branched networks push harder under load",
            "A single network stalls at high tension",
            "Coat proteins recruit dynamin",
        ],
        3,
    )
