# Fixtures for the real-client tests: a fresh server (ServerThread, real sockets, ephemeral
# port) per test, the official `openai` SDK's sync client pointed at it, and a raw HTTP client
# (`httpx2`, the HTTP library this SDK version ships with) for what the SDK cannot send.
# `serve(policy=..., max_body_bytes=...)` makes servers with a given policy or HTTP limits.
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.model.policy import DefaultPolicy, Policy
from rollout.testing.thread import ServerThread

try:  # the limits moved from rollout.server.http.HttpConfig to rollout.service.config.ServerConfig
    from rollout.service.config import ServerConfig as _Limits

    _LIMITS_KW = "config"
except ImportError:  # pragma: no cover - older layout
    from rollout.server.http import HttpConfig as _Limits  # type: ignore[attr-defined,no-redef]

    _LIMITS_KW = "http"

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _sdk_helpers import raw_client, sdk_client  # noqa: E402 - needs the path above

Serve = Callable[..., tuple[ServerThread, OpenAI]]


def start_server(policy: Policy | None = None, **limits: Any) -> ServerThread:
    """A started server; `limits` are HTTP limits such as `max_body_bytes=1000`."""
    engine = Engine(policy=policy or DefaultPolicy())
    kwargs: dict[str, Any] = {_LIMITS_KW: _Limits(**limits)} if limits else {}
    return ServerThread(engine, **kwargs).start()


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`server, client = serve(policy=..., max_body_bytes=...)`: stopped after the test."""
    with contextlib.ExitStack() as stack:

        def start(policy: Policy | None = None, **limits: Any) -> tuple[ServerThread, OpenAI]:
            server = start_server(policy, **limits)
            stack.callback(server.stop)
            client = stack.enter_context(sdk_client(server))
            return server, client

        yield start


@pytest.fixture
def server() -> Iterator[ServerThread]:
    s = start_server()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def client(server: ServerThread) -> Iterator[OpenAI]:
    with sdk_client(server) as c:
        yield c


@pytest.fixture
def http(server: ServerThread) -> Iterator[httpx.Client]:
    with raw_client(server.http_base_url) as h:
        yield h
