"""The server's warnings, sent to the MCP client as ``notifications/message``.

labbrain logs what a user should know but that is not an error (a visit that could not be
recorded, a store served read-only because another process writes it, a staging graph left
behind) at WARNING on the ``labbrain`` loggers. :class:`ClientLog` collects those records
for the client: a record logged while a tool runs goes out with that call, as a log message
related to its request; one logged outside any call (while the server starts) waits for the
next call. Clients that show server logs show them; the text stays on stderr too.

The server declares the logging capability (``logging/setLevel``) for clients of the
handshake-era protocol versions; clients of the 2026-07-28 versions opt in per request
(``io.modelcontextprotocol/logLevel``), which the SDK honours when sending.
"""

from __future__ import annotations

import logging
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import EmptyResult, SetLevelRequestParams

LoggingLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]

#: The logger whose records (and its children's) reach the client.
ROOT = "labbrain"
#: Records kept for the next call when logged outside any (the oldest are dropped).
PENDING = 50

#: The records of the tool call running in this context (None outside a call).
_CALL: ContextVar[list[logging.LogRecord] | None] = ContextVar("labbrain_mcp_call", default=None)

# The SDK marks the logging capability deprecated as of 2026-07-28 (SEP-2577); clients of
# the handshake-era versions still use it, and the SDK decides what a modern client receives
# (a per-request opt-in), so labbrain sends without the warning.


#: The Python logging level of each MCP level.
_PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def _client_level(level: int) -> LoggingLevel:
    """The MCP level of a Python logging level."""
    if level >= logging.CRITICAL:
        return "critical"
    if level >= logging.ERROR:
        return "error"
    if level >= logging.WARNING:
        return "warning"
    return "info" if level >= logging.INFO else "debug"


class ClientLog(logging.Handler):
    """Collects WARNING (or the level the client set) and above of the ``labbrain`` loggers
    for the client, per tool call; records logged outside a call wait for the next one."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._pending: deque[logging.LogRecord] = deque(maxlen=PENDING)

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record`` for the call running now, or for the next call."""
        current = _CALL.get()
        (current if current is not None else self._pending).append(record)

    @contextmanager
    def collecting(self) -> Iterator[list[logging.LogRecord]]:
        """Inside, records logged in this context (threads the call runs in included) are
        collected in the list yielded, after the records waiting from outside any call."""
        records: list[logging.LogRecord] = []
        while self._pending:
            records.append(self._pending.popleft())
        token = _CALL.set(records)
        try:
            yield records
        finally:
            _CALL.reset(token)

    async def send(self, records: list[logging.LogRecord], ctx: Context[Any, Any]) -> None:
        """Send ``records`` to the client of the request ``ctx`` belongs to; a client that
        cannot take them any more loses them (they are on stderr)."""
        for record in records:
            try:
                with warnings.catch_warnings():  # see the note on the deprecation above
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    level = _client_level(record.levelno)
                    await ctx.log(level, record.getMessage(), logger_name=record.name)
            except Exception:  # the answer matters more than its log, which is on stderr
                return

    def attach(self, server: MCPServer[Any]) -> None:
        """Let ``server``'s clients set the level (``logging/setLevel``, which declares the
        logging capability); the collector listens on the loggers from the start
        (:data:`CLIENT_LOG`)."""

        async def set_level(_context: Any, params: SetLevelRequestParams) -> EmptyResult:
            self.setLevel(_PYTHON_LEVELS.get(params.level, logging.WARNING))
            return EmptyResult()

        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


#: The one collector of a process (every server of the process shares the loggers). It
#: listens from the start, so that what the server logs while it opens the store reaches
#: the client with the first call.
CLIENT_LOG = ClientLog()
logging.getLogger(ROOT).addHandler(CLIENT_LOG)
