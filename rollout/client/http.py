# The trio HTTP client: one keep-alive HTTP/1.1 connection (h11), JSON replies and SSE streams
# (framing by protocol.sse) parsed into typed events (protocol.events); errors raise ClientError.
# `request` is the raw exchange (any method, path and body) that everything else is built on.
from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import h11
import orjson
import trio

from protocol import codec
from protocol.events import (
    ErrorEvent,
    Event,
)
from protocol.sse import SSEDecoder


class ClientError(Exception):
    """The server refused a request: an HTTP error status or an `error` event."""

    def __init__(self, status: int | None, error: Mapping[str, Any]) -> None:
        super().__init__(f"{status} {error.get('code')}: {error.get('message')}")
        self.status = status
        self.error = dict(error)

    @property
    def code(self) -> str | None:
        return self.error.get("code")


# -- HTTP -------------------------------------------------------------------------------------


class HttpClient:
    """One keep-alive HTTP/1.1 connection (h11 over trio). Not for concurrent requests."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        split = urlsplit(base_url)
        self.host = split.hostname or "127.0.0.1"
        self.port = split.port or 80
        self.prefix = split.path.rstrip("/")
        self.api_key = api_key
        self._stream: trio.SocketStream | None = None
        self._conn = h11.Connection(h11.CLIENT)
        self.bytes_sent = 0
        self.bytes_received = 0

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()
            self._stream = None

    async def _connect(self) -> trio.SocketStream:
        """The connection for the next request: the open one if its last exchange completed on
        both sides, otherwise a new one (after a close, an error or an unread body)."""
        states = (self._conn.our_state, self._conn.their_state)
        if self._stream is not None and states == (h11.DONE, h11.DONE):
            self._conn.start_next_cycle()
        elif self._stream is None or states != (h11.IDLE, h11.IDLE):
            await self.aclose()
            self._stream = await trio.open_tcp_stream(self.host, self.port)
            self._conn = h11.Connection(h11.CLIENT)
        return self._stream

    async def _send(self, event: Any) -> None:
        assert self._stream is not None
        data = self._conn.send(event)
        if data:
            self.bytes_sent += len(data)
            await self._stream.send_all(data)

    async def _next(self) -> Any:
        assert self._stream is not None
        while True:
            event = self._conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self._stream.receive_some(65536)
            self.bytes_received += len(data)
            self._conn.receive_data(bytes(data))
            if not data and self._conn.their_state is not h11.DONE:
                try:
                    self._conn.next_event()
                except h11.RemoteProtocolError:
                    raise ConnectionError("the server closed the connection mid-response") from None

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content: bytes | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, str], AsyncIterator[bytes]]:
        """Send a request to `path` (after the base URL's path): `body` as JSON, or `content`
        as given (with `content_type` when not empty). Returns the status, the headers
        (lower-case names) and an iterator over the body's chunks."""
        await self._connect()
        if content is None:
            content = b"" if body is None else orjson.dumps(body)
            typed = body is not None
        else:
            typed = bool(content)
        data = content
        headers = [("host", f"{self.host}:{self.port}"), ("content-length", str(len(data)))]
        if typed:
            headers.append(("content-type", content_type))
        if self.api_key:
            headers.append(("authorization", f"Bearer {self.api_key}"))
        await self._send(h11.Request(method=method, target=self.prefix + path, headers=headers))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())
        response = await self._next()
        while isinstance(response, h11.InformationalResponse):  # e.g. 100 Continue
            response = await self._next()
        if not isinstance(response, h11.Response):
            raise ConnectionError(f"unexpected {response!r}")
        head = {k.decode().lower(): v.decode() for k, v in response.headers}

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                event = await self._next()
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    return

        return response.status_code, head, chunks()

    async def json(self, method: str, path: str, body: Any = None) -> Any:
        status, _, chunks = await self.request(method, path, body)
        data = b"".join([c async for c in chunks])
        value = orjson.loads(data) if data else None
        if status >= 400:
            raise ClientError(status, (value or {}).get("error", {}))
        return value

    async def create(self, body: Mapping[str, Any]) -> AsyncIterator[Event]:
        """`POST /responses` streamed: iterate the result for its typed events."""
        return self.events("/responses", {**body, "stream": True})

    async def append(
        self, response_id: str, items: Sequence[Mapping[str, Any]]
    ) -> AsyncIterator[Event]:
        """Resume an append-shape rollout: events up to its next pause or its end."""
        return self.events(f"/responses/{response_id}/append", {"input": list(items)})

    async def cancel(self, response_id: str) -> Any:
        """Cancel an append-shape rollout; the final response (status `incomplete`)."""
        return await self.json("POST", f"/responses/{response_id}/cancel")

    async def events(self, path: str, body: Any) -> AsyncIterator[Event]:
        """POST and stream the SSE events (an error status raises ClientError; a stream the
        decoder refuses, protocol.sse.SSEError)."""
        status, head, chunks = await self.request("POST", path, body)
        if status >= 400 or not head.get("content-type", "").startswith("text/event-stream"):
            data = b"".join([c async for c in chunks])
            value = orjson.loads(data) if data else {}
            error = value.get("error") if isinstance(value, dict) else None
            raise ClientError(status, error or {"message": "expected an SSE stream"})
        decoder = SSEDecoder()
        async for chunk in chunks:
            for message in decoder.feed(chunk):
                yield _event(orjson.loads(message.data))


def _event(value: dict[str, Any]) -> Event:
    event = codec.decode_event(value)
    if isinstance(event, ErrorEvent) and event.sequence_number is None:
        raise ClientError(event.status, codec.to_json(event.error))
    return event
