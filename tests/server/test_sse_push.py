# An SSE body's push: the response head and the events queued so far reach the socket from the
# producing task, before it yields (so the flusher, which has not run, did not send them); on a
# stream without a write that cannot wait, a push leaves them to a writer task. What is queued
# without a push leaves once the producer waits, coalesced, and the body's end with the last. An
# event emitted is framed as its encoding emitted as bytes.
from __future__ import annotations

import socket

import hypothesis
import hypothesis.strategies as st
import trio
import trio.testing

from protocol import codec
from protocol.events import ErrorEvent, ErrorPayload, Event, ResponseEvent, TextDeltaEvent
from protocol.response import Response
from rollout.conversation.work import Stats
from rollout.server.http11 import Http11
from rollout.server.outbox import Flusher
from rollout.server.sockio import SocketIO
from rollout.server.ssebody import SseSink
from rollout.service.taps import Taps
from support.waits import TIMEOUT


def connection() -> tuple[trio.SocketStream, socket.socket, Http11]:
    """A TCP connection on loopback (the server's end, the peer's) whose HTTP state has read a
    request and may answer it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        peer = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
    ours.setblocking(False)
    conn = Http11(16384)
    conn.receive(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
    assert conn.next_head() is not None
    assert conn.body() == b""  # the end of its (empty) body
    return trio.SocketStream(trio.socket.from_stdlib_socket(ours)), peer, conn


def created() -> ResponseEvent:
    response = Response(id="resp_1", created_at=1, model="m")
    return ResponseEvent(type="response.created", sequence_number=0, response=response)


async def sink_on(
    stream: trio.SocketStream, conn: Http11, nursery: trio.Nursery, now: bool
) -> SseSink:
    async def head() -> bytes:
        return conn.response_head(200, [("content-type", "text/event-stream")])

    flusher = Flusher()
    await nursery.start(flusher.run)
    taps = Taps("http", 1, Stats())
    immediate = SocketIO(stream).write_now if now else None
    return SseSink(
        conn, stream.send_all, head, flusher, taps, close=stream.aclose, write_now=immediate
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
        await sink.emit(created())
        sink.push()
        assert sink.writes == 1 and sink.queued > 0
        await trio.testing.wait_all_tasks_blocked()  # (no flush: the producer waits)
        assert sink.writes == 2 and sink.queued == 0  # a writer task sent it
        nursery.cancel_scope.cancel()
    peer.close()


async def test_what_a_producer_queues_leaves_once_it_waits_and_the_end_with_it() -> None:
    stream, peer, conn = connection()
    async with trio.open_nursery() as nursery:
        sink = await sink_on(stream, conn, nursery, now=True)
        await sink.emit(created())
        sink.push()
        await sink.emit(created())
        await sink.emit(created())
        assert sink.writes == 1 and sink.queued > 0
        await trio.testing.wait_all_tasks_blocked()  # the flusher sends both in one write
        assert sink.writes == 2 and sink.queued == 0
        await sink.emit(created())
        await sink.end()  # the last event and the body's end: one write, from this task
        assert sink.writes == 3 and sink.queued == 0
        peer.settimeout(TIMEOUT)
        got = b""
        while not got.endswith(b"\r\n0\r\n\r\n"):
            got += peer.recv(65536)
        assert got.count(b"event: response.created") == 4
        nursery.cancel_scope.cancel()
    peer.close()


@hypothesis.settings(max_examples=50, deadline=None)
@hypothesis.given(delta=st.text(), message=st.text(), body=st.booleans())
def test_an_event_emitted_is_framed_as_its_encoding_emitted_as_bytes(
    delta: str, message: str, body: bool
) -> None:
    """`emit` (its own inline path) and `emit_bytes` of the event's SSE encoding write the
    same body, for any text, the flat SSE error event and a HEAD request's empty body alike."""
    events: list[Event] = [
        created(),
        TextDeltaEvent(sequence_number=1, item_id="msg_1", output_index=0, content_index=0,
                       delta=delta),
        ErrorEvent(error=ErrorPayload(type="server_error", code="x", message=message, param=None),
                   sequence_number=2),
    ]  # fmt: skip

    async def body_of(encoded: bool) -> bytes:
        conn = Http11(16384)
        conn.receive(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        assert conn.next_head() is not None and conn.body() == b""
        sent: list[bytes] = []

        async def send(data: bytes) -> None:
            sent.append(data)

        async def head() -> bytes:
            return conn.response_head(200, [("content-type", "text/event-stream")])

        async def close() -> None:
            pass

        async with trio.open_nursery() as nursery:
            flusher = Flusher()
            await nursery.start(flusher.run)
            sink = SseSink(
                conn, send, head, flusher, Taps("http", 1, Stats()), close=close, body=body
            )
            for event in events:
                if encoded:
                    await sink.emit_bytes(event.type.encode(), codec.encode_sse_event(event))
                else:
                    await sink.emit(event)
            await sink.end()
            nursery.cancel_scope.cancel()
        return b"".join(sent)

    assert trio.run(body_of, False) == trio.run(body_of, True)
