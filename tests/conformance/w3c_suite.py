"""The W3C SPARQL 1.1 test suite: where it comes from, and its query-evaluation tests.

Nothing of the suite is kept in this repository. The rdflib sdist on PyPI carries a copy of
w3c/rdf-tests' ``sparql11`` directory (``test/data/suites/w3c/sparql11``): :func:`locate`
finds it in a cache directory, or downloads that sdist with pip and unpacks only that part.
The manifests are read with rdflib, with the W3C's own addresses as their base
(``http://www.w3.org/2009/sparql/docs/tests/data-sparql11/<dir>/``), so that the IRIs of the
data, the queries and the expected results are those of the published suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rdflib import RDF, Graph, URIRef
from rdflib.collection import Collection
from rdflib.namespace import Namespace

#: The rdflib release whose sdist the suite is taken from (reported in docs/sparql.md).
RDFLIB_VERSION = "7.6.0"
SDIST = f"rdflib-{RDFLIB_VERSION}"
#: Where the SPARQL 1.1 tests sit inside the sdist.
INSIDE = f"{SDIST}/test/data/suites/w3c/sparql11/"
#: The published address of the SPARQL 1.1 tests: the base of every manifest.
W3C_BASE = "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/"

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")

#: The query directories whose evaluation tests run through an endpoint. Left out:
#: entailment (needs an entailment regime; neither server has one) and service (needs
#: remote endpoints; SERVICE is refused by labbrain and never sent out here).
QUERY_DIRS = (
    "aggregates",
    "bind",
    "bindings",
    "construct",
    "csv-tsv-res",
    "exists",
    "functions",
    "grouping",
    "json-res",
    "negation",
    "project-expression",
    "property-path",
    "subquery",
)
SKIPPED_DIRS = {
    "entailment": "needs an entailment regime (RDFS, OWL 2 RL, ...), which neither server has",
    "service": "SERVICE calls other endpoints; labbrain refuses SERVICE and nothing here is "
    "sent outside the machine",
}
EVALUATION_TYPES = (MF.QueryEvaluationTest, MF.CSVResultFormatTest)


def cache_root() -> Path:
    """Where the unpacked suite is kept between runs: ``W3C_TESTS_CACHE`` when set, else
    ``~/.cache/labbrain-tests/w3c`` (the tests point XDG_CACHE_HOME at a temporary
    directory, so the user's home is named directly)."""
    explicit = os.environ.get("W3C_TESTS_CACHE")
    if explicit:
        return Path(explicit)
    return Path.home() / ".cache" / "labbrain-tests" / "w3c"


def cached(root: Path | None = None) -> Path | None:
    """The unpacked ``sparql11`` directory in the cache, when it is there and whole."""
    directory = (root or cache_root()) / SDIST / "sparql11"
    if (directory / "manifest-all.ttl").is_file() and (directory / ".complete").is_file():
        return directory
    return None


def download(root: Path | None = None, timeout: float = 300) -> Path:
    """Download rdflib's sdist with pip and unpack its ``sparql11`` directory (only that)
    into the cache; the directory. Raise RuntimeError with a one-line reason on failure.
    Safe when two processes do it at once: each unpacks into a directory of its own and
    moves it into place."""
    root = root or cache_root()
    target = root / SDIST / "sparql11"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as work:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"rdflib=={RDFLIB_VERSION}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-q",
                "-d",
                work,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        archive = Path(work) / f"{SDIST}.tar.gz"
        if done.returncode != 0 or not archive.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"pip download rdflib=={RDFLIB_VERSION} failed: {last}")
        unpacked = Path(work) / "sparql11"
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if not member.name.startswith(INSIDE) or not (member.isfile() or member.isdir()):
                    continue
                relative = member.name[len(INSIDE) :]
                if not relative or ".." in Path(relative).parts:
                    continue
                path = unpacked / relative
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with source, open(path, "wb") as out:
                    shutil.copyfileobj(source, out)
        if not (unpacked / "manifest-all.ttl").is_file():
            raise RuntimeError(f"{archive.name} holds no {INSIDE}manifest-all.ttl")
        (unpacked / ".complete").write_text(RDFLIB_VERSION + "\n")
        try:
            unpacked.rename(target)
        except OSError:
            if cached(root) is None:  # not another process's copy either
                raise
    return target


def locate(root: Path | None = None) -> Path:
    """The ``sparql11`` directory: from the cache, else downloaded (RuntimeError when that
    fails)."""
    return cached(root) or download(root)


# ---------------------------------------------------------------------------- manifests
def w3c_iri(suite: Path, path: Path) -> str:
    """The published IRI of a file of the suite."""
    return W3C_BASE + path.relative_to(suite).as_posix()


def local_path(suite: Path, iri: str) -> Path | None:
    """The file of the suite at a published IRI (None: not one of the suite's)."""
    if not iri.startswith(W3C_BASE):
        return None
    path = suite / iri[len(W3C_BASE) :]
    return path if path.is_file() else None


@dataclass(frozen=True)
class EvaluationTest:
    """One query-evaluation test of a manifest."""

    directory: str
    name: str  # the entry's local name, e.g. agg01
    query: Path
    data: tuple[Path, ...]
    graph_data: tuple[Path, ...]
    result: Path
    #: mf:LaxCardinality: duplicates may differ (REDUCED)
    lax: bool = False


def manifest(suite: Path, directory: str) -> Graph:
    path = suite / directory / "manifest.ttl"
    graph = Graph()
    graph.parse(path, format="turtle", publicID=w3c_iri(suite, path))
    return graph


def protocol_entries(suite: Path) -> list[str]:
    """The local names of protocol/manifest.ttl's entries, in order."""
    graph = manifest(suite, "protocol")
    head = next(graph.objects(predicate=MF.entries))
    return [str(entry).rsplit("#", 1)[1] for entry in Collection(graph, head)]


def _files(suite: Path, graph: Graph, node: object, prop: URIRef) -> tuple[Path, ...]:
    found = []
    for value in graph.objects(node, prop):  # type: ignore[arg-type]
        path = local_path(suite, str(value))
        assert path is not None, f"{value} is not a file of the suite"
        found.append(path)
    return tuple(sorted(found))


def evaluation_tests(suite: Path, directory: str) -> Iterator[EvaluationTest]:
    """The query-evaluation tests (and CSV result format tests) of one directory's
    manifest, in the manifest's order."""
    graph = manifest(suite, directory)
    head = next(graph.objects(predicate=MF.entries))
    for entry in Collection(graph, head):
        if not any((entry, RDF.type, kind) in graph for kind in EVALUATION_TYPES):
            continue
        action = next(graph.objects(entry, MF.action))
        (query,) = _files(suite, graph, action, QT.query)
        (result,) = _files(suite, graph, entry, MF.result)
        yield EvaluationTest(
            directory=directory,
            name=str(entry).rsplit("#", 1)[1],
            query=query,
            data=_files(suite, graph, action, QT.data),
            graph_data=_files(suite, graph, action, QT.graphData),
            result=result,
            lax=(entry, MF.resultCardinality, MF.LaxCardinality) in graph,
        )
