"""Every runnable example of the README and docs/ runs as shown.

A runnable example is a fenced block with the info string ``console`` (docs/README.md,
"Examples that run"): its commands are the lines after a ``$ `` prompt, continued while a quote
is open or a line ends with a backslash; the other lines are output, not compared. The blocks
of one page run in order, each command with bash, in a fresh temporary directory with a fresh
store, and each must exit with status 0.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
PROMPT = "$ "
COMMAND_TIMEOUT = 120


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str


def _complete(text: str) -> bool:
    """Whether a command is whole: no quote left open, no line continuation at its end."""
    if text.endswith("\\"):
        return False
    try:
        shlex.split(text)
    except ValueError:
        return False
    return True


def fenced_blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """The fenced blocks of a markdown file: (info string, line of the first content line,
    content lines). A block ends at a fence of the same character at least as long."""
    blocks: list[tuple[str, int, list[str]]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        start, body = i + 2, []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            body.append(lines[i])
            i += 1
        blocks.append((info, start, body))
        i += 1
    return blocks


def example_commands(path: Path, page: str) -> list[Command]:
    """The commands of a page's ``console`` blocks, in order."""
    commands: list[Command] = []
    for info, start, body in fenced_blocks(path):
        if info.split()[:1] != ["console"]:
            continue
        found = 0
        j = 0
        while j < len(body):
            if not body[j].startswith(PROMPT):
                j += 1
                continue
            line, text = start + j, body[j][len(PROMPT) :]
            while not _complete(text) and j + 1 < len(body):
                j += 1
                text += "\n" + body[j]
            assert _complete(text), f"{page}:{line}: command never ends: {text!r}"
            commands.append(Command(page, line, text))
            found += 1
            j += 1
        assert found, f"{page}:{start}: console block without a '{PROMPT}' command"
    return commands


EXAMPLES = {
    page: example_commands(path, page)
    for path in PAGES
    for page in [path.relative_to(ROOT).as_posix()]
}


def test_the_readme_and_the_docs_have_runnable_examples() -> None:
    assert EXAMPLES["README.md"], "the README's first query is a console block"
    assert sum(len(commands) for commands in EXAMPLES.values()) >= 10


def test_the_parser_reads_prompts_continuations_and_nested_fences(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "````markdown\n```console\n$ not run\n```\n````\n\n"
        "```console\n$ labbrain query 'SELECT\n  ?x' \\\n    --format csv\noutput\n"
        "$ echo done\ndone\n```\n\n```bash\nlabbrain mcp\n```\n",
        encoding="utf-8",
    )
    blocks = fenced_blocks(page)
    assert [info for info, _, _ in blocks] == ["markdown", "console", "bash"]
    body = blocks[1][2]
    assert body[0] == "$ labbrain query 'SELECT"
    assert _complete("labbrain query 'SELECT\n  ?x' \\\n    --format csv")
    assert not _complete("labbrain query 'SELECT")
    assert not _complete("labbrain query 'SELECT\n  ?x' \\")
    commands = example_commands(page, "page.md")
    assert [(c.line, c.text) for c in commands] == [
        (8, "labbrain query 'SELECT\n  ?x' \\\n    --format csv"),
        (12, "echo done"),
    ]


def _environment(home: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("LABBRAIN_")}
    bin_dir = Path(sys.executable).parent
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home / "home"),
        XDG_DATA_HOME=str(home / "xdg-data"),
        LABBRAIN_STORE=str(home / "store"),
        COLUMNS="100",
    )
    return env


@pytest.mark.parametrize("page", [page for page, commands in EXAMPLES.items() if commands])
def test_the_examples_of_a_page_run(page: str, tmp_path: Path) -> None:
    labbrain = Path(sys.executable).parent / "labbrain"
    assert labbrain.exists(), f"the labbrain command is not installed beside {sys.executable}"
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    (work / "data").symlink_to(ROOT / "data", target_is_directory=True)
    env = _environment(tmp_path)
    for command in EXAMPLES[page]:
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail\n{command.text}"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        assert done.returncode == 0, (
            f"{command.page}:{command.line}: exit status {done.returncode}\n"
            f"$ {command.text}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-2000:]}"
        )
