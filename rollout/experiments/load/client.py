# One connection of `rollout load`: a raw WebSocket client (trio-websocket) that opens, waits for
# the start signal, runs one append-shape rollout of N client tool calls and checks its event
# stream as it goes (sequence numbers, one terminal event, N pauses, no event of another
# response), then sends a fence frame whose error reply shows nothing followed the end. What it
# saw is a `Conn`; `rollout.experiments.load.run` runs many and reports.
from __future__ import annotations

import time
from typing import Any

import attrs
import orjson
import trio
from trio_websocket import ConnectionClosed as WsConnectionClosed
from trio_websocket import (
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from rollout.testing.sample import EXEC_TOOL

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
FENCE_ID = "resp_load_fence"  # an id no server knows: its error reply ends a connection's stream


@attrs.define
class Conn:
    """What one connection saw."""

    index: int
    response_id: str | None = None
    frames: int = 0
    seqs: list[int] = attrs.field(factory=list)
    terminals: list[str] = attrs.field(factory=list)
    pauses: int = 0
    overheads: list[float] = attrs.field(factory=list)  # seconds, one per append
    errors: list[str] = attrs.field(factory=list)
    finished: bool = False  # the stream was read to its end (terminal event and fence reply)

    @property
    def lost(self) -> int:
        return max(self.seqs) + 1 - len(set(self.seqs)) if self.seqs else 0

    @property
    def duplicated(self) -> int:
        return len(self.seqs) - len(set(self.seqs))

    @property
    def completed(self) -> bool:
        return self.finished and self.terminals == ["response.completed"] and not self.errors


def _create_frame() -> str:
    return orjson.dumps(
        {
            "type": "response.create",
            "shape": "append",
            "model": "load-test",
            "input": "Run the steps, one exec call each.",
            "tools": [EXEC_TOOL],
            "store": False,
        }
    ).decode()


def _append_frame(response_id: str, call_ids: list[str]) -> str:
    outputs = [
        {"type": "function_call_output", "call_id": cid, "output": "exit 0"} for cid in call_ids
    ]
    return orjson.dumps(
        {"type": "response.append", "response_id": response_id, "input": outputs}
    ).decode()


def _fence_frame() -> str:
    return orjson.dumps({"type": "response.append", "response_id": FENCE_ID, "input": []}).decode()


def _is_fence_reply(frame: dict[str, Any]) -> bool:
    error = frame.get("error")
    return isinstance(error, dict) and error.get("code") == "response_not_found"


async def _rollout(ws: WebSocketConnection, conn: Conn, calls: int) -> None:
    """One append rollout on an open connection, checked event by event; then a fence (an
    append to an unknown id) whose error reply shows that nothing followed the terminal event."""
    await ws.send_message(_create_frame())
    sent: float | None = None
    fenced = False
    while True:
        message = await ws.get_message()
        now = time.perf_counter()
        if sent is not None:
            conn.overheads.append(now - sent)
            sent = None
        conn.frames += 1
        frame = _parse(conn, message)
        if frame is None:
            return
        kind = frame.get("type")
        if kind == "error":
            if fenced and _is_fence_reply(frame):
                conn.finished = True
                return
            error = frame.get("error") or {}
            conn.errors.append(f"error event: {error.get('code')}: {error.get('message')}")
            return
        snapshot = _note(conn, kind, frame)
        if kind in TERMINAL:
            conn.terminals.append(kind)
            if fenced:
                conn.errors.append(f"a second terminal event ({kind})")
                continue  # keep reading to the fence
            _check_end(conn, kind, snapshot, calls)
            fenced = True
            await ws.send_message(_fence_frame())
        elif kind == "response.done":
            conn.pauses += 1
            if fenced:
                conn.errors.append("a pause after the terminal event")
                continue
            pending = _pending(conn, frame)
            if pending is None:
                return
            sent = time.perf_counter()
            await ws.send_message(_append_frame(*pending))


def _parse(conn: Conn, message: str | bytes) -> dict[str, Any] | None:
    """A frame as a JSON object; None (with the error noted) if it is not one."""
    try:
        frame = orjson.loads(message)
    except orjson.JSONDecodeError:
        conn.errors.append("invalid JSON from the server")
        return None
    if not isinstance(frame, dict):
        conn.errors.append("a frame that is not a JSON object")
        return None
    return frame


def _note(conn: Conn, kind: Any, frame: dict[str, Any]) -> Any:
    """A frame's sequence number and response id, checked against what the connection saw so
    far; returns the response snapshot the frame carries, if any."""
    seq = frame.get("sequence_number")
    if not isinstance(seq, int):
        conn.errors.append(f"{kind} without a sequence_number")
    else:
        if conn.seqs and seq < conn.seqs[-1] and seq not in conn.seqs:
            conn.errors.append(f"sequence_number {seq} after {conn.seqs[-1]} (out of order)")
        conn.seqs.append(seq)
    snapshot = frame.get("response")
    rid = frame.get("response_id") or (snapshot.get("id") if isinstance(snapshot, dict) else None)
    if rid is not None:
        if conn.response_id is None:
            conn.response_id = rid
        elif rid != conn.response_id:
            conn.errors.append(f"{kind} of another response {rid!r}")
    return snapshot


def _check_end(conn: Conn, kind: str, snapshot: Any, calls: int) -> None:
    """The first terminal event: it should be `response.completed`, after `calls` pauses."""
    if kind != "response.completed":
        conn.errors.append(f"ended with {kind}: {_reason(snapshot)}")
    if conn.pauses != calls:
        conn.errors.append(f"{conn.pauses} pauses, expected {calls}")


def _pending(conn: Conn, frame: dict[str, Any]) -> tuple[str, list[str]] | None:
    """What answers a pause: the response's id and the ids of the calls it waits for; None
    (with the error noted) if the pause cannot be answered."""
    if conn.response_id is None:
        conn.errors.append("a pause before any event naming the response")
        return None
    pending = frame.get("pending_calls") or []
    call_ids = [c["call_id"] for c in pending if isinstance(c, dict) and "call_id" in c]
    if not call_ids:
        conn.errors.append("a pause without pending calls")
        return None
    return conn.response_id, call_ids


def _reason(snapshot: Any) -> str:
    if not isinstance(snapshot, dict):
        return "?"
    details = snapshot.get("incomplete_details") or snapshot.get("error")
    if isinstance(details, dict):
        return str(details.get("reason") or details.get("code") or details)
    return str(details) if details else "?"


@attrs.define(eq=False)
class Phase:
    """Shared by the connections of a run: the start signal (every connection is open, or has
    failed to open), the time bound, and how many connections are open (now and at most)."""

    deadline: trio.CancelScope
    headers: list[tuple[bytes, bytes]] = attrs.field(factory=list)  # every handshake's (a key)
    go: trio.Event = attrs.field(factory=trio.Event)
    now: int = 0
    peak: int = 0


async def run_connection(
    url: str, conn: Conn, calls: int, opened: trio.Event, phase: Phase
) -> None:
    """Open, report it (`opened`), wait for every other connection to be open, then run the
    rollout: all of them run concurrently."""
    try:
        async with open_websocket_url(
            url,
            connect_timeout=30,
            disconnect_timeout=5,
            max_message_size=1 << 24,
            extra_headers=phase.headers,
        ) as ws:
            phase.now += 1
            phase.peak = max(phase.peak, phase.now)
            opened.set()
            try:
                await phase.go.wait()
                await _rollout(ws, conn, calls)
            finally:
                phase.now -= 1
    except HandshakeError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, OSError):  # trio-websocket wraps a failed connect
            conn.errors.append(f"connection failed: {type(cause).__name__}: {cause}")
        elif isinstance(exc, ConnectionRejected):
            body = (exc.body or b"").decode(errors="replace")[:200]
            conn.errors.append(f"handshake refused: HTTP {exc.status_code} {body}".rstrip())
        else:
            conn.errors.append(f"handshake failed: {type(exc).__name__} {exc}".rstrip())
    except WsConnectionClosed as exc:
        conn.errors.append(f"connection closed by the server: {exc.reason}")
    except OSError as exc:
        conn.errors.append(f"connection failed: {type(exc).__name__}: {exc}")
    except Exception as exc:  # anything else is still one connection's error, not the run's
        conn.errors.append(f"client error: {type(exc).__name__}: {exc}")
    finally:
        opened.set()
        if phase.deadline.cancel_called and not conn.finished and not conn.errors:
            conn.errors.append("timed out")
