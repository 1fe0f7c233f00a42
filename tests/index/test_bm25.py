"""The one analysis of words (labbrain.index.analysis) and the in-memory BM25 built on it
(labbrain.index.bm25): the terms are the node index's terms, so an in-memory search and a
node search agree on what a word is."""

from __future__ import annotations

import pytest

from labbrain.index.analysis import Token, terms, tokens, words
from labbrain.index.bm25 import key_terms, rank
from labbrain.index.fulltext import query_words
from labbrain.index.text import IndexRecord, TextIndex

GRAPH = "urn:labbrain:dataset:lab"

#: Words and their terms, worked out by hand from the Snowball English (Porter2) rules after
#: lower-casing and folding accents: plural -s and -es drop, -ies becomes -i, -ing and -ed
#: drop (a double final consonant is undone: running -> run), -ational becomes -ate and the
#: final e in R2 then drops (relational -> relate -> relat), a possessive splits at the
#: apostrophe, and an irregular plural stays as it is (mice).
EXPECTED = {
    "networks": ["network"],
    "network": ["network"],
    "Filaments": ["filament"],
    "studies": ["studi"],
    "studying": ["studi"],
    "running": ["run"],
    "connected": ["connect"],
    "relational": ["relat"],
    "Café's": ["cafe", "s"],
    "naïve": ["naiv"],
    "mice": ["mice"],
    "Arp2/3": ["arp2", "3"],
}


@pytest.mark.parametrize(("text", "expected"), EXPECTED.items())
def test_terms_of_a_word(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_tokens_pair_each_word_with_its_term() -> None:
    text = "Branched NETWORKS of actin; studies of networks"
    assert tokens(text) == [
        Token("branched", "branch"),
        Token("networks", "network"),
        Token("of", "of"),
        Token("actin", "actin"),
        Token("studies", "studi"),
        Token("of", "of"),
        Token("networks", "network"),
    ]
    assert words(text) == [token.word for token in tokens(text)]
    assert terms(text) == [token.term for token in tokens(text)]
    # a token longer than 40 bytes is dropped, as the engine drops it
    assert terms("a " + "x" * 41 + " b") == ["a", "b"]


def test_the_terms_are_the_node_index_terms() -> None:
    """The engine's query analysis is this analysis, and a node is found by either form of
    its words, as an in-memory search finds a text."""
    text = "Studies of branched networks: the café's filaments"
    assert query_words(text) == list(dict.fromkeys(terms(text)))
    index = TextIndex(None)
    index.replace_graph(
        GRAPH,
        "load-1",
        [
            IndexRecord(
                iri="https://roamresearch.com/#/app/lab/page/n1",
                title="[[CLM]] - A branched network",
                content="Filament studies.",
                node_type="Claim",
                creator="Ada",
                created=None,
                modified=None,
            ),
            IndexRecord(
                iri="https://roamresearch.com/#/app/lab/page/n2",
                title="[[CLM]] - Myosin motors",
                content="They walk.",
                node_type="Claim",
                creator="Ada",
                created=None,
                modified=None,
            ),
        ],
    )
    texts = ["A branched network. Filament studies.", "Myosin motors. They walk."]
    for query in ("networks", "network", "filaments", "studying"):
        (node,) = index.search(query, limit=5)
        (memory,) = rank(query, texts, str)
        assert node.node.uid == "n1" and memory.item == texts[0], query


def test_rank_matches_any_form_and_shows_the_query_word() -> None:
    texts = ["one network", "two networks", "a tree"]
    assert [(hit.item, hit.matched) for hit in rank("Networks", texts, str)] == [
        ("one network", frozenset({"networks"})),
        ("two networks", frozenset({"networks"})),
    ]
    assert [hit.item for hit in rank("network trees", texts, str, require_all=True)] == []
    assert [hit.item for hit in rank("tree", texts, str)] == ["a tree"]


def test_key_terms_count_the_forms_of_a_word_together() -> None:
    """ "network" twice and "networks" once make three of one word, shown as first written;
    "actin" twice; "filament" once; short and common words are left out."""
    text = "Network of actin. Networks of actin filaments within the network."
    assert key_terms(text) == ["network", "actin", "filaments"]
    assert key_terms(text, 2) == ["network", "actin"]
    assert key_terms(text, stop=frozenset({"actin"})) == ["network", "filaments"]
