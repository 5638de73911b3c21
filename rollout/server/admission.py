# What a request must show before it is served, as plain checks that raise the ProtocolError
# the client is answered with: its API key (when keys are configured), and for a WebSocket
# upgrade a well-formed handshake on /v1/responses within the connection limit. The HTTP layer
# (rollout.server.httpconn) calls them and frames the refusal.
from __future__ import annotations

import hmac
from collections.abc import Iterable

from protocol import errors
from protocol.errors import ProtocolError, overloaded
from rollout.server.exchange import Request


def authorize(request: Request, keys: Iterable[str]) -> str | None:
    """The request's owner: the API key of its `Authorization: Bearer` header, compared in
    constant time with each of `keys`; None when no keys are configured. 401 otherwise."""
    keys = tuple(keys)
    if not keys:
        return None
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    supplied = token.strip().encode()
    ok = False
    for key in keys:
        ok |= hmac.compare_digest(supplied, key.encode())
    if scheme.lower() != "bearer" or not ok:
        raise ProtocolError(
            message="Incorrect API key provided.", code="invalid_api_key", status=401
        )
    return supplied.decode()


def is_upgrade(request: Request) -> bool:
    """A request for the WebSocket transport (vetted by check_handshake)."""
    return request.method == "GET" and "websocket" in request.headers.get("upgrade", "").lower()


def check_handshake(request: Request) -> None:
    """A WebSocket handshake on the one WebSocket endpoint, with the headers RFC 6455 needs."""
    if request.path.rstrip("/") != "/v1/responses":
        raise errors.not_found_path(request.method, request.path)
    connection = request.headers.get("connection", "").lower().split(",")
    upgrade = request.headers.get("upgrade", "").strip().lower()
    if "upgrade" not in (token.strip() for token in connection) or upgrade != "websocket":
        raise ProtocolError(
            message="A WebSocket handshake needs 'Connection: Upgrade' and 'Upgrade: websocket'.",
            code="bad_websocket_handshake",
        )
    version = request.headers.get("sec-websocket-version", "").strip()
    if not version:
        raise ProtocolError(
            message="The WebSocket handshake has no Sec-WebSocket-Version.",
            code="bad_websocket_handshake",
        )
    if version != "13":
        raise ProtocolError(
            message="Unsupported WebSocket version; this server speaks version 13.",
            code="websocket_version_unsupported",
            status=426,
        )
    if not request.headers.get("sec-websocket-key", "").strip():
        raise ProtocolError(
            message="The WebSocket handshake has no Sec-WebSocket-Key.",
            code="bad_websocket_handshake",
        )


def check_connections(open_now: int, limit: int) -> None:
    """Room for one more WebSocket connection (503, retried shortly, otherwise)."""
    if open_now >= limit:
        message = "Too many WebSocket connections; retry shortly."
        raise overloaded(message, "websocket_connection_limit")
