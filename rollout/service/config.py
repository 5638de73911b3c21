# Server configuration: limits and timeouts of both transports, in one frozen value.
from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class ServerConfig:
    # HTTP
    max_body_bytes: int = 16 * 1024 * 1024  # larger bodies get 413
    max_header_bytes: int = 64 * 1024  # larger request heads get 431
    header_timeout_s: float = 10.0  # a request head (or body) slower than this is dropped
    idle_timeout_s: float = 120.0  # an idle keep-alive connection is closed after this
    max_body_bytes_in_flight: int = 512 * 1024 * 1024  # request bodies held at once, server-wide
    # WebSocket
    max_frame_bytes: int = 16 * 1024 * 1024  # larger frames close the connection with 1009
    max_connections: int = 1000  # WebSocket connections at once; more get 503 at the handshake
    max_in_flight: int = 16  # responses running at once per connection; more are queued
    max_lanes: int = 32  # distinct named stream_ids per connection
    max_queued: int = 64  # creates waiting for a slot per connection; more get an error event
    max_queued_bytes: int = 32 * 1024 * 1024  # frame bytes of those waiting creates, at most
    ws_max_age_s: float = 3600.0  # connection age limit
    ws_idle_timeout_s: float = 600.0  # no client frame for this long, nothing running: closed
    # The append shape
    append_timeout_s: float = 600.0  # a suspended rollout waits this long for its outputs
    append_grace_s: float = 60.0  # a suspended rollout outlives its connection this long
    max_live_rollouts: int = 10_000  # live append rollouts at once; more get 503
    # Background responses
    max_background: int = 10_000  # background responses running at once; more get 503
    # Steering (response.steer)
    max_pending_steers: int = 8  # queued steering submissions per response; more fail
    # Both
    max_open_connections: int = 4096  # TCP connections at once (HTTP and WebSocket); more: 503
    shutdown_grace_s: float = 10.0  # on SIGINT/SIGTERM, running responses get this long to end
    api_keys: frozenset[str] = frozenset()  # empty: no authentication
    worker_id: str | None = None  # this worker's id, sent as x-rollout-worker (None: no header)
    # What a create may say
    lenient: bool = False  # accept unknown parameters and tool types; skip the strict-only rules
