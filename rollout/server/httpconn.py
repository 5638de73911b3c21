# HTTP/1.1 on trio with h11: framing only. Keep-alive, body and header limits (and the
# server-wide body budget), HEAD answered without a body, SSE bodies (rollout.server.ssebody), and
# the standard error envelope; the REST surface itself (routes and handlers) is
# rollout.server.resources. A WebSocket upgrade on /v1/responses, once vetted
# (rollout.server.admission, which checks API keys too), is handed to the WebSocket module with
# the bytes already read, so both transports share one port.
from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import h11
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
from rollout.server.limits import Limits, too_many_body_bytes
from rollout.server.resources import route
from rollout.server.sockio import writable, write_now
from rollout.server.ssebody import SseBroken, SseSink
from rollout.server.wsconn import Handshake
from rollout.server.wsmode import serve_websocket
from rollout.service.config import ServerConfig
from rollout.service.record import HttpIn
from rollout.service.service import Service
from rollout.service.taps import Taps

log = logging.getLogger("rollout.server.httpconn")
RECEIVE = 65536
JSON = "application/json"


class _Closed(Exception):
    """The peer went away or the connection must close; nothing more to send."""


class _BodyTooLarge(Exception):
    """The body being read declares more than the limit (a chunk's size says so)."""


@attrs.define(eq=False)
class HttpConnection:
    stream: trio.abc.Stream
    service: Service
    engine: Engine = attrs.field(init=False)
    config: ServerConfig = attrs.field(init=False)
    owner: str | None = None  # the API key of the current request, when keys are configured
    conn: h11.Connection = attrs.field(init=False)
    request_id: str = ""
    status: int = 0  # of the current request's response, for the access log
    number: int = 0  # this connection's number (for capture)
    taps: Taps = attrs.field(init=False)
    limits: Limits | None = None  # server-wide counters (made here if not given)
    _head: bytearray = attrs.field(factory=bytearray)  # raw bytes of the current request head
    _head_only: bool = False  # the current request is HEAD: its response has no body
    _reserved: int = 0  # bytes of the body budget the current request holds
    _body_seen: int = 0  # bytes of the current request's body received so far
    _linger: bool = False  # close lingering: the peer may still be sending (see closing.py)
    _nursery: trio.Nursery | None = None  # the connection's tasks (SSE writers)

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
        self.conn = h11.Connection(
            h11.SERVER, max_incomplete_event_size=self.config.max_header_bytes
        )

    # -- I/O ------------------------------------------------------------------------------------

    async def _next(self, timeout: float, body_limit: int | None = None) -> Any:
        """The next h11 event. Waiting for a request head, `timeout` is the idle limit until its
        first byte, then the head must be complete within the header timeout. Reading a body
        within `body_limit`, a chunk declaring more raises _BodyTooLarge before it is read."""
        with trio.move_on_after(timeout) as scope:
            while True:
                event = self.conn.next_event()
                if event is not h11.NEED_DATA:
                    return event
                if body_limit is not None and self._body_seen + _chunk_left(self.conn) > body_limit:
                    raise _BodyTooLarge()
                if self.conn.their_state is h11.IDLE and self._head:
                    scope.deadline = min(
                        scope.deadline, trio.current_time() + self.config.header_timeout_s
                    )
                try:
                    data = await self.stream.receive_some(RECEIVE)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    raise _Closed() from None
                if self.conn.their_state is h11.IDLE:
                    self._head += data  # the head so far (its size is limited)
                    if (
                        len(self._head) > self.config.max_header_bytes
                        and b"\r\n\r\n" not in (self._head[: self.config.max_header_bytes + 4])
                    ):
                        raise h11.RemoteProtocolError("head too large", error_status_hint=431)
                self.conn.receive_data(bytes(data))
        if scope.cancelled_caught:
            raise _Closed()

    async def _send(self, event: Any) -> None:
        if isinstance(event, h11.Response):
            self.status = event.status_code
        elif isinstance(event, h11.Data) and self._head_only:
            return  # HEAD: the head a GET would get, no body (h11 frames it as empty)
        data = self.conn.send(event)
        if data:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _Closed() from None

    def _headers(self, content_type: str, extra: dict[str, str] | None = None) -> list[Any]:
        headers = [("content-type", content_type), ("x-request-id", self.request_id)]
        if self.config.worker_id is not None:
            headers.append(("x-rollout-worker", self.config.worker_id))
        headers += list((extra or {}).items())
        return headers

    async def reply(self, status: int, body: Any, extra: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        await self.taps.status(status, data)
        headers = [*self._headers(JSON, extra), ("content-length", str(len(data)))]
        await self._send(h11.Response(status_code=status, headers=headers))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())

    async def error(self, exc: ProtocolError, extra: dict[str, str] | None = None) -> None:
        await self.taps.error(exc)
        if exc.headers:
            extra = {**exc.headers, **(extra or {})}
        if exc.status in (429, 503):  # retryable: say when
            extra = {"retry-after": "1", **(extra or {})}
        if self.conn.their_state is not h11.DONE:
            self._linger = True  # answered before the request was read to its end
        await self.reply(exc.status, {"error": exc.payload()}, extra)

    # -- the connection -------------------------------------------------------------------------

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:  # for SSE bodies' writer tasks
            self._nursery = nursery
            try:
                await self._run()
            finally:
                nursery.cancel_scope.cancel()

    async def _run(self) -> None:
        setup = self.engine.costs.connection_setup_s
        if setup > 0:
            with self.engine.stats.totals.stage("connect"):
                await trio.sleep(setup)
        try:
            while True:
                try:
                    event = await self._next(self.config.idle_timeout_s)
                except h11.RemoteProtocolError as exc:
                    await self._protocol_error(exc)
                    return
                if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
                if not isinstance(event, h11.Request):
                    return
                self.request_id = new_id("req")
                request = _request(event)
                self._head_only = request.method == "HEAD"
                if is_upgrade(request):
                    await self._upgrade(request, Handshake(list(event.headers), event.target))
                    return
                self.engine.stats.http_in_flight += 1
                self.status = 0
                started = time.perf_counter()
                try:
                    served = await self._serve(request)
                finally:
                    self.engine.stats.http_in_flight -= 1
                    self.engine.notify()
                    logs.event(
                        "http_request",
                        request_id=self.request_id,
                        method=request.method,
                        path=request.path[:200],
                        status=self.status,
                        ms=round((time.perf_counter() - started) * 1000, 2),
                    )
                if not served:
                    return
                if self.conn.our_state is h11.MUST_CLOSE or self.conn.their_state is not h11.DONE:
                    return
                self.conn.start_next_cycle()
                self._head = bytearray(self.conn.trailing_data[0])
        except _Closed:
            return
        finally:
            await self.taps.aclose()  # first: closing the stream raises if cancelled
            if self._linger:
                await linger_close(self.stream)
            else:
                with trio.move_on_after(1):
                    await self.stream.aclose()

    async def _upgrade(self, request: Request, handshake: Handshake) -> None:
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
        # What was read past the request head (frames sent in the same write) is frame data.
        trailing = bytes(self.conn.trailing_data[0])
        try:
            await serve_websocket(
                self.stream,
                handshake,
                self.service,
                self.owner,
                self.request_id,
                self.number,
                trailing=trailing,
                betas=betas_of(request.headers.get("openai-beta", "")),
            )
        finally:
            self.engine.stats.ws_connections -= 1

    async def _protocol_error(self, exc: h11.RemoteProtocolError) -> None:
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.request_id = self.request_id or new_id("req")
            status = exc.error_status_hint
            message = "The request could not be parsed as HTTP/1.1."
            if status == 431:
                message = "The request headers are too large."
            await self.error(ProtocolError(message=message, code="bad_request", status=status))

    async def _read_body(self, request: Request) -> bool:
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
        if self.conn.client_is_waiting_for_100_continue:
            await self._send(
                h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")
            )
        chunks: list[bytes] = []
        self._body_seen = 0
        deadline = trio.current_time() + self.config.header_timeout_s  # for the whole body
        while True:
            try:
                event = await self._next(max(0.0, deadline - trio.current_time()), limit)
            except _BodyTooLarge:
                await self.error(errors.body_too_large(limit), {"connection": "close"})
                return False
            if isinstance(event, h11.Data):
                self._body_seen += len(event.data)
                if self._body_seen > limit:
                    await self.error(errors.body_too_large(limit), {"connection": "close"})
                    return False
                if declared is None and not self._reserve(len(event.data)):
                    return await self._over_budget()
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                request.body = b"".join(chunks)
                return True
            else:
                raise _Closed()

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

    async def _serve(self, request: Request) -> bool:
        """Answer one request. False when the connection must close afterwards."""
        try:
            return await self._answer(request)
        finally:  # the body is let go of: its bytes go back to the server's budget
            assert self.limits is not None
            self.limits.release(self._reserved)
            self._reserved = 0

    async def _answer(self, request: Request) -> bool:
        try:
            if not await self._read_body(request):
                return False
        except h11.RemoteProtocolError as exc:
            await self._protocol_error(exc)
            return False
        # Both framings at once (RFC 9112 §6.1): answer, then close the connection.
        ambiguous = "transfer-encoding" in request.headers and "content-length" in request.headers
        content_type = request.headers.get("content-type")
        seen = HttpIn(request.method, request.path, request.query, request.body, content_type)
        await self.taps.request(seen)
        try:
            self.owner = None  # until the key is checked
            self.owner = authorize(request, self.config.api_keys)
            await route(self, request)
        except Disconnected:  # the client left in the middle of a streamed reply
            raise _Closed() from None
        except ProtocolError as exc:
            if self.conn.our_state is h11.SEND_RESPONSE:
                await self.error(exc)
            else:
                return False
        return not ambiguous

    # -- what resources need of the connection ---------------------------------------------------

    async def reply_bytes(self, status: int, content_type: str, data: bytes) -> None:
        headers = [*self._headers(content_type), ("content-length", str(len(data)))]
        await self._send(h11.Response(status_code=status, headers=headers))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())

    def sse(self) -> SseSink:
        assert self._nursery is not None
        return SseSink(
            self.conn,
            self._write,
            self._sse_head,
            self._nursery,
            self.taps,
            close=self.stream.aclose,
            body=not self._head_only,
            write_now=write_now(self.stream, SseBroken),
            writable=writable(self.stream, SseBroken),
        )

    async def _sse_head(self) -> h11.Response:
        self.status = 200
        await self.taps.status(200)
        head = self._headers("text/event-stream", {"cache-control": "no-cache"})
        return h11.Response(status_code=200, headers=head)

    async def _write(self, data: bytes) -> None:
        """Bytes already framed by h11 (an SSE body's writer)."""
        if data:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise SseBroken() from None


def _request(event: h11.Request) -> Request:
    target = event.target.decode("latin-1")
    split = urlsplit(target)
    headers: dict[str, str] = {}
    for name, value in event.headers:
        headers[name.decode("latin-1").lower()] = value.decode("latin-1")
    return Request(
        method=event.method.decode("latin-1"),
        path=split.path,
        query=parse_qs(split.query),
        headers=headers,
    )


def _chunk_left(conn: h11.Connection) -> int:
    """Bytes still to come in the chunk of a chunked body being read, by its declared size.
    h11 parses the size but does not expose it (ChunkedReader._bytes_in_chunk); 0 if unknown."""
    left = getattr(getattr(conn, "_reader", None), "_bytes_in_chunk", 0)
    return left if isinstance(left, int) else 0
