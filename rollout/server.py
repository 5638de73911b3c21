# The listening server: one port, one task per connection, everything owned by one nursery.
# `serve` is the public entry point (`port = await nursery.start(rollout.serve, ...)`).
from __future__ import annotations

import gc
import logging

import trio

from rollout import tokens
from rollout.append import AppendHost
from rollout.config import ServerConfig
from rollout.engine import Engine
from rollout.http import HttpConnection

log = logging.getLogger("rollout")


async def serve(
    engine: Engine | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: ServerConfig | None = None,
    rollouts: AppendHost | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the Responses API on `host:port` until cancelled; reports the bound port.

    Port 0 picks a free port; `await nursery.start(serve, ...)` returns the port that was bound.
    `rollouts` holds the live append rollouts (made here unless given, e.g. to inspect them).
    """
    engine = engine or Engine()
    config = config or ServerConfig()
    tokens.encode("warm up")  # load the encoding now, not inside the first request
    gc.freeze()  # what is loaded by now lives for good: keep it out of every collection
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    rollouts = rollouts or AppendHost(engine, config)

    async def handle(stream: trio.SocketStream) -> None:
        try:
            await HttpConnection(stream, rollouts).run()
        except Exception:
            log.exception("connection handler failed")

    async with trio.open_nursery() as nursery:
        await nursery.start(rollouts.run)
        log.info("serving on http://%s:%d/v1", host, bound)
        task_status.started(bound)
        await trio.serve_listeners(handle, listeners)
