# A server-side WebSocket connection on a trio stream, built on wsproto (sans-IO, like h11 for
# HTTP; why not trio-websocket: docs/design-notes.md). Frames queued while the writer is busy go
# out in one write, the outbox is bounded (a client that stops reading stalls its own sender,
# and the reader stops reading its pings), a too-large message is answered with an error event
# before the close 1009, and a close lingers until the peer's close frame. The reader parses
# whole text frames itself and gives wsproto every other frame whole; it runs in the caller's
# task (`read`), handing each message to the session, or the task itself to a message.
from __future__ import annotations

from collections.abc import Awaitable, Callable

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
from rollout.server.sockio import SocketIO
from rollout.server.successor import Successor
from rollout.server.wsframes import (
    TooLarge,
    WsClosed,
    frame_at,
    join,
    text_frame,
    text_frames,
    text_of,
)
from rollout.service.transport import After, Spawn

RECEIVE = 256 * 1024
HIGH_WATER = 256 * 1024  # queued outgoing bytes (frames, pongs, closes) before senders wait


Deliver = Callable[[str | bytes | TooLarge], Awaitable[After | None]]


@attrs.frozen
class Handshake:
    """A WebSocket handshake request as the HTTP layer parsed it (its head is parsed once)."""

    headers: list[tuple[bytes, bytes]]
    target: bytes


class WsConnection:
    """`get_message()`, `send_message()`, `aclose()`; reader and writer run in a nursery."""

    def __init__(self, stream: trio.abc.Stream, max_message_size: int) -> None:
        self._stream = stream
        self._io = SocketIO(stream)  # the hot path's reads and writes (see sockio)
        self._ws = WSConnection(ConnectionType.SERVER)
        self._max = max_message_size
        self._send_inbox, self._inbox = trio.open_memory_channel[str | bytes | TooLarge](64)
        broken = (trio.BrokenResourceError, trio.ClosedResourceError)
        self._out = Outbox(self._io.send_all, HIGH_WATER, write_now=self._io.write_now,
                           writable=self._io.writable, broken=broken,
                           on_broken=self._dropped)  # fmt: skip
        self._closed: WsClosed | None = None
        self.reading_done = trio.Event()  # the reading ended (in whichever task read last)
        self._handing = False  # a whole frame's message is being delivered (see handing_over)
        self._successor: Successor | None = None  # the next reader, started ahead (`read`)
        self._ended: Callable[[], None] = lambda: None
        self._unparseable = False  # wsproto failed on the input: the rest is discarded raw
        self._deliver: Deliver = self._send_inbox.send
        self._reader_task: trio.lowlevel.Task | None = None  # the task in `read`
        self._read_started = False
        self._linger: float | None = None  # closing: when reading gives up on the peer's close
        self._parts: list[str | bytes] = []  # the message being received
        self._size = 0  # its bytes so far
        self._dropping = False  # it is over the size limit: its data is dropped
        self._buf = bytearray()  # bytes read and not parsed yet
        self._raw = 0  # bytes of the frame wsproto is parsing that it has not been given yet
        self._fragmented = False  # wsproto holds a message that further frames continue
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
        head: bytes | Handshake,
        nursery: trio.Nursery,
        headers: list[tuple[bytes, bytes]] | None = None,
        trailing: bytes = b"",
        *,
        reader: bool = True,
    ) -> None:
        """Complete the handshake whose request was already read: parsed by the HTTP layer (a
        Handshake), or its bytes (`head`, when nothing parsed them yet); `trailing` is what
        came after them (frames sent without waiting for the 101): the start of the frame
        data. A handshake wsproto refuses gets its HTTP rejection, then WsClosed. The
        writer starts in `nursery`, and with `reader` a task reading for `get_message`;
        without it, the caller reads with `read`."""
        try:
            if isinstance(head, Handshake):
                self._ws.initiate_upgrade_connection(head.headers, head.target)
            else:
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
        self._buf += trailing
        nursery.start_soon(self._out.run)
        if reader:
            nursery.start_soon(self.read, self._send_inbox.send)

    # -- receiving ------------------------------------------------------------------------------

    async def get_message(self) -> str | bytes | TooLarge:
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise self._closed or WsClosed() from None

    async def read(
        self,
        deliver: Deliver,
        spawn: Spawn | None = None,
        ended: Callable[[], None] = lambda: None,
        *,
        successor: bool = False,
    ) -> bool:
        """Frames in, each message (or TooLarge) given to `deliver` in this task, until the
        peer's close frame or EOF (after a close of ours, reading on for the peer's close frame,
        LINGER_S at most). Reading waits while `deliver` does and while the outbox is over
        HIGH_WATER. With `spawn`, `deliver` may return what this task does instead (see
        `handing_over`): a successor (`spawn` starts it) reads on, and this returns once that
        is done and the reading ended. At the end, `ended` is called and `reading_done` set.
        True when this task did a message's work (a `successor` then returns as soon as it is
        done, to park as the next successor)."""
        self._deliver, self._ended = deliver, ended
        if spawn is not None and self._successor is None:
            self._successor = Successor(spawn, self._succeed)
        self._read_started = True
        me = self._reader_task = trio.lowlevel.current_task()
        after: After | None = None
        try:
            after = await self._read_frames()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._dropped()
        except RemoteProtocolError as exc:
            self._fail(1002, str(exc))
        finally:
            if after is None and self._reader_task is me:  # the reading ends here
                self._reader_task = None
                self._send_inbox.close()
                self.reading_done.set()
                if self._successor is not None:
                    self._successor.release()
                ended()
        if after is None:
            return False
        assert self._successor is not None
        try:
            await after()
        finally:
            self._successor.back(parks=successor)
        if not successor:
            await self.reading_done.wait()
        return True

    async def _read_frames(self) -> After | None:
        """Read until the end (None), or until a message takes this task (what it does)."""
        if self._buf and (stop := await self._received(b"")):
            return stop if stop is not True else None
        while True:
            if self._out.queued > HIGH_WATER:
                await self._out.drained.wait()  # backpressure: read no more until it drains
            data: bytes | bytearray = b""
            if self._closed is not None:  # closing: linger for the peer's close frame
                with trio.move_on_at(self._linger_until()):
                    data = await self._io.receive_some(RECEIVE)
                if not data:
                    return None
            else:
                if self._successor is not None:
                    self._successor.ready()  # while there is time: the next hand-over's
                data = await self._io.receive_some(RECEIVE)
                if not data:
                    self._dropped()
                    return None
            if stop := await self._received(data):
                return stop if stop is not True else None

    @property
    def handing_over(self) -> bool:
        """The message being delivered may hand the reading over (a whole text frame the reader
        parsed itself, wsproto holding nothing of it, and a successor can start): `deliver`
        then returns what to do in this task instead of reading on."""
        return self._handing

    def _linger_until(self) -> float:
        if self._linger is None:
            self._linger = trio.current_time() + LINGER_S
        return self._linger

    async def _received(self, data: bytes | bytearray) -> bool | After:
        """Take in bytes read: whole unfragmented text frames are unmasked and delivered here
        (the common frame, without wsproto's per-frame machinery), every other frame (control
        frames, fragments, binary, anything malformed or partial and large) goes to wsproto
        whole, so wsproto never holds part of a frame this reader also parses. True once the
        peer's close frame was read; a message's own work if it took this task (the reading
        goes on in a successor, already started)."""
        buf = self._buf
        buf += data
        while buf:
            if self._raw:  # the rest of a frame wsproto is parsing
                n = min(self._raw, len(buf))
                self._raw -= n
                if await self._to_wsproto(buf, n):
                    return True
                continue
            frame = frame_at(buf)
            if frame is None:
                return False  # its header is not all here yet
            start, end, opcode, fin = frame
            # FIN, no reserved bits, text; masked (as a client's frames must be)
            if buf[0] == 0x81 and buf[1] & 0x80 and not self._fragmented:
                if end > len(buf) and end - start <= self._max:
                    return False  # a whole text frame within the limit: wait for the rest
                if end <= len(buf):
                    text = text_of(buf, start, end)
                    if text is not None:
                        del buf[:end]
                        if self.on_frame is not None:
                            self.on_frame()
                        if (after := await self._whole(text)) is not None:
                            return after
                        continue
            if opcode <= 2:  # a data frame: does a fragmented message go on after it?
                self._fragmented = not fin
            self._raw = end - min(end, len(buf))
            if await self._to_wsproto(buf, min(end, len(buf))):
                return True
        return False

    async def _to_wsproto(self, buf: bytearray, n: int) -> bool:
        """Feed wsproto the first `n` bytes of `buf` and handle its events; True once the peer's
        close frame was read."""
        self._ws.receive_data(bytes(buf[:n]))
        del buf[:n]
        for event in self._ws.events():
            if self.on_frame is not None:
                self.on_frame()
            if isinstance(event, TextMessage | BytesMessage):
                data = event.data
                await self._message(
                    bytes(data) if isinstance(data, bytearray) else data, event.message_finished
                )
            elif isinstance(event, Ping):
                if self._ws.state is ConnectionState.OPEN:
                    self._queue(self._ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self._on_close(event)
                return True
        return False

    async def _message(self, data: str | bytes, finished: bool) -> None:
        """A message's data (all of it, or a fragment): delivered once finished, unless it is
        over the size limit (then the session gets TooLarge once, and the data is dropped)."""
        if self._closed is not None:
            return  # closing: nothing more is delivered
        self._size += len(data)
        if self._size > self._max:
            if not self._dropping:
                self._dropping = True
                self._parts = []
                await self._deliver(TooLarge(self._size))
        else:
            self._parts.append(data)
        if finished:
            dropped, parts = self._dropping, self._parts
            self._parts, self._size, self._dropping = [], 0, False
            if not dropped:
                await self._deliver(join(parts))

    async def _whole(self, text: str) -> After | None:
        """A whole text frame's message: delivered, and the reading handed over if it asks."""
        if self._closed is not None or self._parts:
            await self._message(text, True)  # (no message is ever between fragments)
            return None
        if len(text) > self._max:
            await self._deliver(TooLarge(len(text)))
            return None
        self._handing = self._successor is not None
        try:
            after = await self._deliver(text)
        finally:
            self._handing = False
        if after is None:
            return None
        assert self._successor is not None
        self._reader_task = None  # until the successor starts
        self._successor.take_over()
        return after

    async def _succeed(self) -> None:
        """A successor's reading: on from what is buffered. When a message took this task and
        its work is done, the task parks as the next successor (unless one is parked already)
        and reads on when a hand-over wakes it: no task is started and ended per message."""
        assert self._successor is not None
        while await self.read(self._deliver, None, self._ended, successor=True):
            if not await self._successor.park():
                return

    def _on_close(self, event: CloseConnection) -> None:
        """The peer's close frame, or wsproto failing the connection (bad framing 1002, bad
        UTF-8 1007: a close event while the state stays OPEN)."""
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

    def _dropped(self) -> None:
        self._close_as(WsClosed(1006, "connection dropped"))

    def _close_as(self, closed: WsClosed) -> None:
        """Closing (the first reason stays): the writer ends once the outbox is out."""
        self._closed = self._closed or closed
        self._out.end()

    async def send_message(self, message: str | bytes) -> None:
        """Queue one text frame (`bytes`: UTF-8 text, e.g. orjson's, framed as is). Frames
        queued while the writer is busy leave in one write; a sender waits only when the outbox
        is over its high-water mark."""
        if self._closed is not None:
            raise self._closed
        out = self._out
        if isinstance(message, str):
            out.put(self._ws.send(TextMessage(data=message)))
        else:
            out.put(text_frame(message))
        if out.queued > out.high_water:
            await self._below_high_water()

    async def send_messages(self, messages: list[bytes]) -> None:
        """Queue several text frames (UTF-8 JSON, as `send_message` takes bytes) at once."""
        if self._closed is not None:
            raise self._closed
        out = self._out
        if len(messages) == 1:
            out.put(text_frame(messages[0]))
        else:
            out.put(text_frames(messages))
        if out.queued > out.high_water:
            await self._below_high_water()

    async def _below_high_water(self) -> None:
        await self._out.below_high_water()
        if self._closed is not None and self._closed.code == 1006:
            raise self._closed

    async def flush(self) -> None:
        """Send what is queued now (e.g. a response's first token)."""
        if self._closed is None:
            await self._out.flush()

    def push(self) -> None:
        """Send what is queued if the socket takes it at once, without yielding."""
        if self._closed is None:
            self._out.push()

    async def abort(self) -> None:
        """Drop the connection without a close frame (1006, as a crash), after what is queued."""
        with trio.move_on_after(1):
            await self.flush()
        self._close_as(WsClosed(1006, "aborted"))
        await self._stream.aclose()

    @property
    def settled(self) -> bool:
        """Everything queued is written and the reading is over: a close has nothing to wait
        for (but the stream's own close, which it shields)."""
        done = self._out.done.is_set() and not self._unparseable
        return done and (not self._read_started or self.reading_done.is_set())

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (unless closed already), flush what is queued, then linger: read
        on until the peer's close frame or EOF (or LINGER_S), so the peer gets our close frame
        rather than a reset from closing a socket with unread input; then close the stream.
        Called from `read`'s task (by its `deliver`), it queues the close frame and returns:
        `read` lingers, and closing the stream is for an `aclose` after it returned."""
        if self._closed is None:
            if self._ws.state is ConnectionState.OPEN:
                self._queue(self._ws.send(CloseConnection(code=code, reason=reason or None)))
        self._close_as(WsClosed(code, reason))
        if self._reader_task is not None and self._reader_task is trio.lowlevel.current_task():
            return
        try:
            if not self.settled:  # (else nothing is left to wait for: no linger's scope)
                with trio.move_on_after(LINGER_S):
                    await self._out.done.wait()
                    if self._read_started:
                        await self.reading_done.wait()
                    if self._unparseable:  # its close frame cannot be found: wait for its EOF
                        await half_close(self._stream)
                        await discard_input(self._stream)
        finally:
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await self._stream.aclose()
