# Shared helpers of the real-client tests (imported by the test modules beside this file).
from __future__ import annotations

import functools
import socket
import ssl
import time
import typing
from typing import Any

import httpx2 as httpx
import orjson
from openai import DefaultHttpxClient, OpenAI
from openai.types.responses import ResponseStreamEvent

MODEL = "gpt-test"

TIMEOUT = 10.0


@functools.cache
def _tls() -> ssl.SSLContext:
    # Every HTTP client builds a TLS context (~70 ms) it never uses on http://; share one.
    return ssl.create_default_context()


def sdk_client(server: Any) -> OpenAI:
    """The SDK's sync client as users make it (its own default HTTP client settings)."""
    return OpenAI(
        api_key="test",
        base_url=server.http_base_url,
        max_retries=0,
        timeout=TIMEOUT,
        http_client=DefaultHttpxClient(verify=_tls()),
    )


def raw_client(base_url: str = "") -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=TIMEOUT, verify=_tls())


# The always-required keys of a Response object (spec §2.3).
REQUIRED_RESPONSE_KEYS = (
    "id",
    "object",
    "created_at",
    "error",
    "incomplete_details",
    "instructions",
    "model",
    "tools",
    "output",
    "parallel_tool_calls",
    "metadata",
    "tool_choice",
    "temperature",
    "top_p",
)

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


@functools.cache
def stream_event_classes() -> dict[str, type]:
    """The SDK's class for each streaming event `type`, from its ResponseStreamEvent union."""
    union = typing.get_args(ResponseStreamEvent)[0]  # Annotated[Union[...], discriminator]
    out: dict[str, type] = {}
    for cls in typing.get_args(union):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            assert literal not in out, f"two SDK classes for {literal}"
            out[literal] = cls
    return out


def assert_event_class(event: Any, *, exact: bool = True) -> None:
    """The event parsed into the SDK's class for its type (a subclass if not `exact`: the
    `responses.stream` helper adds snapshots to some), never an unrelated fallback."""
    expected = stream_event_classes().get(event.type)
    assert expected is not None, f"the SDK has no class for event type {event.type!r}"
    ok = type(event) is expected if exact else isinstance(event, expected)
    assert ok, f"{event.type} parsed as {type(event).__name__}"


ANY: Any = object()  # "do not check this key" in assert_error_envelope


def assert_error_envelope(
    body: Any,
    *,
    code: str | None = None,
    param: str | None = None,
    type_: str = "invalid_request_error",
) -> dict[str, Any]:
    """`{"error": {"message","type","param","code"}}`, all four keys present; returns `error`.

    `code`, `param` and `type_` are checked exactly (None means null) unless given as ANY.
    """
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str)
    for key, want in (("type", type_), ("code", code), ("param", param)):
        if want is not ANY:
            assert error[key] == want, error
    for key in ("code", "param"):
        assert error[key] is None or isinstance(error[key], str), error
    return error


def parse_sse(body: str) -> list[tuple[str, dict[str, Any]]]:
    """Strict SSE framing: every frame is exactly `event: X\\ndata: {json}` then a blank line."""
    assert body.endswith("\n\n"), body[-200:]
    frames = body[:-2].split("\n\n")
    out = []
    for frame in frames:
        lines = frame.split("\n")
        assert len(lines) == 2, frame
        assert lines[0].startswith("event: "), frame
        assert lines[1].startswith("data: "), frame
        name = lines[0][len("event: ") :]
        data = orjson.loads(lines[1][len("data: ") :])
        assert isinstance(data, dict) and data["type"] == name, frame
        out.append((name, data))
    return out


def assert_healthy(client: OpenAI) -> None:
    """A normal create on the same client still works."""
    resp = client.responses.create(model=MODEL, input="are you still there?")
    assert resp.status == "completed"
    assert resp.output_text


def function_calls(resp: Any) -> list[Any]:
    return [item for item in resp.output if item.type == "function_call"]


class RawConnection:
    """A raw TCP connection to the server, for what no HTTP client library will send."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed by the server; unread: {self.buf[:200]!r}")
        self.buf += chunk

    def read_response(self) -> tuple[int, dict[str, str], bytes]:
        """One response with a Content-Length body (status, lower-case headers, body)."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def closed_within(self, seconds: float) -> bool:
        """True if the server closes the connection (EOF or reset) within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return False
            except ConnectionResetError:
                return True
            if not chunk:
                return True
            self.buf += chunk
