"""SPARQL answers as HTTP bodies: content negotiation and capped serialisation.

Every body is written by pyoxigraph's own serialisers. SELECT results are cut at a row cap:
the rows kept are written as SPARQL JSON, read back with ``parse_query_results`` and then
serialised in the negotiated format, so the cap never changes how a row is written.
CONSTRUCT / DESCRIBE results are cut at the same number of triples.

A query answer is also offered as an HTML page (http.page) to clients that list ``text/html``
or ``application/xhtml+xml`` above every standard format they accept, as browsers do (their
``application/xml;q=0.9`` and ``*/*;q=0.8`` would otherwise pick SPARQL XML). Wildcards never
select the page, so a client that sends no Accept header, or ``*/*``, gets the standard
default, and one that names a format gets exactly that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from json.encoder import encode_basestring
from typing import Any, Literal

from pyoxigraph import (
    BlankNode,
    NamedNode,
    QueryBoolean,
    QueryResultsFormat,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
    parse_query_results,
    serialize,
)
from pyoxigraph import Literal as RdfLiteral

from labbrain.http.errors import HttpError
from labbrain.http.page import render
from labbrain.rdf.namespaces import PREFIXES, XSD
from labbrain.store.base import QueryResult

Kind = Literal["select", "ask", "graph"]


@dataclass(frozen=True)
class Format:
    """One answer format: its short name, the media type it is sent as, the media types a
    client may ask for it by, and the pyoxigraph format that writes it."""

    name: str
    media_type: str
    aliases: tuple[str, ...]
    writer: QueryResultsFormat | RdfFormat | None  # None: the HTML page

    @property
    def content_type(self) -> str:
        """The Content-Type header value (text types with their charset)."""
        if self.media_type.startswith("text/"):
            return f"{self.media_type}; charset=utf-8"
        return self.media_type


#: Formats of SELECT and ASK results, the default first.
RESULT_FORMATS: tuple[Format, ...] = (
    Format(
        "json",
        "application/sparql-results+json",
        ("application/sparql-results+json", "application/json"),
        QueryResultsFormat.JSON,
    ),
    Format(
        "xml",
        "application/sparql-results+xml",
        ("application/sparql-results+xml", "application/xml", "text/xml"),
        QueryResultsFormat.XML,
    ),
    Format("csv", "text/csv", ("text/csv",), QueryResultsFormat.CSV),
    Format(
        "tsv", "text/tab-separated-values", ("text/tab-separated-values",), QueryResultsFormat.TSV
    ),
)

#: Formats of RDF graphs (CONSTRUCT, DESCRIBE, graph store, service description), default first.
GRAPH_FORMATS: tuple[Format, ...] = (
    Format("turtle", "text/turtle", ("text/turtle", "application/x-turtle"), RdfFormat.TURTLE),
    Format(
        "ntriples",
        "application/n-triples",
        ("application/n-triples", "text/plain"),
        RdfFormat.N_TRIPLES,
    ),
    Format(
        "jsonld",
        "application/ld+json",
        ("application/ld+json", "application/json"),
        RdfFormat.JSON_LD,
    ),
    Format(
        "rdfxml",
        "application/rdf+xml",
        ("application/rdf+xml", "application/xml"),
        RdfFormat.RDF_XML,
    ),
)


#: The HTML page of a query answer, for people (chosen only when named: see choose_format).
PAGE = Format("html", "text/html", ("text/html", "application/xhtml+xml"), None)


def formats_for(kind: Kind) -> tuple[Format, ...]:
    """The formats an answer of this kind can be written in, the default first."""
    return GRAPH_FORMATS if kind == "graph" else RESULT_FORMATS


def parse_accept(header: str | None) -> list[tuple[str, float]]:
    """The media ranges of an Accept header with their q-values (``*/*`` when absent).

    Malformed q-values count as 1; parameters other than q are ignored.
    """
    if not header or not header.strip():
        return [("*/*", 1.0)]
    ranges = []
    for part in header.split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        quality = 1.0
        for param in fields[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    quality = 1.0
        ranges.append((media, quality))
    return ranges or [("*/*", 1.0)]


def _quality(media: str, ranges: list[tuple[str, float]]) -> float:
    """The q-value the most specific matching range gives ``media`` (0 when none match)."""
    best_specificity, quality = -1, 0.0
    major = media.split("/")[0]
    for pattern, q in ranges:
        if pattern == media:
            specificity = 2
        elif pattern == f"{major}/*":
            specificity = 1
        elif pattern == "*/*":
            specificity = 0
        else:
            continue
        if specificity > best_specificity:
            best_specificity, quality = specificity, q
    return quality


def choose_format(
    kind: Kind, accept: str | None, requested: str | None = None, *, page: bool = False
) -> Format:
    """The format to answer in (see :func:`_choose_format`; the choice of recent headers is
    kept: a client sends the same Accept header again and again)."""
    if (accept is None or len(accept) <= 1024) and (requested is None or len(requested) <= 64):
        return _cached_choice(kind, accept, requested, page)
    return _choose_format(kind, accept, requested, page=page)


def _choose_format(
    kind: Kind, accept: str | None, requested: str | None = None, *, page: bool = False
) -> Format:
    """The format to answer in: ``requested`` (a short name or media type, e.g. from a
    ``format`` parameter) when given, else the best match of the Accept header, ties going to
    the server's order. With ``page``, the HTML page is a candidate too, after the standard
    formats, matched only by the media types it is named by (never by a wildcard); without,
    a client that prefers HTML gets the kind's default format (readable text for a graph,
    not the RDF/XML its ``application/xml`` would pick). Raise HttpError 406 when nothing
    acceptable can be written."""
    standard = formats_for(kind)
    candidates = (*standard, PAGE) if page else standard
    names = ", ".join(f.name for f in candidates)
    if requested:
        wanted = requested.strip().lower()
        for fmt in candidates:
            if wanted == fmt.name or wanted in fmt.aliases:
                return fmt
        raise HttpError(
            406, "NotAcceptable", f"format {requested!r} cannot hold this answer; use {names}"
        )
    ranges = parse_accept(accept)
    best: Format | None = None
    best_quality = 0.0
    exact = dict(ranges)
    for fmt in standard:
        # Wildcards match the media type the answer is sent as; other names only when the
        # client lists them.
        quality = max(
            _quality(fmt.media_type, ranges),
            *(exact.get(alias, 0.0) for alias in fmt.aliases),
        )
        if quality > best_quality:
            best, best_quality = fmt, quality
    page_quality = max(exact.get(alias, 0.0) for alias in PAGE.aliases)
    if page_quality > best_quality:
        best = PAGE if page else standard[0]
    if best is None:
        types = ", ".join(f.media_type for f in candidates)
        raise HttpError(406, "NotAcceptable", f"no acceptable format for this answer; use {types}")
    return best


def _choice(kind: Kind, accept: str | None, requested: str | None, page: bool) -> Format:
    return _choose_format(kind, accept, requested, page=page)


_cached_choice = lru_cache(maxsize=256)(_choice)


@dataclass(frozen=True)
class Answer:
    """A serialised answer: its kind, format name, body, whether the cap cut it, and how many
    rows (or triples) it holds."""

    kind: Kind
    format: str
    body: bytes
    truncated: bool
    count: int

    def to_wire(self) -> dict[str, Any]:
        """The answer as plain data (for the pipe from a worker process)."""
        return {
            "kind": self.kind,
            "format": self.format,
            "body": self.body,
            "truncated": self.truncated,
            "count": self.count,
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Answer:
        """The inverse of :meth:`to_wire`."""
        return cls(**data)


def format_named(name: str) -> Format:
    """The format with this short name (KeyError when there is none)."""
    for fmt in (*RESULT_FORMATS, *GRAPH_FORMATS, PAGE):
        if fmt.name == name:
            return fmt
    raise KeyError(name)


def kind_of(result: QueryResult) -> Kind:
    """select, ask or graph."""
    if isinstance(result, QueryBoolean):
        return "ask"
    if isinstance(result, QueryTriples):
        return "graph"
    return "select"


def write_answer(
    result: QueryResult,
    accept: str | None,
    requested: str | None,
    max_rows: int,
    *,
    query: str | None = None,
) -> Answer:
    """Serialise a query result in the negotiated format (the HTML page included), at most
    ``max_rows`` rows or triples (``truncated`` says whether rows were left out). ``query``
    is the query's text, for the page's links."""
    kind = kind_of(result)
    fmt = choose_format(kind, accept, requested, page=True)
    if isinstance(result, QueryBoolean):
        if fmt is PAGE:
            body = render("ask", query=query, boolean=bool(result))
            return Answer(kind, fmt.name, body, False, 1)
        assert isinstance(fmt.writer, QueryResultsFormat)
        return Answer(kind, fmt.name, result.serialize(format=fmt.writer) or b"", False, 1)
    if isinstance(result, QueryTriples):
        writer = fmt.writer if isinstance(fmt.writer, RdfFormat) else RdfFormat.TURTLE
        triples: list[Triple] = []
        truncated = False
        for triple in result:
            if len(triples) == max_rows:
                truncated = True
                break
            triples.append(triple)
        body = _graph_body(triples, writer)
        if fmt is PAGE:
            body = render(
                "graph",
                query=query,
                text=body.decode("utf-8"),
                truncated=truncated,
                max_rows=max_rows,
            )
        return Answer(kind, fmt.name, body, truncated, len(triples))
    assert isinstance(result, QuerySolutions)
    variables = [v.value for v in result.variables]
    columns = list(enumerate(variables))
    truncated = False
    if fmt is PAGE:
        rows: list[dict[str, Any]] = []
        for solution in result:
            if len(rows) == max_rows:
                truncated = True
                break
            rows.append(
                {name: term_json(solution[i]) for i, name in columns if solution[i] is not None}
            )
        body = render(
            "select",
            query=query,
            variables=variables,
            rows=rows,
            truncated=truncated,
            max_rows=max_rows,
        )
        return Answer(kind, fmt.name, body, truncated, len(rows))
    assert isinstance(fmt.writer, QueryResultsFormat)
    # The JSON document is written here, row by row (what json.dumps would write, faster).
    keys = [(i, _json_string(name) + ":") for i, name in columns]
    texts: list[str] = []
    for solution in result:
        if len(texts) == max_rows:
            truncated = True
            break
        fields = []
        for index, key in keys:
            value = solution[index]  # by position: cheaper than by name
            if value is not None:
                fields.append(key + term_json_text(value))
        texts.append("{" + ",".join(fields) + "}")
    head = ",".join(_json_string(name) for name in variables)
    document = (
        '{"head":{"vars":[' + head + ']},"results":{"bindings":[' + ",".join(texts) + "]}}"
    ).encode("utf-8")
    if fmt.writer == QueryResultsFormat.JSON:
        body = document
    else:
        reread = parse_query_results(document, QueryResultsFormat.JSON)
        assert isinstance(reread, QuerySolutions)
        body = reread.serialize(format=fmt.writer) or b""
    return Answer(kind, fmt.name, body, truncated, len(texts))


#: A string as JSON text, escaped as ``json.dumps(..., ensure_ascii=False)`` escapes it.
_json_string = encode_basestring
_XSD_STRING = XSD + "string"


def term_json_text(term: Any) -> str:
    """``term_json(term)`` as compact JSON text: exactly what ``json.dumps(term_json(term),
    ensure_ascii=False, separators=(",", ":"))`` writes, without building the dict."""
    kind = type(term)
    if kind is NamedNode:
        return '{"type":"uri","value":' + _json_string(term.value) + "}"
    if kind is RdfLiteral and term.direction is None:
        text = '{"type":"literal","value":' + _json_string(term.value)
        if term.language:
            return text + ',"xml:lang":' + _json_string(term.language) + "}"
        datatype = term.datatype.value
        if datatype != _XSD_STRING:
            return text + ',"datatype":' + _json_string(datatype) + "}"
        return text + "}"
    if kind is BlankNode:
        return '{"type":"bnode","value":' + _json_string(term.value) + "}"
    return json.dumps(term_json(term), ensure_ascii=False, separators=(",", ":"))


def write_graph(
    triples: list[Triple], fmt: Format, prefixes: dict[str, str] | None = None
) -> bytes:
    """Serialise triples (a graph) in ``fmt``, with labbrain's prefixes and ``prefixes``
    where the format has any."""
    assert isinstance(fmt.writer, RdfFormat)
    return _graph_body(triples, fmt.writer, prefixes)


def _graph_body(
    triples: list[Triple], writer: RdfFormat, prefixes: dict[str, str] | None = None
) -> bytes:
    return serialize(triples, format=writer, prefixes={**PREFIXES, **(prefixes or {})}) or b""


def term_json(term: Any) -> dict[str, Any]:
    """An RDF term in the SPARQL 1.1 (and 1.2: triple terms, directions) JSON results form."""
    if isinstance(term, NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, RdfLiteral):
        found: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            found["xml:lang"] = term.language
            if term.direction is not None:
                found["its:dir"] = str(term.direction.value)
        elif term.datatype.value != XSD + "string":
            found["datatype"] = term.datatype.value
        return found
    if isinstance(term, Triple):
        return {
            "type": "triple",
            "value": {
                "subject": term_json(term.subject),
                "predicate": term_json(term.predicate),
                "object": term_json(term.object),
            },
        }
    raise TypeError(f"not an RDF term: {term!r}")
