# Malformed input over HTTP, one table row per input: each row is sent on a keep-alive connection
# that has already served a request, and must get exactly its status, error code and `param` in
# the standard envelope (spec §2.1), or, for a stalled request, a silent close after the header
# timeout. Afterwards the same connection still serves a valid create (unless the row is one the
# server must close on: 413, 431, unparseable HTTP, timeouts; then it must close), a second
# connection does too, and a suspended append rollout made before the row still finishes with a
# valid append. Nothing the server logs while doing so has a traceback or is at ERROR level.
from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import attrs
import orjson
import pytest
import trio

from support.badinput import create_body, deep, http_create, watched_server
from support.errors import ANY, assert_error
from support.rawhttp import HttpResponse, RawHttp, chunked, http_request, post
from support.tables import assert_table, params
from support.tools import EXEC_TOOL, MODEL, output
from support.waits import TIMEOUT

LIMIT = 64 * 1024
CONFIG: dict[str, Any] = {
    "max_body_bytes": LIMIT,
    "max_header_bytes": 8 * 1024,
    "header_timeout_s": 0.3,
    "idle_timeout_s": 6 * TIMEOUT,  # beyond every wait here: a close seen is another timer's
}


@attrs.frozen
class Ctx:
    """What rows may refer to: a suspended append rollout and a stored chain response."""

    rid: str
    call_id: str
    stored: str

    @property
    def append_path(self) -> str:
        return f"/v1/responses/{self.rid}/append"


Pieces = list[tuple[bytes, float]]  # (bytes to send, then seconds to wait)


@attrs.frozen
class Row:
    id: str
    request: bytes | Callable[[Ctx], bytes | Pieces]
    status: int | None  # None: the server closes the connection without a response
    code: str | None = None
    param: str | None = None
    keep: bool = True  # the connection serves the next request (else: the server closes it)
    allow: str | None = None  # the expected `Allow` header of a 405
    header: tuple[str, str] | None = None  # another header the response must carry
    closes_after: float = 0.0  # the close (status None) comes no sooner than this (seconds)
    timeout: float = TIMEOUT  # a liveness bound for the response
    ctype: str = "application/json"  # of the response
    method_head: bool = False  # a HEAD request: headers as for GET, no body
    bug: str | None = None  # a known server bug: the row is a strict xfail


def body(**fields: Any) -> bytes:
    """A create body: a valid one, with `fields` replaced (a value of ... removes the key)."""
    out = create_body()
    for key, value in fields.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return orjson.dumps(out)


def refused(id: str, code: str, param: str | None, **fields: Any) -> Row:
    """A create whose `fields` (see `body`) are refused with 400 `code` naming `param`."""
    return Row(id, post(body(**fields)), 400, code, param)


def raw_body(tail: bytes) -> bytes:
    """A create body whose last field is given as raw JSON text (`tail` = `"key": value`)."""
    return b'{"model": "%s", "input": "hi", %s}' % (MODEL.encode(), tail)


def nested(levels: int, **fields: Any) -> bytes:
    """A create body with `fields` (default: `input` 0), where the one value 0 is replaced by
    `levels` nested arrays."""
    data = body(**(fields or {"input": 0}))
    assert data.count(b":0") == 1, data
    return data.replace(b":0", b":" + deep(levels))


def item(**fields: Any) -> bytes:
    return body(input=[fields])


def image(**fields: Any) -> dict[str, Any]:
    return {"type": "input_image", "image_url": "https://example.com/a.png", **fields}


def cited(**fields: Any) -> dict[str, Any]:
    """An output text with one URL citation (`fields` replace the citation's)."""
    citation = {"type": "url_citation", "url": "https://x", "title": "t", "start_index": 0}
    citation = {**citation, "end_index": 1, **fields}
    return {"type": "output_text", "text": "cited", "annotations": [citation]}


def answered_with(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    """An input of a function call and its output, made of `parts`."""
    call = {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": "{}"}
    return [call, {"type": "function_call_output", "call_id": "c1", "output": list(parts)}]


def append(ctx_body: Callable[[Ctx], Any], **kw: Any) -> Callable[[Ctx], bytes]:
    """A POST to the suspended rollout's append endpoint; the body may depend on the ids."""

    def build(ctx: Ctx) -> bytes:
        data = ctx_body(ctx)
        return post(data if isinstance(data, bytes) else orjson.dumps(data), ctx.append_path, **kw)

    return build


def get(path: str) -> bytes:
    return http_request("GET", path)


def head_of(path: str) -> bytes:
    return http_request("HEAD", path)


def head(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode("latin-1")


UPGRADE = (
    "GET /v1/responses HTTP/1.1\nHost: test\nUpgrade: websocket\nConnection: Upgrade\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\n"
)

HANDSHAKE_BUG = (
    "rollout/wsconn.py WsConnection.accept (called from rollout/ws.py serve_websocket): wsproto "
    "raises RemoteProtocolError for a malformed or unsupported handshake and nothing catches it; "
    "rollout/server.py logs 'connection handler failed' with a traceback and the client gets no "
    "response at all. Spec §1.1: a refused handshake is a normal HTTP error response (400, or 426 "
    "with Sec-WebSocket-Version: 13 for another version, RFC 6455 §4.2.2)."
)
DIGITS_BUG = (
    "rollout/http.py _int_query (`raw.isdigit()` then `int(raw)`) and HttpConnection.retrieve "
    "(`after.lstrip('-').isdigit()` then `int(after)`) use str.isdigit, which is true for "
    "Unicode digits: '²'/'³' pass the check and int() raises ValueError, which escapes: "
    "rollout/server.py logs 'connection handler failed' with a traceback and the client gets "
    "no response; Arabic-Indic digits ('١٢') are silently accepted as 12. Expected: 400 "
    "invalid_value naming the query parameter (ASCII digits only)."
)
DEPTH_BUG = (
    "protocol/codec.py keeps free-form JSON (dict[str, Any] / Any fields such as `reasoning`, "
    "`text`, tool `parameters`, other tools' raw objects) at any depth orjson accepts (1024), "
    "but cannot encode it back (cattrs unstructure recursion -> RecursionError, or orjson.dumps' "
    "depth limit of 254 -> TypeError): for `reasoning` in rollout/http.py create() at the final "
    "codec.encode of the response (the response has run and is stored), for tool `parameters` "
    "in rollout/engine.py Engine.prepare -> rollout/context.py set_header -> codec.to_json. "
    "rollout/server.py logs 'connection handler failed' with a traceback and the connection is "
    "dropped with no response. Expected: a 400 naming the field (or a depth limit at decode)."
)

ROWS: list[Row] = [
    # -- JSON syntax ----------------------------------------------------------------------------
    Row("invalid-json", post(b'{"model": "gpt-test", "input": '), 400, "invalid_json"),
    Row("not-json", post(b"hello"), 400, "invalid_json"),
    Row("empty-body", post(b""), 400, "invalid_json"),
    Row("trailing-garbage", post(body() + b" x"), 400, "invalid_json"),
    Row("utf8-bom", post(b"\xef\xbb\xbf" + body()), 400, "invalid_json"),
    Row(
        "non-utf8-in-string",
        post(b'{"model": "gpt-test", "input": "caf\xe9"}'),
        400,
        "invalid_json",
    ),
    Row(
        "lone-surrogate-escape",
        post(b'{"model": "gpt-test", "input": "\\ud800"}'),
        400,
        "invalid_json",
    ),
    Row("raw-control-char", post(b'{"model": "gpt-test", "input": "a\x01b"}'), 400, "invalid_json"),
    Row("nan-literal", post(raw_body(b'"temperature": NaN')), 400, "invalid_json"),
    Row("infinity-literal", post(raw_body(b'"temperature": -Infinity')), 400, "invalid_json"),
    Row("huge-float-1e400", post(raw_body(b'"temperature": 1e400')), 400, "invalid_json"),
    Row(
        "deep-nesting-10000",
        post(nested(10_000)),
        400,
        "invalid_json",
    ),
    # -- JSON that is not an object -------------------------------------------------------------
    Row("json-array", post(b'[{"model": "gpt-test", "input": "hi"}]'), 400, "invalid_type"),
    Row("json-string", post(b'"hi"'), 400, "invalid_type"),
    Row("json-null", post(b"null"), 400, "invalid_type"),
    Row("json-number", post(b"42"), 400, "invalid_type"),
    # -- numbers --------------------------------------------------------------------------------
    Row(
        "huge-int-2**70",
        post(raw_body(b'"max_output_tokens": %d' % 2**70)),
        400,
        "invalid_type",
        "max_output_tokens",
    ),
    Row(
        "huge-int-2**63-range",
        post(raw_body(b'"top_logprobs": %d' % 2**63)),
        400,
        "integer_above_max_value",
        "top_logprobs",
    ),
    Row(
        "huge-float-range",
        post(raw_body(b'"temperature": 1e300')),
        400,
        "decimal_above_max_value",
        "temperature",
    ),
    refused("temperature-string", "invalid_type", "temperature", temperature="1"),
    # -- required fields and top-level types ----------------------------------------------------
    refused("model-missing", "missing_required_parameter", "model", model=...),
    refused("input-missing", "missing_required_parameter", "input", input=...),
    refused("model-int", "invalid_type", "model", model=123),
    refused("model-null", "invalid_type", "model", model=None),
    refused("model-empty", "invalid_value", "model", model=""),
    refused("input-empty-string", "empty_input", "input", input=""),
    refused("input-empty-array", "empty_input", "input", input=[]),
    refused("input-int", "invalid_type", "input", input=5),
    refused("input-object", "invalid_type", "input", input={"role": "user", "content": "hi"}),
    refused("stream-string", "invalid_type", "stream", stream="yes"),
    refused("tools-object", "invalid_type", "tools", tools={"type": "function"}),
    refused("metadata-int-value", "invalid_type", "metadata.k", metadata={"k": 5}),
    refused("tool-choice-bogus", "invalid_value", "tool_choice", tool_choice="sometimes"),
    # `type` is a WebSocket frame's key, not a parameter of an HTTP create
    refused("type-over-http", "unknown_parameter", "type", type="response.create"),
    # -- items inside input ---------------------------------------------------------------------
    refused("item-not-object", "invalid_type", "input[0]", input=[5]),
    Row("item-unknown-type", post(item(type="bogus_item")), 400, "invalid_value", "input[0].type"),
    Row("item-type-int", post(item(type=7)), 400, "invalid_type", "input[0].type"),
    Row(
        "item-no-type-no-role",
        post(item(content="hi")),
        400,
        "missing_required_parameter",
        "input[0].type",
    ),
    Row(
        "fco-without-call-id",
        post(item(type="function_call_output", output="x")),
        400,
        "missing_required_parameter",
        "input[0].call_id",
    ),
    Row(
        "fco-call-id-int",
        post(item(type="function_call_output", call_id=1, output="x")),
        400,
        "invalid_type",
        "input[0].call_id",
    ),
    Row(
        "fco-output-int",
        post(item(type="function_call_output", call_id="c", output=1)),
        400,
        "invalid_type",
        "input[0].output",
    ),
    Row(
        "fco-unknown-call-id",
        post(item(type="function_call_output", call_id="call_x", output="x")),
        400,
        "invalid_value",
        "input[0].call_id",
    ),
    Row(
        "message-role-bogus",
        post(item(role="wizard", content="hi")),
        400,
        "invalid_value",
        "input[0].role",
    ),
    Row(
        "message-content-int",
        post(item(role="user", content=5)),
        400,
        "invalid_type",
        "input[0].content",
    ),
    Row(
        "part-unknown-type",
        post(item(role="user", content=[{"type": "input_bogus"}])),
        400,
        "invalid_value",
        "input[0].content[0].type",
    ),
    Row(
        "part-text-int",
        post(item(role="user", content=[{"type": "input_text", "text": 5}])),
        400,
        "invalid_type",
        "input[0].content[0].text",
    ),
    Row(
        "item-reference-unknown",
        post(item(type="item_reference", id="msg_x")),
        400,
        "invalid_value",
        "input[0].id",
    ),
    # enumerated values, indices and files inside items, held to the SDK's types
    Row(
        "item-status-bogus",
        post(item(role="user", content="hi", status="bogus")),
        400,
        "invalid_value",
        "input[0].status",
    ),
    Row(
        "image-detail-bogus",
        post(item(role="user", content=[image(detail="AAA")])),
        400,
        "invalid_value",
        "input[0].content[0].detail",
    ),
    Row(
        "annotation-index-negative",
        post(item(role="assistant", content=[cited(start_index=-1)])),
        400,
        "integer_below_min_value",
        "input[0].content[0].annotations[0].start_index",
    ),
    Row(
        "annotation-type-bogus",
        post(item(role="assistant", content=[cited(type="bogus")])),
        400,
        "invalid_value",
        "input[0].content[0].annotations[0].type",
    ),
    Row(
        "input-file-without-file",
        post(item(role="user", content=[{"type": "input_file", "filename": "a.pdf"}])),
        400,
        "missing_required_parameter",
        "input[0].content[0]",
    ),
    Row(
        "computer-call-status-bogus",
        post(item(type="computer_call", call_id="c", action={"type": "wait"}, status="x")),
        400,
        "invalid_value",
        "input[0].status",
    ),
    refused("include-bogus", "invalid_value", "include[0]", include=["bogus.value"]),
    refused(
        "reasoning-context-bogus", "invalid_value", "reasoning.context", reasoning={"context": "x"}
    ),
    refused(
        "max-output-tokens-fraction", "invalid_type", "max_output_tokens", max_output_tokens=100.5
    ),
    Row("max-output-tokens-whole-float", post(body(max_output_tokens=100.0)), 200),
    Row("top-logprobs-whole-float", post(body(top_logprobs=2.0)), 200),
    Row("tool-output-image-detail-null", post(body(input=answered_with(image(detail=None)))), 200),
    refused(
        "tool-without-name",
        "missing_required_parameter",
        "tools[0].name",
        tools=[{"type": "function"}],
    ),
    refused(
        "tool-bad-name",
        "invalid_value",
        "tools[0].name",
        tools=[{"type": "function", "name": "a b"}],
    ),
    Row(
        "deep-nesting-900-input",
        post(nested(900)),
        400,
        "invalid_value",
        None,
    ),
    Row(
        "deep-nesting-in-reasoning",
        post(raw_body(b'"reasoning": {"context": ' + deep(300) + b"}")),
        400,
        "invalid_value",
        None,
    ),
    Row(
        "deep-nesting-in-tool-parameters",
        post(
            nested(
                600,
                tools=[{"type": "function", "name": "f", "parameters": {"type": "object", "x": 0}}],
            )
        ),
        400,
        "invalid_value",
        None,
    ),
    # -- ids ------------------------------------------------------------------------------------
    refused(
        "prev-control-chars",
        "previous_response_not_found",
        "previous_response_id",
        previous_response_id="resp_\x00\x1b\n\u2028",
    ),
    refused(
        "prev-very-long",
        "previous_response_not_found",
        "previous_response_id",
        previous_response_id="resp_" + "x" * 20_000,
    ),
    refused(
        "prev-empty-string",
        "previous_response_not_found",
        "previous_response_id",
        previous_response_id="",
    ),
    refused("prev-int", "invalid_type", "previous_response_id", previous_response_id=5),
    Row(
        "prev-is-suspended-rollout",
        lambda c: post(body(previous_response_id=c.rid)),
        400,
        "previous_response_not_found",
        "previous_response_id",
    ),
    # -- huge values: the error message echoes them truncated ------------------------------------
    Row("shape-huge", post(body(shape="x" * 60_000)), 400, "invalid_value", "shape"),
    Row(
        "tool-choice-huge",
        post(body(tool_choice="s" * 60_000)),
        400,
        "invalid_value",
        "tool_choice",
    ),
    Row(
        "item-type-huge",
        post(item(type="t" * 60_000)),
        400,
        "invalid_value",
        "input[0].type",
    ),
    Row("metadata-key-huge", post(body(metadata={"k" * 60_000: 5})), 400, "invalid_type", ANY),
    Row(
        "fco-unknown-call-id-huge",
        post(item(type="function_call_output", call_id="c" * 60_000, output="x")),
        400,
        "invalid_value",
        "input[0].call_id",
    ),
    Row(
        "item-reference-huge",
        post(item(type="item_reference", id="i" * 60_000)),
        400,
        "invalid_value",
        "input[0].id",
    ),
    Row("path-huge", get("/v1/nothing/" + "p" * 7000), 404, None),
    Row(
        "get-id-huge",
        get("/v1/responses/resp_" + "x" * 7000),
        404,
        "response_not_found",
    ),
    Row(
        "input-items-order-huge",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?order=" + "u" * 7000),
        400,
        "invalid_value",
        "order",
    ),
    Row(
        "input-items-after-huge",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?after=" + "m" * 7000),
        400,
        "invalid_value",
        "after",
    ),
    Row(
        "append-unknown-call-id-huge",
        append(lambda c: {"input": [output("c" * 60_000)]}),
        400,
        "unknown_call_id",
        "input[0].call_id",
    ),
    # -- fields this server or this transport refuses --------------------------------------------
    refused("stream-id-over-http", "unsupported_parameter", "stream_id", stream_id="main"),
    refused("generate-false-over-http", "unsupported_parameter", "generate", generate=False),
    refused("background-unstored", "invalid_value", "store", background=True, store=False),
    Row(
        "conversation-unknown",
        post(body(conversation="conv_1")),
        404,
        "conversation_not_found",
        "conversation",
    ),
    refused("conversation-empty-id", "invalid_value", "conversation", conversation={"id": ""}),
    refused(
        "conversation-with-previous",
        "mutually_exclusive_parameters",
        None,
        conversation="conv_1",
        previous_response_id="resp_1",
    ),
    refused("shape-bogus", "invalid_value", "shape", shape="tree"),
    refused(
        "shape-append-without-stream", "invalid_value", "stream", shape="append", tools=[EXEC_TOOL]
    ),
    # -- Content-Type ---------------------------------------------------------------------------
    Row("ctype-text-plain", post(body(), ctype="text/plain"), 415, "unsupported_media_type"),
    Row(
        "ctype-form",
        post(b"model=gpt-test&input=hi", ctype="application/x-www-form-urlencoded"),
        415,
        "unsupported_media_type",
    ),
    Row(
        "ctype-multipart",
        post(body(), ctype="multipart/form-data; boundary=x"),
        415,
        "unsupported_media_type",
    ),
    Row(  # content codings are not decoded: the body is parsed as is (RFC 9110 §8.4.1 would
        # also allow a 415)
        "content-encoding-gzip",
        post(gzip.compress(body()), headers=[("Content-Encoding", "gzip")]),
        400,
        "invalid_json",
    ),
    # -- methods and paths ----------------------------------------------------------------------
    Row(
        "put-create",
        http_request("PUT", "/v1/responses", body()),
        405,
        "method_not_allowed",
        allow="POST",
    ),
    Row("get-create", get("/v1/responses"), 405, "method_not_allowed", allow="POST"),
    Row(
        "unknown-method",
        http_request("BREW", "/v1/responses", body()),
        405,
        "method_not_allowed",
        allow="POST",
    ),
    Row(
        "patch-response",
        http_request("PATCH", "/v1/responses/resp_1", b"{}"),
        405,
        "method_not_allowed",
        allow="GET, HEAD, DELETE",
    ),
    Row("get-cancel", get("/v1/responses/resp_1/cancel"), 405, "method_not_allowed", allow="POST"),
    Row("get-append", lambda c: get(c.append_path), 405, "method_not_allowed", allow="POST"),
    Row(
        "delete-input-items",
        http_request("DELETE", "/v1/responses/resp_1/input_items"),
        405,
        "method_not_allowed",
        allow="GET, HEAD",
    ),
    # HEAD: answered like GET without a body wherever GET is, 405 (no body) elsewhere
    Row("head-retrieve", lambda c: head_of(f"/v1/responses/{c.stored}"), 200, method_head=True),
    Row(
        "head-retrieve-stream",
        lambda c: head_of(f"/v1/responses/{c.stored}?stream=true"),
        200,
        method_head=True,
        ctype="text/event-stream",
    ),
    Row(
        "head-input-items",
        lambda c: head_of(f"/v1/responses/{c.stored}/input_items"),
        200,
        method_head=True,
    ),
    Row(
        "head-metrics",
        head_of("/metrics"),
        200,
        method_head=True,
        ctype="text/plain; version=0.0.4",
    ),
    Row("head-unknown-id", head_of("/v1/responses/resp_missing"), 404, method_head=True),
    Row("head-unknown-path", head_of("/v1/nothing"), 404, method_head=True),
    Row("head-create", head_of("/v1/responses"), 405, method_head=True, allow="POST"),
    Row("head-cancel", head_of("/v1/responses/resp_1/cancel"), 405, method_head=True, allow="POST"),
    Row("path-unknown", get("/v1/nothing"), 404, None),
    Row("path-root", get("/"), 404, None),
    Row("path-v2", post(body(), "/v2/responses"), 404, None),
    Row("path-too-deep", get("/v1/responses/resp_1/input_items/x"), 404, None),
    # -- unknown response ids -------------------------------------------------------------------
    Row("get-unknown-id", get("/v1/responses/resp_missing"), 404, "response_not_found"),
    Row(
        "delete-unknown-id",
        http_request("DELETE", "/v1/responses/resp_missing"),
        404,
        "response_not_found",
    ),
    Row(
        "input-items-unknown-id",
        get("/v1/responses/resp_missing/input_items"),
        404,
        "response_not_found",
    ),
    Row(
        "cancel-unknown-id",
        http_request("POST", "/v1/responses/resp_missing/cancel", b""),
        404,
        "response_not_found",
    ),
    Row(
        "get-id-percent-control-chars",
        get("/v1/responses/resp_%00%0a%1b"),
        404,
        "response_not_found",
    ),
    Row(
        "cancel-chain-response",
        lambda c: http_request("POST", f"/v1/responses/{c.stored}/cancel", b""),
        400,
        "invalid_value",
        "response_id",
    ),
    Row(
        "input-items-limit-0",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?limit=0"),
        400,
        "invalid_value",
        "limit",
    ),
    Row(
        "input-items-limit-huge",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?limit={2**70}"),
        400,
        "invalid_value",
        "limit",
    ),
    Row(
        "input-items-limit-superscript-digit",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?limit=%C2%B2"),
        400,
        "invalid_value",
        "limit",
    ),
    Row(
        "input-items-limit-arabic-digits",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?limit=%D9%A1%D9%A2"),
        400,
        "invalid_value",
        "limit",
    ),
    Row(
        "retrieve-starting-after-superscript-digit",
        lambda c: get(f"/v1/responses/{c.stored}?stream=true&starting_after=%C2%B3"),
        400,
        "invalid_value",
        "starting_after",
    ),
    Row(
        "input-items-limit-5000-digits",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?limit=" + "9" * 5000),
        400,
        "invalid_value",
        "limit",
    ),
    Row(
        "retrieve-starting-after-5000-digits",
        lambda c: get(f"/v1/responses/{c.stored}?stream=true&starting_after=" + "7" * 5000),
        400,
        "invalid_value",
        "starting_after",
    ),
    Row(
        "retrieve-starting-after-minus-5000-digits",
        lambda c: get(f"/v1/responses/{c.stored}?stream=true&starting_after=-" + "7" * 5000),
        400,
        "invalid_value",
        "starting_after",
    ),
    Row(
        "input-items-order-bogus",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?order=up"),
        400,
        "invalid_value",
        "order",
    ),
    Row(
        "input-items-after-unknown",
        lambda c: get(f"/v1/responses/{c.stored}/input_items?after=msg_x"),
        400,
        "invalid_value",
        "after",
    ),
    Row(
        "retrieve-starting-after-bogus",
        lambda c: get(f"/v1/responses/{c.stored}?stream=true&starting_after=x1"),
        400,
        "invalid_value",
        "starting_after",
    ),
    # -- the append endpoint --------------------------------------------------------------------
    Row(
        "append-unknown-id",
        post({"input": [output("call_x")]}, "/v1/responses/resp_missing/append"),
        404,
        "response_not_found",
        "response_id",
    ),
    Row(
        "append-chain-response",
        lambda c: post({"input": [output("call_x")]}, f"/v1/responses/{c.stored}/append"),
        404,
        "response_not_found",
        "response_id",
    ),
    Row("append-invalid-json", append(lambda c: b'{"input": ['), 400, "invalid_json"),
    Row("append-json-array", append(lambda c: [output(c.call_id)]), 400, "invalid_type"),
    Row("append-input-missing", append(lambda c: {}), 400, "missing_required_parameter", "input"),
    Row("append-input-string", append(lambda c: {"input": "done"}), 400, "invalid_type", "input"),
    Row(
        "append-unknown-call-id",
        append(lambda c: {"input": [output("call_nope")]}),
        400,
        "unknown_call_id",
        "input[0].call_id",
    ),
    Row(
        "append-duplicate-output",
        append(lambda c: {"input": [output(c.call_id), output(c.call_id)]}),
        400,
        "duplicate_call_output",
        "input[1].call_id",
    ),
    Row(
        "append-function-call-item",
        append(
            lambda c: {
                "input": [
                    {"type": "function_call", "call_id": "c", "name": "exec", "arguments": "{}"}
                ]
            }
        ),
        400,
        "invalid_value",
        "input[0].type",
    ),
    Row(
        "append-output-without-call-id",
        append(lambda c: {"input": [{"type": "function_call_output", "output": "x"}]}),
        400,
        "missing_required_parameter",
        "input[0].call_id",
    ),
    Row(
        "append-item-unknown-type",
        append(lambda c: {"input": [{"type": "bogus_item"}]}),
        400,
        "invalid_value",
        "input[0].type",
    ),
    Row(
        "append-output-status-bogus",
        append(lambda c: {"input": [{**output(c.call_id), "status": "bogus"}]}),
        400,
        "invalid_value",
        "input[0].status",
    ),
    Row(
        "append-output-image-detail-bogus",
        append(lambda c: {"input": [{**output(c.call_id), "output": [image(detail="AAA")]}]}),
        400,
        "invalid_value",
        "input[0].output[0].detail",
    ),
    Row(
        "conversation-item-status-bogus",
        post(
            orjson.dumps({"items": [{"role": "user", "content": "hi", "status": "bogus"}]}),
            "/v1/conversations",
        ),
        400,
        "invalid_value",
        "items[0].status",
    ),
    Row(
        "append-non-utf8",
        append(
            lambda c: (
                b'{"input": [{"type": "function_call_output", "call_id": "%s", "output": "\xff"}]}'
                % c.call_id.encode()
            )
        ),
        400,
        "invalid_json",
    ),
    Row(
        "append-empty-input",
        append(lambda c: {"input": []}),
        400,
        "empty_input",
        "input",
    ),
    Row(
        "append-ctype-text-plain",
        append(lambda c: {"input": [output(c.call_id)]}, ctype="text/plain"),
        415,
        "unsupported_media_type",
    ),
    # -- HTTP framing (the server must close after these) ---------------------------------------
    Row("garbage-request-line", b"THIS IS NOT HTTP\r\n\r\n", 400, "bad_request", keep=False),
    Row(
        "control-char-in-target",
        b"GET /v1/responses/a\x01b HTTP/1.1\r\nHost: test\r\n\r\n",
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "target-not-a-url",
        b"GET //[ HTTP/1.1\r\nHost: test\r\n\r\n",
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "header-without-colon",
        head("GET /v1/responses/resp_1 HTTP/1.1\nHost: test\nNoColonHere\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "nul-in-header-value",
        head("GET /v1/responses/resp_1 HTTP/1.1\nHost: test\nX-A: a\x00b\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "missing-host",
        head("GET /v1/responses/resp_1 HTTP/1.1\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "content-length-not-a-number",
        head("POST /v1/responses HTTP/1.1\nHost: test\nContent-Length: ten\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "content-length-5000-digits",
        head("POST /v1/responses HTTP/1.1\nHost: test\nContent-Length: " + "9" * 5000 + "\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "content-length-negative",
        head("POST /v1/responses HTTP/1.1\nHost: test\nContent-Length: -1\n\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "content-length-conflicting",
        head("POST /v1/responses HTTP/1.1\nHost: test\nContent-Length: 2\nContent-Length: 3\n\n{}"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "transfer-encoding-gzip",
        head("POST /v1/responses HTTP/1.1\nHost: test\nTransfer-Encoding: gzip\n\n"),
        501,
        "bad_request",
        keep=False,
    ),
    Row(
        "chunk-size-not-hex",
        head("POST /v1/responses HTTP/1.1\nHost: test\nTransfer-Encoding: chunked\n\nzz\n"),
        400,
        "bad_request",
        keep=False,
    ),
    Row(
        "chunk-size-20-hex-digits",
        head("POST /v1/responses HTTP/1.1\nHost: test\nTransfer-Encoding: chunked\n\n")
        + b"ffffffffffffffffffff\r\n{",
        413,
        "request_too_large",
        keep=False,  # at once: a server that waited for the chunk would drop it at the timeout
    ),
    Row(
        "chunk-size-over-limit",
        head("POST /v1/responses HTTP/1.1\nHost: test\nTransfer-Encoding: chunked\n\n")
        + b"%x\r\n{" % (LIMIT + 1),
        413,
        "request_too_large",
        keep=False,
    ),
    Row(
        "chunked-and-content-length",
        head(
            "POST /v1/responses HTTP/1.1\nHost: test\nContent-Type: application/json\n"
            "Transfer-Encoding: chunked\nContent-Length: 5\n\n"
        )
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body()), body()),
        200,
        keep=False,
    ),
    # -- chunked bodies -------------------------------------------------------------------------
    Row("chunked-valid-json", chunked([body()[:10], body()[10:]]), 200),
    Row("chunked-one-byte-chunks", chunked([bytes([b]) for b in body()]), 200),
    Row("chunked-with-extensions", chunked([body()], extension=b";name=value"), 200),
    Row("chunked-invalid-json", chunked([b'{"model": ', b'"gpt-test"']), 400, "invalid_json"),
    # -- size limits ----------------------------------------------------------------------------
    Row(
        "content-length-over-limit",
        post(body(input="x" * LIMIT)),
        413,
        "request_too_large",
        keep=False,
    ),
    Row(
        "content-length-over-limit-no-body",
        head(
            "POST /v1/responses HTTP/1.1\nHost: test\nContent-Type: application/json\n"
            f"Content-Length: {LIMIT + 1}\nExpect: 100-continue\n\n"
        ),
        413,
        "request_too_large",
        keep=False,
    ),
    Row(
        "chunked-over-limit",
        chunked([b'{"model": "gpt-test", "input": "', b"y" * LIMIT, b'"}']),
        413,
        "request_too_large",
        keep=False,
    ),
    Row(
        "headers-over-limit",
        head("GET /v1/responses/resp_1 HTTP/1.1\nHost: test\nX-Big: " + "a" * 10_000 + "\n\n"),
        431,
        "bad_request",
        keep=False,
    ),
    Row(
        "headers-over-limit-unterminated",
        head("GET /v1/responses/resp_1 HTTP/1.1\nHost: test\nX-Big: " + "a" * 10_000),
        431,
        "bad_request",
        keep=False,
    ),
    Row(
        "url-over-limit",
        get("/v1/responses/resp_" + "x" * 10_000),
        431,
        "bad_request",
        keep=False,
    ),
    Row(
        "many-headers-over-limit",
        head("GET /v1/responses/resp_1 HTTP/1.1\nHost: test\n" + "X-A: b\n" * 2000 + "\n"),
        431,
        "bad_request",
        keep=False,
    ),
    # -- stalls (header_timeout_s = 0.3) --------------------------------------------------------
    Row(
        "slowloris-head",
        lambda c: [(b"POST /v1/responses HTTP/1.1\r\nHost: te", 0.1)] + [(b"s", 0.1)] * 100,
        None,
        closes_after=0.25,
    ),
    Row(
        "half-head-then-silence",
        head("POST /v1/responses HTTP/1.1\nHost: test\nContent-"),
        None,
        closes_after=0.25,
    ),
    Row("stalled-body", post(body())[:-5], None, closes_after=0.25),
    Row(
        "slowloris-body",
        lambda c: [(post(body())[:-40], 0.1)] + [(bytes([b]), 0.25) for b in post(body())[-40:-1]],
        None,
        closes_after=0.25,
    ),
    # -- WebSocket handshakes that must be refused as plain HTTP ---------------------------------
    Row(
        "ws-upgrade-wrong-path",
        head(UPGRADE.replace("/v1/responses", "/v1/chat") + "Sec-WebSocket-Version: 13\n\n"),
        404,
        None,
        keep=False,
    ),
    Row(
        "ws-upgrade-missing-version",
        head(UPGRADE + "\n"),
        400,
        "bad_websocket_handshake",
        keep=False,
    ),
    Row(
        "ws-upgrade-version-8",
        head(UPGRADE + "Sec-WebSocket-Version: 8\n\n"),
        426,
        "websocket_version_unsupported",
        keep=False,
        header=("sec-websocket-version", "13"),
    ),
    Row(
        "ws-upgrade-without-connection-upgrade",
        head(UPGRADE.replace("Connection: Upgrade\n", "") + "Sec-WebSocket-Version: 13\n\n"),
        400,
        "bad_websocket_handshake",
        keep=False,
    ),
    Row(
        "ws-upgrade-connection-keep-alive-only",
        head(
            UPGRADE.replace("Connection: Upgrade", "Connection: keep-alive")
            + "Sec-WebSocket-Version: 13\n\n"
        ),
        400,
        "bad_websocket_handshake",
        keep=False,
    ),
    Row(
        "ws-upgrade-missing-key",
        head(
            UPGRADE.replace("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\n", "")
            + "Sec-WebSocket-Version: 13\n\n"
        ),
        400,
        "bad_websocket_handshake",
        keep=False,
    ),
]


# -- the test -----------------------------------------------------------------------------------


async def setup(port: int) -> Ctx:
    """A stored chain response and an append rollout suspended on one `exec` call."""
    conn = await RawHttp.connect(port)
    try:
        stored = (await http_create(conn)).json()["id"]
        await conn.send(post(create_body(shape="append", stream=True, tools=[EXEC_TOOL])))
        r = await conn.read_response()
        assert r.status == 200, r
        done = r.sse()[-1]
        assert done["type"] == "response.done", done
        [pending] = done["pending_calls"]
        return Ctx(rid=done["response_id"], call_id=pending["call_id"], stored=stored)
    finally:
        await conn.aclose()


async def finish(port: int, ctx: Ctx) -> None:
    """The suspended rollout resumes with a valid append and completes."""
    conn = await RawHttp.connect(port)
    try:
        await conn.send(post({"input": [output(ctx.call_id)]}, ctx.append_path))
        r = await conn.read_response()
        assert r.status == 200, r
        events = r.sse()
        assert events[-1]["type"] == "response.completed", events[-1]
        assert events[-1]["response"]["id"] == ctx.rid
    finally:
        await conn.aclose()


async def send_row(conn: RawHttp, row: Row, ctx: Ctx) -> float:
    """Send the row's request (pieces with pauses run beside the caller); returns the start."""
    request = row.request(ctx) if callable(row.request) else row.request
    start = trio.current_time()
    if row.status is not None:
        assert isinstance(request, bytes)
        await conn.send(request)
        return start
    if isinstance(request, bytes):
        request = [(request, 0.0)]

    trickled: list[bytes] = []

    async def trickle(pieces: Pieces) -> None:
        for data, pause in pieces:
            try:
                await conn.send(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            await trio.sleep(pause)
            trickled.append(data)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle, request)
        closed = await conn.closed_within()  # a liveness bound: it did not stay open for good
        elapsed = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert closed, "the server never closed the stalled connection"
    assert elapsed >= row.closes_after, f"closed after {elapsed:.2f} s, before the timeout"
    if len(request) > 1:  # the head or body's deadline holds however slowly the bytes come
        assert len(trickled) < len(request), "the connection lived as long as the trickle"
    return start


def check_response(row: Row, r: HttpResponse) -> None:
    assert r.status == row.status, (r.status, r.body[:300])
    assert r.headers["content-type"] == row.ctype, r.headers
    assert r.headers["x-request-id"].startswith("req_"), r.headers
    if not row.keep:  # (the close itself is checked after the response)
        assert r.headers.get("connection", "close") == "close", r.headers
    if row.status == 413:
        assert r.headers.get("connection") == "close", r.headers
    if row.allow is not None:
        assert r.headers["allow"] == row.allow
    if row.method_head:  # the head a GET would get: its framing, and no body follows
        assert "content-length" in r.headers or "transfer-encoding" in r.headers, r.headers
        return
    if row.status == 200:
        assert r.json()["status"] == "completed", r.body[:300]
        return
    envelope = r.json()
    assert isinstance(envelope, dict) and set(envelope) == {"error"}, envelope
    assert_error(envelope["error"], code=row.code, param=row.param)
    if row.header is not None:
        assert r.headers.get(row.header[0]) == row.header[1], r.headers


def test_table_size() -> None:
    assert_table(ROWS, at_least=40)


@pytest.mark.parametrize("row", params(ROWS))
async def test_http_bad_input(row: Row, caplog: pytest.LogCaptureFixture) -> None:
    async with watched_server(caplog, **CONFIG) as server:
        ctx = await setup(server.port)
        conn = await RawHttp.connect(server.port)
        try:
            await http_create(conn)  # a keep-alive connection that has served a request
            await send_row(conn, row, ctx)
            if row.status is None:
                assert not conn.buf, f"expected a silent close, got {bytes(conn.buf[:300])!r}"
            else:
                check_response(row, await conn.read_response(row.timeout, head=row.method_head))
                if row.keep:
                    await http_create(conn)
                else:
                    assert await conn.closed_within(), "the server kept the connection open"
                    assert not conn.buf, bytes(conn.buf[:300])
        finally:
            await conn.aclose()
        other = await RawHttp.connect(server.port)
        try:
            await http_create(other)
        finally:
            await other.aclose()
        await finish(server.port, ctx)
