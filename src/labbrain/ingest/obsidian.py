"""Reading an Obsidian vault kept by the Discourse Graphs plugin as a discourse graph.

:func:`read_vault` walks a vault (``../shared/obsidian-dg-format.md`` describes the format, as
the plugin's code writes it) and gives the graph it holds in the shape of a Roam export (node
schemas, relation definitions, page nodes, relation instances), so that it goes through the
same analysis, derived triples and indexes as a Roam export and every tool answers the same.
What a Roam export cannot say travels as labbrain's own terms on the same entries (``lb:``):
a node's ``nodeInstanceId``, the RID it was imported from, its path in the vault, times taken
from the file system, a tentative (imported, not accepted) relation, a relation whose
direction was inferred from a legacy frontmatter link.

Identity: a node's IRI is ``urn:labbrain:obsidian:<space>/node/<uid>``, where ``<space>`` is
the vault's ``accountLocalId`` (kept by the plugin in its settings, so renaming the vault's
folder changes nothing), else the folder's name as a slug; ``<uid>`` is the note's
``nodeInstanceId``, or for a note without one ``p-`` and the first 20 hex digits of the SHA-256
of its path in the vault (nothing can point at such a note; moving it changes its IRI). The
same node imported into two labs' vaults has the same uid in both (its ``nodeInstanceId``),
and its ``importedFromRid`` as ``lb:importedFrom``.

Reported, never guessed (:attr:`VaultRead.problems`): notes whose YAML does not parse (file and
line), notes of a node type the settings no longer have, dangling relations (an end that is no
note of the vault, or only one in ``.trash/``), relation types that no longer exist, duplicate
relations, relations matching no allowed triple (kept), symbolic links (never followed). The
settings' sync secret (``spacePassword``) is never read. A relations file that is not JSON
stops the load (:class:`~labbrain.errors.ExportFormatError`): loading without it would lose
every relation the store holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import yaml

from labbrain.errors import ExportFormatError, UnusablePath
from labbrain.ingest.jsonld import EXPORT_CONTEXT, JsonInput, document_input
from labbrain.rdf.namespaces import LB, slugify

#: The plugin's settings, under the vault's config folder.
SETTINGS_GLOB = "plugins/*/data.json"
PLUGIN_FOLDER = "discourse-graphs"
RELATIONS_FILE = "relations.json"
#: A frontmatter larger than this is reported and the note skipped (YAML is slow and a
#: hostile vault could make it huge).
MAX_FRONTMATTER_BYTES = 1 << 20
#: YAML aliases allowed in one frontmatter: a few are normal, thousands are a "YAML bomb".
MAX_YAML_ALIASES = 100
#: Problems listed one by one in a report (the rest are counted).
MAX_LISTED = 20
#: What an endpoint id must look like to be a bare nodeInstanceId (relationsStore.looksLikeRid).
_PLAIN_ID = re.compile(r"^[-.+\w]+$")
_RID = (
    re.compile(r"^orn:(\w+)\.(\w+):(.*)/([^/]+)$"),
    re.compile(r"^orn:(\w+):(.*)/([^/]+)$"),
)
_EMBED = re.compile(r"!\[\[([^\]|#\n]+)(?:[#|][^\]\n]*)?\]\]")
_LINK = re.compile(r"(?<!!)\[\[([^\]|#\n]+)(?:[#|][^\]\n]*)?\]\]")
_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".avif", ".tif"}


@dataclass
class Note:
    """A node note of the vault, as read (:func:`read_vault` sets ``uid`` anew at each read:
    two notes with one nodeInstanceId make one of them take a path-derived uid)."""

    path: str  # relative to the vault, with "/"
    uid: str
    type_id: str
    title: str
    body: str
    instance_id: str | None
    imported_rid: str | None
    imported: bool
    author_id: Any
    last_modified: Any
    mtime: float
    birthtime: float | None
    frontmatter: dict[str, Any]
    #: The wikilinks and embeds of the body, as written (read once with the note).
    links: list[str] = field(default_factory=list)
    embeds: list[str] = field(default_factory=list)


@dataclass
class VaultRead:
    """A vault read as an export-shaped document, with what was found wrong in it."""

    document: dict[str, Any]
    slug: str
    space: str
    #: SHA-256 over every file the graph was read from (path, content, file times): equal
    #: for equal vaults, without serialising the document.
    digest: str = ""
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    nodes: int = 0
    relations: int = 0
    tentative: int = 0
    #: What :func:`reread_notes` needs to read some notes again (None: read whole).
    parts: _Parts | None = field(default=None, repr=False, compare=False)
    #: For a read by :func:`reread_notes`: the node entries it made anew (the rest of the
    #: document is the previous read's, the same objects).
    rewritten: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    def data(self) -> bytes:
        """The document as JSON bytes (the same vault gives the same bytes: the reader makes
        the document in one order)."""
        return self.json_input("").data or b""

    def json_input(self, label: str) -> JsonInput:
        """The document as a decoded JSON input (its bytes, and the span of its ``@graph``),
        for a load to take as it is instead of decoding the bytes again."""
        return document_input(self.document, label)


@dataclass
class _Parts:
    """How a read made its document: enough to make the entries of some notes again."""

    vault: Path
    files: FileHash
    #: Each node note by path, with the place of its entry in the document's ``@graph``.
    notes: dict[str, tuple[Note, int]]
    node_iri: dict[str, str]
    schema_iris: dict[str, str]
    owner: str | None
    user_names: dict[str, Any]
    titles: dict[str, Note]
    types: dict[str, dict[str, Any]]
    relation_type_ids: set[str]


class _Problems:
    """Problems counted by kind, with the first few of each kind spelled out."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}

    def add(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        listed = self.examples.setdefault(kind, [])
        if len(listed) < 3:
            listed.append(example)

    def lines(self) -> list[str]:
        out = []
        for kind, count in self.counts.items():
            examples = "; ".join(self.examples[kind])
            more = f" (and {count - 3} more)" if count > 3 else ""
            out.append(f"{count} {kind}: {examples}{more}")
        return out


# ------------------------------------------------------------------------------- finding
class FileHash:
    """A digest of a set of lines (one per file read): the sum of their SHA-256 values, so
    that one line can be taken out and another put in without the others."""

    def __init__(self, total: int = 0) -> None:
        self.total = total
        #: The value of each line given a key (a note's path).
        self.lines: dict[str, int] = {}

    @staticmethod
    def value(line: bytes) -> int:
        return int.from_bytes(hashlib.sha256(line).digest(), "big")

    def update(self, line: bytes, key: str | None = None) -> None:
        value = self.value(line)
        self.total = (self.total + value) % _MODULUS
        if key is not None:
            self.lines[key] = value

    def replace(self, key: str, line: bytes) -> None:
        """Take ``key``'s line out and put ``line`` in its place."""
        self.total = (self.total - self.lines[key]) % _MODULUS
        self.update(line, key)

    def hexdigest(self) -> str:
        return f"{self.total:064x}"


_MODULUS = 1 << 256


#: A file changed this recently (ns) may change again within the same file-time tick, with
#: the same size: what is read from it is not reused (as git treats "racy" entries).
_RACY_NS = 2_000_000_000


@dataclass
class _Read:
    stamp: tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
    value: Any
    digest: str
    problem: tuple[str, str] | None = None


class ReadCache:
    """What :func:`read_vault` read from each file, by path: a file whose size, times and
    inode are as they were (and that did not change within the last two seconds of being
    read) is not read or parsed again. For a caller that reads one vault again and again (a
    watched vault): only the files that changed cost anything. Not thread-safe: one reader."""

    def __init__(self) -> None:
        self._reads: dict[str, _Read] = {}
        self._seen: set[str] = set()
        self._reading_as: Any = None
        #: The document entries made at the last read, by what they were made from: an
        #: unchanged note or relation gives the same entry object again.
        self.entries: dict[Any, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self._made: dict[Any, tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def entry(
        self, key: Any, inputs: tuple[Any, ...], make: Callable[..., dict[str, Any]], *args: Any
    ) -> dict[str, Any]:
        """The entry ``make(*args)`` makes from ``inputs``: the one made at the last read when
        ``key`` had equal inputs then."""
        known = self.entries.get(key)
        entry = known[1] if known is not None and known[0] == inputs else make(*args)
        self._made[key] = (inputs, entry)
        return entry

    def read_done(self) -> None:
        """End of one read: drop what it did not come across (deleted files, entries)."""
        for path in set(self._reads) - self._seen:
            del self._reads[path]
        self._seen = set()
        self.entries, self._made = self._made, {}

    def reading_as(self, how: Any) -> None:
        """What the notes are read with (node types, size limit): when it changes, nothing
        read before is reused."""
        if how != self._reading_as:
            self._reads.clear()
            self.entries.clear()
            self._reading_as = how

    def get(self, path: str, info: os.stat_result) -> _Read | None:
        self._seen.add(path)
        found = self._reads.get(path)
        return found if found is not None and found.stamp == _stamp(info) else None

    def put(self, path: str, info: os.stat_result, value: Any, digest: str, problem: Any) -> _Read:
        read = _Read(_stamp(info), value, digest, problem)
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) > _RACY_NS:
            self._reads[path] = read
        else:
            self._reads.pop(path, None)
        return read


def _stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def config_folder(vault: Path) -> Path:
    """The vault's Obsidian config folder (``.obsidian``)."""
    return vault / ".obsidian"


def settings_file(vault: Path) -> Path | None:
    """The Discourse Graphs plugin's settings of ``vault``: the plugin's own folder first,
    else any plugin ``data.json`` with the plugin's three arrays; None when there is none."""
    config = config_folder(vault)
    preferred = config / "plugins" / PLUGIN_FOLDER / "data.json"
    candidates = [preferred, *sorted(config.glob(SETTINGS_GLOB))]
    for candidate in candidates:
        if not candidate.is_file() or candidate.is_symlink():
            continue
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and all(
            isinstance(data.get(key), list)
            for key in ("nodeTypes", "relationTypes", "discourseRelations")
        ):
            return candidate
    return None


def is_vault(path: Path) -> bool:
    """True when ``path`` is a directory holding the Discourse Graphs plugin's settings."""
    return path.is_dir() and settings_file(path) is not None


# ------------------------------------------------------------------------------- reading
def read_vault(path: str, *, max_bytes: int, cache: ReadCache | None = None) -> VaultRead:
    """Read the vault at ``path`` (see the module's doc). ``max_bytes`` bounds one note;
    ``cache`` keeps what was read for the next read of the same vault.

    Raises UnusablePath when it is no vault, ExportFormatError when its settings or a
    relations file cannot be read as JSON (naming the file and line)."""
    vault = Path(path)
    cache = cache if cache is not None else ReadCache()
    files = FileHash()
    found = settings_file(vault)
    if found is None:
        raise UnusablePath(
            path,
            "is a directory but not a Discourse Graphs vault (no "
            ".obsidian/plugins/discourse-graphs/data.json); load the files in it instead",
        )
    settings = _json_file(found, vault, cache, files)
    problems = _Problems()
    space = _space(settings, vault)
    base = f"urn:labbrain:obsidian:{space}/"
    types = _by_id(settings.get("nodeTypes"), "name")
    relation_types = _by_id(settings.get("relationTypes"), "label")
    cache.reading_as((sorted(types), max_bytes))
    triples = [
        t
        for t in settings.get("discourseRelations") or []
        if isinstance(t, dict) and isinstance(t.get("id"), str)
    ]
    # The owner's name as the plugin gives it: the username, else the vault's folder name.
    owner = _text(settings.get("username")) or vault.resolve().name
    names = settings.get("userNames")
    user_names: dict[str, Any] = names if isinstance(names, dict) else {}

    notes, trashed, relation_files = _walk(vault, types, problems, max_bytes, cache, files)
    by_instance: dict[str, Note] = {}
    by_rid: dict[str, Note] = {}
    local_by_instance: dict[str, Note] = {}
    for note in notes:
        if note.instance_id is not None:
            holder = by_instance.get(note.instance_id)
            if holder is not None and _clash_winner(holder, note) is holder:
                problems.add(
                    "notes share a nodeInstanceId (the other one is identified by its path)",
                    f"{note.path} and {holder.path}",
                )
                note.uid = _path_uid(note.path)
            else:
                if holder is not None:
                    problems.add(
                        "notes share a nodeInstanceId (the other one is identified by its path)",
                        f"{holder.path} and {note.path}",
                    )
                    holder.uid = _path_uid(holder.path)
                by_instance[note.instance_id] = note
                if not note.imported:
                    local_by_instance[note.instance_id] = note
        if note.imported_rid:
            by_rid.setdefault(note.imported_rid, note)

    graph: list[dict[str, Any]] = []
    schema_iris = {type_id: base + "type/" + _safe(type_id) for type_id in types}
    for type_id, node_type in types.items():
        graph.append(
            _schema_entry(schema_iris[type_id], node_type, owner, user_names, "nodeSchema")
        )
    # One relation definition per allowed triple (as Roam has), and one per relation type
    # for relations that fit none of them.
    definitions: dict[tuple[str, str, str], str] = {}
    for triple in triples:
        rel_type = relation_types.get(str(triple.get("relationshipTypeId")))
        source, destination = triple.get("sourceId"), triple.get("destinationId")
        if rel_type is None or source not in types or destination not in types:
            continue
        iri = base + "relation/" + _safe(triple["id"])
        key = (str(source), rel_type["id"], str(destination))
        if key in definitions:
            continue
        definitions[key] = iri
        graph += _relation_defs(
            iri, rel_type, schema_iris[str(source)], schema_iris[str(destination)]
        )
    loose: dict[str, str] = {}

    def definition(rel_type: dict[str, Any], source: Note, destination: Note) -> str:
        key = (source.type_id, rel_type["id"], destination.type_id)
        if key in definitions:
            return definitions[key]
        problems.add(
            "relations match no allowed triple of the settings (kept)",
            f"{source.title} {rel_type['label']} {destination.title}",
        )
        if rel_type["id"] not in loose:
            iri = loose[rel_type["id"]] = base + "relation-type/" + _safe(rel_type["id"])
            graph.extend(_relation_defs(iri, rel_type, None, None))
        return loose[rel_type["id"]]

    def resolve(endpoint: Any) -> Note | None:
        if not isinstance(endpoint, str) or not endpoint:
            return None
        note = by_instance.get(endpoint) or by_rid.get(endpoint)
        if note is not None:
            return note
        if "orn:" in endpoint or ("/" in endpoint and not _PLAIN_ID.match(endpoint)):
            return local_by_instance.get(_rid_local_id(endpoint))
        return None

    titles = _link_targets(notes)
    node_iri = {note.uid: base + "node/" + note.uid for note in notes}
    entries: dict[str, dict[str, Any]] = {}
    for note in notes:
        entries[note.path] = _node_entry(
            note,
            node_iri[note.uid],
            schema_iris[note.type_id],
            owner,
            user_names,
            titles,
            vault,
            cache,
        )
        graph.append(entries[note.path])

    relations = _merge_relations(relation_files, vault, cache, files)
    cache.read_done()
    # Each relation whose ends are notes of the vault; of two with one type, source and
    # destination, the accepted one (an imported copy may sit beside the local relation).
    candidates: list[tuple[str, dict[str, Any], dict[str, Any], Note, Note, bool]] = []
    chosen: dict[tuple[str, str, str], int] = {}
    for rid, relation in relations.items():
        rel_type = relation_types.get(str(relation.get("type")))
        if rel_type is None:
            problems.add(
                "relations of a type the settings no longer have (skipped)",
                f"{rid} (type {relation.get('type')})",
            )
            continue
        source, destination = resolve(relation.get("source")), resolve(relation.get("destination"))
        if source is None or destination is None:
            missing = relation.get("source") if source is None else relation.get("destination")
            where = " (only in .trash)" if str(missing) in trashed else ""
            problems.add(
                "dangling relations (an end is no note of the vault; skipped)",
                f"{rid}: {missing}{where}",
            )
            continue
        along = (source.type_id, rel_type["id"], destination.type_id) in definitions
        against = (destination.type_id, rel_type["id"], source.type_id) in definitions
        reversed_ = against and not along
        if reversed_:
            # Drawn on a canvas against the allowed direction: the canvas shows it the
            # other way round (with the complement label) but stores it as drawn.
            problems.add(
                "relations stored against their allowed direction (loaded the other way "
                "round, as the plugin shows them)",
                f"{rid}: {source.title} {rel_type['label']} {destination.title}",
            )
            source, destination = destination, source
        key = (rel_type["id"], source.uid, destination.uid)
        if key in chosen:
            problems.add("duplicate relations (loaded once)", f"{rid}")
            if (
                relation.get("tentative") is not False
                and candidates[chosen[key]][1].get("tentative") is False
            ):
                chosen[key] = len(candidates)  # the accepted one over a tentative copy
        else:
            chosen[key] = len(candidates)
        candidates.append((rid, relation, rel_type, source, destination, reversed_))
    seen = set(chosen)
    accepted = tentative = 0
    for rid, relation, rel_type, source, destination, reversed_ in (
        candidates[index] for index in sorted(chosen.values())
    ):
        predicate = definition(rel_type, source, destination)
        ends = (node_iri[source.uid], node_iri[destination.uid])
        entry = cache.entry(
            ("relation", rid),
            (relation, predicate, *ends, base, user_names, owner, reversed_),
            _relation_entry,
            *(relation, predicate, *ends, base, rid, user_names, owner, reversed_),
        )
        if relation.get("tentative") is False:  # the plugin's inverted flag: not accepted
            tentative += 1
        else:
            accepted += 1
        graph.append(entry)

    legacy = _legacy_relations(notes, relation_types, triples, titles, problems)
    for rel_type, source, destination, inferred in legacy:
        key = (rel_type["id"], source.uid, destination.uid)
        if key in seen or (rel_type["id"], destination.uid, source.uid) in seen:
            continue
        seen.add(key)
        entry = {
            "@type": "relationInstance",
            "predicate": definition(rel_type, source, destination),
            "source": node_iri[source.uid],
            "destination": node_iri[destination.uid],
        }
        if inferred:
            entry[LB + "legacyDirectionInferred"] = True
        graph.append(entry)
        accepted += 1
    if legacy:
        problems.add(
            "relations read from legacy frontmatter lists (plugin 0.4 and older)",
            f"{len(legacy)} link(s); direction inferred from the allowed triples",
        )

    read = VaultRead(
        document={
            "@context": {**EXPORT_CONTEXT, "pages": base + "node/"},
            "@id": base.rstrip("/"),
            "@graph": graph,
        },
        slug=slugify(vault.resolve().name) or "vault",
        space=space,
        digest=files.hexdigest(),
        nodes=len(notes),
        relations=accepted,
        tentative=tentative,
    )
    read.problems = problems.lines()
    places = {id(entry): index for index, entry in enumerate(graph)}
    read.parts = _Parts(
        vault=vault,
        files=files,
        notes={note.path: (note, places[id(entries[note.path])]) for note in notes},
        node_iri=node_iri,
        schema_iris=schema_iris,
        owner=owner,
        user_names=user_names,
        titles=titles,
        types=types,
        relation_type_ids=set(relation_types),
    )
    if tentative:
        read.notices.append(
            f"{tentative} tentative relation(s) (imported, not accepted in Obsidian) loaded as "
            "lb:TentativeRelation, not counted as relations until accepted"
        )
    return read


def _json_file(path: Path, vault: Path, cache: ReadCache, files: FileHash) -> dict[str, Any]:
    """A JSON object file of the vault; ExportFormatError (file and line) when it is not.
    Its path and content go into ``files`` (a hash)."""
    shown = str(path.relative_to(vault)) if path.is_relative_to(vault) else str(path)
    try:
        info = path.stat()
        known = cache.get(str(path), info)
        if known is None:
            raw = path.read_bytes()
            value = json.loads(raw.decode("utf-8"))
            known = cache.put(str(path), info, value, hashlib.sha256(raw).hexdigest(), None)
        files.update(f"{shown}\0{known.digest}\n".encode())
        data = known.value
    except json.JSONDecodeError as error:
        raise ExportFormatError(
            shown, f"not JSON ({error.msg}, line {error.lineno}); fix or restore the file"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ExportFormatError(shown, f"cannot be read ({error})") from None
    if not isinstance(data, dict):
        raise ExportFormatError(shown, "is not a JSON object")
    return data


def _space(settings: dict[str, Any], vault: Path) -> str:
    local_id = settings.get("accountLocalId")
    if isinstance(local_id, str) and re.fullmatch(r"[A-Za-z0-9]+", local_id):
        return local_id
    return slugify(vault.resolve().name) or "vault"


def _by_id(items: Any, name_key: str) -> dict[str, dict[str, Any]]:
    """Settings items by id (items without an id or a name are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and isinstance(item.get("id"), str)
            and isinstance(item.get(name_key), str)
            and item[name_key].strip()
        ):
            out.setdefault(item["id"], item)
    return out


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _safe(text: str) -> str:
    """``text`` as one IRI path segment."""
    return quote(text, safe="-._~")


def _path_uid(path: str) -> str:
    return "p-" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:20]


def _rid_local_id(rid: str) -> str:
    for pattern in _RID:
        match = pattern.match(rid)
        if match:
            return match.groups()[-1]
    return rid.rsplit("/", 1)[-1]


def _clash_winner(first: Note, second: Note) -> Note:
    """Of two notes with one nodeInstanceId, the one that keeps it: a local note over an
    imported copy, else the older file (a copy is made later), else the first by path."""
    return min((first, second), key=lambda n: (n.imported, n.birthtime or n.mtime, n.path))


def _millis(value: Any) -> str | None:
    """Epoch milliseconds as an ISO time (UTC, milliseconds, ``Z``), None if not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        moment = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _person(author_id: Any, user_names: dict[str, Any]) -> str | None:
    if isinstance(author_id, bool) or not isinstance(author_id, int | str) or author_id == "":
        return None
    name = user_names.get(str(author_id))
    return name if isinstance(name, str) and name.strip() else f"user {author_id}"


def _schema_entry(
    iri: str, item: dict[str, Any], owner: str | None, users: dict[str, Any], kind: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {"@id": iri, "@type": kind, "label": item["name"]}
    creator = _person(item.get("authorId"), users) or owner
    if creator:
        entry["creator"] = creator
    for key in ("created", "modified"):
        stamp = _millis(item.get(key))
        if stamp:
            entry[key] = stamp
    return entry


def _relation_defs(
    iri: str, rel_type: dict[str, Any], domain: str | None, range_: str | None
) -> list[dict[str, Any]]:
    forward: dict[str, Any] = {"@id": iri, "@type": "relationDef", "label": rel_type["label"]}
    inverse: dict[str, Any] = {"@id": iri + "-inverse", "@type": "relationDef", "inverseOf": iri}
    complement = _text(rel_type.get("complement"))
    if complement:
        inverse["label"] = complement
    if domain and range_:
        forward["rdfs:domain"] = {"@id": domain}
        forward["rdfs:range"] = {"@id": range_}
        inverse["rdfs:domain"] = {"@id": range_}
        inverse["rdfs:range"] = {"@id": domain}
    return [forward, inverse]


def _relation_entry(
    relation: dict[str, Any],
    predicate: str,
    source: str,
    destination: str,
    base: str,
    rid: str,
    users: dict[str, Any],
    owner: str | None,
    reversed_: bool,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "@id": base + "relation-instance/" + _safe(rid),
        "@type": "relationInstance",
        "predicate": predicate,
        "source": source,
        "destination": destination,
    }
    # A relation without an author is the vault owner's, as the plugin counts it.
    creator = _person(relation.get("authorId"), users) or _text(relation.get("author")) or owner
    if creator:
        entry["creator"] = creator
    created = _millis(relation.get("created"))
    if created:
        entry["created"] = created
    modified = _millis(relation.get("lastModified")) or created
    if modified:
        entry["modified"] = modified
    imported = relation.get("importedFromRid")
    if isinstance(imported, str) and imported.startswith("orn:"):
        entry[LB + "importedFrom"] = {"@id": imported}
    if relation.get("tentative") is False:  # the plugin's inverted flag: not accepted
        entry["@type"] = LB + "TentativeRelation"
    if reversed_:
        entry[LB + "directionReversed"] = True
    return entry


# ------------------------------------------------------------------------------- walking
def _walk(
    vault: Path,
    types: dict[str, dict[str, Any]],
    problems: _Problems,
    max_bytes: int,
    cache: ReadCache,
    files: FileHash,
) -> tuple[list[Note], set[str], list[Path]]:
    """The vault's node notes (sorted by path; those ``cache`` keeps), the
    nodeInstanceIds of notes in ``.trash``, and every relations file outside the dot-folders
    (the root one first). Every note file's path, times and content go into ``files``."""
    notes: list[Note] = []
    trashed: set[str] = set()
    relation_files: list[Path] = []
    root = str(vault)
    for folder, dirs, names in os.walk(vault, followlinks=False):
        here = Path(folder)
        in_trash = here == vault / ".trash" or (vault / ".trash") in here.parents
        kept = []
        for name in sorted(dirs):
            child = here / name
            if child.is_symlink():
                problems.add("symbolic links (never followed)", _rel(child, vault))
            elif name == ".trash" and here == vault:
                kept.append(name)  # read for ids only: relations into it are dangling
            elif not name.startswith("."):
                kept.append(name)
        dirs[:] = kept
        # Plain strings below, not Path: this loop runs once per file at every read.
        inside = "" if folder == root else folder[len(root) + 1 :].replace(os.sep, "/") + "/"
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue  # gone since the folder was listed
            if stat.S_ISLNK(info.st_mode):
                problems.add("symbolic links (never followed)", inside + name)
                continue
            if name == RELATIONS_FILE and not in_trash:
                relation_files.append(Path(path))
                continue
            if not name.endswith(".md"):
                continue
            known = cache.get(path, info)
            if known is None:
                known = _read_note(Path(path), info, inside + name, types, max_bytes, cache)
            files.update(_note_line(inside + name, info, known.digest), inside + name)
            if known.problem is not None and not in_trash:
                problems.add(*known.problem)
            if known.value is None:
                continue
            note = known.value
            note.uid = note.instance_id or _path_uid(note.path)  # a clash may have changed it
            if in_trash:
                if note.instance_id:
                    trashed.add(note.instance_id)
                if note.imported_rid:
                    trashed.add(note.imported_rid)
                continue
            notes.append(note)
    relation_files.sort(key=lambda p: (p.parent != vault, str(p)))
    notes.sort(key=lambda n: n.path)
    return notes, trashed, relation_files


def _note_line(relative: str, info: os.stat_result, digest: str) -> bytes:
    """What the vault's digest takes of a note file: its path, times and content."""
    birth = getattr(info, "st_birthtime", "")
    return f"{relative}\0{info.st_mtime_ns}\0{birth}\0{digest}\n".encode()


def _rel(path: Path, vault: Path) -> str:
    return PurePosixPath(path.relative_to(vault)).as_posix()


def _read_note(
    path: Path,
    info: os.stat_result,
    relative: str,
    types: dict[str, dict[str, Any]],
    max_bytes: int,
    cache: ReadCache,
) -> _Read:
    """The note at ``path`` (``relative`` to the vault; ``info``: its lstat) as ``value`` when
    it is a node (frontmatter with ``nodeTypeId``), else None, with the problem found in it
    (kept in ``cache``)."""
    if not stat.S_ISREG(info.st_mode):
        return cache.put(str(path), info, None, "", None)
    if info.st_size > max_bytes:
        problem = ("notes larger than the input limit (skipped)", f"{relative} ({info.st_size})")
        return cache.put(str(path), info, None, str(info.st_size), problem)
    try:
        raw = path.read_bytes()
    except OSError as error:
        problem = ("notes that cannot be read (skipped)", f"{relative} ({error.strerror})")
        return _Read(_stamp(info), None, "", problem)  # not kept: may be readable next time

    def done(note: Note | None, problem: tuple[str, str] | None = None) -> _Read:
        return cache.put(str(path), info, note, hashlib.sha256(raw).hexdigest(), problem)

    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    front, body, trouble = split_frontmatter(text)
    if trouble:
        return done(
            None,
            ("notes whose YAML frontmatter does not parse (skipped)", f"{relative}: {trouble}"),
        )
    type_id = front.get("nodeTypeId")
    if not isinstance(type_id, str) or not type_id.strip():
        return done(None)  # not a node: a plain note, a canvas (tldr-dg), a template
    type_id = type_id.strip()
    if type_id not in types:
        return done(
            None,
            ("notes of a node type the settings do not have (skipped)", f"{relative} ({type_id})"),
        )
    instance = front.get("nodeInstanceId")
    instance_id = instance.strip() if isinstance(instance, str) and instance.strip() else None
    if instance_id is not None and not _PLAIN_ID.match(instance_id):
        instance_id = None
    rid = front.get("importedFromRid")
    imported_rid = rid.strip() if isinstance(rid, str) and rid.strip() else None
    birth = getattr(info, "st_birthtime", None)
    note = Note(
        path=relative,
        uid=instance_id or _path_uid(relative),
        type_id=type_id,
        title=path.stem,
        body=body,
        instance_id=instance_id,
        imported_rid=imported_rid,
        imported=imported_rid is not None or "importedFromSpaceUri" in front,
        author_id=front.get("authorId"),
        last_modified=front.get("lastModified"),
        mtime=info.st_mtime,
        birthtime=birth,
        frontmatter=front,
        links=_LINK.findall(body) if "[[" in body else [],
        embeds=_EMBED.findall(body) if "![[" in body else [],
    )
    return done(note)


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """A note's frontmatter (a mapping; {} when there is none), its body, and a problem
    (with the file's line number) when the frontmatter is too large or not YAML."""
    if not text.startswith("---"):
        return {}, text, None
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].strip() != "---":
        return {}, text, None
    match = re.compile(r"^---[ \t]*\r?$", re.M).search(text, first_end + 1)
    if match is None:
        return {}, text, None
    raw = text[first_end + 1 : match.start()]
    body = text[match.end() :].lstrip("\r\n") if match.end() < len(text) else ""
    if len(raw.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        return {}, body, f"frontmatter larger than {MAX_FRONTMATTER_BYTES} bytes"
    simple = simple_frontmatter(raw)
    if simple is not None:
        return simple, body, None
    try:
        aliases = (  # an alias is written "*name": without a "*" there is none to count
            sum(1 for e in yaml.parse(raw, Loader=_Loader) if isinstance(e, yaml.AliasEvent))
            if "*" in raw
            else 0
        )
        if aliases > MAX_YAML_ALIASES:
            return {}, body, f"{aliases} YAML aliases (at most {MAX_YAML_ALIASES})"
        data = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f"line {mark.line + 2}: " if mark is not None else ""
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        return {}, body, f"{line}{reason}"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, body, "frontmatter is not a YAML mapping"
    return {str(k): v for k, v in data.items()}, body, None


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: A frontmatter line ``key: value`` whose value YAML reads as a decimal integer or as the
#: text itself (see :func:`simple_frontmatter`).
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): ([^\s#'\"\[\]{}&*!|>%@`,?]+)\r?")
_DECIMAL = re.compile(r"-?[1-9][0-9]*|0")
#: Plain scalars YAML (1.1, as PyYAML reads it) takes for something else than text.
_NOT_TEXT = re.compile(
    r"(?i:y|yes|n|no|true|false|on|off|null|~)|[-+]?[0-9_.:]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?0[xob][0-9a-fA-F_]+|[-+.].*|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*|=|<<"
)


def simple_frontmatter(raw: str) -> dict[str, Any] | None:
    """The frontmatter ``raw`` as YAML reads it, when every line is ``key: value`` with a
    plain one-word value (the plugin's own keys: ids, RIDs, times in milliseconds), read
    without the YAML parser; None for anything else (which the parser reads)."""
    found: dict[str, Any] = {}
    for line in raw.split("\n"):
        if not line.strip():
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if key in found or _NOT_TEXT.fullmatch(key):
            return None  # a repeated key, or one YAML reads as a boolean: the parser decides
        if _DECIMAL.fullmatch(value):
            found[key] = int(value)
        elif _NOT_TEXT.fullmatch(value) or value.endswith(":"):
            return None
        else:
            found[key] = value
    return found


# ------------------------------------------------------------------------------- nodes
#: What a node's entry is made from, of a note.
_NOTE_FIELDS = (
    "path", "uid", "type_id", "title", "body", "instance_id", "imported_rid", "imported",
    "last_modified", "mtime", "birthtime",
)  # fmt: skip


def _link_targets(notes: list[Note]) -> dict[str, Note]:
    """How a wikilink names a note: by its path without ``.md`` and by its basename (the
    first note of a basename wins, as Obsidian resolves the shortest path first)."""
    targets: dict[str, Note] = {}
    for note in sorted(notes, key=lambda n: (n.path.count("/"), n.path)):
        stem = note.path[:-3] if note.path.endswith(".md") else note.path
        targets.setdefault(stem.lower(), note)
        targets.setdefault(note.title.lower(), note)
    return targets


def _target(link: str, titles: dict[str, Note]) -> Note | None:
    name = link.strip()
    if name.lower().endswith(".md"):
        name = name[:-3]
    return titles.get(name.lower())


def _node_entry(
    note: Note,
    iri: str,
    schema: str,
    owner: str | None,
    users: dict[str, Any],
    titles: dict[str, Note],
    vault: Path,
    cache: ReadCache,
) -> dict[str, Any]:
    """The document entry of ``note`` (the one ``cache`` made last time, when its inputs are
    the same; a note that embeds files is made again: the files may have come or gone)."""
    refers = []
    for link in note.links:
        target = _target(link, titles)
        if target is not None and target.uid != note.uid and target.title != link.strip():
            refers.append(f"pages:{target.uid}")  # the analysis resolves plain titles itself
    creator = _person(note.author_id, users) if note.imported else None
    creator = creator or owner
    inputs = (
        *(getattr(note, name) for name in _NOTE_FIELDS),
        iri,
        schema,
        creator,
        tuple(refers),
        None if not note.embeds else object(),
    )
    return cache.entry(
        ("node", note.path),
        inputs,
        _make_node_entry,
        *(note, iri, schema, creator, refers, vault),
    )


def _make_node_entry(
    note: Note, iri: str, schema: str, creator: str | None, refers: list[str], vault: Path
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "@id": iri,
        "@type": schema,
        "title": note.title,
        "content": note.body,
    }
    if creator:
        entry["creator"] = creator
    modified = _millis(note.last_modified) if note.imported else None
    entry["modified"] = modified or _millis(note.mtime * 1000)
    entry["created"] = _millis((note.birthtime or note.mtime) * 1000)
    entry[LB + "timesFromFile"] = True
    entry[LB + "sourcePath"] = note.path
    if note.instance_id:
        entry[LB + "nodeInstanceId"] = note.instance_id
    if note.imported_rid and ":" in note.imported_rid and " " not in note.imported_rid:
        entry[LB + "importedFrom"] = {"@id": note.imported_rid}
    if refers:
        entry["textRefersToNode"] = list(dict.fromkeys(refers))
    images = []
    for link in note.embeds:
        name = link.strip()
        if PurePosixPath(name).suffix.lower() in _IMAGE_SUFFIXES:
            images.append({"@id": _open_uri(vault, _embed_path(name, note, vault))})
    if images:
        entry[LB + "image"] = images
    return entry


def _embed_path(name: str, note: Note, vault: Path) -> str:
    """The vault path an embed names: as written when that file exists (from the vault or
    the note's folder), else the name itself."""
    for candidate in (name, str(PurePosixPath(note.path).parent / name)):
        if (vault / candidate).is_file():
            return PurePosixPath(candidate).as_posix()
    return name


def _open_uri(vault: Path, path: str) -> str:
    """The ``obsidian://open`` URI of a file of the vault (opens it in Obsidian)."""
    return (
        f"obsidian://open?vault={quote(vault.resolve().name, safe='')}&file={quote(path, safe='')}"
    )


# ------------------------------------------------------------------------------- relations
def _merge_relations(
    paths: list[Path], vault: Path, cache: ReadCache, files: FileHash
) -> dict[str, dict[str, Any]]:
    """Every relation of the vault's relations files by id (the root file first: it wins on
    the same id, as the plugin merges them)."""
    merged: dict[str, dict[str, Any]] = {}
    for path in paths:
        data = _json_file(path, vault, cache, files)
        relations = data.get("relations")
        if not isinstance(relations, dict):
            raise ExportFormatError(
                _rel(path, vault), "has no 'relations' object; fix or restore the file"
            )
        for key, relation in relations.items():
            if isinstance(relation, dict):
                merged.setdefault(str(relation.get("id") or key), relation)
    return merged


def _legacy_relations(
    notes: list[Note],
    relation_types: dict[str, dict[str, Any]],
    triples: list[dict[str, Any]],
    titles: dict[str, Note],
    problems: _Problems,
) -> list[tuple[dict[str, Any], Note, Note, bool]]:
    """Relations kept as frontmatter link lists by plugin 0.4 and older: (type, source,
    destination, direction inferred). The note read is the source unless only the reverse
    fits an allowed triple."""
    allowed = {
        (str(t.get("sourceId")), str(t.get("relationshipTypeId")), str(t.get("destinationId")))
        for t in triples
    }
    found: list[tuple[dict[str, Any], Note, Note, bool]] = []
    pairs: set[tuple[str, frozenset[str]]] = set()
    for note in notes:
        for key, value in note.frontmatter.items():
            rel_type = relation_types.get(key)
            if isinstance(value, str):
                value = [value]  # a lone link is written as a string
            if rel_type is None or not isinstance(value, list):
                continue
            for item in value:
                if not isinstance(item, str):
                    continue
                match = _LINK.search(item)
                target = _target(match.group(1), titles) if match else None
                if target is None or target.uid == note.uid:
                    problems.add(
                        "legacy frontmatter links that name no node (skipped)",
                        f"{note.path}: {item}",
                    )
                    continue
                pair = (rel_type["id"], frozenset((note.uid, target.uid)))
                if pair in pairs:
                    continue
                pairs.add(pair)
                forward = (note.type_id, rel_type["id"], target.type_id) in allowed
                backward = (target.type_id, rel_type["id"], note.type_id) in allowed
                if backward and not forward:
                    found.append((rel_type, target, note, True))
                else:
                    found.append((rel_type, note, target, True))
    return found


# ------------------------------------------------------------------------------- by part
def reread_notes(
    previous: VaultRead, paths: Iterable[str], *, max_bytes: int, cache: ReadCache
) -> VaultRead | None:
    """The vault as :func:`read_vault` would read it now, made from ``previous`` when only
    the node notes at ``paths`` (absolute) changed, and only in their body, their times or
    their authorship: the same title, node type and ids, no YAML problem, no legacy relation
    list, no nodeInstanceId shared with another note. None otherwise (a new, deleted, renamed
    or retyped note, or any other file): the caller reads the vault whole. Reads only the
    files at ``paths``; the caller must name every file that changed."""
    parts = previous.parts
    if parts is None:
        return None
    root = str(parts.vault) + os.sep
    graph = list(previous.document["@graph"])
    rewritten: dict[int, dict[str, Any]] = {}
    notes = dict(parts.notes)
    files = FileHash(parts.files.total)
    files.lines = dict(parts.files.lines)
    for path in dict.fromkeys(paths):
        relative = path[len(root) :].replace(os.sep, "/") if path.startswith(root) else None
        held = notes.get(relative) if relative is not None else None
        if relative is None or held is None:
            return None
        old, place = held
        try:
            info = os.lstat(path)
        except OSError:
            return None  # deleted or moved
        known = cache.get(path, info)
        if known is None:
            known = _read_note(Path(path), info, relative, parts.types, max_bytes, cache)
        note = known.value
        if known.problem is not None or note is None:
            return None
        same = ("instance_id", "imported_rid", "imported", "type_id", "title", "path")
        if any(getattr(note, name) != getattr(old, name) for name in same):
            return None
        if old.uid != (old.instance_id or _path_uid(old.path)):
            return None  # one of two notes with one nodeInstanceId
        if parts.relation_type_ids & (set(note.frontmatter) | set(old.frontmatter)):
            return None  # a legacy relation list
        note.uid = old.uid
        graph[place] = rewritten[place] = _node_entry(
            note,
            parts.node_iri[note.uid],
            parts.schema_iris[note.type_id],
            parts.owner,
            parts.user_names,
            parts.titles,
            parts.vault,
            cache,
        )
        notes[relative] = (note, place)
        files.replace(relative, _note_line(relative, info, known.digest))
    read = dataclasses.replace(
        previous,
        document={**previous.document, "@graph": graph},
        digest=files.hexdigest(),
        problems=list(previous.problems),
        notices=list(previous.notices),
    )
    read.parts = dataclasses.replace(parts, files=files, notes=notes)
    read.rewritten = list(rewritten.values())
    return read
