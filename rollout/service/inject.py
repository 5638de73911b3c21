# `response.inject` over WebSocket: tool outputs for a live response of the connection (a
# multi-agent one, or the append shape's), a parked one (same API key), or one on another worker;
# answered `response.inject.created` in the response's sequence, or `response.inject.failed`
# with the input as sent. A handler of the session's table of events (rollout.service.session).
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from protocol.errors import ProtocolError
from protocol.events import Event, InjectError, InjectFailedEvent
from protocol.lanes import Lane
from protocol.lifetime import State
from protocol.request import InjectRequest
from rollout.conversation.work import Work
from rollout.engine.loop import Sink
from rollout.engine.mailbox import Note
from rollout.service.live import response_not_found
from rollout.service.service import Service
from rollout.service.steer import Known, Steerer


class Session(Protocol):
    """What the handler uses of the connection's session (rollout.service.session.Session)."""

    service: Service
    owner: str | None
    steer: Steerer
    sink_for: Callable[[Lane], Sink]

    async def send_on(self, lane: Lane, event: Event) -> None: ...

    async def elsewhere(
        self, kind: str, rid: str, items: Any, local: ProtocolError, raw: Any = ()
    ) -> None: ...


async def inject(
    session: Session, decoded: tuple[InjectRequest, Any], work: Work, size: int
) -> None:
    """`response.inject`: tool outputs for a live response of this connection (a multi-agent
    one, or the append shape's), or a parked one (same API key). Answers
    `response.inject.created` in the response's sequence, or `response.inject.failed`
    with the input as sent."""
    del size
    request, raw = decoded
    rid = request.response_id
    live = session.service.find_live(rid, session.owner)
    if live is not None and live.relay.target is not None and live.relay.holder is not session:
        live = None  # another connection holds it: not found from here
    known = session.steer.known.get(rid)
    if live is None and known is None and session.service.cluster is not None:
        try:  # another worker's rollout (a reconnect): delivered there, answered here
            await session.elsewhere("inject", rid, request.input, response_not_found(rid), raw)
            return
        except ProtocolError as exc:
            if exc.code == "response_not_suspended":  # it finished (on another worker)
                error = InjectError(code="response_already_completed", message=exc.message)
                event = InjectFailedEvent(
                    response_id=rid, input=tuple(raw), error=error, sequence_number=0
                )
                await session.send_on(None, event)
                return
            if exc.code != "response_not_found":
                raise
    if live is None:
        await _failed(session, rid, raw, known)
        return
    try:
        sink = session.sink_for(live.lane)
        session.service.inject(live, request.input, work, sink, holder=session)
    except ProtocolError as exc:
        code = "response_already_completed" if live.state is State.FINISHED else "invalid_input"
        message = exc.message
        note: Note = lambda s: s.inject_failed(raw, code, message)  # noqa: E731
        if live.relay.holder is session:
            live.prepared.rollout.mailbox.post(note)
        else:  # parked: its loop waits and sends nothing
            await session.send_on(live.lane, note(live.prepared.rollout.stream))


async def _failed(session: Session, rid: str, raw: Any, known: Known | None) -> None:
    finished_by = session.service.live.finished
    finished = rid in finished_by and finished_by[rid] == session.owner
    if finished or (known is not None and known.rollout.stream.terminal is not None):
        code, message = "response_already_completed", f"Response '{rid}' has already completed."
    elif known is not None:
        code = "invalid_input"
        message = (
            f"Response '{rid}' does not wait for injected input; create it with "
            "'multi_agent': {'enabled': true}."
        )
    else:
        code, message = "response_not_found", f"Response with id '{rid}' not found."
    if known is not None:
        await session.steer.notify(known, lambda s: s.inject_failed(raw, code, message))
        return
    error = InjectError(code=code, message=message)
    await session.send_on(
        None,
        InjectFailedEvent(response_id=rid, input=tuple(raw), error=error, sequence_number=0),
    )
