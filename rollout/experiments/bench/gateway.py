# `rollout bench gateway`: rollout in front of a real engine's API, beside agentic-api's Rust
# gateway (the pinned optional peer of gwpeers.py) in front of the same upstream: one aimock
# (npm `@copilotkit/aimock`, installed by `npm ci` in tests/upstream) with fixed answers. The
# two gateways take turns, round by round (the order alternating), through the same raw-socket
# clients (gwclients.py); every figure is rollout's median over agentic-api's, with the spread
# of the per-round ratios (`.low`, `.high`). What is measured:
# - first token: seconds to the first text delta of a short answer, SSE on a fresh connection
#   and on a warm WebSocket (p50 of every sample);
# - gateway CPU (the process's own clock) per short streamed response and per 5,000-delta one;
# - tool round trip: from the function call's output sent (chained by previous_response_id) to
#   the answer's end, over HTTP (stored) and over WebSocket;
# - gateway CPU per turn with a 50,000-token history: resent whole over HTTP, chained to a
#   stored response over HTTP, chained over WebSocket (the connection's cache).
# Skipped, with the reason, when Node, aimock or agentic-api is absent.
from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import orjson
import trio

from rollout.conversation import tokens as tok
from rollout.experiments.bench import peer
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.gwclients import Turn, WsSession, sse_turn
from rollout.experiments.bench.gwpeers import (
    Gateway,
    agentic_gateway,
    peer_missing,
    rollout_gateway,
)
from rollout.experiments.workloads.catalog import WORKLOADS

SHORT, LONG, TOOL, NEXT = "short answer", "long answer", "run the tool", "next turn"
LONG_DELTAS = 5000
HISTORY_TOKENS = 50_000
TOOLS = [
    {
        "type": "function",
        "name": "exec",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]


def fixtures() -> dict[str, object]:
    """aimock's answers: "ok" to the short prompt and to each history turn, 5,000 five-character
    deltas to the long one, a function call and then "done" to the tool prompt."""
    return {
        "fixtures": [
            {"match": {"userMessage": SHORT}, "response": {"content": "ok"}},
            {"match": {"userMessage": NEXT}, "response": {"content": "ok"}},
            {
                "match": {"userMessage": LONG},
                "response": {"content": " ".join(["word"] * LONG_DELTAS)},
                "chunkSize": 5,
            },
            {
                "match": {"userMessage": TOOL, "hasToolResult": False},
                "response": {"toolCalls": [{"name": "exec", "arguments": {"cmd": "ls"}}]},
            },
            {
                "match": {"userMessage": TOOL, "hasToolResult": True},
                "response": {"content": "done"},
            },
        ]
    }


def history(tokens: int = HISTORY_TOKENS) -> list[dict[str, Any]]:
    """A coding session's messages, from its start, until they hold `tokens` tokens."""
    items, count = [], 0
    for item in WORKLOADS["long"].build(0).request["input"]:
        items.append(item)
        count += tok.count(item["content"])
        if count >= tokens:
            return items
    raise ValueError(f"the long workload holds fewer than {tokens} tokens")


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


Send = Callable[[dict[str, Any]], Turn]
Samples = dict[str, dict[str, list[float]]]  # figure -> gateway -> samples
Rounds = dict[str, dict[str, list[float]]]  # figure -> gateway -> one median per round


class _Round:
    """One gateway's measurements in one round."""

    def __init__(self, gw: Gateway, shorts: int, longs: int, trips: int, turns: int) -> None:
        self.gw, self.shorts, self.longs, self.trips, self.turns = gw, shorts, longs, trips, turns
        self.out: dict[str, list[float]] = {}

    def note(self, what: str, value: float) -> None:
        self.out.setdefault(what, []).append(value)

    def cpu_of(self, what: str, n: int, run: Callable[[], object]) -> None:
        before = self.gw.cpu()
        for _ in range(n):
            run()
        self.note(what, (self.gw.cpu() - before) / n)

    def run(self, ws: WsSession, old: list[dict[str, Any]]) -> dict[str, list[float]]:
        port = self.gw.port
        short = {"model": "m", "input": SHORT, "store": False}
        self.cpu_of("cpu.short_response.sse", self.shorts, lambda: self._first("sse", port, short))
        self.cpu_of("cpu.short_response.ws", self.shorts, lambda: self._first("ws", ws, short))
        long = {"model": "m", "input": LONG, "store": False}
        self.cpu_of("cpu.long_response.sse", self.longs, lambda: sse_turn(port, long))
        self.cpu_of("cpu.long_response.ws", self.longs, lambda: ws.turn(long))
        for _ in range(self.trips):
            self._trip_http(port)
            self._trip_ws(ws)
        full = {"model": "m", "input": [*old, _user(NEXT)], "store": False}
        self.cpu_of("cpu.turn_50k.full_resend", self.turns, lambda: sse_turn(port, full))
        self._chain("cpu.turn_50k.stored_chain", old, lambda b: sse_turn(port, b, keep=True), True)
        self._chain("cpu.turn_50k.ws_chain", old, ws.turn, False)
        return self.out

    def _first(self, transport: str, to: Any, body: dict[str, Any]) -> None:
        turn = sse_turn(to, body) if transport == "sse" else to.turn(body)
        self.note(f"first_token.{transport}", turn.first_delta_s)

    def _trip_http(self, port: int) -> None:
        body = {"model": "m", "input": TOOL, "tools": TOOLS, "store": True}
        call = sse_turn(port, body, keep=True)
        answer = sse_turn(port, self._output(call), keep=True)
        _completed(answer)
        self.note("tool_round_trip.http", answer.seconds)

    def _trip_ws(self, ws: WsSession) -> None:
        call = ws.turn({"model": "m", "input": TOOL, "tools": TOOLS, "store": False})
        answer = ws.turn({**self._output(call), "store": False})
        _completed(answer)
        self.note("tool_round_trip.ws", answer.seconds)

    def _output(self, call: Turn) -> dict[str, Any]:
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "a.py b.py"}
        return {
            "model": "m",
            "previous_response_id": call.response["id"],
            "input": [output],
            "tools": TOOLS,
            "store": True,
        }

    def _chain(self, what: str, old: list[dict[str, Any]], send: Send, store: bool) -> None:
        """A response holding the whole history (not counted), then `turns` turns chained to
        it one after another, each adding one user message: CPU per chained turn."""
        head = _completed(send({"model": "m", "input": [*old, _user(NEXT)], "store": store}))
        previous = str(head.response["id"])
        before = self.gw.cpu()
        for _ in range(self.turns):
            body = {"model": "m", "previous_response_id": previous, "input": [_user(NEXT)]}
            previous = str(_completed(send({**body, "store": store})).response["id"])
        self.note(what, (self.gw.cpu() - before) / self.turns)


def _completed(turn: Turn) -> Turn:
    if turn.response.get("status") != "completed":
        raise RuntimeError(f"a turn did not complete: {str(turn.last)[:300]}")
    return turn


def _measure(gateways: list[Gateway], rounds: int, **sizes: int) -> tuple[Samples, Rounds]:
    """Every round, the gateways alternating; round 0 warms up and is not counted."""
    old = history()
    samples: Samples = {}
    per_round: Rounds = {}
    sessions = {gw.name: WsSession(gw.port) for gw in gateways}
    try:
        for i in range(rounds + 1):
            for gw in gateways if i % 2 else gateways[::-1]:
                out = _Round(gw, **sizes).run(sessions[gw.name], old)
                if not i:
                    continue
                for what, values in out.items():
                    samples.setdefault(what, {}).setdefault(gw.name, []).extend(values)
                    per_round.setdefault(what, {}).setdefault(gw.name, []).append(
                        statistics.median(values)
                    )
    finally:
        for session in sessions.values():
            session.close()
    return samples, per_round


#: figure -> (unit, its scale from seconds, the target ratio)
FIGURES: dict[str, tuple[str, float, float]] = {
    "first_token.sse": ("ms", 1e3, 1.0),
    "first_token.ws": ("ms", 1e3, 1.0),
    "tool_round_trip.http": ("ms", 1e3, 1.0),
    "tool_round_trip.ws": ("ms", 1e3, 1.0),
    "cpu.short_response.sse": ("ms", 1e3, 1.5),
    "cpu.short_response.ws": ("ms", 1e3, 1.5),
    "cpu.long_response.sse": ("ms", 1e3, 1.5),
    "cpu.long_response.ws": ("ms", 1e3, 1.5),
    "cpu.turn_50k.full_resend": ("ms", 1e3, 1.5),
    "cpu.turn_50k.stored_chain": ("ms", 1e3, 1.0),
    "cpu.turn_50k.ws_chain": ("ms", 1e3, 1.0),
}


def figures(samples: Samples, per_round: Rounds) -> list[Figure]:
    out = []
    for what, (unit, scale, target) in FIGURES.items():
        ours = statistics.median(samples[what]["rollout"])
        theirs = statistics.median(samples[what]["agentic-api"])
        rounds = zip(per_round[what]["rollout"], per_round[what]["agentic-api"], strict=True)
        ratios = [a / b for a, b in rounds]
        ratio = ours / theirs
        name = f"gateway.{what}"
        out.append(Figure(f"{name}.rollout", ours * scale, unit))
        out.append(Figure(f"{name}.agentic_api", theirs * scale, unit))
        out.append(Figure(f"{name}.ratio", ratio, "x", f"<={target:g}", ratio <= target))
        out.append(Figure(f"{name}.ratio.low", min(ratios), "x"))
        out.append(Figure(f"{name}.ratio.high", max(ratios), "x"))
    return out


async def gateway(
    report: Report,
    rounds: int = 5,
    shorts: int = 20,
    longs: int = 2,
    trips: int = 8,
    turns: int = 4,
) -> None:
    reason = peer.missing() or peer_missing()
    if reason is not None:
        print(f"rollout bench gateway: skipped: {reason}", file=sys.stderr, flush=True)
        return
    sizes = {"shorts": shorts, "longs": longs, "trips": trips, "turns": turns}
    with tempfile.NamedTemporaryFile("wb", suffix=".json") as file:
        file.write(orjson.dumps(fixtures()))
        file.flush()
        async with peer.aimock(file.name) as port:
            upstream = f"http://127.0.0.1:{port}/v1"

            def measured() -> tuple[Samples, Rounds]:  # (all of it blocks: off the loop)
                with rollout_gateway(upstream) as ours, agentic_gateway(upstream) as theirs:
                    return _measure([ours, theirs], rounds, **sizes)

            got = await trio.to_thread.run_sync(measured)
    for figure in figures(*got):
        report(figure)
