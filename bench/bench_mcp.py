"""MCP benchmark: labbrain's MCP server against the reference Discourse Graph MCP server.

For each size N this script generates (or reuses) ``bench/out/dg-N.jsonld`` with
``bench/generate.py`` and serves it over MCP stdio twice:

``reference``
    the TypeScript reference server (``DiscourseGraphs/discourse-graph-mcp``), built by this
    script outside the repository (``git clone``, ``npm ci``, ``npm run build``) and started as
    ``node DIR/dist/index.js`` with ``DATA_PATH=FILE``. It parses the whole export into memory
    at start-up and answers from in-memory arrays and maps.
``labbrain``
    ``labbrain --store STORE mcp`` with ``DATA_PATH=FILE``, on a store that already holds the
    export (loaded once beforehand with ``labbrain --store STORE load FILE``, not timed), so
    start-up only checks the file's digest and opens the store.

Both servers are driven by the same client, the ``mcp`` SDK's stdio client, with the same
sequence of tool calls whose arguments are drawn deterministically from the export. Some
tools are called in two ways (:data:`CASES`): search for rare title words and for the
export's most frequent words, the contributions of one creator and of everyone, a random
node and a hub. A third server, the *floor*, has trivial tools on the same ``mcp`` SDK as
labbrain's (:data:`FLOOR_SERVER`, written to a temporary directory at run time): a small
constant answer, and one of the shape and size of labbrain's median ``get_node`` answer;
it is driven by the same client in the same run. The script measures the time from spawning
each server until its first answer, the p50 and p95 latency of each case, and the server
process's peak RSS. Results go to ``bench/results/mcp.md``, ``bench/results/mcp.json`` and the chart
``bench/results/mcp-scaling.png``; see ``bench/README.md``.

Usage::

    python bench/bench_mcp.py --sizes 1000,20000,100000 --calls 30
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, TextContent

from bench_load import (
    _loadavg,
    _md_table,
    _os_name,
    _positive,
    _read_proc,
    _sizes,
    _version,
    ensure_export,
)
from results_file import write_result

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
RESULTS_DIR = BENCH_DIR / "results"

REFERENCE_SOURCE = "https://github.com/DiscourseGraphs/discourse-graph-mcp.git"
"""Where the reference server's source is cloned from (a URL or a local git directory)."""

REFERENCE_COMMIT = "a81362027e48350e8d4059208f136e192900b9fc"
"""The reference commit the published results were measured on (``--reference-commit``)."""

REFERENCE_DIR = Path(tempfile.gettempdir()) / "dg-mcp-reference"
"""Default build directory of the reference server, outside the repository."""

IMAGE_HOST = "firebasestorage.googleapis.com"
"""Where the exports' images live; the reference's ``get_node`` downloads from it."""

SERVERS: tuple[str, ...] = ("reference", "labbrain")
"""The two servers compared."""

RUN_ORDER: tuple[str, ...] = ("reference", "floor", "labbrain")
"""The order of the servers at the first size; later sizes alternate it (reversed)."""

CASES: tuple[tuple[str, str, str], ...] = (
    ("search_nodes", "search_nodes", "rare title words"),
    ("search_nodes.frequent", "search_nodes", "frequent lab words"),
    ("get_node", "get_node", "random node"),
    ("get_linked_nodes", "get_linked_nodes", "random node"),
    ("get_linked_nodes.hub", "get_linked_nodes", "hub claim, both directions"),
    ("get_node_neighborhood", "get_node_neighborhood", "depth 2, random node"),
    ("get_node_neighborhood.hub", "get_node_neighborhood", "depth 2, hub node"),
    ("get_researcher_contributions", "get_researcher_contributions", "one creator"),
    ("get_researcher_contributions.all", "get_researcher_contributions", "everyone (no arguments)"),
    ("get_relationships", "get_relationships", "Supports"),
    ("get_schema", "get_schema", ""),
)
"""What is timed, in the order of each round of calls: (key, tool, kind of call).

A tool called in two ways (rare and frequent search words, one creator and everyone, a random
node and a hub) has one key per way, and each is reported on its own row."""

CASE_TOOL = {key: tool for key, tool, _ in CASES}
CASE_LABEL = {key: label for key, _, label in CASES}

FLOOR_TOOL = "floor"
"""The floor server's one tool: it returns a constant small object, with an output schema
(derived by the SDK from its return type, as labbrain's are), so that the client validates
its structured answer as it validates labbrain's."""

FLOOR_NODE_TOOL = "floor_node"
"""The floor server's second tool: a constant answer of the shape and size of labbrain's
median ``get_node`` answer at 100,000 nodes (a node with its content and five linked nodes,
about 3 KB; compact JSON text plus structured content, as labbrain sends), so that the SDK
and the client do for it what they do for ``get_node``: what is left above it is labbrain's
own work (reading the node) and wrapping."""

FLOOR_SERVER = '''"""A trivial MCP server over stdio: tools returning constant answers.

Written by bench_mcp.py at run time; it measures what the MCP SDK, the stdio pipes and the
client cost on their own (the floor under every tool call). Each tool's return type gives it
an output schema, so the client validates each answer against it, as it does labbrain's
answers: ``floor`` answers a small object, ``floor_node`` an object of the shape and size of
labbrain's median ``get_node`` answer (compact JSON text plus structured content).
"""

import json
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel


class Floor(BaseModel):
    """The constant answer."""

    ok: bool
    name: str


class FloorRef(BaseModel):
    """A linked node, as get_node lists it."""

    uid: str
    dataset: str
    nodeType: str
    title: str
    creator: str | None
    created: str | None
    url: str


class FloorLink(BaseModel):
    """A link of the node."""

    direction: Literal["outgoing", "incoming"]
    kind: Literal["typed", "text"]
    relationshipType: str | None
    node: FloorRef


class FloorNode(FloorRef):
    """A node in full, with its links."""

    modified: str | None
    content: str
    imageUrls: list[str]
    imageCount: int
    linkedNodes: list[FloorLink]


def _ref(i: int) -> dict:
    return {
        "uid": f"floorNd{i:02d}",
        "dataset": "bench-floor",
        "nodeType": "Evidence",
        "title": f"Membrane tension increases coat assembly in budding yeast ({i})",
        "creator": "Maria Akamatsu",
        "created": "2024-03-0{}T10:00:00Z".format(i % 9 + 1),
        "url": f"https://roamresearch.com/#/app/bench/page/floorNd{i:02d}",
    }


NODE = FloorNode(
    **_ref(0),
    modified="2024-03-02T10:00:00Z",
    content=" ".join(["Actin polymerisation against membrane tension in budding yeast."] * 16),
    imageUrls=[],
    imageCount=0,
    linkedNodes=[
        {
            "direction": "outgoing" if i % 2 else "incoming",
            "kind": "typed" if i < 4 else "text",
            "relationshipType": "Supports" if i < 4 else None,
            "node": _ref(i),
        }
        for i in range(1, 6)
    ],
).model_dump(mode="json")
NODE_TEXT = json.dumps(NODE, ensure_ascii=False, separators=(",", ":"))

server = MCPServer("bench-floor")


@server.tool()
def floor() -> Floor:
    """Return a constant small object."""
    return Floor(ok=True, name="floor")


@server.tool()
def floor_node() -> Annotated[CallToolResult, FloorNode]:
    """Return a constant node-sized object: compact JSON text and structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=NODE_TEXT)], structured_content=NODE
    )


if __name__ == "__main__":
    server.run("stdio")
'''
"""Source of the floor server; the same ``mcp`` SDK as labbrain's server, structured output."""

FLOOR_MARGIN_S = 0.001
"""labbrain's ``get_node`` p50 is compared with the floor's p50 plus this."""

FREQUENT_WORDS = 10
"""Frequent-word queries use the export's this many most frequent words and word pairs."""

TARGET_N = 100_000
TARGET_SPEEDUP = 10.0
"""The cases of :data:`SPEEDUP_CASES` must be this many times faster at TARGET_N (p50)."""
SPEEDUP_CASES: tuple[str, ...] = (
    "search_nodes",
    "search_nodes.frequent",
    "get_node_neighborhood.hub",
    "get_researcher_contributions.all",
)
"""The hard variants the speed-up target applies to, each on its own: search with rare and
with frequent words, the neighbourhood of the hub, everyone's contributions."""
TARGET_CASES: tuple[str, ...] = (
    "search_nodes",
    "search_nodes.frequent",
    "get_node_neighborhood",
    "get_node_neighborhood.hub",
)
"""Search and the depth-2 neighbourhood, both ways: the cases with a latency bound at scale
(``bench_scale.py``)."""
NO_SLOWER_SIZES: tuple[int, ...] = (20_000, TARGET_N)
"""At these sizes no case may have a higher p50 than the reference's."""
TARGET_START_S = 1.0
"""labbrain's start-to-first-answer (store already loaded) at most this at TARGET_N."""
TARGET_RSS_MB = 300.0
"""labbrain's peak RSS at most this at TARGET_N."""

MB = 1_000_000
"""Memory and answer sizes are reported in MB of 10^6 bytes."""

_STOPWORD_TEXT = """
    about above after again against among and are because been before being below between
    both but can does doing down during each few for from further had has have having her
    here hers him his how into its itself just more most not now off once only other our ours
    out over own same she should some such than that the their theirs them then there these
    they this those through too under until very was were what when where which while who
    whom why will with within without you your yours
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Common English words never used as search terms (they say little about speed)."""

Record = dict[str, Any]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The reference server: clone and build outside the repository
# --------------------------------------------------------------------------------------------


def _run(argv: Sequence[str], cwd: Path | None = None) -> str:
    """Run a build command, echoing its output to stderr; raise if it fails."""
    _log(f"  $ {shlex.join(argv)}")
    done = subprocess.run(
        list(argv), cwd=cwd, capture_output=True, text=True, check=False, timeout=1800
    )
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({done.returncode}):\n{output}")
    return done.stdout.strip()


def source_revision() -> Record:
    """The git commit of labbrain's tree and whether the files it runs from have changed.

    labbrain runs from the working tree, so uncommitted changes to ``src/``, ``queries/``
    (its SPARQL) or ``ontology/`` change what is measured; ``modified`` says whether any exist
    and ``changes`` is a digest of them (the diff against the commit and the untracked files'
    contents), so that an edit made during the run is noticed even when the tree already had
    local changes.
    """
    root = BENCH_DIR.parent
    commit = _git_head(root)
    paths = ["--", "src", "queries", "ontology"]
    done = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    modified = bool(done.stdout.strip()) if done.returncode == 0 else None
    changes = None
    if modified:
        digest = hashlib.sha256()
        diff = subprocess.run(
            ["git", "-C", str(root), "diff", "HEAD", "--binary", *paths],
            capture_output=True,
            check=False,
        )
        digest.update(diff.stdout)
        untracked = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--others", "--exclude-standard", "-z", *paths],
            capture_output=True,
            check=False,
        )
        for name in sorted(n for n in untracked.stdout.decode().split("\0") if n):
            digest.update(name.encode())
            with contextlib.suppress(OSError):
                digest.update((root / name).read_bytes())
        changes = digest.hexdigest()[:12]
    return {"commit": commit, "modified": modified, "changes": changes}


def _git_head(directory: Path) -> str | None:
    """The commit checked out in ``directory``, or None if it is not a git work tree."""
    done = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_reference(source: str, commit: str | None, directory: Path) -> Record:
    """Clone, install and build the reference server in ``directory`` unless already built.

    A directory that is a checkout of the wanted commit (any commit when ``commit`` is None)
    with ``dist/index.js`` in it is used as it is. Anything else there is an error: the script
    never deletes a directory it did not create.
    """
    entry = directory / "dist" / "index.js"
    head = _git_head(directory) if directory.exists() else None
    built = head is not None and entry.is_file() and (commit is None or head == commit)
    if not built:
        if directory.exists() and any(directory.iterdir()):
            if head is None:
                raise RuntimeError(f"{directory} exists and is not a git checkout; remove it")
            if commit is not None and head != commit:
                _run(["git", "-C", str(directory), "fetch", "--quiet", "origin"])
                _run(["git", "-C", str(directory), "checkout", "--quiet", commit])
        else:
            directory.parent.mkdir(parents=True, exist_ok=True)
            _run(["git", "clone", "--quiet", source, str(directory)])
            if commit is not None:
                _run(["git", "-C", str(directory), "checkout", "--quiet", commit])
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH; install Node.js 18 or newer")
        has_lock = (directory / "package-lock.json").is_file()
        _run([npm, "ci" if has_lock else "install", "--no-audit", "--no-fund"], cwd=directory)
        _run([npm, "run", "build"], cwd=directory)
        if not entry.is_file():
            raise RuntimeError(f"the build did not produce {entry}")
    package = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    sdk_package = directory / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    sdk_version = (
        json.loads(sdk_package.read_text(encoding="utf-8")).get("version")
        if sdk_package.is_file()
        else None
    )
    return {
        "source": source,
        "directory": str(directory),
        "commit": _git_head(directory),
        "version": package.get("version"),
        "sdk_version": sdk_version,
        "entry": str(entry),
        "built_now": not built,
    }


# --------------------------------------------------------------------------------------------
# Tool arguments, drawn deterministically from the export
# --------------------------------------------------------------------------------------------

_TITLE_PREFIX = re.compile(r"^\[\[[A-Z]{3}\]\]\s*-?\s*")
_WORD = re.compile(r"[A-Za-z]+")


def _search_words(title: str) -> list[str]:
    """The plain words of a title usable as search terms: letters only, 4+ long, no stopwords.

    Words are taken from runs of letters that are whole tokens (``barbed-end`` and ``Arp2/3``
    are left out), so both servers' tokenisers see the same word.
    """
    words = []
    for token in _TITLE_PREFIX.sub("", title).split():
        token = token.strip(".,;:()\"'")
        if _WORD.fullmatch(token) and len(token) >= 4 and token.lower() not in STOPWORDS:
            words.append(token.lower())
    return words


_FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)
_LOWER_WORD = re.compile(r"[a-z]+")
_WIKILINK = re.compile(r"\[\[((?:\[\[[^\[\]]*\]\]|[^\[\]])*)\]\]")
"""A ``[[...]]`` link whose text may hold ``[[...]]`` links itself (``[[[[CLM]] - ...]]``)."""


def _text_words(node: Record) -> list[str]:
    """The words of a node's title and content as a reader sees them, lower-case, in order.

    The content's front matter (the title, url, author and date fields every node has) and
    URLs are left out; words are runs of ASCII letters, 4+ long, no stopwords.
    """
    body = _URL.sub(" ", _FRONTMATTER.sub("", str(node.get("content", ""))))
    return [
        w
        for w in _LOWER_WORD.findall(f"{node['title']}\n{body}".lower())
        if len(w) >= 4 and w not in STOPWORDS
    ]


def frequent_terms(nodes: list[Record], top: int) -> Record:
    """The export's ``top`` most frequent words and adjacent word pairs, by document frequency.

    Document frequency is the share of nodes whose title or content holds the word (or the two
    words next to each other once shorter words and stopwords are skipped, such as
    ``membrane tension``). These are the lab's common words; a search for them matches a
    large part of the graph.
    """
    words: dict[str, int] = {}
    pairs: dict[str, int] = {}
    for node in nodes:
        seq = _text_words(node)
        for w in set(seq):
            words[w] = words.get(w, 0) + 1
        for pair in {f"{a} {b}" for a, b in itertools.pairwise(seq)}:
            pairs[pair] = pairs.get(pair, 0) + 1

    def best(counts: dict[str, int]) -> list[Record]:
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        return [{"terms": t, "nodes": c, "share": c / len(nodes)} for t, c in ranked]

    return {"words": best(words), "pairs": best(pairs)}


def link_degrees(
    nodes: list[Record], uids: list[str], graph: list[Any], wikilinks: bool
) -> dict[str, int]:
    """Per node uid, the number of other nodes it links to or is linked from.

    Links are the typed relations (``relationInstance``) and the exporter's
    ``textRefersToNode`` lists, which both servers follow, and with ``wikilinks`` also the
    ``[[title]]`` wikilinks of the content that name a node, which only labbrain follows; in
    either direction.
    """
    known = set(uids)
    by_title = {str(e["title"]): uid for uid, e in zip(uids, nodes, strict=True)}
    linked: dict[str, set[str]] = {uid: set() for uid in uids}

    def link(a: str, b: str) -> None:
        if a != b and a in known and b in known:
            linked[a].add(b)
            linked[b].add(a)

    for entry in graph:
        if isinstance(entry, dict) and entry.get("@type") == "relationInstance":
            source = str(entry.get("source", "")).partition(":")[2]
            target = str(entry.get("destination", "")).partition(":")[2]
            link(source, target)
    for uid, node in zip(uids, nodes, strict=True):
        refs = node.get("textRefersToNode") or []
        for ref in refs if isinstance(refs, list) else [refs]:
            link(uid, str(ref.get("@id", "") if isinstance(ref, dict) else ref).partition(":")[2])
        if wikilinks:
            for title in _WIKILINK.findall(str(node.get("content", ""))):
                if title in by_title:
                    link(uid, by_title[title])
    return {uid: len(others) for uid, others in linked.items()}


def derive_arguments(path: Path, calls: int, seed: int) -> Record:
    """The argument sequences of every case of :data:`CASES` (``calls`` each), from the export.

    Nodes are the page entries both servers treat as discourse nodes (a ``title``, an
    ``@id`` of ``pages:UID``, and not one of the exporter's special types). Uids and creators
    are drawn with one seeded ``random.Random`` stream; rare-word search queries are two
    adjacent plain words of a random node's title, so every query matches at least that node.
    Frequent-word queries are one of the export's most frequent words or word pairs (see
    :func:`frequent_terms`), drawn with a second stream so that the other cases keep their
    arguments. The hub is the node with the most links that both servers follow (typed
    relations and ``textRefersToNode``; see :func:`link_degrees`), ties broken by the links
    labbrain follows; the hub claim is the Claim with the most.
    """
    graph = json.loads(path.read_bytes())["@graph"]
    special = {"nodeSchema", "relationDef", "relationInstance"}
    nodes = [
        e
        for e in graph
        if isinstance(e, dict)
        and "title" in e
        and str(e.get("@id", "")).startswith("pages:")
        and e.get("@type") not in special
    ]
    if not nodes:
        raise RuntimeError(f"{path} has no page nodes")
    rng = random.Random(f"bench-mcp-{seed}")
    uids = [str(e["@id"]).removeprefix("pages:") for e in nodes]
    with_images = {
        uid
        for uid, e in zip(uids, nodes, strict=True)
        if f"https://{IMAGE_HOST}/" in str(e.get("content", ""))
    }
    creators = [str(e["creator"]) for e in nodes if e.get("creator")]
    titled = [w for w in (_search_words(str(e["title"])) for e in nodes) if len(w) >= 2]
    if not titled or not creators:
        raise RuntimeError(f"{path} has no titles to search for or no creators")
    degrees = link_degrees(nodes, uids, graph, wikilinks=False)
    all_degrees = link_degrees(nodes, uids, graph, wikilinks=True)
    del graph
    frequent = frequent_terms(nodes, FREQUENT_WORDS)
    if not frequent["words"]:
        raise RuntimeError(f"{path} has no words to search for")

    def query() -> str:
        words = rng.choice(titled)
        start = rng.randrange(len(words) - 1)
        return f"{words[start]} {words[start + 1]}"

    def hub(kind: str | None) -> Record:
        candidates = [
            (degrees[uid], all_degrees[uid], uid, e)
            for uid, e in zip(uids, nodes, strict=True)
            if kind is None or str(e.get("@type", "")).endswith(f"_{kind}-node")
        ]
        degree, all_links, uid, e = max(candidates, key=lambda c: (c[0], c[1], c[2]))
        return {"uid": uid, "title": str(e["title"]), "links": degree, "all_links": all_links}

    hub_node, hub_claim = hub(None), hub("CLM")
    frequent_rng = random.Random(f"bench-mcp-{seed}-frequent")
    terms = [frequent["words"], frequent["pairs"] or frequent["words"]]
    plan: dict[str, list[dict[str, Any]]] = {
        "search_nodes": [{"query": query(), "limit": 10} for _ in range(calls)],
        "get_node": [{"uid": rng.choice(uids)} for _ in range(calls)],
        "get_linked_nodes": [{"uid": rng.choice(uids)} for _ in range(calls)],
        "get_node_neighborhood": [{"uid": rng.choice(uids), "depth": 2} for _ in range(calls)],
        "get_researcher_contributions": [{"creator": rng.choice(creators)} for _ in range(calls)],
        "get_relationships": [{"relationshipType": "Supports"} for _ in range(calls)],
        "get_schema": [{} for _ in range(calls)],
        "search_nodes.frequent": [
            {"query": frequent_rng.choice(terms[i % 2])["terms"], "limit": 10} for i in range(calls)
        ],
        "get_linked_nodes.hub": [
            {"uid": hub_claim["uid"], "direction": "both"} for _ in range(calls)
        ],
        "get_node_neighborhood.hub": [{"uid": hub_node["uid"], "depth": 2} for _ in range(calls)],
        "get_researcher_contributions.all": [{} for _ in range(calls)],
    }
    degree_values = sorted(degrees.values())
    all_values = sorted(all_degrees.values())
    return {
        "plan": {key: plan[key] for key, _, _ in CASES},
        "nodes": len(nodes),
        "creators": len(set(creators)),
        "get_node_with_images": sum(a["uid"] in with_images for a in plan["get_node"]),
        "frequent_terms": frequent,
        "hub_node": hub_node,
        "hub_claim": hub_claim,
        "median_links": statistics.median(degree_values),
        "median_all_links": statistics.median(all_values),
    }


# --------------------------------------------------------------------------------------------
# The server process: pid and memory from /proc
# --------------------------------------------------------------------------------------------


def _children(pid: int) -> dict[int, int]:
    """Child processes of ``pid`` as {child pid: start time in clock ticks}, from /proc."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may contain spaces.
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            found[int(entry.name)] = int(fields[19])
    return found


def _spawned_child(before: dict[int, int]) -> int | None:
    """The newest child of this process that was not among ``before``."""
    new = {pid: start for pid, start in _children(os.getpid()).items() if before.get(pid) != start}
    return max(new, key=lambda pid: new[pid]) if new else None


def _status_mb(pid: int | None, key: str) -> float | None:
    """A ``kB`` field of /proc/PID/status (VmHWM, VmRSS) in MB, or None."""
    if pid is None:
        return None
    value = _read_proc(f"/proc/{pid}/status", key)
    return int(value.split()[0]) * 1024 / MB if value else None


# --------------------------------------------------------------------------------------------
# One server session over MCP stdio
# --------------------------------------------------------------------------------------------


def _text(result: CallToolResult) -> str:
    """The text content of a tool result, concatenated."""
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def _items(tool: str, text: str) -> tuple[int | None, int | None]:
    """(items returned, items matched before any cap) read from a JSON answer, if present.

    The two servers shape their answers differently; this reads the count each one reports
    for the list that makes up most of the answer.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None

    def size(key: str) -> int | None:
        value = data.get(key)
        return len(value) if isinstance(value, list | dict) else None

    # labbrain says ``listed`` (items in the answer) and ``total`` (items matched); the
    # reference server says ``count`` and ``totalNodes``.
    if tool == "get_node_neighborhood":
        total = data.get("listed", data.get("totalNodes"))
        return total, total
    if tool == "get_researcher_contributions":
        if "researchers" in data:  # the reference, without a creator
            return size("researchers"), size("researchers")
        if "contributions" in data:  # the reference, one creator
            return size("contributions"), data.get("count")
        if data.get("nodes"):  # labbrain, one creator
            return size("nodes"), data.get("total")
        return size("creators"), size("creators")  # labbrain, everyone (no nodes listed)
    if tool == "get_node":
        return size("linkedNodes"), None
    if tool == "get_schema":
        return size("nodeTypes"), None
    count = data.get("listed", data.get("count"))
    return count, data.get("total", count)


def _search_mode(text: str) -> str | None:
    """The mode a labbrain ``search_nodes`` answer says it searched in (None elsewhere)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    mode = data.get("mode") if isinstance(data, dict) else None
    return mode if isinstance(mode, str) else None


def _cut(text: str) -> str | None:
    """What a labbrain answer says about being cut short, or None for a whole answer.

    labbrain's output cap and its list limits mark an answer they shortened with
    ``truncated`` (``true`` beside a ``note``, or an object ``{cutTo, of, kept, hint}``);
    the reference never shortens an answer.
    """
    if '"truncated"' not in text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    marker = data.get("truncated") if isinstance(data, dict) else None
    if not marker:
        return None
    if isinstance(marker, dict):
        return json.dumps(marker, ensure_ascii=False)[:300]
    return str(data.get("note") or "truncated")[:300]


async def call_tools(
    client: Client,
    plan: dict[str, list[dict[str, Any]]],
    cases: dict[str, str],
    call_timeout: float,
) -> Record:
    """Call every case of ``cases`` ({key: tool}) whose tool the server offers, round-robin,
    with the plan's arguments: call i of every case, then call i + 1.

    Each call is timed around ``client.call_tool``, which includes the client's validation of
    structured results against the tool's output schema.
    """
    listed = (await client.list_tools()).tools
    offered = {tool.name for tool in listed}
    validators = {tool.name: _validator(tool.output_schema) for tool in listed}
    keys = [k for k, tool in cases.items() if tool in offered]
    calls: dict[str, list[Record]] = {k: [] for k in keys}
    rounds = max((len(plan[k]) for k in keys), default=0)
    for index in range(rounds):
        for key in keys:
            tool = cases[key]
            call: Record = {"index": index}
            begin = time.perf_counter()
            try:
                result = await client.call_tool(
                    tool, plan[key][index], read_timeout_seconds=call_timeout
                )
            except Exception as error:
                call["seconds"] = time.perf_counter() - begin
                call["exception"] = f"{type(error).__name__}: {error}"
            else:
                call["seconds"] = time.perf_counter() - begin
                text = _text(result)
                call["bytes"] = len(text.encode("utf-8"))
                call["items"], call["matched"] = _items(tool, text)
                mode = _search_mode(text) if tool == "search_nodes" else None
                if mode is not None:
                    call["mode"] = mode
                cut = _cut(text)
                if cut is not None:
                    call["cut"] = cut
                validate = validators.get(tool)
                if validate is not None and result.structured_content is not None:
                    call["validate_s"] = validate(result.structured_content)
                if result.is_error:
                    call["error"] = text[:300]
            calls[key].append(call)
    return {
        "tools_offered": sorted(offered),
        "tools_missing": sorted({t for t in cases.values() if t not in offered}),
        "calls": calls,
    }


def _validator(schema: dict[str, Any] | None) -> Callable[[Any], float] | None:
    """For a tool with an output schema: a function timing one validation of an answer
    against it (median of 5, in seconds), with the jsonschema validator the SDK's client uses
    for it (its time is part of each timed call; it grows with the answer)."""
    if schema is None:
        return None
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]

    check = validator_for(schema)(schema)

    def timed(data: Any) -> float:
        seconds = []
        for _ in range(5):
            begin = time.perf_counter()
            for _error in check.iter_errors(data):
                pass
            seconds.append(time.perf_counter() - begin)
        return statistics.median(seconds)

    return timed


async def run_session(
    server: Record,
    first: tuple[str, dict[str, Any]],
    plan: dict[str, list[dict[str, Any]]] | None,
    cases: dict[str, str],
    mode: str,
    start_timeout: float,
    call_timeout: float,
    errlog: TextIO,
) -> Record:
    """Start ``server``, time its first answer (``first``: a tool and its arguments), then,
    given a plan, time the ``cases`` with :func:`call_tools`; return what was measured.

    The start is timed from just before the spawn until the first answer arrives, so it
    includes the interpreter or runtime start-up, the server's own start-up, the protocol
    handshake and the client's tool listing (the SDK lists tools before it checks the first
    result). A start that takes longer than ``start_timeout`` is abandoned (the SDK then
    closes the server's stdin and, failing that, kills it). Peak RSS is read from /proc
    while the server still runs.
    """
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server["env"]
    )
    record: Record = {"status": "timeout", "timeout_seconds": start_timeout}
    before = _children(os.getpid())
    started = time.perf_counter()
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + start_timeout) as scope:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                ready = time.perf_counter()
                answer = await client.call_tool(*first)
                answered = time.perf_counter()
                scope.deadline = math.inf
                pid = _spawned_child(before)
                record = {
                    "status": "ok",
                    "start_s": answered - started,
                    "handshake_s": ready - started,
                    "first_call_s": answered - ready,
                    "first_tool": first[0],
                    "first_is_error": answer.is_error,
                    "protocol_version": client.protocol_version,
                    "server_name": client.server_info.name if client.server_info else None,
                    "pid": pid,
                    "rss_at_first_answer_mb": _status_mb(pid, "VmRSS"),
                }
                if plan is not None:
                    record.update(await call_tools(client, plan, cases, call_timeout))
                    record["rss_at_end_mb"] = _status_mb(pid, "VmRSS")
                record["peak_rss_mb"] = _status_mb(pid, "VmHWM")
    except Exception as error:
        record["status"] = "error"
        record["error"] = f"{type(error).__name__}: {error}"
    if scope.cancelled_caught:
        record = {"status": "timeout", "timeout_seconds": start_timeout}
    return record


StoreLocation = Path | Sequence[str]
"""Where labbrain's store is: a store directory, or the global ``labbrain`` options that
select it (e.g. ``--endpoint QUERY_URL --gsp-endpoint GSP_URL`` for a remote store)."""


def store_options(store: StoreLocation) -> list[str]:
    """The global ``labbrain`` options that select ``store``: ``--store DIR`` for a
    directory, else the options as given."""
    if isinstance(store, Path):
        return ["--store", str(store)]
    return list(store)


def labbrain_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without ``LABBRAIN_*`` variables (labbrain's default settings),
    plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABBRAIN_")}
    return {**env, **(extra or {})}


def labbrain_load(store: StoreLocation, file: Path, env: Mapping[str, str] | None = None) -> Record:
    """``labbrain --store STORE load FILE`` (or the store's other options, see
    :func:`store_options`) in a child process whose environment is :func:`labbrain_env`
    with ``env``; timed around the process."""
    exe = str(Path(sys.executable).with_name("labbrain"))
    begin = time.perf_counter()
    done = subprocess.run(
        [exe, *store_options(store), "load", str(file)],
        capture_output=True,
        text=True,
        check=False,
        env=labbrain_env(env),
    )
    if done.returncode != 0:
        raise RuntimeError(f"labbrain load failed ({done.returncode}):\n{done.stderr}")
    where = str(store) if isinstance(store, Path) else shlex.join(store)
    return {"seconds": time.perf_counter() - begin, "store": where}


def write_floor_server(directory: Path) -> Path:
    """Write the floor server's script (:data:`FLOOR_SERVER`) into ``directory``."""
    script = directory / "floor_server.py"
    script.write_text(FLOOR_SERVER, encoding="utf-8")
    return script


def server_spec(
    name: str,
    file: Path,
    store: StoreLocation,
    reference: Record,
    env: Mapping[str, str] | None = None,
) -> Record:
    """Command, arguments and extra environment of one server for one export.

    The floor server's script lies next to the store (a directory here; written by
    :func:`write_floor_server`) and runs on this Python, with the same ``mcp`` SDK as
    labbrain's server. labbrain's server is ``labbrain OPTIONS mcp`` (:func:`store_options`)
    with ``DATA_PATH`` and ``env`` added to the few variables the SDK passes on.
    """
    if name == "floor":
        assert isinstance(store, Path), "the floor's script lies beside a store directory"
        return {
            "command": sys.executable,
            "args": [str(store.parent / "floor_server.py")],
            "env": {},
        }
    if name == "labbrain":
        exe = str(Path(sys.executable).with_name("labbrain"))
        return {
            "command": exe,
            "args": [*store_options(store), "mcp"],
            "env": {"DATA_PATH": str(file), **(env or {})},
        }
    node = shutil.which("node") or "node"
    return {"command": node, "args": [reference["entry"]], "env": {"DATA_PATH": str(file)}}


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise_tool(calls: list[Record]) -> Record:
    """p50, p95, min, max and mean (seconds), errors, and typical answer size of one tool."""
    answered = [c for c in calls if "exception" not in c]
    secs = [c["seconds"] for c in answered]
    items = [c["items"] for c in answered if c.get("items") is not None]
    matched = [c["matched"] for c in answered if c.get("matched") is not None]
    errors = [c for c in calls if "exception" in c or "error" in c]
    return {
        "calls": len(calls),
        "answered": len(answered),
        "p50_s": percentile(secs, 50),
        "p95_s": percentile(secs, 95),
        "min_s": min(secs) if secs else None,
        "max_s": max(secs) if secs else None,
        "mean_s": statistics.fmean(secs) if secs else None,
        "errors": len(errors),
        "error_samples": sorted({c.get("exception") or c["error"] for c in errors})[:3],
        "median_bytes": _median([c["bytes"] for c in answered]),
        "max_bytes": max((c["bytes"] for c in answered), default=None),
        "median_items": _median(items),
        "median_matched": _median(matched),
        "validate_s": _median([c["validate_s"] for c in answered if "validate_s" in c]),
        "modes": sorted({c["mode"] for c in answered if "mode" in c}),
        "cut": sum("cut" in c for c in answered),
        "cut_samples": sorted({c["cut"] for c in answered if "cut" in c})[:2],
    }


def summarise_server(runs: list[Record]) -> Record:
    """Start times over every start, and per-case statistics from the session with calls."""
    ok = [r for r in runs if r["status"] == "ok"]
    starts = [r["start_s"] for r in ok]
    main = next((r for r in ok if "calls" in r), None)
    return {
        "starts": len(runs),
        "failed_starts": len(runs) - len(ok),
        "start_median_s": _median(starts),
        "start_min_s": min(starts) if starts else None,
        "start_max_s": max(starts) if starts else None,
        "handshake_median_s": _median([r["handshake_s"] for r in ok]),
        "rss_at_first_answer_mb": _median([r["rss_at_first_answer_mb"] for r in ok]),
        "peak_rss_mb": main["peak_rss_mb"] if main else None,
        "protocol_version": ok[0]["protocol_version"] if ok else None,
        "tools_missing": main["tools_missing"] if main else None,
        "tools": {k: summarise_tool(c) for k, c in main["calls"].items()} if main else {},
    }


def _ratio(ref: float | None, lb: float | None) -> float | None:
    return ref / lb if ref is not None and lb else None


def floor_comparison(summary: Record) -> Record:
    """labbrain's ``get_node`` p50 against the floor's p50 plus :data:`FLOOR_MARGIN_S` (the
    target), and, for information, against the node-sized floor's
    (:data:`FLOOR_NODE_TOOL`): ``node_floor_p50_s`` and ``above_node_floor_s``."""
    tools = summary["floor"]["tools"]
    floor = tools.get(FLOOR_TOOL, {}).get("p50_s")
    node_floor = tools.get(FLOOR_NODE_TOOL, {}).get("p50_s")
    node = summary["labbrain"]["tools"].get("get_node", {}).get("p50_s")
    limit = floor + FLOOR_MARGIN_S if floor is not None else None
    return {
        "goal": f"labbrain get_node p50 within the floor's p50 + {FLOOR_MARGIN_S * 1000:g} ms",
        "floor_p50_s": floor,
        "limit_s": limit,
        "get_node_p50_s": node,
        "above_floor_s": node - floor if node is not None and floor is not None else None,
        "met": node is not None and limit is not None and node <= limit,
        "node_floor_p50_s": node_floor,
        "above_node_floor_s": (
            node - node_floor if node is not None and node_floor is not None else None
        ),
    }


def assess_targets(sizes: list[Record]) -> Record:
    """The targets (at TARGET_N, and no case slower at NO_SLOWER_SIZES) and whether this run
    met each of them."""
    found = [s for s in sizes if s["n"] == TARGET_N]
    if not found:
        return {"n": TARGET_N, "assessed": False, "reason": f"N = {TARGET_N:,} not in --sizes"}
    ref, lb = found[0]["summary"]["reference"], found[0]["summary"]["labbrain"]

    def speedup(key: str) -> Record:
        r = ref["tools"].get(key, {}).get("p50_s")
        b = lb["tools"].get(key, {}).get("p50_s")
        value = _ratio(r, b)
        return {
            "goal": f"{CASE_TOOL[key]} ({CASE_LABEL[key]}) p50 at least {TARGET_SPEEDUP:g}x "
            "faster than the reference",
            "value": value,
            "met": value is not None and value >= TARGET_SPEEDUP,
        }

    slower: dict[str, list[str]] = {}
    for size in sizes:
        if size["n"] not in NO_SLOWER_SIZES:
            continue
        tools = size["summary"]["reference"]["tools"], size["summary"]["labbrain"]["tools"]
        slower[f"{size['n']:,}"] = [
            key
            for key, _, _ in CASES
            if key in tools[0]
            and key in tools[1]
            and tools[0][key].get("p50_s") is not None
            and tools[1][key].get("p50_s") is not None
            and tools[1][key]["p50_s"] > tools[0][key]["p50_s"]
        ]
    start = lb["start_median_s"]
    rss = lb["peak_rss_mb"]
    return {
        "n": TARGET_N,
        "assessed": True,
        **{key: speedup(key) for key in SPEEDUP_CASES},
        "no_slower": {
            "goal": "no case slower than the reference (p50) at "
            + " and ".join(f"{n:,}" for n in NO_SLOWER_SIZES)
            + " nodes",
            "slower": slower,
            "met": len(slower) == len(NO_SLOWER_SIZES) and not any(slower.values()),
        },
        "floor": found[0].get("floor"),
        "start": {
            "goal": f"labbrain start-to-first-answer at most {TARGET_START_S:g} s "
            "(store already loaded)",
            "value": start,
            "met": start is not None and start <= TARGET_START_S,
        },
        "rss": {
            "goal": f"labbrain peak RSS at most {TARGET_RSS_MB:g} MB",
            "labbrain_mb": rss,
            "reference_mb": ref["peak_rss_mb"],
            "met": rss is not None and rss <= TARGET_RSS_MB,
        },
    }


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

COLUMNS: tuple[str, ...] = (
    "tool",
    "reference p50 ms",
    "reference p95 ms",
    "labbrain p50 ms",
    "labbrain p95 ms",
    "speed-up (p50 ref/labbrain)",
    "errors ref / labbrain",
)

SIZE_COLUMNS: tuple[str, ...] = (
    "tool",
    "reference KB (median)",
    "reference items (median)",
    "labbrain KB (median)",
    "labbrain items (median)",
    "labbrain matched (median)",
    "labbrain answers cut short",
    "labbrain client validation ms (median)",
)


def _fmt(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "—" if value is None else format(value * scale, spec)


def _left(columns: Sequence[str], rows: list[list[str]]) -> list[str]:
    """A markdown table (bench_load's) with the first column left-aligned."""
    lines = _md_table(columns, rows)
    lines[1] = "|---|" + lines[1].split("|", 2)[2]
    return lines


def _case_name(key: str) -> str:
    """``search_nodes`` rare title words: the tool and the kind of call."""
    label = CASE_LABEL[key]
    return f"`{CASE_TOOL[key]}` {label}" if label else f"`{CASE_TOOL[key]}`"


def latency_rows(summary: Record) -> list[list[str]]:
    """One row per case, then start-to-first-answer and peak RSS."""
    ref, lb = summary["reference"], summary["labbrain"]
    rows = []
    for key, _, _ in CASES:
        r, b = ref["tools"].get(key), lb["tools"].get(key)
        cells = [_case_name(key)]
        for stats in (r, b):
            if stats is None:
                cells += ["not offered", "not offered"]
            else:
                cells += [_fmt(stats["p50_s"], ".1f", 1000), _fmt(stats["p95_s"], ".1f", 1000)]
        speedup = _ratio(r["p50_s"], b["p50_s"]) if r and b else None
        cells.append(_fmt(speedup, ".1f") + "x" if speedup is not None else "—")
        cells.append(f"{r['errors'] if r else '—'} / {b['errors'] if b else '—'}")
        rows.append(cells)
    starts = f"{ref['starts']} start(s) each, median"
    rows.append(
        [
            f"start-to-first-answer ({starts})",
            _fmt(ref["start_median_s"], ".0f", 1000),
            _fmt(ref["start_max_s"], ".0f", 1000) + " (max)",
            _fmt(lb["start_median_s"], ".0f", 1000),
            _fmt(lb["start_max_s"], ".0f", 1000) + " (max)",
            _fmt(_ratio(ref["start_median_s"], lb["start_median_s"]), ".1f") + "x",
            f"{ref['failed_starts']} / {lb['failed_starts']}",
        ]
    )
    rows.append(
        [
            "peak RSS MB (VmHWM)",
            _fmt(ref["peak_rss_mb"], ".0f"),
            "",
            _fmt(lb["peak_rss_mb"], ".0f"),
            "",
            _fmt(_ratio(ref["peak_rss_mb"], lb["peak_rss_mb"]), ".1f") + "x",
            "",
        ]
    )
    rows.append(
        [
            "RSS MB at first answer (median)",
            _fmt(ref["rss_at_first_answer_mb"], ".0f"),
            "",
            _fmt(lb["rss_at_first_answer_mb"], ".0f"),
            "",
            _fmt(_ratio(ref["rss_at_first_answer_mb"], lb["rss_at_first_answer_mb"]), ".1f") + "x",
            "",
        ]
    )
    return rows


def answer_rows(summary: Record) -> list[list[str]]:
    """Typical answer size per case: KB of JSON text and the number of items returned."""
    ref, lb = summary["reference"], summary["labbrain"]
    rows = []
    for key, _, _ in CASES:
        r, b = ref["tools"].get(key, {}), lb["tools"].get(key, {})
        rows.append(
            [
                _case_name(key),
                _fmt(r.get("median_bytes"), ",.1f", 1 / 1000),
                _fmt(r.get("median_items"), ",.0f"),
                _fmt(b.get("median_bytes"), ",.1f", 1 / 1000),
                _fmt(b.get("median_items"), ",.0f"),
                _fmt(b.get("median_matched"), ",.0f"),
                f"{b['cut']} of {b['answered']}" if "cut" in b else "—",
                _fmt(b.get("validate_s"), ".2f", 1000),
            ]
        )
    return rows


FLOOR_COLUMNS: tuple[str, ...] = (
    "server",
    "p50 ms",
    "p95 ms",
    "start-to-first-answer ms (median)",
    "peak RSS MB",
)


def hub_sentence(arguments: Record) -> str:
    """Which hubs were used and how many links they have, beside the median node."""

    def links(entry: Record, common: str, every: str) -> str:
        text = f"{entry[common]:g} links both servers follow"
        return text + (f", {entry[every]:g} with wikilinks" if every in entry else "")

    node, claim = arguments["hub_node"], arguments["hub_claim"]
    return (
        f"Hub node `{node['uid']}` ({links(node, 'links', 'all_links')}), hub claim "
        f"`{claim['uid']}` ({links(claim, 'links', 'all_links')}); the median node has "
        f"{links(arguments, 'median_links', 'median_all_links')}."
    )


def floor_lines(size: Record) -> list[str]:
    """The floor's row, labbrain's ``get_node`` beside it, and the floor + 1 ms comparison."""
    s = size["summary"]
    f, lb, ref = s["floor"], s["labbrain"], s["reference"]
    stats = f["tools"].get(FLOOR_TOOL, {})
    node_stats = f["tools"].get(FLOOR_NODE_TOOL, {})
    node = lb["tools"].get("get_node", {})
    ref_node = ref["tools"].get("get_node", {})
    rows = [
        [
            f"floor: `{FLOOR_TOOL}` (constant answer)",
            _fmt(stats.get("p50_s"), ".2f", 1000),
            _fmt(stats.get("p95_s"), ".2f", 1000),
            _fmt(f["start_median_s"], ".0f", 1000),
            _fmt(f["peak_rss_mb"], ".0f"),
        ],
        [
            f"floor: `{FLOOR_NODE_TOOL}` (constant node-sized answer)",
            _fmt(node_stats.get("p50_s"), ".2f", 1000),
            _fmt(node_stats.get("p95_s"), ".2f", 1000),
            "",
            "",
        ],
        [
            "labbrain: `get_node`",
            _fmt(node.get("p50_s"), ".2f", 1000),
            _fmt(node.get("p95_s"), ".2f", 1000),
            _fmt(lb["start_median_s"], ".0f", 1000),
            _fmt(lb["peak_rss_mb"], ".0f"),
        ],
        [
            "reference: `get_node`",
            _fmt(ref_node.get("p50_s"), ".2f", 1000),
            _fmt(ref_node.get("p95_s"), ".2f", 1000),
            _fmt(ref["start_median_s"], ".0f", 1000),
            _fmt(ref["peak_rss_mb"], ".0f"),
        ],
    ]
    c = size["floor"]
    verdict = "met" if c["met"] else "NOT met"
    return [
        "Floor: trivial tools on the same `mcp` SDK as labbrain's server (a Python MCP server "
        "with constant answers, structured output with an output schema, which the client "
        "validates as it validates labbrain's answers), over stdio, driven by the same client "
        f"in the same run. `{FLOOR_TOOL}` answers a small object; the client's validation and "
        "the serialisation grow with the answer, so "
        f"`{FLOOR_NODE_TOOL}` answers an object of the shape and size of labbrain's median "
        "`get_node` answer (a node with its content and five linked nodes, about 3 KB, compact "
        "text plus structured content): above it is labbrain's own work (reading the node) "
        "and wrapping. The target is against the small floor:",
        "",
        *_left(FLOOR_COLUMNS, rows),
        "",
        f"- {c['goal']}: {verdict} (get_node {_fmt(c['get_node_p50_s'], '.2f', 1000)} ms, "
        f"floor + {FLOOR_MARGIN_S * 1000:g} ms = {_fmt(c['limit_s'], '.2f', 1000)} ms; "
        f"{_fmt(c['above_floor_s'], '.2f', 1000)} ms above the floor)",
        f"- against the node-sized floor (for information): get_node "
        f"{_fmt(c.get('above_node_floor_s'), '.2f', 1000)} ms above `{FLOOR_NODE_TOOL}` "
        f"({_fmt(c.get('node_floor_p50_s'), '.2f', 1000)} ms)",
    ]


def target_lines(targets: Record) -> list[str]:
    """The targets, one bullet each, with this run's verdict."""
    if not targets["assessed"]:
        return [f"Targets at {TARGET_N:,} nodes: not assessed ({targets['reason']})."]
    lines = [f"Targets at {TARGET_N:,} nodes (and, for the first, at 20,000):", ""]
    t = targets["no_slower"]
    where = "; ".join(
        f"at {n}: {', '.join(f'`{k}`' for k in keys) if keys else 'none'}"
        for n, keys in t["slower"].items()
    )
    lines.append(f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} (slower {where})")
    for key in SPEEDUP_CASES:
        t = targets[key]
        lines.append(
            f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} ({_fmt(t['value'], '.1f')}x)"
        )
    floor = targets.get("floor")
    if floor:
        lines.append(
            f"- {floor['goal']}: {'met' if floor['met'] else 'NOT met'} "
            f"({_fmt(floor['get_node_p50_s'], '.2f', 1000)} ms against "
            f"{_fmt(floor['limit_s'], '.2f', 1000)} ms)"
        )
    t = targets["start"]
    lines.append(f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} ({_fmt(t['value'], '.2f')} s)")
    t = targets["rss"]
    lines.append(
        f"- {t['goal']}: {'met' if t['met'] else 'NOT met'} "
        f"({_fmt(t['labbrain_mb'], '.0f')} MB; the reference {_fmt(t['reference_mb'], '.0f')} MB)"
    )
    return lines


def _describe(revision: Record) -> str:
    """``commit abc1234``, plus ``+ local changes DIGEST`` if src/, queries/ or ontology/ differ."""
    commit = revision.get("commit")
    text = f"commit {commit[:12]}" if commit else "not a git checkout"
    if not revision.get("modified"):
        return text
    changes = revision.get("changes")
    return text + (f" + local changes {changes}" if changes else " + local changes")


def header_lines(result: Record) -> list[str]:
    """The machine and run description."""
    m, ref = result["machine"], result["reference"]
    v = m["versions"]
    ram = f"{m['ram_gb']:.1f} GB" if m["ram_gb"] else "unknown"
    source = _describe(result["source"])
    changed = []
    for size in result["sizes"]:
        before = size["labbrain_source"].get("before")
        after = size["labbrain_source"].get("after")
        if before is not None and after is not None and before != after:
            changed.append(
                f"at N = {size['n']:,} it changed during labbrain's session "
                f"({_describe(before)} before, {_describe(after)} after)"
            )
        elif before is not None and before != result["source"]:
            changed.append(f"N = {size['n']:,} ran on {_describe(before)}")
    warning = (
        ["- Warning: the labbrain source changed during the run: " + "; ".join(changed)]
        if changed
        else []
    )
    return [
        f"- Date: {result['started']}; {result['elapsed_seconds']:.0f} s in all",
        f"- Command: `{result['command']}`",
        f"- CPU: {m['cpu']}; {m['cores']} cores ({m['usable_cores']} usable); RAM {ram}",
        f"- OS: {m['os']}; Python {m['python']}; Node.js {m['node']}",
        f"- labbrain {v['labbrain']} ({source}), pyoxigraph {v['pyoxigraph']}, "
        f"mcp {v['mcp']} (client and labbrain's server)",
        f"- Reference: discourse-graph-mcp {ref['version']}, commit {ref['commit']}, "
        f"@modelcontextprotocol/sdk {ref['sdk_version']}",
        f"- Client mode `{result['options']['mode']}`; {result['options']['calls']} calls per "
        f"case; load average at start {result['loadavg_start']}, at end {result['loadavg_end']}",
        *warning,
    ]


def difference_lines(result: Record) -> list[str]:
    """What the two servers do differently for the same call (read with the answer sizes)."""
    images = sum(size["arguments"]["get_node_with_images"] for size in result["sizes"])
    calls = result["options"]["calls"] * len(result["sizes"])
    reachable = "resolves" if result["image_host_resolves"] else "does not resolve"
    return [
        "The servers do not do the same work for the same call:",
        "",
        "- Text links: the reference follows only the export's `textRefersToNode` lists; "
        "labbrain also resolves the `[[title]]` wikilinks in each node's content, so "
        "`get_node`, `get_linked_nodes` and `get_node_neighborhood` return more nodes (see the "
        "answer tables).",
        "- Caps: the reference returns every matching relationship or contribution and every "
        "node of a neighborhood; labbrain returns at most 100 relationships or contributions "
        "and 300 neighborhood nodes, reports the total (`matched`), and cuts any answer to "
        "its output cap (50,000 characters by default; the neighborhood of a hub loses its "
        "farthest nodes). The answer tables count the answers labbrain cut short.",
        "- Export quirks: the reference keeps the relation whose destination is missing (as "
        "`Unknown`, one more `Supports` relation) and lists every `nodeSchema` entry as a node "
        "type, including the page the exporter typed `nodeSchema`; labbrain drops the "
        "dangling relation and lists only the node types that have nodes (compare the "
        "`get_schema` items).",
        "- Images: the reference's `get_node` downloads the node's first image "
        f"({images} of the {calls} `get_node` calls here); on this machine the image host "
        f"{reachable}. labbrain returns image URLs without fetching them.",
        "- Answers: the reference sends pretty-printed JSON text; labbrain sends structured "
        "content, which the client validates against the tool's output schema (timed), plus "
        "compact JSON text.",
    ]


def scaling_lines(result: Record) -> list[str]:
    """p50 ms per case against N for both servers, the floor last (the chart's numbers)."""
    sizes = result["sizes"]
    columns = ["p50 ms", *(f"{who} N = {size['n']:,}" for size in sizes for who in SERVERS)]
    rows = []
    for key, _, _ in CASES:
        cells = [_case_name(key)]
        for size in sizes:
            for who in SERVERS:
                stats = size["summary"][who]["tools"].get(key, {})
                cells.append(_fmt(stats.get("p50_s"), ".1f", 1000))
        rows.append(cells)
    floor_cells = [f"floor: `{FLOOR_TOOL}` (same SDK as labbrain)"]
    for size in sizes:
        stats = size["summary"]["floor"]["tools"].get(FLOOR_TOOL, {})
        floor_cells += ["", _fmt(stats.get("p50_s"), ".2f", 1000)]
    rows.append(floor_cells)
    chart = result.get("chart")
    return [
        "p50 per case and size (ms; details and p95 in the sections below"
        + (f"; chart: `{chart}`" if chart else "")
        + "):",
        "",
        *_left(columns, rows),
    ]


def render_markdown(result: Record) -> str:
    """The full ``mcp.md`` report."""
    lines = ["# MCP benchmark: labbrain against the reference server", ""]
    lines += header_lines(result)
    lines += ["", *target_lines(result["targets"]), ""]
    lines += [
        "Latencies are wall times around `client.call_tool` in one client process, over the "
        f"same {result['options']['calls']} argument sets per case for both servers (p95 "
        "interpolated between ranks). A tool called in two ways has a row per way: search "
        "for rare title words and for the export's most frequent words, the contributions of "
        "one creator and of everyone, a random node and a hub (the node, or the Claim, with "
        "the most links). Start-to-first-answer runs from the spawn of the server "
        "process to the first `search_nodes` answer (the floor's: its `floor` tool): start-up, "
        "handshake and the tool listing the client does before it checks the first result. "
        "labbrain starts on a store that already holds the export. Peak RSS is the server "
        "process's VmHWM after the calls. Speed-up is the reference's p50 divided by "
        "labbrain's: below 1x labbrain is slower. MB and KB are 10^6 and 10^3 bytes.",
        "",
        *scaling_lines(result),
        "",
        *difference_lines(result),
    ]
    for size in result["sizes"]:
        s = size["summary"]
        f = size["file"]
        lines += ["", f"## N = {size['n']:,}", ""]
        lines.append(
            f"`{Path(f['path']).name}`: {f['bytes']:,} bytes, sha256 `{f['sha256'][:16]}…`; "
            f"{size['arguments']['nodes']:,} page nodes, {size['arguments']['creators']} "
            f"creators; labbrain load (setup) {size['labbrain_load']['seconds']:.1f} s; "
            f"protocol {s['reference']['protocol_version']} (reference), "
            f"{s['labbrain']['protocol_version']} (labbrain); load average "
            f"{size['loadavg_start']} before, {size['loadavg_end']} after."
        )
        lines.append("")
        lines.append(
            "Search words: rare = two adjacent words of a random title; frequent = one of the "
            "export's most frequent words or word pairs ("
            + ", ".join(
                f"{t['terms']} {t['share']:.0%}"
                for t in size["arguments"]["frequent_terms"]["words"][:3]
                + size["arguments"]["frequent_terms"]["pairs"][:2]
            )
            + " of the nodes). "
            + hub_sentence(size["arguments"])
        )
        lines.append("")
        lines += _left(COLUMNS, latency_rows(s))
        lines += ["", *floor_lines(size)]
        lines += [
            "",
            "Typical answers (median over the calls). Client validation is the time the "
            "client's check of a labbrain answer against the tool's output schema takes "
            "(jsonschema, as the SDK's client runs it on every answer; timed apart, on the same "
            "answers, and included in the latencies above); the reference's tools declare no "
            "output schema, so its answers are not checked:",
            "",
        ]
        lines += _left(SIZE_COLUMNS, answer_rows(s))
        notes = [
            (key, sample)
            for key, _, _ in CASES
            for sample in s["labbrain"]["tools"].get(key, {}).get("cut_samples", [])[:1]
        ]
        if notes:
            lines += [
                "",
                "What labbrain said when it cut an answer short (first note per case):",
                "",
            ]
            lines += [f"- {_case_name(key)}: {sample}" for key, sample in notes]
    errors = [
        (size["n"], server, tool, stats["error_samples"])
        for size in result["sizes"]
        for server in RUN_ORDER
        for tool, stats in size["summary"][server]["tools"].items()
        if stats["errors"]
    ]
    failed = [
        (size["n"], server, run.get("error") or run["status"])
        for size in result["sizes"]
        for server in RUN_ORDER
        for run in size["runs"][server]
        if run["status"] != "ok"
    ]
    if errors or failed:
        lines += ["", "## Errors", ""]
        for n, server, text in failed:
            lines.append(f"- N = {n:,}, {server}, start: {text}")
        for n, server, tool, samples in errors:
            lines.append(f"- N = {n:,}, {server}, `{tool}`: " + "; ".join(samples))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(
        prog="bench_mcp.py",
        description="Time labbrain's MCP server against the reference Discourse Graph MCP "
        "server over stdio, with the same client and the same tool calls.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[1000, 20000, 100000],
        metavar="N,N,...",
        help="page-node counts to benchmark (default 1000,20000,100000)",
    )
    parser.add_argument(
        "--calls", type=_positive, default=30, metavar="R", help="calls per case (default 30)"
    )
    parser.add_argument(
        "--starts",
        type=_positive,
        default=3,
        metavar="K",
        help="server starts per size and server for the start time; the last one also "
        "makes the calls (default 3)",
    )
    parser.add_argument(
        "--reference-dir",
        type=Path,
        default=REFERENCE_DIR,
        help=f"where the reference server is cloned and built (default {REFERENCE_DIR})",
    )
    parser.add_argument(
        "--reference-source",
        default=REFERENCE_SOURCE,
        help="git URL or local git directory of the reference server",
    )
    parser.add_argument(
        "--reference-commit",
        default=REFERENCE_COMMIT,
        help="commit to build ('HEAD' for whatever the clone checks out)",
    )
    parser.add_argument(
        "--mode",
        default="auto",
        help="the client's protocol negotiation: auto (the SDK default) or legacy",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="give up on a server start after S seconds (default 600)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="record a tool call as failed after S seconds (default 300)",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator and argument seed (0)")
    parser.add_argument(
        "--variant",
        choices=("2025-12", "2026-06", "v0"),
        default="2025-12",
        help="exporter @context variant (default 2025-12)",
    )
    parser.add_argument(
        "--out-dir", type=Path, default=OUT_DIR, help="where exports are generated (bench/out)"
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where mcp.md and mcp.json are written (bench/results)",
    )
    parser.add_argument(
        "--tmp-dir",
        default=None,
        help="parent directory of the throwaway labbrain stores (default: system temp)",
    )
    return parser.parse_args(argv)


def _resolves(host: str) -> bool:
    """Whether ``host`` resolves to an address (the reference fetches images from it)."""
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return False
    return True


def machine_info() -> Record:
    """CPU, cores, RAM, OS, Python, Node.js and library versions of this run."""
    mem_kib = _read_proc("/proc/meminfo", "MemTotal")
    node = shutil.which("node")
    node_version = (
        subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
        .stdout.strip()
        .lstrip("v")
        if node
        else "not installed"
    )
    return {
        "cpu": _read_proc("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gb": int(mem_kib.split()[0]) * 1024 / 1e9 if mem_kib else None,
        "os": _os_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "node": node_version,
        "versions": {
            "labbrain": _version("labbrain"),
            "pyoxigraph": _version("pyoxigraph"),
            "mcp": _version("mcp"),
        },
    }


async def run_starts(
    name: str,
    spec: Record,
    plan: dict[str, list[dict[str, Any]]],
    args: argparse.Namespace,
    errlog: TextIO,
    heading: str,
) -> list[Record]:
    """``args.starts`` sessions of server ``name`` (``floor`` or a discourse server), the
    last one making the calls of ``plan`` (the floor's own tools for the floor), each logged
    under ``heading`` in ``errlog`` and summarised on stderr."""
    if name == "floor":
        first: tuple[str, dict[str, Any]] = (FLOOR_TOOL, {})
        floor_tools = (FLOOR_TOOL, FLOOR_NODE_TOOL)
        server_plan = {tool: [{} for _ in range(args.calls)] for tool in floor_tools}
        cases = {tool: tool for tool in floor_tools}
    else:
        first = ("search_nodes", plan["search_nodes"][0])
        server_plan, cases = plan, CASE_TOOL
    runs: list[Record] = []
    for index in range(args.starts):
        last = index == args.starts - 1
        print(f"--- {heading}, start {index + 1} ---", file=errlog, flush=True)
        run = await run_session(
            spec,
            first,
            server_plan if last else None,
            cases,
            args.mode,
            args.start_timeout,
            args.call_timeout,
            errlog,
        )
        runs.append(run)
        shown = f"{run['start_s']:.3f} s" if run["status"] == "ok" else run["status"]
        _log(f"  {name:<9} start {index + 1}/{args.starts}: first answer {shown}")
        if last and run["status"] == "ok":
            for key, calls in run["calls"].items():
                stats = summarise_tool(calls)
                _log(
                    f"    {key:<34} p50 {_fmt(stats['p50_s'], '.1f', 1000):>9} ms  "
                    f"p95 {_fmt(stats['p95_s'], '.1f', 1000):>9} ms  "
                    f"errors {stats['errors']}"
                )
            _log(f"    peak RSS {_fmt(run['peak_rss_mb'], '.0f')} MB")
    return runs


async def measure_size(
    n: int, args: argparse.Namespace, reference: Record, order: Sequence[str], errlog: TextIO
) -> Record:
    """Every start and the tool calls of the two servers and of the floor for one size."""
    loadavg_start = _loadavg()
    _log(f"N = {n:,}: preparing {args.out_dir / f'dg-{n}.jsonld'}")
    file_info = ensure_export(n, args.seed, args.variant, args.out_dir)
    file = Path(file_info["path"])
    derived = derive_arguments(file, args.calls, args.seed)
    plan = derived.pop("plan")
    _log(
        f"  {derived['nodes']:,} nodes; example queries {plan['search_nodes'][0]['query']!r} "
        f"(rare), {plan['search_nodes.frequent'][0]['query']!r} (frequent); hub "
        f"{derived['hub_node']['uid']} ({derived['hub_node']['links']} links), hub claim "
        f"{derived['hub_claim']['uid']} ({derived['hub_claim']['links']} links)"
    )
    store_parent = tempfile.mkdtemp(prefix="labbrain-bench-mcp-", dir=args.tmp_dir)
    try:
        store = Path(store_parent) / "store"
        write_floor_server(Path(store_parent))
        load = labbrain_load(store, file)
        _log(f"  labbrain load (setup): {load['seconds']:.1f} s")
        runs: dict[str, list[Record]] = {}
        revisions: dict[str, Record] = {}
        for name in order:
            spec = server_spec(name, file, store, reference)
            if name == "labbrain":
                revisions["before"] = source_revision()
            runs[name] = await run_starts(name, spec, plan, args, errlog, f"N = {n}, {name}")
            if name == "labbrain":
                revisions["after"] = source_revision()
    finally:
        shutil.rmtree(store_parent, ignore_errors=True)
    summary = {name: summarise_server(runs[name]) for name in RUN_ORDER}
    loadavg_end = _loadavg()
    return {
        "n": n,
        "file": file_info,
        "arguments": {**derived, "plan": plan},
        "labbrain_load": load,
        "order": list(order),
        "loadavg_start": loadavg_start,
        "loadavg_end": loadavg_end,
        "labbrain_source": revisions,
        "runs": runs,
        "summary": summary,
        "floor": floor_comparison(summary),
    }


def run(args: argparse.Namespace) -> Record:
    """Build the reference, run every size, and return the complete result."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    _log(f"reference server in {args.reference_dir}")
    commit = None if args.reference_commit == "HEAD" else args.reference_commit
    reference = ensure_reference(args.reference_source, commit, args.reference_dir)
    _log(f"  commit {reference['commit']} ({'built now' if reference['built_now'] else 'reused'})")
    result: Record = {
        "benchmark": "mcp",
        "started": started.isoformat(timespec="seconds"),
        "command": shlex.join(sys.orig_argv),
        "options": {
            "sizes": args.sizes,
            "calls": args.calls,
            "starts": args.starts,
            "mode": args.mode,
            "start_timeout": args.start_timeout,
            "call_timeout": args.call_timeout,
            "seed": args.seed,
            "variant": args.variant,
            "cases": [list(case) for case in CASES],
            "floor_margin_s": FLOOR_MARGIN_S,
        },
        "machine": machine_info(),
        "image_host_resolves": _resolves(IMAGE_HOST),
        "source": source_revision(),
        "reference": reference,
        "loadavg_start": _loadavg(),
        "sizes": [],
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    log_path = args.out_dir / "bench-mcp-servers.log"
    _log(f"server stderr goes to {log_path}")
    with log_path.open("w", encoding="utf-8") as errlog:
        for index, n in enumerate(args.sizes):
            order = RUN_ORDER if index % 2 == 0 else tuple(reversed(RUN_ORDER))
            size = anyio.run(measure_size, n, args, reference, order, errlog)
            result["sizes"].append(size)
    result["loadavg_end"] = _loadavg()
    result["elapsed_seconds"] = time.perf_counter() - clock
    result["targets"] = assess_targets(result["sizes"])
    return result


CHART_NAME = "mcp-scaling.png"
"""The chart's file name in the results directory."""


def write_chart(result: Record, path: Path, title: str | None = None) -> bool:
    """Plot p50 per case against N (log-log), labbrain against the reference, into ``path``.

    One panel per case, the floor's p50 as a grey line in each, and a last panel with the
    start-to-first-answer. A size whose summary lacks a server (``tools`` empty, start None)
    leaves a gap in that server's line; ``title`` replaces the default title (bench_scale.py
    adds its 1,000,000-node point this way). Needs matplotlib (the ``semantic`` extra
    installs it); without it, nothing is written and False is returned.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        _log("matplotlib is not installed: no chart")
        return False
    sizes = result["sizes"]
    ns = [size["n"] for size in sizes]
    style = {
        "labbrain": {"color": "tab:blue", "marker": "o", "linestyle": "-"},
        "reference": {"color": "tab:orange", "marker": "s", "linestyle": "--"},
    }

    def series(who: str, key: str) -> list[float]:
        return [
            (size["summary"][who]["tools"].get(key, {}).get("p50_s") or math.nan) * 1000
            for size in sizes
        ]

    floor = series("floor", FLOOR_TOOL)
    panels = len(CASES) + 1
    cols = 4
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, (key, tool, label) in zip(flat, CASES, strict=False):
        for who in ("labbrain", "reference"):
            ax.plot(ns, series(who, key), label=who, **style[who])
        ax.plot(ns, floor, color="grey", marker=".", linestyle=":", label="floor (same SDK)")
        ax.set_title(f"{tool}\n{label}" if label else tool, fontsize=9)
    start_ax = flat[len(CASES)]
    for who in ("labbrain", "reference"):
        values = [(size["summary"][who]["start_median_s"] or math.nan) * 1000 for size in sizes]
        start_ax.plot(ns, values, label=who, **style[who])
    start_ax.plot(
        ns,
        [(size["summary"]["floor"]["start_median_s"] or math.nan) * 1000 for size in sizes],
        color="grey",
        marker=".",
        linestyle=":",
        label="floor (same SDK)",
    )
    start_ax.set_title("start-to-first-answer\n(median of the starts)", fontsize=9)
    for ax in flat[:panels]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ns, [f"{n:,}" for n in ns], fontsize=8)
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel("nodes", fontsize=8)
        ax.set_ylabel("p50 ms" if ax is not start_ax else "ms", fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
    for ax in flat[panels:]:
        ax.axis("off")
    flat[0].legend(fontsize=8)
    m = result["machine"]
    fig.suptitle(
        title
        or f"MCP read tools over stdio: labbrain against the reference server "
        f"({result['options']['calls']} calls per case; {m['cpu']}, {m['usable_cores']} cores; "
        f"{result['started'][:10]})",
        fontsize=11,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, write ``mcp.md``, ``mcp.json`` and the chart, print the report."""
    args = parse_args(argv)
    result = run(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    chart = args.results_dir / CHART_NAME
    if write_chart(result, chart):
        result["chart"] = chart.name
    write_result(
        args.results_dir / "mcp.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    )
    markdown = render_markdown(result)
    write_result(args.results_dir / "mcp.md", markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
