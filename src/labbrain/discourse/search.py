"""Node search: the ``search_nodes`` answer over :meth:`~labbrain.core.LabBrain.search`."""

from __future__ import annotations

from labbrain.discourse.models import SearchNodesResult
from labbrain.discourse.refs import search_result
from labbrain.discourse.scope import ReadScope
from labbrain.errors import InvalidArgument
from labbrain.index.search_query import SearchQuery


def search_nodes(scope: ReadScope, query: SearchQuery) -> SearchNodesResult:
    """Search over titles and content, filtered and ordered: keyword (BM25), semantic
    (embeddings) or hybrid (both fused); without a mode, hybrid when vectors exist, else
    keyword (see :mod:`labbrain.index.hybrid`)."""
    if not query.text.strip():
        raise InvalidArgument("query", "give one or more words to search for")
    found = scope.brain.search(query.resolved(scope.brain.index))
    results = [search_result(hit) for hit in found.hits]
    limit = query.limit
    note = None
    if len(results) == limit:
        note = f"showing the first {limit}; raise limit (up to 100) or add filters for more"
    elif not results:
        note = "no match; try other words, or get_schema for node types and datasets"
    if found.note:
        note = f"{found.note}; {note}" if note else found.note
    return SearchNodesResult(results=results, listed=len(results), mode=found.mode, note=note)
