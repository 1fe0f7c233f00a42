"""Answer models of the proposition tools (atomic claims an assistant records).

Field names are wire names (camelCase). A proposition is named by its IRI
(``urn:labbrain:proposition:<hex>``), a lab node by its uid with its full attribution
(:class:`~labbrain.discourse.models.NodeRef`). Write answers carry ``availableActions``: the tools
that make sense next.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from labbrain.discourse.models import NodeRef, listed_count

RelationName = Literal["supports", "refutes", "extends", "implies", "contradicts"]


class PropositionRef(BaseModel):
    """A proposition with its attribution (which agent recorded it, when)."""

    id: str = Field(description="the proposition's id (an IRI); pass it to get_proposition")
    content: str = Field(description="the claim, one sentence")
    confidence: float = Field(description="how sure the recording agent was, 0 to 1")
    created: str = Field(description="when it was recorded, ISO 8601")
    attributedTo: str = Field(description="the agent that recorded it")


class PropositionSource(BaseModel):
    """Where a proposition comes from: a DOI, a web page or a lab node."""

    kind: Literal["doi", "url", "node"]
    iri: str = Field(description="https://doi.org/<doi>, the URL, or the lab node's Roam URL")
    doi: str | None = Field(default=None, description="the DOI, for kind doi")
    node: NodeRef | None = Field(
        default=None,
        description="the lab node with its attribution, for kind node (null if its dataset "
        "is no longer loaded)",
    )


class Proposition(PropositionRef):
    """A proposition with its sources."""

    sources: list[PropositionSource] = Field(
        default_factory=list, description="what it rests on, sorted by IRI (none: empty)"
    )


class Endpoint(BaseModel):
    """One end of a relation or hop: a proposition or a lab discourse node."""

    kind: Literal["proposition", "node"]
    id: str = Field(description="proposition id, or lab node uid")
    proposition: PropositionRef | None = None
    node: NodeRef | None = Field(
        default=None, description="the lab node with attribution (null if no longer loaded)"
    )


class PropositionRelation(BaseModel):
    """A typed relation ``source`` -[relation]-> ``target`` recorded by an agent."""

    id: str = Field(description="the relation's id (an IRI)")
    relation: RelationName
    source: Endpoint
    target: Endpoint
    reasoning: str | None = Field(default=None, description="why the agent related them")
    created: str


class PropositionDetail(Proposition):
    """A proposition with its relations in both directions."""

    outgoing: list[PropositionRelation] = Field(
        description="relations from this proposition to others"
    )
    incoming: list[PropositionRelation] = Field(
        description="relations from others (propositions or lab nodes) to this one"
    )


class AddPropositionResult(BaseModel):
    """The proposition just recorded."""

    proposition: Proposition
    availableActions: list[str] = Field(description="tools that make sense next")
    note: str | None = None


class ConnectResult(BaseModel):
    """The relation just recorded (or the identical one that already existed)."""

    relation: PropositionRelation
    created: bool = Field(description="false when this relation already existed: nothing written")
    availableActions: list[str] = Field(description="tools that make sense next")
    note: str | None = None


class PropositionPage(BaseModel):
    """One page of propositions, oldest first."""

    propositions: list[Proposition]
    listed: int = listed_count("propositions")
    total: int = Field(description="propositions recorded in all (that match, when filtered)")
    nextCursor: str | None = Field(
        description="pass as cursor for the next page; null on the last page"
    )
    note: str | None = None


class ChosenEnd(BaseModel):
    """Which node a concept of find_lineage stood for, and why."""

    concept: str = Field(description="the concept as given")
    chosen: Endpoint
    reason: str
    candidates: list[Endpoint] = Field(description="every node the concept matched, best first")


class LineageHop(BaseModel):
    """One hop: ``source`` -[relation]-> ``destination``, walked in either direction."""

    source: Endpoint
    relation: str = Field(
        description="a proposition relation (supports, refutes, ...), a lab relation label "
        "(Supports, Opposes, ...), or wasDerivedFrom (a proposition's source node)"
    )
    destination: Endpoint
    traversed: Literal["forward", "backward"] = Field(
        description="forward: the path follows the relation's direction"
    )
    origin: Literal["proposition", "lab", "source"] = Field(
        description="proposition: an agent-recorded relation; lab: a relation of the lab's "
        "discourse graph; source: a proposition derived from a lab node"
    )
    relationId: str | None = Field(default=None, description="id of a proposition relation")
    reasoning: str | None = None


class LineageResult(BaseModel):
    """The shortest typed path between two concepts."""

    found: bool
    length: int | None
    start: ChosenEnd
    end: ChosenEnd
    hops: list[LineageHop]
    note: str | None = None


class Contradiction(BaseModel):
    """Something that conflicts with the subject, and why it was reported."""

    item: Endpoint = Field(description="the conflicting proposition or lab node")
    kind: Literal["explicit", "lab", "similar"] = Field(
        description="explicit: a contradicts/refutes relation on the subject; lab: an Opposes "
        "relation of the lab's graph on the subject or a lab node it rests on; similar: an "
        "opposing relation on a proposition similar to the subject (or, when embeddings "
        "were computed, on a lab node close in meaning to a free-text claim)"
    )
    relation: str = Field(description="contradicts, refutes, or the lab relation label")
    relationId: str | None = Field(default=None, description="id of a proposition relation")
    reasoning: str | None = None
    via: Endpoint | None = Field(
        default=None, description="the lab node or similar proposition it was found through"
    )
    why: str


class ContradictionsResult(BaseModel):
    """What conflicts with a claim."""

    subject: Endpoint | None = Field(
        description="the proposition or lab node the claim was taken as (null for free text)"
    )
    subjectReason: str
    similar: list[PropositionRef] = Field(
        description="propositions found similar to the claim, whose opposing relations were read"
    )
    contradictions: list[Contradiction]
    listed: int = listed_count("contradictions")
    note: str | None = None
