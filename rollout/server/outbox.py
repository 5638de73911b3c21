# The outgoing bytes of one peer (an SSE body, a WebSocket connection): producers queue them and
# one task at a time writes them. What gathers while the producers run goes out in one write
# once they yield: sent by a writer task of the outbox's own (a WebSocket connection's, for its
# life) or, for an outbox given a Flusher (an SSE body), by the server's one flusher task, which
# writes every such outbox's bytes without waiting and starts a writer task for one only when its
# socket does not take them all. A flush sends from the producing task itself when no write is in
# progress (the bytes leave before it yields, not after every other runnable task; it yields only
# to wait for the socket), and a push does so without waiting at all. Producers wait at the
# high-water mark, so a peer that stops reading stalls only its own producers. The transport
# says how a batch is framed and written, and which exceptions mean the peer is gone.
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

Write = Callable[[bytes], Awaitable[None]]
log = logging.getLogger("rollout.server.outbox")


class Outbox:
    """`put` bytes, `flush` them now, `run` the writer (without a Flusher), `end` it once the
    bytes are out (or `finish`: end, and return once they are)."""

    def __init__(
        self,
        write: Write,
        high_water: int,
        *,
        frame: Callable[[list[bytes], int], list[Any]] = lambda parts, size: parts,
        broken: tuple[type[BaseException], ...] = (),
        on_broken: Callable[[], None] = lambda: None,
        write_now: Callable[[bytes | memoryview], int] | None = None,
        writable: Callable[[], Awaitable[None]] | None = None,
        flusher: Flusher | None = None,
    ) -> None:
        self._write = write
        self._write_now = write_now  # a write that neither waits nor yields (see push)
        self._writable = writable  # waits until write_now would take bytes (with write_now)
        self._frame = frame  # a batch (its parts and their size) as the parts of one write
        self._broken_by = broken
        self._on_broken = on_broken
        self._flusher = flusher
        self._task = flusher is None  # a writer task runs `run` (with a flusher: once needed)
        self._due = False  # in the flusher's list
        self._scope: trio.CancelScope | None = None  # of a writer the flusher started
        self.high_water = high_water
        self.head = b""  # written as it is before the next batch
        self.parts: list[bytes] = []  # queued, in order (joined once, into the write)
        self.size = 0  # bytes in `parts`
        self.tail = b""  # written as it is after the last batch (once ending)
        self.writing = 0  # bytes taken from the buffer and being written
        self.sending = False  # a task (the writer, or a flush) is writing
        self.broken = False  # a write failed: nothing more is sent
        self.ending = False  # the writer returns once everything is out
        self.writes = 0  # writes made (queued bytes coalesce into fewer)
        self.wake = trio.Event()  # (of the writer task: set by a put while it runs)
        self._drained = True  # nothing was put since the last write ended
        self._drained_event: trio.Event | None = None  # (waited on, not set yet)
        self.done = trio.Event()  # the writer returned (or, without one, everything is out)

    @property
    def queued(self) -> int:
        return len(self.head) + self.size + self.writing

    @property
    def drained(self) -> trio.Event:
        """Set once what is queued now has been written (or the peer is gone)."""
        event = self._drained_event
        if event is None:
            event = trio.Event()
            if self._drained:
                event.set()
            else:
                self._drained_event = event
        return event

    def _drain(self) -> None:
        """What was queued has been written (or never will be): its waiters go on."""
        self._drained = True
        event, self._drained_event = self._drained_event, None
        if event is not None:
            event.set()

    def put(self, data: bytes, *, head: bool = False) -> None:
        """Queue `data`: framed with the rest of the batch, or (`head`) written before it as it
        is (an HTTP response head before the first chunk)."""
        if head:
            self.head += data
        elif data:
            self.parts.append(data)
            self.size += len(data)
        self._drained = False
        if self._task:
            self.wake.set()
        elif not self._due:
            self._kick()

    def end(self, tail: bytes = b"") -> None:
        """No more puts: `tail` (as it is) goes last, then the writer returns."""
        if not self.broken:
            self.tail += tail
        self.ending = True
        self._kick()

    async def finish(self, tail: bytes = b"") -> None:
        """`end`, and return once everything is out (or the peer is gone): written from this
        task when nothing else is writing for the outbox."""
        self.end(tail)
        if not self._task:
            if not self.sending and not self.broken:
                await self._send_queued(now=True)
            self._settle()
        if not self.done.is_set():
            await self.done.wait()

    def drop(self) -> None:
        """Nothing more is sent (the connection is closing): a writer task returns at once."""
        self.broken = True
        self.parts, self.size, self.tail = [], 0, b""
        if self._scope is not None:
            self._scope.cancel()
        if not self._task:
            self._settle()

    def _kick(self) -> None:
        """What is queued goes out once the producers yield: the writer task is woken, or the
        outbox is due for the flusher (`put` does the same inline)."""
        self.wake.set()
        if not (self._task or self._due) and self._flusher is not None:
            self._due = True
            self._flusher.due(self)

    async def below_high_water(self) -> None:
        """Wait, when over the high-water mark, until the writer has sent what is queued."""
        if self.queued > self.high_water:
            await self.drained.wait()

    async def flush(self) -> None:
        """Send what is queued now: from this task when no write is in progress (without
        yielding when the socket takes it all), else when the write in progress ends."""
        if not (self.head or self.parts) or self.broken:
            return
        if self.sending:
            await self.drained.wait()
        else:
            await self._send_queued()

    def push(self) -> None:
        """Send what is queued now from this task, without waiting or yielding, when no write
        is in progress (`write_now`); what the socket does not take stays first in line, for
        the writer (which `put` woke) or the next flush. Without `write_now`, nothing."""
        if self._write_now is None or self.sending or self.broken or not (self.head or self.parts):
            return
        self._send_now()

    def send_due(self) -> bool:
        """(The flusher's.) Send what is queued without waiting; True when a writer task must
        send the rest (the socket did not take it all, or the stream has no write that cannot
        wait)."""
        self._due = False
        if self._task or self.sending or self.broken:
            return False  # the task writing takes what is queued
        if not (self.head or self.parts or self.tail):
            return False
        if self._write_now is None or not self._send_now():
            self._task = True
            self.wake.set()  # (the writer's first wait)
            return True
        return False

    def _send_now(self) -> bool:
        """Write the head, the queued parts (and the tail, ending) without waiting: True when
        the socket took all of it; the rest stays first in line."""
        assert self._write_now is not None
        data = self._take()
        try:
            written = self._write_now(data)
        except self._broken_by:
            self._break()
            self.wake.set()
            self._drain()
            if not self._task:
                self._settle()
            return True
        if written:
            self.writes += 1
        if written < len(data):
            self.head = data[written:]  # (framed already: written as it is, before what follows)
            return False
        self._drain()
        if not self._task:
            self._settle()
        return True

    def _take(self) -> bytes:
        """The bytes of the next write, taken from the queue: the head, the batch framed, and
        the tail once ending."""
        parts: list[Any] = [self.head] if self.head else []
        self.head = b""
        if self.parts:
            parts += self._frame(self.parts, self.size)
            self.parts, self.size = [], 0
        if self.ending and self.tail:
            parts.append(self.tail)
            self.tail = b""
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _break(self) -> None:
        self.broken = True
        self.parts, self.size, self.tail = [], 0, b""
        self._on_broken()

    def _left(self) -> bool:
        return bool(self.head or self.parts or self.tail)

    def _settle(self) -> None:
        """(Without a writer task.) `done` once everything is out, or nothing more can be."""
        if self.broken or (self.ending and not self._left()):
            self.done.set()

    async def run(self) -> None:
        """The writer task: sends what gathers until `end` (or the peer is gone)."""
        try:
            while True:
                await self.wake.wait()
                self.wake = trio.Event()
                if not self.sending:  # else the task sending now takes what was queued
                    await self._send_queued(now=True)
                if self.broken or (self.ending and not self.sending and not self._left()):
                    return
        finally:
            self.done.set()

    async def _send_queued(self, *, now: bool = False) -> None:
        """Write the head and the queued parts until none is left (one task at a time). Each
        write is first tried without waiting (`write_now`), and what the socket takes at once
        needs no pass through the scheduler after it: the task goes on to its next wait. `now`
        (the writer, an end): not even a cancelled task's check first."""
        self.sending = True
        try:
            while self.head or self.parts or (self.ending and self.tail):
                self.writing = self.size
                data = self._take()
                await self._write_whole(data, now=now)
                self.writes += 1
                self.writing = 0
        except self._broken_by:
            self._break()
        finally:
            self.sending = False
            self.writing = 0
            if self.ending or self.broken:
                self.wake.set()  # the writer may be waiting for this write to end
        self._drain()
        if not self._task:
            self._settle()

    async def _write_whole(self, data: bytes, *, now: bool) -> None:
        """Write all of `data` (taken from the queue). With a write that cannot wait, what was
        written is known at every wait, so a task cancelled in the middle (a response cancelled
        while it flushes) leaves the rest first in line for the writer: the peer's stream has
        no gap and no torn frame. Without one, a cancelled write breaks the outbox (what the
        peer got is unknown). A flush raises first if its task is cancelled (`now`, the writer:
        not); neither yields after a write the socket took whole."""
        write_now, writable = self._write_now, self._writable
        if write_now is None or writable is None:
            try:
                await self._write(data)
            except trio.Cancelled:
                self._break()
                if not self._task:
                    self._settle()
                raise
            return
        written = 0
        try:
            if not now:
                await trio.lowlevel.checkpoint_if_cancelled()
            written = write_now(data)
            if written < len(data):
                view = memoryview(data)
                while written < len(data):
                    await writable()
                    written += write_now(view[written:])
        except trio.Cancelled:
            self.head = data[written:] + self.head
            self._kick()  # the writer sends it
            raise


class Flusher:
    """The server's one task that sends what outboxes given to it have queued, once their
    producers yield (as a writer task of each would), without waiting: an outbox whose socket
    does not take it all gets a writer task of its own, in this task's nursery, until its end
    (or its `drop`). `run` it for the server's life."""

    def __init__(self) -> None:
        self._due: list[Outbox] = []
        self._parked: trio.lowlevel.Task | None = None  # this task, waiting for outboxes due
        self._nursery: trio.Nursery | None = None

    def due(self, outbox: Outbox) -> None:
        self._due.append(outbox)
        task, self._parked = self._parked, None
        if task is not None:
            trio.lowlevel.reschedule(task)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                while self._due:
                    due, self._due = self._due, []
                    for outbox in due:
                        try:
                            if outbox.send_due():
                                outbox._scope = trio.CancelScope()
                                nursery.start_soon(_writer, outbox, outbox._scope)
                        except Exception:  # one peer's bug must not stop every other's
                            log.exception("writing an outbox failed")
                            outbox.drop()
                self._parked = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: Any) -> trio.lowlevel.Abort:
        self._parked = None
        return trio.lowlevel.Abort.SUCCEEDED


async def _writer(outbox: Outbox, scope: trio.CancelScope) -> None:
    with scope:
        try:
            await outbox.run()
        except Exception:
            log.exception("writing an outbox failed")
            outbox.drop()


__all__ = ["Flusher", "Outbox"]
