# The WebSocket connection's direct socket reads and writes (rollout.server.sockio) behave as the
# trio stream's: everything written arrives (a write larger than the socket buffers waits for
# the peer to read), EOF is b"", a reset peer is BrokenResourceError, a closed stream is
# ClosedResourceError (never a write to a reused descriptor), a cancelled task does not read or
# write, a close ends the stream (and wakes a task waiting on it) whether or not a task waited on
# it before, and another kind of stream is used as it is.
from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from rollout.server.sockio import SocketIO
from support.waits import TIMEOUT


def pair() -> tuple[trio.SocketStream, socket.socket]:
    a, b = socket.socketpair()
    return trio.SocketStream(trio.socket.from_stdlib_socket(a)), b


async def test_a_write_past_the_buffers_arrives_whole_and_reads_end_at_eof() -> None:
    stream, peer = pair()
    io = SocketIO(stream)
    data = bytes(range(256)) * 40_000  # 10 MB: far past the socket buffers
    received = bytearray()

    async def read_peer() -> None:
        peer.setblocking(False)
        while len(received) < len(data):
            await trio.lowlevel.wait_readable(peer)
            received.extend(peer.recv(1 << 20))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_peer)
            await io.send_all(data)
    assert bytes(received) == data
    peer.setblocking(True)
    peer.sendall(b"hello")
    peer.shutdown(socket.SHUT_WR)
    got = b""
    while chunk := await io.receive_some(3):
        got += chunk
    assert got == b"hello"
    peer.close()


async def test_a_reset_peer_is_broken_and_a_closed_stream_is_closed() -> None:
    stream, peer = pair()
    io = SocketIO(stream)
    peer.close()
    with pytest.raises(trio.BrokenResourceError):
        for _ in range(100):  # the first writes may still be buffered
            await io.send_all(b"x" * 65536)
    other, other_peer = pair()
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await io.send_all(b"x")
    with pytest.raises(trio.ClosedResourceError):
        await io.receive_some(10)
    other_peer.close()
    await other.aclose()


async def test_a_cancelled_task_neither_reads_nor_writes() -> None:
    stream, peer = pair()
    io = SocketIO(stream)
    peer.sendall(b"waiting")
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await io.receive_some(100)
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await io.send_all(b"not sent")
    assert await io.receive_some(100) == b"waiting"
    peer.setblocking(False)
    with pytest.raises(BlockingIOError):
        peer.recv(100)
    peer.close()
    await stream.aclose()


async def test_another_stream_is_used_as_it_is() -> None:
    left, right = trio.testing.memory_stream_pair()
    io = SocketIO(left)
    await io.send_all(b"through the stream")
    assert await right.receive_some(100) == b"through the stream"
    await right.send_all(b"back")
    assert await io.receive_some(100) == b"back"


async def test_a_close_ends_the_stream_whether_or_not_a_task_waited_on_it() -> None:
    for wait in (False, True):
        stream, peer = pair()
        io = SocketIO(stream)
        if wait:
            peer.sendall(b"x")
            await io.readable()
            assert io.read_now(10) == b"x"
        assert io.watched is wait
        number = stream.socket.fileno()
        io.close()
        assert stream.socket.fileno() == -1
        assert peer.recv(10) == b""  # the peer reads the end
        with pytest.raises(trio.ClosedResourceError):
            io.write_now(b"never written")  # (not to a descriptor the system gave again)
        io.close()  # (twice: nothing more)
        # A socket given the same descriptor number is waited on as any other.
        again, again_peer = pair()
        assert again.socket.fileno() == number
        again_io = SocketIO(again)
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(again_io.readable)
                await trio.testing.wait_all_tasks_blocked()
                again_peer.sendall(b"y")
        assert again_io.read_now(10) == b"y"
        again_io.close()
        again_peer.close()
        peer.close()


async def test_a_close_wakes_a_task_waiting_on_the_socket() -> None:
    stream, peer = pair()
    io = SocketIO(stream)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                with pytest.raises(trio.ClosedResourceError):
                    await io.readable()

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            io.close()
    peer.close()
