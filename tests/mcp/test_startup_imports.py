"""What `labbrain mcp` imports before and while it answers: only what its toolsets need.

The real server runs in a child process, answers a search and a node, and writes the names of
the modules it imported when it exits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from conftest import SAMPLE, settings_for
from labbrain.core import LabBrain

pytestmark = pytest.mark.subprocess

#: Runs `labbrain` (its arguments follow) and, at exit, writes sys.modules to $MODULES_OUT.
_SERVER = """
import atexit, json, os, sys
atexit.register(
    lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules)))
)
from labbrain.cli import main
sys.argv[0] = "labbrain"
main()
"""

#: Never imported by a server offering the default toolsets: other toolsets' tools and
#: services, image fetching (off by default), the semantic stack, the HTTP server and
#: console, the CLI's tables and progress bars, pyld (the reference JSON-LD engine, for
#: plain JSON-LD loads and JSON-LD export only). (rich's console is imported: the SDK's
#: server sets up its logging with it.)
NOT_BY_DEFAULT = (
    "labbrain.mcp.images",
    "rich.table",
    "rich.progress",
    "labbrain.mcp.tools.memory",
    "labbrain.mcp.tools.claims",
    "labbrain.mcp.tools.tasks",
    "labbrain.mcp.tools.semantic",
    "labbrain.agent.memory",
    "labbrain.agent.claims",
    "labbrain.http",
    "labbrain.console",
    "numpy",
    "torch",
    "transformers",
    "sentence_transformers",
    "onnxruntime",
    "onnx",
    "tokenizers",
    "pyld",
)


def _imported(tmp_path: Path, store: Path, toolsets: str | None) -> set[str]:
    out = tmp_path / f"modules-{toolsets or 'default'}.json"
    env = {"MODULES_OUT": str(out)}
    if toolsets:
        env["LABBRAIN_TOOLSETS"] = toolsets
    params = StdioServerParameters(
        command=sys.executable, args=["-c", _SERVER, "--store", str(store), "mcp"], env=env
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            found = await client.call_tool("search_nodes", {"query": "actin", "limit": 3})
            assert not found.is_error and found.structured_content is not None
            uid = found.structured_content["results"][0]["uid"]
            node = await client.call_tool("get_node", {"uid": uid})
            assert not node.is_error

    asyncio.run(session())
    names: list[str] = json.loads(out.read_text(encoding="utf-8"))
    return set(names)


def _imported_by_rich_console() -> set[str]:
    """What importing rich's console imports, in the installed rich (rich 13 brings
    rich.table with it; rich 14 does not), as the SDK's server imports that console anyway."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, rich.console; print(json.dumps(list(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout))


def _under(modules: set[str], package: str) -> set[str]:
    return {m for m in modules if m == package or m.startswith(f"{package}.")}


def test_the_default_server_imports_only_what_it_serves(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with LabBrain(settings_for(store)) as brain:
        brain.load(str(SAMPLE))
    default = _imported(tmp_path, store, None)
    assert "labbrain.mcp.tools.discourse" in default and "labbrain.mcp.server" in default
    own = _imported_by_rich_console()
    for package in NOT_BY_DEFAULT:
        if package in own:
            continue  # rich's console imports it itself in this version of rich
        assert not _under(default, package), f"{package} imported by the default server"
    # The same check sees them when the server offers them.
    every = _imported(tmp_path, store, "all")
    for package in ("labbrain.mcp.tools.memory", "labbrain.agent.claims"):
        assert _under(every, package), f"{package} not imported by a server offering it"
