"""Export of store graphs, and round trips: export, load the file into a fresh store, and
compare the dataset graph with the original up to blank-node renaming (RDFC-1.0)."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pyoxigraph import (
    BlankNode,
    CanonicalizationAlgorithm,
    Dataset,
    NamedNode,
    Quad,
    RdfFormat,
    parse,
)

from conftest import (
    BACKENDS,
    SAMPLE,
    SAMPLE_DCT,
    SAMPLE_GRAPH,
    MakeSettings,
    Target,
    cli_args,
    settings_of,
)
from labbrain import cli
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.errors import GraphNotFound, InputError
from labbrain.index.search_query import SearchQuery
from labbrain.rdf.namespaces import DCT, DG, DGB

SLUG = "akamatsulab-sample"
DCT_GRAPH = "urn:labbrain:dataset:dct-sample"
#: The one graph name every compared quad is moved into.
FIXED_GRAPH = NamedNode("urn:test:compared")
#: Reified relation instances of the sample (one blank node each).
SAMPLE_INSTANCES = 171

SUFFIXES = {
    "turtle": ".ttl",
    "trig": ".trig",
    "nquads": ".nq",
    "ntriples": ".nt",
    "jsonld": ".jsonld",
}
PYOXIGRAPH_FORMATS = {
    "turtle": RdfFormat.TURTLE,
    "trig": RdfFormat.TRIG,
    "nquads": RdfFormat.N_QUADS,
    "ntriples": RdfFormat.N_TRIPLES,
    "jsonld": RdfFormat.JSON_LD,
}


# ---------------------------------------------------------------------------- helpers
@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every export test runs on the embedded store and on a remote Oxigraph server."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _wide_consoles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages laid out the same on every machine (no terminal-size guessing)."""
    monkeypatch.setattr(cli.out, "width", 1000)
    monkeypatch.setattr(cli.err, "width", 1000)


def canonical(quads: Iterable[Quad]) -> Dataset:
    """``quads`` moved into one fixed graph, with canonical (RDFC-1.0) blank node labels."""
    dataset = Dataset(Quad(q.subject, q.predicate, q.object, FIXED_GRAPH) for q in quads)
    dataset.canonicalize(CanonicalizationAlgorithm.RDFC_1_0)
    return dataset


def blank_subjects(quads: Iterable[Quad]) -> set[BlankNode]:
    """The distinct blank nodes in subject position."""
    return {q.subject for q in quads if isinstance(q.subject, BlankNode)}


def export_bytes(brain: LabBrain, fmt: str, graphs: list[str] | None = None) -> bytes:
    """What ``brain.export`` writes for ``graphs`` in ``fmt``."""
    buffer = io.BytesIO()
    brain.export(buffer, fmt, graphs)
    return buffer.getvalue()


def invoke(store: Target | str, *args: str) -> Result:
    """Run ``labbrain --store STORE ARGS...`` (or ``--endpoint ...``) in-process."""
    return CliRunner().invoke(main, [*cli_args(store), *args])


def ok(result: Result) -> bytes:
    """Assert the run succeeded and return its stdout bytes."""
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout_bytes


@pytest.fixture
def loaded(store_target: Target) -> Target:
    """A store (a directory, or a remote one) with the sample and the dct sample loaded
    through the CLI."""
    ok(invoke(store_target, "load", str(SAMPLE), str(SAMPLE_DCT)))
    return store_target


@pytest.fixture
def reference(sample_brain: LabBrain) -> Iterator[tuple[LabBrain, Dataset]]:
    """The in-memory sample store with the canonical form of its dataset graph."""
    yield sample_brain, canonical(sample_brain.store.quads(SAMPLE_GRAPH))


# ---------------------------------------------------------------------------- round trips
def test_canonical_comparison_sees_a_changed_relation_instance(sample_brain: LabBrain) -> None:
    """The comparison used below is not vacuous: blank nodes are compared by structure."""
    quads = list(sample_brain.store.quads(SAMPLE_GRAPH))
    assert len(blank_subjects(quads)) == SAMPLE_INSTANCES
    destination = NamedNode(DGB + "destination")
    index = next(
        i
        for i, q in enumerate(quads)
        if isinstance(q.subject, BlankNode) and q.predicate == destination
    )
    changed = list(quads)
    moved = changed[index]
    changed[index] = Quad(moved.subject, moved.predicate, NamedNode("urn:test:elsewhere"))
    assert canonical(quads) == canonical(reversed(quads))
    assert canonical(changed) != canonical(quads)


@pytest.mark.parametrize(
    "fmt",
    [
        "turtle",
        "trig",
        "nquads",
        "ntriples",
        "jsonld",
    ],
)
def test_round_trip_keeps_the_dataset_graph(
    fmt: str, reference: tuple[LabBrain, Dataset], tmp_path: Path, make_settings: MakeSettings
) -> None:
    brain, original = reference
    path = tmp_path / f"export{SUFFIXES[fmt]}"
    path.write_bytes(export_bytes(brain, fmt, [SLUG]))
    with LabBrain(make_settings()) as fresh:
        report = fresh.load(str(path), graph=SLUG)
        assert report.graph == SAMPLE_GRAPH
        if fmt in ("trig", "nquads"):
            assert any("named graphs of the file are merged" in n for n in report.notices)
        reloaded = list(fresh.store.quads(SAMPLE_GRAPH))
        assert len(reloaded) == len(original)
        assert len(blank_subjects(reloaded)) == SAMPLE_INSTANCES
        assert canonical(reloaded) == original
        assert fresh.store.graphs() == sorted(
            [SAMPLE_GRAPH, "urn:labbrain:ontology", "urn:labbrain:system"]
        )
        # The reloaded graph is plain RDF, but its nodes are indexed from the store.
        assert report.indexed == 150
        assert fresh.search(SearchQuery("membrane tension", node_types="Claim")).hits


def test_jsonld_export_parses_back_to_the_same_graph(reference: tuple[LabBrain, Dataset]) -> None:
    """The JSON-LD export itself is faithful, read by an independent JSON-LD parser."""
    brain, original = reference
    quads = list(parse(export_bytes(brain, "jsonld", [SLUG]), RdfFormat.JSON_LD))
    assert {q.graph_name for q in quads} == {NamedNode(SAMPLE_GRAPH)}
    assert len(blank_subjects(quads)) == SAMPLE_INSTANCES
    assert canonical(quads) == original


@pytest.mark.parametrize("fmt", ["turtle", "trig", "nquads", "ntriples", "jsonld"])
def test_every_format_parses_back_to_the_same_graph(
    fmt: str, reference: tuple[LabBrain, Dataset]
) -> None:
    brain, original = reference
    quads = list(parse(export_bytes(brain, fmt, [SLUG]), PYOXIGRAPH_FORMATS[fmt]))
    assert canonical(quads) == original
    names = {q.graph_name for q in quads}
    if fmt in ("trig", "nquads", "jsonld"):
        assert names == {NamedNode(SAMPLE_GRAPH)}
    else:
        assert len(names) == 1  # the default graph


def test_round_trip_through_the_cli(loaded: Target, tmp_path: Path) -> None:
    path = tmp_path / "sample.ttl"
    ok(invoke(loaded, "export", "--graph", SLUG, "--format", "turtle", "-o", str(path)))
    fresh = tmp_path / "fresh"
    ok(invoke(fresh, "load", "--graph", SLUG, str(path)))
    with (
        LabBrain(settings_of(loaded), read_only=True) as before,
        LabBrain(settings_of(fresh), read_only=True) as after,
    ):
        original = canonical(before.store.quads(SAMPLE_GRAPH))
        assert canonical(after.store.quads(SAMPLE_GRAPH)) == original


# ---------------------------------------------------------------------------- formats
@pytest.mark.parametrize("fmt", ["turtle", "trig"])
def test_turtle_and_trig_declare_prefixes(fmt: str, sample_brain: LabBrain) -> None:
    text = export_bytes(sample_brain, fmt, [SLUG]).decode("utf-8")
    lines = text.splitlines()
    assert f"@prefix dg: <{DG}> ." in lines
    assert f"@prefix dgb: <{DGB}> ." in lines
    assert f"@prefix dct: <{DCT}> ." in lines
    # ...and use them.
    assert "dgb:RelationInstance" in text
    assert "dct:title" in text


def test_jsonld_export_is_compacted(sample_brain: LabBrain) -> None:
    document: dict[str, Any] = json.loads(export_bytes(sample_brain, "jsonld", [SLUG]))
    assert isinstance(document, dict)  # an expanded document would be a list
    context = document["@context"]
    assert context["dg"] == DG
    assert context["dgb"] == DGB
    assert context["title"] == "dct:title"
    assert document["@id"] == SAMPLE_GRAPH
    entries = document["@graph"]
    titled = [e for e in entries if "title" in e]
    assert len(titled) == 150
    assert all(isinstance(e["title"], str) for e in titled)
    assert any(e["title"].startswith("[[EVD]] - ") for e in titled)
    keys = {key for entry in entries for key in entry}
    assert DCT + "title" not in keys
    assert "@value" not in json.dumps(titled[0]["title"])
    instances = [e for e in entries if e.get("@type") == "dgb:RelationInstance"]
    assert len(instances) == SAMPLE_INSTANCES
    assert all(e["@id"].startswith("_:") for e in instances)
    assert all({"source", "destination", "predicate"} <= set(e) for e in instances)


def test_several_graphs_as_trig_keep_their_names(loaded: Target) -> None:
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        data = export_bytes(brain, "trig", [SLUG, "dct-sample"])
        sample = canonical(brain.store.quads(SAMPLE_GRAPH))
        dct = canonical(brain.store.quads(DCT_GRAPH))
    quads = list(parse(data, RdfFormat.TRIG))
    assert {q.graph_name for q in quads} == {NamedNode(SAMPLE_GRAPH), NamedNode(DCT_GRAPH)}
    assert canonical(q for q in quads if q.graph_name == NamedNode(SAMPLE_GRAPH)) == sample
    assert canonical(q for q in quads if q.graph_name == NamedNode(DCT_GRAPH)) == dct

    cli_data = ok(invoke(loaded, "export", "--graph", SLUG, "--graph", DCT_GRAPH))
    cli_quads = list(parse(cli_data, RdfFormat.TRIG))
    assert {q.graph_name for q in cli_quads} == {NamedNode(SAMPLE_GRAPH), NamedNode(DCT_GRAPH)}
    assert len(cli_quads) == len(quads)


def test_several_graphs_as_nquads_and_jsonld_keep_their_names(loaded: Target) -> None:
    expected = {NamedNode(SAMPLE_GRAPH), NamedNode(DCT_GRAPH)}
    for fmt in ("nquads", "jsonld"):
        data = ok(invoke(loaded, "export", "--format", fmt, "--graph", SLUG, "--graph", DCT_GRAPH))
        assert {q.graph_name for q in parse(data, PYOXIGRAPH_FORMATS[fmt])} == expected


@pytest.mark.parametrize("fmt", ["turtle", "ntriples"])
def test_triples_only_format_refuses_several_graphs(fmt: str, loaded: Target) -> None:
    """Turtle and N-Triples hold one graph: several are not merged without being asked to."""
    result = invoke(loaded, "export", "--format", fmt, "--graph", SLUG, "--graph", DCT_GRAPH)
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    assert result.stdout_bytes == b""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {fmt} holds one graph, and 2 were asked for")
    for fragment in (SAMPLE_GRAPH, DCT_GRAPH, "--format trig", "--format nquads", "--graph"):
        assert fragment in line
    assert "--merge" in line


def test_triples_only_format_refuses_the_default_set_of_several_graphs(loaded: Target) -> None:
    result = invoke(loaded, "export", "--format", "turtle")
    assert result.exit_code == 2
    assert SAMPLE_GRAPH in result.stderr and DCT_GRAPH in result.stderr
    assert result.stdout_bytes == b""


def test_turtle_merges_several_graphs_when_asked(loaded: Target) -> None:
    data = ok(
        invoke(
            loaded, "export", "--format", "turtle", "--merge", "--graph", SLUG, "--graph", DCT_GRAPH
        )
    )
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        both = [*brain.store.quads(SAMPLE_GRAPH), *brain.store.quads(DCT_GRAPH)]
    assert canonical(parse(data, RdfFormat.TURTLE)) == canonical(both)


def test_one_graph_as_turtle_needs_no_merge(loaded: Target) -> None:
    data = ok(invoke(loaded, "export", "--format", "turtle", "--graph", "dct-sample"))
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        assert canonical(parse(data, RdfFormat.TURTLE)) == canonical(brain.store.quads(DCT_GRAPH))


#: One graph of every kind the store can hold (docs/sparql.md, "Named graphs"), with whether
#: ``labbrain export`` without --graph includes it. Written out by hand: the lab's datasets,
#: the assistant's memory (projects, memory domains, propositions) and a user's own graph are
#: exported; labbrain's ontology, its system records, the task ledger and staging graphs are not.
GRAPH_KINDS = {
    SAMPLE_GRAPH: True,
    "urn:labbrain:project:membrane-review": True,
    "urn:labbrain:domain:d0c0ffee": True,
    "urn:labbrain:claims:main": True,
    "http://example.org/my-notes": True,
    "urn:labbrain:ontology": False,
    "urn:labbrain:system": False,
    "urn:labbrain:tasks": False,
    "urn:labbrain:staging:0123abcd": False,
}


def test_default_export_is_the_datasets_and_the_memory_graphs(store_target: Target) -> None:
    ok(invoke(store_target, "load", str(SAMPLE)))  # the dataset; the ontology, system, tasks
    inserts = " ".join(
        f'GRAPH <{graph}> {{ <urn:test:s> <urn:test:p> "{graph}" }}'
        for graph in GRAPH_KINDS
        if graph != SAMPLE_GRAPH
    )
    ok(invoke(store_target, "query", "--update", f"INSERT DATA {{ {inserts} }}"))
    with LabBrain(settings_of(store_target), read_only=True) as brain:
        assert all(brain.store.count(graph) > 0 for graph in GRAPH_KINDS)
    for fmt in ("trig", "nquads", "jsonld"):
        data = ok(invoke(store_target, "export", "--format", fmt))
        names = {q.graph_name.value for q in parse(data, PYOXIGRAPH_FORMATS[fmt])}  # type: ignore[union-attr]
        assert names == {graph for graph, exported in GRAPH_KINDS.items() if exported}, fmt
    # Every graph left out can still be named.
    internal = [graph for graph, exported in GRAPH_KINDS.items() if not exported]
    data = ok(invoke(store_target, "export", "--format", "nquads", *_graph_options(internal)))
    assert {q.graph_name.value for q in parse(data, RdfFormat.N_QUADS)} == set(internal)  # type: ignore[union-attr]


def _graph_options(graphs: list[str]) -> list[str]:
    return [option for graph in graphs for option in ("--graph", graph)]


def test_library_export_errors(sample_brain: LabBrain) -> None:
    with pytest.raises(GraphNotFound):
        export_bytes(sample_brain, "trig", ["nope"])
    with pytest.raises(InputError, match="unknown export format 'xml'"):
        export_bytes(sample_brain, "xml", [SLUG])


# ---------------------------------------------------------------------------- -o FILE
def test_export_to_file_is_complete_and_leaves_no_partial(loaded: Target, tmp_path: Path) -> None:
    target = tmp_path / "out" / "sample.nq"
    target.parent.mkdir()
    result = invoke(loaded, "export", "--format", "nquads", "--graph", SLUG, "-o", str(target))
    assert ok(result) == b""
    assert sorted(p.name for p in target.parent.iterdir()) == ["sample.nq"]
    quads = list(parse(path=str(target), format=RdfFormat.N_QUADS))
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        assert canonical(quads) == canonical(brain.store.quads(SAMPLE_GRAPH))


def test_export_to_file_replaces_an_existing_file(loaded: Target, tmp_path: Path) -> None:
    target = tmp_path / "sample.ttl"
    target.write_text("old content\n", encoding="utf-8")
    ok(invoke(loaded, "export", "--format", "turtle", "--graph", "dct-sample", "-o", str(target)))
    text = target.read_text(encoding="utf-8")
    assert "old content" not in text
    assert text.startswith("@prefix ")
    assert not (tmp_path / "sample.ttl.partial").exists()


def test_export_of_unknown_graph_exits_4_without_output(loaded: Target, tmp_path: Path) -> None:
    target = tmp_path / "missing.trig"
    result = invoke(loaded, "export", "--graph", "nope", "-o", str(target))
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert result.stderr.strip() == (
        "error: no graph named urn:labbrain:dataset:nope; `labbrain graphs` lists them"
    )
    assert not target.exists()


def test_failed_export_keeps_an_existing_file(loaded: Target, tmp_path: Path) -> None:
    target = tmp_path / "keep.trig"
    target.write_text("previous export\n", encoding="utf-8")
    result = invoke(loaded, "export", "--graph", "nope", "-o", str(target))
    assert result.exit_code == 4
    assert target.read_text(encoding="utf-8") == "previous export\n"


def test_failed_export_leaves_no_partial_file(loaded: Target, tmp_path: Path) -> None:
    target = tmp_path / "missing.trig"
    result = invoke(loaded, "export", "--graph", "nope", "-o", str(target))
    assert result.exit_code == 4
    assert list(tmp_path.glob("missing.trig*")) == []


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process umask for the test; the previous one is restored after it."""
    previous = os.umask(0o022)
    os.umask(previous)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_export_file_mode_follows_the_umask(
    mask: int, mode: int, loaded: Target, tmp_path: Path, umask: Callable[[int], None]
) -> None:
    """A new export file is made as any new file is (0666 less the umask), as cp makes one."""
    umask(mask)
    target = tmp_path / "sample.nq"
    ok(invoke(loaded, "export", "--format", "nquads", "--graph", SLUG, "-o", str(target)))
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_replaced_export_file_keeps_its_mode(
    loaded: Target, tmp_path: Path, umask: Callable[[int], None]
) -> None:
    umask(0o077)
    target = tmp_path / "shared.trig"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o664)
    ok(invoke(loaded, "export", "--graph", SLUG, "-o", str(target)))
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert target.read_text(encoding="utf-8") != "old\n"


def test_export_through_a_symbolic_link_replaces_its_target(loaded: Target, tmp_path: Path) -> None:
    """As cp does: the link stays, the file it points to gets the export."""
    out = tmp_path / "out"
    out.mkdir()
    real = out / "real.nq"
    real.write_text("old\n", encoding="utf-8")
    link = out / "link.nq"
    link.symlink_to(real)
    ok(invoke(loaded, "export", "--format", "nquads", "--graph", "dct-sample", "-o", str(link)))
    assert link.is_symlink() and link.resolve() == real
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        expected = canonical(brain.store.quads(DCT_GRAPH))
    assert canonical(parse(path=str(real), format=RdfFormat.N_QUADS)) == expected
    assert sorted(p.name for p in out.iterdir()) == ["link.nq", "real.nq"]


def test_export_to_stdout(loaded: Target) -> None:
    data = ok(invoke(loaded, "export", "--format", "ntriples", "--graph", SLUG))
    triples = list(parse(data, RdfFormat.N_TRIPLES))
    with LabBrain(settings_of(loaded), read_only=True) as brain:
        assert len(triples) == brain.store.count(SAMPLE_GRAPH)


def test_export_rejects_an_unknown_format(loaded: Target) -> None:
    result = invoke(loaded, "export", "--format", "xml")
    assert result.exit_code == 2
    assert "Invalid value for '--format'" in result.stderr
