"""The discourse-graph questions an assistant asks, answered from the store and its index.

:class:`DiscourseReader` is the library side of the MCP tools: search, node details, links,
schema, contributions, relationships, neighbourhoods, paths, claim status and gaps. It is one
object over one opened store (:class:`~labbrain.discourse.scope.ReadScope`: how a tool's
arguments name datasets, nodes and node types, and the answers kept until a load), and each
question is answered by the module of its kind:

- :mod:`~labbrain.discourse.search`: ``search_nodes``;
- :mod:`~labbrain.discourse.nodes`: one node, its links and images;
- :mod:`~labbrain.discourse.schema`: node types, relation types, datasets;
- :mod:`~labbrain.discourse.contributions`: who contributed what;
- :mod:`~labbrain.discourse.relationships`: typed relations, filtered;
- :mod:`~labbrain.discourse.walks`: neighbourhoods and paths;
- :mod:`~labbrain.discourse.claims`: a claim's support and opposition;
- :mod:`~labbrain.discourse.gaps`: what the lab's reasoning lacks.

Relations come from SPARQL templates (``queries/*.rq``); node identity and attribution (uid,
type, title, creator, dates) come from the text index, which holds one row per node, and so
do a node's links (its read model of the ``node_edges`` template, asked for a whole
breadth-first frontier at once; see :mod:`labbrain.index.links`). Every answer names its nodes
with :class:`~labbrain.discourse.models.NodeRef`, attribution included
(:func:`~labbrain.discourse.refs.node_ref`), and every list is capped with a note saying how to
get more.
"""

from __future__ import annotations

from labbrain.discourse import (
    claims,
    contributions,
    gaps,
    nodes,
    relationships,
    schema,
    search,
    walks,
)
from labbrain.discourse.refs import node_ref
from labbrain.discourse.scope import ReadScope

__all__ = ["DiscourseReader", "node_ref"]


class DiscourseReader(ReadScope):
    """Read-side questions over the discourse graphs of one opened store: the resolving and
    caches of :class:`~labbrain.discourse.scope.ReadScope`, and each question's function (a
    function of the scope) as a method."""

    search_nodes = search.search_nodes

    get_node = nodes.get_node
    get_linked_nodes = nodes.get_linked_nodes
    get_node_images = nodes.get_node_images

    relation_types = schema.relation_types
    get_schema = schema.get_schema
    get_relation_types = schema.get_relation_types

    get_researcher_contributions = contributions.get_researcher_contributions
    get_relationships = relationships.get_relationships

    get_node_neighborhood = walks.get_node_neighborhood
    find_path = walks.find_path

    get_claim_status = claims.get_claim_status
    find_gaps = gaps.find_gaps
