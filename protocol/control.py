# The builders of a response's control events, beside its output stream: the append shape's
# pause (`response.done`), and the acknowledgements of `response.inject` and `response.steer`
# (pause-resume.md), all numbered in the response's own sequence. A mixin of ResponseStream
# (protocol.stream), which supplies the response and the numbering.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.events import (
    FailedSteer,
    InjectCreatedEvent,
    InjectError,
    InjectFailedEvent,
    PauseEvent,
    PendingCall,
    RequiredInput,
    SteerAcceptedEvent,
    SteerError,
    SteerFailedEvent,
    SteerPendingEvent,
    SteerRef,
)
from protocol.items import CallItem, PausingItem, call_name, pending_id, pending_name
from protocol.response import Response, Usage


class ControlEvents:
    response: Response

    def _n(self) -> int:
        raise NotImplementedError

    # -- the append shape -----------------------------------------------------------------------

    def pause(self, calls: Sequence[PausingItem], usage: Usage) -> PauseEvent:
        """`response.done`: small on purpose, it does not repeat the response snapshot. An MCP
        approval request is listed by its id (what its answer names) and the tool it asks for."""
        return PauseEvent(
            sequence_number=self._n(),
            response_id=self.response.id,
            pending_calls=tuple(
                PendingCall(call_id=pending_id(c), name=pending_name(c), item_id=c.id or "")
                for c in calls
            ),
            usage=usage,
        )

    # -- inject and steer (pause-resume.md): numbered in the response's own sequence -------------

    def inject_created(self) -> InjectCreatedEvent:
        return InjectCreatedEvent(response_id=self.response.id, sequence_number=self._n())

    def inject_failed(self, raw: Sequence[Any], code: str, message: str) -> InjectFailedEvent:
        return InjectFailedEvent(
            response_id=self.response.id,
            input=tuple(raw),
            error=InjectError(code=code, message=message),
            sequence_number=self._n(),
        )

    def steer_accepted(self, steer_id: str) -> SteerAcceptedEvent:
        return SteerAcceptedEvent(
            sequence_number=self._n(),
            steer=SteerRef(id=steer_id, previous_response_id=self.response.id),
        )

    def steer_pending(self, steer_id: str, required: Sequence[CallItem]) -> SteerPendingEvent:
        return SteerPendingEvent(
            reason="waiting_for_required_input",
            required_input=tuple(
                RequiredInput(call_id=c.call_id, name=call_name(c)) for c in required
            ),
            sequence_number=self._n(),
            steer=SteerRef(id=steer_id, previous_response_id=self.response.id),
        )

    def steer_failed(
        self, raw: Any, code: str, message: str, steer_id: str | None = None
    ) -> SteerFailedEvent:
        return steer_failed(self.response.id, raw, code, message, steer_id, self._n())


def steer_failed(
    response_id: str,
    raw: Any,
    code: str,
    message: str,
    steer_id: str | None = None,
    sequence_number: int = 0,
) -> SteerFailedEvent:
    """`response.steer.failed`; without a known target response it is numbered 0."""
    return SteerFailedEvent(
        error=SteerError(code=code, message=message),
        sequence_number=sequence_number,
        steer=FailedSteer(input=raw, previous_response_id=response_id, id=steer_id),
    )
