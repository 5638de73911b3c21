# The one sampling loop. A rollout samples a step from the policy; text ends it, tool calls are
# executed (hosted tools here, client tools through the executor it was given) and their results
# join the context; repeat. Chain and append differ only in the client-tool executor; HTTP and
# WebSocket only in `emit`. Pre- and post-inference work (ingest, billing) is the caller's.
from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence

import attrs
import trio

from protocol.events import Event
from protocol.items import FunctionCall, UrlCitation, WebSearchCall
from protocol.response import Usage
from protocol.stream import ResponseStream
from rollout.context import Context, Route
from rollout.ids import new_id
from rollout.inference import Pacer, PrefixCache, pieces, prefill
from rollout.model import CallStep, ErrorStep, FunctionCallSpec, Policy, TextStep, WebSearchSpec
from rollout.profiles import InferenceProfile
from rollout.tools import ClientTools, WebSearch
from rollout.work import Work

Emit = Callable[[Event], Awaitable[None]]


class Disconnected(Exception):
    """Raised by a transport's emit when the client is gone; the loop stops sampling."""


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
    web_search: WebSearch


@attrs.define(eq=False)
class Rollout:
    """The state one loop runs on: everything a chained or resumed turn needs is here."""

    ctx: Context
    stream: ResponseStream
    route: Route
    work: Work
    emit: Emit
    usage: Usage = attrs.field(factory=Usage)
    max_output_tokens: int | None = None

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
        return self.max_output_tokens - self.usage.output_tokens


async def run_loop(r: Rollout, env: LoopEnv, client: ClientTools) -> Outcome:
    while True:
        step = env.policy.next_step(r.ctx)
        with r.work.stage("inference") as stage:
            pf = await prefill(r.ctx, r.route.engine, env.cache, env.profile)
            stage.tokens = pf.prompt_tokens
            r.usage = r.usage + Usage.of(pf.prompt_tokens, pf.cached_tokens, 0)
            pacer = Pacer(env.profile)
            if isinstance(step, ErrorStep):
                return Outcome("failed", reason=step.code, message=step.message)
            if isinstance(step, TextStep):
                cut = await _sample_text(r, step, pacer)
                return (
                    Outcome("incomplete", reason="max_output_tokens")
                    if cut
                    else Outcome("completed")
                )
            calls = await _sample_calls(r, step, pacer)
        if calls is None:
            return Outcome("incomplete", reason="max_output_tokens")
        function_calls: list[FunctionCall] = []
        for index, spec in calls:
            if isinstance(spec, WebSearchSpec):
                await _run_web_search(r, env, index, spec)
            else:
                item = r.stream.response.output[index]
                assert isinstance(item, FunctionCall)
                function_calls.append(item)
        if function_calls:
            r.ctx.extend(function_calls, r.work, scan=False)
            outputs = await client.call(function_calls, r.work)
            if outputs is None:
                return Outcome("completed")


async def _stream_tokens(
    r: Rollout,
    text: str,
    pacer: Pacer,
    make: Callable[[str], Event],
    after: Callable[[int], Awaitable[None]] | None = None,
) -> bool:
    """Emit one delta per token at the decode pace; True if the output budget cut it short.

    `after(chars_written)` runs after each delta (text uses it to place citations).
    """
    written = 0
    for piece in pieces(text):
        left = r.budget_left
        if left is not None and left <= 0:
            return True
        await pacer.token()
        r.usage = r.usage + Usage.of(0, 0, 1)
        await r.emit(make(piece))
        written += len(piece)
        if after is not None:
            await after(written)
    return False


async def _sample_text(r: Rollout, step: TextStep, pacer: Pacer) -> bool:
    await r.send(r.stream.begin_text(new_id("msg")))
    citations = sorted(step.citations, key=lambda c: c.end_index)

    async def cite(written: int) -> None:
        while citations and citations[0].end_index <= written:
            c = citations.pop(0)
            annotation = UrlCitation(
                url=c.url, title=c.title, start_index=c.start_index, end_index=c.end_index
            )
            await r.emit(r.stream.annotate(annotation))

    cut = await _stream_tokens(r, step.text, pacer, r.stream.text_delta, cite)
    await r.send(r.stream.end_text())
    r.ctx.extend([r.stream.response.output[-1]], r.work, scan=False)
    return cut


async def _sample_calls(
    r: Rollout, step: CallStep, pacer: Pacer
) -> list[tuple[int, FunctionCallSpec | WebSearchSpec]] | None:
    """Stream every function call of the step; open (but do not run) each web search."""
    out: list[tuple[int, FunctionCallSpec | WebSearchSpec]] = []
    for spec in step.calls:
        index = r.stream.next_output_index
        if isinstance(spec, WebSearchSpec):
            await r.send(r.stream.begin_web_search(new_id("ws")))
            out.append((index, spec))
            continue
        await r.send(r.stream.begin_call(new_id("fc"), new_id("call"), spec.name))
        delta = functools.partial(r.stream.arguments_delta, index)
        cut = await _stream_tokens(r, spec.arguments, pacer, delta)
        if cut:
            return None
        await r.send(r.stream.end_call(index, spec.arguments))
        out.append((index, spec))
    return out


async def _run_web_search(r: Rollout, env: LoopEnv, index: int, spec: WebSearchSpec) -> None:
    action = await env.web_search.call(spec.query, r.work)
    await r.send(r.stream.end_web_search(index, action))
    item = r.stream.response.output[index]
    assert isinstance(item, WebSearchCall)
    r.ctx.extend([item], r.work, scan=False)
