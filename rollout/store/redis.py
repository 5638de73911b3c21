# The shared response store (`rollout serve --store redis://HOST:PORT/DB`): one hash per stored
# response (orjson of the wire form), so every worker and machine reads the same chains; a chain
# is walked inside Redis by one Lua script (one round trip, however long); conversations and the
# item index are redis_conversations.py's. Owners are keyed hashes of API keys, never the keys.
# It owns the coredis client (built on anyio, so it runs under trio) and its lifetime (`async
# with store.connect()`). It is also the SharedStore (store/shared.py) that the cluster layer
# (rollout.service.cluster) runs on: leases, inboxes, live records and event logs, under the
# same key prefix. `check()` is the start-up check `rollout serve` makes before it serves (one
# connection, no retries: StoreUnreachable says where and why). coredis is the `redis` extra's:
# this module is imported only once a `redis://` store is asked for (open_store checks that
# coredis is installed first). While serving, every operation that cannot reach Redis raises
# StoreUnavailable (503 `store_unavailable`; a batch of writes: WriteFailed), never coredis's
# or the OS's exception; the client reconnects by itself once Redis answers again.
from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import coredis
import orjson
import trio
from coredis.patterns.pipeline import Pipeline
from coredis.retry import NoRetryPolicy

from protocol import codec
from protocol.items import Item
from protocol.response import Response
from rollout.store.base import (
    ChainBroken,
    Logged,
    Store,
    StoredResponse,
    StoreUnreachable,
    decode_log,
    encode_log,
    items_of,
)
from rollout.store.conversations import indexable
from rollout.store.redis_conversations import RedisConversations, failure, mapped, unavailable
from rollout.store.redis_url import CHECK_TIMEOUT_S, RedisUrl, bottom, reason
from rollout.store.shared import (
    DropLive,
    Fields,
    LogEntry,
    LogEvent,
    LogMeta,
    Publish,
    Record,
    SetLive,
    SharedStore,
    Write,
    WriteFailed,
)

# The chain ending at ARGV[2], newest first: [missing_id_or_empty, previous, response, items, ...]
CHAIN = """
local prefix, id = ARGV[1], ARGV[2]
local out = {''}
while id and id ~= '' do
  local r = redis.call('HMGET', prefix .. 'resp:' .. id, 'previous', 'response', 'input_items')
  if not r[2] then
    out[1] = id
    return out
  end
  table.insert(out, r[1])
  table.insert(out, r[2])
  table.insert(out, r[3])
  id = r[1]
end
return out
"""


class RedisStore(RedisConversations):
    """The `Store` and `SharedStore` protocols on Redis (conversations: RedisConversations).
    Use inside `async with store.connect():` (the server's `serve` enters it); nested entries
    share one client."""

    def __init__(self, url: str | RedisUrl, *, max_connections: int = 256) -> None:
        self.url = url if isinstance(url, RedisUrl) else RedisUrl.parse(url)
        self.max_connections = max_connections
        self._client: coredis.Redis[bytes] | None = None
        self._users = 0
        self._secret = b""  # the database's owner secret (read or made at connect)

    def __repr__(self) -> str:
        u = self.url
        return f"RedisStore('redis://{u.host}:{u.port}/{u.db}', prefix={u.prefix!r})"

    @property
    def prefix(self) -> str:
        return self.url.prefix

    @property
    def client(self) -> coredis.Redis[bytes]:
        if self._client is None:
            raise RuntimeError(f"{self!r} is not connected: use `async with store.connect()`")
        return self._client

    # -- lifetime -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[RedisStore]:
        """Open the client (and check that the server answers) for the body's duration."""
        if self._client is not None:
            self._users += 1
            try:
                yield self
            finally:
                self._users -= 1
            return
        client: coredis.Redis[bytes] = coredis.Redis(
            host=self.url.host,
            port=self.url.port,
            db=self.url.db,
            max_connections=self.max_connections,
            connect_timeout=5,
        )
        async with client:
            await client.ping()
            # No API key is kept in Redis: owners are HMACs under one secret per database and
            # prefix, made by whichever process connects first (as SQLite keeps one per file).
            key = self.key("meta", "owner_secret")
            await client.set(key, secrets.token_bytes(32), condition=coredis.PureToken.NX)
            secret = await client.get(key)
            assert secret is not None
            self._secret = secret
            self._client = client
            try:
                yield self
            finally:
                self._client = None

    async def close(self) -> None:
        """Nothing to let go of: the client lives only inside `connect()`."""
        return None

    async def check(self, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        """Connect once (no retries), select the database and ping, then disconnect:
        StoreUnreachable, saying where and why, when that fails. For a server's start, before
        it takes any request (a running server's errors are 503s: `unavailable`)."""
        u = self.url
        client: coredis.Redis[bytes] = coredis.Redis(
            host=u.host,
            port=u.port,
            db=u.db,
            connect_timeout=timeout_s,
            stream_timeout=timeout_s,
            retry_policy=NoRetryPolicy(),
        )
        try:
            with trio.fail_after(timeout_s):
                async with client:
                    await client.ping()
        except trio.TooSlowError:
            raise StoreUnreachable(f"{u.where} did not answer in {timeout_s:g} s") from None
        except Exception as exc:  # coredis raises from a task group: look under the group
            under = bottom(exc)
            if isinstance(under, OSError | coredis.exceptions.ConnectionError):
                raise StoreUnreachable(f"cannot connect to {u.where}: {reason(under)}") from exc
            if isinstance(under, coredis.exceptions.RedisError):
                raise StoreUnreachable(f"{u.where} failed: {reason(under)}") from exc
            raise

    # -- keys and owners ------------------------------------------------------------------------

    def key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    def owner_hash(self, key: str) -> str:
        """What Redis holds for the API key `key`: HMAC-SHA256 under the database's secret."""
        if not self._secret:
            raise RuntimeError(f"{self!r} is not connected: use `async with store.connect()`")
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    def owner_field(self, key: str | None) -> bytes:
        """The owner as a record field: its hash, or empty without authentication."""
        return self.owner_hash(key).encode() if key is not None else b""

    def owned(self, field: bytes | None, key: str | None) -> bool:
        """Whether a record's owner field belongs to `key` (constant time)."""
        return hmac.compare_digest(field or b"", self.owner_field(key))

    # -- the Store protocol ---------------------------------------------------------------------

    async def put(self, record: StoredResponse) -> None:
        response = record.response
        fields: dict[str, bytes] = {
            "previous": (record.previous_response_id or "").encode(),
            "response": orjson.dumps(codec.to_json(response)),
            "input_items": orjson.dumps(codec.to_json(record.input_items)),
        }
        if record.owner is not None:  # a key, or its hash when the record was read back
            owner = record.owner if record.hashed is not None else self.owner_hash(record.owner)
            fields["owner"] = owner.encode()
        key = self.key("resp", response.id)
        source = {"source": response.id.encode(), "owner": fields.get("owner", b"")}
        # One transaction: a reader sees the whole record or none of it (an owner left over
        # from an earlier put of the same id is dropped with the rest), and its items indexed.
        with mapped():
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.delete([key])
                pipe.hset(key, fields)
                for item_id, item in indexable([*record.input_items, *response.output]):
                    entry = {**source, "item": orjson.dumps(codec.to_json(item))}
                    pipe.hset(self.key("item", item_id), entry)

    async def get(self, response_id: str) -> StoredResponse | None:
        key = self.key("resp", response_id)
        with mapped():
            values = await self.client.hmget(key, ["previous", "response", "input_items", "owner"])
        previous, response, input_items, owner = values
        if response is None or input_items is None:
            return None
        return StoredResponse(
            owner=owner.decode() if owner is not None else None,
            hashed=self.owner_hash,
            response=codec.structure(orjson.loads(response), Response),
            input_items=items_of(orjson.loads(input_items)),
            previous_response_id=previous.decode() if previous else None,
        )

    async def delete(self, response_id: str) -> bool:
        record = await self.get(response_id)
        with mapped():
            await self.client.delete([self.key("log", response_id)])
            deleted = await self.client.delete([self.key("resp", response_id)]) > 0
        if record is not None:
            await self.unindex(response_id, [*record.input_items, *record.response.output])
        return deleted

    async def put_log(self, response_id: str, events: list[Logged], complete: bool) -> None:
        """An ended response's log, whole (one worker; many write theirs as they go: the event
        log entries below)."""
        fields = {"events": encode_log(events), "complete": b"1" if complete else b""}
        with mapped():
            await self.client.hset(self.key("log", response_id), fields)

    async def get_log(self, response_id: str) -> tuple[list[Logged], bool] | None:
        with mapped():
            values = await self.client.hmget(self.key("log", response_id), ["events", "complete"])
        if values[0] is None:
            return None
        return decode_log(values[0]), values[1] == b"1"

    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`: inputs and outputs, oldest first.
        One script call for the whole chain."""
        with mapped():
            reply: Any = await self.client.eval(CHAIN, keys=[], args=[self.prefix, response_id])
        missing = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        if missing:
            raise ChainBroken(missing)
        rows = [reply[i : i + 3] for i in range(1, len(reply), 3)]
        items: list[Item] = []
        for _, response, input_items in reversed(rows):
            items.extend(items_of(orjson.loads(input_items)))
            items.extend(items_of(orjson.loads(response)["output"]))
        return items

    async def count(self) -> int:
        """Stored responses under this prefix (a SCAN: for tests and tools, not the server)."""
        n = 0
        with mapped():
            async for _ in self.client.scan_iter(match=self.key("resp", "*"), count=1000):
                n += 1
        return n

    # -- the SharedStore protocol (store/shared.py): the cluster layer's ----------------------

    async def beat(self, worker: str, ttl_ms: int) -> None:
        # With the lease, the owner secret again (if absent): a Redis that restarted without
        # its data gets back the secret every worker holds, so their owner hashes still agree.
        with mapped():
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.set(self.key("alive", worker), b"1", px=ttl_ms)
                pipe.set(
                    self.key("meta", "owner_secret"), self._secret, condition=coredis.PureToken.NX
                )

    async def alive(self, worker: str) -> bool:
        with mapped():
            return bool(await self.client.exists([self.key("alive", worker)]))

    async def listen(
        self,
        worker: str,
        receive: Callable[[bytes], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        # No retries of coredis's own (which would hide a lost connection for up to 16 s): a
        # lost subscription is StoreUnavailable, and the caller (the cluster's inbox) listens
        # again, with its backoff, once Redis answers.
        channel = self.key("w", worker)
        try:
            with mapped():
                async with self.client.pubsub(
                    channels=[channel], ignore_subscribe_messages=True, retry_policy=NoRetryPolicy()
                ) as pubsub:
                    task_status.started()
                    async for message in pubsub:
                        data = message["data"]
                        if message["type"] == "message" and isinstance(data, bytes):
                            receive(data)
        except* anyio.ClosedResourceError:
            pass  # coredis, cancelled: its unsubscribe finds the connection closed already

    async def publish(self, worker: str, message: bytes) -> int:
        with mapped():
            return await self.client.publish(self.key("w", worker), message)

    async def set_live(self, response_id: str, fields: Fields) -> None:
        with mapped():
            await self.client.hset(self.key("live", response_id), fields)

    async def live(self, response_id: str) -> Record:
        with mapped():
            return await self.client.hgetall(self.key("live", response_id))

    async def live_ids(self) -> AsyncIterator[str]:
        with mapped():
            keys = [k async for k in self.client.scan_iter(match=self.key("live", "*"), count=1000)]
        for key in keys:
            yield key.decode().rsplit(":", 1)[-1]

    async def drop_live(self, response_id: str) -> bool:
        with mapped():
            return bool(await self.client.delete([self.key("live", response_id)]))

    async def mark_lost(self, response_id: str, owner: bytes, ttl_ms: int) -> None:
        with mapped():
            await self.client.set(self.key("lost", response_id), owner, px=ttl_ms)

    async def lost_owner(self, response_id: str) -> bytes | None:
        with mapped():
            return await self.client.get(self.key("lost", response_id))

    async def log_meta(self, response_id: str) -> Record:
        with mapped():
            return await self.client.hgetall(self.key("evm", response_id))

    async def read_log(
        self, response_id: str, after: str | None, count: int, block_ms: int
    ) -> list[LogEntry]:
        key = self.key("ev", response_id)
        start = "-" if after is None else f"({after}"
        with mapped():
            entries: Any = await self.client.xrange(key, start, "+", count=count)
            if not entries:
                # Shielded: a blocking read cut by a cancellation would cost its connection.
                with trio.CancelScope(shield=True):
                    got: Any = await self.client.xread(
                        {key: "0-0" if after is None else after}, count=count, block=block_ms
                    )
                entries = got.get(key.encode(), ()) if got else ()
        return [(e.identifier.decode(), e.field_values) for e in entries]

    async def write(self, writes: Sequence[Write]) -> list[Any]:
        results: list[Any] = []
        try:
            # Shielded: a pipeline cut halfway would leave its connection in doubt.
            with trio.CancelScope(shield=True):
                async with self.client.pipeline(transaction=False) as pipe:
                    requests = [self._queue(pipe, w) for w in writes]
                for first, *others in requests:
                    results.append(await first)
                    for other in others:
                        await other
        except Exception as exc:  # (coredis raises some from task groups)
            under = failure(exc)
            if under is None:
                raise
            raise WriteFailed(f"{self!r}: {reason(under)}") from exc
        return results

    def _queue(self, pipe: Pipeline[bytes], write: Write) -> list[Awaitable[Any]]:
        """The pipeline's commands for `write`: the first one's result is the write's."""
        match write:
            case Publish():
                return [pipe.publish(self.key("w", write.worker), write.message)]
            case SetLive():
                return [pipe.hset(self.key("live", write.response_id), write.fields)]
            case DropLive():
                return [pipe.delete([self.key("live", write.response_id)])]
            case LogMeta():
                key = self.key("evm", write.response_id)
                return [pipe.hset(key, write.fields), pipe.pexpire(key, write.ttl_ms)]
            case LogEvent():
                key = self.key("ev", write.response_id)
                added = pipe.xadd(key, write.fields)
                if write.ttl_ms is None:
                    return [added]
                return [added, pipe.pexpire(key, write.ttl_ms)]


def from_spec(spec: str) -> Store:
    """The store of `--store redis://HOST:PORT/DB[?prefix=P]` (connected when the server
    starts); ValueError, with a message for the user, for a spec that is not such a URL."""
    return RedisStore(spec)


# StoreUnreachable and RedisUrl are named here too, for the modules that import them from here.
def _conforms(store: RedisStore) -> SharedStore:
    """(For the type checker: a RedisStore is a SharedStore.)"""
    return store


__all__ = [
    "RedisStore",
    "RedisUrl",
    "StoreUnreachable",
    "from_spec",
    "unavailable",
]
