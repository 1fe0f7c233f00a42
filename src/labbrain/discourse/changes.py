"""What changed in the lab's datasets since a time: read from the change records every load
writes (:mod:`labbrain.ingest.changes`), answered with counts, the nodes and relations, and
who added what."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument
from labbrain.index.text import uid_of
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX
from labbrain.store import templates

_SPAN = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``7d``, ``24h``, ``30m``, ``2w`` (that long before ``now``) or an ISO 8601 date or time
    (UTC when it names no zone); InvalidArgument otherwise."""
    now = now or datetime.now(UTC)
    span = _SPAN.match(text)
    if span:
        return now - timedelta(**{_UNITS[span.group(2)]: int(span.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            "since", f"{text!r} is no time: give e.g. 7d, 24h, 2026-11-23 or 2026-11-23T09:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class LoadChange(BaseModel):
    """What one load changed in one dataset."""

    dataset: str = Field(description="slug of the dataset")
    at: str = Field(description="when the load was committed, ISO 8601")
    source: str | None = Field(description="the file or vault it was loaded from")
    nodesAdded: int
    nodesRemoved: int
    nodesEdited: int
    relationsAdded: int
    relationsRemoved: int


class ChangedNode(BaseModel):
    """A node added, removed or edited (title, type, creator as they are after the change,
    or were before a removal)."""

    change: str = Field(description="added, removed or edited")
    uid: str
    title: str
    nodeType: str
    creator: str | None
    dataset: str
    at: str


class ChangedRelation(BaseModel):
    """A typed relation added or removed."""

    change: str = Field(description="added or removed")
    sourceUid: str
    label: str
    destinationUid: str
    dataset: str
    at: str


class WhatChangedResult(BaseModel):
    """Changes since a time, newest load last."""

    since: str
    loads: list[LoadChange]
    nodes: list[ChangedNode]
    relations: list[ChangedRelation]
    addedByPerson: dict[str, dict[str, int]] = Field(
        description="for each creator, how many nodes of each type they added"
    )
    truncated: bool = Field(description="more nodes or relations changed than are listed")
    note: str | None = None


def what_changed(
    brain: LabBrain,
    since: datetime,
    *,
    dataset: str | None = None,
    node_type: str | None = None,
    creator: str | None = None,
    limit: int = 50,
) -> WhatChangedResult:
    """The changes of the loads committed at or after ``since`` (in ``dataset``, a slug, when
    given): every load's counts, up to ``limit`` nodes and relations (nodes filtered by type
    label and creator when given), and the nodes each person added by type."""
    loads: list[LoadChange] = []
    nodes: list[ChangedNode] = []
    relations: list[ChangedRelation] = []
    people: dict[str, Counter[str]] = defaultdict(Counter)
    truncated = False
    for row in templates.run(brain.store, "changes"):
        at = _moment(row["at"])
        slug = str(row["graph"]).removeprefix(DATASET_GRAPH_PREFIX)
        if at < since or (dataset is not None and slug != dataset):
            continue
        stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        loads.append(
            LoadChange(
                dataset=slug,
                at=stamp,
                source=row.get("sourceFile"),
                nodesAdded=int(row["nodesAdded"]),
                nodesRemoved=int(row["nodesRemoved"]),
                nodesEdited=int(row["nodesEdited"]),
                relationsAdded=int(row["relationsAdded"]),
                relationsRemoved=int(row["relationsRemoved"]),
            )
        )
        truncated = truncated or bool(row["truncated"])
        for entry in templates.run(brain.store, "change_entries", change=row["change"]):
            if entry.get("added") is not None:
                if _wanted(entry, node_type, creator):
                    person = entry.get("creator") or "(no creator)"
                    people[person][str(entry["nodeType"])] += int(entry["added"])
            elif entry.get("node") is not None and _wanted(entry, node_type, creator):
                nodes.append(
                    ChangedNode(
                        change=str(entry["kind"]),
                        uid=uid_of(str(entry["node"])),
                        title=str(entry["title"]),
                        nodeType=str(entry["nodeType"]),
                        creator=entry.get("creator"),
                        dataset=slug,
                        at=stamp,
                    )
                )
            elif entry.get("source") is not None and node_type is None and creator is None:
                relations.append(
                    ChangedRelation(
                        change=str(entry["kind"]),
                        sourceUid=uid_of(str(entry["source"])),
                        label=str(entry["label"]),
                        destinationUid=uid_of(str(entry["destination"])),
                        dataset=slug,
                        at=stamp,
                    )
                )
    order = {"added": 0, "edited": 1, "removed": 2}
    nodes.sort(key=lambda n: (n.at, order.get(n.change, 3), n.title))
    relations.sort(key=lambda r: (r.at, order.get(r.change, 3), r.label, r.sourceUid))
    cut = len(nodes) > limit or len(relations) > limit
    note = None
    if not loads:
        note = "no load changed a dataset since then"
    elif cut or truncated:
        note = f"listing at most {limit} nodes and relations; the counts are complete"
    return WhatChangedResult(
        since=since.isoformat(timespec="seconds").replace("+00:00", "Z"),
        loads=loads,
        nodes=nodes[:limit],
        relations=relations[:limit],
        addedByPerson={p: dict(sorted(c.items())) for p, c in sorted(people.items())},
        truncated=cut or truncated,
        note=note,
    )


def _moment(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _wanted(entry: dict[str, Any], node_type: str | None, creator: str | None) -> bool:
    if node_type is not None and str(entry.get("nodeType", "")).lower() != node_type.lower():
        return False
    return creator is None or entry.get("creator") == creator
