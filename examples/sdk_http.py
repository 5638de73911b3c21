"""The official `openai` SDK against rollout over HTTP: a create, a stream, and a tool loop.

Nothing here is specific to rollout except the base URL: the same code runs against any
Responses server. The tool loop chains turns with `previous_response_id`, sending only the new
tool outputs (the server keeps the conversation: `store` is true by default). The model is the
default simulated one that `rollout serve` runs: it calls the offered tools three times (with
arguments valid for their schemas), then answers with filler text.

    python examples/sdk_http.py                                     # its own in-process server
    python examples/sdk_http.py --base-url http://127.0.0.1:8000/v1   # against `rollout serve`
"""

from __future__ import annotations

from _sdk import main, tool_output
from openai import OpenAI

import rollout

MODEL = "sim-1"  # any name: the simulated model answers to every model name
TOOLS = [rollout.EXEC_TOOL]  # a shell tool; rollout.run_exec stands in for running it


def run(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0)

    # 1. One create: the whole response as one JSON object.
    response = client.responses.create(model=MODEL, input="Say hello.")
    print(f"create: {response.id} {response.status}: {response.output_text}")
    print(f"        usage: {response.usage.input_tokens} in, {response.usage.output_tokens} out")

    # 2. The same request streamed as server-sent events.
    print("stream: ", end="")
    for event in client.responses.create(model=MODEL, input="Say hello.", stream=True):
        if event.type == "response.output_text.delta":
            print(event.delta, end="", flush=True)
        elif event.type == "response.completed":
            print(f"\n        ({event.sequence_number + 1} events, {event.response.status})")

    # 3. A tool loop: run each function call locally, send back only the outputs, chained by
    #    previous_response_id, until the model answers without calling a tool.
    response = client.responses.create(model=MODEL, input="Fix the failing test.", tools=TOOLS)
    turns = 1
    while calls := [item for item in response.output if item.type == "function_call"]:
        outputs = [tool_output(c.call_id, c.name, c.arguments, "tool:   ") for c in calls]
        response = client.responses.create(
            model=MODEL, previous_response_id=response.id, input=outputs, tools=TOOLS
        )
        turns += 1
    print(f"answer after {turns} turns: {response.output_text}")


if __name__ == "__main__":
    main(run, "The official SDK over HTTP.")
