# What the one sampling loop (rollout.engine.sampling) runs on and talks to: the Rollout (the
# state of one response: context, stream, usage, sink, mailbox) and its LoopEnv, and the
# interfaces behind which everything else stands: the Model a step's pieces come from, the
# Executors its calls go to (a Call is what an executor reads of one), the Sink its events go to.
# No loop here, and no import of the step (rollout.engine.step), which builds on these.
from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import trio

from protocol.deltas import DeltaRun
from protocol.events import Event
from protocol.items import Item
from protocol.request import CreateRequest
from protocol.response import Usage
from protocol.stream import ResponseStream
from rollout.conversation.calls import CallSpec, HostedSpec
from rollout.conversation.context import Context, Route
from rollout.conversation.work import Work
from rollout.engine.mailbox import Mailbox
from rollout.model import pieces as p
from rollout.model.inference import CacheOptions
from rollout.model.reasoning import ReasoningPlan

DEFAULT_SECRET = b"rollout: reasoning items"  # seals encrypted_content; Engine.secret overrides

Emit = Callable[[Event], Awaitable[None]]


@attrs.frozen
class Outcome:
    """How the loop ended: `completed`, `incomplete` (with a reason) or `failed`."""

    status: str
    reason: str | None = None
    message: str | None = None


class Disconnected(Exception):
    """Raised by a sink's emit when the client is gone; the loop stops sampling."""


class Sink(Protocol):
    """Where a response's events go: a transport's framing of them for one client (an SSE
    stream, a WebSocket lane), or a relay to whichever client holds a live rollout."""

    async def emit(self, event: Event) -> None:
        """Send (or queue) one event; raises Disconnected when the client is gone."""
        ...

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        """Send a run of delta events, as `emit` would send each (`emit_each` does that)."""
        ...

    async def flush(self) -> None:
        """Let what is queued leave now (a response's first token), then let other tasks run."""
        ...

    def push(self) -> None:
        """Let what is queued leave now if it can without waiting and without yielding (a
        response's first events, before its loop runs); else it leaves as it would have."""
        ...

    async def close(self) -> None:
        """Drop the client's connection (an injected fault)."""
        ...


@attrs.define(eq=False)
class CallbackSink:
    """A sink that hands each event to a callback (tests, embedding the engine directly)."""

    callback: Emit

    async def emit(self, event: Event) -> None:
        await self.callback(event)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        await emit_each(self, run)

    async def flush(self) -> None:
        pass

    def push(self) -> None:
        pass

    async def close(self) -> None:
        pass


async def emit_each(sink: Sink, run: DeltaRun[Any]) -> None:
    """A run sent event by event (for sinks that look at each event)."""
    for event in run.events():
        await sink.emit(event)


@attrs.define(eq=False)
class PassOn:
    """A sink in front of another (a tap, a fault): what a subclass does not override goes on
    to `inner` as it is (a subclass that looks at each event sends a run with `emit_each`)."""

    inner: Sink

    async def emit(self, event: Event) -> None:
        await self.inner.emit(event)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        await self.inner.emit_run(run)

    async def flush(self) -> None:
        await self.inner.flush()

    def push(self) -> None:
        self.inner.push()

    async def close(self) -> None:
        await self.inner.close()


class NullSink:
    """A sink whose events nobody is sent (a non-streaming HTTP request: its final response is
    the reply; an HTTP cancel answers with the final response)."""

    async def emit(self, event: Event) -> None:
        del event

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        del run

    async def flush(self) -> None:
        pass

    def push(self) -> None:
        pass

    async def close(self) -> None:
        pass


def as_sink(target: Sink | Emit) -> Sink:
    return CallbackSink(target) if callable(target) else target


class Call(Protocol):
    """One call of a sampling step, as an executor reads it (rollout.engine.step.ToolCall)."""

    @property
    def output_index(self) -> int:
        """Where the call's item sits in the response's output."""
        ...

    @property
    def item(self) -> Item:
        """A FunctionCall, or a hosted tool's item in progress."""
        ...

    @property
    def spec(self) -> CallSpec:
        """What the model asked for."""
        ...


class Executor(Protocol):
    """Runs a step's calls of one kind. `scans` says whether its outputs are client input (safety
    scanned as they join the context) or items the server made itself."""

    scans: bool

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item] | None:
        """The items that join the context (outputs, completed hosted calls), or None to end the
        response here with the calls open (the chain shape: the client continues it)."""
        ...


class Team(Executor, Protocol):
    """A multi-agent response's agents (rollout.engine.agents.Agents): it runs the actions
    (spawn_agent, wait_agent, ...) as an executor, and the root agent's loop with its
    subagents' loops beside it."""

    async def run(self, r: Rollout, env: LoopEnv, client: Executor) -> Outcome:
        """The root's loop (`r`) to its end, every subagent stopped then."""
        ...


class EndRollout(Exception):
    """Raised inside the loop to end the response as `incomplete` with `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.define(eq=False)
class Cancel:
    """A handle to stop a running loop from outside (`response.cancel`, grace expiry)."""

    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    reason: str = "cancelled"

    def cancel(self, reason: str = "cancelled") -> None:
        if not self.scope.cancel_called:
            self.reason = reason
            self.scope.cancel()


Pieces = AsyncGenerator[p.Piece, None]


class Model(Protocol):
    """Where a sampling step's pieces come from: the simulated model, or a real engine."""

    def sample(self, r: Rollout) -> Pieces:
        """One sampling step on `r.ctx`: its pieces in order (an async generator, closed by the
        loop when it stops early; closing aborts a real engine's request)."""
        ...

    async def open(self, r: Rollout) -> Pieces | None:
        """The response's first step, opened before any of its events, so that an engine's
        refusal (a 429, say) raises here as the request's refusal; None to open it lazily."""
        ...


@attrs.define
class LoopEnv:
    model: Model
    hosted: Mapping[type[HostedSpec], Executor]  # each hosted tool's, by its spec class
    safety: Callable[[int, Work], Awaitable[None]]  # the safety service's latency for new tokens
    deferred: Executor  # calls of async tools: returns at once, outputs come later
    #: The hosted tools whose calls the client answers: after their executor, each call goes
    #: to the client-tool executor too (rollout.engine.executors.client_answered).
    answered: frozenset[type[HostedSpec]] = frozenset()
    secret: bytes = DEFAULT_SECRET
    thoughts: dict[str, str] = attrs.field(factory=dict)  # reasoning item id -> hidden text


@attrs.define(eq=False)
class Rollout:
    """The state one loop runs on: everything a chained or resumed turn needs is here."""

    ctx: Context
    stream: ResponseStream
    route: Route
    work: Work
    sink: Sink
    input_tokens: int = 0  # summed over sampling steps
    cached_tokens: int = 0
    output_tokens: int = 0
    max_output_tokens: int | None = None
    reasoning_tokens: int = 0  # part of output_tokens
    reasoning: ReasoningPlan | None = None  # how each step reasons (None: it does not)
    window: int | None = None  # the model's context window, in prompt tokens
    truncation: str = "disabled"
    cache_options: CacheOptions = attrs.field(factory=lambda: CacheOptions())
    first_token_pending: bool = False
    request: CreateRequest | None = None  # what the client asked (a real engine gets its knobs)
    opened: Pieces | None = None  # the first step, when the model opened it early (Model.open)
    gone: bool = False  # the client disconnected: events are dropped from then on
    mailbox: Mailbox = attrs.field(factory=Mailbox)
    cancel: Cancel = attrs.field(factory=Cancel)  # stops its loop from outside
    team: Team | None = None  # a multi-agent response's agents (None: one agent, the usual)

    async def emit(self, event: Event) -> None:
        if not self.gone:
            await self.sink.emit(event)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        if not self.gone:
            await self.sink.emit_run(run)
            if self.mailbox.notes:  # after deltas no built event waits unsent
                await self.send_notes()

    async def send_notes(self) -> None:
        """Send what the mailbox holds to send (call only where no built event waits)."""
        notes = self.mailbox.notes
        while notes and not self.gone:
            await self.sink.emit(notes.pop(0)(self.stream))

    async def send(self, events: list[Event] | tuple[Event, ...] | Event) -> None:
        if not isinstance(events, list | tuple):
            events = (events,)
        for e in events:
            if self.gone:
                return
            await self.sink.emit(e)

    @property
    def budget_left(self) -> int | None:
        if self.max_output_tokens is None:
            return None
        return self.max_output_tokens - self.output_tokens

    @property
    def usage(self) -> Usage:
        return Usage.of(
            self.input_tokens, self.cached_tokens, self.output_tokens, self.reasoning_tokens
        )
