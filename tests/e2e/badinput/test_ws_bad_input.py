# Malformed input over WebSocket, one table row per input. Before the row, connection A holds an
# append rollout suspended on lane "bg" (plus a finished chain response), and connection B holds
# one suspended on lane "other". The row is sent on A and must get exactly its `error` event
# (spec §1.3: status, error.code, error.param, stream_id only when tied to a lane, no
# sequence_number) and/or close code. Afterwards: A still serves a valid create (unless the row
# closed it), A's rollout finishes with a valid `response.append` (from a new connection when A
# was closed: the rollout was parked), B and a fresh connection still work, B's rollout finishes,
# and nothing the server logged has a traceback or is at ERROR level.
#
# Close codes (RFC 6455): invalid UTF-8 in a text message fails the connection with 1007 (§8.1;
# no error event: the frame is not a message), framing violations with 1002 (§5), and a message
# over max_frame_bytes gets an `error` event (frame_too_large) and then 1009.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import orjson
import pytest
import trio

from support.badinput import check_response_events, deep, ends, watched_server
from support.errors import ANY, assert_error
from support.frames import append_frame
from support.rawws import CLOSE, CONTINUATION, PING, TEXT, RawWs, raw_frame
from support.tables import assert_table, params
from support.tools import EXEC_TOOL, MODEL, output
from support.waits import TIMEOUT

LIMIT = 32 * 1024
CONFIG: dict[str, Any] = {"max_frame_bytes": LIMIT}


@attrs.frozen
class Ctx:
    rid: str  # A's rollout, suspended on lane "bg"
    call_id: str
    other_rid: str  # B's rollout, suspended on lane "other"
    other_call_id: str
    chain_id: str  # a completed chain response of A (store: false)


@attrs.frozen
class Binary:
    data: bytes


@attrs.frozen
class Raw:
    """Frames already on the wire format (masked unless the row is about that)."""

    data: bytes


Frame = dict[str, Any] | str | Binary | Raw


@attrs.frozen
class Row:
    id: str
    frame: Frame | Callable[[Ctx], Frame]
    status: int | None  # the error event's status; None: no error event
    code: str | None = None
    param: str | None = None
    lane: str | None = None  # the error event's stream_id
    close: int | None = None  # the close code that must follow; None: the connection stays open
    timeout: float = TIMEOUT  # a liveness bound for the error event
    bug: str | None = None


def create(**fields: Any) -> dict[str, Any]:
    """A `response.create` frame: a valid one, with `fields` replaced (... removes a key)."""
    out: dict[str, Any] = {"type": "response.create", "model": MODEL, "input": "hi", "store": False}
    for key, value in fields.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def raw_create(tail: str) -> str:
    """A create frame whose last field is raw JSON text (`tail` = `"key": value`)."""
    return f'{{"type": "response.create", "model": "{MODEL}", "input": "hi", {tail}}}'


def item(**fields: Any) -> dict[str, Any]:
    return create(input=[fields])


def text_frame(payload: bytes, **kw: Any) -> Raw:
    return Raw(raw_frame(TEXT, payload, **kw))


def at_size(size: int) -> str:
    """A create frame of exactly `size` bytes that is refused for its unknown previous id."""
    frame = orjson.dumps(create(previous_response_id="resp_missing", input=""))
    return orjson.dumps(
        create(previous_response_id="resp_missing", input="x" * (size - len(frame)))
    ).decode()


DEPTH_BUG = (
    "protocol/codec.py keeps free-form JSON (`reasoning`, `text`, tool `parameters`, ...) at any "
    "depth orjson accepts (1024) but cannot encode it back (cattrs unstructure recursion / "
    "orjson.dumps depth limit 254). Over WebSocket the create is accepted, encoding "
    "response.created fails inside rollout/engine.py Engine.run (logged at ERROR with a "
    "traceback: 'sampling loop failed'), the client gets an `error` server_error with "
    "sequence_number 2 and no response.created, encoding response.failed fails again, the "
    "exception escapes the lane task (rollout/ws.py WsSession._serve) and rollout/server.py "
    "logs 'connection handler failed'; the socket is closed with 1000 (serve_websocket's "
    "finally: a crash reported as a normal close), ending whatever else runs on it (suspended "
    "append rollouts are parked). Expected: an error event 400 naming the field, the "
    "connection open."
)
EMPTY_APPEND_BUG = (
    "rollout/ws.py WsSession._append / rollout/append.py AppendHost.check accept "
    "`response.append` with `input: []`: no error, no event, nothing happens, so the client "
    "waits for an answer that never comes. Expected: error 400 empty_input, param input (as for "
    "an empty create input)."
)
OTHER_LANE_BUG = (
    "rollout/ws.py WsSession._append runs AppendHost.check before Live.attach_parked refuses a "
    "rollout attached to another connection: an append with a bad call_id to connection B's "
    'rollout, sent on A, gets 400 unknown_call_id tagged with B\'s lane (`stream_id: "other"`, '
    "a lane A never opened) and reveals B's pending calls; with valid items the same append "
    "gets 404 response_not_found. Expected: 404 response_not_found, param response_id, no "
    "stream_id, whatever the items."
)

ROWS: list[Row] = [
    # -- JSON syntax ----------------------------------------------------------------------------
    Row("invalid-json", '{"type": "response.create", "model": ', 400, "invalid_json"),
    Row("not-json", "hello", 400, "invalid_json"),
    Row("empty-text-frame", "", 400, "invalid_json"),
    Row("trailing-garbage", orjson.dumps(create()).decode() + " x", 400, "invalid_json"),
    Row("bom", "\ufeff" + orjson.dumps(create()).decode(), 400, "invalid_json"),
    Row("lone-surrogate-escape", raw_create('"instructions": "\\udc00"'), 400, "invalid_json"),
    Row("raw-control-char", raw_create('"instructions": "a\x01b"'), 400, "invalid_json"),
    Row("nan-literal", raw_create('"temperature": NaN'), 400, "invalid_json"),
    Row("infinity-literal", raw_create('"temperature": Infinity'), 400, "invalid_json"),
    Row("huge-float-1e400", raw_create('"top_p": 1e400'), 400, "invalid_json"),
    Row("deep-nesting-10000", raw_create('"tools": ' + deep(10_000).decode()), 400, "invalid_json"),
    # -- JSON that is not an event object -------------------------------------------------------
    Row("json-array", '[{"type": "response.create"}]', 400, "invalid_type"),
    Row("json-string", '"response.create"', 400, "invalid_type"),
    Row("json-null", "null", 400, "invalid_type"),
    Row("json-number", "42", 400, "invalid_type"),
    Row("unknown-event-type", {"type": "response.teleport"}, 400, "unknown_event_type", "type"),
    Row("event-type-missing", create(type=...), 400, "unknown_event_type", "type"),
    Row("event-type-int", create(type=1), 400, "unknown_event_type", "type"),
    Row("event-type-null", create(type=None), 400, "unknown_event_type", "type"),
    # `response.steer` is a known event now: tests/e2e/pause/test_steer_sdk.py has its failures.
    Row(
        "event-type-realtime",
        {"type": "session.update", "session": {}},
        400,
        "unknown_event_type",
        "type",
    ),
    # -- create: required fields and types ------------------------------------------------------
    Row("model-missing", create(model=...), 400, "missing_required_parameter", "model"),
    Row("input-missing", create(input=...), 400, "missing_required_parameter", "input"),
    Row("model-int", create(model=5), 400, "invalid_type", "model"),
    Row("model-empty", create(model=""), 400, "invalid_value", "model"),
    Row("input-empty-array", create(input=[]), 400, "empty_input", "input"),
    Row("input-empty-string", create(input=""), 400, "empty_input", "input"),
    Row("input-int", create(input=1), 400, "invalid_type", "input"),
    Row("stream-string", create(stream="yes"), 400, "invalid_type", "stream"),
    Row("generate-string", create(generate="no"), 400, "invalid_type", "generate"),
    Row("tools-object", create(tools={}), 400, "invalid_type", "tools"),
    Row(
        "tool-bad-name",
        create(tools=[{"type": "function", "name": "a b"}]),
        400,
        "invalid_value",
        "tools[0].name",
    ),
    Row("temperature-string", create(temperature="hot"), 400, "invalid_type", "temperature"),
    Row(
        "temperature-range",
        create(temperature=2.5),
        400,
        "decimal_above_max_value",
        "temperature",
    ),
    Row(
        "huge-int-2**70",
        raw_create(f'"max_output_tokens": {2**70}'),
        400,
        "invalid_type",
        "max_output_tokens",
    ),
    Row("metadata-int-value", create(metadata={"k": 1}), 400, "invalid_type", "metadata.k"),
    Row("background-true", create(background=True), 400, "unsupported_parameter", "background"),
    Row(
        "conversation-unknown",
        create(conversation={"id": "conv_1"}),
        404,
        "conversation_not_found",
        "conversation",
    ),
    Row(
        "conversation-with-previous",
        create(conversation="conv_1", previous_response_id="resp_1"),
        400,
        "mutually_exclusive_parameters",
        None,
    ),
    Row("shape-bogus", create(shape="tree"), 400, "invalid_value", "shape"),
    # -- create: items inside input -------------------------------------------------------------
    Row("item-unknown-type", item(type="bogus_item"), 400, "invalid_value", "input[0].type"),
    Row("item-not-object", create(input=["hi"]), 400, "invalid_type", "input[0]"),
    Row(
        "fco-without-call-id",
        item(type="function_call_output", output="x"),
        400,
        "missing_required_parameter",
        "input[0].call_id",
    ),
    Row(
        "fco-output-int",
        item(type="function_call_output", call_id="c", output=5),
        400,
        "invalid_type",
        "input[0].output",
    ),
    Row(
        "message-role-bogus",
        item(role="wizard", content="hi"),
        400,
        "invalid_value",
        "input[0].role",
    ),
    Row(
        "part-unknown-type",
        item(role="user", content=[{"type": "input_bogus"}]),
        400,
        "invalid_value",
        "input[0].content[0].type",
    ),
    Row(
        "item-status-bogus",
        item(role="user", content="hi", status="bogus"),
        400,
        "invalid_value",
        "input[0].status",
    ),
    Row(
        "image-detail-bogus",
        item(
            role="user",
            content=[{"type": "input_image", "image_url": "https://x", "detail": "AAA"}],
        ),
        400,
        "invalid_value",
        "input[0].content[0].detail",
    ),
    Row(
        "deep-nesting-900-input",
        raw_create('"tools": [], "input": ' + deep(900).decode()),
        400,
        "invalid_value",
        None,
    ),
    Row(
        "deep-nesting-in-reasoning",
        raw_create('"reasoning": {"context": ' + deep(300).decode() + "}"),
        400,
        "invalid_value",
        None,
    ),
    # -- create: ids ----------------------------------------------------------------------------
    Row(
        "prev-control-chars",
        create(previous_response_id="resp_\x00\x07\n\x1b"),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    Row(
        "prev-very-long",
        create(previous_response_id="resp_" + "x" * 20_000),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    Row(
        "prev-empty-string",
        create(previous_response_id=""),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    Row("prev-int", create(previous_response_id=7), 400, "invalid_type", "previous_response_id"),
    Row(
        "prev-is-suspended-rollout",
        lambda c: create(previous_response_id=c.rid),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    # -- huge values: the error message echoes them truncated ------------------------------------
    Row("shape-huge", create(shape="x" * 30_000), 400, "invalid_value", "shape"),
    Row(
        "event-type-huge",
        {"type": "response." + "t" * 30_000},
        400,
        "unknown_event_type",
        "type",
    ),
    Row("metadata-key-huge", create(metadata={"k" * 30_000: 5}), 400, "invalid_type", ANY),
    Row(
        "append-unknown-id-huge",
        append_frame("resp_" + "x" * 30_000, [output("call_x")]),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-unknown-call-id-huge",
        lambda c: append_frame(c.rid, [output("c" * 30_000)]),
        400,
        "unknown_call_id",
        "input[0].call_id",
        lane="bg",
    ),
    Row(
        "append-output-status-bogus",
        lambda c: append_frame(c.rid, [{**output(c.call_id), "status": "bogus"}]),
        400,
        "invalid_value",
        "input[0].status",
        lane="bg",
    ),
    Row(
        "cancel-unknown-id-huge",
        {"type": "response.cancel", "response_id": "resp_" + "x" * 30_000},
        404,
        "response_not_found",
        "response_id",
    ),
    # -- stream_id ------------------------------------------------------------------------------
    Row("stream-id-empty", create(stream_id=""), 400, "invalid_stream_id", "stream_id"),
    Row("stream-id-bad-chars", create(stream_id="lane one"), 400, "invalid_stream_id", "stream_id"),
    Row(
        "stream-id-control-char", create(stream_id="lane\n"), 400, "invalid_stream_id", "stream_id"
    ),
    Row("stream-id-too-long", create(stream_id="a" * 257), 400, "invalid_stream_id", "stream_id"),
    Row("stream-id-int", create(stream_id=3), 400, "invalid_stream_id", "stream_id"),
    Row("stream-id-object", create(stream_id={"id": "a"}), 400, "invalid_stream_id", "stream_id"),
    Row(
        "stream-id-on-bad-create",
        create(stream_id="lane-x", model=5),
        400,
        "invalid_type",
        "model",
        lane="lane-x",
    ),
    Row(
        "stream-id-bad-on-append",
        lambda c: append_frame(c.rid, [output(c.call_id)], stream_id="a b"),
        400,
        "invalid_stream_id",
        "stream_id",
    ),
    # -- frames that are not JSON text ----------------------------------------------------------
    Row("binary-frame", Binary(orjson.dumps(create())), 400, "invalid_frame"),
    Row("binary-empty", Binary(b""), 400, "invalid_frame"),
    Row("binary-not-utf8", Binary(b"\xff\xfe\x00"), 400, "invalid_frame"),
    Row(
        "invalid-utf8-text",
        text_frame(b'{"type": "response.create", "input": "caf\xe9"}'),
        None,
        close=1007,
    ),
    Row("invalid-utf8-overlong", text_frame(b'{"type": "\xc0\xaf"}'), None, close=1007),
    Row("invalid-utf8-surrogate", text_frame(b'{"type": "\xed\xa0\x80"}'), None, close=1007),
    Row("invalid-utf8-truncated", text_frame(b'{"type": "\xe2\x82'), None, close=1007),
    Row(
        "invalid-utf8-across-fragments",
        Raw(raw_frame(TEXT, b'{"type": "\xc3', fin=False) + raw_frame(CONTINUATION, b'("}')),
        None,
        close=1007,
    ),
    # -- sizes (max_frame_bytes) ----------------------------------------------------------------
    Row(
        "at-limit-is-not-too-large",
        at_size(LIMIT),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    Row("over-limit-by-one", at_size(LIMIT + 1), 400, "frame_too_large", close=1009),
    Row(
        "text-over-limit",
        orjson.dumps(create(input="x" * 2 * LIMIT)).decode(),
        400,
        "frame_too_large",
        close=1009,
    ),
    Row("binary-over-limit", Binary(b"x" * (LIMIT + 100)), 400, "frame_too_large", close=1009),
    Row(
        "fragments-over-limit",
        Raw(
            raw_frame(TEXT, b"[" + b"1," * 6000, fin=False)
            + raw_frame(CONTINUATION, b"1," * 6000, fin=False)
            + raw_frame(CONTINUATION, b"1," * 6000 + b"1]")
        ),
        400,
        "frame_too_large",
        close=1009,
    ),
    # -- framing violations (RFC 6455 §5: fail the connection with 1002) -------------------------
    Row("unmasked-frame", text_frame(orjson.dumps(create()), mask=False), None, close=1002),
    Row("rsv1-without-extension", text_frame(orjson.dumps(create()), rsv=4), None, close=1002),
    Row("reserved-opcode", Raw(raw_frame(0x3, b"{}")), None, close=1002),
    Row("continuation-without-start", Raw(raw_frame(CONTINUATION, b"{}")), None, close=1002),
    Row("ping-payload-over-125", Raw(raw_frame(PING, b"p" * 126)), None, close=1002),
    Row("fragmented-ping", Raw(raw_frame(PING, b"p", fin=False)), None, close=1002),
    Row(
        "text-inside-fragmented-message",
        Raw(raw_frame(TEXT, b"[1,", fin=False) + raw_frame(TEXT, b"2]")),
        None,
        close=1002,
    ),
    Row("close-code-invalid", Raw(raw_frame(CLOSE, (999).to_bytes(2, "big"))), None, close=1002),
    Row("close-payload-one-byte", Raw(raw_frame(CLOSE, b"\x03")), None, close=1002),
    # -- response.append ------------------------------------------------------------------------
    Row(
        "append-unknown-id",
        lambda c: append_frame("resp_missing", [output(c.call_id)]),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-to-chain-response",
        lambda c: append_frame(c.chain_id, [output(c.call_id)]),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-response-id-missing",
        lambda c: {"type": "response.append", "input": [output(c.call_id)]},
        400,
        "missing_required_parameter",
        "response_id",
    ),
    Row(
        "append-response-id-null",
        lambda c: append_frame(None, [output(c.call_id)]),
        400,
        "missing_required_parameter",
        "response_id",
    ),
    Row(
        "append-response-id-int",
        lambda c: append_frame(5, [output(c.call_id)]),
        400,
        "invalid_type",
        "response_id",
    ),
    Row(
        "append-input-missing",
        lambda c: {"type": "response.append", "response_id": c.rid},
        400,
        "missing_required_parameter",
        "input",
    ),
    Row("append-input-string", lambda c: append_frame(c.rid, "done"), 400, "invalid_type", "input"),
    Row(
        "append-unknown-call-id",
        lambda c: append_frame(c.rid, [output("call_nope")]),
        400,
        "unknown_call_id",
        "input[0].call_id",
        lane="bg",
    ),
    Row(
        "append-duplicate-output",
        lambda c: append_frame(c.rid, [output(c.call_id), output(c.call_id)]),
        400,
        "duplicate_call_output",
        "input[1].call_id",
        lane="bg",
    ),
    Row(
        "append-function-call-item",
        lambda c: append_frame(
            c.rid, [{"type": "function_call", "call_id": "c", "name": "exec", "arguments": "{}"}]
        ),
        400,
        "invalid_value",
        "input[0].type",
        lane="bg",
    ),
    Row(
        "append-output-without-call-id",
        lambda c: append_frame(c.rid, [{"type": "function_call_output", "output": "x"}]),
        400,
        "missing_required_parameter",
        "input[0].call_id",
    ),
    Row(
        "append-item-unknown-type",
        lambda c: append_frame(c.rid, [{"type": "bogus_item"}]),
        400,
        "invalid_value",
        "input[0].type",
    ),
    Row(
        "append-to-other-connection",
        lambda c: append_frame(c.other_rid, [output(c.other_call_id)]),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-to-other-connection-bad-call-id",
        lambda c: append_frame(c.other_rid, [output("call_nope")]),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-empty-input",
        lambda c: append_frame(c.rid, []),
        400,
        "empty_input",
        "input",
        lane="bg",
    ),
    # -- response.cancel ------------------------------------------------------------------------
    Row(
        "cancel-unknown-id",
        {"type": "response.cancel", "response_id": "resp_missing"},
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "cancel-chain-response",
        lambda c: {"type": "response.cancel", "response_id": c.chain_id},
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "cancel-response-id-missing",
        {"type": "response.cancel"},
        400,
        "missing_required_parameter",
        "response_id",
    ),
    Row(
        "cancel-response-id-int",
        {"type": "response.cancel", "response_id": 5},
        400,
        "invalid_type",
        "response_id",
    ),
    Row(
        "cancel-other-connection",
        lambda c: {"type": "response.cancel", "response_id": c.other_rid},
        404,
        "response_not_found",
        "response_id",
    ),
]


# -- the test -----------------------------------------------------------------------------------


def append_create(lane: str) -> dict[str, Any]:
    return create(shape="append", tools=[EXEC_TOOL], stream_id=lane, input="Fix the tests.")


async def suspend(ws: RawWs, lane: str) -> tuple[str, str]:
    """Start an append rollout on `lane`; it suspends on one exec call: (id, call_id)."""
    await ws.send_json(append_create(lane))
    events = await ws.until(ends)
    done = check_response_events(events, lane=lane, last="response.done")
    [pending] = done["pending_calls"]
    return done["response_id"], pending["call_id"]


async def chain(ws: RawWs) -> str:
    """A valid create on the default lane: a completed response (its id)."""
    await ws.send_json(create(input="Are you still there?"))
    events = await ws.until(ends)
    done = check_response_events(events, lane=None)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    return done["response"]["id"]


async def resume(ws: RawWs, rid: str, call_id: str, lane: str) -> None:
    """Finish a suspended rollout with a valid append: response.completed on its lane."""
    await ws.send_json(append_frame(rid, [output(call_id)]))
    events = await ws.until(ends)
    done = check_response_events(events, lane=lane)
    assert done["response"]["id"] == rid
    assert done["response"]["status"] == "completed"


async def send(ws: RawWs, frame: Frame) -> None:
    if isinstance(frame, Binary):
        await ws.send_bytes(frame.data)
    elif isinstance(frame, Raw):
        await ws.send_raw(frame.data)
    else:
        await ws.send_json(frame)


def check_error_event(row: Row, event: dict[str, Any]) -> None:
    assert event["type"] == "error", event
    assert set(event) <= {"type", "status", "error", "stream_id"}, event  # no sequence_number
    assert event["status"] == row.status, event
    assert event.get("stream_id") == row.lane, event
    assert_error(event["error"], code=row.code, param=row.param)


def test_table_size() -> None:
    assert_table(ROWS, at_least=40)


@pytest.mark.parametrize("row", params(ROWS))
async def test_ws_bad_input(row: Row, caplog: pytest.LogCaptureFixture) -> None:
    async with watched_server(caplog, **CONFIG) as server:
        a = await RawWs.connect(server.port)
        b = await RawWs.connect(server.port)
        others: list[RawWs] = []
        try:
            rid, call_id = await suspend(a, "bg")
            chain_id = await chain(a)
            other_rid, other_call_id = await suspend(b, "other")
            ctx = Ctx(rid, call_id, other_rid, other_call_id, chain_id)

            await send(a, row.frame(ctx) if callable(row.frame) else row.frame)
            if row.status is not None:
                with trio.fail_after(row.timeout):
                    check_error_event(row, await a.recv())
            if row.close is not None:
                code, events = await a.expect_close()
                assert events == [], events
                assert code == row.close
                # A's rollout was parked: a new connection resumes it, and works otherwise.
                c = await RawWs.connect(server.port)
                others.append(c)
                await resume(c, rid, call_id, "bg")
                await chain(c)
            else:
                await chain(a)  # the next events on A are this create's: nothing stray
                await resume(a, rid, call_id, "bg")
                await chain(a)
            await chain(b)
            await resume(b, other_rid, other_call_id, "other")
            fresh = await RawWs.connect(server.port)
            others.append(fresh)
            await chain(fresh)
        finally:
            for ws in (a, b, *others):
                await ws.aclose()
