"""What a load changed in its dataset, recorded as provenance beside the load.

:func:`change_quads` compares the dataset before a load (from the text index) with what the
load writes (from the analysis of the export or vault) and describes the difference in the
changes graph (:data:`~labbrain.rdf.namespaces.CHANGES_GRAPH`), written in the same commit as
the load record, so a load and its change record land together or not at all::

    <urn:labbrain:change:<load id>> a lb:Change, prov:Activity ;
        lb:dataset <dataset graph> ; prov:endedAtTime "..." ; lb:sourceFile "..." ;
        lb:nodesAdded 3 ; lb:nodesRemoved 0 ; lb:nodesEdited 1 ;
        lb:relationsAdded 2 ; lb:relationsRemoved 0 ; lb:entriesTruncated false .
    <urn:labbrain:change:<load id>/n/<k>> lb:partOf <...> ; lb:changeKind "added" ;
        lb:node <node> ; lb:changedTitle "..." ; lb:nodeType "Claim" ; lb:changedCreator "..." .
    <urn:labbrain:change:<load id>/r/<k>> lb:partOf <...> ; lb:changeKind "added" ;
        lb:relationSource <a> ; lb:relationLabel "supports" ; lb:relationDestination <b> .
    <urn:labbrain:change:<load id>/p/<k>> lb:partOf <...> ; lb:changedCreator "..." ;
        lb:nodeType "Claim" ; lb:nodesAdded 12 .

Entries use labbrain's own terms, not ``dct:title`` / ``dct:creator``: a query over the union
of all graphs must not take a change entry for a node. Node and relation entries are kept for
the first :data:`MAX_ENTRIES` of a load (a first load of a large graph is counted, not listed);
the per-person counts of added nodes are always complete.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.index.dataset_state import DatasetState, NodeState
from labbrain.rdf.namespaces import CHANGES_GRAPH, LB, PROV, RDF, XSD
from labbrain.rdf.terms import timestamp

#: Node and relation entries recorded per load, at most.
MAX_ENTRIES = 1000
CHANGE_PREFIX = "urn:labbrain:change:"


def diff(
    before: DatasetState, after: DatasetState
) -> tuple[list[tuple[str, str, NodeState]], list[tuple[str, str, str, str]]]:
    """The node changes (kind, IRI, state: the new one, or the old one of a removed node) and
    relation changes (kind, source, label, destination) from ``before`` to ``after``, each
    list in a stable order (kind, then IRI)."""
    nodes: list[tuple[str, str, NodeState]] = []
    for iri, state in after.nodes.items():
        old = before.nodes.get(iri)
        if old is None:
            nodes.append(("added", iri, state))
        elif old != state:
            nodes.append(("edited", iri, state))
    nodes += [("removed", iri, s) for iri, s in before.nodes.items() if iri not in after.nodes]
    relations = [("added", *r) for r in after.relations - before.relations]
    relations += [("removed", *r) for r in before.relations - after.relations]
    order = {"added": 0, "edited": 1, "removed": 2}
    nodes.sort(key=lambda c: (order[c[0]], c[1]))
    relations.sort(key=lambda c: (order[c[0]], c[1], c[2], c[3]))
    return nodes, relations


def change_quads(
    graph: str,
    load_id: str,
    source: str,
    at: datetime,
    before: DatasetState,
    after: DatasetState,
) -> list[Quad]:
    """The change record of one load (see the module's doc)."""
    nodes, relations = diff(before, after)
    home = NamedNode(CHANGES_GRAPH)
    change = NamedNode(CHANGE_PREFIX + load_id)
    quads: list[Quad] = []

    def fact(subject: NamedNode, predicate: str, value: NamedNode | Literal) -> None:
        quads.append(Quad(subject, NamedNode(predicate), value, home))

    def count(value: int) -> Literal:
        return Literal(str(value), datatype=NamedNode(XSD + "integer"))

    kinds = Counter(kind for kind, _, _ in nodes)
    related = Counter(kind for kind, *_ in relations)
    fact(change, RDF + "type", NamedNode(LB + "Change"))
    fact(change, RDF + "type", NamedNode(PROV + "Activity"))
    fact(change, LB + "dataset", NamedNode(graph))
    fact(change, PROV + "endedAtTime", timestamp(at))
    if source != "-":
        fact(change, LB + "sourceFile", Literal(str(Path(source).resolve())))
    for kind in ("added", "removed", "edited"):
        fact(change, LB + f"nodes{kind.capitalize()}", count(kinds[kind]))
    for kind in ("added", "removed"):
        fact(change, LB + f"relations{kind.capitalize()}", count(related[kind]))
    truncated = len(nodes) + len(relations) > MAX_ENTRIES
    fact(
        change,
        LB + "entriesTruncated",
        Literal(str(truncated).lower(), datatype=NamedNode(XSD + "boolean")),
    )
    # The first MAX_ENTRIES entries: nodes first, then relations.
    listed_nodes = nodes[:MAX_ENTRIES]
    listed_relations = relations[: MAX_ENTRIES - len(listed_nodes)]
    for number, (kind, iri, state) in enumerate(listed_nodes):
        entry = NamedNode(f"{CHANGE_PREFIX}{load_id}/n/{number}")
        fact(entry, LB + "partOf", change)
        fact(entry, LB + "changeKind", Literal(kind))
        fact(entry, LB + "node", NamedNode(iri))
        fact(entry, LB + "changedTitle", Literal(state.title))
        fact(entry, LB + "nodeType", Literal(state.node_type))
        if state.creator:
            fact(entry, LB + "changedCreator", Literal(state.creator))
    for number, (kind, source_iri, label, destination) in enumerate(listed_relations):
        entry = NamedNode(f"{CHANGE_PREFIX}{load_id}/r/{number}")
        fact(entry, LB + "partOf", change)
        fact(entry, LB + "changeKind", Literal(kind))
        fact(entry, LB + "relationSource", NamedNode(source_iri))
        fact(entry, LB + "relationLabel", Literal(label))
        fact(entry, LB + "relationDestination", NamedNode(destination))
    people = Counter(
        (state.creator or "", state.node_type) for kind, _, state in nodes if kind == "added"
    )
    for number, ((creator, node_type), added) in enumerate(sorted(people.items())):
        entry = NamedNode(f"{CHANGE_PREFIX}{load_id}/p/{number}")
        fact(entry, LB + "partOf", change)
        if creator:
            fact(entry, LB + "changedCreator", Literal(creator))
        fact(entry, LB + "nodeType", Literal(node_type))
        fact(entry, LB + "nodesAdded", count(added))
    return quads
