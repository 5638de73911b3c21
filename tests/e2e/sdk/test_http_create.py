# Creating responses over HTTP with the official SDK: JSON and SSE text answers, usage, the raw
# wire format, keep-alive, and the `rollout serve` command as a separate process.
from __future__ import annotations

import http.client

import httpx2 as httpx
import orjson
from openai import OpenAI
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

from rollout.conversation import tokens
from rollout.model.policy import ScriptedPolicy, text
from rollout.testing.thread import ServerThread
from support.processes import finish, serve_process
from support.sdk import assert_event_class, raw_client, stream_event_classes
from support.sse import parse_sse
from support.tools import EXEC_TOOL, MODEL

# The always-required keys of a Response object (spec §2.3).
REQUIRED_RESPONSE_KEYS = (
    "id",
    "object",
    "created_at",
    "error",
    "incomplete_details",
    "instructions",
    "model",
    "tools",
    "output",
    "parallel_tool_calls",
    "metadata",
    "tool_choice",
    "temperature",
    "top_p",
)


def check_usage(usage: object, output_text: str) -> None:
    assert usage is not None
    u = usage  # the SDK's ResponseUsage
    assert u.input_tokens > 0  # type: ignore[attr-defined]
    assert u.total_tokens == u.input_tokens + u.output_tokens  # type: ignore[attr-defined]
    cached = u.input_tokens_details.cached_tokens  # type: ignore[attr-defined]
    assert 0 <= cached <= u.input_tokens  # type: ignore[attr-defined]
    assert u.output_tokens == tokens.count(output_text)  # type: ignore[attr-defined]


# -- JSON ---------------------------------------------------------------------------------------


def test_text_response(client: OpenAI) -> None:
    resp = client.responses.create(model=MODEL, input="hi")
    assert resp.id.startswith("resp_")
    assert resp.object == "response"
    assert resp.status == "completed"
    assert resp.model == MODEL
    assert resp.error is None and resp.incomplete_details is None
    assert resp.completed_at is not None and resp.completed_at >= resp.created_at
    assert resp.output_text.strip()
    [message] = resp.output
    assert message.type == "message" and message.role == "assistant"
    assert message.status == "completed"
    assert message.id.startswith("msg_")
    check_usage(resp.usage, resp.output_text)
    assert resp._request_id is not None and resp._request_id.startswith("req_")


def test_raw_json_has_every_required_key(client: OpenAI) -> None:
    raw = client.responses.with_raw_response.create(
        model=MODEL, input="hi", instructions="Be brief.", metadata={"k": "v"}
    )
    assert raw.http_response.status_code == 200
    assert raw.http_response.headers["content-type"] == "application/json"
    body = raw.http_response.json()
    missing = [k for k in REQUIRED_RESPONSE_KEYS if k not in body]
    assert not missing, missing
    assert body["object"] == "response"
    assert body["error"] is None and body["incomplete_details"] is None
    assert body["instructions"] == "Be brief."
    assert body["metadata"] == {"k": "v"}
    assert body["tools"] == [] and body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is True
    assert body["temperature"] == 1.0 and body["top_p"] == 1.0
    usage = body["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # the SDK parses the same body
    parsed = raw.parse()
    assert parsed.id == body["id"]
    assert parsed.output_text == body["output"][0]["content"][0]["text"]


def test_scripted_text_and_usage(serve) -> None:
    answer = "Héllo, wörld: ünïcode splits across tokens."
    _, client = serve(policy=ScriptedPolicy([text(answer)]))
    resp = client.responses.create(model=MODEL, input=[{"role": "user", "content": "say it"}])
    assert resp.output_text == answer
    check_usage(resp.usage, answer)


def test_usage_counts_tokens_not_deltas_for_split_characters(serve) -> None:
    answer = "Launch 🚀 now 👩‍👩‍👧‍👦."
    assert tokens.count(answer) > 8  # the emoji are several tokens each
    _, client = serve(policy=ScriptedPolicy([text(answer)]))
    resp = client.responses.create(model=MODEL, input="say it")
    assert resp.output_text == answer
    check_usage(resp.usage, answer)
    # streamed: a delta may hold several tokens (a character split across tokens), but the
    # deltas still concatenate to the text and usage still counts tokens
    events = list(client.responses.create(model=MODEL, input="say it", stream=True))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == answer
    assert len(deltas) < tokens.count(answer)
    check_usage(events[-1].response.usage, answer)


def test_max_output_tokens_gives_incomplete(serve) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    _, client = serve(policy=ScriptedPolicy([text(words)]))
    resp = client.responses.create(model=MODEL, input="hi", max_output_tokens=16)  # the least
    assert resp.status == "incomplete"
    assert resp.incomplete_details is not None
    assert resp.incomplete_details.reason == "max_output_tokens"
    assert resp.usage is not None and resp.usage.output_tokens == 16
    assert tokens.count(resp.output_text) == 16


# -- SSE ----------------------------------------------------------------------------------------


def test_streaming_text_events(client: OpenAI) -> None:
    events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    for e in events:
        assert_event_class(e)
    assert [e.sequence_number for e in events] == list(range(len(events)))

    head, body, tail = events[:4], events[4:-4], events[-4:]
    assert [type(e) for e in head] == [
        ResponseCreatedEvent,
        ResponseInProgressEvent,
        ResponseOutputItemAddedEvent,
        ResponseContentPartAddedEvent,
    ]
    assert body and all(type(e) is ResponseTextDeltaEvent for e in body)
    assert [type(e) for e in tail] == [
        ResponseTextDoneEvent,
        ResponseContentPartDoneEvent,
        ResponseOutputItemDoneEvent,
        ResponseCompletedEvent,
    ]
    created, in_progress = head[0], head[1]
    assert created.response.status == "in_progress" and created.response.usage is None
    assert in_progress.response.id == created.response.id
    item_id = head[2].item.id
    assert all(e.item_id == item_id and e.output_index == 0 for e in body)

    text_ = "".join(e.delta for e in body)
    assert text_ and tail[0].text == text_
    assert tail[1].part.text == text_
    assert tail[2].item.content[0].text == text_
    final = tail[3].response
    assert final.id == created.response.id and final.status == "completed"
    assert final.output_text == text_
    check_usage(final.usage, text_)
    assert final.usage.output_tokens == len(body)  # one delta per token


def test_streaming_event_class_map_is_complete() -> None:
    # The map is built from the SDK itself; make sure it covers what the server sends.
    classes = stream_event_classes()
    for t in (
        "response.created",
        "response.output_text.delta",
        "response.function_call_arguments.done",
        "response.web_search_call.searching",
        "response.output_text.annotation.added",
        "response.failed",
        "error",
    ):
        assert t in classes


def test_raw_sse_framing(server: ServerThread, http: httpx.Client) -> None:
    with http.stream(
        "POST", "/responses", json={"model": MODEL, "input": "hi", "stream": True}
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].split(";")[0] == "text/event-stream"
        body = resp.read().decode()
    assert "[DONE]" not in body
    frames = parse_sse(body)
    assert frames[0][0] == "response.created"
    assert frames[-1][0] == "response.completed"
    assert [d["sequence_number"] for _, d in frames] == list(range(len(frames)))
    deltas = "".join(d["delta"] for n, d in frames if n == "response.output_text.delta")
    done = [d for n, d in frames if n == "response.output_text.done"]
    assert done[0]["text"] == deltas
    assert done[0]["logprobs"] == []
    for _, d in frames:
        if d["type"] in ("response.created", "response.in_progress"):
            assert d["response"]["usage"] is None
            for key in REQUIRED_RESPONSE_KEYS:
                assert key in d["response"], key


def test_sdk_stream_helper_accumulates_the_same_response(client: OpenAI) -> None:
    """`client.responses.stream` rebuilds the response from the events and checks them."""
    with client.responses.stream(model=MODEL, input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert final.output_text == "".join(deltas)
    stored = client.responses.retrieve(final.id)
    assert stored.output_text == final.output_text
    assert stored.usage == final.usage


def test_sdk_stream_helper_with_tools(serve) -> None:
    from rollout.model.policy import DefaultPolicy

    _, client = serve(policy=DefaultPolicy(tool_calls=2, parallel=2))
    tools = [
        {
            "type": "function",
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            },
        }
        for name in ("alpha", "beta")
    ]
    with client.responses.stream(
        model=MODEL,
        input="What is new in the latest trio release?",
        tools=[{"type": "web_search"}, *tools],
    ) as stream:
        for event in stream:
            assert_event_class(event, exact=False)
        final = stream.get_final_response()
    # A search (the prompt asks for current information), then the answer: neither function
    # tool fits the prompt, so neither is called.
    kinds = [o.type for o in final.output]
    assert kinds == ["web_search_call", "message"]
    assert final.output_text


def test_tolerates_what_agent_clients_send(serve) -> None:
    """real-clients.md: what agent clients send (Codex's `client_metadata`, `namespace` and
    custom tools, `include`), untyped items, outputs with an id; all of it passes a strict
    server (an unknown field does not: tests/e2e/sdk/test_http_strict.py)."""
    from rollout.model.policy import DefaultPolicy

    _, client = serve(policy=DefaultPolicy(tool_calls=1))
    tools = [
        {"type": "custom", "name": "apply_patch", "description": "freeform"},
        {"type": "namespace", "name": "ns", "tools": []},
        {
            "type": "function",
            "name": "exec",
            "parameters": {
                "type": "object",
                "properties": {"cmd": {"type": "string"}},
                "required": ["cmd"],
            },
        },
    ]
    first = client.responses.create(
        model=MODEL,
        input=[{"role": "user", "content": [{"type": "input_text", "text": "List the files."}]}],
        include=["reasoning.encrypted_content"],
        prompt_cache_key="session-1",
        reasoning={"effort": "low", "summary": "auto"},
        tools=tools,  # type: ignore[arg-type]
        extra_body={
            "client_metadata": {"x-session": "1"},
            "stream_options": {"include_obfuscation": False},
        },
    )
    assert first.status == "completed"
    assert [t.type for t in first.tools] == ["custom", "namespace", "function"]
    [fc] = [o for o in first.output if o.type == "function_call"]
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[
            {
                "type": "function_call_output",
                "id": "fco_client_1",
                "call_id": fc.call_id,
                "output": "ok",
            },
        ],
        store=False,
    )
    assert second.status == "completed" and second.output_text


# -- connections --------------------------------------------------------------------------------


def test_keep_alive_reuses_one_connection(server: ServerThread) -> None:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        sock = None
        for i in range(5):
            body = {"model": MODEL, "input": f"turn {i}", "stream": i % 2 == 1}
            conn.request(
                "POST", "/v1/responses", orjson.dumps(body), {"content-type": "application/json"}
            )
            resp = conn.getresponse()
            data = resp.read()
            assert resp.status == 200, data
            assert resp.getheader("connection", "").lower() != "close"
            if i % 2:
                assert parse_sse(data.decode())[-1][0] == "response.completed"
            else:
                assert orjson.loads(data)["status"] == "completed"
            if sock is None:
                sock = conn.sock
            assert conn.sock is sock and sock is not None  # never reconnected
    finally:
        conn.close()


def test_keep_alive_with_httpx_client(server: ServerThread) -> None:
    addrs = set()
    with raw_client(server.http_base_url) as h:
        for i in range(4):
            r = h.post("/responses", json={"model": MODEL, "input": f"turn {i}"})
            assert r.status_code == 200
            stream = r.extensions["network_stream"]
            addrs.add(stream.get_extra_info("client_addr"))
    assert len(addrs) == 1


# -- `rollout serve` as its own process ---------------------------------------------------------


def test_cli_serve_subprocess() -> None:
    with serve_process("--tool-calls", "0") as served:
        r = httpx.get(f"{served.base_url}/responses/resp_probe", timeout=10)
        assert r.status_code == 404
        with OpenAI(api_key="test", base_url=served.base_url, max_retries=0, timeout=10) as client:
            resp = client.responses.create(
                model=MODEL, input="hello from another process", tools=[EXEC_TOOL]
            )
            assert resp.status == "completed"
            assert resp.output_text
            again = client.responses.retrieve(resp.id)
            assert again.output_text == resp.output_text
        err = finish(served.proc)
    assert served.base_url in err
