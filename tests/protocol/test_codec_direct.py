# The codec's direct paths give what the converter gives. response_json (the lifecycle events'
# JSON form of a Response) is the converter's form exactly, keys in the same order, for responses
# holding every kind of item, tool, setting and outcome, and so is tools_json (a context's header)
# for any tools; a create decodes to the converter's request, or fails with its error, whatever
# its keys and values.
from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import codec, encode
from protocol import events as ev
from protocol import items as it
from protocol.codec import _PLAIN_CREATE, _plain_create
from protocol.errors import ProtocolError
from protocol.input import new_response, normalize_input
from protocol.request import CreateRequest
from protocol.response import IncompleteDetails, Response, ResponseError, Usage
from support.strategies import (
    SETTINGS,
    events,
    events_of,
    messages,
    output_texts,
    responses,
    tools,
)

TOOLS = [
    {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True},
    {"type": "function", "name": "g", "parameters": {}, "async": True},
    {"type": "web_search"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
]
ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "hi"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "out"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}]},
]
REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "input": "hi"},
    {"model": "m", "input": ITEMS, "tools": TOOLS, "instructions": "be brief"},
    {
        "model": "m",
        "input": "hi",
        "instructions": [{"type": "message", "role": "developer", "content": "x"}],
        "metadata": {"k": "v"},
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}},
        "tool_choice": {"type": "function", "name": "f"},
        "tools": TOOLS[:1],
        "reasoning": {"effort": "high", "summary": "auto"},
        "max_output_tokens": 50,
        "temperature": 0.5,
        "user": "u",
        "prompt_cache_key": "key",
        "store": False,
    },
]


def same(a: Any, b: Any) -> None:
    assert orjson.dumps(a) == orjson.dumps(b)  # the same JSON, keys in the same order


@pytest.mark.parametrize("body", REQUESTS)
def test_a_response_in_every_state_encodes_as_the_converter_does(body: dict[str, Any]) -> None:
    req = codec.decode_create(body)
    response = new_response(req, "resp_1", 1700000000)
    same(codec.response_json(response), codec.converter.unstructure(response))
    response.output.extend(normalize_input(req.input, lambda prefix: f"{prefix}_1"))
    response.status = "completed"
    response.usage = Usage.of(10, 2, 5, 1)
    same(codec.response_json(response), codec.converter.unstructure(response))
    failed = attrs.evolve(response, error=ResponseError(code="server_error", message="m"))
    same(codec.response_json(failed), codec.converter.unstructure(failed))
    cut = attrs.evolve(response, incomplete_details=IncompleteDetails(reason="max_output_tokens"))
    same(codec.response_json(cut), codec.converter.unstructure(cut))


# -- the plain create's direct decoding ---------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)
keys = st.sampled_from([*_PLAIN_CREATE, "type", "tools", "temperature", "shape", "unknown"])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keys, json_values | st.just("response.create"), max_size=6))
def test_a_create_decodes_as_the_converter_decodes_it_or_fails_as_it_does(
    value: dict[str, Any],
) -> None:
    value.setdefault("model", "m")
    via_converter = decoded_by(lambda v: codec.decode_object(v, CreateRequest), value)
    assert decoded_by(codec.decode_create, value) == via_converter


@given(st.fixed_dictionaries({"model": st.text(), "input": st.text(), "store": st.booleans()}))
def test_a_plain_create_takes_the_direct_path(value: dict[str, Any]) -> None:
    value["type"] = "response.create"
    assert _plain_create(value) == codec.decode_object(value, CreateRequest)


def decoded_by(decode: Any, value: dict[str, Any]) -> Any:
    try:
        return decode(dict(value))
    except ProtocolError as exc:
        return exc.payload()


# -- against the strategies of every wire class -------------------------------------------------


@SETTINGS
@given(responses)
def test_any_response_encodes_as_the_converter_does(response: Response) -> None:
    same(codec.response_json(response), codec.converter.unstructure(response))


@SETTINGS
@given(st.lists(tools, max_size=4))
def test_tools_encode_as_the_converter_encodes_them(listed: list[Any]) -> None:
    same(codec.tools_json(tuple(listed)), codec.converter.unstructure(listed))


@SETTINGS
@given(
    st.one_of(
        events_of(ev.OutputItemEvent),
        events_of(ev.ContentPartEvent),
        events_of(ev.ResponseEvent),
        events_of(ev.PauseEvent),
        events_of(ev.ErrorEvent),
    )
    | events,
    st.none() | st.sampled_from(["lane-1", 'a"b\\c']),
)
def test_any_event_encodes_as_the_converter_does(event: Any, stream_id: str | None) -> None:
    expected = codec.converter.unstructure(event)
    if isinstance(event, ev.ResponseEvent):
        expected["response"] = codec.converter.unstructure(event.response)
    if stream_id is not None:
        expected["stream_id"] = stream_id
    # the same bytes: keys in the same order, a lifecycle event's snapshot spliced in
    assert codec.encode_event(event, stream_id) == orjson.dumps(expected)


output_messages = st.builds(
    it.Message,
    id=st.none() | st.just("msg_1"),
    role=st.just("assistant"),
    content=st.lists(output_texts, max_size=3).map(tuple),
    status=st.sampled_from([None, "in_progress", "completed"]),
    phase=st.sampled_from([None, "commentary", "final_answer"]),
)


@SETTINGS
@given(st.one_of(messages, output_messages, output_texts))
def test_a_message_or_part_takes_the_direct_path_only_with_the_converters_form(item: Any) -> None:
    done = encode._DIRECT[type(item)](item)
    if done is not None:
        same(done, codec.converter.unstructure(item))


def test_a_plain_output_message_and_its_part_take_the_direct_path() -> None:
    part = it.OutputText(text="ok")
    for phase in (None, "final_answer"):
        message = it.Message(id="msg_1", role="assistant", content=(part,), phase=phase)
        assert encode._message_json(message) is not None
        same(encode._message_json(message), codec.converter.unstructure(message))
    assert encode._output_text_json(part) is not None
    cited = it.UrlCitation(url="https://a", title="a", start_index=0, end_index=1)
    assert encode._output_text_json(attrs.evolve(part, annotations=(cited,))) is None
    assert encode._message_json(it.Message(role="user", content="hi")) is None
