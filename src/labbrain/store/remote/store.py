"""The remote backend: a :class:`~labbrain.store.QuadStore` over SPARQL 1.1 HTTP.

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
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO
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
    QueryError,
    QueryTimeout,
    SettingsError,
    StoreReadOnly,
)
from labbrain.rdf.namespaces import PREFIXES, STAGING_PREFIX
from labbrain.rdf.sparql_policy import check_update
from labbrain.settings import Settings
from labbrain.store.base import (
    Fill,
    GraphPart,
    QuadStore,
    QueryResult,
    RdfDocument,
    Substitutions,
    dump_graphs,
    parse_syntax_error,
)
from labbrain.store.remote.http import HttpClient, Response, TransportError
from labbrain.store.remote.sparql import (
    bind_values,
    blank_node_safe_chunks,
    delete_data,
    insert_data,
    join_updates,
    new_staging_graph,
    staging_is_stale,
    with_prologue,
)

log = logging.getLogger("labbrain.store.remote.store")

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
#: The variable Virtuoso binds to 1 when it answers a true ASK query as a row (a false one: no row).
_VIRTUOSO_ASK = "__ASK_RETVAL"


@dataclass(frozen=True)
class Endpoints:
    """Where a remote store answers: query, update, and (optionally) Graph Store Protocol
    URLs, the Authorization header value, and how to ask for the union of all graphs."""

    query: str
    update: str
    gsp: str | None = None
    authorization: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    write_timeout: float = 3600.0
    union: str = "union-default-graph"

    @classmethod
    def from_settings(cls, settings: Settings) -> Endpoints:
        """The endpoints the settings name; raises SettingsError when there is none."""
        if not settings.endpoint:
            raise SettingsError("no LABBRAIN_ENDPOINT (--endpoint) is set")
        query = settings.endpoint
        update = settings.update_endpoint or default_update_endpoint(query)
        auth = settings.endpoint_auth.get_secret_value() if settings.endpoint_auth else None
        return cls(
            query=query,
            update=update,
            gsp=settings.gsp_endpoint,
            authorization=auth,
            timeout=settings.endpoint_timeout_seconds,
            write_timeout=settings.endpoint_write_timeout_seconds,
            union=settings.endpoint_union,
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
        self.endpoints = endpoints
        self.read_only = read_only
        self.location = endpoints.query
        self._http = HttpClient(timeout=endpoints.timeout, authorization=endpoints.authorization)

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
        headers = {"Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        timeout = self.endpoints.write_timeout if bulk else self.endpoints.timeout
        try:
            answer = self._http.request(
                "POST", url, body=body, headers=headers, retry=reading, timeout=timeout
            )
        except TransportError as err:
            if err.timed_out and reading:
                raise QueryTimeout(timeout) from None
            raise EndpointError(_shown(url), err.reason) from None
        if not answer.ok:
            raise _status_error(url, answer, reading=reading)
        return answer

    def _post_query(self, sparql: str, union: bool, accept: str = _ACCEPT) -> Response:
        form: list[tuple[str, str]] = [("query", sparql)]
        url = self.endpoints.query
        if union:
            if self.endpoints.union == "union-default-graph":
                url += ("&" if "?" in url else "?") + "union-default-graph"
            elif self.endpoints.union == "dataset":
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
        self, sparql: str, *, substitutions: Substitutions | None = None, union: bool = False
    ) -> QueryResult:
        """Run a SPARQL query remotely; ``substitutions`` are bound by a VALUES block.

        An answer the server says it cut (a labbrain endpoint's row cap) is an EndpointError,
        never taken as complete.

        Syntax errors are found here, before anything is sent, and reported with the same
        positions as the embedded store's.
        """
        form = _check_query_syntax(sparql)
        text = bind_values(sparql, substitutions) if substitutions else sparql
        accept = _ACCEPT_GRAPH if form is QueryTriples else _ACCEPT
        answer = self._post_query(with_prologue(text), union, accept)
        if answer.truncated:
            raise EndpointError(
                _shown(self.endpoints.query),
                "cut its answer at its row cap, so it is incomplete; start the labbrain "
                "endpoint with a higher --max-rows (or LABBRAIN_HTTP_MAX_ROWS)",
            )
        result = _results(answer, self.endpoints.query)
        if form is QueryBoolean and isinstance(result, QuerySolutions):
            return _ask_rows(result, self.endpoints.query)
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
        rows = self._rows("SELECT DISTINCT ?g WHERE { GRAPH ?g { } }")
        return sorted(row["g"].value for row in rows if isinstance(row["g"], NamedNode))

    def graphs(self) -> list[str]:
        """Named graphs of the endpoint, sorted by IRI (staging graphs are not listed)."""
        return [g for g in self._all_graphs() if not g.startswith(STAGING_PREFIX)]

    def has_graph(self, graph: str) -> bool:
        """True when the endpoint has the named graph."""
        return self.ask("ASK { GRAPH ?g { } }", {"g": NamedNode(graph)})

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
        result = self.query(
            "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }", substitutions=bound
        )
        name = NamedNode(graph)
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
    def update(self, sparql: str) -> None:
        """Run a SPARQL update remotely, as one request (syntax checked here first)."""
        self._require_write("update")
        _check_update_syntax(sparql)
        self._post_update(sparql)

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
        """Drop staging graphs left by writes that died (older than a day); return them."""
        stale = [g for g in self._all_graphs() if staging_is_stale(g)]
        if stale:
            drops = (f"DROP SILENT GRAPH {NamedNode(g)}" for g in stale)
            self._post_update(join_updates(*drops), bulk=True)
        return stale

    def replace_graph(
        self,
        graph: str,
        fill: Fill,
        *,
        on_commit: Callable[[QuadStore], None] | None = None,
    ) -> None:
        """Make ``graph`` hold exactly what ``fill`` writes, all or nothing.

        ``fill`` writes into a staging graph; ``on_commit`` gets a view of the store in which
        ``graph`` reads as the staging graph and whose writes are collected; then one update
        request moves the staging graph into ``graph`` and applies those writes. On any
        failure the staging graph is dropped and the store is as it was.
        """
        self._require_write("replace graph")
        staging = new_staging_graph()
        target = NamedNode(graph)
        try:
            fill(_StagingWriter(self, NamedNode(staging)))
            view = _CommitView(self, graph, staging)
            if on_commit is not None:
                on_commit(view)
            self._post_update(
                join_updates(
                    f"DROP SILENT GRAPH {target}",
                    f"MOVE SILENT GRAPH {NamedNode(staging)} TO {target}",
                    *view.updates,
                ),
                bulk=True,
            )
        except BaseException:
            try:
                self._post_update(f"DROP SILENT GRAPH {NamedNode(staging)}", bulk=True)
            except Exception as err:  # the original error matters more
                log.warning("could not drop staging graph %s: %s", staging, err)
            raise

    def _write_triples(self, staging: NamedNode, triples: Iterable[Triple]) -> None:
        """Add triples to the staging graph, by GSP POSTs or INSERT DATA updates."""
        gsp = self.endpoints.gsp
        size = GSP_CHUNK if gsp else INSERT_CHUNK
        for chunk in blank_node_safe_chunks(triples, size):
            if gsp:
                url = gsp + ("&" if "?" in gsp else "?") + urlencode({"graph": staging.value})
                data = serialize(chunk, format=RdfFormat.N_TRIPLES) or b""
                self._send(url, data, "application/n-triples", reading=False, bulk=True)
            else:
                self._post_update(insert_data(chunk, staging), bulk=True)


class _StagingWriter:
    """The GraphWriter of a remote replace_graph: parts go to the staging graph."""

    def __init__(self, store: RemoteStore, staging: NamedNode) -> None:
        self._store = store
        self._staging = staging

    def write(self, part: GraphPart) -> None:
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
        self, sparql: str, *, substitutions: Substitutions | None = None, union: bool = False
    ) -> QueryResult:
        return self._store.query(sparql, substitutions=substitutions, union=union)

    def update(self, sparql: str) -> None:
        _check_update_syntax(sparql)
        self.updates.append(sparql)

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
def _check_query_syntax(sparql: str) -> type:
    """Parse ``sparql`` with pyoxigraph (on an empty store, nothing is evaluated); the kind
    of answer it has: QuerySolutions (SELECT), QueryBoolean (ASK) or QueryTriples
    (CONSTRUCT, DESCRIBE)."""
    try:
        result = Store().query(sparql, prefixes=PREFIXES)
    except SyntaxError as err:
        raise parse_syntax_error(err) from None
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


def _check_update_syntax(sparql: str) -> None:
    """Parse an update with pyoxigraph without running it anywhere that matters: on an
    empty in-memory store, after refusing LOAD and SERVICE (which would reach the network)."""
    check_update(sparql)
    try:
        Store().update(sparql, prefixes=PREFIXES)
    except SyntaxError as err:
        raise parse_syntax_error(err) from None
    except (RuntimeError, OSError):
        pass  # a runtime failure on the empty store (e.g. MOVE of a missing graph) is fine


def _results(answer: Response, url: str) -> QueryResult:
    """The answer as pyoxigraph query results, checked completely before it is returned."""
    body = answer.body
    results_format = _RESULT_TYPES.get(answer.content_type)
    graph_format = _GRAPH_TYPES.get(answer.content_type)
    if results_format is None and graph_format is None:
        raise EndpointError(
            _shown(url), f"answered a query with unexpected content {answer.content_type!r}"
        )
    try:
        if results_format is not None:
            checked = parse_query_results(body, results_format)
            if isinstance(checked, QuerySolutions):
                for _ in checked:
                    pass
            return parse_query_results(body, results_format)
        assert graph_format is not None
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
    return holder.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")


def _status_error(url: str, answer: Response, *, reading: bool) -> Exception:
    """The labbrain error for a non-2xx answer."""
    shown = _shown(url)
    status = answer.status
    detail = answer.text()
    if status == 400:
        return QueryError(f"the endpoint refused the request: {detail or 'bad request'}")
    if status in (403, 405) and not reading:
        return EndpointReadOnly(shown, status)
    if status in (401, 403):
        return EndpointError(
            shown, f"refused the request (HTTP {status}); check LABBRAIN_ENDPOINT_AUTH"
        )
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
