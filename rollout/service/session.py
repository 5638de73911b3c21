# One WebSocket-mode connection's service state: the client events of each frame decoded and
# dispatched (a table: create, append, inject, steer, cancel), lanes run as FIFO workers under the
# in-flight limit (a steered response's automatic successor runs next on its lane), and the
# connection cache that makes chaining cheap. Admission, pinning and eviction are protocol.lanes'
# LaneBook; the transport (rollout.server.wsmode) gives it a sink per lane and a way to refuse.
from __future__ import annotations

import collections
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.lanes import Lane, LaneBook, LaneLimits
from protocol.request import AppendRequest, CancelRequest, CreateRequest
from protocol.strictness import check_params
from rollout.conversation.context import Context, Route
from rollout.conversation.work import Work
from rollout.engine.loop import Disconnected, Sink
from rollout.service import frames
from rollout.service.inject import inject
from rollout.service.service import Hold, Service, input_items, off_loop
from rollout.service.steer import Known, Steerer
from rollout.service.taps import Taps
from rollout.service.transport import After, Closing, Read, Transport


@attrs.frozen
class Job:
    request: CreateRequest
    work: Work
    size: int  # bytes of its frame (counted against the connection's queue limit)


@attrs.define(eq=False)
class Session:
    service: Service
    owner: str | None  # the API key the handshake authenticated, if keys are configured
    taps: Taps
    transport: Transport
    betas: frozenset[str] = frozenset()  # the handshake's OpenAI-Beta features
    book: LaneBook[Context] = attrs.field(init=False)
    steer: Steerer = attrs.field(init=False)
    lanes: dict[Lane, collections.deque[Job]] = attrs.field(factory=dict)  # running lanes' jobs
    routes: dict[tuple[str, str | None], Route] = attrs.field(factory=dict)  # (model, cache key)
    in_flight: trio.Semaphore = attrs.field(init=False)
    closing: Closing = attrs.field(factory=Closing)
    responses: int = 0  # response.create frames accepted
    active: int = 0  # creates queued, running or suspended (their lane holds them)
    _nursery: trio.Nursery | None = None
    _billing: trio.Nursery | None = None

    def __attrs_post_init__(self) -> None:
        c = self.service.config
        self.book = LaneBook(
            LaneLimits(
                max_lanes=c.max_lanes,
                max_in_flight=c.max_in_flight,
                max_queued=c.max_queued,
                max_queued_bytes=c.max_queued_bytes,
            )
        )
        self.in_flight = trio.Semaphore(c.max_in_flight)
        self.steer = Steerer(self.send_on, c.max_pending_steers)

    def sink_for(self, lane: Lane) -> Sink:
        return self.transport.sink_for(lane)

    async def refuse(self, exc: ProtocolError, lane: Lane) -> None:
        await self.transport.refuse(exc, lane)

    async def shutdown(self) -> None:
        await self.transport.shutdown()

    async def send_on(self, lane: Lane, event: Event) -> None:
        with contextlib.suppress(Disconnected):
            await self.sink_for(lane).emit(event)

    @property
    def closed(self) -> bool:
        return self.closing.is_set()

    @property
    def queued(self) -> int:
        """Bytes the transport holds for the client, not yet written (its outbox)."""
        return self.transport.queued()

    async def serve(self, read: Read) -> None:
        """Handle the client's frames: `read` gives each to `receive`, in order, in the task
        that reads (no hand-off between the transport's reader and the session; a reader may
        hand its own task to a create, see `receive`, and go on in a task it starts with the
        given spawn), calls `close` as soon as the reading ends (a create running in the
        reader's task may wait for it), and returns once that has happened."""
        # Billing outlives the connection's own tasks: it completes (or is flushed) on close.
        async with trio.open_nursery() as billing:
            self._billing = billing
            self.service.sessions.add(self)
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    await read(self.receive, nursery.start_soon, self.close)
                    self.close()
            finally:
                self.close()
                self.service.sessions.discard(self)
                self.service.live.detach(self)
                if self.service.cluster is not None:
                    self.service.cluster.detach(self)

    def close(self) -> None:
        """The client is gone: queued creates are dropped at once, lanes stop waiting on append
        rollouts (they are parked by the service). A running response ends at its next event,
        as `incomplete`, and is billed like any other."""
        if self.closing.is_set():
            return
        self.closing.set()

    # -- frames in ------------------------------------------------------------------------------

    async def receive(self, message: str | bytes) -> After | None:
        """One frame. A create that can start at once, on a lane with nothing running, in a
        free in-flight slot, while the transport's reader can hand its task over: this returns
        the lane's run, for the reader's task to do (the reading goes on in a new task), so the
        response's first token leaves without a pass through the scheduler to a lane task."""
        if self.taps.watching:
            await self.taps.frame(message)
        if isinstance(message, bytes):
            await self.refuse(frames.binary_frame(), None)
            return None
        work = self.service.engine.stats.new_work()
        lane: Lane = None
        value: object = None
        row: ClientEvent | None = None
        try:
            size = len(message)
            with work.stage("decode", items=1) as c:
                c.tokens = size
                value = await off_loop(codec.loads, message, size)
                frame = frames.frame_object(value)
                lane = frames.lane_of(frame)
                row = EVENTS[frames.event_type(frame, EVENTS)]
                if row.params is not None and not self.service.config.lenient:
                    row.params(frame)
                request = await off_loop(row.decode, frame, size, input_items(frame))
            return await row.handle(self, request, work, size)
        except ProtocolError as exc:
            if row is None and isinstance(value, dict):  # its type may be known, if not its lane
                row = EVENTS.get(str(value.get("type")))
            if row is None or not isinstance(value, dict):
                await self.refuse(exc, lane)
            else:
                await row.refused(self, value, lane, exc)
        return None

    async def _create(self, req: CreateRequest, work: Work, size: int) -> After | None:
        """Queue the create on its lane; its lane's run, if this task is to do it (see
        `receive`)."""
        self.service.check_create(req, websocket=True, betas=self.betas)
        lane = req.stream_id
        self.book.admit(lane, req.previous_response_id, size)
        self.responses += 1
        self._active_by(+1)
        job = Job(req, work, size)
        jobs = self.lanes.get(lane)
        if jobs is not None:  # the lane runs: next in line
            jobs.append(job)
            return None
        jobs = self.lanes[lane] = collections.deque([job])
        if self.transport.handing_over() and not self.closed:
            try:
                self.in_flight.acquire_nowait()
            except trio.WouldBlock:
                pass
            else:
                return functools.partial(self._lane, lane, jobs, True)
        assert self._nursery is not None
        self._nursery.start_soon(self._lane, lane, jobs)
        return None

    def _active_by(self, delta: int) -> None:
        self.active += delta
        self.transport.active(self.active)

    async def _append(self, append: AppendRequest, work: Work, size: int) -> None:
        """`response.append`: resume a suspended rollout of this connection, or a parked one
        whose connection is gone (same API key); its events come here from now on."""
        del size
        if append.response_id is None:
            raise ProtocolError(
                message="Missing required parameter: 'response_id'.",
                code="missing_required_parameter",
                param="response_id",
            )
        try:
            live = self.service.live.find(append.response_id, self.owner)
        except ProtocolError as local:  # another worker's rollout, maybe (a reconnect)
            await self.elsewhere("append", append.response_id, append.input, local)
            return
        live.check_free(self)  # held by another connection: not found, on the frame's lane
        try:
            await self.service.append_to(
                live,
                append.input,
                work,
                self.sink_for(live.lane),
                holder=self,
                hold=Hold.UNTIL_END,
            )
        except ProtocolError as exc:
            await self.refuse(exc, live.lane)

    async def _steer(self, frame: frames.SteerFrame, work: Work, size: int) -> None:
        del work, size
        await self.steer.steer(frame)

    async def _cancel(self, cancel: CancelRequest, work: Work, size: int) -> None:
        del work, size
        try:
            live = self.service.live.find(cancel.response_id, self.owner)
        except ProtocolError as local:
            known = self.steer.known.get(cancel.response_id)
            if known is not None and known.active:  # a chain response running on a lane
                known.rollout.cancel.cancel("cancelled")  # (it ends `cancelled` there)
                return
            # another worker's rollout, maybe: its events come here
            await self.elsewhere("cancel", cancel.response_id, (), local)
            return
        self.service.cancel(live.id, self.owner, self.sink_for(live.lane), self)

    async def elsewhere(
        self, kind: str, rid: str, items: Any, local: ProtocolError, raw: Any = ()
    ) -> None:
        """Deliver to the worker that owns `rid` (many workers); `local` if none does."""
        if self.service.cluster is None:
            raise local
        await self.service.cluster.deliver(
            kind, rid, items, self.sink_for, owner=self.owner, holder=self,
            hold=Hold.UNTIL_END, local=local, raw=raw,
        )  # fmt: skip

    # -- lanes ----------------------------------------------------------------------------------

    async def _lane(self, lane: Lane, jobs: collections.deque[Job], slot: bool = False) -> None:
        """Run the lane's jobs in order until none is left (`slot`: the first one's in-flight
        slot is taken already). Once the session closes, what is still queued is dropped."""
        try:
            while jobs:
                job = jobs[0]
                try:
                    if self.closed:
                        self.book.dequeued(job.size)
                        self.book.unpin(job.request.previous_response_id)
                        continue
                    if not slot:
                        await _acquire(self.in_flight)
                    slot = False
                    try:
                        self.book.dequeued(job.size)
                        if self.closed:
                            self.book.unpin(job.request.previous_response_id)
                            continue
                        await self._serve(lane, job)
                    except Disconnected:
                        return
                    finally:
                        self.in_flight.release()
                finally:
                    jobs.popleft()
                    self._active_by(-1)
        finally:
            if slot:  # (cancelled before its first job started)
                self.in_flight.release()
            if self.lanes.get(lane) is jobs:
                del self.lanes[lane]

    async def _serve(self, lane: Lane, job: Job) -> None:
        """A create, then the automatic successors of steering (each on this lane, next)."""
        req, taken, parent = self.steer.continuation(job.request, lane)
        known = await self._respond(lane, req, job.work, pinned=True)
        if known is None:
            if parent is not None and taken:
                await self.steer.successor_failed(parent, taken)
            return
        while not self.closed and (successor := await self.steer.ended(known)) is not None:
            req, queued = successor
            nxt = await self._respond(lane, req, self.service.engine.stats.new_work(), pinned=False)
            if nxt is None:
                await self.steer.successor_failed(known, queued)
                return
            known = nxt

    async def _respond(
        self, lane: Lane, req: CreateRequest, work: Work, pinned: bool
    ) -> Known | None:
        """One response on `lane`: prepare (None if refused), register, run, cache."""
        parent = req.previous_response_id
        try:
            prepared = await self.service.prepare(
                req,
                work,
                self.sink_for(lane),
                owner=self.owner,
                hold=Hold.UNTIL_END,
                cached=functools.partial(self._cached, lane, work) if parent else None,
                route=self.routes.get((req.model, req.prompt_cache_key)),
            )
        except ProtocolError as exc:
            if pinned:
                self.book.unpin(parent)
            await self.refuse(exc, lane)
            return None
        if pinned:
            self.book.unpin(parent)
        self.routes.setdefault((req.model, req.prompt_cache_key), prepared.rollout.route)
        live = self.service.engine.plan_of(prepared).live
        known = self.steer.register(lane, prepared.rollout, req, live)
        try:
            await self.service.run(
                prepared,
                holder=self,
                hold=Hold.UNTIL_END,
                billing=self._billing,
                lane=lane,
                closing=self.closing,
            )
        except ProtocolError as exc:  # refused before its first event (a server limit)
            await self.refuse(exc, lane)
            return None
        response = prepared.rollout.stream.response
        if response.status != "failed":
            self.book.remember(lane, response.id, prepared.rollout.ctx)
        return known

    def _cached(self, lane: Lane, work: Work, parent: str) -> Context | None:
        """The context of `parent` that the connection cache holds for a create on `lane`: in
        place, or a copy (a fork); None on a miss (the store may have it)."""
        taken = self.book.take(parent, lane)
        if taken is None:
            return None
        if taken.how == "in_place":
            return taken.value
        with work.stage("store", items=1):
            return taken.value.fork()


Refused = Callable[["Session", dict[str, Any], Lane, ProtocolError], Awaitable[None]]


async def _refuse(session: Session, frame: dict[str, Any], lane: Lane, exc: ProtocolError) -> None:
    """A refused client event: an `error` event on its lane."""
    del frame
    await session.refuse(exc, lane)


async def _refuse_create(
    session: Session, frame: dict[str, Any], lane: Lane, exc: ProtocolError
) -> None:
    """A refused create: the connection cache drops the response it would have continued."""
    session.book.refused(frame.get("previous_response_id"), lane)
    await session.refuse(exc, lane)


async def _refuse_inject(
    session: Session, frame: dict[str, Any], lane: Lane, exc: ProtocolError
) -> None:
    """A malformed inject closes the connection after its error (its outputs cannot be
    placed)."""
    await session.refuse(exc, lane)
    await session.transport.hangup()


@attrs.frozen
class ClientEvent:
    """A client event of WebSocket mode: how its frame is decoded (pure; a large frame's in a
    worker thread), which Session handler runs it (returning what the reading task does next,
    if it takes that task: only a create), how it is refused (an `error` event, and what else
    a refusal of it means), and, for one that may reach a live rollout of another worker, the
    kind it is forwarded as (run there by the owner's side, rollout.service.owning.SERVE)."""

    decode: Callable[[dict[str, Any]], Any]
    handle: Callable[..., Awaitable[After | None]]
    refused: Refused = _refuse
    forward: str | None = None
    params: Callable[[dict[str, Any]], None] | None = None  # a strict server's check of its keys


#: The client events of WebSocket mode, by type (in the order refusals list them).
EVENTS: dict[str, ClientEvent] = {
    "response.create": ClientEvent(
        codec.decode_create,
        Session._create,
        _refuse_create,
        params=functools.partial(check_params, websocket=True),
    ),
    "response.append": ClientEvent(codec.decode_append, Session._append, forward="append"),
    "response.inject": ClientEvent(frames.decode_inject, inject, _refuse_inject, forward="inject"),
    "response.steer": ClientEvent(frames.decode_steer, Session._steer),
    "response.cancel": ClientEvent(frames.decode_cancel, Session._cancel, forward="cancel"),
}
#: The kinds of event forwarded to the worker that owns a live rollout.
FORWARDED = frozenset(row.forward for row in EVENTS.values() if row.forward is not None)


async def _acquire(semaphore: trio.Semaphore) -> None:
    """Take a slot without a trip through the scheduler when one is free: a create on an idle
    connection goes on to its first token in the same step (a yield here would put every other
    connection's pending work before it)."""
    try:
        semaphore.acquire_nowait()
    except trio.WouldBlock:
        await semaphore.acquire()
