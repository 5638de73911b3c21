# Per-response event logs in the shared store (rollout.store.shared; `--store redis://`), so that
# `GET /v1/responses/{id}?stream=true&starting_after=N` resumes a stream from any worker, as the
# real API resumes background streams: every event of a stored response goes into its log (in
# Redis, a stream: sequence number, type, the wire JSON) through the worker's ordered Writer,
# and its terminal event only after the log holds everything before it. A logged response
# outlives its client's connection (to its end), as a background response does. A reader follows
# the log until the terminal event, or until the worker writing it is gone (then an error event
# ends it).
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from protocol import codec
from protocol.deltas import DeltaRun
from protocol.events import ErrorEvent, ErrorPayload, Event
from rollout.engine.engine import Prepared
from rollout.engine.loop import Disconnected, PassOn, Sink, emit_each
from rollout.service.writer import Writer
from rollout.store.base import StoredResponse
from rollout.store.shared import LogEvent, LogMeta, SharedStore

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
TTL_MS = 3600 * 1000  # a log lives this long after its last event
PAGE = 500  # entries read per round trip
BLOCK_MS = 500  # a reader waits this long for new entries before it checks the writer

EmitEncoded = Callable[[bytes, bytes], Awaitable[None]]  # (event type, wire JSON)


@attrs.define(eq=False)
class LogSink(PassOn):
    """Logs each event, then passes it on; the terminal event waits for the log to hold all."""

    log: EventLog
    response_id: str
    gone: bool = False  # the client left: the response runs on for the log (and a resume)

    async def emit(self, event: Event) -> None:
        payload = codec.encode_sse_event(event)  # the log is read back as SSE (`follow`)
        seq = event.sequence_number if event.sequence_number is not None else -1
        fields = {"s": str(seq).encode(), "y": event.type.encode(), "e": payload}
        terminal = event.type in TERMINAL
        self.log.writer.send(LogEvent(self.response_id, fields, TTL_MS if terminal else None))
        if terminal:
            await self.log.writer.barrier()
        if self.gone:
            return
        try:
            await self.inner.emit(event)
        except Disconnected:
            # As the real API's background responses: the response goes on to its end, so that
            # its stream can be resumed (GET ...?stream=true&starting_after=N) from any worker.
            self.gone = True

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        await emit_each(self, run)


@attrs.define(eq=False)
class EventLog:
    store: SharedStore
    writer: Writer
    worker_id: str
    alive: Callable[[str], Awaitable[bool]]  # is this worker still running?

    def sink(self, prepared: Prepared, inner: Sink) -> Sink:
        """`inner`, with the response's events logged as they pass."""
        rid = prepared.rollout.stream.response.id
        meta = {"worker": self.worker_id.encode(), "owner": self.store.owner_field(prepared.owner)}
        self.writer.send(LogMeta(rid, meta, TTL_MS))
        return LogSink(inner, self, rid)

    async def visible(
        self, response_id: str, owner: str | None, record: StoredResponse | None
    ) -> str | None:
        """The worker that writes the response's log, if there is a log `owner` may read (a
        stored record, when there is one, already passed the owner check)."""
        meta = await self.store.log_meta(response_id)
        if not meta:
            return None
        if record is None and not self.store.owned(meta.get(b"owner"), owner):
            return None
        return meta.get(b"worker", b"").decode()

    async def follow(self, response_id: str, worker: str, after: int, emit: EmitEncoded) -> None:
        """Emit the logged events after sequence number `after` up to the terminal event,
        waiting for those not written yet; an error event if the writer is gone first."""
        last: str | None = None  # the position of the last entry read
        seq = after  # the highest sequence number logged (or asked past)
        while True:
            entries = await self.store.read_log(response_id, last, PAGE, BLOCK_MS)
            for position, fields in entries:
                last = position
                n = int(fields[b"s"])
                seq = max(seq, n)
                if n > after:
                    await emit(fields[b"y"], fields[b"e"])
                if fields[b"y"].decode() in TERMINAL:
                    return
            if not entries and not await self.alive(worker):
                await emit(b"error", codec.encode_sse_event(writer_lost(response_id, seq + 1)))
                return


def writer_lost(response_id: str, sequence_number: int) -> ErrorEvent:
    """The error that ends a followed log whose writer is gone: the next event of its stream
    (an SSE `error` event carries its sequence number, spec §2.5)."""
    return ErrorEvent(
        sequence_number=sequence_number,
        error=ErrorPayload(
            type="server_error",
            code="rollout_owner_lost",
            message=f"The worker that ran response {response_id!r} stopped before its end; "
            "the stream cannot be resumed past this point.",
            param=None,
        ),
    )


__all__ = ["EventLog", "LogSink"]
