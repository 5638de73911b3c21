# The decoder's shortcut for the commonest input item (`{"role", "content": "..."}`, with or
# without `"type": "message"`) makes exactly what the converter makes of it, and anything else
# (another role, parts, more keys, a wrong type) still takes the converter's path and its errors;
# a create whose input is a list of them (and of function call outputs: protocol.direct) is
# decoded without the converter, as it decodes it; the item rules and normalize_input take their
# own shortcuts for messages, with the same outcome.
from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec, itemrules
from protocol.convert import converter
from protocol.errors import ProtocolError
from protocol.input import normalize_input
from protocol.items import FunctionCallOutput, InputText, Message, OutputText
from protocol.request import CreateRequest
from support.strategies import function_call_outputs, function_calls, messages

ROLES = st.sampled_from(["user", "assistant", "system", "developer"])


def _decoded(item: dict[str, Any]) -> Any:
    return codec.decode_create({"model": "m", "input": [item]}).input[0]


@given(ROLES, st.text(), st.booleans())
def test_a_plain_message_is_what_the_converter_makes(role: str, text: str, typed: bool) -> None:
    item: dict[str, Any] = {"role": role, "content": text}
    if typed:
        item["type"] = "message"
    assert _decoded(item) == converter.structure({**item, "type": "message"}, Message)


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"role": "robot", "content": "hi"}, "input[0].role"),
        ({"role": "user", "content": 3}, "input[0].content"),
        ({"role": "user", "content": "hi", "type": "mesage"}, "input[0].type"),
    ],
)
def test_other_shapes_get_the_converters_errors(item: dict[str, Any], param: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        _decoded(item)
    assert caught.value.param == param


def test_more_keys_take_the_converters_path() -> None:
    item = {"role": "assistant", "content": "done", "phase": "final_answer", "id": "msg_1"}
    assert _decoded(item) == converter.structure({**item, "type": "message"}, Message)


#: Input items a history holds: plain messages (the shortcut's) and others (the converter's),
#: some of them wrong.
_PLAIN = st.builds(lambda role, text: {"role": role, "content": text}, ROLES, st.text())
_ITEMS = st.one_of(
    _PLAIN,
    _PLAIN.map(lambda item: {**item, "type": "message"}),
    st.builds(
        lambda text: {"role": "user", "content": [{"type": "input_text", "text": text}]}, st.text()
    ),
    st.builds(
        lambda text: {"type": "function_call_output", "call_id": "c", "output": text}, st.text()
    ),
    st.sampled_from(
        [
            {"role": "robot", "content": "hi"},
            {"role": "user", "content": 3},
            {"role": "user", "content": "hi", "type": "mesage"},
            {"role": "user", "content": "hi", "id": "msg_1", "status": "completed"},
            "a string",
            {"content": "no role"},
        ]
    ),
)


def _outcome(decode: Any, value: dict[str, Any]) -> Any:
    try:
        return decode(value)
    except ProtocolError as exc:
        return (exc.message, exc.param, exc.code)


@given(st.lists(_ITEMS, max_size=6), st.booleans())
def test_a_history_decodes_as_the_converter_decodes_it(items: list[Any], store: bool) -> None:
    value = {"model": "m", "input": items, "store": store}
    direct = _outcome(codec.decode_create, value)
    assert direct == _outcome(lambda v: codec.structure(v, CreateRequest), value)
    plain = all(_form(i) in _PLAIN_FORMS or _plain_output(i) for i in items)
    assert (codec._plain_create(value) is not None) == plain  # (the shortcut taken, or not)


def _plain_output(item: Any) -> bool:
    """A function call's output of string output (protocol.direct's form, as generated)."""
    return (
        type(item) is dict
        and item.get("type") == "function_call_output"
        and type(item.get("output")) is str
    )


_PLAIN_FORMS = {frozenset({"role", "content"}), frozenset({"role", "content", "type"})}


def _form(item: Any) -> frozenset[str] | None:
    """The keys of a plain message (a known role, string content, `type` message if any)."""
    if type(item) is not dict or item.get("role") not in (
        "user",
        "assistant",
        "system",
        "developer",
    ):
        return None
    if type(item.get("content")) is not str or item.get("type", "message") != "message":
        return None
    return frozenset(item)


@given(messages.filter(lambda m: m.status is None and type(m.content) is str))
def test_the_item_rules_pass_a_plain_message_by(message: Message) -> None:
    # check_items passes such a message without a look: its general path finds nothing either.
    plan = itemrules._plan(Message)
    assert plan is not None
    itemrules._check(message, plan, "input[0]")


def _stored_by_evolve(item: Any, new_id: Any) -> Any:
    """A message, function call or output as stored, the general way (`attrs.evolve`)."""
    if isinstance(item, Message):
        content = item.content
        if isinstance(content, str):
            part = OutputText(text=content) if item.role == "assistant" else InputText(text=content)
            content = (part,)
        return attrs.evolve(
            item, content=content, id=item.id or new_id("msg"), status=item.status or "completed"
        )
    prefix = "fco" if isinstance(item, FunctionCallOutput) else "fc"
    return attrs.evolve(item, id=item.id or new_id(prefix), status=item.status or "completed")


@given(st.lists(messages | function_calls | function_call_outputs, max_size=6))
def test_normalized_items_are_built_as_evolve_builds_them(items: list[Any]) -> None:
    # normalize_input builds a message at once, and keeps an item that has all it needs.
    made, expected = itertools.count(), itertools.count()
    normalized = normalize_input(items, lambda prefix: f"{prefix}_{next(made)}")
    assert normalized == [
        _stored_by_evolve(item, lambda prefix: f"{prefix}_{next(expected)}") for item in items
    ]
    for out, item in zip(normalized, items, strict=True):
        whole = item.id and item.status and not isinstance(getattr(item, "content", ()), str)
        assert (out is item) == bool(whole)
