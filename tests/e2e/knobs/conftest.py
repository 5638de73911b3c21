# Fixtures for the request-knob tests: `transport` (each test runs over HTTP + SSE and over
# WebSocket mode), and `serve`, servers with a given policy or model table and the official
# SDK's sync client as a session over that transport (support.knobs).
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from rollout.engine.engine import Engine
from support.knobs import Serve, Session
from support.sdk import sdk_client
from support.servers import threaded


@pytest.fixture(params=["http", "ws"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def serve(transport: str) -> Iterator[Serve]:
    """`session = serve(policy=..., models=...)`: a server and a client over `transport`."""
    with contextlib.ExitStack() as stack:

        def make(**engine: Any) -> Session:
            server = stack.enter_context(threaded(Engine(**engine)))
            client = stack.enter_context(sdk_client(server))
            return Session(server=server, client=client, transport=transport)

        yield make
