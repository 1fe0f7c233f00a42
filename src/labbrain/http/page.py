"""A query answer as an HTML page, for a person who opens a query URL in a browser.

The page is self-contained but for the web console's style sheet (served by this server): a
table of the rows (SELECT), the answer (ASK) or the Turtle (CONSTRUCT, DESCRIBE), links that
download the same answer in the standard formats, and a link that opens the query in the web
console. Every value is HTML-escaped; the page runs no script (see PAGE_HEADERS).
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from labbrain.rdf.namespaces import PREFIXES, XSD

#: Sent with every page: nothing but this server's style sheet may load, no script runs.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_NUMBERS = {XSD + name for name in ("integer", "decimal", "double", "float", "long", "int")}
#: Longest namespace first, so the most specific prefix names an IRI.
_BY_LENGTH = sorted(PREFIXES.items(), key=lambda item: -len(item[1]))
_DOWNLOADS = {
    "select": (("json", "JSON"), ("csv", "CSV"), ("tsv", "TSV"), ("xml", "XML")),
    "ask": (("json", "JSON"), ("xml", "XML")),
    "graph": (("turtle", "Turtle"), ("ntriples", "N-Triples"), ("jsonld", "JSON-LD")),
}


def _compact(iri: str) -> str:
    for prefix, namespace in _BY_LENGTH:
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return iri


def _term(term: dict[str, Any] | None) -> tuple[str, str]:
    """(the cell's HTML, its class) for a term in the SPARQL JSON results form."""
    if term is None:
        return "", ""
    kind, value = term["type"], term["value"]
    if kind == "uri":
        shown = escape(_compact(value))
        if value.lower().startswith(("http://", "https://")):
            link = escape(value, quote=True)
            return f'<a href="{link}" rel="noopener noreferrer">{shown}</a>', "iri"
        return f'<span title="{escape(value, quote=True)}">{shown}</span>', "iri"
    if kind == "bnode":
        return escape(f"_:{value}"), "bnode"
    if kind == "triple":
        parts = (_term(value[position])[0] for position in ("subject", "predicate", "object"))
        return "&lt;&lt; " + " ".join(parts) + " &gt;&gt;", ""
    text = escape(value)
    if "xml:lang" in term:
        text += f' <small class="datatype">@{escape(term["xml:lang"])}</small>'
    return text, "number" if term.get("datatype") in _NUMBERS else ""


def _table(variables: list[str], rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{escape(name)}</th>" for name in variables)
    lines = [f'<table class="results"><thead><tr><th>#</th>{head}</tr></thead><tbody>']
    for number, row in enumerate(rows, 1):
        cells = []
        for name in variables:
            html, kind = _term(row.get(name))
            cells.append(f'<td class="{kind}">{html}</td>' if kind else f"<td>{html}</td>")
        lines.append(f'<tr><td class="rownum">{number}</td>{"".join(cells)}</tr>')
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _links(kind: str, query: str | None) -> tuple[str, str]:
    """(the console link, the download links) of a query's page; empty without a query."""
    if query is None:
        return "", ""
    console = escape("./?" + urlencode({"query": query}), quote=True)
    downloads = " ".join(
        f'<a href="{escape("?" + urlencode({"query": query, "format": name}), quote=True)}">'
        f"{label}</a>"
        for name, label in _DOWNLOADS[kind]
    )
    return (
        f'<nav><a href="{console}">open in the console</a></nav>',
        f'<div id="downloads">Download: {downloads}</div>',
    )


def render(
    kind: str,
    *,
    query: str | None,
    variables: list[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
    boolean: bool | None = None,
    text: str | None = None,
    truncated: bool = False,
    max_rows: int = 0,
) -> bytes:
    """The page of one answer: ``kind`` select (``variables``, ``rows`` as SPARQL JSON
    bindings), ask (``boolean``) or graph (``text``, Turtle); ``truncated`` says the rows were
    cut at ``max_rows``. ``query`` (when given) makes the console and download links."""
    if kind == "select":
        count = len(rows or [])
        status = f"{count:,} row{'' if count == 1 else 's'}"
        body = _table(variables or [], rows or [])
    elif kind == "ask":
        status = "answer"
        body = f'<pre class="graph boolean">{"true" if boolean else "false"}</pre>'
    else:
        status = "graph (Turtle)"
        body = f'<pre class="graph">{escape(text or "")}</pre>'
    if truncated:
        status += f", cut at {max_rows:,}: add LIMIT or narrow the query"
    nav, downloads = _links(kind, query)
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>labbrain query answer</title>
<link rel="stylesheet" href="static/console.css">
</head>
<body>
<header class="top"><h1><span class="mark">labbrain</span> query answer</h1>{nav}</header>
<main>
<section class="results-pane" aria-label="Results">
<div class="result-bar"><div id="status">{escape(status)}</div>{downloads}</div>
<div id="results">
{body}
</div>
</section>
</main>
</body>
</html>
"""
    return page.encode("utf-8")
