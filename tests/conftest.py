"""Shared fixtures: sample and real data paths, stores in memory and on disk."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from labbrain.core import LabBrain
from labbrain.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
SHARED = ROOT.parent / "shared" / "data"
BENCH = ROOT / "bench"

SAMPLE = DATA / "akamatsu-sample.jsonld"
SAMPLE_V0 = DATA / "v0-draft-sample.jsonld"
SAMPLE_DCT = DATA / "dct-sample.jsonld"
REAL = SHARED / "dg-social-media-polarization.jsonld"
REAL_DCT = SHARED / "dg-social-media-polarization.dct.jsonld"

SAMPLE_GRAPH = "urn:labbrain:dataset:akamatsulab-sample"

#: Page nodes of the sample by type (data/README.md): 12 typed Hypothesis nodes plus the one
#: whose @type is "nodeSchema", typed from its "[[HYP]] - " title prefix.
SAMPLE_TYPES = {
    "Evidence": 32,
    "Claim": 30,
    "Result": 25,
    "Source": 20,
    "Hypothesis": 13,
    "Question": 12,
    "Conclusion": 10,
    "Issue": 8,
}
REAL_GRAPH = "urn:labbrain:dataset:dg-social-media-polarization"

if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))


def settings_for(store: str | Path, **overrides: object) -> Settings:
    """Settings for a test store, ignoring any LABBRAIN_* variables of the environment."""
    return Settings(store=str(store), **overrides)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's own store or settings."""
    for name in list(__import__("os").environ):
        if name.startswith("LABBRAIN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def memory_brain() -> Iterator[LabBrain]:
    """An empty in-memory store."""
    with LabBrain(settings_for(":memory:")) as brain:
        yield brain


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A directory for an on-disk store (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def disk_brain(store_dir: Path) -> Iterator[LabBrain]:
    """An empty on-disk store, writable."""
    with LabBrain(settings_for(store_dir)) as brain:
        yield brain


@pytest.fixture
def sample_brain() -> Iterator[LabBrain]:
    """An in-memory store with the sample export loaded."""
    with LabBrain(settings_for(":memory:")) as brain:
        brain.load(str(SAMPLE))
        yield brain
