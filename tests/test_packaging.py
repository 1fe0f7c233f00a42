"""The built wheel ships the ontology and the SPARQL templates, and the import-layers contract
catches an upward import. (ruff, mypy and lint-imports themselves run in stage 0 of .ci/run.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess


@pytest.mark.slow
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


def _lint_imports(work: Path, source: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts over the package in ``source``."""
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert tool is not None, "import-linter is installed with the test extra"
    return subprocess.run(
        [tool, "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(source)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_layers_contract_catches_an_upward_import(tmp_path: Path) -> None:
    """A copy of the package passes the contracts; the same copy with one upward import
    (rdf, the lowest layer but two, importing the command line) fails, naming the contract."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    (layers,) = [c["name"] for c in contracts if c["type"] == "layers"]
    source = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "labbrain",
        source / "labbrain",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    clean = _lint_imports(tmp_path, source)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"{layers} KEPT" in clean.stdout

    namespaces = source / "labbrain" / "rdf" / "namespaces.py"
    namespaces.write_text(namespaces.read_text(encoding="utf-8") + "\nimport labbrain.cli\n")
    broken = _lint_imports(tmp_path, source)
    assert broken.returncode != 0, broken.stdout
    assert f"{layers} BROKEN" in broken.stdout
    assert "labbrain.rdf.namespaces -> labbrain.cli" in broken.stdout
