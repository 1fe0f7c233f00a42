"""The links read model: every node's typed relations and text links, as index lookups.

One row per link of a dataset graph: (source, destination, kind, label), ``kind`` ``typed`` (a
relation through a relationDef, ``label`` its label) or ``text`` (a wikilink, page URL or
textRefersToNode; ``label`` NULL). The rows are exactly the links the ``node_edges`` template
finds, between IRIs and without duplicates, so that a node's links in both directions, or those
of a whole breadth-first frontier, are a few probes of two covering indexes (one per direction)
instead of one SPARQL query per node.

Each graph's link ends (IRIs) are numbered in ``link_ends`` and the links name their ends by
number: the two direction indexes then hold a few integers per link instead of two long page
URLs (a quarter of the file size, and a third of the write time, at 100,000 nodes). Numbers
belong to one graph, so a graph's links can never reach into another's.

The rows are derived, like the text rows they sit beside: :class:`~labbrain.index.text.TextIndex`
writes them in the transaction that writes a graph's nodes (from a load's own analysis, or from
the store with the ``index_links`` template) and deletes them with those nodes, so they always
belong to the load id the index records for their graph. This module holds the SQL only; every
function takes the open connection and leaves transactions to its caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from operator import itemgetter
from typing import Any, NamedTuple

#: (source, destination, kind, label): one link as a load or a re-index hands it over.
LinkRow = tuple[str, str, str, str | None]

#: The kinds of link, as ``node_edges`` names them.
TYPED = "typed"
TEXT = "text"

LINKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS link_ends (
    id INTEGER PRIMARY KEY,
    graph TEXT NOT NULL,
    iri TEXT NOT NULL,
    UNIQUE (graph, iri)
);
CREATE TABLE IF NOT EXISTS links (
    source INTEGER NOT NULL,
    destination INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('typed', 'text')),
    label TEXT,
    CHECK ((kind = 'typed') = (label IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS links_outgoing ON links (source, destination, kind, label);
CREATE INDEX IF NOT EXISTS links_incoming ON links (destination, source, kind, label);
"""

#: IRIs per ``IN (...)`` list (SQLite's oldest variable limit is 999).
_CHUNK = 500


class NodeLink(NamedTuple):
    """One link of a node as ``node_edges`` gives it: seen from ``node``, towards ``other``."""

    direction: str  # "outgoing" | "incoming"
    kind: str  # "typed" | "text"
    label: str | None  # the relation's label; None for a text link
    other: str


def distinct_links(rows: Iterable[LinkRow]) -> list[LinkRow]:
    """``rows`` without repeats, in first-seen order (a link named twice, say by a wikilink
    and by textRefersToNode, is one link, as in ``node_edges``'s DISTINCT answer)."""
    return list(dict.fromkeys(rows))


def write_links(db: sqlite3.Connection, graph: str, rows: Iterable[LinkRow]) -> int:
    """Add the links ``rows`` of ``graph`` (repeats dropped); return how many were added.

    The caller deletes the graph's old rows first (:func:`delete_links`), in the same write
    transaction, so that the numbers given to the graph's ends here are free."""
    unique = distinct_links(rows)
    ends = sorted({iri for source, destination, _, _ in unique for iri in (source, destination)})
    first = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM link_ends").fetchone()[0])
    number = {iri: first + offset for offset, iri in enumerate(ends)}
    db.executemany(
        "INSERT INTO link_ends (id, graph, iri) VALUES (?, ?, ?)",
        [(number[iri], graph, iri) for iri in ends],
    )
    numbered = [(number[s], number[d], kind, label) for s, d, kind, label in unique]
    numbered.sort(key=itemgetter(0, 1))  # so that one direction's index fills in order
    db.executemany(
        "INSERT INTO links (source, destination, kind, label) VALUES (?, ?, ?, ?)", numbered
    )
    return len(unique)


def change_links(
    db: sqlite3.Connection, graph: str, removed: Iterable[LinkRow], added: Iterable[LinkRow]
) -> None:
    """Remove the links ``removed`` of ``graph`` and add ``added`` (neither with repeats, nor
    ``added`` any link the graph has), leaving no end that ends no link: the rows are then
    those :func:`write_links` writes for the graph's links as they are now."""
    gone = list(removed)
    new = list(added)
    ends = _end_numbers(db, graph, [iri for s, d, _, _ in gone + new for iri in (s, d)])
    for source, destination, kind, label in gone:
        db.execute(
            "DELETE FROM links WHERE source = ? AND destination = ? AND kind = ? AND label IS ?",
            (ends[source], ends[destination], kind, label),
        )
    for iri in sorted({iri for s, d, _, _ in new for iri in (s, d)} - set(ends)):
        ends[iri] = int(
            db.execute(
                "INSERT INTO link_ends (id, graph, iri) VALUES"
                " ((SELECT coalesce(max(id), 0) + 1 FROM link_ends), ?, ?) RETURNING id",
                (graph, iri),
            ).fetchone()[0]
        )
    db.executemany(
        "INSERT INTO links (source, destination, kind, label) VALUES (?, ?, ?, ?)",
        [(ends[s], ends[d], kind, label) for s, d, kind, label in new],
    )
    for iri in {iri for s, d, _, _ in gone for iri in (s, d)}:
        number = ends[iri]
        if not db.execute(
            "SELECT 1 FROM links WHERE source = ? UNION ALL SELECT 1 FROM links"
            " WHERE destination = ? LIMIT 1",
            (number, number),
        ).fetchone():
            db.execute("DELETE FROM link_ends WHERE id = ?", (number,))


def delete_links(db: sqlite3.Connection, graph: str) -> None:
    """Remove every link of ``graph``, and the numbers of its ends."""
    db.execute(
        "DELETE FROM links WHERE source IN (SELECT id FROM link_ends WHERE graph = ?)", (graph,)
    )
    db.execute("DELETE FROM link_ends WHERE graph = ?", (graph,))


#: A node's links in one direction: its end, the link, the other end (``{side}``: which end
#: of the link the node is).
_ONE_WAY = (
    "SELECT node.iri, '{direction}', link.kind, link.label, other.iri"
    " FROM link_ends AS node"
    " JOIN links AS link ON link.{side} = node.id"
    " JOIN link_ends AS other ON other.id = link.{far}"
    " WHERE node.graph = ? AND node.iri IN ({marks})"
)


def links_of(db: sqlite3.Connection, graph: str, iris: Iterable[str]) -> dict[str, list[NodeLink]]:
    """The links of each of ``iris`` in ``graph``, both directions, as ``node_edges`` answers
    for that node: each once, ordered by direction (incoming first), kind (text first),
    label, then the other end (code point order, as SPARQL orders IRIs and plain literals).
    Every IRI asked for is a key, with an empty list when it has no link. A link from a node
    to itself is both outgoing and incoming."""
    wanted = list(dict.fromkeys(iris))
    found: dict[str, list[NodeLink]] = {iri: [] for iri in wanted}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        outgoing = _ONE_WAY.format(
            direction="outgoing", side="source", far="destination", marks=marks
        )
        incoming = _ONE_WAY.format(
            direction="incoming", side="destination", far="source", marks=marks
        )
        sql = f"{outgoing} UNION ALL {incoming} ORDER BY 1, 2, 3, 4, 5"
        args: list[Any] = [graph, *chunk, graph, *chunk]
        for node, direction, kind, label, other in db.execute(sql, args):
            found[node].append(NodeLink(direction, kind, label, other))
    return found


def links_between(
    db: sqlite3.Connection, graph: str, iris: Iterable[str], others: Iterable[str]
) -> dict[str, set[str]]:
    """Each of ``iris`` -> those of ``others`` it is linked to in ``graph`` (either direction,
    typed relations and text links alike; every IRI asked for is a key). The cost is one
    index probe per (node, other) pair, however many links a hub node has elsewhere."""
    wanted = list(dict.fromkeys(iris))
    found: dict[str, set[str]] = {iri: set() for iri in wanted}
    ends = _end_numbers(db, graph, wanted)
    far = _end_numbers(db, graph, others)
    if not ends or not far:
        return found
    names = {number: iri for iri, number in (ends | far).items()}
    near_numbers, far_numbers = list(ends.values()), list(far.values())
    for start in range(0, len(near_numbers), _CHUNK // 2):
        near = near_numbers[start : start + _CHUNK // 2]
        for first in range(0, len(far_numbers), _CHUNK // 2):
            other = far_numbers[first : first + _CHUNK // 2]
            a, b = ",".join("?" * len(near)), ",".join("?" * len(other))
            sql = (
                f"SELECT source, destination FROM links"
                f" WHERE source IN ({a}) AND destination IN ({b})"
                f" UNION SELECT destination, source FROM links"
                f" WHERE destination IN ({a}) AND source IN ({b})"
            )
            for node, linked in db.execute(sql, [*near, *other, *near, *other]):
                found[names[node]].add(names[linked])
    return found


def _end_numbers(db: sqlite3.Connection, graph: str, iris: Iterable[str]) -> dict[str, int]:
    """IRI -> its link-end number in ``graph``, for those of ``iris`` that end a link."""
    wanted = list(dict.fromkeys(iris))
    numbers: dict[str, int] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT iri, id FROM link_ends WHERE graph = ? AND iri IN ({marks})"
        numbers.update(db.execute(sql, [graph, *chunk]).fetchall())
    return numbers
