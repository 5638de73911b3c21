# A computer call and an MCP approval request pause an append-shape rollout as a function call
# does (over WebSocket with the official SDK, and over HTTP): `response.done` lists the call,
# the appended `computer_call_output` / `mcp_approval_response` resumes the same response, and
# an answer naming no pending call is refused as a wrong function_call_output call_id is.
# The MCP tool calls a real MCP server process (tests/fixtures/mcp_server.py).
from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import orjson
import pytest
from openai import OpenAI

from rollout.client import HttpClient
from rollout.model.policy import DefaultPolicy
from rollout.testing.plugin import RolloutServer
from support import behind
from support.appendhttp import create, sse, stream
from support.frames import append_frame, create_frame
from support.mcpserver import serve_mcp
from support.sdk import ended
from support.servers import Serve

COMPUTER = {
    "type": "computer_use_preview",
    "display_width": 1024,
    "display_height": 768,
    "environment": "browser",
}
SCREENSHOT = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
SCREEN_PROMPT = "Open the website and take a screenshot."
ADD_PROMPT = "Use the add tool to add two numbers."

Answer = Callable[[dict[str, Any], dict[str, dict[str, Any]]], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp(tmp_path_factory, "streamable-http", "/mcp")


def mcp_tool(url: str) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "calc", "server_url": url}  # approval: always


def screenshot(call_id: str) -> dict[str, Any]:
    return {
        "type": "computer_call_output",
        "call_id": call_id,
        "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
    }


def approval(request_id: str, approve: bool) -> dict[str, Any]:
    return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": approve}


def answer_computer(pause: dict[str, Any], items: dict[str, dict[str, Any]]) -> list[Any]:
    (pending,) = pause["pending_calls"]
    call = items[pending["item_id"]]
    assert call["type"] == "computer_call" and call["call_id"] == pending["call_id"]
    assert pending["name"] == "computer"
    return [screenshot(pending["call_id"])]


def answer_approval(approve: bool) -> Answer:
    def answer(pause: dict[str, Any], items: dict[str, dict[str, Any]]) -> list[Any]:
        (pending,) = pause["pending_calls"]
        request = items[pending["item_id"]]
        assert request["type"] == "mcp_approval_request"
        assert pending["call_id"] == request["id"] and pending["name"] == request["name"] == "add"
        return [approval(request["id"], approve)]

    return answer


def wrong(answer: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The answer naming no pending call, and the param its refusal names."""
    key = "approval_request_id" if answer["type"] == "mcp_approval_response" else "call_id"
    return {**answer, key: "call_wrong"}, f"input[0].{key}"


# -- over WebSocket, the SDK as the client ------------------------------------------------------


def ws_rollout(client: OpenAI, frame: dict[str, Any], answer: Answer) -> tuple[Any, list[Any]]:
    """Drive one append rollout: at its pause, first a wrong answer (refused), then the right
    one. (final response, [the pause, the refusal]); the final one has the rollout's one id."""
    items: dict[str, dict[str, Any]] = {}
    seen: list[Any] = []
    ids: set[str] = set()
    final: Any = None
    with client.responses.connect() as conn:
        conn.send(frame)
        for event in conn:
            if event.type == "response.created":
                ids.add(event.response.id)
            elif event.type == "response.output_item.done":
                items[event.item.id] = event.item.model_dump()
            elif event.type == "response.done":
                pause = event.model_dump()
                ids.add(pause["response_id"])
                seen.append(pause)
                right = answer(pause, items)
                bad, _ = wrong(right[0])
                conn.send(append_frame(pause["response_id"], [bad]))
                conn.send(append_frame(pause["response_id"], right))
            elif event.type == "error":
                seen.append(event.model_dump())
            elif (final := ended(event)) is not None:
                break
    assert final is not None and final.status == "completed"
    assert ids == {final.id}
    assert [x["type"] for x in seen] == ["response.done", "error"]  # one pause, one refusal
    return final, seen


def assert_refused(error: dict[str, Any], param: str) -> None:
    assert error["type"] == "error"
    assert error["error"]["code"] == "unknown_call_id"
    assert error["error"]["param"] == param
    assert "call_wrong" in error["error"]["message"]


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
def test_a_computer_call_pauses_and_its_output_resumes_ws(serve: Serve) -> None:
    _, client = serve()
    frame = create_frame(input=SCREEN_PROMPT, tools=[COMPUTER], instructions=None)
    final, (pause, error) = ws_rollout(client, frame, answer_computer)
    assert_refused(error, "input[0].call_id")
    assert [o.type for o in final.output] == ["computer_call", "message"]
    assert final.output[0].call_id == pause["pending_calls"][0]["call_id"]


def test_an_approved_mcp_call_runs_after_the_pause_ws(serve: Serve, mcp_url: str) -> None:
    _, client = serve()
    frame = create_frame(input=ADD_PROMPT, tools=[mcp_tool(mcp_url)], instructions=None)
    final, (pause, error) = ws_rollout(client, frame, answer_approval(True))
    assert_refused(error, "input[0].approval_request_id")
    kinds = [o.type for o in final.output]
    assert kinds == ["mcp_list_tools", "mcp_approval_request", "mcp_call", "message"]
    request, call = final.output[1], final.output[2]
    assert request.id == pause["pending_calls"][0]["call_id"]
    assert call.approval_request_id == request.id and call.error is None
    args = orjson.loads(call.arguments)
    assert call.output == str(args["a"] + args["b"])  # the MCP server's own sum


def test_a_denied_mcp_call_is_skipped_ws(serve: Serve, mcp_url: str) -> None:
    _, client = serve()
    frame = create_frame(input=ADD_PROMPT, tools=[mcp_tool(mcp_url)], instructions=None)
    final, (_, error) = ws_rollout(client, frame, answer_approval(False))
    assert_refused(error, "input[0].approval_request_id")
    assert [o.type for o in final.output] == ["mcp_list_tools", "mcp_approval_request", "message"]


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
def test_chain_shape_still_ends_on_them(client: OpenAI) -> None:
    response = client.responses.create(model="sim-1", input=SCREEN_PROMPT, tools=[COMPUTER])  # type: ignore[list-item]
    assert response.status == "completed"
    assert [o.type for o in response.output] == ["computer_call"]


# -- over HTTP ----------------------------------------------------------------------------------


@pytest.fixture
async def http(rollout_server: RolloutServer) -> AsyncIterator[HttpClient]:
    """A client of the `rollout_server` fixture's server, which plays the default model."""
    rollout_server.engine.policy = DefaultPolicy()
    async with HttpClient(rollout_server.http_base_url) as client:
        yield client


async def http_rollout(http: HttpClient, answer: Answer, **body: Any) -> list[dict[str, Any]]:
    """Create (streamed to its pause), a wrong answer (400), the right one (streamed to the
    end); every event of the rollout."""
    rid, first = await create(http, instructions=None, **body)
    pause = first[-1]
    assert pause["type"] == "response.done" and pause["response_id"] == rid
    items = {f["item"]["id"]: f["item"] for f in first if f["type"] == "response.output_item.done"}
    right = answer(pause, items)
    bad, param = wrong(right[0])
    status, _, refused = await sse(http, f"/responses/{rid}/append", {"input": [bad]})
    assert status == 400
    assert refused["error"]["code"] == "unknown_call_id"
    assert refused["error"]["param"] == param
    rest = await stream(http, f"/responses/{rid}/append", {"input": right})
    assert rest[-1]["type"] == "response.completed"
    assert rest[-1]["response"]["id"] == rid
    return first + rest


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
async def test_a_scripted_computer_call_pauses_and_its_output_resumes_http(
    rollout_server: RolloutServer, http: HttpClient
) -> None:
    rollout_server.script([{"computer": {"type": "click", "x": 1, "y": 2}}], final="Clicked.")
    events = await http_rollout(http, answer_computer, input="go", tools=[COMPUTER])
    output = events[-1]["response"]["output"]
    assert [o["type"] for o in output] == ["computer_call", "message"]
    assert output[0]["action"] == {"type": "click", "x": 1, "y": 2}
    assert output[1]["content"][0]["text"] == "Clicked."


async def test_an_approval_pauses_then_the_call_runs_http(http: HttpClient, mcp_url: str) -> None:
    events = await http_rollout(
        http, answer_approval(True), input=ADD_PROMPT, tools=[mcp_tool(mcp_url)]
    )
    output = events[-1]["response"]["output"]
    kinds = [o["type"] for o in output]
    assert kinds == ["mcp_list_tools", "mcp_approval_request", "mcp_call", "message"]
    assert output[2]["approval_request_id"] == output[1]["id"]
    args = orjson.loads(output[2]["arguments"])
    assert output[2]["output"] == str(args["a"] + args["b"])


async def test_a_denied_approval_resumes_to_an_answer_http(http: HttpClient, mcp_url: str) -> None:
    events = await http_rollout(
        http, answer_approval(False), input=ADD_PROMPT, tools=[mcp_tool(mcp_url)]
    )
    output = events[-1]["response"]["output"]
    assert [o["type"] for o in output] == ["mcp_list_tools", "mcp_approval_request", "message"]
