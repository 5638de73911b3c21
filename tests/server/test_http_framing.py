"""What the server's framing decides, on a real connection: an SSE body to an HTTP/1.0 client is
delimited by the connection's close (no chunks) and says so; a HEAD on a streamed resource gets
the head a GET would (chunked) and no body; the response heads are byte for byte what they were
on h11; a reply's head and body arrive together; after an SSE body, a pipelined request on the
same connection is served."""

from __future__ import annotations

import functools
import re

import orjson
import trio

import rollout
from support.rawhttp import RawHttp
from support.waits import TIMEOUT

BODY = orjson.dumps({"model": "m", "input": "hi", "stream": True})


def create(version: bytes = b"1.1", extra: bytes = b"") -> bytes:
    return (
        b"POST /v1/responses HTTP/%s\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n%s\r\n%s" % (version, len(BODY), extra, BODY)
    )


async def until_closed(conn: RawHttp) -> bytes:
    assert await conn.closed_within(TIMEOUT)
    return bytes(conn.buf)


def without_ids(head: bytes) -> bytes:
    return re.sub(rb"req_[0-9a-f]+", b"req_X", head)


async def test_framing_decided_by_the_client() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, rollout.Engine()))

        old = await RawHttp.connect(port)  # HTTP/1.0: no chunks, the close ends the body
        await old.send(create(b"1.0"))
        data = await until_closed(old)
        head, _, body = data.partition(b"\r\n\r\n")
        assert without_ids(head) == (
            b"HTTP/1.1 200 \r\ncontent-type: text/event-stream\r\nx-request-id: req_X\r\n"
            b"cache-control: no-cache\r\nConnection: close"
        )
        assert body.startswith(b"event: response.created\n")
        assert body.endswith(b"\n\n") and b"event: response.completed" in body

        closing = await RawHttp.connect(port)  # Connection: close on HTTP/1.1: chunked, closed
        await closing.send(create(extra=b"Connection: close\r\n"))
        data = await until_closed(closing)
        head, _, body = data.partition(b"\r\n\r\n")
        assert without_ids(head) == (
            b"HTTP/1.1 200 \r\ncontent-type: text/event-stream\r\nx-request-id: req_X\r\n"
            b"cache-control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close"
        )
        assert body.endswith(b"\r\n0\r\n\r\n")

        kept = await RawHttp.connect(port)  # keep-alive: a pipelined request after the stream
        await kept.send(create() + b"GET /v1/nothing HTTP/1.1\r\nHost: t\r\n\r\n")
        first = await kept.read_response()
        assert first.status == 200 and first.sse()[-1]["type"] == "response.completed"
        response_id = first.sse()[-1]["response"]["id"]
        second = await kept.read_response()
        assert second.status == 404 and second.json()["error"]["code"] is None
        await kept.send(b"HEAD /v1/nothing HTTP/1.1\r\nHost: t\r\n\r\n")
        head_only = await kept.read_response(head=True)
        assert head_only.status == 404 and head_only.headers["content-length"] != "0"
        await kept.send(
            b"HEAD /v1/responses/%s?stream=true HTTP/1.1\r\nHost: t\r\n\r\n" % response_id.encode()
        )
        streamed = await kept.read_response(head=True)
        assert streamed.status == 200 and streamed.headers["transfer-encoding"] == "chunked"
        await kept.send(b"GET /v1/nothing HTTP/1.1\r\nHost: t\r\n\r\n")  # (no body came first)
        assert (await kept.read_response()).status == 404
        assert not kept.buf
        await kept.aclose()
        nursery.cancel_scope.cancel()
