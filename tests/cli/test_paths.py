"""Every command that takes a path, against every kind of path that cannot serve it.

Each command (a file to read, a file to write, a directory to create or to read, the store)
meets a missing path, a directory, a regular file, a path through a regular file, a path it
may not read or write, a name too long, a device, a named pipe and a read-only location. A
path that cannot serve must give exactly one line on stderr (no traceback) with the exit code
docs/commands.md documents (2 bad input, 3 store problem), leave the store exactly as it was
(every graph, compared as sorted N-Quads read with pyoxigraph itself) and leave the path and
its directory as they were. A path that can serve (a file to replace, a missing directory a
backup creates) must work.

The runs are in-process (CliRunner), except ``labbrain mcp`` (its ``DATA_PATH``), which
serves stdio and runs as a child process, and, as root, the paths it may not read or write:
mode bits deny root nothing, so those commands run as a child process without the
capabilities that override them (``setpriv``, util-linux). A named pipe is given a partner
thread at its other end, so that a command which wrongly opens one fails instead of blocking
the test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyoxigraph import RdfFormat, Store

from conftest import SAMPLE, SAMPLE_DCT, require, settings_for
from labbrain import cli
from labbrain.cli import main
from labbrain.core import LabBrain

#: Where a path a command reads or writes stands (see ``bad_path``).
INPUT_FILE = "file to read"
OUTPUT_FILE = "file to write"
NEW_DIRECTORY = "directory to create"
INPUT_DIRECTORY = "directory to read"
STORE = "store"


@dataclass(frozen=True)
class Command:
    """A command line with the path in it, and what the path is to the command."""

    role: str
    args: Callable[[str], list[str]]
    env: Callable[[str], dict[str, str]] = field(default=lambda path: {})
    #: The path does not go after --store: the command runs on the loaded store.
    on_store: bool = True


COMMANDS: dict[str, Command] = {
    "load": Command(INPUT_FILE, lambda p: ["load", p]),
    "load --format": Command(INPUT_FILE, lambda p: ["load", "--format", "turtle", p]),
    "query -f": Command(INPUT_FILE, lambda p: ["query", "-f", p]),
    "export -o": Command(OUTPUT_FILE, lambda p: ["export", "--graph", "dct-sample", "-o", p]),
    "eval-retrieval --chart": Command(
        OUTPUT_FILE, lambda p: ["eval-retrieval", "--mode", "keyword", "--chart", p]
    ),
    "backup": Command(NEW_DIRECTORY, lambda p: ["backup", p]),
    "restore": Command(INPUT_DIRECTORY, lambda p: ["restore", p]),
    "embed --model": Command(INPUT_DIRECTORY, lambda p: ["embed", "--model", p]),
    "--store graphs": Command(STORE, lambda p: ["--store", p, "graphs"], on_store=False),
    "--store load": Command(
        STORE, lambda p: ["--store", p, "load", str(SAMPLE_DCT)], on_store=False
    ),
}
#: ``labbrain mcp`` loads the file named by DATA_PATH before it serves (a child process).
MCP = Command(INPUT_FILE, lambda p: ["mcp"], env=lambda p: {"DATA_PATH": p})

#: The kinds of path that mode bits close, which deny root nothing: as root, a command meets
#: them in a child process without the capabilities that let root past mode bits.
CLOSED = ("unreadable", "unwritable")
ROOT = os.geteuid() == 0
#: Runs a command without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that mode bits deny
#: root as they deny any other user (the bounding set caps what a program started by root
#: has).
SETPRIV = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")

WORKS = (0, ())
#: The expected outcome of each command on each kind of path: the exit code and fragments of
#: the one error line, or WORKS. A kind of path missing for a command is not one it can meet
#: in a way of its own (e.g. a regular file is what ``load`` takes).
EXPECTED: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {
    INPUT_FILE: {
        "missing": (2, ("no such file",)),
        "directory": (2, ("is a directory, not a file",)),
        "through a file": (2, ("is a file, not a directory",)),
        "unreadable": (2, ("is not readable (permission denied)",)),
        "name too long": (2, ("file name too long", "use shorter names")),
        "device": (2, ("is a character device, not a file",)),
        "named pipe": (2, ("is a named pipe (FIFO), not a file",)),
    },
    OUTPUT_FILE: {
        "missing": (2, ("no such directory", "create it first")),
        "directory": (2, ("is a directory; name a file",)),
        "file": WORKS,
        "through a file": (2, ("is a file, not a directory",)),
        "unwritable": (2, ("cannot create a file in", "permission denied")),
        "name too long": (2, ("file name too long",)),
        "device": (2, ("is a character device, not a file",)),
        "named pipe": (2, ("is a named pipe (FIFO), not a file",)),
        "read-only location": (2, ("cannot create a file in",)),
    },
    NEW_DIRECTORY: {
        "missing": WORKS,
        "directory": (2, ("already exists and is not empty",)),
        "file": (2, ("is a file, not a directory",)),
        "through a file": (2, ("is a file, not a directory",)),
        "unwritable": (2, ("cannot create a directory for the backup in", "permission denied")),
        "name too long": (2, ("file name too long",)),
        "device": (2, ("is a character device, not a directory",)),
        "named pipe": (2, ("is a named pipe (FIFO), not a directory",)),
        "read-only location": (2, ("cannot create a directory for the backup in",)),
    },
    INPUT_DIRECTORY: {
        "missing": (2, ("no such",)),
        "file": (2, ("is a file, not a",)),
        "through a file": (2, ("is a file, not a directory",)),
        "unreadable": (2, ("is not readable (permission denied)",)),
        "name too long": (2, ("file name too long",)),
        "device": (2, ("is a character device, not a",)),
        "named pipe": (2, ("is a named pipe (FIFO), not a",)),
    },
    STORE: {
        "file": (3, ()),
        "through a file": (3, ()),
        "unwritable": (3, ()),
        "name too long": (3, ()),
        "device": (3, ()),
        "named pipe": (3, ()),
        "read-only location": (3, ()),
        "/proc/1/newstore": (3, ()),
    },
}
#: Where a command differs from the others of its role.
OVERRIDES: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {
    ("eval-retrieval --chart", "missing"): WORKS,  # the chart's directories are created
}
#: What each command says of a path on top of the above (what to do).
HINTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("load", "directory"): ("labbrain load",),
    ("load", "device"): ("labbrain load - --format",),
    ("load", "named pipe"): ("labbrain load - --format",),
    ("load --format", "device"): ("labbrain load - --format",),
    ("query -f", "device"): ("labbrain query -f -",),
    ("query -f", "named pipe"): ("labbrain query -f -",),
    ("export -o", "device"): ("labbrain export ... >",),
    ("export -o", "named pipe"): ("labbrain export ... >",),
    ("restore", "missing"): ("refused: no such directory",),
    ("embed --model", "missing"): ("no such model directory",),
    ("--store graphs", "/proc/1/newstore"): ("no labbrain store at /proc/1/newstore",),
}


def _rows() -> Iterator[object]:
    for name, command in COMMANDS.items():
        for case in EXPECTED[command.role]:
            expected = OVERRIDES.get((name, case)) or EXPECTED[command.role][case]
            # Drawing a chart costs seconds (matplotlib): the runs that draw one are slow.
            slow = name == "eval-retrieval --chart" and expected == WORKS
            marks = [pytest.mark.slow] if slow else []
            if ROOT and case in CLOSED:
                marks.append(pytest.mark.subprocess)  # a child process (see ``run``)
            yield pytest.param(name, case, marks=marks, id=f"{name}-{case}")


# ---------------------------------------------------------------------------- paths
def _permissions_enforced(tmp_path: Path) -> bool:
    """Whether mode bits deny this process (not so for root, who may read anything)."""
    probe = tmp_path / "probe-permissions"
    probe.write_text("x")
    probe.chmod(0)
    try:
        return not os.access(probe, os.R_OK)
    finally:
        probe.chmod(0o600)
        probe.unlink()


def _cannot_create_in(directory: Path) -> bool:
    try:
        (directory / ".labbrain-test-probe").mkdir()
    except OSError:
        return True
    (directory / ".labbrain-test-probe").rmdir()
    return False


def _read_only_location(tmp_path: Path) -> Path | None:
    """A directory where this process cannot create anything: one of its own made read-only
    (not so for root), else /sys (closed to root too), else None."""
    own = tmp_path / "read-only"
    own.mkdir()
    own.chmod(0o555)
    if _cannot_create_in(own):
        return own
    sys_dir = Path("/sys")
    if sys_dir.is_dir() and _cannot_create_in(sys_dir):
        return sys_dir
    return None


def _device(tmp_path: Path, role: str) -> str | None:
    """A character device. Reading /dev/null is harmless; a path written to is a device
    node of the test's own when this process could replace /dev/null (root), so that a
    command renaming a file over it could not break the machine."""
    if role in (INPUT_FILE, INPUT_DIRECTORY) or not os.access("/dev", os.W_OK):
        return "/dev/null"
    node = tmp_path / "null-device"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        return None
    return str(node)


def bad_path(case: str, role: str, tmp_path: Path) -> str:
    """A path of the kind ``case`` for a command that takes a ``role`` path, made under
    ``tmp_path`` (skips the test when this machine cannot make one; fails it under CI)."""
    suffix = {INPUT_FILE: ".ttl", OUTPUT_FILE: ".png"}.get(role, "")
    regular = tmp_path / f"regular{suffix}"
    regular.write_text("<http://example.org/a> <http://example.org/b> 'not a store' .\n")
    if case == "missing":
        if role in (OUTPUT_FILE, NEW_DIRECTORY):
            return str(tmp_path / "no-such-dir" / f"out{suffix}")
        return str(tmp_path / f"no-such{suffix}")
    if case == "directory":
        directory = tmp_path / f"a-directory{suffix}"
        directory.mkdir()
        if role != INPUT_DIRECTORY:
            (directory / "inside.txt").write_text("x")
        return str(directory)
    if case == "file":
        return str(regular)
    if case == "through a file":
        return str(regular / f"below{suffix}")
    if case in CLOSED:
        if ROOT:
            require(
                "setpriv (util-linux)",
                shutil.which(SETPRIV[0]) is not None,
                "as root, a path mode bits close is met without the capabilities that "
                "override them",
            )
        else:
            require(
                "mode bits that deny this process",
                _permissions_enforced(tmp_path),
                "this process may read and write a file of mode 000 without being root",
            )
        if role in (OUTPUT_FILE, NEW_DIRECTORY, STORE):
            closed = tmp_path / "closed"
            closed.mkdir(mode=0o555)
            return str(closed / f"out{suffix}")
        closed = tmp_path / f"closed{suffix}"
        if role == INPUT_DIRECTORY:
            closed.mkdir()
        else:
            closed.write_text("x")
        closed.chmod(0)
        return str(closed)
    if case == "name too long":
        return str(tmp_path / ("n" * 300 + suffix))
    if case == "device":
        device = _device(tmp_path, role)
        require(
            "a device node of the test's own",
            device is not None,
            "os.mknod of a character device failed (no CAP_MKNOD?)",
        )
        assert device is not None
        return device
    if case == "named pipe":
        pipe = tmp_path / f"pipe{suffix}"
        os.mkfifo(pipe)
        return str(pipe)
    if case == "read-only location":
        location = _read_only_location(tmp_path)
        require(
            "a read-only location",
            location is not None,
            "neither a directory of mode 555 nor /sys refuses to create a file here",
        )
        assert location is not None
        return str(location / f"labbrain-test-out{suffix}")
    if case == "/proc/1/newstore":
        return "/proc/1/newstore"
    raise AssertionError(case)


def path_state(path: str) -> tuple[int, int, int] | str:
    """What is at ``path`` (type, size, mode bits), so that a command can be seen to leave it
    alone."""
    try:
        found = os.lstat(path)
    except OSError as error:
        return os.strerror(error.errno or 0)
    return stat.S_IFMT(found.st_mode), found.st_size, stat.S_IMODE(found.st_mode)


def tree(root: Path) -> set[str]:
    """Every path under ``root`` (unreadable directories are not entered)."""
    return {
        os.path.join(top, name) for top, dirs, files in os.walk(root) for name in [*dirs, *files]
    }


@contextmanager
def pipe_partner(path: str, role: str) -> Iterator[None]:
    """The other end of the named pipe at ``path``, in a thread: a writer that closes at
    once for a command that reads, a reader for one that writes. A command that wrongly
    opens the pipe then meets an empty pipe instead of blocking the test for ever."""
    writing = role in (INPUT_FILE, INPUT_DIRECTORY)

    def partner() -> None:
        try:
            if writing:
                os.close(os.open(path, os.O_WRONLY))
            else:
                with open(path, "rb") as handle:
                    handle.read()
        except OSError:
            pass

    thread = threading.Thread(target=partner, daemon=True)
    thread.start()
    try:
        yield
    finally:
        for _ in range(40):  # not opened by the command: open the pipe's other end
            if not thread.is_alive():
                break
            try:
                flags = os.O_RDONLY if writing else os.O_WRONLY
                os.close(os.open(path, flags | os.O_NONBLOCK))
            except OSError:
                pass
            thread.join(0.05)


# ---------------------------------------------------------------------------- the store
@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store directory with the sample and the 2026-06 sample loaded, shared by the module
    (no command here may change it)."""
    directory = tmp_path_factory.mktemp("paths") / "store"
    with LabBrain(settings_for(directory)) as brain:
        brain.load(str(SAMPLE))
        brain.load(str(SAMPLE_DCT))
    return directory


def fingerprint(store: Path) -> str:
    """A digest of every quad of every graph of the store (sorted N-Quads), read with
    pyoxigraph directly."""
    view = Store.read_only(str(store / "oxigraph"))
    try:
        lines = sorted((view.dump(format=RdfFormat.N_QUADS) or b"").splitlines())
    finally:
        del view
    assert len(lines) > 2499
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.err, "width", 80)  # a long path must not wrap the line


def run(command: Command, path: str, store: Path, confined: bool = False) -> tuple[int, str]:
    """Run ``command`` with ``path`` on ``store``: (exit code, stderr). ``confined``: in a
    child process without the capabilities that let root past mode bits (see SETPRIV)."""
    args = ["--store", str(store), *command.args(path)] if command.on_store else command.args(path)
    if command is MCP or confined:
        if command is MCP:
            program = [str(Path(sys.executable).parent / "labbrain")]
        else:
            program = [sys.executable, "-m", "labbrain"]
        done = subprocess.run(
            [*(SETPRIV if confined else ()), *program, *args],
            env={**os.environ, **command.env(path)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, done.stderr
    result = CliRunner().invoke(main, args, env=command.env(path))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args}: raised {result.exception!r}") from result.exception
    return result.exit_code, result.stderr


def check(name: str, command: Command, case: str, store: Path, tmp_path: Path) -> None:
    code, fragments = OVERRIDES.get((name, case)) or EXPECTED[command.role][case]
    fragments = (*fragments, *HINTS.get((name, case), ()))
    work = tmp_path / "work"
    work.mkdir()
    path = bad_path(case, command.role, work)
    confined = ROOT and case in CLOSED
    before = (fingerprint(store), path_state(path), tree(work))
    try:
        with pipe_partner(path, command.role) if case == "named pipe" else nullcontext():
            exit_code, stderr = run(command, path, store, confined)
        after = (fingerprint(store), path_state(path), tree(work))
    finally:
        for top, dirs, _ in os.walk(work):  # let pytest clean up what was closed
            for name_ in dirs:
                os.chmod(os.path.join(top, name_), 0o755)
        if os.path.exists(path) and case in CLOSED:
            os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    assert "Traceback" not in stderr, stderr
    if (code, fragments) == WORKS:
        assert exit_code == 0, stderr
        assert after[0] == before[0]
        return
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert exit_code == code, stderr
    assert path in lines[0], stderr  # the path as the user gave it
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert after == before


@pytest.fixture(autouse=True)
def _dev_null_stays_a_device() -> Iterator[None]:
    """No command here may have replaced /dev/null (a rename over it, as root)."""
    yield
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null was replaced by a file"


@pytest.mark.parametrize(("name", "case"), list(_rows()))
def test_a_path_that_cannot_serve_is_one_line_and_changes_nothing(
    name: str, case: str, store: Path, tmp_path: Path
) -> None:
    check(name, COMMANDS[name], case, store, tmp_path)


@pytest.mark.subprocess
@pytest.mark.parametrize("case", EXPECTED[INPUT_FILE])
def test_mcp_data_path_that_cannot_serve(case: str, store: Path, tmp_path: Path) -> None:
    check("mcp", MCP, case, store, tmp_path)


def test_unreadable_file_is_named(
    monkeypatch: pytest.MonkeyPatch, store: Path, tmp_path: Path
) -> None:
    """What a user who may not read a file is told (root may read anything: access is
    denied here by the check itself, so this runs for every user)."""
    path = tmp_path / "secret.ttl"
    path.write_text("<http://example.org/a> <http://example.org/b> 'c' .\n")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if str(p) == str(path) else real_access(p, mode)
    )
    before = fingerprint(store)
    for args in (["load", str(path)], ["query", "-f", str(path)]):
        result = CliRunner().invoke(main, ["--store", str(store), *args])
        assert result.exit_code == 2, result.stderr
        assert result.stderr.strip() == (
            f"error: {path}: is not readable (permission denied); check its permissions (ls -l)"
        )
    assert fingerprint(store) == before


def test_load_of_a_long_file_name_is_one_line(tmp_path: Path) -> None:
    """The audit's case: a 300-character file name."""
    path = tmp_path / ("x" * 300 + ".jsonld")
    result = CliRunner().invoke(main, ["--store", ":memory:", "load", str(path)])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: file name too long (the file system allows ")


def test_a_bad_path_among_several_loads_nothing(tmp_path: Path) -> None:
    """Every path is checked before the first is loaded."""
    store = tmp_path / "store"
    missing = tmp_path / "missing.jsonld"
    result = CliRunner().invoke(main, ["--store", str(store), "load", str(SAMPLE), str(missing)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {missing}: no such file"
    assert not (store / "oxigraph").exists()


def test_the_path_checks_need_nothing_of_the_loader() -> None:
    """The checks the commands run on their paths (labbrain.files) import nothing of labbrain
    but the error tree: not the load pipeline, which uses them too."""
    code = (
        "import sys, labbrain.files\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('labbrain'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["labbrain", "labbrain.errors", "labbrain.files"]
