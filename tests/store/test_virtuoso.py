"""The remote backend on Virtuoso (Debian's Virtuoso Open Source 7), a server started for
each test: what it does differently from the standard and from the Oxigraph server is
handled in the backend, and a load holds there what it holds in the embedded store."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, QueryBoolean, QuerySolutions, Store

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import canonical
from labbrain.core import LabBrain
from labbrain.index.search_query import SearchQuery
from labbrain.settings import Settings
from labbrain.store import templates
from labbrain.store.remote import store as remote_store
from labbrain.store.remote.http import Response
from labbrain.store.remote.sparql import bind_values, insert_data
from labbrain.store.remote.store import RemoteStore
from virtuoso_server import VirtuosoServer, virtuoso_server

G1, G2 = NamedNode("urn:test:g1"), NamedNode("urn:test:g2")
P = NamedNode("urn:test:p")
XSD_DATE_TIME = NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")
XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
python_value = templates.python_value

virtuoso_only = [pytest.mark.remote, pytest.mark.needs_virtuoso]


@pytest.fixture
def virtuoso(tmp_path: Path) -> Iterator[VirtuosoServer]:
    with virtuoso_server(tmp_path / "virtuoso") as server:
        yield server


def _remote(server: VirtuosoServer, *, gsp: bool = True) -> Settings:
    return Settings(
        endpoint=server.query,
        gsp_endpoint=server.store if gsp else None,
        endpoint_index_refresh_seconds=0,
    )


# ----------------------------------------------------------------- updates, without a server
def test_an_insert_names_each_graph_once_and_keeps_blank_nodes_together() -> None:
    """Virtuoso refuses an update that names a graph in several blocks, and blank nodes in
    INSERT DATA: each graph gets one block, and blank nodes go in an INSERT template with an
    empty WHERE, which adds the same triples (one fresh node per label)."""
    node = BlankNode("x")
    quads = [
        Quad(NamedNode("urn:test:a"), P, Literal("1"), G1),
        Quad(node, P, Literal("2"), G2),
        Quad(node, P, NamedNode("urn:test:b"), G1),
        Quad(NamedNode("urn:test:c"), P, node, G2),
    ]
    update = insert_data(quads)
    assert update.startswith("INSERT {") and update.endswith("} WHERE {}")
    assert update.count(f"GRAPH {G1}") == 1 and update.count(f"GRAPH {G2}") == 1
    store = Store()
    store.update(update)
    assert len(store) == 4
    inserted = {q.subject for q in store.quads_for_pattern(None, P, Literal("2"), G2)}
    assert len(inserted) == 1
    (fresh,) = inserted
    assert isinstance(fresh, BlankNode)
    assert set(store.quads_for_pattern(fresh, None, None, None)) == {
        Quad(fresh, P, Literal("2"), G2),
        Quad(fresh, P, NamedNode("urn:test:b"), G1),
    }
    assert Quad(NamedNode("urn:test:c"), P, fresh, G2) in store
    named = [q for q in quads if node not in (q.subject, q.object)]
    assert insert_data(named).startswith("INSERT DATA {")


# ------------------------------------------------------------------------- against Virtuoso
def test_virtuoso_spellings_are_read_as_the_standard_ones() -> None:
    """Virtuoso's JSON results spell booleans as 1 / 0, blank nodes as nodeID://..., and
    times with trailing zeros; they are read as other stores give them. A string that only
    looks like a time, and a time without trailing zeros, are left as they are."""
    body = (
        b'{ "head": { "vars": ["b", "f", "n", "t", "w", "s"] }, "results": { "bindings": [ {'
        b' "b": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#boolean", "value": "1" },'
        b' "f": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#boolean", "value": "0" },'
        b' "n": { "type": "bnode", "value": "nodeID://b10001" },'
        b' "t": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#dateTime", "value": "2026-04-07T08:49:58.790Z" },'
        b' "w": { "type": "typed-literal", "datatype": "http://www.w3.org/2001/XMLSchema#dateTime", "value": "2026-04-07T08:49:58.000Z" },'
        b' "s": { "type": "literal", "value": "2026-04-07T08:49:58.790Z" } } ] } }'
    )
    answer = Response(200, "application/sparql-results+json", body)
    result, size = remote_store._results(answer, "http://127.0.0.1:1/sparql")
    assert isinstance(result, QuerySolutions) and size == 1
    (row,) = list(result)
    assert [row["b"].value, row["f"].value] == ["true", "false"]  # type: ignore[union-attr]
    assert row["n"] == BlankNode("b10001")
    assert row["t"] == Literal("2026-04-07T08:49:58.79Z", datatype=XSD_DATE_TIME)
    assert row["w"] == Literal("2026-04-07T08:49:58Z", datatype=XSD_DATE_TIME)
    assert row["s"] == Literal("2026-04-07T08:49:58.790Z")
    triples = (
        b'<urn:a> <urn:p> "2026-04-07T08:49:58.790+02:00"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
        b'<urn:a> <urn:p> "2026-04-07T08:49:58.790Z" .\n'
    )
    graph, size = remote_store._results(
        Response(200, "application/n-triples", triples), "http://127.0.0.1:1/sparql"
    )
    assert size == 2
    assert {str(t.object) for t in graph} == {  # type: ignore[union-attr]
        '"2026-04-07T08:49:58.79+02:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
        '"2026-04-07T08:49:58.790Z"',
    }


def test_parameters_are_bound_as_binds_for_virtuoso_with_the_same_answers() -> None:
    """Virtuoso drops rows of a UNION after a leading VALUES block, so its parameters are
    bound with BIND; both bindings give the same answers on a standard engine."""
    store = Store()
    store.add(Quad(NamedNode("urn:test:a"), P, Literal("1"), G1))
    store.add(Quad(NamedNode("urn:test:b"), P, Literal("2"), G1))
    query = "SELECT ?s ?o WHERE { GRAPH ?g { { ?s ?p ?o } UNION { ?s ?p ?o FILTER(?o = '2') } } }"
    values = bind_values(query, {"g": G1, "p": P})
    binds = bind_values(query, {"g": G1, "p": P}, binds=True)
    assert "VALUES" in values and "VALUES" not in binds
    assert f"BIND({G1} AS ?g) BIND({P} AS ?p)" in binds
    answers = [sorted(str(r["s"]) + str(r["o"]) for r in store.query(q)) for q in (values, binds)]  # type: ignore[union-attr]
    assert answers[0] == answers[1] and len(answers[0]) == 3
    assert python_value(Literal("1", datatype=NamedNode(XSD_BOOLEAN))) is True
    assert python_value(Literal("0", datatype=NamedNode(XSD_BOOLEAN))) is False


@pytest.mark.remote
@pytest.mark.needs_virtuoso
def test_ask_and_construct_answers_are_read_as_the_standard_says(
    virtuoso: VirtuosoServer,
) -> None:
    """Virtuoso answers ASK as a row (``__ASK_RETVAL``), and CONSTRUCT as rows when SPARQL
    results are acceptable: both come back as a boolean and a graph."""
    store = RemoteStore.from_settings(_remote(virtuoso))
    try:
        assert store.ask("ASK {}") is True
        assert store.ask("ASK { GRAPH ?g { ?s ?p ?o } }", {"g": G1}) is False
        answer = store.query("ASK {}")  # as the CLI and the sparql_query tool ask
        assert isinstance(answer, QueryBoolean) and bool(answer)
        store.add_quads([Quad(NamedNode("urn:test:a"), P, Literal("1"), G1)])
        assert store.ask("ASK { GRAPH ?g { ?s ?p ?o } }", {"g": G1}) is True
        assert list(store.quads(G1.value)) == [Quad(NamedNode("urn:test:a"), P, Literal("1"), G1)]
    finally:
        store.close()


@pytest.mark.remote
@pytest.mark.needs_virtuoso
def test_graphs_are_listed_from_the_graph_index(
    virtuoso: VirtuosoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Virtuoso lists no graph for ``GRAPH ?g {}``, so graphs are asked for as those holding
    a triple, grouped by graph: it answers that from its graph index, where ``SELECT
    DISTINCT ?g`` over the same pattern reads every quad (66 s at 1,500,000 quads)."""
    sent: list[str] = []
    post = RemoteStore._post_query

    def spy(self: RemoteStore, sparql: str, union: bool, accept: str = "") -> Response:
        sent.append(sparql)
        return post(self, sparql, union, accept) if accept else post(self, sparql, union)

    monkeypatch.setattr(RemoteStore, "_post_query", spy)
    store = RemoteStore.from_settings(_remote(virtuoso))
    try:
        store.add_quads(
            [Quad(NamedNode("urn:test:a"), P, Literal(str(i)), g) for i, g in enumerate([G1, G2])]
        )
        sent.clear()
        assert [g for g in store._all_graphs() if g.startswith("urn:test:")] == [G1.value, G2.value]
        assert store.graphs() == [G1.value, G2.value]  # Virtuoso's own graphs not listed
        listing = [q for q in sent if "?s ?p ?o" in q and "?g" in q]
        assert listing and all("GROUP BY ?g" in q and "DISTINCT" not in q for q in listing)
    finally:
        store.close()


@pytest.mark.remote
@pytest.mark.needs_virtuoso
@pytest.mark.parametrize("gsp", [True, False], ids=["graph-store", "updates"])
def test_a_load_into_virtuoso_holds_what_the_embedded_store_holds(
    virtuoso: VirtuosoServer, gsp: bool
) -> None:
    """The sample export loaded through the Graph Store Protocol, or through updates alone
    (blank nodes included), gives the dataset graph the embedded store gets, and the same
    search answers."""
    with LabBrain(settings_for(":memory:")) as embedded:
        report = embedded.load(str(SAMPLE))
        expected = canonical(embedded, report.graph)
        hits = [
            hit.node.uid for hit in embedded.search(SearchQuery("actin membrane", limit=10)).hits
        ]
    with LabBrain(_remote(virtuoso, gsp=gsp)) as remote:
        loaded = remote.load(str(SAMPLE))
        assert loaded.graph == report.graph and loaded.quads == report.quads
        assert canonical(remote, loaded.graph) == expected
        assert [
            hit.node.uid for hit in remote.search(SearchQuery("actin membrane", limit=10)).hits
        ] == hits


# ----------------------------------------------------------------- a server that cuts answers
#: Every IRI subject of a graph, in an order of the query's own (ties in any order).
SUBJECTS = (
    "SELECT ?s WHERE { GRAPH <urn:labbrain:dataset:akamatsulab-sample> { ?s ?p ?o } "
    "FILTER(isIRI(?s)) } ORDER BY DESC(STR(?s))"
)


@pytest.mark.remote
@pytest.mark.needs_virtuoso
def test_reads_that_need_everything_page_past_a_silent_row_limit(tmp_path: Path) -> None:
    """Virtuoso cuts every answer at ResultSetMaxRows (here 1,000) without saying so. The
    sample's dataset graph holds more than twice that: a SELECT of everything (in its own
    order too), whole-graph reads, the export and the index rebuild still get everything."""
    graph = {"g": NamedNode(SAMPLE_GRAPH)}
    with LabBrain(settings_for(":memory:")) as embedded:
        embedded.load(str(SAMPLE))
        expected = canonical(embedded, SAMPLE_GRAPH)
        size = embedded.store.count(SAMPLE_GRAPH)
        subjects = [row["s"].value for row in embedded.store.query(SUBJECTS)]  # type: ignore[index, union-attr]
    assert size > 2 * 1000 and len(subjects) > 1000  # else nothing would be cut
    with (
        virtuoso_server(tmp_path / "virtuoso", max_rows=1000) as server,
        LabBrain(_remote(server)) as brain,
    ):
        brain.load(str(SAMPLE))
        store = brain.store
        cut = store.query(
            "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 1001", substitutions=graph
        )
        assert len(list(cut)) == 1001  # a LIMIT above the server's is paged as well
        everything = "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
        assert len(list(store.query(everything, substitutions=graph))) == size
        assert [row["s"].value for row in store.query(SUBJECTS)] == subjects  # type: ignore[index, union-attr]
        assert canonical(brain, SAMPLE_GRAPH) == expected
        exported = io.BytesIO()
        brain.export(exported, "nquads", graphs=[SAMPLE_GRAPH])
        assert len(exported.getvalue().splitlines()) == size
        assert brain.reindex().reindexed == {SAMPLE_GRAPH: 150}
