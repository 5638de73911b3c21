# The shared response store (`rollout serve --store redis://HOST:PORT/DB`): one hash per stored
# response (orjson of the wire form), so every worker and machine reads the same chains; a chain
# is walked inside Redis by one Lua script (one round trip, however long). Owners are keyed
# hashes of API keys, never the keys. It owns the coredis
# client (built on anyio, so it runs under trio) and its lifetime (`async with store.connect()`);
# the cluster layer (rollout.service.cluster) borrows the client for leases, delivery and logs.
# `check()` is the start-up check `rollout serve` makes before it serves (one connection, no
# retries: StoreUnreachable says where and why). coredis is the `redis` extra's: this module is
# imported only once a `redis://` store is asked for (rollout.store.require_redis first).
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import coredis
import orjson
import trio
from coredis.retry import NoRetryPolicy

from protocol import codec
from protocol.errors import ProtocolError, overloaded
from protocol.items import Item
from protocol.response import Response
from rollout.store.memory import ChainBroken, StoredResponse

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


@attrs.frozen
class RedisUrl:
    """A parsed `redis://HOST:PORT/DB[?prefix=P]` spec."""

    host: str
    port: int
    db: int
    prefix: str = "rollout:"

    @classmethod
    def parse(cls, spec: str) -> RedisUrl:
        """ValueError with a message for the user when `spec` is not such a URL."""
        split = urlsplit(spec)
        if split.scheme != "redis" or not split.hostname:
            raise ValueError(f"expected redis://HOST:PORT/DB, got {spec!r}")
        try:
            port = split.port or 6379
        except ValueError:
            raise ValueError(f"bad port in {spec!r}") from None
        path = split.path.strip("/") or "0"
        if not path.isascii() or not path.isdigit():
            raise ValueError(f"the database in {spec!r} must be a number, e.g. redis://host:6379/0")
        prefix = parse_qs(split.query).get("prefix", ["rollout:"])[-1]
        return cls(host=split.hostname, port=port, db=int(path), prefix=prefix)


CHECK_TIMEOUT_S = 5.0  # the longest a start-up check waits for Redis to answer


class StoreUnreachable(Exception):
    """Redis did not answer a start-up check; `str()` says where and why (for the user)."""


def _bottom(exc: BaseException) -> BaseException:
    """What lies under `exc`: the first of each exception group, then each cause."""
    while True:
        if isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return exc


def _reason(exc: BaseException) -> str:
    """An error for a person: `Connection refused`, not the path through the libraries."""
    if isinstance(exc, socket.gaierror) and exc.strerror:
        return exc.strerror
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def unavailable(exc: BaseException) -> ProtocolError:
    message = f"The response store (Redis) is unavailable: {type(exc).__name__}. Retry shortly."
    return overloaded(message, "store_unavailable")


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    """Redis errors as a 503 for the client (not a dropped connection)."""
    try:
        yield
    except (coredis.exceptions.RedisError, OSError, TimeoutError) as exc:
        raise unavailable(exc) from exc


class RedisStore:
    """The `Store` protocol on Redis. Use inside `async with store.connect():` (the server's
    `serve` enters it); nested entries share one client."""

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

    async def check(self, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        """Connect once (no retries), select the database and ping, then disconnect:
        StoreUnreachable, saying where and why, when that fails. For a server's start, before
        it takes any request (a running server's errors are 503s: `unavailable`)."""
        u = self.url
        where = f"Redis at {f'[{u.host}]' if ':' in u.host else u.host}:{u.port}"
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
            raise StoreUnreachable(f"{where} did not answer in {timeout_s:g} s") from None
        except Exception as exc:  # coredis raises from a task group: look under the group
            bottom = _bottom(exc)
            if isinstance(bottom, OSError | coredis.exceptions.ConnectionError):
                raise StoreUnreachable(f"cannot connect to {where}: {_reason(bottom)}") from exc
            if isinstance(bottom, coredis.exceptions.RedisError):
                raise StoreUnreachable(f"{where} failed: {_reason(bottom)}") from exc
            raise

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
        # One transaction: a reader sees the whole record or none of it (an owner left over
        # from an earlier put of the same id is dropped with the rest).
        with _mapped():
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.delete([key])
                pipe.hset(key, fields)

    async def get(self, response_id: str) -> StoredResponse | None:
        key = self.key("resp", response_id)
        with _mapped():
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
        with _mapped():
            return await self.client.delete([self.key("resp", response_id)]) > 0

    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`: inputs and outputs, oldest first.
        One script call for the whole chain."""
        with _mapped():
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
        async for _ in self.client.scan_iter(match=self.key("resp", "*"), count=1000):
            n += 1
        return n


def items_of(values: list[Any]) -> list[Item]:
    """Items from their wire JSON."""
    return [codec.structure(v, Item) for v in values]  # type: ignore[arg-type]


__all__ = ["RedisStore", "RedisUrl", "StoreUnreachable", "items_of", "unavailable"]
