# protocol.direct's forms make exactly what the converter makes of a function tool, a function
# call and a call's output, or nothing (None) for anything else; a create holding them decodes
# as the converter decodes it, or fails with its error, whatever their keys and values (a wrong
# type, a missing or unknown key, null, an `agent`, parts for an output, parameters nested too
# deep).
from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import codec, direct
from protocol.codec import MAX_DEPTH
from protocol.convert import converter
from protocol.errors import ProtocolError
from protocol.items import FunctionCall, FunctionCallOutput, FunctionTool
from protocol.request import CreateRequest

#: Values a key may hold: each kind the forms take, and kinds they do not.
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.just(1.0),
    st.text(max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=2), max_size=2),
    st.lists(st.just({"type": "input_text", "text": "t"}), max_size=1),
)
#: The keys of each form's class on the wire, and a few others.
KEYS = {
    "function": ["type", "name", "description", "parameters", "strict", "async"],
    "function_call": ["type", "id", "call_id", "name", "arguments", "status", "async"],
    "function_call_output": ["type", "id", "call_id", "output", "status"],
}
OTHER_KEYS = ["agent", "role", "content", "async_", "x"]
CLASSES = {
    "function": FunctionTool,
    "function_call": FunctionCall,
    "function_call_output": FunctionCallOutput,
}


#: A value of each key's type (null where the field allows it).
PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(("name", "call_id", "arguments", "output"), st.text(max_size=4)),
    **dict.fromkeys(("id", "status", "description"), st.none() | st.text(max_size=4)),
    "parameters": st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    **dict.fromkeys(("strict", "async"), st.none() | st.booleans()),
}


@st.composite
def objects(draw: st.DrawFn, tag: str) -> dict[str, Any]:
    """An object of `tag`'s keys, each left out, of its type, or of any type; now and then a
    wrong tag or another key."""
    value: dict[str, Any] = {"type": tag}
    for key in KEYS[tag][1:]:
        way = draw(st.integers(0, 19))
        if way == 19:
            value[key] = draw(values)
        elif way >= 2:
            value[key] = draw(PLAUSIBLE[key])
    if draw(st.integers(0, 9)) == 0:
        value[draw(st.sampled_from(OTHER_KEYS))] = draw(values)
    if draw(st.integers(0, 9)) == 0:
        value["type"] = draw(st.sampled_from([None, 3, "message", "function_call", "function"]))
    if draw(st.integers(0, 9)) == 0:
        value["agent"] = {"agent_name": "a"}
    return value


def outcome(decode: Any, value: Any) -> Any:
    try:
        return decode(value)
    except ProtocolError as exc:
        return (exc.message, exc.param, exc.code)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(KEYS)).flatmap(lambda tag: st.tuples(st.just(tag), objects(tag))))
def test_a_form_makes_what_the_converter_makes_or_nothing(case: tuple[str, dict[str, Any]]) -> None:
    tag, value = case
    form = direct.function_tool if tag == "function" else direct.ITEMS[tag]
    made = form(value)
    if made is not None:
        assert made == converter.structure(value, CLASSES[tag])
        assert type(made) is CLASSES[tag]


def test_a_plain_tool_call_and_output_take_the_direct_forms() -> None:
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c", "output": "x", "id": None}
    for form, value, cls in (
        (direct.function_tool, {**tool, "async": True}, FunctionTool),
        (direct.ITEMS["function_call"], {**call, "status": "completed"}, FunctionCall),
        (direct.ITEMS["function_call_output"], output, FunctionCallOutput),
    ):
        made = form(value)
        assert made is not None
        assert attrs.asdict(made) == attrs.asdict(converter.structure(value, cls))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(objects("function"), max_size=3),
    st.lists(
        st.sampled_from(["function_call", "function_call_output"]).flatmap(objects)
        | st.just({"role": "user", "content": "hi"}),
        max_size=3,
    ),
    st.booleans(),
)
def test_a_create_with_tools_and_calls_decodes_as_the_converter_decodes_it(
    tools: list[dict[str, Any]], items: list[dict[str, Any]], store: bool
) -> None:
    value = {"model": "m", "input": items, "tools": tools, "store": store}
    via_converter = outcome(lambda v: codec.decode_object(v, CreateRequest), value)
    assert outcome(codec.decode_create, value) == via_converter


def test_a_create_with_plain_tools_and_outputs_takes_the_direct_path() -> None:
    tool = {"type": "function", "name": "f", "description": "d", "parameters": {}}
    output = {"type": "function_call_output", "call_id": "c", "output": "x"}
    value = {"model": "m", "previous_response_id": "r", "input": [output], "tools": [tool]}
    made = codec._plain_create(value)
    assert made is not None
    assert made == codec.decode_object(value, CreateRequest)


def nested(depth: int) -> dict[str, Any]:
    """An object nested `depth` levels deep."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_parameters_too_deep_get_the_converters_error() -> None:
    # the create, its tools, a tool, then the parameters: MAX_DEPTH in all is the most allowed
    for depth, refused in ((MAX_DEPTH - 3, False), (MAX_DEPTH - 2, True)):
        tool = {"type": "function", "name": "f", "parameters": nested(depth)}
        value = {"model": "m", "input": "hi", "tools": [tool]}
        assert (codec._plain_create(value) is None) == refused
        via_converter = outcome(lambda v: codec.decode_object(v, CreateRequest), value)
        assert outcome(codec.decode_create, value) == via_converter
        assert isinstance(via_converter, tuple) == refused
    # many brackets, nested two levels: walked, and within the limit
    wide = {"type": "function", "name": "f", "parameters": {"enum": [[] for _ in range(99)]}}
    value = {"model": "m", "input": "hi", "tools": [wide]}
    assert codec._plain_create(value) == codec.decode_object(value, CreateRequest)
