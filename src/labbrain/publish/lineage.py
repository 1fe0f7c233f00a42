"""The lineage of a Result or Evidence node, read through the discourse read models.

What an evidence bundle (:mod:`labbrain.publish.bundle`) carries besides the node itself: for
a Result, the Evidence nodes linked to it (by a typed relation or in their text); for the
Result and its Evidence (or the Evidence alone), the statements they bear on by a typed
relation (Claims, and the Hypotheses and Conclusions a Result supports or opposes), the
Questions they or those statements inform or address, and the Sources linked to them (by a
relation or in their text). Every link between two of these nodes is kept as the graph has it.

Everything comes from the text index (one row per node, its links read model; see
:class:`~labbrain.discourse.scope.ReadScope`), a frontier at a time: a hub's bundle costs a
handful of index lookups, not one per link. Each list is capped at :data:`MAX_PER_ROLE`
nodes (by uid), and a cut says how many there were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from labbrain.discourse.scope import ReadScope
from labbrain.errors import InvalidArgument
from labbrain.index.links import NodeLink
from labbrain.index.text import IndexedNode, TextIndex
from labbrain.rdf.terms import dois_in

#: Node types (labels, lower case) a bundle can be made of.
RESULT_TYPES = frozenset({"result"})
EVIDENCE_TYPES = frozenset({"evidence"})
BUNDLED_TYPES = RESULT_TYPES | EVIDENCE_TYPES
#: Statements evidence bears on: claims, and a result's hypotheses and conclusions.
STATEMENT_TYPES = frozenset({"claim", "hypothesis", "conclusion"})
QUESTION_TYPES = frozenset({"question"})
SOURCE_TYPES = frozenset({"source", "source document"})

#: How much of a source's title and text is searched for DOIs.
DOI_TEXT = 100_000

#: The most nodes of one role (evidence, statements, questions, sources) a lineage holds.
MAX_PER_ROLE = 200


@dataclass(frozen=True, order=True)
class Relation:
    """A link between two nodes of a lineage: a typed relation with its label, or (label
    None) a text link, from ``source`` to ``destination`` (IRIs)."""

    source: str
    label: str | None
    destination: str


@dataclass
class Lineage:
    """A Result or Evidence node (``subject``) and the nodes around it, by role, each list
    sorted by uid; ``relations`` are the links among them all, sorted."""

    subject: IndexedNode
    evidence: list[IndexedNode] = field(default_factory=list)
    statements: list[IndexedNode] = field(default_factory=list)
    questions: list[IndexedNode] = field(default_factory=list)
    sources: list[IndexedNode] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    #: Roles cut at :data:`MAX_PER_ROLE`, with how many nodes they had.
    cut: dict[str, int] = field(default_factory=dict)

    @property
    def is_result(self) -> bool:
        """Whether the subject is a Result (else it is an Evidence node)."""
        return self.subject.node_type.lower() in RESULT_TYPES

    def nodes(self) -> list[IndexedNode]:
        """Every node of the lineage, the subject first, each once."""
        seen: dict[str, IndexedNode] = {self.subject.iri: self.subject}
        for node in (*self.evidence, *self.statements, *self.questions, *self.sources):
            seen.setdefault(node.iri, node)
        return list(seen.values())


def bundled_node(scope: ReadScope, uid: str, dataset: str | None = None) -> IndexedNode:
    """The node ``uid`` names, if a bundle can be made of it (a Result or Evidence node).

    Raises NodeNotFound for an unknown uid, InvalidArgument naming the node's type and the
    types that can be bundled for any other node."""
    node, _ = scope.resolve(uid, dataset)
    if node.node_type.lower() not in BUNDLED_TYPES:
        raise InvalidArgument(
            "uid",
            f"{node.uid} is a {node.node_type} node; evidence bundles are made of Result or "
            "Evidence nodes (search_nodes with nodeType Evidence or Result finds them)",
        )
    return node


def lineage_of(scope: ReadScope, subject: IndexedNode) -> Lineage:
    """The lineage of ``subject`` (a node :func:`bundled_node` accepted), as the module says:
    deterministic for a given state of the dataset."""
    graph = subject.graph
    lineage = Lineage(subject)
    links: dict[str, list[NodeLink]] = dict(scope.edges_of(graph, [subject]))
    evidence: list[IndexedNode] = []
    if lineage.is_result:
        near = _nodes(scope, graph, (link.other for link in links[subject.iri]))
        found = [node for node in near.values() if node.node_type.lower() in EVIDENCE_TYPES]
        evidence = _capped(lineage, "evidence", found)
        links.update(scope.edges_of(graph, evidence))
    lineage.evidence = evidence
    bearers = [subject, *evidence]
    around = _nodes(scope, graph, (link.other for node in bearers for link in links[node.iri]))

    def typed_from(nodes: Iterable[IndexedNode], types: frozenset[str]) -> list[IndexedNode]:
        return [
            around[link.other]
            for node in nodes
            for link in links[node.iri]
            if link.kind == "typed"
            and link.other in around
            and around[link.other].node_type.lower() in types
        ]

    lineage.statements = _capped(lineage, "statements", typed_from(bearers, STATEMENT_TYPES))
    links.update(scope.edges_of(graph, lineage.statements))
    around.update(
        _nodes(scope, graph, (link.other for n in lineage.statements for link in links[n.iri]))
    )
    lineage.questions = _capped(
        lineage, "questions", typed_from([*bearers, *lineage.statements], QUESTION_TYPES)
    )
    lineage.sources = _capped(
        lineage,
        "sources",
        [
            around[link.other]
            for node in bearers
            for link in links[node.iri]
            if link.other in around and around[link.other].node_type.lower() in SOURCE_TYPES
        ],
    )
    lineage.relations = _relations(lineage, links)
    return lineage


def _nodes(scope: ReadScope, graph: str, iris: Iterable[str]) -> dict[str, IndexedNode]:
    """The indexed nodes of ``graph`` among ``iris`` (one index lookup), by IRI."""
    return scope.brain.index.nodes_by_iri(set(iris), graph)


def _capped(lineage: Lineage, role: str, nodes: Iterable[IndexedNode]) -> list[IndexedNode]:
    """``nodes`` without repeats or the subject, sorted by uid, at most
    :data:`MAX_PER_ROLE` (a cut is recorded in ``lineage.cut``)."""
    unique = {node.iri: node for node in nodes if node.iri != lineage.subject.iri}
    ordered = sorted(unique.values(), key=lambda node: (node.uid, node.iri))
    if len(ordered) > MAX_PER_ROLE:
        lineage.cut[role] = len(ordered)
    return ordered[:MAX_PER_ROLE]


def _relations(lineage: Lineage, links: dict[str, list[NodeLink]]) -> list[Relation]:
    """Every link the walk saw between two nodes of the lineage, each once, sorted."""
    members = {node.iri for node in lineage.nodes()}
    found: set[Relation] = set()
    for iri, rows in links.items():
        if iri not in members:
            continue
        for link in rows:
            if link.other not in members:
                continue
            source, destination = (
                (iri, link.other) if link.direction == "outgoing" else (link.other, iri)
            )
            found.add(Relation(source, link.label if link.kind == "typed" else None, destination))
    return sorted(found, key=lambda r: (r.source, r.label or "", r.destination))


def source_dois(index: TextIndex, source: IndexedNode) -> list[str]:
    """The DOIs a source's title and text name (the first :data:`DOI_TEXT` characters), each
    once, as ``https://doi.org/`` IRIs."""
    text = index.content(source.graph, source.iri)
    return dois_in(f"{source.title}\n{text}"[:DOI_TEXT])
