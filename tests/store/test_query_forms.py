"""A query whose first word is no query form is told which forms there are, at that word,
whatever surface it came through (the engine alone named one keyword it guessed at)."""

from __future__ import annotations

import pytest

from labbrain.store.base import form_problem

FORMS = "SELECT, CONSTRUCT, DESCRIBE or ASK"


@pytest.mark.parametrize(
    "text",
    [
        "SELECT ?x WHERE { ?x ?p ?o }",
        "select * {}",
        "ASK {}",
        "CONSTRUCT WHERE { ?s ?p ?o }",
        "DESCRIBE <http://example.org/a>",
        "PREFIX ex: <http://example.org/>\n# a comment\nBASE <http://example.org/>\nSELECT * {}",
        "PREFIX : <http://example.org/> SELECT * {}",
    ],
)
def test_a_query_form_after_any_prologue_is_no_problem(text: str) -> None:
    assert form_problem(text) is None


@pytest.mark.parametrize(
    ("text", "found", "line", "column"),
    [
        ("SELEC ?x WHERE { ?x ?p ?o }", "'SELEC'", 1, 1),
        ("PREFIX ex: <http://example.org/> # note\n  SELCT ?x {}", "'SELCT'", 2, 3),
        ("  { ?s ?p ?o }", "'{ ?s ?p ?o'", 1, 3),
        ("", "nothing", 1, 1),
        ("# only a comment\n", "nothing", 2, 1),
    ],
)
def test_a_misspelt_form_names_the_forms_and_where(
    text: str, found: str, line: int, column: int
) -> None:
    problem = form_problem(text)
    assert problem is not None
    assert problem.message == f"expected a query form: {FORMS}; found {found}"
    assert (problem.line, problem.column) == (line, column)


def test_updates_have_their_own_forms() -> None:
    assert form_problem("INSERT DATA { <a:s> <a:p> 1 }", update=True) is None
    assert form_problem("WITH <a:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", update=True) is None
    problem = form_problem("INSRT DATA { <a:s> <a:p> 1 }", update=True)
    assert problem is not None and problem.message.startswith("expected an update: INSERT, ")
    assert "found 'INSRT'" in problem.message
    assert form_problem("SELECT * {}", update=True) is not None


def test_the_base_goes_before_a_text_without_one_of_its_own() -> None:
    """What a remote store is sent (the embedded one takes the base as an argument)."""
    from labbrain.store.base import with_base

    ours = "https://w3id.org/labbrain/base/"
    assert with_base("SELECT * {}", None) == "SELECT * {}"
    assert with_base("SELECT * {}", ours) == f"BASE <{ours}> SELECT * {{}}"
    own = "PREFIX ex: <http://ex.org/>\nbase <http://ex.org/> SELECT * {}"
    assert with_base(own, ours) == own
    commented = "# BASE <http://ex.org/> is not this query's\nSELECT * {}"
    assert with_base(commented, ours).startswith(f"BASE <{ours}> ")
