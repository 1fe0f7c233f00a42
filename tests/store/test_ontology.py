"""The ontology files parse, and declare every dg:/dgb:/lb: term the code and queries use."""

from __future__ import annotations

import re

from pyoxigraph import NamedNode, Store

from conftest import ROOT
from labbrain.rdf.namespaces import DG, DGB, LB, RDFS
from labbrain.store.ontology import vocabulary

PREFIXED = {"lb": LB, "dg": DG, "dgb": DGB}
CONSTANT = {"LB": LB, "DG": DG, "DGB": DGB}


def _terms_used() -> set[str]:
    used: set[str] = set()
    for path in (ROOT / "src" / "labbrain").rglob("*.py"):
        text = path.read_text()
        for name, local in re.findall(r"\b(LB|DGB|DG) \+ \"(\w+)\"", text):
            used.add(CONSTANT[name] + local)
        for iri in re.findall(r"https://discoursegraphs\.com/schema/dg_(?:base|core)#\w+", text):
            used.add(iri)
    for path in (ROOT / "queries").glob("*.rq"):
        for prefix, local in re.findall(r"\b(lb|dg|dgb):(\w+)", path.read_text()):
            used.add(PREFIXED[prefix] + local)
    return used


def test_every_term_used_is_declared() -> None:
    used = _terms_used()
    assert len(used) > 20
    missing = sorted(used - vocabulary().declared)
    assert missing == []


def test_core_kinds_and_relations() -> None:
    vocab = vocabulary()
    for abbreviation, label in {
        "QUE": "Question",
        "CLM": "Claim",
        "EVD": "Evidence",
        "RES": "Result",
        "CON": "Conclusion",
        "HYP": "Hypothesis",
        "ISS": "Issue",
        "SRC": "Source",
        "ART": "Artifact",
    }.items():
        kind = vocab.node_kind_by_abbreviation(abbreviation)
        assert kind is not None and kind.label == label
        assert kind.description  # a one-line description for get_schema
        assert vocab.node_kind_by_label(label.upper()) == kind
    assert vocab.relation_by_label("Supports") == DG + "supports"
    assert vocab.relation_by_label("supported by") == DG + "supportedBy"
    assert vocab.relation_by_label("Informed By") == LB + "informedBy"
    assert vocab.relation_by_label("Addresses") == DG + "addresses"
    assert vocab.relation_by_label("Frobnicates") is None


def test_agent_side_classes_are_declared() -> None:
    declared = vocabulary().declared
    for name in (
        "Project",
        "Finding",
        "Visit",
        "Domain",
        "MemoryNode",
        "Link",
        "Proposition",
        "Task",
    ):
        assert LB + name in declared
    assert LB + "strength" in declared


def test_every_class_below_discourse_node_names_it_as_a_direct_superclass() -> None:
    """The templates that label a node by its core class ask for one ``rdfs:subClassOf`` step
    to dg:DiscourseNode (Virtuoso loses rows of a transitive path in an OPTIONAL), so the
    shipped ontology states that step for every class that reaches it in more."""
    store = Store()
    store.extend(vocabulary().triples)
    sub = NamedNode(RDFS + "subClassOf")
    top = NamedNode(DG + "DiscourseNode")

    def reaches(node: NamedNode, seen: frozenset[NamedNode] = frozenset()) -> bool:
        parents = [q.object for q in store.quads_for_pattern(node, sub, None)]
        return any(
            parent == top
            or (
                isinstance(parent, NamedNode)
                and parent not in seen
                and reaches(parent, seen | {node})
            )
            for parent in parents
        )

    below = {q.subject for q in store.quads_for_pattern(None, sub, None) if reaches(q.subject)}  # type: ignore[arg-type]
    direct = {q.subject for q in store.quads_for_pattern(None, sub, top)}
    assert NamedNode(LB + "Source") in below and NamedNode(DG + "Claim") in below
    assert below - direct == set()
