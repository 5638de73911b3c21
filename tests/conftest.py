# Fixtures shared by the whole suite (the shared code they use is in tests/support). `serve`
# starts real servers in threads (rollout.ServerThread) with the official SDK's sync client;
# `server` and `client` are one such pair per test, playing `model` (a module may override it).
# `store` runs a test on each response store.
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from rollout.model.policy import Policy
from rollout.store.memory import MemoryStore, Store
from rollout.store.sqlite import SqliteStore
from rollout.testing.thread import ServerThread
from support.sdk import sdk_client
from support.servers import Serve, threaded


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`server, client = serve(policy, max_body_bytes=...)`: a started server (the default
    model unless a policy is given; keywords are ServerConfig limits) and an SDK client for it,
    both closed after the test."""
    with contextlib.ExitStack() as stack:

        def start(policy: Policy | None = None, **limits: Any) -> tuple[ServerThread, OpenAI]:
            server = stack.enter_context(threaded(policy, **limits))
            return server, stack.enter_context(sdk_client(server))

        yield start


@pytest.fixture
def model() -> Policy | None:
    """The model `server` plays: the default one (override the fixture to script another)."""
    return None


@pytest.fixture
def served(serve: Serve, model: Policy | None) -> tuple[ServerThread, OpenAI]:
    return serve(model)


@pytest.fixture
def server(served: tuple[ServerThread, OpenAI]) -> ServerThread:
    """A fresh server for this test (a ServerThread: real sockets, an ephemeral port)."""
    return served[0]


@pytest.fixture
def client(served: tuple[ServerThread, OpenAI]) -> OpenAI:
    """The official SDK's sync client for `server`."""
    return served[1]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """Each response store in turn: the in-memory one, and SQLite on a fresh file."""
    if request.param == "memory":
        yield MemoryStore()
        return
    sqlite = SqliteStore(tmp_path / "store.sqlite")
    try:
        yield sqlite
    finally:
        await sqlite.aclose()
