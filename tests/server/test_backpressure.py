"""A client that stops reading: the server's memory for it stays bounded (its sender waits) and
other connections keep their speed."""

from __future__ import annotations

import functools
import socket
import time

import orjson
import trio
from trio_websocket import open_websocket_url

import rollout
from rollout.model.policy import TextStep
from rollout.server.wsconn import HIGH_WATER
from rollout.service.config import ServerConfig
from rollout.service.service import Service

LONG = " ".join(["word"] * 200_000)  # far more than socket buffers and the outbox hold


async def test_a_client_that_stops_reading_stalls_only_itself() -> None:
    engine = rollout.Engine(
        policy=rollout.ScriptedPolicy(
            lambda ctx: TextStep(text=LONG if "flood" in ctx.last_user_text else "ok")
        )
    )
    host = Service(engine, ServerConfig())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, service=host))
        # A raw client that sends one create and never reads a byte.
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        sock.sendall(
            f"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        payload = orjson.dumps({"type": "response.create", "model": "m", "input": "flood"})
        assert len(payload) < 126  # (a 7-bit length: longer encodings of it are refused, 1002)
        mask = b"\x00\x00\x00\x00"
        sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + payload)
        await trio.sleep(0.5)  # the flood fills every buffer it can
        peak = 0
        for _ in range(20):
            peak = max(peak, *(s.shutdown.__self__.ws.queued for s in host.sessions))
            await trio.sleep(0.01)
        # Another connection is served at full speed meanwhile.
        start = time.perf_counter()
        async with open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            for _ in range(5):
                create = {"type": "response.create", "model": "m", "input": "hi"}
                await ws.send_message(orjson.dumps(create).decode())
                while orjson.loads(await ws.get_message())["type"] != "response.completed":
                    pass
        elapsed = time.perf_counter() - start
        for s in host.sessions:
            peak = max(peak, s.shutdown.__self__.ws.queued)
        sock.close()
        nursery.cancel_scope.cancel()
    assert HIGH_WATER <= peak <= HIGH_WATER + 64 * 1024, peak  # it filled, and no further
    assert elapsed < 2.0, elapsed
