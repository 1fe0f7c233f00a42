"""What every assistant write shares: provenance, the session, and idempotency keys.

The agent-side models (projects, memory domains, propositions) never write the store
directly. They describe a write as a :class:`WritePlan` (quads to remove, quads to add, and the
result to answer with) and hand it to :meth:`AgentWriter.write`, which guarantees:

- the whole write is one store transaction (one ``QuadStore.update``): it lands fully or not
  at all;
- writes of one process are serialised, so a write planned from what it read is applied
  before anything else changes that; across processes (several servers writing one remote
  store) each write is a conditional update on the store's write stamp
  (``urn:labbrain:agent-writes lb:writeStamp`` in ``urn:labbrain:system``): it lands only if
  no other agent write landed since the plan read the store, and is otherwise planned again
  (idempotency keys checked again), so writes are serialisable and a key writes at most once
  whichever process sends it;
- with an idempotency key, the first result is stored durably in ``urn:labbrain:system`` in the
  same transaction as the write; a retry with the same key and the same arguments returns that
  first result and writes nothing, a reuse with other arguments (or by another tool) is refused.

Provenance: :meth:`AgentWriter.provenance` gives the PROV triples every agent-written
resource carries (generated when, attributed to which agent, in which session, derived from
which nodes). The session is one :class:`~labbrain.rdf.namespaces` IRI per writer, i.e. per MCP
server process, recorded in the system graph the first time it writes.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pyoxigraph import Literal, NamedNode, Quad

from labbrain.errors import InvalidArgument, StoreReadOnly, WriteConflict
from labbrain.rdf.namespaces import (
    AGENT_PREFIX,
    IDEMPOTENCY_PREFIX,
    LB,
    PROV,
    RDF,
    RDFS,
    SESSION_PREFIX,
    SYSTEM_GRAPH,
    WRITE_STAMP_SUBJECT_IRI,
    slugify,
)
from labbrain.rdf.terms import text, timestamp
from labbrain.store.base import QuadStore

Result = TypeVar("Result", bound=BaseModel)

MAX_KEY_LENGTH = 200
#: The store's write stamp: replaced by every agent write, on condition that it is unchanged.
WRITE_STAMP_SUBJECT = NamedNode(WRITE_STAMP_SUBJECT_IRI)
WRITE_STAMP = NamedNode(LB + "writeStamp")
#: A session's marker: the stamp its last write set (tells a writer whether its write landed).
LAST_WRITE = NamedNode(LB + "lastWrite")
#: How often a write is planned again when other writers keep getting in first.
MAX_WRITE_ATTEMPTS = 200


def arguments_digest(arguments: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a write's arguments (keys sorted)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _template(quads: list[Quad]) -> str:
    """Ground quads as a SPARQL update template (``GRAPH <g> { s p o }`` each)."""
    return " ".join(f"GRAPH {q.graph_name} {{ {q.triple} }}" for q in quads)


@dataclass
class WritePlan(Generic[Result]):
    """One write: what to remove, what to add, and the answer to give once it is applied."""

    result: Result
    add: list[Quad] = field(default_factory=list)
    remove: list[Quad] = field(default_factory=list)


class AgentWriter:
    """Applies agent writes to ``store`` with provenance and idempotency (see module doc).

    ``agent`` names who writes (``urn:labbrain:agent:<slug>``); ``session_id`` defaults to a
    fresh UUID, so each writer (each server process) is its own session.
    """

    def __init__(
        self, store: QuadStore, *, agent: str = "assistant", session_id: str | None = None
    ) -> None:
        self.store = store
        self.agent = NamedNode(AGENT_PREFIX + slugify(agent))
        self.session_id = session_id or uuid.uuid4().hex
        self.session = NamedNode(SESSION_PREFIX + self.session_id)
        self._lock = threading.RLock()
        self._session_recorded = False
        self._marker: Literal | None = None  # the stamp of this session's last write

    # ------------------------------------------------------------------ provenance
    def provenance(
        self,
        subject: NamedNode,
        graph: NamedNode,
        *,
        derived_from: Iterable[NamedNode] = (),
        at: datetime | None = None,
    ) -> list[Quad]:
        """PROV triples for a resource the agent writes into ``graph``: when, by whom, in
        which session, and from which nodes it was derived."""
        quads = [
            Quad(subject, NamedNode(PROV + "generatedAtTime"), timestamp(at), graph),
            Quad(subject, NamedNode(PROV + "wasAttributedTo"), self.agent, graph),
            Quad(subject, NamedNode(LB + "session"), self.session, graph),
        ]
        quads.extend(
            Quad(subject, NamedNode(PROV + "wasDerivedFrom"), source, graph)
            for source in derived_from
        )
        return quads

    def _session_record(self) -> list[Quad]:
        """The system-graph description of this session and its agent (written once)."""
        if self._session_recorded:
            return []
        system = NamedNode(SYSTEM_GRAPH)
        return [
            Quad(self.session, NamedNode(RDF + "type"), NamedNode(LB + "Session"), system),
            Quad(self.session, NamedNode(PROV + "startedAtTime"), timestamp(), system),
            Quad(self.session, NamedNode(PROV + "wasAssociatedWith"), self.agent, system),
            Quad(self.agent, NamedNode(RDF + "type"), NamedNode(PROV + "SoftwareAgent"), system),
            Quad(
                self.agent,
                NamedNode(RDFS + "label"),
                text(self.agent.value.removeprefix(AGENT_PREFIX)),
                system,
            ),
        ]

    # ------------------------------------------------------------------ writing
    def write(
        self,
        tool: str,
        plan: Callable[[], WritePlan[Result]],
        *,
        key: str | None = None,
        arguments: dict[str, Any] | None = None,
        model: type[Result] | None = None,
    ) -> Result:
        """Plan and apply one write atomically; with ``key``, at most once (see module doc).

        ``plan`` runs under the writer's lock, and its quads are applied only if no other
        agent write (of any process) landed since it began; otherwise it runs again, at most
        MAX_WRITE_ATTEMPTS times (then WriteConflict, nothing written). ``model`` (the
        result type) is needed to answer a replayed key. Raises InvalidArgument when ``key``
        was already used by another tool or other arguments, and StoreReadOnly naming
        ``tool`` on a read-only store, before anything is planned.
        """
        if self.store.read_only:
            raise StoreReadOnly(tool)
        with self._lock:
            for attempt in range(MAX_WRITE_ATTEMPTS):
                if attempt:  # another process wrote first: back off (random, growing)
                    time.sleep(random.uniform(0, min(0.01 * 2**attempt, 0.5)))
                stamps = self._stamps()
                if key is not None:
                    replay = self._replay(tool, key, arguments or {}, model)
                    if replay is not None:
                        return replay
                planned = plan()
                add = list(planned.add)
                if key is not None:
                    add.extend(self._key_record(tool, key, arguments or {}, planned.result))
                add.extend(self._session_record())
                if self._apply_unless_written(stamps, planned.remove, add):
                    self._session_recorded = True
                    return planned.result
            raise WriteConflict(tool, MAX_WRITE_ATTEMPTS)

    def _stamps(self) -> list[Quad]:
        """The write stamp(s) of the store now (none before the first agent write)."""
        return list(self.store.quads(SYSTEM_GRAPH, WRITE_STAMP_SUBJECT, WRITE_STAMP))

    def _apply_unless_written(
        self, stamps: list[Quad], remove: list[Quad], add: list[Quad]
    ) -> bool:
        """Apply ``remove`` / ``add`` in one update, on condition that the write stamp is still
        ``stamps`` (no agent write landed since it was read), replacing it with a new one;
        True if it was applied. Whether it was is read back from this session's own marker,
        which only this writer (under its lock) changes."""
        system = NamedNode(SYSTEM_GRAPH)
        fresh = text(uuid.uuid4().hex)
        markers = [Quad(self.session, LAST_WRITE, self._marker, system)] if self._marker else []
        remove = [*remove, *stamps, *markers]
        add = [
            *add,
            Quad(WRITE_STAMP_SUBJECT, WRITE_STAMP, fresh, system),
            Quad(self.session, LAST_WRITE, fresh, system),
        ]
        if stamps:
            condition = _template(stamps)
        else:
            # "no stamp yet", as a count: Virtuoso takes a FILTER NOT EXISTS that is all the
            # WHERE clause holds as true, and an OPTIONAL + !BOUND on a new IRI as false
            stamp = f"GRAPH {system} {{ {WRITE_STAMP_SUBJECT} {WRITE_STAMP} ?any }}"
            condition = (
                f"{{ SELECT (COUNT(*) AS ?stamps) WHERE {{ {stamp} }} }} FILTER(?stamps = 0)"
            )
        update = f"DELETE {{ {_template(remove)} }} INSERT {{ {_template(add)} }}"
        self.store.update(f"{update} WHERE {{ {condition} }}")
        landed = any(
            quad.object == fresh
            for quad in self.store.quads(SYSTEM_GRAPH, self.session, LAST_WRITE)
        )
        if landed:
            self._marker = fresh
        return landed

    def _key_subject(self, key: str) -> NamedNode:
        if not key or len(key) > MAX_KEY_LENGTH:
            raise InvalidArgument(
                "idempotencyKey", f"must be 1 to {MAX_KEY_LENGTH} characters long"
            )
        return NamedNode(IDEMPOTENCY_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest())

    def _replay(
        self, tool: str, key: str, arguments: dict[str, Any], model: type[Result] | None
    ) -> Result | None:
        """The stored first result for ``key``, or None if the key is new."""
        subject = self._key_subject(key)
        facts = {
            quad.predicate.value.removeprefix(LB): quad.object.value
            for quad in self.store.quads(SYSTEM_GRAPH, subject)
            if quad.predicate.value.startswith(LB) and isinstance(quad.object, Literal)
        }
        if not facts:
            return None
        if facts.get("tool") != tool:
            raise InvalidArgument(
                "idempotencyKey",
                f"{key!r} was already used with {facts.get('tool')}; use a new key for this write",
            )
        if facts.get("argumentsDigest") != arguments_digest(arguments):
            raise InvalidArgument(
                "idempotencyKey",
                f"{key!r} was already used for a {tool} call with other arguments; use a new "
                "key for a new write",
            )
        if model is None:
            raise InvalidArgument("idempotencyKey", f"{tool} does not take idempotency keys")
        return model.model_validate(json.loads(facts["result"]))

    def _key_record(
        self, tool: str, key: str, arguments: dict[str, Any], result: BaseModel
    ) -> list[Quad]:
        subject = self._key_subject(key)
        system = NamedNode(SYSTEM_GRAPH)
        answer = json.dumps(result.model_dump(mode="json"), separators=(",", ":"))
        digest = arguments_digest(arguments)
        return [
            Quad(subject, NamedNode(RDF + "type"), NamedNode(LB + "IdempotencyKey"), system),
            Quad(subject, NamedNode(LB + "key"), text(key), system),
            Quad(subject, NamedNode(LB + "tool"), text(tool), system),
            Quad(subject, NamedNode(LB + "argumentsDigest"), text(digest), system),
            Quad(subject, NamedNode(LB + "result"), text(answer), system),
            Quad(subject, NamedNode(PROV + "generatedAtTime"), timestamp(), system),
            Quad(subject, NamedNode(LB + "session"), self.session, system),
        ]
