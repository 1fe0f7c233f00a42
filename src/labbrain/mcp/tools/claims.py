"""The claims tools: propositions (atomic claims), their relations, lineage, contradictions.

A thin adapter over :class:`~labbrain.agent.claims.propositions.Propositions` and
:class:`~labbrain.agent.claims.paths.PropositionPaths` (the context's ``propositions`` and
``paths``): each tool passes its arguments to one method and returns its model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from labbrain.agent.claims.models import (
    AddPropositionResult,
    ConnectResult,
    ContradictionsResult,
    LineageResult,
    PropositionDetail,
    PropositionPage,
)
from labbrain.agent.claims.paths import MAX_HOPS
from labbrain.agent.claims.propositions import MAX_CONTENT, MAX_PAGE, MAX_REASONING
from labbrain.mcp.common import READ_ONLY, WRITE, IdempotencyKey, ToolContext, ToolSpec

PropositionId = Annotated[str, Field(description="proposition id (from list_propositions)")]
EndArg = Annotated[str, Field(description="proposition id or lab node uid")]
Concept = Annotated[str, Field(description="words, a proposition id or a lab node uid")]


def add_proposition(
    context: ToolContext,
    content: Annotated[
        str,
        Field(
            description="one sentence, e.g. 'Arp2/3 inhibition slows pit maturation'",
            max_length=MAX_CONTENT,
        ),
    ],
    confidence: Annotated[float, Field(ge=0, le=1, description="how sure you are")],
    source: Annotated[
        str | None,
        Field(description="a DOI, an http(s) URL or a lab node uid"),
    ] = None,
    sources: Annotated[
        list[str] | None,
        Field(description="more sources, each a DOI, URL or lab node uid", max_length=20),
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> AddPropositionResult:
    """Record an atomic claim (a proposition) to keep, relate and check later, with the
    sources it rests on (source and/or sources). A DOI in any spelling is stored as
    https://doi.org/<doi>.

    Next: connect_propositions (to propositions or lab evidence), find_contradictions."""
    return context.propositions.add(
        content, confidence, source, sources=sources or (), key=idempotencyKey
    )


def get_proposition(context: ToolContext, id: PropositionId) -> PropositionDetail:
    """Read one proposition: content, confidence, source, who recorded it and when, and
    every relation both ways (ends attributed, with reasoning).

    Next: find_lineage or find_contradictions."""
    return context.propositions.get(id)


def list_propositions(
    context: ToolContext,
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 20,
    cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
    query: Annotated[
        str | None, Field(description="only those whose content holds every word")
    ] = None,
    source: Annotated[
        str | None, Field(description="only those citing this DOI, URL or lab node uid")
    ] = None,
    minConfidence: Annotated[
        float | None, Field(ge=0, le=1, description="only those at least this sure")
    ] = None,
) -> PropositionPage:
    """List the recorded propositions in recording order, a page at a time, attributed,
    with the total, optionally only those matching words, citing a source or at least
    as confident. A cursor stays exact while new ones are recorded.

    Next: get_proposition for its relations."""
    return context.propositions.page(
        limit, cursor, query=query, source=source, min_confidence=minConfidence
    )


def connect_propositions(
    context: ToolContext,
    a: EndArg,
    b: EndArg,
    relation: Annotated[
        Literal["supports", "refutes", "extends", "implies", "contradicts"],
        Field(description="a supports / refutes / extends / implies / contradicts b"),
    ],
    reasoning: Annotated[str | None, Field(description="why", max_length=MAX_REASONING)] = None,
    idempotencyKey: IdempotencyKey = None,
) -> ConnectResult:
    """Record a relation a -[relation]-> b between two propositions, or a proposition
    and a lab node (e.g. lab Evidence supports it). Ends must differ; a duplicate is
    recorded once.

    Next: find_contradictions after contradicts or refutes, find_lineage."""
    return context.propositions.connect(a, b, relation, reasoning, key=idempotencyKey)


def find_lineage(
    context: ToolContext,
    fromConcept: Concept,
    toConcept: Concept,
    maxHops: Annotated[int, Field(ge=1, le=MAX_HOPS, description="longest path")] = 6,
) -> LineageResult:
    """Trace how two concepts connect: the shortest chain of relations, either way, over
    propositions, their lab sources and the lab's discourse relations. Words are matched
    to a node (the answer says which); each hop is attributed."""
    return context.paths.find_lineage(fromConcept, toConcept, maxHops)


def find_contradictions(
    context: ToolContext,
    claim: Annotated[
        str,
        Field(
            description="proposition id, lab node uid or claim text",
            max_length=MAX_CONTENT,
        ),
    ],
) -> ContradictionsResult:
    """Find what conflicts with a claim, before relying on it: contradicts, refutes and
    the lab's Opposes relations on it, its lab nodes or similar propositions, with why.

    Report both sides. Next: get_claim_status weighs a lab claim."""
    return context.paths.find_contradictions(claim)


TOOLS = (
    ToolSpec(add_proposition, "Add proposition", WRITE),
    ToolSpec(get_proposition, "Get proposition", READ_ONLY),
    ToolSpec(list_propositions, "List propositions", READ_ONLY),
    ToolSpec(connect_propositions, "Connect propositions", WRITE),
    ToolSpec(find_lineage, "Find lineage", READ_ONLY),
    ToolSpec(find_contradictions, "Find contradictions", READ_ONLY),
)
