# WebSocket mode on /v1/responses: `response.create` frames over one connection, lanes
# (`stream_id`: FIFO within, concurrent across, 16 in flight, 32 named), and the connection-local
# cache that makes chaining cheap: the whole loop state of each lane's latest response (and of
# fork parents still referenced) is kept, so a continuation scans and tokenizes only new input and
# reuses the connection's route. Billing runs in the background and is never lost.
from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from typing import Any

import attrs
import trio
from wsproto.utilities import RemoteProtocolError

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import ErrorEvent, ErrorPayload, Event
from protocol.request import AppendRequest, CancelRequest, CreateRequest
from protocol.validate import INVALID_STREAM_ID, STREAM_ID, validate_create
from rollout.engine.context import Context, Route
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.engine.loop import Disconnected, Emit
from rollout.engine.work import Work
from rollout.server import logs
from rollout.server.wsconn import TooLarge, WsClosed, WsConnection
from rollout.service.capture import Captured, parse
from rollout.service.config import ServerConfig
from rollout.service.live import AppendHost
from rollout.service.record import Recorder, open_recorder

log = logging.getLogger("rollout.server.ws")
Lane = str | None  # None is the default lane


@attrs.define
class CacheEntry:
    """The loop state a response left behind, ready to be extended by its continuation."""

    response_id: str
    lane: Lane
    ctx: Context


@attrs.frozen
class Job:
    request: CreateRequest
    work: Work


def error_frame(exc: ProtocolError, stream_id: Lane = None) -> bytes:
    event = ErrorEvent(
        error=ErrorPayload(type=exc.type, code=exc.code, message=exc.message, param=exc.param),
        status=exc.status,
    )
    return codec.encode_event(event, stream_id)


async def serve_websocket(
    stream: trio.abc.Stream,
    head: bytes,
    host: AppendHost,
    owner: str | None,
    request_id: str = "",
    number: int = 0,
) -> None:
    """Complete the handshake (already vetted by the HTTP layer) and run the session."""
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        ws = WsConnection(stream, host.config.max_frame_bytes)
        try:
            await ws.accept(head, nursery, [(b"x-request-id", request_id.encode())])
        except (WsClosed, RemoteProtocolError, trio.BrokenResourceError):
            await stream.aclose()  # the HTTP layer vetted the handshake; this is a rare leftover
            return
        logs.event("ws_open", request_id=request_id)
        session = WsSession(ws, host, owner, number)
        try:
            await session.run()
        finally:
            closed = ws.closed
            logs.event(
                "ws_close",
                request_id=request_id,
                code=closed.code if closed else None,
                responses=session.responses,
                seconds=round(time.perf_counter() - started, 3),
            )
            with trio.move_on_after(1) as scope:
                scope.shield = True
                await ws.aclose()
            nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class WsSession:
    ws: WsConnection
    host: AppendHost
    owner: str | None  # the API key the handshake authenticated, if keys are configured
    number: int = 0  # the connection's number (for capture)
    recorder: Recorder | None = attrs.field(init=False, default=None)  # (rollout.service.record)
    engine: Engine = attrs.field(init=False)
    config: ServerConfig = attrs.field(init=False)
    cache: dict[str, CacheEntry] = attrs.field(factory=dict)
    latest: dict[Lane, str] = attrs.field(factory=dict)
    pins: Counter[str] = attrs.field(factory=Counter)
    lanes: dict[Lane, trio.MemorySendChannel[Job]] = attrs.field(factory=dict)
    routes: dict[str, Route] = attrs.field(factory=dict)
    in_flight: trio.Semaphore = attrs.field(init=False)
    closed: bool = False
    responses: int = 0  # response.create frames accepted
    _nursery: trio.Nursery | None = None
    _billing: trio.Nursery | None = None
    _age_scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    _waits: list[trio.CancelScope] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        self.engine = self.host.engine
        self.config = self.host.config
        self.in_flight = trio.Semaphore(self.config.max_in_flight)
        self.recorder = open_recorder(self.host, "ws", self.number)

    async def run(self) -> None:
        # Billing outlives the connection's own tasks: it completes (or is flushed) on close.
        async with trio.open_nursery() as billing:
            self._billing = billing
            self.host.sessions.add(self)
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._age_limit)
                    await self._read()
                    self._close()
            finally:
                self.host.sessions.discard(self)
                self.host.detach(self)
                if self.recorder is not None:
                    await self.recorder.aclose()

    def _close(self) -> None:
        """The client is gone: drop queued creates, stop waiting on append rollouts (they are
        parked by the host). A running response ends at its next event, as `incomplete`, and is
        billed like any other."""
        self.closed = True
        self._age_scope.cancel()
        for channel in self.lanes.values():
            channel.close()
        for scope in self._waits:
            scope.cancel()

    # -- frames in ------------------------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            try:
                message = await self.ws.get_message()
            except WsClosed:
                return
            if isinstance(message, TooLarge):
                await self._error(
                    ProtocolError(
                        message=f"The frame is larger than the limit of "
                        f"{self.config.max_frame_bytes} bytes.",
                        code="frame_too_large",
                    )
                )
                await self.ws.aclose(1009, "message too big")
                return
            await self._handle(message)

    async def _handle(self, message: str | bytes) -> None:
        if self.host.captured is not None:
            body = parse(message) if isinstance(message, str) else None
            label = "binary" if isinstance(message, bytes) else "text"
            if isinstance(body, dict) and isinstance(body.get("type"), str):
                label = body["type"]
            self.host.captured.append(Captured("ws", label, body, self.number))
        if self.recorder is not None:
            await self.recorder.ws_frame(message)
        if isinstance(message, bytes):
            await self._error(
                ProtocolError(
                    message="Binary frames are not supported; send each event as a JSON text "
                    "frame.",
                    code="invalid_frame",
                )
            )
            return
        work = Work()
        stream_id: Lane = None
        value: object = None
        try:
            with work.stage("decode", items=1) as c:
                c.tokens = len(message)
                value = codec.loads(message)
                if not isinstance(value, dict):
                    raise ProtocolError(
                        message="Each frame must be a JSON object with a 'type'.",
                        code="invalid_type",
                    )
                stream_id = _lane_of(value)
                kind = value.get("type")
                if kind == "response.append":
                    append = codec.decode_append(value)
                elif kind == "response.cancel":
                    cancel = codec.decode_object(value, CancelRequest)
                elif kind == "response.create":
                    request = codec.decode_create(value)
                    validate_create(request, websocket=True)
                else:
                    raise ProtocolError(
                        message=f"Unknown event type {str(kind)[:64]!r}; expected "
                        "'response.create', 'response.append' or 'response.cancel'.",
                        code="unknown_event_type",
                        param="type",
                    )
            if kind == "response.append":
                await self._append(append, work)
            elif kind == "response.cancel":
                live = self.host.find(cancel.response_id, self.owner)
                live.attach_parked(self._emitter(live.lane), self, live.id)
                live.cancel.cancel("cancelled")
            else:
                await self._enqueue(Job(request=request, work=work))
                self.responses += 1
        except ProtocolError as exc:
            if isinstance(value, dict) and value.get("type") == "response.create":
                self._failed_continuation(value.get("previous_response_id"), stream_id)
            await self._error(exc, stream_id)

    def _failed_continuation(self, parent: object, lane: Lane) -> None:
        """A same-lane continuation refused before it reached its lane still evicts its parent
        (spec §1.5), as one refused inside the lane does."""
        if not isinstance(parent, str):
            return
        entry = self.cache.get(parent)
        if entry is not None and entry.lane == lane and not self.pins.get(parent):
            del self.cache[parent]
            if self.latest.get(lane) == parent:
                del self.latest[lane]

    async def _append(self, append: AppendRequest, work: Work) -> None:
        """`response.append`: resume a suspended rollout of this connection, or a parked one
        whose connection is gone (same API key); its events come here from now on."""
        if append.response_id is None:
            raise ProtocolError(
                message="Missing required parameter: 'response_id'.",
                code="missing_required_parameter",
                param="response_id",
            )
        live = self.host.find(append.response_id, self.owner)
        # Another live connection's rollout is not found from here (nothing about it leaks).
        live.attach_parked(self._emitter(live.lane), self, live.id)
        try:
            self.host.check(live, append.input)
        except ProtocolError as exc:
            await self._error(exc, live.lane)
            return
        await self.host.apply(live, append.input, work)

    async def _enqueue(self, job: Job) -> None:
        lane = job.request.stream_id
        channel = self.lanes.get(lane)
        if channel is None:
            named = len(self.lanes) - (None in self.lanes)
            if lane is not None and named >= self.config.max_lanes:
                raise ProtocolError(
                    message="This WebSocket connection has reached its maximum number of "
                    f"distinct stream IDs ({self.config.max_lanes}). Reuse an existing stream_id "
                    "or open a new WebSocket connection.",
                    code="websocket_stream_limit_reached",
                    param="stream_id",
                )
            channel, receive = trio.open_memory_channel[Job](self.config.lane_queue)
            self.lanes[lane] = channel
            assert self._nursery is not None
            self._nursery.start_soon(self._lane, lane, receive)
        if job.request.previous_response_id:
            self.pins[job.request.previous_response_id] += 1
        await channel.send(job)

    # -- lanes ----------------------------------------------------------------------------------

    async def _lane(self, lane: Lane, jobs: trio.MemoryReceiveChannel[Job]) -> None:
        async for job in jobs:
            if self.closed:
                if job.request.previous_response_id:
                    self._unpin(job.request.previous_response_id)
                continue
            async with self.in_flight:
                try:
                    await self._serve(lane, job)
                except Disconnected:
                    return

    async def _serve(self, lane: Lane, job: Job) -> None:
        req = job.request
        parent = req.previous_response_id
        try:
            base = await self._base(lane, req, job.work)
            route = self.routes.get(req.model)
            prepared = await self.engine.prepare(
                req, job.work, self._emitter(lane), base=base, route=route, owner=self.owner
            )
            prepared.rollout.flush = self.ws.flush
            prepared.rollout.disconnect = self.ws.abort
        except ProtocolError as exc:
            if parent is not None:
                self._unpin(parent)
            await self._error(exc, lane)
            return
        if parent is not None:
            self._unpin(parent)
        self.routes.setdefault(req.model, prepared.rollout.route)
        if req.shape == "append":
            live = self.host.start(
                prepared,
                sink=self._emitter(lane),
                sink_owner=self,
                owner=self.owner,
                lane=lane,
                billing=self.host.nursery,
            )
            with trio.CancelScope() as wait:
                self._waits.append(wait)
                await live.done.wait()
            self._waits.remove(wait)
            if wait.cancelled_caught:
                return
        else:
            await self.engine.run(prepared, EndResponse(), billing=self._billing)
        response = prepared.rollout.stream.response
        if response.status != "failed":
            self._remember(lane, response.id, prepared.rollout.ctx)

    async def _base(self, lane: Lane, req: CreateRequest, work: Work) -> Context:
        """The context a create continues: a cache hit (taken in place when nothing else refers
        to it on another lane, copied otherwise), a store restore, or a fresh one."""
        parent = req.previous_response_id
        if parent is None:
            return Context()
        entry = self.cache.get(parent)
        if entry is None:
            # A miss: the store may have it (store: true); otherwise previous_response_not_found.
            return await self.engine.restore(parent, work, self.owner)
        if entry.lane == lane and self.pins[parent] <= 1:
            # Same-lane continuation: extend the parent's state in place. The parent leaves the
            # cache now; should this request fail, it stays evicted (spec §1.5).
            del self.cache[parent]
            if self.latest.get(lane) == parent:
                del self.latest[lane]
            return entry.ctx
        with work.stage("store", items=1):
            return entry.ctx.fork()

    def _remember(self, lane: Lane, response_id: str, ctx: Context) -> None:
        self.cache[response_id] = CacheEntry(response_id=response_id, lane=lane, ctx=ctx)
        previous = self.latest.get(lane)
        self.latest[lane] = response_id
        if previous is not None and previous != response_id:
            self._maybe_evict(previous)

    def _unpin(self, response_id: str) -> None:
        self.pins[response_id] -= 1
        if self.pins[response_id] <= 0:
            del self.pins[response_id]
            self._maybe_evict(response_id)

    def _maybe_evict(self, response_id: str) -> None:
        if self.pins.get(response_id):
            return
        if response_id in self.latest.values():
            return
        self.cache.pop(response_id, None)

    # -- frames out -----------------------------------------------------------------------------

    def _emitter(self, lane: Lane) -> Emit:
        ws = self.ws
        stats = self.engine.stats
        recorder = self.recorder

        async def emit(event: Event) -> None:
            data = codec.encode_event(event, lane)
            if recorder is not None:
                await recorder.event(data)
            try:
                await ws.send_message(data)
            except WsClosed:
                raise Disconnected() from None
            stats.events_sent += 1

        return emit

    async def _error(self, exc: ProtocolError, lane: Lane = None) -> None:
        self.engine.stats.error(exc.code)
        frame = error_frame(exc, lane)
        if self.recorder is not None:
            await self.recorder.event(frame)
        with contextlib.suppress(WsClosed):
            await self.ws.send_message(frame)

    async def _age_limit(self) -> None:
        with self._age_scope:
            await trio.sleep(self.config.ws_max_age_s)
            await self._expire()

    async def _expire(self) -> None:
        minutes = self.config.ws_max_age_s / 60
        await self._error(
            ProtocolError(
                message=f"Responses websocket connection limit reached ({minutes:g} minutes). "
                "Create a new websocket connection to continue.",
                code="websocket_connection_limit_reached",
            )
        )
        await self.ws.aclose(1000, "connection age limit reached")


def _lane_of(value: dict[str, Any]) -> Lane:
    """The frame's lane, if it names a valid one (errors about the frame are sent there)."""
    stream_id = value.get("stream_id")
    if stream_id is None:
        return None
    if not isinstance(stream_id, str) or not STREAM_ID.fullmatch(stream_id):
        raise ProtocolError(message=INVALID_STREAM_ID, code="invalid_stream_id", param="stream_id")
    return stream_id
