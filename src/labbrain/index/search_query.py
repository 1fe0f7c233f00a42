"""One node search as a value (:class:`SearchQuery`), and what its filters name in the index.

An adapter (the ``search_nodes`` tool, ``labbrain search``) builds one :class:`SearchQuery` from
its arguments and hands it down: :meth:`~labbrain.discourse.reader.DiscourseReader.search_nodes`
resolves what a person wrote once (:meth:`SearchQuery.resolved`: a dataset slug checked among
the graphs the index holds, a ``[[XXX]]`` code turned into its type label) and passes the result
through :meth:`~labbrain.core.LabBrain.search` to :func:`labbrain.index.hybrid.search`, which
filters by it as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from labbrain.errors import DatasetNotFound, InvalidArgument
from labbrain.index.text import TextIndex
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX, dataset_graph
from labbrain.store.ontology import vocabulary


@dataclass(frozen=True)
class SearchQuery:
    """A node search: its words, mode, size, filters and order.

    ``mode`` is ``keyword``, ``semantic``, ``hybrid`` or None (see
    :func:`labbrain.index.hybrid.default_mode`); ``graphs`` the dataset graph IRIs to search
    (None: every one); ``node_types`` the node type labels (any case; None: every one);
    ``creator`` one creator, exactly; ``order_by`` is ``relevance`` (best first, whatever
    ``descending`` says), ``created``, ``modified`` or ``title``. As an adapter builds it,
    ``graphs`` may hold dataset slugs and ``node_types`` ``[[XXX]]`` codes: :meth:`resolved`
    turns them into IRIs and labels. Lists (or one string) given as ``graphs`` or
    ``node_types`` are kept as tuples, an empty creator as None."""

    text: str
    mode: str | None = None
    limit: int = 10
    graphs: tuple[str, ...] | None = None
    node_types: tuple[str, ...] | None = None
    creator: str | None = None
    order_by: str = "relevance"
    descending: bool = True

    def __post_init__(self) -> None:
        for name in ("graphs", "node_types"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
            elif value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if not self.creator:
            object.__setattr__(self, "creator", None)

    def resolved(self, index: TextIndex) -> SearchQuery:
        """This query with its datasets as the dataset graphs the index holds
        (:func:`dataset_graphs`: DatasetNotFound for one it does not) and its node types as
        the labels they select (:func:`node_types_labels`: InvalidArgument for an unknown
        one), in that order."""
        graphs = dataset_graphs(index, self.graphs)
        labels = node_types_labels(index, self.node_types)
        return replace(
            self,
            graphs=tuple(graphs) if graphs is not None else None,
            node_types=tuple(labels) if labels is not None else None,
        )


def dataset_graphs(index: TextIndex, names: Iterable[str] | None) -> list[str] | None:
    """The dataset graphs ``names`` name (each a slug or a dataset graph IRI), or None (every
    dataset) for None. Raises DatasetNotFound, listing the datasets the index holds, for a
    name that is none of them."""
    if names is None:
        return None
    known = index.graphs()
    chosen = []
    for name in names:
        graph = name if name.startswith(DATASET_GRAPH_PREFIX) else dataset_graph(name)
        if graph not in known:
            raise DatasetNotFound(name, [g.removeprefix(DATASET_GRAPH_PREFIX) for g in known])
        chosen.append(graph)
    return chosen


def node_type_labels(index: TextIndex, node_type: str | None) -> list[str] | None:
    """Type labels (lower case) a node type filter selects: a label or a [[XXX]] code, any
    case; None for none. Raises InvalidArgument listing the loaded types when neither the
    loaded datasets nor the ontology know the type (a known type with no node here selects
    nothing)."""
    if not node_type or not node_type.strip():
        return None
    wanted = node_type.strip()
    kind = vocabulary().node_kind_by_abbreviation(wanted)
    labels = {wanted.lower()}
    if kind is not None:
        labels.add(kind.label.lower())
    known = kind is not None or vocabulary().node_kind_by_label(wanted) is not None
    if not known and not index.has_node_type(labels):
        loaded = sorted({label for _, label, _ in index.type_counts()})
        raise InvalidArgument(
            "nodeType",
            f"unknown node type {wanted!r}; node types: {', '.join(loaded) or 'none loaded'}",
        )
    return sorted(labels)


def node_types_labels(index: TextIndex, node_types: Iterable[str] | None) -> list[str] | None:
    """The type labels (lower case, sorted) that any of ``node_types`` selects
    (:func:`node_type_labels`), or None when none is given."""
    if node_types is None:
        return None
    labels: set[str] = set()
    for node_type in node_types:
        labels.update(node_type_labels(index, node_type) or ())
    return sorted(labels) if labels else None
