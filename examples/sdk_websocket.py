"""The official `openai` SDK over WebSocket: `client.responses.connect()` and a chained tool loop.

One connection carries the whole rollout. Each turn is a `response.create` frame; after a tool
call the next create sends only the tool outputs with `previous_response_id`, and the server
continues from its connection-local cache, so `store: false` is enough (docs/websocket.md).
Events arrive as the SDK's typed event objects, the same as over SSE.

    python examples/sdk_websocket.py                                     # its own server
    python examples/sdk_websocket.py --base-url http://127.0.0.1:8000/v1   # `rollout serve`
"""

from __future__ import annotations

from typing import Any

from _sdk import main, tool_output
from openai import OpenAI

import rollout

MODEL = "sim-1"
TOOLS = [rollout.EXEC_TOOL]  # a shell tool; rollout.run_exec stands in for running it
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def run(base_url: str) -> None:
    # The SDK derives the WebSocket URL (ws://.../v1/responses) from the HTTP base URL.
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    with client.responses.connect() as conn:
        request: dict[str, Any] = {"input": "Fix the failing test."}
        turn = 0
        while True:
            turn += 1
            conn.response.create(model=MODEL, tools=TOOLS, store=False, **request)
            text, calls, final = "", [], None
            for event in conn:  # this turn's events, up to its terminal event
                if event.type == "response.output_text.delta":
                    text += event.delta
                elif event.type == "response.output_item.done":
                    if event.item.type == "function_call":
                        calls.append(event.item)
                elif event.type == "error":
                    raise RuntimeError(event.error.message)
                elif event.type in TERMINAL:
                    final = event.response
                    break
            assert final is not None and final.status == "completed", final
            print(f"turn {turn}: {final.id}: {len(calls)} tool call(s)")
            if not calls:
                break
            outputs = [tool_output(c.call_id, c.name, c.arguments) for c in calls]
            request = {"input": outputs, "previous_response_id": final.id}
    print(f"answer after {turn} turns on one connection: {text}")


if __name__ == "__main__":
    main(run, "The official SDK over WebSocket.")
