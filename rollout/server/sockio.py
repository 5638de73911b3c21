# Reads and writes on a TCP connection's socket without trio's stream layer, for the hot paths of
# both transports: trio's SocketStream wraps every call in a conflict detector, an error translator
# (a generator context manager) and a first attempt that raises and catches an exception when the
# socket is not ready. With the caches as cold as between a client's turns, a write through it
# measured 169 µs against 91 µs here (`scripts/cold_costs.py`, last at 5d4eeb7). Here the system
# call comes first and the readiness wait only when it would block; errors are the stream's
# (BrokenResourceError, ClosedResourceError), and, as trio's, each call raises if the task is
# cancelled and a write ends with a checkpoint. `write_now` is a write that neither waits nor yields
# (an outbox's push), `read_now` a read that does neither (the HTTP connection waits itself, under
# its timeouts), and `read_into_now` the same into a buffer of the caller's (a request body's, read
# without a copy). `close` skips trio's closing bookkeeping for a socket no task ever waited on.
# Any other stream (a test's wrapper, TLS) is used as it is.
from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable

import trio


class SocketIO:
    """`receive_some` and `send_all` of a stream, straight on its socket's file descriptor
    when it is a trio SocketStream."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._socket = stream.socket if type(stream) is trio.SocketStream else None
        #: a task may have waited on the socket here (or been handed the stream): its closing
        #: goes through trio's I/O manager (see `close`)
        self.watched = False

    def _fd(self) -> int:
        assert self._socket is not None
        fd = self._socket.fileno()
        if fd < 0:  # closed (never write to a number the system may have given to another)
            raise trio.ClosedResourceError("the connection was closed")
        return fd

    @property
    def direct(self) -> bool:
        """The stream is a socket's, read and written here straight."""
        return self._socket is not None

    def read_now(self, max_bytes: int) -> bytes | None:
        """A read that neither waits nor yields (with `direct`): the bytes waiting (b"" at the
        end of the stream), or None when there are none yet (then `readable` waits)."""
        try:
            return os.read(self._fd(), max_bytes)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise _broken(exc) from exc

    def read_into_now(self, view: memoryview) -> int | None:
        """`read_now` into `view` (with `direct`): how many bytes came (0 at the end of the
        stream), or None when there are none yet."""
        try:
            return os.readv(self._fd(), (view,))
        except BlockingIOError:
            return None
        except OSError as exc:
            raise _broken(exc) from exc

    async def readable(self) -> None:
        """Waits until `read_now` has bytes (or the end of the stream) to return."""
        assert self._socket is not None
        self.watched = True
        await trio.lowlevel.wait_readable(self._socket)

    def write_some(self, data: bytes) -> int:
        """What a write that neither waits nor yields took of `data` (maybe 0; always 0 when
        the stream is not a socket's: `send_all` writes it)."""
        return 0 if self._socket is None else self._write_now(data)

    async def receive_some(self, max_bytes: int) -> bytes | bytearray:
        if self._socket is None:
            return await self.stream.receive_some(max_bytes)
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                return os.read(self._fd(), max_bytes)
            except BlockingIOError:
                pass
            except OSError as exc:
                raise _broken(exc) from exc
            self.watched = True
            await trio.lowlevel.wait_readable(self._socket)

    async def send_all(self, data: bytes) -> None:
        if self._socket is None:
            await self.stream.send_all(data)
            return
        await trio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._fd(), view) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                raise _broken(exc) from exc
            self.watched = True
            await trio.lowlevel.wait_writable(self._socket)
        await trio.lowlevel.cancel_shielded_checkpoint()

    @property
    def writable(self) -> Callable[[], Awaitable[None]] | None:
        """Waits until the socket takes bytes again (with `write_now`); None for any other
        stream."""
        socket = self._socket
        if socket is None:
            return None
        return self._writable

    async def _writable(self) -> None:
        assert self._socket is not None
        self.watched = True
        await trio.lowlevel.wait_writable(self._socket)

    def close(self) -> None:
        """Close the socket (with `direct`). When no task ever waited on it here (`watched`),
        trio's I/O manager never registered its descriptor and nobody waits to be woken: it is
        closed as it is, without `notify_closing` (whose unregistering would fail, raised and
        caught, for a descriptor never registered)."""
        assert self._socket is not None
        socket = self._socket
        if self.watched:
            socket.close()
        elif socket.fileno() >= 0:
            os.close(socket.detach())

    @property
    def write_now(self) -> Callable[[bytes | memoryview], int] | None:
        """A write that neither waits nor yields (the bytes the socket took, maybe 0), on a
        socket's descriptor; None for any other stream."""
        return None if self._socket is None else self._write_now

    def _write_now(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._fd(), data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise _broken(exc) from exc


def _broken(exc: OSError) -> Exception:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the connection was closed")
    return trio.BrokenResourceError(f"socket connection broken: {exc}")
