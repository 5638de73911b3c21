# Shared helpers of the bad-input tests: an in-process server run inside the test (so that its
# log records, teardown included, are seen by `caplog`), the log check, a raw HTTP/1.1 client and
# a raw WebSocket client on trio sockets (they send what no client library will: broken framing,
# invalid UTF-8, unmasked frames, stalled heads), and the error checks of both transports.
from __future__ import annotations

import functools
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import attrs
import orjson
import pytest
import trio
import wsproto
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Request,
    TextMessage,
)

import rollout
from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy, Step, call, text
from rollout.service.config import ServerConfig
from rollout.service.service import Service

MODEL = "gpt-test"
TIMEOUT = 5.0
ANSWER = "Still here."
ANY: Any = object()  # "any value" in an expectation
MAX_MESSAGE = 512  # characters of an error message, however large the value it echoes
MAX_PARAM = 256  # characters of an error's `param`, however long a client's key

EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "exec",
    "description": "Run a shell command.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}


def policy() -> ScriptedPolicy:
    """A request that offers `exec` gets one `exec` call first (an append rollout suspends on
    it), then a text answer; any other request gets the text answer at once."""

    def step(ctx: Any) -> Step:
        if "exec" in ctx.function_tools and ctx.model_turns == 0:
            return call("exec", {"cmd": "ls"})
        return text(ANSWER)

    return ScriptedPolicy(step)


def output(call_id: str, out: str = "a b c") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": out}


def deep(levels: int) -> bytes:
    """`levels` nested JSON arrays."""
    return b"[" * levels + b"]" * levels


# -- the server ---------------------------------------------------------------------------------


@attrs.frozen
class Server:
    engine: Engine
    config: ServerConfig
    rollouts: Service
    port: int


@asynccontextmanager
async def running(**config: Any) -> AsyncIterator[Server]:
    """A server in a nursery of the test itself: on exit it is cancelled and every connection
    task has ended, so whatever it logged (teardown too) is in `caplog`."""
    engine = Engine(policy=policy())
    cfg = ServerConfig(**config)
    rollouts = Service(engine, cfg)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, service=rollouts))
        try:
            yield Server(engine, cfg, rollouts, port)
        finally:
            nursery.cancel_scope.cancel()


def watch_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.WARNING, logger="rollout")


def assert_no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """No record with a traceback, none at ERROR or above (root logger and "rollout")."""
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, [f"{r.levelname} {r.name}: {r.getMessage()} {r.exc_info!r}" for r in bad]


def check_error(
    error: Any, *, code: str | None, param: str | None, type_: str = "invalid_request_error"
) -> None:
    """The error object: all four keys, `type`, `code`, `param` as expected (ANY: not checked).
    The message and `param` are short whatever the client sent (values are echoed truncated)."""
    assert isinstance(error, dict), error
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"], error
    assert len(error["message"]) <= MAX_MESSAGE, (len(error["message"]), error["message"][:300])
    assert error["param"] is None or len(error["param"]) <= MAX_PARAM, error["param"][:300]
    for key, want in (("type", type_), ("code", code), ("param", param)):
        if want is not ANY:
            assert error[key] == want, (key, error)


# -- a raw HTTP/1.1 client ----------------------------------------------------------------------


@attrs.define
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    def sse(self) -> list[dict[str, Any]]:
        """The `data:` objects of an event stream, checked against their `event:` names."""
        text_ = self.body.decode()
        assert text_.endswith("\n\n"), text_[-200:]
        out = []
        for block in text_[:-2].split("\n\n"):
            name, data = block.split("\n")
            event = orjson.loads(data.removeprefix("data: "))
            assert name == f"event: {event['type']}", block
            out.append(event)
        return out


class HttpClosed(Exception):
    """The server closed the connection."""


class RawHttp:
    """One TCP connection; requests are raw bytes, responses are parsed strictly."""

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

    async def closed_within(self, seconds: float) -> bool:
        """True if the server closes the connection within `seconds` (what it sends until then
        lands in `buf`)."""
        with trio.move_on_after(seconds):
            try:
                while True:
                    await self._fill()
            except HttpClosed:
                return True
        return False


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


def create_body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "Are you still there?", **extra}


async def http_create(conn: RawHttp) -> HttpResponse:
    """A valid create on `conn`: 200 with a completed response."""
    await conn.send(post(create_body()))
    r = await conn.read_response()
    assert r.status == 200, r
    assert r.json()["status"] == "completed", r.body[:300]
    assert ANSWER in r.body.decode(), r.body[:300]
    return r


# -- a raw WebSocket client ---------------------------------------------------------------------


class WsClosedError(Exception):
    def __init__(self, code: int, reason: str | None) -> None:
        super().__init__(f"closed {code} {reason!r}")
        self.code = code
        self.reason = reason


def raw_frame(
    opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0, mask: bool = True
) -> bytes:
    """One WebSocket frame as a client would put it on the wire (masked unless told)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head = bytes([first, bit | n])
    elif n < 1 << 16:
        head = bytes([first, bit | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([first, bit | 127]) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + key + masked


TEXT, BINARY, CONTINUATION, CLOSE, PING = 0x1, 0x2, 0x0, 0x8, 0x9


class WsClient:
    """A client on a trio socket, driven through wsproto; raw frames can be sent too."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.conn = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        self._pending: deque[Any] = deque()
        self._text = ""
        self.close_code: int | None = None

    @classmethod
    async def connect(cls, port: int) -> WsClient:
        client = cls(await trio.open_tcp_stream("127.0.0.1", port))
        request = Request(host="127.0.0.1", target="/v1/responses")
        await client.stream.send_all(client.conn.send(request))
        event = await client._event()
        assert isinstance(event, AcceptConnection), event
        return client

    async def _event(self) -> Any:
        with trio.fail_after(TIMEOUT):
            while not self._pending:
                try:
                    data = await self.stream.receive_some(65536)
                except trio.BrokenResourceError:
                    data = b""
                self.conn.receive_data(data or None)
                self._pending.extend(self.conn.events())
        return self._pending.popleft()

    async def send_json(self, value: Any) -> None:
        await self.send_text(value if isinstance(value, str) else orjson.dumps(value).decode())

    async def send_text(self, message: str) -> None:
        await self.stream.send_all(self.conn.send(TextMessage(data=message)))

    async def send_bytes(self, message: bytes) -> None:
        await self.stream.send_all(self.conn.send(BytesMessage(data=message)))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def recv(self) -> dict[str, Any]:
        """The next event; WsClosedError when the server closes instead."""
        while True:
            event = await self._event()
            if isinstance(event, Ping):
                await self.stream.send_all(self.conn.send(event.response()))
            elif isinstance(event, TextMessage):
                self._text += event.data
                if event.message_finished:
                    data, self._text = self._text, ""
                    value = orjson.loads(data)
                    assert isinstance(value, dict) and isinstance(value.get("type"), str), data
                    return value
            elif isinstance(event, CloseConnection):
                self.close_code = event.code
                if self.conn.state is ConnectionState.REMOTE_CLOSING:
                    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        await self.stream.send_all(self.conn.send(event.response()))
                raise WsClosedError(event.code, event.reason)
            else:
                raise AssertionError(f"unexpected {event!r} (the server sends only text)")

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        events = [await self.recv()]
        while not done(events[-1]):
            events.append(await self.recv())
        return events

    async def expect_close(self) -> tuple[int, list[dict[str, Any]]]:
        """Events up to the server's close frame, and its code."""
        events = []
        while True:
            try:
                events.append(await self.recv())
            except WsClosedError as exc:
                return exc.code, events

    async def aclose(self) -> None:
        if self.conn.state is ConnectionState.OPEN:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.stream.send_all(self.conn.send(CloseConnection(code=1000)))
        await self.stream.aclose()


TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})


def ends(event: dict[str, Any]) -> bool:
    return event["type"] in TERMINAL or event["type"] in ("response.done", "error")


def check_response_events(
    events: list[dict[str, Any]], *, lane: str | None, last: str = "response.completed"
) -> dict[str, Any]:
    """One response's events, all on `lane`, ending with `last`; returns the last event."""
    for e in events:
        assert e.get("stream_id") == lane, (lane, e)
        assert e["type"] != "error", e
    assert events[-1]["type"] == last, events[-1]
    return events[-1]
