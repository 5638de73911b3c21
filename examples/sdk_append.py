"""The append shape through the official `openai` SDK: raw frames over `conn.send`.

In the append shape a whole agent rollout is one response: the model's turn pauses with
`response.done` when it calls client tools, and the client resumes it by appending the outputs
(docs/append.md). The SDK has no methods for this extension, but its WebSocket connection sends
any frame as a plain dict (`conn.send({...})`) and parses every event it receives. The agent
dispatches on `event.type`; the SDK has no class for `response.done`, so its fields are read
with `event.model_dump()`.

    python examples/sdk_append.py                                     # its own server
    python examples/sdk_append.py --base-url http://127.0.0.1:8000/v1   # `rollout serve`
"""

from __future__ import annotations

from typing import Any

from _sdk import main, tool_output
from openai import OpenAI

import rollout

TOOLS = [rollout.EXEC_TOOL]  # a shell tool; rollout.run_exec stands in for running it
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def run(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    arguments: dict[str, tuple[str, str]] = {}  # call_id -> (name, arguments), from the stream
    text = ""
    with client.responses.connect() as conn:
        conn.send(
            {
                "type": "response.create",
                "shape": "append",  # the extension: one response for the whole rollout
                "model": "sim-1",
                "store": False,
                "input": "Fix the failing test.",
                "tools": TOOLS,
            }
        )
        for event in conn:
            if event.type == "response.created":
                print(f"created {event.response.id}")
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                arguments[event.item.call_id] = (event.item.name, event.item.arguments)
            elif event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.done":  # paused: the model waits for these calls
                pause: dict[str, Any] = event.model_dump()
                usage = pause["usage"]
                print(
                    f"paused at event {pause['sequence_number']}: "
                    f"{len(pause['pending_calls'])} pending call(s), "
                    f"{usage['input_tokens']} input tokens so far"
                )
                outputs = []
                for pending in pause["pending_calls"]:  # {"call_id", "name", "item_id"}
                    call_id = pending["call_id"]
                    outputs.append(tool_output(call_id, *arguments[call_id]))
                rid = pause["response_id"]
                conn.send({"type": "response.append", "response_id": rid, "input": outputs})
            elif event.type == "error":  # a refused frame; the rollout stays usable
                raise RuntimeError(event.model_dump())
            elif event.type in TERMINAL:
                response = event.response
                break
    calls = sum(item.type == "function_call" for item in response.output)
    print(f"{response.status}: one response ({response.id}), {calls} tool calls")
    print(f"answer: {text}")


if __name__ == "__main__":
    main(run, "The append shape through the official SDK.")
