# What a WebSocket connection's Session and its transport (rollout.server.wsmode) ask of each other:
# the Transport protocol the session sends and refuses through, the reading contract (the
# transport hands each message to `Receive` in the reading task; a handling may return what
# that task does next, `After`, and the reading goes on in a task `Spawn` starts), and the
# connection's Closing, which the lanes holding live rollouts stop waiting at.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs
import trio

from protocol.errors import ProtocolError
from protocol.lanes import Lane
from rollout.engine.loop import Sink

#: What a message's handling does next in the reader's task, instead of reading on.
After = Callable[[], Awaitable[None]]
Receive = Callable[[str | bytes], Awaitable[After | None]]
Spawn = Callable[[Callable[[], Awaitable[None]]], None]
Read = Callable[[Receive, Spawn, Callable[[], None]], Awaitable[None]]


class Transport(Protocol):
    """What a Session asks of the connection it serves (rollout.server.wsmode.WsTransport)."""

    def sink_for(self, lane: Lane) -> Sink:
        """The sink of a lane's events."""
        ...

    async def refuse(self, exc: ProtocolError, lane: Lane) -> None:
        """Send an `error` event on `lane`."""
        ...

    async def hangup(self) -> None:
        """Close after a malformed event that ends the connection (`response.inject`)."""
        ...

    async def shutdown(self) -> None:
        """Close because the server stops."""
        ...

    def queued(self) -> int:
        """Bytes held for the client, not yet written (the outbox)."""
        ...

    def handing_over(self) -> bool:
        """Whether the reader can hand its task to the frame being handled (see receive)."""
        ...

    def active(self, count: int) -> None:
        """The session's creates queued, running or suspended are now `count` (idle limit)."""
        ...


@attrs.define(eq=False)
class Closing:
    """A connection's end, set once. A lane holding a live rollout waits `until` the rollout is
    done or this is set; the wait is a cancel scope that setting this cancels (no task watches
    for it: a wait is about a sixth of what a nursery and a watching task cost)."""

    _event: trio.Event = attrs.field(factory=trio.Event)
    _waits: set[trio.CancelScope] = attrs.field(factory=set)

    def set(self) -> None:
        self._event.set()
        for scope in self._waits:
            scope.cancel()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def until(self, done: trio.Event) -> None:
        """Until `done` is set, or this is (now or already)."""
        with trio.CancelScope() as scope:
            self._waits.add(scope)
            try:
                if self._event.is_set():
                    scope.cancel()
                await done.wait()
            finally:
                self._waits.discard(scope)
