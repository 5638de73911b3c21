# The service layer: the one place that handles what clients ask for, whatever the transport.
# A transport decodes nothing about shapes; it hands the service a request (or a frame, through
# a WebSocket Session) and a Sink for the events, and the service does the rest: create in every
# shape (chain: the engine runs one response; append: a live rollout that pauses; multi-agent over
# WebSocket: a live rollout that waits without a pause event), append, inject, cancel, live
# rollouts, the taps, and the decode of large bodies off the event loop (steering, which belongs
# to one connection's responses, is rollout.service.steer). Adding a
# client event means adding a method here (and a row in Session's table); a transport stays
# framing only.
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.items import Item
from protocol.request import CreateRequest
from protocol.response import Response
from protocol.stream import ResponseStream
from protocol.strictness import check_params
from protocol.validate import check_betas, validate_create
from rollout.conversation.context import Context, Route
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.engine.loop import NullSink, PassOn, Sink
from rollout.service.background import BackgroundRuns
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig
from rollout.service.eventlog import EventLogs, StoreLogs
from rollout.service.live import Hold, Live, LiveRollouts, response_not_found
from rollout.service.peers import Peers
from rollout.service.taps import TapConfig
from rollout.service.transport import Closing
from rollout.store.base import LogStore

T = TypeVar("T")
#: A body or frame is parsed and decoded in a worker thread, so that one huge request never
#: stalls the event loop for every other client, when it is at least OFF_LOOP_BYTES long or its
#: input holds at least OFF_LOOP_ITEMS items: decoding costs about 1.3 ms a MiB of plain
#: messages but up to 7 us an item (1 MiB of tiny items: 110 ms), and the hop itself about
#: 0.17 ms of CPU, more than a 50k-token history of 99 items takes to decode (0.3 ms). Below
#: both, the work is at most a few ms, under the GIL's switch interval (a thread running Python
#: would hold the loop about as long).
OFF_LOOP_BYTES = 4 * 1024 * 1024
OFF_LOOP_ITEMS = 512
END_RESPONSE = EndResponse()  # the chain shape's client executor (it holds no state)


async def off_loop(fn: Callable[[Any], T], data: Any, size: int, items: int = 0) -> T:
    """`fn(data)` inline for small inputs (`size` bytes on the wire, `items` input items), in a
    worker thread for large ones."""
    if size < OFF_LOOP_BYTES and items < OFF_LOOP_ITEMS:
        return fn(data)
    return await trio.to_thread.run_sync(fn, data)


def input_items(value: object) -> int:
    """How many input items a create's parsed JSON holds (what its decoding costs)."""
    if isinstance(value, dict) and isinstance(items := value.get("input"), list):
        return len(items)
    return 0


@attrs.define(eq=False)
class Service:
    engine: Engine
    config: ServerConfig
    live: LiveRollouts = attrs.field(init=False)
    taps: TapConfig = attrs.field(factory=TapConfig)
    sessions: set[Any] = attrs.field(factory=set)  # open WebSocket sessions (for shutdown)
    # Many workers (a Redis store; see rollout.service.cluster.clustered): live rollouts of
    # other workers (and the event logs' backend is the shared store)
    cluster: Peers | None = attrs.field(default=None, init=False)
    events: EventLogs = attrs.field(init=False)  # of stored streaming and background responses
    background: BackgroundRuns = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.live = LiveRollouts(self.engine, self.config)
        store = self.engine.store
        self.events = EventLogs(StoreLogs(store) if isinstance(store, LogStore) else None)
        self.background = BackgroundRuns(self.engine, self.config.max_background)
        # A log's readers stop at its response's end, however it ended.
        self.live.finish_hooks.append(lambda live: self.events.drop(live.id))
        self.background.ended.append(lambda run: self.events.drop(run.response.id))

    @property
    def captured(self) -> list[Captured] | None:
        return self.taps.captured

    @property
    def record_dir(self) -> Path | None:
        return self.taps.record_dir

    async def serve(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the live rollouts' nursery (and the cluster's tasks, and the shared engine's) for
        as long as the server runs (and a real engine's connection pool, which closes with the
        server)."""
        accelerator = self.engine.accelerator
        try:
            if self.cluster is None and accelerator is None:
                await self.live.run(task_status)
                return
            async with trio.open_nursery() as nursery:
                if accelerator is not None:  # the shared engine's steps (rollout.model.accel)
                    await nursery.start(accelerator.run)
                if self.cluster is not None:
                    await nursery.start(self.cluster.run)
                await nursery.start(self.live.run)
                task_status.started()
        finally:
            closer = getattr(self.engine.model, "aclose", None)
            if closer is not None:
                await closer()

    async def flush(self, timeout: float = 5.0) -> None:
        """On shutdown: let the cluster layer write what is queued (the ends of live rollouts),
        so that no other worker takes them for lost."""
        if self.cluster is not None:
            with trio.move_on_after(timeout):
                await self.cluster.barrier()

    # -- create ---------------------------------------------------------------------------------

    async def prepare(
        self,
        req: CreateRequest,
        work: Work,
        sink: Sink,
        *,
        owner: str | None,
        hold: Hold,
        cached: Callable[[str], Context | None] | None = None,
        route: Route | None = None,
    ) -> Prepared:
        """Pre-inference work, then the create's plan (its shape and faults: CreatePlan), made
        here once for every part that acts on it; raises ProtocolError before any event
        exists. `cached`: a connection's cache of contexts by response id."""
        prepared = await self.engine.prepare(
            req, work, sink, cached=cached, route=route, owner=owner
        )
        self.engine.plan_of(prepared, held=hold is Hold.UNTIL_END)
        return prepared

    async def run(
        self,
        prepared: Prepared,
        *,
        holder: object,
        hold: Hold,
        billing: trio.Nursery | None = None,
        lane: str | None = None,
        closing: Closing | None = None,
    ) -> None:
        """Run a prepared create in its shape. Chain: the response runs to its end (so does a
        multi-agent response over HTTP: it completes when it waits for client calls). Append,
        and multi-agent over WebSocket: a live rollout starts and this returns at its first
        pause (UNTIL_PAUSE) or its end, or when `closing` is set (UNTIL_END). Billing blocks
        unless `billing` is given (WebSocket); a live rollout's background billing runs in the
        live rollouts' nursery, which outlives the connection."""
        plan = self.engine.plan_of(prepared)
        refusal = plan.refusal()
        if refusal is not None:  # fails the way the real API does: before any event
            raise refusal
        await self.engine.open(prepared)  # a real engine's refusal is the request's, too
        if not plan.live:
            self._log(prepared, hold)
            try:
                await self.engine.run(prepared, END_RESPONSE, billing=billing)
            finally:
                self.events.drop(prepared.rollout.stream.response.id)
            return
        if self.cluster is not None:
            await self.cluster.claim(prepared, lane)
        try:
            live = self.live.start(
                prepared,
                sink=prepared.rollout.sink,
                holder=holder,
                owner=prepared.owner,
                lane=lane,
                billing=self.live.nursery if billing is not None else None,
            )
        except BaseException:
            if self.cluster is not None:  # it never started: no record of it
                self.cluster.forget(prepared.rollout.stream.response.id)
            await self.engine.discard(prepared)
            raise
        self._log(prepared, hold)
        if hold is Hold.UNTIL_PAUSE:
            await self._until(live, live.boundary, holder)
        elif closing is None:
            await live.done.wait()
        else:
            await closing.until(live.done)

    def _log(self, prepared: Prepared, hold: Hold) -> None:
        """A stored response that streams (over SSE, or on a WebSocket lane) has its events go
        to its event log as they pass; with many workers, a live rollout's state goes to its
        record at each pause."""
        if self.cluster is not None and prepared.request.shape == "append":  # (pauses)
            prepared.rollout.sink = PauseTap(prepared.rollout.sink, self.cluster, prepared)
        req = prepared.request
        if req.store and (req.stream or hold is Hold.UNTIL_END):
            prepared.rollout.sink = self.events.sink(prepared, prepared.rollout.sink)

    async def create(
        self, req: CreateRequest, work: Work, sink: Sink, *, owner: str | None, holder: object
    ) -> Response:
        """An HTTP create: prepare, run, and return the response as it stands when the request
        lets go (its end, or an append rollout's first pause). A JSON create whose end could
        not be stored raises the store's error (HTTP 500 or 503)."""
        prepared = await self.prepare(req, work, sink, owner=owner, hold=Hold.UNTIL_PAUSE)
        await self.run(prepared, holder=holder, hold=Hold.UNTIL_PAUSE)
        if prepared.unstored is not None and not req.stream:  # (a stream ended `failed`)
            raise prepared.unstored  # not kept: the store's 5xx, not a 200 nobody can retrieve
        return prepared.rollout.stream.response

    async def create_background(
        self, req: CreateRequest, work: Work, *, owner: str | None
    ) -> Response:
        """A background create: prepare, queue (`response.created`, `response.queued`, logged;
        the response stored as it stands), start its run in the service's nursery, and return
        the queued response. Its events are read from its log (`events`)."""
        self.background.check_room()
        prepared = await self.prepare(req, work, NullSink(), owner=owner, hold=Hold.UNTIL_PAUSE)
        refusal = self.engine.plan_of(prepared).refusal()
        if refusal is not None:
            raise refusal
        await self.engine.open(prepared)
        r = prepared.rollout
        r.sink = self.events.sink(prepared, r.sink)
        await r.send(r.stream.queued())
        queued = r.stream.response.snapshot()
        try:
            await self.engine.store.put(self.background.record(prepared))
            if self.cluster is not None:  # (its record tells the others if this worker dies)
                await self.cluster.claim(prepared, None)
        except BaseException:
            self.events.drop(r.stream.response.id)
            await self.engine.discard(prepared)
            raise
        assert self.live.nursery is not None, "Service.serve must be started first"
        self.background.start(prepared, self.live.nursery)
        return queued

    # -- append ---------------------------------------------------------------------------------

    async def append(
        self,
        response_id: str,
        items: Sequence[Item],
        work: Work,
        sink: Sink,
        *,
        owner: str | None,
        holder: object,
        hold: Hold,
    ) -> None:
        """Resume a suspended (or parked) rollout with tool outputs. The checks, the take-over
        and the recording of the outputs happen in one synchronous step, so of two racing
        appends exactly one is accepted. With UNTIL_PAUSE the events up to the next pause or the
        end go to `sink` before this returns; with UNTIL_END the rollout's events go to `sink`
        from now on (the WebSocket lane that holds it). A rollout that another worker owns gets
        the append there (rollout.service.cluster)."""
        try:
            live = self.live.find(response_id, owner)
        except ProtocolError as local:
            if self.cluster is None:
                raise
            await self.cluster.deliver(
                "append",
                response_id,
                items,
                lambda lane: sink,
                owner=owner,
                holder=holder,
                hold=hold,
                local=local,
            )
            return
        await self.append_to(live, items, work, sink, holder=holder, hold=hold)

    async def append_to(
        self,
        live: Live,
        items: Sequence[Item],
        work: Work,
        sink: Sink,
        *,
        holder: object,
        hold: Hold,
    ) -> None:
        """`append` to a live rollout of this worker (found already)."""
        if hold is Hold.UNTIL_PAUSE:
            self.live.check_waiting(live)  # running or finished: 409 before anything else
        live.check_free(holder)
        boundary = self.live.accept(live, items, work)
        live.take_over(sink, holder)
        if hold is Hold.UNTIL_PAUSE:
            await self._until(live, boundary, holder)

    def inject(
        self, live: Live, items: Sequence[Item], work: Work, sink: Sink, *, holder: object
    ) -> None:
        """`response.inject`: commit tool outputs to a live rollout atomically (outputs of sync
        calls it waits for, outputs of open async calls at any time); `response.inject.created`
        follows in the response's own sequence. Raises ProtocolError with nothing committed."""
        live.check_free(holder)
        self.live.accept(
            live, items, work, note=ResponseStream.inject_created, messages=live.announces
        )
        live.take_over(sink, holder)

    async def _until(self, live: Live, boundary: trio.Event, holder: object) -> None:
        """Let the rollout's events reach the holder until `boundary`, then let go of it."""
        try:
            await boundary.wait()
        finally:
            live.release(holder)

    # -- cancel ---------------------------------------------------------------------------------

    def cancel(
        self, response_id: str, owner: str | None, sink: Sink | None = None, holder: object = None
    ) -> Live:
        """Stop a live rollout (it ends `incomplete`, reason `cancelled`). Over WebSocket the
        canceller takes over a parked rollout, so its terminal event reaches someone."""
        live = self.live.find(response_id, owner)
        if sink is not None:
            live.take_over(sink, holder)
        live.cancel.cancel("cancelled")
        return live

    async def cancel_anywhere(self, response_id: str, owner: str | None) -> Any:
        """An HTTP cancel: stop a live rollout, here or on the worker that owns it, and return
        its final response (a Response here, wire JSON from another worker); None when no
        worker has such a live rollout."""
        run = self.background.find(response_id, owner)
        if run is not None:
            return await self.background.cancel(run)
        live = self.find_live(response_id, owner)
        if live is not None:
            self.cancel(response_id, owner)
            await live.done.wait()
            return live.prepared.rollout.stream.response
        if self.cluster is None:
            return None
        quiet = NullSink()
        try:
            return await self.cluster.deliver(
                "cancel",
                response_id,
                (),
                lambda lane: quiet,
                owner=owner,
                holder=quiet,
                hold=Hold.UNTIL_PAUSE,
                local=response_not_found(response_id),
            )
        except ProtocolError as exc:
            if exc.code in ("response_not_found", "response_not_suspended"):
                return None
            raise

    def find_live(self, response_id: str, owner: str | None) -> Live | None:
        live = self.live.rollouts.get(response_id)
        return live if live is not None and live.owner == owner else None

    # -- decoding -------------------------------------------------------------------------------

    async def decode_create(
        self, body: codec.Raw, *, betas: frozenset[str] = frozenset()
    ) -> CreateRequest:
        """An HTTP create's body, decoded (a large one in a worker thread) and checked."""
        size = len(body)
        if size < OFF_LOOP_BYTES:  # (off_loop's choice, made here without its coroutines)
            value = codec.loads(body)
            items = input_items(value)
            if items < OFF_LOOP_ITEMS:
                req = self.decode_value(body, value)
            else:
                req = await trio.to_thread.run_sync(self.decode_value, body, value)
        else:
            value = await trio.to_thread.run_sync(codec.loads, body)
            req = await trio.to_thread.run_sync(self.decode_value, body, value)
        self.check_create(req, websocket=False, betas=betas)
        return req

    def decode_value(self, body: codec.Raw, value: object) -> CreateRequest:
        """An HTTP create's parsed `body` decoded (pure: run in a worker thread for a large
        one); a strict server first refuses its unknown parameters."""
        if not isinstance(value, dict):
            return codec.decode_create(body)  # (its refusal)
        if not self.config.lenient:
            check_params(value, websocket=False)
        return codec.decode_create(value)

    def check_create(self, req: CreateRequest, *, websocket: bool, betas: frozenset[str]) -> None:
        """A create's cross-field rules and the beta features it needs, on either transport."""
        validate_create(req, websocket=websocket, strict=not self.config.lenient)
        check_betas(req, betas)


@attrs.define(eq=False)
class PauseTap(PassOn):
    """Passes a live rollout's events on; at each pause, its state goes to its cluster record."""

    cluster: Peers
    prepared: Prepared

    async def emit(self, event: Event) -> None:
        if event.type == "response.done":
            self.cluster.paused(self.prepared)
        await self.inner.emit(event)


__all__ = [
    "OFF_LOOP_BYTES",
    "OFF_LOOP_ITEMS",
    "Hold",
    "Peers",
    "Service",
    "input_items",
    "off_loop",
]
