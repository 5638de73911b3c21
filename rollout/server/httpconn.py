# HTTP/1.1 on trio: framing only (rollout.server.http11 parses and frames, sans-IO). Keep-alive,
# body and header limits (and the server-wide body budget), HEAD answered without a body, SSE
# bodies (rollout.server.ssebody), and the standard error envelope; the REST surface itself
# (routes and handlers) is rollout.server.resources. A WebSocket upgrade on /v1/responses, once
# vetted (rollout.server.admission, which checks API keys too), is handed to the WebSocket module
# with the bytes already read, so both transports share one port. Reads and writes go straight
# to the socket (rollout.server.sockio): a read waits, under the idle or header timeout, only
# when nothing is there yet; a reply's head and body leave in one write.
from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson
import trio

from protocol import errors
from protocol.errors import ProtocolError
from protocol.validate import betas_of
from rollout.conversation.ids import new_id
from rollout.engine.engine import Engine
from rollout.engine.loop import Disconnected
from rollout.server import logs
from rollout.server.admission import authorize, check_connections, check_handshake, is_upgrade
from rollout.server.closing import linger_close
from rollout.server.exchange import Request, digits, integer
from rollout.server.http11 import CONTINUE, END, BadRequest, Head, Http11
from rollout.server.limits import Limits, too_many_body_bytes
from rollout.server.outbox import Flusher
from rollout.server.resources import route
from rollout.server.sockio import SocketIO
from rollout.server.ssebody import SseBroken, SseSink
from rollout.server.wsconn import Handshake
from rollout.server.wsmode import serve_websocket
from rollout.service.config import ServerConfig
from rollout.service.record import HttpIn
from rollout.service.service import Service
from rollout.service.taps import Taps

log = logging.getLogger("rollout.server.httpconn")
RECEIVE = 65536  # bytes asked of the socket per read of a chunked body
#: ... and per read of a head: what it brings past the head goes through the parser's buffer
#: (copied twice), while the rest of a sized body is read straight into the body's own buffer.
HEAD_RECEIVE = 16384
BODY_BLOCK = 1 << 20  # bytes of a sized request body taken at once, ahead of their arrival
JSON = "application/json"


class _Closed(Exception):
    """The peer went away or the connection must close; nothing more to send."""


@attrs.define(eq=False)
class HttpConnection:
    stream: trio.abc.Stream
    service: Service
    flusher: Flusher  # sends SSE bodies' bytes (the server's)
    engine: Engine = attrs.field(init=False)
    config: ServerConfig = attrs.field(init=False)
    owner: str | None = None  # the API key of the current request, when keys are configured
    http: Http11 = attrs.field(init=False)
    request_id: str = ""
    status: int = 0  # of the current request's response, for the access log
    number: int = 0  # this connection's number (for capture)
    taps: Taps = attrs.field(init=False)
    limits: Limits | None = None  # server-wide counters (made here if not given)
    _io: SocketIO = attrs.field(init=False)
    _head_only: bool = False  # the current request is HEAD: its response has no body
    _reserved: int = 0  # bytes of the body budget the current request holds
    _linger: bool = False  # close lingering: the peer may still be sending (see closing.py)
    _sink: SseSink | None = None  # the current (or last) response's SSE body
    _until: float | None = None  # when the wait for the current head or body gives up
    _head_timed: bool = False  # `_until` counts the header timeout from the head's first bytes
    _waited: bool = False  # a read waited since the last request began

    def __attrs_post_init__(self) -> None:
        self.number = self.service.taps.number()
        self.engine = self.service.engine
        self.config = self.service.config
        self.taps = self.service.taps.open("http", self.number, self.engine.stats)
        if self.limits is None:
            self.limits = Limits(
                self.config.max_open_connections,
                self.config.max_body_bytes_in_flight,
                self.engine.stats,
            )
        self.http = Http11(self.config.max_header_bytes)
        self._io = SocketIO(self.stream)

    # -- I/O ------------------------------------------------------------------------------------

    async def _fill(self, body: bool) -> None:
        """Read once into the parser: at once when bytes are waiting, else waiting until the
        current deadline (see `_deadline`), past which the connection closes (_Closed)."""
        io = self._io
        size = RECEIVE if body else HEAD_RECEIVE
        data: bytes | bytearray | None = None
        try:
            if io.direct:
                data = io.read_now(size)
            while data is None:
                with trio.move_on_at(self._deadline(body)):
                    if io.direct:
                        await io.readable()
                        data = io.read_now(size)
                    else:
                        data = await self.stream.receive_some(size)
                    self._waited = True
                    continue
                raise _Closed()  # the deadline passed
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise _Closed() from None
        self.http.receive(data)

    def _deadline(self, body: bool) -> float:
        """When the wait for bytes gives up, set when a wait first comes: waiting for a head, the
        idle timeout, and the header timeout once the head's first bytes are in (the whole head
        within it); reading a body, the header timeout for the whole body."""
        now = trio.current_time()
        if self._until is None:
            timeout = self.config.header_timeout_s if body else self.config.idle_timeout_s
            self._until = now + timeout
        if not body and not self._head_timed and self.http.head_started:
            self._head_timed = True
            self._until = min(self._until, now + self.config.header_timeout_s)
        return self._until

    async def _write(self, data: bytes) -> None:
        """Write all of `data`: at once when the socket takes it, else waiting until it has."""
        try:
            written = self._io.write_some(data)
            if written < len(data):
                await self._io.send_all(data[written:])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise _Closed() from None

    def _headers(self, content_type: str, extra: dict[str, str] | None = None) -> list[Any]:
        headers = [("content-type", content_type), ("x-request-id", self.request_id)]
        if self.config.worker_id is not None:
            headers.append(("x-rollout-worker", self.config.worker_id))
        if extra:
            headers += extra.items()
        return headers

    async def _respond(self, status: int, headers: list[Any], data: bytes) -> None:
        """A whole response (sized): its head and body in one write (HEAD: the head alone)."""
        self.status = status
        headers.append(("content-length", str(len(data))))
        head = self.http.response_head(status, headers)
        await self._write(head if self.http.body_framing == "none" else head + data)

    async def reply(self, status: int, body: Any, extra: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        if self.taps.recorder is not None:
            await self.taps.status(status, data)
        await self._respond(status, self._headers(JSON, extra), data)

    async def error(self, exc: ProtocolError, extra: dict[str, str] | None = None) -> None:
        self.taps.refused(exc)
        if exc.headers:
            extra = {**exc.headers, **(extra or {})}
        if exc.status in (429, 503):  # retryable: say when
            extra = {"retry-after": "1", **(extra or {})}
        if not self.http.client_done:
            self._linger = True  # answered before the request was read to its end
        await self.reply(exc.status, {"error": exc.payload()}, extra)

    # -- the connection -------------------------------------------------------------------------

    async def run(self) -> None:
        setup = self.engine.costs.connection_setup_s
        if setup > 0:
            with self.engine.stats.totals.stage("connect"):
                await trio.sleep(setup)
        http = self.http
        first = True
        try:
            while True:
                try:
                    head = await self._next_head()
                except BadRequest as exc:
                    await self._protocol_error(exc)
                    return
                except EOFError:
                    return
                if not (first or self._waited):
                    await trio.lowlevel.checkpoint()  # pipelined: let others run between requests
                first = False
                self.request_id = new_id("req")
                try:
                    request = _request(head)
                except BadRequest as exc:
                    await self._protocol_error(exc)
                    return
                self._head_only = request.method == "HEAD"
                if is_upgrade(request):
                    await self._upgrade(request, head)
                    return
                self.engine.stats.http_in_flight += 1
                self.status = 0
                started = time.perf_counter()
                try:
                    served = await self._serve(request, head)
                finally:
                    self.engine.stats.http_in_flight -= 1
                    self.engine.notify()
                    if logs.access.isEnabledFor(logging.INFO):
                        self._log(request, started)
                if not served or not http.keep_alive or not http.client_done:
                    return
                http.next_cycle()
        except _Closed:
            return
        finally:
            if self._sink is not None:
                self._sink.drop()  # (a body cut short: nothing more of it is sent)
            if self.taps.recorder is not None:
                await self.taps.aclose()  # first: closing the stream raises if cancelled
            if self._linger:
                await linger_close(self.stream)
            elif self._io.direct:
                self._io.close()
            else:
                with trio.move_on_after(1):
                    await self.stream.aclose()

    def _log(self, request: Request, started: float) -> None:
        """The request's line in the access log."""
        logs.event(
            "http_request",
            request_id=self.request_id,
            method=request.method,
            path=request.path[:200],
            status=self.status,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )

    async def _next_head(self) -> Head:
        """The next request's head (EOFError: the client closed the connection before one)."""
        self._until, self._head_timed, self._waited = None, False, False
        http = self.http
        while True:
            if http.buf or http.eof:  # (nothing to parse before the first read)
                head = http.next_head()
                if head is not None:
                    return head
            await self._fill(body=False)

    async def _upgrade(self, request: Request, head: Head) -> None:
        """Vet a WebSocket handshake here (plain HTTP refusals), then hand the connection over."""
        try:
            check_handshake(request)
            self.owner = authorize(request, self.config.api_keys)
            check_connections(self.engine.stats.ws_connections, self.config.max_connections)
        except ProtocolError as exc:
            extra = {"connection": "close"}
            if exc.status == 503:
                extra["retry-after"] = "1"
            if exc.status == 426:
                extra["sec-websocket-version"] = "13"
            await self.error(exc, extra)
            return
        self.engine.stats.ws_connections += 1
        self._io.watched = True  # (the WebSocket connection waits on the socket itself)
        # What was read past the request head (frames sent in the same write) is frame data.
        trailing = bytes(self.http.buf)
        fields = [
            (name.encode("latin-1"), value.encode("latin-1")) for name, value in head.fields()
        ]
        try:
            await serve_websocket(
                self.stream,
                Handshake(fields, head.target.encode("latin-1")),
                self.service,
                self.owner,
                self.request_id,
                self.number,
                trailing=trailing,
                betas=betas_of(request.headers.get("openai-beta", "")),
            )
        finally:
            self.engine.stats.ws_connections -= 1

    async def _protocol_error(self, exc: BadRequest) -> None:
        if not self.http.responding:
            self.request_id = self.request_id or new_id("req")
            message = "The request could not be parsed as HTTP/1.1."
            if exc.status == 431:
                message = "The request headers are too large."
            await self.error(ProtocolError(message=message, code="bad_request", status=exc.status))

    async def _read_body(self, request: Request, head: Head) -> bool:
        """Read the body within the limit and the server's body budget; False after answering
        413 or 503 (the connection closes)."""
        length = request.headers.get("content-length")
        limit = self.config.max_body_bytes
        declared = integer(length) if length is not None else None
        if length is not None and digits(length) and (declared is None or declared > limit):
            await self.error(errors.body_too_large(limit), {"connection": "close"})
            return False
        if declared and not self._reserve(declared):
            return await self._over_budget()
        if head.expect_continue:
            await self._write(CONTINUE)
        http = self.http
        self._until = None  # the header timeout, for the whole body
        left = http.sized_left
        if left:
            body = http.whole_body()
            request.body = body if body is not None else await self._read_sized(left)
            return True
        pieces: list[bytes] = []
        seen = 0
        while True:
            piece = http.body()
            if piece is None:
                if seen + http.chunk_left > limit:  # a chunk declares more than the limit
                    await self.error(errors.body_too_large(limit), {"connection": "close"})
                    return False
                await self._fill(body=True)
            elif piece is END:
                request.body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                return True
            else:
                seen += len(piece)
                if seen > limit:
                    await self.error(errors.body_too_large(limit), {"connection": "close"})
                    return False
                if declared is None and not self._reserve(len(piece)):
                    return await self._over_budget()
                pieces.append(piece)

    async def _read_sized(self, size: int) -> bytes | bytearray:
        """A sized body (Content-Length, `size` bytes, within the limit and reserved) read
        straight into its own buffer: what came with the head moved there once, the rest read
        into it with no copy. Past BODY_BLOCK bytes it is read a block at a time (memory taken
        as the bytes come, not all once a head declares them) and the blocks joined once."""
        http = self.http
        blocks: list[bytearray] = []
        while size:
            block = bytearray(min(size, BODY_BLOCK))
            with memoryview(block) as view:
                got = http.body_into(view)
                while got < len(block):
                    got += await self._read_into(view[got:])
            blocks.append(block)
            size -= len(block)
        return blocks[0] if len(blocks) == 1 else b"".join(blocks)

    async def _read_into(self, view: memoryview) -> int:
        """Read once into `view`, as `_fill` reads (under the body's deadline): how many bytes
        came, counted by the parser (which refuses the connection's end: BadRequest)."""
        io = self._io
        n: int | None = None
        try:
            if io.direct:
                n = io.read_into_now(view)
            while n is None:
                with trio.move_on_at(self._deadline(True)):
                    if io.direct:
                        await io.readable()
                        n = io.read_into_now(view)
                    else:
                        data = await self.stream.receive_some(len(view))
                        n = len(data)
                        view[:n] = data
                    self._waited = True
                    continue
                raise _Closed()  # the deadline passed
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise _Closed() from None
        self.http.body_read(n)
        return n

    def _reserve(self, n: int) -> bool:
        assert self.limits is not None
        if not self.limits.reserve(n):
            return False
        self._reserved += n
        return True

    async def _over_budget(self) -> bool:
        assert self.limits is not None
        extra = {"connection": "close", "retry-after": "1"}
        await self.error(too_many_body_bytes(self.limits.max_body_bytes), extra)
        return False

    async def _serve(self, request: Request, head: Head) -> bool:
        """Answer one request. False when the connection must close afterwards."""
        try:
            try:
                if not await self._read_body(request, head):
                    return False
            except BadRequest as exc:
                await self._protocol_error(exc)
                return False
            # Both framings at once (RFC 9112 §6.1): answer, then close the connection.
            headers = request.headers
            ambiguous = "transfer-encoding" in headers and "content-length" in headers
            if self.taps.watching:
                ctype = headers.get("content-type")
                body = bytes(request.body)
                seen = HttpIn(request.method, request.path, request.query, body, ctype)
                await self.taps.request(seen)
            try:
                self.owner = None  # until the key is checked
                self.owner = authorize(request, self.config.api_keys)
                await route(self, request)
            except Disconnected:  # the client left in the middle of a streamed reply
                raise _Closed() from None
            except ProtocolError as exc:
                if not self.http.responding:
                    await self.error(exc)
                else:
                    return False
            return not ambiguous
        finally:  # the body is let go of: its bytes go back to the server's budget
            assert self.limits is not None
            self.limits.release(self._reserved)
            self._reserved = 0

    # -- what resources need of the connection ---------------------------------------------------

    async def reply_bytes(self, status: int, content_type: str, data: bytes) -> None:
        await self._respond(status, self._headers(content_type), data)

    def sse(self) -> SseSink:
        self._sink = SseSink(
            self.http,
            self._send_framed,
            self._sse_head,
            self.flusher,
            self.taps,
            close=self.stream.aclose,
            body=not self._head_only,
            write_now=self._io.write_now,
            writable=self._io.writable,
        )
        return self._sink

    async def _sse_head(self) -> bytes:
        self.status = 200
        if self.taps.recorder is not None:
            await self.taps.status(200)
        head = self._headers("text/event-stream", {"cache-control": "no-cache"})
        return self.http.response_head(200, head)

    async def _send_framed(self, data: bytes) -> None:
        """Bytes already framed (an SSE body's writer)."""
        if data:
            try:
                await self._io.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise SseBroken() from None


def _request(head: Head) -> Request:
    """The request a head names; BadRequest (400) for a target that is no URL (`//[`)."""
    target = head.target
    if target[:1] == "/" and target[1:2] != "/" and "?" not in target and "#" not in target:
        path, query = target, {}  # what urlsplit and parse_qs make of it
    else:
        try:
            split = urlsplit(target)
        except ValueError:
            raise BadRequest("the request target is not a URL") from None
        path, query = split.path, parse_qs(split.query)
    return Request(method=head.method, path=path, query=query, headers=head.headers)
