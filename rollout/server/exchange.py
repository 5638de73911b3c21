# What a handler of an HTTP route (server/resources.py, server/conversations.py) is given: the
# parsed request, the Exchange it answers through (the connection's reply and SSE stream), and
# the parsing of queries and bodies every handler shares. It knows nothing of h11 or sockets.
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs

from protocol import errors
from protocol.errors import ProtocolError
from rollout.engine.loop import Sink
from rollout.service.service import Service

JSON = "application/json"


@attrs.define
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes | bytearray = b""  # (a sized body: the buffer it was read into)


class Stream(Sink, Protocol):
    """An SSE body for one request; `end` finishes it (sending the head first if need be)."""

    async def end(self) -> None: ...
    async def emit_bytes(self, kind: bytes, payload: bytes) -> None:
        """One event already in wire JSON (replayed from an event log)."""
        ...


class Exchange(Protocol):
    """What a handler needs of the HTTP connection answering the request."""

    service: Service
    owner: str | None  # the API key of the request, when keys are configured

    async def reply(self, status: int, body: Any, extra: dict[str, str] | None = None) -> None: ...
    async def reply_bytes(self, status: int, content_type: str, data: bytes) -> None: ...
    def sse(self) -> Stream: ...


Handler = Callable[..., Awaitable[None]]


# -- parsing --------------------------------------------------------------------------------------


def require_json(request: Request) -> None:
    ctype = request.headers.get("content-type", JSON).split(";")[0].strip().lower()
    if ctype != JSON:
        raise ProtocolError(
            message=f"Unsupported Content-Type {errors.clip(repr(ctype))}; send application/json.",
            code="unsupported_media_type",
            status=415,
        )


def digits(value: str) -> bool:
    """ASCII digits only (str.isdigit also takes '²' and Arabic-Indic digits)."""
    return value.isascii() and value.isdigit()


def integer(value: str, *, signed: bool = False) -> int | None:
    """`value` as an integer if it is ASCII digits (after a '-' when `signed`), at most 18 of
    them; else None. (int() of 5,000 digits raises ValueError; no limit here needs more.)"""
    body = value[1:] if signed and value.startswith("-") else value
    if not digits(body) or len(body) > 18:
        return None
    return int(value)


def query(request: Request, name: str, default: str) -> str:
    values = request.query.get(name)
    return values[-1] if values else default


def int_query(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = query(request, name, str(default))
    value = integer(raw)
    if value is None or not low <= value <= high:
        raise errors.invalid(
            f"Invalid '{name}': expected an integer from {low} to {high}, got "
            f"{errors.clip(repr(raw))}.",
            param=name,
            code="invalid_value",
        )
    return value
