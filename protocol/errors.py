# The one error type the protocol raises, and constructors for the documented codes.
# Transports render a ProtocolError as an HTTP error body or a WebSocket `error` event;
# this module knows nothing about either.
from __future__ import annotations

from typing import Any

import attrs

ECHO = 64  # characters of a client's value an error message repeats
MAX_MESSAGE = 1024  # characters of any error message (and of `param`)


def clip(text: str, limit: int = ECHO) -> str:
    """A value the client sent, as an error message may repeat it: cut to `limit` characters,
    with its length said when it was cut (a 1 MB field must not make a 1 MB error). Every
    message that echoes client input goes through here; pass `repr(value)` for a non-string."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


@attrs.define(eq=False)
class ProtocolError(Exception):
    """A request the server refuses, with everything the wire needs to say why. The message
    and `param` are bounded (MAX_MESSAGE) however they were built."""

    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    status: int = 400
    headers: dict[str, str] | None = None  # HTTP headers the refusal carries (Retry-After, ...)

    def __attrs_post_init__(self) -> None:
        self.message = clip(self.message, MAX_MESSAGE)
        if self.param is not None:
            self.param = clip(self.param, MAX_MESSAGE)

    def __str__(self) -> str:
        where = f" (param {self.param})" if self.param else ""
        return f"{self.status} {self.code or self.type}: {self.message}{where}"

    def payload(self) -> dict[str, Any]:
        """The `error` object: all four keys present, `param` and `code` nullable."""
        return {"type": self.type, "code": self.code, "message": self.message, "param": self.param}


def invalid(message: str, param: str | None = None, code: str | None = None) -> ProtocolError:
    return ProtocolError(message=message, param=param, code=code)


def previous_response_not_found(response_id: str) -> ProtocolError:
    return ProtocolError(
        message=f"Previous response with id '{clip(response_id)}' not found.",
        code="previous_response_not_found",
        param="previous_response_id",
    )


def response_not_found(response_id: str) -> ProtocolError:
    message = f"Response with id '{clip(response_id)}' not found."
    return ProtocolError(message=message, code="response_not_found", status=404)


def not_found_path(method: str, path: str) -> ProtocolError:
    return ProtocolError(
        message=f"Unknown request URL: {clip(method)} {clip(path, 256)}.", status=404
    )


def method_not_allowed(method: str, path: str) -> ProtocolError:
    message = f"Method {clip(method)} is not allowed for {clip(path, 256)}."
    return ProtocolError(message=message, code="method_not_allowed", status=405)


def body_too_large(limit: int) -> ProtocolError:
    message = f"Request body is larger than the limit of {limit} bytes."
    return ProtocolError(message=message, code="request_too_large", status=413)


def context_length_exceeded(tokens: int, window: int) -> ProtocolError:
    return ProtocolError(
        message="Your input exceeds the context window of this model. Please adjust your input "
        f"and try again. (The input has {tokens} tokens; the window is {window}.)",
        code="context_length_exceeded",
        param="input",
    )


def server_error(
    message: str = "The server had an error while processing your request.",
) -> ProtocolError:
    return ProtocolError(message=message, type="server_error", code="server_error", status=500)


def overloaded(message: str, code: str) -> ProtocolError:
    """A 503 `server_error` that a client retries shortly: the server is at one of its limits
    (or a store it needs is down); transports add `Retry-After`."""
    return ProtocolError(message=message, type="server_error", code=code, status=503)
