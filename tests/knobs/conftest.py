# Fixtures for the request-knob tests: servers with a given policy or model table, the official
# SDK's sync client, and `transport` (each test runs over HTTP + SSE and over WebSocket mode).
# Helpers live in `_knobs` beside this file.
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _knobs import Session, start  # noqa: E402 - needs the path above

Serve = Callable[..., Session]


@pytest.fixture(params=["http", "ws"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def serve(transport: str) -> Iterator[Serve]:
    """`session = serve(policy=..., models=...)`: a server and a client over `transport`."""
    with contextlib.ExitStack() as stack:

        def make(**engine: Any) -> Session:
            server = start(**engine)
            stack.callback(server.stop)
            client = stack.enter_context(
                OpenAI(api_key="t", base_url=server.http_base_url, max_retries=0, timeout=10)
            )
            return Session(server=server, client=client, transport=transport)

        yield make
