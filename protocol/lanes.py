# The rules of one WebSocket connection's lanes and its connection-local cache (spec §1.4, §1.5),
# as data and small pure methods. Everything that decides whether a `response.create` is admitted,
# which cached state a continuation takes, and what is evicted lives here; the service layer owns
# the tasks and queues that carry the work out. Sans-IO: the cached value is opaque (the engine's
# context), nothing here waits or sends.
#
# Rules, in one place:
# - Lanes: a create names a lane (`stream_id`) or uses the default one. At most `max_lanes`
#   distinct named lanes over the connection's life; the default lane does not count.
# - Queue: creates wait in their lane (FIFO) until one of `max_in_flight` slots is free; at most
#   `max_queued` creates and `max_queued_bytes` of their frames wait per connection.
# - Cache: the latest response of each lane is kept, and so is every response a queued create
#   still refers to (a *pin*). Anything else is evicted as soon as it is neither.
# - Continuation: a create continuing a cached response on the same lane, with no other create
#   pinning it, takes the state in place (the parent leaves the cache: should the create fail, it
#   stays evicted). Any other continuation of a cached response gets a copy (a fork); a
#   continuation of an unknown response is a miss (the store may still have it).
# - A same-lane continuation refused before it reached its lane evicts its parent too; a
#   cross-lane fork failure keeps it.
from __future__ import annotations

from collections import Counter
from typing import Generic, Literal, TypeVar

import attrs

from protocol.errors import ProtocolError

T = TypeVar("T")
Lane = str | None  # None is the default lane


def stream_limit_reached(limit: int) -> ProtocolError:
    return ProtocolError(
        message="This WebSocket connection has reached its maximum number of distinct stream "
        f"IDs ({limit}). Reuse an existing stream_id or open a new WebSocket connection.",
        code="websocket_stream_limit_reached",
        param="stream_id",
    )


def queue_limit_reached(count: int, size: int) -> ProtocolError:
    return ProtocolError(
        message=f"This WebSocket connection already has {count} queued responses ({size} bytes); "
        "wait for one to finish before sending another response.create.",
        code="websocket_queue_limit_reached",
        status=429,
    )


@attrs.frozen(kw_only=True)
class LaneLimits:
    max_lanes: int = 32
    max_in_flight: int = 16
    max_queued: int = 64
    max_queued_bytes: int = 32 * 1024 * 1024


@attrs.frozen
class Taken(Generic[T]):
    """What a continuation starts from: the cached state itself, or a copy is needed."""

    how: Literal["in_place", "fork"]
    value: T


@attrs.define
class _Entry(Generic[T]):
    lane: Lane
    value: T


@attrs.define
class LaneBook(Generic[T]):
    """One connection's lanes, queue accounting, pins and cache."""

    limits: LaneLimits = LaneLimits()
    lanes: set[Lane] = attrs.field(factory=set)
    queued: int = 0
    queued_bytes: int = 0
    pins: Counter[str] = attrs.field(factory=Counter)
    latest: dict[Lane, str] = attrs.field(factory=dict)
    _cache: dict[str, _Entry[T]] = attrs.field(factory=dict)

    # -- admission ------------------------------------------------------------------------------

    def admit(self, lane: Lane, parent: str | None, size: int) -> bool:
        """A create enters its lane's queue; raises the limit error otherwise. Returns True when
        the lane is new (the caller starts its worker)."""
        new = lane not in self.lanes
        named = len(self.lanes) - (None in self.lanes)
        if new and lane is not None and named >= self.limits.max_lanes:
            raise stream_limit_reached(self.limits.max_lanes)
        if (
            self.queued >= self.limits.max_queued
            or self.queued_bytes + size > self.limits.max_queued_bytes
        ):
            raise queue_limit_reached(self.queued, self.queued_bytes)
        self.lanes.add(lane)
        self.queued += 1
        self.queued_bytes += size
        if parent is not None:
            self.pins[parent] += 1
        return new

    def dequeued(self, size: int) -> None:
        """A queued create left the queue (it starts, or it is dropped)."""
        self.queued -= 1
        self.queued_bytes -= size

    def unpin(self, parent: str | None) -> None:
        """A create that referred to `parent` no longer needs it kept."""
        if parent is None:
            return
        self.pins[parent] -= 1
        if self.pins[parent] <= 0:
            del self.pins[parent]
            self._maybe_evict(parent)

    # -- the cache ------------------------------------------------------------------------------

    def take(self, parent: str, lane: Lane) -> Taken[T] | None:
        """The state a continuation of `parent` on `lane` starts from; None on a miss."""
        entry = self._cache.get(parent)
        if entry is None:
            return None
        if entry.lane == lane and self.pins[parent] <= 1:
            self._drop(parent)
            return Taken("in_place", entry.value)
        return Taken("fork", entry.value)

    def remember(self, lane: Lane, response_id: str, value: T) -> None:
        """A response ended on `lane` (not failed): it is the lane's latest now."""
        self._cache[response_id] = _Entry(lane, value)
        previous = self.latest.get(lane)
        self.latest[lane] = response_id
        if previous is not None and previous != response_id:
            self._maybe_evict(previous)

    def refused(self, parent: object, lane: Lane) -> None:
        """A continuation was refused before it reached its lane: a same-lane parent that no
        queued create pins is evicted (spec §1.5)."""
        if not isinstance(parent, str):
            return
        entry = self._cache.get(parent)
        if entry is not None and entry.lane == lane and not self.pins.get(parent):
            self._drop(parent)

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._cache

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        self._cache.clear()
        self.latest.clear()

    def _drop(self, response_id: str) -> None:
        entry = self._cache.pop(response_id)
        if self.latest.get(entry.lane) == response_id:
            del self.latest[entry.lane]

    def _maybe_evict(self, response_id: str) -> None:
        if self.pins.get(response_id) or response_id in self.latest.values():
            return
        self._cache.pop(response_id, None)


__all__ = [
    "LaneBook",
    "LaneLimits",
    "Taken",
    "queue_limit_reached",
    "stream_limit_reached",
]
