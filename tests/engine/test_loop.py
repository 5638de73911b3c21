# The loop's model interface (rollout.engine.loop.Model) with a model that is not the simulated
# one: scripted pieces, as a real engine streams them (deltas that cost no tokens, then the
# engine's usage), through `Engine.prepare` + `Engine.run`. The engine's own call ids, usage
# replacing what the pieces counted, the finish reasons, failures, an early-opened first step,
# and a closed stream when the loop stops early.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from protocol import codec
from protocol.events import Event
from protocol.items import FunctionCall, Message
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.engine.loop import Pieces, Rollout
from rollout.model import pieces as p


@attrs.define
class Played:
    """A model that plays one list of pieces per step and records what happened to them."""

    steps: list[Sequence[p.Piece]]
    early: bool = False
    opened: int = 0
    closed: int = 0  # streams closed before their last piece

    async def open(self, r: Rollout) -> Pieces | None:
        if not self.early:
            return None
        self.opened += 1
        return self.sample(r)

    async def sample(self, r: Rollout) -> Pieces:
        pieces = self.steps.pop(0)
        done = False
        try:
            for piece in pieces:
                yield piece
            done = True
        finally:
            if not done:
                self.closed += 1


async def run(model: Played, body: dict[str, Any] | None = None) -> tuple[Prepared, list[Event]]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    engine = Engine(model=model)
    request = codec.decode_create(body or {"model": "m", "input": "hi"})
    prepared = await engine.prepare(request, Work(), emit)
    await engine.open(prepared)
    await engine.run(prepared, EndResponse())
    return prepared, events


def one(text: str) -> p.Deltas:
    return p.Deltas.unbilled(text)


async def test_text_and_the_engines_usage() -> None:
    model = Played(
        [[p.MessageStart(), p.Text(one("Hel")), p.Text(one("lo")), p.Usage(42, 32, 2), p.Finish()]]
    )
    prepared, events = await run(model)
    response = prepared.rollout.stream.response
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["Hel", "lo"]
    assert response.status == "completed"
    item = response.output[0]
    assert isinstance(item, Message) and item.content[0].text == "Hello"  # type: ignore[union-attr]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (42, 2)
    assert response.usage.input_tokens_details.cached_tokens == 32


async def test_calls_keep_the_engines_call_ids_and_end_the_chain_response() -> None:
    model = Played(
        [
            [
                p.MessageStart(),
                p.Text(one("Checking.")),
                p.CallStart("get_weather", "call_abc"),
                p.Args(one('{"city":')),
                p.Args(one('"Paris"}')),
                p.CallStart("get_time", "call_def"),
                p.Args(one("{}")),
                p.Usage(10, 0, 12),
                p.Finish("stop"),
            ]
        ]
    )
    prepared, _ = await run(model)
    response = prepared.rollout.stream.response
    message, first, second = response.output
    assert isinstance(message, Message)
    assert isinstance(first, FunctionCall) and isinstance(second, FunctionCall)
    assert (first.call_id, first.name, first.arguments) == (
        "call_abc",
        "get_weather",
        '{"city":"Paris"}',
    )
    assert (second.call_id, second.arguments) == ("call_def", "{}")
    assert prepared.rollout.ctx.open_calls == {"call_abc", "call_def"}
    assert response.status == "completed"


async def test_length_cuts_the_open_item_and_ends_incomplete() -> None:
    model = Played([[p.CallStart("f"), p.Args(one('{"a": ')), p.Finish("length")]])
    prepared, _ = await run(model)
    response = prepared.rollout.stream.response
    (call,) = response.output
    assert isinstance(call, FunctionCall) and call.status == "incomplete"
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


async def test_content_filter_ends_incomplete_with_that_reason() -> None:
    model = Played([[p.MessageStart(), p.Text(one("I")), p.Finish("content_filter")]])
    prepared, _ = await run(model)
    response = prepared.rollout.stream.response
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "content_filter"


async def test_a_failure_fails_the_response_and_closes_the_stream() -> None:
    model = Played([[p.Failed("rate_limit_exceeded", "slow down"), p.MessageStart()]])
    prepared, events = await run(model)
    response = prepared.rollout.stream.response
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "rate_limit_exceeded"
    assert events[-1].type == "response.failed"
    assert model.closed == 1


async def test_reasoning_text_stays_hidden_in_the_context() -> None:
    model = Played(
        [
            [
                p.ReasoningStart(),
                p.Thought(0, "think "),
                p.Thought(0, "hard"),
                p.ReasoningEnd(),
                p.MessageStart(),
                p.Text(one("ok")),
                p.Usage(5, 0, 9, 7),
            ]
        ]
    )
    prepared, _ = await run(model)
    r = prepared.rollout
    reasoning = r.stream.response.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary == ()  # type: ignore[union-attr]
    assert r.ctx.hidden[reasoning.id or ""] == "think hard"
    assert r.stream.response.usage is not None
    assert r.stream.response.usage.output_tokens_details.reasoning_tokens == 7


async def test_an_early_opened_step_is_the_first_step() -> None:
    model = Played([[p.MessageStart(), p.Text(one("early"))]], early=True)
    prepared, _ = await run(model)
    assert model.opened == 1
    assert prepared.rollout.stream.response.status == "completed"


async def test_an_early_opened_step_that_never_runs_is_closed() -> None:
    model = Played([[p.MessageStart(), p.Text(one("never"))]], early=True)
    engine = Engine(model=model)

    async def emit(event: Event) -> None:
        del event

    request = codec.decode_create({"model": "m", "input": "hi"})
    prepared = await engine.prepare(request, Work(), emit)
    await engine.open(prepared)
    await engine.discard(prepared)
    assert prepared.rollout.opened is None
    assert model.opened == 1
