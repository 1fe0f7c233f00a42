"""The people map: the display names exports carry, resolved to ORCID iDs.

Roam and Obsidian exports name a node's creator by display name only; a nanopublication or an
RO-Crate names a person by ORCID. The map is kept in the store (graph
:data:`~labbrain.rdf.namespaces.PEOPLE_GRAPH`), one person per name, so that every export and
bundle resolves the same way and a backup keeps it::

    <urn:labbrain:person:<digest of the name>> a prov:Person ;
        foaf:name "Display Name" ; lb:orcid <https://orcid.org/0000-0002-1825-0097> .

Names match as the export spells them, with runs of white space read as one space and case
ignored. An ORCID iD is accepted bare (``0000-0002-1825-0097``) or as its IRI, and its check
digit (ISO 7064 11,2) must hold, so a mistyped iD is refused rather than published.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad

from labbrain.errors import InputError, InvalidArgument
from labbrain.rdf.namespaces import FOAF, LB, ORCID_RESOLVER, PEOPLE_GRAPH, PERSON_PREFIX, PROV, RDF
from labbrain.store.base import QuadStore

_ORCID_RE = re.compile(r"^(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])/?$")
_NAME = NamedNode(FOAF + "name")
_ORCID = NamedNode(LB + "orcid")
_GRAPH = NamedNode(PEOPLE_GRAPH)
#: Longest display name kept (names come from exports; a longer one is not a name).
MAX_NAME = 300


def orcid_iri(value: str) -> str:
    """The ORCID IRI (``https://orcid.org/<iD>``) of an iD given bare or as an IRI.

    Raises InvalidArgument when it is not an ORCID iD or its check digit is wrong."""
    found = _ORCID_RE.match(value.strip())
    if not found:
        raise InvalidArgument("orcid", f"{value!r} is not an ORCID iD (like 0000-0002-1825-0097)")
    ident = found.group(1)
    if _check_digit(ident[:-1].replace("-", "")) != ident[-1]:
        raise InvalidArgument("orcid", f"{ident} has a wrong check digit; copy it again")
    return ORCID_RESOLVER + ident


def _check_digit(digits: str) -> str:
    """The ISO 7064 11,2 check character of the first 15 digits of an ORCID iD."""
    total = 0
    for digit in digits:
        total = (total + int(digit)) * 2
    result = (12 - total % 11) % 11
    return "X" if result == 10 else str(result)


def normal_name(name: str) -> str:
    """A name as it is matched: white space collapsed, case folded."""
    return " ".join(name.split()).casefold()


def _clean_name(name: str) -> str:
    """A display name as kept, or InvalidArgument when it is empty or too long."""
    clean = " ".join(name.split())
    if not clean:
        raise InvalidArgument("name", "a person's name cannot be empty")
    if len(clean) > MAX_NAME:
        raise InvalidArgument("name", f"longer than {MAX_NAME} characters")
    return clean


def _value(term: object) -> str:
    """The lexical value of an IRI or literal."""
    return term.value if isinstance(term, NamedNode | Literal) else str(term)


def _person(name: str) -> NamedNode:
    digest = hashlib.sha256(normal_name(name).encode("utf-8")).hexdigest()[:24]
    return NamedNode(PERSON_PREFIX + digest)


class People:
    """The people map of one store. Every change is one transaction."""

    def __init__(self, store: QuadStore) -> None:
        self.store = store

    def all(self) -> dict[str, str]:
        """Every display name (as last set) with its ORCID IRI, sorted by name."""
        names: dict[str, str] = {}
        orcids: dict[str, str] = {}
        for quad in self.store.quads(PEOPLE_GRAPH):
            subject, value = str(quad.subject), _value(quad.object)
            if quad.predicate == _NAME:
                names[subject] = value
            elif quad.predicate == _ORCID:
                orcids[subject] = value
        pairs = {names[s]: orcids[s] for s in names if s in orcids}
        return dict(sorted(pairs.items(), key=lambda pair: normal_name(pair[0])))

    def orcid(self, name: str) -> str | None:
        """The ORCID IRI of the person with this display name, None when unknown."""
        if not name.strip():
            return None
        person = _person(name)
        for quad in self.store.quads(PEOPLE_GRAPH, person, _ORCID):
            return _value(quad.object)
        return None

    def resolve(self, names: Iterable[str]) -> dict[str, str | None]:
        """Each of ``names`` with its ORCID IRI or None, read in one pass."""
        known = {normal_name(name): orcid for name, orcid in self.all().items()}
        return {name: known.get(normal_name(name)) for name in names}

    def set(self, name: str, orcid: str) -> str:
        """Map ``name`` to ``orcid`` (replacing what it had); returns the ORCID IRI."""
        return self.set_many({name: orcid})[_clean_name(name)]

    def set_many(self, pairs: Mapping[str, str]) -> dict[str, str]:
        """Map every name to its ORCID in one transaction; all are checked before any is
        written. Returns each (cleaned) name with its ORCID IRI."""
        checked = {_clean_name(name): orcid_iri(orcid) for name, orcid in pairs.items()}
        remove: list[Quad] = []
        add: list[Quad] = []
        for name, iri in checked.items():
            person = _person(name)
            remove.extend(self.store.quads(PEOPLE_GRAPH, person))
            add.extend(
                (
                    Quad(person, NamedNode(RDF + "type"), NamedNode(PROV + "Person"), _GRAPH),
                    Quad(person, _NAME, Literal(name), _GRAPH),
                    Quad(person, _ORCID, NamedNode(iri), _GRAPH),
                )
            )
        self.store.apply(remove, add)
        return checked

    def remove(self, name: str) -> bool:
        """Forget ``name``; False when it was not in the map."""
        old = list(self.store.quads(PEOPLE_GRAPH, _person(name)))
        if old:
            self.store.apply(old, [])
        return bool(old)


def read_people_file(path: str | Path) -> dict[str, str]:
    """Name -> ORCID pairs from a file: JSON (an object of name to iD, or a list of objects
    with ``name`` and ``orcid``) or CSV (columns ``name`` and ``orcid``, a header row first).

    Raises InputError naming the file and the row or entry that is wrong."""
    label = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{label}: cannot read it: {error}") from None
    if label.lower().endswith(".json"):
        return _json_people(text, label)
    return _csv_people(text, label)


def _json_people(text: str, label: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{label}: not JSON ({error})") from None
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return dict(data)
    if isinstance(data, list):
        pairs: dict[str, str] = {}
        for index, entry in enumerate(data):
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("orcid"), str)
            ):
                raise InputError(f"{label}: entry {index} needs string fields name and orcid")
            pairs[entry["name"]] = entry["orcid"]
        return pairs
    raise InputError(
        f"{label}: expected an object of name to ORCID iD, or a list of {{name, orcid}}"
    )


def _csv_people(text: str, label: str) -> dict[str, str]:
    rows = csv.DictReader(io.StringIO(text))
    if not rows.fieldnames or not {"name", "orcid"} <= {f.strip() for f in rows.fieldnames}:
        raise InputError(f"{label}: the first row must name the columns name and orcid")
    pairs: dict[str, str] = {}
    for number, row in enumerate(rows, start=2):
        clean = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        if not clean.get("name") or not clean.get("orcid"):
            raise InputError(f"{label}: line {number} needs a name and an orcid")
        pairs[clean["name"]] = clean["orcid"]
    return pairs
