"""Loading files into the store: one named graph per source, replaced atomically.

:func:`load_source` reads a file (or stdin), works out what it is, turns it into quads and
hands them to :meth:`QuadStore.replace_graph` together with the load record, so that a load
either fully succeeds or leaves the store exactly as it was. Discourse-graph exports get their
context repaired and their derived triples added (see :mod:`labbrain.ingest.roam_export`); other
JSON-LD and Turtle / TriG / N-Triples / N-Quads load as plain RDF.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Triple, parse, serialize

from labbrain.errors import (
    ExportFormatError,
    InputError,
    InputTooLarge,
    StaleDataset,
    UnsupportedFormat,
)
from labbrain.files import check_input_directory, check_input_file, path_error
from labbrain.index.dataset_state import DatasetState, NodeState, content_digest
from labbrain.index.links import TYPED, LinkRow
from labbrain.index.text import IndexRecord
from labbrain.ingest import jsonld, nanopub, obsidian
from labbrain.ingest.changes import change_quads
from labbrain.ingest.delta import GraphChange
from labbrain.ingest.nanopub import NANOPUB, NANOPUB_KIND
from labbrain.ingest.roam_export import (
    ExportAnalysis,
    analyse_export,
    is_discourse_export,
    is_export_context,
)
from labbrain.rdf.namespaces import (
    DATASET_GRAPH_PREFIX,
    LB,
    RDF,
    RESERVED_GRAPH_PREFIX,
    SYSTEM_GRAPH,
    XSD,
    dataset_graph,
    slugify,
)
from labbrain.rdf.terms import timestamp
from labbrain.settings import Settings
from labbrain.store.base import GraphPart, GraphWriter, QuadStore, RdfDocument
from labbrain.store.ontology import vocabulary


@dataclass(frozen=True)
class LoadProgress:
    """A load is entering the step named ``name``.

    The steps, in order, are those of the ``ingest`` workflow (declared once, with the other
    task workflows, in :data:`labbrain.tasks.ledger.WORKFLOWS`): ``read`` the bytes;
    ``repair_context`` (read the JSON and repair its context); ``parse`` (turn it into RDF; the
    native engine streams this into the write); ``write`` (the bulk write, while the export is
    analysed and indexed beside it); ``derive`` (the derived triples, written after it);
    ``index`` (record the load, and index plain RDF). ``entries`` is the number of ``@graph``
    entries of the input (0 until it is parsed), which lets a front end decide whether the
    load is big enough to show progress.
    """

    name: str
    entries: int


#: Told of each step as the load enters it; raising there aborts the load (nothing is kept).
Progress = Callable[[LoadProgress], None]


@dataclass(frozen=True)
class SourceInput:
    """An input as read for one load: its bytes, the format name they load as and their
    SHA-256 (recorded with the load; an ingest task compares it when it resumes). A vault
    is read into an export-shaped document (its bytes here); ``problems`` are what was found
    wrong in it and ``notices`` what else the load report says."""

    data: bytes
    fmt: str
    digest: str
    problems: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    #: The input already decoded (a vault's document), for the load to take as it is.
    parsed: jsonld.JsonInput | None = None


#: The format name of an Obsidian vault kept by the Discourse Graphs plugin (a directory).
VAULT = "obsidian"
#: What a load report calls a vault.
VAULT_KIND = "Obsidian vault (Discourse Graphs plugin)"


FORMATS: dict[str, RdfFormat | None] = {
    "jsonld": None,
    "turtle": RdfFormat.TURTLE,
    # A .trig file of nanopublications is recognised as one (NANOPUB) by its heads.
    "trig": RdfFormat.TRIG,
    NANOPUB: RdfFormat.TRIG,
    "ntriples": RdfFormat.N_TRIPLES,
    "nquads": RdfFormat.N_QUADS,
}
SUFFIXES = {
    ".jsonld": "jsonld",
    ".json": "jsonld",
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".trig": "trig",
    ".nt": "ntriples",
    ".nq": "nquads",
}


@dataclass
class LoadReport:
    """What one load did: where the data went, what it held, and what looked wrong."""

    source: str
    graph: str
    slug: str
    kind: str
    load_id: str = ""
    quads: int = 0
    replaced: bool = False
    nodes_by_type: Counter[str] = field(default_factory=Counter)
    relations: Counter[str] = field(default_factory=Counter)
    creators: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    indexed: int | None = None
    seconds: float = 0.0
    #: For a change written by part (a watched vault): nodes added, edited and removed,
    #: relations added and removed; None for a load of the whole source.
    changed: dict[str, int] | None = None
    #: Nodes the input gave more than once, each loaded from one entry (uid, entries, kept).
    duplicates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        """Number of page nodes loaded."""
        return sum(self.nodes_by_type.values())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the report."""
        return {
            "source": self.source,
            "graph": self.graph,
            "kind": self.kind,
            "quads": self.quads,
            "replaced": self.replaced,
            "nodes": self.nodes,
            "nodesByType": dict(self.nodes_by_type.most_common()),
            "relations": dict(self.relations.most_common()),
            "creators": dict(self.creators.most_common()),
            "warnings": self.warnings,
            "notices": self.notices,
            "indexed": self.indexed,
            "changed": self.changed,
            "duplicates": self.duplicates,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Prepared:
    """An input understood and ready to write.

    ``first`` is the bulk of the data. For discourse-graph exports ``export`` is the parsed
    export (possibly with its ``@graph`` still undecoded), analysed while ``first`` is being
    written.
    """

    kind: str
    first: GraphPart
    slug_hint: str
    entries: int = 0
    export_id: str | None = None
    export: jsonld.JsonInput | None = None
    notices: list[str] = field(default_factory=list)
    #: What was found wrong in the input before it was prepared (a vault's problems).
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- paths
#: How to pass what a device or named pipe gives to ``labbrain load``: on stdin (the
#: ``stream_hint`` of :func:`~labbrain.files.check_input_file`).
LOAD_STREAM_HINT = "pipe its content in instead: labbrain load - --format FORMAT < {path}"


def read_source(source: str, settings: Settings) -> bytes:
    """The bytes of ``source`` (a path, or ``-`` for stdin), refusing inputs over the limit
    and paths that are not readable regular files (see :func:`check_input_file`)."""
    limit = settings.max_input_bytes
    if source == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        path = check_input_file(source, stream_hint=LOAD_STREAM_HINT)
        try:
            if path.stat().st_size > limit:
                raise InputTooLarge(source, f"file is larger than the {limit}-byte input limit")
            data = path.read_bytes()  # its size is known: read(limit + 1) would allocate limit
        except OSError as error:
            raise path_error(source, error) from None
    if len(data) > limit:
        raise InputTooLarge(source, f"input is larger than the {limit}-byte input limit")
    return data


def read_input(
    source: str,
    settings: Settings,
    fmt: str | None = None,
    data: bytes | None = None,
    *,
    allow_unverified: bool = False,
) -> SourceInput:
    """Detect the format of ``source`` (``fmt`` when given), read it (unless ``data`` holds
    its bytes already) and hash it: once per load.

    A TriG file whose quads hold a nanopublication head (or any file with ``--format
    nanopub``) is read as nanopublications (:mod:`labbrain.ingest.nanopub`): their signatures
    are checked here, and those that fail are left out unless ``allow_unverified``."""
    fmt_name = detect_format(source, fmt)
    if fmt_name == VAULT:
        return vault_input(obsidian.read_vault(source, max_bytes=settings.max_input_bytes), source)
    raw = data if data is not None else read_source(source, settings)
    if fmt_name == NANOPUB or (fmt_name == "trig" and nanopub.may_hold_nanopubs(raw)):
        quads = nanopub.parse_trig(raw, source)
        if fmt_name == NANOPUB or nanopub.is_nanopub_file(quads):
            read = nanopub.read_nanopubs(
                raw, source, allow_unverified=allow_unverified, quads=quads
            )
            parsed = read.json_input(source)
            return SourceInput(
                parsed.data or b"",
                NANOPUB,
                read.digest,
                problems=tuple(read.problems),
                notices=tuple(read.notices),
                parsed=parsed,
            )
    return SourceInput(raw, fmt_name, hashlib.sha256(raw).hexdigest())


def vault_input(vault: obsidian.VaultRead, source: str = "") -> SourceInput:
    """The input a vault read gives a load (its document decoded already)."""
    parsed = vault.json_input(source)
    return SourceInput(
        parsed.data or b"",
        VAULT,
        vault.digest,
        problems=tuple(vault.problems),
        notices=tuple(vault.notices),
        parsed=parsed,
    )


def detect_format(source: str, explicit: str | None) -> str:
    """The input format name: ``explicit`` if given, else from the file suffix.

    A directory is an Obsidian vault (:data:`VAULT`) when it holds the Discourse Graphs
    plugin's settings. Any other path is first checked to name a readable regular file
    (:func:`check_input_file`), so that a directory, a device or a named pipe is called what
    it is, before any suffix."""
    vault = source != "-" and explicit in (None, VAULT) and os.path.isdir(source)
    if vault and obsidian.is_vault(Path(source)):
        check_input_directory(source, what="vault")
        return VAULT
    if source != "-":
        check_input_file(
            source,
            stream_hint=LOAD_STREAM_HINT,
            directory_hint=(
                "not a Discourse Graphs vault either (no .obsidian/plugins/discourse-graphs/"
                f"data.json); load the files in it, e.g. labbrain load {source}/*.jsonld"
            ),
        )
    if explicit:
        if explicit not in FORMATS:
            raise UnsupportedFormat(
                source, f"unknown format {explicit!r}; use one of {', '.join(FORMATS)}"
            )
        return explicit
    if source == "-":
        raise UnsupportedFormat(source, "reading stdin needs --format")
    suffix = Path(source).suffix.lower()
    if suffix not in SUFFIXES:
        raise UnsupportedFormat(
            source, f"cannot tell the format from suffix {suffix!r}; pass --format"
        )
    return SUFFIXES[suffix]


def context_variant(context: dict[str, Any]) -> str:
    """Name the exporter context variant: 'v0 draft', '2025-12' or '2026-06'."""
    dg = context.get("dg")
    if isinstance(dg, str) and "/v0" in dg:
        return "v0 draft"
    if "dct" in context:
        return "2026-06"
    return "2025-12"


def prepare(
    data: bytes,
    source: str,
    fmt: str,
    settings: Settings,
    *,
    fast: bool = True,
    parsed: jsonld.JsonInput | None = None,
) -> Prepared:
    """Understand an input and say what to write. Raises InputError subclasses.

    With ``fast`` (and the native engine), a discourse-graph export's ``@graph`` is not
    decoded here: it goes to the store as text and is decoded by the analysis, in parallel.
    ``parsed``: a vault's document as the reader made it (not decoded again).
    """
    if fmt == VAULT:
        # The vault as read: an export-shaped document, loaded as an export is.
        if parsed is not None and settings.jsonld_engine == "native":
            prepared = _prepare_export(parsed, source, settings, "vault")
        else:
            prepared = prepare(data, source, "jsonld", settings, fast=fast)
        prepared.kind = VAULT_KIND
        prepared.slug_hint = slugify(Path(source).resolve().name) or "vault"
        return prepared
    stem = slugify(Path(source).stem) if source != "-" else "stdin"
    if fmt == NANOPUB:
        # Nanopublications as read: an export-shaped document, loaded as an export is.
        # ``data`` is that document (read_input made it from the TriG file).
        if parsed is not None and settings.jsonld_engine == "native":
            prepared = _prepare_export(parsed, source, settings, stem)
        else:
            prepared = prepare(data, source, "jsonld", settings, fast=fast)
        prepared.kind = NANOPUB_KIND
        prepared.slug_hint = stem
        return prepared
    rdf_format = FORMATS[fmt]
    if rdf_format is not None:
        if rdf_format.supports_datasets:
            return Prepared(
                kind=fmt,
                first=jsonld.parse_rdf(data, rdf_format, source),
                slug_hint=stem,
                notices=["named graphs of the file are merged into the dataset graph"],
            )
        return Prepared(kind=fmt, first=RdfDocument(data, rdf_format, source), slug_hint=stem)
    native = settings.jsonld_engine == "native"
    jsonld.check_object_count(data, source, settings.max_json_objects)
    parsed = jsonld.read_json(
        data,
        source,
        settings.max_json_depth,
        check_nesting=False,
        defer="@graph" if fast and native else None,
    )
    if parsed.deferred is not None and not is_export_context(parsed.value.get("@context")):
        try:
            parsed.complete()
        except jsonld.DeferredMemberNotLast:
            parsed = jsonld.read_json(data, source, settings.max_json_depth, check_nesting=False)
    if native and (parsed.deferred is not None or is_discourse_export(parsed.value)):
        # The streaming native parser is not recursive: the nesting check runs beside it, in
        # the analysis, which rejects the export (and rolls the write back) if it fails.
        return _prepare_export(parsed, source, settings, stem)
    document = parsed.value
    jsonld.check_depth(document, source, settings.max_json_depth)
    if is_discourse_export(document):
        return _prepare_export(parsed, source, settings, stem)
    if not _looks_like_jsonld(document):
        raise ExportFormatError(source, "JSON without @context or @-keywords is not JSON-LD")
    jsonld.check_contexts(document, source, settings.max_context_terms)
    jsonld.check_arrays(document, source, settings.max_json_array_items)
    return Prepared(
        kind="JSON-LD",
        first=jsonld.quads_pyld(document, source, settings.jsonld_contexts),
        slug_hint=stem,
        notices=["not a discourse-graph export: loaded as plain RDF"],
    )


def _looks_like_jsonld(document: Any) -> bool:
    if isinstance(document, list):
        return any(_looks_like_jsonld(item) for item in document[:100])
    return isinstance(document, dict) and any(key.startswith("@") for key in document)


def _prepare_export(
    parsed: jsonld.JsonInput, source: str, settings: Settings, stem: str
) -> Prepared:
    """The repaired export as the bulk part; its analysis happens in :func:`load_source`."""
    head: dict[str, Any] = parsed.value
    context = head["@context"]
    # One context, applied once: scoped or embedded contexts (never exported) could make the
    # parser apply a large context again at every node.
    jsonld.check_contexts({"@context": context}, source, settings.max_context_terms, scoped=False)
    start, end = parsed.spans["@graph"]
    if parsed.text.find('"@context"', start, end) >= 0:
        raise ExportFormatError(source, "an @context inside @graph is not the export format")
    repaired = jsonld.repair_context(context, settings.jsonld_contexts, source)
    # Only @context and @graph go to the JSON-LD engine: the export's own @id would make
    # @graph a named graph (its prov:generatedAtTime is re-attached among the derived triples).
    first: GraphPart
    if settings.jsonld_engine == "pyld":
        first = jsonld.quads_pyld(
            {"@context": repaired, "@graph": head["@graph"]}, source, settings.jsonld_contexts
        )
    else:
        text = b"".join(
            (
                b'{"@context":',
                json.dumps(repaired).encode("utf-8"),
                b',"@graph":',
                parsed.member_bytes("@graph"),
                b"}",
            )
        )
        first = RdfDocument(text, RdfFormat.JSON_LD, source)
    export_id = head.get("@id") if isinstance(head.get("@id"), str) else None
    slug = stem
    if export_id and "/app/" in export_id:
        slug = slugify(export_id.rsplit("/app/", 1)[1])
    graph = head.get("@graph")
    return Prepared(
        kind=f"discourse-graph export ({context_variant(context)} context)",
        first=first,
        slug_hint=slug,
        entries=len(graph) if isinstance(graph, list) else _estimate_entries(parsed),
        export_id=export_id,
        export=parsed,
    )


def _estimate_entries(parsed: jsonld.JsonInput) -> int:
    """Roughly how many @graph entries an undecoded export has (for progress display only)."""
    start, end = parsed.spans["@graph"]
    return parsed.text.count('"@type"', start, end)


def target_graph(graph: str | None, slug_hint: str) -> str:
    """The dataset graph IRI to load into: from ``--graph`` (slug or dataset IRI) or the hint."""
    if graph is None:
        return dataset_graph(slug_hint)
    if graph.startswith(DATASET_GRAPH_PREFIX):
        return dataset_graph(graph.removeprefix(DATASET_GRAPH_PREFIX))
    if graph.startswith(RESERVED_GRAPH_PREFIX) or ":" in graph:
        raise InputError(
            f"--graph {graph}: datasets load into {DATASET_GRAPH_PREFIX}<slug>; give a slug"
        )
    return dataset_graph(graph)


def _load_record(
    graph: str,
    source: str,
    digest: str,
    prepared: Prepared,
    quads: int,
    nodes: int,
    load_id: str,
) -> list[Quad]:
    """The system-graph description of a dataset load (with what the load left out of the
    dataset, ``prepared.warnings``: nothing in the store shows it otherwise)."""
    return _record(
        graph, source, digest, prepared.kind, prepared.warnings, prepared.export_id, quads, nodes,
        load_id,
    )  # fmt: skip


def _record(
    graph: str,
    source: str,
    digest: str,
    kind: str,
    warnings: list[str],
    export_id: str | None,
    quads: int,
    nodes: int,
    load_id: str,
) -> list[Quad]:
    system = NamedNode(SYSTEM_GRAPH)
    subject = NamedNode(graph)

    def lit(value: object, datatype: str | None = None) -> Literal:
        return (
            Literal(str(value), datatype=NamedNode(datatype)) if datatype else Literal(str(value))
        )

    facts: list[tuple[str, NamedNode | Literal]] = [
        (RDF + "type", NamedNode(LB + "Dataset")),
        (LB + "graph", subject),
        (LB + "slug", lit(graph.removeprefix(DATASET_GRAPH_PREFIX))),
        (LB + "loadId", lit(load_id)),
        (LB + "loadedAt", timestamp(datetime.now(UTC))),
        (LB + "sourceDigest", lit(digest)),
        (LB + "format", lit(kind)),
        (LB + "quadCount", lit(quads, XSD + "integer")),
        (LB + "nodeCount", lit(nodes, XSD + "integer")),
    ]
    facts += [(LB + "loadWarning", lit(warning)) for warning in warnings]
    if source != "-":
        facts.append((LB + "sourceFile", lit(str(Path(source).resolve()))))
    if export_id:
        with contextlib.suppress(ValueError):  # an @id that is not an IRI is just not recorded
            facts.append((LB + "exportId", NamedNode(export_id)))
    return [Quad(subject, NamedNode(p), o, system) for p, o in facts]


#: Writes the text-index records and links of a dataset graph for a load id; returns how many
#: records.
IndexSink = Callable[[str, str, list[IndexRecord], list[LinkRow]], int]


@dataclass
class _Analysed:
    analysis: ExportAnalysis
    #: The derived triples, for the thread that writes the graph to write after the export.
    derived: RdfDocument
    #: How many nodes the index took (None: nothing indexed here), once it is done.
    indexed: Future[int | None]
    #: Triples the bulk write took from the entries of duplicated nodes that were not kept
    #: (and that the kept entry does not give): removed before the load commits.
    superseded: list[Triple] = field(default_factory=list)


def _analyse(
    prepared: Prepared,
    source: str,
    settings: Settings,
    index: Callable[[list[IndexRecord], list[LinkRow]], int] | None,
    writing: threading.Event,
    pool: ThreadPoolExecutor,
) -> _Analysed:
    """Check and analyse an export, serialise its derived triples, and start indexing its
    nodes and links in ``pool`` (unless the analysis cannot tell the links exactly: then
    nothing is indexed here, and ``indexed`` gives None to tell the caller to index the graph
    from the store).

    Runs in a worker thread beside the bulk write of the export itself, from when
    ``writing`` is set: decoding the export holds the interpreter lock for a while, and
    would otherwise keep the bulk write from starting. It never writes to the store: the
    derived triples go back to the thread that writes the graph (one bulk load at a time,
    see :class:`~labbrain.store.base.ThreadBoundWriter`).
    """
    assert prepared.export is not None
    writing.wait()
    document = prepared.export.complete()
    jsonld.check_depth(document, source, settings.max_json_depth)
    if not is_discourse_export(document):
        raise ExportFormatError(source, "has an exporter @context but its @graph is not an export")
    analysis = analyse_export(document, source, vocabulary())
    if settings.strict_load and analysis.warnings:
        raise ExportFormatError(source, "strict load refused: " + "; ".join(analysis.warnings))
    derived = serialize(analysis.derived, format=RdfFormat.N_TRIPLES) or b""
    superseded = _superseded(analysis, document["@context"], source, settings)
    indexed: Future[int | None] = Future()
    if index is None or not analysis.links_exact:
        indexed.set_result(None)
    else:
        # Indexing (mostly inside SQLite and the search engine) releases the GIL, and so
        # do the bulk writes of the store: they overlap.
        records = [node.index_record() for node in analysis.nodes.values()]
        indexed = pool.submit(index, records, analysis.links)
    return _Analysed(
        analysis, RdfDocument(derived, RdfFormat.N_TRIPLES, source), indexed, superseded
    )


def _superseded(
    analysis: ExportAnalysis, context: Any, source: str, settings: Settings
) -> list[Triple]:
    """The triples only the left-out entries of duplicated nodes give: each entry read alone
    with the export's repaired context (by the load's JSON-LD engine), less the kept entry's
    triples and the derived ones. Empty when no node is duplicated."""
    if not analysis.duplicates:
        return []
    repaired = jsonld.repair_context(context, settings.jsonld_contexts, source)
    derived = set(analysis.derived)

    def triples(entry: jsonld.JsonObject | None) -> set[Triple]:
        if entry is None:
            return set()
        document = {"@context": repaired, "@graph": [entry]}
        if settings.jsonld_engine == "pyld":
            quads: Iterable[Quad] = jsonld.quads_pyld(document, source, settings.jsonld_contexts)
        else:
            quads = parse(json.dumps(document).encode("utf-8"), RdfFormat.JSON_LD)
        return {Triple(q.subject, q.predicate, q.object) for q in quads}

    superseded: set[Triple] = set()
    for duplicate in analysis.duplicates:
        kept = triples(duplicate.entry)
        for entry in duplicate.dropped:
            superseded |= triples(entry) - kept
    return sorted(superseded - derived, key=str)


def load_source(
    store: QuadStore,
    source: str,
    settings: Settings,
    *,
    graph: str | None = None,
    fmt: str | None = None,
    progress: Progress | None = None,
    read: SourceInput | None = None,
    index_sink: IndexSink | None = None,
    load_id: str | None = None,
    previous: Callable[[str], DatasetState] | None = None,
    allow_unverified: bool = False,
) -> LoadReport:
    """Load ``source`` into its dataset graph, replacing what the graph held before.

    ``read`` is the input as :func:`read_input` gave it (it then stands for ``fmt`` and
    ``allow_unverified``); otherwise the input is read here, from ``source``.

    All or nothing: on any error (also one raised by ``progress``) the store is unchanged.
    ``load_id`` names the load in its record (default: a fresh one), so that a caller that
    retries can tell whether an earlier attempt was committed. For a discourse-graph export the
    analysis (checks, counts, derived triples) and ``index_sink`` run in a worker thread while
    the bulk of the export is written; an error found there still rolls the write back, and
    index entries written by then are stale (the caller re-syncs the index). ``indexed`` in
    the report is None when nothing was indexed during the load. ``previous`` gives what a
    dataset graph held before (from the index): with it, a discourse graph's load records
    what it changed (:mod:`labbrain.ingest.changes`) in the same commit.
    """
    started = time.perf_counter()
    entries = 0

    def step(name: str) -> None:
        if progress is not None:
            progress(LoadProgress(name, entries))

    with collection_paused():
        step("read")
        if read is None:
            read = read_input(source, settings, fmt, allow_unverified=allow_unverified)
        if settings.strict_load and read.problems:
            raise ExportFormatError(source, "strict load refused: " + "; ".join(read.problems))
        step("repair_context")
        prepared = prepare(read.data, source, read.fmt, settings, parsed=read.parsed)
        prepared.warnings = list(read.problems)
        entries = prepared.entries
        load_id = load_id or uuid.uuid4().hex
        write = functools.partial(
            _load_prepared,
            store,
            source,
            settings,
            read.digest,
            graph=graph,
            step=step,
            index_sink=index_sink,
            load_id=load_id,
            previous=previous,
        )
        try:
            report = write(prepared)
        except jsonld.DeferredMemberNotLast:
            # Rolled back already; an unusual member order: read the file the thorough way.
            thorough = prepare(read.data, source, read.fmt, settings, fast=False)
            thorough.warnings = list(read.problems)
            report = write(thorough)
    report.warnings = [*read.problems, *report.warnings]
    report.notices = [*report.notices, *read.notices]
    report.seconds = time.perf_counter() - started
    return report


def _state(analysis: ExportAnalysis, before: DatasetState) -> DatasetState:
    """What a discourse graph's load writes, as a change compares it. When the analysis
    cannot tell the links exactly, the relations are taken as unchanged."""
    nodes = {
        node.iri: NodeState(node.title, node.type_label, node.creator, content_digest(node.content))
        for node in analysis.nodes.values()
    }
    if not analysis.links_exact:
        return DatasetState(nodes, set(before.relations))
    relations = {(s, label, d) for s, d, kind, label in analysis.links if kind == TYPED and label}
    return DatasetState(nodes, relations)


_PAUSE_LOCK = threading.Lock()
_pauses = 0
_collecting_before = True


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then back as it was.

    A load makes millions of containers (the decoded export, the analysis, the index rows)
    that live until it ends and form no cycles: the collector would only scan them again
    and again (a fifth of the analysis' time at 100,000 nodes). Reference counting still
    frees memory. Blocks may nest or run in several threads at once: the collector stays off
    until the last one ends, and is switched back on only if it was on before the first.
    """
    global _pauses, _collecting_before
    with _PAUSE_LOCK:
        if _pauses == 0:
            _collecting_before = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _pauses -= 1
            if _pauses == 0 and _collecting_before:
                gc.enable()


def _load_prepared(
    store: QuadStore,
    source: str,
    settings: Settings,
    digest: str,
    prepared: Prepared,
    *,
    graph: str | None,
    step: Callable[[str], None],
    index_sink: IndexSink | None,
    load_id: str,
    previous: Callable[[str], DatasetState] | None = None,
) -> LoadReport:
    """Write a prepared input into its dataset graph (see load_source)."""
    step("parse")
    target = target_graph(graph, prepared.slug_hint)
    replaced = store.has_graph(target)
    before = previous(target) if previous is not None and prepared.export is not None else None
    outcome: list[_Analysed] = []
    written = [0]
    # The analysis, and the index it starts, run beside the bulk write of the export; the
    # index may still be at work when the store's writes are done, and is waited for (after
    # counting the graph) before the load is made final.
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="labbrain-analyse")

    def fill(writer: GraphWriter) -> None:
        step("write")
        if prepared.export is None:
            writer.write(prepared.first)
            step("derive")  # plain RDF has nothing to derive
            return
        sink = None
        if index_sink is not None:
            sink = functools.partial(index_sink, target, load_id)
        writing = threading.Event()
        future = pool.submit(_analyse, prepared, source, settings, sink, writing, pool)
        # Both bulk writes run here, one after the other: the export, while the analysis
        # runs beside it, then the derived triples the analysis hands back. Always wait for
        # the analysis (its error, if it has one, is the one reported); when a write failed,
        # also for the index it started, which writes on the same device as the store's
        # rollback.
        try:
            writing.set()
            writer.write(prepared.first)
            step("derive")
            analysed = future.result()
            writer.write(analysed.derived)
        except BaseException:
            wait([future.result().indexed])
            raise
        outcome.append(analysed)

    def record(committing: QuadStore) -> None:
        step("index")
        try:
            written[0] = committing.count(target)
        finally:
            if outcome:  # the index is done before anything is committed or rolled back
                wait([outcome[0].indexed])
        nodes = len(outcome[0].analysis.nodes) if outcome else 0
        if outcome:
            outcome[0].indexed.result()
        if outcome and outcome[0].superseded:  # duplicated nodes: one entry each
            graph_term = NamedNode(target)
            committing.remove_quads(
                [Quad(t.subject, t.predicate, t.object, graph_term) for t in outcome[0].superseded]
            )
            written[0] = committing.count(target)
        subject = NamedNode(target)
        committing.remove_quads(list(committing.quads(SYSTEM_GRAPH, subject)))
        committing.add_quads(
            _load_record(target, source, digest, prepared, written[0], nodes, load_id)
        )
        if before is not None and outcome:
            after = _state(outcome[0].analysis, before)
            committing.add_quads(
                change_quads(target, load_id, source, datetime.now(UTC), before, after)
            )

    try:
        store.replace_graph(target, fill, on_commit=record)
    finally:
        pool.shutdown(wait=True)  # the index too is done, whatever happened

    report = LoadReport(
        source=source,
        graph=target,
        slug=target.removeprefix(DATASET_GRAPH_PREFIX),
        kind=prepared.kind,
        load_id=load_id,
        quads=written[0],
        replaced=replaced,
        notices=list(prepared.notices),
    )
    if outcome:
        analysis = outcome[0].analysis
        report.nodes_by_type = analysis.nodes_by_type
        report.relations = analysis.relations
        report.creators = analysis.creators
        report.warnings = list(analysis.warnings)
        report.duplicates = [duplicate.as_dict() for duplicate in analysis.duplicates]
        report.indexed = outcome[0].indexed.result()
    return report


# ---------------------------------------------------------------------------- changes by part
def check_loaded_as(store: QuadStore, graph: str, expected_load: str) -> list[Quad]:
    """The load record of ``graph``, when load ``expected_load`` wrote it; StaleDataset
    (naming the load that did, if any) otherwise."""
    record = list(store.quads(SYSTEM_GRAPH, NamedNode(graph)))
    found = next(
        (getattr(q.object, "value", None) for q in record if q.predicate.value == LB + "loadId"),
        None,
    )
    if found != expected_load:
        raise StaleDataset(graph, expected_load, found)
    return record


def write_change(
    store: QuadStore,
    source: str,
    vault: obsidian.VaultRead,
    change: GraphChange,
    *,
    load_id: str,
    expected_load: str,
) -> LoadReport:
    """Write ``change`` (planned by a :class:`~labbrain.ingest.delta.DocumentModel` from the
    dataset as load ``expected_load`` left it) to its dataset graph, with the new load record
    (``load_id``, the vault's digest and problems) and the change record: one transaction,
    so readers see the dataset before or after it. Raises StaleDataset, changing nothing,
    when the graph is no longer as ``expected_load`` left it."""
    graph = change.graph
    record = check_loaded_as(store, graph, expected_load)
    facts = {q.predicate.value: getattr(q.object, "value", "") for q in record}
    quads = int(facts.get(LB + "quadCount", "0")) - len(change.remove) + len(change.add)
    export_id = vault.document.get("@id")
    new_record = _record(
        graph, source, vault.digest, VAULT_KIND, list(vault.problems),
        export_id if isinstance(export_id, str) else None, quads, change.nodes, load_id,
    )  # fmt: skip
    changes = (
        []
        if change.empty
        else change_quads(graph, load_id, source, datetime.now(UTC), change.before, change.after)
    )
    store.apply([*change.remove, *record], [*change.add, *new_record, *changes])
    return LoadReport(
        source=source,
        graph=graph,
        slug=graph.removeprefix(DATASET_GRAPH_PREFIX),
        kind=VAULT_KIND,
        load_id=load_id,
        quads=quads,
        replaced=True,
        nodes_by_type=change.nodes_by_type,
        warnings=list(vault.problems),
        notices=list(vault.notices),
        indexed=change.nodes,
        changed=change.counts,
    )
