"""Who contributed what (``get_researcher_contributions``): per creator, node counts by type and
first and last dates from the index's ``contributions`` read model, or one creator's nodes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from labbrain.discourse.models import (
    CONCISE_TYPES,
    CitedNode,
    ContributionsResult,
    CreatorStats,
    Detail,
)
from labbrain.discourse.refs import cited, node_ref, one_dataset
from labbrain.discourse.scope import MAX_LIST, ReadScope
from labbrain.errors import InvalidArgument


def get_researcher_contributions(
    scope: ReadScope,
    creator: str | None = None,
    node_type: str | None = None,
    limit: int = MAX_LIST,
    detail: Detail = "full",
) -> ContributionsResult:
    """Per creator: counts by type and first/last contribution; or one creator's nodes.

    ``dataset`` names the one dataset of all the nodes listed, if they share one. Concise
    detail lists the same creators (totals and dates), the same nodes, in the same order,
    each attributed, but each creator's :data:`CONCISE_TYPES` largest types only (most
    nodes first, then by name) and the nodes without their dataset when ``dataset``
    names it."""
    if not creator and not node_type:  # everyone: the same answer until a load
        result = scope.per_version("contributions", lambda: _contributions(scope, None, None, 0))
    else:
        result = _contributions(scope, creator, node_type, limit)
    if detail == "full":
        return result
    for entry in result.creators:
        largest = sorted(entry.byType.items(), key=lambda item: (-item[1], item[0]))
        entry.byType = dict(largest[:CONCISE_TYPES])
        left_out = sum(count for _, count in largest[CONCISE_TYPES:])
        entry.otherTypes = left_out or None
    if result.dataset is not None:
        result.nodes = [cited(node) for node in result.nodes]
    return result


def _contributions(
    scope: ReadScope, creator: str | None, node_type: str | None, limit: int
) -> ContributionsResult:
    """The full contributions answer (see :func:`get_researcher_contributions`)."""
    rows = scope.brain.index.contributions(creator or None)
    types = scope.node_types_matching(node_type)
    tallies: dict[str, _Tally] = {}
    for name, kind, count, first, last in rows:
        if types is not None and kind.lower() not in types:
            continue
        tally = tallies.get(name)
        if tally is None:
            tally = tallies[name] = _Tally()
        tally.total += count
        tally.by_type[kind] = tally.by_type.get(kind, 0) + count
        tally.first = _earliest(tally.first, first)
        tally.last = _latest(tally.last, last)
    creators = [
        CreatorStats(
            creator=name,
            total=tally.total,
            byType=tally.by_type,
            firstContribution=tally.first,
            lastContribution=tally.last,
        )
        for name, tally in sorted(tallies.items(), key=lambda item: (-item[1].total, item[0]))
    ]
    if not creator:
        return ContributionsResult(
            creators=creators,
            note="pass creator to list one researcher's nodes" if creators else None,
        )
    if not rows:
        known = scope.brain.index.creators()
        raise InvalidArgument(
            "creator", f"no nodes by {creator!r}; creators: {', '.join(known[:30])}"
        )
    if not creators:
        return ContributionsResult(creators=[], note=f"{creator} has no nodes of type {node_type}")
    nodes, total = scope.brain.index.nodes(creator=creator, node_types=types, limit=limit)
    refs: list[CitedNode] = [node_ref(n) for n in nodes]
    return ContributionsResult(
        dataset=one_dataset(refs),
        creators=creators,
        nodes=refs,
        listed=len(nodes),
        total=total,
        truncated=total > len(nodes),
        note=f"showing the newest {len(nodes)} of {total}; narrow with nodeType"
        if total > len(nodes)
        else None,
    )


@dataclass
class _Tally:
    """One creator's counts while they are summed up (see ``_contributions``)."""

    total: int = 0
    by_type: dict[str, int] = dataclasses.field(default_factory=dict)
    first: str | None = None
    last: str | None = None


def _earliest(current: str | None, candidate: str | None) -> str | None:
    values = [v for v in (current, candidate) if v]
    return min(values) if values else None


def _latest(current: str | None, candidate: str | None) -> str | None:
    values = [v for v in (current, candidate) if v]
    return max(values) if values else None
