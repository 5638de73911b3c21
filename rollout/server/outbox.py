# The outgoing bytes of one peer (an SSE body, a WebSocket connection): producers queue them and
# one task at a time writes them. The writer task sends what has gathered in one write; a flush
# sends from the producing task itself when no write is in progress (the bytes leave before it
# yields, not after every other runnable task), and a push does so without yielding at all.
# Producers wait at the high-water mark, so a peer that stops reading stalls only its own
# producers. The transport says how a batch is framed and written, and which exceptions mean the
# peer is gone.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

Write = Callable[[bytes], Awaitable[None]]


class Outbox:
    """`put` bytes, `flush` them now, `run` the writer, `end` it once the bytes are out."""

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
    ) -> None:
        self._write = write
        self._write_now = write_now  # a write that neither waits nor yields (see push)
        self._writable = writable  # waits until write_now would take bytes (with write_now)
        self._frame = frame  # a batch (its parts and their size) as the parts of one write
        self._broken_by = broken
        self._on_broken = on_broken
        self.high_water = high_water
        self.head = b""  # written as it is before the next batch
        self.parts: list[bytes] = []  # queued, in order (joined once, into the write)
        self.size = 0  # bytes in `parts`
        self.writing = 0  # bytes taken from the buffer and being written
        self.sending = False  # a task (the writer, or a flush) is writing
        self.broken = False  # a write failed: nothing more is sent
        self.ending = False  # the writer returns once everything is out
        self.writes = 0  # writes made (queued bytes coalesce into fewer)
        self.wake = trio.Event()
        self.drained = trio.Event()
        self.drained.set()
        self.done = trio.Event()  # the writer returned

    @property
    def queued(self) -> int:
        return len(self.head) + self.size + self.writing

    def put(self, data: bytes, *, head: bool = False) -> None:
        """Queue `data`: framed with the rest of the batch, or (`head`) written before it as it
        is (an HTTP response head before the first chunk)."""
        if head:
            self.head += data
        elif data:
            self.parts.append(data)
            self.size += len(data)
        self.drained = trio.Event() if self.drained.is_set() else self.drained
        self.wake.set()

    def end(self) -> None:
        self.ending = True
        self.wake.set()

    async def below_high_water(self) -> None:
        """Wait, when over the high-water mark, until the writer has sent what is queued."""
        if self.queued > self.high_water:
            await self.drained.wait()

    async def flush(self) -> None:
        """Send what is queued now: from this task when no write is in progress, else when the
        write in progress ends."""
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
        parts: list[Any] = [self.head] if self.head else []
        if self.parts:
            parts += self._frame(self.parts, self.size)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        self.head, self.parts, self.size = b"", [], 0
        try:
            written = self._write_now(data)
        except self._broken_by:
            self.broken = True
            self._on_broken()
            self.wake.set()
            self.drained.set()
            return
        if written:
            self.writes += 1
        if written < len(data):
            self.head = data[written:]  # (framed already: written as it is, before what follows)
        else:
            self.drained.set()

    async def run(self) -> None:
        """The writer task: sends what gathers until `end` (or the peer is gone)."""
        try:
            while True:
                await self.wake.wait()
                self.wake = trio.Event()
                if not self.sending:  # else the task sending now takes what was queued
                    await self._send_queued(now=True)
                if self.broken or (self.ending and not self.parts and not self.sending):
                    return
        finally:
            self.done.set()

    async def _send_queued(self, *, now: bool = False) -> None:
        """Write the head and the queued parts until none is left (one task at a time). `now`
        (the writer): each write is first tried without waiting (`write_now`), and what the
        socket takes at once needs no pass through the scheduler after it (the writer's next
        wait is one); the rest is written as a flush writes it."""
        self.sending = True
        try:
            while self.head or self.parts:
                parts: list[Any] = [self.head] if self.head else []
                self.head = b""
                if self.parts:
                    batch, self.writing = self.parts, self.size
                    self.parts, self.size = [], 0
                    parts += self._frame(batch, self.writing)
                data = parts[0] if len(parts) == 1 else b"".join(parts)
                await self._write_whole(data, now=now)
                self.writes += 1
                self.writing = 0
        except self._broken_by:
            self.broken = True
            self.parts, self.size = [], 0
            self._on_broken()
        finally:
            self.sending = False
            self.writing = 0
            if self.ending or self.broken:
                self.wake.set()  # the writer may be waiting for this write to end
        self.drained.set()

    async def _write_whole(self, data: bytes, *, now: bool) -> None:
        """Write all of `data` (taken from the queue). With a write that cannot wait, what was
        written is known at every wait, so a task cancelled in the middle (a response cancelled
        while it flushes) leaves the rest first in line for the writer: the peer's stream has
        no gap and no torn frame. Without one, a cancelled write breaks the outbox (what the
        peer got is unknown). `now` (the writer) ends without a checkpoint, a flush with one."""
        write_now, writable = self._write_now, self._writable
        if write_now is None or writable is None:
            try:
                await self._write(data)
            except trio.Cancelled:
                self.broken = True
                self.parts, self.size = [], 0
                self._on_broken()
                raise
            return
        view, written = memoryview(data), 0
        try:
            if not now:
                await trio.lowlevel.checkpoint_if_cancelled()
            written = write_now(view)
            while written < len(data):
                await writable()
                written += write_now(view[written:])
        except trio.Cancelled:
            self.head = bytes(view[written:]) + self.head
            self.wake.set()  # the writer sends it
            raise
        if not now:
            await trio.lowlevel.cancel_shielded_checkpoint()


__all__ = ["Outbox"]
