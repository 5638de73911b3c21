# Raw HTTP/1.1 clients for what no client library will send (broken framing, stalled heads,
# pipelining): requests built as bytes, responses parsed strictly. `RawHttp` runs on trio
# sockets inside trio tests; `RawConnection` is a blocking socket for sync tests.
from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from typing import Any

import attrs
import orjson
import trio

from support.sse import sse_events
from support.waits import TIMEOUT


def http_request(
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    ctype: str | None = "application/json",
    headers: Sequence[tuple[str, str]] = (),
) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: test\r\n"
    if body is not None:
        if ctype is not None:
            head += f"Content-Type: {ctype}\r\n"
        head += f"Content-Length: {len(body)}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    return head.encode("latin-1") + b"\r\n" + (body or b"")


def post(body: bytes | dict[str, Any], path: str = "/v1/responses", **kw: Any) -> bytes:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return http_request("POST", path, data, **kw)


def chunked(chunks: Sequence[bytes], path: str = "/v1/responses", extension: bytes = b"") -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    return (
        head + b"".join(b"%x%s\r\n%s\r\n" % (len(c), extension, c) for c in chunks) + b"0\r\n\r\n"
    )


@attrs.define
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    def sse(self) -> list[dict[str, Any]]:
        """The `data:` objects of an event stream, checked against their `event:` names."""
        return sse_events(self.body)


class HttpClosed(Exception):
    """The server closed the connection."""


class RawHttp:
    """One TCP connection on trio; requests are raw bytes, responses are parsed strictly."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    @classmethod
    async def connect(cls, port: int) -> RawHttp:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _fill(self) -> None:
        try:
            data = await self.stream.receive_some(65536)
        except trio.BrokenResourceError:
            data = b""
        if not data:
            raise HttpClosed(bytes(self.buf[:300]))
        self.buf += data

    async def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            await self._fill()
        line, _, rest = bytes(self.buf).partition(b"\r\n")
        self.buf = bytearray(rest)
        return line

    async def _exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            await self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def read_response(self, timeout: float = TIMEOUT, *, head: bool = False) -> HttpResponse:
        """The next response; `head`: it answers a HEAD request, so it has no body."""
        with trio.fail_after(timeout):
            while True:
                status_line = (await self._line()).decode("latin-1")
                version, status, *_ = status_line.split(" ")
                assert version == "HTTP/1.1", status_line
                headers: dict[str, str] = {}
                while line := (await self._line()).decode("latin-1"):
                    name, _, value = line.partition(":")
                    assert name.lower() not in headers, f"duplicate header {name}"
                    headers[name.lower()] = value.strip()
                if not 100 <= int(status) < 200:
                    break
            if head:
                return HttpResponse(int(status), headers, b"")
            if headers.get("transfer-encoding") == "chunked":
                body = bytearray()
                while size := int((await self._line()).split(b";")[0], 16):
                    body += await self._exactly(size)
                    assert await self._exactly(2) == b"\r\n"
                assert await self._line() == b""
                return HttpResponse(int(status), headers, bytes(body))
            length = int(headers["content-length"])
            return HttpResponse(int(status), headers, await self._exactly(length))

    async def read_until(self, marker: bytes, timeout: float = TIMEOUT) -> bytes:
        """Everything received up to and including `marker` (it stays in `buf`)."""
        with trio.fail_after(timeout):
            while marker not in self.buf:
                await self._fill()
        return bytes(self.buf)

    async def closed_within(self, seconds: float = TIMEOUT) -> bool:
        """True if the server closes the connection within `seconds` (what it sends until then
        lands in `buf`)."""
        with trio.move_on_after(seconds):
            try:
                while True:
                    await self._fill()
            except HttpClosed:
                return True
        return False


class RawConnection:
    """A blocking TCP connection to the server, for sync tests."""

    def __init__(self, host: str, port: int, timeout: float = TIMEOUT) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed by the server; unread: {self.buf[:200]!r}")
        self.buf += chunk

    def read_response(self) -> tuple[int, dict[str, str], bytes]:
        """One response with a Content-Length body (status, lower-case headers, body)."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def _receive_until(self, marker: bytes | None, seconds: float) -> str:
        """Read into `buf` until `marker` is in it ("marker"), the server closes ("closed", EOF
        or reset) or `seconds` pass ("timeout")."""
        deadline = time.monotonic() + seconds
        while marker is None or marker not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return "timeout"
            except ConnectionResetError:
                return "closed"
            if not chunk:
                return "closed"
            self.buf += chunk
        return "marker"

    def received(self, marker: bytes, seconds: float = TIMEOUT) -> bool:
        """True once `marker` is in `buf`; False if the server closes first or `seconds` pass."""
        return self._receive_until(marker, seconds) == "marker"

    def closed_within(self, seconds: float = TIMEOUT) -> bool:
        """True if the server closes the connection (EOF or reset) within `seconds`."""
        return self._receive_until(None, seconds) == "closed"
