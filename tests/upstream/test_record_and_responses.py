# Two more ways to use a real engine. Record: `--record` while serving from an upstream writes a
# recording whose model replays offline (`--script DIR`: no engine needed), so a rig gets its
# fixtures from real inference. The Responses upstream: rollout forwards each step to an engine
# that speaks /v1/responses (statelessly) and adds the shapes the engine lacks.
from __future__ import annotations

from pathlib import Path
from typing import Any

from _aimock import Aimock
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.model.recorded import script_from_recording
from rollout.testing.thread import ServerThread

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": name,
        "parameters": {"type": "object", "properties": {arg: {"type": "string"}}},
    }
    for name, arg in (("get_weather", "city"), ("get_time", "tz"))
]
RESULTS = {"get_weather": "sunny, 24C", "get_time": "12:00"}


def sdk(server: ServerThread) -> OpenAI:
    return OpenAI(base_url=server.http_base_url, api_key="test", max_retries=0, timeout=30)


def conversation(client: OpenAI, question: str) -> list[Any]:
    """A tool-using conversation over HTTP: the question, then each call's output, to the end."""
    seen = []
    response = client.responses.create(model="m", input=question, tools=TOOLS)
    while True:
        seen.append(
            [
                (item.type, getattr(item, "name", None), getattr(item, "arguments", None))
                for item in response.output
            ]
            + [response.output_text]
        )
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return seen
        response = client.responses.create(
            model="m",
            previous_response_id=response.id,
            input=[
                {"type": "function_call_output", "call_id": c.call_id, "output": RESULTS[c.name]}
                for c in calls
            ],
            tools=TOOLS,
        )


def test_a_recording_of_real_inference_replays_offline(
    upstream: Any, aimock: Aimock, tmp_path: Path
) -> None:
    question = "weather in Paris, for the record"
    live = conversation(sdk(upstream(record=tmp_path)), question)
    assert len(live) == 2 and live[1][-1].startswith("It is sunny")
    sent = len(aimock.requests_for(question))
    with ServerThread(Engine(policy=script_from_recording(tmp_path))) as offline:
        replayed = conversation(sdk(offline), question)
    assert replayed == live
    assert len(aimock.requests_for(question)) == sent  # the replay never asked the engine


def test_a_responses_upstream(upstream: Any, aimock: Aimock) -> None:
    client = sdk(upstream(api="responses"))
    question = "weather in Paris, over the Responses API"
    first = client.responses.create(model="m", input=question, tools=TOOLS)
    assert first.output_text == "Let me check."
    calls = [i for i in first.output if i.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", '{"city":"Paris","units":"metric"}'),
        ("get_time", '{"tz":"Europe/Paris"}'),
    ]
    assert first.usage is not None and first.usage.input_tokens == 1234
    with client.responses.connect() as conn:  # WebSocket mode, which the engine lacks
        conn.response.create(
            model="m",
            tools=TOOLS,
            store=False,
            previous_response_id=first.id,
            input=[
                {"type": "function_call_output", "call_id": c.call_id, "output": RESULTS[c.name]}
                for c in calls
            ],
        )
        for event in conn:
            if event.type == "error":
                raise AssertionError(event.model_dump())
            if event.type == "response.completed":
                second = event.response
                break
    assert second.output_text.startswith("It is sunny in Paris")
    last = aimock.requests_for(question)[-1]
    assert last["path"] == "/v1/responses"
    # aimock journals a Responses request in its chat form: the whole conversation was sent.
    roles = [m["role"] for m in last["body"]["messages"]]
    assert roles[0] == "user" and "assistant" in roles and roles[-2:] == ["tool", "tool"]
