"""What the loaded graphs contain: node types, relation types and datasets (``get_schema``,
``get_relation_types``), the schema cached until a load.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from labbrain.discourse.models import (
    DatasetInfo,
    NodeTypeInfo,
    RelationTypeInfo,
    RelationTypesResult,
    SchemaResult,
)
from labbrain.discourse.refs import slug
from labbrain.discourse.scope import ReadScope
from labbrain.rdf.namespaces import PREFIXES
from labbrain.store import templates
from labbrain.store.ontology import vocabulary


def relation_types(scope: ReadScope) -> list[RelationTypeInfo]:
    """Every forward relation type of every dataset, most used first."""
    return [
        RelationTypeInfo(
            relation=row["relation"],
            label=row["label"],
            sourceType=row["sourceType"],
            destinationType=row["destinationType"],
            inverseLabel=row["inverseLabel"],
            coreRelation=_prefixed(row["core"]),
            count=row["count"],
            dataset=slug(row["graph"]),
        )
        for row in templates.run(scope.brain.store, "relation_types")
    ]


def get_schema(scope: ReadScope) -> SchemaResult:
    """Node types (with descriptions from the ontology and counts), relation types, datasets.

    Cached until a dataset is loaded, replaced or dropped."""
    return scope.per_version("schema", lambda: _schema(scope))


def _schema(scope: ReadScope) -> SchemaResult:
    """The schema answer, computed (see :func:`get_schema`)."""
    counts: Counter[str] = Counter()
    datasets_of: dict[str, set[str]] = defaultdict(set)
    for graph, node_type, count in scope.brain.index.type_counts():
        counts[node_type] += count
        datasets_of[node_type].add(slug(graph))
    described: dict[str, tuple[str | None, str]] = {}
    for row in templates.run(scope.brain.store, "node_type_codes"):
        described.setdefault(row["label"], (row["code"], row["description"] or ""))
    vocab = vocabulary()
    types = []
    for label in sorted(counts, key=lambda t: (-counts[t], t)):
        code, description = described.get(label, (None, ""))
        kind = vocab.node_kind_by_label(label)
        if kind is not None:
            code = code or kind.abbreviation
            description = description or kind.description
        types.append(
            NodeTypeInfo(
                label=label,
                code=code,
                description=description or "a node type defined by this graph",
                count=counts[label],
                datasets=sorted(datasets_of[label]),
            )
        )
    datasets = [
        DatasetInfo(
            dataset=row["slug"],
            graph=row["graph"],
            domain=row["exportId"],
            nodes=row["nodes"],
            loadedAt=row["loadedAt"],
        )
        for row in scope.brain.datasets()
    ]
    return SchemaResult(nodeTypes=types, relationTypes=relation_types(scope), datasets=datasets)


def get_relation_types(scope: ReadScope) -> RelationTypesResult:
    """Every relation type with its instance count."""
    return RelationTypesResult(relationTypes=relation_types(scope))


def _prefixed(iri: str | None) -> str | None:
    """``iri`` as a prefixed name where a known prefix covers it (``dg:supports``)."""
    if iri is None:
        return None
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return iri
