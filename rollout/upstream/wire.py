# The HTTP/1.1 client of the upstream engine, as lean as the one request it makes: a POST whose head
# is built once per pool (only Content-Length varies), written with its body in one send (gathered:
# the body is not copied to join them), over pooled keep-alive connections (plain TCP or TLS), at
# most `max_connections` at once. The answer's head is parsed when it is in; its body (chunked,
# sized, or to the connection's close) is de-framed incrementally and handed on one network read at
# a time, so a burst of streamed events costs one wake-up, not one per event. A connection goes back
# to the pool only when its answer was read to its end; one reused after the engine closed it
# (nothing of the answer came) is replaced by a fresh one once. Transport trouble is Broken, with
# what went wrong.
from __future__ import annotations

import errno
import math
import os
import re
import ssl
from urllib.parse import urlsplit

import trio

READ_SIZE = 256 * 1024  # bytes asked of the socket per read
MAX_HEAD = 64 * 1024  # bytes of an answer's status line and headers
DRAIN_S = 0.05  # how long closing waits for the rest of an answer, to keep its connection


_CRLF = -1  # Response._chunk_left: a chunk's data was read, its line end is next
#: A chunk's line end and the next chunk's size line of plain digits (what _SIZE_LINE reads to
#: the same size).
_NEXT_CHUNK = re.compile(rb"\r\n([0-9A-Fa-f]{1,16})\r\n")
_STATUS = re.compile(r"(HTTP/1\.[0-9]) ([1-9][0-9][0-9])(?: |$)")
#: A chunk's size line: its digits (surrounded by whitespace), then any extensions after a ";".
_SIZE_LINE = re.compile(
    rb"[ \t\n\r\x0b\x0c]*([0-9A-Fa-f]{1,16})[ \t\n\r\x0b\x0c]*(?:;.*)?", re.DOTALL
)


class Broken(Exception):
    """The engine could not be reached or its stream broke (a timeout, a reset, a cut stream)."""


class Idle(Broken):
    """The stream sent nothing for longer than its idle timeout."""


class _Stale(Exception):
    """A pooled connection the engine had closed: nothing of the answer came."""


class Conn:
    """One connection: its stream and the bytes read past what was consumed. On a plain TCP
    connection reads and writes go straight to the socket's descriptor (trio's stream wraps
    each in an error translator and a first attempt that yields even when it succeeds); any
    other stream (TLS) is used as it is."""

    __slots__ = ("buf", "socket", "stream")

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.socket = stream.socket if type(stream) is trio.SocketStream else None

    async def fill(self, *, waiting: bool = False, idle_s: float = math.inf) -> bool:
        """Read once more into `buf`; False at the end of the stream; Idle when nothing comes
        for `idle_s` (a cancel scope only around a wait). As trio's read, it raises if the
        task is cancelled and yields after a read that did not wait. `waiting`: the answer is
        not expected yet (a request was just sent), so it waits for the socket first rather
        than trying a read that would fail."""
        sock = self.socket
        if sock is None:
            with trio.move_on_after(idle_s) as idle:
                try:
                    data = await self.stream.receive_some(READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    raise Broken(f"the connection broke: {type(exc).__name__}: {exc}") from exc
            if idle.cancelled_caught:
                raise Idle(f"nothing for {idle_s:g} s")
            self.buf += data
            return bool(data)
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = waiting
        if waiting:
            await _readable(sock, idle_s)
        while True:
            try:
                fd = sock.fileno()
                if fd < 0:
                    raise OSError(errno.EBADF, "the connection was closed")
                data = os.read(fd, READ_SIZE)
                break
            except BlockingIOError:
                pass
            except OSError as exc:
                raise Broken(f"the connection broke: {type(exc).__name__}: {exc}") from exc
            waited = True
            await _readable(sock, idle_s)
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        self.buf += data
        return bool(data)

    async def send(self, head: bytes, body: bytes) -> None:
        """Write `head`, then `body`, all of them; on a plain TCP connection as one gathering
        write (no join, no copy of the body) without a yield when the socket takes it at once
        (the answer's wait follows)."""
        sock = self.socket
        if sock is None:
            await self.stream.send_all(head + body)
            return
        parts: list[bytes | memoryview] = [head, body]
        while True:
            try:
                fd = sock.fileno()
                if fd < 0:
                    raise trio.ClosedResourceError("the connection was closed")
                sent = os.writev(fd, parts)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(sock)
                continue
            except OSError as exc:
                raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc
            while parts and sent >= len(parts[0]):
                sent -= len(parts.pop(0))
            if not parts:
                return
            parts[0] = memoryview(parts[0])[sent:]

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(self.stream)


class Response:
    """An answer's status and headers (names lowercased), and its body as it arrives."""

    def __init__(self, wire: Wire, conn: Conn, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers
        self._wire, self._conn = wire, conn
        coding = headers.get("transfer-encoding", "").lower()
        bodiless = status in (204, 304)  # no content, whatever the headers say (RFC 9112 6.3)
        self._chunked = not bodiless and "chunked" in coding
        length = "0" if bodiless else headers.get("content-length")
        self._left = -1 if self._chunked or length is None else _length(length)
        self._chunk_left = 0  # data bytes left of the current chunk (chunked)
        self._trailer = False  # past the last (empty) chunk: reading its trailer (chunked)
        self.done = not self._chunked and self._left == 0
        self._closed = False
        connection = headers.get("connection")
        closes = connection is not None and "close" in _tokens(connection)
        self._keep = not closes and (self._chunked or self._left >= 0)

    async def read(self, idle_s: float) -> bytes:
        """The body's next bytes (what one network read brought); b"" at its end. Broken when
        the stream fails, is cut short, or sends nothing for `idle_s`."""
        conn = self._conn
        while not self.done:
            data = self._take()
            if data:
                return data
            if self.done:
                break
            if not await conn.fill(idle_s=idle_s):
                if self._chunked or self._left > 0:
                    raise Broken("the answer was cut short (the connection closed)")
                self.done = True  # the body runs to the connection's close
                self._keep = False
        return b""

    def _take(self) -> bytes:
        """Consume what `buf` holds of the body."""
        buf = self._conn.buf
        if not self._chunked:
            if self._left < 0:
                data = bytes(buf)
                buf.clear()
                return data
            data = bytes(buf[: self._left])
            del buf[: self._left]
            self._left -= len(data)
            self.done = self._left == 0
            return data
        out: list[bytes | bytearray] = []
        at, size, left = 0, len(buf), self._chunk_left
        try:
            while at < size:
                if left > 0:  # a chunk's data
                    end = at + left
                    if end > size:  # (the rest of it is still to come)
                        out.append(buf[at:])
                        left, at = end - size, size
                        break
                    out.append(buf[at:end])
                    at = end
                    left = _CRLF
                    # Its line end and the next chunk's size line, when that is plain digits
                    # (the usual case), in one match; anything else is read line by line below.
                    following = _NEXT_CHUNK.match(buf, at)
                    if following is not None:
                        at = following.end()
                        left = int(following[1], 16)
                        self._trailer = left == 0
                    continue
                if left == _CRLF and buf.startswith(b"\r\n", at):  # (the usual line end)
                    at += 2
                    left = 0
                    continue
                end = buf.find(b"\r\n", at)
                if end < 0:
                    if size - at > 1024:
                        raise Broken("the answer's chunked framing is malformed")
                    break
                line = buf[at:end]
                at = end + 2
                if left == _CRLF:  # the line end after a chunk's data
                    if line:
                        raise Broken("the answer's chunked framing is malformed")
                    left = 0
                elif self._trailer:  # trailer fields, to the empty line
                    if not line:
                        self.done = True
                        break
                else:  # a chunk's size line: hex digits, maybe extensions after a ";"
                    digits = _SIZE_LINE.fullmatch(line)
                    if digits is None:
                        raise Broken("the answer's chunked framing is malformed")
                    left = int(digits[1], 16)
                    self._trailer = left == 0
        finally:
            del buf[:at]
            self._chunk_left = left
        return b"".join(out)

    def release_now(self) -> bool:
        """Give the connection back to the pool at once, without waiting or yielding, when
        nothing is left to do (the answer was read to its end and the connection is kept);
        True when the answer is closed, now or before."""
        if self._closed:
            return True
        conn = self._conn
        if not (self.done and self._keep and not conn.buf) or self._wire._closed:
            return False
        self._closed = True
        self._wire.keep(conn)
        return True

    async def aclose(self, *, drain: bool = False) -> None:
        """Give the connection back to the pool if the answer was read to its end (`drain`:
        its reader saw its logical end, so wait at most DRAIN_S for the rest), else close it:
        a stream abandoned midway drops its connection, which is how the engine learns the
        request was abandoned."""
        if self.release_now():
            return
        self._closed = True
        conn = self._conn
        with trio.CancelScope(shield=True):
            if drain and not self.done and self._keep:
                with trio.move_on_after(DRAIN_S):
                    try:
                        while await self.read(DRAIN_S):
                            pass
                    except Broken:
                        self._keep = False
            await self._wire.release(conn, keep=self.done and self._keep and not conn.buf)


class Wire:
    """A pool of connections to one engine (host and port of its URL), made in the trio run
    that uses it."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        max_connections: int,
        connect_timeout_s: float,
    ) -> None:
        split = urlsplit(url)
        self.tls = split.scheme == "https"
        self.host = split.hostname or "127.0.0.1"
        self.port = split.port or (443 if self.tls else 80)
        self.prefix = split.path.rstrip("/")
        self.connect_timeout_s = connect_timeout_s
        host = self.host if split.port is None else f"{self.host}:{self.port}"
        lines = [f"Host: {host}", "User-Agent: rollout", *(f"{k}: {v}" for k, v in headers.items())]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._idle: list[Conn] = []
        self._slots = trio.Semaphore(max_connections)
        self._ssl: ssl.SSLContext | None = None
        self.connections = 0  # opened so far (what keep-alive saves)
        self._closed = False  # aclose'd: answers that end later close their connections

    async def post(self, path: str, body: bytes) -> Response:
        """POST `body` to the URL's path + `path`; the answer once its head is in. A free
        connection slot is taken without a pass through the scheduler."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            await self._slots.acquire()
        try:
            head = b"POST %s HTTP/1.1\r\n%s%d\r\n\r\n" % (
                (self.prefix + path).encode("latin-1"),
                self._head,
                len(body),
            )
            while self._idle:
                conn = self._idle.pop()
                try:
                    return await self._exchange(conn, head, body, reused=True)
                except _Stale:
                    await conn.aclose()
            return await self._exchange(await self._connect(), head, body, reused=False)
        except BaseException:
            self._slots.release()
            raise

    async def release(self, conn: Conn, *, keep: bool) -> None:
        if keep and not self._closed:
            self.keep(conn)
        else:
            self._slots.release()
            await conn.aclose()

    def keep(self, conn: Conn) -> None:
        """An answer read to its end: its connection goes back to the pool."""
        self._slots.release()
        self._idle.append(conn)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.aclose()

    async def _connect(self) -> Conn:
        with trio.move_on_after(self.connect_timeout_s) as waited:
            try:
                stream: trio.abc.Stream = await trio.open_tcp_stream(self.host, self.port)
                if self.tls:
                    if self._ssl is None:
                        self._ssl = ssl.create_default_context()
                    tls = trio.SSLStream(stream, self._ssl, server_hostname=self.host)
                    await tls.do_handshake()
                    stream = tls
            except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
                raise Broken(f"{type(exc).__name__}: {exc}") from exc
        if waited.cancelled_caught:
            raise Broken(f"no connection within {self.connect_timeout_s:g} s")
        self.connections += 1
        return Conn(stream)

    async def _exchange(self, conn: Conn, head: bytes, body: bytes, *, reused: bool) -> Response:
        try:
            try:
                await conn.send(head, body)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                if reused:
                    raise _Stale from exc
                raise Broken(f"the request could not be sent: {exc}") from exc
            waiting = True  # (the answer cannot be in yet: its read waits first)
            while True:  # informational answers (1xx) come before the real one
                status, headers = await _head(conn, reused, waiting)
                waiting = False
                if status >= 200:
                    return Response(self, conn, status, headers)
                reused = False
        except _Stale:
            raise
        except BaseException:
            await conn.aclose()
            raise


async def _head(conn: Conn, reused: bool, waiting: bool = False) -> tuple[int, dict[str, str]]:
    """An answer's status and headers, read from `conn` (`waiting`: none of it can be in yet,
    unless the buffer holds it)."""
    buf = conn.buf
    while (end := buf.find(b"\r\n\r\n")) < 0:
        if len(buf) > MAX_HEAD:
            raise Broken(f"the answer's head is larger than {MAX_HEAD} bytes")
        try:
            more = await conn.fill(waiting=waiting and not buf)
            waiting = False
        except Broken:
            if reused and not buf:
                raise _Stale from None
            raise
        if not more:
            if reused and not buf:
                raise _Stale
            raise Broken("the connection closed before the answer's head")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    del buf[: end + 4]
    status = _STATUS.match(lines[0])
    if status is None:
        raise Broken(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    version, code = status.groups()
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise Broken(f"a malformed header line: {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if version == "HTTP/1.0" and "keep-alive" not in _tokens(headers.get("connection", "")):
        headers["connection"] = "close"
    return int(code), headers


async def _readable(sock: trio.socket.SocketType, idle_s: float) -> None:
    """Wait until `sock` has something to read (Idle after `idle_s`)."""
    if idle_s == math.inf:
        await trio.lowlevel.wait_readable(sock)
        return
    with trio.move_on_after(idle_s) as idle:
        await trio.lowlevel.wait_readable(sock)
    if idle.cancelled_caught:
        raise Idle(f"nothing for {idle_s:g} s")


def _length(value: str) -> int:
    """A Content-Length: digits, or a list of the same digits (RFC 9110 8.6)."""
    values = {v.strip() for v in value.split(",")}
    n = values.pop()
    if values or not n.isascii() or not n.isdigit():
        raise Broken(f"a malformed Content-Length: {value[:40]!r}")
    return int(n)


def _tokens(value: str) -> set[str]:
    """A Connection header's options, lowercased."""
    return {t.strip().lower() for t in value.split(",")}
