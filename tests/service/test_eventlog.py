# The event logs of stored responses (rollout.service.eventlog) hold and replay what an SSE stream
# sends: an `error` event in the flat SSE form (spec §2.5), logged or made when the worker writing
# the log is gone, which the official SDK parses as its ResponseErrorEvent.
from __future__ import annotations

from typing import Any, cast

import attrs
import orjson
from openai.types.responses import ResponseErrorEvent

from protocol import codec
from protocol.events import ErrorEvent, Event
from protocol.response import Response
from protocol.stream import ResponseStream
from rollout.service.eventlog import EventLogs, Log, LogSink, RemoteLog, SharedLogs
from rollout.service.writer import Writer
from rollout.store.shared import LogEvent, SharedStore


@attrs.define
class FakeWriter:
    sent: list[Any] = attrs.Factory(list)

    def send(self, write: Any, then: Any = None) -> None:
        self.sent.append(write)

    async def barrier(self) -> None:
        pass


@attrs.define
class Inner:
    events: list[Event] = attrs.Factory(list)

    async def emit(self, event: Event) -> None:
        self.events.append(event)


@attrs.define
class FakeLogStore:
    """A log of entries (position, fields), read once: then nothing more ever comes."""

    entries: list[tuple[str, dict[bytes, bytes]]]
    read: bool = False

    async def read_log(
        self, response_id: str, after: str | None, count: int, block_ms: int
    ) -> list[tuple[str, dict[bytes, bytes]]]:
        if self.read:
            return []
        self.read = True
        return self.entries


def failing_events() -> list[Event]:
    s = ResponseStream(Response(id="resp_1", created_at=100, model="m"))
    return [*s.start(), *s.fail("server_error", "The model failed to generate a response.")]


async def test_a_logged_error_event_is_the_flat_sse_form() -> None:
    writer = FakeWriter()
    shared = SharedLogs(cast(SharedStore, None), cast(Writer, writer), "w1", cast(Any, None))
    logs = EventLogs(shared)
    inner = Inner()
    log = logs.live["resp_1"] = Log("resp_1")
    sink = LogSink(cast(Any, inner), logs, log)
    events = failing_events()
    for event in events:
        await sink.emit(event)
    assert inner.events == events  # the client's own transport gets the event itself
    logged = [w.fields for w in writer.sent if isinstance(w, LogEvent)]
    [error] = [f for f in logged if f["y"] == b"error"]
    data = orjson.loads(error["e"])
    assert "error" not in data
    parsed = ResponseErrorEvent.model_validate(data)
    assert parsed.code == "server_error" and parsed.sequence_number == 2
    assert "resp_1" not in logs.live and log.ended  # its readers stop at the terminal event
    [(_, _kind, payload)] = [e for e in log.events if e[1] == b"error"]
    assert payload == error["e"]  # this process's log holds the same bytes


async def test_a_followed_log_whose_writer_is_gone_ends_with_a_flat_error() -> None:
    events = failing_events()[:2]  # created, in_progress: the worker died after these
    entries = [
        (f"{i}-0", {b"s": b"%d" % e.sequence_number, b"y": e.type.encode(), b"e": b"{}"})
        for i, e in enumerate(events)
        if e.sequence_number is not None
    ]

    async def alive(worker: str) -> bool:
        return False

    shared = SharedLogs(
        cast(SharedStore, FakeLogStore(entries)), cast(Writer, FakeWriter()), "w2", alive
    )
    log = RemoteLog(shared, "resp_1", "w1")
    got: list[tuple[bytes, bytes]] = []

    async def emit(kind: bytes, payload: bytes) -> None:
        got.append((kind, payload))

    await log.follow(0, emit)
    assert [k for k, _ in got] == [b"response.in_progress", b"error"]
    parsed = ResponseErrorEvent.model_validate(orjson.loads(got[-1][1]))
    assert parsed.code == "rollout_owner_lost"
    assert parsed.sequence_number == 2  # the next after the last event logged
    assert parsed.message.startswith("The worker that ran response 'resp_1' stopped")
    back = codec.decode_event(got[-1][1])  # rollout's own client reads it back
    assert isinstance(back, ErrorEvent) and back.error.code == "rollout_owner_lost"
