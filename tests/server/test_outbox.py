# A push sends what is queued from the producing task without waiting or yielding, on a real
# socket: all of it when the socket takes it; what a full socket does not take stays first in
# line and leaves, in order, before anything queued later; nothing while a write is in
# progress or without a write that cannot wait; a reset peer is a broken outbox, not an error.
# An outbox sent by a Flusher: what gathers leaves in one write once the producer waits; what a
# full socket does not take, a writer task sends in order; dropped, its writer stops.
from __future__ import annotations

import socket

import trio
import trio.testing

from rollout.server.outbox import Flusher, Outbox
from rollout.server.sockio import SocketIO
from support.waits import TIMEOUT

BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)


def pair(small: bool = False) -> tuple[SocketIO, socket.socket]:
    """A TCP connection on loopback: the server's end (non-blocking) and the peer's (`small`:
    with small socket buffers)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        peer = socket.socket()
        if small:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        peer.connect(listener.getsockname())
        ours, _ = listener.accept()
    ours.setblocking(False)
    return SocketIO(trio.SocketStream(trio.socket.from_stdlib_socket(ours))), peer


def outbox(io: SocketIO, broken: list[bool] | None = None) -> Outbox:
    gone = (lambda: broken.append(True)) if broken is not None else (lambda: None)
    return Outbox(io.send_all, 1 << 20, write_now=io.write_now, broken=BROKEN, on_broken=gone)


def read_all(peer: socket.socket, n: int) -> bytes:
    peer.settimeout(TIMEOUT)
    got = b""
    while len(got) < n:
        got += peer.recv(1 << 20)
    return got


async def test_a_push_sends_at_once_without_yielding() -> None:
    io, peer = pair()
    out = outbox(io)
    out.put(b"created;")
    out.put(b"in_progress;")
    out.push()  # (a plain call: it cannot wait or yield)
    assert out.queued == 0 and out.writes == 1 and out.drained.is_set()
    assert read_all(peer, 20) == b"created;in_progress;"
    peer.close()


async def test_what_a_full_socket_does_not_take_leaves_first_and_in_order() -> None:
    io, peer = pair(small=True)
    out = outbox(io)
    big = bytes(range(256)) * 32768  # 8 MB: more than the socket takes at once
    out.put(big)
    out.push()
    assert 0 < out.queued < len(big)  # the rest waits, first in line
    assert not out.drained.is_set()
    out.put(b"after")
    assert await drained_to(out, peer, len(big) + 5) == big + b"after"
    peer.close()


async def drained_to(out: Outbox, peer: socket.socket, n: int) -> bytes:
    """Run the writer until what is queued is out: the `n` bytes the peer read."""
    received = bytearray()

    def read_peer() -> None:
        peer.settimeout(TIMEOUT)
        while len(received) < n:
            received.extend(peer.recv(1 << 20))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(out.run)
            nursery.start_soon(trio.to_thread.run_sync, read_peer)
            await out.drained.wait()
            out.end()
    return bytes(received)


async def test_no_push_while_a_write_is_in_progress_or_without_a_write_that_cannot_wait() -> None:
    io, peer = pair()
    out = outbox(io)
    out.put(b"x")
    out.sending = True  # (as while the writer or a flush writes)
    out.push()
    assert out.queued == 1 and out.writes == 0
    out.sending = False
    plain = Outbox(io.send_all, 1 << 20)  # no write_now (another kind of stream)
    plain.put(b"y")
    plain.push()
    assert plain.queued == 1
    out.push()
    assert out.queued == 0 and read_all(peer, 1) == b"x"
    peer.close()


async def test_a_push_to_a_reset_peer_breaks_the_outbox() -> None:
    io, peer = pair()
    peer.close()
    broken: list[bool] = []
    out = outbox(io, broken)
    for _ in range(100):  # the first writes may still be buffered
        out.put(b"x" * 65536)
        out.push()
        if out.broken:
            break
    assert out.broken and broken == [True] and out.queued == 0


async def test_a_flush_cancelled_mid_write_leaves_the_rest_first_in_line() -> None:
    """A response cancelled while its flush waits on a full socket: what the socket had not
    taken is written next, by the writer, before anything queued later (no gap, no torn
    frame); the cancelled task is not held."""
    io, peer = pair(small=True)
    out = Outbox(io.send_all, 1 << 30, write_now=io.write_now, writable=io.writable, broken=BROKEN)
    big = bytes(range(256)) * 32768  # 8 MB: the flush waits on the socket
    out.put(big)
    with trio.move_on_after(0.05) as flushing:
        await out.flush()
    assert flushing.cancelled_caught and 0 < out.queued < len(big)
    out.put(b"after")
    assert await drained_to(out, peer, len(big) + 5) == big + b"after"
    peer.close()


async def test_a_cancelled_write_without_a_write_that_cannot_wait_breaks_the_outbox() -> None:
    """On another kind of stream what a cancelled write sent is unknown: the outbox is broken
    (the peer is dropped) rather than sending the rest after a gap."""
    gone: list[bool] = []
    blocked = trio.Event()

    async def stuck(data: bytes) -> None:
        blocked.set()
        await trio.sleep_forever()

    out = Outbox(stuck, 1 << 20, on_broken=lambda: gone.append(True))
    out.put(b"frame")
    with trio.move_on_after(0.05):
        await out.flush()
    assert blocked.is_set() and out.broken and gone == [True]


# -- outboxes sent by a Flusher (SSE bodies) ------------------------------------------------------


def flushed(io: SocketIO, flusher: Flusher, broken: list[bool] | None = None) -> Outbox:
    gone = (lambda: broken.append(True)) if broken is not None else (lambda: None)
    return Outbox(io.send_all, 1 << 30, write_now=io.write_now, writable=io.writable,
                  broken=BROKEN, on_broken=gone, flusher=flusher)  # fmt: skip


async def test_the_flusher_sends_what_gathered_once_the_producer_waits() -> None:
    io, peer = pair()
    async with trio.open_nursery() as nursery:
        flusher = Flusher()
        await nursery.start(flusher.run)
        out = flushed(io, flusher)
        out.put(b"a;")
        out.put(b"b;")
        assert out.writes == 0  # nothing leaves while the producer runs
        await trio.testing.wait_all_tasks_blocked()
        assert out.writes == 1 and out.queued == 0 and out.drained.is_set()
        out.put(b"c;")
        await out.finish(b"end")  # the rest and the tail: one write, from this task
        assert out.writes == 2 and out.done.is_set()
        assert read_all(peer, 9) == b"a;b;c;end"
        nursery.cancel_scope.cancel()
    peer.close()


async def test_what_a_full_socket_does_not_take_a_writer_task_sends_in_order() -> None:
    io, peer = pair(small=True)
    async with trio.open_nursery() as nursery:
        flusher = Flusher()
        await nursery.start(flusher.run)
        out = flushed(io, flusher)
        big = bytes(range(256)) * 32768  # 8 MB: more than the socket takes at once
        out.put(big)
        await trio.testing.wait_all_tasks_blocked()
        assert not out.drained.is_set()  # the rest: a writer task waits on the socket for it
        out.put(b"after")
        received = bytearray()

        def read_peer() -> None:
            peer.settimeout(TIMEOUT)
            while len(received) < len(big) + 8:
                received.extend(peer.recv(1 << 20))

        nursery.start_soon(trio.to_thread.run_sync, read_peer)
        with trio.fail_after(TIMEOUT):
            await out.finish(b"end")
            while len(received) < len(big) + 8:
                await trio.sleep(0.01)
        assert bytes(received) == big + b"afterend" and out.done.is_set()
        nursery.cancel_scope.cancel()
    peer.close()


async def test_a_dropped_outbox_stops_its_writer_task() -> None:
    io, peer = pair(small=True)
    async with trio.open_nursery() as nursery:
        flusher = Flusher()
        await nursery.start(flusher.run)
        out = flushed(io, flusher)
        out.put(bytes(8 << 20))  # the socket does not take it: a writer task waits on it
        await trio.testing.wait_all_tasks_blocked()
        assert not out.done.is_set() and not out.drained.is_set()
        out.drop()  # (the connection closes)
        with trio.fail_after(TIMEOUT):
            await out.done.wait()
        assert out.broken
        nursery.cancel_scope.cancel()
    peer.close()


async def test_a_reset_peer_breaks_a_flushed_outbox_and_its_finish_returns() -> None:
    io, peer = pair()
    peer.close()
    broken: list[bool] = []
    async with trio.open_nursery() as nursery:
        flusher = Flusher()
        await nursery.start(flusher.run)
        out = flushed(io, flusher, broken)
        with trio.fail_after(TIMEOUT):
            while not out.broken:  # the first writes may still be buffered
                out.put(b"x" * 65536)
                await trio.testing.wait_all_tasks_blocked()
            await out.finish(b"end")
        assert broken == [True] and out.queued == 0 and out.done.is_set()
        nursery.cancel_scope.cancel()
