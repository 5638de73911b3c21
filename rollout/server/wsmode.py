# The WebSocket transport of WebSocket mode on /v1/responses: framing only. It completes the
# handshake (vetted by the HTTP layer), reads text frames and hands each to the connection's
# service Session, and frames events as JSON text frames on each lane's Sink (with `stream_id` on
# named lanes). Connection-level limits live here too: the frame size limit (1009), the
# connection age limit and the idle limit. Everything about shapes, lanes and the cache is
# rollout.service.
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio
from wsproto.utilities import RemoteProtocolError

from protocol import codec
from protocol.deltas import DeltaRun, encode_run
from protocol.errors import ProtocolError
from protocol.events import TERMINAL_TYPES, ErrorEvent, ErrorPayload, Event, ResponseEvent
from protocol.lanes import Lane
from rollout.engine.loop import Disconnected
from rollout.server import logs
from rollout.server.closing import LINGER_S
from rollout.server.wsconn import Handshake, TooLarge, WsClosed, WsConnection
from rollout.service.service import Service
from rollout.service.session import Session
from rollout.service.taps import Taps
from rollout.service.transport import After, Receive, Spawn

log = logging.getLogger("rollout.server.wsmode")


def error_frame(exc: ProtocolError, stream_id: Lane = None) -> bytes:
    event = ErrorEvent(error=ErrorPayload(**exc.payload(), headers=exc.headers), status=exc.status)
    return codec.encode_event(event, stream_id)


@attrs.define(eq=False)
class LaneSink:
    """Events of one lane, as text frames on the connection (the outbox coalesces writes)."""

    ws: WsConnection
    taps: Taps
    lane: Lane

    async def emit(self, event: Event) -> None:
        data = codec.encode_event(event, self.lane)
        if self.taps.recorder is not None:
            await self.taps.event(data)
        try:
            await self.ws.send_message(data)
        except WsClosed:
            raise Disconnected() from None
        self.taps.sent()
        if type(event) is ResponseEvent and event.type in TERMINAL_TYPES:
            self.ws.push()  # a response's end leaves at once: the client's turn comes next

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        frames = encode_run(run, self.lane)
        if self.taps.recorder is not None:
            await self.taps.events(lambda: frames)
        try:
            await self.ws.send_messages(frames)
        except WsClosed:
            raise Disconnected() from None
        self.taps.sent(len(frames))

    async def flush(self) -> None:
        await self.ws.flush()

    def push(self) -> None:
        self.ws.push()

    async def close(self) -> None:
        await self.ws.abort()


async def serve_websocket(
    stream: trio.abc.Stream,
    head: Handshake,
    service: Service,
    owner: str | None,
    request_id: str = "",
    number: int = 0,
    *,
    trailing: bytes = b"",
    betas: frozenset[str] = frozenset(),
) -> None:
    """Complete the handshake (already vetted by the HTTP layer) and run the session.
    `trailing`: bytes read after the handshake request (the first frames)."""
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        ws = WsConnection(stream, service.config.max_frame_bytes)
        headers = [(b"x-request-id", request_id.encode())]
        if service.config.worker_id is not None:
            headers.append((b"x-rollout-worker", service.config.worker_id.encode()))
        try:
            await ws.accept(head, nursery, headers, trailing, reader=False)
        except (WsClosed, RemoteProtocolError, trio.BrokenResourceError):
            await stream.aclose()  # the HTTP layer vetted the handshake; this is a rare leftover
            return
        logs.event("ws_open", request_id=request_id)
        conn = WsTransport(ws, service, service.taps.open("ws", number, service.engine.stats))
        session = Session(service, owner, conn.taps, conn, betas)
        try:
            nursery.start_soon(conn.limits)
            await session.serve(conn.read)
            conn.stop_limits()
        finally:
            closed = ws.closed
            logs.event(
                "ws_close",
                request_id=request_id,
                code=closed.code if closed else None,
                responses=session.responses,
                seconds=round(time.perf_counter() - started, 3),
            )
            await conn.taps.aclose()
            if ws.settled:  # (its close cannot wait: nothing to bound or shield)
                await ws.aclose()
            else:
                with trio.move_on_after(1) as scope:
                    scope.shield = True
                    await ws.aclose()
            nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class WsTransport:
    ws: WsConnection
    service: Service
    taps: Taps
    _sinks: dict[Lane, LaneSink] = attrs.field(factory=dict)
    _limits: trio.CancelScope = attrs.field(factory=trio.CancelScope)  # the limits' wait
    _active: int = 0  # the session's creates queued, running or suspended
    _last: float = 0.0  # when a frame came, or the last create ended (the idle clock's start)
    _stopped: bool = False  # the session ended: the limits' task ends

    def sink_for(self, lane: Lane) -> LaneSink:
        sink = self._sinks.get(lane)
        if sink is None:
            sink = self._sinks[lane] = LaneSink(self.ws, self.taps, lane)
        return sink

    async def read(self, handle: Receive, spawn: Spawn, ended: Callable[[], None]) -> None:
        """Give the session each message, in the reading task, until the connection's reading
        ends (a frame over the size limit is answered here: an error event, then the close
        1009). The session may take the reader's task for a create (see Session.receive)."""

        async def deliver(message: str | bytes | TooLarge) -> After | None:
            if not isinstance(message, TooLarge):
                return await handle(message)
            limit = self.service.config.max_frame_bytes
            error = ProtocolError(
                message=f"The frame is larger than the limit of {limit} bytes.",
                code="frame_too_large",
            )
            await self._error_and_close(error, 1009, "message too big")
            return None

        await self.ws.read(deliver, spawn, ended)

    async def refuse(self, exc: ProtocolError, lane: Lane) -> None:
        frame = error_frame(exc, lane)
        await self.taps.error(exc, frame)
        with contextlib.suppress(WsClosed):
            await self.ws.send_message(frame)

    async def hangup(self) -> None:
        """Close after a malformed event that ends the connection (`response.inject`)."""
        await self.ws.aclose(1008, "invalid event")

    def queued(self) -> int:
        """Bytes in the connection's outbox."""
        return self.ws.queued

    def handing_over(self) -> bool:
        """The reader delivers a whole frame's message and can hand its task over."""
        return self.ws.handing_over

    async def shutdown(self) -> None:
        """The server is stopping: close with 1001 (Going Away)."""
        await self.ws.aclose(1001, "server shutting down")

    async def _error_and_close(self, exc: ProtocolError, code: int, reason: str) -> None:
        """An `error` event, then the close: a client that does not read (its outbox full)
        does not hold the close up for longer than LINGER_S."""
        with trio.move_on_after(LINGER_S):
            await self.refuse(exc, None)
        await self.ws.aclose(code, reason)

    # -- the age limit and the idle limit --------------------------------------------------------

    def _restart_idle_clock(self) -> None:
        """A client frame arrived (or the last create ended): the idle clock starts over. Only
        the time is noted (this runs at every frame); the limits' task looks at it when its
        deadline comes, and waits on if anything ran or arrived since."""
        self._last = trio.current_time()

    def stop_limits(self) -> None:
        """The session ended: neither limit applies any more."""
        self._stopped = True
        self._limits.cancel()

    def active(self, count: int) -> None:
        """The session's creates in progress (queued, running or suspended) are `count`."""
        self._active = count
        self._last = trio.current_time()

    async def limits(self) -> None:
        """The connection's limits, in one task: its age (ws_max_age_s from its start: an error
        `websocket_connection_limit_reached`, then close 1000), and idleness: a connection on
        which no frame came for ws_idle_timeout_s while nothing ran is closed (an error
        `websocket_idle_timeout`, then close 1000), since silent sockets must not hold
        connection slots for the hour of the age limit. While work is in progress the idle
        clock is looked at again every ws_idle_timeout_s."""
        config = self.service.config
        timeout = config.ws_idle_timeout_s
        self._last = trio.current_time()
        aged = self._last + config.ws_max_age_s
        self.ws.on_frame = self._restart_idle_clock
        with self._limits:
            while True:
                now = trio.current_time()
                if now >= aged:
                    minutes = config.ws_max_age_s / 60
                    error = ProtocolError(
                        message=f"Responses websocket connection limit reached ({minutes:g} "
                        "minutes). Create a new websocket connection to continue.",
                        code="websocket_connection_limit_reached",
                    )
                    # (the session's end stops this close too)
                    await self._error_and_close(error, 1000, "connection age limit reached")
                    return
                if self._active:  # work in progress: no idle limit while it lasts
                    idle = now + timeout
                elif now < self._last + timeout:
                    idle = self._last + timeout
                else:
                    break
                await trio.sleep_until(min(aged, idle))
        if self._stopped:
            return  # (the session ended first)
        error = ProtocolError(
            message=f"No event on this websocket connection for {timeout:g} seconds; it was "
            "closed. Create a new websocket connection to continue.",
            code="websocket_idle_timeout",
        )
        await self._error_and_close(error, 1000, "idle timeout")
