"""The ``labbrain`` command, driven in-process through click's CliRunner.

Every test works on its own store under ``tmp_path`` (or ``:memory:`` when one command is
enough) and checks what the command prints, not only its exit code.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pyoxigraph import NamedNode, Quad, RdfFormat, parse

from conftest import (
    BACKENDS,
    SAMPLE,
    SAMPLE_DCT,
    SAMPLE_GRAPH,
    SAMPLE_TYPES,
    OxigraphServer,
    Target,
    VirtuosoServer,
    cli_args,
    settings_for,
    settings_of,
)
from labbrain import cli
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.store.remote.store import index_directory

SAMPLE_CREATORS = {
    "Rebecca Lee": 40,
    "Matt Akamatsu": 31,
    "Sagar Agarwal": 28,
    "Aidan Stern": 26,
    "Abhishek Raghunathan": 22,
}
DG = "https://discoursegraphs.com/schema/dg_core#"
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

#: Every dataset's load id and recorded quad count: changes whenever a load lands.
LOAD_RECORDS = (
    "SELECT ?graph ?load ?quads WHERE { GRAPH <urn:labbrain:system> "
    "{ ?graph lb:loadId ?load ; lb:quadCount ?quads } } ORDER BY ?graph"
)
TRIPLES_BY_GRAPH = (
    "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } "
    "FILTER(?g != <urn:labbrain:tasks>) } GROUP BY ?g ORDER BY ?g"
)
TASKS_GRAPH = "urn:labbrain:tasks"
#: What each load changed: grows with every load, like the task ledger.
CHANGES_GRAPH = "urn:labbrain:changes"
TYPE_COUNTS = (
    "SELECT ?kind (COUNT(?n) AS ?count) WHERE { GRAPH ?g { ?n a ?kind } "
    "FILTER(?kind IN (dg:Claim, dg:Evidence)) } GROUP BY ?kind ORDER BY ?kind"
)


# ---------------------------------------------------------------------------- helpers
@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Tests on ``store_target`` (and ``loaded``) run on a store directory and on a remote
    Oxigraph server; tests about store directories use ``store_dir`` / ``loaded_dir``."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _wide_consoles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables and messages laid out the same on every machine (no terminal-size guessing)."""
    monkeypatch.setattr(cli.out, "width", 1000)
    monkeypatch.setattr(cli.err, "width", 1000)


def invoke(
    store: Target | str,
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
) -> Result:
    """Run ``labbrain --store STORE ARGS...`` (or ``--endpoint ...`` for a server) in-process."""
    return CliRunner().invoke(main, [*cli_args(store), *args], env=dict(env or {}), input=input)


def plain(text: str) -> str:
    """``text`` without terminal colour codes."""
    return ANSI_RE.sub("", text)


def describe(result: Result) -> str:
    """What a failing assertion should show about a run."""
    return (
        f"exit {result.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}\n"
        f"exception: {result.exception!r}"
    )


def ok(result: Result) -> str:
    """Assert the run succeeded and return its plain stdout."""
    assert result.exit_code == 0, describe(result)
    return plain(result.stdout)


def one_line_error(result: Result, exit_code: int, *fragments: str) -> str:
    """Assert the run failed with ``exit_code`` and a single ``error:`` line holding every
    fragment (and no traceback); return that line."""
    assert result.exit_code == exit_code, describe(result)
    assert result.exception is None or isinstance(result.exception, SystemExit), describe(result)
    lines = plain(result.stderr).strip().splitlines()
    assert len(lines) == 1, describe(result)
    assert lines[0].startswith("error: "), describe(result)
    for fragment in fragments:
        assert fragment in lines[0], describe(result)
    return lines[0]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the box tables in ``text``, as lists of stripped cells."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]


def plain_rows(text: str) -> list[list[str]]:
    """The body rows of the plain tables in ``text`` (what ``graphs``, ``info`` and ``stats``
    print in a pipe: a title, a header, then a line a row with its cells two or more spaces
    apart), as lists of cells; an empty cell is left out."""
    rows: list[list[str]] = []
    lines = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]
    body = False
    for number, cells in enumerate(lines):
        header = number > 0 and len(lines[number - 1]) == 1 and len(cells) > 1
        if header:
            body = True
        elif len(cells) < 2:
            body = False
        elif body:
            rows.append(cells)
    return rows


def load_json(store: Path | str, *paths: Path | str) -> list[dict[str, Any]]:
    """``labbrain load --json PATHS`` -> the list of load reports."""
    reports: list[dict[str, Any]] = json.loads(
        ok(invoke(store, "load", "--json", *map(str, paths)))
    )
    return reports


def query_json(store: Path | str, sparql: str) -> list[dict[str, str]]:
    """A SELECT through ``labbrain query --format json``, as {variable: value} rows."""
    results = json.loads(ok(invoke(store, "query", "--format", "json", sparql)))
    return [{k: v["value"] for k, v in row.items()} for row in results["results"]["bindings"]]


def graph_sizes(store: Path | str) -> list[dict[str, Any]]:
    """The graphs of the store with their triple counts, from ``labbrain stats --json``."""
    sizes: list[dict[str, Any]] = json.loads(ok(invoke(store, "stats", "--json")))["graphs"]
    return sizes


def data_sizes(store: Path | str) -> list[dict[str, Any]]:
    """``graph_sizes`` of every graph but the task ledger and the change history (which grow
    with every task and every load)."""
    return [row for row in graph_sizes(store) if row["graph"] not in (TASKS_GRAPH, CHANGES_GRAPH)]


def snapshot(store: Path | str) -> tuple[list[list[str]], list[dict[str, Any]], Any, Any]:
    """What a failed command must leave unchanged: the ``graphs`` table, the graph sizes of
    ``stats --json``, the load records and the triple count of every graph, except the task
    ledger (which records the failed load's task) and the change history (which a failed load
    must not grow either, but a successful one before it did)."""
    return (
        [row for row in plain_rows(ok(invoke(store, "graphs"))) if row[0] != TASKS_GRAPH],
        data_sizes(store),
        query_json(store, LOAD_RECORDS),
        query_json(store, TRIPLES_BY_GRAPH),
    )


@pytest.fixture
def loaded(store_target: Target) -> Target:
    """A store (a directory, or a remote one) with the sample export loaded through the CLI."""
    ok(invoke(store_target, "load", str(SAMPLE)))
    return store_target


@pytest.fixture
def loaded_dir(store_dir: Path) -> Path:
    """An on-disk store with the sample export loaded through the CLI."""
    ok(invoke(store_dir, "load", str(SAMPLE)))
    return store_dir


def location_line(target: Target) -> str:
    """The first line ``labbrain info`` prints for ``target``."""
    if isinstance(target, OxigraphServer | VirtuosoServer):
        return f"endpoint: {target.query}"
    return f"store: {target}"


def index_file(target: Target) -> Path:
    """The text index file of the store at ``target``."""
    if isinstance(target, OxigraphServer | VirtuosoServer):
        return index_directory(target.query) / "index.sqlite"
    return target / "index.sqlite"


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record (and refuse) every attempt to resolve a host name or open a connection, except
    to 127.0.0.1 (where a remote-store test's own Oxigraph server listens)."""
    attempts: list[object] = []

    def refuse(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def guard(*args: object, **kwargs: object) -> Any:
            address = args[1] if name.startswith("connect") else args[0]
            host = address[0] if isinstance(address, tuple) else address
            if host == "127.0.0.1":
                return original(*args, **kwargs)
            attempts.append((name, args))
            raise OSError(f"network access attempted in a test: {name}{args!r}")

        return guard

    for name in ("getaddrinfo", "create_connection"):
        monkeypatch.setattr(socket, name, refuse(name, getattr(socket, name)))
    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse(name, getattr(socket.socket, name)))
    return attempts


# ---------------------------------------------------------------------------- load
def test_load_prints_summary_counts_and_warnings(store_target: Target) -> None:
    out = ok(invoke(store_target, "load", str(SAMPLE)))
    summary = out.splitlines()[0]
    assert summary.startswith(f"{SAMPLE} -> {SAMPLE_GRAPH} (discourse-graph export")
    assert ": loaded, " in summary
    assert "150 nodes, 170 relations, 150 indexed" in summary
    assert table_rows(out) == []  # the counts by type and creator are `stats --full`'s
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert any("1 relation instance(s) have a dangling end" in w for w in warnings)
    assert any("1 node(s) have no known node type" in w for w in warnings)
    assert any("3 node(s) have no creator" in w for w in warnings)


def test_load_json_report(store_target: Target) -> None:
    [report] = load_json(store_target, SAMPLE)
    assert report["graph"] == SAMPLE_GRAPH
    assert report["source"] == str(SAMPLE)
    assert report["nodes"] == 150
    assert report["nodesByType"] == SAMPLE_TYPES
    assert report["creators"] == SAMPLE_CREATORS
    assert report["indexed"] == 150
    assert report["replaced"] is False
    assert len(report["warnings"]) == 3
    sizes = {g["graph"]: g["triples"] for g in graph_sizes(store_target)}
    assert report["quads"] == sizes[SAMPLE_GRAPH] > 0


def test_loading_twice_replaces_the_graph(loaded: Target) -> None:
    before = data_sizes(loaded)
    out = ok(invoke(loaded, "load", str(SAMPLE)))
    assert f"{SAMPLE} -> {SAMPLE_GRAPH} " in out
    assert ": replaced, " in out.splitlines()[0]
    assert data_sizes(loaded) == before
    [report] = load_json(loaded, SAMPLE)
    assert report["replaced"] is True
    assert data_sizes(loaded) == before


def test_load_several_files_at_once(store_target: Target) -> None:
    reports = load_json(store_target, SAMPLE, SAMPLE_DCT)
    assert [r["graph"] for r in reports] == [SAMPLE_GRAPH, "urn:labbrain:dataset:dct-sample"]
    assert [r["nodes"] for r in reports] == [150, 8]
    graphs = [row[0] for row in plain_rows(ok(invoke(store_target, "graphs")))]
    assert SAMPLE_GRAPH in graphs
    assert "urn:labbrain:dataset:dct-sample" in graphs


def test_load_graph_option_names_the_dataset(store_target: Target) -> None:
    [report] = load_json(store_target, "--graph", "My Lab", SAMPLE)
    assert report["graph"] == "urn:labbrain:dataset:my-lab"
    assert report["nodes"] == 150


def test_load_graph_option_refuses_reserved_graphs(loaded: Target) -> None:
    before = snapshot(loaded)
    result = invoke(loaded, "load", "--graph", "urn:labbrain:system", str(SAMPLE_DCT))
    one_line_error(result, 2, "--graph urn:labbrain:system", "give a slug")
    assert snapshot(loaded) == before


def test_load_graph_option_takes_one_file(loaded: Target) -> None:
    before = snapshot(loaded)
    result = invoke(loaded, "load", "--graph", "x", str(SAMPLE), str(SAMPLE_DCT))
    one_line_error(result, 2, "one file at a time")
    assert snapshot(loaded) == before


def test_strict_load_refusal_leaves_a_disk_store_unchanged(loaded: Target) -> None:
    before = snapshot(loaded)
    result = invoke(loaded, "load", "--strict", str(SAMPLE))
    one_line_error(result, 2, str(SAMPLE), "strict load refused", "dangling end")
    assert snapshot(loaded) == before


def test_strict_load_refusal_in_memory() -> None:
    # One process: the dct sample (no warnings) loads, then the sample is refused.
    result = invoke(":memory:", "load", "--strict", str(SAMPLE_DCT), str(SAMPLE))
    assert "urn:labbrain:dataset:dct-sample" in plain(result.stdout)
    line = one_line_error(result, 2, str(SAMPLE), "strict load refused")
    assert "dangling end" in line
    assert "no known node type" in line


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


#: case -> (tmp_path -> (arguments, environment, stdin, fragments of the error line))
BAD_INPUTS: dict[str, Callable[[Path], tuple[list[str], dict[str, str], str | None, list[str]]]] = {
    "missing file": lambda tmp: (
        ["load", str(tmp / "missing.jsonld")],
        {},
        None,
        ["missing.jsonld", "no such file"],
    ),
    "invalid JSON": lambda tmp: (
        ["load", str(_write(tmp / "broken.jsonld", '{\n  "@context": {},\n  "@graph": [1, }\n'))],
        {},
        None,
        ["broken.jsonld at line 3, column 17", "invalid JSON"],
    ),
    "JSON that is not JSON-LD": lambda tmp: (
        ["load", str(_write(tmp / "plain.json", '{"name": "lab", "items": [1, 2]}'))],
        {},
        None,
        ["plain.json", "not JSON-LD"],
    ),
    "unknown suffix": lambda tmp: (
        ["load", str(_write(tmp / "notes.txt", "<http://e/a> <http://e/b> <http://e/c> .\n"))],
        {},
        None,
        ["notes.txt", "cannot tell the format from suffix '.txt'", "--format"],
    ),
    "stdin without --format": lambda tmp: (
        ["load", "-"],
        {},
        "<http://e/a> <http://e/b> <http://e/c> .\n",
        ["-: reading stdin needs --format"],
    ),
    "over the size limit": lambda tmp: (
        ["load", str(SAMPLE_DCT)],
        {"LABBRAIN_MAX_INPUT_BYTES": "1000"},
        None,
        [str(SAMPLE_DCT), "larger than the 1000-byte input limit"],
    ),
    "stdin over the size limit": lambda tmp: (
        ["load", "-", "--format", "ntriples"],
        {"LABBRAIN_MAX_INPUT_BYTES": "100"},
        "<http://example.org/a> <http://example.org/b> <http://example.org/c> .\n" * 3,
        ["-: input is larger than the 100-byte input limit"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_error_and_store_unchanged(
    case: str, loaded: Target, tmp_path: Path
) -> None:
    args, env, stdin, fragments = BAD_INPUTS[case](tmp_path)
    before = snapshot(loaded)
    result = invoke(loaded, *args, env=env, input=stdin)
    one_line_error(result, 2, *fragments)
    assert snapshot(loaded) == before


REMOTE_CONTEXT = "https://example.org/contexts/lab.jsonld"


@pytest.mark.parametrize(
    "document",
    [
        {"@context": REMOTE_CONTEXT, "@id": "http://example.org/a", "name": "a"},
        {
            "@context": [REMOTE_CONTEXT, {"ex": "http://example.org/"}],
            "@graph": [{"@id": "ex:a", "ex:name": "a"}],
        },
    ],
    ids=["string", "list"],
)
def test_remote_context_is_refused_without_network(
    document: dict[str, Any], loaded: Target, tmp_path: Path, network_attempts: list[object]
) -> None:
    path = _write(tmp_path / "remote.jsonld", json.dumps(document))
    before = snapshot(loaded)
    result = invoke(loaded, "load", str(path))
    line = one_line_error(result, 2, str(path), REMOTE_CONTEXT, "refused")
    assert "LABBRAIN_JSONLD_CONTEXTS" in line
    assert network_attempts == []
    assert snapshot(loaded) == before


def test_plain_jsonld_with_multi_typed_nodes_loads_as_rdf(tmp_path: Path) -> None:
    document = {
        "@context": {"ex": "http://example.org/"},
        "@graph": [{"@id": "ex:pipette", "@type": ["ex:Tool", "ex:Calibrated"]}],
    }
    path = _write(tmp_path / "tools.jsonld", json.dumps(document))
    [report] = json.loads(ok(invoke(":memory:", "load", "--json", str(path))))
    assert report["quads"] == 2
    assert any("loaded as plain RDF" in n for n in report["notices"])


def _export_importing(tmp_path: Path, url: str) -> Path:
    """The dct sample with an ``@import`` of ``url`` in its (exporter) context."""
    document = json.loads(SAMPLE_DCT.read_text(encoding="utf-8"))
    document["@context"]["@import"] = url
    return _write(tmp_path / "imports.jsonld", json.dumps(document))


def test_remote_import_in_an_export_context_is_refused(
    loaded: Target, tmp_path: Path, network_attempts: list[object]
) -> None:
    # Found by the native JSON-LD parser during the bulk write: the write is rolled back.
    before = snapshot(loaded)
    result = invoke(loaded, "load", str(_export_importing(tmp_path, REMOTE_CONTEXT)))
    one_line_error(result, 2, "imports.jsonld", REMOTE_CONTEXT, "refused")
    assert network_attempts == []
    assert snapshot(loaded) == before


@pytest.mark.parametrize(
    "engine",
    [
        "pyld",
        "native",
    ],
)
def test_mapped_remote_import_loads_from_the_local_copy(
    engine: str, tmp_path: Path, network_attempts: list[object]
) -> None:
    local = _write(tmp_path / "lab-context.json", '{"@context": {"ex": "http://example.org/"}}')
    path = _export_importing(tmp_path, REMOTE_CONTEXT)
    env = {"LABBRAIN_JSONLD_CONTEXTS": json.dumps({REMOTE_CONTEXT: str(local)})}
    result = invoke(":memory:", "load", "--json", "--engine", engine, str(path), env=env)
    [report] = json.loads(ok(result))
    assert report["nodes"] == 8
    assert network_attempts == []


def test_invalid_turtle_leaves_a_disk_store_unchanged(loaded: Target, tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.ttl", '@prefix ex: <http://example.org/> .\nex:a ex:b "open .\n')
    before = snapshot(loaded)
    result = invoke(loaded, "load", str(path))
    one_line_error(result, 2, str(path), "invalid")
    assert snapshot(loaded) == before


def test_invalid_turtle_in_memory_is_one_line_error() -> None:
    result = invoke(
        ":memory:",
        "load",
        "-",
        "--format",
        "turtle",
        input='@prefix ex: <http://example.org/> .\nex:a ex:b "open .\n',
    )
    one_line_error(result, 2, "-: invalid")


def test_load_turtle_from_stdin(store_target: Target) -> None:
    turtle = '@prefix ex: <http://example.org/> .\nex:pipette ex:calibratedBy "Rebecca Lee" .\n'
    out = ok(invoke(store_target, "load", "-", "--format", "turtle", input=turtle))
    assert out.startswith("- -> urn:labbrain:dataset:stdin (turtle): loaded, 1 quads")
    rows = query_json(
        store_target,
        "SELECT ?g ?who WHERE { GRAPH ?g { <http://example.org/pipette> "
        "<http://example.org/calibratedBy> ?who } }",
    )
    assert rows == [{"g": "urn:labbrain:dataset:stdin", "who": "Rebecca Lee"}]


def test_load_ntriples_from_stdin_into_a_named_dataset(store_target: Target) -> None:
    ntriples = '<http://example.org/a> <http://example.org/b> "c" .\n'
    out = ok(
        invoke(
            store_target, "load", "-", "--format", "ntriples", "--graph", "notes", input=ntriples
        )
    )
    assert "-> urn:labbrain:dataset:notes (ntriples)" in out
    sizes = {g["graph"]: g["triples"] for g in graph_sizes(store_target)}
    assert sizes["urn:labbrain:dataset:notes"] == 1


# ---------------------------------------------------------------------------- query
def test_query_select_table(loaded: Target) -> None:
    out = ok(invoke(loaded, "query", TYPE_COUNTS))
    assert table_rows(out) == [[DG + "Claim", "30"], [DG + "Evidence", "32"]]
    assert out.strip().splitlines()[-1] == "2 row(s)"


def test_query_select_json_is_sparql_results(loaded: Target) -> None:
    results = json.loads(ok(invoke(loaded, "query", "--format", "json", TYPE_COUNTS)))
    assert results["head"]["vars"] == ["kind", "count"]
    bindings = results["results"]["bindings"]
    assert [b["kind"] for b in bindings] == [
        {"type": "uri", "value": DG + "Claim"},
        {"type": "uri", "value": DG + "Evidence"},
    ]
    assert [int(b["count"]["value"]) for b in bindings] == [30, 32]
    assert bindings[0]["count"]["type"] == "literal"


def test_query_select_csv(loaded: Target) -> None:
    out = ok(invoke(loaded, "query", "--format", "csv", TYPE_COUNTS))
    assert out.splitlines() == ["kind,count", f"{DG}Claim,30", f"{DG}Evidence,32"]


def test_query_select_tsv(loaded: Target) -> None:
    out = ok(invoke(loaded, "query", "--format", "tsv", TYPE_COUNTS))
    lines = out.splitlines()
    assert lines[0] == "?kind\t?count"
    assert lines[1].startswith(f"<{DG}Claim>\t")
    assert lines[1].split("\t")[1].startswith("30")
    assert len(lines) == 3


def test_query_ask(loaded: Target) -> None:
    yes = f"ASK {{ GRAPH <{SAMPLE_GRAPH}> {{ ?n a dg:Claim }} }}"
    no = f"ASK {{ GRAPH <{SAMPLE_GRAPH}> {{ ?n a dg:Nonexistent }} }}"
    assert ok(invoke(loaded, "query", yes)).strip() == "true"
    assert ok(invoke(loaded, "query", no)).strip() == "false"
    assert json.loads(ok(invoke(loaded, "query", "--format", "json", yes)))["boolean"] is True


def test_query_ask_json_has_a_head(loaded: Target) -> None:
    yes = f"ASK {{ GRAPH <{SAMPLE_GRAPH}> {{ ?n a dg:Claim }} }}"
    assert json.loads(ok(invoke(loaded, "query", "--format", "json", yes))) == {
        "head": {},
        "boolean": True,
    }


def test_query_construct_prints_turtle(loaded: Target) -> None:
    sparql = (
        f"CONSTRUCT {{ ?n dct:title ?t }} WHERE {{ GRAPH <{SAMPLE_GRAPH}> "
        "{ ?n a dg:Claim ; dct:title ?t } }"
    )
    out = ok(invoke(loaded, "query", sparql))
    triples = list(parse(out.encode("utf-8"), RdfFormat.TURTLE))
    assert len(triples) == 30
    assert {t.predicate.value for t in triples} == {"http://purl.org/dc/terms/title"}
    assert all(t.object.value.startswith("[[CLM]] - ") for t in triples)


def test_query_from_file(loaded: Target, tmp_path: Path) -> None:
    path = _write(tmp_path / "types.rq", "# claims and evidence\n" + TYPE_COUNTS + "\n")
    assert ok(invoke(loaded, "query", "-f", str(path))) == ok(invoke(loaded, "query", TYPE_COUNTS))
    assert (
        table_rows(ok(invoke(loaded, "query", "--file", str(path), "--format", "table")))[0][1]
        == "30"
    )


def _store_quads(target: Target) -> dict[str, list[Quad]]:
    """Every named graph of the store at ``target`` with its quads, read through the store
    interface (not through a query)."""
    with LabBrain(settings_of(target), read_only=True) as brain:
        return {graph: list(brain.store.quads(graph)) for graph in brain.store.graphs()}


def test_query_default_graph_is_the_union_of_all_graphs(loaded: Target) -> None:
    """As in the console, the endpoint and sparql_query: a pattern outside GRAPH matches the
    triples of every named graph (each graph's copy of a triple counts once per graph)."""
    expected = sum(len(quads) for quads in _store_quads(loaded).values())
    assert expected > 2499  # the sample's dataset graph, the ontology, the load record, ...
    rows = query_json(loaded, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert rows == [{"n": str(expected)}]


def test_query_describe_prints_the_node_triples(loaded: Target) -> None:
    node = NamedNode("https://roamresearch.com/#/app/akamatsulab-sample/page/bPazg-DDU")
    expected = {
        (q.predicate, q.object)
        for quads in _store_quads(loaded).values()
        for q in quads
        if q.subject == node
    }
    assert len(expected) > 3  # title, creator, created, types, relations
    out = ok(invoke(loaded, "query", f"DESCRIBE <{node.value}>"))
    described = {
        (t.predicate, t.object) for t in parse(out.encode(), RdfFormat.TURTLE) if t.subject == node
    }
    assert described == expected


def test_query_from_and_from_named_restrict_the_dataset(loaded: Target) -> None:
    graphs = _store_quads(loaded)
    ontology = "urn:labbrain:ontology"
    rows = query_json(loaded, f"SELECT (COUNT(*) AS ?n) FROM <{ontology}> WHERE {{ ?s ?p ?o }}")
    assert rows == [{"n": str(len(graphs[ontology]))}]
    rows = query_json(
        loaded,
        f"SELECT ?g (COUNT(*) AS ?n) FROM NAMED <{SAMPLE_GRAPH}> "
        "WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
    )
    assert rows == [{"g": SAMPLE_GRAPH, "n": str(len(graphs[SAMPLE_GRAPH]))}]
    # With FROM NAMED only, the default graph is empty (SPARQL 1.1, 13.2).
    rows = query_json(
        loaded, f"SELECT (COUNT(*) AS ?n) FROM NAMED <{SAMPLE_GRAPH}> WHERE {{ ?s ?p ?o }}"
    )
    assert rows == [{"n": "0"}]


def test_query_file_from_stdin(loaded: Target) -> None:
    assert ok(invoke(loaded, "query", "-f", "-", input=TYPE_COUNTS)) == ok(
        invoke(loaded, "query", TYPE_COUNTS)
    )


def test_query_file_that_is_not_text(loaded: Target, tmp_path: Path) -> None:
    path = tmp_path / "query.rq"
    path.write_bytes(b'SELECT * WHERE { ?s ?p "caf\xe9" }')
    one_line_error(invoke(loaded, "query", "-f", str(path)), 2, str(path), "is not UTF-8 text")


def test_query_needs_exactly_one_source(loaded: Target, tmp_path: Path) -> None:
    path = _write(tmp_path / "q.rq", "ASK {}")
    one_line_error(invoke(loaded, "query", "ASK {}", "-f", str(path)), 2, "one of them")
    one_line_error(invoke(loaded, "query"), 2, "one of them")


def test_query_syntax_error_shows_position(loaded: Target) -> None:
    result = invoke(loaded, "query", "SELECT ?x WHERE {\n  ?x ?y .\n}")
    line = one_line_error(result, 2, "SPARQL syntax error (line 3, column 1)")
    assert "line 3, column 1" in line


def test_relative_iris_resolve_against_the_documented_base(loaded: Target) -> None:
    """A relative IRI in a query or an update is resolved against labbrain's base (it was a
    syntax error); a BASE in the text wins. On every backend (the remote one is sent the
    base in the text)."""
    base = "https://w3id.org/labbrain/base/"
    asked = invoke(loaded, "query", "--format", "csv", "SELECT (<s> AS ?x) {}")
    assert asked.exit_code == 0, asked.output
    assert asked.stdout.splitlines() == ["x", base + "s"]
    own = invoke(loaded, "query", "--format", "csv", "BASE <http://ex.org/> SELECT (<s> AS ?x) {}")
    assert own.exit_code == 0, own.output
    assert own.stdout.splitlines() == ["x", "http://ex.org/s"]
    written = invoke(
        loaded, "query", "--update", 'INSERT DATA { GRAPH <rel-g> { <s> <p> "relative" } }'
    )
    assert written.exit_code == 0, written.output
    found = invoke(
        loaded, "query", "--format", "csv", 'SELECT ?g { GRAPH ?g { ?s ?p "relative" } }'
    )
    assert base + "rel-g" in found.stdout.splitlines()


def test_a_misspelt_query_form_names_the_forms(loaded: Target) -> None:
    line = one_line_error(invoke(loaded, "query", "SELEC ?x WHERE { ?x ?p ?o }"), 2, "SELEC")
    assert line.endswith(
        "SPARQL syntax error (line 1, column 1): expected a query form: SELECT, CONSTRUCT, "
        "DESCRIBE or ASK; found 'SELEC'"
    )


def test_query_refuses_updates_without_update_flag(loaded: Target) -> None:
    before = snapshot(loaded)
    insert = 'INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/a> <http://example.org/b> "c" } }'
    result = invoke(loaded, "query", insert)
    one_line_error(result, 2, "this is a SPARQL update; run it with --update")
    assert snapshot(loaded) == before
    # a query that merely fails to parse is reported as a syntax error, position once
    line = one_line_error(
        invoke(loaded, "query", "SELECT ?s WHERE { ?s ?p }"), 2, "SPARQL syntax error"
    )
    assert "(line 1, column" in line and "error at" not in line


def test_query_update_flag_runs_updates(loaded: Target) -> None:
    insert = 'INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/a> <http://example.org/b> "LOAD and SERVICE are just words here" } }'
    assert ok(invoke(loaded, "query", "--update", insert)).strip() == "update done"
    rows = query_json(loaded, "SELECT ?o WHERE { GRAPH <http://example.org/g> { ?s ?p ?o } }")
    assert rows == [{"o": "LOAD and SERVICE are just words here"}]
    sizes = {g["graph"]: g["triples"] for g in graph_sizes(loaded)}
    assert sizes["http://example.org/g"] == 1


def test_query_refuses_service(loaded: Target, network_attempts: list[object]) -> None:
    sparql = "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"
    one_line_error(invoke(loaded, "query", sparql), 2, "query refused", "SERVICE is not allowed")
    assert network_attempts == []


def test_update_refuses_load_and_service(loaded: Target, network_attempts: list[object]) -> None:
    before = snapshot(loaded)
    result = invoke(loaded, "query", "--update", "LOAD <http://example.org/data.ttl>")
    one_line_error(result, 2, "query refused", "LOAD is not allowed")
    service = (
        "INSERT { GRAPH <http://example.org/g> { ?s ?p ?o } } "
        "WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"
    )
    one_line_error(invoke(loaded, "query", "--update", service), 2, "SERVICE is not allowed")
    assert network_attempts == []
    assert snapshot(loaded) == before


@pytest.mark.parametrize(
    "sparql",
    [
        'SELECT ?word WHERE { BIND("SERVICE" AS ?word) }',
        "SELECT ?word WHERE { BIND('''a SERVICE call''' AS ?word) }",
        "# SERVICE <http://example.org/sparql>\nSELECT ?word WHERE { BIND(<http://example.org/SERVICE> AS ?word) }",
    ],
    ids=["string", "long string", "comment and IRI"],
)
def test_query_mentioning_service_outside_code_is_allowed(loaded: Target, sparql: str) -> None:
    out = ok(invoke(loaded, "query", sparql))
    assert "SERVICE" in table_rows(out)[0][0]
    assert out.strip().endswith("1 row(s)")


@pytest.mark.parametrize(
    "sparql",
    [
        "SELECT ?s WHERE { GRAPH ?g { ?s a sioc:Service } }",
        "SELECT ?service WHERE { GRAPH ?g { ?service a dg:Claim } } LIMIT 1",
    ],
    ids=["prefixed name", "variable"],
)
def test_query_with_service_as_a_name_is_allowed(loaded: Target, sparql: str) -> None:
    ok(invoke(loaded, "query", sparql))


def test_query_table_is_capped_by_max_rows(loaded: Target) -> None:
    claims = f"SELECT ?n WHERE {{ GRAPH <{SAMPLE_GRAPH}> {{ ?n a dg:Claim }} }} ORDER BY ?n"
    out = ok(invoke(loaded, "query", claims, env={"LABBRAIN_MAX_ROWS": "3"}))
    assert len(table_rows(out)) == 3
    note = out.strip().splitlines()[-1]
    assert note.startswith("3 row(s) (truncated at LABBRAIN_MAX_ROWS=3")
    # The cap is for the table only: csv prints everything.
    csv = ok(invoke(loaded, "query", "--format", "csv", claims, env={"LABBRAIN_MAX_ROWS": "3"}))
    assert len(csv.splitlines()) == 1 + 30


def test_query_table_under_the_cap_is_not_truncated(loaded: Target) -> None:
    out = ok(invoke(loaded, "query", TYPE_COUNTS, env={"LABBRAIN_MAX_ROWS": "2"}))
    assert len(table_rows(out)) == 2
    assert "truncated" not in out


def test_query_table_prints_values_verbatim() -> None:
    out = ok(invoke(":memory:", "query", 'SELECT ("status :x: [red]failed[/red]" AS ?v) {}'))
    assert table_rows(out) == [["status :x: [red]failed[/red]"]]


# ---------------------------------------------------------------------------- inspect
def test_stats_tables(loaded: Target) -> None:
    """--full prints every table (plain text here: CliRunner's output is no terminal)."""
    out = ok(invoke(loaded, "stats", "--full"))
    lines = [line.strip() for line in out.splitlines()]
    for title in ("Graphs", "Nodes by type", "Relations by label", "Creators"):
        assert title in lines
    rows = [re.split(r"\s{2,}", line) for line in lines]
    by_type = {row[1]: row[2] for row in rows if len(row) == 3 and row[1] in SAMPLE_TYPES}
    assert by_type == {k: str(v) for k, v in SAMPLE_TYPES.items()}
    creators = {row[1]: row[2] for row in rows if len(row) == 5 and row[0] == SAMPLE_GRAPH}
    assert creators == {k: str(v) for k, v in SAMPLE_CREATORS.items()}


def test_stats_summary(loaded: Target) -> None:
    """Without --full: the dataset with its nodes, relations (the dangling one left out)
    and triples, in a few lines."""
    out = ok(invoke(loaded, "stats"))
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert rows[1] == ["dataset", "nodes", "relations", "triples"]
    assert rows[2][:3] == ["akamatsulab-sample", "150", "170"]
    assert len(rows) == 5  # title, header, the dataset, the other graphs, the hint


def test_stats_json(loaded: Target) -> None:
    stats = json.loads(ok(invoke(loaded, "stats", "--json")))
    assert {row["graph"] for row in stats["nodes_by_type"]} == {SAMPLE_GRAPH}
    assert {row["type"]: row["count"] for row in stats["nodes_by_type"]} == SAMPLE_TYPES
    assert sum(row["count"] for row in stats["nodes_by_type"]) == 150
    # The dangling Supports instance is kept only as a reified statement.
    assert {row["label"]: row["count"] for row in stats["relations"]} == {
        "Supports": 72,
        "Informs": 67,
        "Addresses": 22,
        "Opposes": 9,
    }
    assert {row["creator"]: row["nodes"] for row in stats["creators"]} == SAMPLE_CREATORS
    graphs = {row["graph"] for row in stats["graphs"]}
    assert graphs == {
        CHANGES_GRAPH,
        SAMPLE_GRAPH,
        "urn:labbrain:ontology",
        "urn:labbrain:system",
        TASKS_GRAPH,
    }


def test_stats_for_one_graph(loaded: Target) -> None:
    ok(invoke(loaded, "load", str(SAMPLE_DCT)))
    stats = json.loads(ok(invoke(loaded, "stats", "--json", "--graph", "dct-sample")))
    assert {row["graph"] for row in stats["nodes_by_type"]} == {"urn:labbrain:dataset:dct-sample"}
    assert sum(row["count"] for row in stats["nodes_by_type"]) == 8


def test_graphs_lists_graphs_with_triple_counts(loaded: Target) -> None:
    rows = plain_rows(ok(invoke(loaded, "graphs")))
    names = [row[0] for row in rows]
    assert names == [
        CHANGES_GRAPH,
        SAMPLE_GRAPH,
        "urn:labbrain:ontology",
        "urn:labbrain:system",
        TASKS_GRAPH,
    ]
    sizes = {g["graph"]: g["triples"] for g in graph_sizes(loaded)}
    assert {row[0]: int(row[1].replace(",", "")) for row in rows} == sizes


def test_info_before_any_store_exists(store_dir: Path) -> None:
    out = ok(invoke(store_dir, "info", env={"LABBRAIN_MAX_ROWS": "7"}))
    assert out.splitlines()[0] == f"store: {store_dir}"
    settings = {row[0]: row[1] for row in plain_rows(out)}
    assert settings["LABBRAIN_STORE"] == str(store_dir)
    assert settings["LABBRAIN_MAX_ROWS"] == "7"
    assert settings["LABBRAIN_JSONLD_ENGINE"] == "native"
    assert {"LABBRAIN_MAX_INPUT_BYTES", "LABBRAIN_STRICT_LOAD"} <= set(settings)
    assert "store not created yet: `labbrain load` creates it" in out
    assert not store_dir.exists()


def test_info_of_a_loaded_store(loaded: Target) -> None:
    out = ok(invoke(loaded, "info"))
    assert out.splitlines()[0] == location_line(loaded)
    assert "Datasets" in [line.strip() for line in out.splitlines()]
    datasets = [row for row in plain_rows(out) if row[0] == "akamatsulab-sample"]
    assert len(datasets) == 1
    assert str(SAMPLE) in datasets[0]
    assert "150" in datasets[0]
    assert "text index: 150 nodes" in out


def test_info_of_a_memory_store() -> None:
    out = ok(invoke(":memory:", "info"))
    assert out.splitlines()[0] == "store: :memory:"
    assert "store not created yet" in out


def test_drop_removes_the_graph_and_its_index_entries(loaded: Target) -> None:
    ok(invoke(loaded, "load", str(SAMPLE_DCT)))
    assert ok(invoke(loaded, "drop", "akamatsulab-sample")).strip() == "dropped akamatsulab-sample"
    names = [row[0] for row in plain_rows(ok(invoke(loaded, "graphs")))]
    assert SAMPLE_GRAPH not in names
    assert "urn:labbrain:dataset:dct-sample" in names
    assert [r["graph"] for r in query_json(loaded, LOAD_RECORDS)] == [
        "urn:labbrain:dataset:dct-sample"
    ]
    hits = json.loads(ok(invoke(loaded, "search", "membrane tension", "--json")))
    assert {h["dataset"] for h in hits} <= {"dct-sample"}
    assert "text index: 8 nodes" in ok(invoke(loaded, "info"))


def test_drop_unknown_graph_exits_4(loaded: Target) -> None:
    before = snapshot(loaded)
    one_line_error(invoke(loaded, "drop", "nope"), 4, "no graph named urn:labbrain:dataset:nope")
    assert snapshot(loaded) == before


@pytest.mark.parametrize("graph", ["urn:labbrain:system", "urn:labbrain:ontology"])
def test_drop_refuses_managed_graphs(loaded: Target, graph: str) -> None:
    before = snapshot(loaded)
    one_line_error(invoke(loaded, "drop", graph), 2, graph, "cannot be dropped")
    assert snapshot(loaded) == before


def test_reindex_prints_indexed_count(loaded: Target) -> None:
    out = ok(invoke(loaded, "reindex"))
    assert out.strip() == f"{SAMPLE_GRAPH}: 150 nodes indexed"
    assert "text index: 150 nodes" in ok(invoke(loaded, "info"))


def test_reindex_rebuilds_a_deleted_index(loaded: Target) -> None:
    index_file(loaded).unlink()
    assert ok(invoke(loaded, "reindex")).strip() == f"{SAMPLE_GRAPH}: 150 nodes indexed"
    assert json.loads(ok(invoke(loaded, "search", "membrane tension", "--json")))


def test_reindex_of_an_empty_store(store_target: Target) -> None:
    assert ok(invoke(store_target, "reindex")).strip() == "no datasets to index"


def test_search_table(loaded: Target) -> None:
    result = invoke(loaded, "search", "membrane tension")
    out = ok(result)
    assert result.stderr == ""
    rows = table_rows(out)
    assert rows
    assert all(len(row) == 6 for row in rows)
    assert any("membrane tension" in row[2].lower() for row in rows)
    assert all(not row[2].startswith("[[") for row in rows)


def test_search_json(loaded: Target) -> None:
    hits = json.loads(ok(invoke(loaded, "search", "membrane tension", "--json")))
    assert 0 < len(hits) <= 10
    assert any("membrane tension" in h["title"].lower() for h in hits)
    for hit in hits:
        assert hit["dataset"] == "akamatsulab-sample"
        assert not hit["title"].startswith("[[")
        assert " - " not in hit["title"][:10]
        assert {"uid", "creator", "created", "nodeType", "url", "snippet", "score"} <= set(hit)
    assert any(h["nodeType"] == "Evidence" for h in hits)
    dated = [h for h in hits if h["creator"] in SAMPLE_CREATORS]
    assert dated
    assert all(re.match(r"\d{4}-\d\d-\d\dT", h["created"]) for h in dated)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_search_with_an_unknown_type_lists_the_known_ones(loaded: Target) -> None:
    result = invoke(loaded, "search", "membrane tension", "--type", "Banana")
    one_line_error(
        result, 2, "unknown node type 'Banana'", f"node types: {', '.join(sorted(SAMPLE_TYPES))}"
    )


def test_search_filters(loaded: Target) -> None:
    claims = json.loads(
        ok(invoke(loaded, "search", "membrane tension", "--json", "--type", "Claim"))
    )
    assert claims
    assert {h["nodeType"] for h in claims} == {"Claim"}
    lower = json.loads(
        ok(invoke(loaded, "search", "membrane tension", "--json", "--type", "claim"))
    )
    assert lower == claims
    by = json.loads(
        ok(
            invoke(
                loaded, "search", "tension", "--json", "--creator", "Rebecca Lee", "--limit", "3"
            )
        )
    )
    assert 0 < len(by) <= 3
    assert {h["creator"] for h in by} == {"Rebecca Lee"}
    assert json.loads(ok(invoke(loaded, "search", "zzzzqqq", "--json"))) == []


# ---------------------------------------------------------------------------- locking
@pytest.fixture
def writer(loaded_dir: Path) -> Iterator[LabBrain]:
    """The loaded store held open for writing by this process (as another labbrain would)."""
    with LabBrain(settings_for(loaded_dir)) as brain:
        yield brain


def test_read_only_commands_work_while_a_writer_holds_the_store(
    loaded_dir: Path, writer: LabBrain
) -> None:
    loaded = loaded_dir
    rows = query_json(loaded, TYPE_COUNTS)
    assert [int(r["count"]) for r in rows] == [30, 32]
    stats = json.loads(ok(invoke(loaded, "stats", "--json")))
    assert {row["type"]: row["count"] for row in stats["nodes_by_type"]} == SAMPLE_TYPES
    nquads = ok(invoke(loaded, "export", "--format", "nquads", "--graph", "akamatsulab-sample"))
    assert len(nquads.splitlines()) == writer.store.count(SAMPLE_GRAPH)
    for args in (["load", str(SAMPLE_DCT)], ["drop", "akamatsulab-sample"], ["reindex"]):
        one_line_error(invoke(loaded, *args), 3, str(loaded), "locked")
    assert [row[0] for row in plain_rows(ok(invoke(loaded, "graphs")))] == [
        CHANGES_GRAPH,
        SAMPLE_GRAPH,
        "urn:labbrain:ontology",
        "urn:labbrain:system",
        TASKS_GRAPH,
    ]


def test_search_works_while_a_writer_holds_the_store(loaded_dir: Path, writer: LabBrain) -> None:
    result = invoke(loaded_dir, "search", "membrane tension", "--json")
    hits = json.loads(ok(result))
    assert hits
    assert "out of date" not in result.stderr
    assert writer.index.count() == 150


@pytest.mark.parametrize(
    "args",
    [
        ["query", "ASK { ?s ?p ?o }"],
        ["stats"],
        ["graphs"],
        ["search", "tension"],
        ["export"],
    ],
    ids=lambda args: args[0],
)
def test_read_only_command_on_a_missing_store(store_dir: Path, args: list[str]) -> None:
    result = invoke(store_dir, *args)
    one_line_error(result, 3, f"no labbrain store at {store_dir}", "`labbrain load`")
    assert not store_dir.exists()


# ---------------------------------------------------------------------------- messages
def test_long_error_stays_on_one_line_on_a_narrow_console(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli.err, "width", 80)
    path = _write(tmp_path / "remote.jsonld", json.dumps({"@context": REMOTE_CONTEXT}))
    one_line_error(invoke(":memory:", "load", str(path)), 2, "refused")


def test_invalid_settings_are_reported_not_raised(tmp_path: Path) -> None:
    result = invoke(tmp_path / "s", "info", env={"LABBRAIN_MAX_ROWS": "many"})
    one_line_error(result, 2, "settings:", "LABBRAIN_MAX_ROWS")
    result = invoke(tmp_path / "s", "stats", env={"LABBRAIN_JSONLD_ENGINE": "fastest"})
    one_line_error(result, 2, "LABBRAIN_JSONLD_ENGINE")


# ---------------------------------------------------------------------------- version, completion
@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flags(flag: str) -> None:
    from importlib.metadata import version

    result = CliRunner().invoke(main, [flag], prog_name="labbrain")
    assert ok(result).strip() == f"labbrain, version {version('labbrain')}"


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _labbrain_completion labbrain"),
        ("zsh", "compdef _labbrain_completion labbrain"),
        ("fish", "complete --no-files --command labbrain"),
    ],
)
def test_shell_completion_scripts(shell: str, marker: str) -> None:
    """``_LABBRAIN_COMPLETE=<shell>_source labbrain`` prints the script docs/commands.md tells
    users to install: a function named after the command, registered for it."""
    result = CliRunner().invoke(
        main, [], prog_name="labbrain", env={"_LABBRAIN_COMPLETE": f"{shell}_source"}
    )
    script = ok(result)
    assert "_labbrain_completion" in script
    assert marker in script


def test_shell_completion_completes_commands_and_options() -> None:
    """What the installed script asks for: the completions of the words typed so far."""
    env = {"_LABBRAIN_COMPLETE": "bash_complete", "COMP_WORDS": "labbrain exp", "COMP_CWORD": "1"}
    result = CliRunner().invoke(main, [], prog_name="labbrain", env=env)
    assert ok(result).split() == ["plain,export"]
    env = {"COMP_WORDS": "labbrain export --form", "COMP_CWORD": "2"}
    result = CliRunner().invoke(
        main, [], prog_name="labbrain", env={"_LABBRAIN_COMPLETE": "bash_complete", **env}
    )
    assert ok(result).split() == ["plain,--format"]
