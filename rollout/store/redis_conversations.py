# The Redis store's conversations and item index (the ConversationStore protocol of
# store/conversations.py), shared by every worker: a hash per conversation (`conv:ID`: created_at,
# metadata, owner), a list of its items (`convitems:ID`, orjson of each item; an append is one
# script, so two responses racing on one conversation both land, in some order), and a hash per
# indexed item (`item:ID`: source, owner, item). Deletes drop only the index entries whose
# source is what is deleted. A mixin of RedisStore (store/redis.py), which owns the client.
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import coredis
import orjson

from protocol import codec
from protocol.items import Item
from rollout.store.base import items_of
from rollout.store.conversations import IndexedItem, StoredConversation, indexable
from rollout.store.shared import StoreUnavailable, store_unavailable

#: What coredis raises when Redis cannot be reached (or answered with an error).
FAILURES = (coredis.exceptions.RedisError, OSError, TimeoutError)

# ARGV: prefix, conversation id, then (item id, item JSON) pairs. 0 if there is no conversation.
ADD = """
local prefix, conv = ARGV[1], ARGV[2]
local key = prefix .. 'conv:' .. conv
if redis.call('EXISTS', key) == 0 then return 0 end
local owner = redis.call('HGET', key, 'owner') or ''
for i = 3, #ARGV, 2 do
  redis.call('RPUSH', prefix .. 'convitems:' .. conv, ARGV[i + 1])
  if ARGV[i] ~= '' then
    redis.call('HSET', prefix .. 'item:' .. ARGV[i], 'source', conv, 'owner', owner,
               'item', ARGV[i + 1])
  end
end
return 1
"""

# ARGV: prefix, conversation id, metadata JSON. 0 if there is no conversation (none is made).
SET_METADATA = """
local key = ARGV[1] .. 'conv:' .. ARGV[2]
if redis.call('EXISTS', key) == 0 then return 0 end
redis.call('HSET', key, 'metadata', ARGV[3])
return 1
"""

# ARGV: prefix, source, then item ids: the index entries of those ids kept at `source` dropped.
UNINDEX = """
local prefix, source = ARGV[1], ARGV[2]
for i = 3, #ARGV do
  local key = prefix .. 'item:' .. ARGV[i]
  if redis.call('HGET', key, 'source') == source then redis.call('DEL', key) end
end
return 1
"""

# ARGV: prefix, conversation id. The conversation, its items and their index entries; 1 if it was.
DELETE = """
local prefix, conv = ARGV[1], ARGV[2]
local list = prefix .. 'convitems:' .. conv
for _, value in ipairs(redis.call('LRANGE', list, 0, -1)) do
  local id = cjson.decode(value)['id']
  if type(id) == 'string' then
    local key = prefix .. 'item:' .. id
    if redis.call('HGET', key, 'source') == conv then redis.call('DEL', key) end
  end
end
redis.call('DEL', list)
return redis.call('DEL', prefix .. 'conv:' .. conv)
"""

# ARGV: prefix, conversation id, item id. The item out of the list (and the index); 1 if it was.
DELETE_ITEM = """
local prefix, conv, id = ARGV[1], ARGV[2], ARGV[3]
local list = prefix .. 'convitems:' .. conv
for _, value in ipairs(redis.call('LRANGE', list, 0, -1)) do
  if cjson.decode(value)['id'] == id then
    redis.call('LREM', list, 1, value)
    local key = prefix .. 'item:' .. id
    if redis.call('HGET', key, 'source') == conv then redis.call('DEL', key) end
    return 1
  end
end
return 0
"""


def unavailable(exc: BaseException) -> StoreUnavailable:
    """503 `store_unavailable` for a failure of Redis (`exc`: coredis's, or the OS's)."""
    return store_unavailable("Redis", type(exc).__name__)


def failure(exc: BaseException) -> BaseException | None:
    """The Redis failure `exc` is (coredis raises some from task groups: the first under the
    group, when everything under it is one), or None when it is something else."""
    if isinstance(exc, BaseExceptionGroup):
        under = [failure(e) for e in exc.exceptions]
        return under[0] if under and all(u is not None for u in under) else None
    return exc if isinstance(exc, FAILURES) else None


@contextlib.contextmanager
def mapped() -> Iterator[None]:
    """Redis errors as StoreUnavailable: a 503 for the client (not a dropped connection), and
    the one exception the cluster layer catches while Redis is down."""
    try:
        yield
    except StoreUnavailable:
        raise
    except FAILURES as exc:
        raise unavailable(exc) from exc
    except BaseExceptionGroup as group:
        under = failure(group)
        if under is None:
            raise
        raise unavailable(under) from group


class RedisConversations:
    """ConversationStore on RedisStore's client."""

    # (RedisStore's)
    @property
    def prefix(self) -> str:
        raise NotImplementedError

    @property
    def client(self) -> coredis.Redis[bytes]:
        raise NotImplementedError

    def key(self, kind: str, name: str) -> str:
        raise NotImplementedError

    def owner_hash(self, key: str) -> str:
        raise NotImplementedError

    def _owner(self, owner: str | None, hashed: object) -> bytes:
        if owner is None:
            return b""
        return (owner if hashed is not None else self.owner_hash(owner)).encode()

    def _decoded(self, owner: bytes | None) -> str | None:
        return owner.decode() if owner else None

    async def create_conversation(self, conv: StoredConversation, items: Sequence[Item]) -> None:
        owner = self._owner(conv.owner, conv.hashed)
        fields = {
            "created_at": str(conv.created_at).encode(),
            "metadata": orjson.dumps(conv.metadata),
            "owner": owner,
        }
        encoded = [orjson.dumps(codec.to_json(i)) for i in items]
        with mapped():
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.hset(self.key("conv", conv.id), fields)
                if encoded:
                    pipe.rpush(self.key("convitems", conv.id), encoded)
                for item_id, item in indexable(items):
                    entry = {"source": conv.id.encode(), "owner": owner}
                    entry["item"] = orjson.dumps(codec.to_json(item))
                    pipe.hset(self.key("item", item_id), entry)

    async def get_conversation(self, conv_id: str) -> StoredConversation | None:
        with mapped():
            values = await self.client.hmget(
                self.key("conv", conv_id), ["created_at", "metadata", "owner"]
            )
        created_at, metadata, owner = values
        if created_at is None or metadata is None:
            return None
        return StoredConversation(
            id=conv_id,
            created_at=int(created_at),
            metadata=orjson.loads(metadata),
            owner=self._decoded(owner),
            hashed=self.owner_hash,
        )

    async def set_metadata(self, conv_id: str, metadata: dict[str, str]) -> bool:
        return bool(await self._eval(SET_METADATA, conv_id, orjson.dumps(metadata)))

    async def delete_conversation(self, conv_id: str) -> bool:
        return bool(await self._eval(DELETE, conv_id))

    async def add_items(self, conv_id: str, items: Sequence[Item]) -> bool:
        args: list[str | bytes] = []
        for item in items:
            args.append(getattr(item, "id", None) or "")
            args.append(orjson.dumps(codec.to_json(item)))
        return bool(await self._eval(ADD, conv_id, *args))

    async def conversation_items(self, conv_id: str) -> list[Item]:
        with mapped():
            values = await self.client.lrange(self.key("convitems", conv_id), 0, -1)
        return items_of([orjson.loads(v) for v in values])

    async def delete_item(self, conv_id: str, item_id: str) -> bool:
        return bool(await self._eval(DELETE_ITEM, conv_id, item_id))

    async def find_items(self, item_ids: Sequence[str]) -> dict[str, IndexedItem]:
        ids = list(dict.fromkeys(item_ids))
        if not ids:
            return {}
        with mapped():
            async with self.client.pipeline(transaction=False) as pipe:
                replies = [
                    pipe.hmget(self.key("item", i), ["source", "owner", "item"]) for i in ids
                ]
            rows = [await r for r in replies]
        found: dict[str, IndexedItem] = {}
        for item_id, (source, owner, item) in zip(ids, rows, strict=True):
            if source is None or item is None:
                continue
            found[item_id] = IndexedItem(
                item=items_of([orjson.loads(item)])[0],
                source=source.decode(),
                owner=self._decoded(owner),
                hashed=self.owner_hash,
            )
        return found

    async def unindex(self, source: str, items: Sequence[Item]) -> None:
        """Drop the index entries of `items` kept at `source` (a response being deleted)."""
        ids = [item_id for item_id, _ in indexable(items)]
        if ids:
            await self._eval(UNINDEX, source, *ids)

    async def _eval(self, script: str, *args: str | bytes) -> Any:
        with mapped():
            return await self.client.eval(script, keys=[], args=[self.prefix, *args])


__all__ = ["FAILURES", "RedisConversations", "failure", "mapped", "unavailable"]
