"""Incremental updates: what a new version of an export-shaped document changes in its dataset.

A watched vault changes a note or a relation at a time; loading it whole again for each one
would rewrite every node. :class:`DocumentModel` keeps, for the version of a document that was
last written to a dataset graph, what each entry contributed (its node or relation, the derived
triples and the index's link rows), and :meth:`DocumentModel.plan` works out what the next
version changes: the dataset quads to remove and add, the index rows of the nodes added,
changed or removed, the links removed and added, and the nodes and relations before and after
(for the change record). Writing that change gives the dataset graph and the index rows a
fresh load of the new version gives; the tests check exactly that after random edits.

Contributions, and what each depends on:

* a node entry: its quads (the entry alone through the JSON-LD parser, with the document's
  repaired context), its node (title, type, creator, times, content), its typing triple and
  ``textRefersToNode`` rows: on the entry and the node schemas only;
* the links a node's content makes (wikilinks by title, Roam page URLs, images): on its content
  and on which node holds each title, so when a title comes, goes or moves to another node,
  the nodes whose content names it are worked out again;
* a relation instance: its quads, and its derived triples and link row: on the entry, the
  relation definitions, and whether both its ends are nodes (worked out again when an end comes
  or goes).

Derived triples and link rows are counted (two contributions may give the same one): one is
removed from the store when its count falls to zero, added when it rises from zero.

A change the model does not follow piece by piece is planned as None, and the caller loads the
document whole: a change to the node schemas or relation definitions (the settings of a
vault), to an entry that is none of the above, to an entry without an ``@id`` (its quads would
have blank nodes), two entries with one ``@id``, or a document whose links the analysis cannot
tell exactly (see :class:`~labbrain.ingest.roam_export.ExportAnalysis`).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyoxigraph import NamedNode, Quad, RdfFormat, Triple, parse

from labbrain.index.dataset_state import DatasetState, NodeState, content_digest
from labbrain.index.links import TYPED, LinkRow
from labbrain.index.text import IndexRecord
from labbrain.index.titles import normalise_title, wikilinks
from labbrain.ingest import jsonld
from labbrain.ingest.jsonld import JsonObject, pages_base
from labbrain.ingest.roam_export import (
    NODE,
    RELATION,
    RELATION_DEF,
    SCHEMA,
    ExportAnalysis,
    Node,
    RelationDef,
    _collect_nodes,
    _derive_relations,
    _Expander,
    analyse_export,
    entry_kind,
    node_links,
)
from labbrain.store.ontology import Vocabulary


@dataclass
class _NodePart:
    """What one node entry contributes."""

    entry: JsonObject
    #: The node as the entry gives it (images: those the source reader gave).
    base: Node
    #: The node with the images its content adds: what the index holds.
    node: Node
    typing: list[Triple]
    refers: list[LinkRow]
    links: list[Triple]
    link_rows: list[LinkRow]
    #: The title keys its content looks up, and whether it names Roam page URLs.
    lookups: frozenset[str]
    urls: bool
    #: Its title as a wikilink names it (normalised).
    title_key: str

    @property
    def triples(self) -> list[Triple]:
        return self.typing + self.links

    @property
    def rows(self) -> list[LinkRow]:
        return self.refers + self.link_rows


@dataclass
class _RelationPart:
    entry: JsonObject
    ends: tuple[str, str]
    triples: list[Triple]
    rows: list[LinkRow]


@dataclass
class GraphChange:
    """What a new version of a document changes in its dataset graph and index."""

    #: Dataset-graph quads to remove and to add (no quad in both).
    remove: list[Quad]
    add: list[Quad]
    #: Index rows to write (nodes added or changed) and node IRIs to remove.
    records: list[IndexRecord]
    removed_nodes: list[str]
    links_removed: list[LinkRow]
    links_added: list[LinkRow]
    #: The nodes and typed relations the change touches, before and after.
    before: DatasetState
    after: DatasetState
    #: The dataset graph, and how many nodes it has afterwards.
    graph: str
    nodes: int
    #: The model as it is once the change is written (see :meth:`DocumentModel.commit`).
    state: _State = field(repr=False)

    @property
    def empty(self) -> bool:
        """True when nothing in the store or the index changes."""
        return not (self.remove or self.add or self.records or self.removed_nodes)

    @property
    def nodes_by_type(self) -> Counter[str]:
        """The dataset's nodes afterwards, counted by node type label."""
        return Counter(part.node.type_label for part in self.state.nodes.values())

    @property
    def counts(self) -> dict[str, int]:
        """Nodes added, edited (title, type, creator or content) and removed; relations
        added and removed."""
        before, after = self.before, self.after
        return {
            "nodesAdded": len(after.nodes.keys() - before.nodes.keys()),
            "nodesEdited": sum(
                1 for k, v in after.nodes.items() if k in before.nodes and before.nodes[k] != v
            ),
            "nodesRemoved": len(before.nodes.keys() - after.nodes.keys()),
            "relationsAdded": len(after.relations - before.relations),
            "relationsRemoved": len(before.relations - after.relations),
        }


@dataclass
class _State:
    header: list[JsonObject]
    nodes: dict[str, _NodePart]
    relations: dict[str, _RelationPart]
    titles: dict[str, str]
    #: How many contributions give each derived triple and each link row (before the
    #: change's own, below, are applied at commit).
    derived: Counter[Triple]
    rows: Counter[LinkRow]
    derived_change: Counter[Triple] = field(default_factory=Counter)
    rows_change: Counter[LinkRow] = field(default_factory=Counter)


class DocumentModel:
    """The contributions of one version of an export-shaped document to dataset graph
    ``graph`` (see the module's doc). Build it from the version just loaded; :meth:`plan` the
    next version, write the change, then :meth:`commit` it."""

    def __init__(
        self, document: JsonObject, graph: str, vocab: Vocabulary, label: str, contexts: Any
    ) -> None:
        self.graph = graph
        self.vocab = vocab
        self.label = label
        context = document["@context"]
        self._context_key = context
        self._context = json.dumps(jsonld.repair_context(context, contexts, label))
        self._expand = _Expander(pages_base(context), label)
        header = _header(document, label)
        analysis = analyse_export({"@context": context, "@graph": header or []}, label, vocab)
        self._schemas = analysis.schemas
        self._relation_defs: dict[str, RelationDef] = analysis.relation_defs
        self.usable = header is not None and analysis.links_exact
        self._state = _State(header or [], {}, {}, {}, Counter(), Counter())
        if self.usable:
            change = self.plan(document, quads=False)
            if change is None:
                self.usable = False
            else:
                self.commit(change)

    @property
    def nodes(self) -> int:
        """How many nodes the document has."""
        return len(self._state.nodes)

    def commit(self, change: GraphChange) -> None:
        """Take ``change`` (planned from this model, the last plan made) as written: the
        model is now of its version."""
        state = change.state
        _apply(state.derived, state.derived_change)
        _apply(state.rows, state.rows_change)
        state.derived_change, state.rows_change = Counter(), Counter()
        self._state = state

    # ------------------------------------------------------------------ planning
    def plan(
        self,
        document: JsonObject,
        *,
        quads: bool = True,
        rewritten: Sequence[JsonObject] | None = None,
    ) -> GraphChange | None:
        """What ``document`` (the next version) changes, or None when the change cannot be
        followed piece by piece (see the module's doc). Changes nothing here. ``quads``:
        work out the dataset quads (False when they are written otherwise, as by a load).
        ``rewritten``: the caller knows ``document`` to be the model's version with only
        these node entries made anew (the same ``@id`` each), and it is not read through.
        Raises ExportFormatError for an entry that is structurally broken."""
        if not self.usable or document.get("@context") != self._context_key:
            return None
        old = self._state
        if rewritten is not None:
            node_entries = {key: part.entry for key, part in old.nodes.items()}
            for entry in rewritten:
                if entry.get("@id") not in node_entries:
                    return None
                node_entries[entry["@id"]] = entry
            return self._plan(old, old.header, node_entries, None, quads)
        entries = document.get("@graph")
        if not isinstance(entries, list):
            return None
        header: list[JsonObject] = []
        node_entries = {}
        relation_entries: dict[str, JsonObject] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                return None
            key = entry.get("@id")
            # An entry of the last version (the same object) is of the kind it was.
            if type(key) is str and key not in node_entries and key not in relation_entries:
                known_node = old.nodes.get(key)
                if known_node is not None and known_node.entry is entry:
                    node_entries[key] = entry
                    continue
                known_relation = old.relations.get(key)
                if known_relation is not None and known_relation.entry is entry:
                    relation_entries[key] = entry
                    continue
            kind = entry_kind(entry, f"@graph[{index}]", self.label)
            if kind in (SCHEMA, RELATION_DEF):
                header.append(entry)
                continue
            if not isinstance(key, str) or kind not in (NODE, RELATION):
                return None
            held = node_entries if kind == NODE else relation_entries
            if key in node_entries or key in relation_entries:
                return None
            held[key] = entry
        if header != old.header:
            return None
        return self._plan(old, header, node_entries, relation_entries, quads)

    def _plan(
        self,
        old: _State,
        header: list[JsonObject],
        node_entries: dict[str, JsonObject],
        relation_entries: dict[str, JsonObject] | None,
        quads: bool,
    ) -> GraphChange | None:
        """The change from ``old`` to a version of these entries (``relation_entries``
        None: the relation entries of ``old``)."""
        nodes: dict[str, _NodePart] = {}
        changed_nodes: set[str] = set()
        for key, entry in node_entries.items():
            part = old.nodes.get(key)
            if part is None or (part.entry is not entry and part.entry != entry):
                made = self._node_part(entry)
                if made is None or made.base.iri != key:
                    return None  # an @id the expansion changes could name another node
                nodes[key] = made
                changed_nodes.add(key)
            else:
                nodes[key] = part
        removed_nodes = set(old.nodes) - set(nodes)
        added_nodes = set(nodes) - set(old.nodes)

        titles: dict[str, str] = {}
        for key, part in nodes.items():
            titles.setdefault(part.title_key, key)
        moved = {k for k in titles.keys() | old.titles.keys() if titles.get(k) != old.titles.get(k)}
        relink = set(changed_nodes)
        if moved:
            relink |= {key for key, part in nodes.items() if part.lookups & moved}
        if added_nodes or removed_nodes:
            relink |= {key for key, part in nodes.items() if part.urls}
        terms = _Terms()
        node_set = nodes.keys()
        for key in relink:
            part = nodes[key]
            node = dataclasses.replace(part.base)
            links, found, _ = node_links(node, terms, titles, node_set)
            nodes[key] = dataclasses.replace(part, node=node, links=links, link_rows=found)

        relations: dict[str, _RelationPart] = {}
        changed_relations: set[str] = set()
        ends_changed = added_nodes | removed_nodes
        if relation_entries is None:
            relation_entries = {key: part.entry for key, part in old.relations.items()}
            if not ends_changed:
                relation_entries = {}  # the same relations, of the same nodes
                relations = old.relations
        for key, entry in relation_entries.items():
            known = old.relations.get(key)
            if (
                known is None
                or (known.entry is not entry and known.entry != entry)
                or (
                    ends_changed
                    and (known.ends[0] in ends_changed or known.ends[1] in ends_changed)
                )
            ):
                relations[key] = self._relation_part(entry, nodes)
                changed_relations.add(key)
            else:
                relations[key] = known
        removed_relations = set(old.relations) - set(relations)

        # Counted contributions: out with the old parts, in with the new (as changes of the
        # counts, applied to the model's counts at commit).
        derived: Counter[Triple] = Counter()
        rows: Counter[LinkRow] = Counter()
        touched_nodes = relink | removed_nodes
        touched_relations = changed_relations | removed_relations
        kinds: list[tuple[dict[str, Any], dict[str, Any], set[str], set[str]]] = [
            (old.nodes, nodes, touched_nodes, changed_nodes | removed_nodes),
            (old.relations, relations, touched_relations, touched_relations),
        ]
        for before_parts, after_parts, touched, _ in kinds:
            for key in touched:
                if key in before_parts:
                    derived.subtract(before_parts[key].triples)
                    rows.subtract(before_parts[key].rows)
                if key in after_parts:
                    derived.update(after_parts[key].triples)
                    rows.update(after_parts[key].rows)
        triples_gone, triples_new = _transitions(old.derived, derived)
        rows_gone, rows_new = _transitions(old.rows, rows)

        remove = [self._quad(t) for t in triples_gone]
        add = [self._quad(t) for t in triples_new]
        if quads:
            # The entries made anew, as they were and as they are.
            changed_entries = [
                (
                    before_parts[k].entry if k in before_parts else None,
                    after_parts[k].entry if k in after_parts else None,
                )
                for before_parts, after_parts, _, changed in kinds
                for k in changed
            ]
            before_quads = set(self._entry_quads([b for b, _ in changed_entries if b is not None]))
            after_quads = set(self._entry_quads([a for _, a in changed_entries if a is not None]))
            remove += sorted(before_quads - after_quads, key=str)
            add += sorted(after_quads - before_quads, key=str)

        records = [
            nodes[key].node.index_record()
            for key in sorted(relink)
            if key not in old.nodes or old.nodes[key].node != nodes[key].node
        ]
        before = DatasetState(
            {k: _node_state(old.nodes[k].node) for k in touched_nodes if k in old.nodes},
            {(s, label, d) for s, d, kind, label in rows_gone if kind == TYPED and label},
        )
        after = DatasetState(
            {k: _node_state(nodes[k].node) for k in touched_nodes if k in nodes},
            {(s, label, d) for s, d, kind, label in rows_new if kind == TYPED and label},
        )
        return GraphChange(
            remove=remove,
            add=add,
            records=records,
            removed_nodes=sorted(removed_nodes),
            links_removed=rows_gone,
            links_added=rows_new,
            before=before,
            after=after,
            graph=self.graph,
            nodes=len(nodes),
            state=_State(header, nodes, relations, titles, old.derived, old.rows, derived, rows),
        )

    # ------------------------------------------------------------------ parts
    def _node_part(self, entry: JsonObject) -> _NodePart | None:
        one = ExportAnalysis(export_id=None, pages_base=self._expand.base, schemas=self._schemas)
        _collect_nodes(one, [(0, entry)], self._expand, self.vocab, self.label)
        if not one.links_exact or len(one.nodes) != 1:
            return None
        base = next(iter(one.nodes.values()))
        lookups = set()
        for link in wikilinks(base.content) if base.content else ():
            lookups.add(link)
            lookups.add(normalise_title(link))
        return _NodePart(
            entry=entry,
            base=base,
            node=dataclasses.replace(base),
            typing=list(one.derived),
            refers=list(one.links),
            links=[],
            link_rows=[],
            lookups=frozenset(lookups),
            urls="roamresearch.com" in base.content,
            title_key=normalise_title(base.title),
        )

    def _relation_part(self, entry: JsonObject, nodes: dict[str, _NodePart]) -> _RelationPart:
        one = ExportAnalysis(
            export_id=None, pages_base=self._expand.base, relation_defs=self._relation_defs
        )
        one.nodes = _NodeView(nodes)  # read for membership only
        one.terms = _Terms()
        _derive_relations(one, [(0, entry)], self._expand, self.label)
        ends = (
            self._expand(entry["source"], "@graph"),
            self._expand(entry["destination"], "@graph"),
        )
        return _RelationPart(entry, ends, list(one.derived), list(one.links))

    def _quad(self, triple: Triple) -> Quad:
        return Quad(triple.subject, triple.predicate, triple.object, NamedNode(self.graph))

    def _entry_quads(self, entries: list[JsonObject]) -> Iterable[Quad]:
        """The dataset quads of ``entries``, as the load of a document holding them writes."""
        if not entries:
            return []
        text = '{"@context":' + self._context + ',"@graph":' + json.dumps(entries) + "}"
        graph = NamedNode(self.graph)
        return [
            Quad(q.subject, q.predicate, q.object, graph)
            for q in parse(text.encode("utf-8"), format=RdfFormat.JSON_LD)
        ]


class _Terms(dict[str, NamedNode]):
    """IRI -> its term, made on first use."""

    def __missing__(self, iri: str) -> NamedNode:
        term = self[iri] = NamedNode(iri)
        return term


class _NodeView(dict[str, Node]):
    """The node IRIs of a plan, for a relation's ends (``in`` only)."""

    def __init__(self, nodes: dict[str, _NodePart]) -> None:
        super().__init__()
        self._nodes = nodes

    def __contains__(self, key: object) -> bool:
        return key in self._nodes


def _header(document: JsonObject, label: str) -> list[JsonObject] | None:
    """The node schemas and relation definitions of ``document``, in order (None when its
    ``@graph`` is not a list of objects)."""
    entries = document.get("@graph")
    if not isinstance(entries, list):
        return None
    header = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return None
        if entry_kind(entry, f"@graph[{index}]", label) in (SCHEMA, RELATION_DEF):
            header.append(entry)
    return header


def _transitions(counts: Counter[Any], change: Counter[Any]) -> tuple[list[Any], list[Any]]:
    """(items whose count ``change`` makes fall to zero, items it makes rise from zero)."""
    gone = [item for item, by in change.items() if by < 0 and counts[item] + by <= 0]
    new = [item for item, by in change.items() if by > 0 and counts[item] <= 0]
    return gone, new


def _apply(counts: Counter[Any], change: Counter[Any]) -> None:
    """Add ``change`` to ``counts``, dropping what falls to zero."""
    for item, by in change.items():
        if by:
            left = counts[item] + by
            if left > 0:
                counts[item] = left
            else:
                del counts[item]


def _node_state(node: Node) -> NodeState:
    return NodeState(node.title, node.type_label, node.creator, content_digest(node.content))
