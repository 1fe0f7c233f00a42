"""Lineage and contradictions: reading propositions together with the lab's discourse graph.

:meth:`PropositionPaths.find_lineage` walks, breadth-first and in both directions, the
relations recorded between propositions (and lab nodes), each proposition's lab source
(``prov:wasDerivedFrom``), and the typed relations of the dataset graphs (the
``node_edges`` template, read from the index as :meth:`DiscourseReader.find_path` reads it).
:meth:`PropositionPaths.find_contradictions` gathers what conflicts with a claim: explicit
contradicts / refutes relations, the lab's Opposes relations, and opposing relations on
similar propositions (sharing key terms, or, once ``labbrain embed`` computed the lab's
vectors, close in meaning); for a free-text claim also the lab's Opposes relations on the lab
nodes closest to it in meaning.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from labbrain.agent.claims.models import (
    ChosenEnd,
    Contradiction,
    ContradictionsResult,
    Endpoint,
    LineageHop,
    LineageResult,
)
from labbrain.agent.claims.propositions import (
    OPPOSING,
    End,
    Propositions,
    StoredProposition,
    StoredRelation,
)
from labbrain.errors import InvalidArgument, SemanticUnavailable
from labbrain.index.analysis import terms, tokens, words
from labbrain.index.bm25 import key_terms, rank
from labbrain.index.embeddings import EmbeddingProvider, provider_for, semantic_installed
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import IndexedNode
from labbrain.index.vectors import one_line
from labbrain.rdf.namespaces import PROPOSITION_PREFIX
from labbrain.store import templates

MAX_CANDIDATES = 3
MAX_SIMILAR = 5
MIN_MEANING = 0.5
MAX_EMBEDDED = 512  # propositions compared by meaning: the most recent ones
MAX_HOPS = 8
ALIGNED = frozenset({"supports", "extends", "implies"})
SOURCE_RELATION = "wasDerivedFrom"

Origin = Literal["proposition", "lab", "source"]


@dataclass(frozen=True)
class _Step:
    """An edge seen from one end: where it leads and what it is."""

    other: str
    forward: bool
    origin: Origin
    relation: str
    relation_id: str | None = None
    reasoning: str | None = None


@dataclass(frozen=True)
class _Candidate:
    """A node a concept may stand for, with why it was considered."""

    end: End
    reason: str


@dataclass(frozen=True)
class _Found:
    """A contradiction before its ends are put in answer form."""

    item: str
    kind: Literal["explicit", "lab", "similar"]
    relation: str
    why: str
    via: str | None = None
    stored: StoredRelation | None = None


def _ordinal(position: int) -> str:
    return {1: "best", 2: "second", 3: "third"}.get(position, f"#{position}")


def _normalised(value: str) -> str:
    return " ".join(words(value))


def _text_of(subject: End | None) -> str | None:
    """The words a subject is about: a proposition's content or a lab node's title."""
    if subject is None:
        return None
    if subject.proposition is not None:
        return subject.proposition.content
    return subject.node.title if subject.node is not None else None


def _recorded_opposition(
    relations: list[StoredRelation],
    iri: str,
    kind: Literal["explicit", "similar"],
    prefix: str,
    this: str,
    *,
    suffix: str = "",
) -> list[_Found]:
    """The other ends of the contradicts / refutes relations recorded at ``iri``, each with
    why (``this`` names ``iri``); found through ``iri`` unless kind is explicit."""
    found = []
    for relation in relations:
        if relation.relation not in OPPOSING or iri not in (relation.source, relation.target):
            continue
        name = relation.relation
        why = f"{this} {name} it" if relation.source == iri else f"it {name} {this}"
        via = None if kind == "explicit" else iri
        found.append(
            _Found(relation.other(iri), kind, name, prefix + why + suffix, via=via, stored=relation)
        )
    return found


class PropositionPaths:
    """Lineage and contradiction search over propositions and the lab's graphs."""

    def __init__(self, propositions: Propositions) -> None:
        self.propositions = propositions
        self.brain = propositions.brain

    # ------------------------------------------------------------------ concepts
    def _node(self, iri: str) -> IndexedNode | None:
        return self.brain.index.nodes_by_iri([iri]).get(iri)

    def candidates(
        self, name: str, concept: str, stored: list[StoredProposition]
    ) -> list[_Candidate]:
        """The nodes ``concept`` may stand for, best first: the proposition or node it names
        (an id or uid), else the best matching propositions (BM25 over their content), then
        the best matching lab nodes (the text index), those matching more words first."""
        given = concept.strip()
        if not given:
            raise InvalidArgument(name, "give words, a proposition id or a node uid")
        if given.startswith(PROPOSITION_PREFIX):
            return [_Candidate(self.propositions.resolve_end(given, name), "given by its id")]
        by_uid = self.brain.index.nodes_by_uid(given)
        if by_uid:
            return [_Candidate(End(by_uid[0].iri, node=by_uid[0]), "given by its uid")]
        wanted = tokens(given)
        ranked: list[tuple[int, int, int, _Candidate]] = []
        for position, hit in enumerate(
            rank(given, stored, lambda p: p.content, limit=MAX_CANDIDATES), 1
        ):
            reason = (
                f"{_ordinal(position)} proposition match for {given!r} "
                f"(words: {', '.join(sorted(hit.matched))})"
            )
            candidate = _Candidate(End(hit.item.iri, proposition=hit.item), reason)
            ranked.append((len(hit.matched), 0, position, candidate))
        for position, found in enumerate(self.brain.index.search(given, limit=MAX_CANDIDATES), 1):
            node = found.node
            held = set(terms(node.title + " " + self.brain.index.content(node.graph, node.iri)))
            matched = {token.word for token in wanted if token.term in held}
            reason = (
                f"{_ordinal(position)} lab node match for {given!r} "
                f"(words: {', '.join(sorted(matched))})"
            )
            ranked.append((len(matched), 1, position, _Candidate(End(node.iri, node=node), reason)))
        if not ranked:
            raise InvalidArgument(
                name,
                f"nothing matches {given!r}: no proposition or lab node holds these words; try "
                "other words, a proposition id or a node uid",
            )
        ranked.sort(key=lambda entry: (-entry[0], entry[1], entry[2]))
        return [entry[3] for entry in ranked]

    # ------------------------------------------------------------------ lineage
    def _adjacency(
        self, stored: list[StoredProposition], relations: list[StoredRelation]
    ) -> dict[str, list[_Step]]:
        """Steps along recorded relations and lab sources, from both ends."""
        steps: dict[str, list[_Step]] = {}
        for relation in relations:
            name, ident, why = relation.relation, relation.iri, relation.reasoning
            steps.setdefault(relation.source, []).append(
                _Step(relation.target, True, "proposition", name, ident, why)
            )
            steps.setdefault(relation.target, []).append(
                _Step(relation.source, False, "proposition", name, ident, why)
            )
        for proposition in stored:
            for node in proposition.node_sources:
                steps.setdefault(proposition.iri, []).append(
                    _Step(node, True, "source", SOURCE_RELATION)
                )
                steps.setdefault(node, []).append(
                    _Step(proposition.iri, False, "source", SOURCE_RELATION)
                )
        return steps

    def _lab_steps(self, node: IndexedNode) -> list[_Step]:
        """The typed relations of a lab node in its dataset graph, both directions (the
        ``node_edges`` template's rows, from the index's read model of it)."""
        rows = self.brain.index.links_of(node.graph, [node.iri])[node.iri]
        return [
            _Step(row.other, row.direction == "outgoing", "lab", row.label or "")
            for row in rows
            if row.kind == "typed"
        ]

    def find_lineage(self, from_concept: str, to_concept: str, max_hops: int = 6) -> LineageResult:
        """The shortest typed path from what ``from_concept`` names to what ``to_concept``
        names, over proposition relations, lab sources and lab relations, either direction.

        Every candidate of each concept takes part: the path found is the shortest between
        any of them, and ties go to the better-ranked candidates.
        """
        if not 1 <= max_hops <= MAX_HOPS:
            raise InvalidArgument("maxHops", f"{max_hops} is outside 1..{MAX_HOPS}")
        stored = self.propositions.stored()
        known = {p.iri: p for p in stored}
        starts = self.candidates("fromConcept", from_concept, stored)
        goals = self.candidates("toConcept", to_concept, stored)
        start_iris = list(dict.fromkeys(c.end.iri for c in starts))
        goal_rank = {c.end.iri: i for i, c in enumerate(goals) if c.end.iri not in start_iris}
        if not goal_rank:
            raise InvalidArgument(
                "toConcept",
                "it names the same node as fromConcept; word it more precisely, or give a "
                "proposition id or a node uid",
            )
        adjacency = self._adjacency(stored, self.propositions.relations())
        nodes = {c.end.iri: c.end.node for c in (*starts, *goals) if c.end.node is not None}
        parents: dict[str, tuple[str, _Step] | None] = dict.fromkeys(start_iris)
        frontier = start_iris
        reached: str | None = None
        for _hop in range(max_hops):
            expansions = [
                (
                    current,
                    adjacency.get(current, [])
                    + (self._lab_steps(nodes[current]) if current in nodes else []),
                )
                for current in frontier
            ]
            unseen = {
                s.other
                for _, steps in expansions
                for s in steps
                if s.other not in known and s.other not in nodes
            }
            nodes.update(self.brain.index.nodes_by_iri(unseen))
            next_frontier: list[str] = []
            for current, steps in expansions:
                for step in steps:
                    if step.other in parents or (
                        step.other not in known and step.other not in nodes
                    ):
                        continue
                    parents[step.other] = (current, step)
                    next_frontier.append(step.other)
            hits = [iri for iri in next_frontier if iri in goal_rank]
            if hits:
                reached = min(hits, key=goal_rank.__getitem__)
                break
            frontier = next_frontier
            if not frontier:
                break
        if reached is None:
            return LineageResult(
                found=False,
                length=None,
                start=self._chosen(from_concept, starts, starts[0], False),
                end=self._chosen(to_concept, goals, goals[0], False),
                hops=[],
                note=f"no path of at most {max_hops} hops; raise maxHops, or connect_propositions "
                "to link what you know",
            )
        chain: list[tuple[str, str, _Step]] = []
        here = reached
        while (link := parents[here]) is not None:
            chain.insert(0, (link[0], here, link[1]))
            here = link[0]
        ends = self.propositions.endpoints([here, *(c for _, c, _ in chain)], known)
        hops = [
            LineageHop(
                source=ends[parent if step.forward else child],
                relation=step.relation,
                destination=ends[child if step.forward else parent],
                traversed="forward" if step.forward else "backward",
                origin=step.origin,
                relationId=step.relation_id,
                reasoning=step.reasoning,
            )
            for parent, child, step in chain
        ]
        first = next(c for c in starts if c.end.iri == here)
        last = next(c for c in goals if c.end.iri == reached)
        return LineageResult(
            found=True,
            length=len(hops),
            start=self._chosen(from_concept, starts, first, True),
            end=self._chosen(to_concept, goals, last, True),
            hops=hops,
        )

    @staticmethod
    def _chosen(
        concept: str, candidates: list[_Candidate], chosen: _Candidate, found: bool
    ) -> ChosenEnd:
        """Which candidate a concept was taken as, and why: its own rank, and whether it was
        preferred to better-ranked candidates for being on the shortest path."""
        reason = chosen.reason
        if not found and len(candidates) > 1:
            reason += "; taken as the best-ranked, since no candidate is on a path"
        elif chosen is not candidates[0]:
            reason += "; preferred to better-ranked candidates as it is on the shortest path"
        return ChosenEnd(
            concept=concept,
            chosen=Propositions.endpoint(chosen.end),
            reason=reason,
            candidates=[Propositions.endpoint(c.end) for c in candidates],
        )

    # ------------------------------------------------------------------ contradictions
    def _subject(self, claim: str, stored: list[StoredProposition]) -> tuple[End | None, str]:
        """What the claim names: a proposition id, a node uid, a proposition's exact
        wording, or nothing (free text)."""
        if claim.startswith(PROPOSITION_PREFIX):
            return self.propositions.resolve_end(claim, "claim"), "given by its proposition id"
        by_uid = self.brain.index.nodes_by_uid(claim)
        if by_uid:
            return End(by_uid[0].iri, node=by_uid[0]), "given by its lab node uid"
        wording = _normalised(claim)
        for proposition in stored:
            if _normalised(proposition.content) == wording:
                return End(proposition.iri, proposition=proposition), (
                    "the proposition worded exactly so"
                )
        return None, "no proposition or lab node is named or worded so: read as free text"

    def _anchors(
        self, subject: End, relations: list[StoredRelation]
    ) -> list[tuple[IndexedNode, str | None]]:
        """The lab nodes whose opposition bears on the subject: the subject itself if it is
        a lab node; else the lab nodes the proposition rests on (its source, and lab nodes
        it supports, extends or implies, or that do so to it), with how it rests on them."""
        if subject.node is not None:
            return [(subject.node, None)]
        anchors: dict[str, str] = {}
        proposition = subject.proposition
        for node in proposition.node_sources if proposition is not None else []:
            anchors[node] = "this proposition derives from that node"
        for relation in relations:
            if subject.iri not in (relation.source, relation.target):
                continue
            other = relation.other(subject.iri)
            if relation.relation not in ALIGNED or other.startswith(PROPOSITION_PREFIX):
                continue
            anchors.setdefault(
                other,
                f"this proposition {relation.relation} that node"
                if relation.source == subject.iri
                else f"that node {relation.relation} this proposition",
            )
        nodes = self.brain.index.nodes_by_iri(anchors)
        return [(nodes[iri], how) for iri, how in anchors.items() if iri in nodes]

    def find_contradictions(self, claim: str) -> ContradictionsResult:
        """What conflicts with a claim (a proposition id, a lab node uid or a text).

        In order, without repeats: explicit contradicts / refutes relations on the subject;
        Opposes relations of the lab on the subject (a lab node) or on the lab nodes a
        proposition rests on; then opposing relations on propositions similar to the claim
        (BM25 over the claim's key terms, at least two shared).
        """
        given = claim.strip()
        if not given:
            raise InvalidArgument("claim", "give a proposition id, a node uid or the claim's text")
        stored = self.propositions.stored()
        known = {p.iri: p for p in stored}
        subject, subject_reason = self._subject(given, stored)
        relations = self.propositions.relations()
        found: list[_Found] = []
        if subject is not None:
            this = "this proposition" if subject.proposition is not None else "this node"
            found += _recorded_opposition(relations, subject.iri, "explicit", "recorded: ", this)
            for anchor, how in self._anchors(subject, relations):
                found += self._lab_opposition(anchor, how)
        meaning = self._meaning()
        if subject is None and meaning is not None:
            found += self._closest_lab_opposition(given)
        others = [p for p in stored if subject is None or p.iri != subject.iri]
        similar = self._similar(_text_of(subject) or given, others, meaning)
        for proposition, how in similar:
            found += _recorded_opposition(
                relations, proposition.iri, "similar", "", "the similar proposition", suffix=how
            )
        return self._answer(subject, subject_reason, similar, found, known)

    def _meaning(self) -> EmbeddingProvider | None:
        """The embedding provider, when the lab's vectors were computed with it (and it
        loads); None otherwise: similarity then rests on shared words alone."""
        if not semantic_installed():
            return None
        try:
            provider = provider_for(self.brain.settings)
        except SemanticUnavailable:
            return None
        return provider if self.brain.vectors.usable(provider.model_id) else None

    def _closest_lab_opposition(self, text: str) -> list[_Found]:
        """Lab oppositions on the lab nodes closest in meaning to a free-text claim."""
        found: list[_Found] = []
        try:
            hits = self.brain.search(SearchQuery(text, mode="semantic", limit=MAX_CANDIDATES)).hits
        except SemanticUnavailable:
            return found
        for hit in hits:
            if hit.score < MIN_MEANING:
                continue
            how = f"that node is close in meaning to this claim (similarity {hit.score:.2f})"
            for item in self._lab_opposition(hit.node, how):
                found.append(_Found(item.item, "similar", item.relation, item.why, via=item.via))
        return found

    def _lab_opposition(self, anchor: IndexedNode, how: str | None) -> list[_Found]:
        rows = templates.run(
            self.brain.store, "claims_lab_opposition", node=anchor.iri, graph=anchor.graph
        )
        found = []
        for row in rows:
            label = row["label"]
            if how is None:
                why = (
                    f"lab relation: it {label} this node"
                    if row["direction"] == "incoming"
                    else f"lab relation: this node {label} it"
                )
                via = None
            else:
                why = (
                    f"lab relation: it {label} {anchor.title!r}, and {how}"
                    if row["direction"] == "incoming"
                    else f"lab relation: {anchor.title!r} {label} it, and {how}"
                )
                via = anchor.iri
            found.append(_Found(row["other"], "lab", label, why, via=via))
        return found

    def _similar(
        self,
        text: str,
        stored: list[StoredProposition],
        meaning: EmbeddingProvider | None = None,
    ) -> list[tuple[StoredProposition, str]]:
        """Propositions sharing at least two key terms with ``text`` (all, if it has fewer),
        best first, then (with a provider) those close in meaning (cosine similarity at least
        MIN_MEANING), each with how it is similar."""
        key = key_terms(text)
        if not key:  # only short or common words: each of them, once per term
            firsts: dict[str, str] = {}
            for token in tokens(text):
                firsts.setdefault(token.term, token.word)
            key = list(firsts.values())
        found: list[tuple[StoredProposition, str]] = []
        if key:
            need = min(2, len(key))
            hits = rank(" ".join(key), stored, lambda p: p.content, limit=MAX_SIMILAR)
            found = [
                (hit.item, f" (shared words: {', '.join(sorted(hit.matched))})")
                for hit in hits
                if len(hit.matched) >= need
            ]
        if meaning is not None and stored:
            seen = {p.iri for p, _ in found}
            recent = stored[-MAX_EMBEDDED:]
            vectors = meaning.embed([one_line(t) for t in (text, *(p.content for p in recent))])
            scores = vectors[1:] @ vectors[0]
            close = sorted(
                ((float(s), p) for s, p in zip(scores, recent, strict=True)),
                key=lambda pair: -pair[0],
            )
            for similarity, proposition in close[:MAX_SIMILAR]:
                if similarity >= MIN_MEANING and proposition.iri not in seen:
                    how = f" (close in meaning: similarity {similarity:.2f})"
                    found.append((proposition, how))
        return found

    def _answer(
        self,
        subject: End | None,
        subject_reason: str,
        similar: list[tuple[StoredProposition, str]],
        found: list[_Found],
        known: dict[str, StoredProposition],
    ) -> ContradictionsResult:
        seen = {subject.iri} if subject is not None else set()
        kept: list[_Found] = []
        for item in found:
            if item.item not in seen:
                seen.add(item.item)
                kept.append(item)
        iris: Iterable[str] = [
            *(f.item for f in kept),
            *(f.via for f in kept if f.via is not None),
        ]
        ends = self.propositions.endpoints(iris, known)
        contradictions = [
            Contradiction(
                item=ends[f.item],
                kind=f.kind,
                relation=f.relation,
                relationId=f.stored.iri if f.stored is not None else None,
                reasoning=f.stored.reasoning if f.stored is not None else None,
                via=ends[f.via] if f.via is not None else None,
                why=f.why,
            )
            for f in kept
        ]
        note = None
        if not contradictions:
            note = (
                "nothing recorded or in the lab's graph conflicts with this claim; "
                "get_claim_status weighs a lab claim's evidence"
            )
        subject_end: Endpoint | None = (
            Propositions.endpoint(subject) if subject is not None else None
        )
        return ContradictionsResult(
            subject=subject_end,
            subjectReason=subject_reason,
            similar=[Propositions.ref(p) for p, _ in similar],
            contradictions=contradictions,
            listed=len(contradictions),
            note=note,
        )
