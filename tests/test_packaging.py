"""The built wheel ships the ontology and the SPARQL templates; the code stays lint- and type-clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess


def test_wheel_contains_ontology_and_queries(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("labbrain-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for ttl in (ROOT / "ontology").glob("*.ttl"):
        assert f"labbrain/ontology/{ttl.name}" in names
    for rq in (ROOT / "queries").glob("*.rq"):
        assert f"labbrain/queries/{rq.name}" in names
    assert "labbrain/cli.py" in names


def test_installed_resources_are_found_without_the_source_tree(tmp_path: Path) -> None:
    """Resources resolve from the package itself once installed (not from the checkout)."""
    from labbrain.rdf.resources import resource_dir

    assert {p.name for p in resource_dir("queries").iterdir()} >= {"datasets.rq", "index_nodes.rq"}


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "src", "tests", "bench"],
        ["ruff", "format", "--check", "src", "tests", "bench"],
        ["mypy"],
    ],
    ids=["ruff", "ruff-format", "mypy"],
)
def test_code_quality(command: list[str]) -> None:
    tool = shutil.which(command[0], path=str(Path(sys.executable).parent))
    assert tool is not None, f"{command[0]} is installed with the test extra"
    result = subprocess.run(
        [tool, *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
