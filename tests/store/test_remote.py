"""The remote backend (``--endpoint``) against a real Oxigraph server, plus a stub server for
the failures a real one does not produce on demand.

The shared suites (tools, agent memory, propositions, CLI load / query / export) run on both
backends through the ``backend`` fixture; this module covers what is particular to a remote
store: the SPARQL text it sends, how loads stay atomic, sharing an endpoint between
processes, the settings, and every error path.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from pyoxigraph import (
    BlankNode,
    CanonicalizationAlgorithm,
    Dataset,
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
)

import labbrain
from conftest import (
    SAMPLE,
    SAMPLE_DCT,
    SAMPLE_GRAPH,
    OxigraphServer,
    oxigraph_server,
    remote_settings,
    require,
    settings_for,
)
from generate import write_export  # type: ignore[import-not-found]
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import (
    EndpointError,
    EndpointReadOnly,
    ExportFormatError,
    GraphNotFound,
    LoadInProgress,
    QueryError,
    QueryTimeout,
    StoreReadOnly,
)
from labbrain.index.search_query import SearchQuery
from labbrain.mcp.sandbox import run_query
from labbrain.mcp.server import build_server
from labbrain.ops.workflows import ingest_params, task_runner
from labbrain.rdf.namespaces import STAGING_PREFIX
from labbrain.settings import Settings
from labbrain.store.base import RdfDocument
from labbrain.store.remote import sparql as remote_sparql
from labbrain.store.remote.http import Response
from labbrain.store.remote.sparql import (
    bind_values,
    blank_node_safe_chunks,
    count_query,
    new_staging_graph,
    page_query,
    staging_is_stale,
)
from labbrain.store.remote.store import (
    DEADLOCK_ATTEMPTS,
    Endpoints,
    RemoteStore,
    default_update_endpoint,
    index_directory,
)

EX = "http://example.org/"
SAMPLE_INSTANCES = 171  # reified relation instances of the sample (data/README.md)
LABBRAIN = str(Path(sys.executable).with_name("labbrain"))
#: A query no engine finishes: the cross product of the sample's quads, three times over.
ENDLESS = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c . ?d ?e ?f . ?h ?i ?j . ?k ?l ?m } }"


def canonical(quads: Iterator[Quad] | list[Quad]) -> set[str]:
    """Canonical (RDFC-1.0) N-Quads lines of ``quads``, all moved into one graph."""
    fixed = NamedNode("urn:test:graph")
    dataset = Dataset(Quad(q.subject, q.predicate, q.object, fixed) for q in quads)
    dataset.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return {str(q) for q in dataset}


def contents(store: RemoteStore) -> dict[str, set[str]]:
    """Every graph the endpoint has, staging graphs included, with its canonical quads."""
    return {g: canonical(list(store.quads(g))) for g in store._all_graphs()}


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env or {})


def one_line_error(result: Result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _triples(n: int, tag: str = "t") -> list[Triple]:
    return [
        Triple(NamedNode(f"{EX}{tag}{i}"), NamedNode(f"{EX}p"), Literal(str(i))) for i in range(n)
    ]


# ---------------------------------------------------------------------------- SPARQL text
def test_values_block_opens_the_where_group() -> None:
    sparql = '# a { comment\nSELECT ?n (STR("}") AS ?x) WHERE { GRAPH ?g { ?n <urn:a#b> "{" } }'
    bound = bind_values(sparql, {"g": NamedNode("urn:g"), "n": Literal("x y")})
    assert bound == (
        '# a { comment\nSELECT ?n (STR("}") AS ?x) WHERE { VALUES (?g ?n) { (<urn:g> "x y") } '
        ' GRAPH ?g { ?n <urn:a#b> "{" } }'
    )
    assert bind_values(sparql, {}) == sparql


def test_values_block_skips_a_construct_template_and_wraps_a_sub_select() -> None:
    construct = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert bind_values(construct, {"g": NamedNode("urn:g")}) == (
        "CONSTRUCT { ?s ?p ?o } WHERE { VALUES (?g) { (<urn:g>) }  GRAPH ?g { ?s ?p ?o } }"
    )
    sub = "SELECT * { SELECT ?s WHERE { ?s ?p ?o } LIMIT 3 }"
    assert bind_values(sub, {"s": NamedNode("urn:s")}) == (
        "SELECT * { VALUES (?s) { (<urn:s>) } { SELECT ?s WHERE { ?s ?p ?o } LIMIT 3 }}"
    )
    ask = "PREFIX ex: <http://example.org/select#>\nASK { ?s ex:where ?o }"
    assert bind_values(ask, {"o": Literal("1")}).endswith(
        'ASK { VALUES (?o) { ("1") }  ?s ex:where ?o }'
    )


@pytest.mark.parametrize(
    ("sparql", "value", "message"),
    [
        ("DESCRIBE <urn:x>", NamedNode("urn:y"), "no WHERE group"),
        ("CONSTRUCT WHERE { ?s ?p ?o }", NamedNode("urn:y"), "CONSTRUCT WHERE"),
        ("SELECT * WHERE { ?s ?p ?o }", BlankNode("b"), "an IRI or a literal"),
    ],
)
def test_values_binding_refuses_what_it_cannot_bind(
    sparql: str, value: NamedNode | BlankNode, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        bind_values(sparql, {"s": value})


_labels = st.sampled_from([f"b{i}" for i in range(12)])
_ends = st.one_of(_labels.map(BlankNode), st.integers(0, 5).map(lambda i: NamedNode(f"{EX}n{i}")))


@given(
    triples=st.lists(
        st.builds(
            lambda s, o, i: Triple(s, NamedNode(f"{EX}p{i}"), o), _ends, _ends, st.integers(0, 3)
        ),
        max_size=60,
    ),
    size=st.integers(1, 7),
)
def test_chunks_keep_blank_node_components_together(triples: list[Triple], size: int) -> None:
    chunks = list(blank_node_safe_chunks(triples, size))
    assert sorted(map(str, (t for c in chunks for t in c))) == sorted(map(str, triples))
    where: dict[str, int] = {}
    for number, chunk in enumerate(chunks):
        for triple in chunk:
            labels = [t.value for t in (triple.subject, triple.object) if isinstance(t, BlankNode)]
            for label in labels:
                assert where.setdefault(label, number) == number, "a blank node spans chunks"
        blank = [
            t for t in chunk if isinstance(t.subject, BlankNode) or isinstance(t.object, BlankNode)
        ]
        if len(chunk) > size:
            assert chunk == blank, "only one blank-node component may overfill a chunk"


def test_staging_graph_names_carry_their_age() -> None:
    from datetime import UTC, datetime

    then = datetime(2026, 1, 1, tzinfo=UTC)
    graph = new_staging_graph(then)
    assert graph.startswith(STAGING_PREFIX + "20260101T000000Z-")
    assert staging_is_stale(graph, timedelta(days=1), then + timedelta(days=2))
    assert not staging_is_stale(graph, timedelta(days=1), then + timedelta(hours=1))
    assert staging_is_stale(STAGING_PREFIX + "hand-made", timedelta(days=1))
    assert not staging_is_stale("urn:labbrain:system", timedelta(0))


# ---------------------------------------------------------------------------- settings
def test_update_endpoint_defaults_follow_the_server_layout() -> None:
    assert default_update_endpoint("http://h:7878/query") == "http://h:7878/update"
    assert default_update_endpoint("http://h/ds/query?x=1") == "http://h/ds/update?x=1"
    assert default_update_endpoint("http://h:8890/sparql") == "http://h:8890/sparql"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://lab:secret@example.org/query", "LABBRAIN_ENDPOINT_AUTH"),
        ("ftp://example.org/query", "http:// or https://"),
        ("/query", "http:// or https://"),
    ],
)
def test_endpoint_urls_are_checked(url: str, message: str) -> None:
    result = invoke("--endpoint", url, "info")
    line = one_line_error(result, 2, "LABBRAIN_ENDPOINT", message)
    assert "secret" not in line


def test_info_names_the_endpoint_and_never_prints_the_credentials(
    oxigraph: OxigraphServer,
) -> None:
    secret = "Bearer s3cr3t-t0ken"
    env = {"LABBRAIN_ENDPOINT_AUTH": secret}
    assert (
        invoke(
            "--endpoint",
            oxigraph.query,
            "--gsp-endpoint",
            oxigraph.store,
            "load",
            str(SAMPLE_DCT),
            env=env,
        ).exit_code
        == 0
    )
    result = invoke("--endpoint", oxigraph.query, "info", env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"endpoint: {oxigraph.query}"
    assert secret not in result.stdout and "s3cr3t" not in result.stdout
    assert "LABBRAIN_ENDPOINT_AUTH" in result.stdout
    assert "dct-sample" in result.stdout and "text index: 8 nodes" in result.stdout


def test_the_index_lives_in_a_directory_per_endpoint(oxigraph: OxigraphServer) -> None:
    with LabBrain(remote_settings(oxigraph)) as brain:
        brain.load(str(SAMPLE_DCT))
    index = index_directory(oxigraph.query) / "index.sqlite"
    assert index.is_file()
    assert index.parent.parent.name == "remote"
    assert index_directory(oxigraph.query) != index_directory(oxigraph.base + "/sparql")
    # Deleted: rebuilt from the endpoint's data at the next open, also a read-only one.
    index.unlink()
    with LabBrain(remote_settings(oxigraph), read_only=True) as reader:
        assert reader.index.count() == 8
        assert [h.node.uid for h in reader.search(SearchQuery("platinum replica")).hits] != []


# ---------------------------------------------------------------------------- loads
@pytest.mark.parametrize("gsp", [True, False], ids=["graph store protocol", "insert data"])
def test_a_remote_load_gives_the_embedded_dataset(oxigraph: OxigraphServer, gsp: bool) -> None:
    overrides: dict[str, Any] = {} if gsp else {"gsp_endpoint": None}
    with LabBrain(settings_for(":memory:")) as embedded:
        expected = embedded.load(str(SAMPLE))
        reference = canonical(list(embedded.store.quads(SAMPLE_GRAPH)))
    with LabBrain(remote_settings(oxigraph, **overrides)) as brain:
        report = brain.load(str(SAMPLE))
        quads = list(brain.store.quads(SAMPLE_GRAPH))
        assert report.quads == expected.quads == len(quads) == 2499
        assert (
            len({q.subject for q in quads if isinstance(q.subject, BlankNode)}) == SAMPLE_INSTANCES
        )
        assert canonical(quads) == reference
        assert report.indexed == 150 and report.nodes_by_type == expected.nodes_by_type
        again = brain.load(str(SAMPLE))
        assert again.replaced and canonical(list(brain.store.quads(SAMPLE_GRAPH))) == reference
        assert not any(g.startswith(STAGING_PREFIX) for g in brain.store._all_graphs())


def _seeded(oxigraph: OxigraphServer) -> RemoteStore:
    store = RemoteStore.from_settings(remote_settings(oxigraph))
    store.replace_graph("urn:labbrain:dataset:x", lambda w: w.write(_triples(100)))
    store.add_quads(
        [
            Quad(
                NamedNode(f"{EX}rec"),
                NamedNode(f"{EX}p"),
                Literal("1"),
                NamedNode("urn:labbrain:system"),
            )
        ]
    )
    return store


def test_a_failed_fill_leaves_the_endpoint_unchanged(oxigraph: OxigraphServer) -> None:
    with _seeded(oxigraph) as store:
        before = contents(store)

        def failing_fill(writer: Any) -> None:
            writer.write(_triples(7000, "new"))  # more than one INSERT chunk, already sent
            writer.write(
                RdfDocument(
                    b"<http://example.org/a> <http://example.org/b> .",
                    RdfFormat.N_TRIPLES,
                    "bad.nt",
                )
            )

        with pytest.raises(ExportFormatError, match="bad.nt: invalid N-Triples"):
            store.replace_graph("urn:labbrain:dataset:x", failing_fill)
        assert contents(store) == before


def test_a_failed_commit_hook_leaves_the_endpoint_unchanged(oxigraph: OxigraphServer) -> None:
    with _seeded(oxigraph) as store:
        before = contents(store)
        seen: list[int] = []

        def failing_commit(view: Any) -> None:
            seen.append(view.count("urn:labbrain:dataset:x"))  # reads what fill wrote
            view.add_quads(
                [
                    Quad(
                        NamedNode(f"{EX}rec"),
                        NamedNode(f"{EX}p"),
                        Literal("2"),
                        NamedNode("urn:labbrain:system"),
                    )
                ]
            )
            raise RuntimeError("commit hook failed")

        with pytest.raises(RuntimeError, match="commit hook failed"):
            store.replace_graph(
                "urn:labbrain:dataset:x",
                lambda w: w.write(_triples(10, "o")),
                on_commit=failing_commit,
            )
        assert seen == [10]
        assert contents(store) == before


def test_a_commit_the_server_rejects_leaves_the_endpoint_unchanged(
    oxigraph: OxigraphServer,
) -> None:
    """The move and the commit hook's writes are one update: the server applies all or none."""
    with _seeded(oxigraph) as store:
        before = contents(store)

        def commit(view: Any) -> None:
            view.add_quads(
                [
                    Quad(
                        NamedNode(f"{EX}rec"),
                        NamedNode(f"{EX}p"),
                        Literal("3"),
                        NamedNode("urn:labbrain:system"),
                    )
                ]
            )
            view.update("MOVE GRAPH <urn:missing> TO <urn:elsewhere>")  # fails on the server

        with pytest.raises(EndpointError, match=r"failed \(HTTP 500\).*does not exist"):
            store.replace_graph(
                "urn:labbrain:dataset:x", lambda w: w.write(_triples(10, "o")), on_commit=commit
            )
        assert contents(store) == before


def test_staging_graphs_are_hidden_and_stale_ones_dropped(oxigraph: OxigraphServer) -> None:
    old = STAGING_PREFIX + "20200101T000000Z-0123456789abcdef"
    young = new_staging_graph()
    with LabBrain(remote_settings(oxigraph)) as brain:
        brain.load(str(SAMPLE_DCT))
        for graph in (old, young):
            brain.store.add_quads(
                [Quad(NamedNode(f"{EX}s"), NamedNode(f"{EX}p"), Literal("x"), NamedNode(graph))]
            )
        assert old not in brain.store.graphs() and young not in brain.store.graphs()
        assert all(row["graph"] != old for row in brain.graphs())  # template queries too
    with LabBrain(remote_settings(oxigraph), read_only=True) as reader:
        assert {old, young} <= set(reader.store._all_graphs())  # readers never drop
    with LabBrain(remote_settings(oxigraph)) as writer:
        left = set(writer.store._all_graphs())
        assert old not in left and young in left


# ---------------------------------------------------------------------------- queries
@examples(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=40), language=st.sampled_from([None, "en", "de-CH"]))
def test_parameters_round_trip_exactly(
    oxigraph: OxigraphServer, text: str, language: str | None
) -> None:
    """Any string bound as a parameter comes back unchanged and changes nothing else."""
    with RemoteStore.from_settings(remote_settings(oxigraph)) as store:
        value = Literal(text, language=language) if language else Literal(text)
        result = store.query("SELECT ?v ?n WHERE { BIND(1 AS ?n) }", substitutions={"v": value})
        assert isinstance(result, QuerySolutions)
        rows = list(result)
        assert len(rows) == 1 and rows[0]["v"] == value
        store.add_quads(
            [Quad(NamedNode(f"{EX}s"), NamedNode(f"{EX}p"), value, NamedNode(f"{EX}g"))]
        )
        found = list(store.quads(f"{EX}g", NamedNode(f"{EX}s")))
        assert value in {q.object for q in found}
        store.drop_graph(f"{EX}g")
        assert store.graphs() == []


def test_results_are_pyoxigraph_types(oxigraph: OxigraphServer) -> None:
    with LabBrain(remote_settings(oxigraph)) as brain:
        brain.load(str(SAMPLE_DCT))
        construct = brain.query(
            "CONSTRUCT { ?n dct:title ?t } WHERE { GRAPH ?g { ?n a dg:Claim ; dct:title ?t } }"
        )
        assert isinstance(construct, QueryTriples) and len(list(construct)) == 2
        with pytest.raises(QueryError) as remote_error:
            brain.query("SELECT ?x WHERE {\n}}")
    with LabBrain(settings_for(":memory:")) as embedded, pytest.raises(QueryError) as local:
        embedded.query("SELECT ?x WHERE {\n}}")
    assert str(remote_error.value) == str(local.value)
    assert str(local.value).startswith("SPARQL syntax error (line 2, column 3)")


@pytest.mark.parametrize("mode", ["auto", "union-default-graph", "dataset", "native"])
def test_union_of_graphs_in_each_mode(tmp_path: Path, mode: str) -> None:
    """sparql_query sees every graph as the default graph, however the server is asked."""
    options = ["--union-default-graph"] if mode == "native" else []
    with (
        oxigraph_server(tmp_path / "ox", *options) as server,
        LabBrain(remote_settings(server, endpoint_union=mode)) as brain,
    ):
        brain.load(str(SAMPLE))
        brain.load(str(SAMPLE_DCT))
        answer = run_query(
            brain.store,
            "SELECT (COUNT(DISTINCT ?n) AS ?claims) WHERE { ?n a dg:Claim }",
            limit=10,
            max_chars=1000,
            seconds=30,
        )
    assert answer.rows == [{"claims": "32"}]  # 30 in the sample + 2 in the dct sample


def test_sparql_query_tool_time_limit_holds_on_a_remote_store(oxigraph: OxigraphServer) -> None:
    with LabBrain(remote_settings(oxigraph, query_timeout_seconds=0.5)) as brain:
        brain.load(str(SAMPLE))
        server = build_server(brain)

        async def calls() -> list[Any]:
            async with Client(server) as client:
                return [
                    await client.call_tool("sparql_query", {"query": ENDLESS}),
                    await client.call_tool("sparql_query", {"query": "ASK { ?s a dg:Claim }"}),
                ]

        stopped, answered = asyncio.run(calls())
    assert stopped.is_error
    assert "query stopped after 0.5 s" in stopped.content[0].text
    assert not answered.is_error and answered.structured_content["boolean"] is True


def test_a_body_cut_by_the_servers_time_limit_is_an_error(tmp_path: Path) -> None:
    """oxigraph serve --timeout-s answers 200 and cuts the body: never taken as an answer."""
    with (
        oxigraph_server(tmp_path / "ox", "--timeout-s", "1") as server,
        LabBrain(remote_settings(server)) as brain,
    ):
        brain.load(str(SAMPLE))
        with pytest.raises(QueryError, match="stopped the query at its own time limit"):
            brain.query(ENDLESS)
        # The connection is not reused in a broken state.
        assert [row["n"].value for row in brain.query("SELECT (1 AS ?n) {}")] == ["1"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- sharing
def on_another_machine(settings: Settings, data_home: Path, **kwargs: Any) -> LabBrain:
    """A LabBrain whose local text index is its own file (as on another machine)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(data_home))
        return LabBrain(settings, **kwargs)


def test_processes_share_an_endpoint_without_a_lock(
    oxigraph: OxigraphServer, tmp_path: Path
) -> None:
    first = LabBrain(remote_settings(oxigraph))
    # No StoreLocked: there is no writer lock on a remote store.
    second = on_another_machine(remote_settings(oxigraph), tmp_path / "elsewhere")
    assert first.index.path != second.index.path
    try:
        assert second.search(SearchQuery("tension")).hits == []
        first.load(str(SAMPLE))
        # The other process's index follows the load records (checked before every read here).
        assert [
            h.node.graph for h in second.search(SearchQuery("membrane tension", limit=3)).hits
        ] == [SAMPLE_GRAPH] * 3
        second.load(str(SAMPLE_DCT))
        assert first.index.count() == 158
        second.drop("dct-sample")
        assert first.index.count() == 150
    finally:
        first.close()
        second.close()


def test_the_index_refresh_interval_is_a_setting(oxigraph: OxigraphServer, tmp_path: Path) -> None:
    hourly = remote_settings(oxigraph, endpoint_index_refresh_seconds=3600)
    with (
        LabBrain(remote_settings(oxigraph)) as writer,
        on_another_machine(hourly, tmp_path / "elsewhere") as lazy,
    ):
        writer.load(str(SAMPLE_DCT))
        assert lazy.index.count() == 0  # checked at open, not again within the hour
        lazy.index.sync(lazy.store)
        assert lazy.index.count() == 8


def test_read_only_refuses_writes_before_sending_them(oxigraph: OxigraphServer) -> None:
    with LabBrain(remote_settings(oxigraph)) as brain:
        brain.load(str(SAMPLE_DCT))
    with LabBrain(remote_settings(oxigraph), read_only=True) as reader:
        before = contents(reader.store)  # type: ignore[arg-type]
        quad = Quad(NamedNode(f"{EX}s"), NamedNode(f"{EX}p"), Literal("x"), NamedNode(f"{EX}g"))
        for attempt in (
            lambda: reader.store.add_quads([quad]),
            lambda: reader.store.apply([], [quad]),
            lambda: reader.store.update("CLEAR ALL"),
            lambda: reader.store.drop_graph("urn:labbrain:dataset:dct-sample"),
            lambda: reader.store.replace_graph(f"{EX}g", lambda w: None),
        ):
            with pytest.raises(StoreReadOnly):
                attempt()
        with pytest.raises(GraphNotFound):
            RemoteStore.from_settings(remote_settings(oxigraph)).drop_graph("urn:nope")
        assert contents(reader.store) == before  # type: ignore[arg-type]


def test_a_read_only_server_refuses_loads_and_answers_queries(tmp_path: Path) -> None:
    directory = tmp_path / "ox"
    with oxigraph_server(directory) as server:
        args = ["--endpoint", server.query, "--gsp-endpoint", server.store]
        assert invoke(*args, "load", str(SAMPLE_DCT)).exit_code == 0
    with oxigraph_server(directory, command="serve-read-only") as server:
        args = ["--endpoint", server.query, "--gsp-endpoint", server.store]
        line = one_line_error(invoke(*args, "load", str(SAMPLE)), 3, "refused the write (HTTP 403)")
        assert "read-only" in line
        out = invoke(*args, "stats", "--json")
        assert out.exit_code == 0, out.stderr
        assert sum(r["count"] for r in json.loads(out.stdout)["nodes_by_type"]) == 8


def test_an_empty_read_only_server_is_opened_read_only(tmp_path: Path) -> None:
    """A writer's first act is storing the ontology: refused, so `labbrain mcp` serves the
    endpoint read-only instead (QLever and other read-only endpoints): it offers the tools
    that read, and none that writes."""
    directory = tmp_path / "ox"
    with oxigraph_server(directory):
        pass  # creates an empty store
    with oxigraph_server(directory, command="serve-read-only") as server:
        with pytest.raises(EndpointReadOnly, match=r"refused the write \(HTTP 403\)"):
            LabBrain(remote_settings(server))
        with LabBrain(remote_settings(server), read_only=True) as reader:
            assert reader.graphs() == [] and reader.search(SearchQuery("anything")).hits == []
        params = StdioServerParameters(
            command=LABBRAIN,
            args=["--endpoint", server.query, "mcp", "--toolsets", "all"],
            env={"XDG_DATA_HOME": str(tmp_path / "xdg")},
        )

        async def run() -> tuple[list[str], Any]:
            async with Client(params, read_timeout_seconds=120) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                return names, await client.call_tool("list_projects", {})

        names, listed = asyncio.run(run())
    assert "create_project" not in names and "store_memory" not in names
    assert "search_nodes" in names and "get_node" in names
    assert not listed.is_error and listed.structured_content["projects"] == []


# ---------------------------------------------------------------------------- HTTP failures
class _Stub:
    """A scripted HTTP server: answers ``ASK`` queries with true and the listings of graphs and
    of first loads in flight with none, everything else with what ``respond`` writes; records
    method, path and headers of every request, and the client's port (one per connection)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.ports: list[int] = []
        self.respond: Callable[[http.server.BaseHTTPRequestHandler], None] = lambda h: None
        self.release = threading.Event()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                stub.requests.append((self.command, self.path, dict(self.headers)))
                stub.ports.append(self.client_address[1])
                query = parse_qs(body.decode()).get("query", [""])[0]
                if "ASK" in query or "SELECT DISTINCT ?g" in query or "fillingAs" in query:
                    data = (
                        b'{"head":{},"boolean":true}'
                        if "ASK" in query
                        else b'{"head":{"vars":["g"]},"results":{"bindings":[]}}'
                    )
                    self.send_response(200)
                    self.send_header("Content-Type", "application/sparql-results+json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    stub.respond(self)

            do_POST = do_GET = do_HEAD = do_PUT = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/query"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[_Stub]:
    server = _Stub()
    yield server
    server.close()


def _answer(
    status: int,
    body: bytes,
    content_type: str = "text/plain",
    length: int | None = None,
    **headers: str,
) -> Callable[[http.server.BaseHTTPRequestHandler], None]:
    def respond(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body) if length is None else length))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
        if length is not None:
            handler.close_connection = True

    return respond


def _chunked_then_cut(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/sparql-results+json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.write(b"10\r\n" + b'{"head":{"vars":' + b"\r\n")
    handler.close_connection = True


STUB_CASES: dict[
    str, tuple[Callable[[http.server.BaseHTTPRequestHandler], None], type[Exception], str]
] = {
    "unauthorised": (
        _answer(401, b"who are you"),
        EndpointError,
        "asks for credentials (HTTP 401); set LABBRAIN_ENDPOINT_USER and "
        "LABBRAIN_ENDPOINT_PASSWORD, LABBRAIN_ENDPOINT_TOKEN or LABBRAIN_ENDPOINT_AUTH",
    ),
    "not found": (_answer(404, b"no such service"), EndpointError, "not found (HTTP 404)"),
    "redirect": (
        _answer(302, b"", Location="http://127.0.0.1:1/elsewhere?key=x"),
        EndpointError,
        "redirects (HTTP 302) to http://127.0.0.1:1/elsewhere; give that URL",
    ),
    "server error": (
        _answer(500, b"disk on fire\nat /srv/secret/path.rs:12"),
        EndpointError,
        "failed (HTTP 500): disk on fire",
    ),
    "bad request": (
        _answer(400, b"unsupported feature"),
        QueryError,
        "the endpoint refused the request: unsupported feature",
    ),
    "content length cut short": (
        _answer(200, b'{"head":', "application/sparql-results+json", length=500),
        EndpointError,
        "the answer was cut short after 8 bytes",
    ),
    "chunked body cut short": (_chunked_then_cut, EndpointError, "cut short"),
    "broken results": (
        _answer(
            200,
            b'{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"uri","value":"no scheme"}}]}}',
            "application/sparql-results+json",
        ),
        EndpointError,
        "sent a broken answer",
    ),
    "unexpected content": (
        _answer(200, b"<html></html>", "text/html"),
        EndpointError,
        "unexpected content 'text/html'",
    ),
}


@pytest.mark.parametrize("case", sorted(STUB_CASES))
def test_http_failures_are_errors_of_the_tree(stub: _Stub, case: str) -> None:
    respond, error, message = STUB_CASES[case]
    stub.respond = respond
    with (
        RemoteStore.from_settings(Settings(endpoint=stub.url), read_only=True) as store,
        pytest.raises(error) as raised,
    ):
        store.query("SELECT * WHERE { ?s ?p ?o }")
    text = str(raised.value)
    assert message in text
    assert "/srv/secret" not in text and "key=x" not in text
    assert {method for method, _, _ in stub.requests} == {"POST"}  # never HEAD


def test_the_authorization_header_goes_with_every_request_and_nowhere_else(stub: _Stub) -> None:
    stub.respond = _answer(403, b"forbidden")
    secret = "Basic bGFiOnNlY3JldA=="
    settings = Settings(endpoint=stub.url, endpoint_auth=secret)  # type: ignore[arg-type]
    with RemoteStore.from_settings(settings) as store, pytest.raises(EndpointReadOnly) as refused:
        store.update("CLEAR ALL")
    assert [headers.get("Authorization") for _, _, headers in stub.requests] == [secret] * 4
    # the open's check, its listings of graphs and of first loads in flight, the update
    assert [path for _, path, _ in stub.requests] == ["/query", "/query", "/query", "/update"]
    assert secret not in str(refused.value) and "HTTP 403" in str(refused.value)


DEADLOCK = b"Virtuoso 40001 Error SR172: Transaction deadlocked\n"


def test_a_write_rolled_back_as_a_deadlock_is_sent_again(stub: _Stub) -> None:
    """Virtuoso rolls back one of two requests writing a graph at once (SQL state 40001):
    the write is sent again; a deadlock every time, or any other server error, is an error."""
    answers = iter([_answer(500, DEADLOCK), _answer(500, DEADLOCK), _answer(204, b"")])
    stub.respond = lambda handler: next(answers)(handler)
    quad = Quad(NamedNode(f"{EX}s"), NamedNode(f"{EX}p"), Literal("x"), NamedNode(f"{EX}g"))
    with RemoteStore.from_settings(Settings(endpoint=stub.url)) as store:
        store.add_quads([quad])
        updates = [path for _, path, _ in stub.requests if path == "/update"]
        assert len(updates) == 3
        stub.respond = _answer(500, DEADLOCK)
        with pytest.raises(EndpointError, match="failed \\(HTTP 500\\): Virtuoso 40001"):
            store.add_quads([quad])
        assert len([p for _, p, _ in stub.requests if p == "/update"]) == 3 + DEADLOCK_ATTEMPTS
        stub.respond = _answer(500, b"Virtuoso 42000 Error SP030: out of memory")
        with pytest.raises(EndpointError, match="SP030"):
            store.add_quads([quad])
        assert len([p for _, p, _ in stub.requests if p == "/update"]) == 4 + DEADLOCK_ATTEMPTS


def test_a_slow_answer_stops_at_the_time_limit(stub: _Stub) -> None:
    stub.respond = lambda handler: stub.release.wait()
    settings = Settings(endpoint=stub.url, endpoint_timeout_seconds=0.3)
    with RemoteStore.from_settings(settings) as store:
        with pytest.raises(QueryTimeout, match=r"query stopped after 0.3 s"):
            store.query("SELECT * WHERE { ?s ?p ?o }")
        with pytest.raises(EndpointError, match=r"no complete answer within 0.3 s"):
            store.add_quads(
                [Quad(NamedNode(f"{EX}s"), NamedNode(f"{EX}p"), Literal("x"), NamedNode(f"{EX}g"))]
            )


def test_an_unreachable_endpoint_is_one_line_and_exit_3() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = invoke("--endpoint", f"http://127.0.0.1:{port}/query", "graphs")
    one_line_error(
        result, 3, f"SPARQL endpoint http://127.0.0.1:{port}/query", "connection refused"
    )


NO_ROWS = b'{"head":{"vars":["s"]},"results":{"bindings":[]}}'
JSON_TYPE = "application/sparql-results+json"
SELECT = "SELECT * WHERE { ?s ?p ?o }"


def test_an_answer_that_trickles_in_stops_at_the_time_limit(stub: _Stub) -> None:
    """The limit holds over the whole exchange, not per read: a body that comes a byte at a
    time, each well within the limit, is stopped at the limit."""

    def trickle(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", JSON_TYPE)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.close_connection = True
        with suppress(OSError):
            for _ in range(600):
                handler.wfile.write(b"1\r\n \r\n")
                handler.wfile.flush()
                if stub.release.wait(0.05):
                    break

    stub.respond = trickle
    settings = Settings(endpoint=stub.url, endpoint_timeout_seconds=0.5)
    with RemoteStore.from_settings(settings, read_only=True) as store:
        started = time.monotonic()
        with pytest.raises(QueryTimeout, match=r"query stopped after 0.5 s"):
            store.query(SELECT)
        assert time.monotonic() - started < 5  # the trickle goes on for 30 s


def test_connections_are_kept_alive_and_dropped_when_the_server_may_have_left_them_unclean(
    stub: _Stub,
) -> None:
    """One connection serves request after request; a new one follows an answer marked
    ``Connection: close`` (even if the server keeps its end open), a broken answer, and bytes
    the server sent unasked on an idle connection."""
    stub.respond = _answer(200, NO_ROWS, JSON_TYPE)
    with RemoteStore.from_settings(Settings(endpoint=stub.url), read_only=True) as store:
        for _ in range(3):
            assert list(store.query(SELECT)) == []
        assert len(set(stub.ports)) == 1  # the open's ASK and three queries

        def closing(handler: http.server.BaseHTTPRequestHandler) -> None:
            _answer(200, NO_ROWS, JSON_TYPE, Connection="close")(handler)
            handler.close_connection = False  # this end stays open

        stub.respond = closing
        store.query(SELECT)
        stub.respond = _answer(200, NO_ROWS, JSON_TYPE)
        store.query(SELECT)
        assert len(set(stub.ports)) == 2 and stub.ports[-1] != stub.ports[-2]

        stub.respond = _chunked_then_cut
        with pytest.raises(EndpointError, match="cut short"):
            store.query(SELECT)
        stub.respond = _answer(200, NO_ROWS, JSON_TYPE)
        store.query(SELECT)
        assert len(set(stub.ports)) == 3 and stub.ports[-1] != stub.ports[-2]

        def then_junk(handler: http.server.BaseHTTPRequestHandler) -> None:
            _answer(200, NO_ROWS, JSON_TYPE)(handler)
            handler.wfile.flush()
            time.sleep(0.1)
            handler.wfile.write(b"HTTP/1.1 500 Unasked\r\nContent-Length: 0\r\n\r\n")

        stub.respond = then_junk
        store.query(SELECT)
        time.sleep(0.5)
        stub.respond = _answer(200, NO_ROWS, JSON_TYPE)
        assert list(store.query(SELECT)) == []
        assert len(set(stub.ports)) == 4 and stub.ports[-1] != stub.ports[-2]


def test_a_read_is_sent_again_when_its_kept_alive_connection_was_closed_under_it(
    stub: _Stub,
) -> None:
    """A server may close an idle kept-alive connection as a request goes out on it: a read is
    sent once more on a new connection, a write is not (it may have been done)."""

    def drop(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.close_connection = True  # closed without an answer

    answers = iter([drop, _answer(200, NO_ROWS, JSON_TYPE)])
    stub.respond = lambda handler: next(answers)(handler)
    with RemoteStore.from_settings(Settings(endpoint=stub.url)) as store:
        assert list(store.query(SELECT)) == []
        assert [path for _, path, _ in stub.requests][-2:] == ["/query", "/query"]
        assert stub.ports[-1] != stub.ports[-2]
        stub.respond = drop
        with pytest.raises(EndpointError, match="closed the connection without answering"):
            store.update("INSERT DATA { <urn:test:s> <urn:test:p> 1 }")
        assert [path for _, path, _ in stub.requests].count("/update") == 1


def test_requests_carry_what_they_always_carried_and_nothing_from_the_environment(
    stub: _Stub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The user agent, uncompressed answers, no cookies kept, no proxy from the environment,
    and no log line per request."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:1")
    caplog.set_level(logging.INFO)
    stub.respond = _answer(200, NO_ROWS, JSON_TYPE, **{"Set-Cookie": "session=s3cret; Path=/"})
    with RemoteStore.from_settings(Settings(endpoint=stub.url), read_only=True) as store:
        store.query(SELECT)
        store.query(SELECT)
    for _, _, sent in stub.requests:
        headers = {name.lower(): value for name, value in sent.items()}
        assert headers["user-agent"] == f"labbrain/{labbrain.__version__}"
        assert headers["accept-encoding"] == "identity"
        assert "cookie" not in headers
    assert not [record.getMessage() for record in caplog.records if "HTTP" in record.getMessage()]


@pytest.mark.subprocess
def test_tls_certificates_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTPS endpoint whose certificate is not trusted is one error naming TLS; trusted (by
    SSL_CERT_FILE, as for any OpenSSL program) it answers."""
    require("openssl", shutil.which("openssl") is not None, "to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    stub = _Stub(tls)
    try:
        for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(EndpointError, match=r"TLS failure \(CERTIFICATE_VERIFY_FAILED\)"):
            RemoteStore.from_settings(Settings(endpoint=stub.url), read_only=True)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        with RemoteStore.from_settings(Settings(endpoint=stub.url), read_only=True) as store:
            assert store.ask("ASK {}")
    finally:
        stub.close()


@pytest.mark.subprocess
def test_httpx_is_imported_only_when_a_remote_store_opens() -> None:
    """Commands on the embedded store do not pay for importing the HTTP client."""
    code = (
        "import sys, labbrain.cli, labbrain.core\n"
        "assert 'httpx2' not in sys.modules\n"
        "from labbrain.store.remote.store import Endpoints, RemoteStore\n"
        "RemoteStore(Endpoints('http://127.0.0.1:9/query', 'http://127.0.0.1:9/query')).close()\n"
        "assert 'httpx2' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------------------- real processes
def _stdio(server: OxigraphServer, tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=LABBRAIN,
        args=[
            "--endpoint",
            server.query,
            "--gsp-endpoint",
            server.store,
            "mcp",
            "--toolsets",
            "all",
        ],
        env={
            "XDG_DATA_HOME": str(tmp_path / "xdg"),
            "LABBRAIN_ENDPOINT_INDEX_REFRESH_SECONDS": "0",
        },
    )


@pytest.mark.subprocess
def test_two_mcp_servers_share_one_endpoint(oxigraph: OxigraphServer, tmp_path: Path) -> None:
    """Two assistants at once: real `labbrain mcp` processes over stdio on one Oxigraph."""

    async def run() -> tuple[Any, ...]:
        async with (
            Client(_stdio(oxigraph, tmp_path / "a"), read_timeout_seconds=120) as first,
            Client(_stdio(oxigraph, tmp_path / "b"), read_timeout_seconds=120) as second,
        ):
            before = await second.call_tool("search_nodes", {"query": "membrane tension"})
            loaded = subprocess.run(
                [LABBRAIN, "--endpoint", oxigraph.query, "load", str(SAMPLE)],
                env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "c")},
                capture_output=True,
                timeout=120,
            )
            assert loaded.returncode == 0, loaded.stderr
            found = await first.call_tool("search_nodes", {"query": "membrane tension", "limit": 2})
            created = await first.call_tool(
                "create_project", {"name": "Tension", "description": "Membrane tension and actin"}
            )
            listed = await second.call_tool("list_projects", {})
            node = await second.call_tool(
                "get_node", {"uid": found.structured_content["results"][0]["uid"]}
            )
            return before, found, created, listed, node

    before, found, created, listed, node = asyncio.run(run())
    assert before.structured_content["results"] == []
    assert [hit["dataset"] for hit in found.structured_content["results"]] == [
        "akamatsulab-sample"
    ] * 2
    assert not created.is_error
    assert [p["project"] for p in listed.structured_content["projects"]] == ["tension"]
    assert node.structured_content["creator"] in {
        "Rebecca Lee",
        "Matt Akamatsu",
        "Sagar Agarwal",
        "Aidan Stern",
        "Abhishek Raghunathan",
    }


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated 6,000-node export of the sample's graph name (its load takes many requests)."""
    export = tmp_path_factory.mktemp("big") / "big.jsonld"
    write_export(export, 6000, seed=3, graph="akamatsulab-sample")
    return export


def _load_in_a_child(
    oxigraph: OxigraphServer, export: Path, tmp_path: Path
) -> subprocess.Popen[bytes]:
    """``labbrain --endpoint ... load EXPORT`` in a child process (to be killed), by INSERT
    DATA updates: many requests."""
    return subprocess.Popen(
        [LABBRAIN, "--endpoint", oxigraph.query, "load", str(export)],
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "child")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _staging_appears(store: RemoteStore, running: Callable[[], bool]) -> None:
    """Wait until a staging graph exists (the load's writes have begun)."""
    deadline = time.monotonic() + 120
    while not any(g.startswith(STAGING_PREFIX) for g in store._all_graphs()):
        assert running(), "the load ended before its staging writes"
        assert time.monotonic() < deadline, "the staging writes never started"
        time.sleep(0.01)


def test_a_cancelled_remote_load_leaves_the_endpoint_as_it_was(
    oxigraph: OxigraphServer, big_export: Path
) -> None:
    settings = remote_settings(oxigraph, gsp_endpoint=None)
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE))
        before = {g: q for g, q in contents(brain.store).items() if g != "urn:labbrain:tasks"}  # type: ignore[arg-type]
        runner = task_runner(brain)
        task = runner.create("ingest", ingest_params(str(big_export)))
        runner.start(task.task_id, background=True)
        _staging_appears(brain.store, lambda: not runner.get(task.task_id).finished)  # type: ignore[arg-type]
        runner.cancel(task.task_id)
        runner.join(task.task_id)
        state = runner.get(task.task_id)
        assert state.status == "cancelled"
        after = {g: q for g, q in contents(brain.store).items() if g != "urn:labbrain:tasks"}  # type: ignore[arg-type]
        assert after == before  # staging graph dropped too
        assert [d["nodes"] for d in brain.datasets()] == [150]
        assert brain.index.count() == 150


@pytest.mark.subprocess
def test_a_remote_load_killed_mid_write_changes_nothing(
    oxigraph: OxigraphServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big_export: Path
) -> None:
    """kill -9 during the writes into the staging graph: the dataset stays as it was, the
    staging graph is invisible, and a writer drops it once it is stale."""
    export = big_export
    settings = remote_settings(oxigraph, gsp_endpoint=None)  # INSERT DATA: many requests
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE))
        before = contents(brain.store)  # type: ignore[arg-type]
    child = _load_in_a_child(oxigraph, export, tmp_path)
    probe = RemoteStore.from_settings(settings, read_only=True)
    try:
        _staging_appears(probe, lambda: child.poll() is None)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    staging = [g for g in probe._all_graphs() if g.startswith(STAGING_PREFIX)]
    assert len(staging) == 1
    after = {
        g: q for g, q in contents(probe).items() if g not in staging and g != "urn:labbrain:tasks"
    }
    assert after == {g: q for g, q in before.items() if g != "urn:labbrain:tasks"}
    with LabBrain(settings) as brain:
        assert staging[0] not in brain.store.graphs()
        assert [d["nodes"] for d in brain.datasets()] == [150]
    monkeypatch.setattr(remote_sparql, "STALE_STAGING", timedelta(0))
    with LabBrain(settings):
        assert not any(g.startswith(STAGING_PREFIX) for g in probe._all_graphs())
    probe.close()


# ---------------------------------------------------------------------------- paging
def test_a_page_query_keeps_the_query_order_and_breaks_ties_with_every_column() -> None:
    """Pages come from a sub-SELECT in a total order: the query's own ORDER BY first, then
    every projected variable; the prologue and FROM clauses move out of the sub-SELECT (where
    they are not allowed), and a LIMIT of the query's own stays inside."""
    query = (
        "PREFIX ex: <urn:ex#>\nSELECT ?s ?o FROM <urn:g1> FROM NAMED <urn:g2> "
        "WHERE { ?s ex:p ?o } ORDER BY DESC(?o) LIMIT 5000"
    )
    page = page_query(query, ["s", "o"], 1000, 2000)
    assert page.startswith("PREFIX ex: <urn:ex#>\nSELECT * FROM <urn:g1> FROM NAMED <urn:g2> ")
    assert "ORDER BY DESC(?o)  ?s ?o LIMIT 5000" in page
    assert page.endswith("} } LIMIT 1000 OFFSET 2000")
    unordered = page_query("SELECT ?s WHERE { ?s ?p ?o }", ["s"], 10, 0)
    assert "WHERE { ?s ?p ?o } ORDER BY ?s  } }" in unordered
    counted = count_query(query)
    assert counted.startswith("PREFIX ex: <urn:ex#>\nSELECT (COUNT(*) AS ?labbrain_rows) FROM")
    for text in (page, unordered, counted):
        Store().query(text)  # valid SPARQL


def _rows_body(values: list[int], variable: str = "n") -> bytes:
    """SPARQL JSON results binding ``variable`` to each of ``values`` (a stub server's)."""
    bindings = [{variable: {"type": "literal", "value": str(v)}} for v in values]
    return json.dumps({"head": {"vars": [variable]}, "results": {"bindings": bindings}}).encode()


JSON_RESULTS = "application/sparql-results+json"
#: A count answer without the count (no row binds it).
NO_COUNT = json.dumps({"head": {"vars": ["labbrain_rows"]}, "results": {"bindings": []}}).encode()


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        (  # pages that do not add up to the count: changed meanwhile, or pages cut too
            [
                Response(200, JSON_RESULTS, _rows_body([1, 2, 3]), truncated=True),
                Response(200, JSON_RESULTS, _rows_body([5], "labbrain_rows")),
                Response(200, JSON_RESULTS, _rows_body([1, 2, 3])),
                Response(200, JSON_RESULTS, _rows_body([4])),
            ],
            r"gave 4 of a query's 5 rows when read in pages of 3",
        ),
        (  # a cut answer without a row: no page size to read the rest with
            [
                Response(200, JSON_RESULTS, _rows_body([]), truncated=True),
                Response(200, JSON_RESULTS, _rows_body([5], "labbrain_rows")),
            ],
            r"answered none of a query's 5 rows",
        ),
        (  # a page in a format that cannot be merged
            [
                Response(200, JSON_RESULTS, _rows_body([1, 2, 3]), truncated=True),
                Response(200, JSON_RESULTS, _rows_body([5], "labbrain_rows")),
                Response(200, "text/tab-separated-values", b"?n\n1\n"),
            ],
            r"answered a page of rows in another format",
        ),
        (  # a count without the count
            [
                Response(200, JSON_RESULTS, _rows_body([1, 2, 3]), truncated=True),
                Response(200, JSON_RESULTS, NO_COUNT),
            ],
            r"answered a count without one",
        ),
    ],
    ids=["pages-short", "no-rows", "page-format", "no-count"],
)
def test_a_cut_answer_that_cannot_be_read_whole_is_an_error(
    monkeypatch: pytest.MonkeyPatch, answers: list[Response], error: str
) -> None:
    """A server that said it cut an answer, then cannot give the rest, gives an error, never
    a short answer."""
    store = RemoteStore(Endpoints(query="http://127.0.0.1:9/query", update="http://x/update"))
    store.server = "test"
    sent = iter(answers)
    monkeypatch.setattr(store, "_post_query", lambda *args, **kwargs: next(sent))
    with pytest.raises(EndpointError, match=error):
        store.query("SELECT ?n WHERE { ?s ?p ?n }")


# ---------------------------------------------------------------------------- first loads in place
NEW_GRAPH = "urn:labbrain:dataset:first"


def _posted_graphs(store: RemoteStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The graphs the store's Graph Store Protocol POSTs write to, as they are sent."""
    graphs: list[str] = []
    send = store._send

    def spy(url: str, *args: Any, **kwargs: Any) -> Any:
        if "graph=" in url:
            graphs.append(parse_qs(urlsplit(url).query)["graph"][0])
        return send(url, *args, **kwargs)

    monkeypatch.setattr(store, "_send", spy)
    return graphs


def test_a_first_load_fills_its_graph_in_place_and_a_reload_goes_through_staging(
    oxigraph: OxigraphServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is copied when a graph is loaded for the first time: the fill writes the graph
    itself, claimed, and listed nowhere until the commit. A reload writes a staging graph that
    the commit moves into place, as before."""
    store = RemoteStore.from_settings(remote_settings(oxigraph))
    posted = _posted_graphs(store, monkeypatch)
    seen: dict[str, object] = {}

    def fill(writer: Any) -> None:
        writer.write(_triples(10))
        seen["listed"] = NEW_GRAPH in store.graphs()
        seen["claimed"] = list(store._claims())
        seen["held"] = store.count(NEW_GRAPH)

    store.replace_graph(NEW_GRAPH, fill)
    assert posted == [NEW_GRAPH]
    assert seen == {"listed": False, "claimed": [NEW_GRAPH], "held": 10}
    assert store._claims() == {} and NEW_GRAPH in store.graphs()
    store.replace_graph(NEW_GRAPH, lambda w: w.write(_triples(3, "u")))
    assert posted[1].startswith(STAGING_PREFIX) and len(posted) == 2
    assert store.count(NEW_GRAPH) == 3
    assert [g for g in store._all_graphs() if store.count(g)] == [NEW_GRAPH]  # no staging left
    store.close()


def test_a_failed_first_load_leaves_no_graph_and_no_claim(oxigraph: OxigraphServer) -> None:
    store = RemoteStore.from_settings(remote_settings(oxigraph))
    store.replace_graph("urn:labbrain:dataset:x", lambda w: w.write(_triples(4)))
    before = {g: q for g, q in contents(store).items() if q}

    def fill(writer: Any) -> None:
        writer.write(_triples(10))
        raise RuntimeError("the input broke half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        store.replace_graph(NEW_GRAPH, fill)
    # the claim came and went (the Oxigraph server keeps the emptied system graph)
    assert {g: q for g, q in contents(store).items() if q} == before
    assert store._claims() == {} and NEW_GRAPH not in store._all_graphs()
    store.close()


def test_a_graph_another_process_is_filling_is_not_loaded_again(
    oxigraph: OxigraphServer,
) -> None:
    """Two first loads of one graph: the second finds the first one's claim and stops before
    writing anything (it would otherwise write into the same graph); a claim left by a
    process that died a day ago stops nothing, and the load that replaces it removes it."""
    first = RemoteStore.from_settings(remote_settings(oxigraph))
    second = RemoteStore.from_settings(remote_settings(oxigraph))
    outcome: dict[str, object] = {}

    def fill(writer: Any) -> None:
        writer.write(_triples(5))
        with pytest.raises(LoadInProgress, match="being loaded by another process") as refused:
            second.replace_graph(NEW_GRAPH, lambda w: w.write(_triples(7, "other")))
        outcome["graph"] = refused.value.graph

    first.replace_graph(NEW_GRAPH, fill)
    assert outcome == {"graph": NEW_GRAPH} and first.count(NEW_GRAPH) == 5
    assert not any(g.startswith(STAGING_PREFIX) for g in first._all_graphs())
    # a dead process's claim, over a day old, on a graph that exists
    dead = STAGING_PREFIX + "20200101T000000Z-0123456789abcdef"
    first.add_quads([remote_sparql.fill_marker(NEW_GRAPH, dead)])
    assert NEW_GRAPH not in first.graphs()
    second.replace_graph(NEW_GRAPH, lambda w: w.write(_triples(7, "other")))
    assert second.count(NEW_GRAPH) == 7 and first._claims() == {}
    assert NEW_GRAPH in first.graphs()
    first.close()
    second.close()


def test_a_first_load_killed_mid_fill_is_unlisted_then_dropped_once_stale(
    oxigraph: OxigraphServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big_export: Path
) -> None:
    """kill -9 while a first load fills its graph in place: the partial graph is listed
    nowhere and no dataset record names it; a writer drops it and its claim once stale."""
    settings = remote_settings(oxigraph, gsp_endpoint=None)  # INSERT DATA: many requests
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE_DCT))
        graphs_before = [row["graph"] for row in brain.graphs()]
    child = _load_in_a_child(oxigraph, big_export, tmp_path)
    probe = RemoteStore.from_settings(settings, read_only=True)
    try:
        deadline = time.monotonic() + 120
        while not (SAMPLE_GRAPH in probe._claims() and probe.count(SAMPLE_GRAPH) > 0):
            assert child.poll() is None, "the load ended before it wrote"
            assert time.monotonic() < deadline, "the fill never started"
            time.sleep(0.01)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert probe.count(SAMPLE_GRAPH) > 0  # the partial graph, under its claim
    with LabBrain(settings) as brain:
        tasks = "urn:labbrain:tasks"  # the killed load's task record
        assert [row["graph"] for row in brain.graphs() if row["graph"] != tasks] == graphs_before
        assert SAMPLE_GRAPH not in brain.store.graphs()
        assert [d["slug"] for d in brain.datasets()] == ["dct-sample"]
    monkeypatch.setattr(remote_sparql, "STALE_STAGING", timedelta(0))
    with LabBrain(settings):
        assert probe._claims() == {} and SAMPLE_GRAPH not in probe._all_graphs()
    probe.close()


# ---------------------------------------------------------------------------- a Virtuoso stub
VIRTUOSO_SERVER = "Virtuoso/07.20.3240 (Linux) x86_64-generic-linux-glibc25  VDB"


class _VirtuosoStub:
    """A SPARQL server that answers as Virtuoso does, from an in-memory pyoxigraph store:
    it names itself Virtuoso, answers ASK as rows binding ``__ASK_RETVAL`` (``ask_values``:
    the values of the rows for true and for false), and cuts every SELECT and CONSTRUCT
    answer at ``max_rows`` rows or triples without saying so (its ResultSetMaxRows).
    Records the text of every query."""

    def __init__(self, triples: list[Triple], max_rows: int) -> None:
        self.data = Store()
        self.data.extend(Quad(t.subject, t.predicate, t.object, NamedNode(G)) for t in triples)
        self.max_rows = max_rows
        self.ask_values: dict[bool, list[str]] = {True: ["1"], False: []}
        self.queries: list[str] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def version_string(self) -> str:  # the Server header
                return VIRTUOSO_SERVER

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                query = parse_qs(self.rfile.read(length).decode())["query"][0]
                stub.queries.append(query)
                content_type, body = stub.answer(query)
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, query: str) -> tuple[str, bytes]:
        result = self.data.query(query)
        if isinstance(result, QueryTriples):
            lines = result.serialize(format=RdfFormat.N_TRIPLES).splitlines(keepends=True)
            return "application/n-triples", b"".join(lines[: self.max_rows])
        if isinstance(result, QuerySolutions):
            answer = json.loads(result.serialize(format=QueryResultsFormat.JSON))
            answer["results"]["bindings"] = answer["results"]["bindings"][: self.max_rows]
        else:
            integer = "http://www.w3.org/2001/XMLSchema#integer"
            rows = [
                {"__ASK_RETVAL": {"type": "typed-literal", "datatype": integer, "value": value}}
                for value in self.ask_values[bool(result)]
            ]
            answer = {"head": {"vars": ["__ASK_RETVAL"]}, "results": {"bindings": rows}}
        return "application/sparql-results+json", json.dumps(answer).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


G = "urn:labbrain:dataset:paged"


@contextmanager
def _virtuoso_stub(
    triples: list[Triple], max_rows: int = 1000
) -> Iterator[tuple[_VirtuosoStub, RemoteStore]]:
    """The stub and a read-only store on it that checks answers of ``max_rows`` rows or more
    (``endpoint_check_rows`` set to the server's row limit, as its description says)."""
    stub = _VirtuosoStub(triples, max_rows)
    settings = Settings(endpoint=stub.url, endpoint_check_rows=max_rows)
    try:
        with RemoteStore.from_settings(settings, read_only=True) as store:
            yield stub, store
    finally:
        stub.close()


@pytest.mark.parametrize("false_as", [[], ["0"]], ids=["no row", "a row of 0"])
def test_a_virtuoso_ask_answered_as_rows_is_read_as_true_or_false(false_as: list[str]) -> None:
    """Virtuoso answers ASK with rows binding ``__ASK_RETVAL``: a row of 1 is true, no row or
    a row of 0 is false; other rows are no answer to an ASK."""
    with _virtuoso_stub(_triples(2)) as (stub, store):
        stub.ask_values[False] = false_as
        assert store.is_virtuoso()
        assert store.ask(f"ASK {{ GRAPH <{G}> {{ <{EX}t1> ?p ?o }} }}") is True
        assert store.ask(f"ASK {{ GRAPH <{G}> {{ <{EX}t7> ?p ?o }} }}") is False
        assert store.has_graph(G) is True
        assert store.has_graph("urn:labbrain:dataset:none") is False
        answer = store.query(f"ASK {{ GRAPH <{G}> {{ <{EX}t7> ?p ?o }} }}")  # as the CLI asks
        assert isinstance(answer, QueryBoolean) and not bool(answer)
        assert bool(store.query(f"ASK {{ GRAPH <{G}> {{ <{EX}t0> ?p ?o }} }}"))
        for rows in (["2"], ["1", "1"], ["true"]):
            stub.ask_values[True] = rows
            with pytest.raises(EndpointError, match="answered an ASK with rows"):
                store.ask(f"ASK {{ GRAPH <{G}> {{ <{EX}t1> ?p ?o }} }}")


SUBJECTS_OF_G = f"SELECT ?s WHERE {{ GRAPH <{G}> {{ ?s ?p ?o }} }}"


@pytest.mark.parametrize("total", [2, 3, 4, 6, 7, 10])
def test_a_select_cut_silently_at_the_servers_row_limit_is_read_whole_in_pages(
    total: int,
) -> None:
    """With a row limit of 3, every answer of 3 rows may be cut: it is counted, and read
    again in pages of 3 when the count is higher, each row exactly once, in the query's
    order when it has one. (Totals below, at, just above, at twice and above twice the
    limit.)"""
    subjects = [f"{EX}t{i}" for i in range(total)]
    pages = 0 if total <= 3 else -(-total // 3)  # one per 3 rows, when the first was cut
    with _virtuoso_stub(_triples(total), max_rows=3) as (stub, store):
        stub.queries.clear()
        rows = store.query(SUBJECTS_OF_G)
        assert isinstance(rows, QuerySolutions)
        assert sorted(row["s"].value for row in rows) == sorted(subjects)  # type: ignore[union-attr]
        # the first answer, a count when it had 3 rows, one page per 3 rows when it was cut
        assert len(stub.queries) == 1 + (total >= 3) + pages
        assert len([q for q in stub.queries if " OFFSET " in q]) == pages
        ordered = store.query(f"{SUBJECTS_OF_G} ORDER BY DESC(?s)")
        assert [row["s"].value for row in ordered] == sorted(subjects, reverse=True)  # type: ignore[index, union-attr]
        limited = store.query(f"{SUBJECTS_OF_G} ORDER BY ?s LIMIT 5")
        assert [row["s"].value for row in limited] == sorted(subjects)[:5]  # type: ignore[index, union-attr]
        quads = list(store.quads(G))
        assert sorted(q.subject.value for q in quads) == sorted(subjects)
        assert {q.graph_name for q in quads} == {NamedNode(G)}
