"""What a word is, for every keyword search: the one text analysis of labbrain.

A text's *terms* are what the full-text engine (:mod:`labbrain.index.fulltext`) indexes and
looks up: the runs of letters and digits (tantivy's simple tokenizer), those longer than 40
bytes dropped, lower-cased, accents folded to ASCII, each reduced to its English stem
(Snowball English, the Porter2 stemmer): "Networks" -> "network", "studies" and "studying" ->
"studi", "Café's" -> "cafe", "s". The engine is handed the analyser built here
(:func:`analyzer`), and every in-memory search (:mod:`labbrain.index.bm25`: memories,
findings, propositions) runs the same analyser through :func:`terms` and :func:`tokens`, so a
search for "networks" finds a text that says "network" wherever the text is kept.

A token's *word* is the same run before stemming (lower-cased, accents folded): what an answer
shows of a match, and what an exact comparison of two wordings compares.
"""

from __future__ import annotations

from typing import NamedTuple

import tantivy

#: The name the full-text engine registers the analyser under.
ANALYZER_NAME = "labbrain_words"
#: Longer tokens (in bytes) are dropped, as the engine drops them.
MAX_TOKEN_BYTES = 40


def _build(*, stem: bool) -> tantivy.TextAnalyzer:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
    )
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def analyzer() -> tantivy.TextAnalyzer:
    """The analyser of titles, contents and query text, for the engine to register."""
    return _build(stem=True)


_TERMS = analyzer()
_WORDS = _build(stem=False)


class Token(NamedTuple):
    """One token of a text: its word (lower-cased, accents folded) and its term (the stem)."""

    word: str
    term: str


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats kept: exactly what the engine indexes."""
    return _TERMS.analyze(text)


def words(text: str) -> list[str]:
    """The words of ``text`` in order, repeats kept: its terms before stemming."""
    return _WORDS.analyze(text)


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` in order: each word with its term."""
    found, stems = _WORDS.analyze(text), _TERMS.analyze(text)
    if len(found) != len(stems):  # the stemmer maps token to token; never seen otherwise
        stems = [next(iter(_TERMS.analyze(word)), word) for word in found]
    return [Token(word, term) for word, term in zip(found, stems, strict=True)]
