# The clients of `rollout bench gateway`: blocking raw-socket clients that parse framing only
# (HTTP/1.1 chunked bodies, WebSocket frame headers), so the client's own cost is small and the
# same for both gateways. Each turn returns its seconds to the first delta, its seconds to its
# end, and the payload of its last event (the terminal one: the response's id, its items).
from __future__ import annotations

import socket
import time

import attrs
import orjson

from rollout.experiments.bench.streams import _ws_frame, _ws_open, next_frame

DELTA = b'"response.output_text.delta"'
TERMINAL = (b'"response.completed"', b'"response.failed"', b'"response.incomplete"', b'"error"')
END_OF_CHUNKED = b"\r\n0\r\n\r\n"


@attrs.frozen
class Turn:
    first_delta_s: float  # nan when the answer had no text delta
    seconds: float
    last: dict[str, object]  # the terminal event

    @property
    def response(self) -> dict[str, object]:
        value = self.last.get("response")
        if not isinstance(value, dict):
            raise RuntimeError(f"the turn did not complete: {str(self.last)[:300]}")
        return value

    @property
    def call_id(self) -> str:
        """The call_id of the answer's function call."""
        for item in self.response.get("output") or []:  # type: ignore[attr-defined]
            if item.get("type") == "function_call":
                return str(item["call_id"])
        raise RuntimeError(f"the answer has no function call: {str(self.response)[:300]}")


def _request(body: dict[str, object]) -> bytes:
    data = orjson.dumps(body)
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
    )


def _last_event(body: bytes) -> dict[str, object]:
    """The last `data:` line of an SSE body that is not `[DONE]`, decoded (the chunked framing's
    size lines never start with `data:`)."""
    lines = [ln for ln in body.split(b"\n") if ln.startswith(b"data: ") and ln != b"data: [DONE]"]
    if not lines:
        return {"error": body[:300].decode(errors="replace")}
    value = orjson.loads(lines[-1][6:].rstrip(b"\r"))
    return value if isinstance(value, dict) else {"error": value}


def sse_turn(port: int, body: dict[str, object], *, keep: bool = False) -> Turn:
    """POST one streamed response on a fresh connection and read its body to the end; `keep`
    decodes its last event (else it is only checked to be `response.completed`)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = _request({**body, "stream": True})
        start = time.perf_counter()
        sock.sendall(request)
        first = float("nan")
        whole = bytearray()
        while True:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the SSE stream ended early: " + bytes(whole[-300:]).decode())
            if first != first and DELTA[1:-1] in whole[-64:] + data:
                first = time.perf_counter() - start
            whole += data
            if whole.endswith(END_OF_CHUNKED):
                seconds = time.perf_counter() - start
                break
    if keep or b"response.completed" not in whole[-65536:]:
        return Turn(first, seconds, _last_event(bytes(whole)))
    return Turn(first, seconds, {"type": "response.completed"})


class WsSession:
    """One WebSocket connection to a gateway's /v1/responses; `turn` sends a response.create
    and reads frames (their headers; payloads only where needed) to the terminal event."""

    def __init__(self, port: int) -> None:
        self.sock, self.buf = _ws_open(port)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        self.sock.close()

    def _frame(self) -> bytes:
        while True:
            payload = next_frame(self.buf, keep=1 << 30)
            if payload is not None:
                return payload
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the WebSocket connection closed")
            self.buf += data

    def turn(self, body: dict[str, object]) -> Turn:
        create = _ws_frame(orjson.dumps({"type": "response.create", **body}))
        start = time.perf_counter()
        self.sock.sendall(create)
        first = float("nan")
        while True:
            payload = self._frame()
            head = payload[:64]
            if first != first and DELTA in head:
                first = time.perf_counter() - start
            if any(t in head for t in TERMINAL):
                seconds = time.perf_counter() - start
                value = orjson.loads(payload)
                return Turn(first, seconds, value if isinstance(value, dict) else {})
