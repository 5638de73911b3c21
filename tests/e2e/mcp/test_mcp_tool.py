# The `mcp` tool against a real MCP server process (tests/fixtures/mcp_server.py), the official
# SDK as the client: the listing, a call and its output, the approval flow in both directions,
# allowed_tools, a failing tool, an unreachable server, and the listing not repeated when the
# history has it.
from __future__ import annotations

from typing import Any

import openai
import orjson
import pytest
from openai import OpenAI

from support.processes import free_port
from support.sdk import assert_event_class
from support.tools import MODEL


def _mcp(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "calc", "server_url": url, **extra}


def test_lists_and_calls_a_tool(client: OpenAI, mcp_url: str) -> None:
    events = list(
        client.responses.create(
            model=MODEL,
            input="Use the add tool to add two numbers.",
            tools=[_mcp(mcp_url, require_approval="never")],  # type: ignore[list-item]
            stream=True,
        )
    )
    for e in events:
        assert_event_class(e)
    kinds = [e.type for e in events]
    assert [k for k in kinds if k.startswith("response.mcp")] == [
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ]
    final = events[-1]
    assert final.type == "response.completed"
    listing, call, answer = final.response.output
    assert listing.type == "mcp_list_tools" and listing.server_label == "calc"
    assert sorted(t.name for t in listing.tools) == ["add", "echo", "fail"]
    add = next(t for t in listing.tools if t.name == "add")
    assert add.input_schema["required"] == ["a", "b"]  # type: ignore[index]
    assert call.type == "mcp_call" and call.name == "add" and call.error is None
    args = orjson.loads(call.arguments)
    assert call.output == str(args["a"] + args["b"])  # the server's own sum
    assert answer.type == "message"


def test_history_listing_is_not_repeated(client: OpenAI, mcp_url: str) -> None:
    tools = [_mcp(mcp_url, require_approval="never")]
    first = client.responses.create(model=MODEL, input="hello", tools=tools)  # type: ignore[arg-type]
    assert [o.type for o in first.output] == ["mcp_list_tools", "message"]
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input="Please echo this text back.",
        tools=tools,  # type: ignore[arg-type]
    )
    assert [o.type for o in second.output] == ["mcp_call", "message"]
    assert second.output[0].name == "echo"  # type: ignore[union-attr]
    # The whole history as input (a round trip of the items) also counts as listed.
    replay = [o.model_dump(exclude_none=True) for o in first.output]
    third = client.responses.create(
        model=MODEL,
        input=[*replay, {"role": "user", "content": "add two numbers"}],  # type: ignore[list-item]
        tools=tools,  # type: ignore[arg-type]
    )
    assert [o.type for o in third.output] == ["mcp_call", "message"]


def test_allowed_tools_filter_the_listing(client: OpenAI, mcp_url: str) -> None:
    response = client.responses.create(
        model=MODEL,
        input="Use the add tool.",
        tools=[_mcp(mcp_url, allowed_tools=["echo"], require_approval="never")],  # type: ignore[list-item]
    )
    listing = response.output[0]
    assert listing.type == "mcp_list_tools"
    assert [t.name for t in listing.tools] == ["echo"]
    assert all(o.type != "mcp_call" or o.name == "echo" for o in response.output)


def test_approval_requested_then_approved(client: OpenAI, mcp_url: str) -> None:
    tools = [_mcp(mcp_url)]  # require_approval defaults to always
    first = client.responses.create(model=MODEL, input="echo back 'hi there'", tools=tools)  # type: ignore[arg-type]
    assert first.status == "completed"
    assert [o.type for o in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    request = first.output[1]
    assert request.name == "echo"  # type: ignore[union-attr]
    approved = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[
            {"type": "mcp_approval_response", "approve": True, "approval_request_id": request.id}
        ],
        tools=tools,  # type: ignore[arg-type]
    )
    call, answer = approved.output
    assert call.type == "mcp_call" and call.approval_request_id == request.id
    assert call.output == orjson.loads(call.arguments)["text"]
    assert answer.type == "message"


def test_approval_denied_skips_the_call(client: OpenAI, mcp_url: str) -> None:
    tools = [_mcp(mcp_url, require_approval={"never": {"tool_names": ["add"]}})]
    first = client.responses.create(model=MODEL, input="echo this", tools=tools)  # type: ignore[arg-type]
    request = first.output[-1]
    assert request.type == "mcp_approval_request"
    denied = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[
            {"type": "mcp_approval_response", "approve": False, "approval_request_id": request.id}
        ],
        tools=tools,  # type: ignore[arg-type]
    )
    assert [o.type for o in denied.output] == ["message"]
    # `never` for add: its call runs without asking.
    added = client.responses.create(model=MODEL, input="add two numbers", tools=tools)  # type: ignore[arg-type]
    assert [o.type for o in added.output] == ["mcp_list_tools", "mcp_call", "message"]


def test_forced_tool_choice_and_a_failing_tool(client: OpenAI, mcp_url: str) -> None:
    response = client.responses.create(
        model=MODEL,
        input="hello",
        tools=[_mcp(mcp_url, require_approval="never")],  # type: ignore[list-item]
        tool_choice={"type": "mcp", "server_label": "calc", "name": "fail"},
    )
    call = response.output[1]
    assert call.type == "mcp_call" and call.name == "fail"
    assert call.status == "failed" and call.output is None
    assert call.error is not None


def test_unreachable_server_is_a_424(client: OpenAI) -> None:
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(openai.APIStatusError) as caught:
        client.responses.create(model=MODEL, input="hi", tools=[_mcp(dead)])  # type: ignore[list-item]
    assert caught.value.status_code == 424
    body: Any = caught.value.body
    assert body["message"] == (
        "Error retrieving tool list from MCP server: 'calc'. "
        "Http status code: 424 (Failed Dependency)"
    )


def test_the_answer_says_what_the_tool_returned(client: OpenAI, mcp_url: str) -> None:
    response = client.responses.create(
        model=MODEL,
        input="Please echo this text back.",
        tools=[_mcp(mcp_url, require_approval="never")],  # type: ignore[list-item]
    )
    _, call, answer = response.output
    assert answer.type == "message"
    assert call.type == "mcp_call" and call.output
    assert f"The echo tool says: {call.output.splitlines()[0]}" in response.output_text


def test_a_url_ending_in_sse_uses_the_sse_transport(client: OpenAI, mcp_sse_url: str) -> None:
    response = client.responses.create(
        model=MODEL,
        input="Use the add tool to add two numbers.",
        tools=[_mcp(mcp_sse_url, require_approval="never")],  # type: ignore[list-item]
    )
    listing, call, _ = response.output
    assert listing.type == "mcp_list_tools" and len(listing.tools) == 3
    assert call.type == "mcp_call" and call.error is None
    args = orjson.loads(call.arguments)
    assert call.output == str(args["a"] + args["b"])
