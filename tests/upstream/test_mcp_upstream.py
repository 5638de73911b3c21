# MCP tools in front of a real engine (rollout.upstream.hosted), in both dialects, with a real
# MCP server (tests/fixtures/mcp_server.py): rollout lists the server's tools, offers each to
# the engine as a function `mcp__<label>__<tool>` (its input schema as parameters), and runs
# the engine's call of one over MCP as the `mcp_call` the real API streams (validated by the
# SDK's types); a call `require_approval` holds back is an `mcp_approval_request`, and the
# approved call then runs with no step of the engine's, a declined one is shown to the engine
# as a refused call; a `tool_choice` of an MCP tool forces its function; an engine's call of an
# MCP tool never offered fails the response.
from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from rollout.upstream.hosted import DECLINED, mcp_name
from support.breakable import in_front, responses_sse, sse
from support.mcpserver import serve_mcp

ADD = "mcp__calc__add"


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp(tmp_path_factory, "streamable-http", "/mcp")


class CallingEngine:
    """Calls `self.name` with {"a": 2, "b": 3} until it is shown a tool output; then answers
    `Got: <that output>`. Keeps every request it got."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.name = ADD
        self.requests: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any], conn: socket.socket) -> None:
        self.requests.append(body)
        shown = self.shown(body)
        arguments = json.dumps({"a": 2, "b": 3})
        if self.api == "chat":
            if shown is not None:
                chunks = [{"delta": {"content": f"Got: {shown}"}, "finish_reason": "stop"}]
            else:
                call = {"index": 0, "id": "c1", "function": {"name": self.name}}
                args = {"index": 0, "function": {"arguments": arguments}}
                chunks = [
                    {"delta": {"tool_calls": [call]}},
                    {"delta": {"tool_calls": [args]}},
                    {"delta": {}, "finish_reason": "tool_calls"},
                ]
            conn.sendall(sse([{"choices": [{"index": 0, **c}]} for c in chunks], done=True))
            return
        if shown is not None:
            events = [
                {"type": "response.content_part.added", "part": {"type": "output_text"}},
                {"type": "response.output_text.delta", "delta": f"Got: {shown}"},
            ]
        else:
            item = {"type": "function_call", "name": self.name, "call_id": "c1"}
            events = [
                {"type": "response.output_item.added", "item": item},
                {"type": "response.function_call_arguments.delta", "delta": arguments},
                {"type": "response.output_item.done", "item": {**item, "arguments": arguments}},
            ]
        conn.sendall(responses_sse(events))

    def shown(self, body: dict[str, Any]) -> str | None:
        """The output of the last call the request shows, if it ends with one."""
        if self.api == "chat":
            last = body["messages"][-1]
            return str(last["content"]) if last["role"] == "tool" else None
        last = body["input"][-1]
        return str(last["output"]) if last.get("type") == "function_call_output" else None

    def offered(self, index: int = 0) -> list[str]:
        tools = self.requests[index].get("tools") or []
        return [str((t.get("function") or t)["name"]) for t in tools]

    def calls(self, index: int) -> list[tuple[str, str]]:
        """The (function name, output) of each call the request `index` shows the engine."""
        body = self.requests[index]
        if self.api == "chat":
            names = {
                c["id"]: c["function"]["name"]
                for m in body["messages"]
                for c in m.get("tool_calls") or ()
            }
            return [
                (names[m["tool_call_id"]], m["content"])
                for m in body["messages"]
                if m["role"] == "tool"
            ]
        names = {i["call_id"]: i["name"] for i in body["input"] if i["type"] == "function_call"}
        return [
            (names[i["call_id"]], i["output"])
            for i in body["input"]
            if i["type"] == "function_call_output"
        ]


@pytest.fixture(params=["chat", "responses"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[OpenAI, CallingEngine]]:
    engine = CallingEngine(request.param)
    with in_front(engine.answer, request.param) as client:
        yield client, engine


def calc(url: str, **more: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "calc", "server_url": url, **more}


def test_listed_tools_are_offered_as_functions_and_run_over_mcp(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    tool = calc(mcp_url, require_approval="never")
    with client.responses.stream(model="m", input="add 2 and 3", tools=[tool]) as stream:
        types = [event.type for event in stream]  # each validated by the SDK's types
        final = stream.get_final_response()
    assert final.status == "completed"
    listing, call, message = final.output
    assert listing.type == "mcp_list_tools"
    assert {t.name for t in listing.tools} == {"add", "echo", "fail"}
    assert call.type == "mcp_call" and call.server_label == "calc" and call.name == "add"
    assert json.loads(call.arguments) == {"a": 2, "b": 3}
    assert call.output == "5" and call.error is None
    assert message.type == "message" and final.output_text == "Got: 5"
    assert types.index("response.mcp_call.in_progress") < types.index("response.mcp_call.completed")
    assert sorted(engine.offered()) == sorted(f"mcp__calc__{n}" for n in ("add", "echo", "fail"))
    parameters = [
        (t.get("function") or t)["parameters"]
        for t in engine.requests[0]["tools"]
        if (t.get("function") or t)["name"] == ADD
    ]
    assert parameters[0]["properties"].keys() == {"a", "b"}  # the tool's input schema
    assert engine.calls(1) == [(ADD, "5")]
    assert len(engine.requests) == 2


def test_allowed_tools_narrow_what_is_offered(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    tool = calc(mcp_url, require_approval="never", allowed_tools=["add"])
    final = client.responses.create(model="m", input="add 2 and 3", tools=[tool])
    assert engine.offered() == [ADD]
    assert final.output_text == "Got: 5"


def test_an_approved_call_runs_without_a_step_of_the_engines(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    first = client.responses.create(model="m", input="add 2 and 3", tools=[calc(mcp_url)])
    assert [i.type for i in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    request = first.output[1]
    assert request.name == "add" and json.loads(request.arguments) == {"a": 2, "b": 3}
    assert len(engine.requests) == 1
    approval = {"type": "mcp_approval_response", "approval_request_id": request.id}
    second = client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[{**approval, "approve": True}],
        tools=[calc(mcp_url)],
    )
    call, message = second.output
    assert call.type == "mcp_call" and call.approval_request_id == request.id
    assert call.output == "5"
    assert message.type == "message" and second.output_text == "Got: 5"
    assert len(engine.requests) == 2  # the approved call was rollout's to run
    assert engine.calls(1) == [(ADD, "5")]


def test_a_declined_call_is_shown_to_the_engine_as_refused(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    first = client.responses.create(model="m", input="add 2 and 3", tools=[calc(mcp_url)])
    request = first.output[1]
    declined = {
        "type": "mcp_approval_response",
        "approval_request_id": request.id,
        "approve": False,
        "reason": "not now",
    }
    second = client.responses.create(
        model="m", previous_response_id=first.id, input=[declined], tools=[calc(mcp_url)]
    )
    assert [i.type for i in second.output] == ["message"]  # nothing ran
    assert engine.calls(1) == [(ADD, f"{DECLINED} not now")]
    assert second.output_text == f"Got: {DECLINED} not now"


def test_a_tool_error_is_shown_to_the_engine(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    engine.name = "mcp__calc__fail"
    tool = calc(mcp_url, require_approval="never")
    final = client.responses.create(model="m", input="fail please", tools=[tool])
    call = final.output[1]
    assert call.type == "mcp_call" and call.error is not None and call.output is None
    [(name, shown)] = engine.calls(1)
    assert name == "mcp__calc__fail" and shown.startswith("Error: ")


def test_a_call_of_an_mcp_tool_never_offered_fails_the_response(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    engine.name = "mcp__calc__delete_everything"
    tool = calc(mcp_url, require_approval="never")
    final = client.responses.create(model="m", input="add 2 and 3", tools=[tool])
    assert final.status == "failed" and final.error is not None
    assert "mcp__calc__delete_everything" in final.error.message
    assert "did not declare" in final.error.message
    assert [i.type for i in final.output] == ["mcp_list_tools"]


def test_an_mcp_tool_choice_forces_its_function(
    served: tuple[OpenAI, CallingEngine], mcp_url: str
) -> None:
    client, engine = served
    tool = calc(mcp_url, require_approval="never")
    choice = {"type": "mcp", "server_label": "calc", "name": "add"}
    final = client.responses.create(
        model="m", input="add 2 and 3", tools=[tool], tool_choice=choice
    )
    assert final.output_text == "Got: 5"
    forced = engine.requests[0]["tool_choice"]
    assert (forced.get("function") or forced)["name"] == ADD
    assert engine.requests[1]["tool_choice"] == "auto"  # (it binds the first step only)


def test_mcp_names_are_function_names() -> None:
    """What a chat function's name may hold: letters, digits, _ and -, at most 64."""
    assert mcp_name("calc", "add") == ADD
    assert mcp_name("my server", "files.read/v2") == "mcp__my_server__files_read_v2"
    assert len(mcp_name("s" * 40, "t" * 40)) == 64
