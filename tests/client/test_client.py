"""The trio client's own API: create, append and cancel over both transports, typed events, raw
HTTP requests, and SSE in any WHATWG framing."""

from __future__ import annotations

import functools

import orjson
import pytest
import trio

import rollout
from protocol import codec
from protocol.events import PauseEvent, ResponseEvent, TextDeltaEvent
from rollout.client import ClientError, HttpClient, collect, connect_ws
from rollout.testing.plugin import RolloutServer
from support.tools import BARE_EXEC_TOOL, output

BODY = {"model": "m", "input": "go", "tools": [BARE_EXEC_TOOL], "shape": "append"}


@pytest.fixture
def server(rollout_server: RolloutServer) -> RolloutServer:
    """The fixture's server: one exec call, then the answer "done"."""
    rollout_server.script([rollout.call("exec", {"cmd": "ls"}), rollout.text("done")])
    return rollout_server


async def test_websocket_create_append_and_typed_events(server: RolloutServer) -> None:
    async with connect_ws(server.ws_url) as ws:
        events = [e async for e in await ws.create(BODY, lane="l1")]
        assert isinstance(events[0], ResponseEvent) and events[0].type == "response.created"
        pause = events[-1]
        assert isinstance(pause, PauseEvent)
        [pending] = pause.pending_calls
        rest = [
            e async for e in await ws.append(pause.response_id, [output(pending.call_id)], "l1")
        ]
        assert any(isinstance(e, TextDeltaEvent) for e in rest)
        assert rest[-1].type == "response.completed"
        # cancel a second rollout while it is suspended
        second = await collect(await ws.create(BODY), 0)
        await ws.cancel(second.response_id)
        end = [e async for e in ws.events()]
        assert end[-1].type == "response.incomplete"


async def test_http_create_append_and_cancel(server: RolloutServer) -> None:
    async with HttpClient(server.http_base_url) as http:
        turn = await collect(await http.create(BODY), 0)
        assert turn.status == "paused" and turn.calls[0].name == "exec"
        done = await collect(
            await http.append(turn.response_id, [output(turn.calls[0].call_id)]), 0
        )
        assert done.status == "completed" and done.text == "done"
        second = await collect(await http.create(BODY), 0)
        cancelled = await http.cancel(second.response_id)
        assert cancelled["status"] == "cancelled"


async def test_raw_requests_and_a_request_after_an_unread_body(server: RolloutServer) -> None:
    async with HttpClient(server.http_base_url) as http:
        status, head, chunks = await http.request(
            "POST", "/responses", content=b"model=m", content_type="text/plain"
        )
        refused = orjson.loads(b"".join([c async for c in chunks]))
        assert status == 415 and head["content-type"] == "application/json"
        assert refused["error"]["code"] == "unsupported_media_type"
        status, _, _ = await http.request("GET", "/responses/resp_nope")  # body left unread
        assert status == 404
        # The unread body leaves that exchange unfinished: the next one gets a new connection.
        with pytest.raises(ClientError) as missing:
            await http.json("GET", "/responses/resp_nope")
        assert missing.value.status == 404
        content = orjson.dumps({"model": "m", "input": "go", "tools": [BARE_EXEC_TOOL]})
        status, _, chunks = await http.request("POST", "/responses", content=content)
        reply = orjson.loads(b"".join([c async for c in chunks]))
        assert status == 200 and reply["status"] == "completed"


def reframe(stream: bytes) -> bytes:
    """The same SSE events as another server may frame them: CRLF line ends, a comment before
    each event, and each JSON payload split over two `data:` lines."""
    out = []
    for block in stream.split(b"\n\n")[:-1]:
        kind, data = block.split(b"\n")
        first, rest = data.split(b",", 1)
        out.append(
            b": keep-alive\r\n" + kind + b"\r\n" + first + b",\r\ndata:" + rest + b"\r\n\r\n"
        )
    return b"".join(out)


async def test_sse_from_another_framing_decodes_to_the_same_events(server: RolloutServer) -> None:
    """The client decodes any WHATWG event stream (protocol.sse), here CRLF-framed, with
    comments and multi-line data, sent a few bytes at a time."""
    create = {**BODY, "stream": True}
    async with HttpClient(server.http_base_url) as http:
        _, _, chunks = await http.request("POST", "/responses", create)
        stream = b"".join([c async for c in chunks])
    expected = [orjson.loads(line[6:]) for line in stream.split(b"\n") if line[:6] == b"data: "]
    body = reframe(stream)

    async def other_server(conn: trio.SocketStream) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += await conn.receive_some(65536)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        await conn.send_all(head + b"content-length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 7):
            await conn.send_all(body[i : i + 7])

    async with trio.open_nursery() as nursery:  # a server that is not this one: raw TCP
        [listener] = await nursery.start(
            functools.partial(trio.serve_tcp, other_server, 0, host="127.0.0.1")
        )
        other = listener.socket.getsockname()[1]
        async with HttpClient(f"http://127.0.0.1:{other}/v1") as http:
            events = [e async for e in http.events("/responses", create)]
        assert [codec.to_json(e) for e in events] == expected
        nursery.cancel_scope.cancel()
