# One agent runner that drives a rollout in any of six modes with the same agent code:
# http-full, http-chain, ws-full, ws-chain, ws-append, http-append.
from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import attrs
import orjson

from protocol import codec
from protocol.events import (
    TERMINAL_TYPES,
    Event,
    OutputItemEvent,
    PauseEvent,
    ResponseEvent,
    TextDeltaEvent,
)
from protocol.items import FunctionCall, FunctionCallOutput
from rollout.client.http import HttpClient
from rollout.client.ws import WsClient, connect_ws

MODES = ("http-full", "http-chain", "ws-full", "ws-chain", "ws-append", "http-append")


Tool = Callable[[dict[str, Any]], Any]


@attrs.define
class Turn:
    """What one stretch of events produced: tool calls to run, or the final answer."""

    response_id: str
    calls: list[FunctionCall]
    output: list[dict[str, Any]]  # the output items, as JSON, in order
    text: str
    status: str  # paused | completed | incomplete | failed
    first_token_s: float | None
    events: int
    seconds: float  # from sending the request to its pause or terminal event


async def collect(events: AsyncIterator[Event], started: float) -> Turn:
    response_id = ""
    calls: list[FunctionCall] = []
    output: list[dict[str, Any]] = []
    text: list[str] = []
    first: float | None = None
    n = 0
    status = "paused"
    async for event in events:
        n += 1
        if isinstance(event, ResponseEvent):
            response_id = event.response.id
            if event.type in TERMINAL_TYPES:
                status = event.response.status
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
    seconds = time.perf_counter() - started
    return Turn(response_id, calls, output, "".join(text), status, first, n, seconds)


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
) -> AgentResult:
    """Run one rollout in `mode` against the server at `base_url` (`http://host:port/v1`).

    `request` is the create body of the first turn (model, input, tools, instructions, ...);
    `tools` maps each function tool's name to a local function of its parsed arguments (sync or
    async; a non-string result is sent as JSON). The agent code is the same in every mode; only
    how a turn is sent differs.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    transport, shape = mode.split("-")
    body = dict(request)
    body.pop("stream", None)
    body["store"] = mode == "http-chain"
    if shape == "append":
        body["shape"] = "append"
    turns: list[Turn] = []
    spans: list[tuple[str, float, float]] = []
    client_seconds = 0.0
    start = time.perf_counter()
    async with AsyncExitStack() as stack:
        if transport == "ws":
            ws_url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
            client: WsClient | HttpClient = await stack.enter_async_context(
                connect_ws(ws_url, api_key)
            )
        else:
            client = await stack.enter_async_context(HttpClient(base_url, api_key))
        history: list[dict[str, Any]] = _initial_input(body.get("input"))
        t = time.perf_counter()
        turn = await collect(await client.create(body), t)
        turns.append(turn)
        spans.append(("turn", t, t + turn.seconds))
        while turn.calls and turn.status in ("paused", "completed"):
            c = time.perf_counter()
            outputs = [await _run_tool(tools, call) for call in turn.calls]
            done = time.perf_counter()
            client_seconds += done - c
            spans.append(("client tools", c, done))
            outputs = [_clean(o) for o in outputs]
            t = time.perf_counter()
            if shape == "append":
                turn = await collect(await client.append(turn.response_id, outputs), t)
            elif shape == "chain":
                nxt = {**body, "input": outputs, "previous_response_id": turn.response_id}
                turn = await collect(await client.create(nxt), t)
            else:
                history += [_clean(o) for o in turn.output] + outputs
                turn = await collect(await client.create({**body, "input": history}), t)
            turns.append(turn)
            spans.append(("turn", t, t + turn.seconds))
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
    )


def _initial_input(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value)
