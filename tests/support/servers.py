# Servers for the tests that the `rollout_server` fixture cannot give: `serving` runs one in
# the test's own trio loop with server limits (ServerConfig), a graceful `stop` event, a
# recording directory, or several servers in one test (and, ending inside the test, all it
# logs is in `caplog`); `threaded` runs one in a thread (rollout.ServerThread) for sync clients.
from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import trio

import rollout
from rollout.engine.engine import Engine
from rollout.model.policy import Policy
from rollout.model.profiles import InferenceProfile
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.testing.thread import Endpoints, ServerThread
from support.waits import TIMEOUT

Model = Engine | Policy | None
#: A model slow enough for ordering to be observable: 50 tokens/s.
SLOW = InferenceProfile(name="slow", decode_tps=50)
#: The `serve` fixture (tests/conftest.py): `server, sdk_client = serve(policy, **limits)`.
Serve = Callable[..., tuple[ServerThread, Any]]


def engine_of(model: Model, inference: InferenceProfile | None = None) -> Engine:
    """An engine for `model`: the one given, one playing the given policy, or the default."""
    if isinstance(model, Engine):
        engine = model
    else:
        engine = Engine() if model is None else Engine(policy=model)
    if inference is not None:
        engine.inference = inference
    return engine


@attrs.define
class Served(Endpoints):
    """A server running in the test's trio loop: where it is, its service (live rollouts,
    sessions) and engine, as the `rollout_server` fixture's server has them."""

    service: Service
    port: int
    host: str = "127.0.0.1"

    @property
    def engine(self) -> Engine:
        return self.service.engine

    @property
    def config(self) -> ServerConfig:
        return self.service.config


@contextlib.asynccontextmanager
async def serving(
    model: Model = None,
    *,
    inference: InferenceProfile | None = None,
    stop: trio.Event | None = None,
    record: Path | None = None,
    config: ServerConfig | None = None,
    **limits: Any,
) -> AsyncIterator[Served]:
    """`rollout.serve` for the block; `limits` are ServerConfig fields (or the whole `config`
    is given). On exit it is cancelled,
    or, given a `stop` event, stopped gracefully: `stop` is set and the block ends when the
    server has shut down by itself (failing the test if it never does)."""
    config = config or ServerConfig(**limits)
    service = Service(engine_of(model, inference), config)
    serve = functools.partial(rollout.serve, service=service, stop=stop, record=record)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve)
        try:
            yield Served(service, port)
        finally:
            if stop is None:
                nursery.cancel_scope.cancel()
            else:
                stop.set()
                nursery.cancel_scope.deadline = (
                    trio.current_time() + config.shutdown_grace_s + TIMEOUT
                )
    assert not nursery.cancel_scope.cancelled_caught or stop is None, "serve never stopped"


@contextlib.contextmanager
def threaded(
    model: Model = None, *, record: Path | None = None, **limits: Any
) -> Iterator[ServerThread]:
    """A rollout.ServerThread for the block (sync clients); on exit it has stopped, so what it
    recorded is complete."""
    service = Service(engine_of(model), ServerConfig(**limits))
    with ServerThread(service=service, record=record) as server:
        yield server
