# What the cluster layer (rollout.service.cluster, with eventlog, lost and writer) needs of a
# store that many workers share, beyond the Store protocol: each worker's inbox (publish to it,
# listen on one's own), leases (a worker's heartbeat), the records of live rollouts and of those
# whose worker was lost, per-response event logs, and the ordered batches of writes the
# cluster's Writer sends (the `Write` values). Typed operations only: the cluster layer never
# sees a client or a key of the store underneath. `shared_of(store)` says whether a store is
# one; RedisStore (store/redis.py) is the one implementation. Every operation that cannot reach
# the store raises StoreUnavailable (a 503 `store_unavailable` ProtocolError), never the client
# library's own exception, so callers catch one type (and transports answer it as documented).
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import trio

from rollout.store import base
from rollout.store.base import Store, StoreError

Fields = Mapping[str, bytes]  # a record's fields, as the cluster writes them
Record = dict[bytes, bytes]  # and as it reads them back (empty: no such record)
LogEntry = tuple[str, Record]  # an event-log entry: its position in the log, its fields


# -- the writes a Writer queues -----------------------------------------------------------------


@attrs.frozen
class Publish:
    """A message to a worker's inbox; results in how many listeners got it (0: none)."""

    worker: str
    message: bytes


@attrs.frozen
class SetLive:
    """Set fields of a live rollout's record (made if there is none)."""

    response_id: str
    fields: Fields


@attrs.frozen
class DropLive:
    """Remove a live rollout's record."""

    response_id: str


@attrs.frozen
class LogMeta:
    """Set fields of a response's event-log record (its writer, its owner), kept `ttl_ms`."""

    response_id: str
    fields: Fields
    ttl_ms: int


@attrs.frozen
class LogEvent:
    """Append an entry to a response's event log; with `ttl_ms` (its last entry), the log is
    kept that long from then on."""

    response_id: str
    fields: Fields
    ttl_ms: int | None = None


Write = Publish | SetLive | DropLive | LogMeta | LogEvent


class WriteFailed(Exception):
    """A batch of writes did not reach the store; `str()` says why."""


@attrs.define(eq=False)
class StoreUnavailable(StoreError):
    """The store cannot be reached now (its server is down, restarting or unreachable): HTTP
    503 `store_unavailable`, which clients retry shortly (transports add Retry-After). What a
    SharedStore (and its Store operations) raises when its connection fails. Not logged where
    it is raised: the cluster logs the outage once (rollout.service.outage)."""


def store_unavailable(name: str, why: str) -> StoreUnavailable:
    """base.store_unavailable's error, as a StoreUnavailable."""
    e = base.store_unavailable(name, why)
    return StoreUnavailable(message=e.message, type=e.type, code=e.code, status=e.status)


@runtime_checkable
class SharedStore(Store, Protocol):
    """A Store that many workers share, with what the cluster layer runs on."""

    # -- owners (records keep keyed hashes of API keys, never the keys) ----------------------

    def owner_hash(self, key: str) -> str:
        """The hash a record keeps for the API key `key`."""
        ...

    def owner_field(self, key: str | None) -> bytes:
        """The owner as a record field: its hash, or empty without authentication."""
        ...

    def owned(self, field: bytes | None, key: str | None) -> bool:
        """Whether a record's owner field belongs to `key` (constant time)."""
        ...

    # -- leases and inboxes -------------------------------------------------------------------

    async def beat(self, worker: str, ttl_ms: int) -> None:
        """Renew `worker`'s lease for `ttl_ms`."""
        ...

    async def alive(self, worker: str) -> bool:
        """Whether `worker`'s lease holds."""
        ...

    async def listen(
        self,
        worker: str,
        receive: Callable[[bytes], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hand each message published to `worker`'s inbox to `receive`, until cancelled;
        reports started once listening."""
        ...

    async def publish(self, worker: str, message: bytes) -> int:
        """Send `message` to `worker`'s inbox now (not through a batch); how many listeners got
        it (0: none, the worker is gone)."""
        ...

    # -- live rollouts --------------------------------------------------------------------------

    async def set_live(self, response_id: str, fields: Fields) -> None:
        """Set fields of a live rollout's record (made if there is none)."""
        ...

    async def live(self, response_id: str) -> Record:
        """A live rollout's record (empty when there is none)."""
        ...

    def live_ids(self) -> AsyncIterator[str]:
        """The response ids of every live rollout's record."""
        ...

    async def drop_live(self, response_id: str) -> bool:
        """Remove a live rollout's record; whether this call removed it (one caller wins)."""
        ...

    async def mark_lost(self, response_id: str, owner: bytes, ttl_ms: int) -> None:
        """Remember for `ttl_ms` that the rollout's worker was lost (with its owner field)."""
        ...

    async def lost_owner(self, response_id: str) -> bytes | None:
        """The owner field `mark_lost` remembered for the rollout (empty without
        authentication), or None when its worker was not lost (or that was forgotten)."""
        ...

    # -- event logs -----------------------------------------------------------------------------

    async def log_meta(self, response_id: str) -> Record:
        """A response's event-log record (empty when it has no log)."""
        ...

    async def read_log(
        self, response_id: str, after: str | None, count: int, block_ms: int
    ) -> list[LogEntry]:
        """Up to `count` entries of a response's log after the position `after` (None: from
        its start), waiting up to `block_ms` for one when there is none yet."""
        ...

    # -- batches --------------------------------------------------------------------------------

    async def write(self, writes: Sequence[Write]) -> list[Any]:
        """Make the writes, in order, in one round trip; their results, in order (WriteFailed
        when the store could not be reached). Not cut short by a cancellation."""
        ...


def shared_of(store: Store) -> SharedStore | None:
    """`store` as one that many workers share (the cluster layer runs over it), or None for a
    store of this process alone."""
    return store if isinstance(store, SharedStore) else None


__all__ = [
    "DropLive",
    "Fields",
    "LogEntry",
    "LogEvent",
    "LogMeta",
    "Publish",
    "Record",
    "SetLive",
    "SharedStore",
    "StoreUnavailable",
    "Write",
    "WriteFailed",
    "shared_of",
    "store_unavailable",
]
