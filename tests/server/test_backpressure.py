"""A client that stops reading: the server's memory for it stays bounded (its sender waits) and
other connections are served meanwhile, while the stalled connection's tasks stay asleep."""

from __future__ import annotations

import socket

import orjson
import trio
import trio.testing
from trio_websocket import open_websocket_url

from rollout.engine.step import RUN_MAX
from rollout.model.policy import TextStep
from rollout.server.wsconn import HIGH_WATER
from rollout.testing.plugin import RolloutServer
from support.rawws import RawWs
from support.waits import TIMEOUT, wait_for

LONG = " ".join(["word"] * 200_000)  # far more than socket buffers and the outbox hold
# Scheduling steps the server's older tasks (the listener's, the stalled connection's) may take
# while another connection is served: one accept, and some slack. A stalled sender that polled
# instead of waiting for the writer would take a step per poll; one that never waited at all
# would keep the loop from ever settling.
STEP_BUDGET = 5


class StepCounter(trio.abc.Instrument):
    """Counts the scheduling steps of the `watched` tasks."""

    def __init__(self, watched: set[trio.lowlevel.Task]) -> None:
        self.watched = watched
        self.steps = 0
        self.names: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.watched:
            self.steps += 1
            self.names.append(task.name)


def every_task() -> set[trio.lowlevel.Task]:
    found, todo = set(), [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        if task is not None:
            found.add(task)
            todo += [child for n in task.child_nurseries for child in n.child_tasks]
    return found


async def test_a_client_that_stops_reading_stalls_only_itself(
    rollout_server: RolloutServer,
) -> None:
    rollout_server.policy(
        lambda ctx: TextStep(text=LONG if "flood" in ctx.last_user_text else "ok")
    )
    engine, service = rollout_server.engine, rollout_server.service
    # A client that sends one create after the handshake and never reads another byte.
    flood = await RawWs.connect(rollout_server.port)
    flood.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await flood.send_json({"type": "response.create", "model": "m", "input": "flood"})
    # The flood fills every buffer it can, then its sender waits: nothing is left to run.
    await wait_for(lambda: engine.stats.events_sent > 0)
    with trio.fail_after(TIMEOUT):  # a sender that polled instead of waiting never settles
        # Settled for a while: on a loaded machine the kernel may still move a little of the
        # send buffer into the (tiny) receive buffer, waking the sender once or twice more.
        await trio.testing.wait_all_tasks_blocked(cushion=0.2)
    assert len(engine.running) == 1 and engine.stats.responses == 0  # stalled mid-response

    bound = HIGH_WATER + RUN_MAX * 200  # one run of deltas over (each frame here under 200 B)

    def peak() -> int:
        """The largest outbox of the open WebSocket connections (each session's transport)."""
        return max((s.queued for s in service.sessions), default=0)

    # It filled, and no further. (A producer also waits when it flushes while a write is in
    # progress, as behind an upstream a first token does, so it may stop short of the mark.)
    assert HIGH_WATER // 2 <= peak() <= bound, peak()
    # Another connection is served meanwhile; the stalled one's tasks do not run while it is.
    # (The server-wide SSE flusher is not watched: behind an upstream it streams the engine's
    # answers to the other connection, which is its job.)
    shared = {t for t in every_task() if t.name.endswith("Flusher.run")}
    counter = StepCounter(every_task() - shared - {trio.lowlevel.current_task()})
    trio.lowlevel.add_instrument(counter)
    try:
        with trio.fail_after(TIMEOUT):  # "did not hang": only a server that never answers fails
            async with open_websocket_url(rollout_server.ws_url) as ws:
                for _ in range(5):
                    create = {"type": "response.create", "model": "m", "input": "hi"}
                    await ws.send_message(orjson.dumps(create).decode())
                    while orjson.loads(await ws.get_message())["type"] != "response.completed":
                        pass
    finally:
        trio.lowlevel.remove_instrument(counter)
    assert counter.steps <= STEP_BUDGET, counter.names
    # The flood is still held by backpressure (the others did not wait for it to end), and its
    # outbox stayed bounded.
    assert len(engine.running) == 1
    assert engine.stats.responses == 5
    assert HIGH_WATER // 2 <= peak() <= bound, peak()
    await flood.abort()
