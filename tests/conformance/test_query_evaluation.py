"""The W3C SPARQL 1.1 query-evaluation tests of the query directories (w3c_suite.QUERY_DIRS;
entailment and service are left out, w3c_suite.SKIPPED_DIRS says why), each test's data
written into a real ``labbrain serve`` and a real ``oxigraph serve`` and its query sent over
HTTP (w3c_evaluation). One test per server and directory: every test of the directory passes
or is a known deviation of that server (w3c_deviations.EVALUATION), which must still fail."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from pathlib import Path

import httpx2
import pytest
from pyoxigraph import BlankNode, Literal, NamedNode
from w3c_deviations import EVALUATION, unexpected
from w3c_evaluation import Loaded, by_value, in_order, order_keys, run, same_rows
from w3c_fixtures import serving, suite_or_require
from w3c_servers import SERVERS, Server
from w3c_suite import QUERY_DIRS, evaluation_tests


@pytest.fixture(scope="session")
def w3c_suite() -> Path:
    """The W3C suite's ``sparql11`` directory (skips, or fails under CI, without it)."""
    return suite_or_require()


@pytest.fixture(scope="module", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A fresh server of each kind, shared by the module's tests of that kind."""
    yield from serving(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx2.Client]:
    """One HTTP client for the module (never follows redirects)."""
    with httpx2.Client(timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def loaded(server: Server) -> Loaded:
    """What the module's server holds of the tests run on it so far."""
    return Loaded()


@pytest.mark.parametrize("directory", QUERY_DIRS)
@pytest.mark.remote
@pytest.mark.needs_oxigraph
def test_query_evaluation(
    server: Server, client: httpx2.Client, loaded: Loaded, w3c_suite: Path, directory: str
) -> None:
    outcomes = {
        f"{directory}/{test.name}": run(client, server, w3c_suite, test, loaded)
        for test in evaluation_tests(w3c_suite, directory)
    }
    assert outcomes, f"no query-evaluation tests in {directory}"
    known = {
        name: why
        for name, why in EVALUATION[server.kind].items()
        if name.startswith(directory + "/")
    }
    assert set(known) <= set(outcomes), f"not tests of {directory}: {set(known) - set(outcomes)}"
    problems = unexpected(known, outcomes)
    assert not problems, f"{server.kind}, {directory}:\n" + "\n".join(problems)


# ---------------------------------------------------------------- the comparison itself
def _row(**values: Hashable) -> tuple[tuple[str, Hashable], ...]:
    return tuple(sorted(values.items()))


def test_result_sets_match_up_to_blank_node_names() -> None:
    a, b, c = BlankNode("a"), BlankNode("b"), BlankNode("c")
    one = NamedNode("urn:one")
    expected = [_row(x=a, y=a), _row(x=b, y=one)]
    assert same_rows(expected, [_row(x=c, y=one), _row(x=b, y=b)])
    assert not same_rows(expected, [_row(x=c, y=one), _row(x=b, y=c)])  # a=a, not b≠c
    assert not same_rows(expected, [_row(x=c, y=one), _row(x=c, y=c)])  # one node for two
    assert not same_rows(expected, [_row(x=c, y=one)])  # multisets
    assert not same_rows([_row(x=one)], [_row(x=one), _row(x=one)])


def test_numbers_compare_by_value_and_order_by_is_checked() -> None:
    integer = "http://www.w3.org/2001/XMLSchema#integer"
    decimal = "http://www.w3.org/2001/XMLSchema#decimal"
    assert by_value(Literal("1.0", datatype=NamedNode(decimal))) == by_value(
        Literal("1", datatype=NamedNode(decimal))
    )
    assert by_value(Literal("1", datatype=NamedNode(integer))) != by_value(
        Literal("1", datatype=NamedNode(decimal))
    )
    query = "SELECT * { ?s ?p ?o { SELECT ?x { } ORDER BY ?x } } ORDER BY DESC(?o) ?s LIMIT 2"
    assert order_keys(query) == [("o", True), ("s", False)]
    assert order_keys("SELECT * { { SELECT ?x { } ORDER BY ?x } }") == []
    one, two = (by_value(Literal(str(n), datatype=NamedNode(integer))) for n in (1, 2))
    s1, s2 = NamedNode("urn:1"), NamedNode("urn:2")
    keys = order_keys(query)
    assert in_order(keys, [_row(o=two, s=s2), _row(o=one, s=s1), _row(o=one, s=s2)])
    assert not in_order(keys, [_row(o=one, s=s1), _row(o=two, s=s2)])
    assert not in_order(keys, [_row(o=one, s=s2), _row(o=one, s=s1)])
    assert in_order(keys, [_row(o=Literal("a"), s=s2), _row(o=one, s=s1)])  # order left open
