"""Benchmark results are committed: they name no folder of the machine that made them."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import BENCH
from results_file import portable, write_result


def test_paths_in_and_beside_the_project_are_written_from_it(tmp_path: Path) -> None:
    root = Path("/srv/lab")
    assert portable("pip install /srv/lab[semantic]", root) == "pip install .[semantic]"
    assert (
        portable('"path": "/srv/lab/bench/out/dg.jsonld"', root)
        == '"path": "./bench/out/dg.jsonld"'
    )
    assert portable("--exports-dir /srv/big/m1 --x", root) == "--exports-dir ../big/m1 --x"
    assert portable("`/srv/lab`, /srv/laboratory/x", root) == "`.`, ../laboratory/x"
    unchanged = "https://host/srv/lab/x /tmp/run-1 /srvx/lab a/srv/lab"
    assert portable(unchanged, root) == unchanged
    assert portable("/x/y", Path("/x")) == "./y"  # a project at the top: nothing around it
    target = tmp_path / "r.md"
    write_result(target, f"ran `{Path(__file__).resolve().parents[1]}/bench/x.py` ± µs")
    assert target.read_text(encoding="utf-8") == "ran `./bench/x.py` ± µs"


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.parametrize("path", sorted((BENCH / "results").glob("*.json")), ids=lambda p: p.name)
def test_committed_results_name_only_temporary_folders(path: Path) -> None:
    """Absolute paths left in a result are scratch folders (the stores a run made and
    removed); the project, the data beside it and a user's folders are written relative."""
    temporary = ("/tmp/", tempfile.gettempdir().rstrip("/") + "/")
    absolute = [s for s in strings(json.loads(path.read_text("utf-8"))) if s.startswith("/")]
    assert [s for s in absolute if not s.startswith(temporary) and s != "/tmp"] == []
