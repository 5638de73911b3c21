# The one ordered path from a worker to the shared store for writes that must not wait on the
# event loop's hot path: event-log entries, relayed events, live records. Callers queue writes
# (rollout.store.shared's `Write` values) without awaiting; one task sends whatever is queued
# as one batch (one round trip for many writes), in order; `barrier()` waits until everything
# queued before it has been written (or failed to be). A batch that cannot reach the store is
# dropped (its callbacks get None): while the store is down a stream goes on, only its log is
# cut; the outage is logged once, through the cluster's Link (rollout.service.outage).
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import attrs
import trio

from rollout.service.outage import Link
from rollout.store.shared import SharedStore, Write, WriteFailed

log = logging.getLogger("rollout.service.writer")
BATCH = 512  # writes per batch, at most

#: A queued write, and what is called with its result (None when it failed).
Op = tuple[Write, Callable[[Any], None] | None]


@attrs.define(eq=False)
class Writer:
    store: SharedStore
    link: Link | None = None  # where a failed batch is reported (else it is logged)
    _send: trio.MemorySendChannel[Op | trio.Event] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[Op | trio.Event] = attrs.field(init=False)
    written: int = 0  # writes made (for tests and metrics)
    dropped: int = 0  # and writes that could not reach the store

    def __attrs_post_init__(self) -> None:
        # Unbounded in count; what is queued is bounded by its producers (a rollout's events are
        # bounded by its sink's own backpressure, relayed events by the relaying connection).
        self._send, self._receive = trio.open_memory_channel(math.inf)

    def send(self, write: Write, *, then: Callable[[Any], None] | None = None) -> None:
        self._send.send_nowait((write, then))

    async def barrier(self) -> None:
        """Wait until every write queued so far is made."""
        done = trio.Event()
        self._send.send_nowait(done)
        await done.wait()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for first in self._receive:
            batch: list[Op | trio.Event] = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self._receive.receive_nowait())
                except trio.WouldBlock:
                    break
            await self._write(batch)

    async def _write(self, batch: list[Op | trio.Event]) -> None:
        ops = [op for op in batch if not isinstance(op, trio.Event)]
        results: list[Any] = [None] * len(ops)
        if ops:
            try:
                results = await self.store.write([write for write, _ in ops])  # (not cut short)
                self.written += len(ops)
            except WriteFailed as exc:
                if self.link is not None:
                    self.link.failed(f"writing {len(ops)} commands", exc)
                else:
                    log.error("writing %d commands to the shared store failed: %s", len(ops), exc)
                self.dropped += len(ops)
        for (_, then), result in zip(ops, results, strict=True):
            if then is not None:
                then(result)
        for op in batch:
            if isinstance(op, trio.Event):
                op.set()


__all__ = ["Writer"]
