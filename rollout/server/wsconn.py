# A server-side WebSocket connection on a trio stream, built on wsproto (sans-IO, like h11 for
# HTTP). Why not trio-websocket: its send path writes every message with its own socket send,
# and a response begins with four or five small events; here frames queued while the writer is
# busy go out together in one write (a measured 3x on time to first token), the outbox is
# bounded (a client that stops reading stalls its own sender, not the server's memory), and a
# too-large message can be answered with an error event before the close 1009.
from __future__ import annotations

import attrs
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

RECEIVE = 256 * 1024
HIGH_WATER = 256 * 1024  # queued outgoing bytes before a sender waits for the writer


class WsClosed(Exception):
    """The connection is closed (code 1006: dropped without a close frame)."""

    def __init__(self, code: int = 1006, reason: str = "") -> None:
        super().__init__(f"{code} {reason}".strip())
        self.code = code
        self.reason = reason


@attrs.frozen
class TooLarge:
    """A message over the size limit (its payload was dropped); the session answers it."""

    size: int


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, unfragmented text frame (RFC 6455 §5.2; a server's frames are not masked,
    and no extension was negotiated)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x81, n))
    elif n < 1 << 16:
        head = bytes((0x81, 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x81, 127)) + n.to_bytes(8, "big")
    return head + payload


def _join(parts: list[str | bytes]) -> str | bytes:
    if parts and isinstance(parts[0], bytes):
        return b"".join(p for p in parts if isinstance(p, bytes))
    return "".join(p for p in parts if isinstance(p, str))


class WsConnection:
    """`get_message()`, `send_message()`, `aclose()`; reader and writer run in a nursery."""

    def __init__(self, stream: trio.abc.Stream, max_message_size: int) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.SERVER)
        self._max = max_message_size
        self._send_inbox, self._inbox = trio.open_memory_channel[str | bytes | TooLarge](64)
        self._out = bytearray()
        self._wake = trio.Event()
        self._drained = trio.Event()
        self._drained.set()
        self._closed: WsClosed | None = None
        self._writer_done = trio.Event()

    @property
    def closed(self) -> WsClosed | None:
        return self._closed

    @property
    def queued(self) -> int:
        """Bytes waiting in the outbox (bounded by HIGH_WATER plus one message)."""
        return len(self._out)

    async def accept(
        self,
        head: bytes,
        nursery: trio.Nursery,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Complete the handshake whose request bytes (`head`) were already read."""
        self._ws.receive_data(head)
        for event in self._ws.events():
            if isinstance(event, Request):
                # No extensions: permessage-deflate, if offered, is declined.
                accept = AcceptConnection(extra_headers=headers or [])
                await self._stream.send_all(self._ws.send(accept))
                break
        else:
            raise WsClosed(1002, "no WebSocket handshake")
        nursery.start_soon(self._reader)
        nursery.start_soon(self._writer)

    # -- receiving ------------------------------------------------------------------------------

    async def get_message(self) -> str | bytes | TooLarge:
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._closed or WsClosed() from None

    async def _reader(self) -> None:
        parts: list[str | bytes] = []
        size = 0
        dropping = False
        try:
            while self._closed is None:
                for event in self._ws.events():
                    if isinstance(event, TextMessage | BytesMessage):
                        size += len(event.data)
                        if size > self._max:
                            if not dropping:
                                dropping = True
                                parts = []
                                await self._send_inbox.send(TooLarge(size))
                        else:
                            parts.append(
                                bytes(event.data)
                                if isinstance(event.data, bytearray)
                                else event.data
                            )
                        if event.message_finished:
                            if not dropping:
                                await self._send_inbox.send(_join(parts))
                            parts, size, dropping = [], 0, False
                    elif isinstance(event, Ping):
                        self._queue(self._ws.send(event.response()))
                    elif isinstance(event, CloseConnection):
                        if self._closed is None:
                            self._closed = WsClosed(event.code, event.reason or "")
                            self._queue(self._ws.send(event.response()))
                        return
                data = await self._stream.receive_some(RECEIVE)
                if not data:
                    self._closed = self._closed or WsClosed(1006, "connection dropped")
                    return
                self._ws.receive_data(bytes(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closed = self._closed or WsClosed(1006, "connection dropped")
        except RemoteProtocolError as exc:
            self._closed = self._closed or WsClosed(1002, str(exc))
            self._queue(self._ws.send(CloseConnection(code=1002, reason="protocol error")))
        finally:
            self._send_inbox.close()
            self._wake.set()

    # -- sending --------------------------------------------------------------------------------

    def _queue(self, data: bytes) -> None:
        self._out += data
        self._drained = trio.Event() if self._drained.is_set() else self._drained
        self._wake.set()

    async def send_message(self, message: str | bytes) -> None:
        """Queue one text frame (`bytes` must be UTF-8 text, e.g. JSON from orjson: it is framed
        as is, without a round trip through str). Frames queued while the writer is busy leave
        in one write; a sender waits only when the outbox is over its high-water mark."""
        if self._closed is not None:
            raise self._closed
        if isinstance(message, str):
            self._queue(self._ws.send(TextMessage(data=message)))
        else:
            self._queue(_text_frame(message))
        if len(self._out) > HIGH_WATER:
            await self._drained.wait()
            if self._closed is not None and self._closed.code == 1006:
                raise self._closed

    async def flush(self) -> None:
        """Let the writer send what is queued now (e.g. a response's first token)."""
        if self._out and self._closed is None:
            await self._drained.wait()

    async def _writer(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                if self._out:
                    data = bytes(self._out)
                    self._out.clear()
                    await self._stream.send_all(data)
                if not self._out:
                    self._drained.set()
                if self._closed is not None and not self._out:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closed = self._closed or WsClosed(1006, "connection dropped")
            self._drained.set()
        finally:
            self._writer_done.set()

    async def abort(self) -> None:
        """Drop the connection without a close frame (as a crashed peer would: 1006), after what
        is already queued has been sent."""
        with trio.move_on_after(1):
            await self.flush()
        self._closed = self._closed or WsClosed(1006, "aborted")
        await self._stream.aclose()

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (unless closed already), flush what is queued, close the stream."""
        if self._closed is None:
            self._closed = WsClosed(code, reason)
            if self._ws.state.name == "OPEN":
                self._queue(self._ws.send(CloseConnection(code=code, reason=reason or None)))
        self._wake.set()
        with trio.move_on_after(2):
            await self._writer_done.wait()
        await self._stream.aclose()
