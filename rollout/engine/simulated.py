# The simulated model as a model of the sampling loop: each step is the policy's (held to what the
# request allows: rollout.model.choice), its prompt prefilled against the prefix cache and its
# tokens released at the inference profile's pace, as pieces (rollout.model.pieces). It also
# enforces the output budget (a step that reaches it ends with `Finish("length")`, as a real
# engine's `max_tokens` does) and accounts the ideal inference time the profile dictates.
from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs
import trio

from rollout.conversation import tokens as tok
from rollout.conversation.calls import (
    AgentCallSpec,
    ClientCallSpec,
    CustomCallSpec,
    FunctionCallSpec,
    HostedSpec,
)
from rollout.engine.loop import Pieces, Rollout
from rollout.model import pieces as p
from rollout.model.accel.shared import Seat, SharedEngine
from rollout.model.choice import constrain
from rollout.model.inference import Paced, Prefill, PrefixCache, pacer_of, prefill, token_deltas
from rollout.model.policy import CallStep, ErrorStep, Policy, Step, TextStep
from rollout.model.profiles import InferenceProfile
from rollout.model.reasoning import think

REASONING_CHUNK = 16  # reasoning tokens decoded between budget checks


@attrs.define(eq=False)
class SimulatedModel:
    policy: Policy
    profile: InferenceProfile
    cache: PrefixCache
    accelerator: SharedEngine | None = None  # paces every step instead of `profile` (--engine)

    async def open(self, r: Rollout) -> Pieces | None:
        del r
        return None  # nothing can refuse a request before its first event here

    async def sample(self, r: Rollout) -> Pieces:
        step = self.step(r)
        if step.delay_s > 0:
            yield p.Wait(step.delay_s)
        with r.work.stage("inference") as stage:
            seat: Seat | None = None
            pacer: Paced
            if self.accelerator is None:
                pf = await prefill(r.ctx, r.route.engine, self.cache, self.profile, r.cache_options)
                pacer = pacer_of(self.profile)
            else:
                pf, seat = await _seated(self.accelerator, r, planned_tokens(r, step))
                pacer = seat
            stage.tokens = pf.prompt_tokens
            before = r.output_tokens
            try:
                yield p.Prefilled(pf.prompt_tokens, pf.cached_tokens)
                if r.reasoning is None and _all_due(r, pacer):
                    # (the common steps, streamed without generators of their own)
                    if isinstance(step, TextStep):
                        yield p.MessageStart(refusal=step.refusal, citations=step.citations)
                        if deltas := token_deltas(step.text):
                            yield p.Text(deltas)
                        return
                    if isinstance(step, CallStep):
                        for piece in _due_calls(step):
                            yield piece
                        return
                async for piece in self.output(r, step, pacer):
                    yield piece
            finally:
                decoded = r.output_tokens - before
                if seat is None:
                    ideal = pf.seconds + self.profile.decode_seconds(decoded)
                else:  # (on the shared engine: the time the step took there)
                    seat.close()
                    ideal = trio.current_time() - seat.started + pf.seconds
                r.work.ideal_inference_s += ideal
                if r.work.keep_spans:
                    r.work.steps.append((pf.prompt_tokens, ideal))

    def step(self, r: Rollout) -> Step:
        """The policy's next step, held to what the request allows."""
        return constrain(self.policy.next_step(r.ctx), r.ctx)

    async def output(self, r: Rollout, step: Step, pacer: Paced) -> Pieces:
        """What `step` streams after its prompt is in, paced by `pacer`."""
        if isinstance(step, ErrorStep):
            yield p.Failed(step.code, step.message)
            return
        if r.reasoning is not None:
            async for piece in self._reason(r, pacer, getattr(step, "reasoning_tokens", None)):
                yield piece
                if isinstance(piece, p.Finish):
                    return
        if isinstance(step, TextStep):
            yield p.MessageStart(refusal=step.refusal, citations=step.citations)
            async for piece in _decode(r, step.text, pacer, p.Text):
                yield piece
            return
        async for piece in _calls(r, step, pacer):
            yield piece

    async def _reason(self, r: Rollout, pacer: Paced, tokens: int | None = None) -> Pieces:
        """A reasoning item before the step's output: its tokens (the plan's, or the step's own
        when it says) decoded at the profile's pace (billed as reasoning tokens), then its
        summary, if asked for. If the output budget runs out while reasoning, the item ends there
        (and the response incomplete, as the real API's does)."""
        plan = r.reasoning
        assert plan is not None
        total = plan.tokens if tokens is None else tokens
        hidden, summary = think(r.ctx, total)
        yield p.ReasoningStart()
        spent = 0
        while spent < total:
            n = min(REASONING_CHUNK, total - spent)
            left = r.budget_left
            cut = left is not None and left < n
            n = min(n, left) if left is not None else n
            await pacer.token(n)
            spent += n
            yield p.Thought(n)
            if cut:
                yield p.Finish("length")
                return
        if plan.summary:
            yield p.Summary(token_deltas(summary))
        yield p.ReasoningEnd(hidden)


async def _calls(r: Rollout, step: CallStep, pacer: Paced) -> Pieces:
    """The step's commentary, then every function call, then its hosted tools' calls (hosted
    calls come last in a step: the loop samples a new step after running them)."""
    for part in _call_parts(step):
        if isinstance(part, tuple):
            text, make = part
            async for piece in _decode(r, text, pacer, make):
                yield piece
                if isinstance(piece, p.Finish):
                    return
        else:
            yield part


def _due_calls(step: CallStep) -> Iterator[p.Piece]:
    """`_calls` when every token is due at once (no pace, no output budget): the same pieces,
    without an async generator for each text."""
    for part in _call_parts(step):
        if isinstance(part, tuple):
            text, make = part
            if deltas := token_deltas(text):
                yield make(deltas)
        else:
            yield part


def _call_parts(step: CallStep) -> Iterator[p.Piece | tuple[str, Callable[[p.Deltas], p.Piece]]]:
    """What a step of calls streams: pieces, and texts to decode (with the piece each batch of
    their deltas makes)."""
    if step.text:
        yield p.MessageStart()
        yield step.text, p.Text
    for spec in sorted(step.calls, key=lambda spec: isinstance(spec, HostedSpec)):
        if isinstance(spec, HostedSpec):
            yield p.Hosted(spec)
        elif isinstance(spec, ClientCallSpec):
            yield p.ClientCall(spec)
        elif isinstance(spec, AgentCallSpec):
            yield p.AgentCall(spec)
        elif isinstance(spec, CustomCallSpec):
            yield p.CustomStart(spec.name)
            yield spec.input, p.Args
        else:
            yield p.CallStart(spec.name)
            yield spec.arguments, p.Args


def planned_tokens(r: Rollout, step: Step) -> int:
    """The tokens `step` decodes (reasoning, text, arguments) within the output budget: what a
    request on the shared engine declares it will generate."""
    if isinstance(step, ErrorStep):
        return 0
    n = 0
    if r.reasoning is not None:
        own = getattr(step, "reasoning_tokens", None)
        n += r.reasoning.tokens if own is None else own
    n += tok.count(step.text) if step.text else 0
    if isinstance(step, CallStep):
        for spec in step.calls:
            if isinstance(spec, CustomCallSpec):
                n += tok.count(spec.input)
            elif isinstance(spec, FunctionCallSpec):
                n += tok.count(spec.arguments)
    left = r.budget_left
    return n if left is None else max(0, min(n, left))


async def _seated(engine: SharedEngine, r: Rollout, output: int) -> tuple[Prefill, Seat]:
    """Queue the step on the shared engine until its prefill is done."""
    start = trio.current_time()
    previous = r.request.previous_response_id if r.request is not None else None
    seat = await engine.seat(r, r.ctx.token_count, r.ctx.block_hashes, output, previous)
    pf = Prefill(seat.prompt_tokens, seat.cached_tokens, trio.current_time() - start)
    seat.started = trio.current_time()
    return pf, seat


def _all_due(r: Rollout, pacer: Paced) -> bool:
    """Every token is due at once: no declared decode speed and no output budget."""
    return pacer.unpaced and r.budget_left is None


async def _decode(
    r: Rollout, text: str, pacer: Paced, make: Callable[[p.Deltas], p.Piece]
) -> Pieces:
    """`text` as a model streams it, one delta per token, at the decode pace and within the
    output budget (`Finish("length")` where it runs out). The deltas due by now leave as one
    piece; the pacer sleeps only to deadlines more than a millisecond away."""
    left = r.budget_left
    deltas = token_deltas(text)
    if _all_due(r, pacer):  # all of it is due now
        if deltas:
            yield make(deltas)
        return
    start = 0  # the batch not yet released: deltas start to i
    now = trio.current_time()
    for i in range(len(deltas)):
        tokens = deltas.count(i)
        if left is not None:
            if left < tokens:
                if start < i:
                    yield make(deltas.cut(start, i))
                yield p.Finish("length")
                return
            left -= tokens
        due = pacer.due(tokens, now)
        if due is not None:
            if start < i:
                yield make(deltas.cut(start, i))
                start = i
            await pacer.sleep(due)
            now = trio.current_time()
    if start < len(deltas):
        yield make(deltas.cut(start, len(deltas)))


__all__ = ["REASONING_CHUNK", "SimulatedModel"]
