"""Search benchmark: labbrain's text search (tantivy) against SQLite FTS5 as labbrain used it.

For each size N this script generates (or reuses) ``bench/out/dg-N.jsonld`` with
``bench/generate.py`` (as ``bench_load.py`` does), loads it into a fresh store in a temporary
directory with ``LabBrain(Settings(store=DIR)).load(FILE)``, and then, in this one process,
puts the same questions to two engines holding the same text:

``fts5``
    a standalone SQLite FTS5 table built here from the rows of labbrain's own index (the
    ``nodes`` table of ``index.sqlite``: ``clean_title`` and ``content``), with the tokenizer,
    weights and query passes of labbrain's FTS5 search (``TextIndex.search`` up to commit
    576f480): ``porter unicode61 remove_diacritics 2``, ``bm25(nodes_fts, 4.0, 1.0)``, the
    nodes holding every word first, then the nodes holding any of them, ``ORDER BY rank
    LIMIT 10``, then snippets and node rows for the hits.
``tantivy``
    labbrain's current search: ``TextIndex(index.sqlite, read_only=True).search(text,
    limit=10)``, which asks the tantivy index beside the SQLite file (``index.fulltext``).

The queries are drawn from the export's nodes with a seeded generator, four kinds (see
``KINDS``): two adjacent words of a random title (rare), the five words or word pairs held by
the most nodes (frequent), a question-shaped sentence of 9-12 words made from a title's words,
and a frequent word filtered to Claims of one creator. Calls of both engines alternate, call
by call, after three warm-up calls per engine and kind. Results go to
``bench/results/search.md`` and ``bench/results/search.json``; see ``bench/README.md``.

Usage::

    python bench/bench_search.py                      # 20000,100000, 30 calls per kind
    python bench/bench_search.py --sizes 1000 --calls 5
    python bench/bench_search.py --render bench/results/search.json   # search.md again
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_load import (
    _loadavg,
    _positive,
    _sizes,
    _version,
    disk_usage,
    ensure_export,
    machine_info,
)
from bench_mcp import (
    STOPWORDS,
    _describe,
    _fmt,
    _left,
    _search_words,
    frequent_terms,
    percentile,
    source_revision,
)
from labbrain.core import LabBrain
from labbrain.index.fulltext import FullText, FullTextDoc, query_words
from labbrain.index.text import TextIndex
from labbrain.settings import Settings
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"

ENGINES: tuple[str, ...] = ("fts5", "tantivy")
"""The engines, in the order of the first call; later calls alternate it."""

KINDS: tuple[tuple[str, str], ...] = (
    ("rare", "two adjacent words of a random title"),
    ("frequent", "one of the 5 words or word pairs held by the most nodes"),
    ("question", "a 9-12 word question made of a title's words"),
    ("filtered", "a frequent word, node type Claim and one creator"),
)
"""The kinds of query, in the order of each round of calls: (key, description)."""

FREQUENT_TERMS = 5
"""How many of the most frequent words and word pairs the frequent queries cycle through."""

LIMIT = 10
WARMUP = 3
MB = 1_000_000

FTS5_COMMIT = "576f480"
"""The last commit whose ``TextIndex.search`` ran on SQLite FTS5 (what :class:`Fts5` mirrors)."""

Record = dict[str, Any]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The FTS5 engine, as labbrain used it
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)

_FTS5_SCHEMA = """
CREATE TABLE nodes (
    id INTEGER PRIMARY KEY,
    graph TEXT NOT NULL,
    iri TEXT NOT NULL,
    uid TEXT NOT NULL,
    clean_title TEXT NOT NULL,
    content TEXT NOT NULL,
    node_type TEXT NOT NULL,
    creator TEXT,
    created TEXT,
    modified TEXT,
    images INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE nodes_fts USING fts5(
    clean_title, content, content='nodes', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
"""
_NODE_COLUMNS = "graph, iri, uid, clean_title, node_type, creator, created, modified, images"


def fts_words(text: str) -> list[str]:
    """The words of ``text`` as quoted FTS5 strings, deduplicated (as labbrain quoted them)."""
    return list(dict.fromkeys(f'"{token}"' for token in _TOKEN_RE.findall(text)))


@dataclass(frozen=True)
class Hit:
    """One search result: the node's IRI, its score and its snippet."""

    iri: str
    score: float
    snippet: str


class Fts5:
    """An SQLite file holding a copy of labbrain's node rows and an FTS5 table over them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(str(path))
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")

    def build(self, labbrain_index: Path) -> Record:
        """Copy the node rows of ``labbrain_index`` (not timed), then fill the FTS5 table from
        them in one transaction (timed, as labbrain's load filled it)."""
        self.db.executescript(_FTS5_SCHEMA)
        self.db.execute("ATTACH DATABASE ? AS lb", (f"file:{labbrain_index}?mode=ro",))
        with self.db:
            self.db.execute(
                "INSERT INTO nodes SELECT id, graph, iri, uid, clean_title, content, node_type,"
                " creator, created, modified, images FROM lb.nodes"
            )
        self.db.execute("DETACH DATABASE lb")
        started = time.perf_counter()
        with self.db:
            self.db.execute(
                "INSERT INTO nodes_fts (rowid, clean_title, content)"
                " SELECT id, clean_title, content FROM nodes"
            )
        seconds = time.perf_counter() - started
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = int(self.db.execute("SELECT count(*) FROM nodes").fetchone()[0])
        size = self.db.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'nodes_fts%'"
        ).fetchone()[0]
        return {"seconds": seconds, "rows": rows, "bytes": int(size or 0)}

    @staticmethod
    def _filters(node_type: str | None, creator: str | None) -> tuple[str, list[Any]]:
        sql, args = "", []
        if node_type:
            sql += " AND lower(n.node_type) IN (?)"
            args.append(node_type.lower())
        if creator:
            sql += " AND n.creator = ?"
            args.append(creator)
        return sql, args

    def search(
        self,
        text: str,
        *,
        limit: int = LIMIT,
        node_type: str | None = None,
        creator: str | None = None,
    ) -> list[Hit]:
        """labbrain's FTS5 search by relevance: every word, then any word, then snippets and
        node rows of the hits."""
        words = fts_words(text)
        if not words:
            return []
        filters, filter_args = self._filters(node_type, creator)
        ranked: list[tuple[int, float]] = []
        for match in dict.fromkeys([" ".join(words), " OR ".join(words)]):
            seen = [rowid for rowid, _ in ranked]
            exclude = f" AND n.id NOT IN ({','.join('?' * len(seen))})" if seen else ""
            sql = (
                "SELECT n.id, bm25(nodes_fts, 4.0, 1.0) AS rank"
                " FROM nodes_fts JOIN nodes n ON n.id = nodes_fts.rowid"
                f" WHERE nodes_fts MATCH ?{filters}{exclude} ORDER BY rank, n.iri LIMIT ?"
            )
            rows = self.db.execute(sql, [match, *filter_args, *seen, limit - len(ranked)])
            ranked.extend((int(rowid), float(rank)) for rowid, rank in rows)
            if len(ranked) >= limit:
                break
        if not ranked:
            return []
        ids = [rowid for rowid, _ in ranked]
        marks = ",".join("?" * len(ids))
        snippets = dict(
            self.db.execute(
                "SELECT rowid, snippet(nodes_fts, -1, '**', '**', ' … ', 24) FROM nodes_fts"
                f" WHERE nodes_fts MATCH ? AND rowid IN ({marks})",
                [" OR ".join(words), *ids],
            )
        )
        nodes = {
            row[0]: row[1:]
            for row in self.db.execute(
                f"SELECT id, {_NODE_COLUMNS} FROM nodes WHERE id IN ({marks})", ids
            )
        }
        return [Hit(str(nodes[rowid][1]), -rank, snippets.get(rowid, "")) for rowid, rank in ranked]

    def scored_rows(
        self, text: str, *, node_type: str | None = None, creator: str | None = None
    ) -> int:
        """How many rows the search scores: those holding every word, plus, when they are
        fewer than the limit, those holding any word (not timed)."""
        words = fts_words(text)
        filters, args = self._filters(node_type, creator)
        sql = (
            "SELECT count(*) FROM nodes_fts JOIN nodes n ON n.id = nodes_fts.rowid"
            f" WHERE nodes_fts MATCH ?{filters}"
        )
        every = int(self.db.execute(sql, [" ".join(words), *args]).fetchone()[0])
        if every >= LIMIT or len(words) < 2:
            return every
        return every + int(self.db.execute(sql, [" OR ".join(words), *args]).fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        self.db.close()


# --------------------------------------------------------------------------------------------
# Queries, drawn from the export's nodes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """One search: its text and filters."""

    text: str
    node_type: str | None = None
    creator: str | None = None

    def as_dict(self) -> Record:
        """A JSON-ready view."""
        found: Record = {"text": self.text}
        if self.node_type:
            found["node_type"] = self.node_type
        if self.creator:
            found["creator"] = self.creator
        return found


def plan_queries(
    rows: list[Record], count: int, seed: int
) -> tuple[dict[str, list[Query]], Record]:
    """``count`` queries of every kind of :data:`KINDS`, and the frequent terms they use.

    ``rows`` are the indexed nodes (title as exported, content, node type, creator). Rare
    queries are two adjacent plain words of a random title (letters only, 4+ long, no
    stopwords: ``bench_mcp``'s rule); frequent ones cycle through the :data:`FREQUENT_TERMS`
    words or adjacent word pairs held by the most nodes (``bench_mcp.frequent_terms``);
    questions are ``what does the A B C do to the D E F`` with a random title's plain words;
    filtered queries cycle through the frequent terms with node type Claim and the creator of
    a random Claim.
    """
    rng = random.Random(f"bench-search-{seed}")
    titled = [w for w in (_search_words(str(r["title"])) for r in rows) if len(w) >= 2]
    long_titles = [w for w in titled if len(w) >= 3]
    claims = [r for r in rows if str(r["node_type"]).lower() == "claim" and r["creator"]]
    if not titled or not long_titles or not claims:
        raise RuntimeError("the export has no titles to search for or no Claims with a creator")
    terms = frequent_terms(rows, FREQUENT_TERMS)
    top = sorted(terms["words"] + terms["pairs"], key=lambda t: (-t["nodes"], t["terms"]))
    top = top[:FREQUENT_TERMS]

    def rare() -> Query:
        words = rng.choice(titled)
        start = rng.randrange(len(words) - 1)
        return Query(f"{words[start]} {words[start + 1]}")

    def question() -> Query:
        words = rng.choice(long_titles)[:6]
        half = (len(words) + 1) // 2
        return Query(
            " ".join(["what", "does", "the", *words[:half], "do", "to", "the", *words[half:]])
        )

    plan = {
        "rare": [rare() for _ in range(count)],
        "frequent": [Query(top[i % len(top)]["terms"]) for i in range(count)],
        "question": [question() for _ in range(count)],
        "filtered": [
            Query(top[i % len(top)]["terms"], "Claim", str(rng.choice(claims)["creator"]))
            for i in range(count)
        ],
    }
    return plan, {"top": top, "words": terms["words"], "pairs": terms["pairs"]}


# --------------------------------------------------------------------------------------------
# One size
# --------------------------------------------------------------------------------------------


def load_store(store: Path, file: Path) -> tuple[Record, Path]:
    """Load ``file`` into a new store at ``store``; the seconds of the whole load and of the
    text index writes inside it (SQLite rows and tantivy, and tantivy's share)."""
    spent = {"index": 0.0, "fulltext": 0.0}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - begin

        return wrapper

    started = time.perf_counter()
    brain = LabBrain(Settings(store=str(store)))
    opened = time.perf_counter()
    index = brain.index
    index.replace_graph = timed("index", index.replace_graph)  # type: ignore[method-assign]
    engine = getattr(index, "_fulltext", None)
    if engine is not None:
        engine.replace = timed("fulltext", engine.replace)
    report = brain.load(str(file))
    loaded = time.perf_counter()
    path = index.path
    brain.close()
    closed = time.perf_counter()
    assert path is not None
    return {
        "seconds": closed - started,
        "open_s": opened - started,
        "load_s": loaded - opened,
        "close_s": closed - loaded,
        "index_write_s": spent["index"],
        "fulltext_write_s": spent["fulltext"] if engine is not None else None,
        "nodes": report.nodes,
        "indexed": report.indexed,
        "quads": report.quads,
        "graph": report.graph,
        "load_id": report.load_id,
    }, path


def build_tantivy(directory: Path, index_path: Path, graph: str, load_id: str) -> Record:
    """Build a second tantivy index from the node rows, as the load does, timed on its own."""
    db = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT graph, iri, clean_title, content, node_type, creator, created, modified"
        " FROM nodes WHERE graph = ?",
        (graph,),
    ).fetchall()
    db.close()
    docs = [FullTextDoc(*row) for row in rows]
    started = time.perf_counter()
    FullText(directory, create=True).replace(graph, load_id, docs)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rows": len(docs), "bytes": disk_usage(directory)[0]}


def summarise(seconds: list[float]) -> Record:
    """p50 and p95 (interpolated), mean, min and max, in seconds."""
    return {
        "p50_s": percentile(seconds, 50),
        "p95_s": percentile(seconds, 95),
        "mean_s": statistics.fmean(seconds) if seconds else None,
        "min_s": min(seconds, default=None),
        "max_s": max(seconds, default=None),
    }


def overlap(a: list[str], b: list[str]) -> float:
    """The share of the longer of two top lists that both hold (1.0 when both are empty)."""
    longest = max(len(a), len(b))
    return len(set(a) & set(b)) / longest if longest else 1.0


def describe_hits(
    queries: list[Query], calls: list[Record], nodes: dict[str, tuple[list[str], int, int]]
) -> Record:
    """What an engine's hits are like: the share whose title holds every word of the query
    (as tantivy's analyser stems them), and the median title and content length (characters).
    ``nodes`` maps a uid to (title words, title length, content length)."""
    in_title: list[float] = []
    titles: list[int] = []
    contents: list[int] = []
    for query, call in zip(queries, calls, strict=True):
        wanted = set(query_words(query.text))
        for uid in call["hits"]:
            words, title, content = nodes[uid]
            in_title.append(float(wanted <= set(words)))
            titles.append(title)
            contents.append(content)
    return {
        "title_holds_all_words": statistics.fmean(in_title) if in_title else None,
        "median_title_chars": statistics.median(titles) if titles else None,
        "median_content_chars": statistics.median(contents) if contents else None,
    }


def measure_size(n: int, args: argparse.Namespace) -> Record:
    """Load, build both engines and time every kind of query at one size."""
    loadavg_start = _loadavg()
    _log(f"N = {n:,}: preparing {args.out_dir / f'dg-{n}.jsonld'}")
    file_info = ensure_export(n, args.seed, args.variant, args.out_dir)
    file = Path(file_info["path"])
    tmp = Path(tempfile.mkdtemp(prefix="labbrain-bench-search-", dir=args.tmp_dir))
    try:
        load, index_path = load_store(tmp / "store", file)
        _log(
            f"  load {load['seconds']:.1f} s (index writes {load['index_write_s']:.1f} s, of "
            f"which tantivy {_fmt(load['fulltext_write_s'], '.1f')} s)"
        )
        fts5 = Fts5(tmp / "fts5.sqlite")
        fts5_build = fts5.build(index_path)
        tantivy_build = build_tantivy(tmp / "rebuild.fulltext", index_path, load["graph"], "x")
        shutil.rmtree(tmp / "rebuild.fulltext", ignore_errors=True)
        tantivy_build["bytes"] = disk_usage(index_path.with_suffix(".fulltext"))[0]
        _log(
            f"  build fts5 {fts5_build['seconds']:.1f} s, tantivy {tantivy_build['seconds']:.1f} s"
        )
        index = TextIndex(index_path, read_only=True)
        rows = [
            {"title": t, "content": c, "node_type": k, "creator": a}
            for t, c, k, a in index._db.execute(
                "SELECT title, content, node_type, creator FROM nodes ORDER BY id"
            )
        ]
        plan, terms = plan_queries(rows, WARMUP + args.calls, args.seed)
        del rows
        _log("  frequent: " + ", ".join(f"{t['terms']} {t['share']:.0%}" for t in terms["top"]))

        def run(engine: str, query: Query) -> list[Hit]:
            if engine == "fts5":
                return fts5.search(query.text, node_type=query.node_type, creator=query.creator)
            return [
                Hit(h.node.iri, h.score, h.snippet)
                for h in index.search(
                    query.text, limit=LIMIT, node_type=query.node_type, creator=query.creator
                )
            ]

        for kind, _ in KINDS:
            for query in plan[kind][:WARMUP]:
                for engine in ENGINES:
                    run(engine, query)
        calls: dict[str, dict[str, list[Record]]] = {
            kind: {engine: [] for engine in ENGINES} for kind, _ in KINDS
        }
        for i in range(WARMUP, WARMUP + args.calls):
            order = ENGINES if i % 2 == 0 else tuple(reversed(ENGINES))
            for kind, _ in KINDS:
                query = plan[kind][i]
                for engine in order:
                    begin = time.perf_counter()
                    hits = run(engine, query)
                    elapsed = time.perf_counter() - begin
                    uids = [h.iri.rstrip("/").rsplit("/", 1)[-1] for h in hits]
                    calls[kind][engine].append({"seconds": elapsed, "hits": uids})
        nodes = {
            str(uid): (query_words(str(title)), len(str(title)), int(chars))
            for uid, title, chars in index._db.execute(
                "SELECT uid, clean_title, length(content) FROM nodes"
            )
        }
        kinds: Record = {}
        for kind, _ in KINDS:
            queries = plan[kind][WARMUP:]
            mine = calls[kind]
            pairs = list(zip(mine["fts5"], mine["tantivy"], strict=True))
            entry: Record = {
                "queries": [q.as_dict() for q in queries],
                "overlap_at_10": statistics.fmean(overlap(a["hits"], b["hits"]) for a, b in pairs),
                "same_first": statistics.fmean(
                    float(a["hits"][:1] == b["hits"][:1]) for a, b in pairs
                ),
                "fts5_scored_rows": statistics.median(
                    fts5.scored_rows(q.text, node_type=q.node_type, creator=q.creator)
                    for q in queries
                ),
            }
            for engine in ENGINES:
                entry[engine] = {
                    **summarise([c["seconds"] for c in mine[engine]]),
                    "hits": statistics.fmean(len(c["hits"]) for c in mine[engine]),
                    **describe_hits(queries, mine[engine], nodes),
                    "calls": mine[engine],
                }
            fast, slow = entry["tantivy"]["p50_s"], entry["fts5"]["p50_s"]
            entry["speedup"] = slow / fast if fast else None
            kinds[kind] = entry
            _log(
                f"  {kind:<9} fts5 p50 {entry['fts5']['p50_s'] * 1000:7.2f} ms  tantivy p50 "
                f"{entry['tantivy']['p50_s'] * 1000:7.2f} ms  speed-up "
                f"{_fmt(entry['speedup'], '.1f')}x  overlap@10 {entry['overlap_at_10']:.2f}"
            )
        index.close()
        fts5.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "n": n,
        "file": file_info,
        "load": load,
        "build": {"fts5": fts5_build, "tantivy": tantivy_build},
        "terms": terms,
        "kinds": kinds,
        "loadavg_start": loadavg_start,
        "loadavg_end": _loadavg(),
    }


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

LATENCY_COLUMNS = (
    "kind",
    "FTS5 p50 ms",
    "FTS5 p95 ms",
    "tantivy p50 ms",
    "tantivy p95 ms",
    "speed-up (p50)",
    "hits FTS5 / tantivy",
    "rows FTS5 ranks (median)",
)
AGREEMENT_COLUMNS = (
    "kind",
    "overlap@10",
    "same first hit",
    "hits with every word in the title FTS5 / tantivy",
    "median title chars of the hits FTS5 / tantivy",
    "median content chars of the hits FTS5 / tantivy",
)
BUILD_COLUMNS = (
    "N",
    "load s",
    "index writes in the load s",
    "of which tantivy s",
    "FTS5 build s",
    "tantivy build s",
    "FTS5 table MB",
    "tantivy directory MB",
)


def latency_rows(size: Record) -> list[list[str]]:
    """One row per kind of query."""
    rows = []
    for kind, _ in KINDS:
        e = size["kinds"][kind]
        f, t = e["fts5"], e["tantivy"]
        rows.append(
            [
                kind,
                _fmt(f["p50_s"], ".2f", 1000),
                _fmt(f["p95_s"], ".2f", 1000),
                _fmt(t["p50_s"], ".2f", 1000),
                _fmt(t["p95_s"], ".2f", 1000),
                _times(e["speedup"]),
                f"{f['hits']:.1f} / {t['hits']:.1f}",
                f"{e['fts5_scored_rows']:,.0f}",
            ]
        )
    return rows


def agreement_rows(size: Record) -> list[list[str]]:
    """One row per kind of query: how far the two engines' hits agree, and what they are."""
    rows = []
    for kind, _ in KINDS:
        e = size["kinds"][kind]
        f, t = e["fts5"], e["tantivy"]
        rows.append(
            [
                kind,
                f"{e['overlap_at_10']:.2f}",
                f"{e['same_first']:.0%}",
                f"{_fmt(f.get('title_holds_all_words'), '.0%')} / "
                f"{_fmt(t.get('title_holds_all_words'), '.0%')}",
                f"{_fmt(f.get('median_title_chars'), '.0f')} / "
                f"{_fmt(t.get('median_title_chars'), '.0f')}",
                f"{_fmt(f.get('median_content_chars'), '.0f')} / "
                f"{_fmt(t.get('median_content_chars'), '.0f')}",
            ]
        )
    return rows


def build_row(size: Record) -> list[str]:
    """The load, build and size figures of one size."""
    load, fts5, tantivy = size["load"], size["build"]["fts5"], size["build"]["tantivy"]
    return [
        f"{size['n']:,}",
        f"{load['seconds']:.1f}",
        f"{load['index_write_s']:.1f}",
        _fmt(load["fulltext_write_s"], ".1f"),
        f"{fts5['seconds']:.1f}",
        f"{tantivy['seconds']:.1f}",
        f"{fts5['bytes'] / MB:.1f}",
        f"{tantivy['bytes'] / MB:.1f}",
    ]


METHOD_LINES: tuple[str, ...] = (
    "## What is compared",
    "",
    "Both engines run in this one process and answer the same queries over the same text: "
    "the node rows of labbrain's index (`index.sqlite`, table `nodes`, columns `clean_title` "
    "and `content`) after `LabBrain(Settings(store=DIR)).load(FILE)`.",
    "",
    f"- **FTS5**: a standalone SQLite FTS5 table built by the benchmark from those rows, as "
    f"labbrain's index held it up to commit {FTS5_COMMIT}: external content over a copy of "
    "the `nodes` table, tokenizer `porter unicode61 remove_diacritics 2`; the search is that "
    "commit's `TextIndex.search` by relevance: `bm25(nodes_fts, 4.0, 1.0)`, the nodes holding "
    "every word first (`ORDER BY rank, n.iri LIMIT 10`), then, when fewer than 10, the nodes "
    "holding any word, then one query for the hits' snippets "
    "(`snippet(nodes_fts, -1, '**', '**', ' … ', 24)`) and one for their node rows.",
    "- **tantivy**: labbrain's current search, "
    "`TextIndex(index.sqlite, read_only=True).search(text, limit=10)` on the loaded store: "
    "the same two passes in the tantivy index `index.fulltext` (BM25, block-max WAND), then "
    "the node row and a snippet of each hit.",
    "",
    "Queries are drawn from the export's nodes with a seeded generator, never chosen by "
    "hand; the `kind` column of the tables:",
    "",
    "- `rare`: two adjacent plain words (letters only, at least 4 long, not a stop word) of a "
    "random node's title, such as `actin endocytic`;",
    "- `frequent`: the 5 words or adjacent word pairs held by the most nodes, in turn "
    "(document frequency over titles and contents without the front matter and URLs, words "
    "of at least 4 letters, skipping a stop list of about 100 common English words: "
    "`bench_mcp.py`'s `frequent_terms`); listed per size below;",
    "- `question`: `what does the A B C do to the D E F`, with 3 to 6 plain words of a random "
    "title (9 to 12 words in all);",
    "- `filtered`: the frequent terms in turn, with node type Claim and the creator of a "
    "random Claim.",
    "",
    "Each engine first answers 3 warm-up queries of every kind; then every timed call of "
    "every kind goes to both engines one after the other, the first engine alternating from "
    "call to call. A call is timed around the search function, snippets and node rows "
    "included. p95 is interpolated between ranks; the speed-up is FTS5's p50 divided by "
    "tantivy's. *Hits* is the mean number of results (at most 10); *rows FTS5 ranks* is the "
    "median number of rows its passes match, filters applied (every word, plus any word when "
    "the first pass found fewer than 10), counted outside the timing: FTS5 scores every one "
    "of them before it returns the best 10 (with filters it also reads every row holding the "
    "words to test them). *overlap@10* is the mean share of the longer top list that both "
    "engines return (order ignored), *same first hit* the share of calls whose first results "
    "agree; the agreement table also gives, per engine, the share of hits whose title holds "
    "every query word (as tantivy's analyser stems them; never for the questions, whose "
    "`what does the ... do to the` is in no title) and the median title and content length "
    "of the hits, in characters.",
    "",
    "Build and size: *load s* is the whole `LabBrain(...)`, `.load(FILE)` and `.close()`; "
    "*index writes in the load* is the time spent in the text index's `replace_graph` during "
    "the load (SQLite rows, links, tantivy), which runs beside the store's bulk write, and "
    "*of which tantivy* is the tantivy commit inside it. *FTS5 build* fills the FTS5 table "
    "from the node rows in one transaction (as the old load did); *tantivy build* builds a "
    "second tantivy index from the same rows, the way the load does, timed on its own. *FTS5 "
    "table MB* is the pages of the FTS5 shadow tables (`dbstat`), *tantivy directory MB* the "
    "disk usage of `index.fulltext`; neither includes the node rows, which both keep in "
    "SQLite. MB are 10^6 bytes.",
)

CAVEAT_LINES: tuple[str, ...] = (
    "## Caveats",
    "",
    "- **The scores differ slightly, so the top 10s differ.** Both weigh a title match as 4 "
    "content matches and both give a word Okapi BM25's weight "
    "`ln((N - n + 0.5) / (n + 0.5))`, at least 10^-6 (tantivy through a boost per word). But "
    "FTS5's length normalisation counts the row's length over all columns, the title once, "
    "while tantivy indexes the title 4 times in one field, so its document length counts the "
    "title 4 times. For the lab's common words (held by more than half the nodes) the weight "
    "is the 10^-6 floor in both, the scores of the top rows are close, and these length "
    "differences reorder them: the frequent kind agrees least. tantivy also scores in 32-bit "
    "floats, FTS5 in 64-bit, and the stemmers differ (FTS5's Porter, tantivy's Snowball "
    "English), which can change which nodes match a word at all.",
    "- **The FTS5 side is rebuilt here, not the old code.** It runs the SQL of the old "
    "`TextIndex.search` against a table built the same way, but on its own connection "
    "(default page cache) and without the class around it; the old index's freshness checks "
    "cost nothing per search and are not included on either side.",
    "- **Warm only.** Both indexes are in the page cache and every engine answered warm-up "
    "queries first; a first search after a start, which opens the files, is not measured. "
    "The frequent and filtered kinds repeat 5 terms, so their postings stay hot.",
    "- **A shared machine.** Other work ran beside the benchmark (see the load averages: "
    "on 2 cores, anything above 2 means waiting for a core). The engines alternate call by "
    "call, so both see the same machine, but the absolute milliseconds, the p95s most, and "
    "the load and build seconds move with the load: compare within one run, and the runs "
    "with each other for how much they move. On a quiet machine all of them are lower "
    "(`load.md` measured the 100,000-node load at 16 s).",
    "- **The load's index share overlaps the store's write.** *Index writes in the load* "
    "run in a thread beside the bulk write, so on a busy machine they include time spent "
    "waiting for a core and for Python's lock; the separate *tantivy build* is the cleaner "
    "figure for tantivy's cost.",
    "- **One synthetic lab.** The exports come from `generate.py`, whose vocabulary is "
    "small: a few words are very common (the frequent terms above), and even the rare "
    "queries' two title words are held together by thousands of nodes at 100,000 (*rows "
    "FTS5 ranks*). A real lab's word frequencies, title lengths and content sizes differ.",
)


def _times(ratio: float | None) -> str:
    """A speed-up: ``3.4x`` below 10, ``57x`` from 10 on."""
    if ratio is None:
        return "—"
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def _kind_cells(size: Record) -> str:
    """``rare 13.0 -> 1.1 ms (12x)`` for every kind of one size."""
    parts = []
    for kind, _ in KINDS:
        e = size["kinds"][kind]
        parts.append(
            f"{kind} {_fmt(e['fts5']['p50_s'], '.1f', 1000)} → "
            f"{_fmt(e['tantivy']['p50_s'], '.1f', 1000)} ms ({_times(e['speedup'])})"
        )
    return ", ".join(parts)


def finding_lines(result: Record) -> list[str]:
    """The "what this shows" paragraphs, from the figures of every run."""
    runs = result["runs"]
    largest = max(result["options"]["sizes"])
    smallest = min(result["options"]["sizes"])
    named = len(runs) > 1
    lines = ["## What this shows", ""]
    at_largest = []
    for run in runs:
        for size in run["sizes"]:
            if size["n"] == largest:
                label = f"run {run['run']}: " if named else ""
                at_largest.append(label + _kind_cells(size))
    lines.append(
        f"At {largest:,} nodes the median search (FTS5 p50 → tantivy p50) was: "
        + "; ".join(at_largest)
        + ". FTS5's time follows the number of rows a query matches (the *rows FTS5 ranks* "
        "column), since it scores them all before it keeps the best 10: it is highest for the "
        "lab's frequent words and for questions, whose any-word pass matches nearly every node "
        "through words like `the` (the filtered queries rank few rows, but FTS5 still reads "
        "every row holding the word to test the filters). tantivy skips the blocks of postings "
        "that cannot reach the top 10, so a frequent word costs it about what a rare one does; "
        "a question of up to 12 words, most of them in every node, costs it a few times more, "
        "still a few milliseconds. With filters it must also intersect the word's postings with "
        "those of the node type and the creator, which prunes less well: the filtered queries "
        "are among its slower ones."
    )
    if largest != smallest:
        growth = []
        for run in runs:
            by_n = {size["n"]: size for size in run["sizes"]}
            for kind in ("frequent", "question"):
                small, large = by_n[smallest]["kinds"][kind], by_n[largest]["kinds"][kind]
                growth.append(
                    f"{kind}{' (run ' + str(run['run']) + ')' if named else ''}: FTS5 "
                    f"{_fmt(small['fts5']['p50_s'], '.1f', 1000)} → "
                    f"{_fmt(large['fts5']['p50_s'], '.1f', 1000)} ms, tantivy "
                    f"{_fmt(small['tantivy']['p50_s'], '.1f', 1000)} → "
                    f"{_fmt(large['tantivy']['p50_s'], '.1f', 1000)} ms"
                )
        lines += [
            "",
            f"From {smallest:,} to {largest:,} nodes: " + "; ".join(growth) + ".",
        ]
    builds = []
    for run in runs:
        for size in run["sizes"]:
            if size["n"] == largest:
                f, t = size["build"]["fts5"], size["build"]["tantivy"]
                builds.append(
                    f"{'run ' + str(run['run']) + ': ' if named else ''}FTS5 "
                    f"{f['seconds']:.1f} s and {f['bytes'] / MB:.0f} MB, tantivy "
                    f"{t['seconds']:.1f} s and {t['bytes'] / MB:.0f} MB (the whole load "
                    f"{size['load']['seconds']:.0f} s)"
                )
    lines += [
        "",
        "The price is paid at build time: tantivy takes longer to build than the FTS5 table "
        "(one writer thread), though its directory is smaller than the FTS5 table, since it "
        f"keeps no positions. At {largest:,} nodes: " + "; ".join(builds) + ".",
    ]
    agreement = []
    last: Record | None = None
    for run in runs:
        for size in run["sizes"]:
            if size["n"] == largest:
                last = size
                cells = ", ".join(
                    f"{kind} {size['kinds'][kind]['overlap_at_10']:.2f}" for kind, _ in KINDS
                )
                agreement.append(f"{'run ' + str(run['run']) + ': ' if named else ''}{cells}")
    lines += [
        "",
        f"The two engines' top 10s overlap (mean overlap@10 at {largest:,} nodes) "
        + "; ".join(agreement)
        + ". Both return as many hits; the differences are in which of many close candidates "
        "make the top 10 and in their order. FTS5 divides by the length of the whole row; "
        "tantivy's length counts the title 4 times (see the first caveat).",
    ]
    if last is not None:
        looks = []
        for kind in ("rare", "frequent"):
            f, t = last["kinds"][kind]["fts5"], last["kinds"][kind]["tantivy"]
            if "title_holds_all_words" not in f:
                continue
            looks.append(
                f"{kind}: {_fmt(f['title_holds_all_words'], '.0%')} against "
                f"{_fmt(t['title_holds_all_words'], '.0%')} of the hits hold every word in "
                f"the title, median titles of {_fmt(f['median_title_chars'], '.0f')} against "
                f"{_fmt(t['median_title_chars'], '.0f')} characters and contents of "
                f"{_fmt(f['median_content_chars'], '.0f')} against "
                f"{_fmt(t['median_content_chars'], '.0f')}"
            )
        if looks:
            lines += [
                "",
                f"What the hits are like at {largest:,} nodes (FTS5 against tantivy, last run): "
                + "; ".join(looks)
                + ".",
            ]
    return lines


def render_markdown(result: Record) -> str:
    """The ``search.md`` report."""
    m = result["machine"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    lines = [
        "# Search benchmark: tantivy against SQLite FTS5",
        "",
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}",
        f"- OS: {m['os']}; Python {m['python']}",
        f"- Versions: labbrain {v['labbrain']} ({_describe(result['source'])}), tantivy "
        f"{v['tantivy']}, SQLite {v['sqlite']}, pyoxigraph {v['pyoxigraph']}",
        f"- Stores in: {m['store_tmp_dir']} ({m['store_tmp_fs']}); load average at start "
        f"{result['loadavg_start']}, at end {result['loadavg_end']}",
        f"- {result['options']['calls']} timed calls per engine and kind after {WARMUP} "
        f"warm-up calls, limit {LIMIT}; the engines alternate call by call",
        "",
    ]
    lines += finding_lines(result)
    for run in result["runs"]:
        title = (
            f"Run {run['run']} of {len(result['runs'])}" if len(result["runs"]) > 1 else "Results"
        )
        lines += ["", f"## {title}", ""]
        lines += _left(BUILD_COLUMNS, [build_row(size) for size in run["sizes"]])
        for size in run["sizes"]:
            top = ", ".join(f"`{t['terms']}` {t['share']:.0%}" for t in size["terms"]["top"])
            lines += [
                "",
                f"### N = {size['n']:,}, run {run['run']} (load average {size['loadavg_start']} "
                f"at start, {size['loadavg_end']} at end)",
                "",
                f"Frequent terms (share of the nodes holding them): {top}.",
                "",
            ]
            lines += _left(LATENCY_COLUMNS, latency_rows(size))
            lines += ["", "Agreement of the top 10s:", ""]
            lines += _left(AGREEMENT_COLUMNS, agreement_rows(size))
    lines += ["", *METHOD_LINES, "", *CAVEAT_LINES, "", "## Inputs", ""]
    seen: set[str] = set()
    for run in result["runs"]:
        for size in run["sizes"]:
            f = size["file"]
            if f["sha256"] in seen:
                continue
            seen.add(f["sha256"])
            lines.append(
                f"- N = {size['n']:,}: `{Path(f['path']).name}`, {f['bytes']:,} bytes, seed "
                f"{f['seed']}, variant {f['variant']}, sha256 `{f['sha256']}`"
            )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(
        prog="bench_search.py",
        description="labbrain's text search (tantivy) against SQLite FTS5, side by side.",
    )
    parser.add_argument("--sizes", type=_sizes, default=[20_000, 100_000], help="node counts")
    parser.add_argument("--calls", type=_positive, default=30, help="timed calls per kind")
    parser.add_argument(
        "--runs", type=_positive, default=1, help="repeat everything this many times"
    )
    parser.add_argument("--seed", type=int, default=0, help="generator and query seed")
    parser.add_argument("--variant", default="2025-12", help="exporter variant")
    parser.add_argument("--tmp-dir", default=None, help="parent of the throwaway stores")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="generated exports")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="results")
    parser.add_argument("--name", default="search", help="results file name, without .md / .json")
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        help="write NAME.md again from this results JSON instead of running",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> Record:
    """Every run and size; the complete result."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    machine = machine_info(args.tmp_dir)
    machine["versions"]["tantivy"] = _version("tantivy")
    machine["versions"]["sqlite"] = sqlite3.sqlite_version
    loadavg_start = _loadavg()
    runs = []
    for index in range(args.runs):
        _log(f"run {index + 1} of {args.runs}")
        runs.append({"run": index + 1, "sizes": [measure_size(n, args) for n in args.sizes]})
    return {
        "started": started.isoformat(timespec="seconds"),
        "elapsed_seconds": time.perf_counter() - clock,
        "command": "python bench/bench_search.py " + " ".join(sys.argv[1:]),
        "machine": machine,
        "source": source_revision(),
        "options": {
            "sizes": args.sizes,
            "calls": args.calls,
            "runs": args.runs,
            "warmup": WARMUP,
            "limit": LIMIT,
            "seed": args.seed,
            "variant": args.variant,
            "frequent_terms": FREQUENT_TERMS,
            "stopwords": sorted(STOPWORDS),
        },
        "kinds": dict(KINDS),
        "loadavg_start": loadavg_start,
        "loadavg_end": _loadavg(),
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and write ``NAME.md`` and ``NAME.json``."""
    args = parse_args(argv)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    if args.render is not None:
        result = json.loads(args.render.read_text(encoding="utf-8"))
    else:
        result = run(args)
        write_result(args.results_dir / f"{args.name}.json", json.dumps(result, indent=2) + "\n")
    markdown = render_markdown(result)
    write_result(args.results_dir / f"{args.name}.md", markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
