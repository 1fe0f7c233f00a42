"""What the conformance modules' fixtures do: find the suite (from the cache, else
downloaded), start a server of a kind. (Fixtures of their own in each module: a conftest.py
here would be imported as ``conftest`` beside tests/conftest.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from w3c_servers import Server, started
from w3c_suite import RDFLIB_VERSION, cache_root, locate

from conftest import require


def suite_or_require() -> Path:
    """The unpacked ``sparql11`` directory of the W3C tests (w3c_suite.locate); the test
    skips, or fails under CI, when it is neither cached nor downloadable."""
    try:
        return locate()
    except (OSError, RuntimeError, ValueError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        require(
            "the W3C SPARQL 1.1 test suite",
            False,
            f"not in {cache_root()} and the rdflib {RDFLIB_VERSION} sdist could not be "
            f"downloaded ({reason})",
        )
        raise AssertionError("unreachable") from error


def serving(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A fresh server of ``kind`` in a directory of its own, until the generator ends."""
    with started(kind, tmp_path_factory.mktemp(f"w3c-{kind}")) as running:
        yield running
