"""Settings from the environment: list settings as people write them (a plain path, a
separated list, or JSON), and any value that cannot be used as one line naming the variable
with an example, never a traceback; ``mcp-config --load-dir`` writes LABBRAIN_LOAD_DIRS."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from labbrain.cli import main
from labbrain.settings import Settings


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("/data/exports", ["/data/exports"]),
        (f"/data/exports{os.pathsep}/data/vaults", ["/data/exports", "/data/vaults"]),
        (f" /data/a {os.pathsep}{os.pathsep}", ["/data/a"]),
        ('["/data/a", "/data/b"]', ["/data/a", "/data/b"]),
        ("", []),
    ],
)
def test_load_dirs_from_the_environment(
    written: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABBRAIN_LOAD_DIRS", written)
    assert Settings().load_dirs == [Path(p) for p in expected]


def test_host_lists_are_comma_separated_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABBRAIN_HTTP_ALLOWED_HOSTS", "lab.example.org, lab.example.org:8080")
    monkeypatch.setenv("LABBRAIN_HTTP_ALLOWED_ORIGINS", '["https://notebook.example.org"]')
    monkeypatch.setenv("LABBRAIN_IMAGE_HOSTS", "images.example.org")
    settings = Settings()
    assert settings.http_allowed_hosts == ["lab.example.org", "lab.example.org:8080"]
    assert settings.http_allowed_origins == ["https://notebook.example.org"]
    assert settings.image_hosts == ["images.example.org"]


def test_a_plain_load_dir_lets_every_command_run(tmp_path: Path) -> None:
    """What a new user met: LABBRAIN_LOAD_DIRS=/some/dir made every command die."""
    env = {"LABBRAIN_LOAD_DIRS": str(tmp_path)}
    result = CliRunner().invoke(main, ["--store", str(tmp_path / "s"), "info"], env=env)
    assert result.exit_code == 0, result.output
    assert str(tmp_path) in result.output


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("LABBRAIN_LOAD_DIRS", "[/data/a", "LABBRAIN_LOAD_DIRS: not a JSON list"),
        (
            "LABBRAIN_JSONLD_CONTEXTS",
            "/data/ctx.jsonld",
            "LABBRAIN_JSONLD_CONTEXTS: cannot be read",
        ),
        ("LABBRAIN_HTTP_PORT", "eighty", "LABBRAIN_HTTP_PORT: Input should be a valid integer"),
    ],
)
def test_an_unusable_setting_is_one_line_with_an_example(
    variable: str, value: str, says: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        main, ["--store", str(tmp_path / "s"), "stats"], env={variable: value}
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], result.output
    assert "Traceback" not in result.output
    if variable != "LABBRAIN_HTTP_PORT":  # a plain number needs no example
        assert f"(e.g. {variable}=" in lines[0]


def test_mcp_config_writes_the_load_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exports").mkdir()
    (tmp_path / "vaults").mkdir()
    result = CliRunner().invoke(
        main,
        [
            "--store",
            "s",
            "mcp-config",
            "--load-dir",
            "exports",
            "--load-dir",
            str(tmp_path / "vaults"),
        ],
    )
    assert result.exit_code == 0, result.output
    (server,) = json.loads(result.stdout)["mcpServers"].values()
    written = server["env"]["LABBRAIN_LOAD_DIRS"]
    assert written.split(os.pathsep) == [str(tmp_path / "exports"), str(tmp_path / "vaults")]
    # and a server started with that environment reads it back as the two directories
    monkeypatch.setenv("LABBRAIN_LOAD_DIRS", written)
    assert Settings().load_dirs == [tmp_path / "exports", tmp_path / "vaults"]


def test_mcp_config_refuses_a_load_dir_that_is_not_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--store", str(tmp_path / "s"), "mcp-config", "--load-dir", str(tmp_path / "no")]
    )
    assert (
        result.exit_code == 2
        and "--load-dir" in result.output
        and "no such directory" in result.output
    )
