# Per-connection taps: what a test rig or an operator asked to see of the traffic. Capture (every
# request and frame, parsed, for assertions), the recorder (JSONL files for replay), and the
# counters of events sent and errors returned, in one place for every transport, so HTTP and
# WebSocket cannot drift apart. A Taps does no framing: transports hand it what they send.
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from protocol.errors import ProtocolError
from rollout.conversation.work import Stats
from rollout.service.capture import Captured, parse
from rollout.service.record import HttpIn, Recorder


@attrs.define(eq=False)
class Taps:
    transport: str  # "http" or "ws"
    number: int  # the connection's number (from 1, in accept order)
    stats: Stats
    captured: list[Captured] | None = None
    recorder: Recorder | None = None

    @property
    def watching(self) -> bool:
        """Frames and requests are captured or recorded (else `frame` and `request` are no-ops)."""
        return self.captured is not None or self.recorder is not None

    # -- in -------------------------------------------------------------------------------------

    async def request(self, request: HttpIn) -> None:
        if self.captured is not None:
            what = f"{request.method} {request.path}"
            self.captured.append(Captured("http", what, parse(request.body), self.number))
        if self.recorder is not None:
            await self.recorder.http_request(request)

    async def frame(self, message: str | bytes) -> None:
        if self.captured is not None:
            body = parse(message) if isinstance(message, str) else None
            label = "binary" if isinstance(message, bytes) else "text"
            if isinstance(body, dict) and isinstance(body.get("type"), str):
                label = body["type"]
            self.captured.append(Captured("ws", label, body, self.number))
        if self.recorder is not None:
            await self.recorder.ws_frame(message)

    # -- out ------------------------------------------------------------------------------------

    async def event(self, data: bytes) -> None:
        """An event about to be sent, as encoded for the wire."""
        if self.recorder is not None:
            await self.recorder.event(data)

    async def events(self, run: Callable[[], list[bytes]]) -> None:
        """A run of events about to be sent: `run` encodes them one by one, if anyone looks."""
        if self.recorder is not None:
            for data in run():
                await self.recorder.event(data)

    def sent(self, n: int = 1) -> None:
        self.stats.events_sent += n

    async def error(self, exc: ProtocolError, frame: bytes | None = None) -> None:
        """A refused request: counted by code; over WebSocket, recorded as its error event."""
        self.refused(exc)
        if frame is not None and self.recorder is not None:
            await self.recorder.event(frame)

    def refused(self, exc: ProtocolError) -> None:
        """A refused request, counted by code (over HTTP, its reply is recorded by `status`)."""
        self.stats.error(exc.code)

    async def status(self, status: int, body: bytes | None = None) -> None:
        """An HTTP reply: its JSON body, or (None) the start of an SSE stream."""
        if self.recorder is not None:
            await self.recorder.status(status, body)

    async def aclose(self) -> None:
        if self.recorder is not None:
            await self.recorder.aclose()


@attrs.define(eq=False)
class TapConfig:
    """What every connection of a server taps: capture into a list, record into a directory."""

    captured: list[Captured] | None = None
    record_dir: Path | None = None
    connections: int = 0  # connections accepted so far (numbers them)
    nursery: trio.Nursery | None = None  # where recorders' writer tasks run (the server's own)

    def number(self) -> int:
        """A new connection's number."""
        self.connections += 1
        return self.connections

    def open(self, transport: str, number: int, stats: Stats) -> Taps:
        """The taps of connection `number` (an HTTP connection upgraded to a WebSocket keeps its
        number; a recorder's file is created by its first line)."""
        n = number
        recorder = None
        if self.record_dir is not None:
            path = Path(self.record_dir) / f"conn-{n}-{transport}.jsonl"
            recorder = Recorder(path, transport, n)
            if self.nursery is not None:
                recorder.start(self.nursery)
        return Taps(transport, n, stats, self.captured, recorder)
