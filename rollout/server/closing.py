# Closing a TCP connection so that the peer reads what was sent last. Closing a socket with
# unread input makes the kernel send a reset, and a reset can destroy the reply (a 413, a 503, a
# WebSocket close frame) before the peer has read it. So: half-close (the peer sees the reply and
# then EOF), discard what the peer still sends until its EOF or a short timeout, then close.
from __future__ import annotations

import contextlib

import trio

LINGER_S = 2.0  # how long a closing connection waits for the peer's EOF, at most
RECEIVE = 65536


async def discard_input(stream: trio.abc.Stream) -> None:
    """Read and drop what the peer sends until its EOF (or the stream breaks)."""
    try:
        while await stream.receive_some(RECEIVE):
            pass
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def half_close(stream: trio.abc.Stream) -> None:
    """Send EOF if the stream can (a TCP socket can), keeping the read side open."""
    if isinstance(stream, trio.abc.HalfCloseableStream):
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.send_eof()


async def linger_close(stream: trio.abc.Stream, seconds: float = LINGER_S) -> None:
    """Half-close, discard input until the peer's EOF or `seconds`, then close (also when
    cancelled)."""
    try:
        with trio.move_on_after(seconds):
            await half_close(stream)
            await discard_input(stream)
    finally:
        with trio.move_on_after(1) as scope:
            scope.shield = True
            await stream.aclose()
