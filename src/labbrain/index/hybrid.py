"""Node search in three modes: keyword (BM25), semantic (vectors) and hybrid (both, fused).

- **keyword**: the text index's BM25 search (:meth:`~labbrain.index.text.TextIndex.search`);
- **semantic**: the query's embedding against the vector index (:mod:`labbrain.index.vectors`):
  finds paraphrases that share no word with the query;
- **hybrid**: weighted reciprocal-rank fusion of the two rankings (each list's top
  :data:`DEPTH`; a node scores ``sum(weight / (RRF_K + rank))`` over the lists it is in, with
  weight 1 for keyword and :data:`SEMANTIC_WEIGHT` for semantic), then graph-aware
  re-ranking (:func:`link_rerank`): a node linked to one of the best :data:`LINK_DEPTH` fused
  hits gains :data:`LINK_WEIGHT` times that hit's score. In a discourse graph the evidence of
  a claim, the claim of a result and the question a claim answers are linked, so a node whose
  own words miss the query rises when its neighbour matched.

The fusion constants are measured, not guessed, and chosen on one part of an evaluation set
and reported on another (``bench/tune_fusion.py``, ``bench/results/fusion.md``): on the tune
split of the paraphrase questions shipped with labbrain, among the fusions that keep the real
corpus' claim → evidence retrieval as good as before, k=2 with the semantic list at three
quarters weight and the link re-ranking at half weight over the best 5 found an expected node
in the top 10 for 0.74 of the questions where the previous fusion (k=10, no re-ranking) found
0.49 (report split: 0.72 against 0.40; without the re-ranking 0.62). Run
``labbrain eval-retrieval`` on your own graph to see which mode to trust there.

Without a mode, hybrid is used when the vector index holds vectors of the configured model for
the datasets searched, keyword otherwise. Filters (datasets, node types, creator) apply in every
mode. Orders other than relevance sort the best ``limit`` results of semantic and hybrid
searches (in keyword mode they sort every match, as before).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from labbrain.errors import InvalidArgument, SemanticUnavailable
from labbrain.index.embeddings import (
    INSTALL_HINT,
    configured_model_id,
    provider_for,
    require_semantic,
    semantic_installed,
)
from labbrain.index.search_query import SearchQuery
from labbrain.index.text import SearchHit, TextIndex
from labbrain.index.vectors import Key, VectorIndex, node_text, nodes_of, one_line
from labbrain.settings import Settings

Mode = Literal["keyword", "semantic", "hybrid"]
MODES: tuple[str, ...] = get_args(Mode)
RRF_K = 2
SEMANTIC_WEIGHT = 0.75
LINK_WEIGHT = 0.5
LINK_DEPTH = 5
DEPTH = 50
SNIPPET_CHARS = 200
_MARKUP = re.compile(r"\[\[|\]\]|\*\*|#{1,6} |(?:^|(?<=\s))[-*] |\w+::")
EMBED_HINT = "run `labbrain embed` (or the embed_nodes tool) to compute them"


@dataclass(frozen=True)
class ModeSearch:
    """Search hits (best first, or in the requested order), the mode that produced them and
    a note when the mode was not the one a caller might expect."""

    mode: Mode
    hits: list[SearchHit]
    note: str | None = None


def default_mode(
    vectors: VectorIndex, settings: Settings, graphs: Iterable[str] | None = None
) -> tuple[Mode, str | None]:
    """The mode used when none is asked for: hybrid when usable vectors exist for ``graphs``,
    else keyword (with a note when vectors exist but cannot be used)."""
    chosen = list(graphs) if graphs is not None else None
    if not vectors.has_any(chosen):
        return "keyword", None
    if not semantic_installed():
        return "keyword", f"keyword search only: vectors exist but {INSTALL_HINT}"
    try:
        model = configured_model_id(settings)
    except SemanticUnavailable as error:
        return "keyword", f"keyword search only: {error.reason}"
    if vectors.model != model:
        return "keyword", (
            f"keyword search only: the vectors were computed with {vectors.model}, not the "
            f"configured {model}; {EMBED_HINT}"
        )
    return "hybrid", None


def search(
    index: TextIndex, vectors: VectorIndex, settings: Settings, query: SearchQuery
) -> ModeSearch:
    """Search nodes as ``query`` asks: in its mode (None: see :func:`default_mode`), filtered
    (its graphs as dataset graph IRIs, its node types as labels: see
    :meth:`SearchQuery.resolved <labbrain.index.search_query.SearchQuery.resolved>`), at most
    its limit.

    Raises InvalidArgument for an unknown mode and SemanticUnavailable (saying how to fix it)
    when a semantic or hybrid search lacks the extra, the model or the vectors."""
    chosen = list(query.graphs) if query.graphs is not None else None
    kinds = list(query.node_types) if query.node_types is not None else None
    creator, limit = query.creator, query.limit
    note = None
    if query.mode is None:
        resolved, note = default_mode(vectors, settings, chosen)
    elif query.mode in MODES:
        resolved = query.mode  # type: ignore[assignment]
    else:
        raise InvalidArgument("mode", f"{query.mode!r}; one of {', '.join(MODES)}")
    if resolved == "keyword":
        hits = index.search(
            query.text,
            limit=limit,
            graphs=chosen,
            node_type=kinds,
            creator=creator,
            order_by=query.order_by,
            descending=query.descending,
        )
        return ModeSearch("keyword", hits, note)
    depth = max(limit, DEPTH) if resolved == "hybrid" else limit
    semantic = semantic_hits(
        index,
        vectors,
        settings,
        query.text,
        limit=depth,
        graphs=chosen,
        node_types=kinds,
        creator=creator,
    )
    if resolved == "semantic":
        hits = semantic
    else:
        keyword = index.search(
            query.text, limit=depth, graphs=chosen, node_type=kinds, creator=creator
        )
        fused = fuse([(keyword, 1.0), (semantic, SEMANTIC_WEIGHT)])
        linked = links_among(index, fused, fused[:LINK_DEPTH])
        hits = link_rerank(fused, linked)[:limit]
    return ModeSearch(resolved, _ordered(hits[:limit], query.order_by, query.descending), note)


def semantic_hits(
    index: TextIndex,
    vectors: VectorIndex,
    settings: Settings,
    text: str,
    *,
    limit: int,
    graphs: list[str] | None = None,
    node_types: list[str] | None = None,
    creator: str | None = None,
) -> list[SearchHit]:
    """The ``limit`` nodes closest in meaning to ``text`` (cosine similarity as score, the
    start of the node's text as snippet). Raises SemanticUnavailable when the extra, the
    model or the vectors are missing."""
    require_semantic()
    provider = provider_for(settings)
    if not vectors.usable(provider.model_id, graphs):
        where = "these datasets" if graphs else "the loaded datasets"
        if vectors.has_any(graphs) and vectors.model != provider.model_id:
            reason = (
                f"the vectors of {where} were computed with {vectors.model}, "
                f"not {provider.model_id}"
            )
        else:
            reason = f"no vectors for {where} yet"
        raise SemanticUnavailable(f"{reason}; {EMBED_HINT}")
    allowed = None
    if node_types or creator:
        nodes, _ = index.nodes(
            graphs=graphs,
            node_types=node_types,
            creator=creator,
            limit=max(index.count(), 1),
        )
        allowed = {(node.graph, node.iri) for node in nodes}
    query = provider.embed([one_line(text)])[0]
    # Over-fetch a little: vectors of nodes dropped since the last embed resolve to nothing.
    found = vectors.search(query, limit=limit + 10, graphs=graphs, allowed=allowed)
    hits = []
    for node, score in nodes_of(index, found)[:limit]:
        body = _MARKUP.sub(" ", node_text("", index.content(node.graph, node.iri)))
        body = " ".join(body.split())
        snippet = body[:SNIPPET_CHARS] + (" …" if len(body) > SNIPPET_CHARS else "")
        hits.append(SearchHit(node, snippet, score))
    return hits


def fuse(rankings: list[tuple[list[SearchHit], float]], k: int = RRF_K) -> list[SearchHit]:
    """Weighted reciprocal-rank fusion of (ranking, weight) pairs: every node once, scored
    ``sum(weight / (k + rank))`` (rank from 1) over the rankings holding it, best first (ties:
    better best rank, then key). A node keeps the snippet of the first ranking holding it."""
    scores: dict[tuple[str, str], float] = {}
    best: dict[tuple[str, str], int] = {}
    first: dict[tuple[str, str], SearchHit] = {}
    for ranking, weight in rankings:
        for rank, hit in enumerate(ranking, 1):
            key = (hit.node.graph, hit.node.iri)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            best[key] = min(best.get(key, rank), rank)
            first.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: (-scores[key], best[key], key))
    return [SearchHit(first[key].node, first[key].snippet, scores[key]) for key in ordered]


def links_among(
    index: TextIndex, hits: Iterable[SearchHit], targets: Iterable[SearchHit]
) -> dict[Key, set[str]]:
    """(dataset graph, IRI) of each of ``hits`` -> the IRIs of ``targets`` it is linked to in
    its dataset, either direction, typed relations and text links alike (one index query per
    dataset; a hub's links to nodes outside ``targets`` are never read)."""
    by_graph: dict[str, list[str]] = defaultdict(list)
    for hit in hits:
        by_graph[hit.node.graph].append(hit.node.iri)
    wanted: dict[str, list[str]] = defaultdict(list)
    for hit in targets:
        wanted[hit.node.graph].append(hit.node.iri)
    found: dict[Key, set[str]] = {}
    for graph, iris in by_graph.items():
        for iri, others in index.links_between(graph, iris, wanted.get(graph, [])).items():
            found[(graph, iri)] = others
    return found


def link_rerank(
    hits: list[SearchHit],
    links: Mapping[Key, Iterable[str]],
    *,
    weight: float = LINK_WEIGHT,
    depth: int = LINK_DEPTH,
) -> list[SearchHit]:
    """Graph-aware re-ranking of ranked ``hits``: each gains ``weight`` times the best score
    among the first ``depth`` hits it is linked to in ``links`` (its own link to itself
    excepted; links cross no dataset), and the hits are sorted by the new score, ties in
    their old order. Every hit is kept once; with ``weight`` 0 or no link the order is
    unchanged."""
    top = {(hit.node.graph, hit.node.iri): hit.score for hit in hits[:depth]}
    scored = []
    for position, hit in enumerate(hits):
        boost = max(
            (
                top[(hit.node.graph, other)]
                for other in links.get((hit.node.graph, hit.node.iri), ())
                if other != hit.node.iri and (hit.node.graph, other) in top
            ),
            default=0.0,
        )
        scored.append((hit.score + weight * boost, position, hit))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [SearchHit(hit.node, hit.snippet, score) for score, _, hit in scored]


def _ordered(hits: list[SearchHit], order_by: str, descending: bool) -> list[SearchHit]:
    """Hits sorted by a node field (missing values last), or as they are for relevance."""
    if order_by == "relevance":
        return hits
    if order_by not in ("created", "modified", "title"):
        raise InvalidArgument("orderBy", f"{order_by!r}; relevance, created, modified or title")

    def value(hit: SearchHit) -> str:
        return str(getattr(hit.node, order_by) or "")

    present = sorted((h for h in hits if value(h)), key=value, reverse=descending)
    return present + [h for h in hits if not value(h)]
