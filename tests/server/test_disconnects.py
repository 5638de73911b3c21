"""Clients that vanish mid-stream, mid-suspension and mid-append: nothing leaks (the live gauges
return to their baseline) and billing still completes for every response."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

import rollout
from rollout.model.profiles import InferenceProfile
from rollout.service.config import ServerConfig
from rollout.service.service import Service

SLOW = InferenceProfile(name="slow", decode_tps=200)
TOOLS = [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]


def create(shape: str = "append", text: str = "go") -> str:
    body = {"type": "response.create", "model": "m", "input": text, "tools": TOOLS, "shape": shape}
    return orjson.dumps(body).decode()


async def until(ws: WebSocketConnection, kind: str) -> dict[str, object]:
    with trio.fail_after(5):
        return await _until(ws, kind)


async def _until(ws: WebSocketConnection, kind: str) -> dict[str, object]:
    while True:
        frame: dict[str, object] = orjson.loads(await ws.get_message())
        if frame["type"] == kind:
            return frame


async def mid_stream(ws: WebSocketConnection) -> None:
    await ws.send_message(create("chain", "stream please"))
    await until(ws, "response.output_text.delta")


async def mid_suspension(ws: WebSocketConnection) -> None:
    await ws.send_message(create())
    await until(ws, "response.done")


async def mid_append(ws: WebSocketConnection) -> None:
    await ws.send_message(create())
    pause = await until(ws, "response.done")
    [call] = pause["pending_calls"]  # type: ignore[misc]
    append = {
        "type": "response.append",
        "response_id": pause["response_id"],
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}],
    }
    await ws.send_message(orjson.dumps(append).decode())
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
    config = ServerConfig(append_grace_s=0.2)
    host = Service(engine, config)
    scenarios: list[Callable[[WebSocketConnection], Awaitable[None]]] = [
        mid_stream,
        mid_suspension,
        mid_append,
    ]
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, service=host))
        for scenario in scenarios:
            async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
                await scenario(ws)
            # The client is gone (closed mid-way); wait for the server to settle.
            with trio.fail_after(5):
                while engine.stats.ws_connections or engine.running or host.live.rollouts:
                    await trio.sleep(0.02)
        with trio.fail_after(5):
            while engine.stats.billed < engine.stats.responses or engine.stats.responses < 3:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    assert engine.stats.live_rollouts == 0
    assert engine.stats.ws_connections == 0
    assert not engine.running and not host.live.rollouts
    assert engine.stats.responses == engine.stats.billed == 3
