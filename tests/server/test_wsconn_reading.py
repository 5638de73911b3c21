# The WebSocket reader on a real socket pair: whole text frames are parsed by the reader itself
# and every other frame by wsproto, so any stream of client frames (masked with any key, split
# across reads anywhere, fragmented messages, pings and binary frames in between) must come out
# as the same messages, in order, with the pongs; and a bad frame on either path still fails the
# connection with wsproto's close code.
from __future__ import annotations

import socket
from typing import Any

import trio
import wsproto
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wsproto.events import Request

from rollout.server.wsconn import TooLarge, WsClosed, WsConnection
from support.rawws import raw_frame
from support.waits import TIMEOUT

Frame_ = wsproto.frame_protocol.Frame


def encode(opcode: int, fin: bool, payload: bytes, key: bytes, masked: bool = True) -> bytes:
    return raw_frame(opcode, payload, fin=fin, mask=masked, key=key)


async def run_exchange(
    data: bytes, cuts: list[int], max_size: int = 1 << 20
) -> tuple[list[str | bytes | TooLarge], bytes, WsClosed | None]:
    """Serve one WebSocket connection on a socket pair; send the handshake then `data` in
    pieces cut at `cuts`, then a close frame; what get_message delivered, what the server
    wrote after the 101, and how the connection closed."""
    a, b = socket.socketpair()
    server_stream, client_stream = (
        trio.SocketStream(trio.socket.from_stdlib_socket(a)),
        (trio.SocketStream(trio.socket.from_stdlib_socket(b))),
    )
    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    head = client.send(Request(host="x", target="/v1/responses"))
    messages: list[str | bytes | TooLarge] = []
    written = bytearray()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await client_stream.send_all(head)
            request = await server_stream.receive_some(65536)
            ws = WsConnection(server_stream, max_size)
            await ws.accept(bytes(request), nursery)

            async def receive_all() -> None:
                while chunk := await client_stream.receive_some(65536):
                    written.extend(chunk)

            nursery.start_soon(receive_all)
            at = 0
            for cut in [*sorted(cuts), len(data)]:
                if cut > at:
                    await client_stream.send_all(data[at:cut])
                    at = cut
                    await trio.sleep(0)
            await client_stream.send_all(encode(0x8, True, (1000).to_bytes(2, "big"), b"\1\2\3\4"))
            try:
                while True:
                    messages.append(await ws.get_message())
            except WsClosed:
                pass
            await ws.aclose()
            nursery.cancel_scope.cancel()
    client_stream.socket.close()
    _, _, after = bytes(written).partition(b"\r\n\r\n")
    return messages, after, ws.closed


def server_events(after: bytes) -> list[Frame_]:
    """The server's frames as a client sees them (after the handshake)."""
    proto = wsproto.frame_protocol.FrameProtocol(client=True, extensions=[])
    proto.receive_bytes(after)
    return list(proto.received_frames())


texts = st.text(max_size=300)
keys = st.binary(min_size=4, max_size=4)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[str | bytes], int]:
    """Client frames: messages (text whole or fragmented, binary), pings between frames;
    the bytes, the messages they carry, and the pings sent."""
    data = bytearray()
    expected: list[str | bytes] = []
    pings = 0
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["text", "fragmented", "binary", "ping"]))
        key = draw(keys)
        if kind == "ping":
            data += encode(0x9, True, draw(st.binary(max_size=20)), key)
            pings += 1
        elif kind == "binary":
            payload = draw(st.binary(max_size=200))
            data += encode(0x2, True, payload, key)
            expected.append(payload)
        elif kind == "text":
            text = draw(texts)
            data += encode(0x1, True, text.encode(), key)
            expected.append(text)
        else:
            parts = draw(st.lists(texts, min_size=2, max_size=4))
            for i, part in enumerate(parts):
                data += encode(0x1 if i == 0 else 0x0, i == len(parts) - 1, part.encode(), key)
                if draw(st.booleans()):  # a control frame between fragments
                    data += encode(0x9, True, b"p", draw(keys))
                    pings += 1
            expected.append("".join(parts))
    return bytes(data), expected, pings


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.lists(st.integers(0, 4000), max_size=6))
def test_any_split_of_any_frames_gives_the_messages_in_order(
    sent: tuple[bytes, list[str | bytes], int], cuts: list[int]
) -> None:
    data, expected, pings = sent
    cuts = [c % (len(data) + 1) for c in cuts]
    messages, after, closed = trio.run(run_exchange, data, cuts)
    assert messages == expected
    assert closed is not None and closed.code == 1000
    frames = server_events(after)
    pongs = [f for f in frames if f.opcode == wsproto.frame_protocol.Opcode.PONG]
    assert len(pongs) == pings


def test_a_large_text_frame_split_byte_by_byte_in_places() -> None:
    text = "é" * 40_000 + "end"
    data = encode(0x1, True, text.encode(), b"\x9a\x01\xfe\x33")
    messages, _, _ = trio.run(run_exchange, data, [1, 2, 3, 5, 9, 40_000, 80_001])
    assert messages == [text]


def test_invalid_utf8_in_a_whole_text_frame_closes_1007() -> None:
    data = encode(0x1, True, b"ok \xff\xfe", b"\1\2\3\4") + encode(0x1, True, b"later", b"\0" * 4)
    messages, after, closed = trio.run(run_exchange, data, [])
    assert messages == []
    assert closed is not None and closed.code == 1007
    [close] = [f for f in server_events(after) if f.opcode == wsproto.frame_protocol.Opcode.CLOSE]
    assert close.payload[0] == 1007


def test_an_unmasked_text_frame_closes_1002() -> None:
    data = encode(0x1, True, b"hi", b"", masked=False)
    messages, _, closed = trio.run(run_exchange, data, [])
    assert messages == []
    assert closed is not None and closed.code == 1002


def test_a_text_frame_while_a_fragmented_message_is_open_closes_1002() -> None:
    key = b"\5\6\7\x08"
    data = encode(0x1, False, b"part", key) + encode(0x1, True, b"whole", key)
    messages, _, closed = trio.run(run_exchange, data, [3])
    assert messages == []
    assert closed is not None and closed.code == 1002


def test_a_frame_over_the_limit_is_too_large_and_the_next_one_arrives() -> None:
    key = b"\x11\x22\x33\x44"
    data = encode(0x1, True, b"x" * 5000, key) + encode(0x1, True, b"next", key)
    messages, _, _ = trio.run(run_exchange, data, [100, 4000], 1000)
    assert len(messages) == 2 and isinstance(messages[0], TooLarge), messages
    assert messages[0].size > 1000 and messages[1] == "next"


def test_a_pong_is_not_a_message_and_is_not_answered() -> None:
    data = encode(0xA, True, b"unsolicited", b"\0\0\0\1") + encode(0x1, True, b"a", b"\0\0\0\2")
    messages, after, _ = trio.run(run_exchange, data, [])
    assert messages == ["a"]
    opcodes = [f.opcode for f in server_events(after)]
    assert opcodes == [wsproto.frame_protocol.Opcode.CLOSE], opcodes


async def test_a_message_can_take_the_readers_task_while_reading_goes_on_in_another() -> None:
    """`deliver` returns what to do instead of reading on: that runs in the reading task,
    the next messages are read by a successor task, in order, and `read` returns (and
    `ended` is called once) when the reading itself has ended."""
    a, b = socket.socketpair()
    server = trio.SocketStream(trio.socket.from_stdlib_socket(a))
    client = trio.SocketStream(trio.socket.from_stdlib_socket(b))
    handshake = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    got: list[tuple[str | bytes | TooLarge, object]] = []
    took: list[object] = []
    release = trio.Event()
    ends: list[float] = []

    async def deliver(message: str | bytes | TooLarge) -> Any:
        got.append((message, trio.lowlevel.current_task()))
        if message == "take" and ws.handing_over:

            async def instead() -> None:
                took.append(trio.lowlevel.current_task())
                await release.wait()

            return instead
        if message == "last":
            release.set()
        return None

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await client.send_all(handshake.send(Request(host="x", target="/v1/responses")))
            ws = WsConnection(server, 1 << 20)
            await ws.accept(bytes(await server.receive_some(65536)), nursery, reader=False)
            key = b"\x0a\x0b\x0c\x0d"
            frames = [encode(0x1, True, t.encode(), key) for t in ("one", "take", "two", "last")]
            await client.send_all(b"".join(frames))
            reader = trio.lowlevel.current_task()

            async def close_later() -> None:
                await release.wait()
                await client.send_all(encode(0x8, True, (1000).to_bytes(2, "big"), key))

            nursery.start_soon(close_later)
            await ws.read(deliver, nursery.start_soon, lambda: ends.append(trio.current_time()))
            assert ws.reading_done.is_set()
            await ws.aclose()
    assert [m for m, _ in got] == ["one", "take", "two", "last"]
    assert took == [reader]  # the taken work ran in the task that read "take"
    assert got[0][1] is reader and got[1][1] is reader
    assert got[2][1] is not reader and got[3][1] is got[2][1]  # read on by the successor
    assert len(ends) == 1
