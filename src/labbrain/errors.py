"""The one error tree of labbrain.

Every error a user or an adapter can see derives from :class:`LabbrainError` and is named by
its condition. Adapters map them once: the CLI to a one-line message and an exit code, the
HTTP endpoint to a status and a JSON body, the MCP server to a ``ToolError``.

::

    LabbrainError
    ├── StoreError
    │   ├── StoreLocked(path)              another process holds the writer lock
    │   ├── StoreNotFound(path)            a read-only command on a store that does not exist
    │   ├── StoreLocationInvalid(path, problem)  the store path is a file, or its directory
    │   │                                  cannot be created, read or written there
    │   ├── StoreReadOnly(operation)       a write on a store opened read-only
    │   ├── DiskFull()                     the store's device ran out of space; write undone
    │   ├── LoadInProgress(graph)  another process is loading that graph for the first time
    │   ├── WriteConflict(operation, attempts)  other processes' writes kept landing first
    │   └── EndpointError(url, reason)     a remote SPARQL store failed or refused a request
    │       └── EndpointReadOnly(url)      it refused a write (a read-only endpoint)
    ├── InputError                         the user's input is wrong; nothing was written
    │   ├── ExportFormatError(path, reason, position)
    │   ├── InputTooLarge(path, reason)
    │   ├── RemoteContextRefused(url)
    │   ├── UnsupportedFormat(path, reason)
    │   ├── BackupInvalid(path, reason)    not a complete, intact labbrain backup
    │   ├── UnusablePath(path, reason)     missing, a directory / device / named pipe,
    │   │                                  unreadable, unwritable, or a name too long
    │   └── FormatHoldsOneGraph(fmt, graphs)  several graphs asked of Turtle / N-Triples
    ├── QueryError
    │   ├── QuerySyntaxError(message, line, column)
    │   ├── QueryNotAllowed(reason)
    │   └── UnknownTemplate(name) / TemplateParameterError(name, reason)
    │   └── QueryTimeout(seconds) / QueryCancelled
    ├── GraphNotFound(graph)
    ├── NodeNotFound(uid) / DatasetNotFound(name)
    ├── ItemNotFound(kind, ident, hint)    a project, memory, proposition, task ... is unknown
    ├── NoDomainSelected(missing)          a memory tool before create_domain / select_domain
    ├── InvalidArgument(name, reason)
    │   └── PathNotAllowed(path, reason)   a file outside the directories the user allowed
    ├── SemanticUnavailable(reason)        semantic search asked for without its extra, model
    │                                      or vectors
    ├── TaskError
    │   ├── InvalidTransition(task, status, event)
    │   └── TaskCancelled(task)            raised inside a task's work when it is cancelled
    └── SettingsError(reason)
"""

from __future__ import annotations


class LabbrainError(Exception):
    """Base of every error labbrain raises on purpose. ``str(err)`` is a one-line message."""

    exit_code: int = 1


class StoreError(LabbrainError):
    """Something about the store itself (location, lock, mode) prevents the operation."""

    exit_code = 3


class StoreLocked(StoreError):
    """Another process holds the single-writer lock of the store at ``path``."""

    def __init__(self, path: str, holder: str | None = None) -> None:
        self.path = path
        self.holder = holder
        who = f" (held by {holder})" if holder else ""
        super().__init__(
            f"store {path} is locked by another labbrain process{who}; "
            "stop that process or use a read-only command"
        )


class StoreNotFound(StoreError):
    """A read-only operation was asked of a store directory that does not exist."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"no labbrain store at {path}; load data first with `labbrain load`")


class StoreLocationInvalid(StoreError):
    """The store location ``path`` cannot hold a labbrain store: ``problem`` says why (it is a
    file, or its directory cannot be created, read or written there, with the system's
    reason). Nothing was written."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{problem}; use another store location (--store or LABBRAIN_STORE)")


class StoreReadOnly(StoreError):
    """A write was attempted on a store opened read-only."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(f"{operation} needs write access, but the store was opened read-only")


class DiskFull(StoreError):
    """The device holding the store (or its index) ran out of space during a write. The
    write was undone: the store is as it was before it."""

    def __init__(self) -> None:
        super().__init__(
            "no space left on the device holding the store; the write was undone and the "
            "store is unchanged: free some space and try again"
        )


class LoadInProgress(StoreError):
    """Another process is loading ``graph`` into the remote store for the first time."""

    def __init__(self, graph: str) -> None:
        self.graph = graph
        super().__init__(
            f"{graph} is being loaded by another process for the first time; wait for that "
            "load to finish, then load again (a load left by a process that died is dropped "
            "a day after it began)"
        )


class WriteConflict(StoreError):
    """An agent write was planned ``attempts`` times, and each time another process's write
    to the same (remote) store landed first; nothing of it was written."""

    def __init__(self, operation: str, attempts: int) -> None:
        self.operation = operation
        self.attempts = attempts
        super().__init__(
            f"{operation} was not written: other processes wrote the store first {attempts} "
            "times in a row; retry it (with the same idempotencyKey, if it had one)"
        )


class StaleDataset(StoreError):
    """A change worked out from a dataset as one load left it, for a dataset another load has
    replaced since; nothing of it was written (the caller loads the source whole)."""

    def __init__(self, graph: str, expected: str, found: str | None) -> None:
        self.graph = graph
        super().__init__(
            f"{graph} is no longer as load {expected} left it (now: {found or 'not loaded'}); "
            "the change was not written, load the source again"
        )


class EndpointError(StoreError):
    """A remote SPARQL store (``--endpoint``) could not be reached, refused a request, or
    answered with something broken. ``url`` names the endpoint, never its credentials."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"SPARQL endpoint {url}: {reason}")


class EndpointReadOnly(EndpointError):
    """A remote SPARQL store refused a write (HTTP 403 or 405): it serves reads only, or
    only to other credentials. ``credentials`` names where the credentials sent come from
    (settings or a netrc file, never their value); None when none were sent."""

    def __init__(self, url: str, status: int, credentials: str | None = None) -> None:
        self.status = status
        self.credentials = credentials
        who = (
            f"the credentials from {credentials} may not write"
            if credentials is not None
            else "it takes writes only with credentials (LABBRAIN_ENDPOINT_USER and "
            "LABBRAIN_ENDPOINT_PASSWORD, LABBRAIN_ENDPOINT_TOKEN, LABBRAIN_ENDPOINT_AUTH or "
            "a netrc file)"
        )
        super().__init__(
            url, f"refused the write (HTTP {status}): the endpoint is read-only, or {who}"
        )


class InputError(LabbrainError):
    """The input the user gave is wrong. Nothing was written."""

    exit_code = 2


class ExportFormatError(InputError):
    """A file is not what it claims to be, at a position when it is known."""

    def __init__(self, path: str, reason: str, position: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.position = position
        where = f" at {position}" if position else ""
        super().__init__(f"{path}{where}: {reason}")


class InputTooLarge(InputError):
    """A document exceeds a size or nesting limit from the settings."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class RemoteContextRefused(InputError):
    """A JSON-LD document names a remote ``@context`` and no local copy is configured."""

    def __init__(self, url: str, path: str | None = None) -> None:
        self.url = url
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(
            f"{where}remote JSON-LD context {url} refused (labbrain never fetches from the "
            "network); save it locally and map it with LABBRAIN_JSONLD_CONTEXTS"
        )


class UnsupportedFormat(InputError):
    """The format of an input could not be determined or is not supported."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class BackupInvalid(InputError):
    """A directory given as a backup is not a complete, intact labbrain backup (no or bad
    manifest, a file changed or missing, the database does not hold what it records)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"backup {path} refused: {reason}; nothing was changed")


class UnusablePath(InputError):
    """A path given to a command cannot be used as asked: it is missing, of another kind (a
    directory, a device, a named pipe), unreadable or unwritable, or its name is too long.
    ``reason`` says what the path is and what to do instead."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class FormatHoldsOneGraph(InputError):
    """An export in a triples-only format (Turtle, N-Triples) was asked for several graphs."""

    def __init__(self, fmt: str, graphs: list[str]) -> None:
        self.fmt = fmt
        self.graphs = graphs
        super().__init__(
            f"{fmt} holds one graph, and {len(graphs)} were asked for ({', '.join(graphs)}); "
            "export them with their names as TriG or N-Quads (--format trig, --format "
            "nquads), one of them with --graph, or all their triples as one graph with --merge"
        )


class QueryError(LabbrainError):
    """A SPARQL query could not be run as asked."""

    exit_code = 2


class QuerySyntaxError(QueryError):
    """The SPARQL text does not parse; ``line`` and ``column`` are 1-based when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.message = message
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"SPARQL syntax error{where}: {message}")


class QueryNotAllowed(QueryError):
    """The query asks for something refused by policy (SERVICE, LOAD, updates when read-only)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"query refused: {reason}")


class UnknownTemplate(QueryError):
    """No SPARQL template of that name ships with labbrain."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no query template named {name!r}")


class TemplateParameterError(QueryError):
    """A template parameter is missing, unexpected or of the wrong type."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"template {name}: {reason}")


class QueryTimeout(QueryError):
    """A query ran past its time limit and was stopped."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(
            f"query stopped after {seconds:g} s; narrow it (LIMIT, fewer OPTIONALs, a GRAPH)"
        )


class QueryCancelled(QueryError):
    """The caller of a query went away (a cancelled MCP call), and the query was stopped."""

    def __init__(self) -> None:
        super().__init__("query cancelled by its caller and stopped")


class NodeNotFound(LabbrainError):
    """No loaded dataset has a node with this uid."""

    exit_code = 4

    def __init__(self, uid: str) -> None:
        self.uid = uid
        super().__init__(f"no node with uid {uid}; search_nodes finds uids")


class DatasetNotFound(LabbrainError):
    """No loaded dataset has this slug."""

    exit_code = 4

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        choices = ", ".join(known) or "none loaded yet"
        super().__init__(f"no dataset named {name}; loaded datasets: {choices}")


class InvalidArgument(LabbrainError):
    """A tool or command argument has a value it cannot take."""

    exit_code = 2

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid {name}: {reason}")


class ItemNotFound(LabbrainError):
    """An agent-side item (project, domain, memory, edge, proposition, task, ...) is unknown.

    ``hint`` says how to find valid identifiers, e.g. "list_projects lists them".
    """

    exit_code = 4

    def __init__(self, kind: str, ident: str, hint: str) -> None:
        self.kind = kind
        self.ident = ident
        self.hint = hint
        super().__init__(f"no {kind} {ident!r}; {hint}")


class NoDomainSelected(LabbrainError):
    """A memory tool was called while no memory domain is active (or the active one is gone)."""

    exit_code = 2

    def __init__(self, missing: str | None = None) -> None:
        self.missing = missing
        why = (
            f"the active memory domain {missing!r} no longer exists"
            if missing
            else "no memory domain is selected"
        )
        super().__init__(
            f"{why}; call create_domain to make one or select_domain to pick one "
            "(list_domains lists them)"
        )


class PathNotAllowed(InvalidArgument):
    """A file path lies outside the directories the settings allow (symlinks resolved)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__("path", f"{path}: {reason}")


class SemanticUnavailable(LabbrainError):
    """Semantic search (or embedding) was asked for, but something it needs is missing: the
    ``semantic`` extra, the embedding model, or the vectors. ``reason`` says how to fix it."""

    exit_code = 2

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"semantic search unavailable: {reason}")


class TaskError(LabbrainError):
    """A task cannot do what was asked of it."""

    exit_code = 2


class InvalidTransition(TaskError):
    """The event is not allowed in the task's current status."""

    def __init__(self, task: str, status: str, event: str) -> None:
        self.task = task
        self.status = status
        self.event = event
        super().__init__(f"task {task} is {status}: it cannot {event}")


class TaskCancelled(TaskError):
    """Raised inside a task's work when it was cancelled; the runner rolls the work back."""

    def __init__(self, task: str) -> None:
        self.task = task
        super().__init__(f"task {task} was cancelled")


class GraphNotFound(LabbrainError):
    """The named graph does not exist in the store."""

    exit_code = 4

    def __init__(self, graph: str) -> None:
        self.graph = graph
        super().__init__(f"no graph named {graph}; `labbrain graphs` lists them")


class SettingsError(LabbrainError):
    """The effective settings are inconsistent."""

    exit_code = 2

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"settings: {reason}")
