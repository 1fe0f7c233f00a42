"""SPARQL templates: ``queries/<name>.rq``, one query per file, bound engine-side.

Each template starts with a header of ``#`` comment lines::

    # title: Nodes by type
    # description: How many page nodes each dataset has of each node type.
    # param: graph iri optional -- only this dataset graph
    # returns: graph type label count
    # example: yes

Parameters are validated against their declared type and passed to the engine as RDF terms
(``substitutions``), never spliced into the query text. Results come back as plain Python
values in the template's own (deterministic) order. ``example: yes`` marks a query meant for
people (the web console lists it among its examples); the others serve labbrain itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pyoxigraph import BlankNode, Literal, NamedNode, QuerySolutions

from labbrain.errors import TemplateParameterError, UnknownTemplate
from labbrain.rdf.namespaces import XSD
from labbrain.rdf.resources import read_resources
from labbrain.store.base import QuadStore, Term

_PARAM_TYPES = ("iri", "string", "integer", "boolean")
_HEADER_RE = re.compile(r"^#\s*(title|description|param|returns|example):\s*(.*)$")


@dataclass(frozen=True)
class Parameter:
    """A declared template parameter."""

    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class Template:
    """One SPARQL template with its parsed header."""

    name: str
    text: str
    title: str = ""
    description: str = ""
    parameters: dict[str, Parameter] = field(default_factory=dict)
    returns: tuple[str, ...] = ()
    #: Meant for people: an example query of the consoles (header ``# example: yes``).
    example: bool = False


def parse_template(name: str, text: str) -> Template:
    """Parse a template's header; raise ValueError for a malformed parameter line."""
    title = description = ""
    params: dict[str, Parameter] = {}
    returns: tuple[str, ...] = ()
    example = False
    for line in text.splitlines():
        match = _HEADER_RE.match(line.strip())
        if not match:
            continue
        key, value = match.groups()
        if key == "title":
            title = value.strip()
        elif key == "description":
            description = (description + " " + value.strip()).strip()
        elif key == "returns":
            returns = tuple(value.split())
        elif key == "example":
            if value.strip() not in ("yes", "no"):
                raise ValueError(f"{name}: bad example line {line!r} (yes or no)")
            example = value.strip() == "yes"
        else:
            spec, _, doc = value.partition("--")
            words = spec.split()
            if len(words) < 2 or words[1] not in _PARAM_TYPES:
                raise ValueError(f"{name}: bad parameter line {line!r}")
            params[words[0]] = Parameter(
                name=words[0],
                type=words[1],
                required="optional" not in words[2:],
                description=doc.strip(),
            )
    return Template(name, text, title, description, params, returns, example)


@lru_cache(maxsize=1)
def templates() -> dict[str, Template]:
    """Every shipped template by name (file name without ``.rq``)."""
    return {
        name.removesuffix(".rq"): parse_template(name.removesuffix(".rq"), text)
        for name, text in read_resources("queries", ".rq").items()
    }


def template(name: str) -> Template:
    """The template called ``name``; raise UnknownTemplate otherwise."""
    try:
        return templates()[name]
    except KeyError:
        raise UnknownTemplate(name) from None


def to_term(tmpl: Template, param: Parameter, value: Any) -> Term:
    """Convert one parameter value to the RDF term its declared type calls for."""
    try:
        if param.type == "iri":
            if not isinstance(value, str):
                raise TypeError("expected an IRI string")
            return NamedNode(value)
        if param.type == "string":
            if not isinstance(value, str):
                raise TypeError("expected a string")
            return Literal(value)
        if param.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError("expected an integer")
            return Literal(str(value), datatype=NamedNode(XSD + "integer"))
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return Literal("true" if value else "false", datatype=NamedNode(XSD + "boolean"))
    except (TypeError, ValueError) as err:
        raise TemplateParameterError(tmpl.name, f"parameter {param.name}: {err}") from None


def bind(tmpl: Template, params: Mapping[str, Any]) -> dict[str, Term]:
    """Validate ``params`` against the template and convert them to RDF terms."""
    unknown = sorted(set(params) - set(tmpl.parameters))
    if unknown:
        raise TemplateParameterError(tmpl.name, f"unexpected parameter(s) {', '.join(unknown)}")
    bound: dict[str, Term] = {}
    for param in tmpl.parameters.values():
        value = params.get(param.name)
        if value is None:
            if param.required:
                raise TemplateParameterError(tmpl.name, f"missing parameter {param.name}")
            continue
        bound[param.name] = to_term(tmpl, param, value)
    return bound


def python_value(term: Any) -> Any:
    """A plain Python value for an RDF term: IRIs and strings as str, numbers as numbers."""
    if term is None:
        return None
    if isinstance(term, Literal):
        datatype = term.datatype.value
        if datatype in (XSD + "integer", XSD + "long", XSD + "int"):
            return int(term.value)
        if datatype in (XSD + "decimal", XSD + "double", XSD + "float"):
            return float(term.value)
        if datatype == XSD + "boolean":
            return term.value in ("true", "1")  # both in xsd:boolean's lexical space
        return term.value
    if isinstance(term, BlankNode):
        return "_:" + term.value
    return term.value


def run(store: QuadStore, name: str, **params: Any) -> list[dict[str, Any]]:
    """Run template ``name`` with ``params``; rows as dicts of Python values, in order."""
    return list(rows(store, name, **params))


def rows(store: QuadStore, name: str, **params: Any) -> Iterator[dict[str, Any]]:
    """:func:`run`'s rows one at a time, for a caller that keeps only some of them (the
    query is sent, and its parameters checked, at the call)."""
    tmpl = template(name)
    result = store.query(tmpl.text, substitutions=bind(tmpl, params))
    if not isinstance(result, QuerySolutions):
        raise TemplateParameterError(name, "only SELECT templates can be run as rows")
    variables = [v.value for v in result.variables]
    return ({v: python_value(solution[v]) for v in variables} for solution in result)
