"""Print every frame of one append-shape rollout over WebSocket: frames in (>) and out (<).

Runs an in-process server with a scripted model (two parallel tool calls, then an answer) and a
raw WebSocket client, so you can see the protocol exactly as it crosses the wire:

    python examples/append_transcript.py
"""

from __future__ import annotations

import functools

import orjson
import trio
from trio_websocket import open_websocket_url

import rollout
from rollout import CallStep, FunctionCallSpec

TOOLS = [
    {
        "type": "function",
        "name": "read_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]
SCRIPT = [
    CallStep(
        calls=(
            FunctionCallSpec(name="read_file", arguments='{"path":"setup.py"}'),
            FunctionCallSpec(name="read_file", arguments='{"path":"README.md"}'),
        )
    ),
    rollout.text("Both files are short."),
]


def show(direction: str, frame: dict[str, object]) -> None:
    print(direction, orjson.dumps(frame).decode())


async def main() -> None:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy(SCRIPT))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine))
        async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            create = {
                "type": "response.create",
                "shape": "append",
                "model": "sim-1",
                "store": False,
                "input": "What do setup.py and README.md say?",
                "tools": TOOLS,
            }
            show(">", create)
            await ws.send_message(orjson.dumps(create).decode())
            while True:
                frame = orjson.loads(await ws.get_message())
                show("<", frame)
                if frame["type"] == "response.done":
                    for call in reversed(frame["pending_calls"]):  # out of order on purpose
                        append = {
                            "type": "response.append",
                            "response_id": frame["response_id"],
                            "input": [
                                {
                                    "type": "function_call_output",
                                    "call_id": call["call_id"],
                                    "output": f"(contents of the file, call {call['name']})",
                                }
                            ],
                        }
                        show(">", append)
                        await ws.send_message(orjson.dumps(append).decode())
                if frame["type"] in ("response.completed", "response.incomplete", "error"):
                    break
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
