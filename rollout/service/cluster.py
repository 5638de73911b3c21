# Live rollouts across workers, over a store they share (rollout.store.shared.SharedStore; with
# `--store redis://`). A worker owns each append rollout it started: the rollout's live record
# (its worker, owner, and its state at the last pause) names it, and the worker's heartbeat is
# the lease. An append, inject or cancel that reaches another worker is published to the
# owner's inbox; the owner runs it through its Service as if local, with a RemoteSink whose
# events are published back to the asking worker's inbox, which hands them to its client. An
# owner that is gone (no subscriber, or its heartbeat expired) is found out by the next request:
# the rollout then ends `failed` with `rollout_owner_lost`, in the store when it was stored, and
# every later request hears so.
# A lost store is an outage to ride out, not a crash: the heartbeat, the inbox listener and the
# writer catch StoreUnavailable, log it once (rollout.service.outage `Link`) and try again with
# a backoff; requests that need the store meanwhile get 503 `store_unavailable`. When the store
# answers again, the worker renews its lease at once and writes its live records back (a Redis
# that restarted without its data has none), and it judges no other worker gone until the
# leases have had time to be renewed (`Link.settled`): an outage that every worker saw does not
# make their rollouts lost.
# It reaches the store only through SharedStore's operations, so it imports without the store's
# own client library (coredis, for Redis): the base install imports it too.
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson
import trio

from protocol import codec
from protocol.errors import ProtocolError
from protocol.items import Item
from protocol.lifetime import State, response_not_suspended
from rollout.conversation.ids import new_id
from rollout.engine.engine import Prepared
from rollout.engine.loop import Disconnected, Sink
from rollout.service.eventlog import EventLogs, SharedLogs
from rollout.service.live import Hold, Live
from rollout.service.lost import end_lost, owner_lost
from rollout.service.outage import Backoff, Claims, Link, StartedOnce
from rollout.service.owning import Owning, RemoteHolder, RemoteSink
from rollout.service.session import FORWARDED
from rollout.service.writer import Writer
from rollout.store.shared import (
    DropLive,
    Fields,
    Publish,
    Record,
    SetLive,
    SharedStore,
    StoreUnavailable,
    shared_of,
)

if TYPE_CHECKING:
    from rollout.service.service import Service

HEARTBEAT_S = 1.0  # a worker renews its lease this often
ALIVE_MS = 5000  # and is dead when it has not for this long
SWEEP_EVERY = 10  # heartbeats between two sweeps for rollouts of dead workers
SinkFor = Callable[[str | None], Sink]  # the asking client's sink for a lane


@attrs.define(eq=False)
class Cluster(Owning):
    store: SharedStore
    worker_id: str
    service: Service | None = None  # set by the Service that consults this
    writer: Writer = attrs.field(init=False)
    mailboxes: dict[str, trio.MemorySendChannel[dict[str, Any]]] = attrs.field(factory=dict)
    holders: dict[str, RemoteHolder] = attrs.field(factory=dict)  # owner side, by key
    remote: dict[int, set[tuple[str, str]]] = attrs.field(factory=dict)  # asking side
    nursery: trio.Nursery | None = None
    link: Link = attrs.field(factory=lambda: Link(settle_s=ALIVE_MS / 1000))
    claims: Claims = attrs.field(factory=Claims)  # to write back after an outage

    def __attrs_post_init__(self) -> None:
        self.writer = Writer(self.store, self.link)

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await nursery.start(self.writer.run)
            await self._beat()
            nursery.start_soon(self._heartbeat)
            await nursery.start(self._inbox)
            task_status.started()

    async def _beat(self) -> bool:
        """Renew the lease; False when the store could not be reached (the outage is logged
        once). The first beat after an outage writes this worker's live records back."""
        started = trio.current_time()
        try:
            await self.store.beat(self.worker_id, ALIVE_MS)
        except StoreUnavailable as exc:
            self.link.failed("heartbeat", exc)
            return False
        self.link.stalled(trio.current_time() - started)
        if self.link.answered():
            self.claims.due = True
        if self.claims.due:
            await self.claims.write_back(self.store, self.writer.send, self.link)
        return True

    async def _heartbeat(self) -> None:
        beats = 0
        backoff = Backoff()
        pause = HEARTBEAT_S
        while True:
            await trio.sleep(pause)
            if not await self._beat():
                pause = backoff.pause()  # sooner than HEARTBEAT_S: the lease is renewed at once
                continue
            pause = HEARTBEAT_S
            backoff.reset()
            beats += 1
            if beats % SWEEP_EVERY == 0 and self.link.settled():
                try:
                    await self.sweep()
                except StoreUnavailable as exc:
                    self.link.failed("sweep", exc)

    async def sweep(self) -> int:
        """End every live rollout whose worker is gone (so none is lost silently, even if no
        client asks for it again); returns how many. Any worker may do it; one wins each."""
        ended = 0
        if not self.link.settled():
            return 0
        async for rid in self.store.live_ids():
            record = await self.store.live(rid)
            worker = record.get(b"worker", b"").decode()
            try:
                gone = bool(worker) and not await self.alive(worker)
            except StoreUnavailable:  # not settled after all (the store stalled): next time
                return ended
            if gone:
                await self.lost(rid, record)
                ended += 1
        return ended

    async def alive(self, worker: str) -> bool:
        """Whether `worker` runs: this one does, whatever the store says; another one without
        a lease is gone only once that is settled (`Link.settled`); until then StoreUnavailable
        (the client retries shortly: by then the lease was renewed, or the worker is gone)."""
        if worker == self.worker_id:
            return True
        started = trio.current_time()
        if await self.store.alive(worker):
            return True
        # A store that stalled (frozen, say) may answer this before the beats that waited with
        # it: no lease then means nothing yet.
        self.link.stalled(trio.current_time() - started)
        if not self.link.settled():
            raise self.link.unsettled()
        return False

    def publish(self, worker: str, message: dict[str, Any], then: Any = None) -> None:
        self.writer.send(Publish(worker, orjson.dumps(message)), then=then)

    # -- the inbox ------------------------------------------------------------------------------

    async def _inbox(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on this worker's inbox; a lost subscription (the store went away) is listened
        again, with a backoff, until the store answers (reports started once, at the first)."""

        def receive(data: bytes) -> None:
            self._dispatch(orjson.loads(data))

        backoff = Backoff()
        status = StartedOnce(task_status, backoff)
        while True:
            try:
                await self.store.listen(self.worker_id, receive, task_status=status)
            except StoreUnavailable as exc:
                if not status.done:
                    raise  # at the start: the store was reached a moment ago (a real failure)
                self.link.failed("inbox", exc)
            await trio.sleep(backoff.pause())

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["k"]
        if kind in ("ev", "ack", "end"):
            box = self.mailboxes.get(message["t"])
            if box is not None:
                box.send_nowait(message)
        elif kind == "detach":
            holder = self.holders.pop(message["h"], None)
            if holder is not None and self.service is not None:
                holder.gone.set()
                self.service.live.detach(holder)
        elif kind in FORWARDED:  # a client event for a live rollout this worker owns
            assert self.nursery is not None
            self.nursery.start_soon(self._serve, message)

    # -- the owner's side -----------------------------------------------------------------------

    async def claim(self, prepared: Prepared, lane: str | None) -> None:
        """Record that this worker owns the live rollout (before any client can see it)."""
        r = prepared.rollout
        fields = {
            "worker": self.worker_id.encode(),
            "lane": (lane or "").encode(),
            "owner": self.store.owner_field(prepared.owner),
            "store": b"1" if prepared.request.store else b"",
            "previous": (prepared.request.previous_response_id or "").encode(),
            "response": orjson.dumps(codec.to_json(r.stream.response)),
            "input_items": orjson.dumps(codec.to_json(prepared.input_items)),
        }
        await self.store.set_live(r.stream.response.id, fields)
        self.claims.records[r.stream.response.id] = fields

    def paused(self, prepared: Prepared) -> None:
        """Keep the rollout's state at this pause, for the record if its worker dies."""
        rid = prepared.rollout.stream.response.id
        fields: Fields = {
            "response": orjson.dumps(codec.to_json(prepared.rollout.stream.response)),
            "input_items": orjson.dumps(codec.to_json(prepared.input_items)),
        }
        if rid in self.claims.records:
            self.claims.records[rid].update(fields)
        self.writer.send(SetLive(rid, fields))

    def forget(self, response_id: str) -> None:
        self.claims.records.pop(response_id, None)
        self.writer.send(DropLive(response_id))

    def finished(self, live: Live) -> None:
        self.forget(live.id)

    async def barrier(self) -> None:
        await self.writer.barrier()

    # -- the asking side ------------------------------------------------------------------------

    async def deliver(
        self,
        kind: str,
        response_id: str,
        items: Sequence[Item],
        sink_for: SinkFor,
        *,
        owner: str | None,
        holder: object,
        hold: Hold,
        local: ProtocolError,
        raw: Sequence[Any] = (),
    ) -> dict[str, Any] | None:
        """Deliver an append or cancel that missed locally to the rollout's owner; its events
        go to `sink_for(lane)` (until the next pause, or from now on with UNTIL_END). Raises
        `local` (the local miss) when no worker owns such a rollout. A cancel returns the
        rollout's final response (wire JSON)."""
        record = await self._live_record(response_id, owner, local)
        worker = record[b"worker"].decode()
        if worker == self.worker_id:
            raise local
        token = new_id("relay")
        hkey = f"{self.worker_id}/{token if hold is Hold.UNTIL_PAUSE else id(holder)}"
        message = {
            "k": kind,
            "t": token,
            "from": self.worker_id,
            "h": hkey,
            "id": response_id,
            "owner": owner,
            "hold": hold.value,
            "items": [codec.to_json(i) for i in items],
            "raw": list(raw),  # an inject's input as sent (for response.inject.failed)
        }
        return await self._ask(worker, record, message, sink_for, holder)

    async def _live_record(
        self, response_id: str, owner: str | None, local: ProtocolError
    ) -> Record:
        """The live record of the rollout, when `owner` may reach it; otherwise raises why
        not: owner_lost when its worker was lost, response_not_suspended when it is stored and
        finished (and the local miss was a not-found), else `local`."""
        record = await self.store.live(response_id)
        if record and self.store.owned(record.get(b"owner"), owner):
            return record
        lost = await self.store.lost_owner(response_id)
        if lost is not None and self.store.owned(lost, owner):
            raise owner_lost(response_id) from None
        stored = await self.store.get(response_id)
        if stored is not None and stored.owned_by(owner) and local.code == "response_not_found":
            raise response_not_suspended(response_id, State.FINISHED) from None
        if not self.link.settled():  # its owner may not have written its record back yet
            raise self.link.unsettled()
        raise local

    async def _ask(
        self,
        worker: str,
        record: Record,
        message: dict[str, Any],
        sink_for: SinkFor,
        holder: object,
    ) -> dict[str, Any] | None:
        """Publish `message` to the owner `worker` and hand what it answers to the sink: its
        events up to its end (whose response is returned), or, for an ack that attached, on
        in the background (a relay) from now on."""
        token, hkey, response_id = message["t"], message["h"], message["id"]
        send, box = trio.open_memory_channel[dict[str, Any]](math.inf)
        self.mailboxes[token] = send
        relayed = False
        try:
            if not await self.store.publish(worker, orjson.dumps(message)):
                if not self.link.settled():  # its owner may not be listening again yet
                    raise self.link.unsettled()
                await self.lost(response_id, record)
                raise owner_lost(response_id)
            lane = record.get(b"lane", b"").decode() or None
            sink = sink_for(lane)
            first = await self._next(box, worker, record)
            if first["k"] == "ack":
                if first.get("attached"):
                    self.remote.setdefault(id(holder), set()).add((worker, hkey))
                    assert self.nursery is not None
                    self.nursery.start_soon(self._relay, box, token, sink, worker, hkey, record)
                    relayed = True
                return None
            end = await self._pump(first, box, sink, worker, hkey, record)
            response: dict[str, Any] | None = end.get("response")
            return response
        except Disconnected:
            return None  # the client is gone; the owner was told (a detach)
        finally:
            if not relayed:
                self.mailboxes.pop(token, None)

    async def _relay(
        self,
        box: trio.MemoryReceiveChannel[dict[str, Any]],
        token: str,
        sink: Sink,
        worker: str,
        hkey: str,
        record: Record,
    ) -> None:
        try:
            first = await self._next(box, worker, record)
            await self._pump(first, box, sink, worker, hkey, record)
        except (ProtocolError, Disconnected):
            pass
        finally:
            self.mailboxes.pop(token, None)

    async def _pump(
        self,
        message: dict[str, Any],
        box: trio.MemoryReceiveChannel[dict[str, Any]],
        sink: Sink,
        worker: str,
        hkey: str,
        record: Record,
    ) -> dict[str, Any]:
        """Hand relayed events to `sink` up to the owner's end message (returned)."""
        while message["k"] != "end":
            if message["k"] == "ev":
                try:
                    await sink.emit(codec.decode_event(message["e"]))
                except Disconnected:
                    self.publish(worker, {"k": "detach", "h": hkey})
                    raise
            message = await self._next(box, worker, record)
        if message.get("err"):
            raise ProtocolError(**message["err"])
        return message

    async def _next(
        self,
        box: trio.MemoryReceiveChannel[dict[str, Any]],
        worker: str,
        record: Record,
    ) -> dict[str, Any]:
        """The owner's next message; owner_lost if its heartbeat stops first."""
        while True:
            with trio.move_on_after(HEARTBEAT_S * 2):
                return await box.receive()
            if not await self.alive(worker):
                rid = orjson.loads(record[b"response"])["id"]
                await self.lost(rid, record)
                raise owner_lost(rid)

    def detach(self, holder: object) -> None:
        """A client of this worker is gone: its owners let go of what it held."""
        for worker, hkey in self.remote.pop(id(holder), set()):
            self.publish(worker, {"k": "detach", "h": hkey})

    async def lost(self, response_id: str, record: Record) -> None:
        """The owner is gone: end the rollout as failed (once, whoever finds out first)."""
        await end_lost(self.store, response_id, record)


def clustered(service: Service, worker_id: str) -> Service:
    """`service` with the cluster layer and event logs on, when its store is shared (one that
    many workers share: `shared_of`)."""
    store = shared_of(service.engine.store)
    if store is None:
        return service
    cluster = Cluster(store, worker_id)
    cluster.service = service
    service.cluster = cluster
    service.live.finish_hooks.append(cluster.finished)
    service.events = EventLogs(SharedLogs(store, cluster.writer, worker_id, cluster.alive))
    service.background.ended.append(lambda run: cluster.forget(run.response.id))
    return service


__all__ = ["Cluster", "RemoteHolder", "RemoteSink", "clustered", "owner_lost"]
