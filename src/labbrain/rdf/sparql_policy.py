"""What user-sent SPARQL may do: no SERVICE (outbound HTTP from the query engine), no LOAD
(outbound HTTP from an update), and, where the caller passes the store's graphs, no FROM /
FROM NAMED naming a graph the store does not hold (a remote dataset). Checked on the query
text with comments, strings and IRIs blanked out, so a keyword inside a literal or an IRI
does not trip it."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin

from labbrain.errors import QueryNotAllowed
from labbrain.rdf.namespaces import PREFIXES

_MASK_RE = re.compile(
    r"""
    \#[^\n]*                        # comment
    | '''(?:[^'\\]|\\.|'(?!''))*''' # long single-quoted string
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"  # long double-quoted string
    | '(?:[^'\\\n]|\\.)*'           # short strings
    | "(?:[^"\\\n]|\\.)*"
    | <[^<>"{}|^`\\\s]*>            # IRIs
    """,
    re.VERBOSE,
)
# Keywords only: not a prefixed name (sioc:Service, ex:load-x) nor a variable (?service).
_SERVICE_RE = re.compile(r"(?<![\w:?$.-])SERVICE(?![\w:.-])", re.IGNORECASE)
_LOAD_RE = re.compile(r"(?<![\w:?$.-])LOAD(?![\w:.-])", re.IGNORECASE)
_UPDATE_RE = re.compile(
    r"(?<![\w:?$.-])(INSERT|DELETE|DROP|CLEAR|CREATE|LOAD|ADD|MOVE|COPY)(?![\w:.-])",
    re.IGNORECASE,
)


_PN = r"[A-Za-z\u00c0-\uffff][\w.\u00b7-]*"  # a prefix name (approximately PN_PREFIX)
_IRI = r"<[^<>\"{}|^`\\\s]*>"
_PREFIX_DECL_RE = re.compile(rf"(?<![\w:?$.-])PREFIX\s+({_PN})?:\s*({_IRI})", re.IGNORECASE)
_BASE_RE = re.compile(rf"(?<![\w:?$.-])BASE\s+({_IRI})", re.IGNORECASE)
_FROM_RE = re.compile(
    rf"(?<![\w:?$.-])FROM(?![\w:.-])\s*(?:NAMED(?![\w:.-])\s*)?"
    rf"({_IRI}|(?:{_PN})?:[\w.:%\u00b7-]*)",
    re.IGNORECASE,
)


def code_only(sparql: str) -> str:
    """The query with comments, string literals and IRIs replaced by spaces."""
    return _MASK_RE.sub(lambda m: " " * len(m.group(0)), sparql)


def _code_and_iris(sparql: str) -> str:
    """The query with comments and string literals replaced by spaces, IRIs kept."""
    return _MASK_RE.sub(
        lambda m: m.group(0) if m.group(0).startswith("<") else " " * len(m.group(0)), sparql
    )


#: Query texts up to this length have what the checks read from them kept (an endpoint sees
#: the same texts again and again); longer ones are read each time.
CACHED_TEXT = 8_192


@dataclass(frozen=True)
class QueryFacts:
    """What the policy reads from a query's text: whether it uses SERVICE, and the graphs
    its FROM / FROM NAMED clauses name (see :func:`dataset_graphs`)."""

    service: bool
    graphs: tuple[str, ...]


def query_facts(sparql: str) -> QueryFacts:
    """The facts of ``sparql``, from a cache of recent texts (a pure function of the text)."""
    if len(sparql) > CACHED_TEXT:
        return _read_facts(sparql)
    return _cached_facts(sparql)


def _read_facts(sparql: str) -> QueryFacts:
    return QueryFacts(
        service=_SERVICE_RE.search(code_only(sparql)) is not None,
        graphs=tuple(_dataset_graphs(sparql)),
    )


_cached_facts = lru_cache(maxsize=512)(_read_facts)


def dataset_graphs(sparql: str) -> list[str]:
    """The graph IRIs a query names in FROM and FROM NAMED clauses, in order.

    Prefixed names are expanded with labbrain's predeclared prefixes and the query's own
    PREFIX declarations; relative IRIs are resolved against its BASE when it has one. A name
    whose prefix is undeclared is returned as written (the engine rejects the query anyway).
    """
    return list(query_facts(sparql).graphs)


def _dataset_graphs(sparql: str) -> list[str]:
    code = _code_and_iris(sparql)
    prefixes = dict(PREFIXES)
    for name, iri in _PREFIX_DECL_RE.findall(code):
        prefixes[name] = iri[1:-1]
    base_match = _BASE_RE.search(code)
    base = base_match.group(1)[1:-1] if base_match else ""
    found = []
    for ref in _FROM_RE.findall(code):
        if ref.startswith("<"):
            iri = ref[1:-1]
            found.append(urljoin(base, iri) if base and ":" not in iri else iri)
        else:
            prefix, _, local = ref.partition(":")
            found.append(prefixes[prefix] + local if prefix in prefixes else ref)
    return found


def check_query(sparql: str, *, graphs: Callable[[], Collection[str]] | None = None) -> list[str]:
    """Raise QueryNotAllowed if a query uses SERVICE. When ``graphs`` is given (it lists the
    store's named graphs), return the graphs FROM / FROM NAMED name that the store does not
    hold: they are empty graphs, as the SPARQL protocol has it, never fetched (the store
    never reaches the network for a graph). The text is read once (query_facts); the store's
    graphs are asked for only when the query names some."""
    facts = query_facts(sparql)
    if facts.service:
        raise QueryNotAllowed("SERVICE is not allowed: labbrain never queries remote endpoints")
    if graphs is None or not facts.graphs:
        return []
    known = set(graphs())
    return [iri for iri in dict.fromkeys(facts.graphs) if iri not in known]


def looks_like_update(sparql: str) -> bool:
    """True when the text uses an update keyword (to explain a parse failure as a query)."""
    return _UPDATE_RE.search(code_only(sparql)) is not None


def check_update(sparql: str) -> None:
    """Raise QueryNotAllowed if an update uses LOAD or SERVICE."""
    code = code_only(sparql)
    if _LOAD_RE.search(code):
        raise QueryNotAllowed("LOAD is not allowed: labbrain never fetches remote data")
    if _SERVICE_RE.search(code):
        raise QueryNotAllowed("SERVICE is not allowed: labbrain never queries remote endpoints")
