"""The web console at ``/``: a page for people to write SPARQL, run it and download results.

The page, its script and its style ship inside the package (``labbrain/web``); nothing is
fetched from anywhere else, so it works offline, and its Content-Security-Policy allows only
this server. ``/console/config`` tells the page the predeclared prefixes, the example queries
(the SPARQL templates marked ``# example: yes``, meant for people, by their ``# title:``), the
one the editor starts with, the graphs and the endpoint's limits.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from labbrain.http.errors import HttpError
from labbrain.http.sparql import Endpoint
from labbrain.rdf.namespaces import PREFIXES
from labbrain.store.templates import templates
from labbrain.store.threads import confined

#: The files of the page, by the name they are served under, with their media types.
ASSETS = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}

#: The example the editor starts with when the page has no query of its own.
DEFAULT_EXAMPLE = "nodes_by_type"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@lru_cache(maxsize=8)
def asset(name: str) -> bytes:
    """A file of the page, read from the installed package."""
    return resources.files("labbrain.http").joinpath("web", name).read_bytes()


def examples() -> list[dict[str, str]]:
    """The SPARQL templates meant for people (``# example: yes``) that run without arguments
    (every parameter optional), as name, title, description and query text, sorted by
    title."""
    found = [
        {
            "name": tmpl.name,
            "title": tmpl.title or tmpl.name,
            "description": tmpl.description,
            "query": tmpl.text,
        }
        for tmpl in templates().values()
        if tmpl.example and not any(param.required for param in tmpl.parameters.values())
    ]
    return sorted(found, key=lambda example: example["title"].lower())


async def page(request: Request) -> Response:
    """The console page."""
    return Response(asset("index.html"), media_type="text/html", headers=SECURITY_HEADERS)


async def static(request: Request) -> Response:
    """The page's script, style and icon."""
    name = request.path_params["name"]
    if name not in ASSETS:
        raise HttpError(404, "NotFound", f"no file {name!r} here")
    response = Response(asset(name), headers=SECURITY_HEADERS)
    response.headers["Content-Type"] = ASSETS[name]
    return response


async def config(request: Request) -> Response:
    """What the page needs to know: prefixes, examples, graphs, limits."""
    endpoint: Endpoint = request.app.state.endpoint
    graphs = await anyio.to_thread.run_sync(confined(endpoint.brain.store.graphs))
    body: dict[str, Any] = {
        "endpoint": "sparql",
        "graphStore": "rdf-graphs",
        "prefixes": PREFIXES,
        "examples": examples(),
        "defaultExample": DEFAULT_EXAMPLE,
        "graphs": graphs,
        "maxRows": endpoint.max_rows,
        "timeoutSeconds": endpoint.timeout_seconds,
        "allowUpdate": endpoint.allow_update,
    }
    return JSONResponse(body, headers={"Cache-Control": "no-store"})
