# The response store: responses created with `store: true`, retrievable over HTTP and chainable by
# previous_response_id. In memory (the default). Each record keeps only its own input and output;
# the conversation of a chain is rebuilt by walking `previous_response_id` links, which is the
# real cost of chaining without a connection cache.
from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Protocol

import attrs

from protocol.items import Item
from protocol.response import Response


@attrs.define
class StoredResponse:
    response: Response
    input_items: list[Item]
    previous_response_id: str | None = None
    # The API key that created it (other keys cannot see it), or, from a store that keeps no
    # keys (SQLite), its keyed hash; `hashed` then turns a key into that form.
    owner: str | None = None
    hashed: Callable[[str], str] | None = attrs.field(default=None, eq=False, repr=False)

    def owned_by(self, key: str | None) -> bool:
        """Whether `key` (None: no authentication) created this response (constant time)."""
        if key is None or self.owner is None:
            return key is None and self.owner is None
        mine = self.hashed(key) if self.hashed is not None else key
        return hmac.compare_digest(mine.encode(), self.owner.encode())


def visible(record: StoredResponse | None, owner: str | None) -> StoredResponse | None:
    """The record if `owner` may see it (isolation by API key), else None."""
    return record if record is not None and record.owned_by(owner) else None


class ChainBroken(LookupError):
    """A response in the chain is gone (deleted); carries the missing id."""


class Store(Protocol):
    """Where `store: true` responses live. Async, so a durable store can do blocking I/O in a
    worker thread (`trio.to_thread`) without stalling the event loop."""

    async def put(self, record: StoredResponse) -> None: ...
    async def get(self, response_id: str) -> StoredResponse | None: ...
    async def delete(self, response_id: str) -> bool: ...
    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`; ChainBroken if one is missing."""
        ...


@attrs.define
class MemoryStore:
    _records: dict[str, StoredResponse] = attrs.field(factory=dict)

    async def put(self, record: StoredResponse) -> None:
        self._records[record.response.id] = record

    async def get(self, response_id: str) -> StoredResponse | None:
        return self._records.get(response_id)

    async def delete(self, response_id: str) -> bool:
        return self._records.pop(response_id, None) is not None

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
