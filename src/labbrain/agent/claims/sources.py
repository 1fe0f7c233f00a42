"""Where a proposition comes from: a DOI, a web page or a lab node, normalised to one IRI.

An assistant may write a DOI as ``10.1083/jcb.201604065``, ``doi:10.1083/...``, ``DOI: ...``,
``https://doi.org/...``, ``http://dx.doi.org/...`` or ``doi.org/...``: all become
``https://doi.org/<doi>``. An http(s) URL stays as it is. Anything else must be the uid of a
node of a loaded dataset, which is recorded by its Roam URL (and, by the caller, as what the
proposition was derived from).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

from pyoxigraph import NamedNode

from labbrain.agent.claims.models import PropositionSource
from labbrain.discourse.reader import DiscourseReader, node_ref
from labbrain.errors import InvalidArgument, NodeNotFound
from labbrain.index.text import IndexedNode, TextIndex
from labbrain.rdf.namespaces import DOI_RESOLVER

SOURCE_FORMS = (
    "give a DOI (10.1083/jcb.201604065, doi:10.1083/..., https://doi.org/10.1083/...), an "
    "http(s) URL, or the uid of a lab node (search_nodes finds uids)"
)

_DOI_RE = re.compile(r"^10\.\d{4,9}/\S+$")
_DOI_PREFIX_RE = re.compile(r"^(?:doi:\s*|(?:https?://)?(?:dx\.)?doi\.org/)", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s")


@dataclass(frozen=True)
class Source:
    """A normalised proposition source."""

    kind: Literal["doi", "url", "node"]
    iri: str
    doi: str | None = None
    node: IndexedNode | None = None


def normalise_doi(value: str) -> str | None:
    """The DOI in ``value`` (``10.x/y``, ``doi:10.x/y`` or a doi.org URL), or None when
    ``value`` is not written as a DOI. Raises InvalidArgument for a DOI prefix without a DOI."""
    prefix = _DOI_PREFIX_RE.match(value)
    rest = unquote(value[prefix.end() :]) if prefix else value
    if _DOI_RE.match(rest):
        return rest
    if prefix:
        raise InvalidArgument("source", f"{value!r} holds no DOI; {SOURCE_FORMS}")
    return None


def doi_iri(doi: str) -> str:
    """``https://doi.org/<doi>``, with the characters IRIs cannot hold percent-encoded."""
    return DOI_RESOLVER + quote(doi, safe="/:;()[]._-~!$&'*+,=@")


def _url(value: str) -> Source:
    """An http(s) URL as a source; InvalidArgument when it is not a valid IRI."""
    if urlsplit(value).netloc and not _SPACE_RE.search(value):
        try:
            NamedNode(value)
            return Source("url", value)
        except ValueError:
            pass
    raise InvalidArgument("source", f"{value!r} is not a valid URL; {SOURCE_FORMS}")


def normalise_source(value: str | None, reader: DiscourseReader) -> Source | None:
    """A proposition source from what an assistant gave: a DOI in any common spelling becomes
    ``https://doi.org/<doi>``, an http(s) URL stays as is, anything else must be the uid of a
    lab node. None for no source. Raises InvalidArgument naming the accepted forms."""
    given = (value or "").strip()
    if not given:
        return None
    doi = normalise_doi(given)
    if doi is not None:
        return Source("doi", doi_iri(doi), doi=doi)
    if given.lower().startswith(("http://", "https://")):
        return _url(given)
    try:
        node, _ = reader.resolve(given)
    except NodeNotFound:
        raise InvalidArgument(
            "source", f"{given!r} is neither a DOI, a URL nor a known node uid; {SOURCE_FORMS}"
        ) from None
    return Source("node", node.iri, node=node)


def describe_source(iri: str, is_node: bool, index: TextIndex) -> PropositionSource:
    """The answer form of a stored source; a lab node with its attribution (``node`` None
    when no loaded dataset holds it any more)."""
    if is_node:
        found = index.nodes_by_iri([iri]).get(iri)
        return PropositionSource(kind="node", iri=iri, node=node_ref(found) if found else None)
    if iri.startswith(DOI_RESOLVER):
        return PropositionSource(kind="doi", iri=iri, doi=unquote(iri.removeprefix(DOI_RESOLVER)))
    return PropositionSource(kind="url", iri=iri)
