# The SSE body of one HTTP response (`text/event-stream`). Events are framed into an outbox
# (rollout.server.outbox) whose bytes the server's flusher sends, once the producer yields, as
# one chunk in one socket write: a burst of deltas leaves together, while an idle stream's event
# leaves at once. The body's end goes with its last batch. The outbox is bounded: a client that
# stops reading stalls its own producer at HIGH_WATER.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from protocol import codec
from protocol.deltas import DeltaRun, encode_run, sse_run
from protocol.events import Event
from rollout.engine.loop import Disconnected
from rollout.server.outbox import Flusher, Outbox
from rollout.service.taps import Taps

HIGH_WATER = 256 * 1024  # queued body bytes before the producer waits for the writer


class Framing(Protocol):
    """How the connection frames a response body (rollout.server.http11.Http11)."""

    def chunk(self, parts: list[bytes], size: int) -> list[bytes]: ...
    def end(self) -> bytes: ...


class SseBroken(Exception):
    """Raised by `send`: the peer went away while the body was being written."""


class SseSink:
    """The events of one HTTP request as an SSE body. The response head goes out with the first
    event (or at the end), so a request refused before any event still gets a plain HTTP error
    status. Body bytes leave as chunks through an Outbox; `send` writes them, and
    `write_now` (if the connection has one) a push."""

    def __init__(
        self,
        framing: Framing,
        send: Callable[[bytes], Awaitable[None]],
        head: Callable[[], Awaitable[bytes]],
        flusher: Flusher,
        taps: Taps,
        *,
        close: Callable[[], Awaitable[None]],
        body: bool = True,
        write_now: Callable[[bytes | memoryview], int] | None = None,
        writable: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._framing = framing
        self._send = send
        self._head = head
        self._taps = taps
        self._close = close
        self._body = body  # False for HEAD: the head a GET would get, no body
        self.started = False
        self._out = Outbox(
            send,
            HIGH_WATER,
            frame=framing.chunk,
            broken=(SseBroken, trio.BrokenResourceError, trio.ClosedResourceError),
            write_now=write_now,
            writable=writable,
            flusher=flusher,
        )

    @property
    def queued(self) -> int:
        return self._out.queued

    @property
    def writes(self) -> int:
        """Socket writes made (events coalesce into fewer)."""
        return self._out.writes

    async def emit(self, event: Event) -> None:
        # (`_put`, inline: most of a short response's events come this way)
        kind, payload = event.type.encode(), codec.encode_sse_event(event)
        if not self.started:
            await self._start()
        out = self._out
        if out.broken:
            raise Disconnected()
        if self._taps.recorder is not None:
            await self._taps.events(lambda: [payload])
        if self._body:
            out.put(b"event: %s\ndata: %s\n\n" % (kind, payload))
        self._taps.sent(1)
        if len(out.head) + out.size + out.writing > out.high_water:
            await out.drained.wait()
        if out.broken:
            raise Disconnected()

    async def emit_bytes(self, kind: bytes, payload: bytes) -> None:
        """One event already encoded (its `type` and JSON data)."""
        await self._put(kind, payload)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        """A run of delta events, framed from its template in one go."""
        await self._put(b"", b"", run)

    async def _put(self, kind: bytes, payload: bytes, run: DeltaRun[Any] | None = None) -> None:
        """Queue one event (its `type` and JSON data), or a `run` of deltas."""
        if not self.started:
            await self._start()
        out = self._out
        if out.broken:
            raise Disconnected()
        if self._taps.recorder is not None:
            await self._taps.events((lambda: encode_run(run)) if run else (lambda: [payload]))
        if self._body:
            out.put(sse_run(run) if run else b"event: %s\ndata: %s\n\n" % (kind, payload))
        self._taps.sent(len(run) if run else 1)
        if len(out.head) + out.size + out.writing > out.high_water:
            await out.drained.wait()
        if out.broken:
            raise Disconnected()

    async def flush(self) -> None:
        """Send what is queued now (e.g. a response's first token)."""
        await self._out.flush()

    def push(self) -> None:
        """Send what is queued (the head with it) if the socket takes it at once, without
        waiting or yielding (`write_now`; without one, the writer sends it)."""
        self._out.push()

    async def close(self) -> None:
        """Drop the connection (as a crashed peer would), after what is queued has been sent."""
        with trio.move_on_after(1):
            await self.flush()
        await self._close()

    async def end(self) -> None:
        """Send what is queued and end the body (its last chunk with the last batch);
        Disconnected if the peer went away."""
        if not self.started:
            await self._start()
        await self._out.finish(self._framing.end())
        if self._out.broken:
            raise Disconnected()

    def drop(self) -> None:
        """Send nothing more (the connection is closing)."""
        self._out.drop()

    async def _start(self) -> None:
        self.started = True
        self._out.put(await self._head(), head=True)
