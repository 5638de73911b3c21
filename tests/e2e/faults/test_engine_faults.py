# A broken engine behind `--upstream` (rollout.upstream), seen by the official SDK over real
# sockets: a breakable chat-completions engine of our own (a raw-socket HTTP server in a
# thread) that cuts its stream short, closes an EOF-delimited or chunked body early, stalls
# before its first event or in the middle, sends garbage or wrong-typed JSON, answers a
# streamed request with a whole JSON completion, calls a tool the request never declared, or
# is not there at all. A response counts as `completed` only when the engine's stream ended
# properly; a failure before anything reached the client is a retryable 500; a failure after
# is `response.failed` with a clear message; nothing is logged with a traceback.
from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.testing.thread import ServerThread
from rollout.upstream import UpstreamConfig, UpstreamModel
from support.breakable import BreakableEngine, said

Conn = socket.socket


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
WHOLE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The whole answer at once."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15},
}


def _cut(conn: Conn) -> None:  # EOF-delimited, ends with no finish_reason and no [DONE]
    conn.sendall(SSE_HEAD + _chunk({"content": "The first half"}) + _chunk({"content": " of"}))


def _cut_chunked(conn: Conn) -> None:  # a chunked body closed in the middle of a chunk
    head = SSE_HEAD.replace(b"connection: close", b"transfer-encoding: chunked")
    event = _chunk({"content": "Half"})
    conn.sendall(head + b"%x\r\n" % len(event) + event + b"\r\n" + b"400\r\ndata: {")


def _stall_first(conn: Conn) -> None:  # the head, then nothing
    conn.sendall(SSE_HEAD)
    time.sleep(3)


def _stall_mid(conn: Conn) -> None:  # one event, then nothing
    conn.sendall(SSE_HEAD + _chunk({"content": "Thinking"}))
    time.sleep(3)


def _garbage(conn: Conn) -> None:
    conn.sendall(SSE_HEAD + _chunk({"content": "Fine"}) + b"data: {not json\n\n")


def _wrong_types(conn: Conn) -> None:
    conn.sendall(SSE_HEAD + _chunk({"content": "Fine"}) + b'data: {"choices": [{"delta": 5}]}\n\n')


def _whole(conn: Conn) -> None:  # plain JSON to `stream: true`
    body = json.dumps(WHOLE).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    conn.sendall(head % len(body) + body)


def _undeclared(conn: Conn) -> None:  # a call of a tool the request never declared
    call = {"index": 0, "id": "call_1", "function": {"name": "rm_rf", "arguments": "{}"}}
    events = _chunk({"tool_calls": [call]}) + _chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    conn.sendall(SSE_HEAD + events)


def _proper(conn: Conn) -> None:  # a proper end: a finish reason, then [DONE]
    events = _chunk({"content": "All of it."}) + _chunk({}, "stop") + b"data: [DONE]\n\n"
    conn.sendall(SSE_HEAD + events)


BEHAVIOURS: dict[str, Callable[[Conn], None]] = {
    "cut": _cut,
    "cut chunked": _cut_chunked,
    "stall first": _stall_first,
    "stall mid": _stall_mid,
    "garbage": _garbage,
    "wrong types": _wrong_types,
    "whole": _whole,
    "undeclared": _undeclared,
    "proper": _proper,
}


@pytest.fixture(scope="module")
def engine() -> Iterator[BreakableEngine]:
    e = BreakableEngine(lambda body, conn: BEHAVIOURS[said(body)](conn))
    yield e
    e.close()


def _served(url: str) -> ServerThread:
    config = UpstreamConfig(url=url, first_byte_timeout_s=0.5, read_timeout_s=0.5)
    return ServerThread(Engine(model=UpstreamModel(config))).start()


@pytest.fixture
def client(engine: BreakableEngine) -> Iterator[OpenAI]:
    server = _served(engine.url)
    try:
        yield OpenAI(base_url=server.http_base_url, api_key="k", max_retries=0, timeout=30)
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING, logger="rollout")
    yield
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def _streamed(client: OpenAI, said: str) -> tuple[list[str], Any]:
    types: list[str] = []
    final = None
    with client.responses.stream(model="m", input=said) as events:
        for event in events:
            types.append(event.type)
            if event.type in ("response.completed", "response.failed"):
                final = event.response
    return types, final


@pytest.mark.parametrize(
    ("said", "why"),
    [
        ("cut", "cut short"),
        ("cut chunked", "broke off"),
        ("stall mid", "nothing for 0.5 s"),
        ("garbage", "not JSON"),
        ("wrong types", "invalid event"),
        ("undeclared", "a tool the request did not declare"),
    ],
)
def test_a_stream_that_did_not_end_properly_fails(client: OpenAI, said: str, why: str) -> None:
    types, final = _streamed(client, said)
    assert types[0] == "response.created" and types[-1] == "response.failed"
    assert final.status == "failed" and why in final.error.message
    assert client.responses.retrieve(final.id).status == "failed"  # stored as it ended


def test_only_a_proper_end_completes(client: OpenAI) -> None:
    types, final = _streamed(client, "proper")
    assert types[-1] == "response.completed" and final.output_text == "All of it."


def test_a_whole_json_answer_to_a_stream_is_read_as_such(client: OpenAI) -> None:
    types, final = _streamed(client, "whole")
    assert types[-1] == "response.completed"
    assert final.output_text == "The whole answer at once."
    assert final.usage.input_tokens == 9 and final.usage.output_tokens == 6
    assert (
        client.responses.create(model="m", input="whole").output_text
        == WHOLE["choices"][0]["message"]["content"]
    )


def test_an_engine_silent_before_its_first_event_is_a_retryable_500(client: OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        client.responses.create(model="m", input="stall first")
    assert caught.value.status_code == 500
    assert "--upstream-first-byte-timeout" in caught.value.body["message"]  # type: ignore[index]
    with pytest.raises(openai.InternalServerError):
        _streamed(client, "stall first")  # the stream too: nothing was sent before the error


def test_over_a_websocket_the_error_keeps_the_connection(client: OpenAI) -> None:
    with client.responses.connect() as conn:
        conn.response.create(model="m", input="stall first", store=False)
        event = next(iter(conn))
        assert event.type == "error" and "first-byte" in event.error.message
        conn.response.create(model="m", input="proper", store=False)
        for event in conn:
            if event.type in ("response.completed", "response.failed"):
                break
        assert event.type == "response.completed"
        assert event.response.output_text == "All of it."


def test_an_unreachable_engine_is_a_retryable_500() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:  # a port with no listener after
        port = taken.getsockname()[1]
    server = _served(f"http://127.0.0.1:{port}/v1")
    try:
        client = OpenAI(base_url=server.http_base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            client.responses.create(model="m", input="hello")
        assert "could not be reached" in caught.value.body["message"]  # type: ignore[index]
        with pytest.raises(openai.InternalServerError):
            _streamed(client, "hello")
    finally:
        server.stop()
