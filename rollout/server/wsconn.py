# A server-side WebSocket connection on a trio stream, built on wsproto (sans-IO, like h11 for
# HTTP). Why not trio-websocket: its send path writes every message with its own socket send,
# and a response begins with four or five small events; here frames queued while the writer is
# busy go out together in one write (a measured 3x on time to first token), the outbox is
# bounded (a client that stops reading stalls its own sender, and the reader stops reading its
# pings, so neither grows the server's memory), a too-large message can be answered with an
# error event before the close 1009, and a close lingers until the peer's close frame.
from __future__ import annotations

from collections.abc import Callable

import attrs
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

from rollout.server.closing import LINGER_S, discard_input, half_close
from rollout.server.outbox import Outbox

RECEIVE = 256 * 1024
HIGH_WATER = 256 * 1024  # queued outgoing bytes (frames, pongs, closes) before senders wait


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
        self._out = Outbox(
            stream.send_all,
            HIGH_WATER,
            broken=(trio.BrokenResourceError, trio.ClosedResourceError),
            on_broken=lambda: self._close_as(WsClosed(1006, "connection dropped")),
        )
        self._closed: WsClosed | None = None
        self._reader_done = trio.Event()
        self._unparseable = False  # wsproto failed on the input: the rest is discarded raw
        self.on_frame: Callable[[], None] | None = None  # called at each frame received

    @property
    def closed(self) -> WsClosed | None:
        return self._closed

    @property
    def queued(self) -> int:
        """Bytes in the outbox: waiting, and being written (bounded by HIGH_WATER plus one
        message, or plus the pongs of one read)."""
        return self._out.queued

    async def accept(
        self,
        head: bytes,
        nursery: trio.Nursery,
        headers: list[tuple[bytes, bytes]] | None = None,
        trailing: bytes = b"",
    ) -> None:
        """Complete the handshake whose request bytes (`head`) were already read; `trailing`
        is what came after them in the same reads (frames the client sent without waiting
        for the 101): it is the start of the frame data. A handshake wsproto refuses gets
        wsproto's HTTP rejection, then WsClosed."""
        try:
            self._ws.receive_data(head)
            events = list(self._ws.events())
        except RemoteProtocolError as exc:
            hint = exc.event_hint
            if isinstance(hint, RejectConnection):
                await self._stream.send_all(self._ws.send(hint))
            raise WsClosed(1002, "bad WebSocket handshake") from None
        for event in events:
            if isinstance(event, Request):
                # No extensions: permessage-deflate, if offered, is declined.
                accept = AcceptConnection(extra_headers=headers or [])
                await self._stream.send_all(self._ws.send(accept))
                break
        else:
            raise WsClosed(1002, "no WebSocket handshake")
        if trailing:
            self._ws.receive_data(trailing)
        nursery.start_soon(self._reader)
        nursery.start_soon(self._out.run)

    # -- receiving ------------------------------------------------------------------------------

    async def get_message(self) -> str | bytes | TooLarge:
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._closed or WsClosed() from None

    async def _reader(self) -> None:
        """Frames in, until the peer's close frame or EOF; after a close of ours it keeps
        reading (dropping messages) so the peer's close frame is seen (see `aclose`). Reading
        waits while the outbox is over HIGH_WATER: pongs are writes too."""
        parts: list[str | bytes] = []
        size = 0
        dropping = False
        try:
            while True:
                for event in self._ws.events():
                    if self.on_frame is not None:
                        self.on_frame()
                    if isinstance(event, TextMessage | BytesMessage):
                        if self._closed is not None:
                            continue  # closing: nothing more is delivered
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
                        if self._ws.state is ConnectionState.OPEN:
                            self._queue(self._ws.send(event.response()))
                    elif isinstance(event, CloseConnection):
                        self._on_close(event)
                        return
                if self.queued > HIGH_WATER:
                    await self._out.drained.wait()  # backpressure: read no more until it drains
                data = await self._stream.receive_some(RECEIVE)
                if not data:
                    self._close_as(WsClosed(1006, "connection dropped"))
                    return
                self._ws.receive_data(bytes(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._close_as(WsClosed(1006, "connection dropped"))
        except RemoteProtocolError as exc:
            self._fail(1002, str(exc))
        finally:
            self._send_inbox.close()
            self._reader_done.set()

    def _on_close(self, event: CloseConnection) -> None:
        """The peer's close frame, or wsproto failing the connection (bad framing: 1002,
        invalid UTF-8: 1007), which it reports as a close event while the state stays OPEN."""
        state = self._ws.state
        if state is ConnectionState.REMOTE_CLOSING:  # the peer closes: answer it
            self._close_as(WsClosed(event.code, event.reason or ""))
            self._queue(self._ws.send(event.response()))
        elif state is not ConnectionState.CLOSED:  # not a close frame: the input is broken
            self._fail(event.code, event.reason or "protocol error")
        # CLOSED: the peer answered our close; nothing more to read

    def _fail(self, code: int, reason: str) -> None:
        """Fail the connection: a close frame with `code` (unless one of ours left already);
        what the peer sends from now on cannot be parsed and is discarded while closing."""
        self._unparseable = True
        self._close_as(WsClosed(code, reason))
        if self._ws.state is ConnectionState.OPEN:
            self._queue(self._ws.send(CloseConnection(code=code, reason=reason[:100] or None)))

    # -- sending --------------------------------------------------------------------------------

    def _queue(self, data: bytes) -> None:
        self._out.put(data)

    def _close_as(self, closed: WsClosed) -> None:
        """The connection is closing (the first reason stays); the writer ends once the outbox
        is out."""
        self._closed = self._closed or closed
        self._out.end()

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
        await self._below_high_water()

    async def send_messages(self, messages: list[bytes]) -> None:
        """Queue several text frames (UTF-8 JSON, as `send_message` takes bytes) at once."""
        if self._closed is not None:
            raise self._closed
        self._queue(b"".join(map(_text_frame, messages)))
        await self._below_high_water()

    async def _below_high_water(self) -> None:
        await self._out.below_high_water()
        if self._closed is not None and self._closed.code == 1006:
            raise self._closed

    async def flush(self) -> None:
        """Send what is queued now (e.g. a response's first token)."""
        if self._closed is None:
            await self._out.flush()

    async def abort(self) -> None:
        """Drop the connection without a close frame (as a crashed peer would: 1006), after what
        is already queued has been sent."""
        with trio.move_on_after(1):
            await self.flush()
        self._close_as(WsClosed(1006, "aborted"))
        await self._stream.aclose()

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (unless closed already), flush what is queued, then linger: read
        on until the peer's close frame or EOF (or LINGER_S), so the peer gets our close frame
        rather than a reset from closing a socket with unread input; then close the stream."""
        if self._closed is None:
            if self._ws.state is ConnectionState.OPEN:
                self._queue(self._ws.send(CloseConnection(code=code, reason=reason or None)))
        self._close_as(WsClosed(code, reason))
        try:
            with trio.move_on_after(LINGER_S):
                await self._out.done.wait()
                await self._reader_done.wait()
                if self._unparseable:  # its close frame cannot be found: wait for its EOF
                    await half_close(self._stream)
                    await discard_input(self._stream)
        finally:
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await self._stream.aclose()
