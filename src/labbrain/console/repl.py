"""``labbrain console``: an interactive SPARQL console over a labbrain store.

A thin adapter: it reads statements (see :mod:`labbrain.console.prompt` for when a statement
is complete), runs queries through :mod:`labbrain.console.worker` (a child process with a time
limit, stopped by Ctrl-C), updates through :meth:`LabBrain.query`, and shows results with
:mod:`labbrain.console.formats`: paged tables on a terminal, or SPARQL JSON / CSV / TSV and
Turtle. Dot commands (``.help``) change the format, list graphs and the schema, export the
last result. Piped input runs as a script, statement by statement, stopping at the first
error.
"""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labbrain.console.complete import SparqlCompleter, vocabulary_terms
from labbrain.console.formats import FORMATS, document, format_for, results_table, table_rows, text
from labbrain.console.prompt import (
    QUIT_COMMANDS,
    RULE,
    TOOLBAR_RULE,
    history_for,
    prompt_session,
    split_script,
)
from labbrain.console.worker import Outcome, run_query, statement_kind
from labbrain.core import LabBrain
from labbrain.errors import InvalidArgument, LabbrainError, QueryNotAllowed, QuerySyntaxError
from labbrain.rdf.namespaces import PREFIXES

COMMANDS = {
    ".help": "this help",
    ".format": "show or set the result format: table, json, csv, tsv, turtle",
    ".prefixes": "the predeclared prefixes",
    ".graphs": "the named graphs with their triple counts",
    ".schema": "node types and relation types with their counts",
    ".export": "FILE: write the last result (format from the suffix, else the current one)",
    ".timing": "toggle printing how long each query took (.timing on|off)",
    ".quit": "leave the console (also .exit, Ctrl-D)",
}
ARGUMENTS = {".format": FORMATS, ".timing": ("on", "off")}
READ_ONLY_UPDATE = (
    "this is a SPARQL update and the console is read-only; "
    "restart it with `labbrain console --update` to change the store"
)


class _Quit(Exception):
    """Raised by .quit."""


@dataclass
class ConsoleState:
    """What the user set in this session, and the last result."""

    fmt: str = "table"
    timing: bool = False
    last: Outcome | None = None
    failures: list[LabbrainError] = field(default_factory=list)


_CHAR_CLASS_RE = re.compile(r"\[(?:[^\[\]']|'[^']*')*\]")


def readable(message: str, keep: int = 8) -> str:
    """The engine's message in one line, its "expected one of" list without character
    classes (``['0' ..= '9']``) and cut after ``keep`` items; an undefined prefix said so."""
    flat = " ".join(message.split())
    head, found, rest = flat.partition("expected one of ")
    if not found:
        return flat
    items = [i.strip() for i in _CHAR_CLASS_RE.sub("", rest).split(",")]
    words = [i for i in items if i]
    if "Prefix not found" in words:
        return head + "undefined prefix (.prefixes lists the predeclared ones; PREFIX adds one)"
    dropped = len(words) > keep or len(words) < len(items)
    return head + found + ", ".join(words[:keep]) + (", …" if dropped else "")


def caret_lines(text: str, line: int | None, column: int | None) -> list[str]:
    """The query line at ``line`` and a caret under ``column`` (both 1-based), or nothing
    when the position is unknown or outside the text."""
    lines = text.splitlines()
    if line is None or column is None or not 1 <= line <= len(lines):
        return []
    source = lines[line - 1]
    gutter = f"{line:>4} | "
    # Keep tabs so the caret lines up with the source line on any tab width.
    lead = "".join("\t" if c == "\t" else " " for c in source[: column - 1])
    lead += " " * max(0, column - 1 - len(source))
    return [gutter + source, " " * len(gutter) + lead + "^"]


class SparqlConsole:
    """One console session over an opened :class:`LabBrain`.

    ``update`` allows SPARQL updates; ``paged`` pages long output on a terminal (a "more"
    prompt between screens). :meth:`run` takes one statement and returns False at .quit.
    """

    def __init__(
        self,
        brain: LabBrain,
        *,
        update: bool,
        out: Console,
        err: Console,
        paged: bool,
        fmt: str = "table",
        read_key: Callable[[], str] = click.getchar,
    ) -> None:
        self.brain = brain
        self.update = update
        self.out = out
        self.err = err
        self.paged = paged
        self.read_key = read_key
        self.state = ConsoleState(fmt=fmt)
        self.seconds = brain.settings.console_query_timeout_seconds
        self.completer = SparqlCompleter(COMMANDS, ARGUMENTS)
        self.refresh_terms()

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def reading(self) -> Iterator[LabBrain]:
        """A view of the store as it is now: a fresh read-only one for a read-only on-disk
        store (another process may have loaded data since the console started)."""
        if self.brain.read_only and not self.brain.remote:
            with LabBrain(self.brain.settings, read_only=True) as fresh:
                yield fresh
        else:
            yield self.brain

    def refresh_terms(self) -> None:
        """Reload the completion vocabulary from the store."""
        with self.reading() as brain:
            self.completer.set_terms(vocabulary_terms(brain.store))

    def toolbar(self) -> list[str]:
        """The items of the prompt's bottom line, most important first (a narrow terminal
        shows the first ones): the input rule, mode, format, timing, time limit, help."""
        items = [TOOLBAR_RULE, "updates on" if self.update else "read-only", self.state.fmt]
        if self.state.timing:
            items.append("timing on")
        return [*items, f"limit {self.seconds:g}s", ".help"]

    def banner(self) -> list[str]:
        """What the console says when it starts."""
        where = self.brain.store.location
        if self.update:
            mode = "updates allowed"
        else:
            mode = "read-only (start it with --update to change the store)"
        limit = (
            "queries on an in-memory store run in this process, without a time limit"
            if where == ":memory:"
            else f"a query stops after {self.seconds:g} s, Ctrl-C cancels it"
        )
        return [
            f"labbrain console on {where}: {mode}",
            "SPARQL over the union of all graphs; predeclared prefixes: "
            + ", ".join(PREFIXES)
            + " (.prefixes)",
            f"{RULE}; {limit}.",
            ".help lists the commands, Tab completes, .quit or Ctrl-D leaves.",
        ]

    # ------------------------------------------------------------------ statements
    def run(self, statement: str) -> bool:
        """Run one statement (a dot command, query or update); False after .quit.

        Errors are printed (a syntax error with the query line and a caret) and recorded in
        ``state.failures``; Ctrl-C during a query cancels it.
        """
        statement = statement.strip()
        if not statement:
            return True
        try:
            if statement.startswith("."):
                self.command(statement)
            else:
                self.statement(statement)
        except _Quit:
            return False
        except KeyboardInterrupt:
            self.err.print("cancelled")
        except QuerySyntaxError as error:
            self.fail(QuerySyntaxError(readable(error.message), error.line, error.column))
            for line in caret_lines(statement, error.line, error.column):
                self.err.print(line, style="red" if line.lstrip().startswith("^") else None)
        except LabbrainError as error:
            self.fail(error)
        return True

    def fail(self, error: LabbrainError) -> None:
        """Print an error in one line and remember it."""
        self.state.failures.append(error)
        message = " ".join(str(error).split())
        self.err.print(Text.assemble(("error: ", "bold red"), message))

    def statement(self, sparql: str) -> None:
        """Run a query (in the worker, time-limited) or an update (when allowed)."""
        if statement_kind(sparql) == "update":
            self.run_update(sparql)
            return
        outcome = run_query(
            self.brain.store, sparql, cap=self.brain.settings.max_rows, seconds=self.seconds
        )
        self.state.last = outcome
        self.show(outcome)
        if self.state.timing:
            self.out.print(f"time: {outcome.seconds * 1000:.1f} ms")

    def run_update(self, sparql: str) -> None:
        """Run an update in this process, as one transaction. Ctrl-C cannot stop it: a press
        meanwhile is reported once the update is done."""
        if not self.update:
            raise QueryNotAllowed(READ_ONLY_UPDATE)
        pressed: list[bool] = []

        def note(signum: int, frame: FrameType | None) -> None:
            pressed.append(True)

        previous = signal.signal(signal.SIGINT, note)
        try:
            started = time.perf_counter()
            self.brain.query(sparql, update=True)
            elapsed = time.perf_counter() - started
        finally:
            signal.signal(signal.SIGINT, previous)
        self.out.print("update done")
        if pressed:
            self.out.print("(Ctrl-C does not stop an update: it ran as one transaction)")
        if self.state.timing:
            self.out.print(f"time: {elapsed * 1000:.1f} ms")
        self.refresh_terms()

    # ------------------------------------------------------------------ output
    def show(self, outcome: Outcome) -> None:
        """Print a result in the current format, paged on a terminal."""
        fmt = self.state.fmt
        if fmt == "turtle" and outcome.kind != "graph":
            self.err.print("note: turtle is for CONSTRUCT and DESCRIBE; showing a table")
            fmt = "table"
        if fmt != "table":
            self.page_text(text(outcome, fmt).decode("utf-8"))
        elif outcome.kind == "ask":
            self.out.print(outcome.data.decode())
        else:
            columns, rows = table_rows(outcome)
            self.page_table(columns, rows)
        if outcome.kind != "ask":
            what = "triple(s)" if outcome.kind == "graph" else "row(s)"
            note = f"{outcome.rows:,} {what}"
            if outcome.truncated:
                note += (
                    f" (stopped at LABBRAIN_MAX_ROWS={self.brain.settings.max_rows}; "
                    "add LIMIT or filters)"
                )
            self.err.print(note)

    def _height(self) -> int:
        return max(6, self.out.size.height)

    def _more(self, shown: int, total: int, unit: str) -> str:
        """Ask whether to go on; returns "next", "all" or "stop"."""
        self.out.print(
            f"-- {unit} 1-{shown} of {total:,}: Enter next page, a all, q stop --", end=""
        )
        self.out.file.flush()
        try:
            key = self.read_key()
        except (KeyboardInterrupt, EOFError):
            key = "q"
        self.out.file.write("\r\x1b[2K")
        if key in ("q", "Q", "\x1b"):
            return "stop"
        return "all" if key in ("a", "A") else "next"

    def _rows_fitting(self, columns: list[str], rows: list[list[str]], lines: int) -> int:
        """How many of ``rows`` fit in ``lines`` terminal lines as one table (at least 1)."""
        count = min(len(rows), max(1, lines - 4))
        while count > 1:
            height = len(self.out.render_lines(results_table(columns, rows[:count]), pad=False))
            if height <= lines:
                break
            count = min(count - 1, max(1, count * lines // height))
        return count

    def page_table(self, columns: list[str], rows: list[list[str]]) -> None:
        """Print rows as tables of one screen each, with a "more" prompt between them."""
        if not self.paged or not rows:
            self.out.print(results_table(columns, rows))
            return
        start = 0
        while start < len(rows):
            count = self._rows_fitting(columns, rows[start:], self._height() - 2)
            self.out.print(results_table(columns, rows[start : start + count]))
            start += count
            if start < len(rows):
                answer = self._more(start, len(rows), "rows")
                if answer == "stop":
                    self.err.print(f"(stopped after {start:,} of {len(rows):,} rows)")
                    return
                if answer == "all":
                    self.out.print(results_table(columns, rows[start:]))
                    return

    def page_text(self, body: str) -> None:
        """Print text, a screen at a time on a terminal."""
        lines = body.splitlines()
        if not self.paged:
            self.out.file.write(body if body.endswith("\n") or not body else body + "\n")
            return
        step = self._height() - 1
        for start in range(0, len(lines), step):
            self.out.file.write("".join(line + "\n" for line in lines[start : start + step]))
            shown = start + step
            if shown < len(lines):
                answer = self._more(shown, len(lines), "lines")
                if answer == "stop":
                    return
                if answer == "all":
                    self.out.file.write("".join(line + "\n" for line in lines[shown:]))
                    return

    # ------------------------------------------------------------------ commands
    def command(self, line: str) -> None:
        """Run a dot command."""
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        handlers: dict[str, Callable[[str], None]] = {
            ".help": self.cmd_help,
            ".format": self.cmd_format,
            ".prefixes": self.cmd_prefixes,
            ".graphs": self.cmd_graphs,
            ".schema": self.cmd_schema,
            ".export": self.cmd_export,
            ".timing": self.cmd_timing,
        }
        if name in QUIT_COMMANDS:
            raise _Quit
        if name not in handlers:
            raise InvalidArgument("command", f"no command {name}; .help lists them")
        handlers[name](argument)

    def cmd_help(self, argument: str) -> None:
        """List the commands and the input rule."""
        table = Table("command", "does", box=None, show_header=False)
        for name, doc in COMMANDS.items():
            table.add_row(name, doc)
        self.out.print(table)
        for line in self.banner()[1:]:
            self.out.print(line)
        self.out.print("Updates need --update; Tab completes prefixes, classes and properties.")

    def cmd_format(self, argument: str) -> None:
        """Show or set the result format."""
        if not argument:
            self.out.print(f"format: {self.state.fmt}")
            return
        if argument not in FORMATS:
            raise InvalidArgument("format", f"{argument}; one of {', '.join(FORMATS)}")
        self.state.fmt = argument
        self.out.print(f"format: {argument}")

    def cmd_timing(self, argument: str) -> None:
        """Toggle (or set with on / off) the timing line after each query."""
        if argument not in ("", "on", "off"):
            raise InvalidArgument("timing", f"{argument}; .timing, .timing on or .timing off")
        self.state.timing = (not self.state.timing) if not argument else argument == "on"
        self.out.print(f"timing: {'on' if self.state.timing else 'off'}")

    def cmd_prefixes(self, argument: str) -> None:
        """Print the predeclared prefixes."""
        table = Table("prefix", "namespace")
        for prefix, namespace in PREFIXES.items():
            table.add_row(f"{prefix}:", namespace)
        self.out.print(table)

    def cmd_graphs(self, argument: str) -> None:
        """Print the named graphs with their sizes."""
        with self.reading() as brain:
            rows = brain.graphs()
        table = Table("graph", "triples")
        for row in rows:
            table.add_row(row["graph"], f"{row['triples']:,}")
        self.out.print(table if rows else "the store has no named graphs")

    def cmd_schema(self, argument: str) -> None:
        """Print node types and relation types with their counts."""
        from labbrain.discourse.reader import DiscourseReader

        with self.reading() as brain:
            schema = DiscourseReader(brain).get_schema()
        if not schema.nodeTypes and not schema.relationTypes:
            self.out.print("no datasets loaded: the schema comes from the loaded exports")
            return
        nodes = Table(
            "node type", "code", "nodes", "datasets", title="Node types", title_justify="left"
        )
        for kind in schema.nodeTypes:
            nodes.add_row(kind.label, kind.code or "", f"{kind.count:,}", ", ".join(kind.datasets))
        self.out.print(nodes)
        relations = Table(
            "relation",
            "from",
            "to",
            "count",
            "core",
            "dataset",
            title="Relation types",
            title_justify="left",
        )
        for rel in schema.relationTypes:
            relations.add_row(
                rel.label,
                rel.sourceType or "",
                rel.destinationType or "",
                f"{rel.count:,}",
                rel.coreRelation or "",
                rel.dataset,
            )
        self.out.print(relations)

    def cmd_export(self, argument: str) -> None:
        """Write the last result to a file."""
        if not argument:
            raise InvalidArgument("export", "give a file name: .export FILE")
        outcome = self.state.last
        if outcome is None:
            raise InvalidArgument("export", "no result yet: run a query first")
        path = Path(argument).expanduser()
        fmt = format_for(path, self.state.fmt)
        data = document(outcome, fmt)
        try:
            path.write_bytes(data)
        except OSError as error:
            raise InvalidArgument("export", f"cannot write {argument}: {error.strerror}") from None
        what = "triple(s)" if outcome.kind == "graph" else "row(s)"
        self.out.print(f"wrote {outcome.rows:,} {what} to {argument} ({fmt})")


def run_console(brain: LabBrain, *, update: bool, fmt: str = "table") -> int:
    """Run the console on stdin/stdout until .quit, Ctrl-D or the end of piped input.

    On a terminal it is interactive; otherwise stdin is a script, run statement by statement
    until the first error. Returns the exit code (that error's, else 0).
    """
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    out = Console(highlight=False, markup=False, emoji=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)
    session = SparqlConsole(brain, update=update, out=out, err=err, paged=interactive, fmt=fmt)
    if not interactive:
        for statement in split_script(sys.stdin.read()):
            if not session.run(statement):
                break
            if session.state.failures:
                return session.state.failures[0].exit_code
        return 0
    history, _ = history_for(brain.store.location, remote=brain.remote)
    prompt = prompt_session(history, session.completer, session.toolbar)
    for line in session.banner():
        out.print(line)
    while True:
        try:
            typed = prompt.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C at the prompt clears what was typed
        except EOFError:
            break
        if not session.run(typed):
            break
    return 0
