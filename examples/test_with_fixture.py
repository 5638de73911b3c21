"""Testing agent code against rollout with the `rollout_server` pytest fixture.

Installing rollout registers a pytest plugin, so a test only asks for `rollout_server`: a fresh
server for that test, with a scripted model (`script`, `policy`), its speed (`profile`), fault
injection (`fault`) and everything the client sent (`requests`). Sync tests get a server in a
background thread; trio tests get one in the test's own trio loop, so trio's mock clock drives
the simulated model too. See docs/test-rigs.md.

    pytest examples/test_with_fixture.py        # the trio tests need pytest-trio
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
import trio
from openai import OpenAI

import rollout
from rollout import MODES, run_agent

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "exec",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]


def agent(client: OpenAI, task: str) -> str:
    """The code under test: a small agent loop on the official SDK (chained turns)."""
    response = client.responses.create(model="sim-1", input=task, tools=TOOLS)
    while calls := [item for item in response.output if item.type == "function_call"]:
        outputs = [
            {"type": "function_call_output", "call_id": c.call_id, "output": "exit 0"}
            for c in calls
        ]
        response = client.responses.create(
            model="sim-1", previous_response_id=response.id, input=outputs, tools=TOOLS
        )
    if response.status != "completed":
        raise RuntimeError(f"{response.status}: {response.error}")
    return response.output_text


def sdk(server: Any) -> OpenAI:
    return OpenAI(base_url=server.http_base_url, api_key="unused", max_retries=0, timeout=10)


# -- sync tests: the server runs in a background thread ------------------------------------------


def test_the_agent_runs_what_the_model_calls(rollout_server):
    # Steps as objects or as their data form (the same format as `rollout serve --script`).
    rollout_server.script([rollout.call("exec", {"cmd": "pytest -q"}), {"text": "All green."}])
    assert agent(sdk(rollout_server), "Fix the tests.") == "All green."

    # Capture: every request the server received, parsed, in order.
    first, second = rollout_server.requests
    assert first.kind == second.kind == "POST /v1/responses"
    assert first.body["input"] == "Fix the tests."
    assert second.body["previous_response_id"]
    assert second.body["input"][0]["type"] == "function_call_output"


def test_a_model_that_reads_the_context(rollout_server):
    rollout_server.policy(lambda ctx: rollout.text(f"You said: {ctx.last_user_text}"))
    assert agent(sdk(rollout_server), "hello") == "You said: hello"


def test_an_injected_server_error(rollout_server):
    rollout_server.script([{"text": "Recovered."}])
    rollout_server.fault(error="server_error")  # the next response only: an HTTP 500
    with pytest.raises(openai.InternalServerError):
        agent(sdk(rollout_server), "Try.")
    assert agent(sdk(rollout_server), "Try again.") == "Recovered."


def test_a_model_failure_inside_the_response(rollout_server):
    rollout_server.script([{"text": "Recovered."}])
    rollout_server.fault(error="model_error")  # the response starts, then fails
    with pytest.raises(RuntimeError, match="failed"):
        agent(sdk(rollout_server), "Try.")
    assert agent(sdk(rollout_server), "Try again.") == "Recovered."


def test_the_sdk_over_websocket(rollout_server):
    rollout_server.script([{"text": "Over a WebSocket."}])
    with sdk(rollout_server).responses.connect() as conn:
        conn.response.create(model="sim-1", input="hi", store=False)
        events = []
        for event in conn:
            events.append(event.type)
            if event.type == "response.completed":
                assert event.response.output_text == "Over a WebSocket."
                break
    assert events[0] == "response.created"
    assert [r.kind for r in rollout_server.requests] == ["response.create"]


# -- trio tests: the server runs in the test's trio loop -----------------------------------------


@pytest.mark.trio
async def test_the_trio_client_in_every_mode(rollout_server):
    rollout_server.script([rollout.call("exec", {"cmd": "make"}), {"text": "Built."}])
    request = {"model": "sim-1", "input": "Build it.", "tools": TOOLS}
    ran = []

    def exec_tool(args: dict[str, Any]) -> str:
        ran.append(args["cmd"])
        return "ok"

    for mode in MODES:
        result = await run_agent(mode, rollout_server.http_base_url, request, {"exec": exec_tool})
        assert result.text == "Built.", mode
    assert ran == ["make"] * len(MODES)


@pytest.mark.trio
async def test_the_mock_clock_drives_the_model(rollout_server, autojump_clock):
    rollout_server.profile("65tps")  # 130 tokens at 65 tokens/s: two seconds of virtual time
    rollout_server.script([{"text": " ".join(["word"] * 130)}])
    start = trio.current_time()
    request = {"model": "sim-1", "input": "Talk."}
    result = await run_agent("http-full", rollout_server.http_base_url, request, {})
    assert result.text.startswith("word word")
    assert trio.current_time() - start > 2.0  # no real seconds went by


@pytest.mark.trio
async def test_the_sync_sdk_from_a_trio_test(rollout_server):
    rollout_server.script([{"text": "From a thread."}])
    client = sdk(rollout_server)
    response = await trio.to_thread.run_sync(
        lambda: client.responses.create(model="sim-1", input="hi")
    )
    assert response.output_text == "From a thread."
