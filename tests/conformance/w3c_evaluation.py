"""Running one W3C query-evaluation test through a SPARQL endpoint over HTTP, and comparing
its answer with the expected one.

A test's data is written with one update request (INSERT DATA, after dropping the previous
test's graphs): the default graph's data into the server's default graph, or, on a server
whose default graph is the union of its graphs (labbrain), into a graph of its own that the
query request then names with ``default-graph-uri`` (the named graphs with
``named-graph-uri``). Graphs a query names with FROM / FROM NAMED that are files of the suite
are written under their IRIs first (nothing is fetched). The query goes as a direct POST
(``application/sparql-query``) with ``BASE <its file's IRI>`` in front, as the suite reads
it; the answer is asked for in the expected result's format (SPARQL XML, JSON, CSV or TSV
results; N-Triples for a graph).

Comparison: result sets as multisets (sets under mf:LaxCardinality) up to a renaming of blank
nodes, with the same variables; when the query has ORDER BY, also in the expected order of
the values of its ORDER BY variables (ties may come in any order); booleans as booleans;
graphs up to isomorphism (rdflib.compare).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from urllib.parse import urljoin

import httpx2
from pyoxigraph import (
    BlankNode,
    Literal,
    NamedNode,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    RdfFormat,
    parse,
    parse_query_results,
)
from rdflib import Graph
from rdflib.compare import isomorphic
from w3c_servers import Server
from w3c_suite import EvaluationTest, local_path, w3c_iri

#: The graph holding a test's default graph on a union-default-graph server.
DEFAULT_GRAPH = "urn:x-w3c-test:default-graph"

_RESULT_TYPES = {
    ".srx": QueryResultsFormat.XML,
    ".srj": QueryResultsFormat.JSON,
    ".tsv": QueryResultsFormat.TSV,
    ".csv": QueryResultsFormat.CSV,
}
_GRAPH_RESULTS = {".ttl", ".nt", ".rdf"}
_FROM = re.compile(r"\bFROM\s+(NAMED\s+)?<([^>]*)>", re.IGNORECASE)
_ORDER_BY = re.compile(r"\bORDER\s+BY\b(?P<keys>[^{}]*?)(?:\bLIMIT\b|\bOFFSET\b|\}|$)", re.I | re.S)
_ORDER_ITEM = re.compile(
    r"(?P<dir>ASC|DESC)\s*\(\s*[?$](?P<var>\w+)\s*\)|[?$](?P<plain>\w+)|(?P<other>\S)", re.I
)
XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC = {
    XSD + name
    for name in [
        "integer",
        "decimal",
        "double",
        "float",
        "long",
        "int",
        "short",
        "byte",
        "nonNegativeInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "positiveInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    ]
}

Row = tuple[tuple[str, Hashable], ...]


class Loaded:
    """What a server holds for the tests run on it so far: the graphs the last test wrote
    (dropped before the next one)."""

    def __init__(self) -> None:
        self.graphs: set[str] = set()
        self.default = False


def _quads(path: Path, suite: Path, prefix: str) -> list[tuple[str, str, str]]:
    """The triples of a data file as N-Triples terms, blank nodes renamed apart per file."""
    triples = []

    def term(value: object) -> str:
        if isinstance(value, BlankNode):
            return f"_:{prefix}{value.value}"
        return str(value)

    for triple in parse(
        path=path, format=RdfFormat.from_extension(path.suffix[1:]), base_iri=w3c_iri(suite, path)
    ):
        triples.append((term(triple.subject), term(triple.predicate), term(triple.object)))
    return triples


def dataset_update(
    test: EvaluationTest, suite: Path, server: Server, loaded: Loaded
) -> tuple[str, list[tuple[str, str]]]:
    """(the update writing ``test``'s data, the dataset parameters of its query)."""
    query_text = test.query.read_text(encoding="utf-8")
    default: list[tuple[str, str, str]] = []
    for number, path in enumerate(test.data):
        default.extend(_quads(path, suite, f"d{number}x"))
    named: dict[str, list[tuple[str, str, str]]] = {}
    for number, path in enumerate(test.graph_data):
        named[w3c_iri(suite, path)] = _quads(path, suite, f"g{number}x")
    own_dataset = False
    for match in _FROM.finditer(query_text):  # graphs the query names, read from the suite
        own_dataset = True
        iri = urljoin(w3c_iri(suite, test.query), match.group(2))
        path = local_path(suite, iri)
        if path is not None and iri not in named:
            named[iri] = _quads(path, suite, f"f{len(named)}x")
    drops = [f"DROP SILENT GRAPH <{iri}>" for iri in sorted(loaded.graphs)]
    if loaded.default:
        drops.append("DROP SILENT DEFAULT")
    params: list[tuple[str, str]] = []
    blocks = []
    if server.union_default_graph:
        if default:
            named[DEFAULT_GRAPH] = default
        if not own_dataset:
            params.append(("default-graph-uri", DEFAULT_GRAPH))
            params.extend(("named-graph-uri", iri) for iri in sorted(named) if iri != DEFAULT_GRAPH)
    elif default:
        blocks.append(_triples(default))
        loaded.default = True
    for iri, triples in sorted(named.items()):
        blocks.append(f"GRAPH <{iri}> {{\n{_triples(triples)}}}")
    loaded.graphs = set(named)
    operations = [*drops, "INSERT DATA {\n" + "\n".join(blocks) + "\n}"]
    return " ;\n".join(operations), params


def _triples(triples: Iterable[tuple[str, str, str]]) -> str:
    return "".join(f"{s} {p} {o} .\n" for s, p, o in triples)


# ---------------------------------------------------------------------------- comparing
def _bnode(value: Hashable) -> bool:
    return isinstance(value, BlankNode) or (isinstance(value, str) and value.startswith("_:"))


def _shape(row: Row) -> Row:
    return tuple((name, "_:" if _bnode(value) else value) for name, value in row)


def _extend(
    expected: Row, actual: Row, mapping: dict[Hashable, Hashable], back: dict[Hashable, Hashable]
) -> list[tuple[Hashable, Hashable]] | None:
    """The blank node pairs ``expected`` ~ ``actual`` adds to the mapping (None: they
    cannot match under it)."""
    if len(expected) != len(actual):
        return None
    added: list[tuple[Hashable, Hashable]] = []
    pending = dict(mapping), dict(back)
    for (name, mine), (other_name, theirs) in zip(expected, actual, strict=True):
        if name != other_name:
            return None
        if _bnode(mine) and _bnode(theirs):
            if pending[0].get(mine, theirs) != theirs or pending[1].get(theirs, mine) != mine:
                return None
            if mine not in pending[0]:
                pending[0][mine], pending[1][theirs] = theirs, mine
                added.append((mine, theirs))
        elif mine != theirs:
            return None
    return added


def same_rows(expected: Sequence[Row], actual: Sequence[Row]) -> bool:
    """Whether two multisets of rows are equal up to a renaming of blank nodes."""
    if Counter(map(_shape, expected)) != Counter(map(_shape, actual)):
        return False
    if not any(_bnode(value) for row in expected for _, value in row):
        return Counter(expected) == Counter(actual)
    used = [False] * len(actual)
    mapping: dict[Hashable, Hashable] = {}
    back: dict[Hashable, Hashable] = {}

    def search(index: int) -> bool:
        if index == len(expected):
            return True
        for other, row in enumerate(actual):
            if used[other] or _shape(row) != _shape(expected[index]):
                continue
            added = _extend(expected[index], row, mapping, back)
            if added is None:
                continue
            used[other] = True
            for mine, theirs in added:
                mapping[mine], back[theirs] = theirs, mine
            if search(index + 1):
                return True
            used[other] = False
            for mine, theirs in added:
                del mapping[mine], back[theirs]
        return False

    return search(0)


def by_value(term: Hashable) -> Hashable:
    """A number as (its datatype, its value): both servers keep numbers in canonical form
    ("1.0"^^xsd:decimal comes back as "1"), the expected results in the form the test's data
    wrote them. Anything else as it is."""
    if not isinstance(term, Literal) or term.datatype.value not in NUMERIC:
        return term
    try:
        if term.datatype.value in (XSD + "double", XSD + "float"):
            return (term.datatype.value, float(term.value))
        return (term.datatype.value, Decimal(term.value))
    except (ValueError, ArithmeticError):  # not a valid lexical form: compared as written
        return term


def _field_value(text: str) -> Hashable:
    """A CSV field: a number by its value (as by_value), anything else as written."""
    try:
        return ("number", Decimal(text))
    except ArithmeticError:
        return text


def _rows(solutions: QuerySolutions) -> tuple[list[str], list[Row]]:
    names = [variable.value for variable in solutions.variables]
    rows = []
    for solution in solutions:
        rows.append(
            tuple(
                sorted(
                    (name, by_value(solution[name])) for name in names if solution[name] is not None
                )
            )
        )
    return names, rows


def _csv_rows(text: str) -> tuple[list[str], list[Row]]:
    table = list(csv.reader(io.StringIO(text)))
    names = table[0] if table else []
    rows = [
        tuple(
            sorted(
                (name, _field_value(value))
                for name, value in zip(names, line, strict=False)
                if value
            )
        )
        for line in table[1:]
    ]
    return names, rows


def order_keys(query: str) -> list[tuple[str, bool]]:
    """The query's own ORDER BY keys, as (variable, descending), up to the first key that
    is not a variable (its order cannot be checked here, nor that of later keys); [] when
    the query has no ORDER BY outside braces (a sub-SELECT's orders nothing of the answer)."""
    for clause in _ORDER_BY.finditer(query):
        before = query[: clause.start()]
        if before.count("{") != before.count("}"):
            continue
        keys = []
        for item in _ORDER_ITEM.finditer(clause.group("keys")):
            if item.group("other"):
                break
            if item.group("plain"):
                keys.append((item.group("plain"), False))
            else:
                keys.append((item.group("var"), item.group("dir").upper() == "DESC"))
        return keys
    return []


def _category(value: Hashable) -> int:
    """SPARQL's order of kinds: unbound, blank node, IRI, literal."""
    if value is None:
        return 0
    if _bnode(value):
        return 1
    return 2 if isinstance(value, NamedNode) else 3


def _order(a: Hashable, b: Hashable) -> int | None:
    """-1, 0 or 1 as SPARQL's ORDER BY sorts ``a`` and ``b``; None where it leaves their
    order open (blank nodes, literals of different kinds, dates)."""
    kinds = _category(a), _category(b)
    if kinds[0] != kinds[1]:
        return -1 if kinds[0] < kinds[1] else 1
    if kinds[0] == 0:
        return 0
    if kinds[0] == 1:
        return None
    if kinds[0] == 2:
        left, right = a.value, b.value  # type: ignore[attr-defined]
    elif isinstance(a, tuple) and isinstance(b, tuple):  # numbers (by_value)
        left, right = a[1], b[1]
    elif (
        isinstance(a, Literal)
        and isinstance(b, Literal)
        and a.language is None
        and b.language is None
        and a.datatype.value == b.datatype.value == XSD + "string"
    ):
        left, right = a.value, b.value
    else:
        return None
    return (left > right) - (left < right)


def in_order(keys: list[tuple[str, bool]], rows: Sequence[Row]) -> bool:
    """Whether each row comes no earlier than the one before it by the ORDER BY keys, as
    far as SPARQL defines their order (ties and open comparisons may come either way)."""
    for previous, row in itertools.pairwise(rows):
        before, after = dict(previous), dict(row)
        for name, descending in keys:
            order = _order(before.get(name), after.get(name))
            if order == 0:
                continue  # a tie: the next key decides
            if order is not None and (order > 0) != descending:
                return False
            break
    return True


def _compare_results(
    test: EvaluationTest,
    query: str,
    expected: tuple[list[str], list[Row]],
    actual: tuple[list[str], list[Row]],
    check_names: bool,
) -> str | None:
    """Result sets compared: the solutions always; the variables only where ``check_names``
    (a CSV header; elsewhere a variable unbound in every solution need not be listed)."""
    (expected_names, expected_rows), (names, rows) = expected, actual
    if check_names and set(expected_names) != set(names):
        return f"variables {names}, expected {expected_names}"
    if test.lax:
        expected_rows, rows = sorted(set(expected_rows), key=repr), sorted(set(rows), key=repr)
    if not same_rows(expected_rows, rows):
        return f"{len(rows)} solutions differ from the {len(expected_rows)} expected: {_sample(expected_rows, rows)}"
    keys = order_keys(query)
    if keys and not in_order(keys, rows):
        return "solutions not in the order of the query's ORDER BY"
    return None


def _sample(expected: Sequence[Row], actual: Sequence[Row]) -> str:
    missing = Counter(map(_shape, expected)) - Counter(map(_shape, actual))
    extra = Counter(map(_shape, actual)) - Counter(map(_shape, expected))

    def short(rows: Counter[Row]) -> str:
        return "; ".join(" ".join(f"?{n}={v}" for n, v in row) for row in list(rows)[:2])

    return f"missing [{short(missing)}], unexpected [{short(extra)}]"


# ---------------------------------------------------------------------------- running
def run(
    client: httpx2.Client, server: Server, suite: Path, test: EvaluationTest, loaded: Loaded
) -> str | None:
    """Run ``test`` on ``server``: None when its answer is the expected one, else what
    differs (or the error the server answered)."""
    update, params = dataset_update(test, suite, server, loaded)
    written = client.post(
        server.update_url,
        content=update.encode(),
        headers={**server.headers, "Content-Type": "application/sparql-update"},
    )
    if written.status_code >= 300:
        return f"writing the data failed: {written.status_code} {written.text[:200]}"
    text = test.query.read_text(encoding="utf-8")
    query = f"BASE <{w3c_iri(suite, test.query)}>\n{text}"
    suffix = test.result.suffix
    graph_result = suffix in _GRAPH_RESULTS
    accept = "application/n-triples" if graph_result else _RESULT_TYPES[suffix].media_type
    answer = client.post(
        server.query_url,
        params=params,
        content=query.encode(),
        headers={**server.headers, "Content-Type": "application/sparql-query", "Accept": accept},
    )
    if answer.status_code != 200:
        return f"status {answer.status_code}: {answer.text[:200]!r}"
    media = answer.headers.get("content-type", "").split(";")[0].strip()
    if graph_result:
        expected = Graph().parse(test.result, publicID=w3c_iri(suite, test.result))
        try:
            actual = Graph().parse(data=answer.content, format="nt")
        except Exception as error:
            return f"the answer ({media}) does not parse as N-Triples: {error}"
        if not isomorphic(expected, actual):
            return f"graph of {len(actual)} triples not isomorphic to the {len(expected)} expected"
        return None
    if suffix == ".csv":
        return _compare_results(
            test,
            text,
            _csv_rows(test.result.read_text(encoding="utf-8")),
            _csv_rows(answer.text),
            True,
        )
    expected_results = parse_query_results(path=test.result, format=_RESULT_TYPES[suffix])
    try:
        actual_results = parse_query_results(answer.content, format=_RESULT_TYPES[suffix])
    except (SyntaxError, ValueError) as error:
        return f"the answer ({media}) does not parse: {error}"
    if isinstance(expected_results, QueryBoolean):
        if not isinstance(actual_results, QueryBoolean):
            return "a result set where a boolean was expected"
        if bool(expected_results) != bool(actual_results):
            return f"{bool(actual_results)}, expected {bool(expected_results)}"
        return None
    if isinstance(actual_results, QueryBoolean):
        return "a boolean where a result set was expected"
    return _compare_results(test, text, _rows(expected_results), _rows(actual_results), False)
