# Steering (`response.steer`) of one WebSocket connection's responses, by the rules of
# protocol.lifetime's Steering table: a steer is queued on the running response's mailbox (the
# loop ends the response at its next step boundary), pending input is announced after a response
# that waits for client outputs, and the successor is named (the session's lane runs it). Events
# go on the target response's lane, numbered in its sequence.
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from protocol.control import steer_failed
from protocol.events import Event
from protocol.input import normalize_input
from protocol.items import CALL_ITEMS, CallItem, Item, Message
from protocol.lanes import Lane
from protocol.lifetime import (
    Phase,
    Steering,
    SteerRefused,
    SteerStep,
    Submission,
    steer_items,
)
from protocol.request import CreateRequest
from rollout.conversation.ids import new_id
from rollout.engine.loop import Rollout
from rollout.engine.mailbox import Note
from rollout.service.frames import SteerFrame

Send = Callable[[Lane, Event], Awaitable[None]]
SUCCESSOR_FAILED = "We couldn't start the next response. Send this steering input again with "
SUCCESSOR_FAILED += "response.create."


@attrs.define(eq=False)
class Known:
    """A response this connection created: where its events go and how it is steered."""

    lane: Lane
    rollout: Rollout
    request: CreateRequest
    steering: Steering | None  # None: the shape does not steer (append, multi-agent)

    @property
    def active(self) -> bool:
        """Its loop may still send events (so others go through its mailbox)."""
        return not self.rollout.mailbox.closed


@attrs.define(eq=False)
class Steerer:
    send: Send  # an event on a lane of the connection
    limit: int  # pending steering submissions per response
    keep: int = 256  # recent responses remembered for inject and steer
    known: dict[str, Known] = attrs.field(factory=dict)

    # -- the responses of the connection --------------------------------------------------------

    def register(self, lane: Lane, rollout: Rollout, request: CreateRequest, live: bool) -> Known:
        """A response starts on `lane` (before its first event)."""
        # (Not for responses bound to a conversation, as in the real API: pause-resume.md.)
        unsupported = live or request.context_management is not None or bool(request.conversation)
        steering = None if unsupported else Steering(rollout.stream.response.id, self.limit)
        known = Known(lane, rollout, request, steering)
        self.known[rollout.stream.response.id] = known
        if len(self.known) > 2 * self.keep:  # responses that never ended (refused as they ran)
            self._trim()
        return known

    def _trim(self) -> None:
        """Forget the oldest responses past `keep`."""
        while len(self.known) > self.keep:
            del self.known[next(iter(self.known))]

    async def notify(self, known: Known, note: Note) -> None:
        """An event about `known`, numbered in its sequence: through its mailbox while its loop
        runs (sent at the next point where no built event waits), at once otherwise."""
        if known.active:
            known.rollout.mailbox.post(note)
        else:
            await self.send(known.lane, note(known.rollout.stream))

    # -- response.steer -------------------------------------------------------------------------

    async def steer(self, frame: SteerFrame) -> None:
        """Handle one `response.steer` frame: accept it or answer `response.steer.failed` with
        the input as sent."""
        raw, target_id = frame.raw, frame.target_id
        known = self.known.get(target_id)
        if frame.problem is not None:
            await self._fail(known, target_id, raw, "invalid_input", frame.problem)
            return
        if known is None:
            message = f"Response with id '{target_id}' not found."
            await self._fail(None, target_id, raw, "response_not_found", message)
            return
        if known.steering is None:
            message = (
                "This response does not support steering (multi-agent, append, compacted or "
                "bound to a conversation)."
            )
            await self._fail(known, target_id, raw, "steering_not_supported", message)
            return
        try:
            items = steer_items(raw)
            submission = Submission(id=new_id("steer"), raw=raw, items=items)
            known.steering.submit(submission)
        except SteerRefused as exc:
            await self._fail(known, target_id, raw, exc.code, exc.message)
            return
        await self.notify(known, lambda s: s.steer_accepted(submission.id))
        if known.steering.phase is Phase.AWAITING_INPUT:
            await self._announce(known)
        else:
            known.rollout.mailbox.stop_at_boundary("steered")

    async def _fail(
        self,
        known: Known | None,
        target_id: str,
        raw: Any,
        code: str,
        message: str,
        steer_id: str | None = None,
    ) -> None:
        if known is None:
            await self.send(None, steer_failed(target_id, raw, code, message, steer_id))
            return
        await self.notify(known, lambda s: s.steer_failed(raw, code, message, steer_id))

    # -- after a response ends ------------------------------------------------------------------

    async def ended(self, known: Known) -> tuple[CreateRequest, list[Submission]] | None:
        """The response's loop is over (its terminal event sent). Returns the automatic
        successor to run on its lane and the submissions it commits, if steering input is
        queued and can go on now. The oldest responses past `keep` are forgotten here, after the
        terminal event, not as a response starts: freeing one is not a new response's work."""
        self._trim()
        steering = known.steering
        if steering is None:
            return None
        response = known.rollout.stream.response
        open_calls = known.rollout.ctx.open_calls
        if response.status == "completed" and open_calls and self._required(known):
            steering.handle(SteerStep.WAIT_FOR_INPUT)
            await self._announce(known)
            return None
        steering.handle(SteerStep.COMPLETE if response.status == "completed" else SteerStep.END)
        steered = response.incomplete_details is not None and (
            response.incomplete_details.reason == "steered"
        )
        if not steering.queue:
            return None
        if response.status != "completed" and not steered:
            for sub in steering.take():  # cancelled, cut short or failed: nothing to continue
                await self._fail(
                    known,
                    response.id,
                    sub.raw,
                    "response_not_active",
                    f"Response '{response.id}' ended before the steering input was applied.",
                    sub.id,
                )
            return None
        queued = steering.take()
        successor = attrs.evolve(
            known.request,
            input=tuple(item for sub in queued for item in sub.items),
            previous_response_id=response.id,
            generate=None,
        )
        return successor, queued

    async def successor_failed(self, known: Known, queued: Sequence[Submission]) -> None:
        """The automatic successor could not be created: each submission comes back."""
        response_id = known.rollout.stream.response.id
        for sub in queued:
            await self._fail(
                known, response_id, sub.raw, "successor_creation_failed", SUCCESSOR_FAILED, sub.id
            )

    def _required(self, known: Known) -> list[CallItem]:
        """The client calls the ended response waits for (async ones excepted)."""
        open_calls = known.rollout.ctx.open_calls
        return [
            item
            for item in known.rollout.stream.response.output
            if isinstance(item, CALL_ITEMS)
            and item.call_id in open_calls
            and not getattr(item, "async_", None)
        ]

    async def _announce(self, known: Known) -> None:
        """One `response.steer.pending` per queued submission not yet told."""
        assert known.steering is not None
        required = self._required(known)
        for sub in known.steering.unannounced():
            await self.notify(known, _pending(sub.id, required))

    # -- the explicit continuation --------------------------------------------------------------

    def continuation(
        self, req: CreateRequest, lane: Lane
    ) -> tuple[CreateRequest, list[Submission], Known | None]:
        """A create continuing a response that waits for client outputs (on its lane) commits
        its steering: the queued input goes first, in submission order (the request keeps its
        settings), and the parent takes no more. Returns the request, what it commits and the
        parent."""
        parent = req.previous_response_id
        known = self.known.get(parent) if parent is not None else None
        if known is None or known.lane != lane or known.steering is None:
            return req, [], None
        if known.steering.phase is not Phase.AWAITING_INPUT:
            return req, [], None
        taken = known.steering.take()
        if not taken:
            return req, [], known
        queued: list[Item] = [item for sub in taken for item in sub.items]
        own: list[Item] = (
            [Message(role="user", content=req.input)]
            if isinstance(req.input, str)
            else list(req.input or ())
        )
        return attrs.evolve(req, input=tuple(normalize_input(queued, new_id) + own)), taken, known


def _pending(steer_id: str, required: list[CallItem]) -> Note:
    return lambda s: s.steer_pending(steer_id, required)


__all__ = ["Known", "Steerer"]
