# WebSocket mode on the wire, from trio tests against an in-process server (`rollout.serve` in the
# test's nursery, cancelled when the test ends): lane and in-flight limits, FIFO lanes, the age
# limit, bad frames, error isolation between lanes, cache eviction after failures, handshake
# refusals (plain HTTP responses), HTTP beside WebSocket on one port, and client disconnects.
from __future__ import annotations

import functools
import json
import logging
from typing import Any

import attrs
import httpx2 as httpx
import pytest
import trio
import trio_websocket
import wsproto
from _ws_helpers import MODEL, TERMINAL
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate

import rollout
from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.model.profiles import InferenceProfile
from rollout.service.config import ServerConfig

TIMEOUT = 10.0
# A model slow enough for ordering to be observable: 50 tokens/s, answers of about 12 tokens.
SLOW = InferenceProfile(name="slow", decode_tps=50)
ANSWER = "one two three four five six seven eight nine ten eleven twelve"


def tool_policy() -> ScriptedPolicy:
    return ScriptedPolicy([call("exec", {"cmd": "ls"}), call("exec", {"cmd": "make"})])


@attrs.frozen
class Server:
    engine: Engine
    port: int

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


async def start(nursery: trio.Nursery, engine: Engine | None = None, **config: Any) -> Server:
    """A server in the test's nursery (pytest-trio cancels it when the test ends)."""
    engine = engine or Engine(policy=ScriptedPolicy([text(ANSWER)]))
    port = await nursery.start(
        functools.partial(rollout.serve, engine, config=ServerConfig(**config))
    )
    return Server(engine, port)


def frame(**fields: Any) -> str:
    """A `response.create` frame; `input` defaults to a short user message."""
    body: dict[str, Any] = {"type": "response.create", "model": MODEL, "store": False}
    body.setdefault("input", "hi")
    body.update(fields)
    return json.dumps(body)


async def recv(ws: trio_websocket.WebSocketConnection) -> dict[str, Any]:
    with trio.fail_after(TIMEOUT):
        message = await ws.get_message()
    assert isinstance(message, str), "the server sent a binary frame"
    event = json.loads(message)
    assert isinstance(event, dict) and isinstance(event.get("type"), str), event
    return event


async def until_terminal(ws: trio_websocket.WebSocketConnection, count: int = 1) -> list[dict]:
    """Every event up to and including the `count`-th terminal event (any lane)."""
    events = []
    while count:
        event = await recv(ws)
        events.append(event)
        if event["type"] in TERMINAL:
            count -= 1
    return events


async def respond(ws: trio_websocket.WebSocketConnection, **fields: Any) -> list[dict]:
    """Send one create and read its events to the end (single lane in use)."""
    await ws.send_message(frame(**fields))
    return await until_terminal(ws)


def completed(events: list[dict]) -> dict[str, Any]:
    assert events[-1]["type"] == "response.completed", events[-1]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events[-1]["response"]


def only_error(events: list[dict]) -> dict[str, Any]:
    [event] = events
    assert event["type"] == "error", event
    assert event["status"] == 400, event
    assert event["error"]["type"] == "invalid_request_error", event
    assert event["error"]["message"], event
    return event


def index(events: list[dict], kind: str, lane: str | None) -> int:
    """Position of the first event of `kind` on `lane` in a connection's event order."""
    for i, e in enumerate(events):
        if e["type"] == kind and e.get("stream_id") == lane:
            return i
    raise AssertionError(f"no {kind} on lane {lane!r}")


def the_call(response: dict[str, Any]) -> dict[str, Any]:
    [item] = response["output"]
    assert item["type"] == "function_call", item
    return item


def output_for(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "function_call_output", "call_id": call_id, "output": "ok"}]


async def wait_for(check: Any, timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.01)


# -- a raw client (wsproto over TCP) for what trio-websocket cannot do --------------------------


@attrs.define
class RawClient:
    """Offers extensions, and can drop the TCP connection without a close frame (1006)."""

    stream: trio.SocketStream
    conn: wsproto.WSConnection
    handshake: Any = None
    _pending: list[Any] = attrs.field(factory=list)
    _text: str = ""

    @classmethod
    async def connect(
        cls, port: int, *, extensions: list[Any] | None = None, headers: list[Any] | None = None
    ) -> RawClient:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        conn = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        client = cls(stream, conn)
        request = Request(
            host="127.0.0.1",
            target="/v1/responses",
            extensions=extensions or [],
            extra_headers=headers or [],
        )
        await stream.send_all(conn.send(request))
        client.handshake = await client._event()
        return client

    async def _event(self) -> Any:
        with trio.fail_after(TIMEOUT):
            while not self._pending:
                data = await self.stream.receive_some()
                self.conn.receive_data(data or None)
                self._pending.extend(self.conn.events())
        return self._pending.pop(0)

    async def send(self, message: str) -> None:
        await self.stream.send_all(self.conn.send(TextMessage(data=message)))

    async def recv(self) -> dict[str, Any]:
        while True:
            event = await self._event()
            if isinstance(event, Ping):
                await self.stream.send_all(self.conn.send(event.response()))
            elif isinstance(event, TextMessage):
                self._text += event.data
                if event.message_finished:
                    out, self._text = self._text, ""
                    return json.loads(out)
            else:
                raise AssertionError(f"unexpected {event!r}")

    async def abort(self) -> None:
        """Drop the TCP connection: no close frame."""
        await self.stream.aclose()


# -- lanes and limits ---------------------------------------------------------------------------


async def test_32_named_lanes_then_the_stream_limit(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        for i in range(32):
            await ws.send_message(frame(stream_id=f"lane{i}"))
        events = await until_terminal(ws, 32)
        done = [e for e in events if e["type"] == "response.completed"]
        assert sorted(e["stream_id"] for e in done) == sorted(f"lane{i}" for i in range(32))

        error = only_error(await respond(ws, stream_id="lane32"))
        assert error["error"]["code"] == "websocket_stream_limit_reached"
        assert error["error"]["param"] == "stream_id"
        assert error["stream_id"] == "lane32"
        assert "32" in error["error"]["message"]

        # Reusing a name still works; so does the default lane (it does not count).
        events = await respond(ws, stream_id="lane7")
        completed(events)
        assert {e["stream_id"] for e in events} == {"lane7"}
        events = await respond(ws)
        completed(events)
        assert all("stream_id" not in e for e in events)


@pytest.mark.parametrize("stream_id", ["", "a b", "x" * 300, 5, "lane/1"])
async def test_invalid_stream_id(nursery: trio.Nursery, stream_id: Any) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        error = only_error(await respond(ws, stream_id=stream_id))
        assert error["error"]["code"] == "invalid_stream_id"
        assert error["error"]["param"] == "stream_id"
        assert "stream_id" not in error  # not a valid lane to tie it to
        # The longest valid name works.
        events = await respond(ws, stream_id="x" * 256)
        completed(events)
        assert {e["stream_id"] for e in events} == {"x" * 256}


async def test_in_flight_limit_queues_the_third_lane(nursery: trio.Nursery) -> None:
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine, max_in_flight=2)
    async with open_websocket_url(server.ws_url) as ws:
        for lane in ("a", "b", "c"):
            await ws.send_message(frame(stream_id=lane))
        events = await until_terminal(ws, 3)
    assert [e for e in events if e["type"] == "error"] == []
    done = {e["stream_id"] for e in events if e["type"] == "response.completed"}
    assert done == {"a", "b", "c"}  # queued, not refused
    first_done = min(index(events, "response.completed", lane) for lane in ("a", "b"))
    # a and b ran together; c started only once one of them had ended.
    assert index(events, "response.created", "a") < first_done
    assert index(events, "response.created", "b") < first_done
    assert index(events, "response.created", "c") > first_done


async def test_fifo_within_a_lane(nursery: trio.Nursery) -> None:
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine)
    async with open_websocket_url(server.ws_url) as ws:
        await ws.send_message(frame(stream_id="a", input="first"))
        await ws.send_message(frame(stream_id="a", input="second"))
        events = await until_terminal(ws, 2)
    kinds = [e["type"] for e in events]
    first_done = kinds.index("response.completed")
    second_created = kinds.index("response.created", 1)
    assert second_created == first_done + 1
    first, second = (e["response"] for e in events if e["type"] == "response.completed")
    assert first["id"] != second["id"]
    completed(events[: first_done + 1])
    completed(events[first_done + 1 :])


async def test_age_limit_sends_an_error_then_closes(nursery: trio.Nursery) -> None:
    server = await start(nursery, ws_max_age_s=0.5)
    async with open_websocket_url(server.ws_url) as ws:
        start_time = trio.current_time()
        completed(await respond(ws))
        error = await recv(ws)
        assert trio.current_time() - start_time >= 0.45
        assert error["type"] == "error"
        assert error["status"] == 400
        assert error["error"]["code"] == "websocket_connection_limit_reached"
        assert error["error"]["type"] == "invalid_request_error"
        assert "new websocket connection" in error["error"]["message"].lower()
        assert "stream_id" not in error
        with pytest.raises(ConnectionClosed) as closed, trio.fail_after(TIMEOUT):
            await ws.get_message()
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1000
    await wait_for(lambda: server.engine.stats.ws_connections == 0)


async def test_an_idle_connection_gets_an_error_then_closes(nursery: trio.Nursery) -> None:
    server = await start(nursery, ws_idle_timeout_s=0.3)
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws))  # one response, then silence
        error = await recv(ws)
        assert error["type"] == "error"
        assert error["error"]["code"] == "websocket_idle_timeout"
        assert "stream_id" not in error
        with pytest.raises(ConnectionClosed) as closed, trio.fail_after(TIMEOUT):
            await ws.get_message()
        assert closed.value.reason is not None
        assert closed.value.reason.code == 1000
    await wait_for(lambda: server.engine.stats.ws_connections == 0)


async def test_the_idle_limit_waits_for_running_and_suspended_responses_and_pings(
    nursery: trio.Nursery,
) -> None:
    """Idle means no client frame (pings count) while nothing runs on the connection: a
    response longer than the limit, a rollout suspended longer than it, and a client that
    only pings all keep the connection; silence afterwards closes it."""

    def step(ctx: Any) -> Any:
        if ctx.function_tools and ctx.model_turns == 0:
            return call("exec", {"cmd": "ls"})
        return text("word " * 40)  # 40 tokens at 50 tokens/s: longer than the limit

    policy = ScriptedPolicy(step)
    engine = Engine(policy=policy, inference=SLOW)
    server = await start(nursery, engine, ws_idle_timeout_s=0.3)
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws))  # ran for longer than 0.3 s: no error in between
        tool = {"type": "function", "name": "exec", "parameters": {"type": "object"}}
        await ws.send_message(frame(shape="append", tools=[tool]))
        done = await recv(ws)
        while done["type"] != "response.done":
            assert done["type"] not in TERMINAL, done
            done = await recv(ws)
        await trio.sleep(0.9)  # suspended for three times the limit
        for _ in range(9):  # then only pings, for three times the limit
            await ws.ping()
            await trio.sleep(0.1)
        outputs = [
            {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"}
            for c in done["pending_calls"]
        ]
        append = {"type": "response.append", "response_id": done["response_id"], "input": outputs}
        await ws.send_message(json.dumps(append))
        assert (await until_terminal(ws))[-1]["type"] == "response.completed"
        error = await recv(ws)  # now idle
        assert error["error"]["code"] == "websocket_idle_timeout"


# -- bad frames and errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ('{"type": "response.create", "model": ', "invalid_json"),
        ('[{"type": "response.create"}]', "invalid_type"),
        (b'{"type": "response.create", "model": "m", "input": "hi"}', "invalid_frame"),
        ('{"type": "response.teleport"}', "unknown_event_type"),
    ],
    ids=["bad-json", "json-array", "binary", "unknown-type"],
)
async def test_bad_frame_is_an_error_event(
    nursery: trio.Nursery, message: str | bytes, code: str
) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        await ws.send_message(message)
        error = only_error([await recv(ws)])
        assert error["error"]["code"] == code
        assert "stream_id" not in error
        completed(await respond(ws))  # the connection still works


async def test_one_lanes_error_does_not_disturb_another(nursery: trio.Nursery) -> None:
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine)
    async with open_websocket_url(server.ws_url) as ws:
        await ws.send_message(frame(stream_id="a"))
        events = [await recv(ws)]
        while events[-1]["type"] != "response.output_text.delta":
            events.append(await recv(ws))
        # Mid-stream on a: lane b sends a create that fails in validation, then one that fails
        # on its previous_response_id.
        await ws.send_message(frame(stream_id="b", temperature=7))
        await ws.send_message(frame(stream_id="b", previous_response_id="resp_missing"))
        events += await until_terminal(ws, 3)
    lane_a = [e for e in events if e.get("stream_id") == "a"]
    lane_b = [e for e in events if e.get("stream_id") == "b"]
    assert len(lane_a) + len(lane_b) == len(events)
    assert [e["error"]["code"] for e in lane_b] == ["invalid_value", "previous_response_not_found"]
    assert index(events, "error", "b") < index(events, "response.completed", "a")
    response = completed(lane_a)
    assert response["output"][0]["content"][0]["text"] == ANSWER


async def test_failed_same_lane_continuation_evicts_the_parent(nursery: trio.Nursery) -> None:
    server = await start(nursery, Engine(policy=tool_policy()))
    async with open_websocket_url(server.ws_url) as ws:
        parent = completed(await respond(ws, stream_id="a"))
        call_id = the_call(parent)["call_id"]
        bad = only_error(
            await respond(
                ws, stream_id="a", previous_response_id=parent["id"], input=output_for("call_nope")
            )
        )
        assert bad["error"]["param"] == "input[0].call_id"
        assert bad["stream_id"] == "a"
        retry = only_error(
            await respond(
                ws, stream_id="a", previous_response_id=parent["id"], input=output_for(call_id)
            )
        )
        assert retry["error"]["code"] == "previous_response_not_found"
        assert retry["error"]["param"] == "previous_response_id"
        assert retry["stream_id"] == "a"


async def test_failed_cross_lane_fork_keeps_the_parent(nursery: trio.Nursery) -> None:
    server = await start(nursery, Engine(policy=tool_policy()))
    async with open_websocket_url(server.ws_url) as ws:
        parent = completed(await respond(ws, stream_id="a"))
        call_id = the_call(parent)["call_id"]
        bad = only_error(
            await respond(
                ws, stream_id="b", previous_response_id=parent["id"], input=output_for("call_nope")
            )
        )
        assert bad["error"]["param"] == "input[0].call_id"
        assert bad["stream_id"] == "b"
        cont = completed(
            await respond(
                ws, stream_id="a", previous_response_id=parent["id"], input=output_for(call_id)
            )
        )
        assert json.loads(the_call(cont)["arguments"]) == {"cmd": "make"}


async def test_each_error_is_counted_once(nursery: trio.Nursery) -> None:
    """Frame-level errors are counted once in stats.errors."""
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        only_error(await respond(ws, stream_id="a b"))
    assert server.engine.stats.errors == {"invalid_stream_id": 1}


async def test_request_error_on_a_lane_is_counted_once(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        only_error(await respond(ws, previous_response_id="resp_missing"))
    assert server.engine.stats.errors == {"previous_response_not_found": 1}


async def test_validation_failure_of_a_continuation_evicts_the_parent(
    nursery: trio.Nursery,
) -> None:
    server = await start(nursery, Engine(policy=tool_policy()))
    async with open_websocket_url(server.ws_url) as ws:
        parent = completed(await respond(ws, stream_id="a"))
        call_id = the_call(parent)["call_id"]
        bad = only_error(
            await respond(
                ws,
                stream_id="a",
                previous_response_id=parent["id"],
                input=output_for(call_id),
                temperature=7,
            )
        )
        assert bad["error"]["param"] == "temperature"
        retry = await respond(
            ws, stream_id="a", previous_response_id=parent["id"], input=output_for(call_id)
        )
        assert retry[-1]["type"] == "error", "the parent was still cached: the retry ran"
        assert only_error(retry)["error"]["code"] == "previous_response_not_found"


async def test_request_level_error_has_no_sequence_number(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        error = only_error(await respond(ws, previous_response_id="resp_missing"))
    assert "sequence_number" not in error, error


# -- the handshake ------------------------------------------------------------------------------


async def test_connection_limit_is_a_503_with_retry_after(nursery: trio.Nursery) -> None:
    server = await start(nursery, max_connections=1)
    async with open_websocket_url(server.ws_url) as first:
        with pytest.raises(ConnectionRejected) as rejected:
            async with open_websocket_url(server.ws_url):
                pass
        exc = rejected.value
        assert exc.status_code == 503
        headers = {k.decode().lower(): v.decode() for k, v in exc.headers}
        assert headers["retry-after"].isdigit()
        assert headers["content-type"] == "application/json"
        body = json.loads(exc.body or b"")
        assert body["error"]["message"]
        completed(await respond(first))  # the admitted connection is unaffected
    await wait_for(lambda: server.engine.stats.ws_connections == 0)
    async with open_websocket_url(server.ws_url) as again:
        completed(await respond(again))


@pytest.mark.parametrize("auth", [None, b"Bearer wrong", b"Basic k1", b"Bearer K1"])
async def test_bad_credentials_are_a_401(nursery: trio.Nursery, auth: bytes | None) -> None:
    server = await start(nursery, api_keys=frozenset({"k1"}))
    headers = [] if auth is None else [(b"Authorization", auth)]
    with pytest.raises(ConnectionRejected) as rejected:
        async with open_websocket_url(server.ws_url, extra_headers=headers):
            pass
    assert rejected.value.status_code == 401
    body = json.loads(rejected.value.body or b"")
    assert body["error"]["code"] == "invalid_api_key"
    assert server.engine.stats.ws_connections == 0


async def test_right_key_is_accepted(nursery: trio.Nursery) -> None:
    server = await start(nursery, api_keys=frozenset({"k1"}))
    async with open_websocket_url(
        server.ws_url, extra_headers=[(b"Authorization", b"Bearer k1")]
    ) as ws:
        completed(await respond(ws))


async def test_upgrade_on_another_path_is_a_404(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    with pytest.raises(ConnectionRejected) as rejected:
        async with open_websocket_url(f"ws://127.0.0.1:{server.port}/v1/other"):
            pass
    assert rejected.value.status_code == 404
    assert json.loads(rejected.value.body or b"")["error"]["message"]


async def test_openai_beta_header_is_accepted(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    headers = [
        (b"OpenAI-Beta", b"responses_websockets=2026-02-06"),
        (b"session_id", b"s1"),
        (b"originator", b"codex_cli_rs"),
    ]
    async with open_websocket_url(server.ws_url, extra_headers=headers) as ws:
        completed(await respond(ws))


async def test_permessage_deflate_offer_is_declined(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    client = await RawClient.connect(server.port, extensions=[PerMessageDeflate()])
    assert isinstance(client.handshake, AcceptConnection), client.handshake
    assert client.handshake.extensions == []
    await client.send(frame(stream_id="z"))
    events = [await client.recv()]
    while events[-1]["type"] not in TERMINAL:
        events.append(await client.recv())
    completed(events)
    await client.stream.send_all(client.conn.send(CloseConnection(code=1000)))
    await client.abort()


async def test_plain_http_on_the_same_port_after_websocket_use(nursery: trio.Nursery) -> None:
    server = await start(nursery)
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws))
    async with httpx.AsyncClient(base_url=server.http_url, timeout=TIMEOUT) as http:
        r = await http.post("/responses", json={"model": MODEL, "input": "hi"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "completed"
        assert body["output"][0]["content"][0]["text"] == ANSWER
        # A plain GET of the WebSocket path is not an upgrade: an HTTP error, not a hang.
        r = await http.get("/responses")
        assert r.status_code in (405, 426), r.text
        assert r.json()["error"]["message"]


# -- disconnects --------------------------------------------------------------------------------


async def stream_then_disconnect(server: Server, abrupt: bool) -> None:
    """One response completes, the next is dropped mid-stream by the client."""
    if abrupt:
        client = await RawClient.connect(server.port)
        assert isinstance(client.handshake, AcceptConnection)
        await client.send(frame(stream_id="a"))
        events = [await client.recv()]
        while events[-1]["type"] not in TERMINAL:
            events.append(await client.recv())
        completed(events)
        await client.send(frame(stream_id="a"))
        while (await client.recv())["type"] != "response.output_text.delta":
            pass
        await client.abort()  # TCP gone, no close frame (1006)
        return
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws, stream_id="a"))
        await ws.send_message(frame(stream_id="a"))
        while (await recv(ws))["type"] != "response.output_text.delta":
            pass
    # Leaving the block sent a close frame while the response was still streaming.


@pytest.mark.parametrize("abrupt", [True, False], ids=["tcp-drop", "close-frame"])
async def test_disconnect_mid_stream(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture, abrupt: bool
) -> None:
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine)
    with caplog.at_level(logging.WARNING):
        await stream_then_disconnect(server, abrupt)
        await wait_for(lambda: engine.stats.ws_connections == 0)
        await wait_for(lambda: engine.stats.billed >= 1)
        # The server is still serving.
        async with open_websocket_url(server.ws_url) as ws:
            completed(await respond(ws))
        await wait_for(lambda: engine.stats.ws_connections == 0)
    problems = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert problems == [], [r.getMessage() for r in problems]


@pytest.mark.parametrize("abrupt", [True, False], ids=["tcp-drop", "close-frame"])
async def test_response_interrupted_by_a_disconnect_is_billed(
    nursery: trio.Nursery, abrupt: bool
) -> None:
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine)
    await stream_then_disconnect(server, abrupt)
    await wait_for(lambda: engine.stats.ws_connections == 0)
    await trio.sleep(0.3)  # what is still running would have ended by now (12 tokens at 50/s)
    assert engine.stats.billed == 2
    assert engine.stats.responses == 2


async def test_http_sse_disconnect_is_billed(nursery: trio.Nursery) -> None:
    """The HTTP baseline: an SSE client dropping mid-stream is billed too."""
    engine = Engine(policy=ScriptedPolicy([text(ANSWER)]), inference=SLOW)
    server = await start(nursery, engine)
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    body = json.dumps({"model": MODEL, "input": "hi", "stream": True}).encode()
    head = (
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    )
    await stream.send_all(head + body)
    received = b""
    with trio.fail_after(TIMEOUT):
        while b"response.output_text.delta" not in received:
            received += await stream.receive_some()
    await stream.aclose()
    await wait_for(lambda: engine.stats.billed == 1)
    assert engine.stats.responses == 1
