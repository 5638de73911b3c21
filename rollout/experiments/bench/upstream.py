# `rollout bench upstream-client`: which HTTP client reads a real engine's stream, measured. A
# chat-completions SSE server in its own process (trio + h11, pre-built chunks, one write per
# chunk, keep-alive) is read by httpx, by the project's h11 client (rollout.client.HttpClient)
# and by the upstream's own client (rollout.upstream.wire, its events a batch per read),
# interleaved: events per second of one long stream, requests per second of short ones on one
# kept-alive connection, and each client's CPU per event and per request (the server can cap the
# rates; the CPU is the client's own). Each client decodes the stream with protocol.sse and
# parses every chunk, as the upstream model does.
from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable

import httpx
import orjson

from protocol.sse import SSEDecoder
from rollout.client import HttpClient
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.harness.procs import SERVE_HANDLE, running
from rollout.upstream.pool import Events
from rollout.upstream.wire import Wire

_SSE_SERVER = (
    """
import sys, h11, trio
CHUNK = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
         b'"choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}\\n\\n')
async def handle(stream):
    conn = h11.Connection(h11.SERVER)
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Request):
            body = b""
            while not isinstance(event, h11.EndOfMessage):
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Data):
                    body += event.data
            n = int(body or b"1")
            head = [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
            await stream.send_all(conn.send(h11.Response(status_code=200, headers=head)))
            for _ in range(n):
                await stream.send_all(conn.send(h11.Data(data=CHUNK)))
            await stream.send_all(conn.send(h11.Data(data=b"data: [DONE]\\n\\n")))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()
        elif isinstance(event, h11.ConnectionClosed):
            return
"""
    + SERVE_HANDLE
)

STREAM_EVENTS = 20_000
SHORT_REQUESTS = 300
ROUNDS = 5

#: what is reported, and its unit: the rates, and the client's CPU per event and per request
FIGURES = (("stream", "ev/s"), ("requests", "req/s"), ("stream_cpu", "us"), ("requests_cpu", "us"))
Read = Callable[[int], Awaitable[int]]  # events asked for -> events read


def _count(decoder: SSEDecoder, chunk: bytes) -> int:
    n = 0
    for message in decoder.feed(chunk):
        if message.data != b"[DONE]":
            orjson.loads(message.data)
            n += 1
    return n


def _httpx(client: httpx.AsyncClient) -> Read:
    async def read(n: int) -> int:
        decoder, seen = SSEDecoder(), 0
        async with client.stream("POST", "/v1/chat/completions", content=str(n)) as response:
            async for chunk in response.aiter_raw():
                seen += _count(decoder, chunk)
        return seen

    return read


def _h11(client: HttpClient) -> Read:
    async def read(n: int) -> int:
        decoder, seen = SSEDecoder(), 0
        _, _, chunks = await client.request(
            "POST", "/chat/completions", content=str(n).encode(), content_type="text/plain"
        )
        async for chunk in chunks:
            seen += _count(decoder, chunk)
        return seen

    return read


def _wire(wire: Wire) -> Read:
    async def read(n: int) -> int:
        response = await wire.post("/chat/completions", str(n).encode())
        events, seen = Events(response, 30.0), 0
        try:
            while batch := await events.batch():
                for data in batch:
                    if data != b"[DONE]":
                        orjson.loads(data)
                        seen += 1
        finally:
            await response.aclose()
        return seen

    return read


async def _timed(read: Read, n: int, repeat: int = 1) -> tuple[float, float]:
    """Seconds, and the client's CPU seconds (this process's: the server has its own)."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        got = await read(n)
        assert got == n, f"read {got} of {n} events"
    return time.perf_counter() - start, time.process_time() - cpu


async def upstream_client(report: Report) -> None:
    async with running(_SSE_SERVER) as server:
        base = f"http://127.0.0.1:{server.port}"
        results: dict[tuple[str, str], list[float]] = {}
        async with httpx.AsyncClient(base_url=base, trust_env=False) as hx:
            h = HttpClient(f"{base}/v1")
            w = Wire(f"{base}/v1", {}, max_connections=1, connect_timeout_s=10.0)
            clients = {"httpx": _httpx(hx), "h11": _h11(h), "wire": _wire(w)}
            for read in clients.values():  # warm up: connections, code paths
                await read(100)
            for i in range(ROUNDS):
                order = list(clients) if i % 2 == 0 else list(reversed(clients))
                for name in order:
                    read = clients[name]
                    stream_s, stream_cpu = await _timed(read, STREAM_EVENTS)
                    short_s, short_cpu = await _timed(read, 1, SHORT_REQUESTS)
                    results.setdefault((name, "stream"), []).append(STREAM_EVENTS / stream_s)
                    results.setdefault((name, "requests"), []).append(SHORT_REQUESTS / short_s)
                    per_event = stream_cpu / STREAM_EVENTS * 1e6
                    results.setdefault((name, "stream_cpu"), []).append(per_event)
                    per_request = short_cpu / SHORT_REQUESTS * 1e6
                    results.setdefault((name, "requests_cpu"), []).append(per_request)
            await h.aclose()
            await w.aclose()
    for what, unit in FIGURES:
        values = {name: statistics.median(results[(name, what)]) for name in clients}
        for name, value in values.items():
            report(Figure(f"upstream_client.{what}.{name}", value, unit))
        for name in ("h11", "wire"):
            ratio = values[name] / values["httpx"]
            report(Figure(f"upstream_client.{what}.{name}_vs_httpx", ratio, "x"))
