"""Where each server departs from the W3C SPARQL 1.1 tests, with the reason.

Each entry is a test that does not pass on that server: ``NOT_OFFERED`` when the server
does not offer what the test uses (it answers with a refusal that says so), ``FAILS``
otherwise. A test missing here must pass, and a test listed here must not: the conformance
tests fail either way, so that these tables stay true (docs/sparql.md, "Conformance", gives
the counts).
"""

from __future__ import annotations

NOT_OFFERED = "not offered"
FAILS = "fails"

_CLEAR = (
    "the test's first update clears a graph the store does not hold; CLEAR GRAPH without "
    "SILENT fails then (Oxigraph's engine, {how}), so the base IRI is never reached"
)

PROTOCOL: dict[str, dict[str, tuple[str, str]]] = {
    "labbrain": {
        "update_base_uri": (FAILS, _CLEAR.format(how="answered 400 QueryError")),
    },
    "oxigraph": {
        "query_content_type_describe": (
            FAILS,
            "without an Accept header DESCRIBE is answered as application/n-quads, a dataset "
            "format, not one for RDF graphs",
        ),
        "query_content_type_construct": (
            FAILS,
            "without an Accept header CONSTRUCT is answered as application/n-quads, a dataset "
            "format, not one for RDF graphs",
        ),
        "update_base_uri": (FAILS, _CLEAR.format(how="answered 500")),
        "bad_update_get": (
            FAILS,
            "a GET of the update URL with update=... is answered 200 with the service "
            "description (the update is not run) instead of a 4xx",
        ),
    },
}

#: Query-evaluation tests where both servers (one engine: Oxigraph's) give another answer
#: than the suite's.
_ENGINE = {
    "aggregates/agg-empty-group": (
        FAILS,
        "GROUP BY ?x over no solutions gives no group, so no row; the suite expects one row "
        "with ?max unbound",
    ),
    "csv-tsv-res/tsv03": (
        FAILS,
        'the TSV writer gives "-3"^^xsd:negativeInteger as the bare number -3, which reads '
        "back as xsd:integer",
    ),
    "functions/strdt03": (
        FAILS,
        'STRDT accepts "abc"^^xsd:string as a simple literal (RDF 1.1: they are one term); '
        "the suite, written for RDF 1.0, expects an error (unbound)",
    ),
    "functions/strlang03": (
        FAILS,
        'STRLANG accepts "abc"^^xsd:string as a simple literal (RDF 1.1: they are one term); '
        "the suite, written for RDF 1.0, expects an error (unbound)",
    ),
    "functions/bnode01": (
        FAILS,
        "BNODE(str) gives the same blank node for the same string in different solutions; "
        "SPARQL 1.1 wants a new one per solution",
    ),
}

EVALUATION: dict[str, dict[str, tuple[str, str]]] = {
    "labbrain": dict(_ENGINE),
    "oxigraph": dict(_ENGINE),
}


def unexpected(known: dict[str, tuple[str, str]], outcomes: dict[str, str | None]) -> list[str]:
    """What makes the table ``known`` untrue for ``outcomes`` (test name -> None when it
    passed, else what went wrong): failures it does not list, and listed tests that passed."""
    problems = []
    for name, outcome in outcomes.items():
        if outcome is not None and name not in known:
            problems.append(f"{name}: {outcome}")
        elif outcome is None and name in known:
            problems.append(f"{name}: passes now; remove it from the known deviations")
    return problems
