"""The full-text engine of the text index: tantivy (BM25 with block-max WAND top-k pruning).

SQLite FTS5 scores every matching row before it can return the best ten, so a word that most
nodes of a lab hold ("actin" in an actin lab) costs a pass over most of the index. tantivy
skips the blocks of its postings that cannot reach the current top ten, so the lab's most common
words answer about as fast as its rarest (``bench/results/search.md``).

:class:`FullText` holds one document per indexed node: its key (graph and IRI), the load id it
was indexed from, the filters (graph, lower-cased node type, creator), the sort keys (created,
modified, clean title) and the analysed title and content. It stores no text of its own: the
node rows, contents included, stay in the SQLite file (:class:`~labbrain.index.text.TextIndex`),
which is the index's record of what is indexed; this directory is checked against it at every
open (:meth:`FullText.count`) and rebuilt from it when the two disagree.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import tantivy

from labbrain.errors import DiskFull
from labbrain.index.analysis import ANALYZER_NAME, analyzer, terms

#: Indexing threads of a write (one per core, at most four) and the memory of each.
_WRITER_THREADS = max(1, min(os.cpu_count() or 1, 4))
_WRITER_HEAP_PER_THREAD = 64_000_000
#: The layout of the documents (fields, analyser); an index of another format is rebuilt.
FORMAT = "labbrain-fulltext-2"
_FORMAT_FILE = "labbrain-format"
#: A word in the title counts as this many in the content (the title is indexed this often).
TITLE_WEIGHT = 4
_TIE_MARGIN = 10
SNIPPET_CHARS = 160
ELLIPSIS = " … "


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("key", stored=True, tokenizer_name="raw")
    builder.add_text_field("graph", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("load", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("type", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("creator", tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("created", fast=True)
    builder.add_integer_field("modified", fast=True)
    builder.add_text_field("sort_title", fast=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", tokenizer_name=ANALYZER_NAME, index_option="freq")
    return builder.build()


_SCHEMA = _schema()
#: The analyser of titles, contents and query text (:mod:`labbrain.index.analysis`): words of
#: letters and digits, lower-cased, accents folded, English stems (as FTS5's ``porter unicode61
#: remove_diacritics 2`` did).
_WORDS = analyzer()


def node_key(graph: str, iri: str) -> str:
    """The one string that names a node of a dataset graph in the engine."""
    return f"{graph}\n{iri}"


def split_key(key: str) -> tuple[str, str]:
    """(graph, IRI) of a :func:`node_key`."""
    graph, _, iri = key.partition("\n")
    return graph, iri


def query_words(text: str) -> list[str]:
    """The analysed words of ``text`` (stems, lower case, accents folded), deduplicated."""
    return list(dict.fromkeys(terms(text)))


@dataclass(frozen=True)
class FullTextDoc:
    """What the engine keeps of one node."""

    graph: str
    iri: str
    title: str
    content: str
    node_type: str
    creator: str | None
    created: str | None
    modified: str | None


@dataclass(frozen=True)
class Filters:
    """Search filters; None means no filter. Node types are compared lower-cased."""

    graphs: Sequence[str] | None = None
    node_types: Sequence[str] | None = None
    creator: str | None = None


class FullTextUnusable(Exception):
    """The engine's directory cannot be opened (missing, damaged or of another version)."""


class FullText:
    """The tantivy index in ``directory`` (None: in memory).

    ``create=True`` makes an empty index when the directory holds none (a damaged one is
    replaced); otherwise an unusable directory raises :class:`FullTextUnusable`. Writes
    (:meth:`replace`, :meth:`delete`) each take the engine's writer for their duration and
    commit before returning; the caller serialises writers (the SQLite write transaction
    around every write does). Readers see each commit from their next search on.
    """

    def __init__(self, directory: Path | None, *, create: bool) -> None:
        self.directory = directory
        #: True when this open made a new, empty index (none was there, or it was unusable).
        self.created = directory is None
        self._index = self._open(create)
        self._index.register_tokenizer(ANALYZER_NAME, _WORDS)

    def _open(self, create: bool) -> tantivy.Index:
        if self.directory is None:
            return tantivy.Index(_SCHEMA)
        marker = self.directory / _FORMAT_FILE
        try:
            if marker.read_text(encoding="utf-8") == FORMAT:
                index = tantivy.Index.open(str(self.directory))
                index.searcher()
                return index
            problem = "the search index was made by another version"
        except FileNotFoundError:
            problem = "no search index"
        except (ValueError, OSError, UnicodeDecodeError) as err:
            problem = f"the search index is damaged ({err})"
        if not create:
            raise FullTextUnusable(problem)
        shutil.rmtree(self.directory, ignore_errors=True)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(_SCHEMA, path=str(self.directory), reuse=False)
            marker.write_text(FORMAT, encoding="utf-8")
        except OSError as err:
            raise _as_disk_full(err) from err
        self.created = True
        return index

    # ------------------------------------------------------------------ writing
    def replace(self, graph: str, load_id: str, docs: Iterable[FullTextDoc]) -> None:
        """Make the engine hold exactly ``docs`` for ``graph``, marked as of ``load_id``: one
        commit, so readers see the old documents or the new ones."""
        with self.replacing(graph, load_id) as add:
            add(docs)

    @contextmanager
    def replacing(
        self, graph: str | None, load_id: str = "", *, only: Iterable[str] | None = None
    ) -> Iterator[Callable[[Iterable[FullTextDoc]], None]]:
        """Replace the documents of ``graph`` (every document, for None; with ``only``, just
        those of the node IRIs it names) with those handed to the function it gives (which
        may be called from another thread, but not after the block): one commit when the
        block ends without an error, nothing otherwise."""
        with _engine_errors():
            writer = self._index.writer(
                heap_size=_WRITER_HEAP_PER_THREAD * _WRITER_THREADS, num_threads=_WRITER_THREADS
            )

        def add(docs: Iterable[FullTextDoc]) -> None:
            with _engine_errors():
                for doc in docs:
                    writer.add_document(_document(load_id, doc))

        try:
            with _engine_errors():
                if graph is None:
                    writer.delete_all_documents()
                elif only is not None:
                    for iri in only:
                        writer.delete_documents_by_term("key", node_key(graph, iri))
                else:
                    writer.delete_documents_by_term("graph", graph)
            yield add
            with _engine_errors():
                writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            with _engine_errors():
                writer.wait_merging_threads()
        self._index.reload()

    def delete(self, graph: str) -> None:
        """Remove every document of ``graph`` (one commit)."""
        self.replace(graph, "", [])

    def clear(self) -> None:
        """Remove every document (one commit)."""
        with self.replacing(None):
            pass

    # ------------------------------------------------------------------ reading
    def count(self, graph: str, load_id: str) -> int:
        """How many documents of ``graph`` were indexed from load ``load_id``."""
        self._index.reload()
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.term_query(_SCHEMA, "graph", graph)),
                (tantivy.Occur.Must, tantivy.Query.term_query(_SCHEMA, "load", load_id)),
            ]
        )
        found = self._index.searcher().search(query, limit=1, count=True)
        return int(found.count or 0)  # type: ignore[attr-defined]  # missing from the stubs

    def total(self) -> int:
        """How many documents the engine holds."""
        self._index.reload()
        return int(self._index.searcher().num_docs)

    def search(
        self,
        words: Sequence[str],
        *,
        every_word: bool,
        filters: Filters,
        limit: int,
        order_by: str | None = None,
        descending: bool = True,
        exclude: Iterable[str] = (),
    ) -> list[tuple[str, float]]:
        """(node key, score) of the best ``limit`` documents holding every word of ``words``
        (``every_word``) or any of them, best first (BM25, a title match weighing
        :data:`TITLE_WEIGHT` content matches), or by ``order_by`` (``created``, ``modified``,
        ``sort_title``; documents without the value last) when given. ``exclude`` names node
        keys to leave out; ``words`` are analysed words (:func:`query_words`)."""
        if not words or limit <= 0:
            return []
        self._index.reload()
        searcher = self._index.searcher()
        query = _query(searcher, words, every_word, filters, exclude)
        if order_by is not None:
            order = tantivy.Order.Desc if descending else tantivy.Order.Asc
            result = searcher.search(
                query, limit=limit, count=False, order_by_field=order_by, order=order
            )
            return [(str(searcher.doc(address)["key"][0]), 0.0) for _, address in result.hits]
        # Equal scores are ordered by key: a few more than asked for, so that a tie across
        # the cut is broken by key too.
        result = searcher.search(query, limit=limit + _TIE_MARGIN, count=False)
        scored = [
            (str(searcher.doc(address)["key"][0]), float(score)) for score, address in result.hits
        ]
        scored.sort(key=lambda hit: (-hit[1], hit[0]))
        return scored[:limit]

    def snippets(self, words: Sequence[str], texts: Sequence[tuple[str, str]]) -> list[str]:
        """For each (title, content) of ``texts``: a passage of the content (of the title when
        the content holds none of the words) around the words, each match in ``**``, cut ends
        marked with `` … ``; '' when neither holds a word."""
        searcher = self._index.searcher()
        query = _words_query(searcher, words, every_word=False)
        generator = tantivy.SnippetGenerator.create(searcher, query, _SCHEMA, "words")
        generator.set_max_num_chars(SNIPPET_CHARS)
        found: list[str] = []
        for title, content in texts:
            for text in (content, title):
                snippet = generator.snippet_from_doc(tantivy.Document(words=text))
                if snippet.highlighted():
                    found.append(_marked(text, snippet))
                    break
            else:
                found.append("")
        return found


def _document(load_id: str, doc: FullTextDoc) -> tantivy.Document:
    """The engine's document for ``doc``."""
    document = tantivy.Document(
        key=node_key(doc.graph, doc.iri),
        graph=doc.graph,
        load=load_id,
        type=doc.node_type.lower(),
        sort_title=doc.title,
        words="\n".join([doc.title] * TITLE_WEIGHT + [doc.content]),
    )
    if doc.creator is not None:
        document.add_text("creator", doc.creator)
    for name, value in (("created", doc.created), ("modified", doc.modified)):
        moment = instant(value)
        if moment is not None:
            document.add_integer(name, moment)
    return document


def instant(timestamp: str | None) -> int | None:
    """``timestamp`` (ISO 8601) as milliseconds since 1970 UTC, the key that orders searches
    by time; a timestamp without a zone counts as UTC. None when it is missing or not ISO
    8601: such nodes come last in an order by time, as nodes without the value do."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def _words_query(
    searcher: tantivy.Searcher, words: Sequence[str], *, every_word: bool
) -> tantivy.Query:
    """All of ``words`` or any of them, each weighted as Okapi BM25 weighs it.

    tantivy's BM25 gives a word the weight ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (N nodes, n
    holding the word), which stays well above zero for the words most nodes hold ("the",
    "of", or a lab's "actin"); BM25 as first defined, and SQLite FTS5, give them
    ``ln((N - n + 0.5) / (n + 0.5))``, at least a millionth, so that the words that tell
    nodes apart decide the order. A boost per word turns the one into the other (measured
    with `labbrain eval-retrieval`: the plain weights lost 0.05 of recall@10 on the real
    corpus' claims)."""
    total = max(int(searcher.num_docs), 1)
    occur = tantivy.Occur.Must if every_word else tantivy.Occur.Should
    clauses = []
    for word in words:
        holding = int(searcher.doc_freq("words", word))
        engine = math.log(1 + (total - holding + 0.5) / (holding + 0.5))
        okapi = max(math.log((total - holding + 0.5) / (holding + 0.5)), 1e-6)
        term = tantivy.Query.term_query(_SCHEMA, "words", word)
        clauses.append((occur, tantivy.Query.boost_query(term, okapi / engine)))
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _query(
    searcher: tantivy.Searcher,
    words: Sequence[str],
    every_word: bool,
    filters: Filters,
    exclude: Iterable[str],
) -> tantivy.Query:
    clauses = [(tantivy.Occur.Must, _words_query(searcher, words, every_word=every_word))]
    wanted = [
        ("graph", list(filters.graphs) if filters.graphs is not None else None),
        ("type", [t.lower() for t in filters.node_types] if filters.node_types else None),
        ("creator", [filters.creator] if filters.creator else None),
    ]
    for field, values in wanted:
        if values is not None:
            clauses.append(
                (
                    tantivy.Occur.Must,
                    tantivy.Query.const_score_query(
                        tantivy.Query.term_set_query(_SCHEMA, field, values), 0.0
                    ),
                )
            )
    left_out = list(exclude)
    if left_out:
        clauses.append(
            (tantivy.Occur.MustNot, tantivy.Query.term_set_query(_SCHEMA, "key", left_out))
        )
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _marked(text: str, snippet: tantivy.Snippet) -> str:
    """The snippet's passage with its matches in ``**`` and its cut ends marked. (The
    engine's offsets count UTF-8 bytes: the passage is cut as bytes, then decoded.)"""
    passage = snippet.fragment().encode()
    span = snippet.fragment_range()
    parts: list[bytes] = []
    position = 0
    for hit in sorted(snippet.highlighted(), key=lambda r: r.start):
        parts += [passage[position : hit.start], b"**", passage[hit.start : hit.end], b"**"]
        position = hit.end
    parts.append(passage[position:])
    marked = b"".join(parts).decode(errors="replace").strip()
    if span.start > 0:
        marked = ELLIPSIS.lstrip() + marked
    if span.end < len(text.encode()):
        marked += ELLIPSIS.rstrip()
    return marked


@contextmanager
def _engine_errors() -> Iterator[None]:
    """The engine's I/O errors as they reach callers (a full device as DiskFull)."""
    try:
        yield
    except (ValueError, OSError) as err:
        raise _as_disk_full(err) from err


def _as_disk_full(err: Exception) -> Exception:
    """DiskFull for a write that failed because the device is full; the error otherwise."""
    if "No space left" in str(err) or getattr(err, "errno", None) == 28:
        return DiskFull()
    return err
