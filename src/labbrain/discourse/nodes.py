"""One node: its full text, links and images (``get_node``, ``get_linked_nodes``,
``get_node_images``), from the text index and its links read model.
"""

from __future__ import annotations

from labbrain.discourse.models import (
    Direction,
    Link,
    LinkedNodesResult,
    NodeDetail,
    NodeImagesResult,
)
from labbrain.discourse.refs import node_ref
from labbrain.discourse.scope import ReadScope
from labbrain.index.links import NodeLink
from labbrain.index.text import IndexedNode
from labbrain.store import templates

MAX_LINKS = 200


def _edges(scope: ReadScope, node: IndexedNode) -> list[NodeLink]:
    """The node's typed relations and text links, both directions, as the ``node_edges``
    template answers (rows and order), from the index."""
    return scope.brain.index.links_of(node.graph, [node.iri])[node.iri]


def _links(scope: ReadScope, node: IndexedNode, direction: Direction) -> list[Link]:
    """The node's links in ``direction``, each (direction, node, relation) once, attributed:
    typed relations first, then text references."""
    rows = [e for e in _edges(scope, node) if direction in ("both", e.direction)]
    refs = scope.refs((e.other for e in rows), node.graph)
    links: list[Link] = []
    seen: set[tuple[str, str, str | None]] = set()
    for edge in rows:
        ref = refs.get(edge.other)
        key = (edge.direction, edge.other, edge.label)
        if ref is None or key in seen:
            continue
        if edge.kind == "text" and (edge.direction, edge.other, None) in seen:
            continue
        seen.add(key)
        links.append(
            Link(
                direction=edge.direction,  # type: ignore[arg-type]
                kind=edge.kind,  # type: ignore[arg-type]
                relationshipType=edge.label,
                node=ref,
            )
        )
    # typed relations first, then text references
    links.sort(key=lambda link: (link.kind != "typed", link.direction, link.node.uid))
    return links


def get_node(scope: ReadScope, uid: str, dataset: str | None = None) -> NodeDetail:
    """A node in full: markdown, attribution, typed and text links, images."""
    node, elsewhere = scope.resolve(uid, dataset)
    links = _links(scope, node, "both")
    images = _images(scope, node)
    return NodeDetail(
        **node_ref(node).model_dump(),
        modified=node.modified,
        content=scope.brain.index.content(node.graph, node.iri),
        imageUrls=images,
        imageCount=len(images),
        linkedNodes=links[:MAX_LINKS],
        linkedNodesTruncated=len(links) > MAX_LINKS,
        alsoIn=elsewhere,
    )


def get_linked_nodes(
    scope: ReadScope, uid: str, direction: Direction = "both", dataset: str | None = None
) -> LinkedNodesResult:
    """The typed relations and text references of a node, in one or both directions."""
    node, _ = scope.resolve(uid, dataset)
    links = _links(scope, node, direction)
    note = None
    if len(links) > MAX_LINKS:
        note = f"showing {MAX_LINKS} of {len(links)}; get_relationships filters by type"
    elif not links:
        note = "no linked nodes; get_node_neighborhood looks further"
    return LinkedNodesResult(
        node=node_ref(node),
        direction=direction,
        linkedNodes=links[:MAX_LINKS],
        listed=min(len(links), MAX_LINKS),
        total=len(links),
        truncated=len(links) > MAX_LINKS,
        note=note,
    )


def _images(scope: ReadScope, node: IndexedNode) -> list[str]:
    """The node's image URLs in the order its markdown shows them."""
    if not node.images:  # the index counts them: most nodes have none
        return []
    rows = templates.run(scope.brain.store, "node_images", node=node.iri, graph=node.graph)
    content = scope.brain.index.content(node.graph, node.iri)

    def position(url: str) -> tuple[int, str]:
        found = content.find(url)
        return (found if found >= 0 else len(content), url)

    return sorted((row["image"] for row in rows), key=position)


def get_node_images(scope: ReadScope, uid: str, dataset: str | None = None) -> NodeImagesResult:
    """The image URLs embedded in a node (never fetched here)."""
    node, _ = scope.resolve(uid, dataset)
    images = _images(scope, node)
    return NodeImagesResult(
        node=node_ref(node),
        imageUrls=images,
        keyImage=images[0] if images else None,
        imageCount=len(images),
        note=None if images else "this node embeds no images",
    )
