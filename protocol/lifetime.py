# The lifetime of a live rollout (the append and multi-agent shapes: one response that waits for
# client tool outputs), as a table, and the steering of a WebSocket response (below). Everything
# that moves a rollout between states lives here: which moves are legal in which state, and the
# one compound rule that must be atomic, accepting tool outputs (check and
# record in one step, so of two racing appends exactly one wins). Sans-IO, like h11's _state.py:
# no tasks, no clocks; the service layer feeds moves in and acts on the state that comes out.
#
# Theory of operation. A rollout starts RUNNING with a client attached. When a sampling step ends
# with client tool calls it PAUSEs and is SUSPENDED: it waits for one output per pending call.
# Outputs arrive in one or more appends (`accept`); the one that completes the set RESUMEs it.
# A client that lets go at a pause (an HTTP append stream ends) RELEASEs it: still SUSPENDED,
# under the append timeout. A client whose connection dies DETACHes it: a suspended rollout is
# PARKED (kept for the grace period, for a new connection to ATTACH), a running one is cancelled.
# FINISH is legal in every state but FINISHED, and is final. A multi-agent response waits in the
# same states without announcing the pause (no `response.done`). The output of an async call may
# arrive in any live state (LATE_OUTPUT): it joins the context at the next boundary and never
# resumes a wait.
from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence, Set
from typing import Any, TypeVar

import attrs

from protocol import codec
from protocol.errors import ProtocolError, clip
from protocol.itemrules import check_items
from protocol.items import (
    ANSWER_ITEMS,
    InputFile,
    InputImage,
    InputText,
    Item,
    Message,
    answered_field,
    answered_id,
)


class State(enum.StrEnum):
    RUNNING = "running"
    SUSPENDED = "suspended"  # waiting for tool outputs, a client may be attached
    PARKED = "parked"  # waiting for tool outputs, its client's connection is gone
    FINISHED = "finished"


class Move(enum.StrEnum):
    """What moves a rollout from one state to the next (TRANSITIONS says where)."""

    PAUSE = "pause"  # the loop streamed client calls and waits for their outputs
    RESUME = "resume"  # every pending call has its output
    RELEASE = "release"  # the attached client let go at a boundary (HTTP)
    DETACH = "detach"  # the attached client's connection closed
    ATTACH = "attach"  # a client takes the rollout (its events go there)
    FINISH = "finish"  # the loop ended (completed, incomplete or failed)
    LATE_OUTPUT = "late_output"  # the output of an async call arrived (no wait ends)


R, S, P, F = State.RUNNING, State.SUSPENDED, State.PARKED, State.FINISHED

#: state -> move -> next state. A pair that is not here is illegal.
TRANSITIONS: dict[State, dict[Move, State]] = {
    R: {
        Move.PAUSE: S,
        Move.ATTACH: R,
        Move.RELEASE: R,
        Move.DETACH: R,
        Move.FINISH: F,
        Move.LATE_OUTPUT: R,
    },
    S: {
        Move.RESUME: R,
        Move.ATTACH: S,
        Move.RELEASE: S,
        Move.DETACH: P,
        Move.FINISH: F,
        Move.LATE_OUTPUT: S,
    },
    P: {Move.RESUME: R, Move.ATTACH: S, Move.FINISH: F, Move.LATE_OUTPUT: P},
    F: {},
}

#: States in which tool outputs are accepted.
WAITING = frozenset({S, P})


class IllegalTransition(RuntimeError):
    """A move the table does not allow in the current state (a server bug, not bad input)."""


_S = TypeVar("_S", bound=enum.Enum)
_M = TypeVar("_M", bound=enum.Enum)


def _next(table: Mapping[_S, Mapping[_M, _S]], now: _S, move: _M, what: str) -> _S:
    """Where `move` leads from `now` in `table` (`what` a row is called, for the error)."""
    try:
        return table[now][move]
    except KeyError:
        raise IllegalTransition(f"{move.value} in {what} {now.value}") from None


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
    late_outputs: list[Item] = attrs.field(factory=list)  # async outputs not yet taken
    _late_ids: set[str] = attrs.field(factory=set)  # async calls whose output was accepted

    def handle(self, move: Move) -> State:
        """Apply `move`; returns the new state or raises IllegalTransition."""
        self.state = _next(TRANSITIONS, self.state, move, "state")
        return self.state

    def pause(self, calls: dict[str, str]) -> None:
        """The loop waits for outputs of `calls` (call_id -> name)."""
        self.handle(Move.PAUSE)
        self.pending = dict(calls)
        self.received = []
        self._answered = set()

    # A multi-agent response: each agent waits for its own calls, beside the others. The
    # rollout is SUSPENDED while any agent waits; each agent takes its own outputs.

    def wait_also(self, calls: dict[str, str]) -> None:
        """One agent waits for `calls` too (what others wait for and received stays)."""
        if self.state not in WAITING:
            self.handle(Move.PAUSE)
        self.pending.update(calls)

    def take_answers(self, calls: Set[str], *, drop: bool = False) -> list[Item] | None:
        """The outputs of `calls`, in the order received, once each has one (else None); they
        leave the pending set (`drop`: now, answered or not: the agent stopped waiting). The
        rollout resumes when nothing is pending any more."""
        if not drop and not calls <= self._answered:
            return None
        out = [x for x in self.received if answered_id(x) in calls]  # type: ignore[arg-type]
        self.received = [x for x in self.received if answered_id(x) not in calls]  # type: ignore[arg-type]
        for call_id in calls:
            self.pending.pop(call_id, None)
            self._answered.discard(call_id)
        if not self.pending and self.state in WAITING:
            self.handle(Move.RESUME)
        return out

    def take_outputs(self) -> list[Item]:
        """What the client sent for this pause (the loop adds it to the context)."""
        out, self.received = self.received, []
        self.pending = {}
        return out

    def accept(
        self, items: Sequence[Item], async_open: Set[str] = frozenset(), *, messages: bool = True
    ) -> bool:
        """Check a whole append (or inject) and record it, in one step: nothing is recorded
        unless every item is acceptable. Outputs of open async calls (`async_open`) are accepted
        in any live state and kept for `take_late` (they join the context at the next
        boundary); the rest needs a waiting rollout. Returns True when the items complete the
        pending set (the rollout resumes). `messages`: whether input messages may come along."""
        if async_open:
            is_late = [isinstance(x, ANSWER_ITEMS) and answered_id(x) in async_open for x in items]
            late = [x for x, flag in zip(items, is_late, strict=True) if flag]
        else:  # (no async call is open: nothing is late, as most often)
            is_late, late = [False] * len(items), []
        if self.state is State.FINISHED or (len(late) < len(items) and self.state not in WAITING):
            raise response_not_suspended(self.response_id, self.state)
        if not items:
            raise ProtocolError(
                message="'input' must not be empty.", code="empty_input", param="input"
            )
        check_items(items, "input")
        seen: set[str] = set()
        for i, item in enumerate(items):
            call_id = answered_id(item) if isinstance(item, ANSWER_ITEMS) else None
            key = answered_field(item) if isinstance(item, ANSWER_ITEMS) else "call_id"
            if call_id is not None and call_id in async_open:
                if call_id in self._late_ids or call_id in seen:
                    raise _duplicate(call_id, i, key)
                seen.add(call_id)
            elif call_id is not None:
                if call_id in self._answered or call_id in seen:
                    raise _duplicate(call_id, i, key)
                if call_id not in self.pending:
                    raise ProtocolError(
                        message=f"No pending tool call with {key} '{clip(call_id)}'.",
                        code="unknown_call_id",
                        param=f"input[{i}].{key}",
                    )
                seen.add(call_id)
            elif not isinstance(item, Message) or not messages:
                raise ProtocolError(
                    message="Only tool call outputs and messages can be appended."
                    if messages
                    else "Only tool call outputs can be injected.",
                    code="invalid_value",
                    param=f"input[{i}].type",
                )
        late_ids: set[str] = set()
        now: Sequence[Item] = items
        if late:
            late_ids = {answered_id(item) for item in late if isinstance(item, ANSWER_ITEMS)}
            self._late_ids |= late_ids
            self.handle(Move.LATE_OUTPUT)
            self.late_outputs.extend(late)
            now = [x for x, flag in zip(items, is_late, strict=True) if not flag]
        if not now:
            return False
        self._answered |= seen - late_ids
        self.received.extend(now)
        if self._answered >= self.pending.keys():
            self.handle(Move.RESUME)
            return True
        return False

    def take_late(self) -> list[Item]:
        """Outputs of async calls accepted since the last call (for the loop's next boundary)."""
        out, self.late_outputs = self.late_outputs, []
        return out


def _duplicate(call_id: str, i: int, key: str = "call_id") -> ProtocolError:
    return ProtocolError(
        message=f"An output for {key} '{clip(call_id)}' was already appended.",
        code="duplicate_call_output",
        param=f"input[{i}].{key}",
    )


# -- steering (response.steer) --------------------------------------------------------------------
#
# Steering queues user input for a WebSocket response of the connection. While the response is
# ACTIVE, accepted input waits for its next step boundary: the response ends `incomplete`
# (`steered`) and the service creates a successor with the queued input (COMMIT), or, when the
# response completes first, a successor follows the completion all the same. When the response
# stops for client tool outputs it is AWAITING_INPUT: the input stays queued (one
# `response.steer.pending` per submission) and the client's explicit continuation takes it
# (COMMIT). A completed response with nothing queued refuses steering; so does one that ended
# otherwise (incomplete, failed) or was already continued.


class Phase(enum.StrEnum):
    ACTIVE = "active"  # the loop runs: steering is queued for the next boundary
    AWAITING_INPUT = "awaiting_input"  # completed with client calls open: queued for the create
    COMPLETED = "completed"  # completed (or committed): nothing more is accepted
    ENDED = "ended"  # incomplete or failed (steered ones included)


class SteerStep(enum.StrEnum):
    STEER = "steer"  # input accepted into the queue
    COMPLETE = "complete"  # the response completed with no client call open
    WAIT_FOR_INPUT = "wait_for_input"  # the response completed with client calls open
    END = "end"  # the response ended incomplete or failed
    COMMIT = "commit"  # a successor took the queue (automatic, or the explicit create)


A, W, C, E = Phase.ACTIVE, Phase.AWAITING_INPUT, Phase.COMPLETED, Phase.ENDED

#: phase -> step -> next phase. A pair that is not here is illegal.
STEER_TRANSITIONS: dict[Phase, dict[SteerStep, Phase]] = {
    A: {SteerStep.STEER: A, SteerStep.COMPLETE: C, SteerStep.WAIT_FOR_INPUT: W, SteerStep.END: E},
    W: {SteerStep.STEER: W, SteerStep.COMMIT: C},
    C: {SteerStep.COMMIT: C},
    E: {SteerStep.COMMIT: E},
}

#: Why a phase refuses steering (`response.steer.failed` codes).
REFUSALS: dict[Phase, tuple[str, str]] = {
    C: ("response_already_completed", "Response '{id}' has already completed."),
    E: ("response_not_active", "Response '{id}' is no longer accepting steering input."),
}


class SteerRefused(Exception):
    """A steering submission that cannot be queued; `code` is a BetaResponseSteerErrorCode."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@attrs.define
class Submission:
    id: str
    raw: Any  # the input exactly as sent (returned by a failure)
    items: list[Message]
    pending_sent: bool = False  # its response.steer.pending went out (at most once)


@attrs.define
class Steering:
    """One response's steering: its phase and the queue of accepted submissions."""

    response_id: str
    limit: int
    phase: Phase = A
    queue: list[Submission] = attrs.field(factory=list)

    def handle(self, step: SteerStep) -> Phase:
        self.phase = _next(STEER_TRANSITIONS, self.phase, step, "phase")
        return self.phase

    def submit(self, submission: Submission) -> None:
        """Queue a submission, or raise SteerRefused (nothing is queued then)."""
        if self.phase in REFUSALS:
            code, message = REFUSALS[self.phase]
            raise SteerRefused(code, message.format(id=self.response_id))
        if len(self.queue) >= self.limit:
            raise SteerRefused(
                "too_many_pending_steers",
                f"Response '{self.response_id}' already has {self.limit} pending steering "
                "submissions; wait for its successor.",
            )
        self.handle(SteerStep.STEER)
        self.queue.append(submission)

    def take(self) -> list[Submission]:
        """The queue, in submission order, for the successor (the commit)."""
        out, self.queue = self.queue, []
        self.handle(SteerStep.COMMIT)
        return out

    def unannounced(self) -> list[Submission]:
        """Queued submissions whose pending notice is still to be sent (marked sent)."""
        out = [x for x in self.queue if not x.pending_sent]
        for x in out:
            x.pending_sent = True
        return out


STEER_PARTS = (InputText, InputImage, InputFile)


def steer_items(raw: Any) -> list[Message]:
    """The user messages a steering input stands for, or SteerRefused(`invalid_input`): a
    non-empty string, or a non-empty list of messages with only `type` ("message"), `role`
    ("user") and `content` (a string or input_text / input_image / input_file parts)."""

    def bad(message: str) -> SteerRefused:
        return SteerRefused("invalid_input", message)

    if isinstance(raw, str):
        if not raw:
            raise bad("'input' must not be empty.")
        return [Message(role="user", content=raw)]
    if not isinstance(raw, list) or not raw:
        raise bad("'input' must be a string or a non-empty array of user messages.")
    out: list[Message] = []
    for i, value in enumerate(raw):
        if not isinstance(value, dict):
            raise bad(f"Invalid 'input[{i}]': expected a message object.")
        if value.get("type", "message") != "message" or value.get("role") != "user":
            raise bad(f"Invalid 'input[{i}]': steering accepts only messages with the 'user' role.")
        extra = sorted(set(value) - {"type", "role", "content"})
        if extra:
            raise bad(
                f"Unknown parameter: 'input[{i}].{extra[0]}'. Steering accepts only user "
                "messages with 'type', 'role' and 'content'."
            )
        try:
            message = codec.structure(value, Message, ("input", i))
        except ProtocolError as exc:
            raise bad(exc.message) from None
        parts = () if isinstance(message.content, str) else message.content
        if isinstance(message.content, str) and not message.content:
            raise bad(f"Invalid 'input[{i}].content': must not be empty.")
        for j, part in enumerate(parts):
            if not isinstance(part, STEER_PARTS):
                raise bad(
                    f"Invalid 'input[{i}].content[{j}]': steering accepts input_text, "
                    "input_image and input_file parts."
                )
        out.append(message)
    return out


__all__ = [
    "REFUSALS",
    "STEER_TRANSITIONS",
    "TRANSITIONS",
    "WAITING",
    "IllegalTransition",
    "Lifetime",
    "Move",
    "Phase",
    "State",
    "SteerRefused",
    "SteerStep",
    "Steering",
    "Submission",
    "response_not_suspended",
    "steer_items",
]
