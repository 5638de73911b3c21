# The next reader of a WebSocket connection, started ahead. A frame the session runs in the
# reader's own task (a create that can start at once) hands the reading to a successor; starting
# a trio task costs far more than waking a parked one (`scripts/cold_costs.py`, last at
# 5d4eeb7: about 85 µs against 3 µs with the caches as cold as between a client's turns), and
# the hand-over lies on the way to the first token. So while a reader waits for data, a
# successor is started and parks; a hand-over wakes it (or starts one, if none is parked yet);
# the end of the reading lets it go. A task that took a message's work comes back when it is
# done and parks as the next successor itself; while one is away, none is started ahead (the one
# coming back will be it), so a connection whose messages come one after another starts no task
# per message.
from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from rollout.service.transport import Spawn


class Successor:
    """`ready()` while there is time, `take_over()` at a hand-over, `release()` at the end."""

    def __init__(self, spawn: Spawn, read_on: Callable[[], Awaitable[None]]) -> None:
        self._spawn = spawn
        self._read_on = read_on  # what the successor does: read on from the buffer
        self._task: trio.lowlevel.Task | None = None  # the parked successor
        self._starting = False
        self._released = False
        self._away = 0  # tasks doing a message's work, that come back (`back`) when done
        # Parked tasks woken to read on, until they run (another may park meanwhile).
        self._reading: set[trio.lowlevel.Task] = set()

    def ready(self) -> None:
        """Start a successor unless one is parked or starting, or a task that will park as
        one is away (doing a message's work)."""
        if self._task is None and not self._starting and not self._released and not self._away:
            self._starting = True
            self._spawn(self._park)

    def back(self, *, parks: bool) -> None:
        """A task that took a message's work over is done with it (however it ended); unless
        it `parks` as the next successor (`park`), one is started ahead now if none is."""
        self._away -= 1
        if not parks:
            self.ready()

    async def park(self) -> bool:
        """Park this task (back from a message's work) as the successor: True once a hand-over
        wakes it to read on; False at once when one is parked or starting already, or when the
        reading has ended (or ends while it waits)."""
        if self._task is not None or self._starting or self._released:
            return False
        return await self._wait()

    def take_over(self) -> None:
        """The reading is handed over: the parked successor reads on (else a new one does)."""
        self._away += 1
        task, self._task = self._task, None
        if task is None:
            self._spawn(self._read_on)
            return
        self._reading.add(task)
        trio.lowlevel.reschedule(task)

    def release(self) -> None:
        """The reading ended: a parked successor returns."""
        self._released = True
        task, self._task = self._task, None
        if task is not None:
            trio.lowlevel.reschedule(task)

    async def _park(self) -> None:
        self._starting = False
        if self._released:
            return
        if await self._wait():
            await self._read_on()

    async def _wait(self) -> bool:
        """Wait parked until a hand-over (True) or the reading's end (False)."""
        self._task = me = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self._task = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        if me in self._reading:
            self._reading.discard(me)
            return True
        return False
