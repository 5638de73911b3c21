# The reader's successor (rollout.server.successor): started ahead and parked, it reads on when a
# hand-over wakes it; a hand-over with none parked starts one; the reading's end lets a parked
# one go, and one still starting then returns at once; none is ever started twice.
from __future__ import annotations

import trio
import trio.testing

from rollout.server.successor import Successor


async def test_ready_take_over_and_release() -> None:
    runs: list[str] = []
    async with trio.open_nursery() as nursery:
        spawned: list[object] = []

        def spawn(fn: object) -> None:
            spawned.append(fn)
            nursery.start_soon(fn)  # type: ignore[arg-type]

        async def read_on() -> None:
            runs.append("read")

        successor = Successor(spawn, read_on)
        successor.ready()
        successor.ready()  # one is starting: not another
        await trio.testing.wait_all_tasks_blocked()
        assert len(spawned) == 1 and runs == []
        successor.take_over()  # the parked one reads on
        await trio.testing.wait_all_tasks_blocked()
        assert runs == ["read"] and len(spawned) == 1
        successor.take_over()  # none parked: one is started to read on
        await trio.testing.wait_all_tasks_blocked()
        assert runs == ["read", "read"] and len(spawned) == 2
        successor.ready()
        await trio.testing.wait_all_tasks_blocked()
        successor.release()  # the parked one returns without reading
        successor.ready()  # released: nothing more is started
    assert runs == ["read", "read"] and len(spawned) == 3


async def test_one_still_starting_when_the_reading_ends_returns() -> None:
    runs: list[str] = []

    async def read_on() -> None:
        runs.append("read")

    async with trio.open_nursery() as nursery:
        successor = Successor(nursery.start_soon, read_on)
        successor.ready()
        successor.release()  # before the successor's task ran
    assert runs == []
