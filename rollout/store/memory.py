# The response store in memory (the default): responses created with `store: true`, retrievable
# over HTTP and chainable by previous_response_id, for the process's lifetime. Each record keeps
# only its own input and output; the conversation of a chain is rebuilt by walking
# `previous_response_id` links, which is the real cost of chaining without a connection cache.
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import attrs

from protocol.items import Item
from rollout.store.base import ChainBroken, LocalStore, Logged, Store, StoredResponse, visible
from rollout.store.conversations import IndexedItem, StoredConversation, indexable

#: The bytes of event logs the memory store keeps in all; past it the oldest logs are dropped
#: (a replay of such a response is rebuilt from its final state, protocol.rebuild).
LOG_BUDGET = 256 * 1024 * 1024


@attrs.define
class MemoryStore(LocalStore):
    _records: dict[str, StoredResponse] = attrs.field(factory=dict)
    _logs: OrderedDict[str, tuple[list[Logged], bool, int]] = attrs.field(factory=OrderedDict)
    log_budget: int = LOG_BUDGET
    _log_bytes: int = 0
    _conversations: dict[str, StoredConversation] = attrs.field(factory=dict)
    _items: dict[str, list[Item]] = attrs.field(factory=dict)  # by conversation, oldest first
    _index: dict[str, IndexedItem] = attrs.field(factory=dict)  # every stored item, by id

    async def put(self, record: StoredResponse) -> None:
        self._records[record.response.id] = record
        items = [*record.input_items, *record.response.output]
        self._indexed(items, record.response.id, record.owner)

    async def get(self, response_id: str) -> StoredResponse | None:
        return self._records.get(response_id)

    async def delete(self, response_id: str) -> bool:
        self._drop_log(response_id)
        record = self._records.pop(response_id, None)
        if record is None:
            return False
        self._unindexed([*record.input_items, *record.response.output], response_id)
        return True

    # -- conversations and the item index (ConversationStore) -----------------------------------

    def _indexed(self, items: Sequence[Item], source: str, owner: str | None) -> None:
        for item_id, item in indexable(items):
            self._index[item_id] = IndexedItem(item=item, source=source, owner=owner)

    def _unindexed(self, items: Sequence[Item], source: str) -> None:
        for item_id, _ in indexable(items):
            entry = self._index.get(item_id)
            if entry is not None and entry.source == source:
                del self._index[item_id]

    async def create_conversation(self, conv: StoredConversation, items: Sequence[Item]) -> None:
        self._conversations[conv.id] = conv
        self._items[conv.id] = list(items)
        self._indexed(items, conv.id, conv.owner)

    async def get_conversation(self, conv_id: str) -> StoredConversation | None:
        return self._conversations.get(conv_id)

    async def set_metadata(self, conv_id: str, metadata: dict[str, str]) -> bool:
        conv = self._conversations.get(conv_id)
        if conv is None:
            return False
        conv.metadata = dict(metadata)
        return True

    async def delete_conversation(self, conv_id: str) -> bool:
        if self._conversations.pop(conv_id, None) is None:
            return False
        self._unindexed(self._items.pop(conv_id, []), conv_id)
        return True

    async def add_items(self, conv_id: str, items: Sequence[Item]) -> bool:
        conv = self._conversations.get(conv_id)
        if conv is None:
            return False
        self._items[conv_id].extend(items)  # (no await between the check and the append)
        self._indexed(items, conv_id, conv.owner)
        return True

    async def conversation_items(self, conv_id: str) -> list[Item]:
        return list(self._items.get(conv_id, ()))

    async def delete_item(self, conv_id: str, item_id: str) -> bool:
        items = self._items.get(conv_id, [])
        for i, item in enumerate(items):
            if getattr(item, "id", None) == item_id:
                del items[i]
                self._unindexed([item], conv_id)
                return True
        return False

    async def find_items(self, item_ids: Sequence[str]) -> dict[str, IndexedItem]:
        return {i: self._index[i] for i in item_ids if i in self._index}

    async def put_log(self, response_id: str, events: list[Logged], complete: bool) -> None:
        self._drop_log(response_id)
        size = sum(len(e[2]) for e in events)
        self._logs[response_id] = (events, complete, size)
        self._log_bytes += size
        while self._log_bytes > self.log_budget and self._logs:
            self._drop_log(next(iter(self._logs)))

    async def get_log(self, response_id: str) -> tuple[list[Logged], bool] | None:
        kept = self._logs.get(response_id)
        return None if kept is None else (kept[0], kept[1])

    def _drop_log(self, response_id: str) -> None:
        kept = self._logs.pop(response_id, None)
        if kept is not None:
            self._log_bytes -= kept[2]

    def __len__(self) -> int:
        return len(self._records)

    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`: inputs and outputs, oldest first."""
        chain: list[StoredResponse] = []
        next_id: str | None = response_id
        while next_id is not None:
            record = self._records.get(next_id)
            if record is None:
                raise ChainBroken(next_id)
            chain.append(record)
            next_id = record.previous_response_id
        items: list[Item] = []
        for record in reversed(chain):
            items.extend(record.input_items)
            items.extend(record.response.output)
        return items


def from_spec(spec: str) -> Store:
    """The store of `--store memory` (open_store's row for it)."""
    return MemoryStore()


# Also names the record and protocol (store/base.py), for the modules that import them from here.
__all__ = ["ChainBroken", "MemoryStore", "Store", "StoredResponse", "from_spec", "visible"]
