# Hosted tools in front of a real engine (rollout.upstream.hosted): a request that offers web
# search has it offered to the engine as a `web_search` function; the engine's call of it is
# run by rollout's simulated search and streamed as the real API streams a `web_search_call`
# (its item and events, validated by the SDK's types), and the next step shows the engine the
# search as that function's call and output, in both dialects.
from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from support.breakable import in_front, responses_sse, sse


def _first(sources: str) -> str:
    """The first URL of a search's output as rollout shows it (`- URL` lines)."""
    return sources.split("\n- ")[1].split("\n")[0]


class SearchingEngine:
    """Calls `web_search` when it is offered and nothing was searched yet; then answers with
    the first source it was shown. Keeps every request it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def chat(self, body: dict[str, Any], conn: socket.socket) -> None:
        self.requests.append(body)
        shown = [m for m in body["messages"] if m["role"] == "tool"]
        if shown:
            delta: dict[str, Any] = {"content": "Found: " + _first(shown[-1]["content"])}
            finish = "stop"
        else:
            call = {"index": 0, "id": "c1", "function": {"name": "web_search", "arguments": ""}}
            args = {"index": 0, "function": {"arguments": json.dumps({"query": "rust 2.0"})}}
            chunks = [{"tool_calls": [call]}, {"tool_calls": [args]}]
            events = [{"choices": [{"index": 0, "delta": d}]} for d in chunks]
            end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
            conn.sendall(sse([*events, end], done=True))
            return
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        conn.sendall(sse([chunk], done=True))

    def responses(self, body: dict[str, Any], conn: socket.socket) -> None:
        self.requests.append(body)
        shown = [i for i in body["input"] if i.get("type") == "function_call_output"]
        if shown:
            text = "Found: " + _first(shown[-1]["output"])
            events = [
                {"type": "response.content_part.added", "part": {"type": "output_text"}},
                {"type": "response.output_text.delta", "delta": text},
            ]
        else:
            item = {"type": "function_call", "name": "web_search", "call_id": "c1"}
            arguments = json.dumps({"query": "rust 2.0"})
            events = [
                {"type": "response.output_item.added", "item": item},
                {"type": "response.function_call_arguments.delta", "delta": arguments},
                {"type": "response.output_item.done", "item": {**item, "arguments": arguments}},
            ]
        conn.sendall(responses_sse(events))


@pytest.fixture(params=["chat", "responses"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[OpenAI, SearchingEngine, str]]:
    api = request.param
    engine = SearchingEngine()
    with in_front(engine.chat if api == "chat" else engine.responses, api) as client:
        yield client, engine, api


def test_a_hosted_search_is_offered_as_a_function_and_run_by_rollout(
    served: tuple[OpenAI, SearchingEngine, str],
) -> None:
    client, engine, api = served
    types: list[str] = []
    with client.responses.stream(
        model="m", input="what is new in rust?", tools=[{"type": "web_search"}]
    ) as stream:
        for event in stream:  # the SDK validates each event against its types
            types.append(event.type)
        final = stream.get_final_response()
    assert final.status == "completed"
    search, message = final.output
    assert search.type == "web_search_call" and search.status == "completed"
    assert message.type == "message"
    assert search.action.type == "search" and search.action.query == "rust 2.0"
    url = search.action.sources[0].url  # type: ignore[union-attr,index]
    assert final.output_text == f"Found: {url}"
    assert types.index("response.web_search_call.searching") < types.index(
        "response.web_search_call.completed"
    )
    first, second = engine.requests
    offered = first["tools"][0]
    assert (offered.get("function") or offered)["name"] == "web_search"
    if api == "chat":
        call, output = second["messages"][-2:]
        assert call["tool_calls"][0]["function"]["name"] == "web_search"
        assert output["role"] == "tool" and url in output["content"]
    else:
        call, output = second["input"][-2:]
        assert call["type"] == "function_call" and call["name"] == "web_search"
        assert output["type"] == "function_call_output" and url in output["output"]
