"""The lab's claims as nanopublications: one per Claim, Evidence, Question or Result node and
one per relation between two of them, signed, with trusty URIs.

A nanopublication is three named graphs and a head that names them:

- **assertion**: a node typed with its ``dg:`` core class and, beside it, the class the
  nanopub community's claim and evidence templates use (``kpxl:Claim``, ``kpxl:Evidence``,
  ``kpxl:Question``; none exists for a Result), labelled, identified by its uid, described by
  its markdown; or a relation as the direct triple of the lab's relation type, that type's
  label and ``dg:`` core property, and the CiTO stance beside Supports (``cito:supports``) and
  Opposes (``cito:disputes``);
- **provenance**: the assertion attributed to the author's ORCID (``prov:wasAttributedTo``),
  generated when the node was created, derived from the node's page and the DOIs of the
  sources it cites;
- **publication info**: creator, date, licence, ``npx:introduces`` the node, and
  ``npx:supersedes`` the earlier nanopublication of a node or relation that changed.

Authors: exports name people by display name; the people map
(:mod:`~labbrain.publish.people`) resolves them. Nothing is signed for an author without an
ORCID: :class:`MissingOrcids` lists every name missing before anything is written. Unsigned
output (no key) is a dry run: temporary URIs, nothing remembered.

What was published is remembered in :data:`~labbrain.rdf.namespaces.PUBLISHED_GRAPH` (see
:mod:`~labbrain.publish.ledger`): an unchanged node or relation is published again with its
first date and supersession, so signing gives the same trusty URI; a changed one gets a new
nanopublication that supersedes the last; one no longer in the dataset can be retracted.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import IO

from pyoxigraph import Literal, NamedNode

from labbrain.core import LabBrain
from labbrain.errors import DatasetNotFound, InputError, InvalidArgument, NodeNotFound
from labbrain.index.text import IndexedNode
from labbrain.ingest.nanopub import MAX_TITLE_CHARS
from labbrain.publish.ledger import Ledger, Publication
from labbrain.publish.lineage import SOURCE_TYPES, source_dois
from labbrain.publish.people import People
from labbrain.rdf.namespaces import (
    DATASET_GRAPH_PREFIX,
    DCT,
    DG,
    FOAF,
    LB,
    NP,
    NP_TEMP,
    NPX,
    PROV,
    RDF,
    RDFS,
    XSD,
    graph_iri,
)
from labbrain.rdf.nanopub import CITO_STANCES, COMMUNITY_CLASSES, SigningKey, sign_many
from labbrain.rdf.terms import canonical_time, now
from labbrain.store import templates

#: The core classes published (each with its community class beside it, where there is one:
#: :data:`~labbrain.rdf.nanopub.COMMUNITY_CLASSES`).
KINDS = (DG + "Claim", DG + "Evidence", DG + "Question", LB + "Result")
#: Kinds in order of an evidence chain: a Result grounds Evidence, which argues a Claim, which
#: answers a Question.
CHAIN_RANK: dict[str, int] = {
    LB + "Result": 0,
    DG + "Evidence": 1,
    DG + "Claim": 2,
    DG + "Question": 3,
}
DEFAULT_LICENSE = "https://creativecommons.org/licenses/by/4.0/"
_XSD_DATETIME = NamedNode(XSD + "dateTime")


class MissingOrcids(InvalidArgument):
    """Some authors have no ORCID in the people map: nothing was signed."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        shown = ", ".join(repr(n) for n in names[:20])
        more = f" and {len(names) - 20} more" if len(names) > 20 else ""
        super().__init__(
            "key",
            f"nothing is signed for an author without an ORCID; missing: {shown}{more}. Add "
            'them with: labbrain people set "NAME" 0000-0000-0000-0000 (or labbrain people '
            "import FILE), or export without --key for an unsigned dry run",
        )


@dataclass(frozen=True)
class Selection:
    """What to publish: the datasets (slugs or IRIs; none: every dataset), one node with its
    evidence chain (``node``, a uid), or the nodes a SPARQL SELECT's ``?node`` binds."""

    graphs: tuple[str, ...] = ()
    node: str | None = None
    sparql: str | None = None


@dataclass(frozen=True)
class Options:
    """How to publish: the signing key (None: an unsigned dry run), the licence IRI, whether
    to retract what was published and is gone, and whether to add an index nanopublication
    (always for a node's evidence chain)."""

    key: SigningKey | None = None
    license: str = DEFAULT_LICENSE
    retract_deleted: bool = False
    index: bool = False


@dataclass(frozen=True)
class _Node:
    ref: IndexedNode
    kind: str
    content: str
    derived_from: tuple[str, ...]


@dataclass
class PublishReport:
    """What a publication wrote: counts per outcome and the nanopublications' URIs."""

    signed: bool
    nodes: int = 0
    relations: int = 0
    new: int = 0
    superseding: int = 0
    unchanged: int = 0
    retracted: int = 0
    index: str | None = None
    uris: list[str] = field(default_factory=list)
    #: uids of nodes left out of a signed publication because they have no creator.
    skipped: list[str] = field(default_factory=list)
    #: What :func:`remember` records (signed publications only).
    records: list[Publication] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The report as JSON-ready data."""
        return {
            "signed": self.signed,
            "nodes": self.nodes,
            "relations": self.relations,
            "new": self.new,
            "superseding": self.superseding,
            "unchanged": self.unchanged,
            "retracted": self.retracted,
            "index": self.index,
            "nanopublications": len(self.uris),
            "skippedWithoutCreator": self.skipped,
        }


def publish(
    brain: LabBrain, selection: Selection, options: Options, output: IO[bytes]
) -> PublishReport:
    """Write the selection's nanopublications to ``output`` as TriG, one after another.

    Refused (InputError) before anything is written: a node whose title is longer than
    :data:`~labbrain.ingest.nanopub.MAX_TITLE_CHARS` (labbrain would not load it back).
    Signed (``options.key``): every author must have an ORCID (else :class:`MissingOrcids`,
    before anything is written), nodes without a creator are left out (``skipped``), and the
    report carries the records :func:`remember` keeps once the output is safely written.
    Unsigned: temporary URIs, and nothing to remember."""
    if options.retract_deleted and (selection.node is not None or selection.sparql is not None):
        raise InvalidArgument(
            "retract-deleted",
            "it retracts what is gone from whole datasets; drop --node and --select",
        )
    graphs, nodes, relations = _select(brain, selection)
    existing = {(n.ref.graph, _node_key(n.ref.iri)) for n in nodes} | {
        (r.graph, _relation_key(r)) for r in relations
    }
    report = PublishReport(signed=options.key is not None)
    if options.key is not None:
        # Nothing to attribute a node without a creator to: left out, and said.
        report.skipped = [n.ref.uid for n in nodes if not n.ref.creator]
        nodes = [n for n in nodes if n.ref.creator]
        kept = {n.ref.iri for n in nodes}
        relations = [r for r in relations if r.source in kept and r.destination in kept]
    too_long = [n.ref.uid for n in nodes if len(n.ref.title) > MAX_TITLE_CHARS]
    if too_long:
        shown = ", ".join(too_long[:10]) + (
            f" and {len(too_long) - 10} more" if len(too_long) > 10 else ""
        )
        raise InputError(
            f"a nanopublication's title is at most {MAX_TITLE_CHARS:,} characters (as labbrain "
            f"loads them), and these nodes' titles are longer: {shown}; shorten them in the "
            "lab's graph, or leave them out with --select"
        )
    people = People(brain.store)
    authors = people.resolve(
        {n.ref.creator for n in nodes if n.ref.creator} | {r.author for r in relations if r.author}
    )
    if options.key is not None:
        missing = sorted(name for name, orcid in authors.items() if not orcid)
        if missing:
            raise MissingOrcids(missing)
    records: list[Publication] = []
    known = Ledger(brain.store).records(graphs)
    if options.key is None:
        output.write(b"# Unsigned nanopublications (a dry run): temporary URIs, not published.\n")
    plans = [
        _plan(unit, known.get((unit.graph, unit.key)), options)
        for unit in _units(nodes, relations, authors, options)
    ]
    for plan, (uri, trig) in zip(plans, _sign_all([p.text for p in plans], options), strict=True):
        if (
            plan.outcome == "unchanged"
            and options.key is not None
            and plan.earlier
            and (uri != plan.earlier.uri)
        ):
            # Same content, another URI (another key, say): a new publication superseding it.
            plan.redate(plan.earlier.uri)
            uri, trig = _sign_all([plan.text], options)[0]
        output.write(trig.encode("utf-8"))
        report.uris.append(uri)
        if plan.unit.is_node:
            report.nodes += 1
        else:
            report.relations += 1
        setattr(report, plan.outcome, getattr(report, plan.outcome) + 1)
        records.append(
            Publication(
                plan.unit.key,
                plan.unit.graph,
                uri,
                plan.unit.digest,
                plan.date,
                plan.supersedes,
                False,
            )
        )
    if options.retract_deleted:
        # Only what is gone from the dataset: a node left out (no creator) still exists.
        for place, record in sorted(known.items()):
            if place in existing or record.retracted:
                continue
            uri, trig = _retraction(record, options)
            output.write(trig.encode("utf-8"))
            report.uris.append(uri)
            report.retracted += 1
            records.append(replace(record, retracted=True, retraction=uri))
    if options.index or selection.node is not None:
        title = f"Evidence chain of {selection.node}" if selection.node else "Nanopublications"
        uri, trig = _index(report.uris, title, options)
        output.write(trig.encode("utf-8"))
        report.index = uri
    report.records = records if options.key is not None else []
    return report


def remember(brain: LabBrain, report: PublishReport) -> None:
    """Record what a signed publication published (call it once its output is safely
    written: a publication whose file was lost must not count as published)."""
    if report.records:
        Ledger(brain.store).remember(report.records)


@dataclass
class _Plan:
    """One unit's nanopublication before signing: its date, what it supersedes, and the
    outcome it is counted as (``unchanged``, ``superseding`` or ``new``)."""

    unit: _Unit
    earlier: Publication | None
    date: str
    supersedes: str | None
    outcome: str
    text: str = ""

    def redate(self, supersedes: str | None) -> None:
        """Publish it now instead, superseding ``supersedes``."""
        self.date = canonical_time(now())
        self.supersedes = supersedes
        self.outcome = "superseding" if supersedes else "new"
        self.text = _build(self.unit, self.date, self.supersedes)


def _plan(unit: _Unit, earlier: Publication | None, options: Options) -> _Plan:
    """What to publish for ``unit`` given its last record: unchanged since ``earlier`` (same
    digest) keeps that date and supersession (signing then gives the same URI again);
    anything else is dated now and supersedes ``earlier``. A retracted record counts as none."""
    live = earlier if earlier is not None and not earlier.retracted else None
    if live is not None and live.digest == unit.digest:
        plan = _Plan(unit, live, live.date, live.supersedes, "unchanged")
        plan.text = _build(unit, plan.date, plan.supersedes)
        return plan
    plan = _Plan(unit, live, "", None, "new")
    plan.redate(live.uri if live is not None else None)
    return plan


# ------------------------------------------------------------------------------ selecting
def _select(
    brain: LabBrain, selection: Selection
) -> tuple[list[str], list[_Node], list[_Relation]]:
    """The dataset graphs a selection is in, and the nodes and relations it publishes, in a
    stable order."""
    loaded = set(brain.index.graphs())
    if selection.graphs:
        graphs = [graph_iri(g) for g in selection.graphs]
        for graph in graphs:
            if graph not in loaded:
                raise DatasetNotFound(
                    graph, sorted(g.removeprefix(DATASET_GRAPH_PREFIX) for g in loaded)
                )
    else:
        graphs = sorted(loaded)
    kinds: dict[tuple[str, str], str] = {}
    for graph in graphs:
        for row in templates.run(brain.store, "core_kinds", graph=graph):
            if row["kind"] in KINDS:
                kinds[(graph, row["node"])] = row["kind"]
    edges = _edges(brain, graphs)
    chosen = set(kinds)
    if selection.node is not None:
        chosen = _chain(brain, selection.node, graphs, kinds, edges)
    elif selection.sparql is not None:
        chosen = _queried(brain, selection.sparql, kinds)
    by_graph: dict[str, list[str]] = defaultdict(list)
    for graph, iri in sorted(chosen):
        by_graph[graph].append(iri)
    nodes: list[_Node] = []
    for graph, iris in by_graph.items():
        refs = brain.index.nodes_by_iri(iris, graph)
        sources = _sources(brain, graph, iris)
        for iri in iris:
            ref = refs.get(iri)
            if ref is None:
                continue
            nodes.append(
                _Node(ref, kinds[(graph, iri)], brain.index.content(graph, iri), sources[iri])
            )
    published = {(n.ref.graph, n.ref.iri): n for n in nodes}
    authored = _relation_authors(brain, sorted({g for g, _ in published}))
    relations = []
    for e in edges:
        if (e.graph, e.source) not in published or (e.graph, e.destination) not in published:
            continue
        # The relation's own author and time where the source keeps them (a vault does);
        # else (a Roam export) the author of the node it starts from, and no time.
        creator, created = authored.get(
            (e.graph, e.source, e.relation, e.destination), (None, None)
        )
        author = creator or published[(e.graph, e.source)].ref.creator
        relations.append(
            _Relation(
                e.graph, e.source, e.relation, e.label, e.core, e.destination, author, created
            )
        )
    return graphs, nodes, relations


def _relation_authors(
    brain: LabBrain, graphs: list[str]
) -> dict[tuple[str, str, str, str], tuple[str | None, str | None]]:
    """(creator, created) of each relation instance of ``graphs`` that names them, by
    (graph, source, relation type, destination)."""
    found: dict[tuple[str, str, str, str], tuple[str | None, str | None]] = {}
    for graph in graphs:
        for row in templates.run(brain.store, "relation_instances", graph=graph):
            if row["creator"] or row["created"]:
                place = (graph, row["source"], row["relation"], row["destination"])
                found.setdefault(place, (row["creator"], row["created"]))
    return found


def _node_key(iri: str) -> str:
    """The ledger's key of a node."""
    return f"node {iri}"


def _relation_key(relation: _Relation) -> str:
    """The ledger's key of a relation."""
    return f"relation {relation.source} {relation.relation} {relation.destination}"


@dataclass(frozen=True)
class _Edge:
    graph: str
    source: str
    relation: str
    label: str
    core: str | None
    destination: str


@dataclass(frozen=True)
class _Relation(_Edge):
    """A published relation: the edge, with who stated it and when (where known)."""

    author: str | None
    created: str | None


def _edges(brain: LabBrain, graphs: list[str]) -> list[_Edge]:
    """Every typed relation of ``graphs`` with its type's label and core property, sorted."""
    types: dict[tuple[str, str], tuple[str, str | None]] = {}
    for row in templates.run(brain.store, "relation_types"):
        types[(row["graph"], row["relation"])] = (row["label"], row["core"])
    edges: set[_Edge] = set()
    for graph in graphs:
        for row in templates.run(brain.store, "typed_edges", graph=graph):
            label, core = types.get((graph, row["relation"]), (None, None))
            if label is None:  # an inverse relation type: its forward twin is there too
                continue
            edges.add(_Edge(graph, row["source"], row["relation"], label, core, row["destination"]))
    return sorted(edges, key=lambda e: (e.graph, e.source, e.label, e.destination))


def _chain(
    brain: LabBrain,
    uid: str,
    graphs: list[str],
    kinds: dict[tuple[str, str], str],
    edges: list[_Edge],
) -> set[tuple[str, str]]:
    """A node and its evidence chain: every node reached by typed relations that climb the
    chain (Result -> Evidence -> Claim -> Question) from it, and every node reached by
    relations that descend it."""
    found = brain.index.nodes_by_uid(uid, graphs)
    if not found:
        raise NodeNotFound(uid)
    start = found[0]
    if (start.graph, start.iri) not in kinds:
        raise InvalidArgument(
            "node",
            f"{uid} is a {start.node_type}; publish a Claim, Evidence, Question or Result",
        )
    neighbours: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        if edge.graph == start.graph:
            neighbours[edge.source].add(edge.destination)
            neighbours[edge.destination].add(edge.source)
    chosen = {(start.graph, start.iri)}
    for climbing in (True, False):
        frontier = [start.iri]
        while frontier:
            nxt = []
            for iri in frontier:
                rank = CHAIN_RANK[kinds[(start.graph, iri)]]
                for other in neighbours[iri]:
                    kind = kinds.get((start.graph, other))
                    if kind is None or (start.graph, other) in chosen:
                        continue
                    if (CHAIN_RANK[kind] > rank) == climbing and CHAIN_RANK[kind] != rank:
                        chosen.add((start.graph, other))
                        nxt.append(other)
            frontier = nxt
    return chosen


def _queried(
    brain: LabBrain, sparql: str, kinds: dict[tuple[str, str], str]
) -> set[tuple[str, str]]:
    """The published-kind nodes a SELECT binds to ``?node`` (in every dataset holding them)."""
    result = brain.query(sparql)
    variables = [v.value for v in getattr(result, "variables", [])]
    if "node" not in variables:
        raise InvalidArgument("select", "the query must be a SELECT binding ?node to nodes")
    iris = set()
    for solution in result:  # type: ignore[union-attr]
        value = solution["node"]
        if isinstance(value, NamedNode):
            iris.add(value.value)
    return {(graph, iri) for graph, iri in kinds if iri in iris}


def _sources(brain: LabBrain, graph: str, iris: list[str]) -> dict[str, tuple[str, ...]]:
    """What each node was derived from: its page, and each source it links to (by relation or
    in its text) as the DOIs written in that source, else the source's page."""
    links = brain.index.links_of(graph, iris)
    others = {link.other for rows in links.values() for link in rows}
    refs = brain.index.nodes_by_iri(others, graph)
    dois = {
        iri: source_dois(brain.index, ref) or [iri]
        for iri, ref in refs.items()
        if ref.node_type.lower() in SOURCE_TYPES
    }
    derived: dict[str, tuple[str, ...]] = {}
    for iri in iris:
        found: dict[str, None] = {iri: None}
        for link in links.get(iri, []):
            for doi in dois.get(link.other, []):
                found.setdefault(doi, None)
        derived[iri] = tuple(found)
    return derived


# ------------------------------------------------------------------------------ building
@dataclass(frozen=True)
class _Unit:
    """One nanopublication before its date, supersession and signature."""

    key: str
    graph: str
    is_node: bool
    label: str
    author: str | None  # ORCID IRI
    author_name: str | None
    created: str | None
    introduces: str | None
    assertion: tuple[tuple[NamedNode, NamedNode, NamedNode | Literal], ...]
    derived_from: tuple[str, ...]
    license: str

    @property
    def digest(self) -> str:
        """A digest of what the nanopublication says (not when it was published)."""
        lines = sorted(f"{s} {p} {o}" for s, p, o in self.assertion)
        lines += [f"author {self.author} {self.author_name}", f"created {self.created}"]
        lines += sorted(f"from {iri}" for iri in self.derived_from)
        lines.append(f"license {self.license}")
        return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _units(
    nodes: list[_Node],
    relations: list[_Relation],
    authors: dict[str, str | None],
    options: Options,
) -> Iterator[_Unit]:
    """The nanopublications of the nodes, then of the relations."""
    label = NamedNode(RDFS + "label")
    a = NamedNode(RDF + "type")
    for node in nodes:
        ref = node.ref
        subject = NamedNode(ref.iri)
        triples: list[tuple[NamedNode, NamedNode, NamedNode | Literal]] = [
            (subject, a, NamedNode(node.kind)),
            (subject, label, Literal(ref.title)),
            (subject, NamedNode(DCT + "identifier"), Literal(ref.uid)),
            (subject, NamedNode(LB + "nodeType"), Literal(ref.node_type)),
        ]
        community = COMMUNITY_CLASSES.get(node.kind)
        if community:
            triples.append((subject, a, NamedNode(community)))
        if node.content.strip():
            triples.append((subject, NamedNode(DCT + "description"), Literal(node.content)))
        yield _Unit(
            key=_node_key(ref.iri),
            graph=ref.graph,
            is_node=True,
            label=f"{ref.node_type}: {ref.title}",
            author=authors.get(ref.creator or ""),
            author_name=ref.creator,
            created=ref.created,
            introduces=ref.iri,
            assertion=tuple(triples),
            derived_from=node.derived_from,
            license=options.license,
        )
    for rel in relations:
        source, destination, prop = (
            NamedNode(rel.source),
            NamedNode(rel.destination),
            NamedNode(rel.relation),
        )
        triples = [(source, prop, destination), (prop, label, Literal(rel.label))]
        if rel.core:
            triples.append((prop, NamedNode(RDFS + "subPropertyOf"), NamedNode(rel.core)))
            stance = CITO_STANCES.get(rel.core)
            if stance:
                triples.append((source, NamedNode(stance), destination))
        yield _Unit(
            key=_relation_key(rel),
            graph=rel.graph,
            is_node=False,
            label=f"{rel.label} relation",
            author=authors.get(rel.author or ""),
            author_name=rel.author,
            created=rel.created,
            introduces=None,
            assertion=tuple(triples),
            derived_from=(rel.source,),
            license=options.license,
        )


class _Trig:
    """One nanopublication's TriG text, graph by graph."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.graphs: dict[str, list[str]] = defaultdict(list)

    @property
    def this(self) -> NamedNode:
        """The nanopublication itself (``base/``: the signer keeps the slash form)."""
        return NamedNode(self.base + "/")

    def sub(self, name: str) -> NamedNode:
        """One of its parts (``base/Head``, ``base/assertion``, ...)."""
        return NamedNode(f"{self.base}/{name}")

    def add(self, graph: str, s: NamedNode, p: str | NamedNode, o: NamedNode | Literal) -> None:
        predicate = p if isinstance(p, NamedNode) else NamedNode(p)
        self.graphs[graph].append(f"  {s} {predicate} {o} .")

    def text(self) -> str:
        """The TriG text, graph by graph."""
        blocks = [
            f"{self.sub(name)} {{\n" + "\n".join(lines) + "\n}\n"
            for name, lines in self.graphs.items()
        ]
        return "".join(blocks)


def _skeleton(base: str) -> _Trig:
    """A nanopublication's head naming its three graphs."""
    trig = _Trig(base)
    this = trig.this
    trig.add("Head", this, RDF + "type", NamedNode(NP + "Nanopublication"))
    trig.add("Head", this, NP + "hasAssertion", trig.sub("assertion"))
    trig.add("Head", this, NP + "hasProvenance", trig.sub("provenance"))
    trig.add("Head", this, NP + "hasPublicationInfo", trig.sub("pubinfo"))
    return trig


def _pubinfo(
    trig: _Trig, date: str, license_iri: str, creator: str | None, name: str | None
) -> None:
    """The publication info every nanopublication has: date, licence, creator."""
    this = trig.this
    trig.add("pubinfo", this, DCT + "created", Literal(date, datatype=_XSD_DATETIME))
    trig.add("pubinfo", this, DCT + "license", NamedNode(license_iri))
    if creator:
        trig.add("pubinfo", this, DCT + "creator", NamedNode(creator))
        if name:
            trig.add("pubinfo", NamedNode(creator), FOAF + "name", Literal(name))


def _temp_base(seed: str) -> str:
    return NP_TEMP + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]


def _sign_all(texts: list[str], options: Options) -> list[tuple[str, str]]:
    """(URI, TriG) of each built nanopublication: signed with the key, else as it is."""
    if options.key is None:
        return [(_temp_uri(text), text + "\n") for text in texts]
    return [(done.uri, done.trig + "\n") for done in sign_many(texts, options.key)]


def _temp_uri(text: str) -> str:
    """The temporary URI of an unsigned nanopublication built by :func:`_skeleton`."""
    start = text.index("<" + NP_TEMP) + 1
    return text[start : text.index("/Head>", start)] + "/"


def _build(unit: _Unit, date: str, supersedes: str | None) -> str:
    """The unsigned TriG of a unit's nanopublication published at ``date``."""
    trig = _skeleton(_temp_base(unit.key + unit.digest))
    assertion = trig.sub("assertion")
    for s, p, o in unit.assertion:
        trig.add("assertion", s, p, o)
    if unit.author:
        trig.add("provenance", assertion, PROV + "wasAttributedTo", NamedNode(unit.author))
        if unit.author_name:
            trig.add("provenance", NamedNode(unit.author), FOAF + "name", Literal(unit.author_name))
    elif unit.author_name:  # a dry run only: signing refuses authors without an ORCID
        trig.add("provenance", assertion, DCT + "creator", Literal(unit.author_name))
    if unit.created:
        trig.add(
            "provenance",
            assertion,
            PROV + "generatedAtTime",
            Literal(unit.created, datatype=_XSD_DATETIME),
        )
    for iri in unit.derived_from:
        trig.add("provenance", assertion, PROV + "wasDerivedFrom", NamedNode(iri))
    _pubinfo(trig, date, unit.license, unit.author, unit.author_name)
    this = trig.this
    trig.add("pubinfo", this, RDFS + "label", Literal(unit.label))
    if unit.introduces:
        trig.add("pubinfo", this, NPX + "introduces", NamedNode(unit.introduces))
    if supersedes:
        trig.add("pubinfo", this, NPX + "supersedes", NamedNode(supersedes))
    return trig.text()


def _signer_pubinfo(trig: _Trig, options: Options) -> None:
    """Publication info of a nanopublication the signer makes (a retraction, an index)."""
    key = options.key
    _pubinfo(
        trig,
        canonical_time(now()),
        options.license,
        key.orcid if key else None,
        key.name if key else None,
    )


def _retraction(record: Publication, options: Options) -> tuple[str, str]:
    """A nanopublication retracting ``record``'s (its node or relation is gone)."""
    signer = options.key.orcid if options.key else None
    trig = _skeleton(_temp_base("retract " + record.uri))
    who = NamedNode(signer) if signer else NamedNode(record.uri)
    trig.add("assertion", who, NPX + "retracts", NamedNode(record.uri))
    trig.add(
        "provenance",
        trig.sub("assertion"),
        PROV + "wasAttributedTo",
        NamedNode(signer) if signer else NamedNode(record.uri),
    )
    _signer_pubinfo(trig, options)
    return _sign_all([trig.text()], options)[0]


def _index(uris: list[str], title: str, options: Options) -> tuple[str, str]:
    """An index nanopublication (``npx:NanopubIndex``) including every one of ``uris``."""
    if not uris:
        raise InputError("nothing to index: the selection holds no nanopublication")
    trig = _skeleton(_temp_base("index " + " ".join(uris)))
    this = trig.this
    for uri in uris:
        trig.add("assertion", this, NPX + "includesElement", NamedNode(uri))
    signer = options.key.orcid if options.key else None
    if signer:
        trig.add("provenance", trig.sub("assertion"), PROV + "wasAttributedTo", NamedNode(signer))
    else:
        trig.add("provenance", trig.sub("assertion"), PROV + "wasDerivedFrom", NamedNode(uris[0]))
    _signer_pubinfo(trig, options)
    trig.add("pubinfo", this, RDF + "type", NamedNode(NPX + "NanopubIndex"))
    trig.add("pubinfo", this, DCT + "title", Literal(title))
    return _sign_all([trig.text()], options)[0]
