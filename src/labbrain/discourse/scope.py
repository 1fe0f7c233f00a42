"""What every discourse question starts from: :class:`ReadScope`, one opened store read.

It names things as a tool's arguments name them (a dataset by slug, a node by uid, a node type
by label or code) and finds them in the text index, which holds one row per node (identity and
attribution) and every node's links (its read model of the ``node_edges`` template, see
:mod:`labbrain.index.links`); and it keeps the answers over all loaded datasets that only a
load changes, by the state of the datasets they were computed at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from labbrain.core import LabBrain
from labbrain.discourse.models import NodeRef
from labbrain.discourse.refs import node_ref, slug
from labbrain.errors import InvalidArgument, NodeNotFound
from labbrain.index.links import NodeLink
from labbrain.index.search_query import dataset_graphs, node_type_labels
from labbrain.index.text import IndexedNode

#: The most entries a list answer holds unless a tool says otherwise.
MAX_LIST = 100

Answer = TypeVar("Answer", bound=BaseModel)
Value = TypeVar("Value")
#: The state of the loaded datasets: (graph, load id) of each, sorted.
Version = tuple[tuple[str, str], ...]


class ReadScope:
    """The discourse graphs of one opened store, as the questions about them read it."""

    def __init__(self, brain: LabBrain) -> None:
        self.brain = brain
        #: Values computed over all loaded datasets, by name, with the state they were
        #: computed at (one state each: a load replaces them).
        self._memos: dict[str, tuple[Version, Any]] = {}

    # ------------------------------------------------------------------ resolving
    def datasets(self, dataset: str | None = None) -> list[str] | None:
        """The dataset graphs to look in: all (None) or the one named (slug or IRI), as the
        index holds them (DatasetNotFound lists them)."""
        if dataset is None or dataset == "":
            return None
        return dataset_graphs(self.brain.index, [dataset])

    def resolve(self, uid: str, dataset: str | None = None) -> tuple[IndexedNode, list[str]]:
        """The node with this uid (and the other datasets that also hold one)."""
        if not uid or not uid.strip():
            raise InvalidArgument("uid", "give the uid of a node (search_nodes finds uids)")
        found = self.brain.index.nodes_by_uid(uid.strip(), self.datasets(dataset))
        if not found:
            raise NodeNotFound(uid)
        return found[0], [slug(n.graph) for n in found[1:]]

    def node_types_matching(self, node_type: str | None) -> list[str] | None:
        """Type labels (lower case) a ``nodeType`` filter selects: a label or a [[XXX]]
        code, any case (see :func:`~labbrain.index.search_query.node_type_labels`)."""
        return node_type_labels(self.brain.index, node_type)

    def refs(self, iris: Iterable[str], graph: str) -> dict[str, NodeRef]:
        """The attributed references of the nodes of ``graph`` among ``iris``, by IRI."""
        return {
            iri: node_ref(node) for iri, node in self.brain.index.nodes_by_iri(iris, graph).items()
        }

    def edges_of(self, graph: str, frontier: list[IndexedNode]) -> dict[str, list[NodeLink]]:
        """The typed relations and text links, both directions, of every node of
        ``frontier`` (all in ``graph``), by IRI, as the ``node_edges`` template answers (rows
        and order): one index lookup."""
        return self.brain.index.links_of(graph, (node.iri for node in frontier))

    # ------------------------------------------------------------------ per load
    def version(self) -> Version:
        """The state of the loaded datasets: answers derived from all of them are cached by it."""
        return tuple(sorted((d["graph"], d["loadId"]) for d in self.brain.datasets()))

    def memo(self, name: str, build: Callable[[], Value]) -> Value:
        """``build()``'s value, computed once per state of the loaded datasets (see
        :meth:`version`) and shared by every caller (who must not change it)."""
        version = self.version()
        cached = self._memos.get(name)
        if cached is None or cached[0] != version:
            cached = self._memos[name] = (version, build())
        return cast(Value, cached[1])

    def per_version(self, name: str, build: Callable[[], Answer]) -> Answer:
        """``build()``'s answer, computed once per state of the loaded datasets (see
        :meth:`memo`); each caller gets its own deep copy, free to change it."""
        return self.memo(name, build).model_copy(deep=True)
