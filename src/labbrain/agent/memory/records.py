"""The memory graph in RDF: its vocabulary, records read from quads, and checked values.

What a domain graph holds is described in :mod:`labbrain.agent.memory.memories`. This module turns
the quads of one memory node or edge into a :class:`MemoryRecord` / :class:`LinkRecord` (keeping the
quads, so a write can remove or move them exactly), reads a whole domain at once, rewrites an edge
into a cross-domain reference and back, and checks the values users give (domain ids, paths, tags,
edge types, strengths) with messages that say what is allowed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.agent.memory.models import LinkTypeName, MemoryRef
from labbrain.errors import InvalidArgument
from labbrain.index.text import normalise_timestamp
from labbrain.rdf.namespaces import DCT, DOMAIN_PREFIX, LB, PROV, RDF, RDFS, SIOC, XSD
from labbrain.rdf.terms import number, text, timestamp
from labbrain.store.base import QuadStore

#: Edge type names (the tools' values) and their IRIs.
LINK_TYPES: dict[LinkTypeName, str] = {
    "follows": LB + "followsLink",
    "relates_to": LB + "relatesToLink",
    "supports": LB + "supportsLink",
    "contradicts": LB + "contradictsLink",
    "refines": LB + "refinesLink",
    "synthesizes": LB + "synthesizesLink",
}
_TYPE_NAMES: dict[str, LinkTypeName] = {iri: name for name, iri in LINK_TYPES.items()}

MAX_CONTENT = 20_000
MAX_SHORT = 500
MAX_DESCRIPTION = 2_000
MAX_TAGS = 30
MAX_DEPTH = 10
_PREVIEW = 160
DOMAIN_ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_HEX_RE = re.compile(r"[0-9a-f]{32}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

RDF_TYPE = NamedNode(RDF + "type")
DOMAIN_CLASS = NamedNode(LB + "Domain")
MEMORY_CLASS = NamedNode(LB + "MemoryNode")
LINK_CLASS = NamedNode(LB + "Link")
CROSS_CLASS = NamedNode(LB + "CrossReference")
LABEL = NamedNode(RDFS + "label")
DESCRIPTION = NamedNode(DCT + "description")
CREATED = NamedNode(DCT + "created")
MODIFIED = NamedNode(DCT + "modified")
CONTENT = NamedNode(SIOC + "content")
SUMMARY = NamedNode(DCT + "abstract")
TAG = NamedNode(LB + "tag")
PATH = NamedNode(LB + "path")
LINK_SOURCE = NamedNode(LB + "linkSource")
LINK_TARGET = NamedNode(LB + "linkTarget")
LINK_TYPE = NamedNode(LB + "linkType")
STRENGTH = NamedNode(LB + "strength")
BIDIRECTIONAL = NamedNode(LB + "bidirectional")
LAST_ACCESSED = NamedNode(LB + "lastAccessed")
ACTIVE_DOMAIN = NamedNode(LB + "activeDomain")
ATTRIBUTED_TO = NamedNode(PROV + "wasAttributedTo")
SESSION = NamedNode(LB + "session")
CROSS_FACTS = (DESCRIPTION, BIDIRECTIONAL)


# ---------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class MemoryRecord:
    """A memory node as its quads say, with the quads (to remove or move them exactly)."""

    iri: str
    graph: str
    content: str
    summary: str | None
    tags: tuple[str, ...]
    path: str
    created: str
    modified: str | None
    attributed_to: str | None
    session: str | None
    quads: tuple[Quad, ...]


@dataclass(frozen=True)
class LinkRecord:
    """An edge (or cross-domain reference) as its quads say, with the quads."""

    iri: str
    graph: str
    source: str
    target: str
    type: LinkTypeName
    strength: float
    created: str
    modified: str | None
    cross: bool
    bidirectional: bool
    description: str | None
    quads: tuple[Quad, ...]


def _facts(quads: Iterable[Quad]) -> dict[str, list[str]]:
    facts: dict[str, list[str]] = defaultdict(list)
    for quad in quads:
        if isinstance(quad.object, NamedNode | Literal):
            facts[quad.predicate.value].append(quad.object.value)
    return facts


def _first(facts: dict[str, list[str]], predicate: NamedNode) -> str | None:
    values = facts.get(predicate.value)
    return min(values) if values else None


def read_memory(iri: str, graph: str, quads: Iterable[Quad]) -> MemoryRecord | None:
    """The memory node ``iri`` from its quads in ``graph``, or None if they do not make one."""
    held = tuple(quads)
    facts = _facts(held)
    if MEMORY_CLASS.value not in facts.get(RDF_TYPE.value, []):
        return None
    return MemoryRecord(
        iri=iri,
        graph=graph,
        content=_first(facts, CONTENT) or "",
        summary=_first(facts, SUMMARY),
        tags=tuple(sorted(facts.get(TAG.value, []), key=str.lower)),
        path=_first(facts, PATH) or "/",
        created=_time(facts, CREATED) or "",
        modified=_time(facts, MODIFIED),
        attributed_to=_first(facts, ATTRIBUTED_TO),
        session=_first(facts, SESSION),
        quads=held,
    )


def read_link(iri: str, graph: str, quads: Iterable[Quad]) -> LinkRecord | None:
    """The edge ``iri`` from its quads in ``graph``, or None if they do not make one."""
    held = tuple(quads)
    facts = _facts(held)
    types = facts.get(RDF_TYPE.value, [])
    source, target = _first(facts, LINK_SOURCE), _first(facts, LINK_TARGET)
    kind = _TYPE_NAMES.get(_first(facts, LINK_TYPE) or "")
    if LINK_CLASS.value not in types or source is None or target is None or kind is None:
        return None
    return LinkRecord(
        iri=iri,
        graph=graph,
        source=source,
        target=target,
        type=kind,
        strength=float(_first(facts, STRENGTH) or 0.0),
        created=_time(facts, CREATED) or "",
        modified=_time(facts, MODIFIED),
        cross=CROSS_CLASS.value in types,
        bidirectional=_first(facts, BIDIRECTIONAL) == "true",
        description=_first(facts, DESCRIPTION),
        quads=held,
    )


@dataclass
class DomainContent:
    """Every memory node and edge of one domain graph, oldest first."""

    graph: str
    memories: dict[str, MemoryRecord] = field(default_factory=dict)
    links: dict[str, LinkRecord] = field(default_factory=dict)


def load_domain(store: QuadStore, graph: str) -> DomainContent:
    """Read a whole domain graph (one pass over its quads)."""
    by_subject: dict[str, list[Quad]] = defaultdict(list)
    for quad in store.quads(graph):
        if isinstance(quad.subject, NamedNode):
            by_subject[quad.subject.value].append(quad)
    memories = [read_memory(s, graph, q) for s, q in by_subject.items()]
    links = [read_link(s, graph, q) for s, q in by_subject.items()]
    content = DomainContent(graph)
    for memory in sorted((m for m in memories if m), key=lambda m: (m.created, m.iri)):
        content.memories[memory.iri] = memory
    for link in sorted((e for e in links if e), key=lambda e: (e.created, e.iri)):
        content.links[link.iri] = link
    return content


# ---------------------------------------------------------------------------------- values
def domain_id(graph: str) -> str:
    """The id of a domain from its graph IRI."""
    return graph.removeprefix(DOMAIN_PREFIX)


def iso(moment: datetime) -> str:
    return normalise_timestamp(moment.isoformat()) or ""


def _time(facts: dict[str, list[str]], predicate: NamedNode) -> str | None:
    return normalise_timestamp(_first(facts, predicate))


def check_domain_id(ident: str) -> str:
    """A valid domain id (lowercase letters, digits, single dashes, up to 64), or raise."""
    value = ident.strip()
    if len(value) > 64 or not DOMAIN_ID_RE.fullmatch(value):
        raise InvalidArgument(
            "id", "use 1 to 64 lowercase letters, digits and single dashes, e.g. 'actin-models'"
        )
    return value


def check_text(name: str, value: str, limit: int, *, required: bool = True) -> str:
    """``value`` stripped; empty only when not required; at most ``limit`` characters."""
    cleaned = value.strip()
    if required and not cleaned:
        raise InvalidArgument(name, "must not be empty")
    if len(cleaned) > limit:
        raise InvalidArgument(name, f"at most {limit} characters (got {len(cleaned)})")
    return cleaned


def normalize_path(path: str) -> str:
    """A memory path as ``/a/b``: leading slash, no empty, '.' or '..' segments, no
    trailing slash (the root is ``/``)."""
    segments = [part.strip() for part in path.strip().split("/")]
    segments = [part for part in segments if part]
    if any(part in (".", "..") or _CONTROL_RE.search(part) for part in segments):
        raise InvalidArgument("path", "use /-separated names, e.g. /actin/branching")
    normalized = "/" + "/".join(segments)
    if len(normalized) > MAX_SHORT:
        raise InvalidArgument("path", f"at most {MAX_SHORT} characters")
    return normalized


def path_matches(path: str, prefix: str) -> bool:
    """True when ``path`` is ``prefix`` or lies below it (``/a`` holds ``/a/b``, not ``/ab``)."""
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Tags stripped, without duplicates (case-insensitive), in the order given."""
    cleaned: dict[str, str] = {}
    for tag in tags:
        value = tag.strip()
        if not value or len(value) > 100 or _CONTROL_RE.search(value):
            raise InvalidArgument("tags", "each tag is 1 to 100 printable characters")
        cleaned.setdefault(value.lower(), value)
    if len(cleaned) > MAX_TAGS:
        raise InvalidArgument("tags", f"at most {MAX_TAGS} tags")
    return list(cleaned.values())


def check_link_type(kind: str, name: str = "type") -> LinkTypeName:
    """``kind`` if it names an edge type, else InvalidArgument listing the allowed ones."""
    for known in LINK_TYPES:
        if kind == known:
            return known
    allowed = ", ".join(LINK_TYPES)
    raise InvalidArgument(name, f"{kind!r} is not an edge type; use one of {allowed}")


def check_strength(value: float, name: str = "strength") -> float:
    """A strength in 0..1, rounded to 4 decimals, else InvalidArgument."""
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(name, f"must be between 0 and 1 (got {value})")
    return round(value, 4)


def resource_iri(ident: str, prefix: str) -> str | None:
    """The IRI a user-given memory or edge id names (full IRI or bare hex), or None."""
    value = ident.strip()
    if value.startswith(prefix):
        value = value[len(prefix) :]
    return prefix + value if _HEX_RE.fullmatch(value) else None


def regraph(quads: Iterable[Quad], graph: str) -> list[Quad]:
    target = NamedNode(graph)
    return [Quad(q.subject, q.predicate, q.object, target) for q in quads]


def _preview(record: MemoryRecord) -> str:
    if record.summary:
        return record.summary
    line = " ".join(record.content.split())
    return line if len(line) <= _PREVIEW else line[: _PREVIEW - 1].rstrip() + "…"


def memory_ref(record: MemoryRecord) -> MemoryRef:
    """The brief answer for a memory node."""
    return MemoryRef(
        id=record.iri,
        domain=domain_id(record.graph),
        summary=_preview(record),
        path=record.path,
        tags=list(record.tags),
        created=record.created,
    )


# ---------------------------------------------------------------------------------- rewriting
def as_cross_reference(link: LinkRecord, graph: str, description: str, at: datetime) -> list[Quad]:
    """The quads of ``link`` in ``graph``, turned into a one-way cross-domain reference."""
    node, g = NamedNode(link.iri), NamedNode(graph)
    kept = [q for q in link.quads if q.predicate not in (*CROSS_FACTS, MODIFIED)]
    return [
        *regraph(kept, graph),
        *cross_facts(node, graph, description, bidirectional=False),
        Quad(node, MODIFIED, timestamp(at), g),
    ]


def as_edge(link: LinkRecord, graph: str, at: datetime) -> list[Quad]:
    """The quads of a cross-domain reference in ``graph``, turned into an ordinary edge."""
    node, g = NamedNode(link.iri), NamedNode(graph)
    kept = [
        q
        for q in link.quads
        if q.predicate not in (*CROSS_FACTS, MODIFIED) and q.object != CROSS_CLASS
    ]
    return [*regraph(kept, graph), Quad(node, MODIFIED, timestamp(at), g)]


# ---------------------------------------------------------------------------------- building
def domain_quads(graph: str, name: str, description: str, at: datetime) -> list[Quad]:
    """The self-description of a new domain (its graph IRI is also its subject)."""
    node = NamedNode(graph)
    quads = [
        Quad(node, RDF_TYPE, DOMAIN_CLASS, node),
        Quad(node, LABEL, text(name), node),
        Quad(node, CREATED, timestamp(at), node),
        Quad(node, LAST_ACCESSED, timestamp(at), node),
    ]
    if description:
        quads.append(Quad(node, DESCRIPTION, text(description), node))
    return quads


def is_domain(store: QuadStore, graph: str) -> bool:
    """True when ``graph`` holds a domain's self-description."""
    types = store.quads(graph, NamedNode(graph), RDF_TYPE)
    return any(quad.object == DOMAIN_CLASS for quad in types)


def accessed(
    store: QuadStore, graphs: Iterable[str], at: datetime
) -> tuple[list[Quad], list[Quad]]:
    """The quads (to remove, to add) recording that ``graphs`` were accessed at ``at``."""
    remove: list[Quad] = []
    add: list[Quad] = []
    for graph in dict.fromkeys(graphs):
        node = NamedNode(graph)
        remove.extend(store.quads(graph, node, LAST_ACCESSED))
        add.append(Quad(node, LAST_ACCESSED, timestamp(at), node))
    return remove, add


def memory_quads(
    node: NamedNode,
    graph: str,
    content: str,
    path: str,
    tags: Iterable[str],
    summary: str,
    at: datetime,
) -> list[Quad]:
    """A new memory node's quads (without provenance); an empty summary is left out."""
    g = NamedNode(graph)
    quads = [
        Quad(node, RDF_TYPE, MEMORY_CLASS, g),
        Quad(node, CONTENT, text(content), g),
        Quad(node, PATH, text(path), g),
        Quad(node, CREATED, timestamp(at), g),
        *(Quad(node, TAG, text(tag), g) for tag in tags),
    ]
    if summary:
        quads.append(Quad(node, SUMMARY, text(summary), g))
    return quads


def link_quads(
    node: NamedNode,
    graph: str,
    source: str,
    target: str,
    kind: LinkTypeName,
    strength: float,
    at: datetime,
) -> list[Quad]:
    """A new edge's quads (without provenance)."""
    g = NamedNode(graph)
    return [
        Quad(node, RDF_TYPE, LINK_CLASS, g),
        Quad(node, LINK_SOURCE, NamedNode(source), g),
        Quad(node, LINK_TARGET, NamedNode(target), g),
        Quad(node, LINK_TYPE, NamedNode(LINK_TYPES[kind]), g),
        Quad(node, STRENGTH, number(strength), g),
        Quad(node, CREATED, timestamp(at), g),
    ]


def cross_facts(node: NamedNode, graph: str, description: str, bidirectional: bool) -> list[Quad]:
    """What makes an edge a cross-domain reference."""
    g = NamedNode(graph)
    flag = Literal("true" if bidirectional else "false", datatype=NamedNode(XSD + "boolean"))
    return [
        Quad(node, RDF_TYPE, CROSS_CLASS, g),
        Quad(node, DESCRIPTION, text(description), g),
        Quad(node, BIDIRECTIONAL, flag, g),
    ]


def revise(
    quads: Iterable[Quad], changes: dict[NamedNode, list[Literal]], at: datetime
) -> tuple[list[Quad], list[Quad], list[Quad]]:
    """Replace the values of the ``changes`` predicates of one resource and set its
    ``dct:modified`` to ``at``: (quads to remove, quads to add, the resource's new quads)."""
    held = list(quads)
    node, graph = held[0].subject, held[0].graph_name
    replaced = {*changes, MODIFIED}
    remove = [q for q in held if q.predicate in replaced]
    add = [Quad(node, p, value, graph) for p, values in changes.items() for value in values]
    add.append(Quad(node, MODIFIED, timestamp(at), graph))
    return remove, add, [q for q in held if q.predicate not in replaced] + add
