"""The endpoint's fast lane: bounded lookups answered in the server's own process
(http.lookup), every other query still on a killable worker; the query-request middleware;
the caches of the policy, the form and the format; the cheap change detection of store.fresh;
the JSON writer of SELECT answers; one write per answer (http.transport).

No test depends on how long anything takes: routing is observed by recording what reaches
the worker pool, change detection by counting directory listings.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pyoxigraph import (
    BaseDirection,
    BlankNode,
    Literal,
    NamedNode,
    Quad,
    QueryResultsFormat,
    RdfFormat,
    Triple,
    parse,
    parse_query_results,
)
from starlette.testclient import TestClient

from conftest import SAMPLE_GRAPH, settings_for
from labbrain.core import LabBrain, open_reading
from labbrain.errors import QueryNotAllowed
from labbrain.http import lookup
from labbrain.http.app import Binding, bind_socket, build_app
from labbrain.http.lookup import MOST_ROWS, answers_in_process, bounded_rows
from labbrain.http.pool import QueryJob, QueryPool, QueryRunner
from labbrain.http.results import Answer, choose_format, term_json, term_json_text
from labbrain.http.transport import CoalescingTransport, http_protocol
from labbrain.rdf.sparql_policy import check_query, dataset_graphs
from labbrain.store import fresh
from labbrain.store.fresh import Snapshot, StoreWatch
from test_http import load_sample, running_server

BASE = "http://127.0.0.1:7879"
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"
JSON = "application/sparql-results+json"


# ---------------------------------------------------------------------------- the shape
BOUNDED = [
    "SELECT ?p ?o WHERE { <https://example.org/n1> ?p ?o }",
    "PREFIX dg: <https://discoursegraphs.com/schema/dg_core#>\n"
    "SELECT ?p ?o WHERE { <https://example.org/n1> ?p ?o }",
    "CONSTRUCT WHERE { <https://example.org/n1> ?p ?o }",
    "SELECT * { ?s a dg:Claim . }",
    "SELECT ?s WHERE { ?s dct:title 'membrane tension'@en }",
    'SELECT ?s { ?s <urn:p> "a } . ?x ?y ?z" }',  # a brace in a string is not code
    "SELECT ?s { ?s <urn:p> 42 } LIMIT 5",
    "SELECT ?s { ?s <urn:p> '1'^^xsd:integer } # a comment { ?a ?b ?c }",
    "BASE <https://example.org/> SELECT ?o { <n1> ?p ?o }",
    "select ?s where { ?s ?p ?o } limit 3",
]

#: Each looks like a lookup and is not one (or is not provably one): a worker runs it.
NOT_BOUNDED = [
    "SELECT * { ?x ?p ?x }",  # a repeated variable: the engine skips entries
    "SELECT * { ?s ?p $s }",  # the same variable, spelt with $
    "SELECT * { ?s ?p ?o } OFFSET 1000000",  # visits a million entries for nothing
    "SELECT DISTINCT ?p { ?s ?p ?o }",
    "SELECT ?s { ?s ?p ?o } ORDER BY ?s",
    "SELECT ?s { ?s ?p ?o . ?o ?q ?r }",  # a join
    "SELECT ?s { ?s <urn:p> ?o ; <urn:q> ?r }",
    "SELECT ?s { ?s <urn:p> ?o , ?r }",
    "SELECT ?s { ?s dg:a/dg:b ?o }",  # property paths
    "SELECT ?s { ?s dg:a* ?o }",
    "SELECT ?s { ?s ^dg:a ?o }",
    "SELECT ?s { ?s dg:a +1 }",  # the path dg:a+, not the number +1
    "SELECT ?s { ?s ?p ?o FILTER(?o = 1) }",
    "SELECT ?s { OPTIONAL { ?s ?p ?o } }",
    "SELECT ?s { GRAPH ?g { ?s ?p ?o } }",
    "SELECT ?s FROM <urn:g> { ?s ?p ?o }",
    "SELECT ?s { { SELECT ?s { ?s ?p ?o } } }",
    "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }",
    "SELECT ?s { ?s ?p [] }",
    "SELECT ?s { _:b ?p ?o }",
    "SELECT ?s { ?s ?p ?o } VALUES ?s { <urn:a> }",
    "SELECT ?s { ?s ?p '''long''' }",
    "ASK { ?s ?p ?o }",
    "DESCRIBE <https://example.org/n1>",
    "CONSTRUCT { ?s <urn:q> ?o } WHERE { ?s ?p ?o }",
    "SELECT ?s { ?s ?p ?o } LIMIT 5 OFFSET 5",
    "SELECT ?s { ?s ?p ?o } LIMIT +5",
    "SELECT ?s { ?s ?p ?o } }",
    "SELECT ?s { ?s dg:a\\.b ?o }",  # an escape outside a string
    "INSERT DATA { <urn:a> <urn:b> <urn:c> }",
    "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
]


@pytest.mark.parametrize("query", BOUNDED)
def test_lookup_shapes_are_bounded(query: str) -> None:
    assert bounded_rows(query, 50) is not None


@pytest.mark.parametrize("query", NOT_BOUNDED)
def test_lookalikes_are_not_bounded(query: str) -> None:
    assert bounded_rows(query, 50) is None
    assert not answers_in_process(query, 50)


def test_the_bound_is_the_cap_or_the_limit() -> None:
    query = "SELECT * { ?s ?p ?o }"
    assert bounded_rows(query, 50) == 50
    assert bounded_rows(query + " LIMIT 7", 50) == 7
    assert bounded_rows(query + " LIMIT 70", 50) == 50
    # In process only up to MOST_ROWS rows, whatever the row cap is set to.
    assert answers_in_process(query, MOST_ROWS)
    assert not answers_in_process(query, MOST_ROWS + 1)
    assert answers_in_process(query + f" LIMIT {MOST_ROWS}", 10**9)
    assert not answers_in_process(query + f" LIMIT {MOST_ROWS + 1}", 10**9)


def test_long_texts_are_not_read() -> None:
    padding = "#" + "x" * lookup.MAX_TEXT + "\n"
    assert bounded_rows(padding + "SELECT * { ?s ?p ?o }", 50) is None


# ---------------------------------------------------------------------------- in the server
class Recording:
    """A runner that records every job reaching the worker pool, then runs it there."""

    def __init__(self, runner: QueryRunner) -> None:
        self.runner = runner
        self.jobs: list[QueryJob] = []

    def start(self) -> None:
        self.runner.start()

    def run(self, job: QueryJob) -> Answer:
        self.jobs.append(job)
        return self.runner.run(job)

    def close(self) -> None:
        self.runner.close()


def http_settings(store: Path | str, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "http_host": "127.0.0.1",
        "http_port": 7879,
        "http_max_rows": 50,
        "http_query_timeout_seconds": 120.0,
        "http_query_workers": 1,
    }
    values.update(overrides)
    return settings_for(store, **values)


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("lookups") / "store")


@pytest.fixture(scope="module")
def served(sample_store: Path) -> Iterator[tuple[TestClient, Recording]]:
    """A read-only endpoint over the sample whose worker pool records what it runs."""
    with LabBrain(http_settings(sample_store), read_only=True) as brain:
        app = build_app(brain)
        endpoint = app.state.endpoint
        assert isinstance(endpoint.runner, QueryPool) and endpoint.lookups is brain.store
        recording = Recording(endpoint.runner)
        endpoint.runner = recording
        with TestClient(app, base_url=BASE) as client:
            yield client, recording


def rows_of(response: httpx2.Response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    bindings = response.json()["results"]["bindings"]
    return [{k: v["value"] for k, v in row.items()} for row in bindings]


def a_node(client: TestClient) -> str:
    rows = rows_of(
        client.get(
            "/sparql",
            params={"query": "SELECT ?n { ?n dct:title ?t ; dct:creator ?c } ORDER BY ?n LIMIT 1"},
        )
    )
    return rows[0]["n"]


def test_a_lookup_is_answered_without_a_worker(served: tuple[TestClient, Recording]) -> None:
    client, recording = served
    node = a_node(client)
    recording.jobs.clear()
    query = f"SELECT ?p ?o WHERE {{ <{node}> ?p ?o }}"
    fast = client.post("/sparql", data={"query": query}, headers={"Accept": JSON})
    assert recording.jobs == []
    assert fast.headers["content-type"] == JSON
    assert fast.headers["cache-control"] == "no-store" and fast.headers["vary"] == "Accept"
    # The same answer, byte for byte, as a worker writes for the very same text.
    endpoint = client.app.state.endpoint  # type: ignore[attr-defined]
    endpoint.lookups, saved = None, endpoint.lookups
    try:
        slow = client.post("/sparql", data={"query": query}, headers={"Accept": JSON})
    finally:
        endpoint.lookups = saved
    assert [job.query for job in recording.jobs] == [query]
    assert fast.content == slow.content and len(rows_of(fast)) > 3


def test_graph_lookup_in_process_matches_the_worker(served: tuple[TestClient, Recording]) -> None:
    client, recording = served
    node = a_node(client)
    recording.jobs.clear()
    query = f"CONSTRUCT WHERE {{ <{node}> ?p ?o }}"
    fast = client.get("/sparql", params={"query": query, "format": "ntriples"})
    assert recording.jobs == [] and fast.status_code == 200
    triples = list(parse(fast.content, RdfFormat.N_TRIPLES))
    assert triples and all(t.subject == NamedNode(node) for t in triples)


@pytest.mark.parametrize("query", [q for q in NOT_BOUNDED if q.startswith(("SELECT", "ASK"))][:6])
def test_lookalikes_go_to_the_worker(served: tuple[TestClient, Recording], query: str) -> None:
    client, recording = served
    recording.jobs.clear()
    response = client.get("/sparql", params={"query": query})
    assert response.status_code in (200, 400), response.text
    assert [job.query for job in recording.jobs] == [query]


def test_row_cap_in_process_is_exact(served: tuple[TestClient, Recording]) -> None:
    client, recording = served
    recording.jobs.clear()
    cases = [
        ("", 50, True),
        (" LIMIT 49", 49, False),
        (" LIMIT 50", 50, False),
        (" LIMIT 51", 50, True),
    ]
    for limit, rows, truncated in cases:
        response = client.get("/sparql", params={"query": "SELECT * { ?s ?p ?o }" + limit})
        assert len(rows_of(response)) == rows, limit
        assert ("x-labbrain-truncated" in response.headers) is truncated, limit
        graph = client.get(
            "/sparql",
            params={"query": "CONSTRUCT WHERE { ?s ?p ?o }" + limit, "format": "ntriples"},
        )
        assert len(list(parse(graph.content, RdfFormat.N_TRIPLES))) == rows, limit
        assert (graph.headers.get("x-labbrain-truncated") == "true") is truncated, limit
    assert recording.jobs == []


def test_cap_above_most_rows_sends_unlimited_lookups_to_a_worker(sample_store: Path) -> None:
    settings = http_settings(sample_store, http_max_rows=MOST_ROWS + 1)
    with LabBrain(settings, read_only=True) as brain:
        app = build_app(brain)
        recording = Recording(app.state.endpoint.runner)
        app.state.endpoint.runner = recording
        with TestClient(app, base_url=BASE) as client:
            rows_of(client.get("/sparql", params={"query": "SELECT * { ?s ?p ?o }"}))
            assert len(recording.jobs) == 1
            rows_of(client.get("/sparql", params={"query": "SELECT * { ?s ?p ?o } LIMIT 9"}))
            assert len(recording.jobs) == 1


def test_a_slow_lookalike_is_still_stopped(sample_store: Path) -> None:
    # SELECT ... LIMIT like a lookup, but three patterns: a worker runs it, and is killed.
    slow = "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } LIMIT 1 OFFSET 2000000000"
    assert not answers_in_process(slow, 50)
    settings = http_settings(sample_store, http_query_timeout_seconds=2.0)
    with (
        LabBrain(settings, read_only=True) as brain,
        TestClient(build_app(brain), base_url=BASE) as client,
    ):
        response = client.get("/sparql", params={"query": slow})
        assert response.status_code == 503
        assert response.json()["error"]["type"] == "QueryTimeout"


def test_policy_holds_on_the_query_path(served: tuple[TestClient, Recording]) -> None:
    client, recording = served
    recording.jobs.clear()
    for _ in range(2):  # the second time from the cache of the policy's reading
        service = client.post(
            "/sparql",
            data={"query": "SELECT * WHERE { SERVICE <http://example.org/s> { ?s ?p ?o } }"},
        )
        assert service.status_code == 403
        assert service.json()["error"]["type"] == "QueryNotAllowed"
        update = client.post("/sparql", data={"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"})
        assert update.status_code == 403 and "SPARQL update" in update.json()["error"]["message"]
    assert all("SERVICE" not in job.query for job in recording.jobs)
    # and the update endpoint of a read-only server still refuses (the route behind the
    # middleware answers updates)
    refused = client.post("/sparql", data={"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"})
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "UpdateNotAllowed"


def test_protocol_errors_keep_their_shape(served: tuple[TestClient, Recording]) -> None:
    client, _ = served
    bad = client.post(
        "/sparql",
        content=b"query=%FF",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    # %FF decodes (errors replaced), so this is a syntax error; a raw byte is not UTF-8
    assert bad.status_code == 400
    for _ in range(2):  # the second time past the cache of parsed forms
        raw = client.post(
            "/sparql",
            content=b"query=\xff",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert raw.status_code == 400 and "not UTF-8" in raw.json()["error"]["message"]
    twice = client.get("/sparql", params=[("query", "ASK {}"), ("query", "ASK {}")])
    assert twice.status_code == 400 and twice.json()["error"]["type"] == "ProtocolError"
    media = client.post("/sparql", content=b"ASK {}", headers={"Content-Type": "text/plain"})
    assert media.status_code == 415
    description = client.get("/sparql")  # no query: the service description, by the route
    assert description.status_code == 200 and "sparql-service-description" in description.text


def test_service_description_and_dataset_parameters_pass(
    served: tuple[TestClient, Recording],
) -> None:
    client, recording = served
    recording.jobs.clear()
    response = client.get(
        "/sparql",
        params={"query": "SELECT * { ?s ?p ?o } LIMIT 3", "default-graph-uri": SAMPLE_GRAPH},
    )
    assert len(rows_of(response)) == 3
    # FROM written into the query makes it a query a worker runs
    assert len(recording.jobs) == 1 and SAMPLE_GRAPH in recording.jobs[0].query


# ---------------------------------------------------------------------------- freshness
def test_a_writers_commit_is_seen_by_the_next_lookup(tmp_path: Path) -> None:
    store = load_sample(tmp_path / "store")
    settings = http_settings(store)
    subject = "urn:test:fresh-node"
    query = f"SELECT ?o WHERE {{ <{subject}> <urn:test:p> ?o }}"
    with open_reading(settings) as reader:
        app = build_app(reader)
        recording = Recording(app.state.endpoint.runner)
        app.state.endpoint.runner = recording
        with TestClient(app, base_url=BASE) as client:
            assert rows_of(client.get("/sparql", params={"query": query})) == []
            with LabBrain(settings) as writer:  # another opener of the store: the writer
                for value in ("one", "two"):
                    writer.store.add_quads(
                        [
                            Quad(
                                NamedNode(subject),
                                NamedNode("urn:test:p"),
                                Literal(value),
                                NamedNode("urn:test:g"),
                            )
                        ]
                    )
                    rows = rows_of(client.get("/sparql", params={"query": query}))
                    assert value in {row["o"] for row in rows}
            # and a query a worker runs sees the same
            count = "SELECT (COUNT(*) AS ?n) WHERE { <urn:test:fresh-node> ?p ?o }"
            assert rows_of(client.get("/sparql", params={"query": count})) == [{"n": "2"}]
            assert len(recording.jobs) == 1


def test_watch_lists_the_directory_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = load_sample(tmp_path / "store")
    # A listing is trusted at once (the directory's change time, which cannot be set back,
    # is as new as the test: see the next test for listings that are not trusted).
    monkeypatch.setattr(fresh, "RACY_NS", 0)
    watch = StoreWatch(str(store))
    with LabBrain(settings_for(store)) as writer:
        # The engine may still delete files it no longer needs just after the open (a change
        # of the directory): start once the directory has stayed as it is for half a second.
        directory = store / "oxigraph"
        settled = directory.stat().st_mtime_ns
        for _ in range(100):
            time.sleep(0.5)
            now = directory.stat().st_mtime_ns
            if now == settled:
                break
            settled = now
        first = watch.stamp()
        listed = watch.listings
        assert watch.stamp() == first and watch.listings == listed  # unchanged: stats only
        writer.store.add_quads(
            [Quad(NamedNode("urn:a"), NamedNode("urn:b"), Literal("c"), NamedNode("urn:g"))]
        )
        # A commit appends to the write-ahead log: seen without listing the directory.
        assert watch.stamp() != first and watch.listings == listed


@pytest.mark.parametrize(("racy_ns", "listings"), [(10**18, 2), (0, 1)])
def test_watch_lists_again_while_the_directory_is_too_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, racy_ns: int, listings: int
) -> None:
    # A file created within the clock tick of a listing leaves the directory's times as they
    # were: a listing taken less than RACY_NS after the directory changed is not trusted.
    store = load_sample(tmp_path / "store")
    monkeypatch.setattr(fresh, "RACY_NS", racy_ns)
    watch = StoreWatch(str(store))
    assert watch.stamp() == watch.stamp()
    assert watch.listings == listings


def test_snapshot_reopens_after_a_commit(tmp_path: Path) -> None:
    store = load_sample(tmp_path / "store")
    snapshot = Snapshot(str(store))
    view = snapshot.store()
    assert snapshot.store() is view  # nothing written: the same view
    with LabBrain(settings_for(store)) as writer:
        writer.store.add_quads(
            [Quad(NamedNode("urn:a"), NamedNode("urn:b"), Literal("c"), NamedNode("urn:g"))]
        )
    fresh_view = snapshot.store()
    assert fresh_view is not view and fresh_view.has_graph("urn:g")
    snapshot.close()


# ---------------------------------------------------------------------------- caches
def test_policy_cache_refuses_every_time_and_copies_graphs() -> None:
    query = "SELECT * FROM <urn:g1> FROM NAMED <urn:g2> WHERE { ?s ?p ?o }"
    graphs = dataset_graphs(query)
    assert graphs == ["urn:g1", "urn:g2"]
    graphs.append("urn:mutated")
    assert dataset_graphs(query) == ["urn:g1", "urn:g2"]
    for _ in range(2):
        with pytest.raises(QueryNotAllowed):
            check_query("SELECT * { SERVICE <http://x/> { ?s ?p ?o } }")
        assert check_query(query, graphs=lambda: ["urn:g1"]) == ["urn:g2"]
    assert check_query(query, graphs=lambda: ["urn:g1", "urn:g2"]) == []


def test_format_choice_follows_each_accept_header() -> None:
    for _ in range(2):
        assert choose_format("select", "text/csv").name == "csv"
        assert choose_format("select", "application/sparql-results+xml").name == "xml"
        assert choose_format("select", None).name == "json"
        assert choose_format("graph", "application/n-triples").name == "ntriples"
        assert choose_format("select", "text/html", page=True).name == "html"
        assert choose_format("select", "text/html").name == "json"


# ---------------------------------------------------------------------------- JSON writer
TERMS = [
    NamedNode("https://example.org/a?b=c&d=é#f"),
    BlankNode("b0"),
    Literal("plain"),
    Literal('quote " backslash \\ newline \n tab \t nul \x00 é 𝄞 \u2028'),
    Literal("hallo", language="de"),
    Literal("42", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
    Literal("x", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#string")),
    Literal("مرحبا", language="ar", direction=BaseDirection.RTL),
    Triple(NamedNode("urn:s"), NamedNode("urn:p"), Literal("o")),
]


@pytest.mark.parametrize("term", TERMS, ids=lambda t: type(t).__name__)
def test_term_text_is_what_json_dumps_writes(term: Any) -> None:
    expected = json.dumps(term_json(term), ensure_ascii=False, separators=(",", ":"))
    assert term_json_text(term) == expected


def test_select_json_is_valid_and_round_trips(served: tuple[TestClient, Recording]) -> None:
    client, _ = served
    response = client.get(
        "/sparql", params={"query": "SELECT ?s ?missing ?o { ?s dct:title ?o } LIMIT 5"}
    )
    document = response.json()
    assert document["head"]["vars"] == ["s", "missing", "o"]
    assert all("missing" not in row for row in document["results"]["bindings"])
    parsed = parse_query_results(response.content, QueryResultsFormat.JSON)
    assert len(list(parsed)) == 5


# ---------------------------------------------------------------------------- one write
class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def test_coalescing_transport_writes_once_per_turn() -> None:
    async def scenario() -> FakeTransport:
        raw = FakeTransport()
        transport = CoalescingTransport(raw)  # type: ignore[arg-type]
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(b"body")
        assert raw.writes == [] and transport.get_write_buffer_size() == 23
        await asyncio.sleep(0)
        assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        transport.write(b"last")
        transport.close()  # held writes go out before closing
        assert raw.writes[-1] == b"last" and raw.closed
        transport.write(b"late")
        await asyncio.sleep(0)
        assert raw.writes[-1] == b"last"  # nothing is written to a closing transport
        assert transport.get_extra_info("peername") == "info:peername"
        return raw

    asyncio.run(scenario())


def test_served_with_one_write_per_answer(sample_store: Path) -> None:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    with LabBrain(http_settings(sample_store, http_port=port), read_only=True) as brain:
        app = build_app(brain, binding=Binding("127.0.0.1", port))
        with running_server(app, sock=sock, http=http_protocol()) as base:
            url = f"{base}sparql"
            with httpx2.Client(timeout=60) as http:  # one kept-alive connection
                for limit in (1, 5, 50):
                    response = http.post(
                        url, data={"query": f"SELECT * {{ ?s ?p ?o }} LIMIT {limit}"}
                    )
                    assert len(rows_of(response)) == limit
                big = http.get(url, params={"query": "CONSTRUCT WHERE { ?s ?p ?o }"})
                assert big.status_code == 200 and big.headers["x-labbrain-truncated"] == "true"
            closing = httpx2.post(
                url, data={"query": "ASK { ?s ?p ?o }"}, headers={"Connection": "close"}
            )
            assert closing.json()["boolean"] is True


def test_current_view_is_none_after_a_commit(tmp_path: Path) -> None:
    store = load_sample(tmp_path / "store")
    snapshot = Snapshot(str(store))
    assert snapshot.current() is None  # nothing opened yet, and current() opens nothing
    view = snapshot.store()
    assert snapshot.current() is view
    with LabBrain(settings_for(store)) as writer:
        writer.store.add_quads(
            [Quad(NamedNode("urn:a"), NamedNode("urn:b"), Literal("c"), NamedNode("urn:g"))]
        )
        assert snapshot.current() is None
    assert snapshot.store() is not view
    snapshot.close()


# ---------------------------------------------------------------------------- workers
def test_pool_start_waits_until_every_worker_is_ready(sample_store: Path) -> None:
    pool = QueryPool(str(sample_store), size=2, seconds=120)
    pool.start()
    try:
        assert len(pool._workers) == 2 and all(w.ready for w in pool._workers)
        answer = pool.run(QueryJob("ASK { ?s ?p ?o }", None, None, 10))
        assert json.loads(answer.body)["boolean"] is True
    finally:
        pool.close()


def test_a_worker_still_starting_answers_once_ready(sample_store: Path) -> None:
    pool = QueryPool(str(sample_store), size=1, seconds=120)
    pool.start_seconds = 0  # start() does not wait: the first job meets a starting worker
    pool.start()
    try:
        for _ in range(2):
            answer = pool.run(QueryJob("SELECT * { ?s ?p ?o } LIMIT 3", None, None, 10))
            assert answer.count == 3
    finally:
        pool.close()
