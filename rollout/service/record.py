# Recording, and the format of a recording: `rollout serve --record DIR` (or
# `serve(..., record=DIR)`, or `ServerThread(..., record=DIR)`) writes every connection's traffic to
# `DIR/conn-<N>-<transport>.jsonl`, one JSON object per line, in the order it happened on that
# connection:
#
#   {"dir": "in"|"out", "t": seconds since the connection opened, "n": order across every
#    connection of the process, "transport": "http"|"ws", "conn": N, ...payload}
#
# payload, by transport and direction:
#   ws   in    "frame": the text frame, parsed ("text" instead when it is not JSON; a binary
#              frame has "binary": the frame base64-encoded)
#   ws   out   "event": every event sent, as sent (with `stream_id` on a named lane; request
#              errors are `error` events too)
#   http in    "method", "path", "query" (when there is one, as {name: [values]}), "body" (the
#              parsed JSON body, null when empty; "text" instead when it is not JSON), and
#              "content_type" when the request had one
#   http out   "status" and "body" (a JSON reply), or "status" and "stream": true (an SSE stream
#              starts) followed by one "event" line per SSE event
#
# Each line reaches the file as it happens, also while its connection stays open: an `out` line
# is queued just before the event is sent (so it precedes the client's reaction in `n`; a send
# that then fails leaves its line) and written a worker-thread round trip later (how, without
# stalling the event loop on a slow disk: `Recorder`). A recording replays two ways: its model
# (`rollout.model.recorded.script_from_recording`, `rollout serve --script DIR`) and its client
# side (`rollout.client.replay.replay_session`). GET /metrics replies, the WebSocket handshake
# and frames refused as too large are not recorded.
from __future__ import annotations

import base64
import contextlib
import itertools
import logging
import time
from collections.abc import Mapping
from io import FileIO
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

log = logging.getLogger("rollout")

_ORDER = itertools.count()  # "n": orders lines across the connections (and files) of a process


MAX_PENDING = 1024  # lines queued for the writer before recording waits (a slow disk pushes back)


@attrs.frozen
class HttpIn:
    """An HTTP request as the taps see it (and a recording holds it)."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    body: bytes
    content_type: str | None


class Recorder:
    """The lines of one connection, each written to its file as it happens.

    How a line reaches the disk at once without stalling the event loop: recording queues the
    line (bytes built by concatenation: the event's JSON is spliced in as encoded, never
    re-parsed) and wakes the recorder's writer task, which writes everything queued in one
    worker-thread call (`trio.to_thread.run_sync`) and goes on while lines keep coming. A line
    is in the file one worker-thread round trip after it was recorded; a slow disk makes the
    batches bigger, never the loop slower; past `max_pending` queued lines, recording waits for
    the disk (backpressure). The taps start the writer in the server's nursery (which outlives
    each connection; rollout.service.taps); `aclose` stops and joins it. Without
    a writer (none was started, or it was cancelled) each recording task writes its own line
    from a worker thread and waits for it, one write in flight at a time. The file is
    unbuffered: each write goes to the operating system, so a reader sees every line written.

    Nothing is lost on close or cancellation: a line is queued before anything can be
    cancelled, writes are shielded, a cancelled writer writes what is queued before it stops,
    `aclose` writes what remains (also when cancelled, e.g. at server shutdown), and a line
    after close is written at once, synchronously (rare). A file is created (truncated) by its
    first write: a connection that recorded nothing (an HTTP connection upgraded to a
    WebSocket) leaves no file. If writing fails (a full disk, a path that is not a directory)
    the error is logged once and this connection stops recording; the connection goes on.
    """

    def __init__(
        self, path: Path, transport: str, connection: int, max_pending: int = MAX_PENDING
    ) -> None:
        self.path = path
        self.transport = transport
        self.connection = connection
        self.max_pending = max_pending
        self.opened = time.perf_counter()
        self.closed = False
        self.failed: str | None = None  # why recording stopped, if a write failed
        self.lines = 0  # lines recorded (queued) so far
        self.written = 0  # lines written so far (or dropped after a failure)
        self._tag = b'"transport":"%s","conn":%d' % (transport.encode(), connection)
        self._pending: list[bytes] = []
        self._writer = False  # the writer task is running
        self._writing = False  # a write is in flight (one at a time)
        self._closing = False
        self._changed = trio.Event()  # set (and replaced) when a line is queued or written
        self._stopped = trio.Event()  # the writer task has ended
        self._file: FileIO | None = None  # open (unbuffered) from the first write to close
        self._created = False

    def start(self, nursery: trio.Nursery) -> bool:
        """Run the writer task in `nursery` (until `aclose`); False if the nursery is closed
        (then each recording task writes its own line)."""
        try:
            nursery.start_soon(self._write_as_queued)
        except RuntimeError:  # "Nursery is closed to new arrivals": a server that has stopped
            return False
        self._writer = True
        return True

    # -- what is recorded -----------------------------------------------------------------------

    async def http_request(self, request: HttpIn) -> None:
        fields: dict[str, Any] = {"method": request.method, "path": request.path}
        if request.query:
            fields["query"] = dict(request.query)
        fields.update(_json_or_text("body", request.body))
        if request.content_type is not None:
            fields["content_type"] = request.content_type
        await self._add(b"in", orjson.dumps(fields)[1:-1])

    async def ws_frame(self, message: str | bytes) -> None:
        if isinstance(message, bytes):
            fields = {"binary": base64.b64encode(message).decode()}
        else:
            fields = _json_or_text("frame", message)
        await self._add(b"in", orjson.dumps(fields)[1:-1])

    async def event(self, data: bytes) -> None:
        """An event as encoded for the wire (one JSON object)."""
        await self._add(b"out", b'"event":' + data)

    async def status(self, status: int, body: bytes | None = None) -> None:
        """An HTTP reply: its JSON body, or (None) the start of an SSE stream."""
        if body is None:
            await self._add(b"out", b'"status":%d,"stream":true' % status)
        else:
            await self._add(b"out", b'"status":%d,"body":' % status + (body or b"null"))

    # -- writing --------------------------------------------------------------------------------

    async def _add(self, direction: bytes, fields: bytes) -> None:
        line = b'{"dir":"%s","t":%.6f,"n":%d,%s,%s}\n' % (
            direction,
            time.perf_counter() - self.opened,
            next(_ORDER),
            self._tag,
            fields,
        )
        self.lines += 1
        if self.failed is not None:
            self.written += 1
            return
        self._pending.append(line)
        if self.closed:  # a straggler after close (rare): write it at once
            self._write_now()
            return
        self._notify()
        mine = self.lines
        while True:
            # The writer takes the line: wait only while too many are queued.
            done = len(self._pending) <= self.max_pending if self._writer else self.written >= mine
            if done:
                return
            if self._writer or self._writing:
                await self._changed.wait()
            else:
                await self._write_pending()

    async def _write_as_queued(self) -> None:
        """The writer task: every queued line, as soon as it is queued, until closed."""
        try:
            while self._pending or not self._closing:
                if self._pending and not self._writing:
                    await self._write_pending()
                else:
                    await self._changed.wait()
        finally:
            self._writer = False
            with trio.CancelScope(shield=True):  # cancelled (server shutdown): write the rest
                if self._pending and not self._writing:
                    await self._write_pending()
            self._stopped.set()
            self._notify()

    async def _write_pending(self) -> None:
        """Write what is queued, and what is queued meanwhile, from a worker thread."""
        self._writing = True
        try:
            with trio.CancelScope(shield=True):
                while self._pending:
                    chunk, count = b"".join(self._pending), len(self._pending)
                    self._pending.clear()
                    try:
                        await trio.to_thread.run_sync(self._write, chunk)
                    except OSError as exc:
                        self._fail(exc)
                    self.written += count
                    self._notify()
        finally:
            self._writing = False
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _write(self, chunk: bytes) -> None:
        if self._file is None:
            if not self._created:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab" if self._created else "wb", buffering=0)
            self._created = True
        view = memoryview(chunk)
        while view:
            view = view[self._file.write(view) :]

    def _write_now(self) -> None:
        chunk, count = b"".join(self._pending), len(self._pending)
        self._pending.clear()
        try:
            self._write(chunk)
        except OSError as exc:
            self._fail(exc)
        finally:
            self.written += count
            self._close_file()

    def _fail(self, exc: OSError) -> None:
        self.failed = f"{type(exc).__name__}: {exc}"
        log.error("recording to %s stopped: %s", self.path, self.failed)
        self.written += len(self._pending)
        self._pending.clear()
        self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    async def aclose(self) -> None:
        """Write every remaining line, stop the writer and close the file; later lines (if
        any) are written synchronously."""
        with trio.CancelScope(shield=True):
            self._closing = True
            self._notify()
            if self._writer:
                await self._stopped.wait()
            while self._writing:
                await self._changed.wait()
            if self._pending:
                await self._write_pending()
            self.closed = True
            self._close_file()


def _json_or_text(key: str, data: bytes | str) -> dict[str, Any]:
    if not data:
        return {key: None}
    try:
        return {key: orjson.loads(data)}
    except orjson.JSONDecodeError:
        return {"text": data.decode("utf-8", "replace") if isinstance(data, bytes) else data}
