"""JSON-LD reading: bytes -> checked JSON -> repaired context -> RDF quads.

Everything here works offline. A remote ``@context`` is refused unless the settings map its
URL to a local file. Discourse-graph exports get their context repaired (see
:func:`repair_context`) before a JSON-LD engine reads them: pyoxigraph's native parser (fast)
or pyld (the reference). Both give the same canonical dataset; a test checks it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyoxigraph import Quad, RdfFormat, parse

from labbrain.errors import ExportFormatError, InputTooLarge, RemoteContextRefused
from labbrain.rdf.namespaces import DCT, DG, DGB, OWL, PREFIXES, RDF, RDFS, SIOC, XSD

JsonObject = dict[str, Any]


#: The exporter's context (2026-06 variant): the readers that give a source in the shape of an
#: export (an Obsidian vault, a file of nanopublications) write their document in it.
EXPORT_CONTEXT: dict[str, str] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "dct": "http://purl.org/dc/terms/",
    "prov": "http://www.w3.org/ns/prov#",
    "sioc": "http://rdfs.org/sioc/ns#",
    "dgb": "https://discoursegraphs.com/schema/dg_base",
    "subClassOf": "rdfs:subClassOf",
    "title": "dct:title",
    "label": "rdfs:label",
    "modified": "dct:modified",
    "created": "dct:date",
    "creator": "dct:creator",
    "content": "sioc:content",
    "source": "dgb:source",
    "destination": "dgb:destination",
    "textRefersToNode": "dgb:textRefersToNode",
    "predicate": "rdf:predicate",
    "nodeSchema": "dgb:NodeSchema",
    "relationDef": "dgb:RelationDef",
    "relationInstance": "dgb:RelationInstance",
    "inverseOf": "owl:inverseOf",
}


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_WHITESPACE = " \t\n\r"


class DeferredMemberNotLast(Exception):
    """The deferred member turned out not to be the last one of the top-level object."""


@dataclass
class JsonInput:
    """A decoded JSON document, with the text span of each top-level member's value.

    The spans let a caller splice a member's original text into a new document without
    serialising it again. When reading deferred a final member (``deferred``), its value is
    not decoded yet: its span runs to the closing brace and :meth:`complete` decodes it.
    """

    value: Any
    text: str
    label: str
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    deferred: str | None = None
    #: The UTF-8 bytes ``text`` was decoded from, when known (see :meth:`member_bytes`).
    data: bytes | None = None

    def member_bytes(self, key: str) -> bytes | memoryview:
        """The UTF-8 text of member ``key``'s value (its span), without copying it when the
        original bytes are known."""
        start, end = self.spans[key]
        if self.data is None:
            return self.text[start:end].encode("utf-8")
        before = len(self.text[:start].encode("utf-8"))
        after = len(self.text[end:].encode("utf-8"))
        return memoryview(self.data)[before : len(self.data) - after]

    def complete(self) -> Any:
        """Decode the deferred member (if any) into ``value`` and return ``value``.

        Raises ExportFormatError for invalid JSON and DeferredMemberNotLast when other
        members follow it (then its span was wrong).
        """
        if self.deferred is None:
            return self.value
        key, (start, _) = self.deferred, self.spans[self.deferred]
        try:
            member, end = _DECODER.raw_decode(self.text, start)
        except json.JSONDecodeError as err:
            raise _syntax_error(self.label, err) from None
        except ValueError as err:
            raise ExportFormatError(self.label, f"invalid JSON: {err}") from None
        except RecursionError:
            raise InputTooLarge(self.label, "JSON nested too deeply") from None
        if _skip(self.text, end) != self.spans[key][1]:
            raise DeferredMemberNotLast(key)
        self.value[key] = member
        self.spans[key] = (start, end)
        self.deferred = None
        return self.value


def document_input(document: JsonObject, label: str) -> JsonInput:
    """An export-shaped document a reader made, as a decoded JSON input for a load to take as
    it is: its other members in their order, then ``@graph`` (its span recorded), as UTF-8."""
    members = [
        json.dumps(key) + ":" + json.dumps(value, ensure_ascii=False)
        for key, value in document.items()
        if key != "@graph"
    ]
    head = "{" + "".join(member + "," for member in members) + '"@graph":'
    text = head + json.dumps(document["@graph"], ensure_ascii=False) + "}"
    return JsonInput(
        value=document,
        text=text,
        label=label,
        spans={"@graph": (len(head), len(text) - 1)},
        data=text.encode("utf-8"),
    )


def _syntax_error(label: str, err: json.JSONDecodeError) -> ExportFormatError:
    return ExportFormatError(
        label, f"invalid JSON: {err.msg}", f"line {err.lineno}, column {err.colno}"
    )


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _decode_object_with_spans(text: str, defer: str | None) -> JsonInput:
    """Decode a top-level JSON object, recording where each member's value starts and ends.

    A member named ``defer`` is left undecoded, assumed to run to the final closing brace.
    """
    result = JsonInput({}, text, "")
    closing = text.rstrip(_WHITESPACE) if defer is not None else text
    index = _skip(text, _skip(text, 0) + 1)  # past "{"
    if text.startswith("}", index):
        index += 1
    else:
        while True:
            if not text.startswith('"', index):
                raise json.JSONDecodeError(
                    "Expecting property name enclosed in double quotes", text, index
                )
            key, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
            index = _skip(text, index)
            if not text.startswith(":", index):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, index)
            start = _skip(text, index + 1)
            if key == defer and closing.endswith("}"):
                result.spans[key] = (start, len(closing) - 1)
                result.deferred = key
                return result
            member, end = _DECODER.raw_decode(text, start)
            result.value[key], result.spans[key] = member, (start, end)
            index = _skip(text, end)
            if text.startswith(",", index):
                index = _skip(text, index + 1)
                continue
            if text.startswith("}", index):
                index += 1
                break
            raise json.JSONDecodeError("Expecting ',' delimiter", text, index)
    if _skip(text, index) != len(text):
        raise json.JSONDecodeError("Extra data", text, _skip(text, index))
    return result


def read_json(
    data: bytes,
    label: str,
    max_depth: int,
    *,
    check_nesting: bool = True,
    defer: str | None = None,
) -> JsonInput:
    """Decode ``data`` as strict UTF-8 JSON (no NaN/Infinity) nested at most ``max_depth``.

    Raises ExportFormatError with the byte, line or column of the fault, or InputTooLarge.
    With ``check_nesting=False`` the caller runs :func:`check_depth` itself (later). With
    ``defer``, a top-level member of that name that comes last is decoded only by
    :meth:`JsonInput.complete`.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ExportFormatError(label, "invalid UTF-8", f"byte {err.start}") from None
    try:
        if text.lstrip(_WHITESPACE).startswith("{"):
            parsed = _decode_object_with_spans(text, defer)
            parsed.label = label
        else:
            parsed = JsonInput(_DECODER.decode(text), text, label)
        parsed.data = data
    except json.JSONDecodeError as err:
        raise _syntax_error(label, err) from None
    except ValueError as err:  # NaN / Infinity
        raise ExportFormatError(label, f"invalid JSON: {err}") from None
    except RecursionError:
        raise InputTooLarge(label, f"JSON nested deeper than {max_depth} levels") from None
    if check_nesting and parsed.deferred is None:
        check_depth(parsed.value, label, max_depth)
    return parsed


def check_depth(value: Any, label: str, max_depth: int) -> None:
    """Raise InputTooLarge if ``value`` nests lists/objects deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            raise InputTooLarge(label, f"JSON nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def check_object_count(data: bytes, label: str, max_objects: int) -> None:
    """Raise InputTooLarge if ``data`` may hold more than ``max_objects`` JSON objects.

    Counts ``{`` bytes (an upper bound: braces inside strings count too) in one pass, before
    anything is decoded or parsed, so a file of millions of tiny objects is refused at once.
    """
    if data.count(b"{") > max_objects:
        raise InputTooLarge(
            label, f"more than {max_objects} JSON objects (LABBRAIN_MAX_JSON_OBJECTS)"
        )


def _context_values(value: Any) -> Iterator[Any]:
    """Every ``@context`` value inside ``value``: top-level, embedded in nodes, scoped in term
    definitions (a context inside a context is yielded too)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "@context" in item:
                yield item["@context"]
            stack.extend(c for c in item.values() if isinstance(c, dict | list))
        elif isinstance(item, list):
            stack.extend(c for c in item if isinstance(c, dict | list))


def _context_size(context: Any) -> int:
    if isinstance(context, list):
        return sum(_context_size(item) for item in context)
    return len(context) if isinstance(context, dict) else 1


def check_contexts(document: Any, label: str, max_terms: int, *, scoped: bool = True) -> None:
    """Raise InputTooLarge if the contexts of ``document`` (every ``@context`` value at any
    depth, array entries and remote references counting one each) define more than
    ``max_terms`` terms together; without ``scoped``, raise ExportFormatError for a context
    nested in another (a scoped context, applied again at every use).
    """
    total = 0
    for context in _context_values(document):
        if not scoped and any(True for _ in _context_values(context)):
            raise ExportFormatError(
                label, "a scoped @context inside the export's context is not the export format"
            )
        total += _context_size(context)
        if total > max_terms:
            raise InputTooLarge(
                label,
                f"its @context values define more than {max_terms} terms "
                "(LABBRAIN_MAX_CONTEXT_TERMS)",
            )


def check_arrays(document: Any, label: str, max_items: int) -> None:
    """Raise InputTooLarge if an array of property values (any array but an ``@graph`` list)
    holds more than ``max_items`` items: pyld's time grows with the square of that length."""
    stack: list[Any] = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(child, list) and key != "@graph" and len(child) > max_items:
                    raise InputTooLarge(
                        label,
                        f"{key!r} holds more than {max_items} values "
                        "(LABBRAIN_MAX_JSON_ARRAY_ITEMS; or convert the file to N-Quads)",
                    )
                if isinstance(child, dict | list):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(c for c in item if isinstance(c, dict | list))


# ---------------------------------------------------------------- context repair
_ID = "@id"
_TYPE = "@type"


def _iri_term(iri: str) -> JsonObject:
    return {_ID: iri, _TYPE: _ID}


#: Canonical meaning of every term the Roam exporter uses, whatever context variant it wrote.
CANONICAL_TERMS: Mapping[str, str | JsonObject] = {
    "subClassOf": _iri_term(RDFS + "subClassOf"),
    "title": DCT + "title",
    "label": RDFS + "label",
    "modified": {_ID: DCT + "modified", _TYPE: XSD + "dateTime"},
    "created": {_ID: DCT + "created", _TYPE: XSD + "dateTime"},
    "creator": DCT + "creator",
    "content": SIOC + "content",
    "source": _iri_term(DGB + "source"),
    "destination": _iri_term(DGB + "destination"),
    "textRefersToNode": _iri_term(DGB + "textRefersToNode"),
    "predicate": _iri_term(RDF + "predicate"),
    "nodeSchema": DGB + "NodeSchema",
    "relationDef": DGB + "RelationDef",
    "relationInstance": DGB + "RelationInstance",
    "inverseOf": _iri_term(OWL + "inverseOf"),
    "domain": _iri_term(RDFS + "domain"),
    "range": _iri_term(RDFS + "range"),
    "backlink": _iri_term(DG + "backlink"),
    "backlinks": _iri_term(DG + "backlink"),
}


def pages_base(context: Mapping[str, Any]) -> str | None:
    """The Roam page URL prefix the export's ``pages`` term stands for, if it has one."""
    value = context.get("pages")
    if isinstance(value, dict):
        value = value.get(_ID)
    return value if isinstance(value, str) else None


def repair_context(
    context: Mapping[str, Any],
    local_contexts: Mapping[str, Path] | None = None,
    label: str | None = None,
) -> JsonObject:
    """Return the export's context fixed so that a JSON-LD 1.1 processor reads it as meant.

    Guarantees, for every known context variant (v0 draft, 2025-12, 2026-06):
    ``dgb``/``dg`` become the published ``dg_base#``/``dg_core#`` namespaces; every exporter
    term gets its canonical IRI (Dublin Core terms for title/created/modified/creator, dates
    typed xsd:dateTime); node-to-node terms (predicate, source, destination, inverseOf,
    textRefersToNode, backlink(s), domain, range) are ``@type: @id``; the undefined ``page:``
    prefix means the same as ``pages:``. Other prefixes and terms of the export are kept. An
    ``@import`` of a remote context is inlined from its configured local copy, or refused
    with RemoteContextRefused: nothing is fetched.
    """
    imported: JsonObject = {}
    if "@import" in context:
        imported = _imported_context(context["@import"], local_contexts or {}, label)
    repaired: JsonObject = {
        **imported,
        **{k: v for k, v in context.items() if k not in ("dg", "dgb", "@import")},
    }
    repaired.update(PREFIXES)  # labbrain's own, so dg/dgb are the published ones
    repaired.update(CANONICAL_TERMS)
    base = pages_base(context)
    if base is not None:
        repaired["pages"] = base
        repaired.setdefault("page", base)
    return repaired


# ---------------------------------------------------------------- remote contexts
def _imported_context(
    url: Any, local_contexts: Mapping[str, Path], label: str | None
) -> JsonObject:
    """The term definitions of an ``@import``ed context, from its configured local copy.

    One level only: a copy that ``@import``s again (a chain, or a loop back to itself) is
    refused with ExportFormatError."""
    local = local_contexts.get(url) if isinstance(url, str) else None
    if local is None:
        raise RemoteContextRefused(str(url), label)
    document = json.loads(Path(local).read_text(encoding="utf-8"))
    context = document.get("@context", document) if isinstance(document, dict) else None
    if not isinstance(context, dict):
        raise RemoteContextRefused(str(url), label)
    if "@import" in context:
        raise ExportFormatError(
            label or str(url), f"the local copy of {url} has an @import itself: not followed"
        )
    return context


def offline_loader(local_contexts: Mapping[str, Path], label: str) -> Any:
    """A pyld document loader that serves configured local copies and refuses anything else."""

    def load(url: str, options: Any = None) -> JsonObject:
        local = local_contexts.get(url)
        if local is None:
            raise RemoteContextRefused(url, label)
        return {
            "contextUrl": None,
            "documentUrl": url,
            "document": json.loads(Path(local).read_text(encoding="utf-8")),
        }

    return load


def _remote_refusal(err: BaseException) -> RemoteContextRefused | None:
    """Find a RemoteContextRefused in the cause/context chain or details of a pyld error."""
    seen: set[int] = set()
    stack: list[Any] = [err]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, RemoteContextRefused):
            return item
        if isinstance(item, BaseException):
            stack.extend([item.__cause__, item.__context__, getattr(item, "cause", None)])
            details = getattr(item, "details", None)
            if isinstance(details, dict):
                stack.extend(details.values())
    return None


# ---------------------------------------------------------------- to RDF
def dump_json(document: JsonObject) -> bytes:
    """Compact UTF-8 JSON bytes of ``document``."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def quads_native(document: JsonObject, label: str) -> Iterator[Quad]:
    """RDF of ``document`` through pyoxigraph's JSON-LD parser; blank nodes get fresh ids."""
    return _guarded(parse(dump_json(document), RdfFormat.JSON_LD, rename_blank_nodes=True), label)


def quads_pyld(
    document: JsonObject, label: str, local_contexts: Mapping[str, Path] | None = None
) -> Iterator[Quad]:
    """RDF of ``document`` through pyld (JSON-LD 1.1), refusing remote contexts."""
    from pyld import jsonld  # only here: most loads never need it (20 ms of start-up)

    options = {
        "format": "application/n-quads",
        "documentLoader": offline_loader(local_contexts or {}, label),
    }
    try:
        nquads = jsonld.to_rdf(document, options)
    except jsonld.JsonLdError as err:
        refusal = _remote_refusal(err)
        if refusal is not None:
            raise refusal from None
        raise ExportFormatError(label, f"invalid JSON-LD: {_pyld_message(err)}") from None
    return _guarded(parse(nquads, RdfFormat.N_QUADS, rename_blank_nodes=True), label)


def _pyld_message(err: BaseException) -> str:
    message = str(getattr(err, "message", "") or err).splitlines()[0]
    code = getattr(err, "code", None)
    return f"{message} ({code})" if code else message


def _guarded(quads: Iterator[Quad], label: str) -> Iterator[Quad]:
    """Re-raise a parser's SyntaxError, whenever it happens, as ExportFormatError, and its
    MemoryError (a token over its buffer cap) as InputTooLarge."""
    try:
        yield from quads
    except SyntaxError as err:
        raise ExportFormatError(label, f"invalid RDF: {str(err).strip()}") from None
    except MemoryError as err:  # the parser's own cap on one token (16 MiB), or no memory
        reason = f"too large for the RDF parser ({err or 'out of memory'})"
        raise InputTooLarge(label, reason) from None


def parse_rdf(data: bytes, fmt: RdfFormat, label: str) -> Iterator[Quad]:
    """Quads of an RDF document in ``fmt`` (Turtle, TriG, N-Triples, N-Quads); fresh blank ids."""
    return _guarded(parse(data, fmt, rename_blank_nodes=True), label)
