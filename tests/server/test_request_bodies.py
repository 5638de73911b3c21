"""A sized request body is read into a buffer of its own (rollout.server.httpconn): whatever the
reads bring (all of it with the head, a few bytes at a time, past one block of BODY_BLOCK bytes),
the handler parses the bytes the client sent, and the request pipelined behind it is read as a
request of its own on the same connection. A chunked body is read as before, its pieces joined."""

from __future__ import annotations

import functools

import orjson
import pytest
import trio

import rollout
from rollout.server.httpconn import BODY_BLOCK
from rollout.service.capture import Captured
from support.rawhttp import RawHttp, chunked, post
from support.waits import TIMEOUT

NOTHING = b"GET /v1/nothing HTTP/1.1\r\nHost: t\r\n\r\n"


def body_of(size: int) -> dict[str, object]:
    """A create of about `size` bytes that the server refuses once it has parsed it (an unknown
    parameter): a 400 that keeps the connection."""
    return {"model": "m", "input": "hi", "padding": "x" * size}


@pytest.mark.parametrize("size", [10, 70_000, BODY_BLOCK - 40, 2 * BODY_BLOCK + 12_345])
@pytest.mark.parametrize("cuts", [(), (1,), (40, 41, 5000)])
async def test_a_sized_body_read_in_any_pieces_is_the_body_sent(
    size: int, cuts: tuple[int, ...]
) -> None:
    captured: list[Captured] = []
    body = body_of(size)
    data = post(body) + NOTHING
    start = data.index(b"\r\n\r\n") + 4
    ats = [start + cut for cut in cuts if start + cut < len(data)]
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            serve = functools.partial(rollout.serve, rollout.Engine(), capture=captured)
            port = await nursery.start(serve)
            conn = await RawHttp.connect(port)
            for a, b in zip([0, *ats], [*ats, len(data)], strict=True):
                await conn.send(data[a:b])
                await trio.sleep(0.01)  # (the server reads what came so far)
            first = await conn.read_response()
            assert first.status == 400 and first.json()["error"]["param"] == "padding"
            assert (await conn.read_response()).status == 404
            assert [c.body for c in captured if c.kind == "POST /v1/responses"] == [body]
            await conn.aclose()
            nursery.cancel_scope.cancel()


async def test_a_chunked_body_is_its_pieces_joined() -> None:
    captured: list[Captured] = []
    body = body_of(200_000)
    data = orjson.dumps(body)
    pieces = [data[:7], data[7:100_000], data[100_000:]]
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            serve = functools.partial(rollout.serve, rollout.Engine(), capture=captured)
            port = await nursery.start(serve)
            conn = await RawHttp.connect(port)
            await conn.send(chunked(pieces) + NOTHING)
            assert (await conn.read_response()).status == 400
            assert (await conn.read_response()).status == 404
            assert [c.body for c in captured if c.kind == "POST /v1/responses"] == [body]
            await conn.aclose()
            nursery.cancel_scope.cancel()
