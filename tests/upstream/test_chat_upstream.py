# rollout in front of an OpenAI-compatible server it did not write (aimock, fixtures.json), driven
# by the official SDK over HTTP + SSE, WebSocket chaining and the append shape: the upstream's
# tool calls and text arrive intact, its usage (cached tokens included) passes through, finish
# reasons and errors map to the documented codes, and a client that hangs up aborts the
# upstream's request.
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from _aimock import Aimock, Relay
from openai import OpenAI

from rollout.testing.thread import ServerThread
from support.sdk import ended

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": name,
        "description": f"{name} of a place",
        "parameters": {"type": "object", "properties": {arg: {"type": "string"}}},
    }
    for name, arg in (("get_weather", "city"), ("get_time", "tz"))
]
EXEC: list[Any] = [
    {
        "type": "function",
        "name": "exec",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]
WEATHER_ARGS = '{"city":"Paris","units":"metric"}'
TIME_ARGS = '{"tz":"Europe/Paris"}'
ANSWER = "It is sunny in Paris, 24 degrees, and it is noon there."
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def sdk(server: ServerThread, retries: int = 0) -> OpenAI:
    return OpenAI(base_url=server.http_base_url, api_key="test", max_retries=retries, timeout=30)


def outputs(response: Any, result: dict[str, str]) -> list[dict[str, str]]:
    return [
        {"type": "function_call_output", "call_id": item.call_id, "output": result[item.name]}
        for item in response.output
        if item.type == "function_call"
    ]


RESULTS = {"get_weather": "sunny, 24C", "get_time": "12:00"}


def test_sse_stream_carries_the_upstreams_text_and_tool_calls(upstream: Any) -> None:
    client = sdk(upstream())
    deltas: dict[str, list[str]] = {"text": [], "args": []}
    done: list[Any] = []
    final = None
    with client.responses.stream(model="m", input="weather in Paris?", tools=TOOLS) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas["text"].append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                deltas["args"].append(event.delta)
            elif event.type == "response.output_item.done":
                done.append(event.item)
            elif event.type in TERMINAL:
                final = event.response
    assert final is not None and final.status == "completed"
    assert "".join(deltas["text"]) == "Let me check."
    assert "".join(deltas["args"]) == WEATHER_ARGS + TIME_ARGS
    message, weather, time = final.output
    assert message.type == "message" and final.output_text == "Let me check."
    assert (weather.name, weather.arguments) == ("get_weather", WEATHER_ARGS)
    assert (time.name, time.arguments) == ("get_time", TIME_ARGS)
    assert weather.call_id.startswith("call_") and weather.call_id != time.call_id
    assert [i.type for i in done] == ["message", "function_call", "function_call"]
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (1234, 17)


def test_http_chain_renders_calls_and_outputs_for_the_upstream(
    upstream: Any, aimock: Aimock
) -> None:
    client = sdk(upstream())
    first = client.responses.create(model="m", input="weather in Paris, chained", tools=TOOLS)
    second = client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=outputs(first, RESULTS),
        tools=TOOLS,
    )
    assert second.status == "completed" and second.output_text == ANSWER
    assert second.usage is not None and second.usage.input_tokens == 1300
    sent = aimock.requests_for("weather in Paris, chained")[-1]["body"]
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "tool", "tool"]
    assistant = sent["messages"][1]
    assert assistant["content"] == "Let me check."
    calls = {c["function"]["name"]: c for c in assistant["tool_calls"]}
    assert calls["get_weather"]["function"]["arguments"] == WEATHER_ARGS
    tool_ids = [m["tool_call_id"] for m in sent["messages"][2:]]
    assert tool_ids == [c["id"] for c in assistant["tool_calls"]]
    assert [m["content"] for m in sent["messages"][2:]] == ["sunny, 24C", "12:00"]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert {t["function"]["name"] for t in sent["tools"]} == {"get_weather", "get_time"}


def test_websocket_chaining(upstream: Any, aimock: Aimock) -> None:
    server = upstream()
    client = sdk(server)
    texts: list[str] = []
    with client.responses.connect() as conn:
        request: dict[str, Any] = {"input": "weather in Paris, over a WebSocket"}
        for _ in range(2):
            conn.response.create(model="m", tools=TOOLS, store=False, **request)
            for event in conn:
                if (response := ended(event)) is not None:
                    break
            assert response.status == "completed"
            texts.append(response.output_text)
            request = {"previous_response_id": response.id, "input": outputs(response, RESULTS)}
    assert texts == ["Let me check.", ANSWER]
    assert len(aimock.requests_for("weather in Paris, over a WebSocket")) == 2
    assert server.engine.stats.totals.counts["routing"].calls == 1  # one route per connection


def append_create(text: str) -> dict[str, Any]:
    """A `response.create` frame of the append shape with the exec tool, for the input `text`."""
    frame = {"type": "response.create", "model": "m", "input": text, "tools": EXEC}
    return {**frame, "shape": "append", "store": False}


def test_append_shape_over_a_websocket(upstream: Any, aimock: Aimock) -> None:
    client = sdk(upstream())
    pauses, ids = 0, set()
    final = None
    with client.responses.connect() as conn:
        conn.send(append_create("run the tests, append shape"))
        calls: dict[str, Any] = {}
        for event in conn:
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                calls[event.item.call_id] = event.item
            elif event.type == "response.done":
                pause = event.model_dump()
                pauses += 1
                ids.add(pause["response_id"])
                (pending,) = pause["pending_calls"]
                assert json.loads(calls[pending["call_id"]].arguments) == {"cmd": "pytest -q"}
                output = {"type": "function_call_output", "call_id": pending["call_id"]}
                conn.send(
                    {
                        "type": "response.append",
                        "response_id": pause["response_id"],
                        "input": [{**output, "output": "42 passed"}],
                    }
                )
            elif (final := ended(event)) is not None:
                break
    assert final is not None and final.status == "completed"
    assert pauses == 1 and ids == {final.id}
    assert final.output_text == "All green: 42 passed."
    assert [i.type for i in final.output] == ["function_call", "message"]
    sent = aimock.requests_for("run the tests, append shape")
    assert len(sent) == 2
    assert [m["role"] for m in sent[-1]["body"]["messages"]] == ["user", "assistant", "tool"]


def test_usage_and_cached_tokens_pass_through(upstream: Any) -> None:
    # aimock reports prompt_tokens_details on its OpenRouter-shaped chat completions.
    client = sdk(upstream(path="/api/v1"))
    response = client.responses.create(model="m", input="answer from the cache")
    assert response.output_text == "Served from the prefix cache."
    assert response.usage is not None
    assert response.usage.input_tokens == 2048
    assert response.usage.input_tokens_details.cached_tokens == 1536
    assert response.usage.output_tokens == 6
    assert response.usage.total_tokens == 2054


def test_length_is_an_incomplete_response(upstream: Any) -> None:
    client = sdk(upstream())
    response = client.responses.create(model="m", input="cut me short", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    (message,) = response.output
    assert message.status == "incomplete"


def test_max_output_tokens_reaches_the_upstream(upstream: Any, aimock: Aimock) -> None:
    client = sdk(upstream())
    client.responses.create(model="m", input="cut me short, budget", max_output_tokens=17)
    (sent,) = aimock.requests_for("cut me short, budget")
    assert sent["body"]["max_tokens"] == 17


def test_an_upstream_429_is_a_retryable_429(upstream: Any, aimock: Aimock) -> None:
    client = sdk(upstream(), retries=1)
    with pytest.raises(openai.RateLimitError) as caught:
        client.responses.create(model="m", input="rate limit me, please")
    error = caught.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == "1"
    assert error.body is not None and error.body["code"] == "rate_limit_exceeded"  # type: ignore[index]
    assert len(aimock.requests_for("rate limit me, please")) == 2  # the SDK retried through it


def test_an_upstream_429_over_a_websocket_is_an_error_event(upstream: Any) -> None:
    client = sdk(upstream())
    with client.responses.connect() as conn:
        conn.response.create(model="m", input="rate limit me, over a socket")
        event = next(iter(conn))
    assert event.type == "error"
    payload = event.model_dump()
    assert payload["status"] == 429
    assert payload["error"]["code"] == "rate_limit_exceeded"


def test_an_upstream_5xx_is_server_error(upstream: Any) -> None:
    client = sdk(upstream())
    with pytest.raises(openai.InternalServerError) as caught:
        client.responses.create(model="m", input="crash the engine")
    assert caught.value.status_code == 500
    assert caught.value.body["code"] == "server_error"  # type: ignore[index]


def test_an_engine_silent_past_the_first_byte_deadline_is_a_retryable_500(
    upstream: Any,
) -> None:
    """The engine takes the request and says nothing (a 20 s time to first token) past the
    first-byte deadline: nothing has been sent to the client, so it gets a 500 it can retry,
    not a stream that fails."""
    client = sdk(upstream(first_byte_timeout_s=0.5))
    with (
        pytest.raises(openai.InternalServerError) as caught,
        client.responses.stream(model="m", input="never answer in time") as events,
    ):
        for _ in events:
            pass
    assert caught.value.status_code == 500
    assert caught.value.body["code"] == "server_error"  # type: ignore[index]
    assert "--upstream-first-byte-timeout" in caught.value.body["message"]  # type: ignore[index]


@pytest.fixture
def relay(aimock: Aimock) -> Iterator[Relay]:
    host, port = aimock.url.removeprefix("http://").split(":")
    r = Relay((host, int(port)))
    yield r
    r.close()


def test_a_client_disconnect_aborts_the_upstream_request(upstream: Any, relay: Relay) -> None:
    server = upstream(url=relay.url)
    client = sdk(server)
    with client.responses.stream(model="m", input="tell a long story") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                break  # the first token is here: hang up
    assert relay.client_closed_first.wait(10), "rollout kept reading the upstream's stream"
    assert relay.done == []  # the upstream never got to finish its reply
    model = server.engine.model
    assert model is not None and model.aborted == 1  # type: ignore[attr-defined]


def test_a_cancel_aborts_the_upstream_request(upstream: Any, relay: Relay) -> None:
    server = upstream(url=relay.url)
    client = sdk(server)
    final = None
    with client.responses.connect() as conn:
        conn.send(append_create("tell a long story, then stop"))
        rid = ""
        for event in conn:
            if event.type == "response.created":
                rid = event.response.id
            elif event.type == "response.output_text.delta" and final is None:
                conn.send({"type": "response.cancel", "response_id": rid})  # mid-stream
                final = "sent"
            elif event.type in TERMINAL:
                final = event.response
                break
    assert final is not None and final.status == "cancelled"
    assert final.incomplete_details is None
    assert relay.client_closed_first.wait(10), "rollout kept reading the upstream's stream"
    assert relay.done == []
