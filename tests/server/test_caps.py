# Server-wide caps over real sockets: TCP connections open at once (past the cap a connection
# gets 503 + Retry-After before any request is read, and the server keeps serving the others),
# and bytes of request bodies held at once (a request that would exceed them gets 503 +
# Retry-After instead of being read; the budget comes back when the holder is done).
from __future__ import annotations

import orjson
import trio

from support.rawhttp import RawHttp, post
from support.servers import serving
from support.tools import answers
from support.waits import TIMEOUT, wait_for

BODY = {"model": "m", "input": "hi"}


async def status_of(conn: RawHttp) -> int:
    return (await conn.read_response()).status


async def closed(conn: RawHttp) -> bool:
    """The server closes the connection cleanly (a reset does not count) within the liveness
    bound."""
    with trio.move_on_after(TIMEOUT):
        try:
            while await conn.stream.receive_some(65536):
                pass
        except trio.BrokenResourceError:
            return False  # a reset, not a close
        return True
    return False


async def test_connections_past_the_cap_get_503_and_the_others_are_served() -> None:
    async with serving(answers(), max_open_connections=2) as server:
        engine = server.engine
        a = await RawHttp.connect(server.port)
        b = await RawHttp.connect(server.port)
        await a.send(post(BODY))
        assert await status_of(a) == 200  # both are being served
        over = await RawHttp.connect(server.port)
        await over.send(post(BODY))  # a request sent anyway is not read: still a clean close
        refused = await over.read_response()
        assert refused.status == 503
        assert refused.headers["retry-after"] == "1"
        assert refused.headers["connection"] == "close"
        assert refused.headers["x-request-id"].startswith("req_")
        assert refused.json()["error"]["code"] == "connection_limit"
        assert refused.json()["error"]["type"] == "server_error"
        assert await closed(over)
        await b.send(post(BODY))
        assert await status_of(b) == 200
        await b.aclose()
        await wait_for(lambda: engine.stats.open_connections == 1)
        again = await RawHttp.connect(server.port)
        await again.send(post(BODY))
        assert await status_of(again) == 200
        assert engine.stats.errors["connection_limit"] == 1
        for conn in (a, over, again):
            await conn.aclose()


async def test_body_bytes_past_the_budget_get_503_until_the_holder_is_done() -> None:
    async with serving(answers(), max_body_bytes_in_flight=100_000) as server:
        engine = server.engine
        holder = await RawHttp.connect(server.port)
        big = orjson.dumps({"model": "m", "input": "x" * 80_000})
        await holder.send(post(big)[: -len(big) // 2])  # 80 KB declared, half sent
        await wait_for(lambda: engine.stats.body_bytes_in_flight == len(big))
        other = await RawHttp.connect(server.port)
        await other.send(post({"model": "m", "input": "y" * 30_000}))
        refused = await other.read_response()
        assert refused.status == 503
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "request_bytes_limit"
        assert await closed(other)
        small = await RawHttp.connect(server.port)  # what fits is still served
        await small.send(post(BODY))
        assert await status_of(small) == 200
        await holder.send(big[-len(big) // 2 :])
        assert await status_of(holder) == 200
        await wait_for(lambda: engine.stats.body_bytes_in_flight == 0)  # the budget comes back
        await holder.send(post({"model": "m", "input": "y" * 30_000}))
        assert await status_of(holder) == 200
        for conn in (holder, other, small):
            await conn.aclose()


async def test_a_chunked_body_past_the_budget_gets_503() -> None:
    async with serving(answers(), max_body_bytes_in_flight=50_000) as server:
        conn = await RawHttp.connect(server.port)
        head = (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 20_000
        await conn.send(head + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 3)
        refused = await conn.read_response()
        assert refused.status == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "request_bytes_limit"
        await conn.aclose()
