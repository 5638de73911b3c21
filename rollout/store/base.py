# The boundary of the response stores: the record a store keeps (StoredResponse), the `Store`
# protocol every store implements, and `open_store(spec)`, which turns a `--store` spec into a
# store by the spec's scheme (BACKENDS: one row per kind of store). A backend's module is
# imported only when a store of its kind is asked for, so one that needs an optional extra
# (Redis: coredis, the `redis` extra) costs the base install nothing, and a spec for it without
# the extra is MissingExtra, saying how to install it. What the cluster layer needs beyond a
# Store is `SharedStore` (store/shared.py: `shared_of(store)`); which specs name such
# a store (what `--workers N` needs) is `is_shared_url`, by the rows marked `shared`.
from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs

from protocol import codec
from protocol.errors import ProtocolError
from protocol.items import Item
from protocol.response import Response
from rollout.store.conversations import ConversationStore, owns


@attrs.define
class StoredResponse:
    response: Response
    input_items: list[Item]
    previous_response_id: str | None = None
    # The API key that created it (other keys cannot see it), or, from a store that keeps no
    # keys (SQLite, Redis), its keyed hash; `hashed` then turns a key into that form.
    owner: str | None = None
    hashed: Callable[[str], str] | None = attrs.field(default=None, eq=False, repr=False)

    def owned_by(self, key: str | None) -> bool:
        """Whether `key` (None: no authentication) created this response (constant time)."""
        return owns(self.owner, self.hashed, key)


def visible(record: StoredResponse | None, owner: str | None) -> StoredResponse | None:
    """The record if `owner` may see it (isolation by API key), else None."""
    return record if record is not None and record.owned_by(owner) else None


def items_of(values: list[Any]) -> list[Item]:
    """Items from their wire JSON (as a durable store keeps them)."""
    return [codec.structure(v, Item) for v in values]  # type: ignore[arg-type]


class ChainBroken(LookupError):
    """A response in the chain is gone (deleted); carries the missing id."""


class StoreUnreachable(Exception):
    """The store did not answer a start-up check; `str()` says where and why (for the user)."""


@attrs.define(eq=False)
class StoreError(ProtocolError):
    """A store's read or write failed while serving (its disk is full, read-only or failing;
    its server is down). A ProtocolError, so every transport answers it as the documented error
    (HTTP 5xx, a WebSocket `error` event) instead of dropping the client; the engine ends a
    response whose store write failed `failed` with it (rollout.engine.bound `keep`). The store
    that raises it has logged it (one line), so callers do not log it again. Redis raises its
    subclass StoreUnavailable (store/shared.py: 503 `store_unavailable` while Redis is down; the
    cluster logs the outage, once); callers that must not fail catch ProtocolError."""


def store_unavailable(name: str, why: str) -> StoreError:
    """503 `store_unavailable`: the store cannot take writes now, and may again soon (a full
    disk); clients retry (Retry-After)."""
    message = f"The response store ({name}) is unavailable: {why}. Retry shortly."
    return StoreError(message=message, type="server_error", code="store_unavailable", status=503)


def store_failed(name: str, why: str) -> StoreError:
    """500 `server_error`: the store failed (a read-only or failing disk, a damaged file)."""
    message = f"The response store ({name}) failed: {why}."
    return StoreError(message=message, type="server_error", code="server_error", status=500)


class Store(ConversationStore, Protocol):
    """Where `store: true` responses live, and conversations (ConversationStore). Async, so a
    durable store can do blocking I/O in a worker thread (`trio.to_thread`) without stalling the
    event loop. Storing a response indexes its input and output items; deleting it drops them.
    A call that fails because of the store itself raises a ProtocolError: StoreError (500 or 503
    `store_unavailable`), never the backend's own exception."""

    async def put(self, record: StoredResponse) -> None: ...
    async def get(self, response_id: str) -> StoredResponse | None: ...
    async def delete(self, response_id: str) -> bool: ...
    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`; ChainBroken if one is missing."""
        ...

    def connect(self) -> contextlib.AbstractAsyncContextManager[object]:
        """Connected for the body's duration (a server enters it for its lifetime): a store
        with a connection of its own (Redis) opens it; one that is open from its construction
        on has nothing to do. Nested entries share one connection."""
        ...

    async def close(self) -> None:
        """Let go of what the store holds, for good (its owner, who made it, calls this once
        done with it; a server does not). Idempotent."""
        ...

    async def check(self) -> None:
        """The start-up check `rollout serve` makes before it serves: StoreUnreachable, saying
        where and why, when the store does not answer (a store in this process always does)."""
        ...


#: A logged event: its sequence number, its type and its wire JSON (rollout.service.eventlog).
Logged = tuple[int, bytes, bytes]
#: The statuses of a response that has not ended (a background response, stored as it starts).
UNFINISHED = frozenset({"queued", "in_progress"})
#: The error of a background response whose server stopped before its end (it ends `failed`).
STOPPED = "The server stopped before this background response finished; it cannot be resumed."


@runtime_checkable
class LogStore(Protocol):
    """A store that keeps each stored streaming response's events once it has ended (memory,
    SQLite), so that a replay gives the live events. Deleting the response deletes its log. (A
    store that many workers share keeps logs as they are written: store/shared.py.)"""

    async def put_log(self, response_id: str, events: list[Logged], complete: bool) -> None:
        """Keep the events of an ended response (`complete`: nothing was left out)."""
        ...

    async def get_log(self, response_id: str) -> tuple[list[Logged], bool] | None:
        """The kept events and whether they are complete; None if none are kept."""
        ...


def encode_log(events: list[Logged]) -> bytes:
    """Logged events as one blob: a line per event, `SEQ TYPE JSON` (compact JSON holds no raw
    newline)."""
    return b"\n".join(b"%d %s %s" % event for event in events)


def decode_log(blob: bytes) -> list[Logged]:
    events: list[Logged] = []
    for line in blob.split(b"\n") if blob else ():
        seq, kind, payload = line.split(b" ", 2)
        events.append((int(seq), kind, payload))
    return events


class LocalStore:
    """What a store of this process alone (memory, SQLite) does about connections: nothing to
    connect, check or share, and nothing to close unless the store says otherwise."""

    def connect(self) -> contextlib.AbstractAsyncContextManager[object]:
        return contextlib.nullcontext(self)

    async def close(self) -> None:
        return None

    async def check(self) -> None:
        return None


class MissingExtra(ValueError):
    """What was asked for needs an optional extra that is not installed; `str()` says how to
    install it (`needs pip install 'rollout[redis]'`)."""

    def __init__(self, extra: str) -> None:
        super().__init__(f"needs pip install 'rollout[{extra}]'")
        self.extra = extra


@attrs.frozen
class Extra:
    """An optional extra of the package (`pip install 'rollout[NAME]'`) and the package of its
    that a backend imports."""

    name: str
    package: str

    def require(self) -> None:
        """MissingExtra unless the extra's package is installed."""
        if importlib.util.find_spec(self.package) is None:
            raise MissingExtra(self.name)


REDIS = Extra("redis", "coredis")


def require_redis() -> None:
    """MissingExtra("redis") unless coredis (the `redis` extra) is installed."""
    REDIS.require()


@attrs.frozen
class Backend:
    """A kind of store: the module that makes one (its `from_spec(spec) -> Store`, which raises
    ValueError with a message for the user), imported only when such a store is asked for; the
    form of its spec (for the message that lists them); whether the spec takes an argument
    after the scheme (`sqlite:PATH`) or is the bare name (`memory`); the extra it needs; whether
    many workers share such a store (it is a SharedStore; its spec is a URL, `SCHEME://...`)."""

    module: str
    usage: str
    argument: bool = True
    extra: Extra | None = None
    shared: bool = False


#: Every kind of store `--store` can name, by the spec's scheme (what comes before its `:`).
BACKENDS: dict[str, Backend] = {
    "memory": Backend("rollout.store.memory", "memory", argument=False),
    "sqlite": Backend("rollout.store.sqlite", "sqlite:PATH"),
    "redis": Backend("rollout.store.redis", "redis://HOST:PORT/DB", extra=REDIS, shared=True),
}


def is_shared_url(spec: str) -> bool:
    """Whether `spec` is the URL (`SCHEME://...`) of a kind of store that many workers share
    (a `shared` row of BACKENDS): what `--workers N` needs. It does not open the store."""
    scheme, _, rest = spec.partition(":")
    backend = BACKENDS.get(scheme)
    return backend is not None and backend.shared and rest.startswith("//")


def shared_usages() -> list[str]:
    """The spec forms of the kinds of store that many workers share (for messages)."""
    return [b.usage for b in BACKENDS.values() if b.shared]


def open_store(spec: str) -> Store:
    """The store a `--store` spec names: `memory` (the default), `sqlite:PATH` (parent
    directories are made) or `redis://HOST:PORT/DB` (shared by every worker; connected when the
    server starts). Anything else, or a file that cannot be opened as a database, is a
    ValueError with a message for the user (MissingExtra, one too, for a backend whose extra is
    not installed)."""
    scheme, sep, _ = spec.partition(":")
    backend = BACKENDS.get(scheme)
    if backend is None or backend.argument != bool(sep):
        usages = [repr(b.usage) for b in BACKENDS.values()]
        choices = f"{', '.join(usages[:-1])} or {usages[-1]}"
        raise ValueError(f"unknown store {spec!r}: use {choices}")
    if backend.extra is not None:
        backend.extra.require()  # before the import, which would fail without it
    make: Callable[[str], Store] = importlib.import_module(backend.module).from_spec
    return make(spec)


__all__ = [
    "BACKENDS",
    "STOPPED",
    "UNFINISHED",
    "Backend",
    "ChainBroken",
    "Extra",
    "LocalStore",
    "LogStore",
    "Logged",
    "MissingExtra",
    "Store",
    "StoreError",
    "StoreUnreachable",
    "StoredResponse",
    "decode_log",
    "encode_log",
    "is_shared_url",
    "items_of",
    "open_store",
    "require_redis",
    "shared_usages",
    "store_failed",
    "store_unavailable",
    "visible",
]
