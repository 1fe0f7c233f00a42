"""Export of store graphs: Turtle / TriG / N-Triples / N-Quads straight from pyoxigraph, and
JSON-LD compacted with pyld against a clean context so it reads like an export.

Without a list of graphs, an export holds the lab's data and the assistant's memory (see
:func:`default_graphs`); labbrain's own bookkeeping graphs are exported only when named.
"""

from __future__ import annotations

import io
import json
import re
from typing import IO

from pyoxigraph import RdfFormat

from labbrain.errors import FormatHoldsOneGraph, InputError
from labbrain.rdf.namespaces import (
    CLAIMS_GRAPH_PREFIX,
    DATASET_GRAPH_PREFIX,
    DOMAIN_PREFIX,
    PREFIXES,
    PROJECT_PREFIX,
    RESERVED_GRAPH_PREFIX,
)
from labbrain.store import templates
from labbrain.store.base import QuadStore

EXPORT_FORMATS: dict[str, RdfFormat] = {
    "turtle": RdfFormat.TURTLE,
    "trig": RdfFormat.TRIG,
    "ntriples": RdfFormat.N_TRIPLES,
    "nquads": RdfFormat.N_QUADS,
    "jsonld": RdfFormat.N_QUADS,  # produced as N-Quads, then framed by pyld
}

#: The context of JSON-LD exports: the prefixes plus readable terms for the common properties.
EXPORT_CONTEXT: dict[str, object] = {
    **PREFIXES,
    "title": "dct:title",
    "content": "sioc:content",
    "creator": "dct:creator",
    "created": {"@id": "dct:created", "@type": "xsd:dateTime"},
    "modified": {"@id": "dct:modified", "@type": "xsd:dateTime"},
    "label": "rdfs:label",
    "linksTo": {"@id": "lb:linksTo", "@type": "@id"},
    "image": {"@id": "lb:image", "@type": "@id"},
    "source": {"@id": "dgb:source", "@type": "@id"},
    "destination": {"@id": "dgb:destination", "@type": "@id"},
    "predicate": {"@id": "rdf:predicate", "@type": "@id"},
}


_PREFIX_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

#: The labbrain graphs an export holds by default: the loaded datasets, and the assistant's
#: memory (projects, memory domains, propositions). The ontology, the system records, the
#: task ledger and staging graphs (every other ``urn:labbrain:`` graph) are left out.
DEFAULT_GRAPH_PREFIXES: tuple[str, ...] = (
    DATASET_GRAPH_PREFIX,
    PROJECT_PREFIX,
    DOMAIN_PREFIX,
    CLAIMS_GRAPH_PREFIX,
)


def default_graphs(store: QuadStore) -> list[str]:
    """The graphs an export holds when none is named, sorted: every dataset, project, memory
    domain and propositions graph, and every graph outside ``urn:labbrain:`` (a user's own,
    e.g. written by a SPARQL update). Never labbrain's ontology, system, tasks or staging
    graphs, which an export holds only when they are named."""
    return [
        graph
        for graph in store.graphs()
        if graph.startswith(DEFAULT_GRAPH_PREFIXES) or not graph.startswith(RESERVED_GRAPH_PREFIX)
    ]


def page_prefixes(store: QuadStore) -> dict[str, str]:
    """A prefix per loaded export for its Roam page URLs, named after the dataset slug
    (``akamatsulab-sample:`` -> ``https://roamresearch.com/#/app/akamatsulab-sample/page/``)."""
    prefixes = {}
    for dataset in templates.run(store, "datasets"):
        export_id, slug = dataset.get("exportId"), dataset["slug"]
        if export_id and _PREFIX_NAME.match(slug) and slug not in EXPORT_CONTEXT:
            prefixes[slug] = f"{export_id.rstrip('/')}/page/"
    return prefixes


def export(
    store: QuadStore,
    output: IO[bytes],
    fmt: str,
    graphs: list[str] | None,
    *,
    merge: bool = False,
) -> None:
    """Write ``graphs`` (when None: :func:`default_graphs`) to ``output`` in ``fmt``.

    TriG, N-Quads and JSON-LD keep the graph names. Turtle and N-Triples hold one graph:
    several graphs are refused (FormatHoldsOneGraph, nothing written) unless ``merge`` asks
    for their triples in one graph. Raises GraphNotFound for a graph the store lacks.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    if graphs is None:
        graphs = default_graphs(store)
    if len(graphs) > 1 and not EXPORT_FORMATS[fmt].supports_datasets and not merge:
        raise FormatHoldsOneGraph(fmt, graphs)
    prefixes = page_prefixes(store)
    if fmt != "jsonld":
        store.dump(output, EXPORT_FORMATS[fmt], graphs, prefixes)
        return
    from pyld import jsonld  # only for JSON-LD output (20 ms of start-up otherwise)

    buffer = io.BytesIO()
    store.dump(buffer, RdfFormat.N_QUADS, graphs)
    expanded = jsonld.from_rdf(buffer.getvalue().decode("utf-8"), {"format": "application/n-quads"})
    compacted = jsonld.compact(expanded, {"@context": {**EXPORT_CONTEXT, **prefixes}})
    output.write(
        json.dumps(compacted, indent=2, ensure_ascii=False, sort_keys=True).encode("utf-8")
    )
    output.write(b"\n")
