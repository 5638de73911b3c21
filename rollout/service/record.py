# Record and replay. `rollout serve --record DIR` (or `AppendHost.record_dir`, or
# `serve(..., record=DIR)`) writes every connection's traffic to `DIR/conn-<N>-<transport>.jsonl`,
# one JSON object per line, in the order it happened on that connection:
#
#   {"dir": "in"|"out", "t": seconds since the connection opened, "n": order across every
#    connection of the process, "transport": "http"|"ws", "conn": N, ...payload}
#
# payload, by transport and direction:
#   ws   in    "frame": the text frame, parsed ("text" instead when it is not JSON; a binary
#              frame has "binary": the frame base64-encoded)
#   ws   out   "event": every event sent, as sent (with `stream_id` on a named lane; request
#              errors are `error` events too)
#   http in    "method", "path", "query" (when there is one, as {name: [values]}), "body" (the
#              parsed JSON body, null when empty; "text" instead when it is not JSON), and
#              "content_type" when the request had one
#   http out   "status" and "body" (a JSON reply), or "status" and "stream": true (an SSE stream
#              starts) followed by one "event" line per SSE event
#
# A recording replays two ways. The model side: `script_from_recording(path)` is a
# ScriptedPolicy that answers each conversation turn with the step recorded for it (also
# `rollout serve --script DIR`). The client side: `replay_session(path, base_url)` sends the
# recorded requests again, in order, mapping the recorded ids to the ones the new server returns,
# and returns what it received; `normalize` makes two runs comparable (ids, timestamps).
# An `out` line is recorded just before it is sent, so it precedes the client's reaction in `n`
# (a send that then fails leaves its line). GET /metrics replies, the WebSocket handshake and
# frames refused as too large are not recorded.
from __future__ import annotations

import base64
import itertools
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
import h11
import orjson
import trio

from protocol import codec
from protocol.input import normalize_input
from protocol.items import Item, Message, WebSearchCall, text_of
from rollout.engine.context import Context, is_model_item
from rollout.engine.ids import new_id
from rollout.model.policy import (
    CallSpec,
    CallStep,
    Citation,
    ErrorStep,
    FunctionCallSpec,
    ScriptedPolicy,
    Step,
    TextStep,
    WebSearchSpec,
)
from rollout.service.capture import parse

# Buffered lines are written out (in a worker thread) once this much is pending, or when a line
# comes in more than FLUSH_SECONDS after the last write, and always when the connection closes.
FLUSH_BYTES = 64 * 1024
FLUSH_SECONDS = 1.0

_ORDER = itertools.count()  # "n": orders lines across the connections (and files) of a process

# Ids the server makes (rollout.engine.ids.new_id: a prefix and 48 hex digits).
ID = re.compile(r"\b(resp|msg|fco|fc|call|ws|req|rs)_[0-9a-f]{16,}\b")
BOUNDARY = frozenset(
    {"response.done", "response.completed", "response.failed", "response.incomplete", "error"}
)
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
_VOLATILE = frozenset({"created_at", "completed_at", "t", "n"})


class RecordingError(ValueError):
    """The path is not a readable recording."""


# -- recording ----------------------------------------------------------------------------------


class Recorder:
    """The lines of one connection, buffered in memory and written to its file.

    Why buffer and write in a worker thread: a line is recorded for every event (each text delta)
    inside the server's send path, so it must cost about as little as the send itself. Recording
    is a list append of bytes built by concatenation (the event's JSON is spliced in as encoded,
    never re-parsed); the file is written in chunks of FLUSH_BYTES with
    `trio.to_thread.run_sync`, so a slow disk never stalls the event loop, only (briefly) the
    task whose line filled the buffer, while others keep buffering. Each flush is shielded from
    cancellation and the last one runs on close (also under cancellation, e.g. server shutdown),
    so no line is lost. A file is created (truncated) by its first write: a connection that
    recorded nothing (an HTTP connection upgraded to a WebSocket) leaves no file.
    """

    def __init__(self, path: Path, transport: str, connection: int) -> None:
        self.path = path
        self.transport = transport
        self.connection = connection
        self.opened = time.perf_counter()
        self.closed = False
        self.lines = 0
        self._tag = b'"transport":"%s","conn":%d' % (transport.encode(), connection)
        self._buffer: list[bytes] = []
        self._size = 0
        self._last_write = self.opened
        self._flushing = False
        self._flushed = trio.Event()
        self._created = False

    # -- what is recorded -----------------------------------------------------------------------

    async def http_request(
        self,
        method: str,
        path: str,
        query: Mapping[str, list[str]],
        body: bytes,
        content_type: str | None,
    ) -> None:
        fields: dict[str, Any] = {"method": method, "path": path}
        if query:
            fields["query"] = dict(query)
        fields.update(_json_or_text("body", body))
        if content_type is not None:
            fields["content_type"] = content_type
        await self._add(b"in", orjson.dumps(fields)[1:-1])

    async def ws_frame(self, message: str | bytes) -> None:
        if isinstance(message, bytes):
            fields = {"binary": base64.b64encode(message).decode()}
        else:
            fields = _json_or_text("frame", message)
        await self._add(b"in", orjson.dumps(fields)[1:-1])

    async def event(self, data: bytes) -> None:
        """An event as encoded for the wire (one JSON object)."""
        await self._add(b"out", b'"event":' + data)

    async def status(self, status: int, body: bytes | None = None) -> None:
        """An HTTP reply: its JSON body, or (None) the start of an SSE stream."""
        if body is None:
            await self._add(b"out", b'"status":%d,"stream":true' % status)
        else:
            await self._add(b"out", b'"status":%d,"body":' % status + (body or b"null"))

    # -- buffering and writing ------------------------------------------------------------------

    async def _add(self, direction: bytes, fields: bytes) -> None:
        now = time.perf_counter()
        line = b'{"dir":"%s","t":%.6f,"n":%d,%s,%s}\n' % (
            direction,
            now - self.opened,
            next(_ORDER),
            self._tag,
            fields,
        )
        self._buffer.append(line)
        self._size += len(line)
        self.lines += 1
        if self.closed:  # a straggler after close (rare): write it at once
            self._write(self._take())
            return
        if not self._flushing and (
            self._size >= FLUSH_BYTES or now - self._last_write >= FLUSH_SECONDS
        ):
            await self._flush()

    def _take(self) -> bytes:
        chunk = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        return chunk

    def _write(self, chunk: bytes) -> None:
        if not chunk:
            return
        if not self._created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab" if self._created else "wb") as f:
            f.write(chunk)
        self._created = True

    async def _flush(self) -> None:
        """Write what is buffered (and what arrives meanwhile) from a worker thread."""
        self._flushing = True
        self._flushed = trio.Event()
        try:
            with trio.CancelScope(shield=True):
                while self._buffer:
                    await trio.to_thread.run_sync(self._write, self._take())
        finally:
            self._last_write = time.perf_counter()
            self._flushing = False
            self._flushed.set()

    async def aclose(self) -> None:
        """Write every remaining line; later lines (if any) are written synchronously."""
        with trio.CancelScope(shield=True):
            while self._flushing:
                await self._flushed.wait()
            if self._buffer:
                await self._flush()
            self.closed = True


def _json_or_text(key: str, data: bytes | str) -> dict[str, Any]:
    if not data:
        return {key: None}
    try:
        return {key: orjson.loads(data)}
    except orjson.JSONDecodeError:
        return {"text": data.decode("utf-8", "replace") if isinstance(data, bytes) else data}


# -- reading a recording ------------------------------------------------------------------------


def is_recording(path: str | Path) -> bool:
    """A directory holding conn-*.jsonl files, or a .jsonl file (for `serve --script`)."""
    p = Path(path)
    if p.is_dir():
        return any(p.glob("conn-*.jsonl"))
    return p.suffix == ".jsonl"


def load(path: str | Path) -> list[dict[str, Any]]:
    """Every line of a recording (a directory of connection files, or one file), in the order
    the server recorded them (`n`)."""
    p = Path(path)
    files = sorted(p.glob("conn-*.jsonl")) if p.is_dir() else [p]
    if not files:
        raise RecordingError(f"{p}: no conn-*.jsonl files")
    lines: list[dict[str, Any]] = []
    for file in files:
        try:
            text = file.read_bytes()
        except OSError as exc:
            raise RecordingError(f"cannot read {file}: {exc}") from None
        for i, raw in enumerate(text.splitlines()):
            if not raw.strip():
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise RecordingError(f"{file}:{i + 1}: not JSON ({exc})") from None
            if not isinstance(line, dict) or line.get("dir") not in ("in", "out"):
                raise RecordingError(f"{file}:{i + 1}: not a recorded frame")
            lines.append(line)
    lines.sort(key=lambda x: x.get("n", 0))
    return lines


def replay_requests(path: str | Path) -> list[dict[str, Any]]:
    """The recorded requests in order: the `in` lines (`frame` for a WebSocket frame; `method`,
    `path`, `query`, `body` for an HTTP request; with `transport` and `conn`)."""
    return [line for line in load(path) if line["dir"] == "in"]


def _payload(line: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in ("dir", "t", "n")}


def recorded_events(path: str | Path) -> list[dict[str, Any]]:
    """What the server sent, in the form `replay_session` returns: each `out` line without its
    `dir`, `t` and `n` (so `{"transport", "conn", "event"}` or `{..., "status", "body"}`)."""
    return _by_connection([_payload(line) for line in load(path) if line["dir"] == "out"])


def _by_connection(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: r.get("conn", 0))


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


# -- the model side -----------------------------------------------------------------------------


def _first_user_text(items: Iterable[Item]) -> str:
    for item in items:
        if isinstance(item, Message) and item.role == "user":
            return text_of(item.content)
    return ""


@attrs.define
class _Turns:
    """What `Context.model_turns` would count, from wire items and sampled steps."""

    turns: int = 0
    last_model: bool = False
    last_hosted: bool = False

    def items(self, items: Iterable[Item]) -> None:
        for item in items:
            model = is_model_item(item)
            if model and (not self.last_model or self.last_hosted):
                self.turns += 1
            self.last_model = model
            self.last_hosted = isinstance(item, WebSearchCall)

    def step(self, step: Step) -> int:
        """The turn a step was sampled at; then the state after it."""
        turn = self.turns
        self.turns += 1
        self.last_model = True
        self.last_hosted = isinstance(step, CallStep) and isinstance(step.calls[-1], WebSearchSpec)
        return turn


@attrs.define
class _Response:
    """One recorded response: the request that made it, and what its events showed."""

    id: str
    request: dict[str, Any] | None
    n: int
    tokens: list[tuple[str, Any]] = attrs.field(factory=list)  # (kind, value) in order
    items: dict[int, dict[str, Any]] = attrs.field(factory=dict)  # output_index -> done item


@attrs.define
class RecordedModel:
    """The model of a recording: step `k` of the conversation that starts with user text `u` is
    the step recorded at `(u, k)` (several recorded, e.g. a retried turn: played in order, then
    the last repeats). A conversation the recording does not know plays the steps recorded at
    turn `k` of any conversation, in recorded order. Past the recorded turns: the answer
    `final`."""

    by_key: dict[tuple[str, int], list[Step]] = attrs.field(factory=dict)
    by_turn: dict[int, list[Step]] = attrs.field(factory=dict)
    final: str = "Done."
    _texts: set[str] = attrs.field(factory=set)
    _played: Counter[Any] = attrs.field(factory=Counter)

    def add(self, text: str, turn: int, step: Step) -> None:
        self.by_key.setdefault((text, turn), []).append(step)
        self.by_turn.setdefault(turn, []).append(step)
        self._texts.add(text)

    def __call__(self, ctx: Context) -> Step:
        k = ctx.model_turns
        text = _first_user_text(ctx.items)
        slot: Any = (text, k) if text in self._texts else k
        steps = self.by_key.get(slot) if text in self._texts else self.by_turn.get(k)
        if not steps:
            return TextStep(text=self.final)
        i = self._played[slot]
        self._played[slot] += 1
        return steps[min(i, len(steps) - 1)]


def script_from_recording(path: str | Path, final: str = "Done.") -> ScriptedPolicy:
    """A ScriptedPolicy that plays a recording's model: the steps of every recorded response
    (messages → TextStep, function calls and web searches → CallStep, `response.failed` →
    ErrorStep), keyed by conversation (its first user message) and turn, so the recorded
    requests get the recorded outputs again."""
    model = RecordedModel(final=final)
    responses = _responses(load(path))
    states: dict[str, tuple[str, _Turns]] = {}
    for r in sorted(responses.values(), key=lambda r: r.n):
        text, state = _start(r, states)
        for step in _steps(r):
            model.add(text, state.step(step), step)
        states[r.id] = (text, state)
    return ScriptedPolicy(model, final=final)


def _start(r: _Response, states: Mapping[str, tuple[str, _Turns]]) -> tuple[str, _Turns]:
    """The conversation (first user text) and turn state a response's first step saw."""
    body = r.request or {}
    items: list[Item] = []
    try:
        items = normalize_input(codec.decode_create(body).input, new_id)
    except Exception:  # a request the server refused on the way does not decode: no input
        items = []
    parent = body.get("previous_response_id")
    if isinstance(parent, str) and parent in states:
        text, before = states[parent]
        state = attrs.evolve(before)
    else:
        text, state = _first_user_text(items), _Turns()
    state.items(items)
    return text, state


def _responses(lines: Sequence[Mapping[str, Any]]) -> dict[str, _Response]:
    """Every response the recording shows being made or resumed, with its events."""
    responses: dict[str, _Response] = {}
    lanes: dict[str, Any] = {}  # response id -> its WebSocket lane
    creates: dict[tuple[int, Any], list[dict[str, Any]]] = defaultdict(list)  # ws (conn, lane)
    current: dict[tuple[int, Any], str] = {}  # (conn, lane) -> the response being streamed
    http: dict[int, tuple[str, dict[str, Any] | None]] = {}  # conn -> (what, create body)

    def made(rid: str, request: dict[str, Any] | None, n: int) -> _Response:
        if rid not in responses:
            responses[rid] = _Response(id=rid, request=request, n=n)
        return responses[rid]

    for line in lines:
        conn = line.get("conn", 0)
        n = line.get("n", 0)
        if line["transport"] == "ws":
            if line["dir"] == "in":
                frame = line.get("frame")
                if not isinstance(frame, dict):
                    continue
                kind = frame.get("type")
                if kind == "response.create":
                    creates[(conn, frame.get("stream_id"))].append(frame)
                elif kind == "response.append" and isinstance(frame.get("response_id"), str):
                    rid = frame["response_id"]
                    current[(conn, lanes.get(rid))] = rid
                continue
            event = line.get("event")
            if not isinstance(event, dict):
                continue
            lane = event.get("stream_id")
            if event.get("type") == "response.created":
                response = event.get("response") or {}
                request = _match(creates[(conn, lane)], response)
                rid = response.get("id", "")
                made(rid, request, n)
                lanes[rid] = lane
                current[(conn, lane)] = rid
            rid = current.get((conn, lane), "")
            if rid in responses:
                _note(responses[rid], event)
            continue
        # HTTP: each reply belongs to the request before it on the connection.
        if line["dir"] == "in":
            path = str(line.get("path", "")).rstrip("/")
            body = line.get("body")
            if line.get("method") == "POST" and path == "/v1/responses":
                http[conn] = ("create", body if isinstance(body, dict) else None)
            elif line.get("method") == "POST" and path.endswith("/append"):
                http[conn] = ("append", None)
                current[(conn, None)] = path.split("/")[-2]
            else:
                http[conn] = ("other", None)
            continue
        what, request = http.get(conn, ("other", None))
        if what == "other":
            continue
        event = line.get("event")
        if isinstance(event, dict):
            if event.get("type") == "response.created":
                rid = (event.get("response") or {}).get("id", "")
                made(rid, request, n)
                current[(conn, None)] = rid
            rid = current.get((conn, None), "")
            if rid in responses:
                _note(responses[rid], event)
        elif isinstance(line.get("body"), dict) and line["body"].get("object") == "response":
            body = line["body"]  # a JSON (non-streaming) create: the items, in order
            r = made(body.get("id", ""), request, n)
            for index, item in enumerate(body.get("output") or []):
                r.items[index] = item
                r.tokens += [("added", index), ("done", index)]
            r.tokens.append(("end", body))
    return responses


def _match(queue: list[dict[str, Any]], response: Mapping[str, Any]) -> dict[str, Any] | None:
    """The create frame a `response.created` answers: the first queued one for the same model
    and parent (creates refused on the way got no response)."""
    for i, frame in enumerate(queue):
        if frame.get("model") == response.get("model") and frame.get(
            "previous_response_id"
        ) == response.get("previous_response_id"):
            del queue[: i + 1]
            return frame
    return None


def _note(r: _Response, event: Mapping[str, Any]) -> None:
    kind = event.get("type")
    if kind == "response.output_item.added":
        r.tokens.append(("added", event.get("output_index")))
    elif kind == "response.output_item.done":
        index = event.get("output_index")
        if isinstance(index, int) and isinstance(event.get("item"), dict):
            r.items[index] = event["item"]
            r.tokens.append(("done", index))
    elif kind == "response.done":
        r.tokens.append(("pause", None))
    elif kind in TERMINAL:
        r.tokens.append(("end", event.get("response") or {}))


def _steps(r: _Response) -> list[Step]:
    """A response's model steps. A step is an optional message, then calls (web searches last);
    a new one starts after a pause, after web searches ran, or with a message after calls."""
    steps: list[Step] = []
    step: list[int] = []  # output indexes of the step being read
    searched = False  # a web search of this step finished: the loop samples anew after it

    def close() -> None:
        nonlocal step, searched
        if step:
            steps.append(_step([r.items.get(i, {}) for i in step]))
        step, searched = [], False

    for kind, value in r.tokens:
        if kind == "added":
            starts_message = r.items.get(value, {}).get("type") == "message"
            if searched or (starts_message and step):
                close()
            step.append(value)
        elif kind == "done":
            if r.items.get(value, {}).get("type") == "web_search_call":
                searched = True
        elif kind == "pause":
            close()
        elif kind == "end":
            close()
            if value.get("status") == "failed":
                error = value.get("error") or {}
                steps.append(
                    ErrorStep(
                        code=str(error.get("code") or "server_error"),
                        message=str(error.get("message") or ErrorStep().message),
                    )
                )
    close()
    return steps


def _step(items: Sequence[Mapping[str, Any]]) -> Step:
    text = ""
    citations: list[Citation] = []
    calls: list[CallSpec] = []
    for item in items:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    text += part.get("text", "")
                    for a in part.get("annotations") or []:
                        if a.get("type") == "url_citation":
                            citations.append(
                                Citation(
                                    url=a["url"],
                                    title=a["title"],
                                    start_index=a["start_index"],
                                    end_index=a["end_index"],
                                )
                            )
        elif kind == "function_call":
            calls.append(FunctionCallSpec(name=item["name"], arguments=item.get("arguments", "")))
        elif kind == "web_search_call":
            action = item.get("action") or {}
            calls.append(WebSearchSpec(query=str(action.get("query", ""))))
    if calls:
        return CallStep(calls=tuple(calls), text=text)
    return TextStep(text=text, citations=tuple(citations))


# -- the client side ----------------------------------------------------------------------------


class _Ids:
    """Ids by order of appearance per (connection, lane, prefix), to map recorded ids to new."""

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], list[str]] = defaultdict(list)
        self.where: dict[str, tuple[tuple[Any, ...], int]] = {}

    def note(self, record: Mapping[str, Any]) -> None:
        event = record.get("event")
        lane = event.get("stream_id") if isinstance(event, Mapping) else None
        for found in _ids(_payload(record)):
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
    ws: Any = None
    http: _Http | None = None
    closed: bool = False


class _Http:
    """One keep-alive HTTP/1.1 client connection that sends recorded requests byte for byte."""

    def __init__(self, host: str, port: int, api_key: str | None) -> None:
        self.host, self.port, self.api_key = host, port, api_key
        self.stream: trio.SocketStream | None = None
        self.conn = h11.Connection(h11.CLIENT)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None

    async def _next(self) -> Any:
        assert self.stream is not None
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.conn.receive_data(bytes(await self.stream.receive_some(65536)))

    async def exchange(
        self, record: Mapping[str, Any], out: list[dict[str, Any]], tag: dict[str, Any]
    ) -> None:
        if self.stream is None or self.conn.our_state is not h11.DONE:
            await self.aclose()
            self.stream = await trio.open_tcp_stream(self.host, self.port)
            self.conn = h11.Connection(h11.CLIENT)
        else:
            self.conn.start_next_cycle()
        body = record.get("body")
        if "text" in record:  # recorded as text: it was not JSON
            data = str(record["text"]).encode()
        elif body is None:
            data = b""
        else:
            data = orjson.dumps(body)
        target = str(record.get("path", "/"))
        if record.get("query"):
            target += "?" + urlencode(record["query"], doseq=True)
        headers = [("host", f"{self.host}:{self.port}"), ("content-length", str(len(data)))]
        if data:
            headers.append(("content-type", record.get("content_type") or "application/json"))
        if self.api_key:
            headers.append(("authorization", f"Bearer {self.api_key}"))
        assert self.stream is not None
        for event in (
            h11.Request(method=str(record.get("method", "GET")), target=target, headers=headers),
            h11.Data(data=data),
            h11.EndOfMessage(),
        ):
            await self.stream.send_all(self.conn.send(event) or b"")
        head = await self._next()
        while isinstance(head, h11.InformationalResponse):
            head = await self._next()
        if not isinstance(head, h11.Response):
            raise ConnectionError(f"unexpected {head!r}")
        ctype = dict(head.headers).get(b"content-type", b"").decode()
        stream = ctype.startswith("text/event-stream")
        if stream:
            out.append({**tag, "status": head.status_code, "stream": True})
        buffer = b""
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                buffer += event.data
                while stream and b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    for row in block.split(b"\n"):
                        if row.startswith(b"data: "):
                            out.append({**tag, "event": orjson.loads(row[6:])})
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                raise ConnectionError(f"unexpected {event!r}")
        if not stream:
            out.append({**tag, "status": head.status_code, "body": parse(buffer)})
        if self.conn.our_state is h11.MUST_CLOSE or self.conn.their_state is h11.MUST_CLOSE:
            await self.aclose()


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
    host, port = split.hostname or "127.0.0.1", split.port or 80
    ws_url = f"ws://{host}:{port}/v1/responses"
    recorded = _Ids()
    boundary_before: list[dict[int, int]] = []  # per line: ws conn -> boundaries recorded so far
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
    new = _Ids()
    conns: dict[int, _Conn] = {}

    def rewrite(value: Any) -> Any:
        def swap(match: re.Match[str]) -> str:
            found = match.group(0)
            place = recorded.where.get(found)
            if place is None:
                return found
            key, k = place
            seen = new.seen.get(key, [])
            return seen[k] if k < len(seen) else found

        if isinstance(value, str):
            return ID.sub(swap, value)
        if isinstance(value, dict):
            return {k: rewrite(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rewrite(v) for v in value]
        return value

    async def read(c: _Conn) -> None:
        try:
            while True:
                message = await c.ws.get_message()
                record = {"transport": "ws", "conn": c.number, "event": parse(message)}
                c.received.append(record)
                new.note(record)
                event = record["event"]
                if isinstance(event, dict) and event.get("type") in BOUNDARY:
                    c.boundaries += 1
        except ConnectionClosed:
            c.closed = True

    async def settle(expected: Mapping[int, int]) -> None:
        with trio.move_on_after(timeout):
            while any(
                c.boundaries < expected.get(c.number, 0) and not c.closed
                for c in conns.values()
                if c.transport == "ws"
            ):
                await trio.sleep(0.002)

    from trio_websocket import ConnectionClosed, open_websocket_url

    async with AsyncExitStack() as stack:
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(nursery.cancel_scope.cancel)
        requests = [line for line in lines if line["dir"] == "in"]
        for line, expected in zip(requests, boundary_before, strict=True):
            await settle(expected)
            number = line["conn"]
            c = conns.get(number)
            if c is None:
                c = conns[number] = _Conn(number, line["transport"])
                if c.transport == "ws":
                    headers = [(b"authorization", f"Bearer {api_key}".encode())] if api_key else []
                    c.ws = await stack.enter_async_context(
                        open_websocket_url(ws_url, extra_headers=headers, max_message_size=1 << 26)
                    )
                    nursery.start_soon(read, c)
                else:
                    c.http = _Http(host, port, api_key)
                    stack.push_async_callback(c.http.aclose)
            if c.transport == "ws":
                if c.closed:  # closed by the server: what was sent after is not replayed
                    continue
                if "binary" in line:
                    message: str | bytes = base64.b64decode(line["binary"])
                elif "text" in line:
                    message = str(line["text"])
                else:
                    message = orjson.dumps(rewrite(line.get("frame"))).decode()
                try:
                    await c.ws.send_message(message)
                except ConnectionClosed:
                    c.closed = True
            else:
                assert c.http is not None
                start = len(c.received)
                try:
                    await c.http.exchange(
                        rewrite(_payload(line)), c.received, {"transport": "http", "conn": number}
                    )
                except (OSError, h11.ProtocolError, trio.BrokenResourceError):
                    await c.http.aclose()  # the server dropped the connection mid-reply
                for record in c.received[start:]:
                    new.note(record)
        await settle(totals)
    return _by_connection(
        r for c in sorted(conns.values(), key=lambda c: c.number) for r in c.received
    )
