# The next reader of a WebSocket connection, started ahead. A frame the session runs in the
# reader's own task (a create that can start at once) hands the reading to a successor; starting
# a trio task costs far more than waking a parked one (`scripts/cold_costs.py`, last at
# 5d4eeb7: about 85 µs against 3 µs with the caches as cold as between a client's turns), and
# the hand-over lies on the way to the first token. So while a reader waits for data, a
# successor is started and parks; a hand-over wakes it (or starts one, if none is parked yet);
# the end of the reading lets it go.
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
        self._reads = False
        self._released = False

    def ready(self) -> None:
        """Start a successor unless one is parked or starting."""
        if self._task is None and not self._starting and not self._released:
            self._starting = True
            self._spawn(self._park)

    def take_over(self) -> None:
        """The reading is handed over: the parked successor reads on (else a new one does)."""
        task, self._task = self._task, None
        if task is None:
            self._spawn(self._read_on)
            return
        self._reads = True
        trio.lowlevel.reschedule(task)

    def release(self) -> None:
        """The reading ended: a parked successor returns."""
        self._released = True
        task, self._task = self._task, None
        if task is not None:
            self._reads = False
            trio.lowlevel.reschedule(task)

    async def _park(self) -> None:
        self._starting = False
        if self._released:
            return
        self._task = trio.lowlevel.current_task()
        self._reads = False

        def abort(_: object) -> trio.lowlevel.Abort:
            self._task = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        if self._reads:
            await self._read_on()
