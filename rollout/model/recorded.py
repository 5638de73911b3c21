# A recording's model and reading: `load` reads the files `rollout serve --record DIR` writes
# (the format is the header comment of rollout/service/record.py), `recorded_events` and
# `replay_requests` give its two sides, and `script_from_recording` rebuilds the recorded model
# as a ScriptedPolicy (`rollout serve --script DIR`): each conversation turn gets the step that
# was recorded for it. Reading only: nothing here writes files or opens connections.
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from protocol import codec
from protocol.hosted import HOSTED_ITEMS
from protocol.input import normalize_input
from protocol.items import Item, Message, text_of
from rollout.conversation.calls import CallSpec, Citation, FunctionCallSpec, HostedSpec
from rollout.conversation.context import Context
from rollout.conversation.ids import new_id
from rollout.conversation.kinds import is_model_item
from rollout.model.hosted import BY_ITEM_TYPE, HostedRow
from rollout.model.policy import CallStep, ErrorStep, ScriptedPolicy, Step, TextStep

TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})


class RecordingError(ValueError):
    """The path is not a readable recording."""


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


def payload(line: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded line without its place in the recording (`dir`, `t`, `n`)."""
    return {k: v for k, v in line.items() if k not in ("dir", "t", "n")}


def recorded_events(path: str | Path) -> list[dict[str, Any]]:
    """What the server sent, in the form `replay_session` returns: each `out` line without its
    `dir`, `t` and `n` (so `{"transport", "conn", "event"}` or `{..., "status", "body"}`)."""
    return by_connection([payload(line) for line in load(path) if line["dir"] == "out"])


def by_connection(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records grouped by connection, each connection's in their order."""
    return sorted(records, key=lambda r: r.get("conn", 0))


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
            self.last_hosted = isinstance(item, HOSTED_ITEMS)

    def step(self, step: Step) -> int:
        """The turn a step was sampled at; then the state after it."""
        turn = self.turns
        self.turns += 1
        self.last_model = True
        self.last_hosted = isinstance(step, CallStep) and isinstance(step.calls[-1], HostedSpec)
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
    (messages → TextStep, function calls and hosted calls → CallStep, `response.failed` →
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
    scan = _Scan()
    for line in lines:
        conn, n = line.get("conn", 0), line.get("n", 0)
        if line["transport"] == "ws":
            if line["dir"] == "in":
                scan.ws_in(conn, line.get("frame"))
            else:
                scan.ws_out(conn, n, line.get("event"))
        elif line["dir"] == "in":
            scan.http_in(conn, line)
        else:
            scan.http_out(conn, n, line)
    return scan.responses


@attrs.define
class _Scan:
    """A recording's lines in order, as `_responses` reads them."""

    responses: dict[str, _Response] = attrs.field(factory=dict)
    lanes: dict[str, Any] = attrs.field(factory=dict)  # response id -> its WebSocket lane
    # create frames not yet answered, by WebSocket (connection, lane)
    creates: dict[tuple[int, Any], list[dict[str, Any]]] = attrs.field(
        factory=lambda: defaultdict(list)
    )
    current: dict[tuple[int, Any], str] = attrs.field(factory=dict)  # -> response streaming
    http: dict[int, tuple[str, dict[str, Any] | None]] = attrs.field(factory=dict)  # conn ->
    # (what its request is, its create body)

    def made(self, rid: str, request: dict[str, Any] | None, n: int) -> _Response:
        if rid not in self.responses:
            self.responses[rid] = _Response(id=rid, request=request, n=n)
        return self.responses[rid]

    def note(self, key: tuple[int, Any], event: dict[str, Any]) -> None:
        rid = self.current.get(key, "")
        if rid in self.responses:
            _note(self.responses[rid], event)

    def ws_in(self, conn: int, frame: Any) -> None:
        if not isinstance(frame, dict):
            return
        kind = frame.get("type")
        if kind == "response.create":
            self.creates[(conn, frame.get("stream_id"))].append(frame)
        elif kind == "response.append" and isinstance(frame.get("response_id"), str):
            rid = frame["response_id"]
            self.current[(conn, self.lanes.get(rid))] = rid

    def ws_out(self, conn: int, n: int, event: Any) -> None:
        if not isinstance(event, dict):
            return
        lane = event.get("stream_id")
        if event.get("type") == "response.created":
            response = event.get("response") or {}
            request = _match(self.creates[(conn, lane)], response)
            rid = response.get("id", "")
            self.made(rid, request, n)
            self.lanes[rid] = lane
            self.current[(conn, lane)] = rid
        self.note((conn, lane), event)

    def http_in(self, conn: int, line: Mapping[str, Any]) -> None:
        """An HTTP request: each reply belongs to the request before it on the connection."""
        path = str(line.get("path", "")).rstrip("/")
        body = line.get("body")
        if line.get("method") == "POST" and path == "/v1/responses":
            self.http[conn] = ("create", body if isinstance(body, dict) else None)
        elif line.get("method") == "POST" and path.endswith("/append"):
            self.http[conn] = ("append", None)
            self.current[(conn, None)] = path.split("/")[-2]
        else:
            self.http[conn] = ("other", None)

    def http_out(self, conn: int, n: int, line: Mapping[str, Any]) -> None:
        what, request = self.http.get(conn, ("other", None))
        if what == "other":
            return
        event = line.get("event")
        if isinstance(event, dict):
            if event.get("type") == "response.created":
                rid = (event.get("response") or {}).get("id", "")
                self.made(rid, request, n)
                self.current[(conn, None)] = rid
            self.note((conn, None), event)
        elif isinstance(line.get("body"), dict) and line["body"].get("object") == "response":
            body = line["body"]  # a JSON (non-streaming) create: the items, in order
            r = self.made(body.get("id", ""), request, n)
            for index, item in enumerate(body.get("output") or []):
                r.items[index] = item
                r.tokens += [("added", index), ("done", index)]
            r.tokens.append(("end", body))


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
    """A response's model steps. A step is an optional message, then calls (hosted calls last);
    a new one starts after a pause, after hosted calls ran, or with a message after calls."""
    steps: list[Step] = []
    step: list[int] = []  # output indexes of the step being read
    hosted = False  # a hosted call of this step finished: the loop samples anew after it

    def close() -> None:
        nonlocal step, hosted
        if step:
            steps.append(_step([r.items.get(i, {}) for i in step]))
        step, hosted = [], False

    for kind, value in r.tokens:
        if kind == "added":
            starts_message = r.items.get(value, {}).get("type") == "message"
            if hosted or (starts_message and step):
                close()
            step.append(value)
        elif kind == "done":
            if _hosted_row(r.items.get(value, {})) is not None:
                hosted = True
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


def _hosted_row(item: Mapping[str, Any]) -> HostedRow | None:
    """The hosted tool a recorded item is a call of, if any."""
    kind = item.get("type")
    return BY_ITEM_TYPE.get(kind) if isinstance(kind, str) else None


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
        elif (row := _hosted_row(item)) is not None:
            calls.append(row.from_item(item))
    if calls:
        return CallStep(calls=tuple(calls), text=text)
    return TextStep(text=text, citations=tuple(citations))
