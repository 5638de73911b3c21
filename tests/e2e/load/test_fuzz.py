# A fuzz of the WebSocket frame decoder against a live server (a ServerThread, synchronous
# `websockets` client): random bytes as binary frames, random text (mostly invalid JSON), random
# JSON values, and random objects whose `type` is one of the three client events (or not) with
# random fields. Every frame is answered with an `error` event (or, for a create the server
# accepts, with response events ending in one terminal event), the connection stays usable (a
# valid create that follows completes, its events numbered from 0) and the server logs no error.
# Also random bytes straight onto the socket after the handshake: the server drops the
# connection, logs nothing at ERROR, and keeps serving.
from __future__ import annotations

import contextlib
import json
import logging
import socket
import string
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from protocol.request import CreateRequest
from rollout.model.policy import ScriptedPolicy, text
from rollout.testing.thread import ServerThread
from support.events import TERMINAL, TERMINAL_OR_ERROR
from support.servers import threaded

KINDS = ("response.create", "response.append", "response.cancel")
FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
READ_TIMEOUT = 10.0
ANY_ERROR = "any error"

# -- strategies ----------------------------------------------------------------------------------

texts = st.text(max_size=24)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits too
    | st.floats()  # NaN and infinities are written as bare NaN/Infinity: invalid JSON
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)
CREATE_FIELDS = [*sorted(f.name for f in attrs.fields(CreateRequest)), "response_id"]
ids = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=0, max_size=12)
field_values = (
    json_values
    | ids
    | st.sampled_from(["append", "chain", "auto", "resp_", "m", ""])
    | st.just([{"type": "function", "name": "exec", "parameters": {"type": "object"}}])
    | st.just([{"type": "message", "role": "user", "content": "hi"}])
    | st.just([{"type": "function_call_output", "call_id": "call_x", "output": "ok"}])
)
JSONISH = '{}[]":,0123456789.eE-+ truefalsn\\u'  # text that is nearly JSON
kinds = st.one_of(st.sampled_from(KINDS), st.sampled_from(KINDS), st.sampled_from(KINDS), texts)
BASES: dict[str, dict[str, Any]] = {
    "response.create": {"model": "m", "input": "hi"},
    "response.append": {"response_id": "resp_unknown", "input": []},
    "response.cancel": {"response_id": "resp_unknown"},
}


@st.composite
def event_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Objects shaped like client events: a type, usually that event's required fields, a few
    known fields with random values, and random keys."""
    kind = draw(kinds)
    value: dict[str, Any] = dict(BASES.get(kind, {})) if draw(st.integers(0, 3)) else {}
    value.update(draw(st.dictionaries(texts, json_values, max_size=2)))
    value.update(draw(st.dictionaries(st.sampled_from(CREATE_FIELDS), field_values, max_size=3)))
    value["type"] = kind
    return value


# -- the server and a client that reconnects ------------------------------------------------------


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ServerThread, Collect]]:
    handler = Collect()
    logger = logging.getLogger("rollout")
    logger.addHandler(handler)
    try:
        with threaded(ScriptedPolicy([text("ok")], final="ok")) as thread:
            yield thread, handler
    finally:
        logger.removeHandler(handler)


class Client:
    """One connection, reopened only if a previous example lost it (which that example fails)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ws: ClientConnection | None = None

    def conn(self) -> ClientConnection:
        if self.ws is None:
            self.ws = connect(self.url, open_timeout=10, max_size=None, compression=None)
        return self.ws

    def drop(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None

    def answer(self, frame: str | bytes) -> list[dict[str, Any]]:
        """Send one frame; read its answer: up to an error event or a terminal event."""
        ws = self.conn()
        try:
            ws.send(frame)
            frames: list[dict[str, Any]] = []
            while True:
                message = ws.recv(timeout=READ_TIMEOUT)
                value = json.loads(message)
                assert isinstance(value, dict), value
                frames.append(value)
                if value.get("type") in TERMINAL_OR_ERROR:
                    return frames
        except (ConnectionClosed, TimeoutError):
            self.drop()
            raise

    def close(self) -> None:
        self.drop()


def valid_create() -> str:
    return json.dumps({"type": "response.create", "model": "m", "input": "hello", "store": False})


def check_answer(frames: list[dict[str, Any]], sent: object) -> None:
    last = frames[-1]
    if last["type"] == "error":
        assert len(frames) == 1, f"events before the error for {sent!r}: {frames}"
        error = last["error"]
        assert isinstance(error, dict)
        assert isinstance(error.get("message"), str) and error["message"]
        assert isinstance(error.get("code"), str) and error["code"]
        assert isinstance(error.get("type"), str)
        return
    # A create the server accepted: one response, numbered from 0, one terminal event at the end.
    assert isinstance(sent, dict) and sent.get("type") == "response.create", (sent, frames)
    assert frames[0]["type"] == "response.created", frames
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))
    assert sum(f["type"] in TERMINAL for f in frames) == 1


def check_usable(client: Client, server: ServerThread, logs: Collect, sent: object) -> None:
    """The connection still works (nothing stray arrives first), and the server logged nothing."""
    frames = client.answer(valid_create())
    assert frames[0]["type"] == "response.created", f"after {sent!r}: {frames}"
    assert frames[-1]["type"] == "response.completed", f"after {sent!r}: {frames}"
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))
    assert server._thread is not None and server._thread.is_alive()
    errors = [logs.format(r) for r in logs.records]
    logs.records.clear()
    assert not errors, f"the server logged errors after {sent!r}: {errors}"


@pytest.fixture
def client(server: tuple[ServerThread, Collect]) -> Iterator[Client]:
    c = Client(server[0].ws_url)
    yield c
    c.close()


# -- the fuzz ------------------------------------------------------------------------------------

# What is sent: a strategy, how a drawn value goes on the wire, and the error code its answer
# must have (None: any answer check_answer accepts).
FRAMES: dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], str | bytes], str | None]] = {
    "binary": (st.binary(max_size=512), lambda data: data, "invalid_frame"),
    "text": (st.text(max_size=256) | st.text(alphabet=JSONISH, max_size=64), str, None),
    # NaN/Infinity come out as invalid JSON: an error too.
    "json-values": (json_values, json.dumps, ANY_ERROR),
    "event-objects": (event_objects(), json.dumps, None),
}


@pytest.mark.parametrize("kind", FRAMES)
def test_random_frames(kind: str, client: Client, server: tuple[ServerThread, Collect]) -> None:
    thread, logs = server
    strategy, encode, code = FRAMES[kind]

    @FUZZ
    @given(strategy)
    def run(value: Any) -> None:
        frames = client.answer(encode(value))
        if code is not None:
            assert frames[-1]["type"] == "error", (value, frames)
            assert code == ANY_ERROR or frames[-1]["error"]["code"] == code, frames
        check_answer(frames, value)
        check_usable(client, thread, logs, value)

    run()


# -- below the frame decoder: random bytes on the socket -------------------------------------------


def _handshake(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(
        b"GET /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed during the handshake"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def test_random_bytes_on_the_socket(client: Client, server: tuple[ServerThread, Collect]) -> None:
    thread, logs = server

    @settings(FUZZ, max_examples=100)
    @given(st.binary(min_size=1, max_size=256))
    def run(data: bytes) -> None:
        sock = _handshake(thread.port)
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                while sock.recv(4096):  # whatever the server answers, it then closes
                    pass
        finally:
            sock.close()
        check_usable(client, thread, logs, data)

    run()
