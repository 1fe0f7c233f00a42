"""BM25 over a small set of texts held in memory, and the key terms of a text.

The lab's discourse nodes are searched in the text index (:mod:`labbrain.index.text`). What an
assistant writes (memories, findings, propositions) is small per domain or project and is read
straight from its named graph; :func:`rank` scores those texts against a query with Okapi BM25
computed here, over the terms of the index's own analysis (:mod:`labbrain.index.analysis`), so
both searches agree on what a word is: "networks" finds "network" in either. :func:`key_terms`
picks a text's most frequent informative words, for "more like this" searches.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from labbrain.index.analysis import terms, tokens

Item = TypeVar("Item")

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Ranked(Generic[Item]):
    """One item with its BM25 score (higher is better) and the query words it holds, as the
    query writes them (lower-cased): "networks" for an item that says "network"."""

    item: Item
    score: float
    matched: frozenset[str]


def rank(
    query: str,
    items: Iterable[Item],
    text_of: Callable[[Item], str],
    *,
    limit: int | None = None,
    require_all: bool = False,
) -> list[Ranked[Item]]:
    """Items holding at least one query term (every term with ``require_all``), best first.

    Items holding more distinct query terms always come before items holding fewer (as in
    the node index: all words first, then some); within that, by BM25. Ties keep input order.
    """
    wanted: dict[str, str] = {}  # each query term -> the query's first word for it
    for token in tokens(query):
        wanted.setdefault(token.term, token.word)
    if not wanted:
        return []
    documents = [(item, Counter(terms(text_of(item)))) for item in items]
    if not documents:
        return []
    average = sum(sum(counts.values()) for _, counts in documents) / len(documents) or 1.0
    frequency = {w: sum(1 for _, counts in documents if w in counts) for w in wanted}
    total = len(documents)
    ranked: list[tuple[int, float, int, Ranked[Item]]] = []
    for position, (item, counts) in enumerate(documents):
        held = [term for term in wanted if term in counts]
        if not held or (require_all and len(held) < len(wanted)):
            continue
        length = sum(counts.values())
        score = 0.0
        for term in held:
            idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = counts[term]
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        matched = frozenset(wanted[term] for term in held)
        ranked.append((len(held), score, position, Ranked(item, score, matched)))
    ranked.sort(key=lambda entry: (-entry[0], -entry[1], entry[2]))
    chosen = [entry[3] for entry in ranked]
    return chosen[:limit] if limit is not None else chosen


def key_terms(text: str, limit: int = 12, *, stop: frozenset[str] = frozenset()) -> list[str]:
    """The most frequent informative words of ``text`` (for "more like this" queries):
    words of at least four letters, not in ``stop`` or the built-in stop list, counted by
    term (so "network" and "networks" count together), most frequent first, ties in order of
    first appearance; each given as the text first writes it (lower-cased)."""
    counts: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for word, term in tokens(text):
        if len(word) >= 4 and not word.isdigit() and word not in STOP_WORDS and word not in stop:
            counts[term] += 1
            shown.setdefault(term, word)
    return [shown[term] for term, _ in counts.most_common(limit)]


_STOP_TEXT = """
    about above after again against also although among because been before being below
    between both could does doing down during each either else even ever every from further
    have having here hers herself himself however into itself just least less like made make
    many more most much must neither nor once only other ought ours ourselves over same shall
    should since some such than that their theirs them themselves then there these they this
    those though through thus under until upon very were what when where whether which while
    whom whose will with within without would your yours yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
