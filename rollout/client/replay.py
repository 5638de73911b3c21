# Replaying the client side of a recording: `replay_session(path, base_url)` sends the recorded
# requests again, in order, over the same transports (HTTP through the project's HttpClient and
# SSE decoder, WebSocket through trio-websocket), putting the new server's ids where the
# recorded ones were, and returns what came back; `normalize` makes that comparable with the
# recording's own side (`rollout.model.recorded.recorded_events`): ids renumbered, times dropped.
from __future__ import annotations

import base64
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
import h11
import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from protocol.sse import SSEDecoder, SSEError
from rollout.client.http import HttpClient
from rollout.model.recorded import by_connection, load, payload
from rollout.service.capture import parse

# Ids the server makes (rollout.conversation.ids.new_id: a prefix and 48 hex digits).
ID = re.compile(r"\b(resp|msg|fco|fc|call|ws|req|rs)_[0-9a-f]{16,}\b")
# WebSocket events after which a recorded client may have reacted (sent its next frame).
BOUNDARY = frozenset(
    {"response.done", "response.completed", "response.failed", "response.incomplete", "error"}
)
_VOLATILE = frozenset({"created_at", "completed_at", "t", "n"})


# -- normalizing --------------------------------------------------------------------------------


def normalize(events: Iterable[Mapping[str, Any]]) -> list[Any]:
    """Events (or recorded/replayed records) with what differs between two runs of the same
    session taken out: every id (`resp_…`, `msg_…`, `fc_…`, `call_…`, `ws_…`, `req_…`, …) becomes
    `<prefix>_<k>` numbered by first appearance (so equal ids stay equal, also inside messages),
    `created_at`, `completed_at` and line timings (`t`, `n`) are dropped. Records are grouped by
    connection and WebSocket lane, keeping their order within each (lanes interleave by timing),
    and connections are renumbered 1, 2, ... in order.
    """
    items = list(events)

    def key(e: Mapping[str, Any]) -> tuple[int, str]:
        body = e.get("event", e)
        lane = body.get("stream_id") if isinstance(body, Mapping) else None
        return (e.get("conn", 0) or 0, lane or "")

    items.sort(key=key)
    # Connections are numbered 1, 2, ... in order (a server numbers every connection it accepts).
    rank = {c: i + 1 for i, c in enumerate(sorted({e.get("conn", 0) or 0 for e in items}))}
    items = [{**e, "conn": rank[e.get("conn", 0) or 0]} if "conn" in e else e for e in items]
    names: dict[str, str] = {}
    counts: Counter[str] = Counter()

    def rename(match: re.Match[str]) -> str:
        found = match.group(0)
        if found not in names:
            prefix = match.group(1)
            counts[prefix] += 1
            names[found] = f"{prefix}_{counts[prefix]}"
        return names[found]

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return ID.sub(rename, value)
        if isinstance(value, Mapping):
            return {k: walk(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    return [walk(e) for e in items]


def _ids(value: Any) -> Iterator[str]:
    """The server-made ids in a JSON value, in order of appearance."""
    if isinstance(value, str):
        for match in ID.finditer(value):
            yield match.group(0)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _ids(v)
    elif isinstance(value, list):
        for v in value:
            yield from _ids(v)


# -- replaying ----------------------------------------------------------------------------------


class _Ids:
    """Ids by order of appearance per (connection, lane, prefix), to map recorded ids to new."""

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], list[str]] = defaultdict(list)
        self.where: dict[str, tuple[tuple[Any, ...], int]] = {}

    def note(self, record: Mapping[str, Any]) -> None:
        event = record.get("event")
        lane = event.get("stream_id") if isinstance(event, Mapping) else None
        for found in _ids(payload(record)):
            if found in self.where:
                continue
            key = (record.get("conn"), lane, found.split("_", 1)[0])
            self.where[found] = (key, len(self.seen[key]))
            self.seen[key].append(found)


@attrs.define(eq=False)
class _Conn:
    number: int
    transport: str
    received: list[dict[str, Any]] = attrs.field(factory=list)
    boundaries: int = 0
    ws: WebSocketConnection | None = None
    http: HttpClient | None = None
    closed: bool = False


async def _exchange(
    http: HttpClient, record: Mapping[str, Any], out: list[dict[str, Any]], tag: dict[str, Any]
) -> None:
    """One recorded HTTP request sent again, byte for byte; what comes back is appended to `out`
    as it arrives (a JSON reply, or the start of an SSE stream and then each event)."""
    if "text" in record:  # recorded as text: it was not JSON
        data = str(record["text"]).encode()
    elif record.get("body") is None:
        data = b""
    else:
        data = orjson.dumps(record["body"])
    target = str(record.get("path", "/"))
    if record.get("query"):
        target += "?" + urlencode(record["query"], doseq=True)
    method = str(record.get("method", "GET"))
    content_type = record.get("content_type") or "application/json"
    status, head, chunks = await http.request(
        method, target, content=data, content_type=content_type
    )
    if not head.get("content-type", "").startswith("text/event-stream"):
        out.append({**tag, "status": status, "body": parse(b"".join([c async for c in chunks]))})
        return
    out.append({**tag, "status": status, "stream": True})
    decoder = SSEDecoder()
    async for chunk in chunks:
        for message in decoder.feed(chunk):
            out.append({**tag, "event": parse(message.data)})


async def replay_session(
    path: str | Path,
    base_url: str,
    *,
    api_key: str | None = None,
    timeout: float = 5.0,
) -> list[dict[str, Any]]:
    """Send a recording's requests to the server at `base_url` (`http://host:port`, with or
    without `/v1`) and return what it sent back, in `recorded_events` form.

    Each recorded connection gets one connection of its transport. Requests go in recorded
    order; before each, every WebSocket connection first receives as many pauses, terminal and
    error events as it had by then in the recording (waiting at most `timeout` seconds), so a
    frame that answered an event is sent after that event. Recorded ids in a request (e.g.
    `previous_response_id`, `call_id`, `response_id`, ids in paths) are replaced by the new ids
    at the same place: the k-th distinct id with that prefix on that connection and lane."""
    lines = load(path)
    split = urlsplit(base_url)
    recorded, boundary_before, totals = _scan(lines)
    replay = _Replay(recorded, split.hostname or "127.0.0.1", split.port or 80, api_key, timeout)
    async with AsyncExitStack() as stack:
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(nursery.cancel_scope.cancel)
        requests = [line for line in lines if line["dir"] == "in"]
        for line, expected in zip(requests, boundary_before, strict=True):
            await replay.settle(expected)
            c = replay.conns.get(line["conn"])
            if c is None:
                c = await replay.open(line, stack, nursery)
            await replay.send(c, line)
        await replay.settle(totals)
    return by_connection(
        r for c in sorted(replay.conns.values(), key=lambda c: c.number) for r in c.received
    )


def _scan(lines: Iterable[Mapping[str, Any]]) -> tuple[_Ids, list[dict[int, int]], Counter[int]]:
    """The recording's ids; for each request, how many boundaries each WebSocket connection had
    recorded before it; and how many each had in all."""
    recorded = _Ids()
    boundary_before: list[dict[int, int]] = []  # per request: ws conn -> boundaries so far
    totals: Counter[int] = Counter()
    for line in lines:
        if line["dir"] == "out":
            recorded.note(line)
            event = line.get("event")
            if line["transport"] == "ws" and isinstance(event, dict):
                if event.get("type") in BOUNDARY:
                    totals[line["conn"]] += 1
        else:
            boundary_before.append(dict(totals))
    return recorded, boundary_before, totals


@attrs.define(eq=False)
class _Replay:
    """A replay under way: the connections opened so far, the new server's ids as they arrive,
    and the WebSocket readers' progress."""

    recorded: _Ids
    host: str
    port: int
    api_key: str | None
    timeout: float
    new: _Ids = attrs.field(factory=_Ids)
    conns: dict[int, _Conn] = attrs.field(factory=dict)
    #: Set (and replaced) whenever a WebSocket hits a boundary or closes.
    progress: trio.Event = attrs.field(factory=trio.Event)

    def advanced(self) -> None:
        self.progress.set()
        self.progress = trio.Event()

    def rewrite(self, value: Any) -> Any:
        """A recorded request's JSON with each recorded id replaced by the new id at its place."""

        def swap(match: re.Match[str]) -> str:
            found = match.group(0)
            place = self.recorded.where.get(found)
            if place is None:
                return found
            key, k = place
            seen = self.new.seen.get(key, [])
            return seen[k] if k < len(seen) else found

        if isinstance(value, str):
            return ID.sub(swap, value)
        if isinstance(value, dict):
            return {k: self.rewrite(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rewrite(v) for v in value]
        return value

    async def settle(self, expected: Mapping[int, int]) -> None:
        """Wait (at most `timeout`) until every open WebSocket has had its `expected` boundaries."""
        with trio.move_on_after(self.timeout):
            while any(
                c.boundaries < expected.get(c.number, 0) and not c.closed
                for c in self.conns.values()
                if c.transport == "ws"
            ):
                await self.progress.wait()

    async def open(
        self, line: Mapping[str, Any], stack: AsyncExitStack, nursery: trio.Nursery
    ) -> _Conn:
        """The connection that stands for the recorded one whose first request is `line`."""
        number = line["conn"]
        c = self.conns[number] = _Conn(number, line["transport"])
        if c.transport == "ws":
            key = self.api_key
            headers = [(b"authorization", f"Bearer {key}".encode())] if key else []
            c.ws = await stack.enter_async_context(
                open_websocket_url(
                    f"ws://{self.host}:{self.port}/v1/responses",
                    extra_headers=headers,
                    max_message_size=1 << 26,
                )
            )
            nursery.start_soon(self.read, c, c.ws)
        else:
            c.http = HttpClient(f"http://{self.host}:{self.port}", self.api_key)
            stack.push_async_callback(c.http.aclose)
        return c

    async def read(self, c: _Conn, ws: WebSocketConnection) -> None:
        """A WebSocket's events as they come, counting its boundaries, until it closes."""
        try:
            while True:
                message = await ws.get_message()
                record = {"transport": "ws", "conn": c.number, "event": parse(message)}
                c.received.append(record)
                self.new.note(record)
                event = record["event"]
                if isinstance(event, dict) and event.get("type") in BOUNDARY:
                    c.boundaries += 1
                    self.advanced()
        except ConnectionClosed:
            c.closed = True
            self.advanced()

    async def send(self, c: _Conn, line: Mapping[str, Any]) -> None:
        """One recorded request sent again on its connection."""
        if c.ws is not None:
            await self._send_ws(c, c.ws, line)
        elif c.http is not None:
            await self._send_http(c, c.http, line)

    async def _send_ws(self, c: _Conn, ws: WebSocketConnection, line: Mapping[str, Any]) -> None:
        if c.closed:  # closed by the server: what was sent after is not replayed
            return
        if "binary" in line:
            message: str | bytes = base64.b64decode(line["binary"])
        elif "text" in line:
            message = str(line["text"])
        else:
            message = orjson.dumps(self.rewrite(line.get("frame"))).decode()
        try:
            await ws.send_message(message)
        except ConnectionClosed:
            c.closed = True

    async def _send_http(self, c: _Conn, http: HttpClient, line: Mapping[str, Any]) -> None:
        start = len(c.received)
        tag = {"transport": "http", "conn": c.number}
        try:
            await _exchange(http, self.rewrite(payload(line)), c.received, tag)
        except (OSError, h11.ProtocolError, trio.BrokenResourceError, SSEError):
            await http.aclose()  # the server dropped the connection mid-reply
        for record in c.received[start:]:
            self.new.note(record)
