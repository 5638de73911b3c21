# WebSocket clients of the tests. `JsonWs` (trio-websocket): JSON frames out, every received
# frame kept in order, reads bounded by a liveness timeout. `RawWs` (wsproto on a trio socket):
# what no client library will do: raw or unmasked frames, invalid UTF-8, extension offers,
# dropping the TCP connection without a close frame.
from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import attrs
import orjson
import trio
import wsproto
from trio_websocket import WebSocketConnection, open_websocket_url
from wsproto import events as wse
from wsproto.connection import ConnectionState

from support.events import PAUSE_OR_END
from support.waits import TIMEOUT

Frame = dict[str, Any]


@attrs.define
class JsonWs:
    """A WebSocket connection: JSON frames out, every received frame kept in order."""

    ws: WebSocketConnection
    received: list[Frame] = attrs.field(factory=list)

    async def send(self, frame: Frame) -> None:
        await self.ws.send_message(orjson.dumps(frame).decode())

    async def recv(self, timeout: float = TIMEOUT) -> Frame:
        with trio.fail_after(timeout):
            frame = orjson.loads(await self.ws.get_message())
        self.received.append(frame)
        return frame

    async def until(self, stop: Callable[[Frame], bool], timeout: float = TIMEOUT) -> list[Frame]:
        """Frames up to and including the first one `stop` accepts."""
        out: list[Frame] = []
        with trio.fail_after(timeout):
            while True:
                frame = await self.recv(math.inf)
                out.append(frame)
                if stop(frame):
                    return out

    async def to_pause_or_end(self, timeout: float = TIMEOUT) -> list[Frame]:
        return await self.until(lambda f: f["type"] in PAUSE_OR_END, timeout)

    async def error(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next frame, which must be an `error` event; returns its `error` payload."""
        frame = await self.recv(timeout)
        assert frame["type"] == "error", frame
        return frame["error"]

    async def nothing(self, seconds: float = 0.2) -> None:
        """No frame arrives within `seconds`."""
        with trio.move_on_after(seconds):
            frame = await self.recv(math.inf)
            raise AssertionError(f"unexpected frame {frame}")


@asynccontextmanager
async def json_ws(url: str, api_key: str | None = None) -> AsyncIterator[JsonWs]:
    headers = [(b"authorization", f"Bearer {api_key}".encode())] if api_key else []
    async with open_websocket_url(url, extra_headers=headers) as ws:
        yield JsonWs(ws)


# -- raw frames ---------------------------------------------------------------------------------

TEXT, BINARY, CONTINUATION, CLOSE, PING = 0x1, 0x2, 0x0, 0x8, 0x9


def raw_frame(
    opcode: int,
    payload: bytes,
    *,
    fin: bool = True,
    rsv: int = 0,
    mask: bool = True,
    key: bytes | None = None,
) -> bytes:
    """One WebSocket frame as a client would put it on the wire (masked unless told, with
    `key` or a random one)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head = bytes([first, bit | n])
    elif n < 1 << 16:
        head = bytes([first, bit | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([first, bit | 127]) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = key or os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + masked


class WsClosedError(Exception):
    def __init__(self, code: int, reason: str | None) -> None:
        super().__init__(f"closed {code} {reason!r}")
        self.code = code
        self.reason = reason


class RawWs:
    """A client on a trio socket, driven through wsproto; raw frames can be sent too."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.conn = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        self.handshake: wse.AcceptConnection | None = None
        self._pending: deque[Any] = deque()
        self._text = ""
        self.close_code: int | None = None

    @classmethod
    async def connect(
        cls, port: int, *, extensions: list[Any] | None = None, headers: list[Any] | None = None
    ) -> RawWs:
        """Open the connection; the server must accept (its answer is in `handshake`)."""
        client = cls(await trio.open_tcp_stream("127.0.0.1", port))
        request = wse.Request(
            host="127.0.0.1",
            target="/v1/responses",
            extensions=extensions or [],
            extra_headers=headers or [],
        )
        await client.stream.send_all(client.conn.send(request))
        event = await client._event()
        assert isinstance(event, wse.AcceptConnection), event
        client.handshake = event
        return client

    async def _event(self) -> Any:
        with trio.fail_after(TIMEOUT):
            while not self._pending:
                try:
                    data = await self.stream.receive_some(65536)
                except trio.BrokenResourceError:
                    data = b""
                self.conn.receive_data(data or None)
                self._pending.extend(self.conn.events())
        return self._pending.popleft()

    async def send_json(self, value: Any) -> None:
        await self.send_text(value if isinstance(value, str) else orjson.dumps(value).decode())

    async def send_text(self, message: str) -> None:
        await self.stream.send_all(self.conn.send(wse.TextMessage(data=message)))

    async def send_bytes(self, message: bytes) -> None:
        await self.stream.send_all(self.conn.send(wse.BytesMessage(data=message)))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def recv(self) -> Frame:
        """The next event; WsClosedError when the server closes instead."""
        while True:
            event = await self._event()
            if isinstance(event, wse.Ping):
                await self.stream.send_all(self.conn.send(event.response()))
            elif isinstance(event, wse.TextMessage):
                self._text += event.data
                if event.message_finished:
                    data, self._text = self._text, ""
                    value = orjson.loads(data)
                    assert isinstance(value, dict) and isinstance(value.get("type"), str), data
                    return value
            elif isinstance(event, wse.CloseConnection):
                self.close_code = event.code
                if self.conn.state is ConnectionState.REMOTE_CLOSING:
                    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        await self.stream.send_all(self.conn.send(event.response()))
                raise WsClosedError(event.code, event.reason)
            else:
                raise AssertionError(f"unexpected {event!r} (the server sends only text)")

    async def until(self, done: Callable[[Frame], bool]) -> list[Frame]:
        events = [await self.recv()]
        while not done(events[-1]):
            events.append(await self.recv())
        return events

    async def expect_close(self) -> tuple[int, list[Frame]]:
        """Events up to the server's close frame, and its code."""
        events = []
        while True:
            try:
                events.append(await self.recv())
            except WsClosedError as exc:
                return exc.code, events

    async def abort(self) -> None:
        """Drop the TCP connection: no close frame (the server sees 1006)."""
        await self.stream.aclose()

    async def aclose(self) -> None:
        if self.conn.state is ConnectionState.OPEN:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.stream.send_all(self.conn.send(wse.CloseConnection(code=1000)))
        await self.stream.aclose()
