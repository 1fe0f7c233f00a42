"""Lab nodes related to one node, found three ways, each result saying why.

- **structural**: nodes linked to the same node as this one (a typed relation or a text link,
  either direction) in its dataset graph; the shared node says how: the same source, the same
  question, the same claim (or hypothesis, conclusion), or another shared relation;
- **temporal**: nodes visited in the same session as a visit of this node, from the visits of
  the project (the one named, else the active one);
- **semantic**: text similarity, BM25 "more like this": the key terms of the node's title and
  content (:func:`~labbrain.index.bm25.key_terms`) searched in the text index; and, when the
  node has a vector (``labbrain embed``), closeness in meaning: the nearest vectors of its
  dataset (no model is loaded for it: the node's own stored vector is the query).

Each way is one method with the same signature (node, project log) -> candidates, listed in
:attr:`RelatedPages.ways`; another similarity source is one more method there. Candidates are
merged per node with all their reasons, ranked (more kinds of reasons, then more reasons, then
closer text first) and capped with a note.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from labbrain.agent.projects.models import (
    RelatedBasis,
    RelatedPage,
    RelatedPages,
    RelatedReason,
)
from labbrain.agent.projects.projects import ProjectLog, Projects
from labbrain.discourse.reader import node_ref
from labbrain.errors import InvalidArgument
from labbrain.index.analysis import terms
from labbrain.index.bm25 import key_terms
from labbrain.index.embeddings import semantic_installed
from labbrain.index.text import IndexedNode
from labbrain.index.vectors import nodes_of
from labbrain.rdf.namespaces import DG, LB
from labbrain.store import templates
from labbrain.store.ontology import vocabulary

MAX_RELATED = 100
SIMILAR_HITS = 10
MIN_SIMILARITY = 0.4
KEY_TERMS = 12

Candidate = tuple[IndexedNode, RelatedReason]
Way = Callable[[IndexedNode, ProjectLog | None], list[Candidate]]

_BASIS_BY_KIND: dict[str, RelatedBasis] = {
    LB + "Source": "sameSource",
    DG + "Question": "sameQuestion",
    DG + "Claim": "sameClaim",
    LB + "Hypothesis": "sameClaim",
    LB + "Conclusion": "sameClaim",
}
_PHRASES: dict[RelatedBasis, str] = {
    "sameSource": "both are linked to the same source",
    "sameQuestion": "both are linked to the same question",
    "sameClaim": "both are linked to the same",
    "sharedRelation": "both are linked to",
}


class RelatedPagesFinder:
    """Finds the lab nodes related to a node (see module doc)."""

    def __init__(self, projects: Projects) -> None:
        self.projects = projects
        self.index = projects.brain.index
        self.ways: tuple[Way, ...] = (
            self.structural,
            self.temporal,
            self.similar_text,
            self.similar_meaning,
        )

    def find(
        self, uid: str, project: str | None = None, dataset: str | None = None, limit: int = 20
    ) -> RelatedPages:
        """Related nodes of ``uid``, deduplicated with all their reasons, best first."""
        if not 1 <= limit <= MAX_RELATED:
            raise InvalidArgument("limit", f"{limit} is outside 1..{MAX_RELATED}")
        node, _ = self.projects.reader.resolve(uid, dataset)
        slug = self.projects.resolve_optional(project)
        data = self.projects.read(slug) if slug else None
        merged: dict[str, tuple[IndexedNode, list[RelatedReason]]] = {}
        for way in self.ways:
            for other, reason in way(node, data):
                if other.iri != node.iri:
                    merged.setdefault(other.iri, (other, []))[1].append(reason)
        ranked = sorted(merged.values(), key=_ranking)
        notes = []
        if len(ranked) > limit:
            notes.append(f"showing {limit} of {len(ranked)}; raise limit (up to {MAX_RELATED})")
        if slug is None:
            notes.append("no project is active, so no temporal reasons: set_active_project")
        listed = ranked[:limit]
        vias = {r.via: r.via_node for _, reasons in listed for r in reasons if r.via_node}
        return RelatedPages(
            node=node_ref(node),
            project=slug,
            related=[
                RelatedPage(**node_ref(other).model_dump(), reasons=reasons)
                for other, reasons in listed
            ],
            viaNodes=list(vias.values()),
            listed=min(limit, len(ranked)),
            total=len(ranked),
            note="; ".join(notes) or None,
        )

    # ------------------------------------------------------------------ the ways
    def structural(self, node: IndexedNode, data: ProjectLog | None) -> list[Candidate]:
        """Nodes linked to a node this one is linked to, one reason per shared node."""
        del data  # structure comes from the dataset graph alone
        rows = templates.run(
            self.projects.store, "projects_shared_neighbours", node=node.iri, graph=node.graph
        )
        nodes = self.index.nodes_by_iri(
            [row["via"] for row in rows] + [row["other"] for row in rows], node.graph
        )
        labels: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
        for row in rows:
            if row["via"] in nodes and row["other"] in nodes:
                near, far = labels.setdefault((row["other"], row["via"]), (set(), set()))
                near.add(row["nearLabel"] or "text link")
                far.add(row["farLabel"] or "text link")
        found = []
        for (other, via), (near, far) in labels.items():
            shared = nodes[via]
            kind = vocabulary().node_kind_by_label(shared.node_type)
            basis = _BASIS_BY_KIND.get(kind.iri if kind else "", "sharedRelation")
            named = repr(shared.title)
            if basis in ("sameClaim", "sharedRelation"):
                named = f"{shared.node_type} {named}"
            links = f"this node: {', '.join(sorted(near))}; that node: {', '.join(sorted(far))}"
            why = f"{_PHRASES[basis]} {named} ({links})"
            reason = RelatedReason(kind="structural", basis=basis, why=why, via=shared.uid)
            reason.via_node = node_ref(shared)
            found.append((nodes[other], reason))
        return found

    def temporal(self, node: IndexedNode, data: ProjectLog | None) -> list[Candidate]:
        """Nodes visited in a session that also visited this node, one reason per session."""
        if data is None:
            return []
        sessions = {v.session for v in data.visits if v.node == node.iri}
        together: Counter[tuple[str, str]] = Counter(
            (v.node, v.session)
            for v in data.visits
            if v.session in sessions and v.node and v.node != node.iri
        )
        nodes = self.index.nodes_by_iri(iri for iri, _ in together)
        found = []
        for (iri, session), visits in together.items():
            if iri in nodes:
                times = "once" if visits == 1 else f"{visits} times"
                why = f"visited {times} in session {session}, which also visited this node"
                reason = RelatedReason(
                    kind="temporal", basis="sameSession", why=why, session=session
                )
                found.append((nodes[iri], reason))
        return found

    def similar_text(self, node: IndexedNode, data: ProjectLog | None) -> list[Candidate]:
        """Nodes of the same dataset whose text is like this node's (BM25 more-like-this)."""
        del data  # similarity comes from the text index alone
        key = key_terms(f"{node.title} {self.index.content(node.graph, node.iri)}", KEY_TERMS)
        if not key:
            return []
        hits = self.index.search(" ".join(key), limit=SIMILAR_HITS + 1, graphs=[node.graph])
        found = []
        for hit in hits:
            if hit.node.iri == node.iri:
                continue
            other = f"{hit.node.title} {self.index.content(hit.node.graph, hit.node.iri)}"
            held = set(terms(other))
            shared = [word for word in key if set(terms(word)) <= held]
            why = f"similar text: shares the key terms {', '.join(shared)}"
            reason = RelatedReason(
                kind="semantic",
                basis="similarText",
                why=why,
                score=round(hit.score, 4),
                sharedTerms=shared,
            )
            found.append((hit.node, reason))
        return found[:SIMILAR_HITS]

    def similar_meaning(self, node: IndexedNode, data: ProjectLog | None) -> list[Candidate]:
        """Nodes of the same dataset closest in meaning (cosine similarity of the stored
        vectors, at least MIN_SIMILARITY); none when the node has no vector."""
        del data  # similarity comes from the vector index alone
        if not semantic_installed():
            return []
        vectors = self.projects.brain.vectors
        own = vectors.vector_of(node.graph, node.iri)
        if own is None:
            return []
        hits = vectors.search(own, limit=SIMILAR_HITS + 1, graphs=[node.graph])
        found = []
        for other, score in nodes_of(self.index, hits):
            if other.iri == node.iri or score < MIN_SIMILARITY:
                continue
            why = f"close in meaning (cosine similarity {score:.2f} of their embeddings)"
            reason = RelatedReason(
                kind="semantic", basis="similarMeaning", why=why, score=round(score, 4)
            )
            found.append((other, reason))
        return found[:SIMILAR_HITS]


def _ranking(entry: tuple[IndexedNode, list[RelatedReason]]) -> tuple[int, int, float, str]:
    node, reasons = entry
    kinds = {reason.kind for reason in reasons}
    similarity = max((r.score or 0.0 for r in reasons if r.kind == "semantic"), default=0.0)
    return (-len(kinds), -len(reasons), -similarity, node.uid)
