# The lifetime of a live rollout (the append shape: one response that pauses on client tool calls),
# as a table. Everything that moves a rollout between states lives here: which events are legal in
# which state, and the one compound rule that must be atomic, accepting tool outputs (check and
# record in one step, so of two racing appends exactly one wins). Sans-IO, like h11's _state.py:
# no tasks, no clocks; the service layer feeds events in and acts on the state that comes out.
#
# Theory of operation. A rollout starts RUNNING with a client attached. When a sampling step ends
# with client tool calls it PAUSEs and is SUSPENDED: it waits for one output per pending call.
# Outputs arrive in one or more appends (`accept`); the one that completes the set RESUMEs it.
# A client that lets go at a pause (an HTTP append stream ends) RELEASEs it: still SUSPENDED,
# under the append timeout. A client whose connection dies DETACHes it: a suspended rollout is
# PARKED (kept for the grace period, for a new connection to ATTACH), a running one is cancelled.
# FINISH is legal in every state but FINISHED, and is final.
from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from protocol.errors import ProtocolError, clip
from protocol.items import FunctionCallOutput, Item, Message


class State(enum.StrEnum):
    RUNNING = "running"
    SUSPENDED = "suspended"  # waiting for tool outputs, a client may be attached
    PARKED = "parked"  # waiting for tool outputs, its client's connection is gone
    FINISHED = "finished"


class Event(enum.StrEnum):
    PAUSE = "pause"  # the loop streamed client calls and waits for their outputs
    RESUME = "resume"  # every pending call has its output
    RELEASE = "release"  # the attached client let go at a boundary (HTTP)
    DETACH = "detach"  # the attached client's connection closed
    ATTACH = "attach"  # a client takes the rollout (its events go there)
    FINISH = "finish"  # the loop ended (completed, incomplete or failed)


R, S, P, F = State.RUNNING, State.SUSPENDED, State.PARKED, State.FINISHED

#: state -> event -> next state. A pair that is not here is illegal.
TRANSITIONS: dict[State, dict[Event, State]] = {
    R: {Event.PAUSE: S, Event.ATTACH: R, Event.RELEASE: R, Event.DETACH: R, Event.FINISH: F},
    S: {Event.RESUME: R, Event.ATTACH: S, Event.RELEASE: S, Event.DETACH: P, Event.FINISH: F},
    P: {Event.RESUME: R, Event.ATTACH: S, Event.FINISH: F},
    F: {},
}

#: States in which tool outputs are accepted.
WAITING = frozenset({S, P})


class IllegalTransition(RuntimeError):
    """An event the table does not allow in the current state (a server bug, not bad input)."""


def response_not_suspended(response_id: str, state: State) -> ProtocolError:
    return ProtocolError(
        message=f"Response '{clip(response_id)}' is {state.value}, not waiting for tool outputs.",
        code="response_not_suspended",
        param="response_id",
        status=409,
    )


@attrs.define
class Lifetime:
    """One live rollout's state, its pending calls and the outputs received for them."""

    response_id: str
    state: State = R
    pending: dict[str, str] = attrs.field(factory=dict)  # call_id -> tool name
    received: list[Item] = attrs.field(factory=list)  # appended since the pause, in order
    _answered: set[str] = attrs.field(factory=set)

    def handle(self, event: Event) -> State:
        """Apply `event`; returns the new state or raises IllegalTransition."""
        try:
            self.state = TRANSITIONS[self.state][event]
        except KeyError:
            raise IllegalTransition(f"{event.value} in state {self.state.value}") from None
        return self.state

    def pause(self, calls: dict[str, str]) -> None:
        """The loop waits for outputs of `calls` (call_id -> name)."""
        self.handle(Event.PAUSE)
        self.pending = dict(calls)
        self.received = []
        self._answered = set()

    def take_outputs(self) -> list[Item]:
        """What the client sent for this pause (the loop adds it to the context)."""
        out, self.received = self.received, []
        self.pending = {}
        return out

    def accept(self, items: Sequence[Item]) -> bool:
        """Check a whole append and record it, in one step: nothing is recorded unless every item
        is acceptable. Returns True when it completes the pending set (the rollout resumes)."""
        if self.state not in WAITING:
            raise response_not_suspended(self.response_id, self.state)
        if not items:
            raise ProtocolError(
                message="'input' must not be empty.", code="empty_input", param="input"
            )
        seen: set[str] = set()
        for i, item in enumerate(items):
            if isinstance(item, FunctionCallOutput):
                if item.call_id in self._answered or item.call_id in seen:
                    raise ProtocolError(
                        message=f"An output for call_id '{clip(item.call_id)}' was already "
                        "appended.",
                        code="duplicate_call_output",
                        param=f"input[{i}].call_id",
                    )
                if item.call_id not in self.pending:
                    raise ProtocolError(
                        message=f"No pending tool call with call_id '{clip(item.call_id)}'.",
                        code="unknown_call_id",
                        param=f"input[{i}].call_id",
                    )
                seen.add(item.call_id)
            elif not isinstance(item, Message):
                raise ProtocolError(
                    message="Only function_call_output items and messages can be appended.",
                    code="invalid_value",
                    param=f"input[{i}].type",
                )
        self._answered |= seen
        self.received.extend(items)
        if self._answered >= self.pending.keys():
            self.handle(Event.RESUME)
            return True
        return False


__all__ = [
    "TRANSITIONS",
    "WAITING",
    "Event",
    "IllegalTransition",
    "Lifetime",
    "State",
    "response_not_suspended",
]
