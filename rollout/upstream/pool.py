# The connection to the real engine: one httpx pool (keep-alive, connect and read timeouts) per
# trio run, a streamed POST whose response head decides (a refusal raises Refused, carrying what
# the client should see), and the stream's server-sent events as they arrive (protocol.sse).
# Also the mapping of the engine's errors onto the documented codes: a 429 stays a retryable 429
# with its Retry-After and rate-limit headers, a 5xx is `server_error`, a refused request keeps
# its code; transport trouble (timeouts, a refused connection, a stream cut short, a stream
# silent for longer than the idle timeout) is Broken. A JSON body where a stream was asked for
# is read whole (`is_whole`, `whole_body`): the dialects turn it into their events.
from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx
import orjson
import trio

from protocol.errors import ProtocolError, clip
from protocol.sse import SSEDecoder, SSEError
from rollout.upstream.target import UpstreamConfig

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


class Broken(Exception):
    """The engine could not be reached or its stream broke (a timeout, a reset, a cut stream)."""


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
    """A pool of connections to the engine, made lazily in the trio run that uses it (a pool
    belongs to one event loop: a server restarted in a new run gets a new one)."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        self._client: httpx.AsyncClient | None = None
        self._token: object = None

    @property
    def client(self) -> httpx.AsyncClient:
        token = trio.lowlevel.current_trio_token()
        if self._client is None or self._token is not token:
            c = self.config
            headers = {"accept": "text/event-stream", "content-type": "application/json"}
            if c.api_key:
                headers["authorization"] = f"Bearer {c.api_key}"
            self._client = httpx.AsyncClient(
                base_url=c.base_url,
                headers=headers,
                # httpx's read timeout is only the backstop: the first event's deadline is
                # UpstreamModel's, the wait between two chunks `events`'.
                timeout=httpx.Timeout(
                    max(c.read_timeout_s, c.first_byte_timeout_s),
                    connect=c.connect_timeout_s,
                    pool=c.first_byte_timeout_s,
                ),
                limits=httpx.Limits(
                    max_connections=c.max_connections, max_keepalive_connections=c.max_connections
                ),
                trust_env=False,  # loopback engines must not go through a proxy from the env
            )
            self._token = token
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_WITHIN_S):
                await client.aclose()

    async def open(self, body: Mapping[str, Any]) -> httpx.Response:
        """POST `body` to the API's path as a stream; returns once the head is in (status 200).
        Raises Refused for an error status, Broken when the engine cannot be reached."""
        request = self.client.build_request("POST", self.config.path, content=orjson.dumps(body))
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise Broken(f"The upstream engine did not answer in time ({_kind(exc)}).") from exc
        except httpx.HTTPError as exc:
            raise Broken(f"The upstream engine could not be reached: {_kind(exc)}.") from exc
        if response.status_code == 200:
            return response
        try:
            body_bytes = b""
            async for chunk in response.aiter_raw():
                body_bytes += chunk
                if len(body_bytes) > MAX_ERROR_BODY:
                    break
        except httpx.HTTPError:
            pass
        finally:
            await close(response)
        raise Refused(refusal(response.status_code, response.headers, body_bytes))


def is_whole(response: httpx.Response) -> bool:
    """A JSON body where an event stream was asked for: the engine answered as if not
    streaming (the whole completion or response at once)."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def whole_body(response: httpx.Response, idle_s: float) -> bytes:
    """A whole (non-streamed) answer's body, read to its end (at most MAX_WHOLE_BODY)."""
    body = bytearray()
    async for data in events(response, idle_s, raw=True):
        body += data
        if len(body) > MAX_WHOLE_BODY:
            raise Broken(f"The upstream engine's answer is larger than {MAX_WHOLE_BODY} bytes.")
    return bytes(body)


async def events(
    response: httpx.Response, idle_s: float, *, raw: bool = False
) -> AsyncGenerator[bytes, None]:
    """The data of each server-sent event of a streamed response, as each arrives (`raw`: the
    body's chunks as they are); Broken if the stream fails, breaks off, or sends nothing for
    `idle_s` once its first chunk is in (the wait for that one is the caller's)."""
    decoder = SSEDecoder()
    wait = math.inf  # the first chunk: the caller's deadline
    try:
        chunks = response.aiter_raw()
        while True:
            with trio.move_on_after(wait) as idle:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            if idle.cancelled_caught:
                raise Broken(f"The upstream engine stopped streaming: nothing for {idle_s:g} s.")
            wait = idle_s
            if raw:
                yield chunk
                continue
            for message in decoder.feed(chunk):
                yield message.data
    except httpx.TimeoutException as exc:
        raise Broken(f"The upstream engine stopped streaming ({_kind(exc)}).") from exc
    except httpx.HTTPError as exc:
        raise Broken(f"The upstream engine's stream broke off: {_kind(exc)}.") from exc
    except SSEError as exc:
        raise Broken(f"The upstream engine sent a malformed event stream: {exc}.") from exc


async def close(response: httpx.Response) -> None:
    """Close a response, also when cancelled: a stream not read to its end drops its
    connection, which is how the engine learns the request was abandoned."""
    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_WITHIN_S):
        await response.aclose()


def _kind(exc: httpx.HTTPError) -> str:
    detail = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {clip(detail, 200)}" if detail else name
