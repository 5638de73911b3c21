# HTTP/1.1 for the server's side of a connection, sans-IO (no trio, sockets or clocks): requests
# parsed out of the bytes received (heads: rollout.server.httphead), bodies sized or chunked,
# keep-alive decided, and responses framed (status line, headers, chunked bodies) straight into
# bytes. It accepts and refuses exactly what h11 did when the server ran on it, with the same
# status (400, 431, 501), and frames a response to the same bytes: tests/server/test_http11.py
# feeds both the same streams. Chunked request bodies come out chunk piece by chunk piece, as h11
# gave them, so the body limits are checked at the same points.
from __future__ import annotations

import re

from rollout.server.httphead import (
    BLANK_LINE,
    BadRequest,
    Head,
    parse_fields,
    parse_head,
    take_lines,
    tokens,
)

_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*\r\n")

END = b""  # what `body` returns at the end of the request's body (a piece is never empty)
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"
__all__ = ["CONTINUE", "END", "LAST_CHUNK", "BadRequest", "Head", "Http11"]


_FRAMING = ("content-length", "transfer-encoding")
# Response fields that say nothing of framing or the connection (the transport's own).
_PLAIN = frozenset(
    ["content-type", "x-request-id", "x-rollout-worker", "cache-control", "retry-after", "allow"]
)


def _named(headers: list[tuple[str, str]], name: str) -> list[str]:
    """The elements of the `name` fields among `headers` (see _tokens)."""
    return tokens([value for field, value in headers if field.lower() == name])


class Http11:
    """The server's side of one connection: `receive` the bytes read, take requests with
    `next_head` and `body`, frame each response with `response_head` and `chunk`, then
    `next_cycle`. A refusal raises BadRequest; a connection is not used after one."""

    def __init__(self, max_head: int) -> None:
        self.max_head = max_head  # bytes of a head not complete yet, at most
        self.buf = bytearray()  # received, not parsed yet
        self.eof = False
        self.head: Head | None = None  # the request being read or answered
        self.version: str | None = None  # the client's HTTP version (its last request's)
        self.keep_alive = True  # else the connection closes after this response
        self.body_done = False  # the current request's body was read to its end
        self.responding = False  # the current response's head was framed
        self.body_framing = ""  # "chunked", "length", "close" (to the connection's end), "none"
        self._left = 0  # of a sized body: bytes to come; of a chunked one: of the chunk
        self._discard = b""  # the end of a chunk's data still to be checked
        self._trailer = False  # a chunked body's trailer is next

    # -- receiving ------------------------------------------------------------------------------

    def receive(self, data: bytes | bytearray) -> None:
        """Bytes read from the connection (b"": its end). Past `max_head` bytes without a head's
        end (CRLF CRLF) in them, a head still being received is refused with 431."""
        if not data:
            self.eof = True
            return
        self.buf += data
        if self.head is None:
            size = self.max_head
            if len(self.buf) > size and b"\r\n\r\n" not in self.buf[: size + 4]:
                raise BadRequest("head too large", 431)

    @property
    def head_started(self) -> bool:
        """Part of a request head was received (its header timeout runs)."""
        return self.head is None and bool(self.buf)

    def next_head(self) -> Head | None:
        """The next request's head, or None until it is all in; at the connection's end with
        nothing received, EOFError."""
        buf = self.buf
        if buf.startswith((b"\n", b"\r\n")):
            raise BadRequest("no request line received")
        blank = BLANK_LINE.search(buf)
        if blank is None:
            if buf and buf[0] < 0x21:
                raise BadRequest("illegal request line")
            if len(buf) > self.max_head:
                raise BadRequest("Receive buffer too long", 431)
            if self.eof:
                if not buf:
                    raise EOFError()
                raise BadRequest("peer unexpectedly closed connection")
            return None
        end = blank.end()
        head = parse_head(buf[:end].decode("latin-1"))
        del buf[:end]
        self.head = head
        self.version = head.version
        if not head.keep_alive:
            self.keep_alive = False
        self.body_done = False
        self._left = head.length
        return head

    def body(self) -> bytes | None:
        """The next piece of the current request's body (bytes), END after its last, None
        until more is received. A chunked body comes a chunk's piece at a time."""
        assert self.head is not None
        if self.head.chunked:
            piece = self._chunked()
        elif self._left == 0:
            piece = END
        else:
            piece = bytes(self.buf[: self._left]) or None
            if piece is not None:
                del self.buf[: len(piece)]
                self._left -= len(piece)
        if piece is END:
            self.body_done = True
        elif piece is None:
            if not self.buf and self.eof:
                raise BadRequest("peer closed connection without sending complete message body")
            if len(self.buf) > self.max_head:
                raise BadRequest("Receive buffer too long", 431)
            if self.eof:
                raise BadRequest("peer unexpectedly closed connection")
        return piece

    @property
    def sized_left(self) -> int:
        """Bytes still to come of the current request's body when it is sized (Content-Length);
        0 for a chunked one. The transport may read them straight into a buffer of its own
        (`body_into`, then `body_read` for what each read brought) instead of `receive`."""
        assert self.head is not None
        return 0 if self.head.chunked else self._left

    def whole_body(self) -> bytearray | None:
        """A sized body all of which was received (with its head, most often), taken in one
        copy; None when some of it is still to come."""
        n = self._left
        buf = self.buf
        if len(buf) < n:
            return None
        body = buf[:n]
        del buf[:n]
        self.body_read(n)
        return body

    def body_into(self, view: memoryview) -> int:
        """Of a sized body: what was received of it (up to `len(view)` bytes) moved into
        `view`, and how many bytes that was (the bytes `body` would have given, in one copy)."""
        n = min(len(view), self._left, len(self.buf))
        if n:
            with memoryview(self.buf) as received:
                view[:n] = received[:n]
            del self.buf[:n]
            self.body_read(n)
        return n

    def body_read(self, n: int) -> None:
        """`n` bytes of the sized body were read straight into the transport's buffer (at most
        `sized_left`, and only when `buf` is empty); 0: the connection ended first, refused
        as `body` refuses it."""
        if n == 0:
            self.eof = True
            self.body()  # (raises: the body is cut short)
        self._left -= n
        if self._left == 0:
            self.body_done = True

    @property
    def chunk_left(self) -> int:
        """Bytes still to come of the chunk being read, as its size line declared."""
        assert self.head is not None
        return self._left if self.head.chunked else 0

    def _chunked(self) -> bytes | None:
        buf = self.buf
        if self._trailer:
            lines = take_lines(buf)
            if lines is None:
                return None
            parse_fields(lines)  # checked, then dropped
            return END
        if self._discard:
            got = bytes(buf[: len(self._discard)])
            if not got:
                return None
            if got != self._discard[: len(got)]:
                raise BadRequest(f"malformed chunk footer: {got!r}")
            del buf[: len(got)]
            self._discard = self._discard[len(got) :]
            if self._discard:
                return None
        if self._left == 0:
            end = buf.find(b"\r\n")
            if end < 0:
                return None
            line = bytes(buf[: end + 2])
            del buf[: end + 2]
            size = _CHUNK_LINE.fullmatch(line)
            if size is None:
                raise BadRequest(f"illegal chunk header: {line!r}")
            self._left = int(size[1], 16)
            if self._left == 0:
                self._trailer = True
                return self._chunked()
        piece = bytes(buf[: self._left])
        if not piece:
            return None
        del buf[: len(piece)]
        self._left -= len(piece)
        if self._left == 0:
            self._discard = b"\r\n"
        return piece

    @property
    def client_done(self) -> bool:
        """The client's side of this request is over and the connection may carry another (h11's
        DONE): its body was read, no protocol switch is pending (a response ends that), and
        neither side said the connection closes."""
        head = self.head
        switching = head is not None and head.switch and not self.responding
        return self.body_done and self.keep_alive and not switching

    def next_cycle(self) -> None:
        """Ready for the next request on this connection (what was received past this one's
        end is kept)."""
        self.head = None
        self.responding = False
        self.body_done = False
        self._left, self._discard, self._trailer = 0, b"", False

    # -- sending --------------------------------------------------------------------------------

    def response_head(self, status: int, headers: list[tuple[str, str]]) -> bytes:
        """The status line and headers of the response, `headers` in order as given: sized by a
        `content-length` among them, else chunked (to a client of HTTP/1.1 or later; to an older
        one, delimited by the connection's close). `Connection: close` is added when the
        connection closes after it; a `connection: close` among `headers` makes it so."""
        head = self.head
        method = head.method if head is not None else None
        version = self.version
        if (
            self.keep_alive
            and version is not None
            and version >= "1.1"
            and status not in (204, 304)
        ):
            sized = bool(headers) and headers[-1][0] == "content-length"
            for i in range(len(headers) - sized):
                if headers[i][0] not in _PLAIN:
                    break
            else:  # the transport's usual headers: nothing to add but the framing
                self.responding = True
                self.body_framing = "none" if method == "HEAD" else "length" if sized else "chunked"
                lines = "".join([f"{name}: {value}\r\n" for name, value in headers])
                framing = "" if sized else "Transfer-Encoding: chunked\r\n"
                return f"HTTP/1.1 {status} \r\n{lines}{framing}\r\n".encode("latin-1")
        close = False
        if status not in (204, 304) and (_named(headers, "transfer-encoding") or not _named(
            headers, "content-length"
        )):  # fmt: skip
            headers = [h for h in headers if h[0].lower() not in _FRAMING]
            if self.version is None or self.version < "1.1":
                close = method != "HEAD"
            else:
                headers.append(("Transfer-Encoding", "chunked"))
        if not self.keep_alive or close:
            tokens = set(_named(headers, "connection"))
            tokens.discard("keep-alive")
            tokens.add("close")
            headers = [h for h in headers if h[0].lower() != "connection"]
            headers += [("Connection", token) for token in sorted(tokens)]
        if "close" in _named(headers, "connection"):
            self.keep_alive = False
        if method == "HEAD" or status in (204, 304):
            self.body_framing = "none"
        elif _named(headers, "transfer-encoding"):
            self.body_framing = "chunked"
        elif _named(headers, "content-length"):
            self.body_framing = "length"
        else:
            self.body_framing = "close"
        self.responding = True
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers)
        return f"HTTP/1.1 {status} \r\n{lines}\r\n".encode("latin-1")

    def chunk(self, parts: list[bytes], size: int) -> list[bytes]:
        """A body's `parts` (`size` bytes in all) as framed for the wire."""
        if self.body_framing == "chunked":
            return [b"%x\r\n" % size, *parts, b"\r\n"] if size else []
        if self.body_framing == "none":
            return []
        return parts

    def end(self) -> bytes:
        """What ends the body (a chunked one's last chunk)."""
        return LAST_CHUNK if self.body_framing == "chunked" else b""
