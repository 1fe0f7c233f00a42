"""What labbrain published: one record per node or relation it signed a nanopublication for.

Kept in :data:`~labbrain.rdf.namespaces.PUBLISHED_GRAPH`, so that a later publication knows
whether a node changed (a digest of what its nanopublication says), which nanopublication a
new one supersedes, and when the unchanged one was dated (so signing it again gives the same
trusty URI)::

    <urn:labbrain:publication:<digest of the key>> lb:publicationKey "node <iri>" ;
        lb:publishedFrom <urn:labbrain:dataset:...> ; lb:nanopub <https://w3id.org/np/RA...> ;
        lb:contentDigest "..." ; dct:created "..."^^xsd:dateTime ;
        npx:supersedes <earlier nanopublication> ; lb:retracted true ;
        lb:retractedBy <the retraction> .
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.rdf.namespaces import (
    DCT,
    LB,
    NPX,
    PUBLICATION_PREFIX,
    PUBLISHED_GRAPH,
    XSD,
)
from labbrain.store.base import QuadStore

_GRAPH = NamedNode(PUBLISHED_GRAPH)
_KEY = NamedNode(LB + "publicationKey")
_IN = NamedNode(LB + "publishedFrom")
_URI = NamedNode(LB + "nanopub")
_DIGEST = NamedNode(LB + "contentDigest")
_CREATED = NamedNode(DCT + "created")
_SUPERSEDES = NamedNode(NPX + "supersedes")
_RETRACTED = NamedNode(LB + "retracted")
_RETRACTION = NamedNode(LB + "retractedBy")
_BOOLEAN = NamedNode(XSD + "boolean")


@dataclass(frozen=True)
class Publication:
    """The last nanopublication of one node or relation (``key``: ``node <iri>`` or
    ``relation <source> <type> <destination>``) in a dataset graph."""

    key: str
    graph: str
    uri: str
    digest: str
    date: str
    supersedes: str | None
    retracted: bool
    #: The nanopublication that retracted it (when ``retracted``).
    retraction: str | None = None


def _subject(graph: str, key: str) -> NamedNode:
    digest = hashlib.sha256(f"{graph} {key}".encode()).hexdigest()[:32]
    return NamedNode(PUBLICATION_PREFIX + digest)


class Ledger:
    """The publication records of one store."""

    def __init__(self, store: QuadStore) -> None:
        self.store = store

    def records(self, graphs: Iterable[str]) -> dict[tuple[str, str], Publication]:
        """The records of the nodes and relations of ``graphs``, by (graph, key): the same
        node can be in two datasets (two snapshots of one graph), each published apart."""
        wanted = set(graphs)
        fields: dict[str, dict[str, str]] = {}
        for quad in self.store.quads(PUBLISHED_GRAPH):
            value = quad.object.value if isinstance(quad.object, NamedNode | Literal) else ""
            fields.setdefault(str(quad.subject), {})[quad.predicate.value] = value
        found: dict[tuple[str, str], Publication] = {}
        for values in fields.values():
            if values.get(_IN.value) not in wanted or _KEY.value not in values:
                continue
            record = Publication(
                key=values[_KEY.value],
                graph=values[_IN.value],
                uri=values[_URI.value],
                digest=values.get(_DIGEST.value, ""),
                date=values.get(_CREATED.value, ""),
                supersedes=values.get(_SUPERSEDES.value),
                retracted=values.get(_RETRACTED.value) == "true",
                retraction=values.get(_RETRACTION.value),
            )
            found[(record.graph, record.key)] = record
        return found

    def remember(self, records: Iterable[Publication]) -> None:
        """Replace the records of these keys, all in one transaction."""
        remove: list[Quad] = []
        add: list[Quad] = []
        for record in records:
            subject = _subject(record.graph, record.key)
            remove.extend(self.store.quads(PUBLISHED_GRAPH, subject))
            add.extend(
                Quad(subject, predicate, value, _GRAPH)
                for predicate, value in (
                    (_KEY, Literal(record.key)),
                    (_IN, NamedNode(record.graph)),
                    (_URI, NamedNode(record.uri)),
                    (_DIGEST, Literal(record.digest)),
                    (_CREATED, Literal(record.date, datatype=NamedNode(XSD + "dateTime"))),
                    (
                        _RETRACTED,
                        Literal("true" if record.retracted else "false", datatype=_BOOLEAN),
                    ),
                )
            )
            if record.supersedes:
                add.append(Quad(subject, _SUPERSEDES, NamedNode(record.supersedes), _GRAPH))
            if record.retraction:
                add.append(Quad(subject, _RETRACTION, NamedNode(record.retraction), _GRAPH))
        self.store.apply(remove, add)
