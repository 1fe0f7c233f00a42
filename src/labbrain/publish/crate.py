"""An evidence bundle's RO-Crate metadata (``ro-crate-metadata.json``) and its README.

Pure functions of a :class:`CrateInput` (what :mod:`labbrain.publish.bundle` read from the
store): nothing here touches the store or the disk. The crate follows RO-Crate 1.2 (or 1.1,
which the lab's own bundles use):

- the metadata descriptor and the root ``Dataset`` (name, description, date published,
  licence, ``hasPart`` the README and the figures, ``about`` the bundled node, ``mentions``
  every node of its lineage, ``citation`` the DOIs of its sources);
- the bundled node and its lineage as contextual entities typed with the ``dg:`` / ``lb:``
  classes (``dg:Evidence``, ``lb:Result``, ``dg:Claim``, ...), each with its outgoing
  relations as the core properties (``dg:supports``, ``dg:opposes``, ``dg:addresses``,
  ``lb:informs``; a text link, or a relation with a label of the lab's own, as
  ``lb:linksTo``), its creator, dates and Roam / vault IRI;
- each DOI of a source as a ``ScholarlyArticle`` (``@id`` its ``https://doi.org/`` IRI);
- each person as a ``Person``: ``@id`` their ORCID IRI where the people map knows it, else a
  local ``#person-...`` id with the name;
- the figures as data entities: a remote image by its URL (never fetched), an attachment
  copied into the crate by its path there;
- a ``CreateAction`` whose ``agent`` is the human who asked for the bundle (a ``Person``) and,
  when one made it, the assistant (a ``prov:SoftwareAgent``), and whose ``instrument`` is
  labbrain (a ``prov:SoftwareAgent`` with its version);
- what the node does not say of ``method``, ``system`` and ``observable``, as
  ``lb:notStated`` on the node and on the root (and what it does say, as ``lb:method``,
  ``lb:system``, ``lb:observable``; method and observable also as schema.org's
  ``measurementTechnique`` and ``variableMeasured``).

Every text is cut to a bound (:data:`MAX_NAME`, :data:`MAX_STATEMENT`, :data:`MAX_TEXT`), so
a node with a huge title gives a crate of bounded size; :attr:`CrateInput.cuts` says what was
cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from labbrain import __version__
from labbrain.errors import InvalidArgument
from labbrain.index.text import IndexedNode
from labbrain.publish.lineage import MAX_PER_ROLE, Lineage, Relation
from labbrain.rdf.namespaces import DG, DGB, LB, PROV, compact_iri
from labbrain.store.ontology import vocabulary

CrateVersion = Literal["1.2", "1.1"]
CRATE_VERSIONS: tuple[CrateVersion, ...] = ("1.2", "1.1")
METADATA_FILE = "ro-crate-metadata.json"
README_FILE = "README.md"
#: Where copied attachments go inside the crate.
FIGURES_DIR = "figures"

#: Longest name (title) of an entity, in characters; a longer one is cut, with an ellipsis.
MAX_NAME = 1_000
#: Longest statement (the bundled node's full title) kept in the crate and the README.
MAX_STATEMENT = 20_000
#: Longest text (the bundled node's markdown) kept in the crate.
MAX_TEXT = 200_000

#: What an evidence statement should say besides itself, in this order.
FIELDS = ("method", "system", "observable")
#: The labels under which a node's text states each field (a ``Label:: value`` attribute or
#: a ``Label: value`` line, any case, bold or not, in a list or not).
FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "method": ("method", "methods", "technique", "protocol"),
    "system": ("system", "model system", "organism", "cell line", "cells", "strain"),
    "observable": ("observable", "observables", "readout", "measured", "measurement"),
}
_LABEL_OF = {label: name for name, labels in FIELD_LABELS.items() for label in labels}
_STATED_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?P<label>[A-Za-z][A-Za-z ]{0,30}?)\s*(?:\*\*|__)?\s*"
    r"::?\s*(?:\*\*|__)?\s*(?P<value>\S.*?)\s*$"
)

#: The default licence of a bundle: an SPDX identifier (see :func:`licence`).
DEFAULT_LICENSE = "CC-BY-4.0"
_SPDX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$")
_SPDX = "https://spdx.org/licenses/"

#: The crate's prefixes (prefix to namespace): its context's, and those its classes and core
#: relation properties are written with (:func:`~labbrain.rdf.namespaces.compact_iri`).
_PREFIXES = {"dg": DG, "dgb": DGB, "lb": LB, "prov": PROV}
_TEXT_LINK = "lb:linksTo"


@dataclass(frozen=True)
class Licence:
    """A bundle's licence: its IRI, and its SPDX identifier when given as one."""

    iri: str
    identifier: str | None = None

    @property
    def name(self) -> str:
        return self.identifier or self.iri


def licence(value: str) -> Licence:
    """The licence ``value`` names: an SPDX identifier (``CC-BY-4.0``, ``CC0-1.0``, ``MIT``;
    its IRI is ``https://spdx.org/licenses/<id>``) or an http(s) URL. Raises InvalidArgument
    for anything else."""
    text = value.strip()
    if text.lower().startswith(("http://", "https://")) and not re.search(r"[\s<>\"{}|\\^`]", text):
        return Licence(text)
    if _SPDX_ID.match(text):
        return Licence(_SPDX + text, text)
    raise InvalidArgument(
        "license",
        f"{value[:80]!r} is neither an SPDX licence identifier (CC-BY-4.0, CC0-1.0, MIT) nor an "
        "http(s) URL",
    )


@dataclass(frozen=True)
class Figure:
    """An image of the bundled node as the crate holds it: ``ident`` is its URL (a remote
    image, kept as a reference) or its path inside the crate (a copied attachment)."""

    ident: str
    name: str
    copied: bool
    encoding: str | None = None
    size: int | None = None


@dataclass
class CrateInput:
    """Everything a crate is made of (read from the store by the caller)."""

    lineage: Lineage
    #: The bundled node's markdown.
    content: str
    #: The DOIs (``https://doi.org/...`` IRIs) of each source, by the source's IRI.
    dois: dict[str, list[str]]
    #: Each person named (creators, the human) with their ORCID IRI, or None.
    people: dict[str, str | None]
    figures: list[Figure]
    crate_version: CrateVersion
    licence: Licence
    #: The human who asked for the bundle, and the assistant that made it (if one did).
    human: str
    agent: str | None
    #: When the bundle was made (ISO 8601 with offset) and from which dataset.
    created: str
    dataset: str
    #: The IRI naming the export the dataset was loaded from, if its load record has one.
    export_id: str | None = None
    #: What was cut to keep the crate bounded (filled by :func:`crate_metadata`).
    cuts: list[str] = field(default_factory=list)

    @property
    def subject(self) -> IndexedNode:
        return self.lineage.subject


def stated_fields(text: str) -> dict[str, str]:
    """What ``text`` states of :data:`FIELDS`, by field: the first line of each labelled with
    one of its :data:`FIELD_LABELS` (``Method:: TIRF``, ``- **System**: SK-MEL-2 cells``).
    Nothing is inferred from unlabelled text: a field not labelled is not stated."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if len(line) > 2_000:
            continue
        match = _STATED_LINE.match(line)
        if not match:
            continue
        name = _LABEL_OF.get(" ".join(match["label"].lower().split()))
        value = match["value"].strip().strip("*_").strip()
        if name is not None and value and name not in found:
            found[name] = value
    return found


def missing_fields(stated: dict[str, str]) -> list[str]:
    """The :data:`FIELDS` not in ``stated``, in order."""
    return [name for name in FIELDS if name not in stated]


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters long: cut, with an ellipsis, when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def context_url(version: CrateVersion) -> str:
    """The JSON-LD context of RO-Crate ``version``."""
    return f"https://w3id.org/ro/crate/{version}/context"


def _ref(ident: str) -> dict[str, str]:
    return {"@id": ident}


def _refs(idents: Iterable[str]) -> list[dict[str, str]]:
    return [_ref(ident) for ident in dict.fromkeys(idents)]


def _node_class(node: IndexedNode) -> str:
    """The ``dg:`` / ``lb:`` class of a node's type (``dg:DiscourseNode`` when the type is
    the lab's own)."""
    kind = vocabulary().node_kind_by_label(node.node_type)
    return compact_iri(kind.iri, _PREFIXES) if kind is not None else "dg:DiscourseNode"


def _relation_property(relation: Relation) -> str:
    """The crate property of a relation: its core relation, else ``lb:linksTo``."""
    if relation.label is None:
        return _TEXT_LINK
    core = vocabulary().relation_by_label(relation.label)
    return compact_iri(core, _PREFIXES) if core is not None else _TEXT_LINK


_SLUG = re.compile(r"[^a-z0-9]+")


def _local_ids(names: Iterable[str], prefix: str) -> dict[str, str]:
    """A distinct ``#prefix-slug`` id for each of ``names``."""
    ids: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = f"#{prefix}-" + (_SLUG.sub("-", name.lower()).strip("-")[:60] or "unnamed")
        ident, n = base, 1
        while ident in used:
            n += 1
            ident = f"{base}-{n}"
        used.add(ident)
        ids[name] = ident
    return ids


def person_ids(people: dict[str, str | None]) -> dict[str, str]:
    """Each person's ``@id``: their ORCID IRI, else a local ``#person-...`` id."""
    local = _local_ids([name for name, orcid in people.items() if orcid is None], "person")
    return {name: orcid or local[name] for name, orcid in people.items()}


def crate_metadata(data: CrateInput) -> dict[str, Any]:
    """The ``ro-crate-metadata.json`` document of a bundle (see the module), every text
    bounded; what was cut is added to ``data.cuts``."""
    subject = data.subject
    lineage = data.lineage
    persons = person_ids(data.people)
    stated = stated_fields(data.content)
    missing = missing_fields(stated)
    if len(subject.title) > MAX_STATEMENT:
        data.cuts.append(
            f"the node's title ({len(subject.title):,} characters) is cut at {MAX_STATEMENT:,} "
            f"as its statement and at {MAX_NAME:,} as its name"
        )
    if len(data.content) > MAX_TEXT:
        data.cuts.append(
            f"the node's text ({len(data.content):,} characters) is cut at {MAX_TEXT:,}"
        )
    long_names = [n.uid for n in lineage.nodes()[1:] if len(n.title) > MAX_NAME]
    if long_names:
        data.cuts.append(
            f"the names of {len(long_names)} linked node(s) are cut at {MAX_NAME:,} characters"
        )

    statement = cut(subject.title, MAX_STATEMENT)
    dois = [doi for source in lineage.sources for doi in data.dois.get(source.iri, [])]
    figures = [figure.ident for figure in data.figures]
    root: dict[str, Any] = {
        "@id": "./",
        "@type": "Dataset",
        "name": cut(f"{subject.node_type} bundle: {subject.title}", MAX_NAME),
        "description": statement,
        "datePublished": data.created,
        "license": _ref(data.licence.iri),
        "hasPart": _refs([README_FILE, *figures]),
        "about": _ref(subject.iri),
        "mentions": _refs(node.iri for node in lineage.nodes()),
        "lb:notStated": missing,
    }
    if dois:
        root["citation"] = _refs(dois)
    if data.export_id:
        root["isBasedOn"] = _ref(data.export_id)
    if subject.creator:
        root["author"] = _ref(persons[subject.creator])

    outgoing: dict[str, dict[str, list[str]]] = {}
    for relation in lineage.relations:
        by_property = outgoing.setdefault(relation.source, {})
        by_property.setdefault(_relation_property(relation), []).append(relation.destination)

    graph: list[dict[str, Any]] = [
        {
            "@id": METADATA_FILE,
            "@type": "CreativeWork",
            "conformsTo": _ref(f"https://w3id.org/ro/crate/{data.crate_version}"),
            "about": _ref("./"),
        },
        root,
        {
            "@id": README_FILE,
            "@type": "File",
            "name": "README",
            "description": "The evidence statement, its lineage and what it does not say, "
            "for people to read.",
            "encodingFormat": "text/markdown",
        },
    ]
    subject_entity = _node_entity(subject, persons, outgoing)
    subject_entity["description"] = statement
    if subject.node_type.lower() == "evidence":
        subject_entity["dg:observationStatement"] = statement
    subject_entity["text"] = cut(data.content, MAX_TEXT)
    for name, value in stated.items():
        subject_entity[f"lb:{name}"] = cut(value, MAX_NAME)
    if "method" in stated:
        subject_entity["measurementTechnique"] = cut(stated["method"], MAX_NAME)
    if "observable" in stated:
        subject_entity["variableMeasured"] = cut(stated["observable"], MAX_NAME)
    subject_entity["lb:notStated"] = missing
    if figures:
        subject_entity["image"] = _refs(figures)
    if dois:
        subject_entity["citation"] = _refs(dois)
    graph.append(subject_entity)
    for node in lineage.nodes()[1:]:
        entity = _node_entity(node, persons, outgoing)
        if data.dois.get(node.iri):
            entity["about"] = _refs(data.dois[node.iri])
        graph.append(entity)

    named: dict[str, str] = {}
    for source in lineage.sources:
        for doi in data.dois.get(source.iri, []):
            named.setdefault(doi, source.title)
    for doi, title in named.items():
        graph.append(
            {
                "@id": doi,
                "@type": "ScholarlyArticle",
                "identifier": doi,
                "name": cut(title, MAX_NAME),
            }
        )
    for figure in data.figures:
        entity = {"@id": figure.ident, "@type": "File", "name": figure.name}
        if figure.encoding:
            entity["encodingFormat"] = figure.encoding
        if figure.size is not None:
            entity["contentSize"] = str(figure.size)
        graph.append(entity)
    named_by: dict[str, str] = {}
    for name, ident in persons.items():
        # one entity per id: two names the people map gives one ORCID are one person
        named_by.setdefault(ident, name)
    graph += [{"@id": ident, "@type": "Person", "name": name} for ident, name in named_by.items()]

    # labbrain and the assistant are software agents (PROV), not schema.org
    # SoftwareApplications: RO-Crate requires a url of those, and neither has one to give.
    graph.append(
        {
            "@id": "#labbrain",
            "@type": "prov:SoftwareAgent",
            "name": "labbrain",
            "softwareVersion": __version__,
        }
    )
    agents = [_ref(persons[data.human])]
    if data.agent:
        agent_id = _local_ids([data.agent], "agent")[data.agent]
        agents.append(_ref(agent_id))
        graph.append({"@id": agent_id, "@type": "prov:SoftwareAgent", "name": data.agent})
    graph.append(
        {
            "@id": "#bundle",
            "@type": "CreateAction",
            "name": f"Bundled {subject.node_type} {subject.uid} from dataset {data.dataset}",
            "agent": agents,
            "instrument": _ref("#labbrain"),
            "object": _ref(subject.iri),
            "result": _ref("./"),
            "endTime": data.created,
        }
    )
    licence_entity: dict[str, Any] = {
        "@id": data.licence.iri,
        "@type": "CreativeWork",
        "name": data.licence.name,
    }
    if data.licence.identifier:
        licence_entity["identifier"] = data.licence.identifier
    graph.append(licence_entity)
    return {"@context": [context_url(data.crate_version), dict(_PREFIXES)], "@graph": graph}


def _node_entity(
    node: IndexedNode, persons: dict[str, str], outgoing: dict[str, dict[str, list[str]]]
) -> dict[str, Any]:
    """A discourse node as a contextual entity: its classes, name, uid, creator, dates,
    IRI and outgoing relations."""
    entity: dict[str, Any] = {
        "@id": node.iri,
        "@type": ["CreativeWork", _node_class(node)],
        "name": cut(node.title, MAX_NAME),
        "identifier": node.uid,
        "genre": node.node_type,
    }
    if node.iri.startswith(("http://", "https://")):
        entity["url"] = node.iri
    if node.creator:
        entity["creator"] = _ref(persons[node.creator])
    if node.created:
        entity["dateCreated"] = node.created
    if node.modified:
        entity["dateModified"] = node.modified
    for prop, destinations in sorted(outgoing.get(node.iri, {}).items()):
        entity[prop] = _refs(destinations)
    return entity


def readme(data: CrateInput) -> str:
    """The bundle's README.md: the evidence statement, where it comes from, its lineage,
    what it does not say, the figures, the licence and who made the bundle (bounded)."""
    subject = data.subject
    lineage = data.lineage
    stated = stated_fields(data.content)
    missing = missing_fields(stated)
    titles = {node.iri: node for node in lineage.nodes()}

    def line(node: IndexedNode) -> str:
        by = f", {node.creator}" if node.creator else ""
        return f"- {node.node_type} `{node.uid}`: {cut(node.title, 300)}{by}"

    parts = [
        f"# {subject.node_type}: {cut(subject.title, 300)}",
        "",
        cut(subject.title, MAX_STATEMENT),
        "",
        f"- uid: `{subject.uid}` in dataset `{data.dataset}`",
        f"- by: {subject.creator or 'unknown'}, created {subject.created or 'unknown'}",
        f"- page: <{subject.iri}>",
        "",
    ]
    if stated:
        parts += ["## What it says", ""]
        parts += [f"- {name}: {cut(stated[name], 300)}" for name in FIELDS if name in stated]
        parts.append("")
    if missing:
        parts += [
            "## Not stated",
            "",
            "The node does not say its " + ", ".join(missing) + "; nothing was filled in.",
            "",
        ]
    for heading, nodes in (
        ("Evidence", lineage.evidence),
        ("Claims, hypotheses and conclusions", lineage.statements),
        ("Questions", lineage.questions),
        ("Sources", lineage.sources),
    ):
        if nodes:
            parts += [f"## {heading}", "", *(line(node) for node in nodes), ""]
            for source in nodes if heading == "Sources" else ():
                parts += [f"  - DOI: <{doi}>" for doi in data.dois.get(source.iri, [])]
    if lineage.relations:
        parts += ["## Relations", ""]
        for relation in lineage.relations:
            source, destination = titles[relation.source], titles[relation.destination]
            label = relation.label or "links to (in its text)"
            parts.append(f"- `{source.uid}` {label} `{destination.uid}`")
        parts.append("")
    if lineage.cut:
        cuts = ", ".join(f"{role} ({total} in all)" for role, total in lineage.cut.items())
        parts += [f"Lists cut at {MAX_PER_ROLE} nodes: {cuts}.", ""]
    if data.figures:
        parts += ["## Figures", ""]
        for figure in data.figures:
            where = f"`{figure.ident}`" if figure.copied else f"<{figure.ident}> (not copied)"
            parts.append(f"- {figure.name}: {where}")
        parts.append("")
    parts += [
        "## About this bundle",
        "",
        f"Licence: {data.licence.name}. Made {data.created} by {data.human}"
        + (f" with {data.agent}" if data.agent else "")
        + f" using labbrain {__version__}; the machine-readable form is `{METADATA_FILE}` "
        f"(RO-Crate {data.crate_version}).",
        "",
    ]
    return "\n".join(parts)
