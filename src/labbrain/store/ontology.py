"""The dg / labbrain vocabulary: read from ``ontology/*.ttl``, kept in the ontology graph.

:func:`vocabulary` gives the lookups ingest needs (core node class by label or ``[[XXX]]``
abbreviation, core relation by label) straight from the Turtle files, so the ontology is the
single source of those mappings. :func:`ensure_ontology` (re)loads the ontology graph of a
store when the shipped files changed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Triple, parse

from labbrain.rdf.namespaces import (
    DG,
    LB,
    ONTOLOGY_FILE_PREFIX,
    ONTOLOGY_GRAPH,
    OWL,
    RDF,
    RDFS,
    SYSTEM_GRAPH,
)
from labbrain.rdf.resources import read_resources
from labbrain.store.base import QuadStore

_SPACE_RE = re.compile(r"[\s_-]+")


def normalise_label(label: str) -> str:
    """Case-, space-, dash- and underscore-insensitive form of a label ("Supported By" ->
    "supportedby")."""
    return _SPACE_RE.sub("", label).lower()


@dataclass(frozen=True)
class NodeKind:
    """A core node class with its label, one-line description and title abbreviation."""

    iri: str
    label: str
    description: str
    abbreviation: str | None


@dataclass
class Vocabulary:
    """Lookups derived from the ontology files."""

    digest: str
    triples: list[Quad]
    node_kinds: dict[str, NodeKind] = field(default_factory=dict)  # iri -> kind
    relations: dict[str, str] = field(default_factory=dict)  # iri -> label
    declared: set[str] = field(default_factory=set)  # every IRI with an rdf:type

    @cached_property
    def _kinds_by_label(self) -> dict[str, NodeKind]:
        return {normalise_label(kind.label): kind for kind in self.node_kinds.values()}

    @cached_property
    def _kinds_by_abbreviation(self) -> dict[str, NodeKind]:
        return {k.abbreviation: k for k in self.node_kinds.values() if k.abbreviation}

    @cached_property
    def _relations_by_label(self) -> dict[str, str]:
        return {normalise_label(label): iri for iri, label in self.relations.items()}

    def node_kind_by_label(self, label: str) -> NodeKind | None:
        """The core node class whose label matches ``label`` (normalised), if any."""
        return self._kinds_by_label.get(normalise_label(label))

    def node_kind_by_abbreviation(self, abbreviation: str) -> NodeKind | None:
        """The core node class exporters title with ``[[abbreviation]]``, if any."""
        return self._kinds_by_abbreviation.get(abbreviation.upper())

    def relation_by_label(self, label: str) -> str | None:
        """The core relation property whose label matches ``label`` (normalised), if any."""
        return self._relations_by_label.get(normalise_label(label))


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """Parse the shipped ontology files once; the result is shared and must not be mutated."""
    files = read_resources("ontology", ".ttl")
    digest = hashlib.sha256("".join(f"{n}\n{t}" for n, t in files.items()).encode()).hexdigest()
    graph = NamedNode(ONTOLOGY_GRAPH)
    triples: list[Quad] = []
    for name, text in files.items():
        for quad in parse(text, RdfFormat.TURTLE, base_iri=ONTOLOGY_FILE_PREFIX + name):
            triples.append(Quad(quad.subject, quad.predicate, quad.object, graph))
    vocab = Vocabulary(digest=digest, triples=triples)
    by_subject: dict[str, dict[str, list[str]]] = {}
    for quad in triples:
        if isinstance(quad.subject, NamedNode) and not isinstance(quad.object, Triple):
            props = by_subject.setdefault(quad.subject.value, {})
            props.setdefault(quad.predicate.value, []).append(quad.object.value)
    dg_node = DG + "DiscourseNode"
    for iri, props in by_subject.items():
        types = props.get(RDF + "type", [])
        if types:
            vocab.declared.add(iri)
        label = (props.get(RDFS + "label") or [""])[0]
        if OWL + "Class" in types and _is_node_kind(iri, by_subject, dg_node):
            vocab.node_kinds[iri] = NodeKind(
                iri=iri,
                label=label,
                description=(props.get(RDFS + "comment") or [""])[0],
                abbreviation=next(iter(props.get(LB + "abbreviation", [])), None),
            )
        if OWL + "ObjectProperty" in types and label[:1].isupper():
            vocab.relations[iri] = label
    return vocab


def _is_node_kind(iri: str, by_subject: dict[str, dict[str, list[str]]], root: str) -> bool:
    """True when ``iri`` is a strict subclass of ``root`` (following rdfs:subClassOf)."""
    seen: set[str] = set()
    stack = list(by_subject.get(iri, {}).get(RDFS + "subClassOf", []))
    while stack:
        parent = stack.pop()
        if parent == root:
            return True
        if parent not in seen:
            seen.add(parent)
            stack.extend(by_subject.get(parent, {}).get(RDFS + "subClassOf", []))
    return False


def ensure_ontology(store: QuadStore) -> bool:
    """Make the store's ontology graph match the shipped files; return True if it was reloaded.

    The digest recorded in the system graph is written last, so an interrupted reload is
    redone at the next open.
    """
    vocab = vocabulary()
    system = NamedNode(SYSTEM_GRAPH)
    digest_pred = NamedNode(LB + "ontologyDigest")
    subject = NamedNode(ONTOLOGY_GRAPH)
    recorded = [str(q.object) for q in store.quads(SYSTEM_GRAPH, subject, digest_pred)]
    if recorded == [str(Literal(vocab.digest))] and store.has_graph(ONTOLOGY_GRAPH):
        return False
    if store.has_graph(ONTOLOGY_GRAPH):
        store.drop_graph(ONTOLOGY_GRAPH)
    store.add_quads(vocab.triples)
    store.remove_quads(list(store.quads(SYSTEM_GRAPH, subject, digest_pred)))
    store.add_quads([Quad(subject, digest_pred, Literal(vocab.digest), system)])
    return True
