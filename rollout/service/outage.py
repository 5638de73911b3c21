# A worker's view of its connection to the shared store (rollout.service.cluster): whether the
# store answers, since when, and the pause before the next try while it does not. The heartbeat,
# the inbox listener and the writer report failures and successes here; the first failure of an
# outage is logged (one line, however many beats, batches or listens fail after it), and so is
# the end of it. `settled()` says whether this worker may judge another one gone: not during an
# outage, nor for `settle_s` (a lease's length) after one or after the store stalled, the time
# every live worker needs to renew its lease once the store answers (see `settled`). `Claims`
# keeps the live records of the rollouts a worker owns, to write them back after an outage.
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs
import trio

from rollout.store.redis_url import reason
from rollout.store.shared import SetLive, SharedStore, StoreUnavailable, Write, store_unavailable

log = logging.getLogger("rollout.service.cluster")
BACKOFF_S = (0.1, 2.0)  # the first pause before a retry, and the most it doubles to
STALL_S = 2.0  # a store that takes this long to answer stalled: leases may have lapsed


@attrs.define(eq=False)
class Link:
    """The connection to the shared store, as this worker's cluster tasks find it."""

    settle_s: float  # how long after an outage before another worker may be judged gone
    down_since: float | None = None  # the first failure of the current outage
    up_since: float | None = None  # when the store answered a beat again after the last one
    outages: int = 0  # (for tests and metrics)

    def failed(self, what: str, exc: BaseException) -> None:
        """`what` (a beat, a listen, a batch of writes) could not reach the store."""
        if self.down_since is None:
            self.down_since = trio.current_time()
            self.outages += 1
            why = reason(under(exc))
            log.warning("the shared store is unreachable (%s: %s); retrying", what, why)

    def answered(self) -> bool:
        """The store took a beat; True when that ends an outage (its end is logged)."""
        if self.down_since is None:
            return False
        down = trio.current_time() - self.down_since
        self.down_since = None
        self.up_since = trio.current_time()
        log.warning("the shared store answers again (after %.1f s)", down)
        return True

    def stalled(self, took_s: float) -> None:
        """The store took `took_s` to answer (a frozen or swamped Redis waits, it does not
        fail): after STALL_S, as after an outage, nobody is judged gone until leases were
        renewed (`settled`), since the beats that waited may be answered after this."""
        if took_s >= STALL_S and self.down_since is None:
            self.up_since = trio.current_time()
            log.warning("the shared store took %.1f s to answer", took_s)

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def settled(self) -> bool:
        """Whether another worker's missing lease (or inbox) means it is gone. While the
        store is down nobody can renew a lease, so after an outage every worker's lease may
        have lapsed (ALIVE_MS is shorter than many outages) and a Redis that restarted without
        its data has none at all. Each live worker renews its lease within one pause of the
        backoff (BACKOFF_S: at most 2 s) of the store answering it; this worker answered after
        the store came back, so once it has itself had the store for `settle_s` (ALIVE_MS),
        every live worker has renewed its lease, and one without a lease is gone."""
        if self.down_since is not None:
            return False
        return self.up_since is None or trio.current_time() - self.up_since >= self.settle_s

    def unsettled(self) -> StoreUnavailable:
        """What a request that needs to judge another worker gets while that is not settled."""
        why = "it is unreachable" if self.down else "it is reconnecting"
        return store_unavailable("shared", why)


#: How a worker queues a write to the shared store (Writer.send: `then` gets None if it failed).
Send = Callable[..., None]


@attrs.define(eq=False)
class Claims:
    """The live records of the rollouts this worker owns, as last written; `due` when they
    must be written back (the store answered again after an outage)."""

    records: dict[str, dict[str, bytes]] = attrs.field(factory=dict)
    due: bool = False

    async def write_back(self, store: SharedStore, send: Send, link: Link) -> None:
        """Write every record back (queued with `send`, the writer's, so in order with a record
        dropped at a rollout's end), except those another worker declared lost meanwhile
        (their clients were told so): a Redis that restarted without its data has none."""
        self.due = False
        for rid in list(self.records):
            try:
                lost = await store.lost_owner(rid)
            except StoreUnavailable as exc:
                link.failed("reclaim", exc)
                self.due = True
                return
            fields = self.records.get(rid)
            if lost is not None:
                self.records.pop(rid, None)
            elif fields is not None:
                write: Write = SetLive(rid, dict(fields))
                send(write, then=self._written)

    def _written(self, result: Any) -> None:
        if result is None:  # it failed: again at the next beat that reaches the store
            self.due = True


class Backoff:
    """Pauses between retries: BACKOFF_S[0], doubling up to BACKOFF_S[1]; `reset` after a
    success."""

    def __init__(self, first: float = BACKOFF_S[0], most: float = BACKOFF_S[1]) -> None:
        self.first, self.most = first, most
        self.next = first

    def pause(self) -> float:
        pause = self.next
        self.next = min(self.next * 2, self.most)
        return pause

    def reset(self) -> None:
        self.next = self.first


def under(exc: BaseException) -> BaseException:
    """What lies under a StoreUnavailable: its cause (the first in a group), for a person."""
    cause = exc.__cause__ or exc
    while isinstance(cause, BaseExceptionGroup):
        cause = cause.exceptions[0]
    return cause


class StartedOnce:
    """A task status that reports started once (the first subscription of the inbox) and
    resets the backoff at each (a subscription made again after an outage)."""

    def __init__(self, status: trio.TaskStatus[None], backoff: Backoff) -> None:
        self.status, self.backoff, self.done = status, backoff, False

    def started(self, value: None = None) -> None:
        self.backoff.reset()
        if not self.done:
            self.done = True
            self.status.started()


__all__ = ["BACKOFF_S", "STALL_S", "Backoff", "Claims", "Link", "StartedOnce"]
