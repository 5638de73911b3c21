# A worker's view of its connection to the shared store (rollout.service.cluster): whether the
# store answers, since when, and the pause before the next try while it does not. The heartbeat,
# the inbox listener and the writer report failures and successes here; the first failure of an
# outage is logged (one line, however many beats, batches or listens fail after it), and so is
# the end of it. `settled()` says whether this worker may judge another one gone: not during an
# outage, nor for SETTLE_S after one, the time every live worker needs to renew its lease once
# the store answers (see `settled`).
from __future__ import annotations

import logging

import attrs
import trio

from rollout.store.redis_url import bottom, reason
from rollout.store.shared import StoreUnavailable, store_unavailable

log = logging.getLogger("rollout.service.cluster")
BACKOFF_S = (0.1, 2.0)  # the first pause before a retry, and the most it doubles to


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
            why = reason(bottom(exc.__cause__ or exc))  # (what lies under StoreUnavailable)
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


__all__ = ["BACKOFF_S", "Backoff", "Link", "StartedOnce"]
