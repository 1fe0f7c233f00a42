"""Writes Discourse Graphs Obsidian vaults for tests and benchmarks, from the format document
(``../shared/obsidian-dg-format.md``), and the Roam export of the same graph.

A :class:`Lab` is a discourse graph in memory (node types, relation types, allowed triples,
nodes, relations); :func:`write_vault` lays it out as the plugin does (settings in
``.obsidian/plugins/discourse-graphs/data.json``, one note per node with its frontmatter,
``relations.json`` at the root or at the old location, imported nodes under
``import/<space>/``), and :func:`roam_export` writes it as the Roam exporter would, so a test
can load both and compare every answer. Ids are random like the plugin's (``node_`` +
nanoid, uuidv7-like instance ids): nothing may depend on their values.
"""

from __future__ import annotations

import json
import os
import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generate import _context as exporter_context

NANO = string.ascii_letters + string.digits + "_-"
#: The default node types of the plugin (plus Result, which labs add themselves).
TYPES = (("Question", "QUE"), ("Claim", "CLM"), ("Evidence", "EVD"), ("Source", "SRC"))
#: (label, complement) of the default relation types, and "addresses", which labs add.
RELATIONS = (
    ("supports", "is supported by"),
    ("opposes", "is opposed by"),
    ("informs", "is informed by"),
    ("derived from", "has derivation"),
    ("addresses", "is addressed by"),
)
#: (source type, relation label, destination type) allowed.
TRIPLES = (
    ("Evidence", "supports", "Claim"),
    ("Evidence", "opposes", "Claim"),
    ("Evidence", "informs", "Question"),
    ("Evidence", "derived from", "Source"),
    ("Claim", "addresses", "Question"),
)
WORDS = [
    "actin",
    "clathrin",
    "membrane",
    "tension",
    "endocytosis",
    "coat",
    "curvature",
    "dynamin",
    "scission",
    "vesicle",
    "myosin",
    "polymerization",
    "filament",
    "force",
    "yeast",
    "cell",
    "adaptor",
    "lipid",
    "receptor",
    "cargo",
    "pit",
]


def nanoid(rng: random.Random, size: int = 21) -> str:
    return "".join(rng.choice(NANO) for _ in range(size))


def uuid7ish(rng: random.Random, millis: int) -> str:
    """A uuidv7-shaped id (time prefix, random rest)."""
    hexed = f"{millis:012x}" + "".join(rng.choice("0123456789abcdef") for _ in range(20))
    return f"{hexed[:8]}-{hexed[8:12]}-7{hexed[13:16]}-{hexed[16:20]}-{hexed[20:32]}"


@dataclass
class VaultNode:
    """A node: its type name, title text, body, author and place."""

    type_name: str
    content: str
    body: str
    instance_id: str | None
    folder: str = "Discourse Nodes"
    imported_from: str | None = None  # the source vault id, for an imported node
    author_id: int | None = None
    last_modified: int | None = None
    extra_front: dict[str, Any] = field(default_factory=dict)


@dataclass
class VaultRelation:
    """A relation instance between two nodes (by index in Lab.nodes)."""

    label: str
    source: int
    destination: int
    rid: str
    created: int
    tentative: bool | None = None  # None: no key (local or accepted)
    imported: bool = False
    author_id: int | None = None


@dataclass
class Lab:
    """A discourse graph as a vault holds it."""

    name: str
    account: str
    owner: str
    type_ids: dict[str, str]
    relation_ids: dict[str, str]
    triple_ids: dict[tuple[str, str, str], str]
    nodes: list[VaultNode]
    relations: list[VaultRelation]
    user_names: dict[str, str]
    password: str

    def format_of(self, type_name: str) -> str:
        abbreviation = dict(TYPES).get(type_name, type_name[:3].upper())
        return f"{abbreviation} - {{content}}"

    def title(self, node: VaultNode) -> str:
        return self.format_of(node.type_name).replace("{content}", node.content)


def make_lab(
    seed: int,
    nodes: int = 40,
    relations: int = 60,
    *,
    name: str = "Tension Lab",
    body_words: int = 30,
) -> Lab:
    """A random lab of ``nodes`` nodes (bodies of about ``body_words`` words) and about
    ``relations`` relations, all local."""
    rng = random.Random(seed)
    type_ids = {type_name: "node_" + nanoid(rng) for type_name, _ in TYPES}
    relation_ids = {label: "relation_" + nanoid(rng) for label, _ in RELATIONS}
    triple_ids = {triple: "rel3_" + nanoid(rng) for triple in TRIPLES}
    start = 1_767_312_000_000
    made: list[VaultNode] = []
    used: set[str] = set()
    for number in range(nodes):
        type_name = TYPES[number % len(TYPES)][0]
        while True:
            content = " ".join(rng.sample(WORDS, 4)).capitalize() + f" {number}"
            if content not in used:
                used.add(content)
                break
        body = (
            f"Notes on {content.lower()}.\n\n" + " ".join(rng.choices(WORDS, k=body_words)) + "\n"
        )
        made.append(
            VaultNode(
                type_name=type_name,
                content=content,
                body=body,
                instance_id=uuid7ish(rng, start + number * 60_000),
            )
        )
    by_type: dict[str, list[int]] = {}
    for index, node in enumerate(made):
        by_type.setdefault(node.type_name, []).append(index)
    rels: list[VaultRelation] = []
    seen: set[tuple[str, int, int]] = set()
    for number in range(relations * 3):
        if len(rels) >= relations:
            break
        source_type, label, destination_type = TRIPLES[number % len(TRIPLES)]
        source = rng.choice(by_type[source_type])
        destination = rng.choice(by_type[destination_type])
        if (label, source, destination) in seen:
            continue
        seen.add((label, source, destination))
        created = start + 3_600_000 + number * 1000
        rels.append(VaultRelation(label, source, destination, uuid7ish(rng, created), created))
    return Lab(
        name=name,
        account="".join(c for c in name if c.isalnum())
        + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(6)),
        owner="Maya Chen",
        type_ids=type_ids,
        relation_ids=relation_ids,
        triple_ids=triple_ids,
        nodes=made,
        relations=rels,
        user_names={"101": "Ravi Patel", "87": "Maya Chen"},
        password="5f0c1a2e-9d5e-4c1b-a9e2-"
        + "".join(rng.choice("0123456789abcdef") for _ in range(12)),
    )


def settings(lab: Lab) -> dict[str, Any]:
    """The plugin's data.json of the lab."""
    return {
        "nodeTypes": [
            {
                "id": type_id,
                "name": type_name,
                "format": lab.format_of(type_name),
                "created": 1767312000000,
                "modified": 1767484800000,
            }
            for type_name, type_id in lab.type_ids.items()
        ],
        "relationTypes": [
            {
                "id": lab.relation_ids[label],
                "label": label,
                "complement": complement,
                "color": "green",
                "created": 1767312000000,
                "modified": 1767312000000,
            }
            for label, complement in RELATIONS
            if label in lab.relation_ids
        ],
        "discourseRelations": [
            {
                "id": triple_id,
                "sourceId": lab.type_ids[source],
                "destinationId": lab.type_ids[destination],
                "relationshipTypeId": lab.relation_ids[label],
                "created": 1767312000000,
                "modified": 1767312000000,
            }
            for (source, label, destination), triple_id in lab.triple_ids.items()
        ],
        "showIdsInFrontmatter": False,
        "nodesFolderPath": "Discourse Nodes",
        "canvasFolderPath": "Discourse Canvas",
        "spacePassword": lab.password,
        "accountLocalId": lab.account,
        "syncModeEnabled": False,
        "spaceNames": {"obsidian:00c6d07ef7b77e90": "Akamatsu Lab"},
        "username": lab.owner,
        "userNames": lab.user_names,
    }


def frontmatter(values: dict[str, Any]) -> str:
    """YAML as Obsidian's processFrontMatter writes it (block lists, quoted links)."""
    lines = ["---"]
    for key, value in values.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"  - {json.dumps(item) if '[[' in str(item) else item}" for item in value]
        elif isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {json.dumps(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def note_path(lab: Lab, node: VaultNode) -> str:
    return f"{node.folder}/{lab.title(node)}.md"


def write_vault(lab: Lab, root: Path, *, old_relations_location: bool = False) -> Path:
    """Write ``lab`` as a vault under ``root`` (created); return the vault's path. Every
    note's modification time is set from its node's last_modified, or a fixed time."""
    vault = root / lab.name
    plugin = vault / ".obsidian" / "plugins" / "discourse-graphs"
    plugin.mkdir(parents=True)
    (plugin / "data.json").write_text(json.dumps(settings(lab), indent=2), encoding="utf-8")
    (plugin / "manifest.json").write_text('{"id": "discourse-graphs", "version": "1.4.4"}')
    for number, node in enumerate(lab.nodes):
        write_node(lab, vault, node, mtime=1_770_000_000 + number * 60)
    relations = {rel.rid: relation_json(lab, rel) for rel in lab.relations}
    body = {"version": 1, "lastModified": 1786235100093, "relations": relations}
    target = vault / ("Discourse Nodes" if old_relations_location else "") / "relations.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(body, indent=2), encoding="utf-8")
    return vault


def write_node(lab: Lab, vault: Path, node: VaultNode, *, mtime: float) -> Path:
    front: dict[str, Any] = {"nodeTypeId": lab.type_ids[node.type_name]}
    if node.instance_id:
        front["nodeInstanceId"] = node.instance_id
    if node.imported_from:
        front["importedFromRid"] = f"orn:obsidian.note:{node.imported_from}/{node.instance_id}"
        if node.last_modified is not None:
            front["lastModified"] = node.last_modified
        if node.author_id is not None:
            front["authorId"] = node.author_id
    front.update(node.extra_front)
    path = vault / note_path(lab, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(frontmatter(front) + node.body, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def endpoint(lab: Lab, index: int) -> str:
    node = lab.nodes[index]
    assert node.instance_id is not None, "nothing can point at a node without an instance id"
    if node.imported_from:
        return f"orn:obsidian.note:{node.imported_from}/{node.instance_id}"
    return node.instance_id


def relation_json(lab: Lab, rel: VaultRelation) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": rel.rid,
        "type": lab.relation_ids[rel.label],
        "source": endpoint(lab, rel.source),
        "destination": endpoint(lab, rel.destination),
        "created": rel.created,
    }
    if rel.author_id is not None:
        entry["authorId"] = rel.author_id
    if rel.imported:
        entry["importedFromRid"] = f"orn:obsidian.relation:00c6d07ef7b77e90/{rel.rid}"
    if rel.tentative is not None:
        entry["tentative"] = rel.tentative
    return entry


# ------------------------------------------------------------------------------- Roam
def roam_export(lab: Lab, graph: str, modified: dict[int, str], created: dict[int, str]) -> dict:
    """The same graph as a Roam export (2026-06 context), each node with the creator and
    times given (a vault's come from the file system, so the caller passes what it set)."""
    context = exporter_context("2026-06", graph)
    entries: list[dict[str, Any]] = []
    for type_name, _ in TYPES:
        entries.append(
            {"@id": f"pages:_{type_name}-node", "@type": "nodeSchema", "label": type_name}
        )
    labels = dict(RELATIONS)
    for (source, label, destination), _ in lab.triple_ids.items():
        rel = f"pages:_{source}-{label.replace(' ', '')}-{destination}-rel"
        entries.append(
            {
                "@id": rel,
                "@type": "relationDef",
                "domain": f"pages:_{source}-node",
                "range": f"pages:_{destination}-node",
                "label": label,
            }
        )
        entries.append(
            {
                "@id": rel + "-inverse",
                "@type": "relationDef",
                "label": labels[label],
                "inverseOf": rel,
            }
        )
    for index, node in enumerate(lab.nodes):
        entries.append(
            {
                "@id": f"pages:n{index}",
                "@type": f"pages:_{node.type_name}-node",
                "title": lab.title(node),
                "content": node.body,
                "created": created[index],
                "modified": modified[index],
                "creator": lab.user_names.get(str(node.author_id))
                if node.imported_from
                else lab.owner,
            }
        )
    for rel in lab.relations:
        if rel.tentative is False:
            continue
        source_type = lab.nodes[rel.source].type_name
        destination_type = lab.nodes[rel.destination].type_name
        label = rel.label.replace(" ", "")
        entries.append(
            {
                "@type": "relationInstance",
                "predicate": f"pages:_{source_type}-{label}-{destination_type}-rel",
                "source": f"pages:n{rel.source}",
                "destination": f"pages:n{rel.destination}",
            }
        )
    return {
        "@context": context,
        "@id": f"https://roamresearch.com/#/app/{graph}",
        "@graph": entries,
    }
