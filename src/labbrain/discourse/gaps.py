"""Gaps in the lab's reasoning (``find_gaps``): questions nothing addresses, claims without
evidence, hypotheses without results, evidence without a source; computed from four scans
and kept until a load.

A claim without evidence stays listed when only loaded nanopublications take stances on it
(support from outside is not the lab's evidence), and carries their counts (``outside``), as
:func:`~labbrain.discourse.claims.get_claim_status` counts them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from labbrain.discourse.models import GapNode, GapsResult, NodeRef, OutsideCounts
from labbrain.discourse.refs import slug
from labbrain.discourse.schema import relation_types
from labbrain.discourse.scope import ReadScope
from labbrain.errors import InvalidArgument
from labbrain.store import templates


def find_gaps(
    scope: ReadScope, node_type: str | None = None, dataset: str | None = None, limit: int = 50
) -> GapsResult:
    """Questions nothing addresses, claims without evidence, hypotheses without results,
    evidence without a source."""
    types = scope.node_types_matching(node_type)
    if types is not None and not any(kind in types for kind in _GAP_KINDS.values()):
        raise InvalidArgument(
            "nodeType", "find_gaps covers Question, Claim, Hypothesis and Evidence"
        )
    scoped = scope.datasets(dataset)
    gaps, outside = _gaps(scope)
    grouped: dict[str, list[NodeRef]] = {gap: [] for gap in _GAP_KINDS}
    counts: Counter[str] = Counter()
    for gap, kind in _GAP_KINDS.items():
        if types is not None and kind not in types:
            continue
        chosen = sorted(
            (graph, iri) for graph, iri in gaps[gap] if scoped is None or graph in scoped
        )
        counts[gap] = len(chosen)
        for graph in dict.fromkeys(g for g, _ in chosen[:limit]):
            refs = scope.refs((iri for g, iri in chosen[:limit] if g == graph), graph)
            grouped[gap].extend(refs[iri] for g, iri in chosen[:limit] if iri in refs)
    truncated = any(counts[g] > len(grouped[g]) for g in grouped)
    return GapsResult(
        unaddressedQuestions=grouped["unaddressedQuestions"],
        claimsWithoutEvidence=[
            _with_outside(ref, outside) for ref in grouped["claimsWithoutEvidence"]
        ],
        hypothesesWithoutResults=grouped["hypothesesWithoutResults"],
        evidenceWithoutSource=grouped["evidenceWithoutSource"],
        counts={gap: counts[gap] for gap in _GAP_KINDS},
        truncated=truncated,
        note=f"each list shows at most {limit}; narrow with nodeType or dataset"
        if truncated
        else None,
    )


#: (graph, node) of every gap, by gap; and the outside stances on claims by (graph, node).
_Scan = tuple[dict[str, set[tuple[str, str]]], dict[tuple[str, str], OutsideCounts]]


def _gaps(scope: ReadScope) -> _Scan:
    """(graph, node) of every gap, and the outside stance counts of the claims, computed
    from four scans and cached per store state (shared: callers copy what they hand out)."""
    return scope.memo("gaps", lambda: _scan(scope))


def _with_outside(ref: NodeRef, outside: dict[tuple[str, str], OutsideCounts]) -> GapNode:
    """``ref`` as a gap list entry, with the outside stance counts of its node, if any."""
    counts = outside.get((ref.dataset, ref.url))
    return GapNode(**ref.model_dump(), outside=counts.model_copy() if counts else None)


def _outside(
    rows: list[dict[str, Any]],
    claims: set[tuple[str, str]],
    typed: set[tuple[str, str, str]],
) -> dict[tuple[str, str], OutsideCounts]:
    """The outside stance counts of each claim (dataset slug, IRI) that has any: the stances
    (rows of the ``outside_stances`` template) on its IRI held in other datasets, or in its
    own when no typed relation of it goes from the stance's subject to the claim."""
    holders: dict[str, list[str]] = defaultdict(list)
    for graph, iri in claims:
        holders[iri].append(graph)
    counts: dict[tuple[str, str], OutsideCounts] = {}
    for row in rows:
        for graph in holders.get(row["node"], ()):
            if row["graph"] == graph and (graph, row["subject"], row["node"]) in typed:
                continue
            entry = counts.setdefault((slug(graph), row["node"]), OutsideCounts())
            if row["stance"] == "supports":
                entry.supports += 1
            elif row["stance"] == "disputes":
                entry.disputes += 1
            entry.unverified += not row["verified"]
    return counts


def _scan(scope: ReadScope) -> _Scan:
    """(graph, node) of every gap, and the outside stances on claims, from four scans of the
    store."""
    store = scope.brain.store
    kinds: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for row in templates.run(store, "core_kinds"):
        kinds[row["kind"].rsplit("#", 1)[-1]].add((row["graph"], row["node"]))
    stance = {
        (t.dataset, t.relation)
        for t in relation_types(scope)
        if t.coreRelation in ("dg:supports", "dg:opposes")
    }
    addressed: set[tuple[str, str]] = set()
    argued: set[tuple[str, str]] = set()
    tested: set[tuple[str, str]] = set()
    linked: set[tuple[str, str, str]] = set()
    typed: set[tuple[str, str, str]] = set()
    for row in templates.run(store, "typed_edges"):
        graph, source, target = row["graph"], row["source"], row["destination"]
        typed.add((graph, source, target))
        addressed.add((graph, target))
        if (slug(graph), row["relation"]) in stance:
            argued.add((graph, target))
        if (graph, source) in kinds["Result"]:
            tested.add((graph, target))
        linked.update({(graph, source, target), (graph, target, source)})
    for row in templates.run(store, "text_edges"):
        graph, source, target = row["graph"], row["source"], row["destination"]
        linked.update({(graph, source, target), (graph, target, source)})
    sourced = {(graph, node) for graph, node, other in linked if (graph, other) in kinds["Source"]}
    outside = _outside(templates.run(store, "outside_stances"), kinds["Claim"], typed)
    return {
        "unaddressedQuestions": kinds["Question"] - addressed,
        "claimsWithoutEvidence": kinds["Claim"] - argued,
        "hypothesesWithoutResults": kinds["Hypothesis"] - tested,
        "evidenceWithoutSource": kinds["Evidence"] - sourced,
    }, outside


_GAP_KINDS = {
    "unaddressedQuestions": "question",
    "claimsWithoutEvidence": "claim",
    "hypothesesWithoutResults": "hypothesis",
    "evidenceWithoutSource": "evidence",
}
