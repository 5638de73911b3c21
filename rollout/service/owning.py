# The owner's side of the cluster layer (rollout.service.cluster): an append, inject or cancel
# that a client of another worker sent, run through this worker's Service as if it were local,
# with a RemoteSink (events published back to the asking worker, in order, through the writer)
# and a RemoteHolder (one per HTTP request or WebSocket session there, dropped when it ends).
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from protocol import codec
from protocol.deltas import DeltaRun
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.lifetime import State
from rollout.engine.loop import Disconnected, emit_each
from rollout.engine.mailbox import Note
from rollout.service.live import Hold, response_not_found
from rollout.store.base import items_of

if TYPE_CHECKING:
    from rollout.service.service import Service


@attrs.define(eq=False)
class RemoteHolder:
    """Holds a live rollout for a client of another worker (one per HTTP request or WebSocket
    session there)."""

    key: str
    gone: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class RemoteSink:
    """A live rollout's events, published to the asking worker's inbox (in order, through the
    writer); Disconnected once that worker or its client is gone."""

    cluster: Owning
    worker: str
    token: str
    dead: bool = False

    def _gone(self, receivers: Any) -> None:
        if receivers == 0:
            self.dead = True

    async def emit(self, event: Event) -> None:
        if self.dead:
            raise Disconnected()
        payload = codec.encode_event(event).decode()
        self.cluster.publish(self.worker, {"k": "ev", "t": self.token, "e": payload}, self._gone)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        await emit_each(self, run)

    async def flush(self) -> None:
        pass

    def push(self) -> None:
        pass

    async def close(self) -> None:
        self.dead = True


class Owning:
    """What the owner of live rollouts does for other workers' clients (Cluster's base)."""

    service: Service | None
    holders: dict[str, RemoteHolder]

    def publish(self, worker: str, message: dict[str, Any], then: Any = None) -> None:
        raise NotImplementedError

    async def _serve(self, message: dict[str, Any]) -> None:
        """Run an append or cancel for a client of another worker."""
        worker, token, rid = message["from"], message["t"], message["id"]
        owner, hkey = message.get("owner"), message["h"]
        created = hkey not in self.holders  # a WebSocket session's later requests reuse it
        holder = self.holders.setdefault(hkey, RemoteHolder(hkey))
        try:
            await self._serve_as(message, worker, token, rid, owner, holder)
        finally:
            if created:
                self.holders.pop(hkey, None)

    async def _serve_as(
        self,
        message: dict[str, Any],
        worker: str,
        token: str,
        rid: str,
        owner: str | None,
        holder: RemoteHolder,
    ) -> None:
        assert self.service is not None
        sink = RemoteSink(self, worker, token)
        hold = Hold(message.get("hold", Hold.UNTIL_PAUSE.value))
        asked = Forwarded(message, rid, owner, sink, holder, hold)
        try:
            if not await SERVE[message["k"]](self, asked):
                return
        except ProtocolError as exc:
            self.publish(worker, {"k": "end", "t": token, "err": _error_json(exc)})
            return
        live_now = self.service.live.rollouts.get(rid)
        attached = live_now is not None and live_now.relay.target is sink
        if hold is Hold.UNTIL_END and attached and live_now is not None:
            self.publish(worker, {"k": "ack", "t": token, "attached": True})
            async with trio.open_nursery() as either:  # until the rollout ends or is let go
                for event in (live_now.done, holder.gone):
                    either.start_soon(_set_then_cancel, event, either.cancel_scope)
        elif hold is Hold.UNTIL_END:
            self.publish(worker, {"k": "ack", "t": token, "attached": False})
            return
        self.publish(worker, {"k": "end", "t": token})

    async def _cancel(self, asked: Forwarded) -> bool:
        """Stop the rollout; over WebSocket the canceller takes it over. Its final response
        goes back (False: nothing follows)."""
        assert self.service is not None
        sink = asked.sink
        run = self.service.background.find(asked.rid, asked.owner)
        if run is not None:  # a background response this worker runs
            final = codec.to_json(await self.service.background.cancel(run))
            self.publish(sink.worker, {"k": "end", "t": sink.token, "response": final})
            return False
        take = asked.hold is Hold.UNTIL_END
        live = self.service.cancel(asked.rid, asked.owner, sink if take else None, asked.holder)
        await live.done.wait()
        final = codec.to_json(live.prepared.rollout.stream.response)
        self.publish(sink.worker, {"k": "end", "t": sink.token, "response": final})
        return False

    async def _append(self, asked: Forwarded) -> bool:
        assert self.service is not None
        work = self.service.engine.stats.new_work()
        await self.service.append(
            asked.rid,
            items_of(asked.message["items"]),
            work,
            asked.sink,
            owner=asked.owner,
            holder=asked.holder,
            hold=asked.hold,
        )
        return True

    async def _inject(self, asked: Forwarded) -> bool:
        """`response.inject` for another worker's client, as Session does it for its own: True
        when committed; otherwise `response.inject.failed` is sent (in the response's sequence:
        through the loop when the asking client holds it, at once when it is parked)."""
        assert self.service is not None
        rid, sink, holder = asked.rid, asked.sink, asked.holder
        live = self.service.find_live(rid, asked.owner)
        if live is not None and live.relay.target is not None and live.relay.holder is not holder:
            live = None  # another client holds it: not found from there
        if live is None:
            raise response_not_found(rid)
        items = items_of(asked.message["items"])
        try:
            self.service.inject(
                live, items, self.service.engine.stats.new_work(), sink, holder=holder
            )
            return True
        except ProtocolError as exc:
            code = "response_already_completed" if live.state is State.FINISHED else "invalid_input"
            raw, text = asked.message.get("raw", []), exc.message
            note: Note = lambda s: s.inject_failed(raw, code, text)  # noqa: E731
            if live.relay.holder is holder:
                live.prepared.rollout.mailbox.post(note)
                self.publish(sink.worker, {"k": "ack", "t": sink.token, "attached": False})
            else:  # parked: its loop waits and sends nothing
                event = codec.encode_event(note(live.prepared.rollout.stream)).decode()
                self.publish(sink.worker, {"k": "ev", "t": sink.token, "e": event})
                self.publish(sink.worker, {"k": "end", "t": sink.token})
            return False


@attrs.frozen
class Forwarded:
    """A client event another worker forwarded here, as the owner's side serves it."""

    message: dict[str, Any]  # as published: its kind, ids, items
    rid: str
    owner: str | None
    sink: RemoteSink  # where the rollout's events go: back to the asking worker
    holder: RemoteHolder
    hold: Hold


#: The owner's side of each client event forwarded to it (rollout.service.session.EVENTS'
#: `forward`): True when the asking client then hears whether it holds the rollout.
SERVE: dict[str, Callable[[Owning, Forwarded], Awaitable[bool]]] = {
    "append": Owning._append,
    "cancel": Owning._cancel,
    "inject": Owning._inject,
}


async def _set_then_cancel(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _error_json(exc: ProtocolError) -> dict[str, Any]:
    return {
        "message": exc.message,
        "type": exc.type,
        "code": exc.code,
        "param": exc.param,
        "status": exc.status,
    }


__all__ = ["Owning", "RemoteHolder", "RemoteSink"]
