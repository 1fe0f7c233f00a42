"""The project is MIT-licensed: the LICENSE file holds the MIT text, pyproject.toml names it as
the license file, and the sdist and the wheel both carry it."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

#: The MIT license (https://spdx.org/licenses/MIT.html) as it reads in LICENSE, line breaks
#: aside, with this project's copyright line.
MIT_TEXT = (
    "MIT License "
    "Copyright (c) 2026 labbrain contributors "
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
    'software and associated documentation files (the "Software"), to deal in the Software '
    "without restriction, including without limitation the rights to use, copy, modify, "
    "merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit "
    "persons to whom the Software is furnished to do so, subject to the following conditions: "
    "The above copyright notice and this permission notice shall be included in all copies or "
    "substantial portions of the Software. "
    'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, '
    "INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR "
    "PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE "
    "FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR "
    "OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER "
    "DEALINGS IN THE SOFTWARE."
)


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_file_is_the_mit_license() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert " ".join(text.split()) == MIT_TEXT


def test_pyproject_names_the_license_and_its_file() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["license"] == "MIT"  # an SPDX expression (PEP 639)
    assert project["license-files"] == ["LICENSE"]
    assert "License ::" not in " ".join(project.get("classifiers", []))  # PEP 639: not both


@pytest.mark.subprocess
@pytest.mark.slow
def test_sdist_and_wheel_carry_the_license(tmp_path: Path) -> None:
    """Built by the build backend pyproject.toml asks for (installed into a scratch
    directory), the sdist holds LICENSE and the wheel declares and holds it (PEP 639)."""
    build_system = _pyproject()["build-system"]
    assert isinstance(build_system, dict)
    backend = tmp_path / "backend"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(backend)]
        + build_system["requires"],
        check=True,
        timeout=600,
    )
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        env={"PYTHONPATH": str(backend), "PATH": str(Path(sys.executable).parent)},
        check=True,
        timeout=600,
    )
    (sdist,) = out.glob("labbrain-*.tar.gz")
    (wheel,) = out.glob("labbrain-*.whl")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE")
        assert member is not None
        assert " ".join(member.read().decode("utf-8").split()) == MIT_TEXT
    with zipfile.ZipFile(wheel) as archive:
        dist_info = f"{wheel.name.split('-py3')[0]}.dist-info"
        license_text = archive.read(f"{dist_info}/licenses/LICENSE").decode("utf-8")
        metadata = archive.read(f"{dist_info}/METADATA").decode("utf-8")
    assert " ".join(license_text.split()) == MIT_TEXT
    assert re.search(r"^License-Expression: MIT$", metadata, re.MULTILINE)
    assert re.search(r"^License-File: LICENSE$", metadata, re.MULTILINE)
