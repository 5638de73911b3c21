# Server-wide caps over real sockets: TCP connections open at once (past the cap a connection
# gets 503 + Retry-After before any request is read, and the server keeps serving the others),
# and bytes of request bodies held at once (a request that would exceed them gets 503 +
# Retry-After instead of being read; the budget comes back when the holder is done).
from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import trio

import rollout
from rollout.service.config import ServerConfig

BODY = orjson.dumps({"model": "m", "input": "hi"})


@asynccontextmanager
async def server(**config: Any) -> AsyncIterator[tuple[int, rollout.Engine]]:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.text("ok")))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            functools.partial(rollout.serve, engine, config=ServerConfig(**config))
        )
        yield port, engine
        nursery.cancel_scope.cancel()


def post(body: bytes = BODY, length: int | None = None) -> bytes:
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length)
    ) + body


async def response(stream: trio.SocketStream) -> tuple[int, dict[str, str], Any]:
    """One response (with a Content-Length body) read from `stream`."""
    data = bytearray()
    with trio.fail_after(5):
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            assert chunk, bytes(data)
            data += chunk
        head, _, rest = bytes(data).partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        body = bytearray(rest)
        while len(body) < int(headers["content-length"]):
            chunk = await stream.receive_some(65536)
            assert chunk
            body += chunk
    return int(lines[0].split()[1]), headers, orjson.loads(bytes(body))


async def until(check: Any) -> None:
    """Wait until the server has done something it does not announce (a handler ending)."""
    with trio.fail_after(5):
        while not check():
            await trio.sleep(0.01)


async def closed(stream: trio.SocketStream) -> bool:
    with trio.move_on_after(3):
        try:
            while await stream.receive_some(65536):
                pass
        except trio.BrokenResourceError:
            return False  # a reset, not a close
        return True
    return False


async def test_connections_past_the_cap_get_503_and_the_others_are_served() -> None:
    async with server(max_open_connections=2) as (port, engine):
        a = await trio.open_tcp_stream("127.0.0.1", port)
        b = await trio.open_tcp_stream("127.0.0.1", port)
        await a.send_all(post())
        assert (await response(a))[0] == 200  # both are being served
        over = await trio.open_tcp_stream("127.0.0.1", port)
        await over.send_all(post())  # a request sent anyway is not read: still a clean close
        status, headers, body = await response(over)
        assert status == 503
        assert headers["retry-after"] == "1"
        assert headers["connection"] == "close"
        assert headers["x-request-id"].startswith("req_")
        assert body["error"]["code"] == "connection_limit"
        assert body["error"]["type"] == "server_error"
        assert await closed(over)
        await b.send_all(post())
        assert (await response(b))[0] == 200
        await b.aclose()
        await until(lambda: engine.stats.open_connections == 1)
        again = await trio.open_tcp_stream("127.0.0.1", port)
        await again.send_all(post())
        assert (await response(again))[0] == 200
        assert engine.stats.errors["connection_limit"] == 1
        for s in (a, over, again):
            await s.aclose()


async def test_body_bytes_past_the_budget_get_503_until_the_holder_is_done() -> None:
    async with server(max_body_bytes_in_flight=100_000) as (port, engine):
        holder = await trio.open_tcp_stream("127.0.0.1", port)
        big = orjson.dumps({"model": "m", "input": "x" * 80_000})
        await holder.send_all(post(big)[: -len(big) // 2])  # 80 KB declared, half sent
        await until(lambda: engine.stats.body_bytes_in_flight == len(big))
        other = await trio.open_tcp_stream("127.0.0.1", port)
        await other.send_all(post(orjson.dumps({"model": "m", "input": "y" * 30_000})))
        status, headers, body = await response(other)
        assert status == 503
        assert headers["retry-after"] == "1"
        assert body["error"]["code"] == "request_bytes_limit"
        assert await closed(other)
        small = await trio.open_tcp_stream("127.0.0.1", port)  # what fits is still served
        await small.send_all(post())
        assert (await response(small))[0] == 200
        await holder.send_all(big[-len(big) // 2 :])
        assert (await response(holder))[0] == 200
        await until(lambda: engine.stats.body_bytes_in_flight == 0)  # the budget comes back
        await holder.send_all(post(orjson.dumps({"model": "m", "input": "y" * 30_000})))
        assert (await response(holder))[0] == 200
        for s in (holder, other, small):
            await s.aclose()


async def test_a_chunked_body_past_the_budget_gets_503() -> None:
    async with server(max_body_bytes_in_flight=50_000) as (port, _):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        head = (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 20_000
        await stream.send_all(head + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 3)
        status, headers, body = await response(stream)
        assert status == 503 and headers["retry-after"] == "1"
        assert body["error"]["code"] == "request_bytes_limit"
        await stream.aclose()
