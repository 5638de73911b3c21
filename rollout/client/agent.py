# One agent runner that drives a rollout in any of its modes (rollout.client.modes) with the same
# agent code: only how each turn is sent differs, by the mode's transport and shape (the whole
# history, a chain, an append, or an inject into a multi-agent response that waits for
# `response.inject`); a steered mode (ws-steer) is a ws-chain steered once, timed from the steer
# to the first token of the response that takes it.
from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
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
from rollout.client.modes import Mode, mode_named
from rollout.client.ws import WsClient, connect_ws

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
    m = mode_named(mode)
    body = _first_body(m, request)
    start = time.perf_counter()
    async with _connect(m, base_url, api_key) as client:
        run = _Rollout(m, client, body, tools, after_turn)
        await run.run()
    return run.result(time.perf_counter() - start)


def _first_body(mode: Mode, request: Mapping[str, Any]) -> dict[str, Any]:
    """The first turn's create body: the request, with what the mode asks of the server."""
    body = dict(request)
    body.pop("stream", None)
    body["store"] = mode.store
    if mode.shape == "append":
        body["shape"] = "append"
    if mode.shape == "inject":
        body["multi_agent"] = {"enabled": True}
    return body


def _connect(
    mode: Mode, base_url: str, api_key: str | None
) -> AbstractAsyncContextManager[WsClient | HttpClient]:
    """A connection of the mode's transport (a multi-agent WebSocket asks for the beta)."""
    if mode.transport == "http":
        return HttpClient(base_url, api_key)
    ws_url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
    betas = [MULTI_AGENT_BETA] if mode.shape == "inject" else []
    return connect_ws(ws_url, api_key, betas)


@attrs.define(eq=False)
class _Rollout:
    """One rollout as it runs on its connection: each turn sent the mode's way, collected, and
    followed by the client's tools, until a turn leaves nothing for the client to do."""

    mode: Mode
    client: WsClient | HttpClient
    body: dict[str, Any]  # the first turn's
    tools: Mapping[str, Tool]
    after_turn: Callable[[Turn], Awaitable[None]] | None
    history: list[dict[str, Any]] = attrs.field(init=False)  # a `full` rollout's input so far
    steer: Steer | None = attrs.field(init=False)
    turns: list[Turn] = attrs.field(factory=list)
    spans: list[tuple[str, float, float]] = attrs.field(factory=list)
    client_seconds: float = 0.0

    def __attrs_post_init__(self) -> None:
        self.history = _initial_input(self.body.get("input"))
        self.steer = Steer() if self.mode.steer else None

    async def run(self) -> None:
        t = time.perf_counter()
        turn = await self._create(self.body, t)
        await self._record(turn, t)
        while turn.calls and turn.status in ("paused", "completed", "waiting"):
            outputs = await self._run_tools(turn)
            t = time.perf_counter()
            turn = await self._next(turn, outputs, t)
            await self._record(turn, t)

    def result(self, seconds: float) -> AgentResult:
        return AgentResult(
            mode=self.mode.name,
            text=self.turns[-1].text,
            calls=[(c.name, c.arguments) for t in self.turns for c in t.calls],
            turns=self.turns,
            seconds=seconds,
            client_seconds=self.client_seconds,
            bytes_sent=self.client.bytes_sent,
            bytes_received=self.client.bytes_received,
            spans=self.spans,
            steer_to_first_token_s=self.steer.seconds if self.steer is not None else None,
        )

    async def _record(self, turn: Turn, started: float) -> None:
        self.turns.append(turn)
        self.spans.append(("turn", started, started + turn.seconds))
        if self.after_turn is not None:
            await self.after_turn(turn)

    async def _run_tools(self, turn: Turn) -> list[dict[str, Any]]:
        """The turn's calls run by the client's tools; their outputs, as input items."""
        c = time.perf_counter()
        outputs = [await _run_tool(self.tools, call) for call in turn.calls]
        done = time.perf_counter()
        self.client_seconds += done - c
        self.spans.append(("client tools", c, done))
        return [_clean(o) for o in outputs]

    async def _create(self, body: Mapping[str, Any], started: float) -> Turn:
        """One create request and its stretch of events (in a steered mode: steered once, and
        followed to the response that takes the steer)."""
        events = await self.client.create(body)
        if self.steer is None:
            return await collect(events, started, at_call=self.mode.at_call)
        ws = self._ws()
        turn = await collect(self.steer.watch(ws, events), started)
        return await self.steer.successor(ws, turn, self.turns, self.spans, started)

    async def _next(self, turn: Turn, outputs: list[dict[str, Any]], started: float) -> Turn:
        """The turn after `turn`, sent with the tools' outputs the way the mode's shape says."""
        shape = self.mode.shape
        if shape == "append":
            return await collect(await self.client.append(turn.response_id, outputs), started)
        if shape == "inject":
            ws = self._ws()
            await ws.inject(turn.response_id, outputs)
            nxt = await collect(ws.events(), started, at_call=True)
            nxt.response_id = nxt.response_id or turn.response_id
            return nxt
        if shape == "chain":
            chained = {**self.body, "input": outputs, "previous_response_id": turn.response_id}
            return await self._create(chained, started)
        self.history += [_clean(o) for o in turn.output] + outputs
        return await self._create({**self.body, "input": self.history}, started)

    def _ws(self) -> WsClient:
        assert isinstance(self.client, WsClient)
        return self.client


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
