# The trio WebSocket client (trio-websocket): one connection, frames routed to per-lane queues by
# `stream_id`, typed events to the first pause or terminal event of each create or append.
from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from protocol.events import (
    TERMINAL_TYPES,
    Event,
    PauseEvent,
)
from rollout.client.http import _event


class WsClient:
    """A WebSocket connection; events are routed to per-lane queues by `stream_id`."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._lanes: dict[str | None, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._receivers: dict[str | None, trio.MemoryReceiveChannel[dict[str, Any]]] = {}
        self.bytes_sent = 0
        self.bytes_received = 0

    def _lane(self, lane: str | None) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        if lane not in self._receivers:
            send, receive = trio.open_memory_channel[dict[str, Any]](1024)
            self._lanes[lane], self._receivers[lane] = send, receive
        return self._receivers[lane]

    async def read_until_closed(self) -> None:
        """Route every frame to its lane; when the connection closes, end every lane."""
        try:
            await self._read()
        except ConnectionClosed:
            pass
        finally:
            for channel in self._lanes.values():
                channel.close()

    async def _read(self) -> None:
        while True:
            message = await self.ws.get_message()
            self.bytes_received += len(message)
            value = orjson.loads(message)
            lane = value.get("stream_id")
            self._lane(lane)
            await self._lanes[lane].send(value)

    async def send(self, frame: Mapping[str, Any]) -> None:
        data = orjson.dumps(frame).decode()
        self.bytes_sent += len(data)
        await self.ws.send_message(data)

    async def events(self, lane: str | None = None) -> AsyncIterator[Event]:
        """Events of `lane` until the next pause, terminal event or request error."""
        receive = self._lane(lane)
        async for value in receive:
            event = _event(value)
            yield event
            if isinstance(event, PauseEvent) or event.type in TERMINAL_TYPES:
                return

    async def create(
        self, body: Mapping[str, Any], lane: str | None = None
    ) -> AsyncIterator[Event]:
        """Send `response.create`; iterate the result for its typed events (to the first pause
        or the terminal event)."""
        frame = {"type": "response.create", **body}
        if lane is not None:
            frame["stream_id"] = lane
        await self.send(frame)
        return self.events(lane)

    async def append(
        self, response_id: str, items: Sequence[Mapping[str, Any]], lane: str | None = None
    ) -> AsyncIterator[Event]:
        """Send `response.append`; iterate the result for the events up to the next pause or the
        end (`lane`: the rollout's stream_id, if it has one)."""
        await self.send({"type": "response.append", "response_id": response_id, "input": items})
        return self.events(lane)

    async def inject(self, response_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Send `response.inject` (its answer comes on the response's lane)."""
        await self.send({"type": "response.inject", "response_id": response_id, "input": items})

    async def steer(self, previous_response_id: str, input: Any) -> None:
        """Send `response.steer` (its answers come on the target response's lane)."""
        frame = {"type": "response.steer", "previous_response_id": previous_response_id}
        await self.send({**frame, "input": input})

    async def cancel(self, response_id: str) -> None:
        await self.send({"type": "response.cancel", "response_id": response_id})


@asynccontextmanager
async def connect_ws(
    url: str, api_key: str | None = None, betas: Sequence[str] = ()
) -> AsyncIterator[WsClient]:
    """A WebSocket client for `url` (`ws://host:port/v1/responses`), open for the block;
    `betas` go in the handshake's OpenAI-Beta header (`responses_multi_agent=v1`)."""
    headers = [(b"authorization", f"Bearer {api_key}".encode())] if api_key else []
    if betas:
        headers.append((b"openai-beta", ",".join(betas).encode()))
    async with open_websocket_url(
        url, extra_headers=headers, receive_buffer_size=256 * 1024, max_message_size=1 << 26
    ) as ws:
        client = WsClient(ws)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.read_until_closed)
            yield client
            nursery.cancel_scope.cancel()
