"""``labbrain mcp-config``: the configuration each MCP client needs to start this labbrain.

In-process (CliRunner) for every client: stdout is the configuration alone (JSON, or one
``claude mcp add`` line), naming this environment's labbrain by an absolute path and the store
and export as absolute paths. One test (marked subprocess) starts the server exactly as the
printed Claude Desktop configuration says, from another directory and without this
environment's PATH, and calls a tool over stdio.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp import Client, StdioServerParameters

from conftest import SAMPLE
from labbrain.cli import main
from labbrain.core import LabBrain
from labbrain.install import (
    claude_desktop_config_path,
    client_config,
    client_note,
    labbrain_command,
)
from labbrain.settings import Settings

#: The console script of the environment the tests run in (what `pip install -e` put there).
LABBRAIN = Path(sys.executable).parent / "labbrain"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def config(*args: str, env: dict[str, str] | None = None) -> Any:
    """The JSON a successful ``labbrain ARGS`` printed on stdout (all of stdout)."""
    result = run(*args, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_runs_this_labbrain(command: str) -> None:
    """``command`` is an absolute path to an executable file: this environment's labbrain."""
    assert os.path.isabs(command), command
    assert os.access(command, os.X_OK), command
    assert os.path.samefile(command, LABBRAIN)


# ---------------------------------------------------------------------------- the clients
def test_claude_desktop_is_the_default_and_names_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLE, tmp_path / "lab.jsonld")
    found = config("--store", "brain", "mcp-config", "--data", "lab.jsonld")
    assert found == config(
        "--store", "brain", "mcp-config", "claude-desktop", "--data", "lab.jsonld"
    )
    (server,) = found["mcpServers"].values()
    assert list(found["mcpServers"]) == ["labbrain"]
    assert_runs_this_labbrain(server["command"])
    assert server["args"] == ["--store", str(tmp_path / "brain"), "mcp"]
    assert server["env"] == {"DATA_PATH": str(tmp_path / "lab.jsonld")}


def test_cursor_has_the_mcp_servers_shape(tmp_path: Path) -> None:
    found = config("--store", str(tmp_path / "s"), "mcp-config", "cursor")
    assert list(found) == ["mcpServers"]
    server = found["mcpServers"]["labbrain"]
    assert_runs_this_labbrain(server["command"])
    assert server["args"] == ["--store", str(tmp_path / "s"), "mcp"]
    assert "env" not in server  # nothing to add without --data


def test_toolsets_and_read_only_are_passed_to_the_server(tmp_path: Path) -> None:
    found = config(
        "--store",
        str(tmp_path / "s"),
        "mcp-config",
        "cursor",
        "--toolsets",
        "memory, Discourse",
        "--read-only",
    )
    args = found["mcpServers"]["labbrain"]["args"]
    assert args == [
        "--store",
        str(tmp_path / "s"),
        "mcp",
        "--toolsets",
        "discourse,memory",
        "--read-only",
    ]
    refused = run("mcp-config", "--toolsets", "banana")
    assert refused.exit_code != 0 and "unknown toolset 'banana'" in refused.stderr


def test_vscode_has_the_servers_shape_with_type_stdio(tmp_path: Path) -> None:
    found = config("--store", str(tmp_path / "s"), "mcp-config", "vscode", "--data", str(SAMPLE))
    assert list(found) == ["servers"]
    server = found["servers"]["labbrain"]
    assert server["type"] == "stdio"
    assert_runs_this_labbrain(server["command"])
    assert server["args"] == ["--store", str(tmp_path / "s"), "mcp"]
    assert server["env"] == {"DATA_PATH": str(SAMPLE)}


def test_claude_code_is_one_claude_mcp_add_line(tmp_path: Path) -> None:
    store = tmp_path / "a store"  # a space: the line must quote it
    result = run("--store", str(store), "mcp-config", "claude-code", "--data", str(SAMPLE))
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1
    words = shlex.split(result.stdout)
    split = words.index("--")
    options, (program, *args) = words[:split], words[split + 1 :]
    assert options[:3] == ["claude", "mcp", "add"]
    assert options[options.index("--transport") + 1] == "stdio"
    assert options[options.index("-e") + 1] == f"DATA_PATH={SAMPLE}"
    # The name comes last, right after --scope user: claude's -e takes any number of values
    # and would read a name that follows it as one more KEY=value.
    assert options[-3:] == ["--scope", "user", "labbrain"]
    assert_runs_this_labbrain(program)
    assert args == ["--store", str(store), "mcp"]


def test_claude_code_without_data_passes_no_env(tmp_path: Path) -> None:
    result = run("--store", str(tmp_path / "s"), "mcp-config", "claude-code")
    words = shlex.split(result.stdout)
    assert "-e" not in words
    split = words.index("--")
    assert words[split - 3 : split + 1] == ["--scope", "user", "labbrain", "--"]


# ---------------------------------------------------------------------------- options
def test_name_names_the_server(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    assert list(config("--store", store, "mcp-config", "--name", "lab-2")["mcpServers"]) == [
        "lab-2"
    ]
    assert list(
        config("--store", store, "mcp-config", "vscode", "--name", "lab_x.y")["servers"]
    ) == ["lab_x.y"]
    line = run("--store", store, "mcp-config", "claude-code", "--name", "lab-2").stdout
    assert shlex.split(line)[shlex.split(line).index("--") - 1] == "lab-2"


@pytest.mark.parametrize("name", ["", "two words", "-e", "a/b", "x" * 65])
def test_a_bad_name_is_refused(name: str) -> None:
    result = run("--store", ":memory:", "mcp-config", "--name", name)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: --name") and result.stderr.count("\n") == 1


def test_the_store_of_labbrain_store_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    found = config("mcp-config", env={"LABBRAIN_STORE": "rel/store"})
    assert found["mcpServers"]["labbrain"]["args"] == [
        "--store",
        str(tmp_path / "rel/store"),
        "mcp",
    ]


def test_the_default_store_is_the_user_data_dir(tmp_path: Path) -> None:
    # conftest points XDG_DATA_HOME at tmp_path/xdg-data; the default store is in it.
    found = config("mcp-config")
    assert found["mcpServers"]["labbrain"]["args"] == ["--store", Settings().store, "mcp"]
    assert Settings().store == str(tmp_path / "xdg-data" / "labbrain" / "store")


def test_an_in_memory_store_stays_in_memory() -> None:
    found = config("--store", ":memory:", "mcp-config", "cursor")
    assert found["mcpServers"]["labbrain"]["args"] == ["--store", ":memory:", "mcp"]


def test_a_remote_store_is_passed_as_its_endpoints() -> None:
    found = config(
        "--endpoint",
        "http://127.0.0.1:7878/query",
        "--gsp-endpoint",
        "http://127.0.0.1:7878/store",
        "mcp-config",
    )
    assert found["mcpServers"]["labbrain"]["args"] == [
        "--endpoint",
        "http://127.0.0.1:7878/query",
        "--gsp-endpoint",
        "http://127.0.0.1:7878/store",
        "mcp",
    ]


def test_a_data_file_that_cannot_serve_is_refused(tmp_path: Path) -> None:
    missing = run("--store", ":memory:", "mcp-config", "--data", str(tmp_path / "none.jsonld"))
    assert missing.exit_code == 2 and missing.stdout == ""
    assert "no such file" in missing.stderr
    folder = run("--store", ":memory:", "mcp-config", "--data", str(tmp_path))
    assert folder.exit_code == 2 and "is a directory, not a file" in folder.stderr


def test_an_unknown_client_is_refused() -> None:
    result = run("--store", ":memory:", "mcp-config", "zed")
    assert result.exit_code == 2
    assert "claude-desktop" in result.stderr and result.stdout == ""


def test_stderr_says_where_the_configuration_goes(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    desktop = run("--store", store, "mcp-config")
    assert claude_desktop_config_path() in desktop.stderr
    assert ".cursor/mcp.json" in run("--store", store, "mcp-config", "cursor").stderr
    assert ".vscode/mcp.json" in run("--store", store, "mcp-config", "vscode").stderr


def test_other_settings_are_named_but_not_copied(tmp_path: Path) -> None:
    """A secret set in the shell stays out of a configuration file; stderr names it."""
    result = run(
        "--store",
        str(tmp_path / "s"),
        "mcp-config",
        env={"LABBRAIN_UPDATE_TOKEN": "s3cret-token", "LABBRAIN_MAX_ROWS": "5"},
    )
    assert result.exit_code == 0
    assert "s3cret-token" not in result.stdout and "LABBRAIN_" not in result.stdout
    assert "note: LABBRAIN_MAX_ROWS is set here but not written" in result.stderr
    assert "note: LABBRAIN_UPDATE_TOKEN is set here but not written" in result.stderr
    assert "s3cret-token" not in result.stderr


# ---------------------------------------------------------------------------- building blocks
def test_the_config_file_location_of_each_platform() -> None:
    assert (
        claude_desktop_config_path("darwin")
        == "~/Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert claude_desktop_config_path("win32") == r"%APPDATA%\Claude\claude_desktop_config.json"
    assert claude_desktop_config_path("linux") == "~/.config/Claude/claude_desktop_config.json"
    assert "~/Library/Application Support/Claude/" in client_note(
        "claude-desktop", name="lab", platform="darwin"
    )
    assert '"lab"' in client_note("claude-desktop", name="lab", platform="darwin")


def test_client_config_refuses_an_unknown_client() -> None:
    with pytest.raises(ValueError, match="unknown MCP client 'zed'"):
        client_config("zed", name="labbrain", command=["/bin/labbrain", "mcp"], env={})


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_labbrain_command_prefers_the_environments_script(tmp_path: Path) -> None:
    scripts = _executable(tmp_path / "env" / "bin" / "labbrain").parent
    beside = _executable(tmp_path / "other" / "labbrain")
    found = labbrain_command(
        scripts=str(scripts),
        python=str(beside.parent / "python"),
        prefix=str(tmp_path / "env"),
        which=lambda name: None,
    )
    assert found == [str(scripts / "labbrain")]


def test_labbrain_command_falls_back_to_the_script_beside_python(tmp_path: Path) -> None:
    beside = _executable(tmp_path / "venv" / "bin" / "labbrain")
    found = labbrain_command(
        scripts=str(tmp_path / "empty"),
        python=str(beside.parent / "python"),
        prefix=str(tmp_path / "venv"),
        which=lambda name: None,
    )
    assert found == [str(beside)]


def test_labbrain_command_takes_path_only_inside_this_environment(tmp_path: Path) -> None:
    inside = _executable(tmp_path / "env" / "Scripts-elsewhere" / "labbrain")
    outside = _executable(tmp_path / "somewhere" / "labbrain")
    python = str(tmp_path / "env" / "python" / "python3")
    common = {"scripts": str(tmp_path / "empty"), "python": python, "prefix": str(tmp_path / "env")}
    assert labbrain_command(**common, which=lambda name: str(inside)) == [str(inside)]
    # A labbrain on PATH from another environment would serve another install's code.
    assert labbrain_command(**common, which=lambda name: str(outside)) == [python, "-m", "labbrain"]


def test_labbrain_command_skips_a_file_that_is_not_executable(tmp_path: Path) -> None:
    plain = tmp_path / "env" / "bin" / "labbrain"
    plain.parent.mkdir(parents=True)
    plain.write_text("not a program")
    python = str(tmp_path / "env" / "bin" / "python")
    found = labbrain_command(
        scripts=str(plain.parent), python=python, prefix=str(tmp_path / "env"), which=lambda n: None
    )
    assert found == [python, "-m", "labbrain"]


def test_labbrain_command_of_this_environment() -> None:
    (command,) = labbrain_command()
    assert_runs_this_labbrain(command)


# ---------------------------------------------------------------------------- a real client
@pytest.mark.subprocess
def test_the_printed_claude_desktop_config_starts_a_working_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started as the configuration says, in another directory and with a PATH that does not
    hold this environment (as an app started from the desktop has it), the server loads the
    export and answers get_schema; the store is where the configuration put it."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    shutil.copy(SAMPLE, work / "lab.jsonld")
    server = config("--store", "store", "mcp-config", "--data", "lab.jsonld")["mcpServers"][
        "labbrain"
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env={**server["env"], "PATH": "/usr/bin:/bin"},
        cwd=elsewhere,
    )

    async def call() -> Any:
        async with Client(params, read_timeout_seconds=120) as client:
            return await client.call_tool("get_schema", {})

    schema = asyncio.run(call())
    assert not schema.is_error
    (dataset,) = schema.structured_content["datasets"]
    assert dataset["dataset"] == "akamatsulab-sample" and dataset["nodes"] == 150
    assert not (elsewhere / "store").exists()
    with LabBrain(Settings(store=str(work / "store")), read_only=True) as brain:
        assert [d["nodes"] for d in brain.datasets()] == [150]
