# Fixtures of the upstream tests: one aimock for the session (skipped with the reason when Node
# or aimock is missing, except under CI, where .ci/run installs it and a skip would hide it),
# and a rollout server in front of it.
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _aimock import Aimock, missing  # noqa: E402 - needs the path above

from rollout.engine.engine import Engine  # noqa: E402
from rollout.testing.thread import ServerThread  # noqa: E402
from rollout.upstream import UpstreamConfig, UpstreamModel  # noqa: E402


@pytest.fixture(scope="session")
def aimock() -> Iterator[Aimock]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the upstream tests need aimock under CI: {reason}")
        pytest.skip(reason)
    server = Aimock()
    try:
        yield server
    finally:
        server.stop()


Serve = Callable[..., ServerThread]


@pytest.fixture
def upstream(aimock: Aimock) -> Iterator[Serve]:
    """`upstream(api="chat", path="/v1", url=None, record=None, **config)`: a started rollout
    server whose model is aimock (or `url`), stopped after the test."""
    servers: list[ServerThread] = []

    def start(
        api: str = "chat",
        path: str = "/v1",
        url: str | None = None,
        record: Any = None,
        **config: Any,
    ) -> ServerThread:
        model = UpstreamModel(UpstreamConfig(url=(url or aimock.url) + path, api=api, **config))
        server = ServerThread(Engine(model=model), record=record).start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
