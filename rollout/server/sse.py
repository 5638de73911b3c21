# The SSE body of one HTTP response (`text/event-stream`). Events are framed into an outbox and a
# writer task sends what has gathered as one h11 chunk in one socket write: a burst of deltas
# leaves together, while an idle stream's event leaves at once (the writer is waiting for it).
# The outbox is bounded: a client that stops reading stalls its own producer at HIGH_WATER.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import h11
import trio

from protocol import codec
from protocol.deltas import DeltaRun, encode_run, sse_run
from protocol.events import Event
from rollout.engine.loop import Disconnected
from rollout.service.taps import Taps

HIGH_WATER = 256 * 1024  # queued body bytes before the producer waits for the writer


class SseBroken(Exception):
    """Raised by `send`: the peer went away while the body was being written."""


class SseSink:
    """The events of one HTTP request as an SSE body. The response head goes out with the first
    event (or at the end), so a request refused before any event still gets a plain HTTP error
    status. `frame` turns body bytes into wire bytes (h11's chunk framing); `send` writes them."""

    def __init__(
        self,
        h11conn: h11.Connection,
        send: Callable[[bytes], Awaitable[None]],
        head: Callable[[], Awaitable[h11.Response]],
        nursery: trio.Nursery,
        taps: Taps,
        *,
        close: Callable[[], Awaitable[None]],
        body: bool = True,
    ) -> None:
        self._conn = h11conn
        self._send = send
        self._head = head
        self._nursery = nursery
        self._taps = taps
        self._close = close
        self._body = body  # False for HEAD: the head a GET would get, no body
        self.started = False
        self._pre = b""  # the response head, written before the first body bytes
        self._out = bytearray()
        self._writing = 0
        self._sending = False  # a task (the writer, or a flush) is writing
        self._wake = trio.Event()
        self._drained = trio.Event()
        self._drained.set()
        self._ending = False
        self._broken = False
        self._done = trio.Event()
        self.writes = 0  # socket writes made (events coalesce into fewer)

    @property
    def queued(self) -> int:
        return len(self._out) + self._writing

    async def emit(self, event: Event) -> None:
        payload = codec.encode_event(event)
        await self.emit_bytes(event.type.encode(), payload)

    async def emit_bytes(self, kind: bytes, payload: bytes) -> None:
        """One event already encoded (its `type` and JSON data)."""
        await self._put(lambda: [payload], lambda: b"event: %s\ndata: %s\n\n" % (kind, payload), 1)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        """A run of delta events, framed from its template in one go."""
        await self._put(lambda: encode_run(run), lambda: sse_run(run), len(run))

    async def _put(
        self, encoded: Callable[[], list[bytes]], framed: Callable[[], bytes], n: int
    ) -> None:
        """Queue `n` events (`framed`: as body bytes; `encoded`: each one's JSON, for taps)."""
        if not self.started:
            await self._start()
        if self._broken:
            raise Disconnected()
        await self._taps.events(encoded)
        if self._body:
            self._out += framed()
            self._drained = trio.Event() if self._drained.is_set() else self._drained
            self._wake.set()
        self._taps.sent(n)
        if self.queued > HIGH_WATER:
            await self._drained.wait()
            if self._broken:
                raise Disconnected()

    async def flush(self) -> None:
        """Send what is queued now (e.g. a response's first token): from this task, when no
        write is in progress, so it leaves before other tasks run; else when the write ends."""
        if not (self._out or self._pre) or self._broken:
            return
        if self._sending:
            await self._drained.wait()
        else:
            await self._send_queued()

    async def close(self) -> None:
        """Drop the connection (as a crashed peer would), after what is queued has been sent."""
        with trio.move_on_after(1):
            await self.flush()
        await self._close()

    async def end(self) -> None:
        """Send what is queued and end the body; Disconnected if the peer went away."""
        if not self.started:
            await self._start()
        self._ending = True
        self._wake.set()
        await self._done.wait()
        try:
            if self._broken:
                raise SseBroken()
            await self._send(self._conn.send(h11.EndOfMessage()) or b"")
        except SseBroken:
            raise Disconnected() from None

    async def _start(self) -> None:
        self.started = True
        response = await self._head()
        self._pre = self._conn.send(response) or b""
        self._drained = trio.Event()
        self._wake.set()
        self._nursery.start_soon(self._writer)

    async def _send_queued(self) -> None:
        """Write the head and the outbox until both are empty (one task at a time)."""
        self._sending = True
        try:
            while self._pre or self._out:
                parts: list[Any] = [self._pre] if self._pre else []
                self._pre = b""
                if self._out:
                    body, self._out = self._out, bytearray()
                    self._writing = len(body)
                    # The chunk's framing around the outbox itself (h11 passes the data through
                    # as is: any buffer will do), so the body is copied once, into the write.
                    chunk = h11.Data(data=cast(bytes, body))
                    parts += self._conn.send_with_data_passthrough(chunk) or ()
                await self._send(b"".join(parts))
                self.writes += 1
                self._writing = 0
        except SseBroken:
            self._broken = True
        finally:
            self._sending = False
            self._writing = 0
            if self._ending or self._broken:
                self._wake.set()  # the writer may be waiting for this write to end
        self._drained.set()

    async def _writer(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                if not self._sending:  # else the task sending now takes what was queued
                    await self._send_queued()
                if self._broken or (self._ending and not self._out and not self._sending):
                    return
        finally:
            self._done.set()
