# The decoder's shortcut for the commonest input item (`{"role", "content": "..."}`, with or
# without `"type": "message"`) makes exactly what the converter makes of it, and anything else
# (another role, parts, more keys, a wrong type) still takes the converter's path and its errors.
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec
from protocol.convert import converter
from protocol.errors import ProtocolError
from protocol.items import Message

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
