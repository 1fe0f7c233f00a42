"""One write per answer: the HTTP protocol ``labbrain serve`` runs uvicorn with.

uvicorn writes an answer's status line and headers as soon as the app starts the answer, and
its body when the app sends it: two writes, so two packets and two wake-ups of the client
for every small answer. :class:`CoalescingTransport` holds the writes made during one turn
of the event loop and hands them to the socket as one at the end of the turn; the protocol
classes of :func:`http_protocol` give uvicorn's HTTP protocol that transport. Nothing else
changes: the bytes, their order, flow control (the real transport's buffer limits apply when
the writes reach it) and closing (held writes go out first).
"""

from __future__ import annotations

import asyncio
from typing import Any


class CoalescingTransport:
    """A transport that passes everything to ``transport`` but holds writes until the end
    of the event loop's current turn, then writes them as one."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold ``data``; everything held goes out, in order, at the end of this turn."""
        if not self._held:
            asyncio.get_running_loop().call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        """Hold every chunk of ``lines`` (as :meth:`write`)."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write what is held now (dropped when the connection is closing)."""
        if not self._held:
            return
        data = b"".join(self._held)
        self._held.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        """Write what is held, then close (the transport still sends its buffer)."""
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        """Write what is held, then close the sending side."""
        self.flush()
        self._transport.write_eof()

    def get_write_buffer_size(self) -> int:
        """Bytes held here and in the transport's buffer."""
        return sum(map(len, self._held)) + self._transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        # everything else (is_closing, get_extra_info, pause_reading, abort, ...) as is
        return getattr(self._transport, name)


def http_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol class (httptools when installed, else h11, as uvicorn
    chooses), writing through a :class:`CoalescingTransport`."""
    base: type[Any]
    try:
        import httptools  # noqa: F401
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # pragma: no cover - httptools is a dependency
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class Coalescing(base):  # type: ignore[misc]
        """uvicorn's protocol, writing through a CoalescingTransport."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            super().connection_made(CoalescingTransport(transport))

    Coalescing.__name__ = f"Coalescing{base.__name__}"
    return Coalescing
