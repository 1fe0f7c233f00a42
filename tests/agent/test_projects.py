"""The lab brain end to end through an in-process MCP client, on the sample export.

Projects, visits (recorded by get_node while a project is active, or by record_visit),
findings, suggest_next_steps at each stage, get_related_pages with each kind of reason,
idempotency, a read-only server beside a writer, a restart, PROV, SPARQL and export. Expected
node attributions and typed relations are read here from the raw JSON-LD file.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import BACKENDS, SAMPLE, SAMPLE_GRAPH, MakeSettings, settings_for
from helpers import InProcessTools, Json, count, select
from labbrain.core import LabBrain
from labbrain.index.analysis import terms as analysed
from labbrain.index.bm25 import key_terms

PROJECT_GRAPH = "urn:labbrain:project:membrane-tension"
DESCRIPTION = (
    "Membrane tension and endocytic actin: how membrane tension changes actin force "
    "production at endocytic sites."
)
VISITS = "?v a <https://w3id.org/labbrain/ns#Visit>"
FINDINGS = "?f a <https://w3id.org/labbrain/ns#Finding>"


# ---------------------------------------------------------------------------------------
# The sample, read independently of labbrain
# ---------------------------------------------------------------------------------------


@cache
def _sample() -> tuple[dict[str, Json], set[tuple[str, str]]]:
    """Page nodes by uid (as attributed NodeRefs) and the typed edges (source, destination)."""
    graph = json.loads(SAMPLE.read_text())["@graph"]
    labels = {
        e["@id"]: e["label"] for e in graph if e.get("@type") == "nodeSchema" and "label" in e
    }
    domain = "https://roamresearch.com/#/app/akamatsulab-sample/page/"
    pages = {
        e["@id"].removeprefix("pages:"): {
            "uid": e["@id"].removeprefix("pages:"),
            "dataset": "akamatsulab-sample",
            "nodeType": labels.get(e["@type"], "Hypothesis"),
            "title": re.sub(r"^\[\[[A-Z]+\]\] - ", "", e["title"]),
            "creator": e.get("creator"),
            "created": e["created"],
            "url": domain + e["@id"].removeprefix("pages:"),
        }
        for e in graph
        if "title" in e
    }
    edges = {
        (e["source"].removeprefix("pages:"), e["destination"].removeprefix("pages:"))
        for e in graph
        if e.get("@type") == "relationInstance"
    }
    return pages, edges


def ref(uid: str) -> Json:
    """The attributed NodeRef of a sample node, as the tools must answer it."""
    return _sample()[0][uid]


def typed_neighbours(uid: str) -> set[str]:
    """Nodes joined to ``uid`` by a relation instance, in either direction."""
    pages, edges = _sample()
    found = {b for a, b in edges if a == uid} | {a for a, b in edges if b == uid}
    return found & set(pages)


# ---------------------------------------------------------------------------------------
# Driving the server
# ---------------------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here that uses a shared store fixture runs on the embedded store and on a
    remote Oxigraph server."""
    return str(request.param)


@pytest.fixture
def tools(sample_brain: LabBrain) -> InProcessTools:
    return InProcessTools(sample_brain)


@pytest.fixture
def project(tools: InProcessTools) -> InProcessTools:
    """The tools with the project "Membrane tension" created and active."""
    tools.ok("create_project", name="Membrane tension", description=DESCRIPTION)
    return tools


@pytest.fixture
def loaded_dir(store_dir: Path) -> Path:
    """An on-disk store holding the sample export (closed again)."""
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    return store_dir


def all_quads(brain: LabBrain) -> int:
    return sum(brain.store.count(graph) for graph in brain.store.graphs())


# ---------------------------------------------------------------------------------------
# Projects
# ---------------------------------------------------------------------------------------


def test_project_lifecycle(tools: InProcessTools) -> None:
    created = tools.ok("create_project", name="Membrane tension", description=DESCRIPTION)
    summary = created["project"]
    assert {k: v for k, v in summary.items() if k != "created"} == {
        "project": "membrane-tension",
        "name": "Membrane tension",
        "description": DESCRIPTION,
        "graph": PROJECT_GRAPH,
        "active": True,
        "findings": 0,
        "visits": 0,
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", summary["created"])
    assert created["availableActions"] == [
        "log_finding",
        "suggest_next_steps",
        "get_project_context",
    ]
    other = tools.ok("create_project", name="Actin & Cytosim!", activate=False)["project"]
    assert (other["project"], other["active"], other["description"]) == (
        "actin-cytosim",
        False,
        "",
    )

    listed = tools.ok("list_projects")
    assert listed["active"] == "membrane-tension" and listed["listed"] == 2
    assert [(p["project"], p["name"], p["active"]) for p in listed["projects"]] == [
        ("actin-cytosim", "Actin & Cytosim!", False),
        ("membrane-tension", "Membrane tension", True),
    ]
    assert listed["projects"][1] == summary

    switched = tools.ok("set_active_project", project="Actin & Cytosim!")
    assert switched["previous"] == "membrane-tension"
    assert switched["active"]["project"] == "actin-cytosim"
    context = tools.ok("get_project_context")
    assert context["project"]["project"] == "actin-cytosim"
    assert (context["visitedNodes"], context["sessions"], context["tags"]) == (0, 0, {})
    assert context["recentFindings"] == [] and context["recentVisits"] == []
    assert "nothing recorded yet" in context["note"]
    named = tools.ok("get_project_context", project="membrane-tension")
    assert named["project"]["description"] == DESCRIPTION

    assert "exists already" in tools.error("create_project", name="membrane  TENSION")
    assert "no project 'nope'" in tools.error("set_active_project", project="nope")
    assert "no project 'nope'" in tools.error("get_project_context", project="nope")
    assert "ASCII letter or digit" in tools.error("create_project", name="!!!")
    assert "must not be empty" in tools.error("create_project", name="  ")

    cleared = tools.ok("set_active_project")
    assert cleared == {
        "active": None,
        "previous": "actin-cytosim",
        "availableActions": ["list_projects", "create_project"],
    }
    assert tools.ok("list_projects")["active"] is None
    assert "no project is active" in tools.error("get_project_context")


def test_a_fresh_store_has_no_projects(tools: InProcessTools) -> None:
    assert tools.ok("list_projects") == {
        "projects": [],
        "active": None,
        "listed": 0,
        "note": "no projects yet; create_project makes one",
    }


# ---------------------------------------------------------------------------------------
# Visits
# ---------------------------------------------------------------------------------------


def test_get_node_records_a_visit_only_while_a_project_is_active(tools: InProcessTools) -> None:
    brain = tools.brain
    tools.ok("get_node", uid="ntE1a3kG3")
    assert count(brain, f"GRAPH ?g {{ {VISITS} }}") == 0  # no project yet

    tools.ok("create_project", name="Membrane tension", description=DESCRIPTION)
    read = tools.ok("get_node", uid="ntE1a3kG3")
    assert read["uid"] == "ntE1a3kG3" and read["title"] == ref("ntE1a3kG3")["title"]
    tools.ok("get_node", uid="D6SNboBqO")
    tools.ok("get_node", uid="ntE1a3kG3", dataset="akamatsulab-sample")
    rows = select(
        brain,
        "SELECT ?node ?session ?n WHERE { GRAPH <" + PROJECT_GRAPH + "> { ?v a lb:Visit ; "
        "lb:visited ?node ; lb:session ?session ; lb:logPosition ?n } } ORDER BY ?n",
    )
    uids = [row["node"].rsplit("/", 1)[-1] for row in rows]
    assert uids == ["ntE1a3kG3", "D6SNboBqO", "ntE1a3kG3"]
    assert [row["n"] for row in rows] == ["1", "2", "3"]
    assert len({row["session"] for row in rows}) == 1

    recorded = tools.ok("record_visit", uid="D6SNboBqO")
    assert recorded["project"] == "membrane-tension"
    assert recorded["visit"]["node"] == ref("D6SNboBqO")
    assert recorded["visit"]["session"] == rows[0]["session"].rsplit(":", 1)[-1]
    assert recorded["visitsOfNode"] == 2
    assert recorded["availableActions"] == [
        "log_finding",
        "get_related_pages",
        "suggest_next_steps",
    ]
    assert count(brain, f"GRAPH <{PROJECT_GRAPH}> {{ {VISITS} }}") == 4

    context = tools.ok("get_project_context")
    assert [v["node"]["uid"] for v in context["recentVisits"]] == [
        "D6SNboBqO",
        "ntE1a3kG3",
        "D6SNboBqO",
        "ntE1a3kG3",
    ]
    assert context["recentVisits"][0] == recorded["visit"]
    assert (context["visitedNodes"], context["sessions"]) == (2, 1)
    assert (context["project"]["visits"], context["project"]["findings"]) == (4, 0)

    tools.ok("set_active_project")  # deactivated: reading records nothing
    tools.ok("get_node", uid="ntE1a3kG3")
    assert count(brain, f"GRAPH ?g {{ {VISITS} }}") == 4
    tools.ok("record_visit", uid="ntE1a3kG3", project="membrane-tension")
    assert count(brain, f"GRAPH ?g {{ {VISITS} }}") == 5

    assert "no node with uid Xx0000000" in tools.error("record_visit", uid="Xx0000000")
    assert "no project is active" in tools.error("record_visit", uid="ntE1a3kG3")
    assert count(brain, f"GRAPH ?g {{ {VISITS} }}") == 5


# ---------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------


def test_log_finding_from_a_node_and_from_a_web_page(project: InProcessTools) -> None:
    logged = project.ok(
        "log_finding",
        content="Tension roughly triples after hypo-osmotic shock.",
        sourceUid="ntE1a3kG3",
        tags=["tension", "shock", "tension", " "],
    )
    finding = logged["finding"]
    assert re.fullmatch(r"[0-9a-f]{32}", finding["id"])
    assert finding["project"] == "membrane-tension"
    assert finding["content"] == "Tension roughly triples after hypo-osmotic shock."
    assert finding["tags"] == ["shock", "tension"]
    assert finding["source"] == ref("ntE1a3kG3")
    assert finding["sourceUrl"] is None
    assert logged["findings"] == 1
    assert logged["availableActions"] == [
        "list_findings",
        "suggest_next_steps",
        "get_related_pages",
    ]

    web = project.ok(
        "log_finding",
        content="Tether pulling overestimates tension near adhesions.",
        sourceUrl="https://example.org/papers/tethers?x=1",
    )["finding"]
    assert web["source"] is None
    assert web["sourceUrl"] == "https://example.org/papers/tethers?x=1"
    plain = project.ok("log_finding", content="No source for this one.")
    assert plain["findings"] == 3 and plain["finding"]["source"] is None

    rows = select(
        project.brain,
        "SELECT ?content ?node ?url WHERE { GRAPH <" + PROJECT_GRAPH + "> { ?f a lb:Finding ; "
        "sioc:content ?content . OPTIONAL { ?f lb:sourceNode ?node } "
        "OPTIONAL { ?f lb:sourceUrl ?url } } } ORDER BY ?content",
    )
    assert rows == [
        {"content": "No source for this one.", "node": None, "url": None},
        {
            "content": "Tension roughly triples after hypo-osmotic shock.",
            "node": ref("ntE1a3kG3")["url"],
            "url": None,
        },
        {
            "content": "Tether pulling overestimates tension near adhesions.",
            "node": None,
            "url": "https://example.org/papers/tethers?x=1",
        },
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"content": "x", "sourceUid": "Xx0000000"}, "no node with uid Xx0000000"),
        ({"content": "x", "sourceUrl": "ftp://example.org/a"}, "http:// or https://"),
        ({"content": "x", "sourceUrl": "not a url"}, "http:// or https://"),
        ({"content": "x", "sourceUrl": "https://"}, "http:// or https://"),
        ({"content": "x", "sourceUrl": "https://example.org/a b"}, "not a valid URL"),
        (
            {"content": "x", "sourceUid": "ntE1a3kG3", "sourceUrl": "https://example.org/"},
            "not both",
        ),
        ({"content": "   "}, "content: must not be empty"),
        ({"content": "x", "tags": ["t" * 51]}, "longer than 50"),
        ({"content": "x", "project": "nope"}, "no project 'nope'"),
    ],
)
def test_log_finding_refuses_bad_input(
    project: InProcessTools, arguments: Json, message: str
) -> None:
    assert message in project.error("log_finding", **arguments)
    assert count(project.brain, f"GRAPH ?g {{ {FINDINGS} }}") == 0


def test_findings_without_a_project_go_to_the_notes_project(tools: InProcessTools) -> None:
    assert tools.ok("list_findings") == {
        "project": "notes",
        "findings": [],
        "listed": 0,
        "total": 0,
        "offset": 0,
        "nextOffset": None,
        "note": "no findings yet; log_finding records what you learn",
    }
    assert count(tools.brain, "GRAPH ?g { ?p a lb:Project }") == 0  # listing makes nothing
    first = tools.ok("log_finding", content="Tension triples after osmotic shock.")
    second = tools.ok("log_finding", content="Arp2/3 is recruited under load.", tags=["force"])
    assert first["finding"]["project"] == second["finding"]["project"] == "notes"
    listed = tools.ok("list_findings")
    assert [f["content"] for f in listed["findings"]] == [
        "Arp2/3 is recruited under load.",
        "Tension triples after osmotic shock.",
    ]
    projects = tools.ok("list_projects")
    assert [p["project"] for p in projects["projects"]] == ["notes"]
    assert projects["active"] is None  # the notes project is never made active
    # a project named or active takes the findings instead
    tools.ok("create_project", name="Membrane tension", activate=True)
    logged = tools.ok("log_finding", content="In the project.")
    assert logged["finding"]["project"] == "membrane-tension"
    assert tools.ok("list_findings", project="notes")["total"] == 2


def test_list_and_delete_findings(project: InProcessTools) -> None:
    ids = [
        project.ok("log_finding", content=text, sourceUid=uid, tags=tags)["finding"]["id"]
        for text, uid, tags in [
            ("Tension triples after osmotic shock.", "ntE1a3kG3", ["tension"]),
            ("More filaments grow under higher tension in Cytosim.", "D6SNboBqO", ["actin"]),
            ("Arp2/3 counts are about 200 per site.", "Q9ovjDVZl", ["actin", "counts"]),
        ]
    ]
    listed = project.ok("list_findings")
    assert [f["id"] for f in listed["findings"]] == ids[::-1]  # newest first
    assert [f["source"] for f in listed["findings"]] == [
        ref("Q9ovjDVZl"),
        ref("D6SNboBqO"),
        ref("ntE1a3kG3"),
    ]
    assert (listed["listed"], listed["total"], listed["nextOffset"], listed["note"]) == (
        3,
        3,
        None,
        None,
    )

    first = project.ok("list_findings", limit=2)
    assert [f["id"] for f in first["findings"]] == [ids[2], ids[1]]
    assert (first["total"], first["nextOffset"]) == (3, 2)
    assert first["note"] == "showing 2 of 3; pass offset=2 for more"
    rest = project.ok("list_findings", limit=2, offset=2)
    assert [f["id"] for f in rest["findings"]] == [ids[0]]
    assert rest["nextOffset"] is None

    tagged = project.ok("list_findings", tag="actin")
    assert [f["id"] for f in tagged["findings"]] == [ids[2], ids[1]]
    searched = project.ok("list_findings", query="tension shock")
    assert [f["id"] for f in searched["findings"]] == [ids[0], ids[1]]
    none = project.ok("list_findings", query="dynamin")
    assert none["findings"] == [] and none["note"] == "no findings match; log_finding records one"

    deleted = project.ok("delete_finding", findingId=ids[1])
    assert deleted["deleted"]["id"] == ids[1]
    assert deleted["deleted"]["content"] == "More filaments grow under higher tension in Cytosim."
    assert deleted["deleted"]["source"] == ref("D6SNboBqO")
    assert deleted["findings"] == 2
    assert [f["id"] for f in project.ok("list_findings")["findings"]] == [ids[2], ids[0]]
    assert count(project.brain, f"GRAPH <{PROJECT_GRAPH}> {{ {FINDINGS} }}") == 2
    iri = f"urn:labbrain:finding:{ids[1]}"
    assert count(project.brain, f"GRAPH ?g {{ <{iri}> ?p ?o }}") == 0

    assert f"no finding '{ids[1]}'" in project.error("delete_finding", findingId=ids[1])
    assert "no finding 'abc'" in project.error("delete_finding", findingId="abc")
    assert "no finding 'a b'" in project.error("delete_finding", findingId="a b")
    assert "list_findings" in project.error("delete_finding", findingId="abc")
    assert project.ok("delete_finding", findingId=iri.replace(ids[1], ids[2]))["findings"] == 1


def test_list_findings_of_an_empty_project(project: InProcessTools) -> None:
    empty = project.ok("list_findings")
    assert empty["findings"] == [] and empty["total"] == 0
    assert empty["note"] == "no findings yet; log_finding records what you learn"
    assert project.call("list_findings", limit=0)[0] is True


# ---------------------------------------------------------------------------------------
# Next steps
# ---------------------------------------------------------------------------------------


def _steps(answer: Json) -> list[tuple[str, str, Json, str | None]]:
    return [
        (s["kind"], s["call"]["tool"], s["call"]["arguments"], (s["node"] or {}).get("uid"))
        for s in answer["steps"]
    ]


def test_next_steps_at_cold_start_search_the_description_terms(project: InProcessTools) -> None:
    project.ok("get_node", uid="ntE1a3kG3")  # one visit: still below 3
    answer = project.ok("suggest_next_steps")
    assert (answer["stage"], answer["visits"], answer["findings"]) == ("coldStart", 1, 0)
    assert answer["stageReason"] == (
        "1 visit (exploring from 3): search the lab's graph for the project's key terms"
    )
    # key terms of DESCRIPTION: membrane, tension, endocytic, actin (twice each), changes
    assert _steps(answer) == [
        ("search", "search_nodes", {"query": "membrane tension endocytic"}, None),
        ("search", "search_nodes", {"query": "membrane"}, None),
        ("search", "search_nodes", {"query": "tension"}, None),
        ("search", "search_nodes", {"query": "endocytic"}, None),
        ("search", "search_nodes", {"query": "actin"}, None),
        ("search", "search_nodes", {"query": "changes"}, None),
    ]
    assert answer["steps"][2]["why"] == "'tension' is a key term of the project"
    # the suggested calls work
    hits = project.ok("search_nodes", **answer["steps"][0]["call"]["arguments"])
    assert hits["listed"] > 0


def test_next_steps_when_exploring_synthesise_what_was_read(project: InProcessTools) -> None:
    for uid in ["ntE1a3kG3", "D6SNboBqO", "ntE1a3kG3", "Q9ovjDVZl", "D6SNboBqO", "OHuPx55wG"]:
        project.ok("get_node", uid=uid)
    project.ok("log_finding", content="Calibrated counts: about 200.", sourceUid="Q9ovjDVZl")
    answer = project.ok("suggest_next_steps")
    assert (answer["stage"], answer["visits"], answer["findings"]) == ("exploration", 6, 1)
    # by visits (2, 2, 1), then latest visit first; Q9ovjDVZl already has a finding
    placeholder = "<what this node contributes to the project, in your own words>"
    expected = []
    for uid in ["D6SNboBqO", "ntE1a3kG3", "OHuPx55wG"]:
        where = {"uid": uid, "dataset": "akamatsulab-sample"}
        expected += [
            ("read", "get_node", where, uid),
            (
                "synthesise",
                "log_finding",
                {"content": placeholder, "sourceUid": uid, "dataset": "akamatsulab-sample"},
                uid,
            ),
        ]
    assert _steps(answer) == expected
    assert (
        answer["steps"][0]["why"] == "visited 2 times and no finding comes from it yet: reread it"
    )
    assert answer["steps"][4]["why"].startswith("visited once")
    assert answer["steps"][0]["node"] == ref("D6SNboBqO")


def test_next_steps_when_converging_formulate_close_and_check(project: InProcessTools) -> None:
    # tcr57uJJn opposes and 2F9lRQoGq supports claim n95t43O4n; vhiPVy5Md opposes claim
    # PZoyo3KsD; result eOH6CyD9K supports or opposes nothing and informs question pC155haSN,
    # which no claim addresses.
    for uid in ["tcr57uJJn", "2F9lRQoGq", "eOH6CyD9K", "PZoyo3KsD", "vhiPVy5Md"]:
        project.ok("log_finding", content=f"What {uid} shows.", sourceUid=uid)
    answer = project.ok("suggest_next_steps")
    assert (answer["stage"], answer["visits"], answer["findings"]) == ("convergence", 0, 5)
    assert _steps(answer) == [
        (
            "formulate",
            "add_proposition",
            {"content": "What eOH6CyD9K shows.", "confidence": 0.5, "source": "eOH6CyD9K"},
            "eOH6CyD9K",
        ),
        (
            "openQuestion",
            "get_linked_nodes",
            {"uid": "pC155haSN", "direction": "incoming", "dataset": "akamatsulab-sample"},
            "pC155haSN",
        ),
        (
            "contradiction",
            "get_claim_status",
            {"uid": "PZoyo3KsD", "dataset": "akamatsulab-sample"},
            "PZoyo3KsD",
        ),
        (
            "contradiction",
            "get_claim_status",
            {"uid": "n95t43O4n", "dataset": "akamatsulab-sample"},
            "n95t43O4n",
        ),
    ]
    why = [step["why"] for step in answer["steps"]]
    assert "supports or opposes no claim" in why[0]
    assert "nothing addresses it" in why[1]
    assert f"{ref('vhiPVy5Md')['title']!r} opposes it" in why[2]
    assert f"{ref('2F9lRQoGq')['title']!r} supports it" in why[3]
    assert f"{ref('tcr57uJJn')['title']!r} opposes it" in why[3]
    # the suggested calls work as they are
    status = project.ok("get_claim_status", **answer["steps"][3]["call"]["arguments"])
    assert status["contested"] is True
    informing = project.ok("get_linked_nodes", **answer["steps"][1]["call"]["arguments"])
    assert ref("eOH6CyD9K") in [link["node"] for link in informing["linkedNodes"]]
    proposition = project.ok("add_proposition", **answer["steps"][0]["call"]["arguments"])
    assert proposition["proposition"]["content"] == "What eOH6CyD9K shows."


def test_stage_thresholds_come_from_the_settings(make_settings: MakeSettings) -> None:
    with LabBrain(make_settings(brain_exploration_visits=1)) as brain:
        brain.load(str(SAMPLE))
        tools = InProcessTools(brain)
        tools.ok("create_project", name="Tiny", description="Myosin anchoring")
        tools.ok("get_node", uid="vhiPVy5Md")
        answer = tools.ok("suggest_next_steps", project="tiny")
    assert answer["stage"] == "exploration"
    assert (
        answer["stageReason"]
        == "1 visit (exploring from 1) and 0 findings: synthesise what was read"
    )
    assert [s["call"]["tool"] for s in answer["steps"]] == ["get_node", "log_finding"]


def test_next_steps_need_a_project(tools: InProcessTools) -> None:
    assert "no project is active" in tools.error("suggest_next_steps")


# ---------------------------------------------------------------------------------------
# Related pages
# ---------------------------------------------------------------------------------------


def _reasons(answer: Json, basis: str, via: str | None = None) -> set[str]:
    return {
        page["uid"]
        for page in answer["related"]
        for reason in page["reasons"]
        if reason["basis"] == basis and (via is None or reason["via"] == via)
    }


def test_related_pages_give_structural_temporal_and_semantic_reasons(
    sample_brain: LabBrain,
) -> None:
    node = "D6SNboBqO"  # Evidence: Supports A2LIsqtOL, jmpAZW8ff; Informs G1vFo969x; cites Q55e
    first, second, third = (
        InProcessTools(sample_brain),
        InProcessTools(sample_brain),
        InProcessTools(sample_brain),
    )
    first.ok("create_project", name="Membrane tension", description=DESCRIPTION)
    session_a = first.ok("record_visit", uid=node)["visit"]["session"]
    first.ok("get_node", uid="tv7DXq2fZ")
    first.ok("get_node", uid="CFKkdKj4Q")
    first.ok("get_node", uid="CFKkdKj4Q")
    second.ok("get_node", uid="A15KuAjs7")
    session_b = second.ok("record_visit", uid=node)["visit"]["session"]
    third.ok("get_node", uid="gH1D6XsD1")  # a session that never visited the node

    answer = first.ok("get_related_pages", uid=node, limit=100)
    assert answer["node"] == ref(node) and answer["project"] == "membrane-tension"
    uids = [page["uid"] for page in answer["related"]]
    assert node not in uids and len(uids) == len(set(uids)) == answer["listed"]
    assert answer["listed"] == answer["total"] and answer["note"] is None

    # structural: through the shared node, typed relations read from the JSON
    question, source = "G1vFo969x", "Q55e-6Npi"
    assert _reasons(answer, "sameQuestion", question) == typed_neighbours(question) - {node}
    # Q9ovjDVZl cites the source in its text ([[@akamatsu2020...]]), the others by relation
    assert _reasons(answer, "sameSource", source) == (typed_neighbours(source) | {"Q9ovjDVZl"})
    assert _reasons(answer, "sameSource", source) == {
        "Q9ovjDVZl",
        "EnNaVITqk",
        "pp7ENMIvy",
        "G1vFo969x",
    }
    assert _reasons(answer, "sameClaim", "A2LIsqtOL") == typed_neighbours("A2LIsqtOL") - {node}
    # jmpAZW8ff's text links to hypothesis Ey9_W_LjE ("See [[[[HYP]] - ...]]")
    assert _reasons(answer, "sameClaim", "jmpAZW8ff") == (
        typed_neighbours("jmpAZW8ff") - {node} | {"Ey9_W_LjE"}
    )
    by_uid = {page["uid"]: page for page in answer["related"]}
    same_source = next(r for r in by_uid["Q9ovjDVZl"]["reasons"] if r["basis"] == "sameSource")
    assert same_source["kind"] == "structural" and same_source["via"] == source
    # each node a listed reason goes through is given once, in full, beside the list
    named = {r["via"] for page in answer["related"] for r in page["reasons"] if r["via"]}
    assert {n["uid"] for n in answer["viaNodes"]} == named and source in named
    assert len(answer["viaNodes"]) == len(named)
    assert next(n for n in answer["viaNodes"] if n["uid"] == source) == ref(source)
    # the node's record is not repeated in each reason that goes through it
    assert json.dumps(answer["related"]).count(ref(source)["url"]) == int(source in uids)
    assert same_source["why"] == (
        "both are linked to the same source '@akamatsu2020AnalysesCellularEndocytic' "
        "(this node: text link; that node: text link)"
    )

    # temporal: visited in a session that also visited the node, once per session
    assert _reasons(answer, "sameSession") == {"tv7DXq2fZ", "CFKkdKj4Q", "A15KuAjs7"}
    assert by_uid["CFKkdKj4Q"]["reasons"] == [
        {
            "kind": "temporal",
            "basis": "sameSession",
            "why": f"visited 2 times in session {session_a}, which also visited this node",
            "via": None,
            "score": None,
            "sharedTerms": [],
            "session": session_a,
        }
    ]
    assert [r["session"] for r in by_uid["A15KuAjs7"]["reasons"]] == [session_b]
    assert by_uid["A15KuAjs7"] == {**ref("A15KuAjs7"), "reasons": by_uid["A15KuAjs7"]["reasons"]}

    # semantic: BM25 more-like-this on the node's key terms
    similar = [
        (page["uid"], reason)
        for page in answer["related"]
        for reason in page["reasons"]
        if reason["kind"] == "semantic"
    ]
    assert len(similar) == 10  # SIMILAR_HITS
    content = sample_brain.index.content(SAMPLE_GRAPH, ref(node)["url"])
    terms = key_terms(f"{ref(node)['title']} {content}")
    for uid, reason in similar:
        # each shared term is a key term of the node and a word of the other page's text (in
        # any form the index takes for the same word: "filament" for "filaments")
        text = f"{ref(uid)['title']} {sample_brain.index.content(SAMPLE_GRAPH, ref(uid)['url'])}"
        assert reason["sharedTerms"] and set(reason["sharedTerms"]) <= set(terms)
        assert all(set(analysed(term)) <= set(analysed(text)) for term in reason["sharedTerms"])
        assert reason["why"] == "similar text: shares the key terms " + ", ".join(
            reason["sharedTerms"]
        )

    # nodes with more kinds of reasons come first
    kinds = [len({r["kind"] for r in page["reasons"]}) for page in answer["related"]]
    assert kinds == sorted(kinds, reverse=True)
    assert answer["related"][0]["uid"] == "G1vFo969x"  # structural x3 and semantic

    capped = first.ok("get_related_pages", uid=node, limit=5)
    assert capped["listed"] == 5 and capped["total"] == answer["total"]
    assert [p["uid"] for p in capped["related"]] == uids[:5]
    assert capped["note"] == f"showing 5 of {answer['total']}; raise limit (up to 100)"


def test_similar_text_ranks_by_shared_key_terms_on_a_small_corpus(
    memory_brain: LabBrain, tmp_path: Path
) -> None:
    """Key terms of "motor": kinesin and dynein twice, then microtubule, transport, cargo
    once each (ties in order of first appearance). "three" shares three of them, "one"
    only kinesin, "none" no word; the filler makes the words rare enough for BM25."""
    pages = {
        "motor": ("kinesin dynein microtubule transport", "kinesin dynein cargo"),
        "three": ("kinesin dynein microtubule", "motors walk"),
        "one": ("kinesin walking", "steps"),
        "none": ("photosynthesis chlorophyll", "light harvesting"),
        **{f"filler{i}": (f"zeta theta iota {i}", "kappa lambda") for i in range(6)},
    }
    turtle = tmp_path / "motors.ttl"
    turtle.write_text(
        "@prefix dct: <http://purl.org/dc/terms/> .\n"
        "@prefix sioc: <http://rdfs.org/sioc/ns#> .\n"
        "@prefix dg: <https://discoursegraphs.com/schema/dg_core#> .\n"
        + "".join(
            f'<http://example.org/{uid}> a dg:Claim ; dct:title "{title}" ; '
            f'sioc:content "{content}" .\n'
            for uid, (title, content) in pages.items()
        )
    )
    memory_brain.load(str(turtle))
    answer = InProcessTools(memory_brain).ok("get_related_pages", uid="motor", limit=100)
    similar = [
        (page["uid"], reason["sharedTerms"])
        for page in answer["related"]
        for reason in page["reasons"]
        if reason["basis"] == "similarText"
    ]
    assert similar == [("three", ["kinesin", "dynein", "microtubule"]), ("one", ["kinesin"])]


def test_related_pages_without_a_project_have_no_temporal_reasons(tools: InProcessTools) -> None:
    answer = tools.ok("get_related_pages", uid="D6SNboBqO", limit=100)
    assert answer["project"] is None
    assert answer["note"] == "no project is active, so no temporal reasons: set_active_project"
    assert _reasons(answer, "sameSession") == set()
    assert "no node with uid Xx0000000" in tools.error("get_related_pages", uid="Xx0000000")
    assert "no project 'nope'" in tools.error("get_related_pages", uid="D6SNboBqO", project="nope")


# ---------------------------------------------------------------------------------------
# Idempotency, read-only, restart, provenance, export
# ---------------------------------------------------------------------------------------


def test_idempotent_writes_replay_and_refuse_other_arguments(tools: InProcessTools) -> None:
    brain = tools.brain
    arguments = {"name": "Membrane tension", "description": DESCRIPTION}
    created = tools.ok("create_project", idempotencyKey="k-project", **arguments)
    before = all_quads(brain)
    assert tools.ok("create_project", idempotencyKey="k-project", **arguments) == created
    assert all_quads(brain) == before
    assert "exists already" in tools.error("create_project", **arguments)

    finding = {"content": "Tension triples.", "sourceUid": "ntE1a3kG3", "tags": ["tension"]}
    first = tools.ok("log_finding", idempotencyKey="k-finding", **finding)
    before = all_quads(brain)
    assert tools.ok("log_finding", idempotencyKey="k-finding", **finding) == first
    assert all_quads(brain) == before
    assert count(brain, f"GRAPH ?g {{ {FINDINGS} }}") == 1
    other = tools.error("log_finding", idempotencyKey="k-finding", content="Something else.")
    assert "other arguments" in other
    assert "already used with log_finding" in tools.error(
        "record_visit", uid="ntE1a3kG3", idempotencyKey="k-finding"
    )
    assert all_quads(brain) == before

    visit = tools.ok("record_visit", uid="ntE1a3kG3", idempotencyKey="k-visit")
    assert tools.ok("record_visit", uid="ntE1a3kG3", idempotencyKey="k-visit") == visit
    assert count(brain, f"GRAPH ?g {{ {VISITS} }}") == 1

    deleted = tools.ok("delete_finding", findingId=first["finding"]["id"], idempotencyKey="k-del")
    assert tools.ok("delete_finding", findingId=first["finding"]["id"], idempotencyKey="k-del") == (
        deleted
    )
    assert "no finding" in tools.error("delete_finding", findingId=first["finding"]["id"])

    switched = tools.ok("set_active_project", idempotencyKey="k-off")
    assert tools.ok("set_active_project", idempotencyKey="k-off") == switched


def test_read_only_server_refuses_writes_but_still_reads(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as writer:
        InProcessTools(writer).ok(
            "create_project", name="Membrane tension", description=DESCRIPTION
        )
        with LabBrain(settings_for(loaded_dir), read_only=True) as reader:
            tools = InProcessTools(reader)
            before = all_quads(reader)
            read = tools.ok("get_node", uid="ntE1a3kG3")
            assert read["title"] == ref("ntE1a3kG3")["title"]
            assert tools.ok("list_projects")["active"] == "membrane-tension"
            writes: list[tuple[str, Json]] = [
                ("create_project", {"name": "Other"}),
                ("set_active_project", {"project": None}),
                ("record_visit", {"uid": "ntE1a3kG3"}),
                ("log_finding", {"content": "x", "sourceUid": "ntE1a3kG3"}),
                ("delete_finding", {"findingId": "abc"}),
            ]
            for name, arguments in writes:
                assert "opened read-only" in tools.error(name, **arguments)
            assert all_quads(reader) == before
        assert count(writer, f"GRAPH ?g {{ {VISITS} }}") == 0


def test_projects_survive_a_restart(loaded_dir: Path) -> None:
    with LabBrain(settings_for(loaded_dir)) as brain:
        tools = InProcessTools(brain)
        tools.ok("create_project", name="Membrane tension", description=DESCRIPTION)
        tools.ok("create_project", name="Other", activate=False)
        tools.ok("get_node", uid="ntE1a3kG3")
        logged = tools.ok("log_finding", content="Tension triples.", sourceUid="ntE1a3kG3")
    with LabBrain(settings_for(loaded_dir)) as reopened:
        tools = InProcessTools(reopened)
        listed = tools.ok("list_projects")
        assert listed["active"] == "membrane-tension"
        assert [(p["project"], p["findings"], p["visits"]) for p in listed["projects"]] == [
            ("membrane-tension", 1, 1),
            ("other", 0, 0),
        ]
        context = tools.ok("get_project_context")
        assert context["recentFindings"] == [logged["finding"]]
        assert [v["node"] for v in context["recentVisits"]] == [ref("ntE1a3kG3")]
        tools.ok("get_node", uid="D6SNboBqO")  # a new session goes on in the same project
        context = tools.ok("get_project_context")
        assert (context["project"]["visits"], context["sessions"]) == (2, 2)


def test_project_data_carries_prov_and_is_exported(project: InProcessTools) -> None:
    brain = project.brain
    finding = project.ok("log_finding", content="Tension triples.", sourceUid="ntE1a3kG3")
    iri = f"urn:labbrain:finding:{finding['finding']['id']}"
    rows = select(
        brain,
        "SELECT ?time ?agent ?session ?from ?part WHERE { GRAPH <"
        + PROJECT_GRAPH
        + "> { <"
        + iri
        + "> prov:generatedAtTime ?time ; prov:wasAttributedTo ?agent ; lb:session ?session ;"
        " prov:wasDerivedFrom ?from ; dct:isPartOf ?part } }",
    )
    assert len(rows) == 1
    row = rows[0]
    assert row["agent"] == "urn:labbrain:agent:assistant"
    assert row["from"] == ref("ntE1a3kG3")["url"]
    assert row["part"] == PROJECT_GRAPH
    assert row["session"] == f"urn:labbrain:session:{finding['finding']['session']}"
    assert count(brain, f"GRAPH <urn:labbrain:system> {{ <{row['session']}> a lb:Session }}") == 1
    project_rows = select(
        brain,
        f"SELECT ?agent WHERE {{ GRAPH <{PROJECT_GRAPH}> {{ <{PROJECT_GRAPH}> a lb:Project ; "
        "prov:wasAttributedTo ?agent ; prov:generatedAtTime ?t ; dct:title ?n } }",
    )
    assert project_rows == [{"agent": "urn:labbrain:agent:assistant"}]
    active = select(
        brain,
        "SELECT ?p WHERE { GRAPH <urn:labbrain:system> { "
        "<urn:labbrain:agent:assistant> lb:activeProject ?p } }",
    )
    assert active == [{"p": PROJECT_GRAPH}]
    assert count(brain, f"GRAPH <{SAMPLE_GRAPH}> {{ ?x a lb:Finding }}") == 0

    project.ok("get_node", uid="D6SNboBqO")
    visits = select(
        brain,
        "SELECT ?agent ?session ?from ?part WHERE { GRAPH <" + PROJECT_GRAPH + "> { ?v a lb:Visit ;"
        " lb:visited ?from ; prov:generatedAtTime ?t ; prov:wasAttributedTo ?agent ;"
        " lb:session ?session ; prov:wasDerivedFrom ?from ; dct:isPartOf ?part } }",
    )
    assert visits == [
        {
            "agent": "urn:labbrain:agent:assistant",
            "session": row["session"],
            "from": ref("D6SNboBqO")["url"],
            "part": PROJECT_GRAPH,
        }
    ]

    output = io.BytesIO()
    brain.export(output, "nquads")
    lines = output.getvalue().decode().splitlines()
    mine = [line for line in lines if line.endswith(f"<{PROJECT_GRAPH}> .")]
    assert len(mine) == brain.store.count(PROJECT_GRAPH)
    assert any('"Tension triples."' in line for line in mine)
    assert not any(line.endswith("<urn:labbrain:system> .") for line in lines)


def test_tools_are_listed_with_their_annotations(tools: InProcessTools) -> None:
    async def listing() -> dict[str, Any]:
        async with Client(tools.server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    listed = asyncio.run(listing())
    expected = {
        "create_project": (False, False),
        "set_active_project": (False, False),
        "list_projects": (True, False),
        "get_project_context": (True, False),
        "record_visit": (False, False),
        "log_finding": (False, False),
        "list_findings": (True, False),
        "delete_finding": (False, True),
        "suggest_next_steps": (True, False),
        "get_related_pages": (True, False),
    }
    for name, (read_only, destructive) in expected.items():
        annotations = listed[name].annotations
        assert annotations is not None, name
        assert (annotations.read_only_hint, annotations.destructive_hint) == (
            read_only,
            destructive,
        ), name
        assert len(listed[name].description or "") > 150, name
        if not read_only:
            assert "idempotencyKey" in listed[name].input_schema["properties"], name


def test_finding_search_finds_a_word_in_any_form_as_node_search_does(
    project: InProcessTools,
) -> None:
    """list_findings analyses words as search_nodes does: a plural finds the singular and
    the singular the plural; a match is shown as the query wrote it."""
    singular, plural = (
        project.ok("log_finding", content=text, sourceUid="ntE1a3kG3")["finding"]["id"]
        for text in (
            "One branched network of actin per endocytic site.",
            "Cortical networks stiffen under tension.",
        )
    )
    project.ok(
        "log_finding", content="Arp2/3 counts are about 200 per site.", sourceUid="D6SNboBqO"
    )
    for query in ("network", "networks", "Networks"):
        found = project.ok("list_findings", query=query)["findings"]
        assert {f["id"] for f in found} == {singular, plural}, query

    # the node index takes both forms for one word as well, so both searches agree
    for query in ("filament", "filaments"):
        nodes = project.ok("search_nodes", query=query, limit=100)["results"]
        assert len(nodes) > 3, query
    assert {
        n["uid"] for n in project.ok("search_nodes", query="filament", limit=100)["results"]
    } == {n["uid"] for n in project.ok("search_nodes", query="filaments", limit=100)["results"]}


def _project_graph_quads(brain: LabBrain, slug: str) -> set[str]:
    """The quads of a project's graph, with the project's own IRI written <P>."""
    iri = f"urn:labbrain:project:{slug}"
    return {
        f"{q.subject} {q.predicate} {q.object}".replace(f"<{iri}>", "<P>")
        for q in brain.store.quads(iri)
    }


def test_a_renamed_project_keeps_everything_under_its_new_slug(project: InProcessTools) -> None:
    brain = project.brain
    project.ok("record_visit", uid="ntE1a3kG3")
    project.ok("log_finding", content="Tension slows scission.", sourceUid="D6SNboBqO")
    before = _project_graph_quads(brain, "membrane-tension")

    renamed = project.ok("update_project", name="Cell mechanics")
    assert renamed["renamedFrom"] == "membrane-tension"
    summary = renamed["project"]
    assert (summary["project"], summary["name"], summary["active"]) == (
        "cell-mechanics",
        "Cell mechanics",
        True,
    )
    assert summary["findings"] == 1 and summary["visits"] == 1
    after = _project_graph_quads(brain, "cell-mechanics")
    title = "<http://purl.org/dc/terms/title>"
    assert {q for q in after if title not in q} == {q for q in before if title not in q}
    assert '<P> <http://purl.org/dc/terms/title> "Cell mechanics"' in after
    assert not list(brain.store.quads(PROJECT_GRAPH))
    listed = project.ok("list_projects")
    assert [p["project"] for p in listed["projects"]] == ["cell-mechanics"]
    assert listed["active"] == "cell-mechanics"  # it stays the active project
    context = project.ok("get_project_context", project="Cell mechanics")
    assert context["project"]["findings"] == 1

    described = project.ok("update_project", description="Forces at endocytic sites.")
    assert described["renamedFrom"] is None
    assert described["project"]["description"] == "Forces at endocytic sites."
    assert described["project"]["name"] == "Cell mechanics"

    project.ok("create_project", name="Actin waves", activate=False)
    taken = project.error("update_project", project="cell-mechanics", name="Actin  waves")
    assert "'actin-waves' exists already" in taken
    assert "give a new name" in project.error("update_project")


def test_a_deleted_project_leaves_nothing_behind(project: InProcessTools) -> None:
    brain = project.brain
    project.ok("log_finding", content="Tension slows scission.")
    other = project.ok("create_project", name="Actin waves", activate=False)["project"]
    before_other = _project_graph_quads(brain, other["project"])
    lab_before = brain.store.count(SAMPLE_GRAPH)

    deleted = project.ok("delete_project", project="Membrane tension")
    assert deleted["deleted"]["project"] == "membrane-tension"
    assert deleted["deleted"]["findings"] == 1
    assert not list(brain.store.quads(PROJECT_GRAPH))
    assert count(brain, "GRAPH <urn:labbrain:system> { ?a lb:activeProject ?p }") == 0
    listed = project.ok("list_projects")
    assert [p["project"] for p in listed["projects"]] == ["actin-waves"]
    assert listed["active"] is None
    assert _project_graph_quads(brain, "actin-waves") == before_other
    assert brain.store.count(SAMPLE_GRAPH) == lab_before  # the lab's graph is not touched
    assert "no project" in project.error("delete_project", project="membrane-tension")
