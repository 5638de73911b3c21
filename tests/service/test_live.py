"""A live append rollout (rollout.service.live) driven through the live rollouts' own paths
(LiveRollouts.start, LiveRollouts.accept): what reaches its holder's sink, and when."""

from __future__ import annotations

import trio

from protocol import codec
from protocol.events import Event
from protocol.items import FunctionCallOutput
from rollout.engine.engine import Engine
from rollout.engine.loop import CallbackSink
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.service.config import ServerConfig
from rollout.service.live import LiveRollouts
from rollout.testing.sample import EXEC_TOOL


async def test_a_pause_leaves_at_once() -> None:
    """`response.done` is pushed as soon as it is queued (the client's next turn waits for
    it), as a response's terminal event is; nothing of the step is flushed before it."""
    seen: list[str] = []
    pending: list[str] = []

    class Recording(CallbackSink):
        async def flush(self) -> None:
            seen.append("flush")

        def push(self) -> None:
            seen.append("push")

    async def emit(event: Event) -> None:
        seen.append(event.type)
        if event.type == "response.done":
            pending.extend(c.call_id for c in event.pending_calls)  # type: ignore[attr-defined]

    steps = [call("exec", {"cmd": "ls"}), call("exec", {"cmd": "pwd"}), text("done")]
    engine = Engine(policy=ScriptedPolicy(steps))
    lives = LiveRollouts(engine, ServerConfig())
    body = {"model": "m", "input": "hi", "store": False, "tools": [EXEC_TOOL], "shape": "append"}
    async with trio.open_nursery() as nursery:
        await nursery.start(lives.run)
        prepared = await engine.prepare(codec.decode_create(body), engine.stats.new_work(), emit)
        engine.plan_of(prepared, held=True)
        live = lives.start(
            prepared, sink=Recording(emit), holder=object(), owner=None, lane=None, billing=None
        )
        for _ in range(2):
            await live.boundary.wait()
            outputs = [FunctionCallOutput(call_id=c, output="ok") for c in pending]
            pending.clear()
            lives.accept(live, outputs, engine.stats.new_work())
        await live.done.wait()
        nursery.cancel_scope.cancel()
    pauses = [i for i, kind in enumerate(seen) if kind == "response.done"]
    assert len(pauses) == 2
    assert all(seen[i + 1] == "push" for i in pauses)
    assert seen.count("flush") == 1  # the answer's first token only
