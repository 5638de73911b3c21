# The deadlines of live append rollouts' waits for their client's outputs (rollout.service.live):
# kept in the order they come, without a cancel scope per pause, and one task that stops the
# rollouts whose deadline passed (their append timeout, or the grace period of a parked one).
from __future__ import annotations

import itertools
from typing import Protocol

import attrs
import trio

from rollout.engine.loop import Cancel


class Waiter(Protocol):
    """What the timers know of a live rollout (rollout.service.live.Live): how to stop it."""

    @property
    def cancel(self) -> Cancel: ...


@attrs.define(eq=False)
class Timers:
    """The deadlines of append rollouts' waits for outputs, kept without a cancel scope per
    pause: each waiting rollout by its append timeout's deadline, and each parked one also by
    its grace period's, both in deadline order (a dict keeps the order things are added in, and
    each deadline added is at least every earlier one: now plus the same timeout). One task
    (`run`) sleeps to the earliest and stops the rollouts whose deadline passed, as a cancel
    would, with the reason (`append_timeout`, `client_disconnected`)."""

    append_timeout_s: float
    waits: dict[Waiter, float] = attrs.field(factory=dict)
    graces: dict[Waiter, float] = attrs.field(factory=dict)
    earlier: trio.Event = attrs.field(factory=trio.Event)  # a deadline before the task's came

    def waiting(self, live: Waiter) -> None:
        """`live` waits for outputs from now, until its append timeout."""
        self.waits[live] = trio.current_time() + self.append_timeout_s

    def stopped(self, live: Waiter) -> None:
        """`live`'s wait ended (resumed, expired, or its loop stopped)."""
        self.waits.pop(live, None)
        self.graces.pop(live, None)

    def parked(self, live: Waiter, grace: float) -> None:
        """`live` lost its client while waiting: it ends at `grace` unless its append timeout
        comes first or a client takes it over (`attached`)."""
        if live in self.waits and live not in self.graces:
            self.graces[live] = grace
            self.earlier.set()  # (it may come before what the task sleeps to)

    def attached(self, live: Waiter) -> None:
        """A client took `live` over: its append timeout's deadline is its wait's again."""
        self.graces.pop(live, None)

    async def run(self) -> None:
        while True:
            now = trio.current_time()
            self._expire(self.waits, now, "append_timeout")
            self._expire(self.graces, now, "client_disconnected")
            # (with nothing waiting, no wait that begins from now ends before the timeout)
            until = now + self.append_timeout_s
            for deadlines in (self.waits, self.graces):
                if deadlines:
                    until = min(until, next(iter(deadlines.values())))
            with trio.move_on_at(until):
                await self.earlier.wait()
            self.earlier = trio.Event()

    def _expire(self, deadlines: dict[Waiter, float], now: float, reason: str) -> None:
        due = list(itertools.takewhile(lambda entry: entry[1] <= now, deadlines.items()))
        for live, _ in due:
            self.stopped(live)
            live.cancel.cancel(reason)
