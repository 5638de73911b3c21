"""A live append rollout (rollout.service.live) driven through the live rollouts' own paths
(LiveRollouts.start, LiveRollouts.accept): what reaches its holder's sink, and when."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from protocol import codec
from protocol.events import Event
from protocol.items import FunctionCallOutput
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.engine.loop import CallbackSink
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.model.steps import Step, TextStep
from rollout.service.config import ServerConfig
from rollout.service.live import Live, LiveRollouts
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
            pending.extend(c.call_id for c in event.pending_calls)

    steps: list[Step] = [call("exec", {"cmd": "ls"}), call("exec", {"cmd": "pwd"}), text("done")]
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


async def _rollout(
    steps: list[Any], config: ServerConfig, answer: Callable[[Live, LiveRollouts], Awaitable[None]]
) -> tuple[list[Event], Live]:
    """An append rollout of `steps` on its own live rollouts; `answer` runs beside it."""
    seen: list[Event] = []

    async def emit(event: Event) -> None:
        seen.append(event)

    engine = Engine(policy=ScriptedPolicy(steps))
    lives = LiveRollouts(engine, config)
    body = {"model": "m", "input": "hi", "store": False, "tools": [EXEC_TOOL], "shape": "append"}
    async with trio.open_nursery() as nursery:
        await nursery.start(lives.run)
        prepared = await engine.prepare(codec.decode_create(body), engine.stats.new_work(), emit)
        engine.plan_of(prepared, held=True)
        live = lives.start(
            prepared, sink=CallbackSink(emit), holder=object(), owner=None, lane=None, billing=None
        )
        await answer(live, lives)
        await live.done.wait()
        nursery.cancel_scope.cancel()
    return seen, live


def _outputs(live: Live) -> list[FunctionCallOutput]:
    return [FunctionCallOutput(call_id=c, output="ok") for c in live.pending]


def _end(live: Live) -> tuple[str, str | None]:
    response = live.prepared.rollout.stream.response
    details = response.incomplete_details
    return response.status, details.reason if details is not None else None


async def test_the_append_timeout_ends_a_waiting_rollout(autojump_clock: trio.abc.Clock) -> None:
    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        start = trio.current_time()
        await live.done.wait()
        assert trio.current_time() - start == pytest.approx(5)

    config = ServerConfig(append_timeout_s=5)
    _, live = await _rollout([call("exec", {"cmd": "ls"})], config, answer)
    assert _end(live) == ("incomplete", "append_timeout")


async def test_the_append_timeout_does_not_run_while_the_model_works(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The wait's deadline is lifted when the rollout resumes: a step longer than the append
    timeout is not cut."""

    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        lives.accept(live, _outputs(live), Work())

    steps = [call("exec", {"cmd": "ls"}), TextStep(text="done", delay_s=30)]
    _, live = await _rollout(steps, ServerConfig(append_timeout_s=5), answer)
    assert _end(live) == ("completed", None)


async def test_a_cancel_as_the_deadline_passes_ends_it_cancelled(
    autojump_clock: MockClock,
) -> None:
    """A cancel given after the wait's deadline passed, before the loop saw it, is the reason
    (the first reason given wins; the deadline's only if there was none)."""

    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        autojump_clock.jump(10)
        live.cancel.cancel("cancelled")

    config = ServerConfig(append_timeout_s=5)
    seen, live = await _rollout([call("exec", {"cmd": "ls"})], config, answer)
    assert seen[-1].type == "response.incomplete"
    assert _end(live) == ("cancelled", None)


async def test_a_parked_rollout_ends_after_the_grace_period(autojump_clock: trio.abc.Clock) -> None:
    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        start = trio.current_time()
        live.detach()
        await live.done.wait()
        assert trio.current_time() - start == pytest.approx(2)

    config = ServerConfig(append_timeout_s=5, append_grace_s=2)
    _, live = await _rollout([call("exec", {"cmd": "ls"})], config, answer)
    assert _end(live) == ("cancelled", None)


async def test_a_rollout_taken_over_gets_its_append_timeout_back(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Parked, then attached again within the grace period: it ends at its append timeout
    (reckoned from its pause), not at the grace period's end."""

    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        start = trio.current_time()
        live.detach()
        await trio.sleep(1)
        live.attach(CallbackSink(lambda event: trio.lowlevel.checkpoint()), object())
        await live.done.wait()
        assert trio.current_time() - start == pytest.approx(5)

    config = ServerConfig(append_timeout_s=5, append_grace_s=2)
    seen, live = await _rollout([call("exec", {"cmd": "ls"})], config, answer)
    assert _end(live) == ("incomplete", "append_timeout")
    assert seen[-1].type == "response.done"  # (the terminal event went to the new holder)


async def test_a_late_pause_parked_longer_than_its_timeout_ends_at_the_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Parked with less of its append timeout left than the grace period: the timeout comes
    first, and is the reason."""
    ended: list[Event] = []

    async def answer(live: Live, lives: LiveRollouts) -> None:
        await live.boundary.wait()
        await trio.sleep(4)
        start = trio.current_time()
        live.detach()
        live.attach(CallbackSink(lambda event: _append(ended, event)), object())
        live.detach()
        await live.done.wait()
        assert trio.current_time() - start == pytest.approx(1)

    config = ServerConfig(append_timeout_s=5, append_grace_s=2)
    _, live = await _rollout([call("exec", {"cmd": "ls"})], config, answer)
    assert _end(live) == ("incomplete", "append_timeout")
    assert not ended  # (no holder at its end)


async def _append(events: list[Event], event: Event) -> None:
    events.append(event)
