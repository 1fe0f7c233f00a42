"""IRIs labbrain reads and writes: vocabularies, named graphs and prefixes.

One place for every IRI, so the ontology test can check that each term the code uses is
declared in ``ontology/``.
"""

from __future__ import annotations

import re
from typing import Final

from pyoxigraph import NamedNode

RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
OWL: Final = "http://www.w3.org/2002/07/owl#"
XSD: Final = "http://www.w3.org/2001/XMLSchema#"
DCT: Final = "http://purl.org/dc/terms/"
DCE: Final = "http://purl.org/dc/elements/1.1/"
PROV: Final = "http://www.w3.org/ns/prov#"
SIOC: Final = "http://rdfs.org/sioc/ns#"
DGB: Final = "https://discoursegraphs.com/schema/dg_base#"
DG: Final = "https://discoursegraphs.com/schema/dg_core#"
LB: Final = "https://w3id.org/labbrain/ns#"

PREFIXES: Final[dict[str, str]] = {
    "rdf": RDF,
    "rdfs": RDFS,
    "owl": OWL,
    "xsd": XSD,
    "dct": DCT,
    "prov": PROV,
    "sioc": SIOC,
    "dgb": DGB,
    "dg": DG,
    "lb": LB,
}

ONTOLOGY_GRAPH: Final = "urn:labbrain:ontology"
SYSTEM_GRAPH: Final = "urn:labbrain:system"
TASKS_GRAPH: Final = "urn:labbrain:tasks"
DATASET_GRAPH_PREFIX: Final = "urn:labbrain:dataset:"
RESERVED_GRAPH_PREFIX: Final = "urn:labbrain:"

_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """Return a non-empty slug of lowercase ASCII letters, digits and single dashes."""
    slug = _SLUG_RE.sub("-", text.lower()).strip("-")
    return slug or "dataset"


def dataset_graph(slug: str) -> str:
    """The named-graph IRI of the dataset with this slug."""
    return DATASET_GRAPH_PREFIX + slugify(slug)


def graph_iri(name: str) -> str:
    """Expand a user-given graph name: a bare slug means a dataset graph, an IRI stays as is."""
    if ":" in name:
        return name
    return dataset_graph(name)


def term(namespace: str, local: str) -> NamedNode:
    """A NamedNode for ``namespace + local``."""
    return NamedNode(namespace + local)
