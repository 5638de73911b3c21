# The wire codec (protocol.codec): property round trips for every type, the tolerant decodes real
# clients rely on (short-form messages, unknown fields and tool types), and the exact
# `code`/`param` of each refused body.
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec
from protocol import events as ev
from protocol import items as it
from protocol.errors import ProtocolError
from protocol.request import AppendRequest, CreateRequest
from protocol.response import Response, Usage
from protocol.stream import ResponseStream
from protocol.validate import validate_create
from support.strategies import (
    ACTION_STRATEGIES,
    CONTENT_PART_STRATEGIES,
    EVENT_FIELDS,
    ITEM_STRATEGIES,
    SETTINGS,
    SMALL,
    create_requests,
    event_types,
    events,
    events_of,
    ids,
    items,
    responses,
    tools,
    usages,
)


def roundtrip_json(obj: Any) -> Any:
    """What a peer sees: the bytes of `encode`, parsed back with orjson."""
    return orjson.loads(codec.encode(obj))


# -- the strategies cover every class -----------------------------------------------------------


def test_strategies_cover_every_wire_class() -> None:
    assert set(EVENT_FIELDS) == set(ev.EVENT_CLASSES)
    assert {c for t, c in ev.CLASS_BY_TYPE.items() if event_types(c)} == set(ev.EVENT_CLASSES)
    assert set(ITEM_STRATEGIES) == set(it.Item.__args__)
    assert set(CONTENT_PART_STRATEGIES) == set(it.ContentPart.__args__)
    assert set(ACTION_STRATEGIES) == set(it.WebSearchAction.__args__)


# -- round trips --------------------------------------------------------------------------------


@SETTINGS
@given(items)
def test_item_round_trip_through_the_item_union(item: Any) -> None:
    data = codec.to_json(item)
    assert codec.structure(data, it.Item) == item
    assert roundtrip_json(item) == data
    assert codec.structure(roundtrip_json(item), it.Item) == item


@pytest.mark.parametrize("cls", sorted(ITEM_STRATEGIES, key=lambda c: c.__name__))
@SMALL
@given(data=st.data())
def test_each_item_class_round_trips(cls: type, data: st.DataObject) -> None:
    item = data.draw(ITEM_STRATEGIES[cls])
    back = codec.structure(roundtrip_json(item), it.Item)
    assert type(back) is cls
    assert back == item


@pytest.mark.parametrize("cls", sorted(CONTENT_PART_STRATEGIES, key=lambda c: c.__name__))
@SMALL
@given(data=st.data())
def test_message_with_each_content_part_round_trips(cls: type, data: st.DataObject) -> None:
    part = data.draw(CONTENT_PART_STRATEGIES[cls])
    for role in ("user", "assistant"):
        message = it.Message(role=role, content=(part,))  # type: ignore[arg-type]
        back = codec.structure(roundtrip_json(message), it.Item)
        assert back == message
        assert isinstance(back, it.Message)
        assert type(back.content[0]) is cls


@pytest.mark.parametrize(
    "action",
    [
        None,
        it.SearchAction(query="q"),
        it.SearchAction(query="q", sources=(it.UrlSource(url="https://a"),)),
        it.OpenPageAction(url="https://a"),
        it.OpenPageAction(),
        it.FindInPageAction(url="https://a", pattern="p"),
    ],
)
def test_web_search_call_with_each_action_round_trips(action: Any) -> None:
    call = it.WebSearchCall(id="ws_1", status="completed", action=action)
    assert codec.structure(roundtrip_json(call), it.Item) == call


@pytest.mark.parametrize(
    "output",
    ["plain", (), (it.InputText(text="a"), it.InputImage(image_url="https://i"))],
)
@pytest.mark.parametrize("item_id", [None, "fco_1"])
def test_function_call_output_shapes_round_trip(output: Any, item_id: str | None) -> None:
    fco = it.FunctionCallOutput(id=item_id, call_id="call_1", output=output)
    assert codec.structure(roundtrip_json(fco), it.Item) == fco


@SETTINGS
@given(tools)
def test_tool_round_trip(tool: Any) -> None:
    back = codec.structure(roundtrip_json(tool), it.Tool)
    assert type(back) is type(tool)
    assert back == tool  # OtherTool compares by `type` only
    if isinstance(tool, it.OtherTool):
        assert back.raw == tool.raw
        assert codec.to_json(back) == tool.raw


@SETTINGS
@given(create_requests)
def test_create_request_round_trip(request: CreateRequest) -> None:
    data = codec.to_json(request)
    assert codec.structure(data, CreateRequest) == request
    assert codec.decode_create(codec.encode(request)) == request
    assert roundtrip_json(request) == data


@SETTINGS
@given(responses)
def test_response_round_trip(response: Response) -> None:
    data = codec.to_json(response)
    assert codec.structure(data, Response) == response
    assert codec.structure(roundtrip_json(response), Response) == response


@SETTINGS
@given(usages)
def test_usage_round_trip(usage: Usage) -> None:
    assert codec.structure(roundtrip_json(usage), Usage) == usage


@SETTINGS
@given(events)
def test_event_round_trip(event: Any) -> None:
    encoded = codec.encode_event(event)
    assert codec.decode_event(encoded) == event
    assert codec.decode_event(encoded.decode()) == event
    parsed = orjson.loads(encoded)
    assert parsed == codec.to_json(event)
    assert parsed["type"] == event.type
    assert "stream_id" not in parsed


@pytest.mark.parametrize("cls", ev.EVENT_CLASSES, ids=lambda c: c.__name__)
@SMALL
@given(data=st.data())
def test_each_event_class_round_trips(cls: type, data: st.DataObject) -> None:
    event = data.draw(events_of(cls))
    back = codec.decode_event(codec.encode_event(event))
    assert type(back) is cls
    assert back == event


@SETTINGS
@given(events, ids)
def test_encode_event_adds_stream_id_only_when_given(event: Any, lane: str) -> None:
    plain = orjson.loads(codec.encode_event(event))
    laned = orjson.loads(codec.encode_event(event, lane))
    assert "stream_id" not in plain
    assert laned.pop("stream_id") == lane
    assert laned == plain
    assert codec.decode_event(codec.encode_event(event, lane)) == event
    assert "stream_id" not in orjson.loads(codec.encode_event(event, None))


@SETTINGS
@given(events)
def test_sse_framing_differs_only_in_the_error_event(event: Any) -> None:
    sse = orjson.loads(codec.encode_sse_event(event))
    if not isinstance(event, ev.ErrorEvent):
        assert sse == orjson.loads(codec.encode_event(event))
        return
    # Flat, as the SDK's ResponseErrorEvent (spec §2.5); WebSocket keeps the nested form.
    expected = {"type": "error", "code": event.error.code, "message": event.error.message}
    expected["param"] = event.error.param
    if event.sequence_number is not None:
        expected["sequence_number"] = event.sequence_number
    assert sse == expected
    assert orjson.loads(codec.encode_event(event))["error"]["message"] == event.error.message
    back = codec.decode_event(codec.encode_sse_event(event))
    assert isinstance(back, ev.ErrorEvent) and back.error.type == "server_error"
    assert (back.error.code, back.error.message, back.error.param) == (
        event.error.code,
        event.error.message,
        event.error.param,
    )
    assert back.sequence_number == event.sequence_number


# -- tolerant decoding (real-clients.md) --------------------------------------------------------

BASE: dict[str, Any] = {"model": "m", "input": "hi"}


def test_short_form_message_without_type_decodes_to_message() -> None:
    request = codec.decode_create(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "hello"},
                {"role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
            ],
        }
    )
    assert request.input == (
        it.Message(role="user", content="hello"),
        it.Message(role="developer", content=(it.InputText(text="be brief"),)),
    )
    assert codec.structure({"role": "assistant", "content": "x"}, it.Item) == it.Message(
        role="assistant", content="x"
    )


def test_function_call_output_with_id_is_accepted() -> None:
    body = {
        "model": "m",
        "input": [
            {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "42"}
        ],
    }
    request = codec.decode_create(orjson.dumps(body))
    assert request.input == (it.FunctionCallOutput(id="fco_1", call_id="call_1", output="42"),)
    append = codec.decode_append({"input": body["input"]})
    assert append.input == request.input


def test_unknown_top_level_fields_are_ignored() -> None:
    body = {
        **BASE,
        "frobnicate": {"deep": [1, 2]},
        "background_options": {"ttl": "30m"},
        "logit_bias": 0.5,
        "verbosity": None,
    }
    assert codec.decode_create(orjson.dumps(body)) == CreateRequest(model="m", input="hi")


def test_penalties_and_cache_options_are_kept() -> None:
    body = {**BASE, "prompt_cache_options": {"ttl": "30m"}, "frequency_penalty": 0.5}
    request = codec.decode_create(orjson.dumps(body))
    assert request.prompt_cache_options == {"ttl": "30m"}
    assert request.frequency_penalty == 0.5


def test_unknown_fields_inside_items_and_tools_are_ignored() -> None:
    body = {
        **BASE,
        "input": [{"role": "assistant", "content": "x", "signature": "final_answer"}],
        "tools": [{"type": "function", "name": "f", "defer_loading": True}],
    }
    request = codec.decode_create(body)
    assert request.input == (it.Message(role="assistant", content="x"),)
    assert request.tools == (it.FunctionTool(name="f"),)


def test_assistant_phase_is_kept_and_omitted_when_absent() -> None:
    body = {**BASE, "input": [{"role": "assistant", "content": "x", "phase": "final_answer"}]}
    [message] = codec.decode_create(body).input  # type: ignore[misc]
    assert message == it.Message(role="assistant", content="x", phase="final_answer")
    assert codec.to_json(message)["phase"] == "final_answer"
    assert "phase" not in codec.to_json(it.Message(role="user", content="x"))


def test_unknown_tool_types_are_accepted_and_echoed_as_given() -> None:
    raw_tools = [
        {"type": "web_search", "search_context_size": "low", "filters": {"allowed": ["a.b"]}},
        {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g"}]},
        {"type": "custom", "name": "c", "format": {"type": "grammar", "syntax": "lark"}},
        {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True},
    ]
    request = codec.decode_create({**BASE, "tools": raw_tools})
    assert [type(t) for t in request.tools] == [it.OtherTool] * 3 + [it.FunctionTool]
    assert [t.type for t in request.tools] == ["web_search", "namespace", "custom", "function"]
    assert request.tools[0].is_web_search  # type: ignore[union-attr]
    assert not request.tools[1].is_web_search  # type: ignore[union-attr]
    assert codec.to_json(request)["tools"][:3] == raw_tools[:3]
    echoed = Response(id="resp_1", created_at=1, model="m", tools=request.tools)
    assert roundtrip_json(echoed)["tools"][:3] == raw_tools[:3]
    # A function tool is echoed in its full form: every declared key, null when not given.
    assert roundtrip_json(echoed)["tools"][3] == {**raw_tools[3], "description": None}


def test_encode_is_json_parsed_by_orjson() -> None:
    request = codec.decode_create({**BASE, "temperature": 1, "top_p": 0.25})
    assert request.temperature == 1.0 and isinstance(request.temperature, float)
    parsed = orjson.loads(codec.encode(request))
    assert parsed["temperature"] == 1.0
    assert parsed["top_p"] == 0.25


# -- refused bodies -----------------------------------------------------------------------------


def body(**fields: Any) -> dict[str, Any]:
    return {**BASE, **fields}


def fco(**fields: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": "call_1", "output": "o", **fields}


USER = {"role": "user", "content": "hi"}
FN_TOOL = {"type": "function", "name": "f"}


def bad(
    case: str,
    data: Any,
    code: str,
    param: str | None,
    mention: str | None = None,
    xfail: str | None = None,
) -> Any:
    """One refused body; `mention` is what the message must contain (default: the param)."""
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(data, code, param, mention, marks=marks, id=case)


def search_call(action: Any) -> dict[str, Any]:
    return {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": action}


CITATION = {"type": "url_citation", "url": "u", "title": "t", "start_index": "0", "end_index": 1}
ANNOTATED = {"type": "output_text", "text": "a", "annotations": [CITATION]}
TWO_TEXTS = [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": 1}]

BAD_CREATE_BODIES: list[Any] = [
    bad("invalid-json", b"{bad", "invalid_json", None, "could not parse"),
    bad("empty-body", b"", "invalid_json", None, "could not parse"),
    bad("body-array", b"[1, 2]", "invalid_type", None, "an array"),
    bad("body-string", b'"hi"', "invalid_type", None, "a string"),
    bad("body-null", b"null", "invalid_type", None, "null"),
    bad("missing-model", {"input": "x"}, "missing_required_parameter", "model"),
    bad("missing-input", {"model": "m"}, "missing_required_parameter", "input"),
    bad("model-int", body(model=1), "invalid_type", "model"),
    bad("model-null", body(model=None), "invalid_type", "model"),
    bad("store-string", body(store="yes"), "invalid_type", "store"),
    bad("temperature-string", body(temperature="0.5"), "invalid_type", "temperature"),
    bad("top_p-bool", body(top_p=True), "invalid_type", "top_p"),
    bad(
        "max_output_tokens-bool", body(max_output_tokens=True), "invalid_type", "max_output_tokens"
    ),
    bad("max_tool_calls-decimal", body(max_tool_calls=1.5), "invalid_type", "max_tool_calls"),
    bad("stream-string", body(stream="true"), "invalid_type", "stream"),
    bad("parallel-string", body(parallel_tool_calls="no"), "invalid_type", "parallel_tool_calls"),
    bad("previous-int", body(previous_response_id=7), "invalid_type", "previous_response_id"),
    bad("metadata-value-int", body(metadata={"a": "x", "b": 1}), "invalid_type", "metadata.b"),
    bad("metadata-array", body(metadata=[]), "invalid_type", "metadata"),
    bad("tools-not-array", body(tools={"type": "function"}), "invalid_type", "tools"),
    bad("tools-0-int", body(tools=[5]), "invalid_type", "tools[0]"),
    bad(
        "tools-1-name-missing",
        body(tools=[FN_TOOL, {"type": "function"}]),
        "missing_required_parameter",
        "tools[1].name",
    ),
    bad(
        "tools-0-strict-string",
        body(tools=[{**FN_TOOL, "strict": "yes"}]),
        "invalid_type",
        "tools[0].strict",
    ),
    bad("tools-0-type-int", body(tools=[{"type": 3}]), "invalid_type", "tools[0].type"),
    bad("tool_choice-int", body(tool_choice=5), "invalid_type", "tool_choice"),
    bad("include-not-array", body(include="x"), "invalid_type", "include"),
    bad("include-0-int", body(include=[1]), "invalid_type", "include[0]"),
    bad("stream_options-int", body(stream_options=5), "invalid_type", "stream_options"),
    bad(
        "stream_options-field",
        body(stream_options={"include_obfuscation": "no"}),
        "invalid_type",
        "stream_options.include_obfuscation",
    ),
    bad("instructions-int", body(instructions=5), "invalid_type", "instructions"),
    bad("conversation-int", body(conversation=5), "invalid_type", "conversation"),
    bad(
        "context_management-0-int",
        body(context_management=[1]),
        "invalid_type",
        "context_management[0]",
    ),
    bad("shape-invalid", body(shape="fork"), "invalid_value", "shape", "'fork'"),
    bad("shape-null", body(shape=None), "invalid_value", "shape", "None"),
    bad("input-int", body(input=5), "invalid_type", "input"),
    bad("input-object", body(input={"role": "user"}), "invalid_type", "input"),
    bad("input-0-not-object", body(input=["hi"]), "invalid_type", "input[0]"),
    bad(
        "input-0-role-invalid",
        body(input=[{"role": "robot", "content": "x"}]),
        "invalid_value",
        "input[0].role",
        "'robot'",
    ),
    bad(
        "input-1-type-unknown",
        body(input=[USER, {"type": "teleport"}]),
        "invalid_value",
        "input[1].type",
        "'teleport'",
    ),
    bad(
        "input-0-type-int",
        body(input=[{"type": 1, "role": "user"}]),
        "invalid_type",
        "input[0].type",
    ),
    bad(
        "input-0-no-type-no-role",
        body(input=[{"content": "x"}]),
        "missing_required_parameter",
        "input[0].type",
    ),
    bad(
        "input-0-content-missing",
        body(input=[{"type": "message", "role": "user"}]),
        "missing_required_parameter",
        "input[0].content",
    ),
    bad(
        "input-0-content-int",
        body(input=[{"role": "user", "content": 3}]),
        "invalid_type",
        "input[0].content",
    ),
    bad(
        "input-0-content-1-text-int",
        body(input=[{"role": "user", "content": TWO_TEXTS}]),
        "invalid_type",
        "input[0].content[1].text",
    ),
    bad(
        "input-0-content-0-type-unknown",
        body(input=[{"role": "user", "content": [{"type": "input_video"}]}]),
        "invalid_value",
        "input[0].content[0].type",
        "'input_video'",
    ),
    bad(
        "input-2-call_id-missing",
        body(input=[USER, fco(), {"type": "function_call_output", "output": "o"}]),
        "missing_required_parameter",
        "input[2].call_id",
    ),
    bad("input-0-output-int", body(input=[fco(output=5)]), "invalid_type", "input[0].output"),
    bad(
        "input-0-arguments-object",
        body(input=[{"type": "function_call", "call_id": "c", "name": "n", "arguments": {}}]),
        "invalid_type",
        "input[0].arguments",
    ),
    bad(
        "input-0-action-type-unknown",
        body(input=[search_call({"type": "click"})]),
        "invalid_value",
        "input[0].action.type",
        "'click'",
    ),
    bad(
        "input-0-action-query-missing",
        body(input=[search_call({"type": "search"})]),
        "missing_required_parameter",
        "input[0].action.query",
    ),
    bad(
        "input-0-summary-0-text-missing",
        body(input=[{"type": "reasoning", "summary": [{"type": "summary_text"}]}]),
        "missing_required_parameter",
        "input[0].summary[0].text",
    ),
    bad(
        "input-0-citation-index-string",
        body(input=[{"role": "assistant", "content": [ANNOTATED]}]),
        "invalid_type",
        "input[0].content[0].annotations[0].start_index",
    ),
    bad(
        "input-0-item_reference-id-missing",
        body(input=[{"type": "item_reference"}]),
        "missing_required_parameter",
        "input[0].id",
    ),
    bad(
        "type-invalid",
        body(type="response.cancel"),
        "invalid_value",
        "type",
        "'response.cancel'",
    ),
    bad(
        "tools-1-type-missing",
        body(tools=[FN_TOOL, {"name": "g"}]),
        "missing_required_parameter",
        "tools[1].type",
    ),
]


@pytest.mark.parametrize(("data", "code", "param", "mention"), BAD_CREATE_BODIES)
def test_bad_create_bodies_are_refused(
    data: Any, code: str, param: str | None, mention: str | None
) -> None:
    encodings = (data, orjson.dumps(data)) if isinstance(data, dict) else (data,)
    for encoded in encodings:
        with pytest.raises(ProtocolError) as info:
            validate_create(codec.decode_create(encoded), websocket=False)
        error = info.value
        assert (error.code, error.param, error.status) == (code, param, 400)
        assert error.type == "invalid_request_error"
        assert (mention or param or "") in error.message
        assert error.payload() == {
            "type": "invalid_request_error",
            "code": code,
            "message": error.message,
            "param": param,
        }


def test_bad_body_table_is_large_enough() -> None:
    assert len(BAD_CREATE_BODIES) >= 25


@pytest.mark.parametrize(
    ("data", "code", "param"),
    [
        pytest.param(b"{", "invalid_json", None, id="invalid-json"),
        pytest.param(b"[]", "invalid_type", None, id="body-array"),
        pytest.param({}, "missing_required_parameter", "input", id="missing-input"),
        pytest.param({"input": "x"}, "invalid_type", "input", id="input-string"),
        pytest.param({"input": [5]}, "invalid_type", "input[0]", id="input-0-int"),
        pytest.param(
            {"input": [fco(), {"type": "function_call_output", "call_id": "c"}]},
            "missing_required_parameter",
            "input[1].output",
            id="input-1-output-missing",
        ),
        pytest.param(
            {"input": [{"type": "bogus"}]}, "invalid_value", "input[0].type", id="input-0-type"
        ),
        pytest.param(
            {"input": [], "response_id": 5}, "invalid_type", "response_id", id="response_id-int"
        ),
    ],
)
def test_decode_append_refuses_bad_shapes(data: Any, code: str, param: str | None) -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_append(data)
    assert (info.value.code, info.value.param, info.value.status) == (code, param, 400)
    if param is not None and code != "invalid_value":
        assert param in info.value.message


def test_decode_append_accepts_outputs_and_messages() -> None:
    append = codec.decode_append(
        b'{"response_id": "resp_1", "input": [{"type": "function_call_output", '
        b'"call_id": "c", "output": "ok"}, {"role": "user", "content": "steer"}]}'
    )
    assert append == AppendRequest(
        response_id="resp_1",
        input=(
            it.FunctionCallOutput(call_id="c", output="ok"),
            it.Message(role="user", content="steer"),
        ),
    )


def test_websocket_create_frame_with_type_decodes() -> None:
    request = codec.decode_create(
        {"type": "response.create", "model": "m", "input": "hi", "stream_id": "lane"}
    )
    assert request.type == "response.create"
    assert request.stream_id == "lane"


def test_websocket_append_frame_with_type_decodes() -> None:
    append = codec.decode_append({"type": "response.append", "response_id": "r", "input": []})
    assert append.type == "response.append"


def test_create_request_with_type_round_trips() -> None:
    request = CreateRequest(model="m", input="hi", type="response.create")
    assert codec.decode_create(codec.encode(request)) == request


def test_integer_field_error_says_integer() -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_create(body(max_output_tokens=1.5))
    assert "expected an integer" in info.value.message


def test_decode_event_refuses_unknown_type() -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_event(b'{"type": "response.teleported", "sequence_number": 3}')
    assert info.value.param == "type"
    assert info.value.status == 400
    assert "response.teleported" in info.value.message


@pytest.mark.parametrize("data", [b"{}", b"[]", b'{"type": 5}', {"sequence_number": 1}])
def test_decode_event_refuses_untyped_frames(data: Any) -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_event(data)
    assert info.value.status == 400
    assert "type" in info.value.message


def test_decode_event_refuses_invalid_json() -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_event(b"{nope")
    assert info.value.code == "invalid_json"


def test_decode_event_reports_the_missing_field() -> None:
    with pytest.raises(ProtocolError) as info:
        codec.decode_event({"type": "response.output_text.delta", "sequence_number": 1})
    assert (info.value.code, info.value.param) == ("missing_required_parameter", "item_id")


def test_lifecycle_events_sharing_a_snapshot_encode_each_in_full() -> None:
    """created and in_progress carry one snapshot (encoded once); another snapshot, even of
    the same response after it changed, is encoded afresh."""
    s = ResponseStream(Response(id="resp_1", created_at=0, model="m", instructions="Be brief."))
    created, in_progress = s.start()
    s.response.instructions = "changed"
    (completed,) = s.created_only()
    for event in (created, in_progress, completed, created):
        assert orjson.loads(codec.encode_event(event)) == codec.to_json(event)
    assert orjson.loads(codec.encode_event(completed))["response"]["instructions"] == "changed"
    assert orjson.loads(codec.encode_event(in_progress))["response"]["instructions"] == "Be brief."
