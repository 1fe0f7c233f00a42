"""BM25 ranking of a small set of texts in memory: the agent-side full-text search.

The lab's discourse nodes live in the text index (:mod:`labbrain.index.text`). What an
assistant writes (memories, findings, propositions) is small per domain or project and is read
straight from its named graph; :func:`rank` scores those texts against a query with the same
tokenisation as the index, so both searches agree on what a word is.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

Item = TypeVar("Item")

_WORD_RE = re.compile(r"\w+", re.UNICODE)
K1 = 1.2
B = 0.75


def words(text: str) -> list[str]:
    """Lowercased word tokens of ``text``."""
    return [word.lower() for word in _WORD_RE.findall(text)]


@dataclass(frozen=True)
class Ranked(Generic[Item]):
    """One item with its BM25 score (higher is better) and the query words it holds."""

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
    """Items holding at least one query word (every word with ``require_all``), best first.

    Items holding more distinct query words always come before items holding fewer (as in
    the node index: all words first, then some); within that, by BM25. Ties keep input order.
    """
    wanted = list(dict.fromkeys(words(query)))
    if not wanted:
        return []
    documents = [(item, Counter(words(text_of(item)))) for item in items]
    if not documents:
        return []
    average = sum(sum(counts.values()) for _, counts in documents) / len(documents) or 1.0
    frequency = {w: sum(1 for _, counts in documents if w in counts) for w in wanted}
    total = len(documents)
    ranked: list[tuple[int, float, int, Ranked[Item]]] = []
    for position, (item, counts) in enumerate(documents):
        matched = frozenset(w for w in wanted if w in counts)
        if not matched or (require_all and len(matched) < len(wanted)):
            continue
        length = sum(counts.values())
        score = 0.0
        for word in matched:
            idf = math.log(1 + (total - frequency[word] + 0.5) / (frequency[word] + 0.5))
            tf = counts[word]
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        ranked.append((len(matched), score, position, Ranked(item, score, matched)))
    ranked.sort(key=lambda entry: (-entry[0], -entry[1], entry[2]))
    chosen = [entry[3] for entry in ranked]
    return chosen[:limit] if limit is not None else chosen


def key_terms(text: str, limit: int = 12, *, stop: frozenset[str] = frozenset()) -> list[str]:
    """The most frequent informative words of ``text`` (for "more like this" queries):
    words of at least four letters, not in ``stop`` or the built-in stop list, most frequent
    first, ties in order of first appearance."""
    counts = Counter(
        word
        for word in words(text)
        if len(word) >= 4 and not word.isdigit() and word not in STOP_WORDS and word not in stop
    )
    return [word for word, _ in counts.most_common(limit)]


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
