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
# An `out` line is recorded just before it is sent, so it precedes the client's reaction in `n`
# (a send that then fails leaves its line). A recording replays two ways: its model
# (`rollout.model.recorded.script_from_recording`, `rollout serve --script DIR`) and its client
# side (`rollout.client.replay.replay_session`). GET /metrics replies, the
# WebSocket handshake and frames refused as too large are not recorded.
from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import trio

# Buffered lines are written out (in a worker thread) once this much is pending, or when a line
# comes in more than FLUSH_SECONDS after the last write, and always when the connection closes.
FLUSH_BYTES = 64 * 1024
FLUSH_SECONDS = 1.0

_ORDER = itertools.count()  # "n": orders lines across the connections (and files) of a process

# -- recording ----------------------------------------------------------------------------------


class Recorder:
    """The lines of one connection, buffered in memory and written to its file.

    Why buffer and write in a worker thread: a line is recorded for every event (each text delta)
    inside the server's send path, so it must cost about as little as the send itself. Recording
    is a list append of bytes built by concatenation (the event's JSON is spliced in as encoded,
    never re-parsed); the file is written in chunks of FLUSH_BYTES with
    `trio.to_thread.run_sync`, so a slow disk never stalls the event loop, only (briefly) the
    task whose line filled the buffer, while others keep buffering. Each flush is shielded from
    cancellation and the last one runs on close (also under cancellation, e.g. server shutdown),
    so no line is lost. A file is created (truncated) by its first write: a connection that
    recorded nothing (an HTTP connection upgraded to a WebSocket) leaves no file.
    """

    def __init__(self, path: Path, transport: str, connection: int) -> None:
        self.path = path
        self.transport = transport
        self.connection = connection
        self.opened = time.perf_counter()
        self.closed = False
        self.lines = 0
        self._tag = b'"transport":"%s","conn":%d' % (transport.encode(), connection)
        self._buffer: list[bytes] = []
        self._size = 0
        self._last_write = self.opened
        self._flushing = False
        self._flushed = trio.Event()
        self._created = False

    # -- what is recorded -----------------------------------------------------------------------

    async def http_request(
        self,
        method: str,
        path: str,
        query: Mapping[str, list[str]],
        body: bytes,
        content_type: str | None,
    ) -> None:
        fields: dict[str, Any] = {"method": method, "path": path}
        if query:
            fields["query"] = dict(query)
        fields.update(_json_or_text("body", body))
        if content_type is not None:
            fields["content_type"] = content_type
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

    # -- buffering and writing ------------------------------------------------------------------

    async def _add(self, direction: bytes, fields: bytes) -> None:
        now = time.perf_counter()
        line = b'{"dir":"%s","t":%.6f,"n":%d,%s,%s}\n' % (
            direction,
            now - self.opened,
            next(_ORDER),
            self._tag,
            fields,
        )
        self._buffer.append(line)
        self._size += len(line)
        self.lines += 1
        if self.closed:  # a straggler after close (rare): write it at once
            self._write(self._take())
            return
        if not self._flushing and (
            self._size >= FLUSH_BYTES or now - self._last_write >= FLUSH_SECONDS
        ):
            await self._flush()

    def _take(self) -> bytes:
        chunk = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        return chunk

    def _write(self, chunk: bytes) -> None:
        if not chunk:
            return
        if not self._created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab" if self._created else "wb") as f:
            f.write(chunk)
        self._created = True

    async def _flush(self) -> None:
        """Write what is buffered (and what arrives meanwhile) from a worker thread."""
        self._flushing = True
        self._flushed = trio.Event()
        try:
            with trio.CancelScope(shield=True):
                while self._buffer:
                    await trio.to_thread.run_sync(self._write, self._take())
        finally:
            self._last_write = time.perf_counter()
            self._flushing = False
            self._flushed.set()

    async def aclose(self) -> None:
        """Write every remaining line; later lines (if any) are written synchronously."""
        with trio.CancelScope(shield=True):
            while self._flushing:
                await self._flushed.wait()
            if self._buffer:
                await self._flush()
            self.closed = True


def _json_or_text(key: str, data: bytes | str) -> dict[str, Any]:
    if not data:
        return {key: None}
    try:
        return {key: orjson.loads(data)}
    except orjson.JSONDecodeError:
        return {"text": data.decode("utf-8", "replace") if isinstance(data, bytes) else data}
