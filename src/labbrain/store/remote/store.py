"""The remote backend: a :class:`~labbrain.store.base.QuadStore` over SPARQL 1.1 HTTP.

:class:`RemoteStore` speaks the SPARQL 1.1 Protocol (queries and updates) and, for loads, the
Graph Store Protocol, to any SPARQL server: Oxigraph server, Apache Jena Fuseki, GraphDB,
Virtuoso, or QLever (read-only). Callers get the same pyoxigraph types as from the embedded
store: answers are requested as SPARQL JSON results (N-Triples for CONSTRUCT / DESCRIBE) and
parsed with pyoxigraph, completely, before they are returned, so a body the server cut short
(the Oxigraph server's ``--timeout-s`` ends a 200 answer early) is an error, never a short
answer.

Writes:

- ``replace_graph`` is all or nothing. ``fill`` writes into a fresh staging graph
  ``urn:labbrain:staging:<time>-<random>`` (Graph Store Protocol POSTs, or chunked
  ``INSERT DATA`` when no GSP endpoint is set); then one update request drops the target,
  moves the staging graph into it and applies what ``on_commit`` wrote (e.g. the load
  record). If anything fails, the staging graph is dropped and the target is untouched.
  Staging graphs left by a process that died are hidden from :meth:`RemoteStore.graphs` and
  dropped by the next writable open once a day old.
- RDF documents are parsed here with pyoxigraph (JSON-LD included) and sent as N-Triples, so
  a broken input is reported exactly as the embedded store reports it.
- ``read_only`` refuses writes here, before anything is sent. There is no writer lock: any
  number of labbrain processes may share one endpoint; each update request is one
  transaction on servers that run it as one (Oxigraph, Fuseki).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from platformdirs import user_data_dir
from pyoxigraph import (
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
    Triple,
    parse,
    parse_query_results,
    serialize,
)

from labbrain.errors import (
    EndpointError,
    EndpointReadOnly,
    ExportFormatError,
    GraphNotFound,
    LoadInProgress,
    QueryError,
    QueryTimeout,
    SettingsError,
    StoreReadOnly,
)
from labbrain.rdf.namespaces import PREFIXES, is_listed_graph
from labbrain.rdf.sparql_policy import check_update
from labbrain.settings import Settings
from labbrain.store import templates
from labbrain.store.base import (
    Fill,
    GraphPart,
    QuadStore,
    QueryResult,
    RdfDocument,
    Substitutions,
    ThreadBoundWriter,
    dump_graphs,
    parse_syntax_error,
    with_base,
)
from labbrain.store.remote.auth import HOW_TO_SET, Credentials, credentials_from_settings, refusal
from labbrain.store.remote.sparql import (
    COUNT_VARIABLE,
    bind_values,
    blank_node_safe_chunks,
    claim_update,
    count_query,
    delete_data,
    fill_marker,
    insert_data,
    join_updates,
    new_staging_graph,
    page_query,
    staging_is_stale,
    with_prologue,
)

if TYPE_CHECKING:
    from labbrain.store.remote.http import Response

log = logging.getLogger("labbrain.store.remote.store")

#: How many times a write rolled back as a deadlock is sent (see RemoteStore._send).
DEADLOCK_ATTEMPTS = 5
#: Triples per INSERT DATA request and per Graph Store Protocol POST of a bulk write.
INSERT_CHUNK = 5_000
GSP_CHUNK = 100_000
#: Staging graphs older than this were left by a write that died.

_ACCEPT = (
    "application/sparql-results+json, application/n-triples;q=0.9, text/turtle;q=0.5, "
    "application/sparql-results+xml;q=0.4"
)
#: What a CONSTRUCT or DESCRIBE query asks for: a graph format only (Virtuoso answers a
#: graph as rows of ?s ?p ?o when SPARQL results are acceptable).
_ACCEPT_GRAPH = "application/n-triples, text/turtle;q=0.5, application/rdf+xml;q=0.4"
#: What a page of rows is asked as (merged with the other pages' rows).
_ACCEPT_JSON = "application/sparql-results+json"
_JSON_TYPES = ("application/sparql-results+json", "application/json")
_RESULT_TYPES = {
    "application/sparql-results+json": QueryResultsFormat.JSON,
    "application/json": QueryResultsFormat.JSON,
    "application/sparql-results+xml": QueryResultsFormat.XML,
    "text/tab-separated-values": QueryResultsFormat.TSV,
}
_GRAPH_TYPES = {
    "application/n-triples": RdfFormat.N_TRIPLES,
    "text/plain": RdfFormat.N_TRIPLES,
    "text/turtle": RdfFormat.TURTLE,
    "application/rdf+xml": RdfFormat.RDF_XML,
}
_CANCELLED = "The SPARQL operation has been cancelled"
_DATE_TIME = b"http://www.w3.org/2001/XMLSchema#dateTime"
_TIME = rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d*0)((?:Z|[+-]\d\d:\d\d)?)"
#: A dateTime with trailing zeros in Virtuoso's SPARQL JSON results, and in N-Triples.
_JSON_TIME = re.compile(
    rb'(?<="datatype": "' + re.escape(_DATE_TIME) + rb'", "value": ")' + _TIME + rb'(?=")'
)
_NT_TIME = re.compile(rb'(?<=")' + _TIME + rb'(?="\^\^<' + re.escape(_DATE_TIME) + rb">)")
_NODE_ID = b"nodeID://"
_BNODE_ID = re.compile(rb'("type"\s*:\s*"bnode"\s*,\s*"value"\s*:\s*")' + _NODE_ID)
_BOOLEAN = b"http://www.w3.org/2001/XMLSchema#boolean"
_BOOLEAN_DIGIT = re.compile(
    rb'("datatype"\s*:\s*"' + re.escape(_BOOLEAN) + rb'"\s*,\s*"value"\s*:\s*")([01])(?=")'
)
#: The variable Virtuoso binds to 1 when it answers a true ASK query as a row (a false one: no row).
_VIRTUOSO_ASK = "__ASK_RETVAL"


@dataclass(frozen=True)
class Endpoints:
    """Where a remote store answers: query, update, and (optionally) Graph Store Protocol
    URLs, the credentials requests to all three authenticate with (see
    :mod:`~labbrain.store.remote.auth`; not in the repr), and how to ask for the union of all
    graphs."""

    query: str
    update: str
    gsp: str | None = None
    authorization: Credentials | None = field(default=None, repr=False)
    timeout: float = 60.0
    write_timeout: float = 3600.0
    union: str = "auto"
    #: SELECT answers of at least this many rows are checked for a silent cut (by a count).
    check_rows: int = 1000

    @classmethod
    def from_settings(cls, settings: Settings) -> Endpoints:
        """The endpoints the settings name, with the credentials they give for the query
        endpoint's host (:func:`~labbrain.store.remote.auth.credentials_from_settings`);
        raises SettingsError when there is no endpoint or the credentials are inconsistent."""
        if not settings.endpoint:
            raise SettingsError("no LABBRAIN_ENDPOINT (--endpoint) is set")
        query = settings.endpoint
        update = settings.update_endpoint or default_update_endpoint(query)
        return cls(
            query=query,
            update=update,
            gsp=settings.gsp_endpoint,
            authorization=credentials_from_settings(settings),
            timeout=settings.endpoint_timeout_seconds,
            write_timeout=settings.endpoint_write_timeout_seconds,
            union=settings.endpoint_union,
            check_rows=settings.endpoint_check_rows,
        )


def default_update_endpoint(query: str) -> str:
    """The update URL to use when none is given: ``.../query`` becomes ``.../update`` (the
    Oxigraph server's and Fuseki's layout); any other URL serves both (Virtuoso)."""
    parts = urlsplit(query)
    if parts.path.endswith("/query"):
        return parts._replace(path=parts.path.removesuffix("query") + "update").geturl()
    return query


def index_directory(endpoint: str) -> Path:
    """The per-endpoint directory of the local text index:
    ``<user data dir>/remote/<sha256 of the query URL, 16 hex digits>``."""
    digest = hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:16]
    return Path(user_data_dir("labbrain", appauthor=False)) / "remote" / digest


class RemoteStore:
    """A remote SPARQL 1.1 store (see the module docstring). Thread-safe; holds no lock."""

    #: Other processes may write the endpoint at any time.
    shared = True
    #: Not a directory on this machine.
    directory: Path | None = None
    #: Nothing to recover: a write that died leaves only a staging graph.
    recovered = False
    restore_undone = False

    def __init__(self, endpoints: Endpoints, *, read_only: bool = False) -> None:
        # httpx is imported when a remote store opens, not by every labbrain command.
        from labbrain.store.remote.http import HttpClient

        self.endpoints = endpoints
        self.read_only = read_only
        self.location = endpoints.query
        self._http = HttpClient(timeout=endpoints.timeout, authorization=endpoints.authorization)
        #: The ``Server`` header of the last answer that had one (e.g. ``Virtuoso/07.20...``).
        self.server: str | None = None
        #: False once the server answered ``GRAPH ?g { }`` without naming graphs (Virtuoso).
        self._lists_empty_graphs = True

    @classmethod
    def from_settings(cls, settings: Settings, *, read_only: bool = False) -> RemoteStore:
        """Open the remote store the settings name and check that it answers a query."""
        store = cls(Endpoints.from_settings(settings), read_only=read_only)
        try:
            store.ask("ASK { }")
            if not read_only:
                store.drop_stale_staging()
        except BaseException:
            store.close()
            raise
        return store

    def with_timeout(self, seconds: float) -> RemoteStore:
        """The same store with another time limit for queries and small updates (its own
        connections; close it after use)."""
        return RemoteStore(replace(self.endpoints, timeout=seconds), read_only=self.read_only)

    def index_home(self) -> Path:
        """The per-endpoint directory of this machine's indexes derived from the endpoint
        (see :func:`index_directory`), created if missing."""
        home = index_directory(self.location)
        home.mkdir(parents=True, exist_ok=True)
        return home

    def close(self) -> None:
        """Close the connections. Nothing else is held."""
        self._http.close()

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def writer_alive(self) -> bool:
        """Always True: other processes may be writing the endpoint at any time."""
        return True

    def _require_write(self, operation: str) -> None:
        if self.read_only:
            raise StoreReadOnly(operation)

    # ------------------------------------------------------------------ HTTP
    def _send(
        self,
        url: str,
        body: bytes,
        content_type: str,
        *,
        accept: str | None = None,
        reading: bool,
        bulk: bool = False,
    ) -> Response:
        """POST ``body``; the complete answer, or the labbrain error for its failure.

        A write the server rolled back as a deadlock (SQL state 40001 in a 500 answer, as
        Virtuoso gives when two requests write one graph at once) is sent again, after a
        short random pause, up to DEADLOCK_ATTEMPTS times: nothing of it was written.
        """
        from labbrain.store.remote.http import TransportError

        headers = {"Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        timeout = self.endpoints.write_timeout if bulk else self.endpoints.timeout
        for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
            try:
                answer = self._http.request(
                    "POST", url, body=body, headers=headers, retry=reading, timeout=timeout
                )
            except TransportError as err:
                if err.timed_out and reading:
                    raise QueryTimeout(timeout) from None
                raise EndpointError(_shown(url), err.reason) from None
            if answer.server is not None:
                self.server = answer.server
            if answer.ok:
                return answer
            if reading or attempt == DEADLOCK_ATTEMPTS or not _deadlocked(answer):
                raise _status_error(url, answer, reading=reading)
            time.sleep(random.uniform(0, 0.05 * 2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def union_mode(self) -> str:
        """How this store asks for the union of all graphs: the ``endpoint_union`` setting,
        with ``auto`` resolved by the server's name (``dataset`` for Virtuoso, whose default
        graph also holds its own graphs; else ``union-default-graph``)."""
        mode = self.endpoints.union
        if mode != "auto":
            return mode
        return "dataset" if self.is_virtuoso() else "union-default-graph"

    def is_virtuoso(self) -> bool:
        """True when the server names itself Virtuoso (its ``Server`` header), which labbrain
        asks some things differently (see docs/sparql.md, "Virtuoso")."""
        return self._server_is("Virtuoso")

    def _server_is(self, name: str) -> bool:
        """True when the server's ``Server`` header starts with ``name`` (asked with an ASK
        that changes nothing if no answer has come yet)."""
        if self.server is None:
            self.ask("ASK { }")
        return (self.server or "").startswith(name)

    def _post_query(self, sparql: str, union: bool, accept: str = _ACCEPT) -> Response:
        form: list[tuple[str, str]] = [("query", sparql)]
        url = self.endpoints.query
        if union:
            mode = self.union_mode()
            if mode == "union-default-graph":
                url += ("&" if "?" in url else "?") + "union-default-graph"
            elif mode == "dataset":
                for graph in self.graphs():
                    form += [("default-graph-uri", graph), ("named-graph-uri", graph)]
        return self._send(
            url,
            urlencode(form).encode("ascii"),
            "application/x-www-form-urlencoded",
            accept=accept,
            reading=True,
        )

    def _post_update(self, update: str, *, bulk: bool = False) -> None:
        body = urlencode({"update": with_prologue(update)}).encode("ascii")
        self._send(
            self.endpoints.update,
            body,
            "application/x-www-form-urlencoded",
            reading=False,
            bulk=bulk,
        )

    # ------------------------------------------------------------------ reading
    def query(
        self,
        sparql: str,
        *,
        substitutions: Substitutions | None = None,
        union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query remotely; ``substitutions`` are bound by a VALUES block (BINDs
        on Virtuoso); ``base_iri`` is sent as a BASE before the text.

        A SELECT answer is complete or an error, even from a server that cuts answers at a row
        limit: one the server says it cut (a labbrain endpoint's row cap), or one of at least
        ``check_rows`` rows whose count the server puts higher (a silent cut: Virtuoso's
        ``ResultSetMaxRows``), is read again in pages of the size the server gave (see
        :meth:`_pages`). A CONSTRUCT the server says it cut is an EndpointError.

        Syntax errors are found here, before anything is sent, and reported with the same
        positions as the embedded store's.
        """
        form = _check_query_syntax(sparql, base_iri)
        sparql = with_base(sparql, base_iri)
        text, answer, result, size = self._send_query(sparql, substitutions, union, form)
        if form is QueryBoolean and isinstance(result, QuerySolutions):
            return _ask_rows(result, self.endpoints.query)
        if isinstance(result, QuerySolutions) and (
            answer.truncated or size >= self.endpoints.check_rows
        ):
            total = self._count_rows(text, union)
            if answer.truncated or total > size:
                return self._pages(text, union, [v.value for v in result.variables], size, total)
        elif answer.truncated:
            raise EndpointError(
                _shown(self.endpoints.query),
                "cut its answer at its row cap, so it is incomplete; start the labbrain "
                "endpoint with a higher --max-rows (or LABBRAIN_HTTP_MAX_ROWS)",
            )
        return result

    def _send_query(
        self,
        sparql: str,
        substitutions: Substitutions | None,
        union: bool = False,
        form: type = QueryTriples,
    ) -> tuple[str, Response, QueryResult, int]:
        """Send a query once: (its text with the substitutions bound, the answer, the results
        read from it, their number of rows or triples)."""
        text = self._bound(sparql, substitutions)
        accept = _ACCEPT_GRAPH if form is QueryTriples else _ACCEPT
        answer = self._post_query(with_prologue(text), union, accept)
        result, size = _results(answer, self.endpoints.query)
        return text, answer, result, size

    def _bound(self, sparql: str, substitutions: Substitutions | None) -> str:
        """``sparql`` with ``substitutions`` bound (:func:`bind_values`: a VALUES block, BINDs
        on Virtuoso)."""
        if not substitutions:
            return sparql
        return bind_values(sparql, substitutions, binds=self.is_virtuoso())

    def _count_rows(self, text: str, union: bool) -> int:
        """How many rows SELECT query ``text`` has (one row: no server cuts it)."""
        answer = self._post_query(with_prologue(count_query(text)), union)
        rows = list(_results(answer, self.endpoints.query)[0])  # type: ignore[arg-type]
        value = rows[0][COUNT_VARIABLE] if rows else None
        if not isinstance(value, Literal):
            raise EndpointError(_shown(self.endpoints.query), "answered a count without one")
        return int(value.value)

    def _pages(
        self, text: str, union: bool, variables: list[str], page: int, total: int
    ) -> QuerySolutions:
        """All ``total`` rows of SELECT query ``text``, read ``page`` rows at a time (the most
        the server gave at once) in a total order (:func:`page_query`); an EndpointError if
        they do not add up to ``total`` (the server cut a page, or the data changed)."""
        url = self.endpoints.query
        if page <= 0:
            raise EndpointError(_shown(url), f"answered none of a query's {total} rows")
        bindings: list[object] = []
        while len(bindings) < total:
            sparql = page_query(text, variables, page, len(bindings))
            answer = self._post_query(with_prologue(sparql), union, _ACCEPT_JSON)
            if answer.content_type not in _JSON_TYPES:
                raise EndpointError(_shown(url), "answered a page of rows in another format")
            rows = json.loads(answer.body).get("results", {}).get("bindings", [])
            bindings.extend(rows)
            if len(rows) < page:
                break
        if len(bindings) != total:
            raise EndpointError(
                _shown(url),
                f"gave {len(bindings)} of a query's {total} rows when read in pages of {page} "
                "(changed meanwhile, or it cuts pages too); retry, or raise the server's row "
                "limit",
            )
        from labbrain.store.remote.http import Response

        merged = json.dumps({"head": {"vars": variables}, "results": {"bindings": bindings}})
        whole = Response(200, "application/sparql-results+json", merged.encode("utf-8"))
        result, _ = _results(whole, url)
        assert isinstance(result, QuerySolutions)
        return result

    def ask(self, sparql: str, substitutions: Substitutions | None = None) -> bool:
        """The answer of an ASK query."""
        result = self.query(sparql, substitutions=substitutions)
        if not isinstance(result, QueryBoolean):
            raise EndpointError(_shown(self.endpoints.query), "answered an ASK with rows")
        return bool(result)

    def _rows(self, sparql: str, substitutions: Substitutions | None = None) -> QuerySolutions:
        result = self.query(sparql, substitutions=substitutions)
        if not isinstance(result, QuerySolutions):
            raise EndpointError(_shown(self.endpoints.query), "answered a SELECT without rows")
        return result

    def _all_graphs(self) -> list[str]:
        """Every named graph of the endpoint, sorted by IRI (the server's own included).

        Asked as ``GRAPH ?g { }`` (cheap: servers that keep a list of graphs answer from it),
        unless the server answered that with a row without ``?g`` (Virtuoso, which keeps no
        empty graphs and lists none that way): then, and from then on, as the graphs that
        hold a triple, grouped by graph (Virtuoso answers ``GROUP BY ?g`` from its graph
        index in milliseconds, but the same graphs asked with ``DISTINCT`` in 66 s at
        1,500,000 quads: it reads every quad)."""
        if self._lists_empty_graphs:
            rows = list(self._rows("SELECT DISTINCT ?g WHERE { GRAPH ?g { } }"))
            if all(isinstance(row["g"], NamedNode) for row in rows):
                return _named(rows)
            self._lists_empty_graphs = False
        return _named(self._rows("SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"))

    def graphs(self) -> list[str]:
        """Named graphs of the endpoint, sorted by IRI (staging graphs and graphs a first
        load is filling are not listed)."""
        filling = self._claims()
        return [g for g in self._all_graphs() if is_listed_graph(g) and g not in filling]

    def has_graph(self, graph: str) -> bool:
        """True when the endpoint has the named graph and it holds a triple (servers differ
        on empty graphs: Virtuoso keeps none and says yes to ``ASK { GRAPH <any> { } }``)."""
        return self.ask("ASK { GRAPH ?g { ?s ?p ?o } }", {"g": NamedNode(graph)})

    def count(self, graph: str) -> int:
        """Number of quads in ``graph``."""
        rows = list(
            self._rows(
                "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": NamedNode(graph)}
            )
        )
        value = rows[0]["n"] if rows else None
        return int(value.value) if isinstance(value, Literal) else 0

    def quads(
        self, graph: str, subject: NamedNode | None = None, predicate: NamedNode | None = None
    ) -> Iterator[Quad]:
        """Quads of ``graph``, optionally only those with this subject and/or predicate."""
        bound: dict[str, NamedNode] = {"g": NamedNode(graph)}
        if subject is not None:
            bound["s"] = subject
        if predicate is not None:
            bound["p"] = predicate
        name = NamedNode(graph)
        pattern = "WHERE { GRAPH ?g { ?s ?p ?o } }"
        _, answer, result, size = self._send_query(f"CONSTRUCT {{ ?s ?p ?o }} {pattern}", bound)
        if answer.truncated or size >= self.endpoints.check_rows:
            select = f"SELECT ?s ?p ?o {pattern}"
            total = self._count_rows(self._bound(select, bound), False)
            if answer.truncated or total > size:
                # cut: read as rows, in pages of as many as the server gives (a server may cut
                # a CONSTRUCT at another size than rows: Virtuoso gave 1,001 triples, 1,000 rows)
                text, _, first, page = self._send_query(select, bound, form=QuerySolutions)
                rows = (
                    first
                    if page >= total
                    else self._pages(text, False, ["s", "p", "o"], page, total)
                )
                return (Quad(r["s"], r["p"], r["o"], name) for r in rows)  # type: ignore[union-attr]
        return (Quad(t.subject, t.predicate, t.object, name) for t in result)  # type: ignore[union-attr]

    def dump(
        self,
        output: IO[bytes],
        fmt: RdfFormat,
        graphs: list[str] | None = None,
        prefixes: Mapping[str, str] | None = None,
    ) -> None:
        """Write ``graphs`` (default: all named graphs) to ``output`` in ``fmt``, once every
        graph has been read."""
        dump_graphs(self, output, fmt, graphs, prefixes, read_first=True)

    # ------------------------------------------------------------------ writing
    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update remotely, as one request (syntax checked here first)."""
        self._require_write("update")
        _check_update_syntax(sparql, base_iri)
        self._post_update(with_base(sparql, base_iri))

    def add_quads(self, quads: Iterable[Quad]) -> None:
        """Add ``quads`` in one update request."""
        self._require_write("add")
        update = insert_data(quads)
        if update:
            self._post_update(update)

    def remove_quads(self, quads: Iterable[Quad]) -> None:
        """Remove the given quads (absent ones are ignored); they may hold no blank node."""
        self._require_write("remove")
        update = delete_data(quads)
        if update:
            self._post_update(update)

    def apply(self, remove: Iterable[Quad], add: Iterable[Quad]) -> None:
        """Remove ``remove`` and add ``add`` in one update request: both happen or neither."""
        self._require_write("write")
        update = join_updates(delete_data(remove), insert_data(add))
        if update:
            self._post_update(update)

    def drop_graph(self, graph: str) -> None:
        """Remove ``graph``; raise GraphNotFound if it does not exist."""
        self._require_write("drop")
        if not self.has_graph(graph):
            raise GraphNotFound(graph)
        self._post_update(f"DROP SILENT GRAPH {NamedNode(graph)}", bulk=True)

    def drop_stale_staging(self) -> list[str]:
        """Drop what writes that died left (older than a day): staging graphs, and graphs
        filled in place under a claim, with the claim; return the graphs dropped."""
        stale = [g for g in self._all_graphs() if staging_is_stale(g)]
        undo = [f"DROP SILENT GRAPH {NamedNode(g)}" for g in stale]
        for graph, fills in self._claims().items():
            dead = [f for f in fills if staging_is_stale(f)]
            if dead and len(dead) == len(fills):
                stale.append(graph)
                undo.append(f"DROP SILENT GRAPH {NamedNode(graph)}")
            undo.append(_released(graph, dead))
        update = join_updates(*undo)
        if update:
            self._post_update(update, bulk=True)
        return stale

    def replace_graph(
        self,
        graph: str,
        fill: Fill,
        *,
        on_commit: Callable[[QuadStore], None] | None = None,
    ) -> None:
        """Make ``graph`` hold exactly what ``fill`` writes, all or nothing.

        A graph the endpoint does not hold yet is filled in place, once this process has
        claimed it (:meth:`_claim`): a claimed graph is listed nowhere, and nothing is
        copied at the commit. Otherwise (a reload, or another process claimed it first)
        ``fill`` writes into a staging graph, which the commit moves into ``graph``.

        ``on_commit`` gets a view of the store in which ``graph`` reads as what was filled and
        whose writes are collected; one update request then commits (the move and the
        claim's release) with those writes. On any failure what was filled is dropped and the
        store is as it was. Raises LoadInProgress when another process is filling ``graph``
        for the first time.
        """
        self._require_write("replace graph")
        fill_id = new_staging_graph()
        if self._claim(graph, fill_id):
            self._write_graph(graph, graph, fill, on_commit, [_released(graph, [fill_id])])
            return
        claims = self._claims().get(graph, [])
        if any(not staging_is_stale(claim) for claim in claims):
            raise LoadInProgress(graph)
        target, staging = NamedNode(graph), NamedNode(fill_id)
        commit = [f"DROP SILENT GRAPH {target}", f"MOVE SILENT GRAPH {staging} TO {target}"]
        # the claims of fills that died go too: else the graph would stay unlisted, and be
        # dropped as their leftover
        commit.append(_released(graph, claims))
        self._write_graph(graph, fill_id, fill, on_commit, commit)

    def _write_graph(
        self,
        graph: str,
        written: str,
        fill: Fill,
        on_commit: Callable[[QuadStore], None] | None,
        commit: list[str],
    ) -> None:
        """Fill graph ``written`` (``graph`` itself, or a staging graph), then send ``commit``
        and what ``on_commit`` wrote as one update; on any failure drop ``written`` (and the
        claim on ``graph`` when it was filled in place)."""
        try:
            fill(_StagingWriter(self, NamedNode(written)))
            view = _CommitView(self, graph, written)
            if on_commit is not None:
                on_commit(view)
            self._post_update(join_updates(*commit, *view.updates), bulk=True)
        except BaseException:
            undo = [f"DROP SILENT GRAPH {NamedNode(written)}"]
            if written == graph:
                undo.append(_released(graph, self._claims().get(graph, [])))
            try:
                self._post_update(join_updates(*undo), bulk=True)
            except Exception as err:  # the original error matters more
                log.warning("could not drop %s: %s", written, err)
            raise

    def _claim(self, graph: str, fill_id: str) -> bool:
        """Claim ``graph`` for a fill in place (``<graph> lb:fillingAs <fill_id>`` in the
        system graph); True when the claim landed, i.e. ``graph`` held no triple and no other
        process had claimed it. Whether it landed is read back, since an update answers the
        same either way."""
        self._post_update(claim_update(graph, fill_id))
        return fill_id in self._claims().get(graph, [])

    def _claims(self) -> dict[str, list[str]]:
        """Graph -> the fills that claim it (normally none or one)."""
        found: dict[str, list[str]] = {}
        for row in templates.rows(self, "filling_graphs"):
            found.setdefault(row["graph"], []).append(row["fill"])
        return found

    def _write_triples(self, staging: NamedNode, triples: Iterable[Triple]) -> None:
        """Add triples to the graph being filled, by GSP POSTs or INSERT DATA updates. The
        Oxigraph server loads a POST marked ``no_transaction`` with its bulk loader: the
        graph is not read until the commit, and is dropped whole on a failure."""
        gsp = self.endpoints.gsp
        size = GSP_CHUNK if gsp else INSERT_CHUNK
        for chunk in blank_node_safe_chunks(triples, size):
            if gsp:
                params = [("graph", staging.value)]
                if self._server_is("Oxigraph"):
                    params.append(("no_transaction", ""))
                url = gsp + ("&" if "?" in gsp else "?") + urlencode(params)
                data = serialize(chunk, format=RdfFormat.N_TRIPLES) or b""
                self._send(url, data, "application/n-triples", reading=False, bulk=True)
            else:
                self._post_update(insert_data(chunk, staging), bulk=True)


class _StagingWriter(ThreadBoundWriter):
    """The GraphWriter of a remote replace_graph: parts go to the staging graph, from the
    thread that made it only (ThreadBoundWriter)."""

    def __init__(self, store: RemoteStore, staging: NamedNode) -> None:
        super().__init__()
        self._store = store
        self._staging = staging

    def write(self, part: GraphPart) -> None:
        self._check_thread()
        if isinstance(part, RdfDocument):
            triples: Iterable[Triple] = _parsed(part)
        else:
            triples = (item.triple if isinstance(item, Quad) else item for item in part)
        self._store._write_triples(self._staging, triples)


def _parsed(part: RdfDocument) -> Iterator[Triple]:
    """The triples of a document (quads of any graph included), parsed locally; a syntax
    error is reported as the embedded store reports it."""
    try:
        for quad in parse(part.data, part.format, rename_blank_nodes=True):
            yield quad.triple
    except SyntaxError as err:
        raise ExportFormatError(
            part.label, f"invalid {part.format.name}: {str(err).strip()}"
        ) from None


class _CommitView:
    """What ``on_commit`` sees during a remote replace_graph: the store, with the target
    graph read from the staging graph, and writes collected to go into the commit request."""

    def __init__(self, store: RemoteStore, target: str, staging: str) -> None:
        self._store = store
        self._target = target
        self._staging = staging
        self.updates: list[str] = []
        self.location = store.location
        self.read_only = False
        self.shared = True
        self.directory: Path | None = None
        self.recovered = False
        self.restore_undone = False

    def _graph(self, graph: str) -> str:
        return self._staging if graph == self._target else graph

    def query(
        self,
        sparql: str,
        *,
        substitutions: Substitutions | None = None,
        union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        return self._store.query(
            sparql, substitutions=substitutions, union=union, base_iri=base_iri
        )

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        _check_update_syntax(sparql, base_iri)
        self.updates.append(with_base(sparql, base_iri))

    def add_quads(self, quads: Iterable[Quad]) -> None:
        self.updates.append(insert_data(quads))

    def remove_quads(self, quads: Iterable[Quad]) -> None:
        self.updates.append(delete_data(quads))

    def apply(self, remove: Iterable[Quad], add: Iterable[Quad]) -> None:
        self.updates.append(join_updates(delete_data(remove), insert_data(add)))

    def quads(
        self, graph: str, subject: NamedNode | None = None, predicate: NamedNode | None = None
    ) -> Iterator[Quad]:
        name = NamedNode(graph)
        return (
            Quad(q.subject, q.predicate, q.object, name)
            for q in self._store.quads(self._graph(graph), subject, predicate)
        )

    def count(self, graph: str) -> int:
        return self._store.count(self._graph(graph))

    def has_graph(self, graph: str) -> bool:
        return self._store.has_graph(self._graph(graph))

    def graphs(self) -> list[str]:
        return self._store.graphs()

    def replace_graph(
        self, graph: str, fill: Fill, *, on_commit: Callable[[QuadStore], None] | None = None
    ) -> None:
        raise StoreReadOnly("replace graph (inside a commit)")

    def drop_graph(self, graph: str) -> None:
        self.updates.append(f"DROP SILENT GRAPH {NamedNode(self._graph(graph))}")

    def dump(
        self,
        output: IO[bytes],
        fmt: RdfFormat,
        graphs: list[str] | None = None,
        prefixes: Mapping[str, str] | None = None,
    ) -> None:
        self._store.dump(output, fmt, graphs, prefixes)

    def writer_alive(self) -> bool:
        return True

    def index_home(self) -> Path:
        return self._store.index_home()

    def with_timeout(self, seconds: float) -> None:
        del seconds  # a commit's reads go through its store, with the store's limit
        return None

    def drop_stale_staging(self) -> list[str]:
        raise StoreReadOnly("drop stale staging graphs (inside a commit)")

    def close(self) -> None:
        """Nothing to release: the view belongs to its store."""


# ---------------------------------------------------------------------------- answers
def _check_query_syntax(sparql: str, base_iri: str | None = None) -> type:
    """Parse ``sparql`` with pyoxigraph (on an empty store, nothing is evaluated); the kind
    of answer it has: QuerySolutions (SELECT), QueryBoolean (ASK) or QueryTriples
    (CONSTRUCT, DESCRIBE)."""
    try:
        result = Store().query(sparql, prefixes=PREFIXES, base_iri=base_iri)
    except SyntaxError as err:
        raise parse_syntax_error(err, sparql) from None
    return type(result)


def _ask_rows(rows: QuerySolutions, url: str) -> QueryBoolean:
    """The boolean of an ASK that Virtuoso answered as rows: one binding ``__ASK_RETVAL`` to
    1 (true), or no row (false)."""
    if [v.value for v in rows.variables] == [_VIRTUOSO_ASK]:
        values = [row[_VIRTUOSO_ASK] for row in rows]
        if not values or (
            len(values) == 1 and isinstance(values[0], Literal) and values[0].value in ("0", "1")
        ):
            truth = bool(values) and values[0].value == "1"
            answer = parse_query_results(
                b'{"head": {}, "boolean": ' + (b"true" if truth else b"false") + b"}",
                QueryResultsFormat.JSON,
            )
            assert isinstance(answer, QueryBoolean)
            return answer
    raise EndpointError(_shown(url), "answered an ASK with rows")


def _named(rows: Iterable[Mapping[str, object]] | QuerySolutions) -> list[str]:
    """The graph IRIs bound to ``?g`` in ``rows``, sorted."""
    return sorted(g.value for row in rows if isinstance(g := row["g"], NamedNode))


def _check_update_syntax(sparql: str, base_iri: str | None = None) -> None:
    """Parse an update with pyoxigraph without running it anywhere that matters: on an
    empty in-memory store, after refusing LOAD and SERVICE (which would reach the network)."""
    check_update(sparql)
    try:
        Store().update(sparql, prefixes=PREFIXES, base_iri=base_iri)
    except SyntaxError as err:
        raise parse_syntax_error(err, sparql, update=True) from None
    except (RuntimeError, OSError):
        pass  # a runtime failure on the empty store (e.g. MOVE of a missing graph) is fine


def _standard_json(body: bytes) -> bytes:
    """SPARQL JSON results as the standard spells them, where Virtuoso does not: every
    ``xsd:boolean`` as ``true`` / ``false`` (Virtuoso: ``1`` / ``0``, also in the lexical
    space, but not what other stores give), and blank nodes by their label (Virtuoso:
    ``nodeID://b10001``, not a blank node label)."""
    if _BOOLEAN in body:
        body = _BOOLEAN_DIGIT.sub(lambda m: m[1] + (b"true" if m[2] == b"1" else b"false"), body)
    if _NODE_ID in body:
        body = _BNODE_ID.sub(rb"\1", body)
    return _canonical_times(body, _JSON_TIME)


def _canonical_times(body: bytes, pattern: re.Pattern[bytes]) -> bytes:
    """Every ``xsd:dateTime`` that ``pattern`` finds in canonical form: fractional seconds
    without trailing zeros (Virtuoso gives ``.790Z`` back for ``.79Z``; Oxigraph keeps the
    canonical form, as the embedded store does)."""
    if _DATE_TIME not in body:
        return body
    return pattern.sub(lambda m: m[1] + (m[2].rstrip(b"0").rstrip(b".")) + m[3], body)


def _results(answer: Response, url: str) -> tuple[QueryResult, int]:
    """The answer as pyoxigraph query results, checked completely before it is returned, and
    their number of rows (triples of a graph; 1 for a boolean)."""
    body = answer.body
    if answer.content_type in _JSON_TYPES:
        body = _standard_json(body)
    results_format = _RESULT_TYPES.get(answer.content_type)
    graph_format = _GRAPH_TYPES.get(answer.content_type)
    if results_format is None and graph_format is None:
        raise EndpointError(
            _shown(url), f"answered a query with unexpected content {answer.content_type!r}"
        )
    try:
        if results_format is not None:
            checked = parse_query_results(body, results_format)
            size = sum(1 for _ in checked) if isinstance(checked, QuerySolutions) else 1
            return parse_query_results(body, results_format), size
        assert graph_format is not None
        if graph_format is RdfFormat.N_TRIPLES:
            body = _canonical_times(body, _NT_TIME)
        triples = [quad.triple for quad in parse(body, graph_format)]
    except SyntaxError:
        if _CANCELLED.encode() in body[-200:]:
            raise QueryError(
                "the endpoint stopped the query at its own time limit; narrow it (LIMIT, "
                "fewer OPTIONALs, a GRAPH)"
            ) from None
        raise EndpointError(_shown(url), "sent a broken answer (cut short?)") from None
    holder = Store()
    holder.extend(Quad(t.subject, t.predicate, t.object) for t in triples)
    return holder.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"), len(holder)


def _released(graph: str, fills: Iterable[str]) -> str:
    """The update removing the claims of ``fills`` on ``graph`` ("" when there are none)."""
    return delete_data([fill_marker(graph, fill_id) for fill_id in fills])


def _deadlocked(answer: Response) -> bool:
    """True for a server error that says the request was rolled back as a deadlock (SQL
    state 40001, serialization failure: Virtuoso's ``SR172: Transaction deadlocked``)."""
    return answer.status >= 500 and b"40001" in answer.body[:1000]


def _status_error(url: str, answer: Response, *, reading: bool) -> Exception:
    """The labbrain error for a non-2xx answer. Refused credentials are named by where they
    come from (``answer.credentials``), never by their value."""
    shown = _shown(url)
    status = answer.status
    detail = answer.text()
    if status == 400:
        return QueryError(f"the endpoint refused the request: {detail or 'bad request'}")
    if status in (403, 405) and not reading:
        return EndpointReadOnly(shown, status, answer.credentials)
    if status == 401:
        return EndpointError(shown, refusal(answer.credentials, answer.challenges))
    if status == 403:
        if answer.credentials is not None:
            why = f"the credentials from {answer.credentials} may not read it"
        else:
            why = f"it may need credentials: {HOW_TO_SET}"
        return EndpointError(shown, f"refused the request (HTTP 403); {why}")
    if status == 404:
        return EndpointError(shown, f"not found (HTTP 404); check the URL ({detail})")
    if 300 <= status < 400:
        where = f" to {_shown(answer.location)}" if answer.location else ""
        return EndpointError(shown, f"redirects (HTTP {status}){where}; give that URL instead")
    return EndpointError(shown, f"failed (HTTP {status}): {detail or 'no message'}")


def _shown(url: str) -> str:
    """A URL as shown in messages: without query string (settings forbid credentials)."""
    parts = urlsplit(url)
    return parts._replace(query="", fragment="").geturl()
