"""Evidence bundles through the adapters: ``labbrain bundle`` (click's CliRunner) and the
``bundle_evidence`` tool (an in-process MCP client), which writes only under the bundle
directory of the settings. Expected values come from the sample export, read with ``json``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from helpers import InProcessTools
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.mcp.server import build_server
from labbrain.settings import Settings

# Not from conftest: this folder has a conftest of its own, which shadows the top one's name.
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "akamatsu-sample.jsonld"
EVIDENCE = "z7rB78j3b"
RESULT = "ar5rfh34m"


@pytest.fixture(scope="module")
def sample_pages() -> dict[str, dict[str, Any]]:
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return {e["@id"].split(":", 1)[1]: e for e in document["@graph"] if "title" in e}


def tree(root: Path) -> set[str]:
    """Every path under ``root``, relative to it."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# ------------------------------------------------------------------------------ the command
def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--store", str(store), *args])


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("cli") / "store"
    result = run(store, "load", str(SAMPLE))
    assert result.exit_code == 0, result.output
    return store


def test_bundle_command_writes_a_crate(
    loaded_store: Path, tmp_path: Path, sample_pages: dict[str, dict[str, Any]]
) -> None:
    out = tmp_path / "bundles" / "evd"
    result = run(loaded_store, "bundle", EVIDENCE, "-o", str(out), "--crate-version", "1.1",
                 "--by", "Ada Example", "--agent", "assistant", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["node"]["uid"] == EVIDENCE
    assert report["node"]["creator"] == sample_pages[EVIDENCE]["creator"]
    assert report["crateVersion"] == "1.1"
    assert report["missing"] == ["method", "system", "observable"]
    assert tree(out) == {"README.md", "ro-crate-metadata.json"} == set(report["files"])
    crate = json.loads((out / "ro-crate-metadata.json").read_text(encoding="utf-8"))
    assert crate["@context"][0] == "https://w3id.org/ro/crate/1.1/context"
    action = next(e for e in crate["@graph"] if e["@type"] == "CreateAction")
    agents = {e["@id"]: e for e in crate["@graph"] if {"@id": e["@id"]} in action["agent"]}
    assert {(e["@type"], e["name"]) for e in agents.values()} == {
        ("Person", "Ada Example"),
        ("prov:SoftwareAgent", "assistant"),
    }
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert sample_pages[EVIDENCE]["title"].removeprefix("[[EVD]] - ") in readme


def test_bundle_command_refusals(loaded_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    assert run(loaded_store, "bundle", EVIDENCE, "-o", str(out)).exit_code == 0
    again = run(loaded_store, "bundle", RESULT, "-o", str(out))
    assert again.exit_code == 2 and "--replace" in again.output
    replaced = run(loaded_store, "bundle", RESULT, "-o", str(out), "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert "Result ar5rfh34m" in replaced.output
    assert "not stated by the node: method, system, observable" in replaced.output
    claim = run(loaded_store, "bundle", "B77kMS_GY", "-o", str(tmp_path / "c"))
    assert claim.exit_code == 2 and "Result or Evidence" in claim.output
    missing = run(loaded_store, "bundle", "nope", "-o", str(tmp_path / "c"))
    assert missing.exit_code == 4
    bad = run(loaded_store, "bundle", EVIDENCE, "-o", str(tmp_path / "c"), "--license", "a b")
    assert bad.exit_code == 2 and "license" in bad.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_bundle_command_takes_any_output_path(loaded_store: Path, tmp_path: Path) -> None:
    """``-o`` is the user's own choice: a path with ``..`` in it is fine."""
    (tmp_path / "here").mkdir()
    out = tmp_path / "here" / ".." / "there"
    result = run(loaded_store, "bundle", EVIDENCE, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert tree(tmp_path / "there") == {"README.md", "ro-crate-metadata.json"}


# ------------------------------------------------------------------------------ the tool
@pytest.fixture
def tools(tmp_path: Path) -> Iterator[InProcessTools]:
    settings = Settings(store=":memory:", bundle_dir=tmp_path / "bundles", agent_name="helper")
    with LabBrain(settings) as brain:
        brain.load(str(SAMPLE))
        yield InProcessTools(brain, ["discourse", "bundles"])


def test_tool_writes_the_bundle_under_the_bundle_directory(
    tools: InProcessTools, tmp_path: Path, sample_pages: dict[str, dict[str, Any]]
) -> None:
    answer = tools.ok("bundle_evidence", uid=RESULT, name="res-1", requestedBy="Ada Example")
    assert answer["bundle"] == "res-1"
    assert answer["node"]["uid"] == RESULT
    assert answer["node"]["title"] == sample_pages[RESULT]["title"].removeprefix("[[RES]] - ")
    assert answer["missing"] == ["method", "system", "observable"]
    assert tree(tmp_path) == {
        "bundles",
        "bundles/res-1",
        "bundles/res-1/README.md",
        "bundles/res-1/ro-crate-metadata.json",
    }
    crate = json.loads(
        (tmp_path / "bundles" / "res-1" / "ro-crate-metadata.json").read_text(encoding="utf-8")
    )
    names = {e.get("name") for e in crate["@graph"] if e["@type"] == "prov:SoftwareAgent"}
    assert names == {"labbrain", "helper"}
    text = tools.error("bundle_evidence", uid="B77kMS_GY", name="claim")
    assert "Result or Evidence" in text
    assert not (tmp_path / "bundles" / "claim").exists()


@pytest.mark.parametrize(
    "name",
    ["../escape", "/etc/escape", "a/b", "..", ".hidden", "", "x" * 101, "a\x00b", "a\\b"],
)
def test_tool_refuses_names_that_leave_the_bundle_directory(
    tools: InProcessTools, tmp_path: Path, name: str
) -> None:
    before = tree(tmp_path)
    text = tools.error("bundle_evidence", uid=EVIDENCE, name=name)
    assert "bundle name" in text or "bundle directory" in text, text
    assert tree(tmp_path) - before <= {"bundles"}


def test_tool_refuses_a_symbolic_link_out(tools: InProcessTools, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "bundles").mkdir()
    os.symlink(outside, tmp_path / "bundles" / "link")
    text = tools.error("bundle_evidence", uid=EVIDENCE, name="link")
    assert "symbolic link" in text
    assert list(outside.iterdir()) == []


def test_tool_is_not_offered_by_a_read_only_server(tmp_path: Path) -> None:
    import asyncio

    from mcp import Client

    with LabBrain(Settings(store=":memory:", bundle_dir=tmp_path)) as brain:

        async def names(read_only: bool) -> set[str]:
            server = build_server(brain, ["bundles"], read_only=read_only)
            async with Client(server) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

        assert asyncio.run(names(False)) == {"bundle_evidence"}
        assert asyncio.run(names(True)) == set()
