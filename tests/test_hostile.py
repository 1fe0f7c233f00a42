"""Hostile input: JSON-LD bombs, SPARQL injection, network egress, paths outside the allowed
directories, SSRF through images, stdout pollution of the stdio server, and the HTTP guard on
every route.

Already covered elsewhere and not repeated here: invalid JSON / UTF-8 / NaN, too large, too
deep and remote contexts in-process (tests/cli/test_bad_input.py); the image guard's basic
refusals (tests/mcp/test_images.py); Host 421, Origin 403 on /sparql and /mcp, 413, update token
401 / 403 (tests/http/test_http.py); `..`, absolute and symlinked load paths (tests/tasks/test_tasks.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from pyoxigraph import Literal, NamedNode, QuerySolutions, Store, Variable
from starlette.testclient import TestClient

from conftest import ROOT, SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import fingerprint
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import LabbrainError, QueryNotAllowed, TemplateParameterError
from labbrain.http.app import build_app
from labbrain.mcp import images
from labbrain.mcp.images import ImageRefused, fetch_image
from labbrain.mcp.server import build_server
from labbrain.store.remote.sparql import bind_values, term_text
from labbrain.store.templates import bind, run, templates

SAMPLE_DOC: dict[str, Any] = json.loads(SAMPLE.read_text())


# ---------------------------------------------------------------------------------------
# 1. JSON-LD bombs: refused with a labbrain error, under a memory limit, nothing written
# ---------------------------------------------------------------------------------------

#: The child: load one file under an address-space limit and report how it ended, as JSON.
_BOUNDED_LOAD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (%d, %d))
from labbrain.core import LabBrain
from labbrain.errors import LabbrainError
from labbrain.settings import Settings
store, path, contexts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    with LabBrain(Settings(store=store, jsonld_contexts=contexts)) as brain:
        report = brain.load(path)
    outcome = {"loaded": report.quads}
except LabbrainError as error:
    outcome = {"error": type(error).__name__, "message": str(error)}
status = open("/proc/self/status").read().split("VmHWM:")[1]  # this program's peak RSS
print(json.dumps({**outcome, "peak_mb": int(status.split()[0]) // 1024}))
"""
MEMORY_LIMIT = 2_500 * 1024**2


def _bounded_load(
    store: Path, path: Path, contexts: dict[str, str] | None = None
) -> dict[str, Any]:
    """Load ``path`` into ``store`` in a child limited to 2.5 GB of address space; the child
    must end normally (no MemoryError, traceback, abort or kill) and say how the load went."""
    script = _BOUNDED_LOAD % (MEMORY_LIMIT, MEMORY_LIMIT)
    child = subprocess.run(
        [sys.executable, "-c", script, str(store), str(path), json.dumps(contexts or {})],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")},
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "Traceback" not in child.stderr
    outcome: dict[str, Any] = json.loads(child.stdout)
    return outcome


def _export_with(**changes: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(SAMPLE_DOC))
    document.update(changes)
    return document


def _write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _huge_array(path: Path) -> Path:
    """Plain JSON-LD: one property with five million values (39 MB)."""
    with path.open("w") as out:
        out.write('{"@context": {"p": "http://example.org/p"}, "@id": "http://example.org/s", ')
        out.write('"p": [' + ",".join(map(str, range(5_000_000))) + "]}")
    return path


def _million_objects(path: Path) -> Path:
    """An export whose @graph ends with five million empty objects (15 MB)."""
    text = json.dumps(SAMPLE_DOC)
    end = text.rindex("]")
    path.write_text(text[:end] + "," + ",".join(["{}"] * 5_000_000) + text[end:])
    return path


def _context_chain(path: Path) -> Path:
    """Plain JSON-LD whose @context is a chain of 100,000 contexts."""
    chain = [{f"t{i}": f"http://example.org/t{i}"} for i in range(100_000)]
    return _write_json(path, {"@context": chain, "@id": "http://example.org/s", "t1": "v"})


def _scoped_contexts(path: Path) -> Path:
    """Plain JSON-LD: a 20,000-term context scoped to a property used by 20,000 nodes."""
    big = {f"t{i}": f"http://example.org/t{i}" for i in range(20_000)}
    nodes = [{"@id": f"http://example.org/s{i}", "p": {"t1": "v"}} for i in range(20_000)]
    context = {"p": {"@id": "http://example.org/p", "@context": big}}
    return _write_json(path, {"@context": context, "@graph": nodes})


def _deep_contexts(path: Path) -> Path:
    """Plain JSON-LD: term definitions with scoped contexts nested 200 deep."""
    context: dict[str, Any] = {"@vocab": "http://example.org/"}
    for i in range(200):
        context = {f"t{i}": {"@id": f"http://example.org/t{i}", "@context": context}}
    return _write_json(path, {"@context": context, "@id": "http://example.org/s", "t199": {}})


def _export_scoped_context(path: Path) -> Path:
    context = dict(SAMPLE_DOC["@context"])
    context["extra"] = {"@id": "http://example.org/extra", "@context": {"x": "http://x.org/"}}
    return _write_json(path, _export_with(**{"@context": context}))


def _export_embedded_context(path: Path) -> Path:
    document = _export_with()
    document["@graph"][20]["@context"] = {"title": "http://example.org/other-title"}
    return _write_json(path, document)


def _self_context(path: Path) -> Path:
    """Plain JSON-LD whose remote context's local copy names the same remote context."""
    (path.parent / "self.jsonld").write_text(json.dumps({"@context": "https://example.org/self"}))
    return _write_json(
        path, {"@context": "https://example.org/self", "@id": "http://example.org/s", "n": "v"}
    )


def _import_loop(path: Path) -> Path:
    """An export whose context @imports a local copy that @imports itself again."""
    copy = {"@context": {"@import": "https://example.org/imp", "x": "http://example.org/x"}}
    (path.parent / "imp.jsonld").write_text(json.dumps(copy))
    context = {**SAMPLE_DOC["@context"], "@import": "https://example.org/imp"}
    return _write_json(path, _export_with(**{"@context": context}))


def _huge_string(path: Path) -> Path:
    """Plain JSON-LD with one 100 MB string."""
    with path.open("w") as out:
        out.write('{"@context": {"p": "http://example.org/p"}, "@id": "http://example.org/s", ')
        out.write('"p": "' + "a" * 100_000_000 + '"}')
    return path


def _deep_nesting(path: Path) -> Path:
    path.write_text("[" * 1_000_000 + "]" * 1_000_000)
    return path


def _infinity(path: Path) -> Path:
    text = json.dumps(SAMPLE_DOC)
    path.write_text(text.replace('"@graph": [', '"@graph": [-Infinity, ', 1))
    return path


def _invalid_utf8_late(path: Path) -> Path:
    """A valid export but for one byte near its end (after the fast path's head)."""
    data = json.dumps(SAMPLE_DOC).encode()
    path.write_bytes(data[:-200] + b"\xff" + data[-199:])
    return path


BOMBS: dict[str, tuple[Callable[[Path], Path], str, str]] = {
    # name: (writer, error type, message part)
    "deep-nesting": (_deep_nesting, "InputTooLarge", "nested deeper than 64"),
    "huge-array": (_huge_array, "InputTooLarge", "'p' holds more than 2000 values"),
    "millions-of-objects": (
        _million_objects,
        "InputTooLarge",
        "more than 2000000 JSON objects (LABBRAIN_MAX_JSON_OBJECTS)",
    ),
    "context-chain": (_context_chain, "InputTooLarge", "define more than 1000 terms"),
    "scoped-context-bomb": (_scoped_contexts, "InputTooLarge", "define more than 1000 terms"),
    "deeply-nested-contexts": (_deep_contexts, "InputTooLarge", "nested deeper than 64"),
    "scoped-context-in-export": (
        _export_scoped_context,
        "ExportFormatError",
        "a scoped @context inside the export's context is not the export format",
    ),
    "embedded-context-in-export": (
        _export_embedded_context,
        "ExportFormatError",
        "an @context inside @graph is not the export format",
    ),
    "context-cycle": (_self_context, "ExportFormatError", "invalid JSON-LD"),
    "import-loop": (
        _import_loop,
        "ExportFormatError",
        "the local copy of https://example.org/imp has an @import itself: not followed",
    ),
    "100-mb-string": (
        _huge_string,
        "InputTooLarge",
        "too large for the RDF parser (Reached the buffer maximal size of 16777216)",
    ),
    "infinity": (_infinity, "ExportFormatError", "-Infinity is not valid JSON"),
    "invalid-utf8": (_invalid_utf8_late, "ExportFormatError", "invalid UTF-8"),
}


@pytest.fixture(scope="module")
def bomb_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """An on-disk store holding the sample, and its fingerprint."""
    store = tmp_path_factory.mktemp("bombs") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
        return store, fingerprint(brain)


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("bomb", list(BOMBS))
def test_jsonld_bomb_is_refused_in_bounded_memory_and_writes_nothing(
    bomb: str, bomb_store: tuple[Path, Any], tmp_path: Path
) -> None:
    writer, error, message = BOMBS[bomb]
    path = writer(tmp_path / f"{bomb}.jsonld")
    contexts = {
        "https://example.org/self": str(tmp_path / "self.jsonld"),
        "https://example.org/imp": str(tmp_path / "imp.jsonld"),
    }
    store, before = bomb_store
    outcome = _bounded_load(store, path, contexts)
    assert outcome.get("error") == error, outcome
    assert message in outcome["message"]
    assert outcome["message"].startswith(str(path))  # names the file
    with LabBrain(settings_for(store), read_only=True) as brain:
        assert fingerprint(brain) == before


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_100_mb_string_inside_an_export_loads_in_bounded_memory(tmp_path: Path) -> None:
    """Exports go to pyoxigraph's JSON-LD parser, which has no token cap: a 100 MB content
    string is data, loaded whole, within the memory limit."""
    document = _export_with()
    node = next(entry for entry in document["@graph"] if "content" in entry)
    node["content"] = "word " * 20_000_000
    path = _write_json(tmp_path / "long-content.jsonld", document)
    outcome = _bounded_load(tmp_path / "store", path)
    assert outcome.get("loaded") == 2499, outcome  # as many quads as the sample
    assert outcome["peak_mb"] < MEMORY_LIMIT // 1024**2


def test_json_limits_are_settings(tmp_path: Path) -> None:
    """The new limits are checked before parsing, with the values the settings give."""
    objects = _write_json(tmp_path / "objects.jsonld", _export_with())
    arrays = _write_json(
        tmp_path / "arrays.jsonld",
        {"@context": {"p": "http://example.org/p"}, "@id": "http://example.org/s", "p": [1, 2, 3]},
    )
    context = {f"t{i}": f"http://example.org/t{i}" for i in range(11)}
    terms = _write_json(
        tmp_path / "terms.jsonld", {"@context": context, "@id": "http://example.org/s", "t1": 1}
    )
    limits = {"max_json_objects": 100, "max_json_array_items": 2, "max_context_terms": 10}
    with LabBrain(settings_for(":memory:", **limits)) as brain:
        for path, message in (
            (objects, "more than 100 JSON objects"),
            (arrays, "'p' holds more than 2 values"),
            (terms, "define more than 10 terms"),
        ):
            with pytest.raises(LabbrainError, match=message):
                brain.load(str(path))
        assert brain.datasets() == []
    with LabBrain(settings_for(":memory:")) as brain:  # the defaults let them through
        for path in (objects, arrays, terms):
            assert brain.load(str(path)).quads > 0


# ---------------------------------------------------------------------------------------
# 2. SPARQL injection: values only ever travel as bound terms
# ---------------------------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        [
            '"} ; DROP ALL ; INSERT DATA { <urn:x> <urn:y> <urn:z> } #',
            "'} DROP ALL #",
            "\u0000",
            "line\nbreak\r\n",
            "<http://example.org/a> } UNION { ?s ?p ?o",
            "http://example.org/a> . ?s ?p ?o . <urn:b",
            "urn:x>",
            "\\u003e } ; CLEAR ALL",
            '"""',
            "?graph",
            "\U0001f9ea\u202e\ufeff",
            "",
        ]
    ),
    st.text(),
    st.text(alphabet="<>{}\"'\\;#?$ \n.:/abcDROPALL").map(lambda s: "http://example.org/" + s),
)
VALUE = {
    "iri": st.one_of(HOSTILE_TEXT, st.just("http://example.org/é?q=1#frag")),
    "string": HOSTILE_TEXT,
    "integer": st.one_of(st.integers(), HOSTILE_TEXT),
    "boolean": st.one_of(st.booleans(), HOSTILE_TEXT),
}


class SpyStore:
    """A pyoxigraph store that records the query text and substitutions it is given."""

    def __init__(self, real: Store) -> None:
        self.real = real
        self.queries: list[tuple[str, dict[str, Any]]] = []

    def query(self, sparql: str, **kwargs: Any) -> Any:
        subs = kwargs.get("substitutions") or {}
        self.queries.append((sparql, {v.value: t for v, t in subs.items()}))
        return self.real.query(sparql, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture(scope="module")
def spied() -> Iterator[tuple[LabBrain, SpyStore, Any]]:
    """The sample in memory, its pyoxigraph store behind a spy, and its fingerprint."""
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(SAMPLE))
        spy = SpyStore(brain.store._store)  # type: ignore[attr-defined]
        brain.store._store = spy  # type: ignore[attr-defined]
        yield brain, spy, fingerprint(brain)


def _expected(tmpl: Any, values: dict[str, Any]) -> dict[str, Any] | None:
    """The terms a valid set of values becomes, or None when one of them is invalid."""
    terms: dict[str, Any] = {}
    for name, value in values.items():
        kind = tmpl.parameters[name].type
        try:
            if kind == "iri":
                terms[name] = NamedNode(value)
            elif kind == "string":
                terms[name] = Literal(value)
            elif kind == "integer":
                if isinstance(value, bool) or not isinstance(value, int):
                    return None
                terms[name] = Literal(str(value), datatype=NamedNode(XSD_INTEGER))
            else:
                if not isinstance(value, bool):
                    return None
                terms[name] = Literal(str(value).lower(), datatype=NamedNode(XSD_BOOLEAN))
        except ValueError:
            return None
    return terms


XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
PARAMETRISED = sorted(name for name, t in templates().items() if t.parameters)


@pytest.mark.parametrize("name", PARAMETRISED)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_template_parameters_reach_the_engine_only_as_terms(
    name: str, data: st.DataObject, spied: tuple[LabBrain, SpyStore, Any]
) -> None:
    brain, spy, before = spied
    tmpl = templates()[name]
    values = {
        p.name: data.draw(VALUE[p.type], label=p.name)
        for p in tmpl.parameters.values()
        if p.required or data.draw(st.booleans(), label=f"give {p.name}")
    }
    expected = _expected(tmpl, values)
    spy.queries.clear()
    if expected is None:
        with pytest.raises(TemplateParameterError, match="parameter "):
            run(brain.store, name, **values)
        assert spy.queries == []  # refused before anything reached the engine
    else:
        run(brain.store, name, **values)
        assert spy.queries == [(tmpl.text, expected)]
    assert fingerprint(brain) == before


@pytest.mark.parametrize("name", PARAMETRISED)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_remote_values_block_is_outside_the_template_and_parses_back(
    name: str, data: st.DataObject
) -> None:
    tmpl = templates()[name]
    values = {
        p.name: data.draw(VALUE[p.type], label=p.name)
        for p in tmpl.parameters.values()
        if p.required or data.draw(st.booleans(), label=f"give {p.name}")
    }
    expected = _expected(tmpl, values)
    if expected is None:
        with pytest.raises(TemplateParameterError):
            bind(tmpl, values)
        return
    bound = bind(tmpl, values)
    assert bound == expected
    text = bind_values(tmpl.text, bound)
    if not bound:
        assert text == tmpl.text
        return
    names = sorted(bound)
    block = (
        f" VALUES ({' '.join('?' + n for n in names)}) "
        f"{{ ({' '.join(term_text(bound[n]) for n in names)}) }} "
    )
    assert text.count(block) >= 1 and text.replace(block, "", 1) == tmpl.text
    parsed = Store().query("SELECT * WHERE {" + block + "}")
    assert isinstance(parsed, QuerySolutions)
    rows = [{n: row[Variable(n)] for n in names} for row in parsed]
    assert rows == [bound]


MARKER = "hstl7Q"
HOSTILE_ARGUMENTS = [
    MARKER + '"} ; DROP ALL #',
    MARKER + "> } UNION { ?s ?p ?o",
    MARKER + "\u0000\n'''",
    "http://example.org/" + MARKER + ">{}",
    "urn:labbrain:dataset:" + MARKER + "> . }",
]


def _is_text(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", [schema])
    return any(o.get("type") == "string" and "enum" not in o for o in options)


def test_mcp_tool_arguments_never_enter_query_text(spied: tuple[LabBrain, SpyStore, Any]) -> None:
    """Every read tool, every free-text argument (uids, filters, datasets, types, ids):
    hostile values reach the engine only as bound terms, or are refused."""
    brain, spy, before = spied

    async def session() -> list[tuple[str, Any]]:
        async with Client(build_server(brain)) as client:
            answers = []
            for tool in (await client.list_tools()).tools:
                reads = tool.annotations and tool.annotations.read_only_hint
                if not reads and tool.name != "get_node":  # get_node also records visits
                    continue
                if tool.name == "sparql_query":  # its argument is query text (section 3)
                    continue
                properties = tool.input_schema.get("properties", {})
                texts = [name for name, schema in properties.items() if _is_text(schema)]
                for value in HOSTILE_ARGUMENTS if texts else []:
                    arguments = dict.fromkeys(texts, value)
                    answers.append((tool.name, await client.call_tool(tool.name, arguments)))
            return answers

    spy.queries.clear()
    answers = asyncio.run(session())
    assert len({name for name, _ in answers}) >= 20
    assert spy.queries, "the tools queried the store"
    for sparql, _ in spy.queries:
        assert MARKER not in sparql
    for name, answer in answers:
        text = answer.content[0].text if answer.content else ""
        assert "Traceback" not in text and "/tmp" not in text, (name, text)
    assert fingerprint(brain) == before


# ---------------------------------------------------------------------------------------
# 3. SERVICE, LOAD and remote FROM: refused everywhere, no connection made
# ---------------------------------------------------------------------------------------


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.connections.append(peer)
            conn.close()

    def close(self) -> None:
        # close() alone leaves the thread blocked in accept(); shutdown() wakes it at once
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive(), "the listener thread did not stop"


@pytest.fixture
def listener() -> Iterator[Listener]:
    target = Listener()
    yield target
    target.close()


def _egress_queries(port: int) -> tuple[list[str], list[str], list[str]]:
    """Queries and updates that would reach ``port`` if the engine ran them (refused), and
    queries naming graphs at ``port`` as their dataset (answered, those graphs empty)."""
    url = f"http://127.0.0.1:{port}/sparql"
    queries = [
        f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE SILENT <{url}> {{ ?s ?p ?o }} }}",
        f"PREFIX r: <http://127.0.0.1:{port}/> SELECT * WHERE {{ service r:sparql {{ ?s ?p ?o }} }}",
    ]
    updates = [
        f"LOAD <{url}>",
        f"LOAD SILENT <{url}> INTO GRAPH <urn:x>",
        f"INSERT {{ GRAPH <urn:x> {{ ?s ?p ?o }} }} WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
    ]
    remote_datasets = [
        f"SELECT * FROM <{url}> WHERE {{ ?s ?p ?o }}",
        f"SELECT * FROM NAMED <{url}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
        f"BASE <http://127.0.0.1:{port}/> SELECT * FROM <data.ttl> WHERE {{ ?s ?p ?o }}",
    ]
    return queries, updates, remote_datasets


def test_service_and_load_are_refused_and_remote_graphs_are_empty_on_every_surface(
    listener: Listener, store_dir: Path
) -> None:
    """SERVICE and LOAD are refused; a FROM / FROM NAMED naming a graph elsewhere is an empty
    graph (the SPARQL protocol's reading), answered with no rows. Nothing reaches the
    listener, and the store is unchanged."""
    queries, updates, remote_datasets = _egress_queries(listener.port)
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
        before = fingerprint(brain)
        # The library and the MCP sparql_query tool.
        for query in queries:
            with pytest.raises(QueryNotAllowed):
                brain.query(query)
        for update in updates:
            with pytest.raises(QueryNotAllowed):
                brain.query(update, update=True)
        for query in remote_datasets:
            assert list(brain.query(query)) == [], query  # type: ignore[arg-type]

        async def mcp_calls(texts: list[str]) -> list[Any]:
            async with Client(build_server(brain)) as client:
                return [await client.call_tool("sparql_query", {"query": q}) for q in texts]

        for answer in asyncio.run(mcp_calls(queries)):
            assert answer.is_error and "is not allowed" in answer.content[0].text
        for answer in asyncio.run(mcp_calls(remote_datasets)):
            assert not answer.is_error and answer.structured_content["rows"] == []
    runner = CliRunner()
    store = ["--store", str(store_dir)]
    for query in queries:  # labbrain query
        result = runner.invoke(main, [*store, "query", query])
        assert result.exit_code != 0 and "error:" in result.output, query
    for query in remote_datasets:
        result = runner.invoke(main, [*store, "query", "--format", "csv", query])
        assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1, result.output
    for update in updates:  # labbrain query --update
        result = runner.invoke(main, [*store, "query", "--update", update])
        assert result.exit_code != 0 and "not allowed" in result.output, update
    for statement in queries + updates:  # labbrain console, script mode
        result = runner.invoke(main, [*store, "console", "--update"], input=statement + "\n\n")
        assert result.exit_code != 0, statement
        assert "not allowed" in result.output, result.output
    # The HTTP endpoint: queries by GET and POST, updates with the token.
    settings = settings_for(store_dir, update_token="tok", http_query_workers=1)
    with LabBrain(settings) as brain:
        with TestClient(build_app(brain, allow_update=True), base_url="http://127.0.0.1:7879") as c:
            for query in queries:
                assert c.get("/sparql", params={"query": query}).status_code == 403
                assert c.post("/sparql", data={"query": query}).status_code == 403
            accept = {"Accept": "application/sparql-results+json"}
            for query in remote_datasets:
                answer = c.get("/sparql", params={"query": query}, headers=accept)
                assert answer.status_code == 200 and answer.json()["results"]["bindings"] == []
                assert (
                    f"<http://127.0.0.1:{listener.port}/"
                    in answer.headers["x-labbrain-empty-graphs"]
                )
            auth = {"Authorization": "Bearer tok"}
            for update in updates:
                answer = c.post("/sparql", data={"update": update}, headers=auth)
                assert answer.status_code == 403, update
        assert fingerprint(brain) == before
    assert listener.connections == []


def test_keywords_hidden_from_the_policy_are_not_keywords_to_the_engine(listener: Listener) -> None:
    """Text the policy masks (strings, IRIs, comments) or escapes cannot smuggle SERVICE."""
    url = f"http://127.0.0.1:{listener.port}/"
    tricky = [
        f"SELECT * WHERE {{ # comment\nSERVICE <{url}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ BIND('x' AS ?a) SERVICE <{url}> {{ ?s ?p ?o }} }}",
        f'SELECT * WHERE {{ BIND("#" AS ?a) SERVICE <{url}> {{ ?s ?p ?o }} }}',
        f"SELECT * WHERE {{ FILTER(1<2) SERVICE<{url}>{{ ?s ?p ?o }} }}",
    ]
    with LabBrain(settings_for(":memory:")) as brain:
        for query in tricky:
            with pytest.raises(QueryNotAllowed):
                brain.query(query)
        escaped = f"SELECT * WHERE {{ SE\\u0052VICE <{url}> {{ ?s ?p ?o }} }}"
        with pytest.raises(LabbrainError):  # not a keyword once escaped: a syntax error
            brain.query(escaped)
    assert listener.connections == []


# ---------------------------------------------------------------------------------------
# 4. load_dataset outside the allowed directories: refused, nothing opened
# ---------------------------------------------------------------------------------------

_OPENED: list[str] = []
_WATCH: list[Path] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _WATCH and isinstance(args[0], str | bytes | os.PathLike):
        path = os.fsdecode(args[0])
        if any(path.startswith(str(root)) for root in _WATCH):
            _OPENED.append(path)


sys.addaudithook(_audit)


def test_load_dataset_outside_the_allowed_directories_opens_nothing(tmp_path: Path) -> None:
    allowed = tmp_path / "exports"
    allowed.mkdir()
    outside = tmp_path / "private"
    outside.mkdir()
    secret = outside / "secret.jsonld"
    secret.write_bytes(SAMPLE.read_bytes())
    fifo = outside / "pipe.jsonld"
    os.mkfifo(fifo)  # opening it to read would block: nobody writes
    os.mkfifo(allowed / "inside-pipe.jsonld")
    (allowed / "link-dir").symlink_to(outside, target_is_directory=True)
    (allowed / "to-fifo.jsonld").symlink_to(fifo)
    (allowed / "zero.jsonld").symlink_to("/dev/zero")
    paths = {
        "../private/secret.jsonld": "outside the directories",
        str(secret): "outside the directories",
        str(fifo): "outside the directories",
        "link-dir/secret.jsonld": "outside the directories",
        "link-dir/../link-dir/pipe.jsonld": "outside the directories",
        "to-fifo.jsonld": "outside the directories",
        "zero.jsonld": "outside the directories",
        "/dev/zero": "outside the directories",
        "inside-pipe.jsonld": "no such file",
        "secret.jsonld\u0000.png": "cannot contain NUL",
    }
    store = tmp_path / "store"

    async def calls(brain: LabBrain) -> list[Any]:
        async with Client(build_server(brain)) as client:
            answers = [await client.call_tool("load_dataset", {"path": p}) for p in paths]
            answers.append(await client.call_tool("list_tasks", {}))
            return answers

    _WATCH[:] = [outside, Path("/dev/zero"), allowed / "inside-pipe.jsonld"]
    _OPENED.clear()
    try:
        with LabBrain(settings_for(store, load_dirs=[allowed])) as brain:
            *refused, tasks = asyncio.run(calls(brain))
            assert brain.datasets() == []
    finally:
        _WATCH.clear()
    for (path, reason), answer in zip(paths.items(), refused, strict=True):
        assert answer.is_error, path
        assert reason in answer.content[0].text, (path, answer.content[0].text)
        assert str(allowed) not in answer.content[0].text
    assert tasks.structured_content["total"] == 0
    assert _OPENED == []


# ---------------------------------------------------------------------------------------
# 5. Image fetching: forbidden addresses, also behind a redirect, get no connection
# ---------------------------------------------------------------------------------------


class _Redirector(BaseHTTPRequestHandler):
    """An allowed image host that redirects ``/to?<url>`` to that URL."""

    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Redirector.requests.append(self.path)
        self.send_response(302)
        self.send_header("Location", self.path.partition("?")[2])
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def redirector(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``http://images.test:PORT``: an allowed host taken as public, served on loopback."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    real = images._check_address

    def check(host: str, port: int, allow_private: bool) -> str:
        return "127.0.0.1" if host == "images.test" else real(host, port, allow_private)

    monkeypatch.setattr(images, "_check_address", check)
    yield f"http://images.test:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join(timeout=5)


FORBIDDEN_HOSTS = {
    # spelling in the URL: what the refusal says
    "127.0.0.1": "non-public address (127.0.0.1)",
    "localhost": "non-public address",
    "[::1]": "non-public address (::1)",
    "[::ffff:127.0.0.1]": "non-public address (::ffff:127.0.0.1)",
    "2130706433": "non-public address (127.0.0.1)",
    "0177.0.0.1": "non-public address (127.0.0.1)",
    "0x7f.0.0.1": "non-public address (127.0.0.1)",
    "127.1": "non-public address (127.0.0.1)",
    "0.0.0.0": "non-public address (0.0.0.0)",
    "10.0.0.1": "non-public address (10.0.0.1)",
    "192.168.1.1": "non-public address (192.168.1.1)",
    "169.254.169.254": "non-public address (169.254.169.254)",
    "[fe80::1]": "non-public address (fe80::1)",
}


def test_images_refuse_forbidden_addresses_directly_and_after_a_redirect(
    redirector: str, listener: Listener
) -> None:
    hosts = [h.strip("[]") for h in FORBIDDEN_HOSTS] + ["images.test", "other.test"]
    settings = settings_for(
        ":memory:",
        image_fetch=True,
        image_hosts=hosts,
        image_allow_http=True,
        image_timeout_seconds=2.0,
    )
    _Redirector.requests.clear()
    for host, reason in FORBIDDEN_HOSTS.items():
        url = f"http://{host}:{listener.port}/fig.png"
        with pytest.raises(ImageRefused) as direct:
            fetch_image(url, settings)
        assert reason in str(direct.value), (host, str(direct.value))
        with pytest.raises(ImageRefused) as redirected:
            fetch_image(f"{redirector}/to?{url}", settings)
        assert reason in str(redirected.value), (host, str(redirected.value))
    unlisted = f"http://unlisted.example.org:{listener.port}/fig.png"
    with pytest.raises(ImageRefused, match="unlisted.example.org is not on LABBRAIN_IMAGE_HOSTS"):
        fetch_image(f"{redirector}/to?{unlisted}", settings)
    assert len(_Redirector.requests) == len(FORBIDDEN_HOSTS) + 1  # the allowed hop was made
    assert listener.connections == []


# ---------------------------------------------------------------------------------------
# 6. stdio purity: stray output during a call never reaches the JSON-RPC stream
# ---------------------------------------------------------------------------------------

_NOISY_SERVER = """
import logging, os, subprocess, sys, warnings
from labbrain import core
from labbrain.discourse import reader
from labbrain.cli import main

original = reader.DiscourseReader.get_schema

def noisy(self):
    print("print() from a tool")
    sys.stdout.write("sys.stdout.write from a tool\\n")
    sys.stdout.flush()
    os.write(1, b"os.write(1) from a tool\\n")
    subprocess.run(["echo", "a child process writing to fd 1"], check=True)
    warnings.warn("a library warning during a call")
    logging.getLogger("somelib").warning("a library log record during a call")
    return original(self)

reader.DiscourseReader.get_schema = noisy
load = core.LabBrain.load

def noisy_load(self, *args, **kwargs):
    print("print() while loading DATA_PATH")
    os.write(1, b"os.write(1) while loading DATA_PATH\\n")
    return load(self, *args, **kwargs)

core.LabBrain.load = noisy_load
main(sys.argv[1:])
"""


@pytest.mark.subprocess
def test_stdio_stdout_carries_only_json_rpc(tmp_path: Path) -> None:
    store = tmp_path / "store"  # empty: DATA_PATH is loaded first
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "get_schema", "arguments": {}},
        },
    ]
    child = subprocess.Popen(
        [sys.executable, "-c", _NOISY_SERVER, "--store", str(store), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "DATA_PATH": str(SAMPLE)},
    )
    assert child.stdin is not None and child.stdout is not None
    lines: list[bytes] = []
    try:
        for request in requests:
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
            if "id" not in request:
                continue
            while True:  # read up to the answer of this request
                line = child.stdout.readline()
                if not line:
                    child.kill()
                    pytest.fail("the server closed stdout: " + child.communicate()[1].decode())
                lines.append(line)
                if json.loads(line).get("id") == request["id"]:
                    break
        rest, errors = child.communicate(timeout=60)  # closes stdin: the server ends
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines += rest.splitlines(keepends=True)
    for line in lines:
        message = json.loads(line)  # every line of stdout is one JSON-RPC message
        assert message["jsonrpc"] == "2.0"
    answer = next(json.loads(line) for line in lines if json.loads(line).get("id") == 2)
    assert not answer["result"].get("isError") and answer["result"]["structuredContent"]
    stderr = errors.decode()
    for noise in (
        "print() from a tool",
        "sys.stdout.write from a tool",
        "os.write(1) from a tool",
        "a child process writing to fd 1",
        "a library warning during a call",
        "a library log record during a call",
        "print() while loading DATA_PATH",
        "os.write(1) while loading DATA_PATH",
    ):
        assert noise in stderr, noise  # it happened, on stderr


# ---------------------------------------------------------------------------------------
# 7. HTTP: the guard holds on every route
# ---------------------------------------------------------------------------------------


def test_the_guard_covers_every_route(store_dir: Path) -> None:
    """Wrong Host (421) and foreign Origin (403) on every route, not only /sparql and /mcp
    (tests/http/test_http.py); oversized query strings on the graph store too (413)."""
    with LabBrain(settings_for(store_dir)) as brain:
        brain.load(str(SAMPLE))
    settings = settings_for(store_dir, http_max_request_bytes=2_000, http_query_workers=1)
    routes = [
        ("/", {}),
        ("/static/console.js", {}),
        ("/console/config", {}),
        ("/sparql", {}),
        ("/rdf-graphs", {"graph": SAMPLE_GRAPH}),
    ]
    with (
        LabBrain(settings, read_only=True) as brain,
        TestClient(build_app(brain), base_url="http://127.0.0.1:7879") as client,
    ):
        for path, params in routes:
            own = client.get(path, params=params)
            assert own.status_code != 421 and own.status_code != 403, path
            rebound = client.get(path, params=params, headers={"Host": "evil.example.com"})
            assert rebound.status_code == 421, path
            assert rebound.json()["error"]["type"] == "HostNotAllowed"
            foreign = client.get(path, params=params, headers={"Origin": "http://evil.example.com"})
            assert foreign.status_code == 403, path
            assert foreign.json()["error"]["type"] == "OriginNotAllowed"
        huge = client.get("/rdf-graphs", params={"graph": SAMPLE_GRAPH + "x" * 5_000})
        assert huge.status_code == 413
