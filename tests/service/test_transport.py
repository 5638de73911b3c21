"""A connection's Closing (rollout.service.transport): a lane holding a live rollout waits until
the rollout is done or the connection closes, whichever comes first, with no task watching."""

from __future__ import annotations

import trio

from rollout.service.transport import Closing


async def test_a_wait_ends_when_the_rollout_is_done() -> None:
    closing, done = Closing(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(closing.until, done)
        await trio.sleep(0.01)
        done.set()
    assert not closing.is_set()


async def test_every_wait_ends_when_the_connection_closes() -> None:
    closing = Closing()
    ended: list[int] = []

    async def wait(n: int) -> None:
        await closing.until(trio.Event())
        ended.append(n)

    async with trio.open_nursery() as nursery:
        for n in range(3):
            nursery.start_soon(wait, n)
        await trio.sleep(0.01)
        assert not ended
        closing.set()
    assert sorted(ended) == [0, 1, 2]
    assert closing.is_set()


async def test_a_wait_after_the_close_ends_at_once() -> None:
    closing = Closing()
    closing.set()
    with trio.fail_after(1):
        await closing.until(trio.Event())


async def test_a_cancel_from_outside_still_propagates() -> None:
    closing = Closing()
    with trio.move_on_after(0.01) as outer:
        await closing.until(trio.Event())
    assert outer.cancelled_caught
    assert not closing._waits
