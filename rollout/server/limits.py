# Server-wide limits that no single connection can see: TCP connections open at once and bytes
# of request bodies held at once. Counted here; the listener enforces the first (a polite 503
# before any request is read), the HTTP transport the second (a 503 instead of reading the body).
# Both answer 503 with Retry-After, so clients' retry logic runs instead of memory growing.
from __future__ import annotations

import contextlib

import attrs
import orjson
import trio

from protocol.errors import ProtocolError, overloaded
from rollout.conversation.ids import new_id
from rollout.conversation.work import Stats
from rollout.server.closing import linger_close

REFUSING_MAX = 64  # connections being refused politely at once; past it they are just closed
REFUSE_S = 1.0  # how long a refused connection may take to read the 503


def too_many_connections(limit: int) -> ProtocolError:
    message = f"The server has {limit} connections open, its limit; retry shortly."
    return overloaded(message, "connection_limit")


def too_many_body_bytes(limit: int) -> ProtocolError:
    message = f"The server holds {limit} bytes of request bodies at once, its limit; retry shortly."
    return overloaded(message, "request_bytes_limit")


@attrs.define
class Limits:
    """The caps (from ServerConfig) and their counters, which live in `stats` (for /metrics)."""

    max_connections: int
    max_body_bytes: int
    stats: Stats = attrs.field(factory=Stats)
    refusing: int = 0  # connections being refused right now

    def admit(self) -> bool:
        """Count a new connection in, unless the server is at its cap (then: refuse it)."""
        if self.stats.open_connections >= self.max_connections:
            self.stats.error("connection_limit")
            return False
        self.stats.open_connections += 1
        return True

    def leave(self) -> None:
        self.stats.open_connections -= 1

    def reserve(self, n: int) -> bool:
        """Take `n` bytes of the body budget; False (nothing taken) if that would exceed it."""
        if self.stats.body_bytes_in_flight + n > self.max_body_bytes:
            return False
        self.stats.body_bytes_in_flight += n
        return True

    def release(self, n: int) -> None:
        self.stats.body_bytes_in_flight -= n

    async def refuse(self, stream: trio.SocketStream) -> None:
        """Answer a connection over the limit with 503 + Retry-After and close it; under a flood
        of them (more than REFUSING_MAX at once), close without an answer."""
        if self.refusing >= REFUSING_MAX:
            await stream.aclose()
            return
        self.refusing += 1
        try:
            with trio.move_on_after(REFUSE_S):
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await stream.send_all(refusal(too_many_connections(self.max_connections)))
            await linger_close(stream, REFUSE_S)
        finally:
            self.refusing -= 1


def refusal(exc: ProtocolError) -> bytes:
    """A whole HTTP/1.1 error response (the standard envelope), sent before any request was
    read: `Connection: close`, `Retry-After: 1`."""
    body = orjson.dumps({"error": exc.payload()})
    head = (
        f"HTTP/1.1 {exc.status} Service Unavailable\r\n"
        "content-type: application/json\r\n"
        f"x-request-id: {new_id('req')}\r\n"
        "retry-after: 1\r\n"
        "connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body
