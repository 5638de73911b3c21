# The listening server: one port, one task per connection, everything owned by one nursery.
# `serve` is the public entry point (`port = await nursery.start(rollout.serve, ...)`).
from __future__ import annotations

import errno
import gc
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path

import trio

from protocol.lifetime import WAITING
from rollout.conversation import tokens
from rollout.engine.engine import Engine
from rollout.server.closing import LINGER_S
from rollout.server.httpconn import HttpConnection
from rollout.server.limits import Limits
from rollout.server.outbox import Flusher
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig
from rollout.service.service import Service

log = logging.getLogger("rollout")


#: The collector's thresholds in a server process. A create allocates a few thousand short-lived
#: objects that reference counting frees; at Python's default (a young collection each 700 net
#: allocations) the collector scans them several times per request, about a tenth of the time
#: to a warm first token (`rollout bench first-token`). With many live rollouts a young
#: collection walks their newest state, scattered over the heap: at 10,000, 5-7% of the server's
#: CPU under `rollout load` (and a 40-55 ms pause at each middle collection); at 50,000, 3%.
GC_THRESHOLDS = (50_000, 10, 10)


def tune_gc() -> None:
    """Collect less often (GC_THRESHOLDS): for a process that is a server (`rollout serve`, a
    bench's child server), not for a program that embeds one."""
    gc.set_threshold(*GC_THRESHOLDS)


async def serve(
    engine: Engine | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: ServerConfig | None = None,
    stop: trio.Event | None = None,
    record: str | Path | None = None,
    capture: list[Captured] | None = None,
    service: Service | None = None,
    sock: socket.socket | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the Responses API on `host:port`; reports the bound port.

    Port 0 picks a free port; `await nursery.start(serve, ...)` returns the port that was bound.
    Cancelling stops at once; setting `stop` shuts down gracefully (see `drain`) and returns.
    `record` is a directory to record every connection's traffic in (docs/test-rigs.md);
    `capture` a list that receives every request and frame, parsed. `service` is the service
    layer to run (made here unless given; rigs pass one to look at its live rollouts). `sock`
    is a listening socket to accept on instead of binding `host:port` (a worker of
    `rollout serve --workers N` gets its parent's).
    """
    service = _service(engine, config, service, record, capture)
    engine, config = service.engine, service.config
    tokens.encode("warm up")  # load the encoding now, not inside the first request
    gc.freeze()  # what is loaded by now lives for good: keep it out of every collection
    if sock is not None:
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(sock))]
    else:
        listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    limits = Limits(config.max_open_connections, config.max_body_bytes_in_flight, engine.stats)

    # The store is connected for the server's lifetime (a store with a connection of its own,
    # Redis, opens it here); it belongs to whoever made the engine, who closes it.
    async with engine.store.connect(), trio.open_nursery() as nursery:
        service.taps.nursery = nursery  # recorders write from here: it outlives every connection
        await nursery.start(service.serve)
        flusher = Flusher()  # SSE bodies' writes: it outlives every connection
        await nursery.start(flusher.run)
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                for listener in listeners:
                    accepting.start_soon(_accept, listener, connections, service, limits, flusher)
                log.info("serving on http://%s:%d/v1", host, bound)
                task_status.started(bound)
                await (stop.wait() if stop is not None else trio.sleep_forever())
                accepting.cancel_scope.cancel()
            log.info("shutting down: %d responses in progress", len(engine.running))
            await drain(service, config.shutdown_grace_s)
            connections.cancel_scope.cancel()
        await service.flush()  # many workers: what the cluster layer still has to write
        nursery.cancel_scope.cancel()
    # Nothing of the store to flush: every stored response was committed before its terminal
    # event was sent.
    log.info("stopped")


def _service(
    engine: Engine | None,
    config: ServerConfig | None,
    service: Service | None,
    record: str | Path | None,
    capture: list[Captured] | None,
) -> Service:
    """The service layer `serve` runs (made of `engine` and `config` unless given), its
    traffic recorded in `record` and captured in `capture` when they are given."""
    if service is None:
        service = Service(engine or Engine(), config or ServerConfig())
    if record is not None:
        service.taps.record_dir = Path(record)
    if capture is not None:
        service.taps.captured = capture
    return service


async def _accept(
    listener: trio.SocketListener,
    connections: trio.Nursery,
    service: Service,
    limits: Limits,
    flusher: Flusher,
) -> None:
    """Accept connections on `listener` until cancelled, each handled in `connections` (or
    refused, past the limits). One connection per wake-up, as trio's `accept` takes one per
    pass through the scheduler, but on a plain socket (a duplicate of the listener's): the wait
    comes first, then one accept, with none of the layers around trio's."""
    async with listener:
        sock = socket.socket(fileno=os.dup(listener.socket.fileno()))
        try:
            while True:
                await trio.lowlevel.wait_readable(sock)
                try:
                    accepted, _ = sock.accept()
                except BlockingIOError:  # taken already (another worker process)
                    continue
                except OSError as exc:
                    if exc.errno in _IGNORABLE:  # the connection failed before it was taken
                        continue
                    log.warning("accept failed: %s", exc)  # e.g. out of file descriptors:
                    await trio.sleep(0.1)  # wait, do not die
                    continue
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(accepted))
                if limits.admit():
                    connections.start_soon(_handle, stream, service, limits, flusher)
                else:
                    connections.start_soon(limits.refuse, stream)
        finally:
            trio.lowlevel.notify_closing(sock)
            sock.close()


# What accept(2) may fail with for one connection, the listener being fine (as trio has them).
_IGNORABLE = {
    getattr(errno, name)
    for name in (
        "EPERM",
        "ECONNABORTED",
        "EPROTO",
        "ENETDOWN",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
        "ENOSR",
        "ESOCKTNOSUPPORT",
        "EPROTONOSUPPORT",
        "ETIMEDOUT",
        "ECONNRESET",
    )
    if hasattr(errno, name)
}


async def _handle(
    stream: trio.SocketStream, service: Service, limits: Limits, flusher: Flusher
) -> None:
    try:
        await HttpConnection(stream, service, flusher, limits=limits).run()
    except Exception:
        log.exception("connection handler failed")
    finally:
        limits.leave()


async def drain(service: Service, grace: float) -> None:
    """Graceful shutdown after the listeners stopped: let running responses finish for up to
    `grace` seconds (append rollouts that wait for tool outputs do not hold it up), end the rest
    (and every suspended append rollout) with `response.incomplete` (reason `shutdown`), then
    close WebSockets with 1001. Waits on events (a loop or request ending, a rollout pausing),
    never by polling."""
    engine = service.engine
    with trio.move_on_after(grace):
        await _until(lambda: not _busy(service), lambda: _running_events(service))
    for cancel in list(engine.running):
        cancel.cancel("shutdown")
    for live in list(service.live.rollouts.values()):
        live.cancel.cancel("shutdown")
    with trio.move_on_after(2):
        await _until(
            lambda: not (engine.running or service.live.rollouts or engine.stats.http_in_flight),
            lambda: [engine.changed, service.live.changed],
        )
    with trio.move_on_after(LINGER_S + 1):  # each close waits for its client's close frame
        async with trio.open_nursery() as closing:
            for session in list(service.sessions):
                closing.start_soon(session.shutdown)


def _busy(service: Service) -> bool:
    """Work that the grace period waits for: HTTP requests, and loops other than append
    rollouts waiting for their client's tool outputs."""
    waiting = {live.cancel for live in service.live.rollouts.values() if live.state in WAITING}
    return bool(service.engine.stats.http_in_flight or service.engine.running - waiting)


def _running_events(service: Service) -> list[trio.Event]:
    """What ends being busy: a loop or request ending, or a running rollout pausing."""
    lives = [live for live in service.live.rollouts.values() if live.state not in WAITING]
    return [service.engine.changed, *(live.boundary for live in lives)]


async def _until(done: Callable[[], bool], events: Callable[[], list[trio.Event]]) -> None:
    """Wait until `done()`, checking it again each time one of `events()` is set."""
    while not done():
        async with trio.open_nursery() as nursery:
            for event in events():
                nursery.start_soon(_set_then_cancel, event, nursery.cancel_scope)


async def _set_then_cancel(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
