"""The MCP server end to end: every tool, resource and prompt through an in-process client.

One store holds the sample export and the real corpus together (so every answer is also a
multi-dataset answer); a second store holds only the real corpus, for exact per-dataset
totals. Every expected value is computed here from the raw JSON-LD files with ``json`` and
``re``: titles, types, creators, dates, relation instances, text links and images. Nothing
expected comes from labbrain itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pyoxigraph import RdfFormat, parse

from conftest import (
    BACKENDS,
    REAL,
    REAL_GRAPH,
    ROOT,
    SAMPLE,
    SAMPLE_GRAPH,
    SAMPLE_TYPES,
    MakeSettings,
    remote_server,
    remote_settings,
    require_corpus,
    settings_for,
)
from helpers import ClientSession
from labbrain.core import LabBrain
from labbrain.mcp.caps import CappedServer
from labbrain.mcp.server import build_server

T = TypeVar("T")
Json = dict[str, Any]
ToolAnswer = tuple[bool, Json | None, str]
CallFn = Callable[[str, Json], ToolAnswer]
LinkKey = tuple[str, str, str | None, str]  # direction, kind, label, other uid

TOOLS = {
    "search_nodes",
    "get_node",
    "get_linked_nodes",
    "get_schema",
    "get_researcher_contributions",
    "get_node_images",
    "get_relationships",
    "get_relation_types",
    "get_node_neighborhood",
    "find_path",
    "get_claim_status",
    "find_gaps",
    "sparql_query",
}

# ---------------------------------------------------------------------------------------
# The exports, read independently of labbrain
# ---------------------------------------------------------------------------------------

_SCHEMA_ID_RE = re.compile(r"^pages:_([A-Z]+)-node$")
_TITLE_CODE_RE = re.compile(r"^\[\[([A-Z]+)\]\] -")
_TITLE_PREFIX_RE = re.compile(r"^\[\[[A-Z]+\]\] -\s*")
_MARKDOWN_IMAGE_RE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Page:
    """A page node of an export, as the JSON says it."""

    uid: str
    title: str
    clean_title: str
    node_type: str
    creator: str | None
    created: str
    modified: str | None
    content: str
    url: str
    images: tuple[str, ...]  # distinct image URLs, in the order the content shows them
    refers_to: tuple[str, ...]  # uids named by textRefersToNode
    backlinks: tuple[str, ...]  # uids named by backlinks


@dataclass(frozen=True)
class Rel:
    """One relation instance: source -[label]-> destination (uids)."""

    source: str
    label: str
    destination: str


@dataclass(frozen=True)
class RelType:
    """A forward relationDef with the number of its instances whose ends both exist."""

    label: str
    source_type: str
    destination_type: str
    inverse_label: str | None
    count: int


def _uid(reference: str) -> str:
    """``pages:abc`` / ``page:abc`` -> ``abc``."""
    return reference.split(":", 1)[1]


def _references(value: Any) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value] if value else []
    return tuple(_uid(v) for v in values)


def outer_wikilinks(text: str) -> list[str]:
    """The texts of the outermost ``[[...]]`` links, with nested links kept inside."""
    links: list[str] = []
    depth = start = i = 0
    while i < len(text) - 1:
        pair = text[i : i + 2]
        if pair == "[[":
            if depth == 0:
                start = i + 2
            depth += 1
            i += 2
        elif pair == "]]" and depth > 0:
            depth -= 1
            if depth == 0:
                links.append(text[start:i])
            i += 2
        else:
            i += 1
    return links


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Export:
    """One JSON-LD export file."""

    path: Path
    slug: str
    domain: str
    pages: dict[str, Page]
    relations: set[Rel]
    dangling: list[Rel]
    relation_types: list[RelType]
    codes: dict[str, str]  # node type label -> its [[XXX]] code
    page_base: str

    @cached_property
    def text_links(self) -> set[tuple[str, str]]:
        """(from uid, to uid): wikilinks by full title, Roam page URLs, textRefersToNode."""
        by_title = {_squash(page.title): page.uid for page in self.pages.values()}
        page_url = re.compile(re.escape(self.domain + "/page/") + r"([A-Za-z0-9_-]+)")
        links: set[tuple[str, str]] = set()
        for page in self.pages.values():
            targets = {
                by_title[t] for t in map(_squash, outer_wikilinks(page.content)) if t in by_title
            }
            targets |= {uid for uid in page_url.findall(page.content) if uid in self.pages}
            targets.discard(page.uid)
            targets |= {uid for uid in page.refers_to if uid in self.pages}
            links |= {(page.uid, target) for target in targets}
        return links

    @cached_property
    def links_by_node(self) -> dict[str, set[LinkKey]]:
        """Every node's typed relations and text links, in both directions."""
        found: dict[str, set[LinkKey]] = {uid: set() for uid in self.pages}
        for rel in self.relations:
            found[rel.source].add(("outgoing", "typed", rel.label, rel.destination))
            found[rel.destination].add(("incoming", "typed", rel.label, rel.source))
        for source, destination in self.text_links:
            found[source].add(("outgoing", "text", None, destination))
            found[destination].add(("incoming", "text", None, source))
        return found

    def links(self, uid: str, direction: str = "both") -> set[LinkKey]:
        return {k for k in self.links_by_node[uid] if direction in ("both", k[0])}

    def of_type(self, node_type: str) -> list[Page]:
        return sorted(
            (p for p in self.pages.values() if p.node_type == node_type), key=lambda p: p.uid
        )

    def stance(self, uid: str, label: str) -> set[str]:
        """The uids with a ``label`` relation (Supports, Opposes) to ``uid``."""
        return {r.source for r in self.relations if r.destination == uid and r.label == label}

    def typed_neighbours(self, uid: str, labels: set[str] | None = None) -> set[str]:
        return {
            other
            for _, kind, label, other in self.links_by_node[uid]
            if kind == "typed" and (labels is None or (label or "").lower() in labels)
        }


def read_export(path: Path) -> Export:
    """Read an export file with ``json`` only."""
    return export_from_document(json.loads(path.read_text(encoding="utf-8")), path)


def export_from_document(document: Json, path: Path) -> Export:
    """What an export document says, computed with plain Python."""
    domain: str = document["@id"]
    entries: list[Json] = document["@graph"]
    schemas = {
        e["@id"]: e["label"] for e in entries if e.get("@type") == "nodeSchema" and "title" not in e
    }
    label_of_code = {
        m.group(1): label for sid, label in schemas.items() if (m := _SCHEMA_ID_RE.match(sid))
    }
    pages: dict[str, Page] = {}
    for entry in entries:
        if "title" not in entry:
            continue
        uid, title, content = _uid(entry["@id"]), entry["title"], entry.get("content", "")
        if entry["@type"] in schemas:
            node_type = schemas[entry["@type"]]
        else:  # the exporter's "nodeSchema" fallback: the [[XXX]] prefix tells the type
            match = _TITLE_CODE_RE.match(title)
            assert match, title
            node_type = label_of_code[match.group(1)]
        pages[uid] = Page(
            uid=uid,
            title=title,
            clean_title=_TITLE_PREFIX_RE.sub("", title).strip(),
            node_type=node_type,
            creator=entry.get("creator"),
            created=entry["created"],
            modified=entry.get("modified"),
            content=content,
            url=f"{domain}/page/{uid}",
            images=tuple(dict.fromkeys(_MARKDOWN_IMAGE_RE.findall(content))),
            refers_to=_references(entry.get("textRefersToNode")),
            backlinks=_references(entry.get("backlinks")),
        )
    definitions = {e["@id"]: e for e in entries if e.get("@type") == "relationDef"}
    inverse_label = {d["inverseOf"]: d["label"] for d in definitions.values() if "inverseOf" in d}
    relations: set[Rel] = set()
    dangling: list[Rel] = []
    per_definition: Counter[str] = Counter()
    for entry in entries:
        if entry.get("@type") != "relationInstance":
            continue
        rel = Rel(
            _uid(entry["source"]),
            definitions[entry["predicate"]]["label"],
            _uid(entry["destination"]),
        )
        if rel.source in pages and rel.destination in pages:
            relations.add(rel)
            per_definition[entry["predicate"]] += 1
        else:
            dangling.append(rel)
    relation_types = [
        RelType(
            label=d["label"],
            source_type=schemas[d["domain"]],
            destination_type=schemas[d["range"]],
            inverse_label=inverse_label.get(rid),
            count=per_definition[rid],
        )
        for rid, d in definitions.items()
        if "inverseOf" not in d
    ]
    codes = {label: code for code, label in label_of_code.items()}
    return Export(
        path=path,
        slug=domain.rsplit("/", 1)[-1],
        domain=domain,
        pages=pages,
        relations=relations,
        dangling=dangling,
        relation_types=relation_types,
        codes=codes,
        page_base=document["@context"]["pages"],
    )


def tiny_document() -> Json:
    """A small export of its own Roam graph whose relations chain: Results support or oppose
    Evidence that supports or opposes a Claim. Its claim reuses a uid of the real corpus."""
    domain = "https://roamresearch.com/#/app/tiny-lab"
    context = {**json.loads(SAMPLE.read_text(encoding="utf-8"))["@context"]}
    context["pages"] = domain + "/page/"
    when = "2024-02-0{}T10:00:00.000Z"
    graph: list[Json] = [
        {"@id": f"pages:_{code}-node", "@type": "nodeSchema", "label": label, "content": ""}
        for code, label in (
            ("CLM", "Claim"),
            ("EVD", "Evidence"),
            ("RES", "Result"),
            ("SRC", "Source"),
        )
    ]
    definitions = {
        "_SUPP-rel": ("EVD", "CLM", "Supports", "Supported By"),
        "_OPPO-rel": ("EVD", "CLM", "Opposes", "Opposed By"),
        "_RESEVD-rel": ("RES", "EVD", "Supports", "Supported By"),
        "_RESOPP-rel": ("RES", "EVD", "Opposes", "Opposed By"),
    }
    for rid, (domain_code, range_code, label, inverse) in definitions.items():
        ends = {"domain": f"pages:_{domain_code}-node", "range": f"pages:_{range_code}-node"}
        graph.append({"@id": f"pages:{rid}", "@type": "relationDef", **ends, "label": label})
        graph.append(
            {
                "@id": f"pages:{rid}-inverse",
                "@type": "relationDef",
                "domain": ends["range"],
                "range": ends["domain"],
                "label": inverse,
                "inverseOf": f"pages:{rid}",
            }
        )
    pages = [
        ("pqyDoNken", "CLM", "[[CLM]] - Tiny labs replicate their own findings", "Ada Tiny", ""),
        ("tinyEvd01", "EVD", "[[EVD]] - Replication one held", "Ada Tiny", "From [[@tiny2024]]."),
        ("tinyEvd02", "EVD", "[[EVD]] - Replication two failed", "Bo Tiny", "No source yet."),
        ("tinyRes01", "RES", "[[RES]] - Raw data of run one", "Bo Tiny", ""),
        ("tinyRes02", "RES", "[[RES]] - Control of run one drifted", "Cy Tiny", ""),
        ("tinyRes03", "RES", "[[RES]] - Run two was contaminated", "Cy Tiny", ""),
        ("tinySrc01", "SRC", "@tiny2024", "Ada Tiny", "The tiny paper."),
    ]
    for day, (uid, code, title, creator, content) in enumerate(pages, start=1):
        graph.append(
            {
                "@id": f"pages:{uid}",
                "@type": f"pages:_{code}-node",
                "title": title,
                "content": content,
                "created": when.format(day),
                "creator": creator,
            }
        )
    instances = [
        ("_SUPP-rel", "tinyEvd01", "pqyDoNken"),
        ("_OPPO-rel", "tinyEvd02", "pqyDoNken"),
        ("_RESEVD-rel", "tinyRes01", "tinyEvd01"),
        ("_RESOPP-rel", "tinyRes02", "tinyEvd01"),
        ("_RESOPP-rel", "tinyRes03", "tinyEvd02"),
        ("_RESEVD-rel", "tinyRes01", "tinyEvd02"),
    ]
    graph += [
        {
            "@type": "relationInstance",
            "predicate": f"pages:{rid}",
            "source": f"pages:{source}",
            "destination": f"pages:{destination}",
        }
        for rid, source, destination in instances
    ]
    return {"@context": context, "@id": domain, "@graph": graph}


def twin_document() -> Json:
    """The tiny export again as another Roam graph: the same uids, creators and relations in
    a second dataset."""
    document = tiny_document()
    domain = "https://roamresearch.com/#/app/tiny-lab-twin"
    document["@id"] = domain
    document["@context"] = {**document["@context"], "pages": domain + "/page/"}
    return document


@cache
def _real_export() -> Export:
    require_corpus()
    return read_export(REAL)


class _LazyExport:
    """The real corpus's Export, read when a test first uses it (never at collection: a test
    that reaches it without ../shared/data skips, or fails under CI)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # what pytest's collector asks of every module attribute
            raise AttributeError(name)
        return getattr(_real_export(), name)


class _Exports(Mapping[str, Export]):
    """slug -> export, keyed when first used (so the real corpus is read lazily too)."""

    def __init__(self, *exports: Export) -> None:
        self._exports = exports

    @cached_property
    def _by_slug(self) -> dict[str, Export]:
        return {e.slug: e for e in self._exports}

    def __getitem__(self, slug: str) -> Export:
        return self._by_slug[slug]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_slug)

    def __len__(self) -> int:
        return len(self._by_slug)


SAMPLE_EXPORT = read_export(SAMPLE)
REAL_EXPORT = cast(Export, _LazyExport())
REAL_SLUG = "dg-social-media-polarization"  # checked in test_exports_read_as_documented
TINY_EXPORT = export_from_document(tiny_document(), Path("tiny-lab.jsonld"))
TWIN_EXPORT = export_from_document(twin_document(), Path("tiny-lab-twin.jsonld"))
EXPORTS = _Exports(SAMPLE_EXPORT, REAL_EXPORT)
KNOWN_EXPORTS = _Exports(SAMPLE_EXPORT, REAL_EXPORT, TINY_EXPORT, TWIN_EXPORT)
#: The claims of the real corpus with both supporting and opposing evidence, named here so
#: that the test ids are known without the corpus (checked against it in
#: test_exports_read_as_documented).
CONTESTED_CLAIMS = ["WFVfUWHFg", "gBnjrt8Xv"]


def export_of(uid: str) -> Export:
    """The export holding ``uid`` (the sample and the real corpus share no uid)."""
    found = [e for e in EXPORTS.values() if uid in e.pages]
    assert len(found) == 1, uid
    return found[0]


def page(uid: str) -> Page:
    return export_of(uid).pages[uid]


NETWORK = r"network|networks|networking|networked"  # the forms the index stems to one


def words_matching(export: Export, word: str) -> set[str]:
    """Uids whose clean title or content holds ``word`` (a word or a regex of its forms)
    as a whole token, any case."""
    pattern = re.compile(rf"(?i)(?<![^\W_])(?:{word})(?![^\W_])")
    return {
        p.uid for p in export.pages.values() if pattern.search(p.clean_title + "\n" + p.content)
    }


# ---------------------------------------------------------------------------------------
# Expected answers derived from the exports
# ---------------------------------------------------------------------------------------


def expected_hops(
    export: Export,
    start: str,
    depth: int,
    direction: str = "both",
    label: str | None = None,
    node_type: str | None = None,
) -> list[set[str]]:
    """Breadth-first layers around ``start`` (typed relations and text links)."""
    visited = {start}
    frontier = [start]
    hops: list[set[str]] = []
    for _ in range(depth):
        found: set[str] = set()
        for current in frontier:
            for _dir, kind, rel_label, other in export.links(current, direction):
                if label is not None and (kind != "typed" or rel_label != label):
                    continue
                if node_type is not None and export.pages[other].node_type != node_type:
                    continue
                if other not in visited:
                    found.add(other)
        visited |= found
        hops.append(found)
        frontier = sorted(found)
        if not frontier:
            break
    return hops


def shortest_paths(
    export: Export, start: str, goal: str, labels: set[str] | None = None
) -> tuple[int | None, int]:
    """(length of the shortest typed path ignoring direction, number of such paths)."""
    distance = {start: 0}
    ways = {start: 1}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for other in export.typed_neighbours(current, labels):
            if other not in distance:
                distance[other] = distance[current] + 1
                ways[other] = 0
                queue.append(other)
            if distance[other] == distance[current] + 1:
                ways[other] += ways[current]
    return distance.get(goal), ways.get(goal, 0)


def sources_linked_to(export: Export, uids: Iterable[str]) -> set[str]:
    """Source pages joined to any of ``uids`` by a relation or a text link."""
    return {
        other
        for uid in uids
        for *_, other in export.links(uid)
        if export.pages[other].node_type == "Source"
    }


@dataclass(frozen=True)
class CreatorCounts:
    total: int
    by_type: dict[str, int]
    first: str
    last: str


def creator_counts(
    exports: Iterable[Export], node_type: str | None = None
) -> dict[str, CreatorCounts]:
    pages_by: dict[str, list[Page]] = {}
    for export in exports:
        for p in export.pages.values():
            if p.creator and (node_type is None or p.node_type == node_type):
                pages_by.setdefault(p.creator, []).append(p)
    return {
        creator: CreatorCounts(
            total=len(pages),
            by_type=dict(Counter(p.node_type for p in pages)),
            first=min(p.created for p in pages),
            last=max(p.created for p in pages),
        )
        for creator, pages in pages_by.items()
    }


def expected_gaps(export: Export) -> dict[str, set[str]]:
    """The four gap lists of find_gaps, from the export's relations and links."""
    incoming = {r.destination for r in export.relations}
    evidenced = {r.destination for r in export.relations if r.label in ("Supports", "Opposes")}
    resulted = {
        r.destination for r in export.relations if export.pages[r.source].node_type == "Result"
    }
    joined: dict[str, set[str]] = {uid: set() for uid in export.pages}
    pairs = {(r.source, r.destination) for r in export.relations} | export.text_links
    pairs |= {(p.uid, b) for p in export.pages.values() for b in p.backlinks if b in export.pages}
    for a, b in pairs:
        joined[a].add(b)
        joined[b].add(a)

    def uids(node_type: str, keep: Callable[[str], bool]) -> set[str]:
        return {p.uid for p in export.of_type(node_type) if keep(p.uid)}

    return {
        "unaddressedQuestions": uids("Question", lambda u: u not in incoming),
        "claimsWithoutEvidence": uids("Claim", lambda u: u not in evidenced),
        "hypothesesWithoutResults": uids("Hypothesis", lambda u: u not in resulted),
        "evidenceWithoutSource": uids(
            "Evidence", lambda u: not any(export.pages[o].node_type == "Source" for o in joined[u])
        ),
    }


def contested_claims(export: Export) -> list[str]:
    return [
        p.uid
        for p in export.of_type("Claim")
        if export.stance(p.uid, "Supports") and export.stance(p.uid, "Opposes")
    ]


def well_supported_claims(export: Export) -> list[str]:
    return [p.uid for p in export.of_type("Claim") if len(export.stance(p.uid, "Supports")) > 1]


# ---------------------------------------------------------------------------------------
# Driving the server
# ---------------------------------------------------------------------------------------


def run_client(server: MCPServer, work: Callable[[Client], Awaitable[T]]) -> T:
    """Connect an in-process client to ``server``, run ``work`` with it, disconnect."""

    async def main() -> T:
        async with Client(server) as client:
            return await work(client)

    return asyncio.run(main())


def call_many(server: MCPServer, calls: list[tuple[str, Json]]) -> list[ToolAnswer]:
    """Call several tools in one client session: (isError, structured content, text)."""

    async def work(client: Client) -> list[ToolAnswer]:
        answers: list[ToolAnswer] = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            answers.append((bool(result.is_error), result.structured_content, text))
        return answers

    return run_client(server, work)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every tool test runs on the embedded store and on a remote Oxigraph server."""
    return str(request.param)


@contextmanager
def open_brain(backend: str, *paths: Path) -> Iterator[LabBrain]:
    """A store with ``paths`` loaded, ignoring any LABBRAIN_* settings around: in memory, or
    on an Oxigraph server started for it (its local text index in a temporary directory)."""
    if REAL in paths:
        require_corpus()
    with ExitStack() as stack:
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        for name in [n for n in os.environ if n.startswith("LABBRAIN_")]:
            patch.delenv(name)
        if backend == "embedded":
            settings = settings_for(":memory:")
        else:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            patch.setenv("XDG_DATA_HOME", str(scratch / "xdg-data"))
            settings = remote_settings(
                stack.enter_context(remote_server(backend, scratch / backend))
            )
        # these tests compare whole answers with the exports; test_caps.py tests the cap
        settings = settings.model_copy(update={"mcp_max_chars": 10**9})
        brain = stack.enter_context(LabBrain(settings))
        patch.undo()
        for path in paths:
            brain.load(str(path))
        yield brain


@pytest.fixture(scope="module")
def server(backend: str) -> Iterator[MCPServer]:
    """The server over one store holding the sample export and the real corpus."""
    with open_brain(backend, SAMPLE, REAL) as brain:
        yield build_server(brain)


@pytest.fixture(scope="module")
def real_server(backend: str) -> Iterator[MCPServer]:
    """The server over a store holding only the real corpus."""
    with open_brain(backend, REAL) as brain:
        yield build_server(brain)


@pytest.fixture(scope="module")
def call(server: MCPServer) -> CallFn:
    """One tool call, through a client that stays connected for the test."""
    return ClientSession(server).call


@pytest.fixture(scope="module")
def real_call(real_server: MCPServer) -> CallFn:
    return ClientSession(real_server).call


def ok(answer: ToolAnswer) -> Json:
    """The structured content of a successful answer (whose text is the same JSON)."""
    is_error, structured, text = answer
    assert not is_error, text
    assert structured is not None
    assert json.loads(text) == structured
    return structured


def error(answer: ToolAnswer) -> str:
    """The text of an isError answer, checked to leak no server path or traceback."""
    is_error, _, text = answer
    assert is_error, text[:300]
    for leak in ("Traceback", 'File "', str(ROOT), "site-packages", "/tmp/"):
        assert leak not in text, text
    return text


def assert_ref(ref: Json, uid: str | None = None) -> None:
    """A NodeRef carries the attribution its export gives its node."""
    if uid is not None:
        assert ref["uid"] == uid
    export = KNOWN_EXPORTS[ref["dataset"]]
    assert ref["uid"] in export.pages, ref
    expected = export.pages[ref["uid"]]
    assert ref["nodeType"] == expected.node_type
    assert ref["title"] == expected.clean_title
    assert ref["creator"] == expected.creator
    assert ref["created"] == expected.created
    assert ref["url"] == expected.url


def link_keys(links: list[Json]) -> list[LinkKey]:
    return [(k["direction"], k["kind"], k["relationshipType"], k["node"]["uid"]) for k in links]


# ---------------------------------------------------------------------------------------
# The expectations themselves are sound
# ---------------------------------------------------------------------------------------


def test_exports_read_as_documented() -> None:
    sample_types = Counter(p.node_type for p in SAMPLE_EXPORT.pages.values())
    assert sample_types == SAMPLE_TYPES
    real_types = Counter(p.node_type for p in REAL_EXPORT.pages.values())
    assert real_types == {"Claim": 123, "Evidence": 91, "Source": 49, "Question": 5}
    assert Counter(r.label for r in REAL_EXPORT.relations) == {
        "Supports": 65,
        "Opposes": 8,
        "Informs": 1,
    }
    assert len({p.creator for p in REAL_EXPORT.pages.values()}) == 5
    assert len(SAMPLE_EXPORT.dangling) == 1 and not REAL_EXPORT.dangling
    for export in EXPORTS.values():  # one relation at most between two nodes, either way
        pairs = {frozenset((r.source, r.destination)) for r in export.relations}
        assert len(pairs) == len(export.relations)
    assert not set(SAMPLE_EXPORT.pages) & set(REAL_EXPORT.pages)
    for export in EXPORTS.values():
        assert all(p.url == export.page_base + p.uid for p in export.pages.values())
    assert sum(len(p.images) for p in SAMPLE_EXPORT.pages.values()) == 20
    assert contested_claims(REAL_EXPORT) and well_supported_claims(REAL_EXPORT)
    assert contested_claims(REAL_EXPORT) == CONTESTED_CLAIMS
    assert REAL_EXPORT.slug == REAL_SLUG and sorted(EXPORTS) == [SAMPLE_EXPORT.slug, REAL_SLUG]


# ---------------------------------------------------------------------------------------
# search_nodes
# ---------------------------------------------------------------------------------------


def _check_hit(hit: Json, word: str) -> None:
    assert_ref(hit)
    expected = page(hit["uid"])
    assert not hit["title"].startswith("[[")
    assert hit["modified"] == expected.modified
    assert hit["imageCount"] == len(expected.images)
    assert isinstance(hit["score"], float) and hit["score"] >= 0
    # the match is marked **like this** (the content's own markdown bold may show too)
    assert re.search(rf"(?i)\*\*{re.escape(word)}\*\*", hit["snippet"]), hit["snippet"]


@pytest.mark.parametrize(
    ("word", "dataset", "total"),
    [
        ("Cytosim", None, 11),
        ("Facebook", None, 40),
        ("firebasestorage", "akamatsulab-sample", 15),
    ],
)
def test_search_finds_exactly_the_nodes_holding_the_word(
    call: CallFn, word: str, dataset: str | None, total: int
) -> None:
    scope = [EXPORTS[dataset]] if dataset else list(EXPORTS.values())
    expected = {uid for export in scope for uid in words_matching(export, word)}
    assert len(expected) == total
    answer = ok(call("search_nodes", {"query": word, "limit": 100, "dataset": dataset}))
    assert {h["uid"] for h in answer["results"]} == expected
    assert answer["listed"] == len(expected)
    for hit in answer["results"]:
        _check_hit(hit, word)
    scores = [h["score"] for h in answer["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_image_counts_match_the_images_in_each_node(call: CallFn) -> None:
    """Every node of the real corpus that embeds an image, creator by creator (under 100 each)."""
    export = REAL_EXPORT
    holding = words_matching(export, "firebasestorage")
    seen: set[str] = set()
    for creator in sorted({p.creator for p in export.pages.values() if p.creator}):
        answer = ok(
            call(
                "search_nodes",
                {
                    "query": "firebasestorage",
                    "creator": creator,
                    "limit": 100,
                    "dataset": export.slug,
                },
            )
        )
        mine = {uid for uid in holding if export.pages[uid].creator == creator}
        assert {h["uid"] for h in answer["results"]} == mine
        for hit in answer["results"]:
            assert hit["creator"] == creator
            assert hit["imageCount"] == len(export.pages[hit["uid"]].images)
        seen |= mine
    with_images = {p.uid for p in export.pages.values() if p.images}
    assert with_images <= seen and len(with_images) == 156


def test_search_urls_are_each_exports_own(call: CallFn) -> None:
    expected = words_matching(SAMPLE_EXPORT, NETWORK) | words_matching(REAL_EXPORT, NETWORK)
    answer = ok(call("search_nodes", {"query": "network", "limit": 100}))
    assert {h["uid"] for h in answer["results"]} == expected
    urls = {h["dataset"]: h["url"] for h in answer["results"]}
    assert urls.keys() == set(EXPORTS)
    for slug, url in urls.items():
        assert url.startswith(EXPORTS[slug].domain + "/page/")
    assert SAMPLE_EXPORT.domain != REAL_EXPORT.domain


@pytest.mark.parametrize("slug", [SAMPLE_EXPORT.slug, REAL_SLUG])
def test_search_dataset_filter_narrows(call: CallFn, slug: str) -> None:
    answer = ok(call("search_nodes", {"query": "network", "limit": 100, "dataset": slug}))
    assert {h["uid"] for h in answer["results"]} == words_matching(EXPORTS[slug], NETWORK)
    assert {h["dataset"] for h in answer["results"]} == {slug}


def test_search_node_type_label_and_code_give_the_same_results(call: CallFn) -> None:
    expected = {
        uid for uid in words_matching(REAL_EXPORT, "Facebook") if page(uid).node_type == "Claim"
    }
    answers = [
        ok(call("search_nodes", {"query": "Facebook", "nodeType": kind, "limit": 100}))
        for kind in ("Claim", "CLM", "clm")
    ]
    assert answers[0]["results"] == answers[1]["results"] == answers[2]["results"]
    assert {h["uid"] for h in answers[0]["results"]} == expected
    assert {h["nodeType"] for h in answers[0]["results"]} == {"Claim"}


def test_search_node_type_of_the_untyped_hypothesis(call: CallFn) -> None:
    """The node the exporter typed "nodeSchema" is a Hypothesis by its [[HYP]] prefix."""
    answer = ok(call("search_nodes", {"query": "rigor mutant Myo1e", "nodeType": "HYP"}))
    assert "5nRu3DAr8" in {h["uid"] for h in answer["results"]}
    assert {h["nodeType"] for h in answer["results"]} == {"Hypothesis"}


def test_search_creator_filter(call: CallFn) -> None:
    expected = {
        uid
        for uid in words_matching(SAMPLE_EXPORT, "Cytosim")
        if page(uid).creator == "Rebecca Lee"
    }
    answer = ok(call("search_nodes", {"query": "Cytosim", "creator": "Rebecca Lee", "limit": 50}))
    assert {h["uid"] for h in answer["results"]} == expected
    assert {h["creator"] for h in answer["results"]} <= {"Rebecca Lee"}


@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_search_order_by_created(call: CallFn, direction: str) -> None:
    matching = sorted(
        (page(uid) for uid in words_matching(REAL_EXPORT, "Twitter")),
        key=lambda p: p.created,
        reverse=direction == "desc",
    )
    answer = ok(
        call(
            "search_nodes",
            {"query": "Twitter", "orderBy": "created", "sortDirection": direction, "limit": 7},
        )
    )
    assert [h["uid"] for h in answer["results"]] == [p.uid for p in matching[:7]]
    created = [h["created"] for h in answer["results"]]
    assert created == sorted(created, reverse=direction == "desc")


def test_search_order_by_title(call: CallFn) -> None:
    matching = sorted(page(uid).clean_title for uid in words_matching(SAMPLE_EXPORT, "Cytosim"))
    answer = ok(
        call("search_nodes", {"query": "Cytosim", "orderBy": "title", "sortDirection": "asc"})
    )
    assert [h["title"] for h in answer["results"]] == matching[:10]


def test_search_relevance_ignores_the_sort_direction(call: CallFn) -> None:
    answers = [
        ok(call("search_nodes", {"query": "membrane tension", "sortDirection": d, "limit": 20}))
        for d in ("asc", "desc")
    ]
    assert answers[0]["results"] == answers[1]["results"]
    scores = [h["score"] for h in answers[0]["results"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_search_limit_is_respected_with_a_note(call: CallFn) -> None:
    answer = ok(call("search_nodes", {"query": "network", "limit": 3}))
    assert len(answer["results"]) == answer["listed"] == 3
    assert "3" in answer["note"]
    error(call("search_nodes", {"query": "network", "limit": 0}))
    error(call("search_nodes", {"query": "network", "limit": 101}))


def test_search_without_a_match_says_so(call: CallFn) -> None:
    answer = ok(call("search_nodes", {"query": "zqxjvwk"}))
    assert answer["results"] == [] and answer["listed"] == 0
    assert answer["note"]


def test_search_unknown_dataset_names_the_loaded_ones(call: CallFn) -> None:
    text = error(call("search_nodes", {"query": "network", "dataset": "no-such-graph"}))
    assert "no-such-graph" in text
    for slug in EXPORTS:
        assert slug in text


@pytest.mark.parametrize("query", ["", "   "])
def test_search_empty_query_is_an_error(call: CallFn, query: str) -> None:
    assert "query" in error(call("search_nodes", {"query": query}))


# ---------------------------------------------------------------------------------------
# get_node, get_linked_nodes
# ---------------------------------------------------------------------------------------


def test_get_node_matches_the_export_for_every_node(server: MCPServer) -> None:
    uids = sorted(uid for e in EXPORTS.values() for uid in e.pages)
    answers = call_many(server, [("get_node", {"uid": uid}) for uid in uids])
    for uid, answer in zip(uids, answers, strict=True):
        node = ok(answer)
        export, expected = export_of(uid), page(uid)
        assert_ref(node, uid)
        assert node["content"] == expected.content
        assert node["modified"] == expected.modified
        assert sorted(node["imageUrls"]) == sorted(expected.images)
        assert node["imageCount"] == len(expected.images)
        keys = link_keys(node["linkedNodes"])
        assert len(keys) == len(set(keys)), uid
        assert set(keys) == export.links(uid), uid
        assert not node["linkedNodesTruncated"]
        assert node["alsoIn"] == []
        for link in node["linkedNodes"]:
            assert_ref(link["node"])
            assert (link["kind"] == "text") == (link["relationshipType"] is None)


def test_get_node_lists_typed_links_before_text_links(call: CallFn) -> None:
    uid = max(REAL_EXPORT.pages, key=lambda u: len(REAL_EXPORT.links(u)))
    kinds = [k["kind"] for k in ok(call("get_node", {"uid": uid}))["linkedNodes"]]
    assert "typed" in kinds and "text" in kinds
    assert kinds == sorted(kinds, key=lambda k: k != "typed")


def test_get_node_of_a_claim_shows_its_relations_both_ways(call: CallFn) -> None:
    node = ok(call("get_node", {"uid": "pqyDoNken"}))
    typed = {(k[0], k[2], k[3]) for k in link_keys(node["linkedNodes"]) if k[1] == "typed"}
    assert typed == {
        ("incoming", "Supports", uid) for uid in REAL_EXPORT.stance("pqyDoNken", "Supports")
    }
    assert node["title"] == page("pqyDoNken").clean_title
    assert "[[CLM]]" in page("pqyDoNken").title


def test_get_node_skips_the_dangling_relation(call: CallFn) -> None:
    (rel,) = SAMPLE_EXPORT.dangling
    node = ok(call("get_node", {"uid": rel.source}))
    assert rel.destination not in {k[3] for k in link_keys(node["linkedNodes"])}
    assert set(link_keys(node["linkedNodes"])) == SAMPLE_EXPORT.links(rel.source)


def test_get_node_text_references(call: CallFn) -> None:
    """textRefersToNode (page: prefix), wikilinks by full title and page URLs all show."""
    refers = next(p for p in SAMPLE_EXPORT.pages.values() if len(p.refers_to) == 2)
    node = ok(call("get_node", {"uid": refers.uid}))
    outgoing_text = {k[3] for k in link_keys(node["linkedNodes"]) if k[:2] == ("outgoing", "text")}
    assert set(refers.refers_to) <= outgoing_text
    by_url = [
        p
        for p in SAMPLE_EXPORT.pages.values()
        if re.search(
            re.escape(SAMPLE_EXPORT.domain) + r"/page/(?!" + re.escape(p.uid) + ")", p.content
        )
    ]
    assert by_url
    for p in by_url:
        node = ok(call("get_node", {"uid": p.uid}))
        assert set(link_keys(node["linkedNodes"])) == SAMPLE_EXPORT.links(p.uid)


def test_get_node_unknown_uid(call: CallFn) -> None:
    text = error(call("get_node", {"uid": "Xx0000000"}))
    assert "no node with uid Xx0000000; search_nodes finds uids" in text


def test_get_node_blank_uid_is_an_error(call: CallFn) -> None:
    assert "uid" in error(call("get_node", {"uid": "  "}))


def test_get_node_dataset_scope(call: CallFn) -> None:
    assert (
        ok(call("get_node", {"uid": "pqyDoNken", "dataset": REAL_EXPORT.slug}))["uid"]
        == "pqyDoNken"
    )
    assert ok(call("get_node", {"uid": "pqyDoNken", "dataset": REAL_GRAPH}))["uid"] == "pqyDoNken"
    text = error(call("get_node", {"uid": "pqyDoNken", "dataset": SAMPLE_EXPORT.slug}))
    assert "no node with uid pqyDoNken" in text
    text = error(call("get_node", {"uid": "pqyDoNken", "dataset": "nope"}))
    assert SAMPLE_EXPORT.slug in text and REAL_EXPORT.slug in text
    assert ok(call("get_node", {"uid": "5nRu3DAr8", "dataset": SAMPLE_GRAPH}))["nodeType"] == (
        "Hypothesis"
    )


def _busy_nodes() -> list[str]:
    """A few nodes per export with both incoming and outgoing links."""
    chosen: list[str] = []
    for export in EXPORTS.values():
        both = [
            uid
            for uid in sorted(export.pages)
            if export.links(uid, "incoming") and export.links(uid, "outgoing")
        ]
        chosen += both[:: max(1, len(both) // 4)][:4]
    return chosen


@pytest.mark.parametrize("direction", ["outgoing", "incoming", "both"])
def test_get_linked_nodes_by_direction(server: MCPServer, direction: str) -> None:
    uids = _busy_nodes()
    answers = call_many(
        server, [("get_linked_nodes", {"uid": uid, "direction": direction}) for uid in uids]
    )
    for uid, answer in zip(uids, answers, strict=True):
        linked = ok(answer)
        export = export_of(uid)
        assert_ref(linked["node"], uid)
        assert linked["direction"] == direction
        keys = link_keys(linked["linkedNodes"])
        assert len(keys) == len(set(keys)) == linked["listed"]
        assert set(keys) == export.links(uid, direction)
        assert {k[0] for k in keys} == (
            {"outgoing", "incoming"} if direction == "both" else {direction}
        )
        assert not linked["truncated"] and linked["note"] is None
        for link in linked["linkedNodes"]:
            assert_ref(link["node"])


def test_get_linked_nodes_of_an_isolated_node(call: CallFn) -> None:
    lonely = next(uid for uid in sorted(REAL_EXPORT.pages) if not REAL_EXPORT.links(uid))
    linked = ok(call("get_linked_nodes", {"uid": lonely}))
    assert linked["linkedNodes"] == [] and linked["listed"] == 0
    assert linked["note"]
    assert "direction" in error(call("get_linked_nodes", {"uid": lonely, "direction": "up"}))


# ---------------------------------------------------------------------------------------
# get_schema, get_relation_types
# ---------------------------------------------------------------------------------------


def _expected_relation_types(exports: Iterable[Export]) -> Counter[tuple[Any, ...]]:
    return Counter(
        (e.slug, t.label, t.source_type, t.destination_type, t.inverse_label, t.count)
        for e in exports
        for t in e.relation_types
    )


def _relation_type_keys(types: list[Json]) -> Counter[tuple[Any, ...]]:
    return Counter(
        (
            t["dataset"],
            t["label"],
            t["sourceType"],
            t["destinationType"],
            t["inverseLabel"],
            t["count"],
        )
        for t in types
    )


def _check_schema(schema: Json, exports: list[Export]) -> None:
    counts: Counter[str] = Counter()
    datasets: dict[str, set[str]] = {}
    for export in exports:
        for p in export.pages.values():
            counts[p.node_type] += 1
            datasets.setdefault(p.node_type, set()).add(export.slug)
    assert {t["label"]: t["count"] for t in schema["nodeTypes"]} == counts
    assert [t["count"] for t in schema["nodeTypes"]] == sorted(counts.values(), reverse=True)
    codes = {label: code for e in exports for label, code in e.codes.items()}
    for node_type in schema["nodeTypes"]:
        assert node_type["code"] == codes[node_type["label"]]
        assert len(node_type["description"]) > 10
        assert set(node_type["datasets"]) == datasets[node_type["label"]]
    assert _relation_type_keys(schema["relationTypes"]) == _expected_relation_types(exports)
    assert {d["dataset"]: d["domain"] for d in schema["datasets"]} == {
        e.slug: e.domain for e in exports
    }
    assert {d["dataset"]: d["nodes"] for d in schema["datasets"]} == {
        e.slug: len(e.pages) for e in exports
    }
    for dataset in schema["datasets"]:
        assert dataset["graph"] == f"urn:labbrain:dataset:{dataset['dataset']}"


def test_get_schema_over_both_datasets(call: CallFn) -> None:
    schema = ok(call("get_schema", {}))
    _check_schema(schema, [SAMPLE_EXPORT, REAL_EXPORT])
    counts = {t["label"]: t["count"] for t in schema["nodeTypes"]}
    assert counts == {
        "Claim": 30 + 123,
        "Evidence": 32 + 91,
        "Source": 20 + 49,
        "Result": 25,
        "Question": 12 + 5,
        "Hypothesis": 13,
        "Conclusion": 10,
        "Issue": 8,
    }
    assert {t["code"] for t in schema["nodeTypes"]} == {
        "CLM",
        "EVD",
        "SRC",
        "RES",
        "QUE",
        "HYP",
        "CON",
        "ISS",
    }


def test_get_schema_of_the_real_corpus_alone(real_call: CallFn) -> None:
    schema = ok(real_call("get_schema", {}))
    _check_schema(schema, [REAL_EXPORT])
    assert {t["label"]: t["count"] for t in schema["nodeTypes"]} == {
        "Claim": 123,
        "Evidence": 91,
        "Source": 49,
        "Question": 5,
    }
    by_label: Counter[str] = Counter()
    for t in schema["relationTypes"]:
        by_label[t["label"]] += t["count"]
    assert by_label == {"Supports": 65, "Opposes": 8, "Informs": 1}
    assert [d["domain"] for d in schema["datasets"]] == [REAL_EXPORT.domain]


def test_get_relation_types(call: CallFn, real_call: CallFn) -> None:
    both = ok(call("get_relation_types", {}))["relationTypes"]
    assert _relation_type_keys(both) == _expected_relation_types(EXPORTS.values())
    assert {t["coreRelation"] for t in both if t["label"] == "Supports"} == {"dg:supports"}
    assert {t["coreRelation"] for t in both if t["label"] == "Opposes"} == {"dg:opposes"}
    real = ok(real_call("get_relation_types", {}))["relationTypes"]
    assert _relation_type_keys(real) == _expected_relation_types([REAL_EXPORT])
    assert ok(call("get_schema", {}))["relationTypes"] == both


# ---------------------------------------------------------------------------------------
# get_researcher_contributions
# ---------------------------------------------------------------------------------------


def _check_creators(creators: list[Json], expected: dict[str, CreatorCounts]) -> None:
    assert {c["creator"] for c in creators} == set(expected)
    for entry in creators:
        counts = expected[entry["creator"]]
        assert entry["total"] == counts.total
        assert entry["byType"] == counts.by_type
        assert entry["firstContribution"] == counts.first
        assert entry["lastContribution"] == counts.last
    assert [(-c["total"], c["creator"]) for c in creators] == sorted(
        (-c["total"], c["creator"]) for c in creators
    )


def test_contributions_of_everyone(call: CallFn) -> None:
    answer = ok(call("get_researcher_contributions", {"detail": "full"}))
    _check_creators(answer["creators"], creator_counts(EXPORTS.values()))
    assert answer["nodes"] == [] and answer["total"] == 0


def test_contributions_of_the_real_corpus_alone(real_call: CallFn) -> None:
    answer = ok(real_call("get_researcher_contributions", {"detail": "full"}))
    expected = creator_counts([REAL_EXPORT])
    _check_creators(answer["creators"], expected)
    assert len(expected) == 5
    assert sum(c.total for c in expected.values()) == 268


@pytest.mark.parametrize("node_type", ["Claim", "EVD"])
def test_contributions_by_node_type(call: CallFn, node_type: str) -> None:
    label = {"EVD": "Evidence"}.get(node_type, node_type)
    answer = ok(call("get_researcher_contributions", {"nodeType": node_type, "detail": "full"}))
    _check_creators(answer["creators"], creator_counts(EXPORTS.values(), label))


@pytest.mark.parametrize(
    ("creator", "node_type"),
    [("Rebecca Lee", None), ("Jay Patel", None), ("Joel Chan", "SRC"), ("Joel Chan", "Question")],
)
def test_contributions_of_one_creator(call: CallFn, creator: str, node_type: str | None) -> None:
    label = {"SRC": "Source"}.get(node_type or "", node_type)
    mine = [
        p
        for e in EXPORTS.values()
        for p in e.pages.values()
        if p.creator == creator and (label is None or p.node_type == label)
    ]
    arguments: Json = {"creator": creator, "detail": "full"}
    if node_type:
        arguments["nodeType"] = node_type
    answer = ok(call("get_researcher_contributions", arguments))
    expected = creator_counts(EXPORTS.values(), label)
    _check_creators(answer["creators"], {creator: expected[creator]})
    assert answer["total"] == len(mine)
    assert {n["uid"] for n in answer["nodes"]} == {p.uid for p in mine}
    assert not answer["truncated"]
    for node in answer["nodes"]:
        assert_ref(node)
        assert node["creator"] == creator
    created = [n["created"] for n in answer["nodes"]]
    assert created == sorted(created, reverse=True)


def test_contributions_of_a_known_creator_without_nodes_of_that_type(call: CallFn) -> None:
    assert not any(
        p.creator == "Joel Chan" and p.node_type == "Result"
        for e in EXPORTS.values()
        for p in e.pages.values()
    )
    answer = ok(
        call("get_researcher_contributions", {"creator": "Joel Chan", "nodeType": "Result"})
    )
    assert answer["nodes"] == [] and answer["total"] == 0


def test_contributions_of_an_unknown_creator_list_the_creators(call: CallFn) -> None:
    text = error(call("get_researcher_contributions", {"creator": "Nobody Atall"}))
    assert "Nobody Atall" in text
    for creator in creator_counts(EXPORTS.values()):
        assert creator in text


# ---------------------------------------------------------------------------------------
# get_node_images
# ---------------------------------------------------------------------------------------


def test_get_node_images_of_every_illustrated_node(server: MCPServer) -> None:
    pages = [p for e in EXPORTS.values() for p in e.pages.values() if p.images]
    assert len(pages) == 15 + 156
    answers = call_many(server, [("get_node_images", {"uid": p.uid}) for p in pages])
    for p, answer in zip(pages, answers, strict=True):
        images = ok(answer)
        assert_ref(images["node"], p.uid)
        assert sorted(images["imageUrls"]) == sorted(p.images)
        assert images["imageCount"] == len(p.images)
        assert images["keyImage"] in p.images
        assert "not fetched" in images["note"]


def test_get_node_images_of_a_node_without_images(call: CallFn) -> None:
    plain = next(uid for uid in sorted(REAL_EXPORT.pages) if not REAL_EXPORT.pages[uid].images)
    images = ok(call("get_node_images", {"uid": plain}))
    assert images["imageUrls"] == [] and images["imageCount"] == 0
    assert images["keyImage"] is None and images["note"]
    assert "no node with uid" in error(call("get_node_images", {"uid": "Xx0000000"}))


def test_get_node_images_key_image_is_the_first_image_of_the_node(server: MCPServer) -> None:
    pages = [
        p
        for e in EXPORTS.values()
        for p in e.pages.values()
        if len(p.images) > 1 and list(p.images) != sorted(p.images)
    ]
    assert pages
    answers = call_many(server, [("get_node_images", {"uid": p.uid}) for p in pages])
    for p, answer in zip(pages, answers, strict=True):
        images = ok(answer)
        assert images["keyImage"] == p.images[0], p.uid
        assert images["imageUrls"] == list(p.images), p.uid


# ---------------------------------------------------------------------------------------
# get_relationships
# ---------------------------------------------------------------------------------------


def _rel_keys(answer: Json) -> set[tuple[str, str, str, str]]:
    keys = set()
    for rel in answer["relationships"]:
        assert_ref(rel["source"])
        assert_ref(rel["destination"])
        assert rel["source"]["dataset"] == rel["destination"]["dataset"]
        keys.add(
            (
                rel["source"]["dataset"],
                rel["source"]["uid"],
                rel["relationshipType"],
                rel["destination"]["uid"],
            )
        )
    assert len(keys) == len(answer["relationships"]) == answer["listed"]
    return keys


def _expected_rels(
    exports: Iterable[Export], keep: Callable[[Rel], bool] = lambda r: True
) -> set[tuple[str, str, str, str]]:
    return {
        (e.slug, r.source, r.label, r.destination) for e in exports for r in e.relations if keep(r)
    }


def test_get_relationships_opposes_in_the_real_corpus(call: CallFn) -> None:
    answer = ok(
        call(
            "get_relationships",
            {"detail": "full", "relationshipType": "Opposes", "dataset": REAL_EXPORT.slug},
        )
    )
    expected = _expected_rels([REAL_EXPORT], lambda r: r.label == "Opposes")
    assert len(expected) == 8
    assert _rel_keys(answer) == expected
    assert answer["total"] == 8 and not answer["truncated"]
    lower = ok(
        call(
            "get_relationships",
            {"detail": "full", "relationshipType": "opposes", "dataset": REAL_EXPORT.slug},
        )
    )
    assert _rel_keys(lower) == expected  # labels match whatever their case


@pytest.mark.parametrize(("label", "count"), [("Supports", 65), ("Opposes", 8), ("Informs", 1)])
def test_get_relationships_counts_by_label_in_the_real_corpus(
    real_call: CallFn, label: str, count: int
) -> None:
    answer = ok(real_call("get_relationships", {"detail": "full", "relationshipType": label}))
    expected = _expected_rels([REAL_EXPORT], lambda r: r.label == label)
    assert len(expected) == count
    assert answer["total"] == answer["listed"] == count
    assert _rel_keys(answer) == expected


def test_get_relationships_every_relation(call: CallFn) -> None:
    answer = ok(call("get_relationships", {"detail": "full", "limit": 500}))
    expected = _expected_rels(EXPORTS.values())
    assert _rel_keys(answer) == expected
    assert answer["total"] == len(expected) == 170 + 74


def test_get_relationships_limit_truncates(call: CallFn) -> None:
    expected = _expected_rels(EXPORTS.values(), lambda r: r.label == "Supports")
    assert len(expected) == 37 + 18 + 17 + 65
    answer = ok(call("get_relationships", {"detail": "full", "relationshipType": "Supports"}))
    assert answer["listed"] == 100 and answer["total"] == len(expected)
    assert answer["truncated"] and str(len(expected)) in answer["note"]
    assert _rel_keys(answer) <= expected
    full = ok(
        call("get_relationships", {"detail": "full", "relationshipType": "Supports", "limit": 500})
    )
    assert _rel_keys(full) == expected and not full["truncated"]


def test_a_capped_answer_counts_what_it_lists_and_what_matched(
    server: MCPServer, call: CallFn
) -> None:
    """Cut by the output cap, a list answer's ``listed`` is the items it shows and its
    ``total`` all that matched (a stale count once said 65 beside 58 items)."""
    supports = _expected_rels(EXPORTS.values(), lambda r: r.label == "Supports")
    hub = max(REAL_EXPORT.pages, key=lambda u: len(REAL_EXPORT.links(u)))
    assert isinstance(server, CappedServer)
    cap, server.max_chars = server.max_chars, 6_000
    try:
        rels = ok(
            call(
                "get_relationships",
                {"detail": "full", "relationshipType": "Supports", "limit": 500},
            )
        )
        hood = ok(call("get_node_neighborhood", {"uid": hub, "depth": 2, "detail": "full"}))
    finally:
        server.max_chars = cap
    assert rels["truncated"] and "answer cut" in rels["note"]
    assert 1 <= rels["listed"] == len(rels["relationships"]) < len(supports) == rels["total"]
    assert _rel_keys(rels) < supports
    assert hood["truncated"] and "answer cut" in hood["note"]
    assert hood["listed"] == sum(len(hop) for hop in hood["nodesByHop"]) >= 1


def test_get_relationships_by_source_and_destination(call: CallFn) -> None:
    export = REAL_EXPORT
    claim = max(contested_claims(export), key=lambda u: len(export.stance(u, "Supports")))
    incoming = ok(call("get_relationships", {"detail": "full", "destinationUid": claim}))
    assert _rel_keys(incoming) == _expected_rels([export], lambda r: r.destination == claim)
    supporting = ok(
        call(
            "get_relationships",
            {"detail": "full", "destinationUid": claim, "relationshipType": "Supports"},
        )
    )
    assert {k[1] for k in _rel_keys(supporting)} == export.stance(claim, "Supports")
    evidence = sorted(export.stance(claim, "Opposes"))[0]
    outgoing = ok(call("get_relationships", {"detail": "full", "sourceUid": evidence}))
    assert _rel_keys(outgoing) == _expected_rels([export], lambda r: r.source == evidence)
    pair = ok(
        call(
            "get_relationships", {"detail": "full", "sourceUid": evidence, "destinationUid": claim}
        )
    )
    assert _rel_keys(pair) == {(export.slug, evidence, "Opposes", claim)}


def test_get_relationships_in_the_sample(call: CallFn) -> None:
    for label in ("Supports", "Opposes", "Informs", "Addresses"):
        answer = ok(
            call(
                "get_relationships",
                {
                    "relationshipType": label,
                    "dataset": SAMPLE_EXPORT.slug,
                    "limit": 500,
                    "detail": "full",
                },
            )
        )
        assert _rel_keys(answer) == _expected_rels([SAMPLE_EXPORT], lambda r, x=label: r.label == x)


def test_get_relationships_without_a_match(call: CallFn) -> None:
    answer = ok(call("get_relationships", {"relationshipType": "Refutes"}))
    assert answer["relationships"] == [] and answer["total"] == 0
    for label in ("Supports", "Opposes", "Informs", "Addresses"):
        assert label in answer["note"]
    apart = ok(call("get_relationships", {"sourceUid": "pqyDoNken", "destinationUid": "5nRu3DAr8"}))
    assert apart["relationships"] == [] and "different datasets" in apart["note"]
    assert "no node with uid" in error(call("get_relationships", {"sourceUid": "Xx0000000"}))


# ---------------------------------------------------------------------------------------
# get_node_neighborhood
# ---------------------------------------------------------------------------------------


def _check_neighborhood(
    hood: Json, start: str, expected: list[set[str]], label: str | None = None
) -> None:
    export = export_of(start)
    assert_ref(hood["start"], start)
    got = [{n["uid"] for n in hop} for hop in hood["nodesByHop"]]
    assert got == expected, start
    assert hood["listed"] == sum(len(hop) for hop in expected)
    assert not hood["truncated"] and hood["note"] is None
    reached = {start}
    for number, hop in enumerate(hood["nodesByHop"], start=1):
        for node in hop:
            assert_ref(node)
            assert node["hop"] == number
            assert node["viaUid"] in reached
            kind = "text" if node["relationshipType"] is None else "typed"
            assert any(
                k[1:] == (kind, node["relationshipType"], node["uid"])
                for k in export.links(node["viaUid"])
            )
        reached |= {n["uid"] for n in hop}
    for edge in hood["edges"]:
        assert {edge["sourceUid"], edge["destinationUid"]} <= reached
        if edge["kind"] == "typed":
            assert (
                Rel(edge["sourceUid"], edge["relationshipType"], edge["destinationUid"])
                in export.relations
            )
        else:
            assert (edge["sourceUid"], edge["destinationUid"]) in export.text_links
        if label is not None:
            assert edge["kind"] == "typed" and edge["relationshipType"] == label


def _neighborhood_cases() -> list[tuple[str, Json, list[set[str]]]]:
    cases: list[tuple[str, Json, list[set[str]]]] = []
    for uid in _busy_nodes():
        export = export_of(uid)
        for depth in (1, 2, 3):
            cases.append((uid, {"depth": depth}, expected_hops(export, uid, depth)))
        for direction in ("outgoing", "incoming"):
            cases.append(
                (
                    uid,
                    {"depth": 2, "direction": direction},
                    expected_hops(export, uid, 2, direction),
                )
            )
        cases.append(
            (
                uid,
                {"depth": 3, "relationshipTypeFilter": "Supports"},
                expected_hops(export, uid, 3, label="Supports"),
            )
        )
        cases.append(
            (
                uid,
                {"depth": 2, "nodeTypeFilter": "EVD"},
                expected_hops(export, uid, 2, node_type="Evidence"),
            )
        )
    return cases


def test_get_node_neighborhood_layers_match_the_export(server: MCPServer) -> None:
    cases = _neighborhood_cases()
    answers = call_many(
        server,
        [
            ("get_node_neighborhood", {"uid": uid, **args, "detail": "full"})
            for uid, args, _ in cases
        ],
    )
    for (uid, args, expected), answer in zip(cases, answers, strict=True):
        hood = ok(answer)
        assert hood["depth"] == args["depth"]
        assert hood["direction"] == args.get("direction", "both")
        _check_neighborhood(hood, uid, expected, args.get("relationshipTypeFilter"))


def test_get_node_neighborhood_supports_chain_from_a_claim(call: CallFn) -> None:
    claim = max(
        well_supported_claims(REAL_EXPORT), key=lambda u: len(REAL_EXPORT.stance(u, "Supports"))
    )
    hood = ok(
        call(
            "get_node_neighborhood",
            {"uid": claim, "depth": 2, "relationshipTypeFilter": "Supports", "detail": "full"},
        )
    )
    supporters = REAL_EXPORT.stance(claim, "Supports")
    assert {n["uid"] for n in hood["nodesByHop"][0]} == supporters
    assert {n["relationshipType"] for hop in hood["nodesByHop"] for n in hop} == {"Supports"}
    assert {(e["sourceUid"], e["destinationUid"]) for e in hood["edges"]} >= {
        (s, claim) for s in supporters
    }
    assert {e["relationshipType"] for e in hood["edges"]} == {"Supports"}
    assert {e["kind"] for e in hood["edges"]} == {"typed"}


@pytest.mark.parametrize("direction", ["outgoing", "incoming", "both"])
def test_get_node_neighborhood_depth_one_is_the_linked_nodes(
    server: MCPServer, direction: str
) -> None:
    uids = _busy_nodes()
    calls: list[tuple[str, Json]] = []
    for uid in uids:
        calls.append(("get_node_neighborhood", {"uid": uid, "depth": 1, "direction": direction}))
        calls.append(("get_node_neighborhood", {"uid": uid, "depth": 2, "direction": direction}))
        calls.append(("get_linked_nodes", {"uid": uid, "direction": direction}))
    answers = [ok(a) for a in call_many(server, calls)]
    for index in range(len(uids)):
        one, two, linked = answers[3 * index : 3 * index + 3]
        neighbours = {link["node"]["uid"] for link in linked["linkedNodes"]}
        assert {n["uid"] for n in one["nodesByHop"][0]} == neighbours
        assert one["listed"] == len(neighbours)
        assert {n["uid"] for n in two["nodesByHop"][0]} == neighbours
        assert two["listed"] >= one["listed"]


def test_get_node_neighborhood_limit_truncates(call: CallFn) -> None:
    uid = max(REAL_EXPORT.pages, key=lambda u: len(REAL_EXPORT.links(u)))
    assert len(REAL_EXPORT.links(uid)) > 3
    hood = ok(call("get_node_neighborhood", {"uid": uid, "depth": 2, "limit": 3}))
    assert hood["listed"] == 3
    assert sum(len(hop) for hop in hood["nodesByHop"]) == 3
    assert hood["truncated"] and "3" in hood["note"]


def test_a_truncated_neighborhood_keeps_every_edge_among_the_nodes_it_reached(
    call: CallFn,
) -> None:
    """Once the limit is reached no node is added, but the next hop still finds the links
    among the nodes already reached: the edges are exactly the export's links among them."""

    def neighbours(uid: str) -> set[str]:
        return {other for *_, other in REAL_EXPORT.links(uid)} - {uid}

    def linked_among(uids: set[str]) -> int:
        return sum(len(neighbours(u) & uids) for u in uids)

    # The node whose neighbours are most linked among themselves; the limit leaves one of
    # its neighbours out, so the first hop truncates and the second finds only links among
    # the nodes reached.
    uid = max(REAL_EXPORT.pages, key=lambda u: (linked_among(neighbours(u)), u))
    limit = len(neighbours(uid)) - 1
    hood = ok(
        call("get_node_neighborhood", {"uid": uid, "depth": 2, "limit": limit, "detail": "full"})
    )
    assert hood["truncated"] and hood["listed"] == limit
    reached = {uid} | {node["uid"] for hop in hood["nodesByHop"] for node in hop}
    expected = {
        (here, other, label) if direction == "outgoing" else (other, here, label)
        for here in reached
        for direction, _, label, other in REAL_EXPORT.links(here)
        if other in reached
    }
    edges = {(e["sourceUid"], e["destinationUid"], e["relationshipType"]) for e in hood["edges"]}
    assert edges == expected
    assert any(uid not in edge[:2] for edge in expected)  # links among the neighbours too


@pytest.mark.parametrize("depth", [0, 5])
def test_get_node_neighborhood_depth_outside_1_to_4(call: CallFn, depth: int) -> None:
    assert "depth" in error(call("get_node_neighborhood", {"uid": "pqyDoNken", "depth": depth}))


def test_get_node_neighborhood_of_an_unknown_node(call: CallFn) -> None:
    assert "no node with uid" in error(call("get_node_neighborhood", {"uid": "Xx0000000"}))


# ---------------------------------------------------------------------------------------
# find_path
# ---------------------------------------------------------------------------------------


def _check_path(steps: list[Json], start: str, goal: str) -> list[str]:
    export = export_of(start)
    here = start
    visited = [start]
    for step in steps:
        assert_ref(step["source"])
        assert_ref(step["destination"])
        source, destination = step["source"]["uid"], step["destination"]["uid"]
        assert Rel(source, step["relationshipType"], destination) in export.relations
        if step["traversed"] == "forward":
            assert source == here
            here = destination
        else:
            assert destination == here
            here = source
        visited.append(here)
    assert here == goal
    return visited


def test_find_path_from_evidence_to_the_claim_it_supports(call: CallFn) -> None:
    rel = sorted(
        (r for r in REAL_EXPORT.relations if r.label == "Supports"),
        key=lambda r: (r.source, r.destination),
    )[0]
    forward = ok(call("find_path", {"fromUid": rel.source, "toUid": rel.destination}))
    assert forward["found"] and forward["length"] == 1
    assert len(forward["paths"]) == 1
    (step,) = forward["paths"][0]
    assert step["relationshipType"] == "Supports" and step["traversed"] == "forward"
    assert_ref(step["source"], rel.source)
    assert_ref(step["destination"], rel.destination)
    backward = ok(call("find_path", {"fromUid": rel.destination, "toUid": rel.source}))
    assert backward["length"] == 1
    (step,) = backward["paths"][0]
    assert step["traversed"] == "backward" and step["source"]["uid"] == rel.source


def test_find_path_of_two_hops_through_a_shared_claim(call: CallFn) -> None:
    export = REAL_EXPORT
    claim = sorted(well_supported_claims(export))[0]
    first, second = sorted(export.stance(claim, "Supports"))[:2]
    length, count = shortest_paths(export, first, second)
    assert length == 2
    answer = ok(call("find_path", {"fromUid": first, "toUid": second}))
    assert answer["found"] and answer["length"] == 2
    assert len(answer["paths"]) == min(count, 5)
    assert answer["truncated"] == (count > 5)
    middles = set()
    for steps in answer["paths"]:
        assert len(steps) == 2
        middles.add(_check_path(steps, first, second)[1])
    assert claim in middles
    common = export.typed_neighbours(first) & export.typed_neighbours(second)
    assert middles <= common


def _path_cases() -> list[tuple[str, str]]:
    """Pairs of nodes of the same typed component (and a few of different ones)."""
    cases: list[tuple[str, str]] = []
    for export in EXPORTS.values():
        seen: set[str] = set()
        for uid in sorted(export.pages):
            if uid in seen or not export.typed_neighbours(uid):
                continue
            component = {uid}
            queue = deque([uid])
            while queue:
                for other in export.typed_neighbours(queue.popleft()):
                    if other not in component:
                        component.add(other)
                        queue.append(other)
            seen |= component
            members = sorted(component)
            cases += [(members[0], members[-1]), (members[-1], members[len(members) // 2])]
        typed = sorted(u for u in export.pages if export.typed_neighbours(u))
        cases += [(typed[i], typed[-1 - i]) for i in range(0, 40, 8)]
    return [(a, b) for a, b in cases if a != b]


def test_find_path_lengths_and_counts_match_the_export(server: MCPServer) -> None:
    cases = _path_cases()
    assert len(cases) > 40
    answers = call_many(
        server, [("find_path", {"fromUid": a, "toUid": b, "maxHops": 4}) for a, b in cases]
    )
    found = 0
    for (a, b), answer in zip(cases, answers, strict=True):
        result = ok(answer)
        length, count = shortest_paths(export_of(a), a, b)
        if length is None or length > 4:
            assert not result["found"] and result["length"] is None, (a, b)
            assert result["paths"] == [] and result["note"]
            continue
        found += 1
        assert result["found"] and result["length"] == length, (a, b)
        assert len(result["paths"]) == min(count, 5), (a, b)
        assert result["truncated"] == (count > 5)
        routes = [tuple(_check_path(steps, a, b)) for steps in result["paths"]]
        assert all(len(r) == length + 1 for r in routes)
        assert len(set(routes)) == len(routes)
    assert found > 20


def test_find_path_same_node(call: CallFn) -> None:
    answer = ok(call("find_path", {"fromUid": "pqyDoNken", "toUid": "pqyDoNken"}))
    assert answer["found"] and answer["length"] == 0 and answer["paths"] == []
    assert answer["note"]


def test_find_path_beyond_max_hops(call: CallFn) -> None:
    claim = sorted(well_supported_claims(REAL_EXPORT))[0]
    first, second = sorted(REAL_EXPORT.stance(claim, "Supports"))[:2]
    answer = ok(call("find_path", {"fromUid": first, "toUid": second, "maxHops": 1}))
    assert not answer["found"] and answer["length"] is None and answer["paths"] == []
    assert "maxHops" in answer["note"]
    lonely = next(uid for uid in sorted(REAL_EXPORT.pages) if not REAL_EXPORT.links(uid))
    answer = ok(call("find_path", {"fromUid": lonely, "toUid": first}))
    assert not answer["found"] and answer["note"]
    assert "maxHops" in error(call("find_path", {"fromUid": first, "toUid": second, "maxHops": 7}))


def test_find_path_relationship_filter(call: CallFn) -> None:
    export = REAL_EXPORT
    claim = next(uid for uid in contested_claims(export) if export.stance(uid, "Supports"))
    supporter = sorted(export.stance(claim, "Supports"))[0]
    opposer = sorted(export.stance(claim, "Opposes"))[0]
    both = ok(call("find_path", {"fromUid": supporter, "toUid": opposer}))
    assert both["length"] == shortest_paths(export, supporter, opposer)[0] == 2
    labels = {"supports"}
    length, _ = shortest_paths(export, supporter, opposer, labels)
    only = ok(
        call(
            "find_path",
            {"fromUid": supporter, "toUid": opposer, "relationshipTypes": ["Supports"]},
        )
    )
    if length is None or length > 4:
        assert not only["found"]
    else:
        assert only["length"] == length
        assert {s["relationshipType"] for p in only["paths"] for s in p} == {"Supports"}


def test_find_path_across_datasets_says_where_each_node_is(call: CallFn) -> None:
    sample, real = export_of("pqyDoNken"), export_of("5nRu3DAr8")
    assert sample.slug != real.slug  # one node in each export
    message = error(call("find_path", {"fromUid": "pqyDoNken", "toUid": "5nRu3DAr8"}))
    assert f"5nRu3DAr8 is in dataset {real.slug}" in message
    assert f"pqyDoNken in {sample.slug}" in message and "inside one dataset" in message
    assert "no node with uid" not in message
    missing = error(call("find_path", {"fromUid": "pqyDoNken", "toUid": "noSuchUid1"}))
    assert "no node with uid noSuchUid1" in missing


# ---------------------------------------------------------------------------------------
# get_claim_status
# ---------------------------------------------------------------------------------------


Stance = dict[tuple[str, str | None], str]  # (node uid, via uid or None) -> its relation label


def expected_stance(export: Export, uid: str) -> dict[str, Stance]:
    """Supporting and opposing nodes of ``uid``: direct ones, and through one node, where
    the stance is the product of the two (an opposer of an opposer supports)."""
    sign = {"Supports": 1, "Opposes": -1}
    sides: dict[str, Stance] = {"supporting": {}, "opposing": {}}
    direct = [r for r in export.relations if r.destination == uid and r.label in sign]
    for rel in direct:
        sides["supporting" if sign[rel.label] > 0 else "opposing"][(rel.source, None)] = rel.label
    for rel in direct:
        for second in export.relations:
            if second.destination != rel.source or second.label not in sign or second.source == uid:
                continue
            side = "supporting" if sign[rel.label] * sign[second.label] > 0 else "opposing"
            if (second.source, None) not in sides[side]:
                sides[side][(second.source, rel.source)] = second.label
    return sides


def _check_claim_status(status: Json, uid: str, export: Export | None = None) -> None:
    export = export or export_of(uid)
    assert_ref(status["claim"], uid)
    expected = expected_stance(export, uid)
    by_creator: dict[str, dict[str, int]] = {}
    for side, stance in expected.items():
        nodes = status[side]
        got = {
            (n["uid"], n["via"]["uid"] if n["via"] else None): n["relationshipType"] for n in nodes
        }
        assert got == stance, (uid, side)
        assert len(nodes) == len(stance)
        for node in nodes:
            assert_ref(node)
            if node["via"]:
                assert_ref(node["via"])
        for other, _ in stance:
            creator = export.pages[other].creator or "(unknown)"
            entry = by_creator.setdefault(creator, {"supporting": 0, "opposing": 0})
            entry[side] += 1
    assert status["contested"] == bool(expected["supporting"] and expected["opposing"])
    assert status["countsByCreator"] == by_creator
    direct = {other for stance in expected.values() for other, via in stance if via is None}
    sources = sources_linked_to(export, direct)
    assert {s["uid"] for s in status["sources"]} == sources
    for source in status["sources"]:
        assert_ref(source)
    evidence = [other for stance in expected.values() for other, _ in stance]
    creators = {export.pages[u].creator for u in evidence}
    single = bool(evidence) and (len(sources) <= 1 if sources else len(creators) <= 1)
    assert status["singleSource"] == single
    assert (status["note"] is None) == bool(evidence)


@pytest.mark.parametrize("uid", CONTESTED_CLAIMS)
def test_claim_status_of_contested_claims(call: CallFn, uid: str) -> None:
    status = ok(call("get_claim_status", {"uid": uid, "detail": "full"}))
    assert status["contested"]
    _check_claim_status(status, uid)


def test_claim_status_counts_of_well_supported_claims(server: MCPServer) -> None:
    uids = well_supported_claims(REAL_EXPORT)
    answers = call_many(server, [("get_claim_status", {"uid": uid}) for uid in uids])
    for uid, answer in zip(uids, answers, strict=True):
        status = ok(answer)
        assert len(status["supporting"]) == len(REAL_EXPORT.stance(uid, "Supports")) > 1
        assert len(status["opposing"]) == len(REAL_EXPORT.stance(uid, "Opposes"))


def test_claim_status_of_every_claim_hypothesis_and_conclusion(server: MCPServer) -> None:
    uids = [
        p.uid
        for e in EXPORTS.values()
        for kind in ("Claim", "Hypothesis", "Conclusion")
        for p in e.of_type(kind)
    ]
    calls = [("get_claim_status", {"uid": uid, "detail": "full"}) for uid in uids]
    for uid, answer in zip(uids, call_many(server, calls), strict=True):
        _check_claim_status(ok(answer), uid)


def test_claim_status_without_evidence(call: CallFn) -> None:
    bare = next(
        p.uid
        for p in REAL_EXPORT.of_type("Claim")
        if not REAL_EXPORT.stance(p.uid, "Supports") and not REAL_EXPORT.stance(p.uid, "Opposes")
    )
    status = ok(call("get_claim_status", {"uid": bare}))
    assert status["supporting"] == status["opposing"] == [] and status["sources"] == []
    assert not status["contested"] and not status["singleSource"]
    assert status["countsByCreator"] == {} and "find_gaps" in status["note"]
    assert "no node with uid" in error(call("get_claim_status", {"uid": "Xx0000000"}))


@pytest.fixture(scope="module")
def tiny_server(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MCPServer]:
    """The server over the real corpus and the tiny export (which reuses one of its uids)."""
    path = tmp_path_factory.mktemp("tiny") / "tiny-lab.jsonld"
    path.write_text(json.dumps(tiny_document()), encoding="utf-8")
    with open_brain(backend, REAL, path) as brain:
        yield build_server(brain)


def test_claim_status_through_one_intermediate_node(tiny_server: MCPServer) -> None:
    export = TINY_EXPORT
    expected = expected_stance(export, "pqyDoNken")
    assert expected == {
        "supporting": {
            ("tinyEvd01", None): "Supports",
            ("tinyRes01", "tinyEvd01"): "Supports",
            ("tinyRes03", "tinyEvd02"): "Opposes",
        },
        "opposing": {
            ("tinyEvd02", None): "Opposes",
            ("tinyRes02", "tinyEvd01"): "Opposes",
            ("tinyRes01", "tinyEvd02"): "Supports",
        },
    }
    (answer,) = call_many(
        tiny_server,
        [("get_claim_status", {"uid": "pqyDoNken", "dataset": export.slug, "detail": "full"})],
    )
    status = ok(answer)
    _check_claim_status(status, "pqyDoNken", export)
    assert status["contested"] and status["singleSource"]
    assert [s["uid"] for s in status["sources"]] == ["tinySrc01"]


def test_a_uid_held_by_two_datasets(tiny_server: MCPServer) -> None:
    slugs = {REAL_EXPORT.slug, TINY_EXPORT.slug}
    answers = call_many(
        tiny_server,
        [
            ("get_node", {"uid": "pqyDoNken"}),
            ("get_node", {"uid": "pqyDoNken", "dataset": TINY_EXPORT.slug}),
            ("get_node", {"uid": "pqyDoNken", "dataset": REAL_EXPORT.slug}),
            (
                "get_claim_status",
                {"uid": "pqyDoNken", "dataset": REAL_EXPORT.slug, "detail": "full"},
            ),
            ("find_path", {"fromUid": "tinyRes01", "toUid": "pqyDoNken"}),
            ("search_nodes", {"query": "labs", "dataset": TINY_EXPORT.slug}),
        ],
    )
    default, tiny, real, real_status, path, search = map(ok, answers)
    assert_ref(default, "pqyDoNken")
    assert {default["dataset"], *default["alsoIn"]} == slugs
    assert tiny["content"] == TINY_EXPORT.pages["pqyDoNken"].content
    assert_ref(tiny, "pqyDoNken")
    assert tiny["url"] == TINY_EXPORT.domain + "/page/pqyDoNken" != real["url"]
    assert {k[3] for k in link_keys(tiny["linkedNodes"])} == {"tinyEvd01", "tinyEvd02"}
    assert_ref(real, "pqyDoNken")
    assert set(link_keys(real["linkedNodes"])) == REAL_EXPORT.links("pqyDoNken")
    _check_claim_status(real_status, "pqyDoNken", REAL_EXPORT)
    assert path["found"] and path["length"] == 2
    for steps in path["paths"]:
        assert {s["source"]["dataset"] for s in steps} == {TINY_EXPORT.slug}
    assert [h["uid"] for h in search["results"]] == ["pqyDoNken"]
    assert search["results"][0]["url"].startswith(TINY_EXPORT.domain)


# ---------------------------------------------------------------------------------------
# detail: concise answers (the default) hold what full ones do, each node still attributed
# ---------------------------------------------------------------------------------------

DETAIL_TOOLS = (
    "get_node_neighborhood",
    "get_relationships",
    "get_claim_status",
    "get_researcher_contributions",
)
#: What a concise answer keeps of every node: what a citation needs.
CITATION = {"uid", "nodeType", "title", "creator", "created", "url"}
_COMPACT_RE = re.compile(r"^(\S+) -(.+)-> (\S+)$")


def assert_cited(ref: Json, dataset: str | None, uid: str | None = None, *extra: str) -> None:
    """A node of a concise answer: its citation (plus ``extra`` keys), attributed as its
    export says; its own dataset exactly when the answer names none (``dataset``)."""
    if dataset is None:
        assert set(ref) == CITATION | {"dataset", *extra}, ref
        assert_ref(ref, uid)
    else:
        assert set(ref) == CITATION | set(extra), ref
        assert_ref({**ref, "dataset": dataset}, uid)


def compact_edge(edge: str) -> tuple[str, str | None, str]:
    """``a -Label-> b`` -> (a, Label, b); a text link ``a -(text)-> b`` -> (a, None, b)."""
    match = _COMPACT_RE.match(edge)
    assert match, edge
    source, label, destination = match.groups()
    return source, None if label == "(text)" else label, destination


def both_details(
    server: MCPServer, calls: list[tuple[str, Json]]
) -> list[tuple[Json, Json, int, int]]:
    """Each call concise and full: (concise answer, full answer, their text lengths)."""
    answers = call_many(
        server,
        [
            (name, {**args, "detail": level})
            for name, args in calls
            for level in ("concise", "full")
        ],
    )
    pairs = []
    for index in range(len(calls)):
        concise, full = answers[2 * index], answers[2 * index + 1]
        pairs.append((ok(concise), ok(full), len(concise[2]), len(full[2])))
    return pairs


def test_concise_neighborhood_has_the_nodes_and_edges_of_the_full_one(server: MCPServer) -> None:
    cases = _neighborhood_cases()
    hubs = [max(e.pages, key=lambda u, e=e: len(e.links(u))) for e in EXPORTS.values()]
    cases += [(uid, {"depth": 2}, expected_hops(export_of(uid), uid, 2)) for uid in hubs]
    pairs = both_details(server, [("get_node_neighborhood", {"uid": u, **a}) for u, a, _ in cases])
    for (uid, args, expected), (concise, full, short, long) in zip(cases, pairs, strict=True):
        export = export_of(uid)
        assert concise["dataset"] == full["dataset"] == export.slug
        assert_cited(concise["start"], export.slug, uid)
        assert [[n["uid"] for n in hop] for hop in concise["nodesByHop"]] == [
            [n["uid"] for n in hop] for hop in full["nodesByHop"]
        ]
        assert [{n["uid"] for n in hop} for hop in concise["nodesByHop"]] == expected
        for hop in concise["nodesByHop"]:
            for node in hop:
                assert_cited(node, export.slug)
        reached = {uid} | {n["uid"] for hop in concise["nodesByHop"] for n in hop}
        edges = [compact_edge(edge) for edge in concise["edges"]]
        assert edges == [
            (e["sourceUid"], e["relationshipType"], e["destinationUid"]) for e in full["edges"]
        ]
        for source, label, destination in edges:
            assert {source, destination} <= reached
            if label is None:
                assert (source, destination) in export.text_links
            else:
                assert Rel(source, label, destination) in export.relations
        if args.get("relationshipTypeFilter"):
            assert {label for _, label, _ in edges} <= {args["relationshipTypeFilter"]}
        for key in ("depth", "direction", "listed", "truncated", "note"):
            assert concise[key] == full[key], key
        assert short < long
    assert sum(p[2] for p in pairs) <= 0.8 * sum(p[3] for p in pairs)


def resolve_relationships(answer: Json) -> list[tuple[str, str, str, str]]:
    """(dataset, source, label, destination) of each relation of a concise answer, checking
    that each node is given in full (attributed) once per dataset, before any relation names
    it by uid alone, and that a uid names the node last given in full with it."""
    dataset = answer.get("dataset")
    latest: dict[str, Json] = {}
    given: set[tuple[str, str]] = set()
    keys = []
    for rel in answer["relationships"]:
        ends = []
        for side in ("source", "destination"):
            end = rel[side]
            if isinstance(end, str):
                assert end in latest, (end, "named before it was given")
                ends.append(latest[end])
                continue
            assert_cited(end, dataset)
            ref = {"dataset": dataset, **end}
            assert (ref["dataset"], ref["uid"]) not in given, ref
            given.add((ref["dataset"], ref["uid"]))
            latest[ref["uid"]] = ref
            ends.append(ref)
        source, destination = ends
        assert source["dataset"] == destination["dataset"]
        keys.append((source["dataset"], source["uid"], rel["relationshipType"], destination["uid"]))
    return keys


def _full_rel_keys(answer: Json) -> list[tuple[str, str, str, str]]:
    return [
        (r["source"]["dataset"], r["source"]["uid"], r["relationshipType"], r["destination"]["uid"])
        for r in answer["relationships"]
    ]


def _check_concise_relationships(pairs: list[tuple[Json, Json, int, int]]) -> None:
    for concise, full, short, long in pairs:
        keys = resolve_relationships(concise)
        assert keys == _full_rel_keys(full)
        assert _rel_keys(full) == set(keys)  # the full answer is the export's, attributed
        datasets = {key[0] for key in keys}
        assert concise.get("dataset") == full.get("dataset")
        assert concise.get("dataset") == (datasets.pop() if len(datasets) == 1 else None)
        for key in ("listed", "total", "truncated", "note"):
            assert concise[key] == full[key], key
        named = [(k[0], uid) for k in keys for uid in (k[1], k[3])]
        repeated = len(named) > len(set(named))
        unnamed = bool(keys) and concise.get("dataset") is not None
        assert short <= long and (short < long) == (repeated or unnamed)


def test_concise_relationships_give_each_node_once(server: MCPServer) -> None:
    claim = max(contested_claims(REAL_EXPORT), key=lambda u: len(REAL_EXPORT.stance(u, "Supports")))
    calls: list[tuple[str, Json]] = [
        ("get_relationships", {}),
        ("get_relationships", {"limit": 500}),
        ("get_relationships", {"destinationUid": claim}),
        ("get_relationships", {"relationshipType": "Refutes"}),
    ]
    for export in EXPORTS.values():
        for label in sorted({r.label for r in export.relations}):
            args = {"relationshipType": label, "dataset": export.slug, "limit": 500}
            calls.append(("get_relationships", args))
    pairs = both_details(server, calls)
    _check_concise_relationships(pairs)
    every = pairs[1]
    assert set(resolve_relationships(every[0])) == _expected_rels(EXPORTS.values())
    assert every[2] <= 0.85 * every[3]


@pytest.fixture(scope="module")
def twin_server(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MCPServer]:
    """The server over the tiny export and its twin: every uid and creator in two datasets."""
    folder = tmp_path_factory.mktemp("twins")
    paths = [folder / "tiny-lab.jsonld", folder / "tiny-lab-twin.jsonld"]
    for path, document in zip(paths, (tiny_document(), twin_document()), strict=True):
        path.write_text(json.dumps(document), encoding="utf-8")
    with open_brain(backend, *paths) as brain:
        yield build_server(brain)


def test_concise_relationships_of_two_datasets_sharing_uids(twin_server: MCPServer) -> None:
    pairs = both_details(twin_server, [("get_relationships", {})])
    _check_concise_relationships(pairs)
    concise = pairs[0][0]
    assert "dataset" not in concise
    assert set(resolve_relationships(concise)) == _expected_rels([TINY_EXPORT, TWIN_EXPORT])


def test_a_capped_concise_answer_still_attributes_every_node_it_names(
    server: MCPServer, call: CallFn
) -> None:
    """The output cap keeps a prefix of the relations: each node named by uid alone was
    given in full before, so it is still there."""
    assert isinstance(server, CappedServer)
    cap, server.max_chars = server.max_chars, 6_000
    try:
        rels = ok(call("get_relationships", {"limit": 500}))
    finally:
        server.max_chars = cap
    assert rels["truncated"] and "answer cut" in rels["note"]
    keys = resolve_relationships(rels)
    assert 1 <= rels["listed"] == len(keys) < rels["total"]
    assert set(keys) <= _expected_rels(EXPORTS.values())


def expand_claim_status(concise: Json) -> Json:
    """A concise claim status as the full one says it: every node with its dataset, an
    intermediate node as the direct one of that uid (checked to be listed)."""
    dataset = concise["dataset"]
    assert_cited(concise["claim"], dataset)
    direct: dict[str, Json] = {}
    for side in ("supporting", "opposing"):
        for node in concise[side]:
            assert_cited(node, dataset, None, "relationshipType", "via")
            if node["via"] is None:
                direct[node["uid"]] = {"dataset": dataset, **node}

    def ref(node: Json) -> Json:
        return {key: node[key] for key in CITATION} | {"dataset": dataset}

    expanded = {**concise, "claim": ref(concise["claim"])}
    for side in ("supporting", "opposing"):
        expanded[side] = [
            ref(n)
            | {
                "relationshipType": n["relationshipType"],
                "via": None if n["via"] is None else ref(direct[n["via"]]),
            }
            for n in concise[side]
        ]
    for source in concise["sources"]:
        assert_cited(source, dataset)
    expanded["sources"] = [ref(s) for s in concise["sources"]]
    return expanded


def test_concise_claim_status_is_the_full_one_without_repetition(server: MCPServer) -> None:
    uids = [
        p.uid
        for e in EXPORTS.values()
        for kind in ("Claim", "Hypothesis", "Conclusion")
        for p in e.of_type(kind)
    ]
    pairs = both_details(server, [("get_claim_status", {"uid": uid}) for uid in uids])
    for uid, (concise, full, short, long) in zip(uids, pairs, strict=True):
        assert concise["dataset"] == full["dataset"] == export_of(uid).slug
        expanded = expand_claim_status(concise)
        assert expanded == full
        _check_claim_status(expanded, uid)
        assert short < long


def test_concise_claim_status_names_an_intermediate_node_by_uid(tiny_server: MCPServer) -> None:
    args = {"uid": "pqyDoNken", "dataset": TINY_EXPORT.slug}
    ((concise, full, short, long),) = both_details(tiny_server, [("get_claim_status", args)])
    vias = {n["via"] for side in ("supporting", "opposing") for n in concise[side]} - {None}
    assert vias == {"tinyEvd01", "tinyEvd02"}
    assert expand_claim_status(concise) == full
    _check_claim_status(expand_claim_status(concise), "pqyDoNken", TINY_EXPORT)
    assert short < long


def _largest_types(by_type: dict[str, int]) -> dict[str, int]:
    return dict(sorted(by_type.items(), key=lambda item: (-item[1], item[0]))[:3])


def _check_concise_contributions(
    pairs: list[tuple[Json, Json, int, int]], exports: list[Export], node_types: list[str | None]
) -> None:
    for (concise, full, short, long), node_type in zip(pairs, node_types, strict=True):
        expected = creator_counts(exports, node_type)
        names = [c["creator"] for c in concise["creators"]]
        assert names == [c["creator"] for c in full["creators"]]
        for entry in concise["creators"]:
            counts = expected[entry["creator"]]
            assert entry["total"] == counts.total
            assert entry["byType"] == _largest_types(counts.by_type)
            others = counts.total - sum(_largest_types(counts.by_type).values())
            assert entry.get("otherTypes", 0) == others  # the counts add up to the total
            assert sum(entry["byType"].values()) + entry.get("otherTypes", 0) == entry["total"]
            assert entry["firstContribution"] == counts.first
            assert entry["lastContribution"] == counts.last
        assert [n["uid"] for n in concise["nodes"]] == [n["uid"] for n in full["nodes"]]
        datasets = {n["dataset"] for n in full["nodes"]}
        assert concise.get("dataset") == full.get("dataset")
        assert concise.get("dataset") == (datasets.pop() if len(datasets) == 1 else None)
        for node in concise["nodes"]:
            assert_cited(node, concise.get("dataset"))
        for key in ("listed", "total", "truncated", "note"):
            assert concise[key] == full[key], key
        trimmed = any(len(expected[name].by_type) > 3 for name in names)
        unnamed = bool(concise["nodes"]) and concise.get("dataset") is not None
        assert short <= long and (short < long) == (trimmed or unnamed)


def test_concise_contributions_keep_the_largest_types_and_every_node(server: MCPServer) -> None:
    creators = sorted(creator_counts(EXPORTS.values()))
    calls: list[tuple[str, Json]] = [("get_researcher_contributions", {})]
    calls += [("get_researcher_contributions", {"creator": c}) for c in creators]
    calls += [("get_researcher_contributions", {"creator": "Joel Chan", "nodeType": "SRC"})]
    types: list[str | None] = [None] * (1 + len(creators)) + ["Source"]
    pairs = both_details(server, calls)
    _check_concise_contributions(pairs, list(EXPORTS.values()), types)
    assert pairs[0][2] <= 0.95 * pairs[0][3]  # everyone: the smaller types go (counted once)


def test_concise_contributions_of_a_creator_in_two_datasets(twin_server: MCPServer) -> None:
    pairs = both_details(twin_server, [("get_researcher_contributions", {"creator": "Ada Tiny"})])
    _check_concise_contributions(pairs, [TINY_EXPORT, TWIN_EXPORT], [None])
    concise = pairs[0][0]
    assert "dataset" not in concise
    assert {n["dataset"] for n in concise["nodes"]} == {TINY_EXPORT.slug, TWIN_EXPORT.slug}


def test_detail_is_concise_by_default(server: MCPServer) -> None:
    hub = max(REAL_EXPORT.pages, key=lambda u: len(REAL_EXPORT.links(u)))
    arguments: dict[str, Json] = {
        "get_node_neighborhood": {"uid": hub, "depth": 2},
        "get_relationships": {"relationshipType": "Supports"},
        "get_claim_status": {"uid": CONTESTED_CLAIMS[0]},
        "get_researcher_contributions": {"creator": "Jay Patel"},
    }
    calls = [
        (name, {**arguments[name], **level})
        for name in DETAIL_TOOLS
        for level in ({}, {"detail": "concise"}, {"detail": "full"})
    ]
    answers = [ok(answer) for answer in call_many(server, calls)]
    for index, name in enumerate(DETAIL_TOOLS):
        default, concise, full = answers[3 * index : 3 * index + 3]
        assert default == concise != full, name


def test_detail_is_listed_with_what_each_level_gives(server: MCPServer) -> None:
    async def listing(client: Client) -> Any:
        return await client.list_tools()

    tools = {t.name: t for t in run_client(server, listing).tools}
    for name in DETAIL_TOOLS:
        detail = tools[name].input_schema["properties"]["detail"]
        assert detail.get("enum") == ["concise", "full"] and detail.get("default") == "concise"
        description = tools[name].description or ""
        assert "detail: concise (default)" in description and " full " in description, name
    others = set(tools) - set(DETAIL_TOOLS)
    assert not [n for n in others if "detail" in tools[n].input_schema.get("properties", {})]


# ---------------------------------------------------------------------------------------
# find_gaps
# ---------------------------------------------------------------------------------------


def _check_gaps(answer: Json, expected: dict[str, set[str]]) -> None:
    for gap, uids in expected.items():
        listed = [n["uid"] for n in answer[gap]]
        assert answer["counts"][gap] == len(uids), gap
        assert len(listed) == len(set(listed)) == min(len(uids), 50), gap
        assert set(listed) <= uids, gap
        for node in answer[gap]:
            assert_ref(node)
    assert answer["truncated"] == any(len(u) > 50 for u in expected.values())
    assert (answer["note"] is None) == (not answer["truncated"])


def test_find_gaps_of_the_real_corpus(call: CallFn, real_call: CallFn) -> None:
    expected = expected_gaps(REAL_EXPORT)
    assert len(expected["unaddressedQuestions"]) == 4
    assert len(expected["claimsWithoutEvidence"]) > 50
    scoped = ok(call("find_gaps", {"dataset": REAL_EXPORT.slug}))
    _check_gaps(scoped, expected)
    alone = ok(real_call("find_gaps", {}))
    _check_gaps(alone, expected)
    assert {n["uid"] for n in alone["unaddressedQuestions"]} == expected["unaddressedQuestions"]


def test_find_gaps_of_the_sample(call: CallFn) -> None:
    expected = expected_gaps(SAMPLE_EXPORT)
    # the README's two typed hypotheses, and the one typed from its [[HYP]] prefix
    assert len(expected["hypothesesWithoutResults"]) == 3
    assert len(expected["claimsWithoutEvidence"]) == 4
    answer = ok(call("find_gaps", {"dataset": SAMPLE_EXPORT.slug}))
    _check_gaps(answer, expected)
    for gap, uids in expected.items():
        assert {n["uid"] for n in answer[gap]} == uids, gap


def test_find_gaps_over_both_datasets_adds_up(call: CallFn) -> None:
    answer = ok(call("find_gaps", {}))
    sample, real = expected_gaps(SAMPLE_EXPORT), expected_gaps(REAL_EXPORT)
    for gap in sample:
        assert answer["counts"][gap] == len(sample[gap]) + len(real[gap])
        assert {n["uid"] for n in answer[gap]} <= sample[gap] | real[gap]


@pytest.mark.parametrize(
    ("node_type", "gap"),
    [
        ("Claim", "claimsWithoutEvidence"),
        ("QUE", "unaddressedQuestions"),
        ("Hypothesis", "hypothesesWithoutResults"),
    ],
)
def test_find_gaps_node_type_filter(call: CallFn, node_type: str, gap: str) -> None:
    answer = ok(call("find_gaps", {"nodeType": node_type, "dataset": SAMPLE_EXPORT.slug}))
    expected = expected_gaps(SAMPLE_EXPORT)
    assert {n["uid"] for n in answer[gap]} == expected[gap]
    for other in expected:
        if other != gap:
            assert answer[other] == [] and answer["counts"][other] == 0


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("search_nodes", {"query": "actin", "nodeType": "Banana"}),
        ("get_researcher_contributions", {"nodeType": "Banana"}),
        ("get_researcher_contributions", {"creator": "Matt Akamatsu", "nodeType": "Banana"}),
        ("get_node_neighborhood", {"uid": "pqyDoNken", "nodeTypeFilter": "Banana"}),
        ("find_gaps", {"nodeType": "Banana"}),
    ],
)
def test_an_unknown_node_type_is_an_error_listing_the_loaded_types(
    call: CallFn, tool: str, arguments: Json
) -> None:
    message = error(call(tool, arguments))
    assert "unknown node type 'Banana'" in message
    loaded = sorted({page.node_type for e in EXPORTS.values() for page in e.pages.values()})
    assert message.endswith(f"node types: {', '.join(loaded)}"), message


def test_a_type_the_ontology_knows_but_no_dataset_holds_selects_nothing(call: CallFn) -> None:
    loaded = {page.node_type for e in EXPORTS.values() for page in e.pages.values()}
    assert "Artifact" not in loaded  # a core node type of the ontology, absent from the exports
    answer = ok(call("search_nodes", {"query": "actin", "nodeType": "Artifact"}))
    assert answer["results"] == [] and answer["listed"] == 0


def test_find_gaps_rejects_other_node_types_and_datasets(call: CallFn) -> None:
    assert "nodeType" in error(call("find_gaps", {"nodeType": "Source"}))
    assert REAL_EXPORT.slug in error(call("find_gaps", {"dataset": "nope"}))


# ---------------------------------------------------------------------------------------
# sparql_query
# ---------------------------------------------------------------------------------------


def test_sparql_select_counts_relations(call: CallFn) -> None:
    query = f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{REAL_GRAPH}> {{ ?s dg:opposes ?o }} }}"
    answer = ok(call("sparql_query", {"query": query}))
    assert answer["kind"] == "select" and answer["columns"] == ["n"]
    assert answer["rows"] == [{"n": "8"}] and answer["rowCount"] == 1
    union = ok(
        call("sparql_query", {"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s dg:opposes ?o }"})
    )
    opposes = sum(1 for e in EXPORTS.values() for r in e.relations if r.label == "Opposes")
    assert union["rows"] == [{"n": str(opposes)}]


def test_sparql_from_narrows_the_default_graph(call: CallFn) -> None:
    """The default graph is the union of all graphs, unless the query names its dataset."""
    query = f"SELECT (COUNT(*) AS ?n) FROM <{REAL_GRAPH}> WHERE {{ ?s dg:opposes ?o }}"
    answer = ok(call("sparql_query", {"query": query}))
    assert answer["rows"] == [{"n": "8"}]
    named = ok(
        call(
            "sparql_query",
            {
                "query": f"SELECT ?g (COUNT(*) AS ?n) FROM NAMED <{REAL_GRAPH}> "
                "WHERE { GRAPH ?g { ?s dg:opposes ?o } } GROUP BY ?g"
            },
        )
    )
    assert named["rows"] == [{"g": REAL_GRAPH, "n": "8"}]


def test_sparql_select_rows_are_the_opposing_pairs(call: CallFn) -> None:
    query = f"SELECT ?s ?o WHERE {{ GRAPH <{REAL_GRAPH}> {{ ?s dg:opposes ?o }} }}"
    answer = ok(call("sparql_query", {"query": query}))
    expected = {
        (page(r.source).url, page(r.destination).url)
        for r in REAL_EXPORT.relations
        if r.label == "Opposes"
    }
    assert {(row["s"], row["o"]) for row in answer["rows"]} == expected


def test_sparql_select_titles_and_creators(call: CallFn) -> None:
    uid = "pqyDoNken"
    query = f"SELECT ?title ?creator WHERE {{ <{page(uid).url}> dct:title ?title ; dct:creator ?creator }}"
    answer = ok(call("sparql_query", {"query": query}))
    assert answer["rows"] == [{"title": page(uid).title, "creator": page(uid).creator}]


def test_sparql_ask(call: CallFn) -> None:
    rel = sorted((r.source, r.destination) for r in REAL_EXPORT.relations if r.label == "Opposes")[
        0
    ]
    yes = f"ASK {{ <{page(rel[0]).url}> dg:opposes <{page(rel[1]).url}> }}"
    no = f"ASK {{ <{page(rel[1]).url}> dg:opposes <{page(rel[0]).url}> }}"
    assert ok(call("sparql_query", {"query": yes}))["boolean"] is True
    answer = ok(call("sparql_query", {"query": no}))
    assert answer["kind"] == "ask" and answer["boolean"] is False


def test_sparql_construct_gives_turtle(call: CallFn) -> None:
    query = (
        f"CONSTRUCT {{ ?s dg:opposes ?o }} WHERE {{ GRAPH <{REAL_GRAPH}> {{ ?s dg:opposes ?o }} }}"
    )
    answer = ok(call("sparql_query", {"query": query}))
    assert answer["kind"] == "construct" and not answer["truncated"]
    triples = list(parse(answer["turtle"].encode(), format=RdfFormat.TURTLE))
    expected = {
        (page(r.source).url, page(r.destination).url)
        for r in REAL_EXPORT.relations
        if r.label == "Opposes"
    }
    assert {(t.subject.value, t.object.value) for t in triples} == expected


def test_sparql_limit_caps_rows(call: CallFn) -> None:
    answer = ok(call("sparql_query", {"query": "SELECT ?s WHERE { ?s dct:title ?t }", "limit": 5}))
    assert answer["rowCount"] == len(answer["rows"]) == 5
    assert answer["truncated"] and answer["note"]
    full = ok(call("sparql_query", {"query": "SELECT ?s WHERE { ?s dct:title ?t }", "limit": 1000}))
    assert full["rowCount"] == len(SAMPLE_EXPORT.pages) + len(REAL_EXPORT.pages)
    assert not full["truncated"]


def test_sparql_refuses_service(call: CallFn) -> None:
    query = "SELECT * WHERE { SERVICE <https://example.org/sparql> { ?s ?p ?o } }"
    assert "SERVICE" in error(call("sparql_query", {"query": query}))


@pytest.mark.parametrize(
    "update",
    [
        "INSERT DATA { <urn:x> <urn:y> <urn:z> }",
        f"DELETE WHERE {{ GRAPH <{REAL_GRAPH}> {{ ?s dg:opposes ?o }} }}",
        f"DROP GRAPH <{SAMPLE_GRAPH}>",
    ],
)
def test_sparql_refuses_updates(call: CallFn, update: str) -> None:
    assert "updates are not allowed" in error(call("sparql_query", {"query": update}))
    still = ok(call("sparql_query", {"query": "ASK { <urn:x> <urn:y> <urn:z> }"}))
    assert still["boolean"] is False
    count = ok(
        call(
            "sparql_query",
            {
                "query": f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{REAL_GRAPH}> {{ ?s dg:opposes ?o }} }}"
            },
        )
    )
    assert count["rows"] == [{"n": "8"}]


def test_sparql_syntax_error(call: CallFn) -> None:
    assert "syntax" in error(call("sparql_query", {"query": "SELECT ?s WHERE { ?s ?p "})).lower()


def test_a_misspelt_query_form_names_the_forms(call: CallFn) -> None:
    message = error(call("sparql_query", {"query": "SELEC ?s WHERE { ?s ?p ?o }"}))
    assert "expected a query form: SELECT, CONSTRUCT, DESCRIBE or ASK; found 'SELEC'" in message


# ---------------------------------------------------------------------------------------
# resources and prompts
# ---------------------------------------------------------------------------------------


def _front_matter(markdown: str) -> dict[str, Any]:
    lines = markdown.split("\n")
    assert lines[0] == "---"
    end = lines.index("---", 1)
    return {
        key: json.loads(value) for key, _, value in (line.partition(": ") for line in lines[1:end])
    }


@pytest.mark.parametrize("uid", ["pqyDoNken", "5nRu3DAr8", "ar5rfh34m"])
def test_node_resource_is_markdown_with_front_matter(server: MCPServer, uid: str) -> None:
    async def read(client: Client) -> Any:
        return await client.read_resource(f"labbrain://node/{uid}")

    (content,) = run_client(server, read).contents
    assert content.mime_type == "text/markdown"
    expected = page(uid)
    front = _front_matter(content.text)
    assert front["uid"] == uid
    assert front["creator"] == expected.creator
    assert front["url"] == expected.url
    assert front["title"] == expected.clean_title
    assert front["type"] == expected.node_type
    assert front["dataset"] == export_of(uid).slug
    assert expected.content.strip() in content.text
    for *_, other in export_of(uid).links(uid):
        assert page(other).url in content.text


def test_schema_resource_is_json(server: MCPServer, call: CallFn) -> None:
    async def read(client: Client) -> Any:
        return await client.read_resource("labbrain://schema")

    (content,) = run_client(server, read).contents
    assert content.mime_type == "application/json"
    schema = json.loads(content.text)
    assert schema["nodeTypes"] == ok(call("get_schema", {}))["nodeTypes"]


def test_unknown_node_resource_is_an_error(server: MCPServer) -> None:
    async def read(client: Client) -> str:
        try:
            await client.read_resource("labbrain://node/Xx0000000")
        except MCPError as failure:
            return str(failure)
        return "no error"

    assert "no node with uid Xx0000000" in run_client(server, read)


def test_resources_are_listed(server: MCPServer) -> None:
    async def listing(client: Client) -> tuple[Any, Any]:
        return await client.list_resources(), await client.list_resource_templates()

    resources, templates = run_client(server, listing)
    assert "labbrain://schema" in {str(r.uri) for r in resources.resources}
    assert "labbrain://node/{uid}" in {t.uri_template for t in templates.resource_templates}


def test_prompts(server: MCPServer) -> None:
    async def prompts(client: Client) -> tuple[Any, Any, Any]:
        return (
            await client.list_prompts(),
            await client.get_prompt("audit_claim", {"uid": "pqyDoNken"}),
            await client.get_prompt("review_question", {"question": "Does Facebook polarize?"}),
        )

    listed, audit, review = run_client(server, prompts)
    by_name = {p.name: p for p in listed.prompts}
    assert set(by_name) == {"review_question", "audit_claim"}
    for prompt in by_name.values():
        assert prompt.title and prompt.description
        assert [a.required for a in prompt.arguments or []] == [True]
    audit_text = audit.messages[0].content.text
    assert "pqyDoNken" in audit_text and "get_claim_status" in audit_text
    review_text = review.messages[0].content.text
    assert "Does Facebook polarize?" in review_text and "search_nodes" in review_text


# ---------------------------------------------------------------------------------------
# tools/list and error hygiene
# ---------------------------------------------------------------------------------------


def test_tools_are_listed_read_only_and_described(server: MCPServer) -> None:
    async def listing(client: Client) -> Any:
        return await client.list_tools()

    tools = run_client(server, listing).tools
    assert {t.name for t in tools} >= TOOLS
    for tool in tools:
        assert tool.title, tool.name
        assert tool.annotations is not None
        if tool.name in TOOLS:  # get_node records a visit while a project is active
            assert tool.annotations.read_only_hint is (tool.name != "get_node"), tool.name
            assert tool.annotations.destructive_hint is False
        description = tool.description or ""
        sentences = [s for s in re.split(r"(?<=\.)\s+", description) if s.strip()]
        assert len(sentences) >= 2 and len(description) > 150, tool.name
        assert "\n    " not in description, tool.name  # dedented
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert tool.output_schema.get("properties"), tool.name
        assert tool.input_schema.get("type") == "object"


def test_server_instructions_name_the_tools(server: MCPServer) -> None:
    async def instructions(client: Client) -> str | None:
        return client.instructions

    text = run_client(server, instructions) or ""
    for name in ("search_nodes", "get_node", "get_claim_status", "find_gaps"):
        assert name in text


def test_errors_leak_no_path_or_traceback(server: MCPServer) -> None:
    calls: list[tuple[str, Json]] = [
        ("get_node", {"uid": "Xx0000000"}),
        ("get_node", {"uid": "pqyDoNken", "dataset": "nope"}),
        ("search_nodes", {"query": ""}),
        ("search_nodes", {"query": "x", "limit": "many"}),
        ("get_node_neighborhood", {"uid": "pqyDoNken", "depth": 9}),
        ("find_path", {"fromUid": "pqyDoNken", "toUid": "Xx0000000"}),
        ("get_researcher_contributions", {"creator": "Nobody"}),
        ("find_gaps", {"nodeType": "Issue"}),
        ("sparql_query", {"query": "SELECT * WHERE { SERVICE <http://x/> { ?s ?p ?o } }"}),
        ("sparql_query", {"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}),
        ("sparql_query", {"query": "SELEC nonsense"}),
        ("sparql_query", {"query": "LOAD <http://example.org/x.ttl>"}),
        ("get_relationships", {"sourceUid": "Xx0000000"}),
        ("get_claim_status", {"uid": ""}),
    ]
    answers = call_many(server, calls)
    for (name, _), answer in zip(calls, answers, strict=True):
        text = error(answer)
        assert text.strip(), name


@pytest.mark.needs_corpus
def test_cached_answers_follow_loads_and_drops(make_settings: MakeSettings) -> None:
    """get_schema and find_gaps are cached per store state: a load or a drop refreshes them."""
    from labbrain.discourse.reader import DiscourseReader

    with LabBrain(make_settings()) as brain:
        brain.load(str(SAMPLE))
        reader = DiscourseReader(brain)
        first = reader.get_schema()
        gaps = reader.find_gaps().counts
        assert [d.dataset for d in first.datasets] == ["akamatsulab-sample"]
        brain.load(str(REAL))
        second = reader.get_schema()
        assert [d.dataset for d in second.datasets] == [
            "akamatsulab-sample",
            "dg-social-media-polarization",
        ]
        assert reader.find_gaps().counts != gaps
        brain.drop("dg-social-media-polarization")
        assert reader.get_schema() == first
        assert reader.find_gaps().counts == gaps


def _hub_export(path: Path, supporters: int) -> Path:
    """The sample's node and relation types, a claim ``hub000000`` and ``supporters`` evidence
    nodes, each supporting the hub (so the hub has exactly that many links, all incoming)."""
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    kept = [e for e in document["@graph"] if e.get("@type") in ("nodeSchema", "relationDef")]
    pages: list[Json] = [
        {
            "@id": "pages:hub000000",
            "@type": "pages:_CLM-node",
            "title": "[[CLM]] - The hub claim",
            "content": "Supported by many.",
            "created": "2024-01-01T00:00:00.000Z",
            "modified": "2024-01-01T00:00:00.000Z",
            "creator": "Ada",
        }
    ]
    for i in range(supporters):
        uid = f"ev{i:07}"
        pages.append(
            {
                "@id": f"pages:{uid}",
                "@type": "pages:_EVD-node",
                "title": f"[[EVD]] - Evidence {i}",
                "content": f"Measurement {i}.",
                "created": "2024-01-02T00:00:00.000Z",
                "modified": "2024-01-02T00:00:00.000Z",
                "creator": "Ada",
            }
        )
        pages.append(
            {
                "@type": "relationInstance",
                "predicate": "pages:_SUPP-rel",
                "source": f"pages:{uid}",
                "destination": "pages:hub000000",
            }
        )
    document["@graph"] = kept + pages
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize("supporters", [200, 201])
def test_get_node_lists_at_most_200_links_and_says_when_it_left_some_out(
    tmp_path: Path, supporters: int
) -> None:
    """200 links are all listed and the answer is whole; a 201st is left out (the last by
    uid) and the answer says it was cut. get_linked_nodes cuts at the same place."""
    from labbrain.discourse.reader import DiscourseReader

    export = _hub_export(tmp_path / "hub.jsonld", supporters)
    expected = [f"ev{i:07}" for i in range(supporters)]
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(export))
        reader = DiscourseReader(brain)
        node = reader.get_node("hub000000")
        listed = [link.node.uid for link in node.linkedNodes]
        assert listed == expected[:200]
        assert node.linkedNodesTruncated is (supporters > 200)
        assert {(link.direction, link.relationshipType) for link in node.linkedNodes} == {
            ("incoming", "Supports")
        }
        linked = reader.get_linked_nodes("hub000000")
        assert [link.node.uid for link in linked.linkedNodes] == expected[:200]
        assert (linked.listed, linked.total) == (200, supporters)
        assert linked.truncated is (supporters > 200)
