# The Conversations API over HTTP: `/v1/conversations` (create, retrieve, update, delete) and
# its items (add, list, retrieve, delete), one handler per route, registered in resources.ROUTES.
# Handlers parse the query and body (the rules are protocol/conversations.py's) and read and
# write the engine's store, where each conversation is kept under the API key that made it:
# another key's conversation is not found.
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol import codec, errors
from protocol.conversations import (
    ConversationCreate,
    ConversationUpdate,
    ItemsCreate,
    check_items,
    check_metadata,
    conversation_json,
    conversation_not_found,
    deleted_json,
    item_list,
    item_not_found,
    page,
)
from protocol.input import normalize_input
from protocol.items import Item
from rollout.conversation.ids import new_id
from rollout.store.base import Store
from rollout.store.conversations import StoredConversation

if TYPE_CHECKING:
    from rollout.server.exchange import Exchange, Request

LIMITS = (1, 100, 20)  # `limit` of a list: least, most, default


async def create(ex: Exchange, request: Request) -> None:
    body = codec.decode_object(_body(request), ConversationCreate)
    items = _new_items(body.items)
    conv = StoredConversation(
        id=new_id("conv"),
        created_at=int(time.time()),
        metadata=check_metadata(body.metadata),
        owner=ex.owner,
    )
    await _store(ex).create_conversation(conv, items)
    await ex.reply(200, conversation_json(conv.id, conv.created_at, conv.metadata))


async def retrieve(ex: Exchange, request: Request, conv_id: str) -> None:
    del request
    conv = await _visible(ex, conv_id)
    await ex.reply(200, conversation_json(conv.id, conv.created_at, conv.metadata))


async def update(ex: Exchange, request: Request, conv_id: str) -> None:
    body = codec.decode_object(_body(request), ConversationUpdate)
    metadata = check_metadata(body.metadata)
    conv = await _visible(ex, conv_id)
    if not await _store(ex).set_metadata(conv_id, metadata):
        raise conversation_not_found(conv_id)
    await ex.reply(200, conversation_json(conv.id, conv.created_at, metadata))


async def delete(ex: Exchange, request: Request, conv_id: str) -> None:
    del request
    await _visible(ex, conv_id)
    if not await _store(ex).delete_conversation(conv_id):
        raise conversation_not_found(conv_id)
    await ex.reply(200, deleted_json(conv_id))


async def create_items(ex: Exchange, request: Request, conv_id: str) -> None:
    body = codec.decode_object(_body(request), ItemsCreate)
    items = _new_items(body.items)
    await _visible(ex, conv_id)
    if not await _store(ex).add_items(conv_id, items):
        raise conversation_not_found(conv_id)
    data = [codec.to_json(i) for i in items]
    await ex.reply(200, item_list(data, has_more=False))


async def list_items(ex: Exchange, request: Request, conv_id: str) -> None:
    await _visible(ex, conv_id)
    items = await _store(ex).conversation_items(conv_id)
    after = _query(request, "after")
    shown, more = page(items, after, _limit(request), _query(request, "order") or "desc")
    await ex.reply(200, item_list([codec.to_json(i) for i in shown], has_more=more))


async def retrieve_item(ex: Exchange, request: Request, conv_id: str, item_id: str) -> None:
    del request
    await _visible(ex, conv_id)
    for item in await _store(ex).conversation_items(conv_id):
        if getattr(item, "id", None) == item_id:
            await ex.reply(200, codec.to_json(item))
            return
    raise item_not_found(item_id)


async def delete_item(ex: Exchange, request: Request, conv_id: str, item_id: str) -> None:
    """Remove an item; the answer is the conversation."""
    del request
    conv = await _visible(ex, conv_id)
    if not await _store(ex).delete_item(conv_id, item_id):
        raise item_not_found(item_id)
    await ex.reply(200, conversation_json(conv.id, conv.created_at, conv.metadata))


# -- parsing --------------------------------------------------------------------------------------


def _store(ex: Exchange) -> Store:
    return ex.service.engine.store


async def _visible(ex: Exchange, conv_id: str) -> StoredConversation:
    """The conversation, if the request's key may see it; else 404 (as for no conversation)."""
    conv = await _store(ex).get_conversation(conv_id)
    if conv is None or not conv.owned_by(ex.owner):
        raise conversation_not_found(conv_id)
    return conv


def _body(request: Request) -> bytes | bytearray:
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if ctype.lower() != "application/json":
        raise errors.ProtocolError(
            message=f"Unsupported Content-Type {errors.clip(repr(ctype))}; send application/json.",
            code="unsupported_media_type",
            status=415,
        )
    return request.body or b"{}"


def _new_items(items: tuple[Item, ...] | None) -> list[Item]:
    """Items as the conversation keeps them: each with an id (msg_, fc_, ...) and a status."""
    return normalize_input(check_items(items), new_id)


def _query(request: Request, name: str) -> str | None:
    values = request.query.get(name)
    return values[-1] if values else None


def _limit(request: Request) -> int:
    low, high, default = LIMITS
    raw = _query(request, "limit")
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18 and low <= int(raw) <= high):
        raise errors.invalid(
            f"Invalid 'limit': expected an integer from {low} to {high}, got "
            f"{errors.clip(repr(raw))}.",
            param="limit",
            code="invalid_value",
        )
    return int(raw)


__all__ = [
    "create",
    "create_items",
    "delete",
    "delete_item",
    "list_items",
    "retrieve",
    "retrieve_item",
    "update",
]
