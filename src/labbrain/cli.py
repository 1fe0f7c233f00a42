"""The ``labbrain`` command: a thin adapter over :class:`labbrain.core.LabBrain`.

Each command parses its options, calls one library method and prints the result. Errors from
the library's error tree become a one-line message on stderr and the error's exit code, in one
place for every command (:class:`_Commands`).
"""

from __future__ import annotations

import errno
import faulthandler
import io
import json
import logging
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click
from pydantic import ValidationError
from pydantic_settings import SettingsError as UnreadableSetting
from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, QueryTriples, RdfFormat
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from labbrain.core import LabBrain, Stats, open_reading, versions
from labbrain.errors import (
    BackupInvalid,
    EndpointReadOnly,
    InputError,
    InvalidArgument,
    ItemNotFound,
    LabbrainError,
    SettingsError,
    StoreLocked,
    UnusablePath,
)
from labbrain.files import (
    atomic_file,
    check_input_directory,
    check_input_file,
    check_new_directory,
    check_output_file,
    path_error,
)
from labbrain.ingest.load import FORMATS, detect_format, read_source
from labbrain.ingest.nanopub import NANOPUB
from labbrain.install import MCP_CLIENTS, client_config, client_note, labbrain_command
from labbrain.ops.workflows import ingest_params, task_runner
from labbrain.publish.crate import DEFAULT_LICENSE as BUNDLE_LICENSE
from labbrain.publish.nanopub import DEFAULT_LICENSE, Options, Selection, remember
from labbrain.publish.nanopub import publish as publish_nanopubs
from labbrain.publish.people import People, read_people_file
from labbrain.publish.signing import signing_key
from labbrain.rdf.namespaces import DATASET_GRAPH_PREFIX, graph_iri
from labbrain.settings import EXAMPLES, Settings
from labbrain.store.export import EXPORT_FORMATS
from labbrain.store.templates import python_value
from labbrain.tasks.ledger import STATUSES, TaskState

if TYPE_CHECKING:
    from rich.table import Table


class _Console(Console):
    """A rich console that leaves a closed pipe to the command (:class:`_Commands`): rich's
    own answer to one is to exit with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


out = _Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def _table(*columns: Any, **options: Any) -> Table:
    """A rich table. Tables, progress bars and their columns are imported where they are
    drawn: `labbrain mcp` draws none, and starts without importing them."""
    from rich.table import Table

    return Table(*columns, **options)


class Context:
    """Options shared by every command."""

    def __init__(
        self,
        store: str | None,
        endpoint: str | None = None,
        update_endpoint: str | None = None,
        gsp_endpoint: str | None = None,
    ) -> None:
        self.overrides: dict[str, Any] = {"store": store} if store else {}
        remote = {
            "endpoint": endpoint,
            "update_endpoint": update_endpoint,
            "gsp_endpoint": gsp_endpoint,
        }
        self.overrides.update({k: v for k, v in remote.items() if v})

    def settings(self, **extra: Any) -> Settings:
        """Effective settings: defaults < environment < command-line flags."""
        flags = {**self.overrides, **{k: v for k, v in extra.items() if v is not None}}
        try:
            return Settings(**flags)
        except ValidationError as error:
            problems = "; ".join(
                _setting_problem("_".join(map(str, e["loc"])), e["msg"]) for e in error.errors()
            )
            raise SettingsError(problems) from None
        except UnreadableSetting as error:  # a value the environment source cannot decode
            named = re.search(r'field "(\w+)"', str(error))
            name = named.group(1) if named else "?"
            raise SettingsError(_setting_problem(name, "cannot be read")) from None


def _setting_problem(name: str, problem: str) -> str:
    """One line about the setting ``name``: its variable, what is wrong, and an example
    where its form is not a plain word or number."""
    example = EXAMPLES.get(name)
    problem = problem.removeprefix("Value error, ")  # pydantic's prefix for a validator's
    return f"LABBRAIN_{name.upper()}: {problem}" + (f" (e.g. {example})" if example else "")


@contextmanager
def opened(ctx: Context, *, read_only: bool, **extra: Any) -> Iterator[LabBrain]:
    """Open the store for one command, and close it when the command is done, whatever
    happens (the errors it raises are mapped by :class:`_Commands`)."""
    settings = ctx.settings(**extra)
    brain = LabBrain(settings, read_only=read_only and not settings.in_memory)
    try:
        yield brain
    finally:
        brain.close()


def _fail(error: LabbrainError) -> NoReturn:
    """What every command does with a library error: its one-line message on stderr, and
    the process exits with the error's exit code."""
    err.print(Text.assemble(("error: ", "bold red"), str(error)))
    sys.exit(error.exit_code)


#: The exit status of a process killed by SIGPIPE, as a shell reports it (128 + 13).
CLOSED_PIPE_STATUS = 141


def _end_on_closed_pipe() -> NoReturn:
    """End a command whose output has no reader any more (``labbrain ... | head``) as the
    other programs of a pipe end: no message, the status of a process killed by SIGPIPE.
    Stdout is pointed at /dev/null first, so that what it still buffers is dropped when the
    interpreter flushes it at exit, instead of failing again there."""
    with suppress(OSError, ValueError):  # not a file descriptor (an embedding host's stdout)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    sys.exit(CLOSED_PIPE_STATUS)


class _Commands(click.Group):
    """The ``labbrain`` group, which ends every command the same way whatever escapes it: a
    :class:`LabbrainError` (from the command or its option parsing) with :func:`_fail`, a
    closed output pipe with :func:`_end_on_closed_pipe`. Commands raise errors; they catch
    one only to do something else with it (say it otherwise, or go on)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a reader gone shows here, not in the flush at exit
        except LabbrainError as error:
            _fail(error)
        except BrokenPipeError:
            _end_on_closed_pipe()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    metavar="DIR",
    help="Store directory, or :memory: (default: $LABBRAIN_STORE, else the user data dir).",
)
@click.option(
    "--endpoint",
    metavar="URL",
    help="Use a remote SPARQL 1.1 store at this query URL instead of the embedded store "
    "(e.g. http://localhost:7878/query; default: $LABBRAIN_ENDPOINT).",
)
@click.option(
    "--update-endpoint",
    metavar="URL",
    help="SPARQL update URL of the remote store (default: the query URL with /query "
    "replaced by /update).",
)
@click.option(
    "--gsp-endpoint",
    metavar="URL",
    help="Graph Store Protocol URL of the remote store, for loads (e.g. "
    "http://localhost:7878/store; default: loads send INSERT DATA updates).",
)
@click.version_option(None, "-V", "--version", package_name="labbrain")
@click.pass_context
def main(
    click_ctx: click.Context,
    store: str | None,
    endpoint: str | None,
    update_endpoint: str | None,
    gsp_endpoint: str | None,
) -> None:
    """labbrain: a knowledge server for research discourse graphs."""
    _leave_stacks_on_crash()
    click_ctx.obj = Context(store, endpoint, update_endpoint, gsp_endpoint)


def _leave_stacks_on_crash() -> None:
    """Have a native crash (a segmentation fault in a library, an abort) print the Python
    stack of every thread on stderr before the process dies, so that it leaves more than an
    exit status behind. Nothing is printed while the process runs normally; stdout (the MCP
    stdio channel) is untouched. Skipped when stderr is not a file (an embedding host)."""
    if faulthandler.is_enabled():
        return
    with suppress(AttributeError, ValueError, io.UnsupportedOperation):
        faulthandler.enable(file=sys.stderr, all_threads=True)


pass_ctx = click.make_pass_decorator(Context)


# ---------------------------------------------------------------------------- load
@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--graph", help="Dataset slug to load into (default: from the export's @id).")
@click.option(
    "--format", "fmt", type=click.Choice(sorted(FORMATS)), help="Input format (needed for -)."
)
@click.option("--strict", is_flag=True, default=None, help="Refuse exports with any warning.")
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="Load nanopublications whose signature or trusty hash fails, or that are unsigned, "
    "marked unverified (default: reported and left out).",
)
@click.option("--engine", type=click.Choice(["native", "pyld"]), help="JSON-LD engine for exports.")
@click.option("--json", "as_json", is_flag=True, help="Print the load reports as JSON.")
@pass_ctx
def load(
    ctx: Context,
    paths: tuple[str, ...],
    graph: str | None,
    fmt: str | None,
    strict: bool | None,
    allow_unverified: bool,
    engine: str | None,
    as_json: bool,
) -> None:
    """Load discourse-graph exports (JSON-LD), Obsidian vaults of the Discourse Graphs
    plugin (a directory) or RDF files, one dataset graph per path.

    Loading a path again replaces its graph atomically. "-" reads stdin (with --format).
    Every path is checked (a readable file of a known format, or a vault) before anything is
    loaded. A .trig file of nanopublications is recognised as one (or say --format nanopub):
    their signatures are checked, and those that fail are left out unless --allow-unverified.
    """
    if graph and len(paths) > 1:
        raise InputError("--graph names one dataset; load one file at a time with it")
    for path in paths:
        if path != "-":
            detect_format(path, fmt)
    reports: list[dict[str, Any]] = []
    with opened(ctx, read_only=False, strict_load=strict, jsonld_engine=engine) as brain:
        runner = task_runner(brain)
        for path in paths:
            inputs = {"data": read_source(path, brain.settings)} if path == "-" else {}
            params = ingest_params(path, graph=graph, fmt=fmt, allow_unverified=allow_unverified)
            task = runner.create("ingest", params)
            with _progress_bar(brain.settings.progress_min_nodes) as listener:
                final = runner.start(task.task_id, listener=listener, inputs=inputs)
            reports.append(_load_report(final))
            if not as_json:
                _print_report(reports[-1])
    if as_json:
        out.print_json(json.dumps(reports))


def _load_report(state: TaskState) -> dict[str, Any]:
    """The load report of a completed ingest task (without its task bookkeeping)."""
    return {k: v for k, v in state.results.items() if k not in ("entries", "sourceDigest")}


@contextmanager
def _progress_bar(min_entries: int) -> Iterator[Callable[[TaskState], None]]:
    """A task listener that draws a step bar on a terminal for inputs of ``min_entries``+
    nodes (nothing when stderr is not a terminal)."""
    bar: dict[str, Any] = {}

    def update(state: TaskState) -> None:
        if "bar" not in bar:
            if state.results.get("entries", 0) < min_entries or not err.is_terminal:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            drawn = Progress(
                TextColumn("{task.description:<14}"),
                BarColumn(),
                TextColumn("step {task.completed:.0f}/{task.total:.0f}"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            drawn.start()
            bar["bar"], bar["task"] = drawn, drawn.add_task("", total=state.progress.total)
        bar["bar"].update(
            bar["task"], description=state.current_step or "done", completed=state.progress.done
        )

    try:
        yield update
    finally:
        if "bar" in bar:
            bar["bar"].stop()


def _print_report(report: dict[str, Any]) -> None:
    """One line per loaded path: where it went and how much it held; then its notes and
    warnings. The counts by type, label and creator are `labbrain stats --full`'s (and the
    report's, with --json)."""
    verb = "replaced" if report["replaced"] else "loaded"
    relations = sum(report["relations"].values())
    out.print(
        f"{report['source']} -> {report['graph']} ({report['kind']}): {verb}, "
        f"{report['quads']:,} quads, {report['nodes']:,} nodes, {relations:,} relations, "
        f"{report['indexed']:,} indexed in {report['seconds']:.2f}s"
    )
    for notice in report["notices"]:
        out.print(f"note: {notice}")
    for warning in report["warnings"]:
        out.print(Text.assemble(("warning: ", "yellow"), warning))


# ---------------------------------------------------------------------------- query
_RESULT_FORMATS = {
    "json": QueryResultsFormat.JSON,
    "csv": QueryResultsFormat.CSV,
    "tsv": QueryResultsFormat.TSV,
}


@main.command()
@click.argument("sparql", required=False)
@click.option(
    "-f",
    "--file",
    "file",
    metavar="FILE",
    help="Read the query from FILE (- reads stdin).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "tsv"]),
    default="table",
    show_default=True,
)
@click.option("--update", is_flag=True, help="Run a SPARQL update (opens the store for writing).")
@pass_ctx
def query(ctx: Context, sparql: str | None, file: str | None, fmt: str, update: bool) -> None:
    """Run a SPARQL query (read-only unless --update).

    The rdf, rdfs, owl, xsd, dct, prov, sioc, dgb, dg and lb prefixes are predeclared.
    """
    if bool(sparql) == bool(file):
        raise InputError("give the query as an argument or with -f FILE (one of them)")
    text = sparql if sparql else _read_query_file(file or "")
    with opened(ctx, read_only=not update) as brain:
        if update:
            brain.query(text, update=True)
            out.print("update done")
            return
        result = brain.query(text)
        assert result is not None  # a query, not an update
        if isinstance(result, QueryBoolean):
            if fmt == "table":
                out.print(str(bool(result)).lower())
            else:
                sys.stdout.buffer.write(result.serialize(format=_RESULT_FORMATS[fmt]) or b"")
        elif isinstance(result, QueryTriples):
            sys.stdout.buffer.write(result.serialize(format=RdfFormat.TURTLE) or b"")
        elif fmt == "table":
            _print_rows(result, brain.settings.max_rows)
        else:
            sys.stdout.buffer.write(result.serialize(format=_RESULT_FORMATS[fmt]) or b"")


def _read_query_file(name: str) -> str:
    """The text of the query file ``name`` (``-``: stdin), checked to be a readable file of
    UTF-8 text; anything else raises an InputError saying what it is."""
    if name == "-":
        data = sys.stdin.buffer.read()
    else:
        path = check_input_file(
            name, stream_hint="pipe the query in instead: labbrain query -f - < {path}"
        )
        try:
            data = path.read_bytes()
        except OSError as error:
            raise path_error(name, error) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnusablePath(
            name, f"is not UTF-8 text (byte {error.start}); a query file holds SPARQL text"
        ) from None


def _print_rows(result: QuerySolutions, cap: int) -> None:
    variables = [v.value for v in result.variables]
    table = _table(*variables)
    shown = 0
    truncated = False
    for solution in result:
        if shown >= cap:
            truncated = True
            break
        table.add_row(*(_cell(python_value(solution[v])) for v in variables))
        shown += 1
    out.print(table)
    note = f"{shown} row(s)"
    if truncated:
        note += f" (truncated at LABBRAIN_MAX_ROWS={cap}; use --format csv for everything)"
    out.print(note)


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


# ---------------------------------------------------------------------------- export
@main.command("export")
@click.option(
    "--graph",
    "graphs",
    multiple=True,
    help="Graph to export (slug or IRI); repeatable. Default: the datasets and the "
    "assistant's memory (projects, memory domains, propositions), not labbrain's ontology, "
    "system, tasks or staging graphs.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*sorted(EXPORT_FORMATS), NANOPUB]),
    default="trig",
    show_default=True,
    help="nanopub: one nanopublication per Claim, Evidence, Question and Result of the "
    "datasets, and per relation between two of them (docs/publishing.md).",
)
@click.option(
    "--merge",
    is_flag=True,
    help="With turtle or ntriples (one graph): merge the triples of several graphs into it.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write to FILE (atomically; a new file gets the mode the umask gives) instead of stdout.",
)
@click.option("--node", metavar="UID", help="nanopub: this node and its evidence chain.")
@click.option(
    "--select",
    metavar="FILE",
    help="nanopub: the nodes a SPARQL SELECT in FILE binds to ?node.",
)
@click.option(
    "--key",
    metavar="FILE",
    help="nanopub: sign with this RSA private key (PEM); without it, an unsigned dry run.",
)
@click.option(
    "--signer",
    metavar="ORCID",
    help="nanopub: who signs (an ORCID iD, or a name of the people map); needed with --key.",
)
@click.option(
    "--license",
    "license_iri",
    metavar="IRI",
    default=DEFAULT_LICENSE,
    show_default=True,
    help="nanopub: the licence of the nanopublications.",
)
@click.option(
    "--retract-deleted",
    is_flag=True,
    help="nanopub: retract what was published for nodes and relations no longer there.",
)
@click.option("--index", "with_index", is_flag=True, help="nanopub: add an index nanopublication.")
@pass_ctx
def export_cmd(
    ctx: Context,
    graphs: tuple[str, ...],
    fmt: str,
    merge: bool,
    output: str | None,
    node: str | None,
    select: str | None,
    key: str | None,
    signer: str | None,
    license_iri: str,
    retract_deleted: bool,
    with_index: bool,
) -> None:
    """Export graphs as Turtle, TriG, N-Triples, N-Quads or compacted JSON-LD, or the lab's
    claims, evidence and relations as nanopublications (--format nanopub)."""
    target = None
    if output:
        target = check_output_file(
            output,
            stream_hint="write to stdout instead: labbrain export ... > {path}",
        )
    nanopub_only = {"--node": node, "--select": select, "--key": key, "--signer": signer}
    if fmt != NANOPUB:
        used = (
            [name for name, value in nanopub_only.items() if value]
            + (["--retract-deleted"] if retract_deleted else [])
            + (["--index"] if with_index else [])
        )
        if used:
            raise InvalidArgument("format", f"{', '.join(used)} go with --format nanopub")
    else:
        selection = Selection(
            graphs=graphs, node=node, sparql=_read_query_file(select) if select else None
        )
        options = Options(license=license_iri, retract_deleted=retract_deleted, index=with_index)
        _export_nanopubs(ctx, selection, options, key, signer, output, target)
        return
    with opened(ctx, read_only=True) as brain:
        if target is None:
            brain.export(sys.stdout.buffer, fmt, list(graphs), merge=merge)
            sys.stdout.buffer.flush()
            return
        try:
            with atomic_file(target) as handle:
                brain.export(handle, fmt, list(graphs), merge=merge)
        except OSError as error:  # said as the error of the path given
            raise path_error(output or "", error) from None


def _export_nanopubs(
    ctx: Context,
    selection: Selection,
    options: Options,
    key: str | None,
    signer: str | None,
    output: str | None,
    target: Path | None,
) -> None:
    """Write the selection's nanopublications; a signed run is remembered once written."""
    if (key is None) != (signer is None):
        raise InvalidArgument("signer", "--key and --signer go together")
    with opened(ctx, read_only=key is None) as brain:
        if key is not None and signer is not None:
            options = replace(options, key=signing_key(brain, key, signer))
        if target is None:
            report = publish_nanopubs(brain, selection, options, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            try:
                with atomic_file(target) as handle:
                    report = publish_nanopubs(brain, selection, options, handle)
            except OSError as error:
                raise path_error(output or "", error) from None
        remember(brain, report)
    done = report.as_dict()
    err.print(
        f"{done['nanopublications']} nanopublications ({report.nodes} nodes, "
        f"{report.relations} relations, {report.new} new, {report.superseding} superseding, "
        f"{report.unchanged} unchanged, {report.retracted} retractions)"
        + (f"; index {report.index}" if report.index else "")
    )
    if report.skipped:
        err.print(
            f"left out, no creator to attribute them to: {', '.join(report.skipped[:10])}"
            + (f" and {len(report.skipped) - 10} more" if len(report.skipped) > 10 else "")
        )
    if not report.signed:
        err.print("unsigned (a dry run): pass --key and --signer to sign and publish")


# ---------------------------------------------------------------------------- bundle
@main.command()
@click.argument("uid")
@click.option(
    "-o",
    "--output",
    "directory",
    required=True,
    metavar="DIR",
    help="Write the bundle to DIR: a new or empty directory (an earlier bundle with --replace).",
)
@click.option("--dataset", help="Dataset slug, when the uid is in several.")
@click.option(
    "--crate-version",
    type=click.Choice(["1.2", "1.1"]),
    default="1.2",
    show_default=True,
    help="RO-Crate version (1.1: what the lab's own bundles use).",
)
@click.option(
    "--license",
    "license_id",
    default=BUNDLE_LICENSE,
    show_default=True,
    help="The bundle's licence: an SPDX identifier or a licence URL.",
)
@click.option(
    "--by",
    "human",
    metavar="NAME",
    help="Who asks for the bundle (default: your login name); ORCID from the people map.",
)
@click.option("--agent", metavar="NAME", help="The assistant that makes the bundle, if one does.")
@click.option("--replace", is_flag=True, help="Replace the earlier bundle in DIR.")
@click.option("--json", "as_json", is_flag=True, help="Print what was bundled as JSON.")
@pass_ctx
def bundle(
    ctx: Context,
    uid: str,
    directory: str,
    dataset: str | None,
    crate_version: Literal["1.2", "1.1"],
    license_id: str,
    human: str | None,
    agent: str | None,
    replace: bool,
    as_json: bool,
) -> None:
    """Write an evidence bundle of the Result or Evidence node UID to DIR: an RO-Crate with
    the node's statement, its lineage (evidence, claims, questions, sources with DOIs), the
    people (ORCID where known), its figures, licence and provenance, and a README.

    DIR is written whole or not at all. What the node does not say of method, system and
    observable is listed as missing, never filled in."""
    from labbrain.discourse.reader import DiscourseReader
    from labbrain.publish.bundle import BundleOptions, make_bundle

    options = BundleOptions(
        crate_version=crate_version,
        license=license_id,
        human=human,
        agent=agent,
        dataset=dataset,
        replace=replace,
    )
    with opened(ctx, read_only=True) as brain:
        report = make_bundle(DiscourseReader(brain), uid, Path(directory), options)
    if as_json:
        out.print_json(report.model_dump_json())
        return

    def count(items: list[Any], one: str, many: str) -> str:
        return f"{len(items)} {one if len(items) == 1 else many}"

    parts = [count(report.evidence, "evidence", "evidence")] if report.evidence else []
    parts += [
        count(report.statements, "claim", "claims"),
        count(report.questions, "question", "questions"),
        count(report.sources, "source", "sources") + f" ({count(report.dois, 'DOI', 'DOIs')})",
        count(report.people, "person", "people")
        + f" ({sum(1 for p in report.people if p.orcid)} with ORCID)",
        count(report.figures, "figure", "figures")
        + f" ({sum(1 for f in report.figures if f.copied)} copied)",
    ]
    out.print(
        f"bundled {report.node.nodeType} {report.node.uid} to {directory} (RO-Crate "
        f"{report.crateVersion}, {report.entities} entities): {', '.join(parts)}"
    )
    if report.missing:
        out.print(f"not stated by the node: {', '.join(report.missing)}")
    for figure in report.figures:
        if figure.note:
            err.print(Text.assemble(("warning: ", "yellow"), f"{figure.image}: {figure.note}"))
    for note in report.notes:
        err.print(Text.assemble(("note: ", "yellow"), note))


# ---------------------------------------------------------------------------- people
@main.group()
def people() -> None:
    """The people map: display names (as exports carry them) to ORCID iDs."""


@people.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the map as JSON.")
@pass_ctx
def people_list(ctx: Context, as_json: bool) -> None:
    """Every name with its ORCID iD."""
    with opened(ctx, read_only=True) as brain:
        known = People(brain.store).all()
    if as_json:
        out.print(json.dumps(known, indent=2, ensure_ascii=False))
        return
    for name, orcid in known.items():
        out.print(f"{name}\t{orcid}")


@people.command("set")
@click.argument("name")
@click.argument("orcid")
@pass_ctx
def people_set(ctx: Context, name: str, orcid: str) -> None:
    """Map NAME (as the exports spell it) to ORCID (0000-0002-1825-0097 or its URL)."""
    with opened(ctx, read_only=False) as brain:
        iri = People(brain.store).set(name, orcid)
    err.print(f"{name}: {iri}")


@people.command("import")
@click.argument("file")
@pass_ctx
def people_import(ctx: Context, file: str) -> None:
    """Map every name of FILE: CSV with columns name,orcid, or JSON {name: orcid}."""
    pairs = read_people_file(check_input_file(file))
    with opened(ctx, read_only=False) as brain:
        done = People(brain.store).set_many(pairs)
    err.print(f"{len(done)} people mapped")


@people.command("remove")
@click.argument("name")
@pass_ctx
def people_remove(ctx: Context, name: str) -> None:
    """Forget NAME."""
    with opened(ctx, read_only=False) as brain:
        if not People(brain.store).remove(name):
            raise ItemNotFound("person", name, "labbrain people list lists them")
    err.print(f"{name}: removed")


# ---------------------------------------------------------------------------- inspect
@main.command()
@click.option("--graph", help="Only this dataset (slug or IRI).")
@click.option(
    "--full",
    is_flag=True,
    help="Print every graph, nodes by type, relations by label and creators, not the summary.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (everything --full prints).")
@pass_ctx
def stats(ctx: Context, graph: str | None, full: bool, as_json: bool) -> None:
    """The datasets with their nodes, relations and triples, and the totals; with --full,
    every graph, nodes by type, relations by label and creators.

    On a terminal the tables are drawn; in a pipe or a file they are plain text, one line a
    row, every value whole.
    """
    with opened(ctx, read_only=True) as brain:
        result = brain.stats(graph)
        if as_json:
            out.print_json(json.dumps(result.__dict__))
            return
        if not full:
            _print_summary(result, graph)
            return
        tables = [
            ("Graphs", result.graphs),
            ("Nodes by type", result.nodes_by_type),
            ("Relations by label", result.relations),
            ("Creators", result.creators),
        ]
        for number, (title, rows) in enumerate(tables):
            if number:
                _plain_gap()
            _print_table(title, rows)


def _print_summary(result: Stats, graph: str | None) -> None:
    """A few lines: each dataset (or the one named) with its nodes, relations and triples,
    the totals, and the size of the other graphs."""
    triples = {row["graph"]: row["triples"] for row in result.graphs}
    nodes: Counter[str] = Counter()
    relations: Counter[str] = Counter()
    for row in result.nodes_by_type:
        nodes[row["graph"]] += row["count"]
    for row in result.relations:
        relations[row["graph"]] += row["count"]
    named = graph_iri(graph) if graph else None
    datasets = [g for g in triples if g.startswith(DATASET_GRAPH_PREFIX) and named in (None, g)]
    if not datasets:
        out.print(
            f"no dataset {graph}: `labbrain graphs` lists the graphs"
            if graph
            else "no datasets: `labbrain load PATH` loads one"
        )
        return
    rows = [
        {
            "dataset": g.removeprefix(DATASET_GRAPH_PREFIX),
            "nodes": nodes[g],
            "relations": relations[g],
            "triples": triples[g],
        }
        for g in datasets
    ]
    total = None
    if len(rows) > 1:
        total = {"dataset": f"total ({len(rows)} datasets)"}
        total.update({k: sum(row[k] for row in rows) for k in ("nodes", "relations", "triples")})
    _print_table("Datasets", rows, total)
    others = [g for g in triples if not g.startswith(DATASET_GRAPH_PREFIX)]
    if named is None and others:
        size = sum(triples[g] for g in others)
        out.print(
            f"other graphs (labbrain's own, the assistant's memory): {len(others)}, "
            f"{size:,} triples"
        )
    out.print("labbrain stats --full: every graph, nodes by type, relations by label, creators")


def _print_table(
    title: str, rows: list[dict[str, Any]], total: dict[str, Any] | None = None
) -> None:
    """``rows`` (dicts of one shape) under ``title``, with ``total`` as a last row set apart:
    drawn as a table on a terminal, long values folded onto more lines, never cut; elsewhere
    (a pipe, a file) as plain text, a line a row, columns aligned, every value whole."""
    columns = list(rows[0]) if rows else ["(none)"]
    lines = [[_count_cell(row[c]) for c in columns] for row in rows]
    if total is not None:
        lines.append([_count_cell(total[c]) for c in columns])
    numeric = [bool(rows) and all(isinstance(row[c], int) for row in rows) for c in columns]
    if out.is_terminal:
        table = _table(title=title, title_justify="left")
        for name, right in zip(columns, numeric, strict=True):
            table.add_column(name, justify="right" if right else "left", overflow="fold")
        for number, line in enumerate(lines):
            if total is not None and number == len(lines) - 1:
                table.add_section()
            table.add_row(*line)
        out.print(table)
        return
    body = [columns, *lines]
    widths = [max(cell_len(line[i]) for line in body) for i in range(len(columns))]
    out.print(title)
    for line in body:
        cells = [
            (" " * (w - cell_len(c)) + c) if right else (c + " " * (w - cell_len(c)))
            for c, w, right in zip(line, widths, numeric, strict=True)
        ]
        out.print("  ".join(cells).rstrip())


def _count_cell(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else _cell(value)


def _plain_gap() -> None:
    """A blank line between two parts of plain output (drawn tables have their borders)."""
    if not out.is_terminal:
        out.print()


@main.command()
@pass_ctx
def graphs(ctx: Context) -> None:
    """List the named graphs with their triple counts (plain text in a pipe, as `stats`)."""
    with opened(ctx, read_only=True) as brain:
        _print_table("Graphs", brain.graphs())


@main.command()
@pass_ctx
def info(ctx: Context) -> None:
    """Effective settings, store location and versions (plain text in a pipe, as `stats`)."""
    settings = ctx.settings()
    out.print(f"endpoint: {settings.endpoint}" if settings.endpoint else f"store: {settings.store}")
    described = [
        {"setting (env)": name, "value": _cell(value), "meaning": doc}
        for name, value, doc in settings.describe()
    ]
    _print_table("Effective settings", described)
    _plain_gap()
    _print_table("MCP toolsets (--toolsets)", _toolset_rows(settings))
    _plain_gap()
    out.print(", ".join(f"{name} {version}" for name, version in versions().items()))
    local = not settings.endpoint
    if local and (settings.in_memory or not (Path(settings.store) / "oxigraph").is_dir()):
        out.print("store not created yet: `labbrain load` creates it")
        return
    with opened(ctx, read_only=True) as brain:
        datasets = [
            {k: row[k] for k in ("slug", "nodes", "quads", "loadedAt", "sourceFile")}
            for row in brain.datasets()
        ]
        _plain_gap()
        _print_table("Datasets", datasets)
        out.print(f"text index: {brain.index.count():,} nodes")


def _toolset_rows(settings: Settings) -> list[dict[str, str]]:
    """The MCP toolsets with their tools, those `labbrain mcp` offers with these settings
    marked (an unknown name in the settings marks none: `labbrain mcp` says what is wrong)."""
    from labbrain.mcp.tools import DEFAULT_TOOLSETS, TOOLSETS, resolve_toolsets

    try:
        chosen = set(resolve_toolsets(settings.toolsets))
    except LabbrainError:  # not a failure of `info`, which shows the settings as they are
        chosen = set()
    return [
        {
            "toolset": f"{name} (default)" if name in DEFAULT_TOOLSETS else name,
            "offered": "yes" if name in chosen else "",
            "tools": ", ".join(s.name for s in specs),
        }
        for name, specs in TOOLSETS.items()
    ]


@main.command()
@click.argument("graph")
@pass_ctx
def drop(ctx: Context, graph: str) -> None:
    """Remove a dataset graph (slug or IRI), its load record and its index entries."""
    with opened(ctx, read_only=False) as brain:
        brain.drop(graph)
        out.print(f"dropped {graph}")


@main.command()
@pass_ctx
def reindex(ctx: Context) -> None:
    """Rebuild the full-text index from the store."""
    with opened(ctx, read_only=False) as brain:
        runner = task_runner(brain)
        final = runner.start(runner.create("reindex").task_id)
        indexed: dict[str, int] = final.results["indexed"]
        for graph, count in indexed.items():
            out.print(f"{graph}: {count:,} nodes indexed")
        if not indexed:
            out.print("no datasets to index")


# ---------------------------------------------------------------------------- tasks
@main.group(invoke_without_command=True)
@click.pass_context
def tasks(click_ctx: click.Context) -> None:
    """Long-running work (loads, reindexing) and its durable state: list (the default),
    show ID, resume ID, cancel ID."""
    if click_ctx.invoked_subcommand is None:
        click_ctx.invoke(tasks_list)


@tasks.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only tasks with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print the task states as JSON.")
@pass_ctx
def tasks_list(ctx: Context, status: str | None = None, as_json: bool = False) -> None:
    """List tasks, newest first (works while another process holds the store)."""
    with opened(ctx, read_only=True) as brain:
        states = task_runner(brain).list_tasks(status)
        if as_json:
            out.print_json(json.dumps([s.model_dump(mode="json") for s in states]))
            return
        table = _table("task", "kind", "status", "step", "progress", "created", "about")
        for state in states:
            table.add_row(
                state.task_id,
                state.kind,
                state.status,
                state.current_step or state.last_completed_step or "",
                f"{state.progress.done}/{state.progress.total}",
                state.created[:19].replace("T", " "),
                str(state.params.get("label") or state.params.get("source") or ""),
            )
        out.print(table if states else "no tasks")


@tasks.command("show")
@click.argument("task_id")
@pass_ctx
def tasks_show(ctx: Context, task_id: str) -> None:
    """Print one task's full state as JSON: steps, history, results, errors."""
    with opened(ctx, read_only=True) as brain:
        out.print_json(task_runner(brain).get(task_id).model_dump_json())


@tasks.command("resume")
@click.argument("task_id")
@click.option("--json", "as_json", is_flag=True, help="Print the final task state as JSON.")
@pass_ctx
def tasks_resume(ctx: Context, task_id: str, as_json: bool) -> None:
    """Continue an interrupted task from its last checkpoint (an interrupted load restarts
    its atomic write, and never writes twice)."""
    with opened(ctx, read_only=False) as brain:
        runner = task_runner(brain)
        with _progress_bar(brain.settings.progress_min_nodes) as listener:
            final = runner.resume(task_id, listener=listener)
        if as_json:
            out.print_json(final.model_dump_json())
        elif final.kind == "ingest":
            _print_report(_load_report(final))
        else:
            out.print(f"task {task_id}: {final.status}")


@tasks.command("cancel")
@click.argument("task_id")
@pass_ctx
def tasks_cancel(ctx: Context, task_id: str) -> None:
    """Cancel a pending or interrupted task (a running one is cancelled by the process that
    runs it, e.g. with the cancel_task tool)."""
    with opened(ctx, read_only=False) as brain:
        state = task_runner(brain).cancel(task_id)
        out.print(f"task {task_id}: {state.status}")


@main.command()
@click.option("--since", default="7d", show_default=True, help="7d, 24h, 30m, 2w or a date.")
@click.option("--dataset", help="Only this dataset (slug).")
@click.option("--type", "node_type", help="Only nodes of this type label (e.g. Claim).")
@click.option("--creator", help="Only nodes by this creator.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@pass_ctx
def changes(
    ctx: Context,
    since: str,
    dataset: str | None,
    node_type: str | None,
    creator: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """What the loads since a time changed: nodes added, removed and edited, relations added
    and removed, and who added which nodes (every load records its changes)."""
    from labbrain.discourse.changes import parse_since, what_changed

    moment = parse_since(since)
    with opened(ctx, read_only=True) as brain:
        found = what_changed(
            brain, moment, dataset=dataset, node_type=node_type, creator=creator, limit=limit
        )
    if as_json:
        out.print_json(found.model_dump_json())
        return
    if not found.loads:
        out.print(f"nothing changed since {found.since}")
        return
    for load in found.loads:
        out.print(
            f"{load.at} {load.dataset}: +{load.nodesAdded} -{load.nodesRemoved} "
            f"~{load.nodesEdited} nodes, +{load.relationsAdded} -{load.relationsRemoved} relations"
        )
    for node in found.nodes:
        out.print(f"  {node.change:8} {node.nodeType:10} {node.title} ({node.creator or '-'})")
    for relation in found.relations:
        out.print(
            f"  {relation.change:8} {relation.sourceUid} {relation.label} {relation.destinationUid}"
        )
    for person, kinds in found.addedByPerson.items():
        added = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
        out.print(f"{person} added {added}")
    if found.note:
        out.print(f"note: {found.note}")


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--poll", is_flag=True, help="Poll the files instead of waiting for events.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line and event.")
@pass_ctx
def watch(ctx: Context, paths: tuple[str, ...], poll: bool, as_json: bool) -> None:
    """Load exports or Obsidian vaults and load them again whenever they change, until
    interrupted (Ctrl-C).

    Each source is loaded at the start unless the store holds it unchanged, then again after
    each change (when its files have been quiet for a moment). A source that cannot be read
    as it is (an export still being written) leaves its dataset as it was; the next change is
    tried again. Events come from the file system, or from polling where it gives none (a
    network file system, or too many watched files): --poll forces polling."""
    from labbrain.ops.watch import SourceWatcher, WatchEvent

    def show(event: WatchEvent) -> None:
        if as_json:
            record: dict[str, Any] = {
                "source": event.source,
                "outcome": event.outcome,
                "seconds": round(event.seconds, 3),
            }
            if event.report is not None:
                record["report"] = event.report.as_dict()
            if event.error is not None:
                record["error"] = event.error
            out.print_json(json.dumps(record), indent=None)
        elif event.report is not None and event.report.changed is not None:
            counts = event.report.changed
            out.print(
                f"{event.source}: updated by part, nodes +{counts['nodesAdded']} "
                f"~{counts['nodesEdited']} -{counts['nodesRemoved']}, relations "
                f"+{counts['relationsAdded']} -{counts['relationsRemoved']} "
                f"in {event.seconds:.2f}s"
            )
        elif event.report is not None:
            report = event.report
            out.print(
                f"{event.source}: loaded, {report.nodes:,} nodes, {report.quads:,} quads "
                f"in {event.seconds:.2f}s"
            )
            for warning in report.warnings:
                out.print(Text.assemble(("warning: ", "yellow"), warning))
        elif event.error is not None:
            err.print(
                Text.assemble(
                    ("error: ", "red"), f"{event.source}: {event.error}; the dataset is as it was"
                )
            )
        else:
            out.print(f"{event.source}: unchanged")
        sys.stdout.flush()

    with opened(ctx, read_only=False) as brain:
        watcher = SourceWatcher(brain, paths, on_event=show, force_polling=poll or None)
        with suppress(KeyboardInterrupt):
            watcher.run()


@main.command()
@click.option(
    "--toolsets",
    metavar="NAME[,NAME...]",
    help="Toolsets to offer: discourse, sparql, notes, notebook, memory, claims, tasks, "
    "semantic, default (discourse,sparql,notes) or all (default: $LABBRAIN_TOOLSETS, else "
    "default).",
)
@click.option(
    "--read-only",
    is_flag=True,
    default=None,
    help="Offer no tool that writes, record no visit, hold no lock on the store "
    "(default: $LABBRAIN_READ_ONLY).",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Load DATA_PATH again whenever it changes, while serving (a writable store only).",
)
@pass_ctx
def mcp(ctx: Context, toolsets: str | None, read_only: bool | None, watch: bool) -> None:
    """Serve the discourse-graph tools over MCP (stdio). DATA_PATH=export.jsonld (or an
    Obsidian vault) loads that export first unless the store already holds it unchanged;
    with --watch, again whenever it changes.

    When another labbrain process holds the store for writing (e.g. a second assistant's
    server), this one serves it read-only instead of failing, following that writer's loads."""
    from labbrain.mcp.server import serve_stdio, stdout_to_stderr
    from labbrain.mcp.tools import resolve_toolsets

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    settings = ctx.settings(toolsets=toolsets, read_only=read_only)
    chosen = resolve_toolsets(settings.toolsets)
    with stdout_to_stderr():  # opening may rebuild the index; stdout is for JSON-RPC only
        brain, reading = _open_for_mcp(settings)
    try:
        serve_stdio(brain, chosen, read_only=reading, watch=watch)
    finally:
        brain.close()


def _open_for_mcp(settings: Settings) -> tuple[LabBrain, bool]:
    """The store for ``labbrain mcp`` and whether the server only reads: writable, unless the
    settings say read-only or another process holds the store (then read-only, holding no
    lock and following that writer, see :func:`~labbrain.core.open_reading`) or the endpoint
    refuses writes. A read-only server loads ``DATA_PATH`` first, while no one holds the
    store."""
    from labbrain.mcp.server import load_data_path

    log = logging.getLogger("labbrain.mcp")
    if not settings.read_only:
        try:
            return LabBrain(settings), False
        except StoreLocked as locked:
            log.warning("%s; serving it read-only, as it is after each of its writes", locked)
            return open_reading(settings), True
        except EndpointReadOnly as refused:
            log.warning("%s; serving it read-only", refused)
            return LabBrain(settings, read_only=True), True
    data_path = os.environ.get("DATA_PATH")
    if data_path:
        try:
            with LabBrain(settings) as writer:
                load_data_path(writer, data_path)
        except StoreLocked as locked:
            log.warning("%s; DATA_PATH is loaded only if that process loaded it", locked)
    return open_reading(settings), True


@main.command()
@click.argument("text")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--type", "node_type", help="Only nodes of this type label (e.g. Claim).")
@click.option("--creator", help="Only nodes by this creator.")
@click.option(
    "--mode",
    type=click.Choice(["keyword", "semantic", "hybrid"]),
    help="keyword (BM25), semantic (embeddings: matches meaning) or hybrid (both fused). "
    "Default: hybrid when `labbrain embed` computed vectors, else keyword.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def search(
    ctx: Context,
    text: str,
    limit: int,
    node_type: str | None,
    creator: str | None,
    mode: str | None,
    as_json: bool,
) -> None:
    """Search node titles and content (what search_nodes answers): by words, by meaning, or
    both."""
    from labbrain.discourse.reader import DiscourseReader
    from labbrain.index.search_query import SearchQuery

    kinds = (node_type,) if node_type else None
    query = SearchQuery(text, mode=mode, limit=limit, node_types=kinds, creator=creator)
    with opened(ctx, read_only=True) as brain:
        stale, gone = brain.index.stale_graphs(brain.store)
        if stale or gone:
            err.print("warning: the text index is out of date; run `labbrain reindex`")
        found = DiscourseReader(brain).search_nodes(query)
        if as_json:
            out.print_json(json.dumps([hit.model_dump(mode="json") for hit in found.results]))
            return
        table = _table("score", "type", "title", "creator", "created", "snippet")
        table.caption = f"{found.listed} result(s), {found.mode} search"
        if found.note and found.note.startswith("keyword search only"):
            table.caption += f" ({found.note.split(';')[0]})"
        for hit in found.results:
            table.add_row(
                f"{hit.score:.2f}" if found.mode == "keyword" else f"{hit.score:.3f}",
                hit.nodeType,
                hit.title,
                _cell(hit.creator),
                _cell(hit.created)[:10],
                hit.snippet,
            )
        out.print(table)


# ---------------------------------------------------------------------------- console
@main.command()
@click.option("--update", is_flag=True, help="Allow SPARQL updates (opens the store for writing).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Time limit of one query in seconds (default: $LABBRAIN_CONSOLE_QUERY_TIMEOUT_SECONDS).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "tsv", "turtle"]),
    default="table",
    show_default=True,
    help="Result format to start with (.format changes it).",
)
@pass_ctx
def console(ctx: Context, update: bool, timeout: float | None, fmt: str) -> None:
    """Interactive SPARQL console: multi-line queries with highlighting, Tab completion and
    history, paged tables, dot commands (.help). Read-only unless --update.

    A query runs at Enter on an empty line (Alt-Enter: at once). On a store directory each
    query runs in a child process, stopped at the time limit or by Ctrl-C. Piped input runs
    as a script and stops at the first error."""
    from labbrain.console.repl import run_console

    with opened(ctx, read_only=not update, console_query_timeout_seconds=timeout) as brain:
        code = run_console(brain, update=update, fmt=fmt)
    if code:
        sys.exit(code)


# ---------------------------------------------------------------------------- serve
@main.command()
@click.option("--host", help="Address to bind (default: $LABBRAIN_HTTP_HOST, else 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="Port (default 7879; 0 picks a free one)."
)
@click.option(
    "--allow-update",
    is_flag=True,
    help="Take SPARQL updates carrying Authorization: Bearer $LABBRAIN_UPDATE_TOKEN.",
)
@click.option("--mcp", "with_mcp", is_flag=True, help="Also serve MCP (streamable HTTP) at /mcp.")
@click.option("--workers", type=click.IntRange(1, 64), help="Query worker processes.")
@click.option("--timeout", type=click.FloatRange(min=0.01), help="Query time limit in seconds.")
@click.option("--max-rows", type=click.IntRange(min=1), help="Most rows of one answer.")
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.option(
    "--watch",
    "watched",
    multiple=True,
    metavar="PATH",
    help="Keep this export or Obsidian vault's dataset in line with it while serving "
    "(repeatable; the server becomes the store's writer).",
)
@pass_ctx
def serve(
    ctx: Context,
    host: str | None,
    port: int | None,
    allow_update: bool,
    with_mcp: bool,
    workers: int | None,
    timeout: float | None,
    max_rows: int | None,
    access_log: bool,
    watched: tuple[str, ...],
) -> None:
    """Serve the store over HTTP: a SPARQL 1.1 endpoint at /sparql, graphs at /rdf-graphs,
    a web console at /, and with --mcp the MCP server at /mcp.

    Binds to 127.0.0.1 and answers only to its own host names. Read-only unless
    --allow-update (which needs LABBRAIN_UPDATE_TOKEN); a read-only server holds no lock, so
    `labbrain load` runs while it serves, and its answers follow the new data. With --watch
    the server holds the store and follows the sources itself, as `labbrain watch` does
    (SPARQL updates stay refused unless --allow-update). Each query runs in a worker process
    that is stopped at the time limit."""
    from labbrain.http.app import open_for_serving
    from labbrain.http.app import serve as serve_http

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    settings = ctx.settings(
        http_host=host,
        http_port=port,
        http_query_workers=workers,
        http_query_timeout_seconds=timeout,
        http_max_rows=max_rows,
    )
    if allow_update and settings.update_token is None:
        raise SettingsError(
            "--allow-update needs a token: set LABBRAIN_UPDATE_TOKEN (clients send it as "
            "Authorization: Bearer <token>)"
        )
    for path in watched:
        detect_format(path, None)  # not a source: a one-line error before anything starts
    brain = open_for_serving(settings, allow_update=allow_update, watch=bool(watched))
    try:
        serve_http(
            brain,
            allow_update=allow_update,
            mcp=with_mcp,
            access_log=access_log,
            watch=[os.path.abspath(path) for path in watched],
        )
    finally:
        brain.close()


# ---------------------------------------------------------------------------- semantic
@main.command()
@click.option("--model", help="Embedding model: a name or a local directory (default: setting).")
@click.option(
    "--allow-download",
    is_flag=True,
    default=None,
    help="Let the model be downloaded from the model hub if it is not on this machine.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the task's results as JSON.")
@pass_ctx
def embed(ctx: Context, model: str | None, allow_download: bool | None, as_json: bool) -> None:
    """Compute the embeddings semantic and hybrid search use (needs the semantic extra).

    Only nodes that are new or changed since the last run are embedded; vectors of nodes
    that are gone are dropped. Runs as a task: Ctrl-C or cancel keeps what was computed."""
    if model is not None and model.strip().startswith((".", "/", "~")):
        # a model directory (index.embeddings.resolve_model reads it as one)
        check_input_directory(os.path.expanduser(model.strip()), what="model directory")
    with opened(
        ctx, read_only=False, embedding_model=model, embedding_allow_download=allow_download
    ) as brain:
        runner = task_runner(brain)
        task = runner.create("embed")
        with _embed_bar() as on_batch:
            final = runner.start(task.task_id, inputs={"on_batch": on_batch})
        results = final.results
        if as_json:
            out.print_json(json.dumps(results))
            return
        speed = f" ({results['textsPerSecond']:,} texts/s)" if results["textsPerSecond"] else ""
        out.print(
            f"embedded {results['embedded']:,} new or changed node(s) with {results['model']} "
            f"in {results['seconds']:.1f}s{speed}; {results['unchanged']:,} unchanged, "
            f"{results['removed']:,} removed; {results['vectors']:,} vectors"
        )


@contextmanager
def _embed_bar() -> Iterator[Callable[[int, int], None]]:
    """A batch callback drawing a progress bar of texts embedded on a terminal (stderr)."""
    bar: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if not err.is_terminal or total == 0:
            return
        if "bar" not in bar:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            drawn = Progress(
                TextColumn("embedding"),
                BarColumn(),
                TextColumn("{task.completed:,.0f}/{task.total:,.0f}"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            drawn.start()
            bar["bar"], bar["task"] = drawn, drawn.add_task("", total=total)
        bar["bar"].update(bar["task"], completed=done)

    try:
        yield update
    finally:
        if "bar" in bar:
            bar["bar"].stop()


@main.command("eval-retrieval")
@click.option("--dataset", help="Only this dataset (slug or IRI); default: all of them.")
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["keyword", "semantic", "hybrid"]),
    help="Modes to compare (repeatable; default: all three).",
)
@click.option(
    "--chart",
    metavar="FILE",
    default="retrieval-eval.png",
    show_default=True,
    help="Where to write the bar chart (PNG).",
)
@click.option("--no-chart", is_flag=True, help="Do not draw the chart.")
@click.option(
    "--questions",
    metavar="FILE",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Paraphrase questions to ask (JSON lines of id, question, expected IRIs, split); "
    "default: the set shipped with labbrain (real corpus and sample data).",
)
@click.option("--no-questions", is_flag=True, help="Ask no paraphrase questions.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_ctx
def eval_retrieval(
    ctx: Context,
    dataset: str | None,
    modes: tuple[str, ...],
    chart: str,
    no_chart: bool,
    questions: Path | None,
    no_questions: bool,
    as_json: bool,
) -> None:
    """Measure search quality on the lab's own graph: recall@5, recall@10, hit@10 and MRR of
    keyword, semantic and hybrid search, with the lab's typed relations as the answers (a
    claim's supporting and opposing evidence; the claims and evidence addressing or informing
    a question), and paraphrased questions with their expected nodes (tune and report splits).
    Semantic modes need `labbrain embed` first."""
    from labbrain.ops.retrieval_eval import PARAPHRASES, evaluate, write_chart

    if not no_chart:  # checked before the evaluation, which may take a while
        check_output_file(chart, make_parents=True)
    with opened(ctx, read_only=True) as brain:
        report = evaluate(
            brain,
            dataset,
            modes=list(modes) or ["keyword", "semantic", "hybrid"],
            questions=None if no_questions else (questions or PARAPHRASES),
        )
        written = None
        if not no_chart:
            # A chart that cannot be drawn is a warning: the report is printed all the same.
            try:
                written = write_chart(report, Path(chart))
            except LabbrainError as error:
                err.print(Text.assemble(("warning: ", "yellow"), f"no chart: {error}"))
            except OSError as error:
                err.print(
                    Text.assemble(("warning: ", "yellow"), f"no chart: {path_error(chart, error)}")
                )
        if as_json:
            out.print_json(json.dumps(report.as_dict() | {"chart": str(written or "") or None}))
            return
        metrics = report.metric_names()
        table = _table("task", "mode", "queries", "pairs", *metrics)
        for task in report.tasks:
            if not task.scores or not task.queries:
                row = [task.label, "", str(task.queries), str(task.pairs)]
                table.add_row(*row, *[""] * len(metrics))
                continue
            for scores in task.scores:
                values = report.metric_values(scores)
                table.add_row(
                    task.label,
                    scores.mode,
                    str(task.queries),
                    str(task.pairs),
                    *(f"{v:.3f}" for v in values),
                )
        table.caption = (
            f"{', '.join(report.datasets) or 'no datasets'}; MRR over the first {report.depth}"
        )
        out.print(table)
        for mode, reason in report.skipped.items():
            out.print(f"{mode}: not measured: {reason}")
        if written is not None:
            out.print(f"chart: {written}")


# ---------------------------------------------------------------------------- backup
@main.command("backup")
# readable=False: the command checks the path itself, and says what is wrong with it.
@click.argument("directory", type=click.Path(path_type=Path, readable=False))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest summary as JSON.")
@pass_ctx
def backup_cmd(ctx: Context, directory: Path, as_json: bool) -> None:
    """Write a consistent backup of the store to DIRECTORY (new or empty).

    Works while a server holds the store (it reads the snapshot readers see); the backup
    appears only once complete, with a manifest of counts and checksums."""
    from time import monotonic

    from labbrain.ops.backup import backup_store

    started = monotonic()
    settings = ctx.settings()
    if _embedded(settings):  # else backup_store says why it cannot
        check_new_directory(str(directory), what="directory for the backup")
    try:
        manifest = backup_store(settings, directory)
    except OSError as error:  # said as an error of the path it is about
        raise _os_failure(error, directory) from None
    summary = manifest.summary(directory)
    if as_json:
        out.print_json(json.dumps(summary))
        return
    out.print(
        f"backed up {manifest.source} to {directory}: {manifest.quads:,} quads in "
        f"{len(manifest.graphs)} graphs, {len(manifest.datasets)} dataset(s), "
        f"{summary['files']} files ({summary['bytes']:,} bytes) in "
        f"{monotonic() - started:.1f}s"
    )
    for name, reason in manifest.skipped.items():
        err.print(Text.assemble(("warning: ", "yellow"), f"{name} not copied: {reason}"))


def _embedded(settings: Settings) -> bool:
    """Whether the store is an embedded one in a directory (what backup and restore take)."""
    return not settings.endpoint and not settings.in_memory


def _os_failure(error: OSError, given: Path) -> UnusablePath:
    """The one-line error for an OSError of a command working on the directory ``given``:
    named after ``given`` when it is about it or the work files beside it, else after the
    file it names (e.g. one of the store)."""
    name = str(error.filename or given)
    if Path(name).parent == given.parent and Path(name).name.startswith(given.name):
        name = str(given)
    return path_error(name, error)


@main.command("restore")
@click.argument("directory", type=click.Path(path_type=Path, readable=False))
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a store that holds data (its content is kept until the restore is verified).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was restored as JSON.")
@pass_ctx
def restore_cmd(ctx: Context, directory: Path, replace: bool, as_json: bool) -> None:
    """Restore the store from the backup in DIRECTORY (verified first; needs the writer lock).

    If anything fails, the store is left exactly as it was."""
    from labbrain.ops.backup import restore_store

    settings = ctx.settings()
    if _embedded(settings):  # else restore_store says why it cannot
        try:
            check_input_directory(str(directory))
        except UnusablePath as problem:  # a directory that cannot be read is no backup
            raise BackupInvalid(str(directory), problem.reason) from None
    try:
        report = restore_store(settings, directory, replace=replace)
    except OSError as error:  # said as an error of the path it is about
        raise _os_failure(error, directory) from None
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
        return
    verb = "replaced with" if report.replaced else "restored from"
    reindexed = sum(report.index.reindexed.values())
    index = f"re-indexed {reindexed:,} nodes" if reindexed else "current"
    out.print(
        f"store {report.store} {verb} the backup of {report.manifest.created}: "
        f"{report.manifest.quads:,} quads, {len(report.manifest.datasets)} dataset(s), "
        f"text index {index} ({report.seconds:.1f}s)"
    )


@main.command("check")
@click.option("--repair", is_flag=True, help="Mend what can be mended (needs the writer lock).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@pass_ctx
def check_cmd(ctx: Context, repair: bool, as_json: bool) -> None:
    """Check the store: interrupted writes, text and vector indexes, staging graphs,
    interrupted tasks and dangling relation ends. Exit status 1 when problems remain.

    Without --repair it only reads, and works beside a running server."""
    from labbrain.ops.check import run_check

    report = run_check(ctx.settings(), repair=repair)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
    else:
        from rich.table import Column

        styles = {"ok": "green", "repaired": "green", "warning": "yellow", "problem": "bold red"}
        table = _table(
            "check",
            "status",
            Column("detail", overflow="fold"),
            "fix",
            title=f"labbrain check {report.store}",
        )
        for finding in report.findings:
            detail = "\n".join([finding.detail, *(f"  {e}" for e in finding.examples)])
            table.add_row(
                finding.check,
                Text(finding.status, style=styles[finding.status]),
                detail,
                finding.fix or "",
            )
        out.print(table)
    if not report.ok:
        sys.exit(1)


# ---------------------------------------------------------------------------- mcp-config
#: Settings ``labbrain mcp-config`` writes into the configuration (as options).
_CARRIED = (
    "LABBRAIN_STORE",
    "LABBRAIN_ENDPOINT",
    "LABBRAIN_UPDATE_ENDPOINT",
    "LABBRAIN_GSP_ENDPOINT",
)
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _data_path(data: str) -> str:
    """The absolute ``DATA_PATH`` for ``data``: a readable file, or a vault's directory
    (anything else raises the one-line error ``labbrain load`` would give)."""
    if os.path.isdir(data):
        detect_format(data, None)
        return os.path.abspath(data)
    return os.path.abspath(check_input_file(data))


def _load_dir(path: str) -> str:
    """``path`` as an absolute directory for LABBRAIN_LOAD_DIRS; InputError when it is no
    directory, or holds the path separator (it could not be told from two)."""
    if not os.path.isdir(path):
        raise InputError(f"--load-dir {path}: no such directory")
    absolute = os.path.abspath(path)
    if os.pathsep in absolute:
        raise InputError(f"--load-dir {path}: a path holding {os.pathsep!r} cannot be listed")
    return absolute


@main.command("mcp-config")
@click.argument("client", type=click.Choice(MCP_CLIENTS), default="claude-desktop")
@click.option(
    "--name",
    default="labbrain",
    show_default=True,
    help="The server's name in the client (letters, digits, - _ .).",
)
@click.option(
    "--data",
    metavar="PATH",
    help="An export or an Obsidian vault the server loads at start unless the store holds "
    "it unchanged (DATA_PATH; written as an absolute path).",
)
@click.option(
    "--toolsets",
    metavar="NAME[,NAME...]",
    help="Toolsets the server offers (as `labbrain mcp --toolsets`; default: the default set).",
)
@click.option("--read-only", is_flag=True, help="A server that writes nothing (`mcp --read-only`).")
@click.option(
    "--load-dir",
    "load_dirs",
    metavar="DIR",
    multiple=True,
    help="A directory the load_dataset tool may read from (repeatable; LABBRAIN_LOAD_DIRS, "
    "written as absolute paths).",
)
@pass_ctx
def mcp_config(
    ctx: Context,
    client: str,
    name: str,
    data: str | None,
    toolsets: str | None,
    read_only: bool,
    load_dirs: tuple[str, ...],
) -> None:
    """Print the configuration that makes an MCP client start this labbrain's MCP server.
    CLIENT: claude-desktop (the default), claude-code, cursor or vscode.

    It names this labbrain by its absolute path (an app started from the desktop does not
    see this shell's PATH) and the store of --store or $LABBRAIN_STORE as an absolute path
    (or --endpoint). Stdout holds the configuration alone; where it goes is said on stderr:

    \b
      claude-desktop  JSON of claude_desktop_config.json, in ~/Library/Application
                      Support/Claude/ (macOS) or %APPDATA%\\Claude\\ (Windows)
      claude-code     a `claude mcp add` command line (user scope) to run
      cursor          JSON of .cursor/mcp.json (a project) or ~/.cursor/mcp.json
      vscode          JSON of .vscode/mcp.json (a workspace)

    For example: labbrain mcp-config cursor > .cursor/mcp.json"""
    from labbrain.mcp.tools import resolve_toolsets

    if not _SERVER_NAME.fullmatch(name):
        raise InputError(f"--name {name!r}: use letters, digits, '-', '_' and '.' (64 at most)")
    settings = ctx.settings()
    env = {"DATA_PATH": _data_path(data)} if data else {}
    if load_dirs:
        env["LABBRAIN_LOAD_DIRS"] = os.pathsep.join(_load_dir(path) for path in load_dirs)
    served = ["--toolsets", ",".join(resolve_toolsets(toolsets))] if toolsets else []
    served += ["--read-only"] if read_only else []
    if settings.endpoint:
        remote = {
            "--endpoint": settings.endpoint,
            "--update-endpoint": settings.update_endpoint,
            "--gsp-endpoint": settings.gsp_endpoint,
        }
        where = [word for option, url in remote.items() if url for word in (option, url)]
    else:
        store = settings.store if settings.in_memory else os.path.abspath(settings.store)
        where = ["--store", store]
    command = [*labbrain_command(), *where, "mcp", *served]
    click.echo(client_config(client, name=name, command=command, env=env))
    click.echo(client_note(client, name=name), err=True)
    for variable in sorted(os.environ):
        if variable == "LABBRAIN_LOAD_DIRS" and not load_dirs:
            click.echo(
                "note: LABBRAIN_LOAD_DIRS is set here but not written into the configuration; "
                "give the directories with --load-dir",
                err=True,
            )
        elif variable == "LABBRAIN_LOAD_DIRS":
            continue  # written from --load-dir
        elif variable.startswith("LABBRAIN_") and variable not in _CARRIED:
            click.echo(
                f"note: {variable} is set here but not written into the configuration (the "
                "client starts the server without this shell's environment); add it to the "
                "server's env if it needs it",
                err=True,
            )
