"""The trio client's own API: create, append and cancel over both transports, typed events."""

from __future__ import annotations

import functools

import trio

import rollout
from protocol.events import PauseEvent, ResponseEvent, TextDeltaEvent
from rollout.client import HttpClient, collect, connect_ws

TOOLS = [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]
BODY = {"model": "m", "input": "go", "tools": TOOLS, "shape": "append"}


def engine() -> rollout.Engine:
    return rollout.Engine(
        policy=rollout.ScriptedPolicy([rollout.call("exec", {"cmd": "ls"}), rollout.text("done")])
    )


def output(call_id: str) -> dict[str, str]:
    return {"type": "function_call_output", "call_id": call_id, "output": "a b"}


async def test_websocket_create_append_and_typed_events() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine()))
        async with connect_ws(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            events = [e async for e in await ws.create(BODY, lane="l1")]
            assert isinstance(events[0], ResponseEvent) and events[0].type == "response.created"
            pause = events[-1]
            assert isinstance(pause, PauseEvent)
            [pending] = pause.pending_calls
            rest = [
                e async for e in await ws.append(pause.response_id, [output(pending.call_id)], "l1")
            ]
            assert any(isinstance(e, TextDeltaEvent) for e in rest)
            assert rest[-1].type == "response.completed"
            # cancel a second rollout while it is suspended
            second = await collect(await ws.create(BODY), 0)
            await ws.cancel(second.response_id)
            end = [e async for e in ws.events()]
            assert end[-1].type == "response.incomplete"
        nursery.cancel_scope.cancel()


async def test_http_create_append_and_cancel() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine()))
        async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
            turn = await collect(await http.create(BODY), 0)
            assert turn.status == "paused" and turn.calls[0].name == "exec"
            done = await collect(
                await http.append(turn.response_id, [output(turn.calls[0].call_id)]), 0
            )
            assert done.status == "completed" and done.text == "done"
            second = await collect(await http.create(BODY), 0)
            cancelled = await http.cancel(second.response_id)
            assert cancelled["status"] == "incomplete"
            assert cancelled["incomplete_details"]["reason"] == "cancelled"
        nursery.cancel_scope.cancel()
