"""RDF literal and IRI helpers shared by everything that writes labbrain's own graphs.

Each helper gives one well-typed term: ``xsd:dateTime`` to the millisecond in UTC, ``xsd:decimal``
in positional notation, ``xsd:integer``, plain strings, and fresh IRIs
(a prefix of :mod:`labbrain.rdf.namespaces` and a random hex id).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import quote

from pyoxigraph import Literal, NamedNode

from labbrain.rdf.namespaces import DOI_RESOLVER, XSD


def now() -> datetime:
    """The current time, timezone-aware UTC, to the millisecond."""
    moment = datetime.now(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def canonical_time(moment: datetime) -> str:
    """``moment`` (timezone-aware) in the canonical lexical form of ``xsd:dateTime``: UTC as
    ``Z``, fractional seconds without trailing zeros. Stores that keep a literal as written
    (Virtuoso) and stores that keep its value (Oxigraph) both give this spelling back."""
    base = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return f"{base}.{fraction}Z" if fraction else f"{base}Z"


def timestamp(moment: datetime | None = None) -> Literal:
    """An ``xsd:dateTime`` literal for ``moment`` (default: now), in canonical form."""
    return Literal(canonical_time(moment or now()), datatype=NamedNode(XSD + "dateTime"))


def text(value: str) -> Literal:
    """A plain string literal."""
    return Literal(value)


def number(value: float) -> Literal:
    """An ``xsd:decimal`` literal (for strengths and confidences in 0..1)."""
    # Positional notation always: repr() may give 1e-05, which is not an xsd:decimal.
    return Literal(format(Decimal(repr(float(value))), "f"), datatype=NamedNode(XSD + "decimal"))


def integer(value: int) -> Literal:
    """An ``xsd:integer`` literal."""
    return Literal(str(value), datatype=NamedNode(XSD + "integer"))


def new_iri(prefix: str) -> NamedNode:
    """A fresh IRI ``prefix + <random hex>`` for an agent-written resource (``prefix`` is one
    of :mod:`labbrain.rdf.namespaces`, e.g. ``FINDING_PREFIX``)."""
    return NamedNode(prefix + uuid.uuid4().hex)


#: A DOI written in running text: ``10.<registrant>/<suffix>``, up to white space or a closing
#: bracket, quote or angle bracket (``doi:``, ``https://doi.org/`` before it are left out).
_DOI_IN_TEXT = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>\]\[)(}{|]+")


def dois_in(text: str) -> list[str]:
    """The DOIs written in ``text``, each once, in order, as ``https://doi.org/<doi>`` IRIs
    (a sentence's closing punctuation is not part of the DOI)."""
    found: dict[str, None] = {}
    for match in _DOI_IN_TEXT.finditer(text):
        doi = match.group(0).rstrip(".,;:")
        found.setdefault(DOI_RESOLVER + quote(doi, safe="/:;()._-"), None)
    return list(found)
