"""The remote backend on Virtuoso (Debian's Virtuoso Open Source 7), a server started for
each test: what it does differently from the standard and from the Oxigraph server is
handled in the backend, and a load holds there what it holds in the embedded store."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, QueryBoolean, Store

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import canonical
from labbrain.core import LabBrain
from labbrain.settings import Settings
from labbrain.store.remote.sparql import insert_data
from labbrain.store.remote.store import RemoteStore
from virtuoso_server import VirtuosoServer, virtuoso_server

G1, G2 = NamedNode("urn:test:g1"), NamedNode("urn:test:g2")
P = NamedNode("urn:test:p")

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
        hits = [hit.node.uid for hit in embedded.search("actin membrane", limit=10).hits]
    with LabBrain(_remote(virtuoso, gsp=gsp)) as remote:
        loaded = remote.load(str(SAMPLE))
        assert loaded.graph == report.graph and loaded.quads == report.quads
        assert canonical(remote, loaded.graph) == expected
        assert [hit.node.uid for hit in remote.search("actin membrane", limit=10).hits] == hits


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
