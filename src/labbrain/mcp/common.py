"""What every group of MCP tools shares: the context they run in, their registration, answers.

A tool is a module-level function of one group module in :mod:`labbrain.mcp.tools`: it takes
the :class:`ToolContext` first, then its arguments, and returns a pydantic model (or, when it
attaches more than the model, a finished :class:`CallToolResult`). Library errors are raised
as they are. Each group lists its tools as data (``TOOLS``, a tuple of :class:`ToolSpec`), and
:func:`sdk_tool` makes one the SDK's tool, handed to the server as it is made
(``MCPServer(tools=...)``): the context is bound, the model becomes structured
content plus compact JSON text (:func:`answer`), and a :class:`~labbrain.errors.LabbrainError`
becomes the ``isError`` message the model reads. That mapping is made here and nowhere else.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, cast

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from labbrain.agent.projects.findings import Findings
from labbrain.agent.projects.projects import Projects
from labbrain.agent.projects.related import RelatedPagesFinder
from labbrain.agent.writer import AgentWriter
from labbrain.core import LabBrain
from labbrain.discourse.changes import AskedAt
from labbrain.discourse.reader import DiscourseReader
from labbrain.errors import LabbrainError
from labbrain.mcp import caps
from labbrain.mcp.logs import CLIENT_LOG, ClientLog
from labbrain.ops.workflows import task_runner
from labbrain.store.isolated import cancellable
from labbrain.store.threads import confined
from labbrain.tasks.runner import TaskRunner

if TYPE_CHECKING:
    from labbrain.agent.claims.paths import PropositionPaths
    from labbrain.agent.claims.propositions import Propositions
    from labbrain.agent.memory.memories import Memories

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

IdempotencyKey = Annotated[
    str | None,
    Field(
        description="unique key: retrying with it writes nothing, returns the first result",
        max_length=200,
    ),
]

#: The toolset whose tools read the visits get_node records (a server without it records none).
VISITS_READ_BY = "notebook"

#: What a tool function returns: its answer as a model, or a finished result.
Answer = BaseModel | CallToolResult


@dataclass
class ToolContext:
    """What tools run against: the opened store, the discourse read model over it, the
    writer that applies agent writes with provenance and idempotency, the output cap, and
    the agent-side services built on them (one of each, shared by every tool).

    The memory and claims services are built (and their modules imported) when a tool first
    uses them: a server without those toolsets never imports them."""

    brain: LabBrain
    reader: DiscourseReader
    writer: AgentWriter
    #: The output cap in force, read at each call (the server's cap is the one that counts).
    cap: Callable[[], int]
    #: A read-only server: no tool writes, not even as a side effect of a read.
    read_only: bool = False
    #: The names of the tools the server serves (None: every tool): the tools an answer's
    #: ``availableActions`` may suggest (:func:`served_actions`).
    served: frozenset[str] | None = None
    #: Whether get_node records a visit in the active project: only where the tools that
    #: read visits are served (the notebook toolset) and the server writes.
    records_visits: bool = True
    #: Where the server's warnings wait for the client (they reach it once the server
    #: attaches it to the loggers, see :meth:`ClientLog.attach`).
    client_log: ClientLog = field(default_factory=lambda: CLIENT_LOG)
    projects: Projects = field(init=False)
    findings: Findings = field(init=False)
    #: When each client last asked what changed.
    asked: AskedAt = field(init=False)
    related: RelatedPagesFinder = field(init=False)
    runner: TaskRunner = field(init=False)
    # The services built at first use (tools run in worker threads: built once, under a lock).
    _services: threading.RLock = field(init=False, repr=False, compare=False)
    _memories: Memories | None = field(default=None, init=False, repr=False, compare=False)
    _propositions: Propositions | None = field(default=None, init=False, repr=False, compare=False)
    _paths: PropositionPaths | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def max_chars(self) -> int:
        """The output cap in force now."""
        return self.cap()

    def __post_init__(self) -> None:
        self.projects = Projects(self.brain, self.reader, self.writer)
        self.findings = Findings(self.projects)
        self.records_visits = self.records_visits and not self.read_only
        self.asked = AskedAt(self.brain, keep=not self.read_only and not self.brain.read_only)
        self.related = RelatedPagesFinder(self.projects)
        self.runner = task_runner(self.brain)  # tasks run in this process, in the background
        self._services = threading.RLock()

    @property
    def memories(self) -> Memories:
        """The memory domains, memories and edges (built at first use, once)."""
        with self._services:
            if self._memories is None:
                from labbrain.agent.memory.memories import Memories

                self._memories = Memories(self.brain, self.reader, self.writer)
            return self._memories

    @property
    def propositions(self) -> Propositions:
        """The propositions and their relations (built at first use, once)."""
        with self._services:
            if self._propositions is None:
                from labbrain.agent.claims.propositions import Propositions

                self._propositions = Propositions(self.brain, self.reader, self.writer)
            return self._propositions

    @property
    def paths(self) -> PropositionPaths:
        """Lineage and contradictions over :attr:`propositions` (built at first use, once)."""
        with self._services:
            if self._paths is None:
                from labbrain.agent.claims.paths import PropositionPaths

                self._paths = PropositionPaths(self.propositions)
            return self._paths

    @classmethod
    def open(
        cls,
        brain: LabBrain,
        cap: Callable[[], int] | None = None,
        *,
        read_only: bool = False,
        served: Iterable[ToolSpec] | None = None,
        toolsets: Iterable[str] | None = None,
    ) -> ToolContext:
        """The context over an opened store, with the agent name of its settings and the
        output cap ``cap`` gives at each call (default: the settings' cap); ``read_only``
        for a server that writes nothing. ``served``: the tools the server serves (answers
        suggest only those; default: every tool); ``toolsets``: the toolsets it serves
        (visits are recorded only with :data:`VISITS_READ_BY` among them; default: all)."""
        settings = brain.settings
        writer = AgentWriter(brain.store, agent=settings.agent_name)
        if cap is None:
            cap = lambda: settings.mcp_max_chars  # noqa: E731
        context = cls(brain, DiscourseReader(brain), writer, cap, read_only)
        if served is not None:
            context.served = frozenset(spec.name for spec in served)
        context.records_visits = not read_only and (
            toolsets is None or VISITS_READ_BY in set(toolsets)
        )
        return context


class ToolSpec(NamedTuple):
    """One tool of a group: its function (whose name is the tool's name and whose docstring,
    dedented, is its description), its title and its hints (READ_ONLY, WRITE, DESTRUCTIVE).

    Tool descriptions are documentation for the model: what the tool does, when to use it,
    what comes back and what to call next."""

    fn: Callable[..., Answer] | Callable[..., Awaitable[Answer]]
    title: str
    annotations: ToolAnnotations = READ_ONLY
    #: A read whose one write is a side effect kept for the tools of this toolset (get_node's
    #: visit, for the notebook): a server without that toolset, or a read-only one, offers it
    #: as a pure read (:attr:`ToolContext.records_visits` turns the side effect off).
    side_effect_for: str | None = None
    #: Why the tool cannot be served in this install, if it cannot (None: it always can):
    #: such a tool is left out of the listing rather than failing at its first call.
    unavailable: Callable[[], str | None] | None = None

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.fn.__doc__ or "")


def answer(model: BaseModel, *extra: ImageContent) -> CallToolResult:
    """A tool result: the model as structured content and as compact JSON text. The server
    (:class:`~labbrain.mcp.caps.CappedServer`) fits it under the output cap: an answer under
    the cap costs this one serialisation."""
    data = model.model_dump(mode="json")
    text = caps.dumps(data)
    return CallToolResult(
        content=[TextContent(type="text", text=text), *extra], structured_content=data
    )


def served_actions(model: BaseModel, served: frozenset[str] | None) -> BaseModel:
    """``model`` with each ``availableActions`` list in it (at any depth) cut to the tools in
    ``served``, in their order: an answer never suggests a tool the server does not serve.
    ``served`` None keeps every action; a model without suggestions is returned as it is."""
    if served is None:
        return model
    update: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if name == "availableActions" and isinstance(value, list):
            kept = [action for action in value if action in served]
            if kept != value:
                update[name] = kept
        elif isinstance(value, BaseModel):
            inner = served_actions(value, served)
            if inner is not value:
                update[name] = inner
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            items = [served_actions(item, served) for item in value]
            if any(new is not old for new, old in zip(items, value, strict=True)):
                update[name] = items
    return model.model_copy(update=update) if update else model


def _answered(result: Answer, served: frozenset[str] | None) -> CallToolResult:
    if isinstance(result, CallToolResult):
        return result
    return answer(served_actions(result, served))


@contextmanager
def errors_for_the_model() -> Iterator[None]:
    """Inside, a library error becomes a :class:`ToolError` with the same message: the
    ``isError`` result the model reads (the one place tools map errors)."""
    try:
        yield
    except LabbrainError as error:
        raise ToolError(str(error)) from None


def bind(spec: ToolSpec, context: ToolContext) -> Callable[..., Any]:
    """The tool as the SDK sees it: ``spec.fn`` with ``context`` bound, its answer made a
    tool result, and library errors made messages for the model (``isError``).

    The handler has the function's signature without the context, and a model return type
    ``M`` becomes ``Annotated[CallToolResult, M]``: the SDK derives the same input and output
    schemas from it as from the function. A model answer must be an ``M`` (else the call
    fails): its structured content is then ``M``'s by construction, which is why
    :func:`sdk_tool` spares the SDK validating it again."""
    fn = spec.fn
    signature = inspect.signature(fn, eval_str=True)
    parameters = list(signature.parameters.values())[1:]  # the first one takes the context
    returns = signature.return_annotation
    model = returns if isinstance(returns, type) and issubclass(returns, BaseModel) else None
    if model is not None:
        returns = Annotated[CallToolResult, model]

    own = next((p.name for p in parameters if _is_context(p.annotation)), None)
    if own is None:  # the SDK passes the request's context to the parameter typed Context
        parameters.append(
            inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        )
    ctx_name = own or _CTX

    async def handler(**arguments: Any) -> CallToolResult:
        ctx = arguments.get(ctx_name) if own else arguments.pop(ctx_name, None)
        log = context.client_log
        with log.collecting() as records:
            try:
                with errors_for_the_model():
                    if inspect.iscoroutinefunction(fn):
                        result = await fn(context, **arguments)
                    else:
                        sync = cast(Callable[..., Answer], fn)
                        result = await _in_thread(
                            spec, functools.partial(sync, context, **arguments)
                        )
            finally:
                if records and ctx is not None:
                    await log.send(records, ctx)
        if model is not None and isinstance(result, BaseModel) and not isinstance(result, model):
            raise TypeError(f"{spec.name} answered {type(result).__name__}, not {model.__name__}")
        return _answered(result, context.served)

    handler.__name__ = handler.__qualname__ = spec.name
    handler.__doc__ = fn.__doc__
    handler.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}
    signature = signature.replace(parameters=parameters, return_annotation=returns)
    handler.__signature__ = signature  # type: ignore[attr-defined]
    return handler


async def _in_thread(spec: ToolSpec, call: Callable[[], Answer]) -> Answer:
    """``call()`` in a worker thread. When the request is cancelled (the client's
    ``notifications/cancelled``, or a closed stream over HTTP) the isolated query it runs is
    stopped at once (:func:`~labbrain.store.isolated.cancellable`); a read-only tool is not
    waited for (its thread ends within moments), a writing one is (its write is short and
    lands whole or not at all)."""
    cancel = threading.Event()

    def run() -> Answer:
        with cancellable(cancel):
            return call()

    try:
        return await anyio.to_thread.run_sync(
            confined(run), abandon_on_cancel=bool(spec.annotations.read_only_hint)
        )
    except anyio.get_cancelled_exc_class():
        cancel.set()
        raise


#: The parameter the request's context comes in when the tool function takes none.
_CTX = "labbrain_request_context"


def _is_context(annotation: Any) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, Context)


def sdk_tool(spec: ToolSpec, context: ToolContext) -> Tool:
    """The SDK's tool for ``spec``, running against ``context``: give it to the server as
    the server is made (``MCPServer(tools=[...])``).

    The tool keeps its output schema (listed, and validated by clients), but the SDK does
    not validate each structured answer against the answer model again: the answer was
    dumped from an instance of that model a moment before (:func:`bind` checks the type),
    and the output cap (:mod:`labbrain.mcp.caps`) keeps what it cuts valid.

    Only the SDK's public surface is used: ``Tool.from_function`` (what ``MCPServer.tool``
    does), the server's ``tools`` parameter, and ``FuncMetadata.output_model``, a field the
    SDK reads at each call (None: no validation); ``tests/mcp/test_sdk_seams.py`` says
    which of them an SDK upgrade changed."""
    tool = Tool.from_function(
        bind(spec, context),
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=spec.annotations,
    )
    tool.fn_metadata.output_model = None
    return tool
