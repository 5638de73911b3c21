# The reader's successor (rollout.server.successor): started ahead and parked, it reads on when a
# hand-over wakes it; a hand-over with none parked starts one; the reading's end lets a parked
# one go, and one still starting then returns at once; none is ever started twice. A task back
# from a message's work parks as the next successor, and none is started while one is away.
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
        successor.ready()  # the tasks that took the work over will come back: none started
        assert len(spawned) == 2
        successor.back(parks=True)
        successor.back(parks=True)  # (they did not park, here)
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


async def test_a_task_back_from_its_work_parks_as_the_next_successor() -> None:
    runs: list[str] = []
    spawned: list[object] = []
    async with trio.open_nursery() as nursery:

        def spawn(fn: object) -> None:
            spawned.append(fn)
            nursery.start_soon(fn)  # type: ignore[arg-type]

        async def read_on() -> None:
            runs.append("read")

        successor = Successor(spawn, read_on)
        successor.ready()
        await trio.testing.wait_all_tasks_blocked()
        successor.take_over()  # this task goes to the message's work; the parked one reads on
        await trio.testing.wait_all_tasks_blocked()
        successor.ready()  # (the reader waits for data) this task will come back: none started
        assert runs == ["read"] and len(spawned) == 1
        successor.back(parks=True)
        parked: list[bool] = []

        async def back_and_park() -> None:
            parked.append(await successor.park())

        nursery.start_soon(back_and_park)
        await trio.testing.wait_all_tasks_blocked()
        successor.ready()  # one is parked: none started
        assert parked == [] and len(spawned) == 1
        successor.take_over()  # the task that came back is woken to read on
        await trio.testing.wait_all_tasks_blocked()
        assert parked == [True] and len(spawned) == 1


async def test_a_task_back_that_does_not_park_starts_one_ahead() -> None:
    spawned: list[object] = []
    async with trio.open_nursery() as nursery:

        def spawn(fn: object) -> None:
            spawned.append(fn)
            nursery.start_soon(fn)  # type: ignore[arg-type]

        async def read_on() -> None:
            pass

        successor = Successor(spawn, read_on)
        successor.take_over()  # none parked: one is started to read on
        successor.ready()
        assert len(spawned) == 1
        successor.back(parks=False)  # the first reader, which waits for the end instead
        assert len(spawned) == 2
        await trio.testing.wait_all_tasks_blocked()
        successor.release()
        parked = await successor.park()  # released: it does not park
        assert parked is False


async def test_a_woken_successor_reads_on_even_when_another_parks_before_it_runs() -> None:
    # The woken one and the one coming back run in the same batch, in either order (trio
    # shuffles a batch): whichever parks first, the woken one reads on and the other waits.
    for _ in range(20):
        await _woken_and_back_in_one_batch()


async def _woken_and_back_in_one_batch() -> None:
    runs: list[str] = []
    parked: list[bool] = []
    async with trio.open_nursery() as nursery:

        async def read_on() -> None:
            runs.append("read")

        successor = Successor(nursery.start_soon, read_on)
        successor.ready()
        await trio.testing.wait_all_tasks_blocked()
        successor.take_over()  # wakes the parked one; this task goes to the work

        async def back_and_park() -> None:
            successor.back(parks=True)
            parked.append(await successor.park())

        nursery.start_soon(back_and_park)
        await trio.testing.wait_all_tasks_blocked()
        assert runs == ["read"] and parked == []
        successor.release()
    assert parked == [False]
