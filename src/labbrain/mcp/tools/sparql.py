"""The SPARQL tool: a read-only, capped, time-limited query over every graph of the store.

A thin adapter over :func:`~labbrain.mcp.sandbox.run_query`, which refuses updates and
SERVICE and stops reading rows at the output cap (the server then cuts the answer to fit).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from labbrain.discourse.models import SparqlResult
from labbrain.mcp.common import ToolContext, ToolSpec
from labbrain.mcp.sandbox import run_query


def sparql_query(
    context: ToolContext,
    query: Annotated[
        str,
        Field(
            description="SPARQL 1.1 SELECT, ASK, CONSTRUCT or DESCRIBE; predeclared "
            "prefixes: dg: dgb: lb: dct: sioc: rdfs: owl: prov: xsd:"
        ),
    ],
    limit: Annotated[int, Field(ge=1, le=1000, description="max rows")] = 100,
) -> SparqlResult:
    """Run a read-only SPARQL query over the union of all graphs: nodes are Roam page
    URLs, linked by dg:supports / dg:opposes / lb:informs, with rdfs:label (the clean
    title; dct:title is the source's, with its [[XXX]] prefix), dct:creator, dct:created,
    sioc:content. Rows, size and time are capped; SERVICE is refused.

    Use it only when the other tools cannot answer."""
    return run_query(
        context.brain.store,
        query,
        limit=limit,
        max_chars=context.max_chars,  # stop reading there; the server cuts to fit
        seconds=context.brain.settings.query_timeout_seconds,
    )


TOOLS = (ToolSpec(sparql_query, "SPARQL query"),)
