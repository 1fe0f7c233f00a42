"""The store interface every backend implements, and the types it speaks in.

:class:`QuadStore` is the small interface the rest of labbrain uses (query, update, add quads,
replace a graph atomically, list graphs, dump), with the capabilities a caller may ask about
(shared, on disk, ...). :class:`~labbrain.store.local.OxigraphStore` implements it on an
embedded store, :class:`~labbrain.store.remote.store.RemoteStore` on a SPARQL 1.1 endpoint.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
    serialize,
)

from labbrain.errors import GraphNotFound, QuerySyntaxError
from labbrain.rdf.namespaces import PREFIXES
from labbrain.rdf.sparql_policy import check_query, dataset_graphs

QueryResult = QuerySolutions | QueryBoolean | QueryTriples


@dataclass(frozen=True)
class RdfDocument:
    """Serialised RDF for a bulk write: its default graph lands in the target graph.

    Backends parse it natively, with no per-quad Python work. ``label`` names the input in
    errors.
    """

    data: bytes
    format: RdfFormat
    label: str = "input"


#: What a bulk write is made of: serialised documents and/or iterables of triples or quads
#: (quads are moved into the target graph).
GraphPart = RdfDocument | Iterable[Triple | Quad]


class GraphWriter(Protocol):
    """Writes parts into the graph being replaced, one part after the other, on the thread
    that called ``replace_graph`` (see :class:`ThreadBoundWriter`)."""

    def write(self, part: GraphPart) -> None:
        """Add the RDF of ``part`` to the target graph."""
        ...


class ThreadBoundWriter:
    """The base of every backend's :class:`GraphWriter`: bound to the thread that made it.

    pyoxigraph's bulk loader is not for concurrent use on one store: two bulk loads into one
    on-disk store from two threads at once crashed the process (a native fault, about once
    in a few hundred loads). So a graph is written by one thread, the one running
    ``replace_graph`` (which makes the writer); work done beside it in other threads hands
    its parts back to that thread. :meth:`_check_thread` raises RuntimeError on a call from
    any other thread, before anything is written.
    """

    def __init__(self) -> None:
        self._thread = threading.get_ident()

    def _check_thread(self) -> None:
        if threading.get_ident() != self._thread:
            raise RuntimeError(
                "a graph being replaced is written only by the thread that replaces it; "
                "hand the part to that thread"
            )


#: Fills a graph being replaced, through the writer it is given.
Fill = Callable[[GraphWriter], None]
Term = NamedNode | BlankNode | Literal | Triple
Substitutions = Mapping[str, Term]


@runtime_checkable
class QuadStore(Protocol):
    """What labbrain needs from a quad store. Every backend implements exactly this.

    Code outside ``labbrain.store`` asks a store what it can do through these attributes and
    never checks which backend class it holds.
    """

    #: Where the store is: a directory, ``:memory:``, or an endpoint URL.
    location: str
    #: Writes are refused in this process.
    read_only: bool
    #: Other processes may write the store at any time (a remote endpoint): there is no
    #: writer lock and no journal, and a task marked running may belong to another process.
    shared: bool
    #: The directory of an embedded store on disk; None in memory and for a remote store.
    #: Worker processes can open their own read-only view of it.
    directory: Path | None
    #: A bulk write interrupted by a crash was rolled back when this store was opened.
    recovered: bool
    #: A restore stopped midway was undone when this store was opened.
    restore_undone: bool

    def query(
        self,
        sparql: str,
        *,
        substitutions: Substitutions | None = None,
        union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query; ``union`` makes the default graph the union of all graphs;
        relative IRIs are resolved against ``base_iri`` (a BASE in the text wins)."""
        ...

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update as one transaction (relative IRIs against ``base_iri``)."""
        ...

    def add_quads(self, quads: Iterable[Quad]) -> None:
        """Add a few quads in one transaction."""
        ...

    def remove_quads(self, quads: Iterable[Quad]) -> None:
        """Remove the given quads (absent ones are ignored)."""
        ...

    def quads(
        self, graph: str, subject: NamedNode | None = None, predicate: NamedNode | None = None
    ) -> Iterator[Quad]:
        """Quads of ``graph``, optionally only those with this subject and/or predicate."""
        ...

    def apply(self, remove: Iterable[Quad], add: Iterable[Quad]) -> None:
        """Remove ``remove`` and add ``add`` in one transaction: both happen or neither."""
        ...

    def replace_graph(
        self,
        graph: str,
        fill: Fill,
        *,
        on_commit: Callable[[QuadStore], None] | None = None,
    ) -> None:
        """Atomically make ``graph`` hold exactly what ``fill`` writes."""
        ...

    def count(self, graph: str) -> int:
        """Number of quads in ``graph``."""
        ...

    def drop_graph(self, graph: str) -> None:
        """Remove a named graph and everything in it."""
        ...

    def graphs(self) -> list[str]:
        """Named graphs in the store, sorted."""
        ...

    def has_graph(self, graph: str) -> bool:
        """True when the named graph exists."""
        ...

    def dump(
        self,
        output: IO[bytes],
        fmt: RdfFormat,
        graphs: list[str] | None = None,
        prefixes: Mapping[str, str] | None = None,
    ) -> None:
        """Serialise the given graphs (all named graphs when None) to ``output``, declaring
        labbrain's prefixes and ``prefixes``."""
        ...

    def writer_alive(self) -> bool:
        """True when some process may be writing the store now (always, for a shared one)."""
        ...

    def index_home(self) -> Path | None:
        """The directory where this machine keeps indexes derived from the store (text,
        vectors), created if missing; None to keep them in memory."""
        ...

    def drop_stale_staging(self) -> list[str]:
        """Drop the staging graphs left by writes that died (older than a day) and return
        them; a writable store only."""
        ...

    def with_timeout(self, seconds: float) -> QuadStore | None:
        """A view of this store whose queries the backend stops after ``seconds`` (close it
        after use), or None when the backend cannot: run the work in a child process then."""
        ...

    def close(self) -> None:
        """Release the store and its lock."""
        ...


#: What relative IRIs in a person's query or update are resolved against, where the surface
#: has no address of its own (the CLI, the console, ``sparql_query``; the endpoint uses its
#: URL): a BASE in the text wins.
BASE_IRI = "https://w3id.org/labbrain/base/"


def with_base(sparql: str, base_iri: str | None) -> str:
    """``sparql`` with ``BASE <base_iri>`` before it, on its first line, for a store that
    takes the base in the text; unchanged when its prologue declares a BASE of its own."""
    if base_iri is None:
        return sparql
    prologue = sparql[: _PROLOGUE.match(sparql).end()]  # type: ignore[union-attr]
    if re.search(r"(?i)(?<![\w:])BASE\s*<", re.sub(r"#[^\n]*", "", prologue)):
        return sparql
    return f"BASE <{base_iri}> {sparql}"


def read_query(store: QuadStore, sparql: str, *, base_iri: str = BASE_IRI) -> QueryResult:
    """Run a person's read-only query as every surface does (CLI, console, endpoint,
    ``sparql_query``): the default graph is the union of all named graphs unless the query
    names its dataset with FROM / FROM NAMED (a graph the store does not hold is empty);
    relative IRIs are resolved against ``base_iri``. SERVICE and LOAD are refused
    (QueryNotAllowed), as the store must not reach the network."""
    check_query(sparql, graphs=store.graphs)
    return store.query(sparql, union=not dataset_graphs(sparql), base_iri=base_iri)


def dump_graphs(
    store: QuadStore,
    output: IO[bytes],
    fmt: RdfFormat,
    graphs: list[str] | None = None,
    prefixes: Mapping[str, str] | None = None,
    *,
    read_first: bool = False,
) -> None:
    """:meth:`QuadStore.dump` on any store's reads: write ``graphs`` (default: all named graphs,
    each checked to exist) to ``output`` in ``fmt``, declaring labbrain's prefixes and
    ``prefixes``; triples only when ``fmt`` has no graphs. With ``read_first`` every graph is
    read before anything is written (a remote read that fails then leaves ``output`` empty)."""
    chosen = graphs if graphs is not None else store.graphs()
    for graph in chosen:
        if not store.has_graph(graph):
            raise GraphNotFound(graph)
    quads: Iterable[Quad] = (q for g in chosen for q in store.quads(g))
    if read_first:
        quads = list(quads)
    declared = {**PREFIXES, **(prefixes or {})}
    if fmt.supports_datasets:
        serialize(quads, output, fmt, prefixes=declared)
    else:
        serialize((q.triple for q in quads), output, fmt, prefixes=declared)


def parse_syntax_error(
    err: SyntaxError, text: str | None = None, *, update: bool = False
) -> QuerySyntaxError:
    """Turn pyoxigraph's SyntaxError into a QuerySyntaxError with a 1-based position. Given
    the query's ``text`` (an update's, with ``update``), a text whose first word after its
    prologue is no query (update) form is told which forms there are, at that word, instead
    of the engine's guess at one keyword."""
    if text is not None:
        misspelt = form_problem(text, update=update)
        if misspelt is not None:
            return misspelt
    message = str(err).strip()
    line = column = None
    # pyoxigraph reports "error at LINE:COLUMN: ...", both 1-based.
    match = re.match(r"error at (\d+):(\d+):\s*", message)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
        message = message[match.end() :]
    return QuerySyntaxError(message, line, column)


def query_syntax_error(text: str, base_iri: str | None = BASE_IRI) -> QuerySyntaxError | None:
    """The syntax error of the query ``text`` (positions in that text), or None when it
    parses. Parsed by running it on an empty store: nothing is read."""
    from pyoxigraph import Store

    try:
        Store().query(text, prefixes=PREFIXES, base_iri=base_iri)
    except SyntaxError as err:
        return parse_syntax_error(err, text)
    return None


QUERY_FORMS = ("SELECT", "CONSTRUCT", "DESCRIBE", "ASK")
UPDATE_FORMS = (
    "INSERT",
    "DELETE",
    "WITH",
    "LOAD",
    "CLEAR",
    "CREATE",
    "DROP",
    "COPY",
    "MOVE",
    "ADD",
)
#: What may come before a query's form: blanks, comments, PREFIX and BASE declarations.
_PROLOGUE = re.compile(r"(?:\s+|#[^\n]*|(?i:PREFIX)\s+[^\s:]*:\s*<[^>]*>|(?i:BASE)\s*<[^>]*>)*")
_WORD = re.compile(r"[^\s{}()<>#]+")


def form_problem(text: str, *, update: bool = False) -> QuerySyntaxError | None:
    """None when the first word of ``text`` after its prologue is a query form (SELECT,
    CONSTRUCT, DESCRIBE, ASK; with ``update`` an update's: INSERT, DELETE, ...); else the
    error naming the forms and what was found, at that word (1-based line and column).
    Several updates (``;``) are judged by the first."""
    at = _PROLOGUE.match(text).end()  # type: ignore[union-attr]  # matches the empty text
    word = _WORD.match(text, at)
    forms = UPDATE_FORMS if update else QUERY_FORMS
    if word is not None and word.group().upper() in forms:
        return None
    found = f"{word.group()[:40]!r}" if word is not None else "nothing"
    if word is None and at < len(text):
        found = repr(text[at : at + 10])
    kind = "an update" if update else "a query form"
    named = ", ".join(forms[:-1]) + " or " + forms[-1]
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return QuerySyntaxError(f"expected {kind}: {named}; found {found}", line, column)
