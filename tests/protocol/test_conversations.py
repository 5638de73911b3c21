# protocol/conversations.py by direct calls: a page of items (order, after, limit, has_more),
# the `conversation` parameter's forms, its refusal beside previous_response_id, and the limits
# of items and metadata, each refusal with its param and code.
from __future__ import annotations

from typing import Any

import pytest

from protocol.codec import decode_create
from protocol.conversations import (
    MAX_ITEMS,
    check_items,
    check_metadata,
    check_not_chained,
    conversation_id_of,
    item_list,
    page,
)
from protocol.errors import ProtocolError
from protocol.items import ItemReference, Message
from protocol.validate import validate_create

ITEMS = [Message(id=f"msg_{i}", role="user", content=str(i)) for i in range(5)]


def ids(items: list[Any]) -> list[str]:
    return [i.id for i in items]


def test_pages_in_either_order() -> None:
    shown, more = page(ITEMS, None, 2, "desc")
    assert ids(shown) == ["msg_4", "msg_3"] and more
    shown, more = page(ITEMS, "msg_3", 2, "desc")
    assert ids(shown) == ["msg_2", "msg_1"] and more
    shown, more = page(ITEMS, "msg_1", 2, "desc")
    assert ids(shown) == ["msg_0"] and not more
    shown, more = page(ITEMS, "msg_2", 20, "asc")
    assert ids(shown) == ["msg_3", "msg_4"] and not more
    assert page([], None, 20, "asc") == ([], False)


def test_a_page_refuses_a_bad_order_or_cursor() -> None:
    with pytest.raises(ProtocolError) as exc:
        page(ITEMS, None, 2, "sideways")
    assert (exc.value.param, exc.value.code) == ("order", "invalid_value")
    with pytest.raises(ProtocolError) as exc:
        page(ITEMS, "msg_9", 2, "asc")
    assert exc.value.param == "after" and exc.value.message == "Item with id 'msg_9' not found."


def test_an_item_list() -> None:
    assert item_list([], has_more=False) == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }
    listed = item_list([{"id": "a"}, {"id": "b"}], has_more=True)
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == ("a", "b", True)


@pytest.mark.parametrize(
    ("value", "want"), [(None, None), ("conv_1", "conv_1"), ({"id": "conv_2"}, "conv_2")]
)
def test_the_forms_of_conversation(value: Any, want: str | None) -> None:
    assert conversation_id_of(value) == want


@pytest.mark.parametrize(
    ("value", "param", "code"),
    [
        ("", "conversation", "invalid_value"),
        ({"id": 5}, "conversation", "invalid_value"),
        ({}, "conversation.id", "missing_required_parameter"),
        ({"id": "conv_1", "x": 1}, "conversation.x", "unknown_parameter"),
    ],
)
def test_bad_forms_of_conversation(value: Any, param: str, code: str) -> None:
    with pytest.raises(ProtocolError) as exc:
        conversation_id_of(value)
    assert (exc.value.param, exc.value.code, exc.value.status) == (param, code, 400)


def test_conversation_and_previous_response_id_exclude_each_other() -> None:
    check_not_chained("conv_1", None)
    check_not_chained(None, "resp_1")
    with pytest.raises(ProtocolError) as exc:
        check_not_chained({"id": "conv_1"}, "resp_1")
    assert exc.value.code == "mutually_exclusive_parameters"
    req = decode_create(
        {"model": "m", "input": "x", "conversation": "c", "previous_response_id": "r"}
    )
    with pytest.raises(ProtocolError):
        validate_create(req, websocket=False)
    validate_create(
        decode_create({"model": "m", "input": "x", "conversation": "c"}), websocket=True
    )


def test_items_at_most_twenty_and_no_references() -> None:
    assert check_items(None) == []
    assert len(check_items(tuple(ITEMS * 4))) == MAX_ITEMS
    with pytest.raises(ProtocolError) as exc:
        check_items(tuple(ITEMS * 4 + ITEMS[:1]))
    assert (exc.value.param, exc.value.code) == ("items", "array_above_max_length")
    with pytest.raises(ProtocolError) as exc:
        check_items((ITEMS[0], ItemReference(id="msg_0")))
    assert exc.value.param == "items[1]"


def test_metadata_limits() -> None:
    assert check_metadata(None) == {}
    full = {f"{i:02d}".ljust(64, "k"): "v" * 512 for i in range(16)}
    assert check_metadata(full) == full
    for bad, param in (
        ({**full, "x": "y"}, "metadata"),
        ({"k" * 65: "v"}, "metadata"),
        ({"k": "v" * 513}, "metadata.k"),
    ):
        with pytest.raises(ProtocolError) as exc:
            check_metadata(bad)
        assert exc.value.param == param
