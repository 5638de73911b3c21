# WebSocket mode on the wire, from trio tests against the `rollout_server` fixture's server (or
# `serving`, for server limits; both in the test's loop): lane and in-flight limits, FIFO lanes,
# the age limit, bad frames, error isolation between lanes, cache eviction after failures,
# handshake refusals (plain HTTP responses), HTTP beside WebSocket on one port, and client
# disconnects.
from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
import trio
import trio_websocket
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url
from wsproto.events import AcceptConnection
from wsproto.extensions import PerMessageDeflate

from rollout.model.policy import ScriptedPolicy, call, text
from rollout.testing.plugin import RolloutServer
from support.events import TERMINAL_OR_ERROR
from support.frames import append_frame
from support.logs import assert_no_tracebacks, watch_logs
from support.rawhttp import RawHttp, post
from support.rawws import RawWs
from support.servers import SLOW, Served, serving
from support.tools import BARE_EXEC_TOOL, MODEL, output
from support.waits import TIMEOUT, wait_for

# With SLOW (50 tokens/s) an answer of about 12 tokens streams long enough to observe ordering.
ANSWER = "one two three four five six seven eight nine ten eleven twelve"
TOOL_STEPS = [call("exec", {"cmd": "ls"}), call("exec", {"cmd": "make"})]
Server = RolloutServer | Served


@pytest.fixture
def server(rollout_server: RolloutServer) -> RolloutServer:
    """The `rollout_server` fixture's server, answering ANSWER."""
    rollout_server.script([text(ANSWER)])
    return rollout_server


def answering() -> ScriptedPolicy:
    return ScriptedPolicy([text(ANSWER)])


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
        if event["type"] in TERMINAL_OR_ERROR:
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


async def error_then_close(ws: trio_websocket.WebSocketConnection, code: str) -> dict[str, Any]:
    """The next event is a connection-level `error` with `code`, then the server closes with
    1000; returns the error event."""
    error = await recv(ws)
    assert error["type"] == "error", error
    assert error["error"]["code"] == code, error
    assert "stream_id" not in error
    with pytest.raises(ConnectionClosed) as closed, trio.fail_after(TIMEOUT):
        await ws.get_message()
    assert closed.value.reason is not None
    assert closed.value.reason.code == 1000
    return error


def the_call(response: dict[str, Any]) -> dict[str, Any]:
    [item] = response["output"]
    assert item["type"] == "function_call", item
    return item


def output_for(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "function_call_output", "call_id": call_id, "output": "ok"}]


# -- lanes and limits ---------------------------------------------------------------------------


async def test_32_named_lanes_then_the_stream_limit(server: RolloutServer) -> None:
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
async def test_invalid_stream_id(server: RolloutServer, stream_id: Any) -> None:
    async with open_websocket_url(server.ws_url) as ws:
        error = only_error(await respond(ws, stream_id=stream_id))
        assert error["error"]["code"] == "invalid_stream_id"
        assert error["error"]["param"] == "stream_id"
        assert "stream_id" not in error  # not a valid lane to tie it to
        # The longest valid name works.
        events = await respond(ws, stream_id="x" * 256)
        completed(events)
        assert {e["stream_id"] for e in events} == {"x" * 256}


async def test_in_flight_limit_queues_the_third_lane() -> None:
    async with serving(answering(), inference=SLOW, max_in_flight=2) as server:
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


async def test_fifo_within_a_lane(server: RolloutServer) -> None:
    server.profile(SLOW)
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


async def test_age_limit_sends_an_error_then_closes() -> None:
    async with serving(answering(), ws_max_age_s=0.5) as server:
        async with open_websocket_url(server.ws_url) as ws:
            start_time = trio.current_time()
            completed(await respond(ws))
            error = await error_then_close(ws, "websocket_connection_limit_reached")
            assert trio.current_time() - start_time >= 0.45
            assert error["status"] == 400
            assert error["error"]["type"] == "invalid_request_error"
            assert "new websocket connection" in error["error"]["message"].lower()
        await wait_for(lambda: server.engine.stats.ws_connections == 0)


async def test_an_idle_connection_gets_an_error_then_closes() -> None:
    async with serving(answering(), ws_idle_timeout_s=0.3) as server:
        async with open_websocket_url(server.ws_url) as ws:
            completed(await respond(ws))  # one response, then silence
            await error_then_close(ws, "websocket_idle_timeout")
        await wait_for(lambda: server.engine.stats.ws_connections == 0)


async def test_the_idle_limit_waits_for_running_and_suspended_responses_and_pings() -> None:
    """Idle means no client frame (pings count) while nothing runs on the connection: a
    response longer than the limit, a rollout suspended longer than it, and a client that
    only pings all keep the connection; silence afterwards closes it."""

    def step(ctx: Any) -> Any:
        if ctx.function_tools and ctx.model_turns == 0:
            return call("exec", {"cmd": "ls"})
        return text("word " * 40)  # 40 tokens at 50 tokens/s: longer than the limit

    async with (
        serving(ScriptedPolicy(step), inference=SLOW, ws_idle_timeout_s=0.3) as server,
        open_websocket_url(server.ws_url) as ws,
    ):
        completed(await respond(ws))  # ran for longer than 0.3 s: no error in between
        await ws.send_message(frame(shape="append", tools=[BARE_EXEC_TOOL]))
        done = await recv(ws)
        while done["type"] != "response.done":
            assert done["type"] not in TERMINAL_OR_ERROR, done
            done = await recv(ws)
        await trio.sleep(0.9)  # suspended for three times the limit
        for _ in range(9):  # then only pings, for three times the limit
            await ws.ping()
            await trio.sleep(0.1)
        outputs = [output(c["call_id"], "ok") for c in done["pending_calls"]]
        await ws.send_message(json.dumps(append_frame(done["response_id"], outputs)))
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
    server: RolloutServer, message: str | bytes, code: str
) -> None:
    async with open_websocket_url(server.ws_url) as ws:
        await ws.send_message(message)
        error = only_error([await recv(ws)])
        assert error["error"]["code"] == code
        assert "stream_id" not in error
        completed(await respond(ws))  # the connection still works


async def test_one_lanes_error_does_not_disturb_another(server: RolloutServer) -> None:
    server.profile(SLOW)
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
    assert [e["error"]["code"] for e in lane_b] == [
        "decimal_above_max_value",
        "previous_response_not_found",
    ]
    assert index(events, "error", "b") < index(events, "response.completed", "a")
    response = completed(lane_a)
    assert response["output"][0]["content"][0]["text"] == ANSWER


async def a_parent(ws: trio_websocket.WebSocketConnection) -> tuple[dict[str, Any], str]:
    """A completed response on lane "a" that called exec: (the response, the call's id)."""
    parent = completed(await respond(ws, stream_id="a", tools=[BARE_EXEC_TOOL]))
    return parent, the_call(parent)["call_id"]


async def continuation(
    ws: trio_websocket.WebSocketConnection,
    parent: dict[str, Any],
    lane: str,
    call_id: str,
    **fields: Any,
) -> list[dict[str, Any]]:
    """A create on `lane` continuing `parent` with the output for `call_id`; its events."""
    fields.setdefault("tools", [BARE_EXEC_TOOL])  # (the scripted model calls it)
    return await respond(
        ws, stream_id=lane, previous_response_id=parent["id"], input=output_for(call_id), **fields
    )


async def refused_continuation(
    ws: trio_websocket.WebSocketConnection, lane: str
) -> tuple[dict[str, Any], str]:
    """`a_parent`, then a continuation of it on `lane` with an unknown call id, refused on that
    lane: (the parent, its call's id)."""
    parent, call_id = await a_parent(ws)
    bad = only_error(await continuation(ws, parent, lane, "call_nope"))
    assert bad["error"]["param"] == "input[0].call_id"
    assert bad["stream_id"] == lane
    return parent, call_id


async def test_failed_same_lane_continuation_evicts_the_parent(server: RolloutServer) -> None:
    server.script(TOOL_STEPS)
    async with open_websocket_url(server.ws_url) as ws:
        parent, call_id = await refused_continuation(ws, "a")
        retry = only_error(await continuation(ws, parent, "a", call_id))
        assert retry["error"]["code"] == "previous_response_not_found"
        assert retry["error"]["param"] == "previous_response_id"
        assert retry["stream_id"] == "a"


async def test_failed_cross_lane_fork_keeps_the_parent(server: RolloutServer) -> None:
    server.script(TOOL_STEPS)
    async with open_websocket_url(server.ws_url) as ws:
        parent, call_id = await refused_continuation(ws, "b")
        cont = completed(await continuation(ws, parent, "a", call_id))
        assert json.loads(the_call(cont)["arguments"]) == {"cmd": "make"}


async def test_each_error_is_counted_once(server: RolloutServer) -> None:
    """Frame-level errors are counted once in stats.errors."""
    async with open_websocket_url(server.ws_url) as ws:
        only_error(await respond(ws, stream_id="a b"))
    assert server.engine.stats.errors == {"invalid_stream_id": 1}


async def test_request_error_on_a_lane_is_counted_once(server: RolloutServer) -> None:
    async with open_websocket_url(server.ws_url) as ws:
        only_error(await respond(ws, previous_response_id="resp_missing"))
    assert server.engine.stats.errors == {"previous_response_not_found": 1}


async def test_validation_failure_of_a_continuation_evicts_the_parent(
    server: RolloutServer,
) -> None:
    server.script(TOOL_STEPS)
    async with open_websocket_url(server.ws_url) as ws:
        parent, call_id = await a_parent(ws)
        bad = only_error(await continuation(ws, parent, "a", call_id, temperature=7))
        assert bad["error"]["param"] == "temperature"
        retry = await continuation(ws, parent, "a", call_id)
        assert retry[-1]["type"] == "error", "the parent was still cached: the retry ran"
        assert only_error(retry)["error"]["code"] == "previous_response_not_found"


async def test_request_level_error_has_no_sequence_number(server: RolloutServer) -> None:
    async with open_websocket_url(server.ws_url) as ws:
        error = only_error(await respond(ws, previous_response_id="resp_missing"))
    assert "sequence_number" not in error, error


# -- the handshake ------------------------------------------------------------------------------


async def test_connection_limit_is_a_503_with_retry_after() -> None:
    async with serving(answering(), max_connections=1) as server:
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
async def test_bad_credentials_are_a_401(auth: bytes | None) -> None:
    async with serving(answering(), api_keys=frozenset({"k1"})) as server:
        headers = [] if auth is None else [(b"Authorization", auth)]
        with pytest.raises(ConnectionRejected) as rejected:
            async with open_websocket_url(server.ws_url, extra_headers=headers):
                pass
        assert rejected.value.status_code == 401
        body = json.loads(rejected.value.body or b"")
        assert body["error"]["code"] == "invalid_api_key"
        assert server.engine.stats.ws_connections == 0


async def test_right_key_is_accepted() -> None:
    async with (
        serving(answering(), api_keys=frozenset({"k1"})) as server,
        open_websocket_url(server.ws_url, extra_headers=[(b"Authorization", b"Bearer k1")]) as ws,
    ):
        completed(await respond(ws))


async def test_upgrade_on_another_path_is_a_404(server: RolloutServer) -> None:
    with pytest.raises(ConnectionRejected) as rejected:
        async with open_websocket_url(f"ws://127.0.0.1:{server.port}/v1/other"):
            pass
    assert rejected.value.status_code == 404
    assert json.loads(rejected.value.body or b"")["error"]["message"]


async def test_openai_beta_header_is_accepted(server: RolloutServer) -> None:
    headers = [
        (b"OpenAI-Beta", b"responses_websockets=2026-02-06"),
        (b"session_id", b"s1"),
        (b"originator", b"codex_cli_rs"),
    ]
    async with open_websocket_url(server.ws_url, extra_headers=headers) as ws:
        completed(await respond(ws))


async def test_permessage_deflate_offer_is_declined(server: RolloutServer) -> None:
    client = await RawWs.connect(server.port, extensions=[PerMessageDeflate()])
    assert isinstance(client.handshake, AcceptConnection), client.handshake
    assert client.handshake.extensions == []
    await client.send_text(frame(stream_id="z"))
    completed(await client.until(lambda e: e["type"] in TERMINAL_OR_ERROR))
    await client.aclose()


async def test_plain_http_on_the_same_port_after_websocket_use(server: RolloutServer) -> None:
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws))
    async with httpx.AsyncClient(base_url=server.http_base_url, timeout=TIMEOUT) as http:
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
        client = await RawWs.connect(server.port)
        await client.send_text(frame(stream_id="a"))
        completed(await client.until(lambda e: e["type"] in TERMINAL_OR_ERROR))
        await client.send_text(frame(stream_id="a"))
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
    server: RolloutServer, caplog: pytest.LogCaptureFixture, abrupt: bool
) -> None:
    server.profile(SLOW)
    engine = server.engine
    watch_logs(caplog)
    await stream_then_disconnect(server, abrupt)
    await wait_for(lambda: engine.stats.ws_connections == 0)
    await wait_for(lambda: engine.stats.billed >= 1)
    # The server is still serving.
    async with open_websocket_url(server.ws_url) as ws:
        completed(await respond(ws))
    await wait_for(lambda: engine.stats.ws_connections == 0)
    assert_no_tracebacks(caplog)


@pytest.mark.parametrize("abrupt", [True, False], ids=["tcp-drop", "close-frame"])
async def test_response_interrupted_by_a_disconnect_is_billed(
    server: RolloutServer, abrupt: bool
) -> None:
    server.profile(SLOW)
    engine = server.engine
    await stream_then_disconnect(server, abrupt)
    await wait_for(lambda: engine.stats.ws_connections == 0)
    await wait_for(lambda: not engine.running and engine.stats.billed >= 2)
    assert engine.stats.billed == 2
    assert engine.stats.responses == 2


async def test_http_sse_disconnect_is_billed(server: RolloutServer) -> None:
    """The HTTP baseline: an SSE client dropping mid-stream is billed too."""
    server.profile(SLOW)
    engine = server.engine
    conn = await RawHttp.connect(server.port)
    await conn.send(post({"model": MODEL, "input": "hi", "stream": True}))
    await conn.read_until(b"response.output_text.delta")
    await conn.aclose()
    await wait_for(lambda: engine.stats.billed == 1)
    assert engine.stats.responses == 1
