# An SSE body's push: the response head and the events queued so far reach the socket from the
# producing task, before it yields (so the writer task, which has not run, did not send them);
# on a stream without a write that cannot wait, a push leaves them to the writer.
from __future__ import annotations

import socket

import h11
import trio

from protocol.events import ResponseEvent
from protocol.response import Response
from rollout.conversation.work import Stats
from rollout.server.sockio import write_now
from rollout.server.ssebody import SseBroken, SseSink
from rollout.service.taps import Taps
from support.waits import TIMEOUT


def connection() -> tuple[trio.SocketStream, socket.socket, h11.Connection]:
    """A TCP connection on loopback (the server's end, the peer's) whose h11 state has read a
    request and may answer it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        peer = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
    ours.setblocking(False)
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
    assert isinstance(conn.next_event(), h11.Request)
    assert isinstance(conn.next_event(), h11.EndOfMessage)
    return trio.SocketStream(trio.socket.from_stdlib_socket(ours)), peer, conn


def created() -> ResponseEvent:
    response = Response(id="resp_1", created_at=1, model="m")
    return ResponseEvent(type="response.created", sequence_number=0, response=response)


async def sink_on(
    stream: trio.SocketStream, conn: h11.Connection, nursery: trio.Nursery, now: bool
) -> SseSink:
    async def head() -> h11.Response:
        return h11.Response(status_code=200, headers=[("content-type", "text/event-stream")])

    taps = Taps("http", 1, Stats())
    immediate = write_now(stream, SseBroken) if now else None
    return SseSink(
        conn, stream.send_all, head, nursery, taps, close=stream.aclose, write_now=immediate
    )


async def test_a_push_sends_the_head_and_the_first_events_before_the_task_yields() -> None:
    stream, peer, conn = connection()
    async with trio.open_nursery() as nursery:
        sink = await sink_on(stream, conn, nursery, now=True)
        await sink.emit(created())
        sink.push()  # no await since: the writer task has not run
        peer.settimeout(TIMEOUT)
        got = b""
        while b"response.created" not in got:
            got += peer.recv(65536)
        assert got.startswith(b"HTTP/1.1 200 ")
        assert sink.queued == 0 and sink.writes == 1
        nursery.cancel_scope.cancel()
    peer.close()


async def test_without_a_write_that_cannot_wait_the_writer_sends_them() -> None:
    stream, peer, conn = connection()
    async with trio.open_nursery() as nursery:
        sink = await sink_on(stream, conn, nursery, now=False)
        await sink.emit(created())
        sink.push()
        assert sink.writes == 0 and sink.queued > 0  # still queued: the writer's
        await sink.flush()
        peer.settimeout(TIMEOUT)
        got = b""
        while b"response.created" not in got:
            got += peer.recv(65536)
        nursery.cancel_scope.cancel()
    peer.close()
