"""Understanding a Roam Discourse Graphs export: its schemas, nodes and relations.

:func:`is_discourse_export` recognises the exporter's format; :func:`analyse_export` checks
the structure entry by entry (errors name the ``@graph`` index) and derives what the raw
JSON-LD does not say: the core class of each node (from its nodeSchema, else from the
``[[XXX]]`` title prefix), the core relation of each relationDef, direct
``<source> <relationDef> <destination>`` triples for every relation instance, wikilinks,
page-URL links and image URLs. It also counts what a load summary reports, and lists the
links the index keeps for every node (:mod:`labbrain.index.links`), from the relations and
references it has just resolved, so that a load need not read them back from the store.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyoxigraph import Literal, NamedNode, Triple

from labbrain.errors import ExportFormatError
from labbrain.index.links import TEXT, TYPED, LinkRow
from labbrain.index.text import IndexRecord
from labbrain.index.titles import clean_title, normalise_title, title_abbreviation, wikilinks
from labbrain.ingest.jsonld import JsonObject, pages_base
from labbrain.rdf.namespaces import DGB, LB, OWL, PROV, RDF, RDFS, XSD
from labbrain.store.ontology import Vocabulary

_SCHEMA_TYPES = {
    "nodeSchema",
    "dgb:NodeSchema",
    DGB + "NodeSchema",
}
_RELDEF_TYPES = {
    "relationDef",
    "dgb:RelationDef",
    DGB + "RelationDef",
}
_INSTANCE_TYPES = {
    "relationInstance",
    "dgb:RelationInstance",
    DGB + "RelationInstance",
}
_EXPORTER_KINDS = _SCHEMA_TYPES | _RELDEF_TYPES | _INSTANCE_TYPES

_IMAGE_RE = re.compile(r"!\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_ROAM_URL_RE = re.compile(r"https://roamresearch\.com/#/app/[^/\s)\]]+/page/[A-Za-z0-9_-]+")
#: The local part of a page reference whose IRI the JSON-LD expansion leaves as it is.
_UID_RE = re.compile(r"[A-Za-z0-9_-]+\Z")

_A = NamedNode(RDF + "type")
_SUBCLASS = NamedNode(RDFS + "subClassOf")
#: A page node's clean title (without the ``[[XXX]] -`` prefix) is its ``rdfs:label``.
_LABEL = NamedNode(RDFS + "label")
_SUBPROPERTY = NamedNode(RDFS + "subPropertyOf")
_OWL_CLASS = NamedNode(OWL + "Class")
_OBJECT_PROPERTY = NamedNode(OWL + "ObjectProperty")
_LINKS_TO = NamedNode(LB + "linksTo")
_IMAGE = NamedNode(LB + "image")
#: An entry key a source reader may give a node's resolved image IRIs under (written to the
#: store by the JSON-LD engine itself): counted with the node's markdown images.
_IMAGE_KEY = LB + "image"


def is_export_context(context: Any) -> bool:
    """True when ``context`` is a Roam Discourse Graphs exporter context (any variant)."""
    return isinstance(context, dict) and ("nodeSchema" in context or "relationInstance" in context)


def is_discourse_export(document: Any) -> bool:
    """True when ``document`` has the shape the Roam Discourse Graphs exporter writes: an
    exporter ``@context`` (defining its ``nodeSchema`` / ``relationInstance`` terms) and a
    ``@graph`` list. Other JSON-LD, even with dg types, is plain RDF."""
    return (
        isinstance(document, dict)
        and is_export_context(document.get("@context"))
        and isinstance(document.get("@graph"), list)
    )


@dataclass
class RelationDef:
    """A relationDef entry: its label and, when it maps to one, the core relation.
    ``labelled`` is False when the entry has no label at all (its ``label`` is then "", and
    the store has no ``rdfs:label`` for it)."""

    iri: str
    label: str
    core: str | None
    labelled: bool = True


@dataclass
class Node:
    """A page node of the export."""

    iri: str
    title: str
    type_label: str
    creator: str | None
    content: str
    created: str | None
    modified: str | None
    images: int = 0

    def index_record(self) -> IndexRecord:
        """The text-index record of this node (the same one a re-index builds from the store)."""
        return IndexRecord(
            iri=self.iri,
            title=self.title,
            content=self.content,
            node_type=self.type_label,
            creator=self.creator,
            created=self.created,
            modified=self.modified,
            images=self.images,
        )


@dataclass(frozen=True)
class Duplicate:
    """A node whose ``@id`` more than one ``@graph`` entry gives: one entry is loaded (the one
    modified last; on equal or missing dates, the later one in ``@graph``), the others not."""

    iri: str
    #: The ``@graph`` index of every entry with this ``@id``, in file order.
    positions: tuple[int, ...]
    #: The index of the entry loaded.
    kept: int
    #: The entries left out, as the export gives them (the bulk write takes every entry; the
    #: triples only these give are taken back out before the load commits).
    dropped: tuple[JsonObject, ...] = ()
    #: The entry loaded.
    entry: JsonObject | None = None

    @property
    def uid(self) -> str:
        """The node's uid (the last part of its IRI)."""
        return self.iri.rsplit("/", 1)[-1]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (uid, entries, kept)."""
        return {
            "uid": self.uid,
            "entries": [f"@graph[{i}]" for i in self.positions],
            "kept": f"@graph[{self.kept}]",
        }


@dataclass
class ExportAnalysis:
    """What ingest and the load summary need to know about one export."""

    export_id: str | None
    pages_base: str | None
    schemas: dict[str, str] = field(default_factory=dict)  # schema IRI -> label
    relation_defs: dict[str, RelationDef] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    relations: Counter[str] = field(default_factory=Counter)  # label -> instances
    creators: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    derived: list[Triple] = field(default_factory=list)
    terms: dict[str, NamedNode] = field(default_factory=dict)  # node IRI -> its term
    #: The links of the export as the ``index_links`` template reads them from the loaded
    #: graph (repeats possible). Exact only when ``links_exact``: an export shaped in a way
    #: this analysis does not follow link by link (a reference that is not ``pages:uid`` or
    #: ``page:uid``, references on an entry that is not a page, a relationDef given twice, a
    #: context of its own for ``page`` or an imported one) has its links read from the store
    #: after the load instead.
    links: list[LinkRow] = field(default_factory=list)
    links_exact: bool = True
    #: Nodes given by more than one entry, each loaded from one (:class:`Duplicate`).
    duplicates: list[Duplicate] = field(default_factory=list)

    @property
    def nodes_by_type(self) -> Counter[str]:
        """Page nodes counted by node type label."""
        return Counter(node.type_label for node in self.nodes.values())


class _Expander:
    """Expands the exporter's compact IRIs (``pages:uid``, ``page:uid``) to page URLs."""

    def __init__(self, base: str | None, label: str) -> None:
        self.base = base
        self.label = label

    def __call__(self, value: Any, position: str) -> str:
        if self.base is not None and type(value) is str and value.startswith("pages:"):
            return self.base + value[6:]  # the common case, kept fast
        if not isinstance(value, str) or not value:
            raise ExportFormatError(
                self.label, f"expected a page reference, got {value!r}", position
            )
        prefix, sep, local = value.partition(":")
        if sep and prefix in ("pages", "page"):
            if self.base is None:
                raise ExportFormatError(
                    self.label, "the @context defines no 'pages' prefix", position
                )
            return self.base + local
        if sep and (local.startswith("//") or prefix in ("urn", "http", "https")):
            return value
        raise ExportFormatError(self.label, f"cannot resolve reference {value!r}", position)


def _text(entry: JsonObject, key: str, position: str, label: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ExportFormatError(
            label, f"'{key}' must be a string, got {type(value).__name__}", position
        )
    return value


def _references(entry: JsonObject, key: str, position: str, label: str) -> list[Any]:
    """The page references under ``key`` (one or a list), checked to be strings."""
    value = entry.get(key, [])
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str):
            raise ExportFormatError(label, f"'{key}' must hold page references", position)
    return values


#: What an entry of an export's ``@graph`` is (:func:`entry_kind`).
SCHEMA, RELATION_DEF, RELATION, NODE, OTHER = "schema", "relation def", "relation", "node", "other"


def entry_kind(entry: JsonObject, position: str, label: str) -> str:
    """What ``entry`` is: a node schema, a relation definition, a relation instance, a page
    node, or other. Raises ExportFormatError when its ``@type`` is not a string or strings."""
    declared = entry.get("@type")
    if type(declared) is str:  # the exporter writes one type (kept fast)
        kind = declared if declared in _EXPORTER_KINDS else None
    else:
        # JSON-LD allows a list: classify by any of them.
        types = declared if isinstance(declared, list) else [declared]
        if not all(isinstance(t, str) or t is None for t in types):
            raise ExportFormatError(label, "'@type' must be a string or strings", position)
        kind = next((t for t in types if t in _EXPORTER_KINDS), None)
    if kind in _SCHEMA_TYPES and "title" not in entry:
        return SCHEMA
    if kind in _RELDEF_TYPES:
        return RELATION_DEF
    if kind in _INSTANCE_TYPES:
        return RELATION
    if "title" in entry or kind in _SCHEMA_TYPES:
        return NODE
    return OTHER


def analyse_export(document: JsonObject, label: str, vocab: Vocabulary) -> ExportAnalysis:
    """Check and understand a discourse-graph export (see the module docstring).

    Raises ExportFormatError, naming ``@graph[i]``, for entries that are structurally broken.
    Softer problems (dangling relation ends, unknown node types, nodes without creator) are
    collected in ``warnings``; the caller decides whether they are fatal.
    """
    context = document["@context"]
    entries = document["@graph"]
    export_id = document.get("@id") if isinstance(document.get("@id"), str) else None
    result = ExportAnalysis(export_id=export_id, pages_base=pages_base(context))
    expand = _Expander(result.pages_base, label)

    pending_nodes: list[tuple[int, JsonObject]] = []
    pending_instances: list[tuple[int, JsonObject]] = []
    for index, entry in enumerate(entries):
        position = f"@graph[{index}]"
        if not isinstance(entry, dict):
            raise ExportFormatError(label, "expected an object", position)
        if "@context" in entry:
            raise ExportFormatError(
                label, "nested @context is not part of the export format", position
            )
        kind = entry_kind(entry, position, label)
        if kind == SCHEMA:
            iri = expand(entry.get("@id"), position)
            result.schemas[iri] = _text(entry, "label", position, label) or iri.rsplit("/", 1)[-1]
        elif kind == RELATION_DEF:
            iri = expand(entry.get("@id"), position)
            given_label = _text(entry, "label", position, label)
            rel_label = given_label or ""
            if entry.get("inverseOf") is not None:
                expand(entry["inverseOf"], position)  # must be a page reference
            if iri in result.relation_defs:
                result.links_exact = False  # the store holds every label given to it
            result.relation_defs[iri] = RelationDef(
                iri=iri,
                label=rel_label,
                core=vocab.relation_by_label(rel_label) if rel_label else None,
                labelled=given_label is not None,
            )
        elif kind == RELATION:
            pending_instances.append((index, entry))
        elif kind == NODE:
            pending_nodes.append((index, entry))
            continue
        if "textRefersToNode" in entry:
            result.links_exact = False  # references of an entry that is not a page node

    if _irregular_links(context, result.pages_base):
        result.links_exact = False
    generated = document.get("prov:generatedAtTime")
    if export_id and isinstance(generated, str):
        with contextlib.suppress(ValueError):
            result.derived.append(
                Triple(
                    NamedNode(export_id),
                    NamedNode(PROV + "generatedAtTime"),
                    Literal(generated, datatype=NamedNode(XSD + "dateTime")),
                )
            )
    _derive_schema_triples(result, vocab)
    pending_nodes = _one_entry_per_node(result, pending_nodes, expand)
    _collect_nodes(result, pending_nodes, expand, vocab, label)
    _derive_links(result)
    _derive_relations(result, pending_instances, expand, label)
    missing_creator = sum(1 for node in result.nodes.values() if not node.creator)
    if missing_creator:
        result.warnings.append(f"{missing_creator} node(s) have no creator")
    return result


#: How many duplicated nodes a load's warning names (the report lists them all).
_DUPLICATES_NAMED = 10


def _one_entry_per_node(
    result: ExportAnalysis, pending: list[tuple[int, JsonObject]], expand: _Expander
) -> list[tuple[int, JsonObject]]:
    """The node entries to load: one per ``@id``. Of the entries sharing one, the one changed
    last is kept (its ``modified`` date, else its ``created`` date; an entry with neither,
    or an unreadable one, ranks first); entries with equal dates rank by their place in
    ``@graph``, the later one winning (as a later write would). The others are recorded in
    ``result.duplicates`` and named in a warning."""
    by_iri: dict[str, list[tuple[int, JsonObject]]] = {}
    for index, entry in pending:
        iri = expand(entry.get("@id"), f"@graph[{index}]")
        by_iri.setdefault(iri, []).append((index, entry))
    if len(by_iri) == len(pending):
        return pending
    kept: list[tuple[int, JsonObject]] = []
    for iri, entries in by_iri.items():
        if len(entries) == 1:
            kept.append(entries[0])
            continue
        winner = max(entries, key=lambda item: (_changed_at(item[1]), item[0]))
        kept.append(winner)
        result.duplicates.append(
            Duplicate(
                iri=iri,
                positions=tuple(index for index, _ in entries),
                kept=winner[0],
                dropped=tuple(entry for index, entry in entries if index != winner[0]),
                entry=winner[1],
            )
        )
    kept.sort(key=lambda item: item[0])
    named = ", ".join(
        f"{d.uid} ({', '.join(f'@graph[{i}]' for i in d.positions)}: kept @graph[{d.kept}])"
        for d in result.duplicates[:_DUPLICATES_NAMED]
    )
    more = len(result.duplicates) - _DUPLICATES_NAMED
    result.warnings.append(
        f"{len(result.duplicates)} node(s) appear more than once in @graph, each loaded from "
        "one entry (the one modified last; on equal dates the later in the file): "
        + named
        + (f" and {more} more" if more > 0 else "")
    )
    return kept


def _changed_at(entry: JsonObject) -> float:
    """When the entry last changed, as a POSIX timestamp: its ``modified`` date, else its
    ``created`` date; -inf when it has neither or it is unreadable."""
    value = entry.get("modified") or entry.get("created")
    if not isinstance(value, str):
        return float("-inf")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return float("-inf")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _derive_schema_triples(result: ExportAnalysis, vocab: Vocabulary) -> None:
    for iri, schema_label in result.schemas.items():
        schema = NamedNode(iri)
        result.derived.append(Triple(schema, _A, _OWL_CLASS))
        kind = vocab.node_kind_by_label(schema_label)
        if kind is not None:
            result.derived.append(Triple(schema, _SUBCLASS, NamedNode(kind.iri)))
    for rel in result.relation_defs.values():
        prop = NamedNode(rel.iri)
        result.derived.append(Triple(prop, _A, _OBJECT_PROPERTY))
        if rel.core is not None:
            result.derived.append(Triple(prop, _SUBPROPERTY, NamedNode(rel.core)))


def _collect_nodes(
    result: ExportAnalysis,
    pending: list[tuple[int, JsonObject]],
    expand: _Expander,
    vocab: Vocabulary,
    label: str,
) -> None:
    """Fill ``result.nodes`` (with their NamedNode in ``result.terms``) and type them."""
    unknown_schemas: Counter[str] = Counter()
    typed_from_title = untyped = 0
    schema_kinds = {iri: vocab.node_kind_by_label(name) for iri, name in result.schemas.items()}
    for index, entry in pending:
        position = f"@graph[{index}]"
        iri = expand(entry.get("@id"), position)
        title = _text(entry, "title", position, label) or ""
        creator = _text(entry, "creator", position, label)
        content = _text(entry, "content", position, label) or ""
        created = _text(entry, "created", position, label)
        modified = _text(entry, "modified", position, label)
        for key in ("backlinks", "backlink"):
            _references(entry, key, position, label)
        for reference in _references(entry, "textRefersToNode", position, label):
            target = _page_iri(reference, result.pages_base)
            if target is None:
                result.links_exact = False
            else:
                result.links.append((iri, target, TEXT, None))
        declared = _node_schema_reference(entry.get("@type"), result, expand, position)
        schema_iri = expand(declared, position) if declared is not None else None
        kind = None
        if schema_iri is not None and schema_iri in result.schemas:
            type_label = result.schemas[schema_iri]
            kind = schema_kinds[schema_iri]
        else:
            if schema_iri is not None:
                unknown_schemas[str(declared)] += 1
            abbreviation = title_abbreviation(title)
            if abbreviation:
                kind = vocab.node_kind_by_abbreviation(abbreviation)
            elif title.startswith("@"):
                kind = vocab.node_kind_by_abbreviation("SRC")
            if kind is not None:
                typed_from_title += 1
                type_label = kind.label
            else:
                untyped += 1
                type_label = "Untyped"
        term = result.terms[iri] = NamedNode(iri)
        if kind is not None:
            result.derived.append(Triple(term, _A, NamedNode(kind.iri)))
        shown = clean_title(title)
        if shown:  # the title as people read it, beside the source's own dct:title
            result.derived.append(Triple(term, _LABEL, Literal(shown)))
        result.nodes[iri] = Node(iri, title, type_label, creator, content, created, modified)
        given = entry.get(_IMAGE_KEY)  # images a source reader resolved (a vault's embeds)
        if isinstance(given, list):
            result.nodes[iri].images = len(given)
        if creator:
            result.creators[creator] += 1
    for schema, count in sorted(unknown_schemas.items()):
        result.warnings.append(f"unknown node schema {schema} on {count} node(s)")
    if typed_from_title:
        result.warnings.append(
            f"{typed_from_title} node(s) have no known node type; typed from their title prefix"
        )
    if untyped:
        result.warnings.append(f"{untyped} node(s) have no known node type and stay untyped")


def _node_schema_reference(
    declared: Any, result: ExportAnalysis, expand: _Expander, position: str
) -> str | None:
    """The ``@type`` value naming the node's schema: the first that is a known nodeSchema,
    else the first compact IRI (an unknown schema), else None (e.g. "nodeSchema")."""
    candidates = declared if isinstance(declared, list) else [declared]
    references = [t for t in candidates if isinstance(t, str) and ":" in t]
    for reference in references:
        if expand(reference, position) in result.schemas:
            return reference
    return references[0] if references else None


def _derive_links(result: ExportAnalysis) -> None:
    """Wikilinks by title and Roam page URLs to nodes of the export, and image URLs."""
    titles = title_targets(result.nodes.values())
    bad_images = 0
    for node in result.nodes.values():
        triples, rows, bad = node_links(node, result.terms, titles, result.nodes)
        result.derived.extend(triples)
        result.links.extend(rows)
        bad_images += bad
    if bad_images:
        result.warnings.append(f"{bad_images} image link(s) are not valid URLs and were skipped")


def title_targets(nodes: Iterable[Node]) -> dict[str, str]:
    """The node a wikilink names, by normalised title (the first node of a title wins)."""
    titles: dict[str, str] = {}
    for node in nodes:
        titles.setdefault(normalise_title(node.title), node.iri)
    return titles


def node_links(
    node: Node, terms: dict[str, NamedNode], titles: dict[str, str], nodes: Container[str]
) -> tuple[list[Triple], list[LinkRow], int]:
    """What ``node``'s content links to (``titles``: see :func:`title_targets`; ``nodes``:
    the export's node IRIs): the derived link and image triples, the text-link rows, and how
    many image links are not valid URLs. Sets ``node.images`` to the images found (plus
    those a source reader gave)."""
    content = node.content
    if not content:
        return [], [], 0
    subject = terms[node.iri]
    targets: set[str] = set()
    for link in wikilinks(content):
        target = titles.get(link) or titles.get(normalise_title(link))
        if target is not None:
            targets.add(target)
    if "roamresearch.com" in content:
        targets.update(url for url in _ROAM_URL_RE.findall(content) if url in nodes)
    targets.discard(node.iri)
    triples = [Triple(subject, _LINKS_TO, terms[t]) for t in sorted(targets)]
    rows: list[LinkRow] = [(node.iri, target, TEXT, None) for target in targets]
    bad_images = 0
    if "![" in content:
        for url in dict.fromkeys(_IMAGE_RE.findall(content)):
            try:
                image = NamedNode(url)
            except ValueError:
                bad_images += 1
                continue
            triples.append(Triple(subject, _IMAGE, image))
            node.images += 1
    return triples, rows, bad_images


def _derive_relations(
    result: ExportAnalysis,
    pending: list[tuple[int, JsonObject]],
    expand: _Expander,
    label: str,
) -> None:
    dangling = unknown_predicate = 0
    seen: set[tuple[str, str, str]] = set()
    terms: dict[str, NamedNode] = {}  # relation and core predicate IRI -> its term

    def named(iri: str) -> NamedNode:
        term = terms.get(iri)
        if term is None:
            term = terms[iri] = NamedNode(iri)
        return term

    for index, entry in pending:
        position = f"@graph[{index}]"
        for key in ("predicate", "source", "destination"):
            if key not in entry:
                raise ExportFormatError(label, f"relation instance has no '{key}'", position)
        predicate = expand(entry["predicate"], position)
        source = expand(entry["source"], position)
        destination = expand(entry["destination"], position)
        rel = result.relation_defs.get(predicate)
        if rel is None:
            unknown_predicate += 1
            continue
        if source not in result.nodes or destination not in result.nodes:
            dangling += 1
            continue
        result.relations[rel.label] += 1
        key3 = (source, predicate, destination)
        if key3 in seen:
            continue
        seen.add(key3)
        subject, obj = result.terms[source], result.terms[destination]
        result.derived.append(Triple(subject, named(predicate), obj))
        if rel.labelled:
            result.links.append((source, destination, TYPED, rel.label))
        if rel.core is not None:
            result.derived.append(Triple(subject, named(rel.core), obj))
    if dangling:
        result.warnings.append(
            f"{dangling} relation instance(s) have a dangling end (a node not in the export); "
            "kept as reified statements only"
        )
    if unknown_predicate:
        result.warnings.append(
            f"{unknown_predicate} relation instance(s) use a predicate with no relationDef"
        )


def _page_iri(reference: str, base: str | None) -> str | None:
    """The IRI the JSON-LD expansion gives a ``pages:uid`` / ``page:uid`` reference (the
    repaired context maps both prefixes to the export's page base), or None for a reference
    of any other shape, whose expansion this analysis does not repeat."""
    prefix, sep, local = reference.partition(":")
    if base is None or not sep or prefix not in ("pages", "page") or not _UID_RE.match(local):
        return None
    return base + local


def _irregular_links(context: Any, base: str | None) -> bool:
    """True when the export's context may make the loaded graph's links differ from those
    the analysis lists: an imported context, or a ``page`` prefix of its own (the repair
    keeps it, so ``page:uid`` would not be a page of this export)."""
    if not isinstance(context, dict) or "@import" in context:
        return True
    page = context.get("page")
    if isinstance(page, dict):
        page = page.get("@id")
    return page is not None and page != base
