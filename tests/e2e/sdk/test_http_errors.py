# Errors over HTTP: every refusal is the standard envelope with the right status, code and param,
# the SDK raises the matching exception class, and the server (and the same connection, where
# HTTP allows it) keeps working afterwards. Also a model failure mid-response (ErrorStep).
from __future__ import annotations

import http.client
from typing import Any

import httpx2 as httpx
import openai
import orjson
import pytest
from openai import OpenAI
from openai.types.responses import ResponseErrorEvent

from rollout.engine.faults import MESSAGES, Faults
from rollout.model.policy import ErrorStep, ScriptedPolicy, call, text
from rollout.testing.thread import ServerThread
from support.errors import ANY, assert_envelope
from support.rawhttp import RawConnection
from support.sdk import assert_api_error, assert_event_class, assert_healthy, raw_client
from support.sse import parse_sse
from support.tools import EXEC_TOOL, MODEL
from support.waits import TIMEOUT

JSON = {"content-type": "application/json"}
# An idle timeout far beyond any wait of these tests: a close they see is the header timeout's.
IDLE = 6 * TIMEOUT


# -- bad create bodies --------------------------------------------------------------------------

BAD_BODIES: list[tuple[str, bytes, str | None, str | None]] = [
    # (id, body, code, param)
    ("malformed", b'{"model": "m", "input": ', "invalid_json", None),
    ("not-json", b"hello", "invalid_json", None),
    ("array-body", b"[1, 2]", "invalid_type", None),
    ("model-int", orjson.dumps({"model": 123, "input": "hi"}), "invalid_type", "model"),
    ("model-missing", orjson.dumps({"input": "hi"}), "missing_required_parameter", "model"),
    ("input-missing", orjson.dumps({"model": MODEL}), "missing_required_parameter", "input"),
    ("input-int", orjson.dumps({"model": MODEL, "input": 5}), "invalid_type", "input"),
    ("input-empty", orjson.dumps({"model": MODEL, "input": ""}), "empty_input", "input"),
    ("model-empty", orjson.dumps({"model": "", "input": "hi"}), "invalid_value", "model"),
    (
        "stream-string",
        orjson.dumps({"model": MODEL, "input": "hi", "stream": "yes"}),
        "invalid_type",
        "stream",
    ),
    (
        "temperature-range",
        orjson.dumps({"model": MODEL, "input": "hi", "temperature": 3}),
        "decimal_above_max_value",
        "temperature",
    ),
    (
        "item-type",
        orjson.dumps({"model": MODEL, "input": [{"type": "bogus_item"}]}),
        "invalid_value",
        "input[0].type",
    ),
    (
        "call-id-missing",
        orjson.dumps({"model": MODEL, "input": [{"type": "function_call_output", "output": "x"}]}),
        "missing_required_parameter",
        "input[0].call_id",
    ),
    (
        "background-unstored",
        orjson.dumps({"model": MODEL, "input": "hi", "background": True, "store": False}),
        "invalid_value",
        "store",
    ),
    (
        "unknown-call-id",
        orjson.dumps(
            {
                "model": MODEL,
                "input": [{"type": "function_call_output", "call_id": "call_x", "output": "x"}],
            }
        ),
        "invalid_value",
        "input[0].call_id",
    ),
    (
        "tool-name",
        orjson.dumps(
            {"model": MODEL, "input": "hi", "tools": [{"type": "function", "name": "a b"}]}
        ),
        "invalid_value",
        "tools[0].name",
    ),
]


@pytest.mark.parametrize(
    ("body", "code", "param"), [b[1:] for b in BAD_BODIES], ids=[b[0] for b in BAD_BODIES]
)
def test_bad_create_body(
    client: OpenAI, http: httpx.Client, body: bytes, code: str, param: str | None
) -> None:
    for stream in (False, True):
        if stream and body.startswith(b"{") and body.endswith(b"}"):
            data = orjson.loads(body)
            data.setdefault("stream", True)
            body = orjson.dumps(data)
        r = http.post("/responses", content=body, headers=JSON)
        assert r.status_code == 400, r.text
        assert r.headers["content-type"] == "application/json"  # never an event stream
        assert r.headers["x-request-id"].startswith("req_")
        assert_envelope(r.json(), code=code, param=param)
    assert_healthy(client)


def test_wrong_type_via_sdk(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model=123, input="hi")  # type: ignore[arg-type]
    assert exc.value.status_code == 400
    assert exc.value.param == "model"
    assert exc.value.code == "invalid_type"
    assert exc.value.type == "invalid_request_error"
    assert "model" in exc.value.body["message"]  # type: ignore[index]
    assert_healthy(client)


def test_background_without_store_via_sdk(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model=MODEL, input="hi", background=True, store=False)
    assert exc.value.param == "store"
    assert_envelope(exc.value.response.json(), code="invalid_value", param="store")
    assert_healthy(client)


@pytest.mark.parametrize("stream", [False, True])
def test_unknown_previous_response(client: OpenAI, stream: bool) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(
            model=MODEL, input="hi", previous_response_id="resp_x", stream=stream
        )
    body = assert_api_error(
        exc.value, 400, code="previous_response_not_found", param="previous_response_id"
    )
    assert body["message"] == "Previous response with id 'resp_x' not found."
    assert_healthy(client)


def test_unsupported_content_type(client: OpenAI, http: httpx.Client) -> None:
    r = http.post("/responses", content=b"model=m&input=hi", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert_envelope(r.json(), code="unsupported_media_type")
    assert_healthy(client)


# -- unknown resources, methods, paths ----------------------------------------------------------


def test_unknown_response_id_is_404_everywhere(client: OpenAI, http: httpx.Client) -> None:
    for call_ in (
        lambda: client.responses.retrieve("resp_missing"),
        lambda: client.responses.delete("resp_missing"),
        lambda: client.responses.input_items.list("resp_missing"),
        lambda: client.responses.cancel("resp_missing"),
    ):
        with pytest.raises(openai.NotFoundError) as exc:
            call_()
        assert exc.value.status_code == 404
        assert exc.value.code == "response_not_found"
        body = assert_envelope(exc.value.response.json(), code="response_not_found")
        assert "resp_missing" in body["message"]
    for method, path in (
        ("GET", "/responses/resp_missing"),
        ("DELETE", "/responses/resp_missing"),
        ("GET", "/responses/resp_missing/input_items"),
    ):
        r = http.request(method, path)
        assert r.status_code == 404
        assert_envelope(r.json(), code="response_not_found")
    assert_healthy(client)


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/responses", "POST"),
        ("GET", "/responses", "POST"),
        ("PATCH", "/responses/resp_1", "GET, HEAD, DELETE"),
        ("POST", "/responses/resp_1", "GET, HEAD, DELETE"),
        ("DELETE", "/responses/resp_1/input_items", "GET, HEAD"),
        ("GET", "/responses/resp_1/cancel", "POST"),
    ],
)
def test_wrong_method_is_405_with_allow(
    client: OpenAI, http: httpx.Client, method: str, path: str, allow: str
) -> None:
    r = http.request(method, path, content=b"{}", headers=JSON)
    assert r.status_code == 405
    assert r.headers["allow"] == allow
    assert_envelope(r.json(), code="method_not_allowed")
    assert_healthy(client)


@pytest.mark.parametrize(
    "path",
    ["/v1/nothing", "/v2/responses", "/v1/responsesX", "/v1/responses/r/input_items/x", "/"],
)
def test_unknown_path_is_404(server: ServerThread, client: OpenAI, path: str) -> None:
    with raw_client() as h:
        r = h.get(server.url + path)
    assert r.status_code == 404
    assert_envelope(r.json())
    assert_healthy(client)


def test_cancel_is_refused_clearly(client: OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="hi")
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.cancel(created.id)
    body = exc.value.body
    assert isinstance(body, dict)
    assert "background" in body["message"]
    assert_envelope(exc.value.response.json(), code="invalid_value", param="response_id")
    # the response is untouched
    assert client.responses.retrieve(created.id).status == "completed"
    assert_healthy(client)


# -- body size limit ----------------------------------------------------------------------------


def test_oversized_body_is_413(serve) -> None:
    server, client = serve(max_body_bytes=1000)
    big = "x" * 5000
    with pytest.raises(openai.APIStatusError) as exc:
        client.responses.create(model=MODEL, input=big)
    assert exc.value.status_code == 413
    assert_envelope(exc.value.response.json(), code="request_too_large")
    assert_healthy(client)  # a fresh connection; the oversized one was closed

    # without a Content-Length (chunked): the limit is enforced while reading
    def chunks() -> Any:
        yield b'{"model": "m", "input": "'
        yield b"y" * 2000
        yield b'"}'

    with raw_client(server.http_base_url) as h:
        r = h.post("/responses", content=chunks(), headers=JSON)
        assert r.status_code == 413
        assert r.headers.get("connection") == "close"
        assert_envelope(r.json(), code="request_too_large")
        ok = h.post("/responses", json={"model": MODEL, "input": "small"})
        assert ok.status_code == 200
    # just under the limit is fine
    assert client.responses.create(model=MODEL, input="z" * 800).status == "completed"


# -- the model fails mid-response ---------------------------------------------------------------


def failing_policy() -> ScriptedPolicy:
    return ScriptedPolicy([ErrorStep(code="server_error", message="The model exploded.")])


def test_error_step_streamed_raw(serve) -> None:
    server, _ = serve(policy=failing_policy())
    with (
        raw_client(server.http_base_url) as h,
        h.stream("POST", "/responses", json={"model": MODEL, "input": "hi", "stream": True}) as r,
    ):
        assert r.status_code == 200
        frames = parse_sse(r.read().decode())
    names = [n for n, _ in frames]
    assert names == ["response.created", "response.in_progress", "error", "response.failed"]
    assert [d["sequence_number"] for _, d in frames] == list(range(len(frames)))
    # The flat SSE form (spec §2.5, the SDK's ResponseErrorEvent), not WebSocket's nested one.
    assert frames[2][1] == {
        "type": "error",
        "code": "server_error",
        "message": "The model exploded.",
        "param": None,
        "sequence_number": 2,
    }
    failed = frames[3][1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "server_error", "message": "The model exploded."}
    for _, data in frames[2:]:
        assert_event_class(openai_event(data))
        name = type(openai_event(data)).__name__
        assert name in ("ResponseErrorEvent", "ResponseFailedEvent"), name


def openai_event(data: dict[str, Any]) -> Any:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    return construct_type(type_=ResponseStreamEvent, value=data)


def test_error_step_streamed_sdk(serve) -> None:
    _, client = serve(policy=failing_policy())
    events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    for event in events:
        assert_event_class(event)
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "error",
        "response.failed",
    ]
    error, failed = events[2:]
    assert error.code == "server_error" and error.message == "The model exploded."
    assert error.param is None and error.sequence_number == 2
    assert failed.response.status == "failed" and failed.response.error is not None
    assert failed.response.error.code == "server_error"
    assert_healthy_failing(client)


def test_injected_model_error_streams_through_the_sdk(serve) -> None:
    """A fault failing the response mid-stream: both SDK stream readers go through the `error`
    event to `response.failed` without raising."""
    server, client = serve()
    server.engine.faults = Faults(errors={"model_error": 1.0})
    events = list(client.responses.create(model=MODEL, input="hi", stream=True))
    assert [e.type for e in events][-2:] == ["error", "response.failed"]
    error = events[-2]
    assert isinstance(error, ResponseErrorEvent)
    assert (error.code, error.message) == ("model_error", MESSAGES["model_error"])
    with client.responses.stream(model=MODEL, input="hi") as stream:
        seen = list(stream)
    assert [e.type for e in seen][-2:] == ["error", "response.failed"]
    assert isinstance(seen[-2], ResponseErrorEvent) and seen[-2].code == "model_error"
    assert seen[-1].response.status == "failed"


def assert_healthy_failing(client: OpenAI) -> None:
    """With a failing model, health means: a well-formed failed response, not a crash."""
    resp = client.responses.create(model=MODEL, input="again")
    assert resp.status == "failed"


def test_error_step_non_streaming(serve) -> None:
    _, client = serve(policy=failing_policy())
    resp = client.responses.create(model=MODEL, input="hi")
    assert resp.status == "failed"
    assert resp.error is not None
    assert resp.error.code == "server_error" and resp.error.message == "The model exploded."
    assert resp.output == []
    assert client.responses.retrieve(resp.id).status == "failed"


def test_error_step_after_tool_call(serve) -> None:
    _, client = serve(policy=ScriptedPolicy([call("exec", {"cmd": "ls"}), ErrorStep()]))
    first = client.responses.create(model=MODEL, input="hi", tools=[EXEC_TOOL])
    [fc] = [o for o in first.output if o.type == "function_call"]
    out = {"type": "function_call_output", "call_id": fc.call_id, "output": "a b c"}
    failed = client.responses.create(
        model=MODEL, input=[out], tools=[EXEC_TOOL], previous_response_id=first.id
    )
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "server_error"


# -- survival -----------------------------------------------------------------------------------


def test_connection_survives_errors(server: ServerThread) -> None:
    """Errors that are not about framing keep the keep-alive connection open."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        requests: list[tuple[str, str, bytes, int]] = [
            ("POST", "/v1/responses", b"{nope", 400),
            ("POST", "/v1/responses", orjson.dumps({"model": MODEL, "input": "ok"}), 200),
            ("GET", "/v1/responses/resp_missing", b"", 404),
            ("PUT", "/v1/responses", b"{}", 405),
            ("GET", "/v1/unknown", b"", 404),
            (
                "POST",
                "/v1/responses",
                orjson.dumps({"model": MODEL, "input": "hi", "previous_response_id": "resp_x"}),
                400,
            ),
            (
                "POST",
                "/v1/responses",
                orjson.dumps({"model": MODEL, "input": "ok", "stream": True}),
                200,
            ),
            ("POST", "/v1/responses", orjson.dumps({"model": MODEL, "input": "ok"}), 200),
        ]
        sock = None
        for method, path, body, status in requests:
            conn.request(method, path, body or None, JSON if body else {})
            resp = conn.getresponse()
            data = resp.read()
            assert resp.status == status, (method, path, data)
            if status != 200:
                assert_envelope(orjson.loads(data), code=ANY, param=ANY)
            sock = sock or conn.sock
            assert conn.sock is sock
    finally:
        conn.close()


def test_many_sequential_clients(server: ServerThread) -> None:
    for _ in range(5):
        with OpenAI(api_key="test", base_url=server.http_base_url, max_retries=0) as c:
            assert_healthy(c)


def test_client_disconnect_mid_stream_is_harmless(serve) -> None:
    _, client = serve(policy=ScriptedPolicy([text("word " * 500)]))
    stream = client.responses.create(model=MODEL, input="hi", stream=True)
    first = next(iter(stream))
    assert first.type == "response.created"
    stream.close()
    for _ in range(3):
        assert client.responses.create(model=MODEL, input="hi").status == "completed"


# -- HTTP/1.1 framing and limits (raw sockets) --------------------------------------------------

CREATE_BODY = orjson.dumps({"model": MODEL, "input": "hi"})


def create_head(length: int, extra: bytes = b"") -> bytes:
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n%s\r\n" % (length, extra)
    )


def test_garbage_request_is_400_envelope(server: ServerThread, client: OpenAI) -> None:
    with RawConnection(server.host, server.port) as raw:
        raw.send(b"THIS IS NOT HTTP\r\n\r\n")
        status, headers, body = raw.read_response()
        assert status == 400
        assert headers["content-type"] == "application/json"
        assert_envelope(orjson.loads(body), code="bad_request")
        assert raw.closed_within()
    assert_healthy(client)


def test_pipelined_requests_are_answered_in_order(server: ServerThread) -> None:
    with RawConnection(server.host, server.port) as raw:
        raw.send(
            create_head(len(CREATE_BODY))
            + CREATE_BODY
            + b"GET /v1/responses/resp_missing HTTP/1.1\r\nHost: test\r\n\r\n"
            + create_head(len(CREATE_BODY))
            + CREATE_BODY
        )
        first = raw.read_response()
        second = raw.read_response()
        third = raw.read_response()
    assert first[0] == 200 and orjson.loads(first[2])["status"] == "completed"
    assert second[0] == 404
    assert_envelope(orjson.loads(second[2]), code="response_not_found")
    assert third[0] == 200
    assert orjson.loads(first[2])["id"] != orjson.loads(third[2])["id"]


def test_oversized_content_length_is_refused_before_the_body(serve) -> None:
    server, client = serve(max_body_bytes=1000)
    with RawConnection(server.host, server.port) as raw:
        raw.send(create_head(50_000, b"Expect: 100-continue\r\n"))  # no body sent
        status, headers, body = raw.read_response()
        assert status == 413
        assert headers.get("connection") == "close"
        assert_envelope(orjson.loads(body), code="request_too_large")
        assert raw.closed_within()
    assert_healthy(client)


def test_expect_100_continue_gets_100(server: ServerThread) -> None:
    with RawConnection(server.host, server.port) as raw:
        raw.send(create_head(len(CREATE_BODY), b"Expect: 100-continue\r\n"))
        got_continue = raw.received(b"\r\n\r\n") and raw.buf.startswith(
            b"HTTP/1.1 100 Continue\r\n"
        )
        if got_continue:
            raw.buf = raw.buf.partition(b"\r\n\r\n")[2]
        raw.send(CREATE_BODY)  # what a client does after its wait anyway
        status, _, body = raw.read_response()
        assert status == 200 and orjson.loads(body)["status"] == "completed"
        assert got_continue, f"no 100 Continue before the body: {raw.buf!r}"


def test_request_head_over_the_limit_is_431(serve) -> None:
    server, client = serve(max_header_bytes=1000)
    with RawConnection(server.host, server.port) as raw:
        # the head arrives in pieces and is still incomplete past the limit
        raw.send(b"GET /v1/responses/resp_1 HTTP/1.1\r\nHost: test\r\nX-Big: " + b"a" * 2000)
        status, _, body = raw.read_response()
        assert status == 431
        assert_envelope(orjson.loads(body), code="bad_request")
    assert_healthy(client)


def test_request_head_over_the_limit_in_one_read_is_431(serve) -> None:
    server, _ = serve(max_header_bytes=1000)
    with RawConnection(server.host, server.port) as raw:
        raw.send(
            b"GET /v1/responses/resp_1 HTTP/1.1\r\nHost: test\r\nX-Big: "
            + b"a" * 3000
            + b"\r\n\r\n"
        )
        status, _, _ = raw.read_response()
        assert status == 431


def test_idle_keep_alive_connection_is_closed(serve) -> None:
    server, client = serve(idle_timeout_s=0.3)
    with RawConnection(server.host, server.port) as raw:
        raw.send(create_head(len(CREATE_BODY)) + CREATE_BODY)
        assert raw.read_response()[0] == 200
        assert raw.closed_within()
    # the SDK's pooled connection may have been closed by the server too: still fine
    assert_healthy(client)


def test_stalled_request_head_is_dropped_after_header_timeout(serve) -> None:
    server, _ = serve(header_timeout_s=0.2, idle_timeout_s=IDLE)
    with RawConnection(server.host, server.port) as raw:
        raw.send(b"POST /v1/responses HTTP/1.1\r\nHost: test\r\n")  # and nothing more
        assert raw.closed_within()  # long before the idle timeout


def test_stalled_request_body_is_dropped(serve) -> None:
    server, client = serve(header_timeout_s=0.2, idle_timeout_s=IDLE)
    with RawConnection(server.host, server.port) as raw:
        raw.send(create_head(100) + b'{"model"')
        assert raw.closed_within()  # long before the idle timeout
    assert_healthy(client)


# -- authentication (when the server is given API keys) -----------------------------------------


def test_api_keys_are_checked(serve) -> None:
    try:
        server, wrong = serve(api_keys=frozenset({"sk-right"}))
    except TypeError:
        pytest.skip("this server configuration has no api_keys")
    with pytest.raises(openai.AuthenticationError) as exc:
        wrong.responses.create(model=MODEL, input="hi")
    assert exc.value.status_code == 401
    assert exc.value.request_id is not None and exc.value.request_id.startswith("req_")
    assert_envelope(exc.value.response.json(), code="invalid_api_key")
    with pytest.raises(openai.AuthenticationError):
        wrong.responses.retrieve("resp_anything")  # before any lookup: no id probing
    with OpenAI(api_key="sk-right", base_url=server.http_base_url, max_retries=0) as right:
        assert_healthy(right)
