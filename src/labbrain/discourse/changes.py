"""What changed in the lab's datasets since a time: read from the change records every load
writes (:mod:`labbrain.ingest.changes`), answered with counts, the nodes and relations, and
who added what; and when each assistant last asked (:class:`AskedAt`), so that "what changed"
without a time means "since I last asked"."""

from __future__ import annotations

import re
import threading
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field
from pyoxigraph import Literal, NamedNode, Quad

from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument
from labbrain.index.text import uid_of
from labbrain.rdf.namespaces import CHANGES_GRAPH, DATASET_GRAPH_PREFIX, LB
from labbrain.rdf.terms import timestamp
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


class PersonChanges(BaseModel):
    """What one person did in the changes: nodes added by type, nodes edited and removed,
    and the titles of the first nodes they added (claims and evidence first)."""

    creator: str
    added: dict[str, int]
    edited: int
    removed: int
    addedTitles: list[str]


class WhatChangedResult(BaseModel):
    """Changes since a time, newest load last."""

    since: str
    loads: list[LoadChange]
    nodes: list[ChangedNode]
    relations: list[ChangedRelation]
    addedByPerson: dict[str, dict[str, int]] = Field(
        description="for each creator, how many nodes of each type they added"
    )
    people: list[PersonChanges] = Field(
        default_factory=list, description="per person, most nodes added first"
    )
    truncated: bool = Field(description="more nodes or relations changed than are listed")
    note: str | None = None


#: Titles listed per person in :attr:`WhatChangedResult.people`.
TITLES_PER_PERSON = 5
#: Node types whose titles a person's summary lists first.
_FIRST_TYPES = ("claim", "evidence", "result", "question", "hypothesis")


def what_changed(
    brain: LabBrain,
    since: datetime,
    *,
    dataset: str | None = None,
    node_type: str | list[str] | None = None,
    creator: str | None = None,
    limit: int = 50,
) -> WhatChangedResult:
    """The changes of the loads committed at or after ``since`` (in ``dataset``, a slug, when
    given): every load's counts, up to ``limit`` nodes and relations (nodes filtered by type
    label, or any of a list of them, and creator when given), and the nodes each person added
    by type."""
    types = [node_type] if isinstance(node_type, str) else node_type
    wanted_types = {t.lower() for t in types} if types is not None else None
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
                if _wanted(entry, wanted_types, creator):
                    person = entry.get("creator") or "(no creator)"
                    people[person][str(entry["nodeType"])] += int(entry["added"])
            elif entry.get("node") is not None and _wanted(entry, wanted_types, creator):
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
            elif entry.get("source") is not None and types is None and creator is None:
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
    summary = _people(people, nodes)
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
        people=summary,
        truncated=cut or truncated,
        note=note,
    )


def _people(added: dict[str, Counter[str]], nodes: list[ChangedNode]) -> list[PersonChanges]:
    """Per person: the complete counts of nodes added, and from the listed entries the
    nodes edited and removed and the first titles added."""
    edits: dict[str, Counter[str]] = defaultdict(Counter)
    titles: dict[str, list[ChangedNode]] = defaultdict(list)
    for node in nodes:
        person = node.creator or "(no creator)"
        edits[person][node.change] += 1
        if node.change == "added":
            titles[person].append(node)
    rank = {name: place for place, name in enumerate(_FIRST_TYPES)}
    summary = []
    for person in set(added) | set(edits):
        first = sorted(
            titles[person], key=lambda n: (rank.get(n.nodeType.lower(), len(rank)), n.at)
        )
        summary.append(
            PersonChanges(
                creator=person,
                added=dict(sorted(added[person].items())) if person in added else {},
                edited=edits[person]["edited"],
                removed=edits[person]["removed"],
                addedTitles=[n.title for n in first[:TITLES_PER_PERSON]],
            )
        )
    summary.sort(key=lambda p: (-sum(p.added.values()), -p.edited, p.creator))
    return summary


class AskedAt:
    """When each assistant (by its MCP client's name) last asked what changed: kept in the
    changes graph (``lb:changesAskedAt``) on a writable store, in this process otherwise."""

    def __init__(self, brain: LabBrain, *, keep: bool) -> None:
        self.brain = brain
        self.keep = keep
        self._here: dict[str, datetime] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _subject(client: str) -> NamedNode:
        return NamedNode("urn:labbrain:client:" + quote(client, safe=""))

    def last(self, client: str) -> datetime | None:
        """When ``client`` last asked, or None."""
        with self._lock:
            if not self.keep:
                return self._here.get(client)
            found = [
                q.object.value
                for q in self.brain.store.quads(CHANGES_GRAPH, self._subject(client), _ASKED)
                if isinstance(q.object, Literal)
            ]
        return _moment(max(found)) if found else None

    def note(self, client: str, at: datetime) -> None:
        """Remember that ``client`` asked at ``at``."""
        with self._lock:
            if not self.keep:
                self._here[client] = at
                return
            subject = self._subject(client)
            old = list(self.brain.store.quads(CHANGES_GRAPH, subject, _ASKED))
            new = Quad(subject, _ASKED, timestamp(at), NamedNode(CHANGES_GRAPH))
            self.brain.store.apply(old, [new])


_ASKED = NamedNode(LB + "changesAskedAt")


def _moment(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _wanted(entry: dict[str, Any], node_types: set[str] | None, creator: str | None) -> bool:
    if node_types is not None and str(entry.get("nodeType", "")).lower() not in node_types:
        return False
    return creator is None or entry.get("creator") == creator
