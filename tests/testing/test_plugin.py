"""The pytest plugin, used the way a test rig uses it: a fresh project whose tests only ask for
the `rollout_server` fixture (the plugin comes from this package's `pytest11` entry point).
The sync SDK from a trio test is examples/test_with_fixture.py's, run by tests/e2e/examples."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

RIG = """
import threading

import pytest
import trio
from openai import OpenAI

import rollout
from rollout.client import HttpClient

TOOLS = [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]


def sdk(server):
    return OpenAI(api_key="test", base_url=server.http_base_url, max_retries=0)


def test_sync_test_with_the_sdk(rollout_server):
    rollout_server.script([rollout.call("exec", {"cmd": "ls"}), {"text": "done"}])
    client = sdk(rollout_server)
    first = client.responses.create(model="m", input="go", tools=TOOLS)
    [call] = [o for o in first.output if o.type == "function_call"]
    assert call.name == "exec" and call.arguments == '{"cmd":"ls"}'
    second = client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "a b"}],
        tools=TOOLS,
    )
    assert second.output_text == "done"
    kinds = [r.kind for r in rollout_server.requests]
    assert kinds == ["POST /v1/responses", "POST /v1/responses"]
    assert rollout_server.requests[1].body["input"][0]["output"] == "a b"
    assert threading.current_thread() is threading.main_thread()


def test_sdk_over_websocket_and_a_fault(rollout_server):
    rollout_server.script([{"text": "hello"}])
    client = sdk(rollout_server)
    rollout_server.fault(error="model_error")
    with client.responses.connect() as conn:
        conn.response.create(model="m", input="hi")
        types = []
        for event in conn:
            types.append(event.type)
            if event.type in ("response.completed", "response.failed"):
                break
    # The model failed inside the stream: an error event, then response.failed.
    assert types[-2:] == ["error", "response.failed"]
    rollout_server.fault(error="server_error")
    with client.responses.connect() as conn:
        conn.response.create(model="m", input="hi")
        event = next(iter(conn))
        assert event.type == "error" and event.status == 500  # refused before it started
    assert client.responses.create(model="m", input="again").output_text == "hello"
    assert rollout_server.requests[0].kind == "response.create"


def test_strict_by_default_lenient_on_request(rollout_server):
    import openai

    client = sdk(rollout_server)
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="m", input="hi", extra_body={"bogus": 1})
    assert info.value.body["code"] == "unknown_parameter"
    rollout_server.lenient()
    assert client.responses.create(model="m", input="hi", extra_body={"bogus": 1}).output_text


def test_the_sdk_retries_through_injected_rate_limits(rollout_server):
    rollout_server.script([{"text": "through"}])
    rollout_server.fault(error="rate_limit_exceeded")
    rollout_server.fault(error="server_overloaded")
    client = OpenAI(base_url=rollout_server.http_base_url, api_key="unused", max_retries=2)
    assert client.responses.create(model="m", input="hi").output_text == "through"
    # Two refusals (429, then 503), then the response: the SDK sent the request three times.
    assert [r.kind for r in rollout_server.requests] == ["POST /v1/responses"] * 3


def test_asyncio_program_with_the_async_sdk(rollout_server):
    import asyncio

    from openai import AsyncOpenAI

    rollout_server.script([{"text": "from asyncio"}])

    async def main():
        client = AsyncOpenAI(api_key="test", base_url=rollout_server.http_base_url, max_retries=0)
        return (await client.responses.create(model="m", input="hi")).output_text

    assert asyncio.run(main()) == "from asyncio"


async def test_trio_mock_clock_drives_the_simulated_model(rollout_server, autojump_clock):
    rollout_server.profile("65tps")  # 60 tokens at 65 tokens/s: about a second of virtual time
    rollout_server.script([{"text": " ".join(["word"] * 60)}])
    start = trio.current_time()
    async with HttpClient(rollout_server.http_base_url) as http:
        body = {"model": "m", "input": "hi"}
        response = await http.json("POST", "/responses", body)
    assert response["status"] == "completed"
    assert trio.current_time() - start > 0.9  # the clock jumped; no real second went by
"""


def test_the_fixture_works_in_sync_and_trio_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rig=RIG)
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
