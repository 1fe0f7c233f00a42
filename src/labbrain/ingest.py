"""Loading files into the store: one named graph per source, replaced atomically.

:func:`load_source` reads a file (or stdin), works out what it is, turns it into quads and
hands them to :meth:`QuadStore.replace_graph` together with the load record, so that a load
either fully succeeds or leaves the store exactly as it was. Discourse-graph exports get their
context repaired and their derived triples added (see :mod:`labbrain.discourse`); other
JSON-LD and Turtle / TriG / N-Triples / N-Quads load as plain RDF.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, Triple

from labbrain import jsonld
from labbrain.discourse import ExportAnalysis, analyse_export, is_discourse_export
from labbrain.errors import (
    ExportFormatError,
    InputError,
    InputTooLarge,
    UnsupportedFormat,
)
from labbrain.namespaces import (
    DATASET_GRAPH_PREFIX,
    DCT,
    LB,
    RDF,
    RESERVED_GRAPH_PREFIX,
    SYSTEM_GRAPH,
    XSD,
    dataset_graph,
    slugify,
)
from labbrain.ontology import vocabulary
from labbrain.settings import Settings
from labbrain.store import QuadStore

#: progress(stage, done, total): "parse" reports the number of page nodes once parsed, "write"
#: the quads written so far against an estimate, "index" the start of indexing.
Progress = Callable[[str, int, int | None], None]

FORMATS: dict[str, RdfFormat | None] = {
    "jsonld": None,
    "turtle": RdfFormat.TURTLE,
    "trig": RdfFormat.TRIG,
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
_PROGRESS_EVERY = 20_000


@dataclass
class LoadReport:
    """What one load did: where the data went, what it held, and what looked wrong."""

    source: str
    graph: str
    slug: str
    kind: str
    quads: int = 0
    replaced: bool = False
    nodes_by_type: Counter[str] = field(default_factory=Counter)
    relations: Counter[str] = field(default_factory=Counter)
    creators: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    indexed: int = 0
    seconds: float = 0.0

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
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Prepared:
    """An input understood and ready to write."""

    kind: str
    quads: Iterable[Triple | Quad]
    slug_hint: str
    export_id: str | None = None
    analysis: ExportAnalysis | None = None
    notices: list[str] = field(default_factory=list)
    estimated_quads: int | None = None


def read_source(source: str, settings: Settings) -> bytes:
    """The bytes of ``source`` (a path, or ``-`` for stdin), refusing inputs over the limit."""
    limit = settings.max_input_bytes
    if source == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        path = Path(source)
        if not path.is_file():
            raise InputError(f"{source}: no such file")
        if path.stat().st_size > limit:
            raise InputTooLarge(source, f"file is larger than the {limit}-byte input limit")
        data = path.read_bytes()
    if len(data) > limit:
        raise InputTooLarge(source, f"input is larger than the {limit}-byte input limit")
    return data


def detect_format(source: str, explicit: str | None) -> str:
    """The input format name: ``explicit`` if given, else from the file suffix."""
    if explicit:
        if explicit not in FORMATS:
            raise UnsupportedFormat(source, f"unknown format {explicit!r}; use one of {', '.join(FORMATS)}")
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


def prepare(data: bytes, source: str, fmt: str, settings: Settings) -> Prepared:
    """Understand an input and give the quads to write. Raises InputError subclasses."""
    stem = slugify(Path(source).stem) if source != "-" else "stdin"
    rdf_format = FORMATS[fmt]
    if rdf_format is not None:
        notices = []
        if rdf_format.supports_datasets:
            notices.append("named graphs of the file are merged into the dataset graph")
        return Prepared(
            kind=fmt, quads=jsonld.parse_rdf(data, rdf_format, source), slug_hint=stem, notices=notices
        )
    document = jsonld.read_json(data, source, settings.max_json_depth)
    if isinstance(document, dict) and isinstance(document.get("@context"), dict) and is_discourse_export(document):
        return _prepare_export(document, source, settings, stem)
    if not _looks_like_jsonld(document):
        raise ExportFormatError(source, "JSON without @context or @-keywords is not JSON-LD")
    quads = jsonld.quads_pyld(document, source, settings.jsonld_contexts)
    return Prepared(
        kind="JSON-LD",
        quads=quads,
        slug_hint=stem,
        notices=["not a discourse-graph export: loaded as plain RDF"],
    )


def _looks_like_jsonld(document: Any) -> bool:
    if isinstance(document, list):
        return any(_looks_like_jsonld(item) for item in document[:100])
    return isinstance(document, dict) and any(key.startswith("@") for key in document)


def _prepare_export(
    document: dict[str, Any], source: str, settings: Settings, stem: str
) -> Prepared:
    analysis = analyse_export(document, source, vocabulary())
    if settings.strict_load and analysis.warnings:
        raise ExportFormatError(
            source, "strict load refused: " + "; ".join(analysis.warnings)
        )
    repaired = dict(document)
    repaired["@context"] = jsonld.repair_context(document["@context"])
    if settings.jsonld_engine == "pyld":
        raw = jsonld.quads_pyld(repaired, source, settings.jsonld_contexts)
    else:
        raw = jsonld.quads_native(repaired, source)
    slug = stem
    if analysis.export_id and "/app/" in analysis.export_id:
        slug = slugify(analysis.export_id.rsplit("/app/", 1)[1])
    variant = context_variant(document["@context"])
    estimate = sum(len(e) for e in document["@graph"] if isinstance(e, dict)) + len(analysis.derived)
    return Prepared(
        kind=f"discourse-graph export ({variant} context)",
        quads=itertools.chain(raw, analysis.derived),
        slug_hint=slug,
        export_id=analysis.export_id,
        analysis=analysis,
        estimated_quads=estimate,
    )


def target_graph(graph: str | None, slug_hint: str) -> str:
    """The dataset graph IRI to load into: from ``--graph`` (slug or dataset IRI) or the hint."""
    if graph is None:
        return dataset_graph(slug_hint)
    if graph.startswith(DATASET_GRAPH_PREFIX):
        return dataset_graph(graph.removeprefix(DATASET_GRAPH_PREFIX))
    if graph.startswith(RESERVED_GRAPH_PREFIX) or ":" in graph:
        raise InputError(
            f"--graph {graph}: datasets load into urn:labbrain:dataset:<slug>; give a slug"
        )
    return dataset_graph(graph)


def _load_record(
    graph: str, source: str, digest: str, prepared: Prepared, quads: int, load_id: str
) -> list[Quad]:
    system = NamedNode(SYSTEM_GRAPH)
    subject = NamedNode(graph)

    def lit(value: object, datatype: str | None = None) -> Literal:
        return Literal(str(value), datatype=NamedNode(datatype)) if datatype else Literal(str(value))

    nodes = prepared.analysis.nodes if prepared.analysis else {}
    facts: list[tuple[str, NamedNode | Literal]] = [
        (RDF + "type", NamedNode(LB + "Dataset")),
        (LB + "graph", subject),
        (LB + "slug", lit(graph.removeprefix(DATASET_GRAPH_PREFIX))),
        (LB + "loadId", lit(load_id)),
        (LB + "loadedAt", lit(datetime.now(UTC).isoformat(), XSD + "dateTime")),
        (LB + "sourceDigest", lit(digest)),
        (LB + "format", lit(prepared.kind)),
        (LB + "quadCount", lit(quads, XSD + "integer")),
        (LB + "nodeCount", lit(len(nodes), XSD + "integer")),
    ]
    if source != "-":
        facts.append((LB + "sourceFile", lit(str(Path(source).resolve()))))
    if prepared.export_id:
        try:
            facts.append((LB + "exportId", NamedNode(prepared.export_id)))
        except ValueError:
            pass
    if prepared.analysis and prepared.analysis.export_id:
        facts.append((DCT + "source", lit(prepared.analysis.export_id)))
    return [Quad(subject, NamedNode(p), o, system) for p, o in facts]


def _counted(
    quads: Iterable[Triple | Quad], counter: list[int], progress: Progress | None, total: int | None
) -> Iterator[Triple | Quad]:
    for item in quads:
        counter[0] += 1
        if progress is not None and counter[0] % _PROGRESS_EVERY == 0:
            progress("write", counter[0], total)
        yield item


def load_source(
    store: QuadStore,
    source: str,
    settings: Settings,
    *,
    graph: str | None = None,
    fmt: str | None = None,
    progress: Progress | None = None,
    data: bytes | None = None,
) -> LoadReport:
    """Load ``source`` into its dataset graph, replacing what the graph held before.

    All or nothing: on any error the store is unchanged. The returned report carries the
    counts for the summary; the caller re-indexes the graph (see LabBrain.load).
    """
    started = time.perf_counter()
    fmt_name = detect_format(source, fmt)
    raw = data if data is not None else read_source(source, settings)
    if progress is not None:
        progress("parse", 0, None)
    prepared = prepare(raw, source, fmt_name, settings)
    if progress is not None:
        nodes = len(prepared.analysis.nodes) if prepared.analysis else 0
        progress("parse", nodes, nodes)
    target = target_graph(graph, prepared.slug_hint)
    replaced = store.has_graph(target)
    load_id = uuid.uuid4().hex
    digest = hashlib.sha256(raw).hexdigest()
    counter = [0]

    def record(committing: QuadStore) -> None:
        subject = NamedNode(target)
        committing.remove_quads(list(committing.quads(SYSTEM_GRAPH, subject)))
        committing.add_quads(_load_record(target, source, digest, prepared, counter[0], load_id))

    written = store.replace_graph(
        target,
        _counted(prepared.quads, counter, progress, prepared.estimated_quads),
        on_commit=record,
    )
    if progress is not None:
        progress("write", written, written)
    report = LoadReport(
        source=source,
        graph=target,
        slug=target.removeprefix(DATASET_GRAPH_PREFIX),
        kind=prepared.kind,
        quads=written,
        replaced=replaced,
        notices=list(prepared.notices),
    )
    if prepared.analysis is not None:
        report.nodes_by_type = prepared.analysis.nodes_by_type
        report.relations = prepared.analysis.relations
        report.creators = prepared.analysis.creators
        report.warnings = list(prepared.analysis.warnings)
    report.seconds = time.perf_counter() - started
    return report
