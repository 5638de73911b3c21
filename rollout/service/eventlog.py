# Per-response event logs, so that `GET /v1/responses/{id}?stream=true&starting_after=N` gives a
# stored response's live events, exactly (the same events, deltas and sequence numbers), as the
# real API resumes background streams. Every stored streaming response, and every background
# one, has one: its events go into a Log in this process as they pass (bounded: LOG_BYTES), which
# readers here follow until its terminal event; where the log goes beyond this process is its
# backend: the store keeps an ended response's log with it (StoreLogs: memory, SQLite), or, with
# a store that many workers share, every event goes to the shared log as it happens (SharedLogs:
# a Redis stream written through the worker's ordered Writer), which a reader on another worker
# follows until the terminal event, or until the worker writing it is gone (then an error event
# ends it). The terminal event leaves only after the backend holds everything before it.
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import trio

from protocol import codec
from protocol.deltas import DeltaRun, encode_run
from protocol.errors import ProtocolError
from protocol.events import ErrorEvent, ErrorPayload, Event
from rollout.engine.engine import Prepared
from rollout.engine.loop import PassOn, Sink
from rollout.service.writer import Writer
from rollout.store.base import Logged, LogStore, StoredResponse, StoreError
from rollout.store.shared import LogEvent, LogMeta, SharedStore

logger = logging.getLogger("rollout.service.eventlog")
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
LOG_BYTES = 32 * 1024 * 1024  # of wire JSON one response's log keeps; later events are left out
TTL_MS = 3600 * 1000  # a shared log lives this long after its last event
PAGE = 500  # shared-log entries read per round trip
BLOCK_MS = 500  # a reader waits this long for new entries before it checks the writer

EmitEncoded = Callable[[bytes, bytes], Awaitable[None]]  # (event type, wire JSON)


class Source(Protocol):
    """A response's logged events, as a reader follows them."""

    async def follow(self, after: int, emit: EmitEncoded) -> None:
        """Emit the events after sequence number `after` up to the terminal event (waiting for
        those not written yet), or an error event where the log ends short of it."""
        ...


@attrs.define(eq=False)
class Log:
    """One response's events in this process: as they happen, or as a store kept them."""

    response_id: str
    owner: str | None = None
    events: list[Logged] = attrs.field(factory=list)
    complete: bool = True  # False once an event was left out (past LOG_BYTES)
    ended: bool = False
    size: int = 0
    grew: trio.Event = attrs.field(factory=trio.Event)

    def add(self, event: Logged) -> bool:
        """Keep `event` (False: the log is full, and it was left out)."""
        if not self.complete or self.size + len(event[2]) > LOG_BYTES:
            self.complete = False
            return False
        self.events.append(event)
        self.size += len(event[2])
        self._wake()
        return True

    def extend(self, events: list[Logged]) -> int:
        """Keep `events` (how many: those past LOG_BYTES are left out)."""
        size = sum(len(e[2]) for e in events)
        if self.complete and self.size + size <= LOG_BYTES:
            self.events.extend(events)
            self.size += size
            self._wake()
            return len(events)
        return sum(1 for event in events if self.add(event))

    def end(self) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        self.grew.set()
        self.grew = trio.Event()

    async def follow(self, after: int, emit: EmitEncoded) -> None:
        i = 0
        past = after < 0  # at or past the cursor: an event without a number follows it
        while True:
            while i < len(self.events):
                seq, kind, payload = self.events[i]
                i += 1
                if seq >= 0:
                    past, due = seq >= after, seq > after
                else:
                    due = past
                if due:
                    await emit(kind, payload)
            if self.ended:
                if not self.complete:
                    last = max((e[0] for e in self.events), default=after)
                    cut = log_cut(self.response_id, max(last, after) + 1)
                    await emit(b"error", codec.encode_sse_event(cut))
                return
            await self.grew.wait()


class Backend(Protocol):
    """Where a response's log goes beyond this process."""

    def begin(self, prepared: Prepared) -> None: ...
    def add(self, response_id: str, event: Logged, terminal: bool) -> None: ...
    async def end(self, log: Log) -> None:
        """Before the terminal event goes on: the backend holds the whole log."""
        ...

    async def find(
        self, response_id: str, owner: str | None, record: StoredResponse | None
    ) -> Source | None:
        """The log of a response not running in this process, if `owner` may read it (a
        stored record, when there is one, already passed the owner check)."""
        ...


@attrs.define(eq=False)
class LogSink(PassOn):
    """Logs each event, then passes it on; the terminal event waits for the backend to hold
    all. A client gone (Disconnected from `inner`) stops the response as ever; a background
    response's `inner` has no client."""

    logs: EventLogs
    log: Log
    prepared: Prepared | None = None  # (whose end, if it could not be stored, keeps no log)

    async def emit(self, event: Event) -> None:
        payload = codec.encode_sse_event(event)  # the log is read back as SSE (`follow`)
        seq = event.sequence_number if event.sequence_number is not None else -1
        terminal = event.type in TERMINAL
        keep = self.prepared is None or self.prepared.unstored is None
        await self.logs.add(self.log, (seq, event.type.encode(), payload), terminal, keep)
        await self.inner.emit(event)

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        """A run of deltas stays a run on its way on; the log gets each one's JSON from the
        run's template (deltas are never terminal, and are the same in both framings)."""
        kind, n = run.type.encode(), run.sequence_number
        self.logs.extend(self.log, [(n + i, kind, e) for i, e in enumerate(encode_run(run))])
        await self.inner.emit_run(run)


@attrs.define(eq=False)
class EventLogs:
    """The service's event logs: those of responses running here, and their backend (None: a
    store that keeps none; a replay is then rebuilt from the final state)."""

    backend: Backend | None
    live: dict[str, Log] = attrs.field(factory=dict)

    def sink(self, prepared: Prepared, inner: Sink) -> Sink:
        """`inner`, with the response's events logged as they pass."""
        rid = prepared.rollout.stream.response.id
        log = self.live[rid] = Log(rid, prepared.owner)
        if self.backend is not None:
            self.backend.begin(prepared)
        return LogSink(inner, self, log, prepared)

    async def add(self, log: Log, event: Logged, terminal: bool, keep: bool = True) -> None:
        """One event; at the terminal one, the backend keeps the log (unless not `keep`: the
        response itself could not be stored). A store that fails to keep it loses only the log
        (a replay is then rebuilt from the stored response): the terminal event still leaves."""
        if log.add(event) and self.backend is not None:
            self.backend.add(log.response_id, event, terminal)
        if terminal:
            try:
                if self.backend is not None and keep:
                    await self.backend.end(log)
            except ProtocolError as exc:  # (a StoreError was logged by its store)
                if not isinstance(exc, StoreError):
                    logger.warning("event log of %s not kept: %s", log.response_id, exc.message)
            finally:
                self.drop(log.response_id)

    def extend(self, log: Log, events: list[Logged]) -> None:
        """Events that are not terminal, in order."""
        kept = log.extend(events)
        if self.backend is not None:
            for event in events[:kept]:
                self.backend.add(log.response_id, event, False)

    def drop(self, response_id: str) -> None:
        """The response ended (or never will, here): readers of its log stop at its end."""
        log = self.live.pop(response_id, None)
        if log is not None:
            log.end()

    def running(self, response_id: str, owner: str | None) -> Log | None:
        log = self.live.get(response_id)
        return log if log is not None and log.owner == owner else None

    async def find(
        self, response_id: str, owner: str | None, record: StoredResponse | None
    ) -> Source | None:
        """The response's log, if there is one `owner` may read: here, or in the backend."""
        log = self.running(response_id, owner)
        if log is not None:
            return log
        if self.backend is None:
            return None
        return await self.backend.find(response_id, owner, record)


@attrs.define(eq=False)
class StoreLogs:
    """Logs kept by the store with the ended responses (memory, SQLite)."""

    store: LogStore

    def begin(self, prepared: Prepared) -> None:
        del prepared

    def add(self, response_id: str, event: Logged, terminal: bool) -> None:
        del response_id, event, terminal

    async def end(self, log: Log) -> None:
        await self.store.put_log(log.response_id, log.events, log.complete)

    async def find(
        self, response_id: str, owner: str | None, record: StoredResponse | None
    ) -> Source | None:
        del owner
        if record is None:  # (no log outlives its response)
            return None
        kept = await self.store.get_log(response_id)
        if kept is None:
            return None
        return Log(response_id, events=kept[0], complete=kept[1], ended=True)


@attrs.define(eq=False)
class SharedLogs:
    """Logs in the store that many workers share, written as they happen."""

    store: SharedStore
    writer: Writer
    worker_id: str
    alive: Callable[[str], Awaitable[bool]]  # is this worker still running?

    def begin(self, prepared: Prepared) -> None:
        rid = prepared.rollout.stream.response.id
        meta = {"worker": self.worker_id.encode(), "owner": self.store.owner_field(prepared.owner)}
        self.writer.send(LogMeta(rid, meta, TTL_MS))

    def add(self, response_id: str, event: Logged, terminal: bool) -> None:
        seq, kind, payload = event
        fields = {"s": str(seq).encode(), "y": kind, "e": payload}
        self.writer.send(LogEvent(response_id, fields, TTL_MS if terminal else None))

    async def end(self, log: Log) -> None:
        del log
        await self.writer.barrier()

    async def find(
        self, response_id: str, owner: str | None, record: StoredResponse | None
    ) -> Source | None:
        meta = await self.store.log_meta(response_id)
        if not meta:
            return None
        if record is None and not self.store.owned(meta.get(b"owner"), owner):
            return None
        return RemoteLog(self, response_id, meta.get(b"worker", b"").decode())


@attrs.define(eq=False)
class RemoteLog:
    """A shared log, as a worker reads it (whichever worker writes it)."""

    logs: SharedLogs
    response_id: str
    worker: str

    async def follow(self, after: int, emit: EmitEncoded) -> None:
        store, rid = self.logs.store, self.response_id
        last: str | None = None  # the position of the last entry read
        seq = after  # the highest sequence number logged (or asked past)
        while True:
            entries = await store.read_log(rid, last, PAGE, BLOCK_MS)
            for position, fields in entries:
                last = position
                n = int(fields[b"s"])
                seq = max(seq, n)
                if n > after:
                    await emit(fields[b"y"], fields[b"e"])
                if fields[b"y"].decode() in TERMINAL:
                    return
            if not entries and not await self.logs.alive(self.worker):
                await emit(b"error", codec.encode_sse_event(writer_lost(rid, seq + 1)))
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


def log_cut(response_id: str, sequence_number: int) -> ErrorEvent:
    """The error where a log that reached its limit ends (numbered as the next event)."""
    return ErrorEvent(
        sequence_number=sequence_number,
        error=ErrorPayload(
            type="server_error",
            code="event_log_full",
            message=f"The event log of response {response_id!r} reached its limit of "
            f"{LOG_BYTES // (1024 * 1024)} MiB; retrieve the response for its final state.",
            param=None,
        ),
    )


__all__ = ["EventLogs", "Log", "LogSink", "SharedLogs", "Source", "StoreLogs"]
