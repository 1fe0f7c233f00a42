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
from labbrain.rdf.namespaces import PROPOSITION_PREFIX

PropositionId = Annotated[
    str,
    Field(description=f"a proposition id, {PROPOSITION_PREFIX}... (list_propositions)"),
]
EndArg = Annotated[
    str,
    Field(
        description=f"a proposition id ({PROPOSITION_PREFIX}...) or the uid of a lab node "
        "(search_nodes finds uids)"
    ),
]
Concept = Annotated[
    str,
    Field(
        description="words to search propositions and lab nodes for, or a proposition id, or "
        "a lab node uid"
    ),
]


def add_proposition(
    context: ToolContext,
    content: Annotated[
        str,
        Field(
            description="one atomic claim, one sentence, e.g. 'Arp2/3 inhibition slows "
            "clathrin-coated pit maturation'",
            max_length=MAX_CONTENT,
        ),
    ],
    confidence: Annotated[float, Field(ge=0, le=1, description="how sure you are, from 0 to 1")],
    source: Annotated[
        str | None,
        Field(
            description="where it comes from: a DOI (10.xxxx/..., doi:10.xxxx/..., "
            "https://doi.org/10.xxxx/...), an http(s) URL, or the uid of a lab node"
        ),
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> AddPropositionResult:
    """Record an atomic claim (a proposition) with its confidence and, optionally, its
    source. A DOI in any common spelling is stored as https://doi.org/<doi>; a lab node
    uid is answered with the node's attribution and recorded as what the proposition was
    derived from; anything else is refused with the accepted forms.

    Use it for a claim you want to keep, relate and check later; pass an
    idempotencyKey to make a retry safe. Returns the proposition with its id. Next:
    connect_propositions to relate it to other propositions or to lab evidence,
    find_contradictions to see what conflicts with it."""
    return context.propositions.add(content, confidence, source, key=idempotencyKey)


def get_proposition(context: ToolContext, id: PropositionId) -> PropositionDetail:
    """Read one proposition: its content, confidence, source (a lab source with its
    attribution), who recorded it and when, and every relation in both directions
    (outgoing: from it; incoming: to it), each end a proposition or an attributed lab
    node, with the reasoning given.

    Use it after list_propositions or add_proposition. Next: find_lineage or
    find_contradictions; get_node reads a lab node in full."""
    return context.propositions.get(id)


def list_propositions(
    context: ToolContext,
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="at most this many per page")] = 20,
    cursor: Annotated[
        str | None, Field(description="nextCursor of the previous page; omit for the first")
    ] = None,
) -> PropositionPage:
    """List the recorded propositions in the order they were recorded, a page at a
    time, each with content, confidence, source and attribution, plus the total.

    Pass the answer's nextCursor as cursor to read the next page: it continues exactly
    after the last proposition shown, even when new ones were recorded meanwhile (they
    come at the end). Next: get_proposition for one proposition's relations."""
    return context.propositions.page(limit, cursor)


def connect_propositions(
    context: ToolContext,
    a: EndArg,
    b: EndArg,
    relation: Annotated[
        Literal["supports", "refutes", "extends", "implies", "contradicts"],
        Field(
            description="how a relates to b: a supports / refutes / extends / implies b, "
            "or a contradicts b"
        ),
    ],
    reasoning: Annotated[
        str | None, Field(description="why a relates to b", max_length=MAX_REASONING)
    ] = None,
    idempotencyKey: IdempotencyKey = None,
) -> ConnectResult:
    """Record a typed relation a -[relation]-> b between two propositions, or between a
    proposition and a lab node (so a proposition can be supported by the lab's
    Evidence or refute a lab Claim). Both ends must exist and differ; at least one must
    be a proposition. An identical relation is not recorded twice.

    Returns the relation with both ends attributed. Next: find_contradictions after a
    contradicts or refutes relation, find_lineage to trace how claims connect."""
    return context.propositions.connect(a, b, relation, reasoning, key=idempotencyKey)


def find_lineage(
    context: ToolContext,
    fromConcept: Concept,
    toConcept: Concept,
    maxHops: Annotated[int, Field(ge=1, le=MAX_HOPS, description="longest path to look for")] = 6,
) -> LineageResult:
    """Trace how two concepts connect: the shortest chain of typed relations between
    them over recorded proposition relations, propositions' lab sources and the lab's
    discourse relations (Supports, Opposes, Informs, ...), walked in either direction.

    A concept is a proposition id, a lab node uid, or words: words are matched against
    propositions and lab nodes, and the answer says which node each concept was taken
    as and why. Every hop names its relation, direction and attributed ends."""
    return context.paths.find_lineage(fromConcept, toConcept, maxHops)


def find_contradictions(
    context: ToolContext,
    claim: Annotated[
        str,
        Field(
            description="a proposition id, a lab node uid, or the text of a claim",
            max_length=MAX_CONTENT,
        ),
    ],
) -> ContradictionsResult:
    """Find what conflicts with a claim: recorded contradicts / refutes relations on
    it, Opposes relations of the lab's graph on it (or on the lab nodes a proposition
    rests on), and opposing relations on similar propositions. Each result says why it
    was reported and through which node.

    Use it before relying on a claim, and after recording a contradicts or refutes
    relation. Report both sides with their attribution; get_claim_status weighs a
    lab claim's evidence."""
    return context.paths.find_contradictions(claim)


TOOLS = (
    ToolSpec(add_proposition, "Add proposition", WRITE),
    ToolSpec(get_proposition, "Get proposition", READ_ONLY),
    ToolSpec(list_propositions, "List propositions", READ_ONLY),
    ToolSpec(connect_propositions, "Connect propositions", WRITE),
    ToolSpec(find_lineage, "Find lineage", READ_ONLY),
    ToolSpec(find_contradictions, "Find contradictions", READ_ONLY),
)
