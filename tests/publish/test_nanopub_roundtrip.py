"""Round trip: the sample's nanopublications, exported signed and loaded into a fresh store, give
the export's nodes (identity, type, title, creator, creation time), relations and stances;
expected values from the export file."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import settings_for
from tests.publish.test_nanopub_export import expected, export, map_people, run

from labbrain.core import LabBrain

TITLE_PREFIX = re.compile(r"^\[\[[A-Z]+\]\] - ")
STANCES = """
PREFIX lb: <https://w3id.org/labbrain/ns#>
SELECT ?subject ?stance ?target WHERE {
  GRAPH ?g { ?record a lb:Stance ; lb:stance ?stance ; lb:stanceSubject ?subject ;
             lb:stanceTarget ?target }
}
"""


def _export_nodes() -> dict[str, dict[str, str]]:
    """The attributed nodes of the four kinds, with their fields as the export gives them."""
    import json

    from tests.conftest import SAMPLE

    doc = json.loads(SAMPLE.read_text(encoding="utf-8"))
    base = doc["@context"]["pages"]
    wanted, _ = expected()
    fields = {}
    for entry in doc["@graph"]:
        iri = base + entry.get("@id", ":").split(":", 1)[1]
        if iri in wanted and wanted[iri]["creator"]:
            fields[iri] = {
                "uid": wanted[iri]["uid"],
                "type": wanted[iri]["kind"],
                "title": TITLE_PREFIX.sub("", entry["title"]),
                "creator": entry["creator"],
                "created": entry.get("created", ""),
            }
    return fields


def test_exported_nanopubs_load_back_as_the_same_nodes_relations_and_stances(
    sample_store: Path, signing_key_pem: Path, tmp_path: Path
) -> None:
    map_people(sample_store)
    out = tmp_path / "lab.trig"
    assert export(sample_store, out, signing_key_pem).exit_code == 0
    fresh = tmp_path / "fresh"
    loaded = run(fresh, "load", str(out))
    assert loaded.exit_code == 0, loaded.output
    nodes = _export_nodes()
    _, relations = expected()
    wanted_relations = {r for r in relations if r[0] in nodes and r[2] in nodes}
    with LabBrain(settings_for(fresh)) as brain:
        (graph,) = brain.index.graphs()
        found, total = brain.index.nodes(graphs=[graph], limit=10_000)
        assert total == len(nodes)
        assert {
            n.iri: {
                "uid": n.uid,
                "type": n.node_type,
                "title": n.title,
                "creator": n.creator,
                "created": n.created,
            }
            for n in found
        } == nodes
        assert brain.index.dataset_state(graph).relations == wanted_relations
        stances = {
            (row["subject"].value, row["stance"].value, row["target"].value)
            for row in brain.query(STANCES)  # type: ignore[union-attr]
        }
    word = {"Supports": "supports", "Opposes": "disputes"}
    assert stances == {(s, word[label], d) for s, label, d in wanted_relations if label in word}
    assert stances, "the sample has Supports and Opposes relations among published nodes"
