# The Conversations API on the wire, sans-IO: the bodies of its requests (create, update, add
# items), the `conversation` object and its deletion, the rules of a body (at most 20 items at a
# time, metadata's limits), a page of items (`after`, `limit`, `order`), the `conversation`
# parameter of a create, and the errors of them all. No store and no I/O: rollout/server/
# conversations.py parses the query and calls these; the stores keep what they describe.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from protocol import errors, itemrules
from protocol.errors import ProtocolError, clip
from protocol.items import Item, ItemReference

MAX_ITEMS = 20  # items a create or an add may carry at a time (the SDK's docstrings)
#: `metadata` (of a conversation or a response): at most this many keys, of at most KEY_CHARS,
#: with values of at most VALUE_CHARS.
METADATA_KEYS, METADATA_KEY_CHARS, METADATA_VALUE_CHARS = 16, 64, 512
ORDERS = ("asc", "desc")


# -- request bodies ----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ConversationCreate:
    """`POST /v1/conversations`: initial items and metadata, both optional."""

    items: tuple[Item, ...] | None = None
    metadata: dict[str, str] | None = None


@attrs.frozen(kw_only=True)
class ConversationUpdate:
    """`POST /v1/conversations/{id}`: the metadata that replaces the conversation's."""

    metadata: dict[str, str] | None


@attrs.frozen(kw_only=True)
class ItemsCreate:
    """`POST /v1/conversations/{id}/items`: the items to add."""

    items: tuple[Item, ...]


# -- the rules of a body -----------------------------------------------------------------------


def check_items(items: Sequence[Item] | None, param: str = "items") -> list[Item]:
    """At most MAX_ITEMS items, none of them a reference (a conversation holds items), each
    within the item rules (protocol.itemrules)."""
    if items is None:
        return []
    if len(items) > MAX_ITEMS:
        raise errors.invalid(
            f"Invalid '{param}': array too long. Expected an array with maximum length "
            f"{MAX_ITEMS}, but got an array with length {len(items)} instead.",
            param=param,
            code="array_above_max_length",
        )
    for i, item in enumerate(items):
        if isinstance(item, ItemReference):
            raise errors.invalid(
                "Item references cannot be added to a conversation; add the item itself.",
                param=f"{param}[{i}]",
                code="invalid_value",
            )
    itemrules.check_items(items, param)
    return list(items)


def check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Metadata within the API's limits: 16 pairs, keys of at most 64 characters, values of at
    most 512."""
    if metadata is None:
        return {}
    if len(metadata) > METADATA_KEYS:
        raise errors.invalid(
            f"Invalid 'metadata': too many properties. Expected an object with at most "
            f"{METADATA_KEYS} properties, but got an object with {len(metadata)} properties "
            "instead.",
            param="metadata",
            code="object_above_max_properties",
        )
    for key, value in metadata.items():
        if len(key) > METADATA_KEY_CHARS:
            raise errors.invalid(
                f"Invalid 'metadata': key too long. Expected a key with maximum length "
                f"{METADATA_KEY_CHARS}, but got a key with length {len(key)} instead.",
                param="metadata",
                code="invalid_value",
            )
        if len(value) > METADATA_VALUE_CHARS:
            raise errors.invalid(
                f"Invalid 'metadata.{clip(key)}': string too long. Expected a string with "
                f"maximum length {METADATA_VALUE_CHARS}, but got a string with length "
                f"{len(value)} instead.",
                param=f"metadata.{clip(key)}",
                code="string_above_max_length",
            )
    return dict(metadata)


# -- objects returned --------------------------------------------------------------------------


def conversation_json(conv_id: str, created_at: int, metadata: Mapping[str, str]) -> dict[str, Any]:
    """The `conversation` object."""
    return {
        "id": conv_id,
        "object": "conversation",
        "created_at": created_at,
        "metadata": dict(metadata),
    }


def deleted_json(conv_id: str) -> dict[str, Any]:
    return {"id": conv_id, "object": "conversation.deleted", "deleted": True}


def item_list(data: Sequence[Mapping[str, Any]], has_more: bool) -> dict[str, Any]:
    """A list of items (wire JSON, each with an id) as the API returns it."""
    return {
        "object": "list",
        "data": list(data),
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    }


def page(
    items: Sequence[Item], after: str | None, limit: int, order: str
) -> tuple[list[Item], bool]:
    """The page of `items` (oldest first) that a list asks for: in `order`, after the item
    `after` (an id the list holds), at most `limit`; and whether more follow."""
    if order not in ORDERS:
        raise errors.invalid(
            f"Invalid value: {clip(repr(order))}. Supported values are: 'asc' and 'desc'.",
            param="order",
            code="invalid_value",
        )
    ordered = list(items) if order == "asc" else list(reversed(items))
    if after:
        ids = [getattr(i, "id", None) for i in ordered]
        if after not in ids:
            raise errors.invalid(
                f"Item with id '{clip(after)}' not found.", param="after", code="invalid_value"
            )
        ordered = ordered[ids.index(after) + 1 :]
    return ordered[:limit], len(ordered) > limit


# -- `conversation` on a create ----------------------------------------------------------------


def conversation_id_of(value: str | Mapping[str, Any] | None) -> str | None:
    """The id a create's `conversation` names: a string, or an object with a string `id`."""
    if value is None:
        return None
    if isinstance(value, str):
        conv_id: Any = value
    else:
        extra = sorted(set(value) - {"id"})
        if extra:
            raise errors.invalid(
                f"Unknown parameter: 'conversation.{clip(extra[0])}'.",
                param=f"conversation.{clip(extra[0])}",
                code="unknown_parameter",
            )
        conv_id = value.get("id")
        if conv_id is None:
            raise errors.invalid(
                "Missing required parameter: 'conversation.id'.",
                param="conversation.id",
                code="missing_required_parameter",
            )
    if not isinstance(conv_id, str) or not conv_id:
        raise errors.invalid(
            "Invalid 'conversation.id': expected a non-empty string.",
            param="conversation",
            code="invalid_value",
        )
    return conv_id


def check_not_chained(conversation: object, previous_response_id: str | None) -> None:
    """`conversation` and `previous_response_id` cannot be combined."""
    if conversation is not None and previous_response_id:
        raise errors.invalid(
            "Mutually exclusive parameters: Ensure you are only providing one of: "
            "'previous_response_id' or 'conversation'.",
            param=None,
            code="mutually_exclusive_parameters",
        )


# -- errors ------------------------------------------------------------------------------------


def conversation_not_found(conv_id: str, param: str | None = None) -> ProtocolError:
    return ProtocolError(
        message=f"Conversation with id '{clip(conv_id)}' not found.",
        code="conversation_not_found",
        param=param,
        status=404,
    )


def item_not_found(item_id: str) -> ProtocolError:
    return ProtocolError(
        message=f"Item with id '{clip(item_id)}' not found.",
        code="item_not_found",
        status=404,
    )


__all__ = [
    "MAX_ITEMS",
    "ConversationCreate",
    "ConversationUpdate",
    "ItemsCreate",
    "check_items",
    "check_metadata",
    "check_not_chained",
    "conversation_id_of",
    "conversation_json",
    "conversation_not_found",
    "deleted_json",
    "item_list",
    "item_not_found",
    "page",
]
