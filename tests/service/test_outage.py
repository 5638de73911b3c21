# A worker's view of a lost shared store (rollout.service.outage, used by the cluster layer):
# an outage is logged once however many calls fail, and its end once; after it (or after the
# store stalled) no other worker is judged gone until a lease's length has passed, so a peer
# whose lease lapsed only because nobody could beat is not declared lost; the backoff doubles
# to its bound and starts again after a success. Time is trio's mock clock (nothing waits).
from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from rollout.service.cluster import ALIVE_MS, Cluster
from rollout.service.outage import STALL_S, Backoff, Link
from rollout.store.shared import StoreUnavailable, store_unavailable

SETTLE_S = ALIVE_MS / 1000


class Leases:
    """The one operation Cluster.alive needs of a store: whose lease holds."""

    def __init__(self, held: set[str]) -> None:
        self.held = held

    async def alive(self, worker: str) -> bool:
        return worker in self.held


async def test_an_outage_is_logged_once_and_settles_after_a_lease(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    link = Link(settle_s=SETTLE_S)
    assert link.settled() and not link.answered()  # no outage seen: nothing to wait for
    caplog.set_level(logging.WARNING, "rollout.service.cluster")
    for what in ("heartbeat", "inbox", "writing 3 commands", "heartbeat"):
        link.failed(what, store_unavailable("Redis", "ConnectionError"))
    assert link.down and not link.settled()
    await trio.sleep(8)
    assert link.answered() and not link.answered()  # the end, once
    assert not link.settled()
    await trio.sleep(SETTLE_S - 0.5)
    assert not link.settled()
    await trio.sleep(1)
    assert link.settled()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "unreachable (heartbeat" in lines[0], lines
    assert "answers again (after 8.0 s)" in lines[1]
    assert link.outages == 1


async def test_a_stalled_store_settles_like_an_outage(
    autojump_clock: trio.testing.MockClock,
) -> None:
    link = Link(settle_s=SETTLE_S)
    link.stalled(STALL_S / 2)
    assert link.settled()
    link.stalled(STALL_S)
    assert not link.settled()
    await trio.sleep(SETTLE_S)
    assert link.settled()


async def test_a_peer_without_a_lease_is_gone_only_once_settled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = Cluster(Leases({"w2"}), "w1")  # type: ignore[arg-type]
    assert await cluster.alive("w1")  # itself, whatever the store says
    assert await cluster.alive("w2")
    assert not await cluster.alive("w3")
    cluster.link.failed("heartbeat", store_unavailable("Redis", "ConnectionError"))
    assert await cluster.alive("w1")  # its own beats failing do not make it gone
    with pytest.raises(StoreUnavailable):
        await cluster.alive("w3")
    assert cluster.link.answered()
    assert await cluster.alive("w2")
    with pytest.raises(StoreUnavailable) as info:
        await cluster.alive("w3")  # w3 may not have beaten again yet: a 503, retried
    assert info.value.status == 503 and info.value.code == "store_unavailable"
    assert await cluster.sweep() == 0  # no sweep while unsettled
    await trio.sleep(SETTLE_S)
    assert not await cluster.alive("w3")


def test_the_backoff_doubles_to_its_bound_and_resets() -> None:
    backoff = Backoff(0.1, 2.0)
    pauses = [backoff.pause() for _ in range(7)]
    assert pauses == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])
    backoff.reset()
    assert backoff.pause() == pytest.approx(0.1)
