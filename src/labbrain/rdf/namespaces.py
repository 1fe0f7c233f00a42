"""IRIs labbrain reads and writes: vocabularies, named graphs and prefixes.

One place for every namespace, named graph and ``urn:labbrain:`` prefix the code uses, so the
ontology test can check that each term the code uses is declared in ``ontology/``. Modules
build terms from these (``LB + "Project"``, ``PROJECT_PREFIX + slug``); the only other IRIs
in the code are URLs of the outside world (DOI resolver, Roam pages) and examples in help
texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
#: SPARQL 1.1 Service Description and the W3C formats namespace (the endpoint's description).
SD: Final = "http://www.w3.org/ns/sparql-service-description#"
W3C_FORMATS: Final = "http://www.w3.org/ns/formats/"
#: Nanopublications: the schema, its extension terms, and the temporary namespace of an
#: unsigned nanopublication (signing replaces it with a trusty URI).
NP: Final = "http://www.nanopub.org/nschema#"
NPX: Final = "http://purl.org/nanopub/x/"
NP_TEMP: Final = "http://purl.org/nanopub/temp/"
#: The Citation Typing Ontology (stances: supports, disputes, ...).
CITO: Final = "http://purl.org/spar/cito/"
#: Knowledge Pixels' general terms, the classes the Discourse Graphs nanopub port types nodes with.
KPXL: Final = "https://w3id.org/kpxl/gen/terms/"
FOAF: Final = "http://xmlns.com/foaf/0.1/"
SCHEMA: Final = "http://schema.org/"
#: Where an ORCID iD resolves: a person's ORCID is recorded as this IRI + the iD.
ORCID_RESOLVER: Final = "https://orcid.org/"
#: Where a DOI resolves: a DOI source is recorded as this IRI.
DOI_RESOLVER: Final = "https://doi.org/"

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

#: Every IRI labbrain mints starts with this; user graphs may not.
RESERVED_GRAPH_PREFIX: Final = "urn:labbrain:"

# Named graphs.
ONTOLOGY_GRAPH: Final = "urn:labbrain:ontology"
SYSTEM_GRAPH: Final = "urn:labbrain:system"
TASKS_GRAPH: Final = "urn:labbrain:tasks"
#: What each load changed in its dataset (labbrain.ingest.changes).
CHANGES_GRAPH: Final = "urn:labbrain:changes"
#: The people map: display names (as exports carry them) to ORCID iDs.
PEOPLE_GRAPH: Final = "urn:labbrain:people"
#: What labbrain published: one record per nanopublication it signed.
PUBLISHED_GRAPH: Final = "urn:labbrain:published"
DATASET_GRAPH_PREFIX: Final = "urn:labbrain:dataset:"
#: A project's graph is ``PROJECT_PREFIX + slug``.
PROJECT_PREFIX: Final = "urn:labbrain:project:"
#: A memory domain's graph is ``DOMAIN_PREFIX + id``.
DOMAIN_PREFIX: Final = "urn:labbrain:domain:"
CLAIMS_GRAPH_PREFIX: Final = "urn:labbrain:claims:"
CLAIMS_GRAPH: Final = CLAIMS_GRAPH_PREFIX + "main"
#: Where a remote load stages its data before moving it into place.
STAGING_PREFIX: Final = "urn:labbrain:staging:"
#: Graphs a Virtuoso server holds for itself (its RDF views, the LDP vocabulary, its own
#: endpoint's description): never listed as the store's graphs.
SERVER_GRAPHS: Final = frozenset(
    {
        "http://www.openlinksw.com/schemas/virtrdf#",
        "http://www.w3.org/ns/ldp#",
        "http://localuriqaserver/sparql",
    }
)


def is_listed_graph(graph: str) -> bool:
    """True for a graph labbrain lists as the store's: not a staging graph of a remote
    write, not a graph the server keeps for itself (:data:`SERVER_GRAPHS`)."""
    return not graph.startswith(STAGING_PREFIX) and graph not in SERVER_GRAPHS


#: Base IRI of the shipped ontology file ``<name>`` while it is parsed.
ONTOLOGY_FILE_PREFIX: Final = ONTOLOGY_GRAPH + ":"

# Resources labbrain writes: prefix + a slug, an id or a fresh hex id (rdf.terms.new_iri).
AGENT_PREFIX: Final = "urn:labbrain:agent:"
SESSION_PREFIX: Final = "urn:labbrain:session:"
IDEMPOTENCY_PREFIX: Final = "urn:labbrain:idempotency:"
#: The subject of the store's agent write stamp (in the system graph).
WRITE_STAMP_SUBJECT_IRI: Final = "urn:labbrain:agent-writes"
TASK_PREFIX: Final = "urn:labbrain:task:"
FINDING_PREFIX: Final = "urn:labbrain:finding:"
VISIT_PREFIX: Final = "urn:labbrain:visit:"
MEMORY_PREFIX: Final = "urn:labbrain:memory:"
LINK_PREFIX: Final = "urn:labbrain:link:"
PROPOSITION_PREFIX: Final = "urn:labbrain:proposition:"
PROPOSITION_RELATION_PREFIX: Final = "urn:labbrain:proposition-relation:"
PERSON_PREFIX: Final = "urn:labbrain:person:"
PUBLICATION_PREFIX: Final = "urn:labbrain:publication:"

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


def compact_iri(iri: str, prefixes: Mapping[str, str]) -> str:
    """``iri`` as ``prefix:local`` by the first of ``prefixes`` (prefix to namespace, in the
    mapping's order) whose namespace ``iri`` starts with, else ``iri`` unchanged. The local
    part is whatever follows the namespace, unchecked (empty for the namespace itself)."""
    for prefix, namespace in prefixes.items():
        if iri.startswith(namespace):
            return f"{prefix}:{iri.removeprefix(namespace)}"
    return iri


def term(namespace: str, local: str) -> NamedNode:
    """A NamedNode for ``namespace + local``."""
    return NamedNode(namespace + local)
