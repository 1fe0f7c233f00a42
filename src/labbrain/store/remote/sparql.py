"""The SPARQL text a remote store is sent: this module's job is writing it.

- :func:`with_prologue` declares labbrain's prefixes (the embedded store passes them to the
  engine instead).
- :func:`bind_values` binds query parameters with a ``VALUES`` block at the start of the
  query's WHERE group: the terms are written in SPARQL's own syntax there and nowhere else,
  so a value can never change the query's structure.
- :func:`insert_data` / :func:`delete_data` write quads as ``INSERT DATA`` / ``DELETE DATA``,
  and :func:`blank_node_safe_chunks` cuts triples into chunks that keep every blank node's
  triples together (a blank node label only means the same node within one request).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from labbrain.rdf.namespaces import LB, PREFIXES, STAGING_PREFIX, SYSTEM_GRAPH
from labbrain.store.base import QUERY_FORMS

_STAGING_TIME = "%Y%m%dT%H%M%SZ"

Term = NamedNode | BlankNode | Literal | Triple

_TOKEN_RE = re.compile(
    r"""
      (?P<comment>\#[^\n]*)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
        | '''(?:[^'\\]|\\.|'(?!''))*'''
        | "(?:[^"\\\n]|\\.)*"
        | '(?:[^'\\\n]|\\.)*')
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$][\w\u00b7\u0300-\u036f\u203f-\u2040]+)
    | (?P<word>[^\W\d][\w.\-\u00b7]*(?::[\w.:%\-\u00b7]*)?|:[\w.:%\-\u00b7]*)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<popen>\()
    | (?P<pclose>\))
    | (?P<space>\s+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def with_prologue(sparql: str) -> str:
    """``sparql`` preceded by PREFIX declarations of labbrain's predeclared prefixes (a
    query's own declarations come later and win). A BASE the text starts with stays first:
    Virtuoso reads a BASE only before every PREFIX."""
    lines = [f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items()]
    base = _LEADING_BASE.match(sparql)
    head = base.group() if base else ""
    return head + "\n".join(lines) + "\n" + sparql[len(head) :]


_LEADING_BASE = re.compile(r"\s*BASE\s*<[^<>\s]*>\s*", re.IGNORECASE)


def term_text(term: Term) -> str:
    """An IRI or literal in SPARQL syntax (N-Triples syntax, which SPARQL reads verbatim).

    Blank nodes and triple terms cannot stand in a VALUES block and are refused.
    """
    if isinstance(term, NamedNode | Literal):
        return str(term)
    raise ValueError(f"a query parameter must be an IRI or a literal, not {term!r}")


def _tokens(sparql: str) -> Iterator[tuple[str, str, int]]:
    for match in _TOKEN_RE.finditer(sparql):
        kind = match.lastgroup or "other"
        if kind not in ("space", "comment"):
            yield kind, match.group(0), match.start()


def _where_group(sparql: str) -> tuple[int, int, bool]:
    """(position of the WHERE group's ``{``, of its matching ``}``, whether the group is a
    sub-SELECT). Raises ValueError for a query without one (e.g. ``DESCRIBE <x>``) or the
    ``CONSTRUCT WHERE`` short form (whose pattern is also its template)."""
    form: str | None = None
    depth = parens = 0
    template_done = False
    where_seen = False
    start: int | None = None
    sub_select = False
    expect_first = False
    for kind, text, position in _tokens(sparql):
        if expect_first:
            sub_select = kind == "word" and text.upper() == "SELECT"
            expect_first = False
        if kind == "word" and depth == 0 and parens == 0:
            word = text.upper()
            if form is None and word in QUERY_FORMS:
                form = word
            elif word == "WHERE":
                where_seen = True
        elif kind == "popen":
            parens += 1
        elif kind == "pclose":
            parens -= 1
        elif kind == "open":
            if depth == 0 and parens == 0 and form is not None and start is None:
                if form == "CONSTRUCT" and not template_done and not where_seen:
                    template_done = True  # the template: skipped
                elif form == "CONSTRUCT" and not template_done:
                    raise ValueError("parameters cannot be bound in a CONSTRUCT WHERE query")
                else:
                    start = position
                    expect_first = True
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0 and start is not None:
                return start, position, sub_select
    raise ValueError("the query has no WHERE group to bind parameters in")


def bind_values(sparql: str, substitutions: Mapping[str, Term], *, binds: bool = False) -> str:
    """``sparql`` with ``substitutions`` bound by a VALUES block at the start of its WHERE
    group (variables sorted by name; the text is unchanged when there are none); with
    ``binds``, by one ``BIND(term AS ?name)`` each instead (for Virtuoso, which drops rows of
    a UNION joined with a leading VALUES block).

    A WHERE group that is a sub-SELECT is wrapped in a group first, since a VALUES block
    cannot precede a sub-SELECT directly.
    """
    if not substitutions:
        return sparql
    names = sorted(substitutions)
    for name in names:
        if not re.fullmatch(r"[\w\u00b7\u0300-\u036f\u203f-\u2040]+", name):
            raise ValueError(f"invalid variable name {name!r}")
    if binds:
        block = " " + " ".join(f"BIND({term_text(substitutions[n])} AS ?{n})" for n in names) + " "
    else:
        values = " ".join(term_text(substitutions[name]) for name in names)
        block = f" VALUES ({' '.join('?' + n for n in names)}) {{ ({values}) }} "
    start, end, sub_select = _where_group(sparql)
    if sub_select:
        return sparql[: start + 1] + block + "{" + sparql[start + 1 : end] + "}" + sparql[end:]
    return sparql[: start + 1] + block + sparql[start + 1 :]


# ---------------------------------------------------------------------------- updates
def new_staging_graph(now: datetime | None = None) -> str:
    """A fresh staging graph IRI, ``urn:labbrain:staging:<UTC time>-<random>``."""
    moment = (now or datetime.now(UTC)).strftime(_STAGING_TIME)
    return f"{STAGING_PREFIX}{moment}-{secrets.token_hex(8)}"


#: A staging graph older than this was left by a write that died.
STALE_STAGING = timedelta(days=1)


def staging_is_stale(
    graph: str, older_than: timedelta | None = None, now: datetime | None = None
) -> bool:
    """True when ``graph`` is a staging graph created more than ``older_than`` (default
    :data:`STALE_STAGING`) ago: a write that died; a live write's staging graph is younger."""
    if older_than is None:
        older_than = STALE_STAGING
    if not graph.startswith(STAGING_PREFIX):
        return False
    stamp = graph.removeprefix(STAGING_PREFIX).split("-", 1)[0]
    try:
        created = datetime.strptime(stamp, _STAGING_TIME).replace(tzinfo=UTC)
    except ValueError:
        return True  # not one labbrain made: nobody is writing it
    return (now or datetime.now(UTC)) - created > older_than


def _block(items: Iterable[Quad | Triple], graph: NamedNode | None) -> str:
    """The body of an ``INSERT`` / ``DELETE DATA``: the triples of each graph in one
    ``GRAPH`` block (into ``graph`` when given, else each quad's own graph; triples of the
    default graph outside any). Virtuoso refuses a template that names a graph in several
    blocks."""
    graphs: dict[str | None, list[str]] = {}
    for item in items:
        target = graph
        if target is None and isinstance(item, Quad) and isinstance(item.graph_name, NamedNode):
            target = item.graph_name
        key = str(target) if target is not None else None
        graphs.setdefault(key, []).append(f"{item.subject} {item.predicate} {item.object} .")
    return "\n".join(
        "\n".join(triples) if name is None else f"GRAPH {name} {{\n" + "\n".join(triples) + "\n}"
        for name, triples in graphs.items()
    )


def insert_data(items: Iterable[Quad | Triple], graph: NamedNode | None = None) -> str:
    """An update adding ``items`` (into ``graph`` when given, else each quad's own graph).
    Blank nodes are allowed: their labels co-refer within this update. With blank nodes it
    is ``INSERT { ... } WHERE {}`` (one solution, so one fresh node per label, as ``INSERT
    DATA`` makes), which Virtuoso accepts where it refuses blank nodes in ``INSERT DATA``."""
    listed = list(items)
    body = _block(listed, graph)
    if not body:
        return ""
    if any(isinstance(i.subject, BlankNode) or isinstance(i.object, BlankNode) for i in listed):
        return "INSERT {\n" + body + "\n} WHERE {}"
    return "INSERT DATA {\n" + body + "\n}"


def delete_data(quads: Iterable[Quad]) -> str:
    """A ``DELETE DATA`` update removing ``quads``; blank nodes cannot be named in one."""
    listed = list(quads)
    for quad in listed:
        if isinstance(quad.subject, BlankNode) or isinstance(quad.object, BlankNode):
            raise ValueError("quads with blank nodes cannot be removed from a remote store")
    body = _block(listed, None)
    return "DELETE DATA {\n" + body + "\n}" if body else ""


def join_updates(*updates: str) -> str:
    """Several update operations as one request (applied in order, as one transaction by
    servers that run a request in one, as Oxigraph and Fuseki do)."""
    return " ;\n".join(u for u in updates if u)


def blank_node_safe_chunks(triples: Iterable[Triple], size: int) -> Iterator[list[Triple]]:
    """``triples`` in chunks of at most ``size``, except that all triples connected through
    blank nodes stay in one chunk (which may then be bigger).

    Triples without blank nodes stream through; those with blank nodes are held until the
    end, grouped by connected component.
    """
    plain: list[Triple] = []
    held: list[Triple] = []
    parent: dict[str, str] = {}

    def find(label: str) -> str:
        root = label
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[label] != root:
            parent[label], label = root, parent[label]
        return root

    for triple in triples:
        ends = [t.value for t in (triple.subject, triple.object) if isinstance(t, BlankNode)]
        if not ends:
            plain.append(triple)
            if len(plain) >= size:
                yield plain
                plain = []
            continue
        held.append(triple)
        roots = [find(label) for label in ends]
        if len(roots) == 2 and roots[0] != roots[1]:
            parent[roots[1]] = roots[0]
    if plain:
        yield plain
    groups: dict[str, list[Triple]] = {}
    for triple in held:
        end = triple.subject if isinstance(triple.subject, BlankNode) else triple.object
        assert isinstance(end, BlankNode)
        groups.setdefault(find(end.value), []).append(triple)
    chunk: list[Triple] = []
    for group in groups.values():
        if chunk and len(chunk) + len(group) > size:
            yield chunk
            chunk = []
        chunk.extend(group)
    if chunk:
        yield chunk


# ---------------------------------------------------------------------------- fills in place
#: ``<graph> lb:fillingAs <fill>`` in the system graph: a first load is writing ``graph``
#: in place; ``<fill>`` is a staging-graph-like IRI that carries the fill's start time.
FILLING_AS = LB + "fillingAs"


def fill_marker(graph: str, fill: str) -> Quad:
    """The system-graph quad that claims ``graph`` for the fill ``fill``."""
    return Quad(NamedNode(graph), NamedNode(FILLING_AS), NamedNode(fill), NamedNode(SYSTEM_GRAPH))


def claim_update(graph: str, fill: str) -> str:
    """An update that writes :func:`fill_marker` only if ``graph`` holds no triple and no
    other fill claims it. Both conditions are counts in sub-SELECTs (Virtuoso evaluates an
    OPTIONAL, a FILTER NOT EXISTS or a UNION with a LIMIT there otherwise), the first one of
    at most one triple, so that a large graph is not counted."""
    marker = fill_marker(graph, fill)
    target, system = NamedNode(graph), NamedNode(SYSTEM_GRAPH)
    return (
        f"INSERT {{ GRAPH {system} {{ {marker.triple} }} }} WHERE {{ "
        f"{{ SELECT (COUNT(*) AS ?held) WHERE {{ "
        f"{{ SELECT ?s WHERE {{ GRAPH {target} {{ ?s ?p ?o }} }} LIMIT 1 }} }} }} "
        f"{{ SELECT (COUNT(*) AS ?claims) WHERE {{ "
        f"GRAPH {system} {{ {target} <{FILLING_AS}> ?other }} }} }} "
        f"FILTER(?held + ?claims = 0) }}"
    )


# ---------------------------------------------------------------------------- paging
#: The variable a count of a query's rows is bound to.
COUNT_VARIABLE = "labbrain_rows"


def _form_position(sparql: str) -> int:
    """Where the query form (SELECT, CONSTRUCT, ...) starts: the prologue ends there."""
    for kind, text, position in _tokens(sparql):
        if kind == "word" and text.upper() in QUERY_FORMS:
            return position
    raise ValueError("no query form (SELECT, CONSTRUCT, ASK, DESCRIBE) found")


def _split_select(sparql: str) -> tuple[str, str, str]:
    """(prologue, dataset clauses, the SELECT query without them) of a SELECT query: a query
    used as a sub-SELECT can have neither a prologue nor FROM / FROM NAMED clauses."""
    start = _form_position(sparql)
    prologue, body = sparql[:start], sparql[start:]
    dataset: list[str] = []
    spans: list[tuple[int, int]] = []
    depth = 0
    tokens = list(_tokens(body))
    for index, (kind, text, position) in enumerate(tokens):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        elif kind == "word" and depth == 0 and text.upper() == "FROM":
            rest = tokens[index + 1 : index + 3]
            if rest and rest[0][0] == "word" and rest[0][1].upper() == "NAMED":
                rest = rest[1:]
            if not rest or rest[0][0] != "iri":
                raise ValueError("a FROM clause without an IRI")
            end = rest[0][2] + len(rest[0][1])
            dataset.append(body[position:end])
            spans.append((position, end))
    for begin, end in reversed(spans):
        body = body[:begin] + body[end:]
    return prologue, " ".join(dataset), body


def count_query(sparql: str) -> str:
    """A query counting the rows of SELECT query ``sparql`` (bound to ``?labbrain_rows``)."""
    prologue, dataset, body = _split_select(sparql)
    return f"{prologue}SELECT (COUNT(*) AS ?{COUNT_VARIABLE}) {dataset} WHERE {{ {{ {body} }} }}"


def page_query(sparql: str, variables: Iterable[str], limit: int, offset: int) -> str:
    """Rows ``offset`` to ``offset + limit`` of SELECT query ``sparql``, in a total order: its
    own ORDER BY, with every one of ``variables`` appended as a tie-breaker (or only those,
    when it has none), so that successive pages neither repeat nor miss a row.

    The ordered query is a sub-SELECT and the page is cut outside it: Virtuoso refuses an
    ORDER BY with an OFFSET past its sort limit (10,000 rows by default) but pages a sorted
    sub-SELECT; Oxigraph keeps a sub-SELECT's order too.
    """
    prologue, dataset, body = _split_select(sparql)
    ties = " ".join(f"?{name}" for name in variables)
    depth = 0
    order_end: int | None = None  # where the tie-breakers go
    has_order = False
    previous = ""
    for kind, text, position in _tokens(body):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0:
                order_end = None
        elif kind == "word" and depth == 0:
            word = text.upper()
            if word == "BY" and previous == "ORDER":
                has_order = True
            elif word in ("LIMIT", "OFFSET", "VALUES") and order_end is None:
                order_end = position
        if kind != "space":
            previous = text.upper() if kind == "word" else ""
    clause = f" {ties} " if has_order else f" ORDER BY {ties} "
    ordered = body + clause if order_end is None else body[:order_end] + clause + body[order_end:]
    return f"{prologue}SELECT * {dataset} WHERE {{ {{ {ordered} }} }} LIMIT {limit} OFFSET {offset}"
