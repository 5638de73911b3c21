# One scripted 10-call rollout driven by `rollout.client.run_agent` in all seven modes, each
# against a fresh in-process server: the agent sees the same calls and the same answer in every
# mode, and the work counters show what the append shape saves (append-protocol.md, "What the
# shape must show"): one route, one bill, every input token scanned once and every token
# tokenized once, where http-full repeats the whole history on every turn.
from __future__ import annotations

from typing import Any

import orjson
import pytest

from protocol.items import Message, OutputText
from rollout.client import MODES, ONE_RESPONSE, AgentResult, run_agent
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from support.accounting import decode_items, decode_tools
from support.servers import serving
from support.tools import EXEC_TOOL, FINAL, INSTRUCTIONS, MODEL, cmd, tool_script
from support.waits import wait_for

CALLS = 10
REQUEST: dict[str, Any] = {
    "model": MODEL,
    "input": "Fix the failing tests.",
    "instructions": INSTRUCTIONS,
    "tools": [EXEC_TOOL],
}


def exec_tool(args: dict[str, Any]) -> str:
    return f"$ {args['cmd']}\nexit 0: 3 passed"


async def run_mode(mode: str) -> tuple[AgentResult, Engine]:
    async with serving(tool_script(CALLS)) as server:
        result = await run_agent(mode, server.http_base_url, REQUEST, {"exec": exec_tool})
        expected = 1 if mode in ONE_RESPONSE else CALLS + 1
        # WebSocket billing runs in the background: wait until every response is recorded.
        await wait_for(lambda: server.engine.stats.responses >= expected)
        await wait_for(lambda: server.engine.stats.billed >= expected)
        return result, server.engine


def counts(engine: Engine) -> dict[str, Any]:
    return engine.stats.totals.counts


def reference(result: AgentResult) -> tuple[Context, Context]:
    """Two fresh Contexts built from the final conversation, item by item as the append shape
    receives them: one holding only what the client sent (scanned), one holding everything
    (tokenized)."""
    user = decode_items([{"role": "user", "content": REQUEST["input"]}])
    sent = Context()
    sent.set_header(INSTRUCTIONS, decode_tools([EXEC_TOOL]), Work())
    sent.extend(user, Work())
    whole = Context()
    whole.set_header(INSTRUCTIONS, decode_tools([EXEC_TOOL]), Work())
    whole.extend(user, Work())
    for turn in result.turns:
        for c in turn.calls:
            args = orjson.loads(c.arguments)
            out = decode_items(
                [{"type": "function_call_output", "call_id": c.call_id, "output": exec_tool(args)}]
            )
            whole.extend([c], Work())
            whole.extend(out, Work())
            sent.extend(out, Work())
    answer = Message(role="assistant", content=(OutputText(text=result.text),))
    whole.extend([answer], Work())
    return sent, whole


EXPECTED_CALLS = [("exec", f'{{"cmd":"{cmd(i)}"}}') for i in range(CALLS)]
# Routes and bills per mode: HTTP routes per request, WebSocket once per connection; the chain
# and full shapes bill every response, the append shape the one rollout.
ROUTES = {"http-full": 11, "http-chain": 11, "ws-full": 1, "ws-chain": 1, "ws-append": 1}
ROUTES["http-append"] = ROUTES["ws-inject"] = 1
BILLS = {m: 1 if m in ONE_RESPONSE else CALLS + 1 for m in MODES}


@pytest.mark.parametrize("mode", MODES)
async def test_mode_gives_the_same_rollout(mode: str) -> None:
    result, engine = await run_mode(mode)
    assert result.text == FINAL
    assert result.calls == EXPECTED_CALLS
    assert result.turns[-1].status == "completed"
    assert len(result.turns) == CALLS + 1
    ids = set(result.response_ids)
    assert len(ids) == (1 if mode in ONE_RESPONSE else CALLS + 1)
    assert counts(engine)["routing"].calls == ROUTES[mode]
    assert engine.stats.billed == BILLS[mode]
    assert counts(engine)["billing"].calls == BILLS[mode]


async def test_append_does_each_piece_of_work_once() -> None:
    runs = {mode: await run_mode(mode) for mode in ("ws-append", "http-append", "http-full")}
    full, full_engine = runs["http-full"]
    f = counts(full_engine)
    assert full.calls == EXPECTED_CALLS
    for mode in ("ws-append", "http-append"):
        result, engine = runs[mode]
        a = counts(engine)
        assert result.calls == EXPECTED_CALLS and result.text == FINAL
        # Routes once, bills once, records one response.
        assert a["routing"].calls == 1, mode
        assert engine.stats.billed == 1, mode
        assert engine.stats.responses == 1, mode
        # Every input token scanned once: header + every client-sent item, each exactly once
        # (the same figure as a fresh Context fed the client's items one by one).
        sent, whole = reference(result)
        assert a["scan"].tokens == sent.scan.tokens_scanned, mode
        assert a["scan"].tokens <= f["scan"].tokens / 5, mode
        # Every token (header, input, model output, tool output) tokenized exactly once.
        assert a["tokenize"].tokens == len(whole.tokens), mode
        # http-full repeats the history every turn: quadratic scan and tokenize figures.
        assert f["scan"].tokens >= 5 * a["scan"].tokens, mode
        assert f["tokenize"].tokens >= 5 * a["tokenize"].tokens, mode
    # and 11 routes and bills.
    assert f["routing"].calls == CALLS + 1
    assert full_engine.stats.billed == CALLS + 1


@pytest.mark.parametrize("mode", ["http-full", "ws-chain", "ws-append"])
async def test_run_agent_calls_after_turn_once_per_turn_in_order(mode: str) -> None:
    seen: list[tuple[str, int]] = []

    async def after(turn: Any) -> None:
        seen.append((turn.status, len(turn.calls)))

    async with serving(tool_script(3)) as server:
        result = await run_agent(
            mode, server.http_base_url, REQUEST, {"exec": exec_tool}, after_turn=after
        )
    assert seen == [(t.status, len(t.calls)) for t in result.turns]
    assert len(seen) == 4 and seen[-1][1] == 0  # three calls, then the answer
