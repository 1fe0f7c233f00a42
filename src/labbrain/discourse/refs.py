"""How the discourse answers name nodes: attributed references, cited forms, compact relations.

Every answer names its nodes with :class:`~labbrain.discourse.models.NodeRef` (uid, dataset,
type, title, creator, created, url) built from the index's row of the node (:func:`node_ref`),
or a subclass of it built the same way (:func:`search_result`); an answer that names its one
dataset cites them without it (:func:`cited`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from labbrain.discourse.models import CitedNode, NodeRef, SearchResult
from labbrain.index.text import IndexedNode, SearchHit
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX


def slug(graph: str) -> str:
    """The dataset slug of a dataset graph IRI."""
    return graph.removeprefix(DATASET_GRAPH_PREFIX)


def _attribution(node: IndexedNode) -> dict[str, Any]:
    """The fields that cite an indexed node (uid, dataset, type, title, creator, created,
    url), as every attributed answer entry names them."""
    return {
        "uid": node.uid,
        "dataset": slug(node.graph),
        "nodeType": node.node_type,
        "title": node.title,
        "creator": node.creator,
        "created": node.created,
        "url": node.iri,
    }


def node_ref(node: IndexedNode) -> NodeRef:
    """The attributed reference of an indexed node."""
    return NodeRef(**_attribution(node))


def search_result(hit: SearchHit) -> SearchResult:
    """The answer's entry for a search hit: the node attributed, its snippet and score."""
    node = hit.node
    return SearchResult(
        **_attribution(node),
        modified=node.modified,
        snippet=hit.snippet,
        imageCount=node.images,
        score=hit.score,
    )


def cited(ref: CitedNode) -> CitedNode:
    """``ref`` as a concise answer that names its dataset once cites it: every field of it
    (uid, type, title, creator, created, url, and those of a subclass) but the dataset, as a
    plain :class:`CitedNode`."""
    return CitedNode(**ref.model_dump(include=set(CitedNode.model_fields) - {"dataset"}))


def compact_relation(source: str, label: str | None, destination: str) -> str:
    """A relation (or, with no label, a text link) as one string: ``source -Label->
    destination``, ``source -(text)-> destination`` (uids)."""
    return f"{source} -{label if label is not None else '(text)'}-> {destination}"


def one_dataset(refs: Iterable[CitedNode]) -> str | None:
    """The dataset of all ``refs`` if they share exactly one, else None."""
    datasets = {ref.dataset for ref in refs}
    return datasets.pop() if len(datasets) == 1 else None
