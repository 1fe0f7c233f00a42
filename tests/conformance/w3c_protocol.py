"""The W3C SPARQL 1.1 Protocol tests (sparql11/protocol/manifest.ttl) as data.

The manifest of the suite names 34 tests and describes each as HTTP requests and the answers
expected (the SPARQL 1.1 Protocol Recommendation, sections 2.1 and 2.2, says what they mean).
Each is written here as a list of :class:`Request` s: the operation it goes to (the query or
the update URL of the server), its method, URL parameters, media type and body, and what the
answer must be. Before a test, the graphs its requests name (``data1.rdf`` ... ``data3.rdf``,
each holding one ``foaf:Document``, as the manifest says) are written into the server.

Host names, ports and paths are the server's own (the manifest's ``www.example/sparql/``
stands for any endpoint); a labbrain server also gets its update token on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import httpx2
from pyoxigraph import NamedNode, QueryBoolean, QueryResultsFormat, parse_query_results
from w3c_servers import Server

FORM = "application/x-www-form-urlencoded"
QUERY = "application/sparql-query"
UPDATE = "application/sparql-update"

DATA = "http://kasei.us/2009/09/sparql/data/"
DOCUMENT = "http://xmlns.com/foaf/0.1/Document"
BIB = "http://purl.org/dc/terms/BibliographicResource"
#: The graphs the dataset tests name; each holds the triple ``<graph> a foaf:Document``.
GRAPHS = tuple(f"{DATA}data{n}.rdf" for n in (1, 2, 3))
UNKNOWN_GRAPH = f"{DATA}data0.rdf"  # named by some tests, never written

BOOLEAN_TYPES = {"application/sparql-results+xml", "application/sparql-results+json"}
TABULAR_TYPES = BOOLEAN_TYPES | {"text/csv", "text/tab-separated-values"}
#: Media types of RDF graphs (not datasets, not result sets).
RDF_TYPES = {
    "text/turtle",
    "application/n-triples",
    "application/rdf+xml",
    "application/ld+json",
    "application/rdf+json",
    "text/n3",
    "application/xhtml+xml",  # RDFa
    "text/html",  # RDFa
}


@dataclass(frozen=True)
class Request:
    """One request of a test and what its answer must be.

    ``expect`` is ``"success"`` (2xx or 3xx) or ``"client-error"`` (4xx); ``check`` looks at a
    successful answer: ``"true"`` (boolean results, true), ``"boolean"``, ``"tabular"`` or
    ``"rdf"`` (the media type is one of those kinds), or ``"base"`` (one solution whose ?o is
    an IRI other than the relative ``<test>`` sent)."""

    operation: str  # "query" or "update": the server URL it goes to
    method: str = "POST"
    params: tuple[tuple[str, str], ...] = ()
    content_type: str | None = None
    body: bytes = b""
    expect: str = "success"
    check: str | None = None


def _direct(text: str, kind: str = QUERY, **rest: object) -> Request:
    operation = "update" if kind == UPDATE else "query"
    return Request(operation, content_type=kind, body=text.encode(), **rest)  # type: ignore[arg-type]


def _form(field: str, text: str, *, content_type: str | None = FORM, **rest: object) -> Request:
    operation = "update" if field == "update" else "query"
    body = f"{field}={quote(text, safe='')}".encode()
    return Request(operation, content_type=content_type, body=body, **rest)  # type: ignore[arg-type]


def _ask_docs(*numbers: int) -> str:
    return "ASK { " + " ".join(f"<{DATA}data{n}.rdf> a ?type ." for n in numbers) + " }"


ASK_NAMED = f"ASK {{ GRAPH ?g1 {{ <{GRAPHS[0]}> a ?type }} GRAPH ?g2 {{ <{GRAPHS[1]}> a ?type }} }}"
DEFAULTS_1_2 = (("default-graph-uri", GRAPHS[0]), ("default-graph-uri", GRAPHS[1]))
NAMED_1_2 = (("named-graph-uri", GRAPHS[0]), ("named-graph-uri", GRAPHS[1]))
EMPTY_DEFAULT = (("default-graph-uri", UNKNOWN_GRAPH),)

#: The update that the four update-dataset tests begin with: every graph dropped, then the
#: three documents written, each into its own graph.
_RESET = (
    "PREFIX foaf: <http://xmlns.com/foaf/0.1/>\nDROP ALL ;\nINSERT DATA {\n"
    + "".join(f"  GRAPH <{g}> {{ <{g}> a foaf:Document }}\n" for g in GRAPHS)
    + "} ;\n"
)


def _update_dataset(
    params: tuple[tuple[str, str], ...], target: str, template: str, where: str, check: str
) -> list[Request]:
    """An update run over a dataset set by protocol parameters, then a query checking
    which documents it saw."""
    update = f"{_RESET}INSERT {{ GRAPH <{target}> {{ {template} }} }}\nWHERE {{ {where} }}"
    return [
        _direct(update, UPDATE, params=params),
        _direct(f"ASK {{ {check} }}", check="true"),
    ]


def _saw(target: str, *numbers: int) -> str:
    """A pattern: the documents ``numbers`` were marked in ``target``, data3 was not."""
    marked = " ".join(f"<{DATA}data{n}.rdf> a <{BIB}> ." for n in numbers)
    return (
        f"GRAPH <{target}> {{ {marked} }} "
        f"FILTER NOT EXISTS {{ GRAPH <{target}> {{ <{GRAPHS[2]}> a <{BIB}> }} }}"
    )


_EX = "http://example.org/"
_MARK = "?s a <" + BIB + ">"

EXCHANGES: dict[str, list[Request]] = {
    "query_post_form": [_form("query", "ASK {}", check="true", params=EMPTY_DEFAULT)],
    "query_dataset_default_graphs_get": [
        Request("query", "GET", params=(("query", _ask_docs(1, 2)), *DEFAULTS_1_2), check="true")
    ],
    "query_dataset_default_graphs_post": [
        _direct(_ask_docs(1, 2), params=DEFAULTS_1_2, check="true")
    ],
    "query_dataset_named_graphs_post": [_direct(ASK_NAMED, params=NAMED_1_2, check="true")],
    "query_dataset_named_graphs_get": [
        Request("query", "GET", params=(("query", ASK_NAMED), *NAMED_1_2), check="true")
    ],
    "query_dataset_full": [
        _direct(
            f"ASK {{ <{GRAPHS[2]}> a ?type "
            f"GRAPH ?g1 {{ <{GRAPHS[0]}> a ?type }} GRAPH ?g2 {{ <{GRAPHS[1]}> a ?type }} }}",
            params=(("default-graph-uri", GRAPHS[2]), *NAMED_1_2),
            check="true",
        )
    ],
    # The protocol's named graphs replace the query's FROM (and its default graph). The
    # manifest's request line percent-encodes the "&named-graph-uri=" between its two graphs,
    # which would make them one (unknown) graph and the expected true impossible: the two
    # parameters it means are sent.
    "query_multiple_dataset": [
        _direct(
            f"ASK FROM <{GRAPHS[2]}> {{ GRAPH ?g1 {{ <{GRAPHS[0]}> a ?type }} "
            f"GRAPH ?g2 {{ <{GRAPHS[1]}> a ?type }} }}",
            params=NAMED_1_2,
            check="true",
        )
    ],
    "query_get": [
        Request("query", "GET", params=(("query", "ASK {}"), *EMPTY_DEFAULT), check="true")
    ],
    "query_content_type_select": [
        _direct("SELECT (1 AS ?value) {}", params=EMPTY_DEFAULT, check="tabular")
    ],
    "query_content_type_ask": [_direct("ASK {}", params=EMPTY_DEFAULT, check="boolean")],
    "query_content_type_describe": [
        _direct(f"DESCRIBE <{_EX}>", params=EMPTY_DEFAULT, check="rdf")
    ],
    "query_content_type_construct": [
        _direct("CONSTRUCT { <s> <p> 1 } WHERE {}", params=EMPTY_DEFAULT, check="rdf")
    ],
    # using-graph-uri: the update's WHERE sees data1 as its default graph.
    "update_dataset_default_graph": [
        _direct(
            "PREFIX foaf: <http://xmlns.com/foaf/0.1/>\nCLEAR ALL ;\n"
            f"INSERT DATA {{ GRAPH <{GRAPHS[0]}> {{ <{GRAPHS[0]}> a foaf:Document }} }} ;\n"
            f"INSERT {{ GRAPH <{_EX}protocol-update-dataset-test/> {{ {_MARK} }} }}\n"
            "WHERE { ?s a foaf:Document }",
            UPDATE,
            params=(("using-graph-uri", GRAPHS[0]),),
        ),
        _direct(
            f"ASK {{ GRAPH <{_EX}protocol-update-dataset-test/> {{ <{GRAPHS[0]}> a <{BIB}> }} }}",
            check="true",
        ),
    ],
    "update_dataset_default_graphs": _update_dataset(
        (("using-graph-uri", GRAPHS[0]), ("using-graph-uri", GRAPHS[1])),
        f"{_EX}protocol-update-dataset-graphs-test/",
        _MARK,
        f"?s a <{DOCUMENT}>",
        _saw(f"{_EX}protocol-update-dataset-graphs-test/", 1, 2),
    ),
    "update_dataset_named_graphs": _update_dataset(
        (("using-named-graph-uri", GRAPHS[0]), ("using-named-graph-uri", GRAPHS[1])),
        f"{_EX}protocol-update-dataset-named-graphs-test/",
        _MARK,
        f"GRAPH ?g {{ ?s a <{DOCUMENT}> }}",
        _saw(f"{_EX}protocol-update-dataset-named-graphs-test/", 1, 2),
    ),
    # data1 as the default graph, data2 as the one named graph: data1 is marked "default",
    # data2 with its graph's name, data3 not at all.
    "update_dataset_full": _update_dataset(
        (("using-graph-uri", GRAPHS[0]), ("using-named-graph-uri", GRAPHS[1])),
        f"{_EX}protocol-update-dataset-full-test/",
        f"?s <{_EX}in> ?in",
        f"{{ GRAPH ?g {{ ?s a <{DOCUMENT}> }} BIND(?g AS ?in) }} UNION "
        f'{{ ?s a <{DOCUMENT}> BIND("default" AS ?in) }}',
        f'GRAPH <{_EX}protocol-update-dataset-full-test/> {{ <{GRAPHS[0]}> <{_EX}in> "default" . '
        f"<{GRAPHS[1]}> <{_EX}in> <{GRAPHS[1]}> }} FILTER NOT EXISTS {{ "
        f"GRAPH <{_EX}protocol-update-dataset-full-test/> {{ <{GRAPHS[2]}> ?p ?o }} }}",
    ),
    "update_post_form": [_form("update", "CLEAR ALL")],
    "update_post_direct": [_direct("CLEAR ALL", UPDATE)],
    # A relative IRI in an update resolves against a base the service chooses: it is stored
    # as an absolute IRI.
    "update_base_uri": [
        _direct(
            f"CLEAR GRAPH <{_EX}protocol-base-test/> ;\n"
            f"INSERT DATA {{ GRAPH <{_EX}protocol-base-test/> {{ <{_EX}s> <{_EX}p> <test> }} }}",
            UPDATE,
        ),
        _direct(
            f"SELECT ?o WHERE {{ GRAPH <{_EX}protocol-base-test/> {{ <{_EX}s> <{_EX}p> ?o }} }}",
            check="base",
        ),
    ],
    "query_post_direct": [_direct("ASK {}", check="true")],
    "bad_query_method": [
        Request(
            "query",
            "PUT",
            params=(("query", "ASK {}"), *EMPTY_DEFAULT),
            content_type=FORM,
            expect="client-error",
        )
    ],
    "bad_multiple_queries": [
        Request(
            "query",
            "GET",
            params=(("query", "ASK {}"), ("query", "SELECT * {}")),
            expect="client-error",
        )
    ],
    "bad_query_wrong_media_type": [_direct("ASK {}", "text/plain", expect="client-error")],
    "bad_query_missing_form_type": [
        _form("query", "ASK {}", content_type=None, expect="client-error")
    ],
    "bad_query_missing_direct_type": [Request("query", body=b"ASK {}", expect="client-error")],
    "bad_query_non_utf8": [
        Request(
            "query",
            content_type=f"{QUERY}; charset=UTF-16",
            body="ASK {}".encode("utf-16"),  # with its byte order mark
            expect="client-error",
        )
    ],
    "bad_query_syntax": [
        Request("query", "GET", params=(("query", "ASK {"),), expect="client-error")
    ],
    "bad_update_get": [
        Request("update", "GET", params=(("update", "CLEAR ALL"),), expect="client-error")
    ],
    "bad_multiple_updates": [
        Request(
            "update",
            content_type=FORM,
            body=b"update=CLEAR%20NAMED&update=CLEAR%20DEFAULT",
            expect="client-error",
        )
    ],
    "bad_update_wrong_media_type": [
        Request("update", content_type="text/plain", body=b"CLEAR NAMED", expect="client-error")
    ],
    "bad_update_missing_form_type": [
        _form("update", "CLEAR NAMED", content_type=None, expect="client-error")
    ],
    "bad_update_non_utf8": [
        Request(
            "update",
            content_type=f"{UPDATE}; charset=UTF-16",
            body="CLEAR NAMED".encode("utf-16"),
            expect="client-error",
        )
    ],
    "bad_update_syntax": [_form("update", "CLEAR XYZ", expect="client-error")],
    # using-named-graph-uri together with WITH in the update: a conflict, refused.
    "bad_update_dataset_conflict": [
        _direct(
            "PREFIX foaf: <http://xmlns.com/foaf/0.1/>\nWITH <http://example/addresses>\n"
            "DELETE { ?person foaf:givenName 'Bill' }\n"
            "INSERT { ?person foaf:givenName 'William' }\n"
            "WHERE { ?person foaf:givenName 'Bill' }",
            UPDATE,
            params=(("using-named-graph-uri", "http://example/people"),),
            expect="client-error",
        )
    ],
}

#: The update writing the graphs the dataset tests name (run before every test).
SETUP = (
    "".join(f"DROP SILENT GRAPH <{g}> ;\n" for g in GRAPHS)
    + "INSERT DATA {\n"
    + "".join(f"  GRAPH <{g}> {{ <{g}> a <{DOCUMENT}> }}\n" for g in GRAPHS)
    + "}"
)


def _media(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _results(response: httpx2.Response) -> object:
    kind = QueryResultsFormat.from_media_type(_media(response))
    if kind is None:
        raise ValueError(f"not a result format: {_media(response)!r}")
    return parse_query_results(response.content, kind)


def _checked(check: str | None, response: httpx2.Response) -> str | None:
    """What is wrong with a successful answer (None: nothing)."""
    media = _media(response)
    if check in ("true", "boolean"):
        if media not in BOOLEAN_TYPES:
            return f"boolean answer as {media!r}"
        if check == "true":
            answer = _results(response)
            if not isinstance(answer, QueryBoolean) or not bool(answer):
                return f"answer {answer!r}, expected true"
    elif check == "tabular" and media not in TABULAR_TYPES:
        return f"result set as {media!r}"
    elif check == "rdf" and media not in RDF_TYPES:
        return f"RDF graph as {media!r}"
    elif check == "base":
        rows = [dict(zip(row.keys(), row, strict=True)) for row in _results(response)]  # type: ignore[attr-defined]
        if len(rows) != 1:
            return f"{len(rows)} solutions, expected 1"
        value = rows[0].get("o")
        if not isinstance(value, NamedNode) or value.value == "test":
            return f"?o = {value!r}, expected an absolute IRI resolved from <test>"
    return None


def send(client: httpx2.Client, server: Server, request: Request) -> httpx2.Response:
    """Send ``request`` to ``server`` (its query or update URL, its headers)."""
    url = server.query_url if request.operation == "query" else server.update_url
    headers = dict(server.headers)
    if request.content_type is not None:
        headers["Content-Type"] = request.content_type
    return client.request(
        request.method,
        url,
        params=list(request.params),
        headers=headers,
        content=request.body if request.method != "GET" else None,
    )


def prepare(client: httpx2.Client, server: Server) -> None:
    """Write the graphs the tests name (fresh, before each test)."""
    answer = client.post(
        server.update_url,
        content=SETUP.encode(),
        headers={**server.headers, "Content-Type": UPDATE},
    )
    assert answer.status_code < 300, f"setup failed: {answer.status_code} {answer.text[:300]}"


def run(client: httpx2.Client, server: Server, name: str) -> str | None:
    """Run the protocol test ``name`` on ``server``: None when it passes, else what went
    wrong (the first request whose answer is not the one expected)."""
    prepare(client, server)
    for number, request in enumerate(EXCHANGES[name], 1):
        response = send(client, server, request)
        status = response.status_code
        where = f"request {number} ({request.method} {request.operation})"
        if request.expect == "client-error":
            if not 400 <= status < 500:
                return f"{where}: status {status}, expected 4xx"
            continue
        if not 200 <= status < 400:
            return f"{where}: status {status}, expected 2xx or 3xx: {response.text[:200]!r}"
        problem = _checked(request.check, response)
        if problem:
            return f"{where}: {problem}"
    return None
