# What reaches a running sampling loop from outside, between its steps: outputs of async tool
# calls, acknowledgements to number in the response's own sequence, and a request to end the
# response at its next step boundary (`response.steer`). The loop (rollout.engine.loop) reads it
# at safe points; the service layer posts to it. No I/O; a trio.Event wakes the waiting loop.
from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import trio

from protocol.events import Event
from protocol.items import Item
from protocol.stream import ResponseStream

Note = Callable[[ResponseStream], Event]  # an event built (and numbered) when it is sent


@attrs.define(eq=False)
class Mailbox:
    """What reaches a running loop from outside, kept for the next safe boundary: items that
    join the context there (async tool outputs), events to send at the next point where no
    built event waits (acknowledgements: numbered in order with the response's own), and a
    request to end the response at the next step boundary (`response.steer`)."""

    items: list[Item] = attrs.field(factory=list)
    notes: list[Note] = attrs.field(factory=list)
    stop: str | None = None  # the incomplete reason to end with at the next boundary
    changed: trio.Event | None = None  # made when first waited on or woken (most never are)
    closed: bool = False  # the response's last event is sent: nothing more goes through here
    # A wait of the model's that a steer ends (a real engine's step, before its first output).
    interruptible: trio.CancelScope | None = None

    def post(self, note: Note | None = None, items: Sequence[Item] = ()) -> None:
        if note is not None:
            self.notes.append(note)
        self.items.extend(items)
        self.wake()

    def stop_at_boundary(self, reason: str) -> None:
        self.stop = reason
        if self.interruptible is not None:
            self.interruptible.cancel()
        self.wake()

    def wake(self) -> None:
        if self.changed is None:
            self.changed = trio.Event()
        self.changed.set()

    async def wait(self) -> None:
        """Until something is posted (or `wake` is called)."""
        if self.changed is None:
            self.changed = trio.Event()
        await self.changed.wait()
        self.changed = None


__all__ = ["Mailbox", "Note"]
