# The upstream engine's HTTP/1.1 client (rollout.upstream.wire) and its event reader
# (rollout.upstream.pool.Events) against a raw TCP server on loopback that writes exactly the
# bytes each test chooses, one TCP write at a time (the next write waits until the client has
# read the last one, so a split lands in separate reads): any chunked framing split anywhere
# gives the same body; sized, close-delimited, `Connection: close` and HTTP/1.0 answers frame
# and pool as they should; connections are reused only after an answer's end, a stale pooled one
# is replaced, an abandoned answer drops its connection; every transport fault is Broken; at
# most `max_connections` answers are open; events split anywhere come whole, one batch per read
# that completes any. Last, rollout in front of aimock reuses one upstream connection for
# consecutive responses.
from __future__ import annotations

import contextlib
import functools
import itertools
import re
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing
from _aimock import Aimock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import OpenAI

from rollout.upstream import UpstreamModel
from rollout.upstream import wire as wire_module
from rollout.upstream.pool import Events
from rollout.upstream.wire import MAX_HEAD, Broken, Idle, Response, Wire
from support.waits import TIMEOUT

OK = b"HTTP/1.1 200 OK\r\n"
CHUNKED = OK + b"Transfer-Encoding: chunked\r\n\r\n"


class Peer:
    """The server's side of one connection."""

    def __init__(self, stream: trio.SocketStream, index: int) -> None:
        self.stream, self.index = stream, index
        self.buf = bytearray()

    async def _fill(self) -> bool:
        try:
            data = await self.stream.receive_some(65536)
        except trio.BrokenResourceError:  # a reset: the client closed with data unread
            return False
        self.buf += data
        return bool(data)

    async def request(self) -> bytes | None:
        """The next request's body (its head checked); None when the client closed."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            if not await self._fill():
                assert not self.buf, f"the client closed mid-request: {bytes(self.buf)!r}"
                return None
        head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        del self.buf[: end + 4]
        assert head[0].startswith("POST /v1/x HTTP/1.1"), head[0]
        fields = dict(line.split(": ", 1) for line in head[1:])
        length = int(fields["Content-Length"])
        while len(self.buf) < length:
            assert await self._fill(), "the client closed mid-request"
        body = bytes(self.buf[:length])
        del self.buf[:length]
        return body

    async def send(self, *writes: bytes) -> None:
        """Each of `writes` in its own TCP write, once the client has read the one before."""
        for data in writes:
            await self.stream.send_all(data)
            await trio.testing.wait_all_tasks_blocked()

    async def reset(self) -> None:
        """Close with a reset (RST), not a FIN."""
        self.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.stream.socket.close()


#: How a test's server answers one request: its peer, the request's index (over all
#: connections) and body; returns whether to keep the connection open for another request.
Answer = Callable[[Peer, int, bytes], Awaitable[bool]]


class Server:
    """A raw HTTP server on a free loopback port; `requests` holds (connection, body) per request
    it read, `ended` the connections the client closed, `closed` those it closed itself."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.port = 0
        self.connections = 0
        self.requests: list[tuple[int, bytes]] = []
        self.ended: list[int] = []
        self.closed: list[int] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: trio.SocketStream) -> None:
        peer = Peer(stream, self.connections)
        self.connections += 1
        try:
            while (body := await peer.request()) is not None:
                self.requests.append((peer.index, body))
                try:
                    keep = await self.answer(peer, len(self.requests) - 1, body)
                except trio.BrokenResourceError:  # the client hung up on the answer
                    break
                if not keep:
                    self.closed.append(peer.index)
                    return
            self.ended.append(peer.index)
        finally:
            with contextlib.suppress(OSError):
                await stream.aclose()


@contextlib.asynccontextmanager
async def serving(answer: Answer, **wire: Any) -> AsyncIterator[tuple[Server, Wire]]:
    """The server answering with `answer`, and a Wire to it (closed after)."""
    server = Server(answer)
    options = {"max_connections": 4, "connect_timeout_s": TIMEOUT, **wire}
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1")
            )
            server.port = listeners[0].socket.getsockname()[1]
            client = Wire(server.url, {"Accept": "text/event-stream"}, **options)
            try:
                yield server, client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()


def answering(*answers: tuple[bytes, ...], keep: bool = True) -> Answer:
    """Request i gets the writes answers[i] (the last ones for the rest)."""

    async def answer(peer: Peer, i: int, body: bytes) -> bool:
        await peer.send(*answers[min(i, len(answers) - 1)])
        return keep

    return answer


async def settle() -> None:
    """Wait until the server has done what it can (its own waits, without a cushion, end
    first)."""
    await trio.testing.wait_all_tasks_blocked(0.001)


async def body_of(response: Response, idle_s: float = TIMEOUT) -> bytes:
    """The whole body; the response closed after."""
    body = bytearray()
    try:
        while data := await response.read(idle_s):
            body += data
    finally:
        await response.aclose()
    return bytes(body)


def sized(body: bytes, *headers: bytes, version: bytes = b"HTTP/1.1") -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return b"%s 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (version, len(body), extra, body)


def chunk(data: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), extension, data)


# Chunked framing, split anywhere.


def chunked_answer(parts: list[bytes], extensions: list[bytes], trailer: list[bytes]) -> bytes:
    """An answer with `parts` as its chunks (with their extensions), then the last chunk and
    the `trailer` fields."""
    body = b"".join(chunk(p, e) for p, e in zip(parts, extensions, strict=True))
    return CHUNKED + body + b"0\r\n" + b"".join(f + b"\r\n" for f in trailer) + b"\r\n"


async def split_exchange(answer: bytes, cuts: list[int]) -> tuple[list[bytes], Wire, Server]:
    """Post twice: the first answer is `answer` cut at `cuts` (its body read to its end), the
    second a plain sized one; the bodies read."""
    at, writes = 0, []
    for cut in [*sorted(set(cuts)), len(answer)]:
        if cut > at:
            writes.append(answer[at:cut])
            at = cut
    bodies = []
    async with serving(answering(tuple(writes), (sized(b"next"),))) as (server, wire):
        for _ in range(2):
            bodies.append(await body_of(await wire.post("/x", b"{}")))
    return bodies, wire, server


extensions = st.sampled_from([b"", b";x=y", b"; name=value", b';a="q"', b";flag"])
trailers = st.lists(st.sampled_from([b"X-Checksum: abc", b"Expires: never", b"X-Empty:"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(min_size=1, max_size=40), max_size=5).flatmap(
        lambda parts: st.tuples(
            st.just(parts), st.lists(extensions, min_size=len(parts), max_size=len(parts))
        )
    ),
    trailers,
    st.lists(st.integers(0, 1000), max_size=8),
)
def test_a_chunked_body_split_anywhere_reads_as_its_data(
    chunks: tuple[list[bytes], list[bytes]], trailer: list[bytes], cuts: list[int]
) -> None:
    parts, exts = chunks
    answer = chunked_answer(parts, exts, trailer)
    cuts = [c % (len(answer) + 1) for c in cuts]
    bodies, wire, server = trio.run(split_exchange, answer, cuts)
    assert bodies == [b"".join(parts), b"next"]
    # The framing ended exactly at the trailer's end: the connection served the next request.
    assert wire.connections == 1 and [c for c, _ in server.requests] == [0, 0]


@given(
    st.lists(
        st.sampled_from([b"0", b"1a", b"F", b" ", b"\t", b"\x0b", b";", b"x=y", b"\n", b"g", b"+"]),
        max_size=8,
    ).map(b"".join)
)
def test_a_size_line_is_read_as_its_digits_before_any_extension(line: bytes) -> None:
    digits = line.split(b";", 1)[0].strip()
    plain = digits if re.fullmatch(rb"[0-9A-Fa-f]{1,16}", digits) else None
    found = wire_module._SIZE_LINE.fullmatch(bytearray(line))
    assert (found[1] if found is not None else None) == plain


async def test_a_chunked_answer_written_byte_by_byte() -> None:
    # Every split: inside each "\r\n", the hex size, the extension, the trailer.
    parts = [b"hello ", b"x" * 0x1A, b"\r\n in data \r\n"]
    answer = chunked_answer(parts, [b";x=y", b"", b";ext"], [b"X-Trailer: t", b"X-More: m"])
    answer = answer.replace(b"1a\r\n", b"1A\r\n")  # hex digits in either case
    bodies, wire, _ = await split_exchange(answer, list(range(len(answer))))
    assert bodies == [b"".join(parts), b"next"]
    assert wire.connections == 1


async def test_a_chunked_answer_in_one_write_with_the_next_answer_behind_it() -> None:
    answer = chunked_answer([b"a", b"bc"], [b"", b""], [])
    bodies, wire, _ = await split_exchange(answer, [])
    assert bodies == [b"abc", b"next"] and wire.connections == 1


async def test_bodies_larger_than_a_read_come_in_pieces_to_their_end() -> None:
    big = bytes(range(256)) * 4000  # 1 MB, in one write: several reads of READ_SIZE
    answers = (CHUNKED + chunk(big) + chunk(big[:5]) + b"0\r\n\r\n",), (sized(big),)
    async with serving(answering(*answers)) as (_, wire):
        response = await wire.post("/x", b"{}")
        pieces = []
        while data := await response.read(TIMEOUT):
            pieces.append(data)
        await response.aclose()
        assert b"".join(pieces) == big + big[:5]
        assert len(pieces) > 1 and max(map(len, pieces)) <= wire_module.READ_SIZE
        assert await body_of(await wire.post("/x", b"{}")) == big
        assert wire.connections == 1


# A request's head and body leave in one gathering write, however much of them a write takes.


async def test_a_request_past_the_socket_buffers_arrives_whole() -> None:
    big = bytes(range(256)) * 16_000  # 4 MB: the socket takes it a part at a time
    async with serving(answering((sized(b"ok"),))) as (server, wire):
        for body in (big, b"{}"):
            assert await body_of(await wire.post("/x", body)) == b"ok"
        assert server.requests == [(0, big), (0, b"{}")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    takes=st.lists(st.integers(0, 120), min_size=1, max_size=8),
    body=st.binary(min_size=1, max_size=300),
)
def test_a_request_written_a_few_bytes_at_a_time_arrives_whole(
    takes: list[int], body: bytes
) -> None:
    """Each write takes at most the next of `takes` bytes (0: the socket is full), wherever
    that cuts the head or the body."""
    writev = wire_module.os.writev
    limits = itertools.cycle(takes if any(takes) else [1])

    def partial(fd: int, parts: list[Any]) -> int:
        most = next(limits)
        if most == 0:
            raise BlockingIOError()
        joined = b"".join(bytes(part) for part in parts)
        return writev(fd, [joined[:most]])

    async def main() -> None:
        async with serving(answering((sized(b"ok"),))) as (server, wire):
            wire_module.os.writev = partial  # type: ignore[attr-defined]
            try:
                assert await body_of(await wire.post("/x", body)) == b"ok"
            finally:
                wire_module.os.writev = writev  # type: ignore[attr-defined]
            assert server.requests == [(0, body)]

    trio.run(main)


# Sized and close-delimited bodies; answers that end their connection.


async def test_a_sized_body_keeps_its_connection() -> None:
    async with serving(answering((sized(b"hello world"),))) as (server, wire):
        for _ in range(2):
            assert await body_of(await wire.post("/x", b"{}")) == b"hello world"
        assert wire.connections == 1 and server.requests == [(0, b"{}"), (0, b"{}")]


async def test_repeated_equal_content_lengths_are_that_length() -> None:
    async with serving(answering((sized(b"abc", b"Content-Length: 3"),))) as (_, wire):
        for _ in range(2):
            response = await wire.post("/x", b"{}")
            assert response.headers["content-length"] == "3, 3"
            assert await body_of(response) == b"abc"
        assert wire.connections == 1


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
    ],
    ids=["204", "304-with-length", "204-chunked"],
)
async def test_a_204_or_304_has_no_body_whatever_its_headers(head: bytes) -> None:
    async with serving(answering((head,), (sized(b"next"),))) as (_, wire):
        response = await wire.post("/x", b"{}")
        assert response.status in (204, 304)
        assert await body_of(response) == b""
        assert await body_of(await wire.post("/x", b"{}")) == b"next"
        assert wire.connections == 1


async def test_a_sized_body_split_inside_its_length_header() -> None:
    sent = sized(b"0123456789" * 3)
    cut = sent.index(b"Length: ") + 9
    async with serving(answering((sent[:cut], sent[cut : cut + 40], sent[cut + 40 :]))) as (
        _,
        wire,
    ):
        response = await wire.post("/x", b"{}")
        assert response.headers["content-length"] == "30"
        assert await body_of(response) == b"0123456789" * 3


async def test_a_close_delimited_body_runs_to_the_close_and_is_not_reused() -> None:
    answer = answering(
        (OK + b"Content-Type: text/plain\r\n\r\n", b"part one, ", b"part two"), keep=False
    )
    async with serving(answer) as (server, wire):
        for _ in range(2):
            assert await body_of(await wire.post("/x", b"{}")) == b"part one, part two"
        assert wire.connections == 2
        assert [c for c, _ in server.requests] == [0, 1]


@pytest.mark.parametrize(
    "answer",
    [
        sized(b"bye", b"Connection: close"),
        sized(b"bye", b"connection: Close"),
        sized(b"bye", b"Connection: keep-alive, close"),
        sized(b"bye", version=b"HTTP/1.0"),
    ],
    ids=["connection-close", "connection-close-any-case", "close-among-options", "http-1.0"],
)
async def test_an_answer_that_ends_its_connection_is_not_reused(answer: bytes) -> None:
    # The server keeps the connection open: only the client's framing rules decide.
    async with serving(answering((answer,))) as (server, wire):
        for _ in range(2):
            assert await body_of(await wire.post("/x", b"{}")) == b"bye"
        assert wire.connections == 2
        assert [c for c, _ in server.requests] == [0, 1]
        await settle()
        assert 0 in server.ended  # the client closed the first one


async def test_an_http_1_0_keep_alive_answer_is_reused() -> None:
    answer = sized(b"kept", b"Connection: keep-alive", version=b"HTTP/1.0")
    async with serving(answering((answer,))) as (_, wire):
        for _ in range(3):
            assert await body_of(await wire.post("/x", b"{}")) == b"kept"
        assert wire.connections == 1


# Keep-alive: reuse after an answer's end, a dropped connection after an abandoned one.


async def test_sequential_requests_read_to_their_end_share_one_connection() -> None:
    async def answer(peer: Peer, i: int, body: bytes) -> bool:
        await peer.send(CHUNKED + chunk(b"echo " + body), b"0\r\n\r\n")
        return True

    async with serving(answer) as (server, wire):
        for i in range(6):
            body = b'{"n": %d}' % i
            assert await body_of(await wire.post("/x", body)) == b"echo " + body
        assert wire.connections == 1
        assert server.requests == [(0, b'{"n": %d}' % i) for i in range(6)]


async def test_an_abandoned_answer_drops_its_connection() -> None:
    first = (CHUNKED + chunk(b"first event"), chunk(b"never read"))
    async with serving(answering(first, (sized(b"fresh"),))) as (server, wire):
        response = await wire.post("/x", b"{}")
        assert await response.read(TIMEOUT) == b"first event"
        await response.aclose()  # midway, drain=False
        await settle()
        assert server.ended == [0]  # the server saw the client hang up
        assert await body_of(await wire.post("/x", b"{}")) == b"fresh"
        assert wire.connections == 2 and [c for c, _ in server.requests] == [0, 1]


async def test_an_answer_closed_at_its_logical_end_without_drain_drops_its_connection() -> None:
    answer = answering((CHUNKED + chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"))
    async with serving(answer) as (_server, wire):
        response = await wire.post("/x", b"{}")
        assert await response.read(TIMEOUT) == b"data: [DONE]\n\n"
        await response.aclose()
        await body_of(await wire.post("/x", b"{}"))
        assert wire.connections == 2


async def test_drain_reads_the_rest_after_the_logical_end_and_keeps_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire_module, "DRAIN_S", TIMEOUT)  # a slow machine cannot make it give up
    answer = answering((CHUNKED + chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"))
    async with serving(answer) as (server, wire):
        for _ in range(3):
            response = await wire.post("/x", b"{}")
            assert await response.read(TIMEOUT) == b"data: [DONE]\n\n"
            await response.aclose(drain=True)  # the terminator is written once the client waits
        assert wire.connections == 1 and [c for c, _ in server.requests] == [0, 0, 0]
        assert server.ended == []


async def test_drain_gives_up_on_an_answer_that_does_not_end() -> None:
    answer = answering((CHUNKED + chunk(b"data: [DONE]\n\n"),), (sized(b"ok"),))
    async with serving(answer) as (server, wire):
        response = await wire.post("/x", b"{}")
        assert await response.read(TIMEOUT) == b"data: [DONE]\n\n"
        await response.aclose(drain=True)  # the rest never comes: at most DRAIN_S, then closed
        await settle()
        assert server.ended == [0]
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"
        assert wire.connections == 2


async def test_leftover_bytes_after_a_sized_body_drop_the_connection() -> None:
    async with serving(answering((sized(b"abc") + b"garbage",), (sized(b"ok"),))) as (_, wire):
        assert await body_of(await wire.post("/x", b"{}")) == b"abc"
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"
        assert wire.connections == 2


async def test_an_answer_ending_after_the_pool_closed_closes_its_connection() -> None:
    async with serving(answering((CHUNKED + chunk(b"late"), b"0\r\n\r\n"))) as (server, wire):
        response = await wire.post("/x", b"{}")
        await wire.aclose()
        assert await body_of(response) == b"late"
        await settle()
        assert server.ended == [0]


# A pooled connection the server closed while idle.


@pytest.mark.parametrize("how", ["fin", "reset"])
async def test_a_connection_closed_while_idle_is_replaced(how: str) -> None:
    async def answer(peer: Peer, i: int, body: bytes) -> bool:
        await peer.send(sized(b"answer %d" % i))
        if how == "reset":
            await peer.reset()
        return False  # closed once answered: the client pooled it (no Connection: close)

    async with serving(answer) as (server, wire):
        for i in range(3):
            assert await body_of(await wire.post("/x", b"{}")) == b"answer %d" % i
            await settle()
            assert server.closed[-1] == i  # closed while idle in the pool
        assert wire.connections == 3
        assert [c for c, _ in server.requests] == [0, 1, 2]  # one request reached it per post


# Faults are Broken, with what went wrong.


async def test_a_refused_connection_is_broken() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once it is closed
    wire = Wire(f"http://127.0.0.1:{port}/v1", {}, max_connections=1, connect_timeout_s=TIMEOUT)
    for _ in range(2):  # the slot was given back
        with (
            trio.fail_after(TIMEOUT),
            pytest.raises(Broken, match=f"connect to 127.0.0.1:{port} failed"),
        ):
            await wire.post("/x", b"{}")
    assert wire.connections == 0


@pytest.mark.parametrize(
    ("writes", "match"),
    [
        ((OK + b"X-Big: " + b"a" * (MAX_HEAD + 10),), f"larger than {MAX_HEAD}"),
        ((b"SSH-2.0-OpenSSH_9.6\r\n\r\n",), "not an HTTP/1.1 answer: 'SSH-2.0"),
        ((b"HTTP/1.1 OK\r\n\r\n",), "not an HTTP/1.1 answer"),
        ((b"HTTP/1.1 099 Low\r\n\r\n",), "not an HTTP/1.1 answer: 'HTTP/1.1 099 Low'"),
        ((b"HTTP/1.1 2000 OK\r\n\r\n",), "not an HTTP/1.1 answer: 'HTTP/1.1 2000 OK'"),
        (("HTTP/1.1 ²00 OK\r\n\r\n".encode("latin-1"),), "not an HTTP/1.1 answer"),
        ((b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",), "malformed header line"),
        ((OK + b"Content-Length: ten\r\n\r\n",), "malformed Content-Length: 'ten'"),
        ((OK + b"Content-Length: -1\r\n\r\n",), "malformed Content-Length"),
        ((OK + b"Content-Length: +1\r\n\r\n",), "malformed Content-Length"),
        ((OK + b"Content-Length: 2\r\nContent-Length: 5\r\n\r\n",), "Length: '2, 5'"),
        ((OK + b"Content-Le",), "closed before the answer's head"),
    ],
    ids=[
        "head-too-large",
        "not-http",
        "no-status",
        "status-under-100",
        "status-four-digits",
        "status-not-ascii",
        "header",
        "length",
        "length-negative",
        "length-signed",
        "lengths-differ",
        "cut-head",
    ],
)
async def test_a_bad_head_is_broken(writes: tuple[bytes, ...], match: str) -> None:
    answer = answering(writes, (sized(b"ok"),), keep=False)
    async with serving(answer, max_connections=1) as (_server, wire):
        with pytest.raises(Broken, match=re.escape(match)):
            await wire.post("/x", b"{}")
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"  # slot and pool still fine
        assert wire.connections == 2


@pytest.mark.parametrize(
    ("writes", "match"),
    [
        ((CHUNKED + b"zz\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"-5\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"0x5\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"1_0\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"3\r\nabcX\r\n",), "chunked framing is malformed"),
        ((CHUNKED + b"1" * 2000,), "chunked framing is malformed"),
        ((CHUNKED + chunk(b"part"),), "cut short"),
        ((CHUNKED + chunk(b"part") + b"0\r\n",), "cut short"),
        ((CHUNKED + b"a\r\nabc",), "cut short"),
        ((sized(b"0123456789")[:-4],), "cut short"),
    ],
    ids=[
        "size-not-hex",
        "size-empty",
        "size-negative",
        "size-0x",
        "size-underscore",
        "no-crlf-after-data",
        "size-line-endless",
        "no-last-chunk",
        "no-trailer-end",
        "in-a-chunk",
        "sized-short",
    ],
)
async def test_a_bad_body_is_broken(writes: tuple[bytes, ...], match: str) -> None:
    answer = answering(writes, (sized(b"ok"),), keep=False)
    async with serving(answer, max_connections=1) as (_, wire):
        response = await wire.post("/x", b"{}")
        with pytest.raises(Broken, match=re.escape(match)):
            await body_of(response)
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"
        assert wire.connections == 2


async def test_a_server_silent_mid_body_is_idle() -> None:
    answer = answering((CHUNKED + chunk(b"first"),), (sized(b"ok"),))
    async with serving(answer) as (server, wire):
        response = await wire.post("/x", b"{}")
        assert await response.read(0.05) == b"first"
        with pytest.raises(Idle, match=r"nothing for 0\.05 s"):
            await response.read(0.05)
        await response.aclose()
        await settle()
        assert server.ended == [0]
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"


# Informational answers.


async def test_informational_answers_before_the_answer_are_skipped() -> None:
    early = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    writes = (early[:30], early[30:] + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    async with serving(answering(writes)) as (_, wire):
        for _ in range(2):
            response = await wire.post("/x", b"{}")
            assert response.status == 200 and "link" not in response.headers
            assert await body_of(response) == b"ok"
        assert wire.connections == 1


# Events: one batch per network read.


async def read_batches(answer: bytes, cuts: list[int]) -> list[list[bytes]]:
    """The batches of the events of `answer`, written cut at `cuts`, to the [] at its end."""
    writes = [answer[a:b] for a, b in itertools.pairwise([0, *cuts, len(answer)]) if b > a]
    batches: list[list[bytes]] = []
    async with serving(answering(tuple(writes))) as (_, wire):
        response = await wire.post("/x", b"{}")
        events = Events(response, TIMEOUT)
        while batch := await events.batch():
            batches.append(batch)
        await response.aclose()
    return batches


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.text(
                st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1, max_size=30
            ),
            st.sampled_from(["\n", "\r\n"]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.integers(0, 2000), max_size=8),
)
def test_events_split_anywhere_come_whole_a_batch_per_read(
    events: list[tuple[str, str]], cuts: list[int]
) -> None:
    body, ends, sent = b"", [], []
    for text, eol in events:
        data = text.encode()
        body += b"data: %s%s%s" % (data, eol.encode(), eol.encode())
        ends.append(len(body) - (eol == "\r\n"))  # a lone CR already ends the blank line
        sent.append(data)  # a leading space of its own stays: only the one after ":" goes
    answer = sized(body)
    head = len(answer) - len(body)
    cuts = sorted({c % (len(answer) + 1) for c in cuts})
    # A read completes the events whose ends it brings: one batch per read that completes any.
    reads = [max(c - head, 0) for c in cuts if c > head] + [len(body)]
    expected, at = [], 0
    for read in reads:
        batch = [d for d, end in zip(sent, ends, strict=True) if at < end <= read]
        at = max(at, read)
        if batch:
            expected.append(batch)
    assert trio.run(read_batches, answer, cuts) == expected


async def test_events_come_a_batch_per_read() -> None:
    burst = b"data: one\n\ndata: two\n\nevent: x\ndata: three\n\n"
    split = b'data: {"a": "split'
    writes = (
        CHUNKED + chunk(burst),
        chunk(split[:7]),
        chunk(split[7:] + b' here"}\n'),
        chunk(b"\n: a comment\n\n"),  # completes the event, then a comment: no more events
        chunk(b"data: last\n\n"),
        b"0\r\n\r\n",
    )
    async with serving(answering(writes)) as (_, wire):
        response = await wire.post("/x", b"{}")
        events = Events(response, TIMEOUT)
        assert await events.batch() == [b"one", b"two", b"three"]
        assert await events.batch() == [b'{"a": "split here"}']
        assert await events.batch() == [b"last"]
        assert await events.batch() == []
        await response.aclose()
        await body_of(await wire.post("/x", b"{}"))
        assert wire.connections == 1


async def test_events_of_a_broken_stream_are_broken() -> None:
    async with serving(answering((CHUNKED + chunk(b"data: one\n\n"), b"zz\r\n"))) as (_, wire):
        response = await wire.post("/x", b"{}")
        events = Events(response, TIMEOUT)
        assert await events.batch() == [b"one"]
        with pytest.raises(Broken, match="stream broke off: the answer's chunked framing"):
            await events.batch()
        await response.aclose()


async def test_events_of_a_silent_stream_are_broken() -> None:
    async with serving(answering((CHUNKED + chunk(b"data: one\n\n"),))) as (_, wire):
        response = await wire.post("/x", b"{}")
        events = Events(response, 0.05)
        assert await events.batch() == [b"one"]
        with pytest.raises(Broken, match=r"stopped streaming: nothing for 0\.05 s"):
            await events.batch()
        await response.aclose()


# At most max_connections answers open at once.


async def test_a_post_over_max_connections_waits_for_an_answer_to_close() -> None:
    async def answer(peer: Peer, i: int, body: bytes) -> bool:
        await peer.send(CHUNKED + chunk(b"%d" % peer.index) + b"0\r\n\r\n")
        return True

    responses: list[Response] = []

    async def post(wire: Wire) -> None:
        responses.append(await wire.post("/x", b"{}"))

    async with serving(answer, max_connections=2) as (server, wire):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(post, wire)
            await settle()
            assert len(responses) == 2 and len(server.requests) == 2  # the third waits
            given_back = int(await body_of(responses[0]))  # its connection goes back
            await settle()
            assert len(responses) == 3
        assert wire.connections == 2  # the third reused the one given back
        assert server.requests[2][0] == given_back
        assert int(await body_of(responses[2])) == given_back
        assert int(await body_of(responses[1])) == 1 - given_back


# A cancelled wait for the head gives the slot back and drops the connection.


async def test_a_post_cancelled_before_its_head_drops_its_connection() -> None:
    async def answer(peer: Peer, i: int, body: bytes) -> bool:
        if i == 0:
            return True  # no answer: the client gives up waiting
        await peer.send(sized(b"ok"))
        return True

    async with serving(answer, max_connections=1) as (server, wire):
        with trio.move_on_after(0.05) as waited:
            await wire.post("/x", b"{}")
        assert waited.cancelled_caught
        await settle()
        assert server.ended == [0]
        assert await body_of(await wire.post("/x", b"{}")) == b"ok"
        assert wire.connections == 2


# Through rollout: consecutive responses reuse one connection to the engine.


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_consecutive_responses_reuse_one_upstream_connection(
    upstream: Any, aimock: Aimock, api: str
) -> None:
    server = upstream(api=api)
    client = OpenAI(base_url=server.http_base_url, api_key="test", max_retries=0, timeout=30)
    asked = f"from the cache, over one connection ({api})"
    for turn in range(4):
        if turn % 2:
            text = client.responses.create(model="m", input=f"{asked} {turn}").output_text
        else:
            with client.responses.stream(model="m", input=f"{asked} {turn}") as stream:
                text = stream.get_final_response().output_text
        assert text == "Served from the prefix cache."
    assert len(aimock.requests_for(asked)) == 4
    model = server.engine.model
    assert isinstance(model, UpstreamModel) and model.requests == 4 and model.aborted == 0
    wire = model.http._wire  # the pool of the server's trio run
    assert wire is not None and wire.connections == 1
