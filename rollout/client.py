# The trio client: HTTP (h11, keep-alive, SSE) and WebSocket connections to a Responses server,
# typed events (protocol.events), and one agent runner that drives a rollout in any of six modes
# with the same agent code: http-full, http-chain, ws-full, ws-chain, ws-append, http-append.
from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import attrs
import h11
import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from protocol import codec
from protocol.events import (
    TERMINAL_TYPES,
    ErrorEvent,
    Event,
    OutputItemEvent,
    PauseEvent,
    ResponseEvent,
    TextDeltaEvent,
)
from protocol.items import FunctionCall, FunctionCallOutput

MODES = ("http-full", "http-chain", "ws-full", "ws-chain", "ws-append", "http-append")


class ClientError(Exception):
    """The server refused a request: an HTTP error status or an `error` event."""

    def __init__(self, status: int | None, error: Mapping[str, Any]) -> None:
        super().__init__(f"{status} {error.get('code')}: {error.get('message')}")
        self.status = status
        self.error = dict(error)

    @property
    def code(self) -> str | None:
        return self.error.get("code")


# -- HTTP -------------------------------------------------------------------------------------


class HttpClient:
    """One keep-alive HTTP/1.1 connection (h11 over trio). Not for concurrent requests."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        split = urlsplit(base_url)
        self.host = split.hostname or "127.0.0.1"
        self.port = split.port or 80
        self.prefix = split.path.rstrip("/")
        self.api_key = api_key
        self._stream: trio.SocketStream | None = None
        self._conn = h11.Connection(h11.CLIENT)
        self.bytes_sent = 0
        self.bytes_received = 0

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()
            self._stream = None

    async def _connect(self) -> trio.SocketStream:
        if self._stream is None or self._conn.our_state is h11.MUST_CLOSE:
            await self.aclose()
            self._stream = await trio.open_tcp_stream(self.host, self.port)
            self._conn = h11.Connection(h11.CLIENT)
        elif self._conn.our_state is h11.DONE:
            self._conn.start_next_cycle()
        return self._stream

    async def _send(self, event: Any) -> None:
        assert self._stream is not None
        data = self._conn.send(event)
        if data:
            self.bytes_sent += len(data)
            await self._stream.send_all(data)

    async def _next(self) -> Any:
        assert self._stream is not None
        while True:
            event = self._conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self._stream.receive_some(65536)
            self.bytes_received += len(data)
            self._conn.receive_data(bytes(data))
            if not data and self._conn.their_state is not h11.DONE:
                try:
                    self._conn.next_event()
                except h11.RemoteProtocolError:
                    raise ConnectionError("the server closed the connection mid-response") from None

    async def request(
        self, method: str, path: str, body: Any = None
    ) -> tuple[int, dict[str, str], AsyncIterator[bytes]]:
        """Send a request; the status, headers and an iterator over the body's chunks."""
        await self._connect()
        data = b"" if body is None else orjson.dumps(body)
        headers = [("host", f"{self.host}:{self.port}"), ("content-length", str(len(data)))]
        if body is not None:
            headers.append(("content-type", "application/json"))
        if self.api_key:
            headers.append(("authorization", f"Bearer {self.api_key}"))
        await self._send(h11.Request(method=method, target=self.prefix + path, headers=headers))
        await self._send(h11.Data(data=data))
        await self._send(h11.EndOfMessage())
        response = await self._next()
        if not isinstance(response, h11.Response):
            raise ConnectionError(f"unexpected {response!r}")
        head = {k.decode().lower(): v.decode() for k, v in response.headers}

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                event = await self._next()
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    return

        return response.status_code, head, chunks()

    async def json(self, method: str, path: str, body: Any = None) -> Any:
        status, _, chunks = await self.request(method, path, body)
        data = b"".join([c async for c in chunks])
        value = orjson.loads(data) if data else None
        if status >= 400:
            raise ClientError(status, (value or {}).get("error", {}))
        return value

    async def create(self, body: Mapping[str, Any]) -> AsyncIterator[Event]:
        """`POST /responses` streamed: iterate the result for its typed events."""
        return self.events("/responses", {**body, "stream": True})

    async def append(
        self, response_id: str, items: Sequence[Mapping[str, Any]]
    ) -> AsyncIterator[Event]:
        """Resume an append-shape rollout: events up to its next pause or its end."""
        return self.events(f"/responses/{response_id}/append", {"input": list(items)})

    async def cancel(self, response_id: str) -> Any:
        """Cancel an append-shape rollout; the final response (status `incomplete`)."""
        return await self.json("POST", f"/responses/{response_id}/cancel")

    async def events(self, path: str, body: Any) -> AsyncIterator[Event]:
        """POST and stream the SSE events (an error status raises ClientError)."""
        status, head, chunks = await self.request("POST", path, body)
        if status >= 400 or not head.get("content-type", "").startswith("text/event-stream"):
            data = b"".join([c async for c in chunks])
            value = orjson.loads(data) if data else {}
            error = value.get("error") if isinstance(value, dict) else None
            raise ClientError(status, error or {"message": "expected an SSE stream"})
        buffer = b""
        async for chunk in chunks:
            buffer += chunk
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                for line in block.split(b"\n"):
                    if line.startswith(b"data: "):
                        yield _event(orjson.loads(line[6:]))


def _event(value: dict[str, Any]) -> Event:
    event = codec.decode_event(value)
    if isinstance(event, ErrorEvent) and event.sequence_number is None:
        raise ClientError(event.status, codec.to_json(event.error))
    return event


# -- WebSocket --------------------------------------------------------------------------------


class WsClient:
    """A WebSocket connection; events are routed to per-lane queues by `stream_id`."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._lanes: dict[str | None, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._receivers: dict[str | None, trio.MemoryReceiveChannel[dict[str, Any]]] = {}
        self.bytes_sent = 0
        self.bytes_received = 0

    def _lane(self, lane: str | None) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        if lane not in self._receivers:
            send, receive = trio.open_memory_channel[dict[str, Any]](1024)
            self._lanes[lane], self._receivers[lane] = send, receive
        return self._receivers[lane]

    async def read_until_closed(self) -> None:
        """Route every frame to its lane; when the connection closes, end every lane."""
        try:
            await self._read()
        except ConnectionClosed:
            pass
        finally:
            for channel in self._lanes.values():
                channel.close()

    async def _read(self) -> None:
        while True:
            message = await self.ws.get_message()
            self.bytes_received += len(message)
            value = orjson.loads(message)
            lane = value.get("stream_id")
            self._lane(lane)
            await self._lanes[lane].send(value)

    async def send(self, frame: Mapping[str, Any]) -> None:
        data = orjson.dumps(frame).decode()
        self.bytes_sent += len(data)
        await self.ws.send_message(data)

    async def events(self, lane: str | None = None) -> AsyncIterator[Event]:
        """Events of `lane` until the next pause, terminal event or request error."""
        receive = self._lane(lane)
        async for value in receive:
            event = _event(value)
            yield event
            if isinstance(event, PauseEvent) or event.type in TERMINAL_TYPES:
                return

    async def create(
        self, body: Mapping[str, Any], lane: str | None = None
    ) -> AsyncIterator[Event]:
        """Send `response.create`; iterate the result for its typed events (to the first pause
        or the terminal event)."""
        frame = {"type": "response.create", **body}
        if lane is not None:
            frame["stream_id"] = lane
        await self.send(frame)
        return self.events(lane)

    async def append(
        self, response_id: str, items: Sequence[Mapping[str, Any]], lane: str | None = None
    ) -> AsyncIterator[Event]:
        """Send `response.append`; iterate the result for the events up to the next pause or the
        end (`lane`: the rollout's stream_id, if it has one)."""
        await self.send({"type": "response.append", "response_id": response_id, "input": items})
        return self.events(lane)

    async def cancel(self, response_id: str) -> None:
        await self.send({"type": "response.cancel", "response_id": response_id})


@asynccontextmanager
async def connect_ws(url: str, api_key: str | None = None) -> AsyncIterator[WsClient]:
    """A WebSocket client for `url` (`ws://host:port/v1/responses`), open for the block."""
    headers = [(b"authorization", f"Bearer {api_key}".encode())] if api_key else []
    async with open_websocket_url(
        url, extra_headers=headers, receive_buffer_size=256 * 1024, max_message_size=1 << 26
    ) as ws:
        client = WsClient(ws)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.read_until_closed)
            yield client
            nursery.cancel_scope.cancel()


# -- the agent runner -------------------------------------------------------------------------

Tool = Callable[[dict[str, Any]], Any]


@attrs.define
class Turn:
    """What one stretch of events produced: tool calls to run, or the final answer."""

    response_id: str
    calls: list[FunctionCall]
    output: list[dict[str, Any]]  # the output items, as JSON, in order
    text: str
    status: str  # paused | completed | incomplete | failed
    first_token_s: float | None
    events: int
    seconds: float  # from sending the request to its pause or terminal event


async def collect(events: AsyncIterator[Event], started: float) -> Turn:
    response_id = ""
    calls: list[FunctionCall] = []
    output: list[dict[str, Any]] = []
    text: list[str] = []
    first: float | None = None
    n = 0
    status = "paused"
    async for event in events:
        n += 1
        if isinstance(event, ResponseEvent):
            response_id = event.response.id
            if event.type in TERMINAL_TYPES:
                status = event.response.status
        elif isinstance(event, PauseEvent):
            response_id = event.response_id
        elif isinstance(event, TextDeltaEvent):
            text.append(event.delta)
            if first is None:
                first = time.perf_counter() - started
        elif isinstance(event, OutputItemEvent) and event.type == "response.output_item.done":
            output.append(codec.to_json(event.item))
            if isinstance(event.item, FunctionCall):
                calls.append(event.item)
                if first is None:
                    first = time.perf_counter() - started
    seconds = time.perf_counter() - started
    return Turn(response_id, calls, output, "".join(text), status, first, n, seconds)


@attrs.define
class AgentResult:
    mode: str
    text: str
    calls: list[tuple[str, str]]  # (name, arguments) in order
    turns: list[Turn]
    seconds: float
    client_seconds: float
    bytes_sent: int
    bytes_received: int
    spans: list[tuple[str, float, float]]  # client-side (name, start, end), perf_counter

    @property
    def response_ids(self) -> list[str]:
        return [t.response_id for t in self.turns]


async def _run_tool(tools: Mapping[str, Tool], call: FunctionCall) -> dict[str, Any]:
    fn = tools.get(call.name)
    if fn is None:
        output: Any = f"error: no tool named {call.name}"
    else:
        output = fn(orjson.loads(call.arguments or "{}"))
        if inspect.isawaitable(output):
            output = await output
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    return codec.to_json(FunctionCallOutput(call_id=call.call_id, output=text)) | {"id": None}


def _clean(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


async def run_agent(
    mode: str,
    base_url: str,
    request: Mapping[str, Any],
    tools: Mapping[str, Tool],
    *,
    api_key: str | None = None,
) -> AgentResult:
    """Run one rollout in `mode` against the server at `base_url` (`http://host:port/v1`).

    `request` is the create body of the first turn (model, input, tools, instructions, ...);
    `tools` maps each function tool's name to a local function of its parsed arguments (sync or
    async; a non-string result is sent as JSON). The agent code is the same in every mode; only
    how a turn is sent differs.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    transport, shape = mode.split("-")
    body = dict(request)
    body.pop("stream", None)
    body["store"] = mode == "http-chain"
    if shape == "append":
        body["shape"] = "append"
    turns: list[Turn] = []
    spans: list[tuple[str, float, float]] = []
    client_seconds = 0.0
    start = time.perf_counter()
    async with AsyncExitStack() as stack:
        if transport == "ws":
            ws_url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
            client: WsClient | HttpClient = await stack.enter_async_context(
                connect_ws(ws_url, api_key)
            )
        else:
            client = await stack.enter_async_context(HttpClient(base_url, api_key))
        history: list[dict[str, Any]] = _initial_input(body.get("input"))
        t = time.perf_counter()
        turn = await collect(await client.create(body), t)
        turns.append(turn)
        spans.append(("turn", t, t + turn.seconds))
        while turn.calls and turn.status in ("paused", "completed"):
            c = time.perf_counter()
            outputs = [await _run_tool(tools, call) for call in turn.calls]
            done = time.perf_counter()
            client_seconds += done - c
            spans.append(("client tools", c, done))
            outputs = [_clean(o) for o in outputs]
            t = time.perf_counter()
            if shape == "append":
                turn = await collect(await client.append(turn.response_id, outputs), t)
            elif shape == "chain":
                nxt = {**body, "input": outputs, "previous_response_id": turn.response_id}
                turn = await collect(await client.create(nxt), t)
            else:
                history += [_clean(o) for o in turn.output] + outputs
                turn = await collect(await client.create({**body, "input": history}), t)
            turns.append(turn)
            spans.append(("turn", t, t + turn.seconds))
    calls = [(c.name, c.arguments) for t in turns for c in t.calls]
    return AgentResult(
        mode=mode,
        text=turns[-1].text,
        calls=calls,
        turns=turns,
        seconds=time.perf_counter() - start,
        client_seconds=client_seconds,
        bytes_sent=client.bytes_sent,
        bytes_received=client.bytes_received,
        spans=spans,
    )


def _initial_input(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return list(value)


__all__ = [
    "MODES",
    "AgentResult",
    "ClientError",
    "HttpClient",
    "Turn",
    "WsClient",
    "collect",
    "connect_ws",
    "run_agent",
]
