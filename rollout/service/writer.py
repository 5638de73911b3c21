# The one ordered path from a worker to Redis for writes that must not wait on the event loop's
# hot path: event-log entries, relayed events, lease updates. Callers queue commands without
# awaiting; one task sends whatever is queued as one pipeline (one round trip for many
# commands), in order; `barrier()` waits until everything queued before it has been written.
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import attrs
import coredis
import trio

log = logging.getLogger("rollout.service.writer")
BATCH = 512  # commands per pipeline, at most

#: A queued command: (name, args, called with its result or None when it failed).
Op = tuple[str, tuple[Any, ...], Callable[[Any], None] | None]


@attrs.define(eq=False)
class Writer:
    client: Callable[[], coredis.Redis[bytes]]
    _send: trio.MemorySendChannel[Op | trio.Event] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[Op | trio.Event] = attrs.field(init=False)
    written: int = 0  # commands written (for tests and metrics)

    def __attrs_post_init__(self) -> None:
        # Unbounded in count; what is queued is bounded by its producers (a rollout's events are
        # bounded by its sink's own backpressure, relayed events by the relaying connection).
        self._send, self._receive = trio.open_memory_channel(math.inf)

    def send(self, name: str, *args: Any, then: Callable[[Any], None] | None = None) -> None:
        self._send.send_nowait((name, args, then))

    async def barrier(self) -> None:
        """Wait until every command queued so far is written."""
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
                # Shielded: a pipeline cut halfway would leave its connection in doubt.
                with trio.CancelScope(shield=True):
                    async with self.client().pipeline(transaction=False) as pipe:
                        requests = [getattr(pipe, name)(*args) for name, args, _ in ops]
                    results = [await r for r in requests]
                self.written += len(ops)
            except coredis.exceptions.RedisError as exc:
                log.error("writing %d commands to Redis failed: %s", len(ops), exc)
        for (_, _, then), result in zip(ops, results, strict=True):
            if then is not None:
                then(result)
        for op in batch:
            if isinstance(op, trio.Event):
                op.set()


__all__ = ["Writer"]
