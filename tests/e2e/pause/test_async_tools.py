# Async tools (`async: true` on a function tool) in every shape: over HTTP with the official SDK
# (the response does not stop for an async call, a continuation is accepted while its output is
# missing, the output joins the context whenever it arrives on the original call_id) and over
# WebSocket in a multi-agent response (the output injected while the response runs); the real
# API's error texts for unanswered synchronous calls, unknown call ids and `async` on a hosted
# tool.
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from _pause_helpers import BETA, EXEC_TOOL, LOOKUP_TOOL, MODEL, events, output, sdk

from protocol.items import FunctionCallOutput, text_of
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.model.policy import CallStep, ScriptedPolicy, Step, TextStep
from rollout.testing.thread import ServerThread

LOOKUP = FunctionCallSpec(name="lookup", arguments='{"q": "weather"}')
EXEC = FunctionCallSpec(name="exec", arguments='{"cmd": "ls"}')


def lookup_output(ctx: Context) -> str | None:
    """The text of the lookup's output, if it has joined the context."""
    names = ctx.call_names
    for item in ctx.items:
        if isinstance(item, FunctionCallOutput) and names.get(item.call_id) == "lookup":
            return text_of(item.output)
    return None


def policy(first: Step) -> Any:
    """`first`, then (once the lookup's output is in) an answer that quotes it, else a call."""

    def step(ctx: Context) -> Step:
        if ctx.model_turns == 0:
            return first
        found = lookup_output(ctx)
        if found is not None:
            return TextStep(text=f"The lookup said: {found}")
        if "exec" not in ctx.call_names.values():
            return CallStep(calls=(EXEC,))
        return TextStep(text="Still waiting for the lookup.")

    return step


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread(Engine(policy=ScriptedPolicy(policy(CallStep(calls=(LOOKUP,)))))) as s:
        yield s


def test_async_call_over_http_continues_without_its_output(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    tools: Any = [EXEC_TOOL, LOOKUP_TOOL]
    first = client.responses.create(model=MODEL, input="Weather?", tools=tools)
    lookup, exec_call = first.output[0], first.output[1]
    assert lookup.type == "function_call" and lookup.to_dict().get("async") is True
    assert exec_call.name == "exec"  # the model did not wait for the lookup
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[output(exec_call.call_id, "a b c")],  # the lookup's output is still missing
        tools=tools,
    )
    assert second.output_text == "Still waiting for the lookup."
    third = client.responses.create(
        model=MODEL,
        previous_response_id=second.id,
        input=[output(lookup.call_id, "sunny, 21 C")],  # later, on the original call_id
        tools=tools,
    )
    assert third.output_text == "The lookup said: sunny, 21 C"


def test_error_texts_of_the_real_api(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    tools: Any = [EXEC_TOOL, LOOKUP_TOOL]
    first = client.responses.create(model=MODEL, input="Weather?", tools=tools)
    exec_call = first.output[1]
    with pytest.raises(openai.BadRequestError) as missing:
        client.responses.create(
            model=MODEL, previous_response_id=first.id, input="no outputs", tools=tools
        )
    assert missing.value.body["param"] == "input"  # type: ignore[index]
    assert missing.value.body["message"] == (  # type: ignore[index]
        f"No tool output found for function call {exec_call.call_id}."
    )
    with pytest.raises(openai.BadRequestError) as unknown:
        client.responses.create(
            model=MODEL,
            previous_response_id=first.id,
            input=[output(exec_call.call_id, "x"), output("call_nope", "x")],
            tools=tools,
        )
    assert unknown.value.body["message"] == (  # type: ignore[index]
        "No tool call found for function call output with call_id call_nope."
    )
    with pytest.raises(openai.BadRequestError) as hosted:
        client.responses.create(
            model=MODEL,
            input="x",
            tools=[{"type": "web_search", "async": True}],  # type: ignore[list-item]
        )
    assert hosted.value.body["code"] == "unknown_parameter"  # type: ignore[index]
    assert hosted.value.body["param"] == "tools[0].async"  # type: ignore[index]


def test_async_output_injected_while_a_multi_agent_response_runs(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    acks = 0
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        conn.response.create(
            model=MODEL,
            input="Weather?",
            tools=[EXEC_TOOL, LOOKUP_TOOL],  # type: ignore[list-item]
            multi_agent={"enabled": True},
        )
        for event in events(conn):
            if event.type == "response.created":
                rid = event.response.id
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                text = "sunny, 21 C" if event.item.name == "lookup" else "a b c"
                conn.response.inject(response_id=rid, input=[output(event.item.call_id, text)])
            elif event.type == "response.inject.created":
                acks += 1
        final = event.response
        rest = list(events(conn, frozenset({"response.inject.created"}))) if acks < 2 else []
    assert acks + len(rest) == 2
    assert final.status == "completed"
    assert final.output[-1].content[0].text == "The lookup said: sunny, 21 C"
    assert [i.name for i in final.output if i.type == "function_call"] == ["lookup", "exec"]
