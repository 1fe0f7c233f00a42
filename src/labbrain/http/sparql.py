"""The SPARQL 1.1 Protocol at ``/sparql`` and the Graph Store Protocol (reading) at
``/rdf-graphs``.

- Queries: ``GET /sparql?query=...``, ``POST`` form (``query=``) or ``POST`` with
  ``Content-Type: application/sparql-query``. The default graph is the union of all named
  graphs, unless the query has FROM / FROM NAMED clauses. Answers by content negotiation
  (Accept, or a ``format`` parameter), at most ``LABBRAIN_HTTP_MAX_ROWS`` rows
  (``X-Labbrain-Truncated: true`` when cut), within ``LABBRAIN_HTTP_QUERY_TIMEOUT_SECONDS``
  (see http.pool).
- Updates: ``POST`` form (``update=``) or ``Content-Type: application/sparql-update``, only
  when the server was started with ``--allow-update``, and only with
  ``Authorization: Bearer <LABBRAIN_UPDATE_TOKEN>``.
- ``GET /sparql`` without a query: the service description (sd: vocabulary).
- ``GET /rdf-graphs?graph=IRI``: one named graph; ``?default``: the default graph (the
  union of all named graphs).

The protocol's dataset parameters ``default-graph-uri`` and ``named-graph-uri`` (each may
be given several times) set a query's dataset, overriding its FROM / FROM NAMED clauses
(http.dataset); a graph the store does not hold is an empty graph (named in the
``X-Labbrain-Empty-Graphs`` header). SERVICE and LOAD are refused. An update's
``using-graph-uri`` and ``using-named-graph-uri`` become USING and USING NAMED clauses
(:func:`~labbrain.http.dataset.with_using`).
"""

from __future__ import annotations

import hmac
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from urllib.parse import parse_qs, parse_qsl

import anyio
import anyio.to_thread
from pyoxigraph import BlankNode, Literal, NamedNode, RdfFormat, Triple
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from labbrain import __version__
from labbrain.core import LabBrain
from labbrain.errors import GraphNotFound, LabbrainError, QueryError, QuerySyntaxError
from labbrain.http.dataset import (
    query_dataset,
    refuse_for_query,
    update_dataset,
    with_dataset,
    with_using,
)
from labbrain.http.errors import HttpError, from_http_error, from_library_error
from labbrain.http.lookup import answers_in_process
from labbrain.http.page import PAGE_HEADERS
from labbrain.http.pool import QueryJob, QueryRunner, run_here
from labbrain.http.results import (
    GRAPH_FORMATS,
    PAGE,
    RESULT_FORMATS,
    Format,
    choose_format,
    format_named,
    write_graph,
)
from labbrain.rdf.namespaces import DCT, RDF, SD, W3C_FORMATS, graph_iri
from labbrain.rdf.sparql_policy import check_query, dataset_graphs
from labbrain.store.base import QuadStore, query_syntax_error
from labbrain.store.fresh import FreshStore
from labbrain.store.remote.http import TRUNCATED_HEADER
from labbrain.store.threads import confined

#: The answer's header naming the graphs a query named (FROM, FROM NAMED, the dataset
#: parameters) that the store does not hold: each was an empty graph, nothing was fetched.
EMPTY_GRAPHS_HEADER = "X-Labbrain-Empty-Graphs"

#: pyoxigraph names JSON-LD by a newer IRI; the W3C formats namespace calls it formats:JSON-LD.
_FORMAT_IRIS = {"jsonld": W3C_FORMATS + "JSON-LD"}
FORM = "application/x-www-form-urlencoded"
QUERY_TYPE = "application/sparql-query"
UPDATE_TYPE = "application/sparql-update"


@dataclass
class Endpoint:
    """What the protocol handlers share: the opened store, the query runner, the row cap
    and time limit (None: none), and whether (and with which token) updates are taken."""

    brain: LabBrain
    runner: QueryRunner
    max_rows: int
    timeout_seconds: float | None = None
    allow_update: bool = False
    update_token: str | None = None
    #: The store bounded lookups (http.lookup) are answered from in this process; None: every
    #: query goes to the runner.
    lookups: QuadStore | None = None
    update_lock: anyio.Lock = field(default_factory=anyio.Lock)
    #: Threads that may wait for a query worker at once (more requests queue for a thread),
    #: so that waiting queries never take every thread other requests need.
    query_threads: int = 16
    _limiter: anyio.CapacityLimiter | None = field(default=None, repr=False)

    def limiter(self) -> anyio.CapacityLimiter:
        """The limiter of query threads (made in the event loop on first use)."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.query_threads)
        return self._limiter


def _endpoint(request: Request) -> Endpoint:
    endpoint: Endpoint = request.app.state.endpoint
    return endpoint


# ---------------------------------------------------------------------------- reading input
def _single(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name, [])
    if len(values) > 1:
        raise HttpError(
            400, "ProtocolError", f"give the {name} parameter once, not {len(values)} times"
        )
    return values[0] if values else None


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def parameters(
    method: str, query_string: bytes, media: str, body: bytes
) -> tuple[dict[str, list[str]], str | None, str | None]:
    """(all parameters, query text, update text) of a protocol request: its method, raw
    query string, media type (lower case, no parameters) and body. Raise HttpError for a
    request the protocol does not allow."""
    params: dict[str, list[str]] = {}
    # As starlette reads a query string (Request.query_params).
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        params.setdefault(key, []).append(value)
    query: str | None = None
    update: str | None = None
    if method == "POST":
        if media == FORM:
            for key, values in _form(body):
                params.setdefault(key, []).extend(values)
        elif media == QUERY_TYPE:
            query = _utf8(body)
        elif media == UPDATE_TYPE:
            update = _utf8(body)
        else:
            raise HttpError(
                415,
                "UnsupportedMediaType",
                f"POST a query as {FORM} (query= or update=), {QUERY_TYPE} or {UPDATE_TYPE}",
            )
    elif "update" in params:
        raise HttpError(
            405, "MethodNotAllowed", "updates must be sent with POST", headers={"Allow": "POST"}
        )
    query = query if query is not None else _single(params, "query")
    update = update if update is not None else _single(params, "update")
    if query is not None and update is not None:
        raise HttpError(400, "ProtocolError", "give a query or an update, not both")
    if update is not None:
        update_dataset(params)  # checked here: a request the protocol does not allow
    else:
        refuse_for_query(params)
    return params, query, update


#: Form bodies up to this size have their parsed fields kept (clients send the same
#: query again and again; percent-decoding one costs more than answering a lookup).
CACHED_FORM = 16_384


def _form(body: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The fields of a form-encoded body, each name with its values in order (cached for
    small bodies: a pure function of the bytes). Raise HttpError when it is not UTF-8."""
    if len(body) > CACHED_FORM:
        return _read_form(body)
    return _cached_form(body)


def _read_form(body: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
    fields = parse_qs(_utf8(body), keep_blank_values=True)
    return tuple((key, tuple(values)) for key, values in fields.items())


_cached_form = lru_cache(maxsize=256)(_read_form)


def _utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpError(400, "ProtocolError", "the request body is not UTF-8") from None


async def _parameters(request: Request) -> tuple[dict[str, list[str]], str | None, str | None]:
    """(all parameters, query text, update text) of a protocol request."""
    body = await request.body() if request.method == "POST" else b""
    return parameters(request.method, request.scope["query_string"], _media_type(request), body)


# ---------------------------------------------------------------------------- /sparql
async def sparql(request: Request) -> Response:
    """The SPARQL 1.1 Protocol endpoint (queries, updates, service description)."""
    endpoint = _endpoint(request)
    params, query, update = await _parameters(request)
    requested = _single(params, "format")
    if update is not None:
        return await _update(request, endpoint, with_using(update, update_dataset(params)))
    if query is None:
        return await _service_description(request, endpoint, requested)
    status, headers, body = await answer_query(
        endpoint, params, query, request.headers.get("accept"), base_iri=_own_url(request.url)
    )
    return Response(body, status_code=status, headers=dict(headers))


def _own_url(url: URL) -> str:
    """The endpoint's URL, without query or fragment: the base of relative IRIs in its
    queries and updates (as the Oxigraph server resolves them)."""
    return str(url.replace(query="", fragment=""))


async def answer_query(
    endpoint: Endpoint,
    params: Mapping[str, list[str]],
    query: str,
    accept: str | None,
    *,
    base_iri: str | None = None,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of the answer to a query request: its dataset parameters
    applied, the policy checked (rdf.sparql_policy), then run either here (a bounded lookup, see
    http.lookup) or on the runner (a worker process with the time limit), at most
    ``max_rows`` rows; relative IRIs resolved against ``base_iri`` (the endpoint's URL).
    Raise HttpError or LabbrainError for an answer that is an error."""
    requested = _single(params, "format")
    if not query.strip():
        raise HttpError(400, "ProtocolError", "the query is empty")
    asked, query = query, with_dataset(query, query_dataset(params))
    try:
        return await _answer(endpoint, query, requested, accept, base_iri)
    except QuerySyntaxError:
        if query == asked:
            raise
        # The engine parsed the text with the dataset written in: say where the error is
        # in the text the client sent.
        raise query_syntax_error(asked, base_iri) or QuerySyntaxError(
            "the query does not parse"
        ) from None


async def _answer(
    endpoint: Endpoint,
    query: str,
    requested: str | None,
    accept: str | None,
    base_iri: str | None,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of ``query`` (its dataset clause final): see answer_query."""
    store = endpoint.brain.store
    # Graphs named (FROM, or the dataset parameters) that the store does not hold are empty
    # graphs, never fetched; the answer says which.
    absent = check_query(query, graphs=store.graphs)
    job = QueryJob(
        query=query,
        accept=accept,
        format=requested,
        max_rows=endpoint.max_rows,
        union=not dataset_graphs(query),
        base_iri=base_iri,
    )
    if endpoint.lookups is not None and answers_in_process(query, endpoint.max_rows):
        # Bounded (http.lookup): no worker is needed to stop it, so it runs here, on the
        # event loop. Opening a new view of a store another process wrote (some ms) is
        # done on a thread instead.
        store = endpoint.lookups
        if isinstance(store, FreshStore):
            view = store.current_view()
            store = (
                view if view is not None else await anyio.to_thread.run_sync(confined(store.view))
            )
        answer = run_here(store, job)
    else:
        answer = await anyio.to_thread.run_sync(
            confined(endpoint.runner.run), job, limiter=endpoint.limiter()
        )
    fmt = format_named(answer.format)
    headers = [
        ("content-type", fmt.content_type),
        ("vary", "Accept"),
        ("cache-control", "no-store"),
    ]
    if absent:
        headers.append((EMPTY_GRAPHS_HEADER.lower(), " ".join(f"<{iri}>" for iri in absent)))
    if answer.truncated:
        headers.append((TRUNCATED_HEADER.lower(), "true"))
        headers.append(("x-labbrain-max-rows", str(endpoint.max_rows)))
    if fmt is PAGE:
        headers.extend((key.lower(), value) for key, value in PAGE_HEADERS.items())
    return 200, headers, answer.body


class QueryRequests:
    """ASGI middleware answering SPARQL query requests (``GET`` / ``POST`` on ``/sparql``)
    without the router and request objects: the same parameters (:func:`parameters`), the
    same answer (:func:`answer_query`) and the same error bodies as the ``/sparql`` route,
    which still takes everything else (updates, the service description, other methods).
    It goes after the Guard, which has then checked Host, Origin and size."""

    def __init__(self, app: ASGIApp, *, endpoint: Endpoint, path: str = "/sparql") -> None:
        self.app = app
        self.endpoint = endpoint
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != self.path
            or scope.get("root_path")
            or scope["method"] not in ("GET", "POST")
        ):
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        media = ""
        accept: str | None = None
        for key, value in scope["headers"]:
            if key == b"content-type":
                media = value.decode("latin-1").split(";")[0].strip().lower()
            elif key == b"accept":
                accept = value.decode("latin-1")
        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            params, query, update = parameters(method, scope["query_string"], media, body)
            if update is not None or query is None:
                await self.app(scope, _replay(body, receive), send)
                return
            own = _own_url(URL(scope=scope))
            status, headers, content = await answer_query(
                self.endpoint, params, query, accept, base_iri=own
            )
        except HttpError as error:
            await from_http_error(error)(scope, receive, send)
            return
        except LabbrainError as error:
            await from_library_error(error)(scope, receive, send)
            return
        headers.append(("content-length", str(len(content))))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            }
        )
        await send({"type": "http.response.body", "body": content})


def _body(body: bytes, fmt: Format, headers: dict[str, str]) -> Response:
    response = Response(body, headers=headers)
    response.headers["Content-Type"] = fmt.content_type
    return response


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` once, then whatever ``receive`` gives."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _authorize(request: Request, endpoint: Endpoint) -> None:
    """Raise HttpError unless this endpoint takes updates and the request has its token."""
    if not endpoint.allow_update or not endpoint.update_token:
        raise HttpError(
            403,
            "UpdateNotAllowed",
            "this endpoint is read-only; a server started with --allow-update (and "
            "LABBRAIN_UPDATE_TOKEN set) takes updates",
        )
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HttpError(
            401,
            "Unauthorized",
            "updates need the header Authorization: Bearer <token> (the server's "
            "LABBRAIN_UPDATE_TOKEN)",
            headers={"WWW-Authenticate": 'Bearer realm="labbrain"'},
        )
    if not hmac.compare_digest(token.strip().encode(), endpoint.update_token.encode()):
        raise HttpError(403, "Forbidden", "the update token is wrong")


async def _update(request: Request, endpoint: Endpoint, text: str) -> Response:
    _authorize(request, endpoint)
    if not text.strip():
        raise HttpError(400, "ProtocolError", "the update is empty")
    async with endpoint.update_lock:
        try:
            await anyio.to_thread.run_sync(
                confined(
                    partial(endpoint.brain.query, text, update=True, base_iri=_own_url(request.url))
                )
            )
        except RuntimeError as error:
            # Raised by the engine while running the update (e.g. CLEAR GRAPH or DROP GRAPH
            # without SILENT on a graph the store does not hold): the request's fault, said
            # as a query's evaluation error is (http.pool), not an internal error.
            raise QueryError(_first_line(error)) from None
    return Response(status_code=204)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# ---------------------------------------------------------------------------- description
def describe_service(endpoint_url: str, graphs: list[str], *, allow_update: bool) -> list[Triple]:
    """The service description of the endpoint at ``endpoint_url`` as triples."""
    service = NamedNode(endpoint_url)
    dataset = BlankNode()
    default_graph = BlankNode()

    def sd(local: str) -> NamedNode:
        return NamedNode(SD + local)

    a = NamedNode(RDF + "type")
    triples = [
        Triple(service, a, sd("Service")),
        Triple(service, sd("endpoint"), service),
        Triple(
            service, NamedNode(DCT + "title"), Literal(f"labbrain {__version__} SPARQL endpoint")
        ),
        Triple(service, sd("supportedLanguage"), sd("SPARQL11Query")),
        Triple(service, sd("feature"), sd("UnionDefaultGraph")),
        Triple(service, sd("defaultDataset"), dataset),
        Triple(dataset, a, sd("Dataset")),
        Triple(dataset, sd("defaultGraph"), default_graph),
        Triple(default_graph, a, sd("Graph")),
    ]
    if allow_update:
        triples.append(Triple(service, sd("supportedLanguage"), sd("SPARQL11Update")))
    for fmt in RESULT_FORMATS + GRAPH_FORMATS:
        assert fmt.writer is not None
        iri = _FORMAT_IRIS.get(fmt.name, fmt.writer.iri)
        triples.append(Triple(service, sd("resultFormat"), NamedNode(iri)))
    for iri in graphs:
        named = BlankNode()
        triples.extend(
            [
                Triple(dataset, sd("namedGraph"), named),
                Triple(named, a, sd("NamedGraph")),
                Triple(named, sd("name"), NamedNode(iri)),
            ]
        )
    # Each subject's triples together (Turtle then writes them as one block).
    order: dict[object, int] = {}
    for triple in triples:
        order.setdefault(triple.subject, len(order))
    return sorted(triples, key=lambda triple: order[triple.subject])


async def _service_description(
    request: Request, endpoint: Endpoint, requested: str | None
) -> Response:
    fmt = choose_format("graph", request.headers.get("accept"), requested)
    url = _own_url(request.url)
    graphs = await anyio.to_thread.run_sync(confined(endpoint.brain.store.graphs))
    triples = describe_service(url, graphs, allow_update=endpoint.allow_update)
    body = write_graph(triples, fmt, {"sd": SD, "formats": W3C_FORMATS})
    return _body(body, fmt, {"Vary": "Accept"})


# ---------------------------------------------------------------------------- /rdf-graphs
async def graph_store(request: Request) -> Response:
    """Graph Store Protocol, reading: ``?graph=IRI`` (a dataset slug works too) or
    ``?default`` (the union of all named graphs)."""
    endpoint = _endpoint(request)
    params = request.query_params
    names = params.getlist("graph")
    wants_default = "default" in params
    if wants_default == bool(names) or len(names) > 1:
        raise HttpError(400, "ProtocolError", "give one graph=IRI parameter, or default")
    fmt = choose_format("graph", request.headers.get("accept"), params.get("format"))
    store = endpoint.brain.store
    chosen: list[str] | None = None
    if names:
        iri = graph_iri(names[0])
        if not await anyio.to_thread.run_sync(confined(store.has_graph), iri):
            raise GraphNotFound(iri)
        chosen = [iri]

    writer = fmt.writer
    assert isinstance(writer, RdfFormat)

    def dump() -> bytes:
        buffer = io.BytesIO()
        store.dump(buffer, writer, chosen)
        return buffer.getvalue()

    body = await anyio.to_thread.run_sync(confined(dump))
    return _body(body, fmt, {"Vary": "Accept"})
