# One agent runner that drives a rollout in any of its modes with the same agent code:
# http-full, http-chain, ws-full, ws-chain, ws-append, http-append, ws-inject (a multi-agent
# response that waits for `response.inject`), and ws-steer (ws-chain steered once, timed from the
# steer to the first token of the response that takes it).
from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import attrs
import orjson

from protocol import codec
from protocol.events import (
    TERMINAL_TYPES,
    ArgumentsDeltaEvent,
    Event,
    OutputItemEvent,
    PauseEvent,
    ResponseEvent,
    SteerAcceptedEvent,
    SteerPendingEvent,
    TextDeltaEvent,
)
from protocol.items import FunctionCall, FunctionCallOutput
from protocol.validate import MULTI_AGENT_BETA
from rollout.client.http import HttpClient
from rollout.client.ws import WsClient, connect_ws

MODES = ("http-full", "http-chain", "ws-full", "ws-chain", "ws-append", "http-append", "ws-inject")
#: Modes that change the rollout itself (so they are not in the default comparison).
SCENARIOS = ("ws-steer",)
#: Modes whose whole rollout is one response.
ONE_RESPONSE = frozenset({"ws-append", "http-append", "ws-inject"})
STEER_TEXT = "Also keep the change small."


Tool = Callable[[dict[str, Any]], Any]


@attrs.define
class Turn:
    """What one stretch of events produced: tool calls to run, or the final answer."""

    response_id: str
    calls: list[FunctionCall]
    output: list[dict[str, Any]]  # the output items, as JSON, in order
    text: str
    status: str  # paused | waiting (a multi-agent call) | completed | incomplete | failed
    first_token_s: float | None
    events: int
    seconds: float  # from sending the request to its pause or terminal event
    reason: str | None = None  # why it ended incomplete


async def collect(events: AsyncIterator[Event], started: float, *, at_call: bool = False) -> Turn:
    """One stretch of events: to the pause or terminal event (or, with `at_call`, to the first
    function call done: a multi-agent response waits there without a pause event)."""
    async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
        return await _collect(stream, started, at_call)


async def _collect(events: AsyncIterator[Event], started: float, at_call: bool) -> Turn:
    response_id = ""
    calls: list[FunctionCall] = []
    output: list[dict[str, Any]] = []
    text: list[str] = []
    first: float | None = None
    n = 0
    status = "paused"
    reason = None
    async for event in events:
        n += 1
        if isinstance(event, ResponseEvent):
            response_id = event.response.id
            if event.type in TERMINAL_TYPES:
                status = event.response.status
                details = event.response.incomplete_details
                reason = details.reason if details is not None else None
        elif isinstance(event, PauseEvent):
            response_id = event.response_id
        elif isinstance(event, TextDeltaEvent):
            text.append(event.delta)
            if first is None:
                first = time.perf_counter() - started
        elif isinstance(event, OutputItemEvent) and event.type == "response.output_item.done":
            output.append(codec.to_json(event.item))
            if isinstance(event.item, FunctionCall):
                calls.append(event.item)
                if first is None:
                    first = time.perf_counter() - started
                if at_call:
                    status = "waiting"
                    break
    seconds = time.perf_counter() - started
    return Turn(response_id, calls, output, "".join(text), status, first, n, seconds, reason)


@attrs.define
class AgentResult:
    mode: str
    text: str
    calls: list[tuple[str, str]]  # (name, arguments) in order
    turns: list[Turn]
    seconds: float
    client_seconds: float
    bytes_sent: int
    bytes_received: int
    spans: list[tuple[str, float, float]]  # client-side (name, start, end), perf_counter
    steer_to_first_token_s: float | None = None  # ws-steer: steer sent -> its response's token

    @property
    def response_ids(self) -> list[str]:
        return [t.response_id for t in self.turns]


async def _run_tool(tools: Mapping[str, Tool], call: FunctionCall) -> dict[str, Any]:
    fn = tools.get(call.name)
    if fn is None:
        output: Any = f"error: no tool named {call.name}"
    else:
        output = fn(orjson.loads(call.arguments or "{}"))
        if inspect.isawaitable(output):
            output = await output
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    return codec.to_json(FunctionCallOutput(call_id=call.call_id, output=text)) | {"id": None}


def _clean(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


async def run_agent(
    mode: str,
    base_url: str,
    request: Mapping[str, Any],
    tools: Mapping[str, Tool],
    *,
    api_key: str | None = None,
    after_turn: Callable[[Turn], Awaitable[None]] | None = None,
) -> AgentResult:
    """Run one rollout in `mode` against the server at `base_url` (`http://host:port/v1`).

    `request` is the create body of the first turn (model, input, tools, instructions, ...);
    `tools` maps each function tool's name to a local function of its parsed arguments (sync or
    async; a non-string result is sent as JSON). The agent code is the same in every mode; only
    how a turn is sent differs. `after_turn`, if given, is awaited after each turn is collected,
    before the client runs its tools (a measurement can read the server there).
    """
    if mode not in MODES + SCENARIOS:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES + SCENARIOS)}")
    transport, shape = mode.split("-")
    body = dict(request)
    body.pop("stream", None)
    body["store"] = mode == "http-chain"
    if shape == "append":
        body["shape"] = "append"
    if shape == "inject":
        body["multi_agent"] = {"enabled": True}
    steer = Steer() if shape == "steer" else None
    turns: list[Turn] = []
    spans: list[tuple[str, float, float]] = []
    client_seconds = 0.0
    start = time.perf_counter()
    async with AsyncExitStack() as stack:
        if transport == "ws":
            ws_url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
            betas = [MULTI_AGENT_BETA] if shape == "inject" else []
            client: WsClient | HttpClient = await stack.enter_async_context(
                connect_ws(ws_url, api_key, betas)
            )
        else:
            client = await stack.enter_async_context(HttpClient(base_url, api_key))
        history: list[dict[str, Any]] = _initial_input(body.get("input"))
        t = time.perf_counter()
        events = await client.create(body)
        if steer is not None:
            assert isinstance(client, WsClient)
            events = steer.watch(client, events)
        turn = await collect(events, t, at_call=shape == "inject")
        if steer is not None:
            assert isinstance(client, WsClient)
            turn = await steer.successor(client, turn, turns, spans, t)
        turns.append(turn)
        spans.append(("turn", t, t + turn.seconds))
        if after_turn is not None:
            await after_turn(turn)
        while turn.calls and turn.status in ("paused", "completed", "waiting"):
            c = time.perf_counter()
            outputs = [await _run_tool(tools, call) for call in turn.calls]
            done = time.perf_counter()
            client_seconds += done - c
            spans.append(("client tools", c, done))
            outputs = [_clean(o) for o in outputs]
            t = time.perf_counter()
            if shape == "append":
                turn = await collect(await client.append(turn.response_id, outputs), t)
            elif shape == "inject":
                assert isinstance(client, WsClient)
                await client.inject(turn.response_id, outputs)
                turn = await collect(client.events(), t, at_call=True)
                turn.response_id = turn.response_id or turns[-1].response_id
            elif shape in ("chain", "steer"):
                nxt = {**body, "input": outputs, "previous_response_id": turn.response_id}
                events = await client.create(nxt)
                if steer is not None:
                    assert isinstance(client, WsClient)
                    events = steer.watch(client, events)
                turn = await collect(events, t)
                if steer is not None:
                    assert isinstance(client, WsClient)
                    turn = await steer.successor(client, turn, turns, spans, t)
            else:
                history += [_clean(o) for o in turn.output] + outputs
                turn = await collect(await client.create({**body, "input": history}), t)
            turns.append(turn)
            spans.append(("turn", t, t + turn.seconds))
            if after_turn is not None:
                await after_turn(turn)
    calls = [(c.name, c.arguments) for t in turns for c in t.calls]
    return AgentResult(
        mode=mode,
        text=turns[-1].text,
        calls=calls,
        turns=turns,
        seconds=time.perf_counter() - start,
        client_seconds=client_seconds,
        bytes_sent=client.bytes_sent,
        bytes_received=client.bytes_received,
        spans=spans,
        steer_to_first_token_s=steer.seconds if steer is not None else None,
    )


@attrs.define
class Steer:
    """ws-steer: one `response.steer` right after the first response is created; the time from
    sending it to the first token of the response that takes it (the automatic successor, or the
    continuation the client sends after `response.steer.pending`)."""

    sent: float | None = None
    accepted: bool = False
    pending: bool = False  # response.steer.pending: the client's continuation takes it
    committed: bool = False
    seconds: float | None = None

    async def watch(self, client: WsClient, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        async for event in events:
            if isinstance(event, ResponseEvent) and event.type == "response.created":
                if self.sent is None:
                    self.sent = time.perf_counter()
                    await client.steer(event.response.id, STEER_TEXT)
                elif self.accepted and not self.committed:
                    self.committed = True  # the successor's response.created: the commit point
            elif isinstance(event, SteerAcceptedEvent):
                self.accepted = True
            elif isinstance(event, SteerPendingEvent):
                self.pending = True
            elif self.committed and self.seconds is None and _is_token(event):
                assert self.sent is not None
                self.seconds = time.perf_counter() - self.sent
            yield event

    async def successor(
        self,
        client: WsClient,
        turn: Turn,
        turns: list[Turn],
        spans: list[tuple[str, float, float]],
        started: float,
    ) -> Turn:
        """After a turn that ended with steering accepted and nothing for the client to do (it
        was steered, or completed with no call), the automatic successor follows on the lane."""
        while self.accepted and not self.committed and not self.pending and not turn.calls:
            if turn.status not in ("completed", "incomplete"):
                break
            turns.append(turn)
            spans.append(("turn", started, started + turn.seconds))
            started = time.perf_counter()
            turn = await collect(self.watch(client, client.events()), started)
        return turn


def _is_token(event: Event) -> bool:
    return isinstance(event, TextDeltaEvent | ArgumentsDeltaEvent)


def _initial_input(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value)
