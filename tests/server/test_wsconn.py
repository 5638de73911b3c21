# WebSocket framing against a real socket, with a raw client (wsproto, and bytes no library
# sends): pongs count against the outbox (a ping flood that never reads stops being read), a
# close after an oversized frame lingers so the client reads the error and the close frame
# instead of a reset, and frames sent in the same write as the handshake are not lost.
from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio
import wsproto
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from rollout.server.wsconn import HIGH_WATER, RECEIVE
from rollout.service.service import Service
from support.servers import serving
from support.tools import answers
from support.waits import TIMEOUT

KEY = "dGhlIHNhbXBsZSBub25jZQ=="
HANDSHAKE = (
    "GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    f"Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
).encode()
CREATE = {"type": "response.create", "model": "m", "input": "hi", "store": False}


def frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame; the mask key is zero, so the payload is sent as is."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, 0x80 | n])
    elif n < 1 << 16:
        head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


@asynccontextmanager
async def server(**config: Any) -> AsyncIterator[tuple[int, Service]]:
    """A server answering "ok", with ServerConfig `config`: (its port, its service)."""
    async with serving(answers(), **config) as served:
        yield served.port, served.service


async def handshake(port: int) -> tuple[trio.SocketStream, wsproto.WSConnection]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    await stream.send_all(client.send(Request(host="x", target="/v1/responses")))
    while True:
        client.receive_data(await stream.receive_some(65536))
        events = list(client.events())
        if events:
            assert isinstance(events[0], AcceptConnection), events
            return stream, client


async def read_all(stream: trio.SocketStream) -> tuple[bytes, bool]:
    """Everything the server sends until its EOF; True as well if it ended with a reset."""
    data = bytearray()
    try:
        while chunk := await stream.receive_some(65536):
            data += chunk
    except trio.BrokenResourceError:
        return bytes(data), True
    return bytes(data), False


async def collect(stream: trio.SocketStream, into: list[tuple[bytes, bool]]) -> None:
    into.append(await read_all(stream))


async def test_a_ping_flood_that_never_reads_stops_being_read() -> None:
    async with server() as (port, host):
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting)
        await sock.connect(("127.0.0.1", port))
        await sock.send(HANDSHAKE)
        pings = frame(0x9, b"p" * 125) * 2000  # 262 KB of pings, 254 KB of pongs
        sent = 0
        budget = 200 * 1024 * 1024  # without backpressure, all of it would be read
        while sent < budget:
            with trio.move_on_after(1) as stalled:  # the server stopped reading: done
                sent += await sock.send(pings)
            if stalled.cancelled_caught:
                break
        [session] = host.sessions
        queued = session.queued
        # Another client is served meanwhile.
        stream, client = await handshake(port)
        await stream.send_all(client.send(TextMessage(data=orjson.dumps(CREATE).decode())))
        kinds: list[str] = []
        while "response.completed" not in kinds:
            client.receive_data(await stream.receive_some(65536))
            kinds += [orjson.loads(e.data)["type"] for e in client.events()]
        await stream.aclose()
        sock.close()
    assert sent < budget, "the server read every ping"
    assert queued <= HIGH_WATER + RECEIVE, queued


async def test_an_oversized_frame_gets_the_error_and_close_1009_not_a_reset() -> None:
    limit = 64 * 1024
    big = frame(0x1, b"x" * (8 * 1024 * 1024))  # far past the limit and the socket buffers
    async with server(max_frame_bytes=limit) as (port, _):
        for _ in range(3):  # a reset came in 1-2 of 3 tries
            stream, client = await handshake(port)
            received: list[tuple[bytes, bool]] = []

            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, stream, received)
                await stream.send_all(big)  # the client sends its frame to the end
                # ... and then answers the server's close, as a client does.
                await stream.send_all(frame(0x8, (1009).to_bytes(2, "big")))
            [(data, reset)] = received
            client.receive_data(data)
            events = list(client.events())
            await stream.aclose()
            assert not reset, "the connection was reset"
            texts = [orjson.loads(e.data) for e in events if isinstance(e, TextMessage)]
            assert [t["error"]["code"] for t in texts] == ["frame_too_large"], texts
            closes = [e for e in events if isinstance(e, CloseConnection)]
            assert [c.code for c in closes] == [1009], events


async def test_a_frame_in_the_same_write_as_the_handshake_is_read() -> None:
    async with server() as (port, _):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(HANDSHAKE + frame(0x1, orjson.dumps(CREATE)))
        data = bytearray()
        with trio.fail_after(TIMEOUT):
            while b"response.completed" not in data:
                chunk = await stream.receive_some(65536)
                assert chunk, bytes(data)
                data += chunk
        await stream.aclose()
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert b'"type":"response.created"' in rest
