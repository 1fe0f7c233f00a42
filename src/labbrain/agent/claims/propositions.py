"""Propositions: atomic claims an assistant records, with a source, a confidence and relations.

A proposition lives in the claims graph ``urn:labbrain:claims:main`` as
``urn:labbrain:proposition:<hex>``, typed ``lb:Proposition``, with ``sioc:content``,
``lb:confidence`` (0..1), ``lb:sequence`` (1, 2, 3, ... in the order they were recorded: the
stable order of :meth:`Propositions.page` and its cursors), an optional ``dct:source`` (a DOI
as ``https://doi.org/<doi>``, a web page, or a lab node, which is also ``prov:wasDerivedFrom``)
and the PROV triples of every agent write.

A relation between two ends (propositions, or one proposition and a lab node) is a resource
``urn:labbrain:proposition-relation:<hex>`` (``lb:PropositionRelation`` with ``rdf:subject``,
``rdf:predicate``, ``rdf:object``, optional ``lb:reasoning`` and provenance) and also the
direct triple ``<source> lb:supports <target>`` (or refutes, extends, implies, contradicts),
so SPARQL follows it in one hop. Nothing here writes a dataset graph. Sources are normalised
by :mod:`labbrain.agent.claims.sources`; lineage and contradiction search are in
:mod:`labbrain.agent.claims.paths`.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyoxigraph import NamedNode, Quad

from labbrain.agent.claims.models import (
    AddPropositionResult,
    ConnectResult,
    Endpoint,
    Proposition,
    PropositionDetail,
    PropositionPage,
    PropositionRef,
    PropositionRelation,
    RelationName,
)
from labbrain.agent.claims.sources import describe_source, normalise_source
from labbrain.agent.writer import AgentWriter, WritePlan
from labbrain.core import LabBrain
from labbrain.discourse.reader import DiscourseReader, node_ref
from labbrain.errors import InvalidArgument, ItemNotFound, NodeNotFound
from labbrain.index.analysis import terms
from labbrain.index.text import IndexedNode, normalise_timestamp, uid_of
from labbrain.rdf.namespaces import (
    AGENT_PREFIX,
    CLAIMS_GRAPH,
    DCT,
    LB,
    PROPOSITION_PREFIX,
    PROPOSITION_RELATION_PREFIX,
    RDF,
    SIOC,
)
from labbrain.rdf.terms import integer, new_iri, now, number, text
from labbrain.store import templates

RELATIONS: dict[RelationName, str] = {
    "supports": LB + "supports",
    "refutes": LB + "refutes",
    "extends": LB + "extends",
    "implies": LB + "implies",
    "contradicts": LB + "contradicts",
}
RELATION_NAMES: dict[str, RelationName] = {iri: name for name, iri in RELATIONS.items()}
OPPOSING = frozenset({"refutes", "contradicts"})
SYMMETRIC = frozenset({"contradicts"})
MAX_CONTENT = 2000
MAX_REASONING = 4000
MAX_PAGE = 100
#: Sources one proposition may cite.
MAX_SOURCES = 20

END_FORMS = (
    f"give a proposition id ({PROPOSITION_PREFIX}..., from add_proposition or "
    "list_propositions) or the uid of a lab node (search_nodes finds uids)"
)

_CURSOR_PREFIX = "after:"


@dataclass(frozen=True)
class StoredProposition:
    """A proposition as the claims graph holds it."""

    iri: str
    sequence: int
    content: str
    confidence: float
    created: str
    agent: str
    #: Every source (IRI, and whether it is a lab node the proposition derives from),
    #: sorted by IRI.
    sources: tuple[tuple[str, bool], ...] = ()

    @property
    def node_sources(self) -> list[str]:
        """The lab nodes among its sources (the proposition derives from each)."""
        return [iri for iri, is_node in self.sources if is_node]


@dataclass(frozen=True)
class StoredRelation:
    """A proposition relation as the claims graph holds it."""

    iri: str
    relation: RelationName
    source: str
    target: str
    reasoning: str | None
    created: str

    def other(self, iri: str) -> str:
        """The end that is not ``iri`` (which must be one of the two ends)."""
        return self.target if self.source == iri else self.source


@dataclass(frozen=True)
class End:
    """A resolved relation end: a stored proposition or an indexed lab node."""

    iri: str
    proposition: StoredProposition | None = None
    node: IndexedNode | None = None


def _time(value: str) -> str:
    """A stored or new ``created`` time in labbrain's one spelling (UTC, milliseconds, ``Z``):
    stores give a dateTime back in their own form (Oxigraph ``.47Z``, Virtuoso ``.470Z``)."""
    return normalise_timestamp(value) or value


def _everything(stored: StoredProposition) -> bool:
    """Every proposition is listed (no filter)."""
    return True


def encode_cursor(sequence: int) -> str:
    """An opaque cursor continuing after the proposition with this sequence number."""
    raw = f"{_CURSOR_PREFIX}{sequence}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The sequence number a cursor continues after; InvalidArgument for a foreign string."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode("ascii")
        if raw.startswith(_CURSOR_PREFIX) and raw[len(_CURSOR_PREFIX) :].isdigit():
            return int(raw[len(_CURSOR_PREFIX) :])
    except (binascii.Error, UnicodeError, ValueError):
        pass
    raise InvalidArgument(
        "cursor", "not a cursor from list_propositions; omit it to start from the first page"
    )


def relation_name(value: str) -> RelationName:
    """``value`` as a relation name; InvalidArgument naming the five otherwise."""
    for name in RELATIONS:
        if name == value:
            return name
    raise InvalidArgument("relation", f"{value!r}; use one of {', '.join(RELATIONS)}")


def _text_argument(value: str | None, name: str, limit: int) -> str | None:
    """``value`` stripped, None when empty; InvalidArgument when longer than ``limit``."""
    cleaned = (value or "").strip()
    if len(cleaned) > limit:
        raise InvalidArgument(name, f"is {len(cleaned)} characters long; at most {limit}")
    return cleaned or None


class Propositions:
    """Record, read, list and relate propositions in one claims graph (see module doc)."""

    def __init__(
        self,
        brain: LabBrain,
        reader: DiscourseReader,
        writer: AgentWriter,
        *,
        claims_graph: str = CLAIMS_GRAPH,
    ) -> None:
        self.brain = brain
        self.reader = reader
        self.writer = writer
        self.claims_graph = claims_graph

    # ------------------------------------------------------------------ reading the graph
    def stored(
        self, iri: str | None = None, *, content: str | None = None, after: int | None = None
    ) -> list[StoredProposition]:
        """Stored propositions (one, those with this content, or those after a sequence
        number), in sequence order."""
        rows = templates.run(
            self.brain.store,
            "claims_propositions",
            graph=self.claims_graph,
            proposition=iri,
            content=content,
            after=after,
        )
        sources: dict[str, set[tuple[str, bool]]] = {}
        first: dict[str, dict[str, Any]] = {}
        for row in rows:  # one row per source
            first.setdefault(row["proposition"], row)
            found = sources.setdefault(row["proposition"], set())
            if row["source"] is not None:
                found.add((row["source"], bool(row["sourceIsNode"])))
        return [
            StoredProposition(
                iri=iri,
                sequence=row["sequence"],
                content=row["content"],
                confidence=row["confidence"],
                created=_time(row["created"]),
                agent=row["agent"].removeprefix(AGENT_PREFIX),
                sources=tuple(sorted(sources[iri])),
            )
            for iri, row in first.items()
        ]

    def relations(self, node: str | None = None) -> list[StoredRelation]:
        """Stored relations (all, or those with ``node`` at either end), oldest first."""
        rows = templates.run(
            self.brain.store, "claims_relations", graph=self.claims_graph, node=node
        )
        return [
            StoredRelation(
                iri=row["relation"],
                relation=RELATION_NAMES[row["type"]],
                source=row["source"],
                target=row["target"],
                reasoning=row["reasoning"],
                created=_time(row["created"]),
            )
            for row in rows
            if row["type"] in RELATION_NAMES
        ]

    def totals(self) -> tuple[int, int]:
        """(number of propositions, highest sequence number given so far)."""
        rows = templates.run(self.brain.store, "claims_totals", graph=self.claims_graph)
        if not rows:
            return 0, 0
        return rows[0]["total"], rows[0]["last"]

    def find(self, iri: str) -> StoredProposition | None:
        """The stored proposition with this IRI, if any."""
        found = self.stored(iri) if iri.startswith(PROPOSITION_PREFIX) else []
        return found[0] if found else None

    def require(self, ident: str) -> StoredProposition:
        """The proposition with this id; ItemNotFound saying how to find ids otherwise."""
        found = self.find(ident.strip())
        if found is None:
            raise ItemNotFound(
                "proposition",
                ident,
                f"ids look like {PROPOSITION_PREFIX}<hex>; list_propositions lists them "
                "(get_node reads lab nodes)",
            )
        return found

    def resolve_end(self, value: str, name: str) -> End:
        """A proposition (by id) or a lab node (by uid); ItemNotFound otherwise."""
        given = value.strip()
        if not given:
            raise InvalidArgument(name, END_FORMS)
        if given.startswith(PROPOSITION_PREFIX):
            return End(given, proposition=self.require(given))
        try:
            node, _ = self.reader.resolve(given)
        except NodeNotFound:
            raise ItemNotFound("proposition or lab node", given, END_FORMS) from None
        return End(node.iri, node=node)

    # ------------------------------------------------------------------ answer models
    @staticmethod
    def ref(stored: StoredProposition) -> PropositionRef:
        """The attributed reference of a stored proposition."""
        return PropositionRef(
            id=stored.iri,
            content=stored.content,
            confidence=stored.confidence,
            created=stored.created,
            attributedTo=stored.agent,
        )

    def model(self, stored: StoredProposition) -> Proposition:
        """A stored proposition with its sources (a lab source with its attribution)."""
        sources = [
            describe_source(iri, is_node, self.brain.index) for iri, is_node in stored.sources
        ]
        return Proposition(**self.ref(stored).model_dump(), sources=sources)

    @staticmethod
    def endpoint(end: End) -> Endpoint:
        """The answer form of a resolved end."""
        if end.proposition is not None:
            return Endpoint(
                kind="proposition", id=end.iri, proposition=Propositions.ref(end.proposition)
            )
        node = end.node
        return Endpoint(
            kind="node",
            id=node.uid if node is not None else uid_of(end.iri),
            node=node_ref(node) if node is not None else None,
        )

    def ends(
        self, iris: Iterable[str], known: dict[str, StoredProposition] | None = None
    ) -> dict[str, End]:
        """Resolved ends by IRI: propositions from ``known`` or the store, others as lab nodes
        (with ``node`` None when no loaded dataset holds them)."""
        wanted = list(dict.fromkeys(iris))
        found: dict[str, End] = {}
        for iri in wanted:
            if iri.startswith(PROPOSITION_PREFIX):
                stored = (known or {}).get(iri) or self.find(iri)
                if stored is not None:
                    found[iri] = End(iri, proposition=stored)
        others = [iri for iri in wanted if not iri.startswith(PROPOSITION_PREFIX)]
        nodes = self.brain.index.nodes_by_iri(others)
        for iri in others:
            found[iri] = End(iri, node=nodes.get(iri))
        return found

    def endpoints(
        self, iris: Iterable[str], known: dict[str, StoredProposition] | None = None
    ) -> dict[str, Endpoint]:
        """Answer-form ends by IRI (see :meth:`ends`)."""
        return {iri: self.endpoint(end) for iri, end in self.ends(iris, known).items()}

    def relation_model(
        self, relation: StoredRelation, endpoints: dict[str, Endpoint]
    ) -> PropositionRelation:
        """A stored relation with its two ends in answer form."""
        return PropositionRelation(
            id=relation.iri,
            relation=relation.relation,
            source=endpoints[relation.source],
            target=endpoints[relation.target],
            reasoning=relation.reasoning,
            created=relation.created,
        )

    # ------------------------------------------------------------------ the tools
    def add(
        self,
        content: str,
        confidence: float,
        source: str | None = None,
        *,
        sources: Sequence[str] = (),
        key: str | None = None,
    ) -> AddPropositionResult:
        """Record a proposition (at most once per idempotency ``key``) with its sources:
        ``source`` and every one of ``sources`` (each a DOI, a URL or a lab node uid; the
        same source given twice is kept once; at most :data:`MAX_SOURCES`)."""
        given = [value for value in [source, *sources] if value is not None and value.strip()]
        if len(given) > MAX_SOURCES:
            raise InvalidArgument("sources", f"{len(given)} sources; at most {MAX_SOURCES}")
        cleaned = _text_argument(content, "content", MAX_CONTENT)
        if cleaned is None:
            raise InvalidArgument("content", "must not be empty")
        if not (isinstance(confidence, int | float) and math.isfinite(confidence)):
            raise InvalidArgument("confidence", "must be a number from 0 to 1")
        if not 0 <= confidence <= 1:
            raise InvalidArgument("confidence", f"{confidence} is outside 0..1")

        def plan() -> WritePlan[AddPropositionResult]:
            # resolved here, so that a replayed key answers even if the source node is gone
            found = [normalise_source(value, self.reader) for value in given]
            normalised = list({n.iri: n for n in found if n is not None}.values())
            moment = now()
            _, last = self.totals()
            twins = self.stored(content=cleaned)
            subject = new_iri(PROPOSITION_PREFIX)
            graph = NamedNode(self.claims_graph)
            quads = [
                Quad(subject, NamedNode(RDF + "type"), NamedNode(LB + "Proposition"), graph),
                Quad(subject, NamedNode(SIOC + "content"), text(cleaned), graph),
                Quad(subject, NamedNode(LB + "confidence"), number(confidence), graph),
                Quad(subject, NamedNode(LB + "sequence"), integer(last + 1), graph),
            ]
            derived: list[NamedNode] = []
            for one in normalised:
                quads.append(Quad(subject, NamedNode(DCT + "source"), NamedNode(one.iri), graph))
                if one.node is not None:
                    derived.append(NamedNode(one.iri))
            quads += self.writer.provenance(subject, graph, derived_from=derived, at=moment)
            stored = StoredProposition(
                iri=subject.value,
                sequence=last + 1,
                content=cleaned,
                confidence=float(confidence),
                created=_time(moment.isoformat()),
                agent=self.writer.agent.value.removeprefix(AGENT_PREFIX),
                sources=tuple(sorted((n.iri, n.node is not None) for n in normalised)),
            )
            note = None
            if twins:
                note = f"{twins[0].iri} already states exactly this; both are kept"
            result = AddPropositionResult(
                proposition=self.model(stored),
                availableActions=[
                    "connect_propositions",
                    "find_contradictions",
                    "find_lineage",
                    "get_proposition",
                ],
                note=note,
            )
            return WritePlan(result=result, add=quads)

        arguments = {
            "content": content,
            "confidence": confidence,
            "source": source,
            "sources": list(sources),
        }
        return self.writer.write(
            "add_proposition", plan, key=key, arguments=arguments, model=AddPropositionResult
        )

    def get(self, ident: str) -> PropositionDetail:
        """A proposition with its relations in both directions, oldest first."""
        stored = self.require(ident)
        relations = self.relations(stored.iri)
        endpoints = self.endpoints(
            [stored.iri, *(r.other(stored.iri) for r in relations)], {stored.iri: stored}
        )
        models = [self.relation_model(r, endpoints) for r in relations]
        return PropositionDetail(
            **self.model(stored).model_dump(),
            outgoing=[m for r, m in zip(relations, models, strict=True) if r.source == stored.iri],
            incoming=[m for r, m in zip(relations, models, strict=True) if r.target == stored.iri],
        )

    def page(
        self,
        limit: int = 20,
        cursor: str | None = None,
        *,
        query: str | None = None,
        source: str | None = None,
        min_confidence: float | None = None,
    ) -> PropositionPage:
        """One page of propositions in the order they were recorded; the cursor continues
        after the last one shown, whatever was recorded since. Filters: ``query`` (every word
        in the content, as the search index reads words: "networks" finds "network"),
        ``source`` (a DOI, URL or lab node uid the proposition cites), ``min_confidence``;
        ``total`` counts those that match."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument("limit", f"{limit} is outside 1..{MAX_PAGE}")
        if min_confidence is not None and not 0 <= min_confidence <= 1:
            raise InvalidArgument("minConfidence", f"{min_confidence} is outside 0..1")
        after = decode_cursor(cursor) if cursor else None
        keep = self._filter(query, source, min_confidence)
        rows = [p for p in self.stored(after=after) if keep(p)]
        page = rows[:limit]
        filtered = keep is not _everything
        total = len([p for p in self.stored() if keep(p)]) if filtered else self.totals()[0]
        more = len(rows) > limit
        note = None
        if not total:
            note = (
                "no proposition matches; list_propositions without filters lists them all"
                if filtered
                else "no propositions yet; add_proposition records one"
            )
        elif more:
            note = f"{len(rows) - limit} more; pass nextCursor as cursor for the next page"
        return PropositionPage(
            propositions=[self.model(p) for p in page],
            listed=len(page),
            total=total,
            nextCursor=encode_cursor(page[-1].sequence) if more else None,
            note=note,
        )

    def _filter(
        self, query: str | None, source: str | None, min_confidence: float | None
    ) -> Callable[[StoredProposition], bool]:
        """The test a stored proposition passes to be listed (:meth:`page`'s filters)."""
        words = set(terms(query)) if query and query.strip() else set()
        cited = normalise_source(source, self.reader) if source and source.strip() else None
        if not words and cited is None and min_confidence is None:
            return _everything

        def keep(stored: StoredProposition) -> bool:
            if min_confidence is not None and stored.confidence < min_confidence:
                return False
            if cited is not None and cited.iri not in {iri for iri, _ in stored.sources}:
                return False
            return words <= set(terms(stored.content))

        return keep

    def connect(
        self,
        a: str,
        b: str,
        relation: str,
        reasoning: str | None = None,
        *,
        key: str | None = None,
    ) -> ConnectResult:
        """Record ``a`` -[relation]-> ``b`` (at most once per idempotency ``key``); an
        identical relation that exists already is answered instead of written twice."""
        name = relation_name(relation)
        why = _text_argument(reasoning, "reasoning", MAX_REASONING)
        actions = ["get_proposition", "find_lineage"]
        if name in OPPOSING:
            actions.insert(0, "find_contradictions")

        def plan() -> WritePlan[ConnectResult]:
            source, target = self.resolve_end(a, "a"), self.resolve_end(b, "b")
            if source.iri == target.iri:
                raise InvalidArgument("b", "is the same as a; a relation needs two different ends")
            if source.proposition is None and target.proposition is None:
                raise InvalidArgument(
                    "b",
                    "a and b are both lab nodes; at least one end must be a proposition "
                    "(add_proposition records one)",
                )
            endpoints = {source.iri: self.endpoint(source), target.iri: self.endpoint(target)}
            for existing in self.relations(source.iri):
                same = (existing.source, existing.target) == (source.iri, target.iri)
                mirrored = name in SYMMETRIC and existing.source == target.iri
                if existing.relation == name and (same or mirrored):
                    answer = ConnectResult(
                        relation=self.relation_model(existing, endpoints),
                        created=False,
                        availableActions=actions,
                        note="this relation was already recorded; nothing was written",
                    )
                    return WritePlan(result=answer)
            moment = now()
            subject = new_iri(PROPOSITION_RELATION_PREFIX)
            graph = NamedNode(self.claims_graph)
            first, second = NamedNode(source.iri), NamedNode(target.iri)
            predicate = NamedNode(RELATIONS[name])
            quads = [
                Quad(
                    subject, NamedNode(RDF + "type"), NamedNode(LB + "PropositionRelation"), graph
                ),
                Quad(subject, NamedNode(RDF + "subject"), first, graph),
                Quad(subject, NamedNode(RDF + "predicate"), predicate, graph),
                Quad(subject, NamedNode(RDF + "object"), second, graph),
                Quad(first, predicate, second, graph),
            ]
            if why is not None:
                quads.append(Quad(subject, NamedNode(LB + "reasoning"), text(why), graph))
            lab_ends = [NamedNode(e.iri) for e in (source, target) if e.node is not None]
            quads += self.writer.provenance(subject, graph, derived_from=lab_ends, at=moment)
            stored = StoredRelation(
                subject.value, name, source.iri, target.iri, why, _time(moment.isoformat())
            )
            answer = ConnectResult(
                relation=self.relation_model(stored, endpoints),
                created=True,
                availableActions=actions,
            )
            return WritePlan(result=answer, add=quads)

        arguments = {"a": a, "b": b, "relation": relation, "reasoning": reasoning}
        return self.writer.write(
            "connect_propositions", plan, key=key, arguments=arguments, model=ConnectResult
        )
