# What every store keeps besides responses: conversations (their metadata and their items, in
# order) and the item index (item id -> the item, its owner and where it is stored), through
# which an `item_reference` finds any stored item of its API key. The records and the
# `ConversationStore` protocol; each store (memory, SQLite, Redis) implements it, and `Store`
# (store/base.py) includes it. Isolation by API key is as for responses (`owns`).
from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from protocol.items import Item, ItemReference

Hash = Callable[[str], str]  # an API key as a durable store keeps it (its keyed hash)


def owns(owner: str | None, hashed: Hash | None, key: str | None) -> bool:
    """Whether `key` (None: no authentication) is `owner`, a key or (with `hashed`, from a
    store that keeps no keys) a key's hash; constant time."""
    if key is None or owner is None:
        return key is None and owner is None
    mine = hashed(key) if hashed is not None else key
    return hmac.compare_digest(mine.encode(), owner.encode())


@attrs.define
class StoredConversation:
    id: str
    created_at: int
    metadata: dict[str, str] = attrs.field(factory=dict)
    owner: str | None = None  # the API key that made it, or its hash (see StoredResponse)
    hashed: Hash | None = attrs.field(default=None, eq=False, repr=False)

    def owned_by(self, key: str | None) -> bool:
        return owns(self.owner, self.hashed, key)


@attrs.define
class IndexedItem:
    """A stored item as the index finds it: the item, who owns it, and where it is kept (the
    id of a response, or of a conversation)."""

    item: Item
    source: str
    owner: str | None = None
    hashed: Hash | None = attrs.field(default=None, eq=False, repr=False)

    def owned_by(self, key: str | None) -> bool:
        return owns(self.owner, self.hashed, key)


def indexable(items: Sequence[Item]) -> list[tuple[str, Item]]:
    """The items of `items` the index keeps, by id (every stored item with one)."""
    out: list[tuple[str, Item]] = []
    for item in items:
        item_id = None if isinstance(item, ItemReference) else item.id
        if item_id is not None:
            out.append((item_id, item))
    return out


class ConversationStore(Protocol):
    """Conversations and the item index. A conversation's items are appended atomically (two
    responses racing on one conversation both land); adding items to a conversation, or
    storing a response, indexes its items; deleting either drops them from the index."""

    async def create_conversation(self, conv: StoredConversation, items: Sequence[Item]) -> None:
        """Store a new conversation with its first items."""
        ...

    async def get_conversation(self, conv_id: str) -> StoredConversation | None: ...

    async def set_metadata(self, conv_id: str, metadata: dict[str, str]) -> bool:
        """Replace a conversation's metadata; False if there is no such conversation."""
        ...

    async def delete_conversation(self, conv_id: str) -> bool:
        """Delete a conversation and its items; False if there was none."""
        ...

    async def add_items(self, conv_id: str, items: Sequence[Item]) -> bool:
        """Append items (with ids) to a conversation; False if there is no such conversation."""
        ...

    async def conversation_items(self, conv_id: str) -> list[Item]:
        """A conversation's items, oldest first (empty for an unknown conversation)."""
        ...

    async def delete_item(self, conv_id: str, item_id: str) -> bool:
        """Remove one item from a conversation; False if it holds no such item."""
        ...

    async def find_items(self, item_ids: Sequence[str]) -> dict[str, IndexedItem]:
        """The stored items of these ids that the index holds (owners unchecked)."""
        ...


__all__ = [
    "ConversationStore",
    "IndexedItem",
    "StoredConversation",
    "indexable",
    "owns",
]
