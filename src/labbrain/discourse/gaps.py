"""Gaps in the lab's reasoning (``find_gaps``): questions nothing addresses, claims without
evidence, hypotheses without results, evidence without a source; computed from three scans
and kept until a load.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from labbrain.discourse.models import GapsResult, NodeRef
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
    gaps = _gaps(scope)
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
        **grouped,
        counts={gap: counts[gap] for gap in _GAP_KINDS},
        truncated=truncated,
        note=f"each list shows at most {limit}; narrow with nodeType or dataset"
        if truncated
        else None,
    )


def _gaps(scope: ReadScope) -> dict[str, set[tuple[str, str]]]:
    """(graph, node) of every gap, computed from three scans and cached per store state."""
    return scope.memo("gaps", lambda: _scan(scope))


def _scan(scope: ReadScope) -> dict[str, set[tuple[str, str]]]:
    """(graph, node) of every gap, from three scans of the store."""
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
    for row in templates.run(store, "typed_edges"):
        graph, source, target = row["graph"], row["source"], row["destination"]
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
    return {
        "unaddressedQuestions": kinds["Question"] - addressed,
        "claimsWithoutEvidence": kinds["Claim"] - argued,
        "hypothesesWithoutResults": kinds["Hypothesis"] - tested,
        "evidenceWithoutSource": kinds["Evidence"] - sourced,
    }


_GAP_KINDS = {
    "unaddressedQuestions": "question",
    "claimsWithoutEvidence": "claim",
    "hypothesesWithoutResults": "hypothesis",
    "evidenceWithoutSource": "evidence",
}
