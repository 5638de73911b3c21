# The connection to the real engine: one pool of keep-alive connections (rollout.upstream.wire) per
# trio run, a streamed POST whose response head decides (a refusal raises Refused, carrying what
# the client should see), and the stream's server-sent events as they arrive (protocol.sse).
# Also the mapping of the engine's errors onto the documented codes: a 429 stays a retryable 429
# with its Retry-After and rate-limit headers, a 5xx is `server_error`, a refused request keeps
# its code; transport trouble (timeouts, a refused connection, a stream cut short, a stream
# silent for longer than the idle timeout) is Broken. A JSON body where a stream was asked for
# is read whole (`is_whole`, `whole_body`): the dialects turn it into their events.
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson
import trio

from protocol.errors import ProtocolError, clip
from protocol.sse import SSEDecoder, SSEError
from rollout.upstream.target import UpstreamConfig
from rollout.upstream.wire import Broken, Idle, Response, Wire

#: Headers of an engine's 429 that reach the client as they are.
PASSED_ON = ("retry-after", "retry-after-ms")
MAX_ERROR_BODY = 64 * 1024  # bytes of an engine's error reply read to learn its message
CLOSE_WITHIN_S = 1.0  # closing an aborted stream (its connection) takes at most this long
MAX_WHOLE_BODY = 16 * 1024 * 1024  # bytes of a non-streamed answer to a streamed request


class Refused(Exception):
    """The engine answered with an error status: `error` is what the client should get."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(str(error))
        self.error = error


def refusal(status: int, headers: Mapping[str, str], body: bytes) -> ProtocolError:
    """The client's view of an engine's error reply."""
    error = _error_object(body)
    message = str(error.get("message") or f"The upstream engine answered HTTP {status}.")
    passed = {k: headers[k] for k in headers if k in PASSED_ON or k.startswith("x-ratelimit-")}
    if status == 429:
        return ProtocolError(
            message=message,
            type=str(error.get("type") or "requests"),
            code=str(error.get("code") or "rate_limit_exceeded"),
            status=429,
            headers={"retry-after": "1", **passed},
        )
    if status in (400, 404, 413, 422):  # the request, as sent, is not one the engine takes
        return ProtocolError(
            message=message,
            type=str(error.get("type") or "invalid_request_error"),
            code=None if error.get("code") is None else str(error["code"]),
            param=None if error.get("param") is None else str(error["param"]),
            status=400 if status == 422 else status,
        )
    # 5xx, and what only the server's own setup explains (401/403: its upstream key).
    return ProtocolError(
        message=f"The upstream engine failed (HTTP {status}): {clip(message, 256)}",
        type="server_error",
        code="server_error",
        status=500,
        headers={k: v for k, v in passed.items() if k in PASSED_ON} or None,
    )


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return {"message": clip(text, 256)} if text else {}
    if isinstance(value, dict):
        error = value.get("error", value)
        if isinstance(error, dict):
            return error
        if isinstance(error, str):
            return {"message": error}
    return {}


class UpstreamHttp:
    """The connections to the engine (rollout.upstream.wire), made lazily in the trio run that
    uses them (a pool belongs to one event loop: a server restarted in a new run gets a new
    one)."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        self._wire: Wire | None = None
        self._token: object = None

    @property
    def wire(self) -> Wire:
        token = trio.lowlevel.current_trio_token()
        if self._wire is None or self._token is not token:
            c = self.config
            headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
            if c.api_key:
                headers["Authorization"] = f"Bearer {c.api_key}"
            self._wire = Wire(
                c.base_url,
                headers,
                max_connections=c.max_connections,
                connect_timeout_s=c.connect_timeout_s,
            )
            self._token = token
        return self._wire

    async def aclose(self) -> None:
        wire, self._wire = self._wire, None
        if wire is not None:
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_WITHIN_S):
                await wire.aclose()

    async def open(self, body: Mapping[str, Any]) -> Response:
        """POST `body` to the API's path; returns once the head is in (status 200). Raises
        Refused for an error status, Broken when the engine cannot be reached."""
        try:
            response = await self.wire.post(self.config.path, orjson.dumps(body))
        except Broken as exc:
            raise Broken(f"The upstream engine could not be reached: {exc}.") from exc
        if response.status == 200:
            return response
        body_bytes = b""
        try:
            with trio.move_on_after(self.config.read_timeout_s):
                while len(body_bytes) <= MAX_ERROR_BODY:
                    data = await response.read(self.config.read_timeout_s)
                    if not data:
                        break
                    body_bytes += data
        except Broken:
            pass
        finally:
            await response.aclose()
        raise Refused(refusal(response.status, response.headers, body_bytes))


def is_whole(response: Response) -> bool:
    """A JSON body where an event stream was asked for: the engine answered as if not
    streaming (the whole completion or response at once)."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def whole_body(response: Response, idle_s: float) -> bytes:
    """A whole (non-streamed) answer's body, read to its end (at most MAX_WHOLE_BODY)."""
    body = bytearray()
    while data := await _read(response, idle_s):
        body += data
        if len(body) > MAX_WHOLE_BODY:
            raise Broken(f"The upstream engine's answer is larger than {MAX_WHOLE_BODY} bytes.")
    return bytes(body)


class Events:
    """The data of a streamed answer's server-sent events, as they arrive: `batch` gives those
    one network read completed. Broken if the stream fails, breaks off, or sends nothing for
    `idle_s` once its first batch is in (the wait for that one is the caller's)."""

    def __init__(self, response: Response, idle_s: float) -> None:
        self.response, self.idle_s = response, idle_s
        self._decoder = SSEDecoder()
        self._wait = math.inf  # the first read: the caller's deadline

    async def batch(self) -> list[bytes]:
        """The next events' data (at least one); [] at the stream's end."""
        while True:
            data = await _read(self.response, self._wait)
            self._wait = self.idle_s
            if not data:
                return []
            try:
                messages = self._decoder.feed(data)
            except SSEError as exc:
                raise Broken(f"The upstream engine sent a malformed event stream: {exc}.") from exc
            if messages:
                return [m.data for m in messages]


async def _read(response: Response, idle_s: float) -> bytes:
    try:
        return await response.read(idle_s)
    except Idle as exc:
        raise Broken(f"The upstream engine stopped streaming: {exc}.") from exc
    except Broken as exc:
        raise Broken(f"The upstream engine's stream broke off: {exc}.") from exc


async def close(response: Response, *, drain: bool = False) -> None:
    """Close a response, also when cancelled: a stream not read to its end drops its
    connection, which is how the engine learns the request was abandoned (`drain`: its end was
    seen, so the rest of the body is read to keep the connection). An answer read to its end
    gives its connection back at once, with nothing to wait for."""
    if response.release_now():
        return
    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_WITHIN_S):
        await response.aclose(drain=drain)
