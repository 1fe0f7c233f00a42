"""Reading a TriG file of nanopublications as a discourse graph.

:func:`read_nanopubs` splits a TriG file into its nanopublications by their heads (the graph
typing a URI ``np:Nanopublication`` and naming its ``np:hasAssertion``, ``np:hasProvenance``
and ``np:hasPublicationInfo`` graphs), asks nanopub-sign whether each one's trusty hash and
signature hold (:func:`labbrain.rdf.nanopub.check`), and gives what the verified ones (and,
when asked, the others) say in the shape of a Roam export (node schemas, relation definitions,
page nodes, relation instances), as the vault reader does: the load then runs the same
analysis, derived triples and indexes as for an export, and every tool answers for them.

What is read from an assertion (``docs/publishing.md`` says it for users):

- a **node**: a subject typed with a core discourse class (``dg:Claim``, ``dg:Evidence``,
  ``dg:Question``, ``lb:Result``, ... as the ontology has them), a Knowledge Pixels class
  (``kpxl:Claim``, ``kpxl:Evidence``, ``kpxl:Question``), an AIDA sentence
  (``hycl:AIDA-Sentence``, a Claim) or given an ``lb:nodeType``. Its title is its
  ``rdfs:label`` (or ``dct:title``; an AIDA sentence's text otherwise), its content its
  ``dct:description``, its creator the author's ``foaf:name`` (else the ORCID iD IRI), its
  created date the assertion's ``prov:generatedAtTime`` (else the nanopublication's date);
- a **relation**: ``<source> <p> <destination>`` where the assertion gives ``<p>`` an
  ``rdfs:label`` or an ``rdfs:subPropertyOf`` (``<p>`` becomes a relation definition);
- a **stance**: ``<x> <stance> <target>`` with a CiTO (or dg) stance property: support is
  ``cito:supports``, ``cito:agreesWith``, ``cito:confirms``, ``dg:supports``; dispute is
  ``cito:disputes``, ``cito:disagreesWith``, ``cito:refutes``, ``cito:critiques``,
  ``dg:opposes``. Each is kept as an ``lb:Stance`` record (subject, target, property,
  nanopublication, author, date, verified), whatever ``<x>`` and the target are (a node of a
  lab dataset, a paper, a person), with the stance triple itself; a stance between two nodes
  of the file that the assertion gives no typed relation for is also a relation (Supports or
  Opposes), so that the claim's status in this dataset shows it.

Nodes, relations and stances carry labbrain's own terms for what an export cannot say: the
nanopublication they came from (``lb:fromNanopub``), the author's and the signer's ORCID iDs
(``lb:author``, ``lb:signer``) and whether the signature was verified (``lb:verified``).

Refused with :class:`~labbrain.errors.ExportFormatError`, so that nothing is stored: a head
naming a graph the file does not hold (or none, or two, of a part), two nanopublications
claiming one graph, quads in no nanopublication's graphs, a node title longer than
:data:`MAX_TITLE_CHARS`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, RdfFormat, serialize

from labbrain.errors import ExportFormatError, InputError
from labbrain.ingest.jsonld import EXPORT_CONTEXT, JsonInput, document_input, parse_rdf
from labbrain.rdf import nanopub as signatures
from labbrain.rdf.namespaces import (
    CITO,
    DCT,
    DG,
    FOAF,
    LB,
    NP,
    NPX,
    PROV,
    RDF,
    RDFS,
    SCHEMA,
)
from labbrain.store.ontology import vocabulary

#: The format name of a TriG file of nanopublications (``labbrain load --format nanopub``).
NANOPUB = "nanopub"
#: What a load report calls such a file.
NANOPUB_KIND = "nanopublications (TriG)"
#: The longest node title accepted (in characters): a longer one refuses the file.
MAX_TITLE_CHARS = 10_000
#: Nanopublications a problem names one by one (the rest are counted).
MAX_LISTED = 10

HYCL = "http://purl.org/petapico/o/hycl#"
#: Where an AIDA sentence's IRI keeps its text (URL-encoded).
AIDA_PREFIX = "http://purl.org/aida/"

#: Stance properties by the stance they count as.
SUPPORTING = frozenset({CITO + "supports", CITO + "agreesWith", CITO + "confirms", DG + "supports"})
DISPUTING = frozenset(
    {
        CITO + "disputes",
        CITO + "disagreesWith",
        CITO + "refutes",
        CITO + "critiques",
        DG + "opposes",
    }
)
#: The node classes of other vocabularies, by the node type they stand for.
OTHER_NODE_CLASSES = {
    **{other: core.rsplit("#", 1)[1] for core, other in signatures.COMMUNITY_CLASSES.items()},
    HYCL + "AIDA-Sentence": "Claim",
}
#: IRIs minted here: node schemas by type label, relation definitions for stances between
#: nodes, relation instances and stance records (by a digest of what they say).
TYPE_PREFIX = "urn:labbrain:nanopub:type/"
STANCE_RELATION_PREFIX = "urn:labbrain:nanopub:relation/"
RELATION_PREFIX = "urn:labbrain:nanopub:relation-instance/"
STANCE_PREFIX = "urn:labbrain:nanopub:stance/"

_NANOPUBLICATION = NP + "Nanopublication"
_PARTS = {
    NP + "hasAssertion": "assertion",
    NP + "hasProvenance": "provenance",
    NP + "hasPublicationInfo": "pubinfo",
}
_TYPE = RDF + "type"
Term = NamedNode | BlankNode | Literal


@dataclass
class Nanopub:
    """One nanopublication of the file: its URI, its four graphs and their quads."""

    uri: str
    head: str
    assertion: str
    provenance: str
    pubinfo: str
    quads: list[Quad] = field(default_factory=list)

    def trig(self) -> str:
        """Its quads as TriG text (what nanopub-sign checks: the hash is over normalised
        quads, so the serialisation does not matter)."""
        return (serialize(self.quads, format=RdfFormat.TRIG) or b"").decode("utf-8")

    def graph(self, part: str) -> list[Quad]:
        """The quads of one of its graphs (``head``, ``assertion``, ``provenance``,
        ``pubinfo``)."""
        name = getattr(self, part)
        return [q for q in self.quads if _graph_name(q) == name]


@dataclass
class NanopubRead:
    """A TriG file of nanopublications read as an export-shaped document, with what was
    found wrong in it (``problems``: the load report's warnings, which ``--strict`` refuses)
    and what else the report says (``notices``)."""

    document: dict[str, Any]
    digest: str
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: Nanopublications in the file, loaded, loaded although not verified, left out.
    nanopubs: int = 0
    loaded: int = 0
    unverified: int = 0
    refused: int = 0
    #: Stance records by stance ("supports", "disputes").
    stances: Counter[str] = field(default_factory=Counter)

    def json_input(self, label: str) -> JsonInput:
        """The document as a decoded JSON input (its bytes and the span of its ``@graph``),
        for a load to take as it is."""
        return document_input(self.document, label)


# ------------------------------------------------------------------------------ recognising
def may_hold_nanopubs(data: bytes) -> bool:
    """False when ``data`` cannot be a file of nanopublications (it never names the
    nanopublication schema): a cheap test before parsing."""
    return NP.encode("ascii") in data


def head_quads(quads: Iterable[Quad]) -> list[Quad]:
    """The quads ``?np a np:Nanopublication`` in a named graph (a head), in file order."""
    return [
        q
        for q in quads
        if q.predicate.value == _TYPE
        and isinstance(q.object, NamedNode)
        and q.object.value == _NANOPUBLICATION
        and not isinstance(q.graph_name, DefaultGraph)
    ]


def parse_trig(data: bytes, label: str) -> list[Quad]:
    """The quads of a TriG file; ExportFormatError (with the parser's message) when it is
    not TriG."""
    return list(parse_rdf(data, RdfFormat.TRIG, label))


def is_nanopub_file(quads: Iterable[Quad]) -> bool:
    """True when the quads hold at least one nanopublication head."""
    return bool(head_quads(quads))


# ------------------------------------------------------------------------------ splitting
def _graph_name(quad: Quad) -> str | None:
    graph = quad.graph_name
    if isinstance(graph, DefaultGraph):
        return None
    return str(graph) if isinstance(graph, BlankNode) else graph.value


def _shown(name: str) -> str:
    return name if name.startswith("_:") else f"<{name}>"


def split_nanopubs(quads: Sequence[Quad], label: str) -> list[Nanopub]:
    """The file's nanopublications, in the order of their heads, each with the quads of its
    four graphs.

    Raises ExportFormatError (naming the nanopublication and what is wrong, so that nothing
    is loaded) when a head names no graph, or more than one, for a part, or a graph the file
    does not hold; when two nanopublications (or two parts of one) claim the same graph; and
    when quads lie outside every nanopublication's graphs (the default graph included)."""
    by_graph: dict[str | None, list[Quad]] = {}
    for quad in quads:
        by_graph.setdefault(_graph_name(quad), []).append(quad)
    heads = head_quads(quads)
    if not heads:
        raise ExportFormatError(
            label,
            "holds no nanopublication (no `?np a np:Nanopublication` in a head graph); "
            "load it with --format trig to load it as plain RDF",
        )
    claimed: dict[str, tuple[str, str]] = {}

    def claim(graph: str, uri: str, part: str) -> None:
        holder = claimed.get(graph)
        if holder is not None:
            raise ExportFormatError(
                label,
                f"nanopublication <{uri}>: its {part} graph {_shown(graph)} is also the "
                f"{holder[1]} graph of <{holder[0]}>; each graph belongs to one "
                "nanopublication",
            )
        claimed[graph] = (uri, part)

    found: list[Nanopub] = []
    for quad in heads:
        uri = quad.subject.value if isinstance(quad.subject, NamedNode) else str(quad.subject)
        head = _graph_name(quad)
        assert head is not None
        claim(head, uri, "head")
        parts: dict[str, list[str]] = {part: [] for part in _PARTS.values()}
        for item in by_graph.get(head, []):
            part = _PARTS.get(item.predicate.value)
            if part is not None and item.subject == quad.subject:
                target = item.object
                if not isinstance(target, NamedNode | BlankNode):
                    raise ExportFormatError(
                        label,
                        f"nanopublication <{uri}>: its head gives its {part} graph as the "
                        f"term {target}; it must name a graph",
                    )
                parts[part].append(str(target) if isinstance(target, BlankNode) else target.value)
        named: dict[str, str] = {}
        for part, graphs in parts.items():
            if not graphs:
                raise ExportFormatError(
                    label,
                    f"nanopublication <{uri}>: its head {_shown(head)} names no {part} graph; "
                    "a nanopublication has a head, an assertion, a provenance and a pubinfo "
                    "graph",
                )
            if len(set(graphs)) > 1:
                raise ExportFormatError(
                    label,
                    f"nanopublication <{uri}>: its head names {len(set(graphs))} {part} "
                    f"graphs ({', '.join(_shown(g) for g in sorted(set(graphs)))}); it may "
                    "name one",
                )
            graph = graphs[0]
            if graph not in by_graph:
                raise ExportFormatError(
                    label,
                    f"nanopublication <{uri}>: its head names the {part} graph "
                    f"{_shown(graph)}, which the file does not hold (or holds empty); the "
                    "file must hold every graph of each nanopublication",
                )
            claim(graph, uri, part)
            named[part] = graph
        found.append(
            Nanopub(
                uri=uri,
                head=head,
                assertion=named["assertion"],
                provenance=named["provenance"],
                pubinfo=named["pubinfo"],
                quads=[
                    q
                    for graph in (head, named["assertion"], named["provenance"], named["pubinfo"])
                    for q in by_graph[graph]
                ],
            )
        )
    stray = [(g, len(q)) for g, q in by_graph.items() if g is None or g not in claimed]
    if stray:
        listed = ", ".join(
            f"{'the default graph' if g is None else _shown(g)} ({n} quads)"
            for g, n in stray[:MAX_LISTED]
        )
        more = f" and {len(stray) - MAX_LISTED} more" if len(stray) > MAX_LISTED else ""
        raise ExportFormatError(
            label,
            f"quads in no nanopublication's graphs: {listed}{more}; a file of "
            "nanopublications holds only their head, assertion, provenance and pubinfo graphs",
        )
    return found


# ------------------------------------------------------------------------------ reading
#: Checks nanopublications' signatures (TriG text of one each): labbrain.rdf.nanopub.check.
Checker = Callable[[Sequence[str]], list[signatures.Checked]]


def read_nanopubs(
    data: bytes,
    label: str,
    *,
    allow_unverified: bool = False,
    quads: Sequence[Quad] | None = None,
    checker: Checker | None = None,
) -> NanopubRead:
    """Read a TriG file of nanopublications (see the module's doc).

    Every nanopublication's trusty hash and signature are checked; one that is unsigned or
    fails the check is named in ``problems`` with the reason and left out, unless
    ``allow_unverified``: then it is loaded, its nodes, relations and stances marked
    ``lb:verified false``. Raises ExportFormatError for a file that is not TriG, holds no
    nanopublication, or is broken as the module's doc says (nothing is loaded). ``quads``:
    the file's quads when they were parsed already."""
    if quads is None:
        quads = parse_trig(data, label)
    nanopubs = split_nanopubs(quads, label)
    check = checker or signatures.check
    try:
        verdicts = check([np.trig() for np in nanopubs])
    except InputError as error:
        reason = str(error.args[-1]) if error.args else str(error)
        raise ExportFormatError(label, f"the signatures could not be checked: {reason}") from None
    read = NanopubRead(document={}, digest=hashlib.sha256(data).hexdigest())
    read.nanopubs = len(nanopubs)
    accepted: list[tuple[Nanopub, bool]] = []
    failed: list[tuple[str, str]] = []
    for nanopub, verdict in zip(nanopubs, verdicts, strict=True):
        verified = verdict.signed and verdict.valid
        if not verified:
            failed.append((nanopub.uri, _why(verdict)))
            if not allow_unverified:
                continue
        accepted.append((nanopub, verified))
    if failed:
        listed = "; ".join(f"<{uri}>: {why}" for uri, why in failed[:MAX_LISTED])
        more = f"; and {len(failed) - MAX_LISTED} more" if len(failed) > MAX_LISTED else ""
        what = (
            "loaded, marked lb:verified false"
            if allow_unverified
            else "not loaded; load them with --allow-unverified"
        )
        read.problems.append(
            f"{len(failed)} nanopublication(s) not verified ({what}): {listed}{more}"
        )
        if allow_unverified:
            read.unverified = len(failed)
        else:
            read.refused = len(failed)
    read.loaded = len(accepted)
    read.document = _Document(label).build(accepted, read)
    read.notices.append(
        f"{read.loaded} of {read.nanopubs} nanopublication(s) loaded; "
        f"{read.stances['supports']} supporting and {read.stances['disputes']} disputing "
        "stance(s) kept"
    )
    return read


def _why(verdict: signatures.Checked) -> str:
    """Why a nanopublication is not verified, in words."""
    if not verdict.valid:
        return verdict.reason or "nanopub-sign refused it"
    return "unsigned (no signature and trusty URI)"


@dataclass
class _About:
    """Who and when, as one nanopublication says it."""

    nanopub: str
    verified: bool
    author: str | None
    name: str | None
    signer: str | None
    date: str | None
    generated: str | None
    derived_from: list[str]

    def marks(self) -> dict[str, Any]:
        """The lb: terms every entry from this nanopublication carries."""
        marks: dict[str, Any] = {
            LB + "fromNanopub": {"@id": self.nanopub},
            LB + "verified": self.verified,
        }
        if self.author:
            marks[LB + "author"] = {"@id": self.author}
        if self.signer:
            marks[LB + "signer"] = {"@id": self.signer}
        return marks

    @property
    def creator(self) -> str | None:
        return self.name or self.author


def _about(nanopub: Nanopub, verified: bool) -> _About:
    """The author, signer, names and dates a nanopublication's provenance and pubinfo give."""
    meta = nanopub.graph("provenance") + nanopub.graph("pubinfo")

    def values(subject: str, predicate: str, quads: list[Quad]) -> list[Term]:
        return [
            q.object  # type: ignore[misc]
            for q in quads
            if _value(q.subject) == subject and q.predicate.value == predicate
        ]

    def first_iri(subject: str, predicate: str, quads: list[Quad]) -> str | None:
        return next(
            (o.value for o in values(subject, predicate, quads) if isinstance(o, NamedNode)), None
        )

    def first_text(subject: str, predicate: str, quads: list[Quad]) -> str | None:
        return next(
            (o.value for o in values(subject, predicate, quads) if isinstance(o, Literal)), None
        )

    provenance, pubinfo = nanopub.graph("provenance"), nanopub.graph("pubinfo")
    author = first_iri(nanopub.assertion, PROV + "wasAttributedTo", provenance) or first_iri(
        nanopub.uri, DCT + "creator", pubinfo
    )
    signer = next(
        (
            q.object.value
            for q in pubinfo
            if q.predicate.value == NPX + "signedBy" and isinstance(q.object, NamedNode)
        ),
        None,
    ) or first_iri(nanopub.uri, DCT + "creator", pubinfo)
    author = author or signer
    name = None
    if author:
        for predicate in (FOAF + "name", SCHEMA + "name", RDFS + "label"):
            name = first_text(author, predicate, meta)
            if name:
                break
    return _About(
        nanopub=nanopub.uri,
        verified=verified,
        author=author,
        name=name,
        signer=signer,
        date=first_text(nanopub.uri, DCT + "created", pubinfo),
        generated=first_text(nanopub.assertion, PROV + "generatedAtTime", provenance),
        derived_from=[
            o.value
            for o in values(nanopub.assertion, PROV + "wasDerivedFrom", provenance)
            if isinstance(o, NamedNode)
        ],
    )


def _value(term: Any) -> str:
    return str(term) if isinstance(term, BlankNode) else term.value


_UNRESOLVABLE = "an IRI that is not http(s), urn or scheme:// (skipped)"


def _resolvable(iri: str) -> bool:
    """True for an IRI the export analysis takes as a node reference as it is."""
    scheme, sep, rest = iri.partition(":")
    return bool(sep) and (scheme in ("http", "https", "urn") or rest.startswith("//"))


class _Document:
    """Builds the export-shaped document of the accepted nanopublications."""

    def __init__(self, label: str) -> None:
        self.label = label
        vocab = vocabulary()
        self.kinds = {iri: kind.label for iri, kind in vocab.node_kinds.items()}
        self.relation_labels = dict(vocab.relations)
        self.nodes: dict[str, tuple[tuple[str, int], dict[str, Any]]] = {}
        self.types: set[str] = set()
        self.relation_defs: dict[str, dict[str, Any]] = {}
        self.relations: dict[str, dict[str, Any]] = {}
        self.stances: dict[str, dict[str, Any]] = {}
        self.stance_triples: dict[tuple[str, str], set[str]] = {}
        self.replaced = 0
        self.skipped: Counter[str] = Counter()

    def build(self, accepted: list[tuple[Nanopub, bool]], read: NanopubRead) -> dict[str, Any]:
        """The document (``read`` gets the stance counts and the notices)."""
        abouts = [(nanopub, _about(nanopub, verified)) for nanopub, verified in accepted]
        for order, (nanopub, about) in enumerate(abouts):
            self._nodes(nanopub, about, order)
        for nanopub, about in abouts:
            self._relations_and_stances(nanopub, about)
        for entry in self.stances.values():
            read.stances[entry[LB + "stance"]] += 1
        if self.replaced:
            read.notices.append(
                f"{self.replaced} node(s) given by more than one nanopublication, each loaded "
                "from the latest"
            )
        for what, count in sorted(self.skipped.items()):
            read.problems.append(f"{count} {what}")
        graph: list[dict[str, Any]] = [
            {"@id": TYPE_PREFIX + quote(label, safe=""), "@type": "nodeSchema", "label": label}
            for label in sorted(self.types)
        ]
        graph += self.relation_defs.values()
        graph += [entry for _, entry in self.nodes.values()]
        graph += self.relations.values()
        graph += self.stances.values()
        graph += [
            {"@id": subject, predicate: [{"@id": t} for t in sorted(targets)]}
            for (subject, predicate), targets in self.stance_triples.items()
        ]
        return {"@context": dict(EXPORT_CONTEXT), "@graph": graph}

    # -------------------------------------------------------------------- nodes
    def _node_type(self, subject: str, assertion: list[Quad]) -> str | None:
        declared = next(
            (
                q.object.value
                for q in assertion
                if _value(q.subject) == subject
                and q.predicate.value == LB + "nodeType"
                and isinstance(q.object, Literal)
                and q.object.value.strip()
            ),
            None,
        )
        if declared:
            return declared.strip()
        classes = [
            q.object.value
            for q in assertion
            if _value(q.subject) == subject
            and q.predicate.value == _TYPE
            and isinstance(q.object, NamedNode)
        ]
        for iri in classes:
            if iri in self.kinds:
                return self.kinds[iri]
        return next((OTHER_NODE_CLASSES[iri] for iri in classes if iri in OTHER_NODE_CLASSES), None)

    def _nodes(self, nanopub: Nanopub, about: _About, order: int) -> None:
        assertion = nanopub.graph("assertion")
        subjects = dict.fromkeys(
            q.subject.value for q in assertion if isinstance(q.subject, NamedNode)
        )
        for iri in subjects:
            type_label = self._node_type(iri, assertion)
            if type_label is None:
                continue
            if not _resolvable(iri):
                self.skipped["node(s) with " + _UNRESOLVABLE] += 1
                continue
            texts = {
                q.predicate.value: q.object.value
                for q in reversed(assertion)
                if _value(q.subject) == iri and isinstance(q.object, Literal)
            }
            title = texts.get(RDFS + "label") or texts.get(DCT + "title")
            if title is None and iri.startswith(AIDA_PREFIX):
                title = unquote(iri.removeprefix(AIDA_PREFIX)).rstrip("/")
            if not title:
                self.skipped["node(s) without an rdfs:label or dct:title (skipped)"] += 1
                continue
            if len(title) > MAX_TITLE_CHARS:
                raise ExportFormatError(
                    self.label,
                    f"nanopublication <{nanopub.uri}>: the title of <{iri}> is {len(title):,} "
                    f"characters long; titles are limited to {MAX_TITLE_CHARS:,} characters",
                )
            entry: dict[str, Any] = {
                "@id": iri,
                "@type": TYPE_PREFIX + quote(type_label, safe=""),
                "title": title,
                "content": texts.get(DCT + "description", ""),
            }
            if about.creator:
                entry["creator"] = about.creator
            created = about.generated or about.date
            if created:
                entry["created"] = created
            if about.date or created:
                entry["modified"] = about.date or created
            entry.update(about.marks())
            identifier = texts.get(DCT + "identifier")
            if identifier:
                entry[DCT + "identifier"] = identifier
            if about.derived_from:
                entry[PROV + "wasDerivedFrom"] = [{"@id": s} for s in about.derived_from]
            rank = (about.date or "", order)
            held = self.nodes.get(iri)
            if held is not None:
                self.replaced += 1
                if held[0] > rank:
                    continue
            self.nodes[iri] = (rank, entry)
            self.types.add(type_label)

    # -------------------------------------------------------------------- relations
    def _relations_and_stances(self, nanopub: Nanopub, about: _About) -> None:
        assertion = nanopub.graph("assertion")
        labels: dict[str, str] = {}
        for q in assertion:
            if not isinstance(q.subject, NamedNode):
                continue
            if q.predicate.value == RDFS + "label" and isinstance(q.object, Literal):
                labels.setdefault(q.subject.value, q.object.value)
            elif q.predicate.value == RDFS + "subPropertyOf" and isinstance(q.object, NamedNode):
                core = self.relation_labels.get(q.object.value)
                if core:
                    labels.setdefault(q.subject.value, core)
        typed: set[tuple[str, str]] = set()
        for q in assertion:
            predicate = q.predicate.value
            if predicate in SUPPORTING or predicate in DISPUTING or predicate not in labels:
                continue
            if not isinstance(q.subject, NamedNode) or not isinstance(q.object, NamedNode):
                continue
            self._relation(predicate, labels[predicate], q.subject.value, q.object.value, about)
            typed.add((q.subject.value, q.object.value))
        for q in assertion:
            predicate = q.predicate.value
            if predicate not in SUPPORTING and predicate not in DISPUTING:
                continue
            if not isinstance(q.subject, NamedNode) or not isinstance(q.object, NamedNode):
                self.skipped["stance(s) with a blank node end (skipped)"] += 1
                continue
            subject, target = q.subject.value, q.object.value
            stance = "supports" if predicate in SUPPORTING else "disputes"
            self._stance(subject, predicate, target, stance, about)
            if (subject, target) not in typed and subject in self.nodes and target in self.nodes:
                label = "Supports" if stance == "supports" else "Opposes"
                definition = STANCE_RELATION_PREFIX + label.lower()
                self._relation(definition, label, subject, target, about)

    def _relation(
        self, definition: str, label: str, source: str, destination: str, about: _About
    ) -> None:
        if not _resolvable(definition) or not _resolvable(source) or not _resolvable(destination):
            self.skipped["relation(s) with " + _UNRESOLVABLE] += 1
            return
        self.relation_defs.setdefault(
            definition, {"@id": definition, "@type": "relationDef", "label": label}
        )
        iri = RELATION_PREFIX + _digest(about.nanopub, source, definition, destination)
        entry: dict[str, Any] = {
            "@id": iri,
            "@type": "relationInstance",
            "predicate": definition,
            "source": source,
            "destination": destination,
        }
        if about.creator:
            entry["creator"] = about.creator
        if about.date:
            entry["created"] = about.date
        entry.update(about.marks())
        self.relations[iri] = entry

    def _stance(
        self, subject: str, predicate: str, target: str, stance: str, about: _About
    ) -> None:
        iri = STANCE_PREFIX + _digest(about.nanopub, subject, predicate, target)
        entry: dict[str, Any] = {
            "@id": iri,
            "@type": LB + "Stance",
            LB + "stance": stance,
            LB + "stanceSubject": {"@id": subject},
            LB + "stanceTarget": {"@id": target},
            LB + "stanceProperty": {"@id": predicate},
        }
        if about.creator:
            entry["creator"] = about.creator
        if about.date:
            entry["created"] = about.date
        entry.update(about.marks())
        self.stances[iri] = entry
        self.stance_triples.setdefault((subject, predicate), set()).add(target)


def _digest(*parts: str) -> str:
    """A short stable name for what ``parts`` say."""
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:24]
