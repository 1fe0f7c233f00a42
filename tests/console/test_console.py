"""``labbrain console``: the SPARQL console, through a real terminal and as a script.

The terminal tests start ``labbrain --store S console`` under a pseudo-terminal (pexpect),
type into it as a user would and read what it prints. The script tests pipe statements to the
same command in-process (stdin that is not a terminal runs as a script), and the unit tests
check the input rule, the completion and the result shapes on their own.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from click.testing import CliRunner, Result
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from pyoxigraph import RdfFormat, parse

from conftest import SAMPLE, SAMPLE_GRAPH, settings_for
from helpers import count
from labbrain.cli import main
from labbrain.console.complete import SparqlCompleter, Term, vocabulary_terms
from labbrain.console.formats import compact, document, format_for, table_rows, text
from labbrain.console.prompt import (
    ConsoleMemoryHistory,
    balanced,
    fit_toolbar,
    history_for,
    runs_now,
    split_script,
)
from labbrain.console.repl import ARGUMENTS, COMMANDS, caret_lines, readable
from labbrain.console.worker import execute, run_query, statement_kind
from labbrain.core import LabBrain
from labbrain.errors import QueryNotAllowed, QuerySyntaxError, QueryTimeout

LABBRAIN = str(Path(sys.executable).with_name("labbrain"))
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\x1b\][^\x07]*\x07")
PAGE = "https://roamresearch.com/#/app/akamatsulab-sample/page/"

#: Core-class counts of the sample (data/README.md: 30 Claim, 32 Evidence, 12 Question).
CLASS_COUNTS = (
    "SELECT ?class (COUNT(?node) AS ?nodes)\n"
    "WHERE {\n"
    "  VALUES ?class { dg:Claim dg:Evidence dg:Question }\n"
    "\n"
    "  ?node a ?class\n"
    "}\n"
    "GROUP BY ?class ORDER BY ?class"
)
CLASS_ROWS = [["dg:Claim", "30"], ["dg:Evidence", "32"], ["dg:Question", "12"]]
#: The two evidence nodes of the sample that oppose claim Z5inf-I_o, with their creators.
OPPOSING = (
    "SELECT ?evidence ?creator WHERE {\n"
    f"  ?evidence dg:opposes <{PAGE}Z5inf-I_o> ;\n"
    "            dct:creator ?creator\n"
    "} ORDER BY ?evidence"
)
#: A four-way cross product of every triple: far more work than any time limit here allows.
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store directory with the sample loaded (shared; tests that write copy it)."""
    store = tmp_path_factory.mktemp("console") / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    return store


@pytest.fixture
def store(loaded_store: Path, tmp_path: Path) -> Path:
    """A private copy of the loaded store (its history file and writes stay in this test)."""
    copy = tmp_path / "store"
    shutil.copytree(loaded_store, copy)
    return copy


def plain(output: str) -> str:
    """``output`` without terminal control sequences and carriage returns."""
    return ANSI_RE.sub("", output).replace("\r", "")


def table_body(output: str) -> list[list[str]]:
    """The body rows of the box tables in ``output``, as lists of stripped cells."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in output.splitlines()
        if line.strip().startswith("│")
    ]


# ---------------------------------------------------------------------------- scripts
def script(
    store: Path | str, statements: str, *args: str, env: dict[str, str] | None = None
) -> Result:
    """Pipe ``statements`` to ``labbrain --store STORE console ARGS`` in-process."""
    return CliRunner().invoke(
        main,
        ["--store", str(store), "console", *args],
        input=statements,
        env={"COLUMNS": "200", **(env or {})},
    )


def test_script_runs_a_multi_line_query_as_a_table(loaded_store: Path) -> None:
    result = script(loaded_store, CLASS_COUNTS + "\n\n")
    assert result.exit_code == 0, result.output
    assert table_body(result.stdout) == CLASS_ROWS
    assert result.stderr.strip() == "3 row(s)"


def test_from_narrows_the_default_graph(loaded_store: Path) -> None:
    """Queries read the union of all graphs unless they name their dataset with FROM."""
    counting = "SELECT (COUNT(*) AS ?n) {from_clause} WHERE {{ ?s a owl:Class }}"
    statements = (
        ".format csv\n"
        + counting.format(from_clause="")
        + "\n\n"
        + counting.format(from_clause=f"FROM <{SAMPLE_GRAPH}>")
        + "\n\n"
    )
    result = script(loaded_store, statements)
    assert result.exit_code == 0, result.output
    numbers = [int(line) for line in result.stdout.splitlines() if line.isdigit()]
    with LabBrain(settings_for(loaded_store), read_only=True) as brain:
        union = count(brain, "GRAPH ?g { ?s a owl:Class }")
        narrowed = count(brain, f"GRAPH <{SAMPLE_GRAPH}> {{ ?s a owl:Class }}")
    assert union != narrowed
    assert numbers == [union, narrowed]


def test_formats_csv_tsv_json(loaded_store: Path) -> None:
    statements = f".format csv\n{OPPOSING}\n\n.format tsv\n{OPPOSING}\n\n.format json\n{OPPOSING}\n"
    result = script(loaded_store, statements)
    assert result.exit_code == 0, result.output
    out = result.stdout
    csv_part = out.split("format: csv\n")[1].split("format: tsv")[0]
    assert list(csv.reader(io.StringIO(csv_part))) == [
        ["evidence", "creator"],
        [f"{PAGE}A8AFJhR15", "Rebecca Lee"],
        [f"{PAGE}x1rSdylei", "Aidan Stern"],
    ]
    tsv_part = out.split("format: tsv\n")[1].split("format: json")[0]
    assert tsv_part.splitlines() == [
        "?evidence\t?creator",
        f'<{PAGE}A8AFJhR15>\t"Rebecca Lee"',
        f'<{PAGE}x1rSdylei>\t"Aidan Stern"',
    ]
    bindings = json.loads(out.split("format: json\n")[1])["results"]["bindings"]
    assert [b["creator"]["value"] for b in bindings] == ["Rebecca Lee", "Aidan Stern"]
    assert bindings[0]["evidence"] == {"type": "uri", "value": f"{PAGE}A8AFJhR15"}


def test_construct_as_turtle_and_select_falls_back_to_a_table(loaded_store: Path) -> None:
    construct = (
        "CONSTRUCT { ?e dg:opposes ?c } WHERE { ?e dg:opposes ?c . "
        f"FILTER(?c = <{PAGE}Z5inf-I_o>) }}"
    )
    result = script(loaded_store, f".format turtle\n{construct}\n\n{OPPOSING}\n")
    assert result.exit_code == 0, result.output
    turtle = result.stdout.split("format: turtle\n")[1].split("┏")[0]
    assert "@prefix dg: <https://discoursegraphs.com/schema/dg_core#> ." in turtle
    triples = {(t.subject.value, t.object.value) for t in parse(turtle.encode(), RdfFormat.TURTLE)}
    assert triples == {
        (f"{PAGE}A8AFJhR15", f"{PAGE}Z5inf-I_o"),
        (f"{PAGE}x1rSdylei", f"{PAGE}Z5inf-I_o"),
    }
    assert table_body(result.stdout) == [
        [f"{PAGE}A8AFJhR15", "Rebecca Lee"],
        [f"{PAGE}x1rSdylei", "Aidan Stern"],
    ]
    assert "note: turtle is for CONSTRUCT and DESCRIBE; showing a table" in result.stderr
    assert "2 triple(s)" in result.stderr


def test_ask_and_describe(loaded_store: Path) -> None:
    result = script(
        loaded_store, f"ASK {{ ?s a dg:Claim }}\n\n.format tsv\nDESCRIBE <{PAGE}Z5inf-I_o>\n"
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == ["true", "format: tsv", "?subject\t?predicate\t?object"]
    assert f'<{PAGE}Z5inf-I_o>\t<http://purl.org/dc/terms/creator>\t"Rebecca Lee"' in lines
    # its 11 triples of the export and its clean title (rdfs:label)
    assert f"<{PAGE}Z5inf-I_o>\t<http://www.w3.org/2000/01/rdf-schema#label>\t" in "\n".join(lines)
    assert "12 triple(s)" in result.stderr


def test_graphs_schema_prefixes_help(loaded_store: Path) -> None:
    result = script(loaded_store, ".graphs\n.schema\n.prefixes\n.help\n")
    assert result.exit_code == 0, result.output
    rows = table_body(result.stdout)
    assert ["urn:labbrain:dataset:akamatsulab-sample", "2,499"] in rows
    with LabBrain(settings_for(loaded_store), read_only=True) as brain:
        ontology = brain.store.count("urn:labbrain:ontology")
    assert ["urn:labbrain:ontology", f"{ontology:,}"] in rows
    assert ["Evidence", "EVD", "32", "akamatsulab-sample"] in rows
    assert ["Hypothesis", "HYP", "13", "akamatsulab-sample"] in rows
    assert ["Supports", "Evidence", "Claim", "37", "dg:supports", "akamatsulab-sample"] in rows
    assert ["Opposes", "Result", "Hypothesis", "2", "dg:opposes", "akamatsulab-sample"] in rows
    assert ["dg:", "https://discoursegraphs.com/schema/dg_core#"] in rows
    assert ["lb:", "https://w3id.org/labbrain/ns#"] in rows
    for command in COMMANDS:
        assert command in result.stdout
    assert "Enter on an empty line runs the query" in result.stdout


def test_export_by_suffix_and_current_format(loaded_store: Path, tmp_path: Path) -> None:
    out_csv, out_json, out_txt, other = (
        tmp_path / "r.csv",
        tmp_path / "r.json",
        tmp_path / "r.txt",
        tmp_path / "r.out",
    )
    statements = (
        f"{OPPOSING}\n\n.export {out_csv}\n.export {out_json}\n.export {out_txt}\n"
        f".format tsv\n.export {other}\n"
    )
    result = script(loaded_store, statements)
    assert result.exit_code == 0, result.output
    assert f"wrote 2 row(s) to {out_csv} (csv)" in result.stdout
    assert f"wrote 2 row(s) to {other} (tsv)" in result.stdout
    assert out_csv.read_text().splitlines() == [
        "evidence,creator",
        f"{PAGE}A8AFJhR15,Rebecca Lee",
        f"{PAGE}x1rSdylei,Aidan Stern",
    ]
    assert len(json.loads(out_json.read_text())["results"]["bindings"]) == 2
    assert table_body(out_txt.read_text()) == [
        [f"{PAGE}A8AFJhR15", "Rebecca Lee"],
        [f"{PAGE}x1rSdylei", "Aidan Stern"],
    ]
    assert other.read_text().splitlines()[0] == "?evidence\t?creator"


def test_export_errors(loaded_store: Path, tmp_path: Path) -> None:
    nothing = script(loaded_store, f".export {tmp_path / 'x.csv'}\n")
    assert nothing.exit_code == 2
    assert nothing.stderr.strip() == "error: invalid export: no result yet: run a query first"
    missing_dir = tmp_path / "no" / "such" / "dir.csv"
    unwritable = script(loaded_store, f"{OPPOSING}\n\n.export {missing_dir}\n")
    assert unwritable.exit_code == 2
    assert f"error: invalid export: cannot write {missing_dir}: No such file or directory" in (
        unwritable.stderr
    )
    assert "Traceback" not in unwritable.output
    turtle = script(loaded_store, f"{OPPOSING}\n\n.export {tmp_path / 'x.ttl'}\n")
    assert turtle.exit_code == 2
    assert "turtle is for CONSTRUCT and DESCRIBE results" in turtle.stderr
    bare = script(loaded_store, ".export\n")
    assert bare.stderr.strip() == "error: invalid export: give a file name: .export FILE"


def test_timing_and_row_cap(loaded_store: Path) -> None:
    result = script(
        loaded_store,
        ".timing\nSELECT ?s WHERE { ?s a dg:Claim }\n\n",
        env={"LABBRAIN_MAX_ROWS": "4"},
    )
    assert result.exit_code == 0, result.output
    assert "timing: on" in result.stdout
    assert re.search(r"^time: \d+\.\d ms$", result.stdout, re.MULTILINE)
    assert len(table_body(result.stdout)) == 4
    assert "4 row(s) (stopped at LABBRAIN_MAX_ROWS=4; add LIMIT or filters)" in result.stderr


def test_syntax_error_shows_the_line_and_a_caret(loaded_store: Path) -> None:
    result = script(loaded_store, "SELECT * WHERE {\n  ?s nope:thing ?o .\n}\n\n.graphs\n")
    assert result.exit_code == 2  # a script stops at its first error
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "error: SPARQL syntax error (line 2, column 16): undefined prefix (.prefixes lists the "
        "predeclared ones; PREFIX adds one)"
    )
    assert lines[1] == "   2 |   ?s nope:thing ?o ."
    assert lines[2].index("^") == lines[1].index("nope:thing") + len("nope:thing")
    assert "graph" not in result.stdout
    limit = script(loaded_store, "SELECT ?s WHERE {\n  ?s a dg:Claim .\n} LIMIT x\n")
    lines = limit.stderr.splitlines()
    assert lines[0].startswith(
        "error: SPARQL syntax error (line 3, column 9): expected one of HAVING, OFFSET, "
    )
    assert "['0'" not in lines[0] and "\\u{" not in lines[0]
    assert lines[1:] == ["   3 | } LIMIT x", "               ^"]
    assert lines[1][lines[2].index("^")] == "x"


def test_updates_need_the_update_flag(store: Path) -> None:
    insert = 'INSERT DATA { GRAPH <urn:test:notes> { <urn:test:a> rdfs:label "hello" } }'
    check = "SELECT ?label WHERE { <urn:test:a> rdfs:label ?label }"
    refused = script(store, insert + "\n")
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        "error: query refused: this is a SPARQL update and the console is read-only; restart "
        "it with `labbrain console --update` to change the store"
    )
    allowed = script(store, f"{insert}\n\n{check}\n\n.graphs\n", "--update")
    assert allowed.exit_code == 0, allowed.output
    assert "update done" in allowed.stdout
    rows = table_body(allowed.stdout)
    assert ["hello"] in rows
    assert ["urn:test:notes", "1"] in rows
    again = script(store, check + "\n")  # committed: a later read-only console sees it
    assert table_body(again.stdout) == [["hello"]]


def test_refused_statements(store: Path) -> None:
    service = script(store, "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }\n")
    assert service.exit_code == 2
    assert "SERVICE is not allowed" in service.stderr
    load = script(store, "LOAD <http://127.0.0.1:9/data.ttl>\n", "--update")
    assert load.exit_code == 2
    assert "LOAD is not allowed" in load.stderr
    bad_update = script(store, "INSERT DATA { <urn:a> <urn:b> }\n", "--update")
    assert bad_update.exit_code == 2
    assert bad_update.stderr.startswith("error: SPARQL syntax error (line 1, column")


def test_unknown_commands_and_arguments(loaded_store: Path) -> None:
    for statement, message in [
        (".nope", "error: invalid command: no command .nope; .help lists them"),
        (".format xml", "error: invalid format: xml; one of table, json, csv, tsv, turtle"),
        (".timing maybe", "error: invalid timing: maybe; .timing, .timing on or .timing off"),
    ]:
        result = script(loaded_store, statement + "\n")
        assert result.exit_code == 2
        assert result.stderr.strip() == message


def test_quit_stops_the_script(loaded_store: Path) -> None:
    result = script(loaded_store, ".format\n.quit\n.format csv\n")
    assert result.exit_code == 0
    assert result.stdout == "format: table\n"


def test_in_memory_store(tmp_path: Path) -> None:
    result = script(
        ":memory:",
        'INSERT DATA { <urn:test:a> rdfs:label "x" }\n\nSELECT ?l WHERE { ?s rdfs:label ?l '
        "FILTER(?s = <urn:test:a>) }\n",
        "--update",
    )
    assert result.exit_code == 0, result.output
    assert table_body(result.stdout) == [["x"]]


def test_timeout_stops_a_runaway_query_in_a_script(loaded_store: Path) -> None:
    result = script(loaded_store, f"{RUNAWAY}\n", "--timeout", "0.5")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: query stopped after 0.5 s; narrow it (LIMIT, fewer OPTIONALs, a GRAPH)"
    )


# ---------------------------------------------------------------------------- units
def test_the_input_rule() -> None:
    assert balanced("SELECT * { ?s ?p '}' . <urn:x(> ?o # }\n}")
    assert not balanced("SELECT * WHERE { ?s ?p ?o")
    assert not balanced("SELECT (COUNT(*")
    query = "SELECT * WHERE {\n  ?s ?p ?o\n}\n"
    assert runs_now(Document(query))  # an empty line after a complete query
    assert not runs_now(Document(query.rstrip("\n")))  # Enter at the end of "}"
    assert not runs_now(Document("SELECT * WHERE {\n"))  # blank line inside the braces
    assert not runs_now(Document(query, cursor_position=3))  # editing an earlier line
    assert runs_now(Document(".format csv"))
    assert runs_now(Document(""))


def test_split_script() -> None:
    text = ".format csv\n\nSELECT * {\n\n?s ?p ?o }\n\n\nASK {}\n.graphs\n"
    assert list(split_script(text)) == [
        ".format csv",
        "SELECT * {\n\n?s ?p ?o }",
        "ASK {}\n.graphs",
    ]
    assert list(split_script("ASK {}")) == ["ASK {}"]


def test_history_places(tmp_path: Path) -> None:
    memory, none = history_for(":memory:")
    assert isinstance(memory, ConsoleMemoryHistory) and none is None
    store = tmp_path / "store"
    store.mkdir()
    history, path = history_for(str(store))
    assert path == store / "console_history"
    history.append_string("ASK {}\n")
    history.append_string(".quit")  # leaving is not worth recalling
    assert "+ASK {}" in path.read_text() and ".quit" not in path.read_text()
    _, remote = history_for("http://127.0.0.1:7878/query", remote=True)
    assert remote is not None
    assert remote.parent == tmp_path / "xdg-data" / "labbrain" / "console"
    gone, no_file = history_for(str(tmp_path / "no" / "such" / "store"))
    assert isinstance(gone, ConsoleMemoryHistory) and no_file is None


def test_caret_and_readable_messages() -> None:
    assert caret_lines("SELECT\n\tx y\n", 2, 3) == ["   2 | \tx y", "       \t ^"]
    assert caret_lines("ASK {", 1, 6) == ["   1 | ASK {", "            ^"]
    assert caret_lines("ASK {}", None, None) == []
    assert caret_lines("ASK {}", 3, 1) == []
    long = "expected one of ABS, AVG, ['0' ..= '9' | '\\u{00B7}'], [_], DAY, IRI, MAX, MD5, MIN, NOT, NOW"
    assert readable(long) == "expected one of ABS, AVG, DAY, IRI, MAX, MD5, MIN, NOT, …"
    assert readable("expected OPTIONAL") == "expected OPTIONAL"


def test_completion(sample_brain: LabBrain) -> None:
    terms = vocabulary_terms(sample_brain.store)
    names = {t.text: t.meta for t in terms}
    assert names["dg:Claim"] == "class"
    assert names["lb:linksTo"] == "property"
    assert names["dct:creator"] == "property"
    assert names[f"<{PAGE}_CLM-node>"] == "class"
    assert names[f"<{PAGE}_SUPP-rel>"] == "property"
    completer = SparqlCompleter(COMMANDS, ARGUMENTS, terms)

    def offered(typed: str) -> list[str]:
        document = Document(typed)
        return [c.text for c in completer.get_completions(document, CompleteEvent())]

    assert offered("SELECT * WHERE { ?s a dg:Cl") == ["dg:Claim"]
    assert offered("SELECT * WHERE { ?s lb:linksT") == ["lb:linksTo"]
    assert offered("SELECT * WHERE { ?s a d")[:3] == ["dct:", "dg:", "dgb:"]
    assert "DISTINCT" in offered("SELECT dis")
    assert offered("SELECT ?node ?name WHERE { ?node dct:title ?n") == ["?name", "?node"]
    assert f"<{PAGE}_SUPP-rel>" in offered("SELECT * { ?s <https://roamresearch.com/#/app/aka")
    assert offered(".fo") == [".format"]
    assert offered(".format c") == ["csv"]
    assert offered(".timing o") == ["on", "off"]
    assert completer.terms and isinstance(completer.terms[0], Term)


def test_results_shapes(sample_brain: LabBrain) -> None:
    outcome = execute(sample_brain.store, OPPOSING, cap=10)
    assert (outcome.kind, outcome.rows, outcome.truncated) == ("select", 2, False)
    assert table_rows(outcome) == (
        ["evidence", "creator"],
        [[f"{PAGE}A8AFJhR15", "Rebecca Lee"], [f"{PAGE}x1rSdylei", "Aidan Stern"]],
    )
    assert text(outcome, "csv") == document(outcome, "csv")
    capped = execute(sample_brain.store, "SELECT ?s WHERE { ?s a dg:Claim }", cap=3)
    assert (capped.rows, capped.truncated) == (3, True)
    graph = execute(sample_brain.store, f"DESCRIBE <{PAGE}Z5inf-I_o>", cap=1000)
    assert graph.kind == "graph" and graph.rows == len(table_rows(graph)[1]) > 5
    rows = list(csv.reader(io.StringIO(text(graph, "csv").decode())))
    assert rows[0] == ["subject", "predicate", "object"]
    assert [f"{PAGE}Z5inf-I_o", "http://purl.org/dc/terms/creator", "Rebecca Lee"] in rows
    jsonld = json.loads(text(graph, "json"))
    assert jsonld[0]["@id"].startswith(PAGE)
    assert compact("https://discoursegraphs.com/schema/dg_core#Claim") == "dg:Claim"
    assert compact(f"{PAGE}x") == f"{PAGE}x"
    assert (
        compact("http://www.w3.org/2000/01/rdf-schema#") == "http://www.w3.org/2000/01/rdf-schema#"
    )
    assert format_for(Path("a.TSV"), "table") == "tsv"
    assert format_for(Path("a.dat"), "json") == "json"


def test_statement_kind() -> None:
    assert statement_kind("SELECT * WHERE { ?s ?p ?o }") == "query"
    assert statement_kind("INSERT DATA { <urn:a> <urn:b> <urn:c> }") == "update"
    with pytest.raises(QuerySyntaxError) as caught:
        statement_kind("SELECT * WHERE {\n  ?s nope:x ?o }")
    assert (caught.value.line, caught.value.column) == (2, 12)
    with pytest.raises(QueryNotAllowed):
        statement_kind("SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }")


@pytest.mark.subprocess
def test_worker_child_process(loaded_store: Path) -> None:
    with LabBrain(settings_for(loaded_store), read_only=True) as brain:
        outcome = run_query(brain.store, CLASS_COUNTS, cap=100, seconds=60)
        assert table_rows(outcome)[1] == CLASS_ROWS
        with pytest.raises(QuerySyntaxError) as caught:
            run_query(brain.store, "SELECT * WHERE {\n  ?s nope:x ?o }", cap=10, seconds=60)
        assert (caught.value.line, caught.value.column) == (2, 12)
        with pytest.raises(QueryTimeout):
            run_query(brain.store, RUNAWAY, cap=10, seconds=0.5)


# ---------------------------------------------------------------------------- terminal
class Terminal:
    """``labbrain --store STORE console ARGS`` under a pseudo-terminal ``rows`` x 160."""

    def __init__(self, store: Path | str, *args: str, rows: int = 40) -> None:
        self.child = pexpect.spawn(
            LABBRAIN,
            ["--store", str(store), "console", *args],
            dimensions=(rows, 160),
            encoding="utf-8",
            timeout=60,
            env={
                "TERM": "xterm",
                "PATH": "/usr/bin:/bin",
                "HOME": str(Path(store).parent),
                # pexpect does not answer cursor-position requests; without this the prompt
                # waits for one and warns about it.
                "PROMPT_TOOLKIT_NO_CPR": "1",
            },
        )
        self.expect_prompt()

    def expect_prompt(self) -> str:
        """Wait for a new prompt; return what came before it, plain.

        The prompt text itself is redrawn at every key, so a new prompt is recognised by
        what the line editor sends once when it starts reading a statement: it switches on
        bracketed paste (``ESC [ ? 2004 h``).
        """
        self.child.expect_exact("\x1b[?2004h")
        before = plain(self.child.before)
        self.child.expect_exact("sparql>")
        return before

    def query(self, sparql: str) -> str:
        """Type ``sparql`` line by line, then an empty line; return the output, plain."""
        self.type_lines(sparql)
        self.child.send("\r")
        return self.expect_prompt()

    def type_lines(self, sparql: str) -> None:
        """Type each line of ``sparql`` followed by Enter (the query is not run yet)."""
        for line in sparql.splitlines():
            self.child.send(line + "\r")

    def command(self, line: str) -> str:
        """Type a dot command; return its output, plain."""
        self.child.send(line + "\r")
        return self.expect_prompt()

    def children(self) -> list[int]:
        """Process ids of the console's query workers: its child processes, where
        multiprocessing's forkserver (the workers' parent) and resource tracker, which live as
        long as the console, stand for their own children."""

        def kids(pid: int) -> list[int]:
            try:
                return [
                    int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                ]
            except FileNotFoundError:
                return []

        def helper(pid: int) -> bool:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except FileNotFoundError:
                return False
            return b"multiprocessing.forkserver" in cmdline or b"resource_tracker" in cmdline

        def alive(pid: int) -> bool:  # a killed worker may stay a zombie until reaped
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, IndexError):
                return False
            return state != "Z"

        workers: list[int] = []
        for pid in kids(self.child.pid):
            workers.extend(kids(pid) if helper(pid) else [pid])
        return [pid for pid in workers if alive(pid)]

    def no_children_left(self, seconds: float = 30.0) -> bool:
        """True once no query worker is left (the forkserver reaps a killed worker on its
        own schedule: wait for it, up to ``seconds``)."""
        for _ in range(int(seconds / 0.05)):
            if not self.children():
                return True
            time.sleep(0.05)
        return not self.children()

    def quit(self) -> None:
        """Leave with .quit and wait for the exit."""
        self.child.send(".quit\r")
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus == 0

    def close(self) -> None:
        """Stop the console if it still runs."""
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def terminal(store: Path) -> Iterator[Terminal]:
    opened = Terminal(store, "--timeout", "60")
    yield opened
    opened.close()


def _after_echo(output: str) -> str:
    """The output of a query: what follows the last continuation prompt."""
    return output.rsplit("...>", 1)[-1]


@pytest.mark.subprocess
def test_terminal_multi_line_query_and_csv(terminal: Terminal) -> None:
    output = _after_echo(terminal.query(CLASS_COUNTS))
    assert table_body(output) == CLASS_ROWS
    assert "3 row(s)" in output
    assert "format: csv" in terminal.command(".format csv")
    output = _after_echo(terminal.query(OPPOSING))
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines == [
        "evidence,creator",
        f"{PAGE}A8AFJhR15,Rebecca Lee",
        f"{PAGE}x1rSdylei,Aidan Stern",
        "2 row(s)",
    ]
    terminal.quit()


@pytest.mark.subprocess
def test_terminal_syntax_error_caret(terminal: Terminal) -> None:
    output = _after_echo(terminal.query("SELECT ?s\nWHERE { ?s a lbx:Claim }"))
    lines = output.splitlines()
    error = next(i for i, line in enumerate(lines) if line.startswith("error: "))
    assert lines[error].startswith("error: SPARQL syntax error (line 2, column 23)")
    assert lines[error + 1] == "   2 | WHERE { ?s a lbx:Claim }"
    assert lines[error + 2].index("^") == lines[error + 1].index("lbx:Claim") + len("lbx:Claim")
    output = _after_echo(terminal.query("ASK { ?s a dg:Claim }"))
    assert "true" in output.split()
    terminal.quit()


@pytest.mark.subprocess
def test_terminal_ctrl_c_cancels_a_running_query(terminal: Terminal) -> None:
    terminal.type_lines(RUNAWAY)
    terminal.child.send("\r")
    for _ in range(2400):  # wait until the worker runs the query (a guard, not a timing)
        if terminal.children():
            break
        terminal.child.expect(pexpect.TIMEOUT, timeout=0.05)
    assert terminal.children(), "the query never started"
    terminal.child.sendintr()
    output = terminal.expect_prompt()
    assert "cancelled" in output
    assert "Traceback" not in output
    output = _after_echo(terminal.query(CLASS_COUNTS))
    assert table_body(output) == CLASS_ROWS
    assert terminal.no_children_left(), terminal.children()
    terminal.quit()


@pytest.mark.subprocess
def test_terminal_timeout_stops_a_runaway_query(store: Path) -> None:
    console = Terminal(store, "--timeout", "1")
    try:
        output = _after_echo(console.query(RUNAWAY))
        assert (
            "error: query stopped after 1 s; narrow it (LIMIT, fewer OPTIONALs, a GRAPH)" in output
        )
        assert console.no_children_left(), console.children()
        assert table_body(_after_echo(console.query(CLASS_COUNTS))) == CLASS_ROWS
        console.quit()
    finally:
        console.close()


@pytest.mark.subprocess
def test_terminal_history_persists_across_sessions(store: Path) -> None:
    first = Terminal(store)
    try:
        first.query(OPPOSING)
        first.quit()
    finally:
        first.close()
    assert (store / "console_history").is_file()
    second = Terminal(store)
    try:
        second.child.send("\x1b[A")  # arrow up recalls the last query, cursor at its end
        second.child.send("\r")  # the recalled query ends with its empty line: Enter runs it
        output = _after_echo(second.expect_prompt())
        assert table_body(output) == [
            [f"{PAGE}A8AFJhR15", "Rebecca Lee"],
            [f"{PAGE}x1rSdylei", "Aidan Stern"],
        ]
        second.quit()
    finally:
        second.close()


@pytest.mark.subprocess
def test_terminal_tab_completes_a_class(terminal: Terminal) -> None:
    terminal.child.send("SELECT (COUNT(?s) AS ?n) WHERE { ?s a dg:Cl")
    terminal.child.send("\t")
    terminal.child.expect_exact("aim")  # the completion is drawn: dg:Cl -> dg:Claim
    terminal.child.send(" }\r\r")
    output = _after_echo(terminal.expect_prompt())
    assert table_body(output) == [["30"]]
    terminal.quit()


@pytest.mark.subprocess
def test_terminal_updates_need_the_flag(store: Path) -> None:
    insert = 'INSERT DATA { GRAPH <urn:test:notes> { <urn:test:a> rdfs:label "hello" } }'
    check = "SELECT ?label WHERE { <urn:test:a> rdfs:label ?label }"
    read_only = Terminal(store)
    try:
        output = _after_echo(read_only.query(insert))
        assert "restart it with `labbrain console --update` to change the store" in " ".join(
            output.split()
        )
        assert table_body(_after_echo(read_only.query(check))) == []
        read_only.quit()
    finally:
        read_only.close()
    writable = Terminal(store, "--update")
    try:
        assert "update done" in writable.query(insert)
        assert table_body(_after_echo(writable.query(check))) == [["hello"]]
        writable.quit()
    finally:
        writable.close()


@pytest.mark.subprocess
def test_terminal_pages_long_results(store: Path) -> None:
    terminal = Terminal(store, rows=20)
    terminal.type_lines("SELECT ?s WHERE { ?s a dg:Evidence } ORDER BY ?s")
    terminal.child.send("\r")
    terminal.child.expect_exact("-- rows 1-")
    first = plain(terminal.child.before)
    terminal.child.expect_exact("of 32: Enter next page, a all, q stop --")
    shown = int(plain(terminal.child.before).strip())
    assert len(table_body(_after_echo(first))) == shown < 32
    terminal.child.send("q")
    output = terminal.expect_prompt()
    assert f"(stopped after {shown} of 32 rows)" in output
    terminal.quit()


def test_missing_and_locked_stores(store: Path, tmp_path: Path) -> None:
    missing = script(tmp_path / "nowhere", "ASK {}\n")
    assert missing.exit_code == 3
    assert missing.stderr.strip() == (
        f"error: no labbrain store at {tmp_path / 'nowhere'}; load data first with `labbrain load`"
    )
    with LabBrain(settings_for(store)):  # another writer holds the store
        locked = script(store, "ASK {}\n", "--update")
        assert locked.exit_code == 3
        assert locked.stderr.startswith(f"error: store {store} is locked by another labbrain")
        reading = script(store, "ASK { ?s a dg:Claim }\n")  # read-only consoles still work
        assert reading.exit_code == 0, reading.output
        assert reading.stdout.strip() == "true"


@pytest.mark.subprocess
def test_remote_store(oxigraph: Any) -> None:
    """On a remote store (a real Oxigraph server) queries, updates and the time limit work
    the same; the server runs the query."""
    remote = ["--endpoint", oxigraph.query, "--gsp-endpoint", oxigraph.store]
    loaded = CliRunner().invoke(main, [*remote, "load", str(SAMPLE)])
    assert loaded.exit_code == 0, loaded.output

    def remote_script(statements: str, *args: str) -> Result:
        return CliRunner().invoke(
            main, [*remote, "console", *args], input=statements, env={"COLUMNS": "200"}
        )

    result = remote_script(CLASS_COUNTS + "\n\n.graphs\n")
    assert result.exit_code == 0, result.output
    rows = table_body(result.stdout)
    assert rows[:3] == CLASS_ROWS
    assert ["urn:labbrain:dataset:akamatsulab-sample", "2,499"] in rows
    insert = 'INSERT DATA { GRAPH <urn:test:notes> { <urn:test:a> rdfs:label "hello" } }'
    refused = remote_script(insert + "\n")
    assert refused.exit_code == 2 and "labbrain console --update" in refused.stderr
    check = "SELECT ?label WHERE { <urn:test:a> rdfs:label ?label }"
    allowed = remote_script(f"{insert}\n\n{check}\n", "--update")
    assert allowed.exit_code == 0, allowed.output
    assert table_body(allowed.stdout) == [["hello"]]
    stopped = remote_script(f"{RUNAWAY}\n", "--timeout", "0.5")
    assert stopped.exit_code == 2
    assert stopped.stderr.strip() == (
        "error: query stopped after 0.5 s; narrow it (LIMIT, fewer OPTIONALs, a GRAPH)"
    )


# ---------------------------------------------------------------------------- the bottom bar
class Screen:
    """Just enough of a VT100 terminal for what prompt_toolkit sends: text, CR / LF, cursor
    moves (CSI A B C D H), erasing (CSI J K), autowrap on and off (CSI ? 7 h / l). It answers
    the cursor-position request (CSI 6 n) with where its cursor is, as a terminal does."""

    _TOKEN = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z@])|\x1b\][^\x07]*\x07|\x1b[^\[\]]|[^\x1b]")

    def __init__(self, rows: int, columns: int) -> None:
        self.rows, self.columns = rows, columns
        self.cells = [[" "] * columns for _ in range(rows)]
        self.row = self.column = 0
        self.wrap = True
        self._pending = ""

    def line(self, row: int) -> str:
        """The text of one row (``-1``: the bottom one), trailing blanks removed."""
        return "".join(self.cells[row]).rstrip()

    def _down(self) -> None:
        if self.row == self.rows - 1:
            self.cells = [*self.cells[1:], [" "] * self.columns]
        else:
            self.row += 1

    def _put(self, char: str) -> None:
        if self.column >= self.columns:
            if self.wrap:
                self.column = 0
                self._down()
            else:
                self.column = self.columns - 1
        self.cells[self.row][self.column] = char
        self.column += 1

    def _csi(self, params: str, command: str) -> str:
        numbers = [int(n) if n else 0 for n in params.lstrip("?").split(";")] if params else []
        first = numbers[0] if numbers else 0
        step = max(first, 1)
        if command == "A":
            self.row = max(0, self.row - step)
        elif command == "B":
            self.row = min(self.rows - 1, self.row + step)
        elif command == "C":
            self.column = min(self.columns - 1, self.column + step)
        elif command == "D":
            self.column = max(0, self.column - step)
        elif command in "Hf":
            row = numbers[0] if numbers else 1
            column = numbers[1] if len(numbers) > 1 else 1
            self.row, self.column = max(row, 1) - 1, max(column, 1) - 1
        elif command == "J":
            start = self.row + 1 if first == 0 else 0
            self.cells[self.row][self.column :] = [" "] * (self.columns - self.column)
            for row in range(start, self.rows):
                self.cells[row] = [" "] * self.columns
        elif command == "K":
            self.cells[self.row][self.column :] = [" "] * (self.columns - self.column)
        elif command in "hl" and params == "?7":
            self.wrap = command == "h"
        elif command == "n" and first == 6:
            return f"\x1b[{self.row + 1};{self.column + 1}R"
        return ""

    def feed(self, data: str) -> str:
        """Take what the program wrote; return what the terminal answers."""
        text, self._pending = self._pending + data, ""
        replies = []
        position = 0
        while position < len(text):
            match = self._TOKEN.match(text, position)
            if match is None:  # an escape sequence cut by the read: wait for the rest
                self._pending = text[position:]
                break
            position = match.end()
            token = match.group(0)
            if match.group(2) is not None:
                replies.append(self._csi(match.group(1), match.group(2)))
            elif token == "\r":
                self.column = 0
            elif token == "\n":
                self._down()
            elif token == "\b":
                self.column = max(0, self.column - 1)
            elif token.isprintable():
                self._put(token)
        return "".join(replies)


def run_in_terminal(
    args: list[str], rows: int, columns: int, until: Callable[[Screen], bool]
) -> Screen:
    """Start ``labbrain ARGS`` on a pseudo-terminal of ``rows`` x ``columns`` drawn on a
    Screen, until ``until(screen)`` holds and the program has been quiet for half a second;
    then leave with .quit."""
    screen = Screen(rows, columns)
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    process = subprocess.Popen(
        [LABBRAIN, *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
        env={"TERM": "xterm", "PATH": "/usr/bin:/bin", "HOME": str(Path(args[1]).parent)},
    )
    os.close(terminal)
    try:
        deadline = time.monotonic() + 60
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.1)
            if ready:
                answer = screen.feed(os.read(controller, 65536).decode("utf-8", "replace"))
                if answer:
                    os.write(controller, answer.encode())
                quiet_since = time.monotonic()
            elif until(screen) and time.monotonic() - quiet_since > 0.5:
                break
        else:
            raise AssertionError(
                "the console did not draw:\n" + "\n".join(screen.line(r) for r in range(rows))
            )
        os.write(controller, b".quit\r")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        os.close(controller)
    return screen


@pytest.mark.subprocess
@pytest.mark.parametrize("extra", [[], ["--update", "--timeout", "300"]])
def test_bottom_bar_fits_an_80_column_terminal(store: Path, extra: list[str]) -> None:
    screen = run_in_terminal(
        ["--store", str(store), "console", *extra],
        rows=24,
        columns=80,
        until=lambda s: "|" in s.line(-1),
    )
    bar = screen.line(-1)
    assert len(bar) <= 80
    # It starts where its sentence starts (the rule: Enter on an empty line runs the query).
    assert bar.split()[0] == "Enter", bar
    # Whatever is left out goes from the end, a whole item at a time.
    shown = [item.strip() for item in bar.split("|")]
    assert all(shown), bar
    assert shown[0].startswith("Enter")
    assert ("updates" in bar) == bool(extra)


def test_bottom_bar_is_cut_from_the_end_at_a_word() -> None:
    parts = ["Enter on empty line or Alt-Enter runs", "read-only", "table", "limit 60s", ".help"]
    assert fit_toolbar(parts, 200) == " " + " | ".join(parts)
    assert fit_toolbar(parts, 60) == " Enter on empty line or Alt-Enter runs | read-only | table"
    assert fit_toolbar(parts, 49) == " Enter on empty line or Alt-Enter runs"
    assert fit_toolbar(parts, 20) == " Enter on empty…"
    for width in range(1, 90):
        fitted = fit_toolbar(parts, width)
        assert len(fitted) <= width
        assert " Enter on empty line".startswith(fitted.rstrip("…")) or fitted.startswith(" Enter")
