"""`labbrain serve`: the SPARQL 1.1 Protocol endpoint, the graph store, the guard, the errors,
MCP over streamable HTTP, and real clients (rdflib's SPARQLStore, SPARQLWrapper, the MCP SDK).

Protocol details go through starlette's TestClient; real clients talk to the same app served
by uvicorn on a free loopback port in a background thread; one test runs `labbrain serve` as
a process. Numbers are those of data/README.md (the sample export).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from pyoxigraph import NamedNode, RdfFormat, parse
from starlette.applications import Starlette
from starlette.testclient import TestClient

from conftest import SAMPLE, SAMPLE_DCT, SAMPLE_GRAPH, SAMPLE_TYPES, settings_for
from helpers import count
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import SettingsError
from labbrain.http.app import Binding, bind_socket, build_app
from labbrain.http.pool import QueryJob, QueryPool
from labbrain.http.results import Answer, choose_format, parse_accept

PORT = 7879
BASE = f"http://127.0.0.1:{PORT}"
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"
SD = "http://www.w3.org/ns/sparql-service-description#"
TOKEN = "s3cret-token"

#: Page nodes by creator (data/README.md); node schemas (owl:Class) carry creators too.
CREATORS = [
    ("Rebecca Lee", 40),
    ("Matt Akamatsu", 31),
    ("Sagar Agarwal", 28),
    ("Aidan Stern", 26),
    ("Abhishek Raghunathan", 22),
]
CREATORS_QUERY = """SELECT ?creator (COUNT(?node) AS ?nodes)
WHERE { ?node dct:creator ?creator FILTER NOT EXISTS { ?node a owl:Class } }
GROUP BY ?creator ORDER BY DESC(?nodes)"""
#: 7 Opposes Evidence->Claim + 2 Opposes Result->Hypothesis, materialised as dg:opposes.
OPPOSES_QUERY = "CONSTRUCT { ?s dg:opposes ?o } WHERE { ?s dg:opposes ?o }"
SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
ERROR_KEYS = {"status", "type", "message", "line", "column"}
#: What Firefox and Safari send for a page (Chrome adds image types and signed exchanges).
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
CHROME_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)


def http_settings(store: Path | str, **overrides: Any) -> Any:
    """Settings of a test endpoint: explicit limits, whatever the environment says."""
    values: dict[str, Any] = {
        "http_host": "127.0.0.1",
        "http_port": PORT,
        "http_max_rows": 50,
        "http_query_timeout_seconds": 120.0,
        "http_query_workers": 2,
        "http_max_request_bytes": 20_000,
        "http_allowed_hosts": ["lab.example.org"],
        "http_allowed_origins": ["https://notebook.example.org"],
    }
    values.update(overrides)
    return settings_for(store, **values)


def load_sample(store: Path) -> Path:
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    return store


@contextmanager
def running_server(
    app: Starlette, port: int = 0, *, sock: socket.socket | None = None, http: Any = "auto"
) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (or on the bound ``sock``) in a background
    thread, with uvicorn's ``http`` protocol; yield its base URL."""
    import uvicorn

    sock = sock or bind_socket("127.0.0.1", port)
    config = uvicorn.Config(app, http=http, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(600):
            if server.started or not thread.is_alive():
                break
            time.sleep(0.05)
        assert server.started, "the test server did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def error_of(response: httpx2.Response) -> dict[str, Any]:
    """The error object of an error answer, checked against the one shape."""
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == ERROR_KEYS
    assert error["status"] == response.status_code
    assert "Traceback" not in response.text and "/tmp" not in response.text
    return error


def select_rows(response: httpx2.Response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/sparql-results+json"
    data = response.json()
    return [{k: v["value"] for k, v in row.items()} for row in data["results"]["bindings"]]


def boolean_of(response: httpx2.Response) -> bool:
    """The answer of an ASK query (SPARQL results in JSON)."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/sparql-results+json"
    answer = response.json()["boolean"]
    assert isinstance(answer, bool)
    return answer


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("http") / "store")


@pytest.fixture(scope="module")
def client(sample_store: Path) -> Iterator[TestClient]:
    """A read-only endpoint over the sample, served from a read-only view of the store."""
    with LabBrain(http_settings(sample_store), read_only=True) as brain:
        app = build_app(brain)
        with TestClient(app, base_url=BASE) as test_client:
            yield test_client


@pytest.fixture
def update_client(tmp_path: Path) -> Iterator[tuple[TestClient, LabBrain]]:
    """An endpoint taking updates (token TOKEN) over its own copy of the sample."""
    store = load_sample(tmp_path / "store")
    settings = http_settings(store, update_token=TOKEN, http_query_workers=1)
    with LabBrain(settings) as brain:
        app = build_app(brain, allow_update=True)
        with TestClient(app, base_url=BASE) as test_client:
            yield test_client, brain


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server (uvicorn, loopback, free port) with updates and MCP, over its own store."""
    store = load_sample(tmp_path_factory.mktemp("live") / "store")
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    settings = http_settings(store, http_port=port, update_token=TOKEN, http_max_rows=100_000)
    with LabBrain(settings) as brain:
        app = build_app(brain, binding=Binding("127.0.0.1", port), allow_update=True, mcp=True)
        with running_server(app, port) as url:
            yield url


# ---------------------------------------------------------------------------- queries
def test_get_query_answers_sparql_json(client: TestClient) -> None:
    response = client.get("/sparql", params={"query": CREATORS_QUERY})
    rows = select_rows(response)
    assert [(r["creator"], int(r["nodes"])) for r in rows] == CREATORS
    assert response.json()["head"]["vars"] == ["creator", "nodes"]
    assert response.headers["vary"] == "Accept"
    assert "x-labbrain-truncated" not in response.headers


def test_post_form_and_direct_post_give_the_same_answer(client: TestClient) -> None:
    by_get = client.get("/sparql", params={"query": CREATORS_QUERY})
    by_form = client.post("/sparql", data={"query": CREATORS_QUERY})
    by_body = client.post(
        "/sparql",
        content=CREATORS_QUERY.encode(),
        headers={"Content-Type": "application/sparql-query"},
    )
    assert by_get.content == by_form.content == by_body.content


def test_default_graph_is_the_union_and_from_narrows_it(client: TestClient) -> None:
    every = select_rows(
        client.get("/sparql", params={"query": "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"})
    )
    sample_only = select_rows(
        client.get(
            "/sparql",
            params={"query": f"SELECT (COUNT(*) AS ?n) FROM <{SAMPLE_GRAPH}> {{ ?s ?p ?o }}"},
        )
    )
    assert int(sample_only[0]["n"]) == 2499  # the sample's quads (labbrain load says so)
    assert int(every[0]["n"]) > 2499  # plus the ontology and system graphs


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        ("application/sparql-results+xml", "application/sparql-results+xml"),
        ("text/csv", "text/csv; charset=utf-8"),
        ("text/tab-separated-values", "text/tab-separated-values; charset=utf-8"),
        ("text/csv;q=0.5, application/sparql-results+xml", "application/sparql-results+xml"),
        ("text/html, */*;q=0.1", "text/html; charset=utf-8"),
        (BROWSER_ACCEPT, "text/html; charset=utf-8"),
        ("application/json", "application/sparql-results+json"),
        ("*/*", "application/sparql-results+json"),
        (None, "application/sparql-results+json"),
    ],
)
def test_select_content_negotiation(
    client: TestClient, accept: str | None, content_type: str
) -> None:
    headers = {"Accept": accept} if accept else {}
    response = client.get("/sparql", params={"query": CREATORS_QUERY}, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type


class _Page(HTMLParser):
    """The text of an HTML answer: table rows (header and body cells), <pre> text, links."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.pre = ""
        self.links: list[str] = []
        self._cell: list[str] | None = None
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "pre":
            self._in_pre = True
        elif tag == "a":
            self.links.extend(value or "" for name, value in attrs if name == "href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_pre:
            self.pre += data


def read_page(response: httpx2.Response) -> _Page:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page = _Page()
    page.feed(response.text)
    return page


@pytest.mark.parametrize("accept", [BROWSER_ACCEPT, CHROME_ACCEPT])
def test_a_browser_gets_a_readable_page(client: TestClient, accept: str) -> None:
    headers = {"Accept": accept}
    page = read_page(client.get("/sparql", params={"query": CREATORS_QUERY}, headers=headers))
    header, *body = page.rows
    assert header[-2:] == ["creator", "nodes"]
    assert [(row[-2], int(row[-1])) for row in body] == CREATORS
    assert any(link.startswith("./?query=") for link in page.links)  # open it in the console
    ask = read_page(
        client.get("/sparql", params={"query": "ASK { ?s dg:opposes ?o }"}, headers=headers)
    )
    assert "true" in ask.pre
    graph = read_page(client.get("/sparql", params={"query": OPPOSES_QUERY}, headers=headers))
    assert len(list(parse(graph.pre.encode(), RdfFormat.TURTLE))) == 9


def test_the_page_escapes_what_it_shows(client: TestClient) -> None:
    query = 'SELECT ?x WHERE { BIND("<script>alert(1)</script>" AS ?x) }'
    response = client.get("/sparql", params={"query": query, "format": "html"})
    page = read_page(response)
    assert "<script>alert" not in response.text
    assert page.rows[1][-1] == "<script>alert(1)</script>"


def test_select_formats_hold_the_same_rows(client: TestClient) -> None:
    def fetch(fmt: str) -> str:
        response = client.get("/sparql", params={"query": CREATORS_QUERY, "format": fmt})
        assert response.status_code == 200
        return response.text

    table = list(csv.reader(io.StringIO(fetch("csv"))))
    assert table == [["creator", "nodes"], *[[name, str(n)] for name, n in CREATORS]]
    tsv = fetch("tsv").splitlines()
    assert tsv[0] == "?creator\t?nodes"
    assert tsv[1] == '"Rebecca Lee"\t40'
    root = ET.fromstring(fetch("xml"))
    ns = {"r": "http://www.w3.org/2005/sparql-results#"}
    results = root.findall("r:results/r:result", ns)
    assert len(results) == len(CREATORS)
    first = {b.get("name"): "".join(b.itertext()) for b in results[0].findall("r:binding", ns)}
    assert first == {"creator": "Rebecca Lee", "nodes": "40"}


def test_ask(client: TestClient) -> None:
    response = client.get(
        "/sparql", params={"query": f"ASK {{ GRAPH <{SAMPLE_GRAPH}> {{ ?e dg:opposes ?c }} }}"}
    )
    assert response.json() == {"head": {}, "boolean": True}
    as_xml = client.get("/sparql", params={"query": "ASK { ?s dg:nothing ?o }", "format": "xml"})
    assert "<boolean>false</boolean>" in as_xml.text


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        (None, RdfFormat.TURTLE),
        ("text/turtle", RdfFormat.TURTLE),
        ("application/n-triples", RdfFormat.N_TRIPLES),
        ("application/ld+json", RdfFormat.JSON_LD),
        ("application/rdf+xml", RdfFormat.RDF_XML),
    ],
)
def test_construct_formats(client: TestClient, accept: str | None, fmt: RdfFormat) -> None:
    headers = {"Accept": accept} if accept else {}
    response = client.post("/sparql", data={"query": OPPOSES_QUERY}, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == fmt.media_type
    triples = list(parse(response.content, fmt))
    assert len(triples) == 9
    assert {t.predicate for t in triples} == {
        NamedNode("https://discoursegraphs.com/schema/dg_core#opposes")
    }


def test_describe_a_node(client: TestClient) -> None:
    node = f"{PAGE}Z5inf-I_o"
    response = client.get("/sparql", params={"query": f"DESCRIBE <{node}>", "format": "ntriples"})
    triples = list(parse(response.content, RdfFormat.N_TRIPLES))
    assert triples and all(t.subject == NamedNode(node) for t in triples)


def test_select_cannot_be_sent_as_turtle(client: TestClient) -> None:
    response = client.get(
        "/sparql", params={"query": CREATORS_QUERY}, headers={"Accept": "text/turtle"}
    )
    assert response.status_code == 406
    assert "application/sparql-results+json" in error_of(response)["message"]
    response = client.get("/sparql", params={"query": OPPOSES_QUERY, "format": "csv"})
    assert response.status_code == 406 and error_of(response)["type"] == "NotAcceptable"


def test_row_cap_cuts_and_says_so(client: TestClient) -> None:
    response = client.get("/sparql", params={"query": "SELECT ?s ?p ?o { ?s ?p ?o }"})
    assert len(select_rows(response)) == 50
    assert response.headers["x-labbrain-truncated"] == "true"
    assert response.headers["x-labbrain-max-rows"] == "50"
    as_csv = client.get("/sparql", params={"query": "SELECT ?s { ?s ?p ?o }", "format": "csv"})
    assert len(as_csv.text.splitlines()) == 51 and as_csv.headers["x-labbrain-truncated"] == "true"
    graph = client.get(
        "/sparql", params={"query": "CONSTRUCT WHERE { ?s ?p ?o }", "format": "ntriples"}
    )
    assert len(list(parse(graph.content, RdfFormat.N_TRIPLES))) == 50
    assert graph.headers["x-labbrain-truncated"] == "true"


# ---------------------------------------------------------------------------- dataset parameters
ONTOLOGY = "urn:labbrain:ontology"
COUNT_ALL = "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }"
COUNT_BY_GRAPH = "SELECT ?g (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g"
#: The sample's quads (as in test_default_graph_is_the_union_and_from_narrows_it).
SAMPLE_QUADS = 2499


def ask_with(
    client: TestClient, query: str, dataset: list[tuple[str, str]], how: str = "get"
) -> httpx2.Response:
    """Send ``query`` with the protocol's dataset parameters ``dataset``: by GET, by a POST
    form (the parameters in the body), or directly as the POST body (parameters in the URL)."""
    if how == "get":
        return client.get("/sparql", params=[("query", query), *dataset])
    if how == "form":
        form: dict[str, list[str]] = {"query": [query]}
        for name, value in dataset:
            form.setdefault(name, []).append(value)
        return client.post("/sparql", data=form)
    return client.post(
        "/sparql",
        params=dataset,
        content=query.encode(),
        headers={"Content-Type": "application/sparql-query"},
    )


def count_of(response: httpx2.Response) -> int:
    return int(select_rows(response)[0]["n"])


@pytest.mark.parametrize("how", ["get", "form", "direct"])
def test_default_graph_uri_sets_the_default_graph(client: TestClient, how: str) -> None:
    narrowed = ask_with(client, COUNT_ALL, [("default-graph-uri", SAMPLE_GRAPH)], how)
    assert count_of(narrowed) == SAMPLE_QUADS
    # The protocol's dataset replaces the query's own FROM clauses.
    overridden = ask_with(
        client,
        f"SELECT (COUNT(*) AS ?n) FROM <{ONTOLOGY}> {{ ?s ?p ?o }}",
        [("default-graph-uri", SAMPLE_GRAPH)],
        how,
    )
    assert count_of(overridden) == SAMPLE_QUADS
    # Several graphs make one default graph, as several FROM clauses do.
    both = ask_with(
        client,
        COUNT_ALL,
        [("default-graph-uri", SAMPLE_GRAPH), ("default-graph-uri", ONTOLOGY)],
        how,
    )
    by_from = client.get(
        "/sparql",
        params={
            "query": f"SELECT (COUNT(*) AS ?n) FROM <{SAMPLE_GRAPH}> FROM <{ONTOLOGY}> "
            "{ ?s ?p ?o }"
        },
    )
    assert count_of(both) == count_of(by_from) > SAMPLE_QUADS


@pytest.mark.parametrize("how", ["get", "form", "direct"])
def test_named_graph_uri_sets_the_named_graphs(client: TestClient, how: str) -> None:
    one = ask_with(client, COUNT_BY_GRAPH, [("named-graph-uri", SAMPLE_GRAPH)], how)
    assert [(r["g"], int(r["n"])) for r in select_rows(one)] == [(SAMPLE_GRAPH, SAMPLE_QUADS)]
    overridden = ask_with(
        client,
        f"SELECT ?g (COUNT(*) AS ?n) FROM NAMED <{ONTOLOGY}> {{ GRAPH ?g {{ ?s ?p ?o }} }} "
        "GROUP BY ?g",
        [("named-graph-uri", SAMPLE_GRAPH)],
        how,
    )
    assert [r["g"] for r in select_rows(overridden)] == [SAMPLE_GRAPH]
    two = ask_with(
        client,
        COUNT_BY_GRAPH,
        [("named-graph-uri", SAMPLE_GRAPH), ("named-graph-uri", ONTOLOGY)],
        how,
    )
    assert [r["g"] for r in select_rows(two)] == sorted([SAMPLE_GRAPH, ONTOLOGY])
    # Named graphs only: the default graph is empty (SPARQL 1.1, 13.2).
    empty = ask_with(client, COUNT_ALL, [("named-graph-uri", SAMPLE_GRAPH)], how)
    assert count_of(empty) == 0


@pytest.mark.parametrize(
    ("query", "in_sample", "in_ontology"),
    [
        ("ASK { ?e dg:opposes ?c }", True, False),
        ("CONSTRUCT { ?s dg:opposes ?o } WHERE { ?s dg:opposes ?o }", 9, 0),
        ("CONSTRUCT WHERE { ?s dg:opposes ?o }", 9, 0),
        (f"DESCRIBE <{PAGE}Z5inf-I_o>", True, False),
        (
            "# FROM <urn:in:a:comment> {\n"
            'SELECT (EXISTS { ?s dg:opposes ?o } AS ?any) ("FROM <urn:x> { WHERE" AS ?text)\n'
            "WHERE { }",
            True,
            False,
        ),
    ],
)
def test_dataset_parameters_in_every_query_form(
    client: TestClient, query: str, in_sample: bool | int, in_ontology: bool | int
) -> None:
    for graph, expected in ((SAMPLE_GRAPH, in_sample), (ONTOLOGY, in_ontology)):
        response = ask_with(client, query, [("default-graph-uri", graph)])
        assert response.status_code == 200, response.text
        if query.startswith("ASK"):
            found: bool | int = response.json()["boolean"]
        elif query.startswith(("CONSTRUCT", "DESCRIBE")):
            triples = len(list(parse(response.content, RdfFormat.TURTLE)))
            found = triples if query.startswith("CONSTRUCT") else triples > 0
        else:
            found = select_rows(response)[0]["any"] == "true"
        assert found == expected, (query, graph)


def test_dataset_parameters_naming_graphs_the_store_lacks_give_empty_graphs(
    client: TestClient,
) -> None:
    """The protocol reads a graph the store does not hold as an empty graph (nothing is
    fetched); the answer names it in a header."""
    remote = "http://example.org/remote.ttl"
    any_triple = "ASK { ?s ?p ?o }"
    alone = ask_with(client, any_triple, [("default-graph-uri", remote)])
    assert alone.status_code == 200 and boolean_of(alone) is False
    assert alone.headers["x-labbrain-empty-graphs"] == f"<{remote}>"
    beside = ask_with(
        client, any_triple, [("default-graph-uri", remote), ("default-graph-uri", SAMPLE_GRAPH)]
    )
    assert beside.status_code == 200 and boolean_of(beside) is True
    named = ask_with(client, "ASK { GRAPH ?g { ?s ?p ?o } }", [("named-graph-uri", remote)])
    assert named.status_code == 200 and boolean_of(named) is False
    held = ask_with(client, any_triple, [("default-graph-uri", SAMPLE_GRAPH)])
    assert "x-labbrain-empty-graphs" not in held.headers
    in_text = client.get("/sparql", params={"query": f"ASK FROM <{remote}> {{ ?s ?p ?o }}"})
    assert in_text.status_code == 200 and in_text.headers["x-labbrain-empty-graphs"]
    for bad in ("", "not an IRI", "<urn:a>"):
        response = ask_with(client, "ASK {}", [("default-graph-uri", bad)])
        assert response.status_code == 400
        error = error_of(response)
        assert error["type"] == "ProtocolError" and "default-graph-uri" in error["message"]


def test_dataset_parameters_of_the_wrong_kind(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    test_client, _ = update_client
    auth = {"Authorization": f"Bearer {TOKEN}"}
    update = "INSERT { ?s rdfs:comment 'x' } WHERE { ?s dg:opposes ?o }"
    for name in ("default-graph-uri", "named-graph-uri"):
        response = test_client.post(
            "/sparql", data={"update": update, name: SAMPLE_GRAPH}, headers=auth
        )
        assert response.status_code == 400
        message = error_of(response)["message"]
        assert name in message and "queries" in message and "using-graph-uri" in message
    query = test_client.get("/sparql", params={"query": "ASK {}", "using-graph-uri": SAMPLE_GRAPH})
    assert query.status_code == 400 and "updates" in error_of(query)["message"]
    assert not select_rows(
        test_client.get("/sparql", params={"query": "SELECT ?s { ?s rdfs:comment 'x' }"})
    )


def test_update_dataset_parameters_are_using_clauses(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    """using-graph-uri / using-named-graph-uri set the dataset of each operation's WHERE
    clause (a DELETE WHERE too); with USING or WITH in the text they are refused."""
    test_client, brain = update_client
    auth = {"Authorization": f"Bearer {TOKEN}"}
    opposing = {
        row["s"]
        for row in select_rows(
            test_client.get(
                "/sparql",
                params={
                    "query": f"SELECT DISTINCT ?s {{ GRAPH <{SAMPLE_GRAPH}> {{ ?s dg:opposes ?o }} }}"
                },
            )
        )
    }
    assert opposing

    def marked(graph: str) -> set[str]:
        query = f"SELECT ?s {{ GRAPH <{graph}> {{ ?s rdfs:comment ?c }} }}"
        return {
            row["s"] for row in select_rows(test_client.get("/sparql", params={"query": query}))
        }

    def post(update: str, *params: tuple[str, str]) -> Any:
        body = urllib.parse.urlencode([("update", update), *params])
        headers = {**auth, "Content-Type": "application/x-www-form-urlencoded"}
        return test_client.post("/sparql", content=body, headers=headers)

    default = "INSERT { GRAPH <urn:x:default> { ?s rdfs:comment 'x' } }\nWHERE { ?s dg:opposes ?o }"
    assert post(default).status_code == 204
    assert marked("urn:x:default") == set()  # the update's own default graph holds nothing
    assert post(default, ("using-graph-uri", SAMPLE_GRAPH)).status_code == 204
    assert marked("urn:x:default") == opposing

    named = (
        "INSERT { GRAPH <urn:x:named> { ?s rdfs:comment 'x' } } "
        "WHERE { GRAPH ?g { ?s dg:opposes ?o } }"
    )
    assert post(named, ("using-named-graph-uri", "urn:x:nothing")).status_code == 204
    assert marked("urn:x:named") == set()
    assert post(named, ("using-named-graph-uri", SAMPLE_GRAPH)).status_code == 204
    assert marked("urn:x:named") == opposing

    # two operations, a comment and a string holding WHERE: each operation gets the dataset
    both = (
        "# WHERE in a comment\nINSERT { GRAPH <urn:x:both> { ?s rdfs:comment 'WHERE' } } "
        "WHERE { ?s dg:opposes ?o } ;\nINSERT DATA { GRAPH <urn:x:both> { <urn:x:a> rdfs:comment 'y' } }"
    )
    assert post(both, ("using-graph-uri", SAMPLE_GRAPH)).status_code == 204
    assert marked("urn:x:both") == opposing | {"urn:x:a"}

    # DELETE WHERE matches in the protocol's default graph and deletes from the update's
    # own default graph (as DELETE { P } USING <g> WHERE { P }): nothing of urn:x:default goes
    delete = "DELETE WHERE { ?s rdfs:comment 'x' }"
    assert post(delete, ("using-graph-uri", "urn:x:default")).status_code == 204
    assert marked("urn:x:default") == opposing
    assert (
        post(
            "DELETE { GRAPH <urn:x:default> { ?s rdfs:comment 'x' } } WHERE { ?s rdfs:comment 'x' }",
            ("using-graph-uri", "urn:x:default"),
        ).status_code
        == 204
    )
    assert marked("urn:x:default") == set()

    for own in (
        "WITH <urn:x:named> DELETE { ?s rdfs:comment 'x' } WHERE { ?s rdfs:comment 'x' }",
        "DELETE { ?s rdfs:comment 'x' } USING <urn:x:named> WHERE { ?s rdfs:comment 'x' }",
    ):
        refused = post(own, ("using-graph-uri", SAMPLE_GRAPH))
        assert refused.status_code == 400
        assert "not both" in error_of(refused)["message"]
    assert marked("urn:x:named") == opposing
    bad = post(default, ("using-graph-uri", "not an IRI"))
    assert bad.status_code == 400 and "using-graph-uri" in error_of(bad)["message"]
    assert brain.store.count(SAMPLE_GRAPH) == SAMPLE_QUADS


# ---------------------------------------------------------------------------- description, graphs
def test_service_description(client: TestClient) -> None:
    response = client.get("/sparql")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/turtle; charset=utf-8"
    triples = list(parse(response.content, RdfFormat.TURTLE))
    endpoint = NamedNode(f"{BASE}/sparql")

    def objects(subject: Any, local: str) -> set[Any]:
        return {
            t.object
            for t in triples
            if t.subject == subject and t.predicate == NamedNode(SD + local)
        }

    assert objects(endpoint, "endpoint") == {endpoint}
    assert objects(endpoint, "supportedLanguage") == {NamedNode(SD + "SPARQL11Query")}
    assert NamedNode(SD + "UnionDefaultGraph") in objects(endpoint, "feature")
    assert NamedNode("http://www.w3.org/ns/formats/SPARQL_Results_CSV") in objects(
        endpoint, "resultFormat"
    )
    names = {t.object.value for t in triples if t.predicate == NamedNode(SD + "name")}
    assert {SAMPLE_GRAPH, "urn:labbrain:ontology"} <= names
    as_ntriples = client.get("/sparql", headers={"Accept": "application/n-triples"})
    assert len(list(parse(as_ntriples.content, RdfFormat.N_TRIPLES))) == len(triples)


def test_service_description_says_updates_when_allowed(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    test_client, _ = update_client
    triples = list(parse(test_client.get("/sparql").content, RdfFormat.TURTLE))
    languages = {t.object for t in triples if t.predicate == NamedNode(SD + "supportedLanguage")}
    assert NamedNode(SD + "SPARQL11Update") in languages


def test_graph_store_get(client: TestClient) -> None:
    response = client.get("/rdf-graphs", params={"graph": SAMPLE_GRAPH})
    assert response.status_code == 200
    assert len(list(parse(response.content, RdfFormat.TURTLE))) == 2499
    by_slug = client.get(
        "/rdf-graphs", params={"graph": "akamatsulab-sample", "format": "ntriples"}
    )
    assert len(list(parse(by_slug.content, RdfFormat.N_TRIPLES))) == 2499
    union = client.get(
        "/rdf-graphs", params={"default": ""}, headers={"Accept": "application/n-triples"}
    )
    assert len(list(parse(union.content, RdfFormat.N_TRIPLES))) > 2499


def test_graph_store_errors(client: TestClient) -> None:
    missing = client.get("/rdf-graphs", params={"graph": "urn:labbrain:dataset:nope"})
    assert missing.status_code == 404
    assert error_of(missing)["type"] == "GraphNotFound"
    neither = client.get("/rdf-graphs")
    assert neither.status_code == 400 and error_of(neither)["type"] == "ProtocolError"
    both = client.get("/rdf-graphs", params={"graph": SAMPLE_GRAPH, "default": ""})
    assert both.status_code == 400
    assert client.put("/rdf-graphs", params={"graph": SAMPLE_GRAPH}, content=b"").status_code == 405


# ---------------------------------------------------------------------------- bad input
def test_relative_iris_resolve_against_the_endpoint_url() -> None:
    """As the Oxigraph server does (and the protocol lets the service choose): a relative IRI
    in a query or an update is resolved against the endpoint's URL; it was a 400 with
    "expected one of IRI parsing failed, WHERE"."""
    with tempfile.TemporaryDirectory() as where:
        settings = http_settings(load_sample(Path(where) / "store"), update_token=TOKEN)
        with LabBrain(settings) as brain:
            app = build_app(brain, allow_update=True)
            with TestClient(app, base_url=BASE) as http:
                made = http.get(
                    "/sparql",
                    params={"query": "CONSTRUCT { <s> <p> 1 } WHERE {}"},
                    headers={"Accept": "application/n-triples"},
                )
                assert made.status_code == 200, made.text
                (triple,) = parse(made.content, RdfFormat.N_TRIPLES)
                assert (triple.subject, triple.predicate) == (
                    NamedNode(BASE + "/s"),
                    NamedNode(BASE + "/p"),
                )
                written = http.post(
                    "/sparql",
                    data={"update": 'INSERT DATA { GRAPH <rel-g> { <s> <p> "relative" } }'},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )
                assert written.status_code == 204, written.text
                found = select_rows(
                    http.get(
                        "/sparql", params={"query": 'SELECT ?g { GRAPH ?g { ?s ?p "relative" } }'}
                    )
                )
                assert found == [{"g": BASE + "/rel-g"}]


def test_a_misspelt_query_form_names_the_forms(client: TestClient) -> None:
    response = client.get("/sparql", params={"query": "SELEC ?x WHERE { ?x ?p ?o }"})
    error = error_of(response)
    assert response.status_code == 400 and (error["line"], error["column"]) == (1, 1)
    assert error["message"].endswith(
        "expected a query form: SELECT, CONSTRUCT, DESCRIBE or ASK; found 'SELEC'"
    )


@pytest.mark.parametrize(
    "query",
    ["SELECT * WHERE { ?s ?p }", "ASK {\n  ?s ?p ?o .\n  FILTER(\n}", "SELECT ?x FROM WHERE {}"],
)
def test_a_syntax_error_is_placed_in_the_text_sent_whatever_the_dataset(
    client: TestClient, query: str
) -> None:
    """The dataset parameters are written into the query as its dataset clause; an error is
    still reported where it is in the text the client sent (it was reported in the rewritten
    text: a 29-character query at column 80)."""
    alone = error_of(client.get("/sparql", params={"query": query}))
    for dataset in ([("default-graph-uri", SAMPLE_GRAPH)], [("named-graph-uri", SAMPLE_GRAPH)]):
        response = client.get("/sparql", params=[("query", query), *dataset])
        assert response.status_code == 400
        error = error_of(response)
        assert (error["line"], error["column"], error["message"]) == (
            alone["line"],
            alone["column"],
            alone["message"],
        )
        lines = query.split("\n")
        assert 1 <= error["column"] <= len(lines[error["line"] - 1]) + 1


def test_malformed_query_is_400_with_position(client: TestClient) -> None:
    response = client.post("/sparql", data={"query": "SELECT ?x WHERE {\n  ?x ?y\n}"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["type"] == "QuerySyntaxError"
    assert error["line"] == 3 and isinstance(error["column"], int)
    assert error["message"].startswith("SPARQL syntax error (line 3, column ")


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }", "SERVICE"),
        ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "this is a SPARQL update"),
    ],
)
def test_refused_queries_are_403(client: TestClient, query: str, reason: str) -> None:
    response = client.get("/sparql", params={"query": query})
    assert response.status_code == 403
    error = error_of(response)
    assert error["type"] == "QueryNotAllowed" and reason in error["message"]


def test_update_on_a_read_only_endpoint_is_403(client: TestClient) -> None:
    for request in (
        {"data": {"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}},
        {
            "content": b"INSERT DATA { <urn:a> <urn:b> <urn:c> }",
            "headers": {
                "Content-Type": "application/sparql-update",
                "Authorization": f"Bearer {TOKEN}",
            },
        },
    ):
        response = client.post("/sparql", **request)
        assert response.status_code == 403
        assert error_of(response)["type"] == "UpdateNotAllowed"
    assert not select_rows(client.get("/sparql", params={"query": "SELECT * { <urn:a> ?p ?o }"}))


@pytest.mark.parametrize(
    ("request_kwargs", "status", "kind"),
    [
        ({"method": "GET", "params": {"update": "CLEAR ALL"}}, 405, "MethodNotAllowed"),
        (
            {"method": "POST", "data": {"query": "ASK {}", "update": "CLEAR ALL"}},
            400,
            "ProtocolError",
        ),
        (
            {"method": "GET", "params": [("query", "ASK {}"), ("query", "ASK {}")]},
            400,
            "ProtocolError",
        ),
        ({"method": "GET", "params": {"query": "  "}}, 400, "ProtocolError"),
        (
            {"method": "GET", "params": {"query": "ASK {}", "default-graph-uri": "not an IRI"}},
            400,
            "ProtocolError",
        ),
        (
            {"method": "GET", "params": {"query": "ASK {}", "using-graph-uri": SAMPLE_GRAPH}},
            400,
            "ProtocolError",
        ),
        (
            {"method": "POST", "content": b"ASK {}", "headers": {"Content-Type": "text/plain"}},
            415,
            "UnsupportedMediaType",
        ),
        (
            {
                "method": "POST",
                "content": b"ASK { \xff }",
                "headers": {"Content-Type": "application/sparql-query"},
            },
            400,
            "ProtocolError",
        ),
        ({"method": "DELETE", "params": {"query": "ASK {}"}}, 405, "MethodNotAllowed"),
        ({"method": "GET", "url": "/nowhere"}, 404, "NotFound"),
        ({"method": "GET", "url": "/static/secrets.txt"}, 404, "NotFound"),
    ],
)
def test_protocol_errors_have_one_shape(
    client: TestClient, request_kwargs: dict[str, Any], status: int, kind: str
) -> None:
    kwargs = dict(request_kwargs)
    method = kwargs.pop("method")
    url = kwargs.pop("url", "/sparql")
    response = client.request(method, url, **kwargs)
    assert response.status_code == status
    assert error_of(response)["type"] == kind


def test_too_large_is_413(client: TestClient) -> None:
    padding = "#" + "x" * 25_000 + "\n"
    body = client.post("/sparql", data={"query": padding + "ASK {}"})
    assert body.status_code == 413 and error_of(body)["type"] == "RequestTooLarge"
    direct = client.post(
        "/sparql",
        content=(padding + "ASK {}").encode(),
        headers={"Content-Type": "application/sparql-query"},
    )
    assert direct.status_code == 413
    in_url = client.get("/sparql", params={"query": padding + "ASK {}"})
    assert in_url.status_code == 413
    assert client.get("/sparql", params={"query": "ASK {}"}).status_code == 200


def test_internal_errors_are_500_without_details(sample_store: Path) -> None:
    class Broken:
        seconds = 1.0

        def start(self) -> None: ...

        def run(self, job: QueryJob) -> Answer:
            raise RuntimeError(f"boom in {sample_store}")

        def close(self) -> None: ...

    with LabBrain(http_settings(sample_store), read_only=True) as brain:
        app = build_app(brain, runner=Broken())
        with TestClient(app, base_url=BASE, raise_server_exceptions=False) as test_client:
            response = test_client.get("/sparql", params={"query": "ASK {}"})
    assert response.status_code == 500
    error = error_of(response)
    assert error["type"] == "InternalError" and "boom" not in response.text


# ---------------------------------------------------------------------------- time limit, workers
def test_slow_query_is_stopped_and_the_next_one_runs(sample_store: Path) -> None:
    settings = http_settings(sample_store, http_query_timeout_seconds=2.0, http_query_workers=1)
    with (
        LabBrain(settings, read_only=True) as brain,
        TestClient(build_app(brain), base_url=BASE) as test_client,
    ):
        slow = test_client.get("/sparql", params={"query": SLOW_QUERY})
        assert slow.status_code == 503
        error = error_of(slow)
        assert error["type"] == "QueryTimeout" and "stopped after 2 s" in error["message"]
        assert slow.headers["retry-after"] == "1"
        # One worker: the next query runs on the worker that replaced the killed one.
        after = test_client.get("/sparql", params={"query": CREATORS_QUERY})
        assert [int(r["nodes"]) for r in select_rows(after)] == [n for _, n in CREATORS]


def test_a_dead_worker_is_replaced(sample_store: Path) -> None:
    with LabBrain(http_settings(sample_store), read_only=True) as brain:
        app = build_app(brain)
        with TestClient(app, base_url=BASE) as test_client:
            pool = app.state.endpoint.runner
            assert isinstance(pool, QueryPool)
            for worker in list(pool._workers):
                os.kill(worker.process.pid, signal.SIGKILL)
                worker.process.wait(timeout=10)
            for _ in range(3):
                response = test_client.get("/sparql", params={"query": "ASK { ?s ?p ?o }"})
                assert response.json()["boolean"] is True


def test_in_memory_store_runs_queries_in_process() -> None:
    with LabBrain(http_settings(":memory:")) as brain:
        brain.load(str(SAMPLE))
        app = build_app(brain)
        assert app.state.endpoint.timeout_seconds is None
        with TestClient(app, base_url=BASE) as test_client:
            rows = select_rows(test_client.get("/sparql", params={"query": CREATORS_QUERY}))
    assert [(r["creator"], int(r["nodes"])) for r in rows] == CREATORS


# ---------------------------------------------------------------------------- updates
def test_updates_need_the_token(update_client: tuple[TestClient, LabBrain]) -> None:
    test_client, _ = update_client
    update = "INSERT DATA { GRAPH <urn:test:notes> { <urn:test:n1> rdfs:label 'first note' } }"
    anonymous = test_client.post("/sparql", data={"update": update})
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == 'Bearer realm="labbrain"'
    assert error_of(anonymous)["type"] == "Unauthorized"
    wrong = test_client.post(
        "/sparql", data={"update": update}, headers={"Authorization": "Bearer nope"}
    )
    assert wrong.status_code == 403 and error_of(wrong)["type"] == "Forbidden"
    ask = {"query": "ASK { <urn:test:n1> rdfs:label 'first note' }"}
    assert test_client.get("/sparql", params=ask).json()["boolean"] is False


def test_update_with_the_token_is_seen_by_the_next_query(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    test_client, brain = update_client
    auth = {"Authorization": f"Bearer {TOKEN}"}
    ask = {"query": "ASK { <urn:test:n1> rdfs:label 'first note' }"}
    assert test_client.get("/sparql", params=ask).json()["boolean"] is False  # worker's view opened
    done = test_client.post(
        "/sparql",
        data={
            "update": "INSERT DATA { GRAPH <urn:test:notes> { <urn:test:n1> rdfs:label 'first note' } }"
        },
        headers=auth,
    )
    assert done.status_code == 204 and done.content == b""
    assert test_client.get("/sparql", params=ask).json()["boolean"] is True
    assert brain.store.has_graph("urn:test:notes")
    direct = test_client.post(
        "/sparql",
        content=b"DELETE DATA { GRAPH <urn:test:notes> { <urn:test:n1> rdfs:label 'first note' } }",
        headers={**auth, "Content-Type": "application/sparql-update"},
    )
    assert direct.status_code == 204
    assert test_client.get("/sparql", params=ask).json()["boolean"] is False


def test_bad_updates(update_client: tuple[TestClient, LabBrain]) -> None:
    test_client, _ = update_client
    auth = {"Authorization": f"Bearer {TOKEN}"}
    load = test_client.post(
        "/sparql", data={"update": "LOAD <http://example.org/data.ttl>"}, headers=auth
    )
    assert load.status_code == 403 and "LOAD is not allowed" in error_of(load)["message"]
    broken = test_client.post(
        "/sparql", data={"update": "INSERT DATA {\n <urn:a> <urn:b> }"}, headers=auth
    )
    assert broken.status_code == 400
    assert error_of(broken)["type"] == "QuerySyntaxError" and error_of(broken)["line"] == 2


def test_requests_with_the_token_may_be_larger(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    test_client, brain = update_client
    triples = " ".join(f"<urn:test:n{i}> rdfs:label 'note {i}' ." for i in range(1000))
    update = f"INSERT DATA {{ GRAPH <urn:test:bulk> {{ {triples} }} }}"
    assert len(update) > 20_000  # the request cap of these tests
    anonymous = test_client.post("/sparql", data={"update": update})
    assert anonymous.status_code == 413
    assert "LABBRAIN_HTTP_MAX_REQUEST_BYTES" in error_of(anonymous)["message"]
    wrong = test_client.post(
        "/sparql", data={"update": update}, headers={"Authorization": "Bearer x"}
    )
    assert wrong.status_code == 413
    done = test_client.post(
        "/sparql", data={"update": update}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert done.status_code == 204
    assert brain.store.count("urn:test:bulk") == 1000


def test_allow_update_needs_a_token(sample_store: Path) -> None:
    with (
        LabBrain(http_settings(sample_store), read_only=True) as brain,
        pytest.raises(SettingsError),
    ):
        build_app(brain, allow_update=True)
    result = CliRunner().invoke(main, ["--store", str(sample_store), "serve", "--allow-update"])
    assert result.exit_code == 2
    assert "--allow-update needs a token: set LABBRAIN_UPDATE_TOKEN" in result.output


# ---------------------------------------------------------------------------- guard
def test_wrong_host_is_refused(client: TestClient) -> None:
    for host in (
        "evil.example.com",
        "evil.example.com:7879",
        "127.0.0.1:8080",
        "localhost.evil.com:7879",
    ):
        response = client.get("/sparql", params={"query": "ASK {}"}, headers={"Host": host})
        assert response.status_code == 421, host
        assert error_of(response)["type"] == "HostNotAllowed"
    for host in ("localhost:7879", "127.0.0.1:7879", "lab.example.org", "lab.example.org:443"):
        response = client.get("/sparql", params={"query": "ASK {}"}, headers={"Host": host})
        assert response.status_code == 200, host


def test_foreign_origins_are_refused(client: TestClient) -> None:
    query = {"query": "ASK {}"}
    for origin in ("http://evil.example.com", "http://localhost:3000", "null"):
        response = client.post("/sparql", data=query, headers={"Origin": origin})
        assert response.status_code == 403, origin
        assert error_of(response)["type"] == "OriginNotAllowed"
    own = client.post("/sparql", data=query, headers={"Origin": BASE})
    assert own.status_code == 200 and "access-control-allow-origin" not in own.headers
    listed = client.post("/sparql", data=query, headers={"Origin": "https://notebook.example.org"})
    assert listed.status_code == 200
    assert listed.headers["access-control-allow-origin"] == "https://notebook.example.org"
    preflight = client.options(
        "/sparql",
        headers={"Origin": "https://notebook.example.org", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 204
    assert "POST" in preflight.headers["access-control-allow-methods"]


def test_accept_parsing() -> None:
    assert parse_accept(None) == [("*/*", 1.0)]
    assert parse_accept("text/csv;q=0.3, application/xml;q=x") == [
        ("text/csv", 0.3),
        ("application/xml", 1.0),
    ]
    assert choose_format("select", "text/plain, text/csv;q=0.9").name == "csv"
    assert choose_format("select", "text/*").name == "csv"
    assert choose_format("select", "text/xml").name == "xml"
    assert choose_format("graph", "application/json").name == "jsonld"
    assert choose_format("select", "application/sparql-results+json;q=0, */*").name == "xml"
    assert choose_format("graph", "text/plain").name == "ntriples"
    assert choose_format("graph", "*/*", requested="text/turtle").name == "turtle"


# ---------------------------------------------------------------------------- real clients
def test_rdflib_sparqlstore(live: str) -> None:
    from rdflib import Graph, Namespace
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    graph = Graph(SPARQLStore(query_endpoint=live + "sparql"))
    rows = list(graph.query(CREATORS_QUERY))
    assert [(str(r[0]), int(r[1])) for r in rows] == CREATORS  # type: ignore[index]
    dg = Namespace("https://discoursegraphs.com/schema/dg_core#")
    assert len(list(graph.triples((None, dg.opposes, None)))) == 9
    assert graph.query("ASK { ?s dg:opposes ?o }").askAnswer is True


def test_sparqlwrapper(live: str) -> None:
    from SPARQLWrapper import CSV, JSON, POST, TURTLE, SPARQLWrapper
    from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

    client = SPARQLWrapper(live + "sparql")
    client.setQuery(CREATORS_QUERY)
    client.setReturnFormat(JSON)
    data = client.query().convert()
    assert isinstance(data, dict)
    assert [
        (b["creator"]["value"], int(b["nodes"]["value"])) for b in data["results"]["bindings"]
    ] == CREATORS
    client.setMethod(POST)
    client.setReturnFormat(CSV)
    body = client.query().convert()
    assert isinstance(body, bytes) and body.decode().splitlines()[1] == "Rebecca Lee,40"
    client.setQuery(OPPOSES_QUERY)
    client.setReturnFormat(TURTLE)
    turtle = client.query().convert()
    assert isinstance(turtle, bytes) and len(list(parse(turtle, RdfFormat.TURTLE))) == 9
    client.setQuery("SELECT ?x WHERE { ?x ?y }")
    client.setReturnFormat(JSON)
    with pytest.raises(QueryBadFormed, match="QuerySyntaxError"):
        client.query()


def test_sparqlwrapper_update_with_the_token(live: str) -> None:
    from SPARQLWrapper import JSON, POST, SPARQLWrapper

    writer = SPARQLWrapper(live + "sparql", updateEndpoint=live + "sparql")
    writer.setMethod(POST)
    writer.addCustomHttpHeader("Authorization", f"Bearer {TOKEN}")
    writer.setQuery(
        "INSERT DATA { GRAPH <urn:test:wrapper> { <urn:test:w> rdfs:label 'by SPARQLWrapper' } }"
    )
    assert writer.query().response.status == 204
    reader = SPARQLWrapper(live + "sparql")
    reader.setQuery("SELECT ?label { <urn:test:w> rdfs:label ?label }")
    reader.setReturnFormat(JSON)
    bindings = reader.query().convert()["results"]["bindings"]  # type: ignore[index]
    assert [b["label"]["value"] for b in bindings] == ["by SPARQLWrapper"]


def test_head_of_a_missing_graph_leaves_the_connection_usable(live: str) -> None:
    with httpx2.Client(base_url=live) as http:
        head = http.head("rdf-graphs", params={"graph": "urn:labbrain:dataset:nope"})
        assert head.status_code == 404 and head.content == b""
        found = http.get(
            "rdf-graphs",
            params={"graph": SAMPLE_GRAPH},
            headers={"Accept": "application/n-triples"},
        )
        assert found.status_code == 200
        assert len(list(parse(found.content, RdfFormat.N_TRIPLES))) == 2499


def test_mcp_over_streamable_http(live: str) -> None:
    from mcp import Client

    async def session() -> tuple[Any, Any, Any]:
        async with Client(live + "mcp") as mcp_client:
            tools = await mcp_client.list_tools()
            found = await mcp_client.call_tool(
                "search_nodes", {"query": "membrane tension", "nodeType": "Claim", "limit": 1}
            )
            schema = await mcp_client.call_tool("get_schema", {})
            return tools, found, schema

    tools, found, schema = asyncio.run(session())
    assert {"search_nodes", "get_node", "sparql_query"} <= {tool.name for tool in tools.tools}
    (hit,) = found.structured_content["results"]
    assert hit["nodeType"] == "Claim" and hit["creator"] and hit["url"].startswith(PAGE)
    counts = {t["label"]: t["count"] for t in schema.structured_content["nodeTypes"]}
    assert {label: counts[label] for label in SAMPLE_TYPES} == SAMPLE_TYPES


def test_mcp_over_http_tells_a_listening_client_of_a_load(tmp_path: Path) -> None:
    """A client of ``/mcp`` listening for the dataset and the resource list hears of a load
    of an edited export (the dataset updated) and of a second export (the list changed)."""
    from mcp import Client
    from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated

    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    edited = tmp_path / "edited.jsonld"
    pages = [e for e in document["@graph"] if "title" in e and "content" in e]
    pages[0]["content"] += " And one more thing."
    edited.write_text(json.dumps(document), encoding="utf-8")
    settings = http_settings(load_sample(tmp_path / "store"), update_token=TOKEN)
    other = tmp_path / "other.jsonld"  # another export (its own @id): another dataset
    document["@id"] = str(document.get("@id", "urn:lab")) + "-other"
    other.write_text(json.dumps(document), encoding="utf-8")

    async def listen(url: str, brain: LabBrain) -> list[Any]:
        heard: list[Any] = []
        async with Client(url + "mcp") as client:
            listed = (await client.list_resources()).resources
            (dataset,) = [str(r.uri) for r in listed if str(r.uri).startswith("labbrain://d")]
            async with client.listen(
                resources_list_changed=True, resource_subscriptions=[dataset]
            ) as stream:
                for path in (edited, other):
                    await asyncio.to_thread(brain.load, str(path))
                    with anyio.move_on_after(30):
                        async for event in stream:
                            heard.append(event)
                            break
        return [dataset, *heard]

    with LabBrain(settings) as brain:
        sock = bind_socket("127.0.0.1", 0)
        binding = Binding("127.0.0.1", sock.getsockname()[1])
        app = build_app(brain, binding=binding, allow_update=True, mcp=True)
        with running_server(app, sock=sock) as url:
            dataset, updated, listed = asyncio.run(listen(url, brain))
    assert isinstance(updated, ResourceUpdated) and updated.uri == dataset
    assert isinstance(listed, ResourcesListChanged)


def test_mcp_endpoint_has_the_same_guard(live: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx2.Client(base_url=live) as http:
        rebound = http.post("mcp", json=message, headers={**headers, "Host": "evil.example.com"})
        assert rebound.status_code == 421 and error_of(rebound)["type"] == "HostNotAllowed"
        foreign = http.post(
            "mcp", json=message, headers={**headers, "Origin": "http://evil.example.com"}
        )
        assert foreign.status_code == 403 and error_of(foreign)["type"] == "OriginNotAllowed"


def test_labbrain_endpoint_client(live: str, tmp_path: Path) -> None:
    """Another labbrain process uses the server as its store (--endpoint): reads, full-text
    search (its index synced over SPARQL) and a load sent as updates with the token."""
    env = {"LABBRAIN_ENDPOINT_AUTH": f"Bearer {TOKEN}", "XDG_DATA_HOME": str(tmp_path)}
    runner = CliRunner()
    endpoint = ["--endpoint", live + "sparql"]
    counted = runner.invoke(
        main,
        [
            *endpoint,
            "query",
            "--format",
            "csv",
            "SELECT ?label (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?rel ?o . "
            "?rel rdfs:subPropertyOf dg:opposes ; rdfs:label ?label } } GROUP BY ?label",
        ],
        env=env,
    )
    assert counted.exit_code == 0, counted.output
    assert counted.output.splitlines() == ["label,n", "Opposes,9"]
    found = runner.invoke(main, [*endpoint, "search", "membrane tension", "--json"], env=env)
    assert found.exit_code == 0, found.output
    assert {hit["dataset"] for hit in json.loads(found.output)} == {"akamatsulab-sample"}
    loaded = runner.invoke(main, [*endpoint, "load", str(SAMPLE_DCT)], env=env)
    assert loaded.exit_code == 0, loaded.output
    with httpx2.Client(base_url=live) as http:
        answer = http.get(
            "sparql",
            params={
                "query": "SELECT (COUNT(*) AS ?n) { GRAPH <urn:labbrain:dataset:dct-sample> { ?s ?p ?o } }"
            },
        )
        assert int(select_rows(answer)[0]["n"]) > 0


def test_a_labbrain_client_reads_a_cut_answer_in_pages(sample_store: Path, tmp_path: Path) -> None:
    """A store read through a labbrain endpoint never takes an answer cut at the endpoint's
    row cap for the whole answer: it reads the rest in pages of the cap's size."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    settings = http_settings(sample_store, http_port=port, http_max_rows=1000)
    with LabBrain(settings, read_only=True) as brain:
        total = count(brain, "GRAPH ?g { ?s ?p ?o }")
        dataset = count(brain, f"GRAPH <{SAMPLE_GRAPH}> {{ ?s ?p ?o }}")
        assert dataset > 2 * 1000
        app = build_app(brain, binding=Binding("127.0.0.1", port))
        with running_server(app, port) as url:
            runner = CliRunner()
            endpoint = ["--endpoint", url + "sparql"]
            env = {"XDG_DATA_HOME": str(tmp_path)}
            query = "SELECT ?s ?p ?o { ?s ?p ?o }"
            whole = runner.invoke(main, [*endpoint, "query", "--format", "json", query], env=env)
            exported = runner.invoke(main, [*endpoint, "export", "--format", "nquads"], env=env)
    assert whole.exit_code == 0, whole.output
    assert len(json.loads(whole.stdout)["results"]["bindings"]) == total
    assert exported.exit_code == 0, exported.output
    assert len(exported.stdout.splitlines()) == dataset  # the default export: the datasets


# ---------------------------------------------------------------------------- the real command
def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_serve(store: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "labbrain", "--store", str(store), "serve", "--port", "0", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")},
    )
    assert process.stderr is not None
    try:
        seen = []
        match = None
        for line in process.stderr:  # warnings may come before the banner
            seen.append(line)
            match = re.search(r"at (http://127\.0\.0\.1:\d+/) ", line)
            if match:
                break
        assert match, "".join(seen)
        for line in process.stderr:  # uvicorn says when it is ready
            if "Application startup complete" in line:
                break
    except BaseException:
        process.kill()
        process.wait(timeout=30)
        raise
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe drained
    return process, match.group(1)


@pytest.mark.subprocess
def test_labbrain_serve_process(tmp_path: Path) -> None:
    store = load_sample(tmp_path / "store")
    process, url = _start_serve(store, "--mcp", "--workers", "2")
    try:
        with httpx2.Client(base_url=url, timeout=60) as http:
            answer = http.get(
                "sparql", params={"query": CREATORS_QUERY}, headers={"Accept": "text/csv"}
            )
            assert answer.status_code == 200
            assert answer.text.splitlines()[1] == "Rebecca Lee,40"
            assert "labbrain SPARQL console" in http.get("").text
            assert http.post("sparql", data={"update": "CLEAR ALL"}).status_code == 403
        workers = _descendants(process.pid)
        assert len(workers) >= 2  # the two query workers
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "worker processes outlived the server"


def _ask_on(connection: socket.socket) -> bytes:
    """Send one keep-alive request on ``connection`` and read its answer's status line and
    headers (b"" when the server has closed the connection)."""
    host = f"127.0.0.1:{connection.getpeername()[1]}"
    connection.sendall(f"GET /sparql?query=ASK%7B%7D HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        try:
            chunk = connection.recv(65536)
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head.lower()).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += connection.recv(65536)
    return head


@pytest.mark.subprocess
def test_an_idle_connection_outlives_the_clients_keep_alive(tmp_path: Path) -> None:
    """The server keeps an idle connection open longer than HTTP clients keep one in their
    pool (5 s for httpx): a client never sends a request on a connection the server is
    closing at that very moment."""
    store = load_sample(tmp_path / "store")
    process, url = _start_serve(store)
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            assert _ask_on(connection).startswith(b"HTTP/1.1 200")
            time.sleep(6.5)  # past httpx's 5 s and uvicorn's default 5 s
            assert _ask_on(connection).startswith(b"HTTP/1.1 200")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


@pytest.mark.subprocess
def test_serve_beside_a_writer(tmp_path: Path) -> None:
    """A store held by another process is served read-only, and its new writes are seen;
    --allow-update refuses to start on it."""
    store = load_sample(tmp_path / "store")
    with LabBrain(settings_for(store)) as writer:
        refused = CliRunner().invoke(
            main,
            ["--store", str(store), "serve", "--allow-update"],
            env={"LABBRAIN_UPDATE_TOKEN": TOKEN},
        )
        assert refused.exit_code == 3 and "is locked by another labbrain process" in refused.output
        process, url = _start_serve(store, "--workers", "1")
        try:
            with httpx2.Client(base_url=url, timeout=60) as http:
                ask = {"query": "ASK { <urn:test:late> rdfs:label 'written later' }"}
                assert http.get("sparql", params=ask).json()["boolean"] is False
                writer.query(
                    "INSERT DATA { GRAPH <urn:test:notes> { <urn:test:late> rdfs:label 'written later' } }",
                    update=True,
                )
                assert http.get("sparql", params=ask).json()["boolean"] is True
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0


def _export_counts(path: Path) -> tuple[int, int]:
    """(page nodes, relation instances) of an export, read from its JSON."""
    entries = json.loads(path.read_text(encoding="utf-8"))["@graph"]
    schemas = {e["@id"] for e in entries if e.get("@type") == "nodeSchema" and "title" not in e}
    nodes = sum(1 for e in entries if e.get("@type") in schemas)
    relations = sum(1 for e in entries if e.get("@type") == "relationInstance")
    return nodes, relations


@pytest.mark.subprocess
def test_read_only_serve_leaves_the_store_to_a_writer(tmp_path: Path) -> None:
    """A read-only `labbrain serve` holds no lock: `labbrain load` runs while it serves, and
    every answer of the server (queries, FROM and dataset parameters checked against the
    store's graphs, the graph store, the service description, the console's settings, MCP)
    shows the new data without a restart."""
    store = load_sample(tmp_path / "store")
    new_graph = "urn:labbrain:dataset:dct-sample"
    nodes, relations = _export_counts(SAMPLE_DCT)
    count_nodes = (
        "SELECT (COUNT(DISTINCT ?n) AS ?n) "
        "{ ?n dct:title ?t ; a ?schema . ?schema a dgb:NodeSchema }"
    )

    async def mcp_calls(url: str) -> tuple[Any, Any]:
        from mcp import Client

        async with Client(url + "mcp") as mcp_client:
            found = await mcp_client.call_tool("search_nodes", {"query": "platinum replica"})
            types = await mcp_client.call_tool("get_relation_types", {})
            return found.structured_content, types.structured_content

    process, url = _start_serve(store, "--mcp", "--workers", "1")
    try:
        with httpx2.Client(base_url=url, timeout=60) as http:
            # Everything read once before the load, so nothing is opened only after it.
            assert new_graph not in http.get("console/config").json()["graphs"]
            found, types = asyncio.run(mcp_calls(url))
            assert found["results"] == []
            assert {t["dataset"] for t in types["relationTypes"]} == {"akamatsulab-sample"}

            loaded = subprocess.run(
                [sys.executable, "-m", "labbrain", "--store", str(store), "load", str(SAMPLE_DCT)],
                capture_output=True,
                text=True,
                timeout=300,
                env={k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")},
            )
            assert loaded.returncode == 0, loaded.stderr

            query = {"query": count_nodes.replace("{", f"FROM <{new_graph}> {{", 1)}
            assert count_of(http.get("sparql", params=query)) == nodes
            by_parameter = {"query": count_nodes, "default-graph-uri": new_graph}
            assert count_of(http.get("sparql", params=by_parameter)) == nodes
            graph = http.get("rdf-graphs", params={"graph": new_graph})
            assert graph.status_code == 200 and len(list(parse(graph.content, RdfFormat.TURTLE)))
            described = http.get("sparql", headers={"Accept": "application/n-triples"})
            assert f"<{new_graph}>" in described.text
            assert new_graph in http.get("console/config").json()["graphs"]
            found, types = asyncio.run(mcp_calls(url))
            assert {hit["dataset"] for hit in found["results"]} == {"dct-sample"}
            counts = [t["count"] for t in types["relationTypes"] if t["dataset"] == "dct-sample"]
            assert sum(counts) == relations
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


@pytest.mark.subprocess
def test_killed_server_leaves_no_workers(tmp_path: Path) -> None:
    store = load_sample(tmp_path / "store")
    process, url = _start_serve(store, "--workers", "1")
    try:
        with httpx2.Client(base_url=url, timeout=60) as http:
            assert http.get("sparql", params={"query": "ASK {}"}).json()["boolean"] is True
        workers = _descendants(process.pid)
        assert workers
    finally:
        process.kill()
        process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "worker processes outlived a killed server"
    # The store is free again for the next process.
    with LabBrain(settings_for(store)) as brain:
        assert brain.store.has_graph(SAMPLE_GRAPH)


# ---------------------------------------------------------------------------- policy
def test_dataset_graphs_reads_from_clauses() -> None:
    from labbrain.rdf.sparql_policy import dataset_graphs

    query = """PREFIX ex: <http://example.org/>
    SELECT * FROM <urn:labbrain:ontology> FROM NAMED ex:g FROM dg:x
    WHERE { ?s ?p "FROM <http://not-a-graph/>" } # FROM <http://comment/>"""
    assert dataset_graphs(query) == [
        "urn:labbrain:ontology",
        "http://example.org/g",
        "https://discoursegraphs.com/schema/dg_core#x",
    ]
    assert dataset_graphs("BASE <http://example.org/> SELECT * FROM <g> {}") == [
        "http://example.org/g"
    ]
    assert dataset_graphs("SELECT ?from FROM<urn:a>{ ?s ex:from ?from }") == ["urn:a"]
    assert dataset_graphs("SELECT * WHERE { ?s ?p ?o }") == []


def test_dataset_clause_replaces_from_and_keeps_lines() -> None:
    from labbrain.http.dataset import Dataset, with_dataset
    from labbrain.rdf.sparql_policy import dataset_graphs

    query = (
        "PREFIX from: <urn:f:>\nSELECT * FROM from:x\nFROM NAMED\n<urn:g>\nWHERE { ?s from:p ?o }"
    )
    rewritten = with_dataset(query, Dataset(("urn:a",), ("urn:b",)))
    assert rewritten.count("\n") == query.count("\n")
    assert dataset_graphs(rewritten) == ["urn:a", "urn:b"]
    assert with_dataset(query, Dataset()) == query


def test_check_query_names_the_graphs_the_store_lacks() -> None:
    from labbrain.rdf.sparql_policy import check_query

    remote = "SELECT * FROM <http://example.org/data.ttl> WHERE { ?s ?p ?o }"
    assert check_query(remote) == []  # callers that pass no graphs learn nothing
    assert check_query(remote, graphs=lambda: [SAMPLE_GRAPH]) == ["http://example.org/data.ttl"]
    both = f"SELECT * FROM <{SAMPLE_GRAPH}> FROM NAMED <urn:none> {{ ?s ?p ?o }}"
    assert check_query(both, graphs=lambda: [SAMPLE_GRAPH]) == ["urn:none"]
    asked = []
    check_query("SELECT * { ?s ?p ?o }", graphs=lambda: asked.append(1) or [])
    assert asked == []  # no FROM: the store's graphs are not even listed


def test_an_update_the_engine_refuses_is_a_client_error(
    update_client: tuple[TestClient, LabBrain],
) -> None:
    """CLEAR GRAPH / DROP GRAPH without SILENT on a graph the store does not hold fail in the
    engine: a 400 with its message (found by the W3C protocol test update_base_uri, which was
    answered 500 InternalError), and nothing of the request is written."""
    test_client, brain = update_client
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for operation in ("CLEAR", "DROP"):
        answer = test_client.post(
            "/sparql",
            data={
                "update": f"{operation} GRAPH <urn:test:never> ;\n"
                "INSERT DATA { GRAPH <urn:test:after> { <urn:test:a> rdfs:label 'x' } }"
            },
            headers=auth,
        )
        assert answer.status_code == 400, answer.text
        error = error_of(answer)
        assert error["type"] == "QueryError"
        assert "<urn:test:never>" in error["message"] and "does not exist" in error["message"]
        assert not brain.store.has_graph("urn:test:after")
    silent = test_client.post(
        "/sparql", data={"update": "CLEAR SILENT GRAPH <urn:test:never>"}, headers=auth
    )
    assert silent.status_code == 204


#: A query that runs far past any test (a three-way cross product of the sample's triples).
ENDLESS_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_cancelled_mcp_call_over_http_stops_its_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A client that gives up on sparql_query (its call cancelled: notifications/cancelled in
    the handshake era, the response stream closed in the 2026 protocol) stops the query's
    process at once, far before the 60 s limit; the server then answers the next call."""
    from mcp import Client

    import labbrain.store.isolated as isolated

    outcomes: list[str] = []
    wait = isolated._wait_for_answer

    def recording(*args: Any) -> None:
        try:
            wait(*args)
        except Exception as error:
            outcomes.append(type(error).__name__)
            raise
        outcomes.append("answered")

    monkeypatch.setattr(isolated, "_wait_for_answer", recording)
    settings = http_settings(load_sample(tmp_path / "store"), query_timeout_seconds=60.0)

    async def give_up(url: str) -> Any:
        async with Client(url + "mcp", mode=mode) as client:
            with anyio.move_on_after(1.5) as scope:
                await client.call_tool("sparql_query", {"query": ENDLESS_QUERY})
            assert scope.cancelled_caught
            with anyio.fail_after(20):  # the query stops well before its 60 s limit
                while not outcomes:
                    await anyio.sleep(0.05)
            return await client.call_tool("sparql_query", {"query": "ASK { ?s ?p ?o }"})

    with LabBrain(settings) as brain:
        sock = bind_socket("127.0.0.1", 0)
        binding = Binding("127.0.0.1", sock.getsockname()[1])
        app = build_app(brain, binding=binding, mcp=True)
        with running_server(app, sock=sock) as url:
            after = asyncio.run(give_up(url))
    assert outcomes[0] == "QueryCancelled"
    assert not after.is_error and after.structured_content["boolean"] is True


@pytest.mark.parametrize("path", ["/mcp", "/sparql"])
def test_a_client_that_writes_a_large_body_first_reads_the_413(live: str, path: str) -> None:
    """Python's http.client writes the whole body before it reads: a 10 MB body (more than
    the loopback socket buffers hold) over the 20,000-byte cap is read and dropped, and the
    client gets the 413 with its JSON error (was: the connection reset under it)."""
    import http.client

    port = int(live.rstrip("/").rsplit(":", 1)[1])
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        + (b"x" * 10_000_000)
        + b'"}}'
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST",
            path,
            body=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 413
    assert (
        answer["error"]["type"] == "RequestTooLarge"
        and "20,000 bytes" in answer["error"]["message"]
    )
