"""Clients that vanish mid-stream, mid-suspension and mid-append: nothing leaks (the live gauges
return to their baseline) and billing still completes for every response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import rollout
from rollout.model.profiles import InferenceProfile
from support.frames import append_frame
from support.rawws import JsonWs, json_ws
from support.servers import serving
from support.tools import BARE_EXEC_TOOL, output
from support.waits import wait_for

SLOW = InferenceProfile(name="slow", decode_tps=200)


def create(shape: str = "append", text: str = "go") -> dict[str, Any]:
    return {
        "type": "response.create",
        "model": "m",
        "input": text,
        "tools": [BARE_EXEC_TOOL],
        "shape": shape,
    }


async def until(ws: JsonWs, kind: str) -> dict[str, Any]:
    return (await ws.until(lambda f: f["type"] == kind))[-1]


async def mid_stream(ws: JsonWs) -> None:
    await ws.send(create("chain", "stream please"))
    await until(ws, "response.output_text.delta")


async def mid_suspension(ws: JsonWs) -> None:
    await ws.send(create())
    await until(ws, "response.done")


async def mid_append(ws: JsonWs) -> None:
    await ws.send(create())
    pause = await until(ws, "response.done")
    [call] = pause["pending_calls"]
    await ws.send(append_frame(pause["response_id"], [output(call["call_id"], "ok")]))
    await until(ws, "response.output_text.delta")  # resumed and streaming again


async def test_nothing_leaks_when_clients_vanish() -> None:
    long = rollout.text(" ".join(["word"] * 400))
    engine = rollout.Engine(
        policy=rollout.ScriptedPolicy(
            lambda ctx: (
                long
                if ctx.model_turns >= 1 or "stream" in ctx.last_user_text
                else rollout.call("exec", {"cmd": "ls"})
            )
        ),
        inference=SLOW,
    )
    scenarios: list[Callable[[JsonWs], Awaitable[None]]] = [mid_stream, mid_suspension, mid_append]
    async with serving(engine, append_grace_s=0.2) as server:
        live = server.service.live
        for scenario in scenarios:
            async with json_ws(server.ws_url) as ws:
                await scenario(ws)
            # The client is gone (closed mid-way); wait for the server to settle.
            await wait_for(
                lambda: not (engine.stats.ws_connections or engine.running or live.rollouts)
            )
        stats = engine.stats
        await wait_for(lambda: stats.billed >= stats.responses >= 3)
    assert engine.stats.live_rollouts == 0
    assert engine.stats.ws_connections == 0
    assert not engine.running and not live.rollouts
    assert engine.stats.responses == engine.stats.billed == 3
