"""Tab completion for the console: dot commands, SPARQL keywords, the predeclared prefixes,
variables already in the query, and classes and properties from the ontology and the data.

Terms come from the ``console_terms`` template (declared classes and properties in any graph,
the ontology included, plus every type and predicate in use). A term under a predeclared
prefix completes as a prefixed name (``dg:Claim``, ``lb:linksTo``); any other as ``<IRI>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from labbrain.console.formats import compact
from labbrain.rdf.namespaces import PREFIXES
from labbrain.store import templates
from labbrain.store.base import QuadStore

KEYWORDS = (
    "SELECT", "DISTINCT", "REDUCED", "WHERE", "PREFIX", "BASE", "FROM", "NAMED", "GRAPH",
    "OPTIONAL", "FILTER", "UNION", "MINUS", "BIND", "VALUES", "SERVICE", "EXISTS", "NOT",
    "ORDER", "BY", "ASC", "DESC", "GROUP", "HAVING", "LIMIT", "OFFSET", "ASK", "CONSTRUCT",
    "DESCRIBE", "AS", "COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT",
    "SEPARATOR", "STR", "LANG", "LANGMATCHES", "DATATYPE", "BOUND", "IRI", "BNODE", "STRLEN",
    "SUBSTR", "UCASE", "LCASE", "STRSTARTS", "STRENDS", "CONTAINS", "STRBEFORE", "STRAFTER",
    "CONCAT", "REGEX", "REPLACE", "COALESCE", "IF", "IN", "isIRI", "isBLANK", "isLITERAL",
    "YEAR", "MONTH", "DAY", "NOW", "INSERT", "DELETE", "DATA", "WITH", "USING", "DEFAULT",
    "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "SILENT", "ALL",
)  # fmt: skip

#: A token being typed: an IRI, a variable, a prefixed name or a bare word.
_TOKEN_RE = re.compile(r"(<[^<>\"{}|^`\\\s]*|[?$]\w*|[A-Za-z_][\w.-]*:[\w.-]*|[A-Za-z_]\w*)$")
_VARIABLE_RE = re.compile(r"[?$](\w+)")


@dataclass(frozen=True)
class Term:
    """A completion candidate: its text and what it is (shown beside it)."""

    text: str
    meta: str


def vocabulary_terms(store: QuadStore) -> list[Term]:
    """Classes and properties of ``store`` as completion texts, sorted, each once (a term that
    is both a class and a property counts as a class)."""
    kinds: dict[str, str] = {}
    for row in templates.run(store, "console_terms"):
        iri = str(row["term"])
        if iri.startswith("_:") or ":" not in iri:
            continue  # a blank node or literal among the types
        if kinds.get(iri) != "class":
            kinds[iri] = row["kind"]
    found = []
    for iri, kind in kinds.items():
        name = compact(iri)
        found.append(Term(name if name != iri else f"<{iri}>", kind))
    return sorted(found, key=lambda t: t.text)


class SparqlCompleter(Completer):
    """Completes what the cursor is in. ``commands`` maps dot commands to their help, and
    ``arguments`` lists the fixed arguments of those that take one (``.format``)."""

    def __init__(
        self,
        commands: Mapping[str, str],
        arguments: Mapping[str, Iterable[str]],
        terms: Iterable[Term] = (),
    ) -> None:
        self.commands = dict(commands)
        self.arguments = {k: list(v) for k, v in arguments.items()}
        self.terms = list(terms)
        self._paths = PathCompleter(expanduser=True)

    def set_terms(self, terms: Iterable[Term]) -> None:
        """Replace the vocabulary terms (after the store changed)."""
        self.terms = list(terms)

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        """Completions for the token before the cursor."""
        before = document.text_before_cursor
        if before.lstrip().startswith(".") and "\n" not in before:
            yield from self._command(before.lstrip(), event)
            return
        match = _TOKEN_RE.search(before)
        token = match.group(0) if match else ""
        if not token:
            return
        if token.startswith("<"):
            yield from self._matching(token, [t for t in self.terms if t.text.startswith("<")])
        elif token[0] in "?$":
            names = sorted({token[0] + v for v in _VARIABLE_RE.findall(document.text)})
            yield from self._matching(token, [Term(n, "variable") for n in names if n != token])
        elif ":" in token:
            yield from self._matching(token, [t for t in self.terms if not t.text.startswith("<")])
        else:
            prefixes = [Term(f"{p}:", PREFIXES[p]) for p in sorted(PREFIXES)]
            keywords = [Term(k, "keyword") for k in KEYWORDS]
            yield from self._matching(token, prefixes + keywords)

    def _command(self, typed: str, event: CompleteEvent) -> Iterator[Completion]:
        name, space, rest = typed.partition(" ")
        if not space:
            for command, help_text in self.commands.items():
                if command.startswith(name):
                    yield Completion(command, -len(name), display_meta=help_text)
        elif name in self.arguments:
            for value in self.arguments[name]:
                if value.startswith(rest.strip()):
                    yield Completion(value, -len(rest.lstrip()))
        elif name == ".export":
            yield from self._paths.get_completions(Document(rest.lstrip()), event)

    @staticmethod
    def _matching(token: str, candidates: Iterable[Term]) -> Iterator[Completion]:
        lowered = token.lower()
        for term in candidates:
            if term.text.lower().startswith(lowered) and term.text != token:
                yield Completion(term.text, -len(token), display_meta=term.meta)
