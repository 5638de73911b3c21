# `rollout bench concurrency`: time to the first delta when many connections create at once.
# N WebSocket connections are opened and warmed, then all send a create in the same instant;
# each measures from its send to the first `response.output_text.delta` frame. Reported as
# p50/p99 at 1, 10 and 100 connections (medians of interleaved repeats), server in a child.
from __future__ import annotations

import statistics
import time

import orjson
import trio

from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.streams import CREATE, WS_KEY, _ws_frame, next_frame
from rollout.experiments.harness.procs import running

SERVER = """
import rollout
from rollout.experiments.harness.procs import serve_engine
from rollout.service.config import ServerConfig
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.text("ok")))
serve_engine(engine)
"""

DELTA = b'"response.output_text.delta"'
DONE = b'"response.completed"'


class _Client:
    """A raw WebSocket client: frames are found by their headers; payloads are only checked for
    the event type at their start."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    @classmethod
    async def open(cls, port: int) -> _Client:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(
            b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: " + WS_KEY + b"\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        client = cls(stream)
        while b"\r\n\r\n" not in client.buf:
            client.buf += await stream.receive_some(65536)
        del client.buf[: client.buf.index(b"\r\n\r\n") + 4]
        return client

    async def frame(self) -> bytes:
        """The start of the next frame's payload (its first 64 bytes)."""
        while True:
            head = next_frame(self.buf)
            if head is not None:
                return head
            data = await self.stream.receive_some(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.buf += data

    async def turn(self, request: bytes) -> float:
        """Send a create; seconds to its first delta (read on to the completed event)."""
        start = time.perf_counter()
        await self.stream.send_all(request)
        first = float("nan")
        while True:
            head = await self.frame()
            if first != first and DELTA in head:
                first = time.perf_counter() - start
            if DONE in head:
                return first


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def first_delta_under_load(
    report: Report, counts: tuple[int, ...] = (1, 10, 100), repeats: int = 15
) -> None:
    request = _ws_frame(orjson.dumps({"type": "response.create", **CREATE, "input": "hi"}))
    async with running(SERVER) as server:
        clients = [await _Client.open(server.port) for _ in range(max(counts))]
        for client in clients:
            await client.turn(request)  # warm
        p50: dict[int, list[float]] = {n: [] for n in counts}
        p99: dict[int, list[float]] = {n: [] for n in counts}
        for _ in range(repeats):
            for n in counts:  # interleaved
                times: list[float] = []

                async def one(client: _Client, times: list[float] = times) -> None:
                    times.append(await client.turn(request))

                async with trio.open_nursery() as nursery:
                    for client in clients[:n]:
                        nursery.start_soon(one, client)
                p50[n].append(_percentile(times, 0.5))
                p99[n].append(_percentile(times, 0.99))
        for client in clients:
            await client.stream.aclose()
    for n in counts:
        value = statistics.median(p50[n]) * 1000
        gated = n == 100
        target = "<=60" if gated else "-"
        report(
            Figure(
                f"first_delta.p50.{n}_connections",
                value,
                "ms",
                target,
                value <= 60 if gated else None,
            )
        )
        report(Figure(f"first_delta.p99.{n}_connections", statistics.median(p99[n]) * 1000, "ms"))
