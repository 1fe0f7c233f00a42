"""Discourse-node titles and the links inside node text."""

from __future__ import annotations

import re

_TITLE_PREFIX_RE = re.compile(r"^\s*\[\[([A-Za-z]{2,5})\]\]\s*-?\s*")
# An outermost [[...]] link whose text may hold one level of nested [[...]] (Roam links to
# discourse nodes by their full title, which starts with [[CLM]] and may end with [[@cite]]).
_WIKILINK_RE = re.compile(r"\[\[((?:[^\[\]]|\[(?!\[)|\](?!\])|\[\[[^\[\]]*\]\])*)\]\]")


def clean_title(title: str) -> str:
    """The title without its ``[[XXX]] -`` type prefix."""
    return _TITLE_PREFIX_RE.sub("", title, count=1).strip()


def title_abbreviation(title: str) -> str | None:
    """The ``XXX`` of a ``[[XXX]] - ...`` title, or None."""
    match = _TITLE_PREFIX_RE.match(title)
    return match.group(1).upper() if match else None


def normalise_title(title: str) -> str:
    """Whitespace-collapsed title used to resolve wikilinks."""
    return " ".join(title.split())


def wikilinks(text: str) -> list[str]:
    """Texts of the outermost ``[[...]]`` links of ``text`` (one nesting level), in order."""
    return _WIKILINK_RE.findall(text) if "[[" in text else []
