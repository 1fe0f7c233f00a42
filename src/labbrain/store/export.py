"""Export of store graphs: Turtle / TriG / N-Triples / N-Quads straight from pyoxigraph, and
JSON-LD compacted with pyld against a clean context so it reads like an export."""

from __future__ import annotations

import io
import json
import re
from typing import IO

from pyld import jsonld
from pyoxigraph import RdfFormat

from labbrain.errors import InputError
from labbrain.rdf.namespaces import PREFIXES
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


def page_prefixes(store: QuadStore) -> dict[str, str]:
    """A prefix per loaded export for its Roam page URLs, named after the dataset slug
    (``akamatsulab-sample:`` -> ``https://roamresearch.com/#/app/akamatsulab-sample/page/``)."""
    prefixes = {}
    for dataset in templates.run(store, "datasets"):
        export_id, slug = dataset.get("exportId"), dataset["slug"]
        if export_id and _PREFIX_NAME.match(slug) and slug not in EXPORT_CONTEXT:
            prefixes[slug] = f"{export_id.rstrip('/')}/page/"
    return prefixes


def export(store: QuadStore, output: IO[bytes], fmt: str, graphs: list[str] | None) -> None:
    """Write ``graphs`` (all named graphs when None) to ``output`` in ``fmt``.

    Turtle and N-Triples hold one graph: with several graphs their triples are merged.
    TriG, N-Quads and JSON-LD keep the graph names.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
    prefixes = page_prefixes(store)
    if fmt != "jsonld":
        store.dump(output, EXPORT_FORMATS[fmt], graphs, prefixes)
        return
    buffer = io.BytesIO()
    store.dump(buffer, RdfFormat.N_QUADS, graphs)
    expanded = jsonld.from_rdf(buffer.getvalue().decode("utf-8"), {"format": "application/n-quads"})
    compacted = jsonld.compact(expanded, {"@context": {**EXPORT_CONTEXT, **prefixes}})
    output.write(
        json.dumps(compacted, indent=2, ensure_ascii=False, sort_keys=True).encode("utf-8")
    )
    output.write(b"\n")
