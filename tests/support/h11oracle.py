# The server's HTTP/1.1 reading and framing run two ways on the same byte streams, for the
# differential tests of rollout.server.http11 (tests/server/test_http11.py): on h11, as the
# server ran on it (with the transport's own rules around it: a head still incomplete past the
# limit is 431 at once, a chunk declaring more than the body limit is 413 before its data), and on
# the project's own parser (also with a sized body read straight into a buffer, as the transport
# reads it). `drive` reads requests the way the transport does (head, body within a limit,
# answer) and returns everything either side decided, for comparison.
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import h11

from rollout.server.admission import is_upgrade
from rollout.server.exchange import Request, digits, integer
from rollout.server.http11 import END, BadRequest, Http11

CLOSED = "closed"
Answer = tuple[int, list[tuple[str, str]], list[bytes]]  # status, headers, body parts


class Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Side(Protocol):
    def feed(self, data: bytes) -> None: ...
    def head(self) -> Any: ...  # (method, target, version, fields) | None | CLOSED
    def piece(self) -> bytes | None: ...  # END after the last
    def chunk_left(self) -> int: ...
    def expect_continue(self) -> bool: ...
    def client_done(self) -> bool: ...
    def respond(self, status: int, headers: list[tuple[str, str]], parts: list[bytes]) -> bytes: ...
    def must_close(self) -> bool: ...
    def next_cycle(self) -> None: ...
    def trailing(self) -> bytes: ...


class H11Side:
    """h11, with the transport's rules around it as they were."""

    def __init__(self, max_head: int) -> None:
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=max_head)
        self.max_head = max_head
        self.head_bytes = bytearray()
        self.method = b""

    def feed(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self.head_bytes += data
            size = self.max_head
            if len(self.head_bytes) > size and b"\r\n\r\n" not in self.head_bytes[: size + 4]:
                raise Refused(431)
        self.conn.receive_data(data)

    def _event(self) -> Any:
        try:
            return self.conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise Refused(exc.error_status_hint) from None

    def head(self) -> Any:
        event = self._event()
        if event is h11.NEED_DATA:
            return None
        if not isinstance(event, h11.Request):
            return CLOSED
        self.method = event.method
        fields = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in event.headers]
        return (
            event.method.decode("latin-1"),
            event.target.decode("latin-1"),
            event.http_version.decode("latin-1"),
            fields,
        )

    def piece(self) -> bytes | None:
        event = self._event()
        if event is h11.NEED_DATA:
            return None
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            return END
        raise AssertionError(f"unexpected {event!r}")

    def chunk_left(self) -> int:
        left = getattr(getattr(self.conn, "_reader", None), "_bytes_in_chunk", 0)
        return left if isinstance(left, int) else 0

    def expect_continue(self) -> bool:
        return self.conn.client_is_waiting_for_100_continue

    def client_done(self) -> bool:
        return self.conn.their_state is h11.DONE

    def respond(self, status: int, headers: list[tuple[str, str]], parts: list[bytes]) -> bytes:
        out = self.conn.send(h11.Response(status_code=status, headers=headers))
        if self.method != b"HEAD":
            for part in parts:
                out += self.conn.send(h11.Data(data=part))
        return out + self.conn.send(h11.EndOfMessage())

    def must_close(self) -> bool:
        return self.conn.our_state is h11.MUST_CLOSE

    def next_cycle(self) -> None:
        self.conn.start_next_cycle()
        self.method = b""
        self.head_bytes = bytearray(self.conn.trailing_data[0])

    def trailing(self) -> bytes:
        return bytes(self.conn.trailing_data[0])


class OwnSide:
    """rollout.server.http11."""

    def __init__(self, max_head: int) -> None:
        self.http = Http11(max_head)

    def feed(self, data: bytes) -> None:
        try:
            self.http.receive(data)
        except BadRequest as exc:
            raise Refused(exc.status) from None

    def head(self) -> Any:
        try:
            head = self.http.next_head()
        except BadRequest as exc:
            raise Refused(exc.status) from None
        except EOFError:
            return CLOSED
        if head is None:
            return None
        assert head.headers == dict(head.fields())
        return (head.method, head.target, head.version, head.fields())

    def piece(self) -> bytes | None:
        try:
            return self.http.body()
        except BadRequest as exc:
            raise Refused(exc.status) from None

    def chunk_left(self) -> int:
        return self.http.chunk_left

    def expect_continue(self) -> bool:
        assert self.http.head is not None
        return self.http.head.expect_continue

    def client_done(self) -> bool:
        return self.http.client_done

    def respond(self, status: int, headers: list[tuple[str, str]], parts: list[bytes]) -> bytes:
        out = self.http.response_head(status, list(headers))
        size = sum(len(part) for part in parts)
        if parts:
            framed = self.http.chunk(parts, size)
            if self.http.body_framing == "chunked":  # one chunk per part, as h11 frames them
                framed = [b for part in parts for b in self.http.chunk([part], len(part))]
            out += b"".join(framed)
        return out + self.http.end()

    def must_close(self) -> bool:
        return not self.http.keep_alive

    def next_cycle(self) -> None:
        self.http.next_cycle()

    def trailing(self) -> bytes:
        return bytes(self.http.buf)


class OwnSizedSide(OwnSide):
    """rollout.server.http11 with a sized body read as the transport reads it: taken whole
    when all of it came with the head (`whole_body`), else what came moved into the body's
    buffer (`body_into`) and what comes after read straight into it (`body_read`), never
    through `receive`."""

    def __init__(self, max_head: int) -> None:
        super().__init__(max_head)
        self.got = bytearray()  # of the body, read and not yet handed out as a piece
        self.started = False  # the current body was asked for (`whole_body` was tried)

    def feed(self, data: bytes) -> None:
        http = self.http
        if http.head is not None and not http.buf and http.sized_left:
            n = min(len(data), http.sized_left)
            try:
                http.body_read(n)
            except BadRequest as exc:
                raise Refused(exc.status) from None
            self.got += data[:n]
            data = data[n:]  # (what the transport would read after the body)
            if not data:
                return
        super().feed(data)

    def next_cycle(self) -> None:
        super().next_cycle()
        self.started = False

    def piece(self) -> bytes | None:
        http = self.http
        head = http.head
        if head is None or head.chunked or not head.length:
            return super().piece()
        if http.sized_left and not self.started:  # (first, as the transport does)
            self.started = True
            whole = http.whole_body()
            if whole is not None:
                return bytes(whole)
        if http.sized_left:
            with memoryview(bytearray(http.sized_left)) as view:
                n = http.body_into(view)
                self.got += view[:n]
        if self.got:
            piece, self.got = bytes(self.got), bytearray()
            return piece
        if not http.sized_left:  # (the transport asks `body` nothing more: it has it all)
            return END
        return super().piece()  # nothing yet, or the connection's end refused


def drive(
    side: Side, chunks: list[bytes], eof: bool, limit: int, answer: Callable[[int], Answer]
) -> list[Any]:
    """What `side` makes of `chunks` (then the end of the stream if `eof`), read as the transport
    reads requests (bodies within `limit` bytes) and answered with `answer(i)` for the i-th."""
    out: list[Any] = []
    feed: Iterator[bytes] = iter([*chunks, *([b""] if eof else [])])

    def fill() -> bool:
        data = next(feed, None)
        if data is None:
            return False
        side.feed(data)
        return True

    i = 0
    try:
        while True:
            while (head := side.head()) is None:
                if not fill():
                    out.append("waiting for a head")
                    return out
            if head == CLOSED:
                out.append(CLOSED)
                return out
            out.append(head)
            method, target, _, fields = head
            headers = dict(fields)
            if is_upgrade(Request(method, target, {}, headers)):
                out.append(("upgrade", side.trailing()))
                return out
            length = headers.get("content-length")
            declared = integer(length) if length is not None else None
            if length is not None and digits(length) and (declared is None or declared > limit):
                out.append(("413 declared", side.client_done()))
                return out
            out.append(("continue", side.expect_continue()))
            body = b""
            while True:
                piece = side.piece()
                if piece is None:
                    if len(body) + side.chunk_left() > limit:
                        out.append(("413 chunk", side.client_done()))
                        return out
                    if not fill():
                        out.append(("waiting for the body", body))
                        return out
                elif piece is END:
                    break
                else:
                    body += piece
                    if len(body) > limit:
                        out.append(("413", side.client_done()))
                        return out
            out.append(("body", body, side.client_done()))
            status, answer_headers, parts = answer(i)
            if method == "CONNECT":  # the server has no CONNECT route: never a 2xx
                status = 405
            i += 1
            out.append(("response", side.respond(status, answer_headers, parts)))
            if side.must_close() or not side.client_done():
                out.append("close")
                return out
            side.next_cycle()
    except Refused as exc:
        done = side.client_done()
        refusal = [("content-type", "application/json"), ("content-length", "2")]
        out.append(("refused", exc.status, done, side.respond(exc.status, refusal, [b"{}"])))
        return out
