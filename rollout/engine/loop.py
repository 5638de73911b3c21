# The one sampling loop. A rollout samples a step from the policy (held to what the request
# allows: rollout.model.choice); a reasoning model first decodes its reasoning item; text ends
# it; tool calls go to their executors, every one behind the same interface (`await
# executor.call(r, calls)` returns the output items that join the context, or None to end the
# response there); repeat. Shapes differ only in the client-tool executor, transports only in
# the Sink events go to; what reaches a running loop from outside (async outputs,
# acknowledgements, a steer) waits in its Mailbox for the next safe boundary. Pre- and
# post-inference work (ingest, billing) is the caller's (rollout.engine.engine).
from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import attrs
import trio

from protocol.events import ArgumentsDeltaEvent, Event, TextDeltaEvent
from protocol.items import FunctionCall, Item, UrlCitation
from protocol.reasoning import Sealed, seal
from protocol.response import Usage
from protocol.stream import ResponseStream
from rollout.engine.context import Context, Route, fit
from rollout.engine.ids import new_id
from rollout.engine.mailbox import Mailbox
from rollout.engine.work import Work
from rollout.model.choice import constrain
from rollout.model.inference import CacheOptions, Pacer, PrefixCache, pieces, prefill
from rollout.model.policy import (
    CallStep,
    Citation,
    ErrorStep,
    FunctionCallSpec,
    Policy,
    TextStep,
    WebSearchSpec,
)
from rollout.model.profiles import InferenceProfile
from rollout.model.reasoning import ReasoningPlan, think

REASONING_CHUNK = 16  # reasoning tokens decoded between budget checks
DEFAULT_SECRET = b"rollout: reasoning items"  # seals encrypted_content; Engine.secret overrides
THOUGHTS_KEPT = 100_000  # reasoning items whose hidden text the engine remembers (oldest go)

Emit = Callable[[Event], Awaitable[None]]


class Disconnected(Exception):
    """Raised by a sink's emit when the client is gone; the loop stops sampling."""


class Sink(Protocol):
    """Where a response's events go: a transport's framing of them for one client (an SSE
    stream, a WebSocket lane), or a relay to whichever client holds a live rollout."""

    async def emit(self, event: Event) -> None:
        """Send (or queue) one event; raises Disconnected when the client is gone."""
        ...

    async def flush(self) -> None:
        """Let what is queued leave now (a response's first token)."""
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

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        pass


def as_sink(target: Sink | Emit) -> Sink:
    return CallbackSink(target) if callable(target) else target


@attrs.frozen
class ToolCall:
    """One call of a sampling step, as streamed: where it sits in the output, the item (a
    FunctionCall, or a WebSearchCall in progress) and what the model asked for."""

    output_index: int
    item: Item
    spec: FunctionCallSpec | WebSearchSpec


class Executor(Protocol):
    """Runs a step's calls of one kind. `scans` says whether its outputs are client input (safety
    scanned as they join the context) or items the server made itself."""

    scans: bool

    async def call(self, r: Rollout, calls: Sequence[ToolCall]) -> Sequence[Item] | None:
        """The items that join the context (outputs, completed hosted calls), or None to end the
        response here with the calls open (the chain shape: the client continues it)."""
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


@attrs.frozen
class Outcome:
    """How the loop ended: `completed`, `incomplete` (with a reason) or `failed`."""

    status: str
    reason: str | None = None
    message: str | None = None


@attrs.define
class LoopEnv:
    policy: Policy
    profile: InferenceProfile
    cache: PrefixCache
    hosted: Executor  # hosted tools (web search)
    safety: Callable[[int, Work], Awaitable[None]]  # the safety service's latency for new tokens
    deferred: Executor  # calls of async tools: returns at once, outputs come later
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
    gone: bool = False  # the client disconnected: events are dropped from then on
    mailbox: Mailbox = attrs.field(factory=Mailbox)

    async def emit(self, event: Event) -> None:
        if not self.gone:
            await self.sink.emit(event)
            # After a delta no built event waits unsent: notes can go in between.
            if self.mailbox.notes and type(event) in _SINGLE:
                await self.send_notes()

    async def send_notes(self) -> None:
        """Send what the mailbox holds to send (call only where no built event waits)."""
        notes = self.mailbox.notes
        while notes and not self.gone:
            await self.sink.emit(notes.pop(0)(self.stream))

    async def send(self, events: Sequence[Event] | Event) -> None:
        if isinstance(events, Sequence):
            for e in events:
                await self.emit(e)
        else:
            await self.emit(events)

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


_SINGLE = (TextDeltaEvent, ArgumentsDeltaEvent)  # events the loop builds and sends one at a time


async def _boundary(r: Rollout, env: LoopEnv) -> None:
    """A step boundary: what arrived from outside joins the context, notes are sent."""
    box = r.mailbox
    if box.items:
        items, box.items = box.items, []
        before = r.ctx.scan.tokens_scanned
        r.ctx.extend(items, r.work)
        await env.safety(r.ctx.scan.tokens_scanned - before, r.work)
    await r.send_notes()


async def _think(r: Rollout, seconds: float) -> None:
    """A scripted step's wait before sampling; a steer ends it early (the boundary is here)."""
    with r.work.stage("fault"), trio.move_on_after(seconds):
        while r.mailbox.stop is None:
            await r.mailbox.wait()
            await r.send_notes()


async def run_loop(r: Rollout, env: LoopEnv, client: Executor) -> Outcome:
    while True:
        await _boundary(r, env)
        r.ctx = fit(r.ctx, r.window, r.truncation, r.work)
        step = constrain(env.policy.next_step(r.ctx), r.ctx)
        if step.delay_s > 0:
            await _think(r, step.delay_s)
        if r.mailbox.stop is not None and r.stream.response.output:
            return Outcome("incomplete", reason=r.mailbox.stop)
        with r.work.stage("inference") as stage:
            pf = await prefill(r.ctx, r.route.engine, env.cache, env.profile, r.cache_options)
            stage.tokens = pf.prompt_tokens
            before = r.output_tokens
            r.input_tokens += pf.prompt_tokens
            r.cached_tokens += pf.cached_tokens
            pacer = Pacer(env.profile)
            r.first_token_pending = True
            try:
                if isinstance(step, ErrorStep):
                    return Outcome("failed", reason=step.code, message=step.message)
                think_tokens = getattr(step, "reasoning_tokens", None)
                if r.reasoning is not None and await _sample_reasoning(r, env, pacer, think_tokens):
                    return Outcome("incomplete", reason="max_output_tokens")
                if isinstance(step, TextStep):
                    cut = await _sample_text(
                        r, step.text, step.citations, pacer, refusal=step.refusal
                    )
                    if cut:
                        return Outcome("incomplete", reason="max_output_tokens")
                    return Outcome("completed")
                calls = None
                if not (step.text and await _sample_text(r, step.text, (), pacer)):
                    calls = await _sample_calls(r, step, pacer)
            finally:
                r.ctx.response_steps += 1
                r.work.mark("sampled")
                decoded = r.output_tokens - before
                ideal = pf.seconds + env.profile.decode_seconds(decoded)
                r.work.ideal_inference_s += ideal
                if r.work.keep_spans:
                    r.work.steps.append((pf.prompt_tokens, ideal))
        if calls is None:
            return Outcome("incomplete", reason="max_output_tokens")
        hosted = [c for c in calls if isinstance(c.spec, WebSearchSpec)]
        functions = [c for c in calls if not isinstance(c.spec, WebSearchSpec)]
        if hosted:
            await _execute(r, env, env.hosted, hosted)
        if functions:
            r.ctx.extend([c.item for c in functions], r.work, scan=False)
            deferred = [c for c in functions if _is_async(c)]
            waiting = [c for c in functions if not _is_async(c)]
            if deferred:
                await _execute(r, env, env.deferred, deferred)
            if waiting and not await _execute(r, env, client, waiting):
                return Outcome("completed")


def _is_async(c: ToolCall) -> bool:
    return isinstance(c.item, FunctionCall) and bool(c.item.async_)


async def _execute(r: Rollout, env: LoopEnv, executor: Executor, calls: list[ToolCall]) -> bool:
    """Run `calls` through `executor` and add what it returns to the context; False when the
    executor ends the response instead."""
    outputs = await executor.call(r, calls)
    if outputs is None:
        return False
    before = r.ctx.scan.tokens_scanned
    r.ctx.extend(outputs, r.work, scan=executor.scans)
    if executor.scans:
        await env.safety(r.ctx.scan.tokens_scanned - before, r.work)
    return True


async def _stream_tokens(
    r: Rollout,
    text: str,
    pacer: Pacer,
    make: Callable[[str], Event],
    after: Callable[[int], Awaitable[None]] | None = None,
    *,
    charge: bool = True,
) -> tuple[str, bool]:
    """Emit one delta per token at the decode pace, within the output budget.

    Returns what was streamed and whether the budget cut it short. `after(chars_written)` runs
    after each delta (text uses it to place citations). With `charge=False` (a reasoning
    summary, whose tokens the step's reasoning already paid for) nothing is paced or counted.
    """
    written: list[str] = []
    chars = 0
    for piece, tokens in pieces(text):
        if charge:
            left = r.budget_left
            if left is not None and left < tokens:
                return "".join(written), True
            await pacer.token(tokens)
            r.output_tokens += tokens
        await r.emit(make(piece))
        if r.first_token_pending:
            r.first_token_pending = False
            r.work.mark("first_token")
            await r.sink.flush()
        written.append(piece)
        chars += len(piece)
        if after is not None:
            await after(chars)
    return "".join(written), False


async def _sample_reasoning(
    r: Rollout, env: LoopEnv, pacer: Pacer, tokens: int | None = None
) -> bool:
    """A reasoning item before the step's output: its tokens (the plan's, or the step's own when
    a script says) decoded at the profile's pace (billed as reasoning tokens), then its summary
    part, if asked for; True if the output budget ran out while reasoning (the response then
    ends incomplete, as the real API's does)."""
    plan = r.reasoning
    assert plan is not None
    total = plan.tokens if tokens is None else tokens
    item_id = new_id("rs")
    index = r.stream.next_output_index
    hidden, summary = think(r.ctx, total)
    await r.send(r.stream.begin_reasoning(item_id))
    spent = 0
    while spent < total:
        n = min(REASONING_CHUNK, total - spent)
        left = r.budget_left
        cut = left is not None and left < n
        n = min(n, left) if left is not None else n
        await pacer.token(n)
        r.output_tokens += n
        r.reasoning_tokens += n
        spent += n
        if cut:
            await r.send(r.stream.end_reasoning())
            return True
    if plan.summary:
        await r.send(r.stream.begin_summary_part())
        await _stream_tokens(r, summary, pacer, r.stream.summary_delta, charge=False)
        await r.send(r.stream.end_summary_part())
    blob = seal(Sealed(item_id=item_id, tokens=spent, text=hidden), env.secret)
    await r.send(r.stream.end_reasoning(blob if plan.encrypted else None))
    r.ctx.hidden[item_id] = hidden
    remember(env.thoughts, item_id, hidden)
    r.ctx.extend([r.stream.response.output[index]], r.work, scan=False)
    return False


def remember(thoughts: dict[str, str], item_id: str, hidden: str) -> None:
    """Keep a step's hidden reasoning by item id, so a chain restored from the store (or a
    stored conversation sent back without blobs) renders the same prompt as a cached one."""
    thoughts[item_id] = hidden
    while len(thoughts) > THOUGHTS_KEPT:
        del thoughts[next(iter(thoughts))]


async def _sample_text(
    r: Rollout,
    text: str,
    citations_: Sequence[Citation],
    pacer: Pacer,
    *,
    refusal: bool = False,
) -> bool:
    """Stream one assistant message (or refusal); True if the output budget cut it short."""
    await r.send(r.stream.begin_text(new_id("msg"), refusal=refusal))
    citations = sorted(citations_, key=lambda c: c.end_index)

    async def cite(written: int) -> None:
        while citations and citations[0].end_index <= written:
            c = citations.pop(0)
            annotation = UrlCitation(
                url=c.url, title=c.title, start_index=c.start_index, end_index=c.end_index
            )
            await r.emit(r.stream.annotate(annotation))

    _, cut = await _stream_tokens(r, text, pacer, r.stream.text_delta, cite if citations else None)
    await r.send(r.stream.end_text("incomplete" if cut else "completed"))
    r.ctx.extend([r.stream.response.output[-1]], r.work, scan=False)
    return cut


async def _sample_calls(r: Rollout, step: CallStep, pacer: Pacer) -> list[ToolCall] | None:
    """Stream every function call of the step, then open (not run) its web searches.

    Hosted calls come last in a step: the loop samples a new step after running them.
    """
    out: list[ToolCall] = []
    ordered = sorted(step.calls, key=lambda spec: isinstance(spec, WebSearchSpec))
    for spec in ordered:
        index = r.stream.next_output_index
        if isinstance(spec, WebSearchSpec):
            r.ctx.response_calls += 1
            await r.send(r.stream.begin_web_search(new_id("ws")))
            out.append(ToolCall(index, r.stream.response.output[index], spec))
            continue
        r.ctx.response_calls += 1
        is_async = r.ctx.is_async(spec.name) or None
        await r.send(r.stream.begin_call(new_id("fc"), new_id("call"), spec.name, is_async))
        delta = functools.partial(r.stream.arguments_delta, index)
        streamed, cut = await _stream_tokens(r, spec.arguments, pacer, delta)
        if cut:
            await r.send(r.stream.end_call(index, streamed, status="incomplete"))
            return None
        await r.send(r.stream.end_call(index, spec.arguments))
        out.append(ToolCall(index, r.stream.response.output[index], spec))
    return out
