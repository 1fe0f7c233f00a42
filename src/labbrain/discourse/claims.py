"""The status of a claim (``get_claim_status``): what supports and opposes it, directly and
through one node, by creator, with the sources of the direct evidence; and, beside them, the
stances loaded nanopublications take on it (``outside``, :func:`outside_stances`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any

from labbrain.discourse.models import (
    CitedNode,
    ClaimStatusResult,
    CreatorStance,
    Detail,
    NodeRef,
    OutsideCounts,
    OutsideStance,
    StanceNode,
)
from labbrain.discourse.refs import cited, node_ref, slug
from labbrain.discourse.scope import ReadScope
from labbrain.index.text import IndexedNode
from labbrain.rdf.namespaces import CITO, DG, compact_iri
from labbrain.store import templates

#: How a stance property is shown: its namespace as a prefix (prefix to namespace).
_PREFIXES = {"cito": CITO, "dg": DG}


def get_claim_status(
    scope: ReadScope, uid: str, dataset: str | None = None, detail: Detail = "full"
) -> ClaimStatusResult:
    """Supporting and opposing nodes of a claim (direct and through one node), by creator,
    all in the claim's dataset (the answer's ``dataset``).

    Concise detail has the same nodes, counts and flags, each node attributed but without
    its dataset, and the intermediate node of an indirect one as its uid (that node is
    listed too, as a direct one)."""
    status = _claim_status(scope, uid, dataset)
    if detail == "full":
        return status
    for side in (status.supporting, status.opposing):
        side[:] = [
            StanceNode(
                **cited(node).model_dump(),
                relationshipType=node.relationshipType,
                via=node.via.uid if isinstance(node.via, CitedNode) else node.via,
            )
            for node in side
        ]
    status.claim = cited(status.claim)
    status.sources = [cited(source) for source in status.sources]
    return status


def _claim_status(scope: ReadScope, uid: str, dataset: str | None) -> ClaimStatusResult:
    """The full claim status (see :func:`get_claim_status`)."""
    claim, _ = scope.resolve(uid, dataset)
    rows = templates.run(scope.brain.store, "claim_stance", node=claim.iri, graph=claim.graph)
    refs = scope.refs(
        [r["other"] for r in rows] + [r["via"] for r in rows if r["via"]], claim.graph
    )
    supporting: list[StanceNode] = []
    opposing: list[StanceNode] = []
    seen: set[tuple[str, str, str | None]] = set()
    for row in rows:
        other = refs.get(row["other"])
        via = refs.get(row["via"]) if row["via"] else None
        if other is None or (row["via"] and via is None):
            continue
        key = (row["stance"], row["other"], row["via"])
        direct_key = (row["stance"], row["other"], None)
        if key in seen or (row["via"] and direct_key in seen):
            continue
        seen.add(key)
        node = StanceNode(**other.model_dump(), relationshipType=row["label"], via=via)
        (supporting if row["stance"] == "supports" else opposing).append(node)
    by_creator: dict[str, CreatorStance] = {}
    for stance_nodes, field in ((supporting, "supporting"), (opposing, "opposing")):
        for node in stance_nodes:
            entry = by_creator.setdefault(node.creator or "(unknown)", CreatorStance())
            setattr(entry, field, getattr(entry, field) + 1)
    sources = _sources_of(scope, [n for n in supporting + opposing if n.via is None], claim)
    creators = {n.creator for n in supporting + opposing}
    evidence = supporting + opposing
    single = bool(evidence) and (len(sources) <= 1 if sources else len(creators) <= 1)
    direct = {row["other"] for row in rows if not row["via"]}
    stance_rows = templates.run(scope.brain.store, "outside_stances", node=claim.iri)
    outside = outside_stances(scope, stance_rows, claim, direct)
    note = None
    if not evidence:
        note = "nothing supports or opposes this node yet; find_gaps lists such claims"
        if outside:
            note = (
                "nothing of its dataset supports or opposes this node (find_gaps lists such "
                f"claims); {len(outside)} stance(s) of loaded nanopublications are in outside"
            )
    return ClaimStatusResult(
        dataset=slug(claim.graph),
        claim=node_ref(claim),
        supporting=supporting,
        opposing=opposing,
        countsByCreator=dict(sorted(by_creator.items())),
        sources=sources,
        contested=bool(supporting) and bool(opposing),
        singleSource=single,
        outside=outside,
        outsideCounts=outside_counts(outside),
        note=note,
    )


def outside_stances(
    scope: ReadScope,
    rows: Iterable[dict[str, Any]],
    claim: IndexedNode,
    related: Container[str],
) -> list[OutsideStance]:
    """The stances of ``rows`` (the ``outside_stances`` template's, on ``claim``) as the
    claim's status lists them, supporting first, then by date: all those held in other
    datasets, and those of the claim's own dataset whose subject is not among ``related``
    (the nodes a typed relation already shows supporting or opposing it). A subject that is
    a node of the stance's dataset is given attributed, any other as its IRI."""
    kept = [
        row
        for row in rows
        if row["node"] == claim.iri
        and not (row["graph"] == claim.graph and row["subject"] in related)
    ]
    refs: dict[str, dict[str, NodeRef]] = {}
    for graph in dict.fromkeys(row["graph"] for row in kept):
        refs[graph] = scope.refs((r["subject"] for r in kept if r["graph"] == graph), graph)
    stances = [
        OutsideStance(
            stance=row["stance"],
            property=compact_iri(row["property"], _PREFIXES),
            subject=refs[row["graph"]].get(row["subject"], row["subject"]),
            nanopub=row["nanopub"],
            author=row["author"],
            authorName=row["authorName"],
            date=row["date"],
            verified=bool(row["verified"]),
            dataset=slug(row["graph"]),
        )
        for row in kept
        if row["stance"] in ("supports", "disputes")
    ]
    stances.sort(key=lambda s: (s.stance != "supports", s.date or "", s.nanopub))
    return stances


def outside_counts(stances: Iterable[OutsideStance]) -> OutsideCounts:
    """How many of ``stances`` support, dispute, and come from unverified nanopublications."""
    counts = OutsideCounts()
    for stance in stances:
        if stance.stance == "supports":
            counts.supports += 1
        else:
            counts.disputes += 1
        counts.unverified += not stance.verified
    return counts


def _sources_of(
    scope: ReadScope, evidence: list[StanceNode], claim: IndexedNode
) -> list[CitedNode]:
    """Source nodes the given evidence links to (by relation or in its text)."""
    found: dict[str, CitedNode] = {}
    nodes = scope.brain.index.nodes_by_iri((item.url for item in evidence), claim.graph)
    edges = scope.edges_of(claim.graph, list(nodes.values()))
    others = [e.other for rows in edges.values() for e in rows]
    for ref in scope.refs(others, claim.graph).values():
        if ref.nodeType.lower() in ("source", "source document"):
            found[ref.uid] = ref
    return sorted(found.values(), key=lambda r: r.uid)
