"""What a dataset holds, in the few fields a change is told by: each node's title, type,
creator and a digest of its content, and the typed relations between nodes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


def content_digest(content: str) -> str:
    """A short digest of a node's content (equal contents, equal digests)."""
    return hashlib.blake2b(content.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class NodeState:
    """A node as a change compares it."""

    title: str
    node_type: str
    creator: str | None
    digest: str


@dataclass
class DatasetState:
    """Nodes by IRI and typed relations as (source IRI, label, destination IRI)."""

    nodes: dict[str, NodeState] = field(default_factory=dict)
    relations: set[tuple[str, str, str]] = field(default_factory=set)
