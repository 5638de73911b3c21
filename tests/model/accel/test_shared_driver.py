# The shared engine's trio driver (rollout.model.accel.shared) on trio's MockClock: the engine
# task's plans take exactly the steps' time; a Seat releases a token only once the engine has
# decoded it, also across a preemption (it released a preempted sequence's tokens at once
# before); an arrival joins the batch at the next step, not at the end of a plan; a step that
# stops early leaves the engine; what a rollout's end leaves depends on the policy and the hint.
from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from rollout.model.accel.kv import CHUNK
from rollout.model.accel.requests import KvPolicy
from rollout.model.accel.shared import Seat, SharedEngine
from support.accel import SMALL, chain


@asynccontextmanager
async def running(policy: KvPolicy | None = None) -> AsyncIterator[SharedEngine]:
    engine = SharedEngine(SMALL, policy or KvPolicy("evict"))
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        yield engine
        nursery.cancel_scope.cancel()


def prompt_of(chunks: int, label: int = 0) -> tuple[int, list[int]]:
    return chunks * CHUNK, chain([label * 1000 + i for i in range(chunks)])


async def decode_all(seat: Seat, check: Callable[[int], None] | None = None) -> None:
    """Ask for the step's tokens one by one, as the simulated model does."""
    for i in range(seat.seq.output):
        await seat.token(1)
        if check is not None:
            check(i + 1)
    seat.close()


async def test_a_step_alone_takes_the_time_of_the_engine_steps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as engine:
        start = trio.current_time()
        prompt, hashes = prompt_of(2)
        seat = await engine.seat("r", prompt, hashes, 40)
        assert seat.prompt_tokens == prompt and seat.cached_tokens == 0
        assert seat.seq.first_token_at == pytest.approx(trio.current_time())
        await decode_all(seat)
        c = engine.sched.counters
        assert seat.seq.state == "done" and seat.seq.decoded == 40
        assert trio.current_time() - start == pytest.approx(c.busy_s)
        assert c.prefill_tokens == prompt and c.decode_tokens == 40


async def test_seat_refuses_an_engine_that_is_not_running() -> None:
    engine = SharedEngine(SMALL)
    with pytest.raises(RuntimeError, match="not running"):
        await engine.seat("r", 10, [], 1)


async def test_a_preempted_step_releases_no_token_before_it_is_decoded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Two steps of 1,792 prompt tokens decoding 700 each outgrow the small engine's 3,840
    # tokens of KV: the later one is preempted and recomputed; every token its model is given
    # must have been decoded by then.
    async with running() as engine:
        seats: list[Seat] = []
        released: list[tuple[int, int]] = []  # (tokens released, decoded then)

        async def step(label: int) -> None:
            prompt, hashes = prompt_of(14, label)
            seat = await engine.seat(label, prompt, hashes, 700)
            seats.append(seat)
            await decode_all(seat, lambda n: released.append((n, seat.seq.decoded)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(step, 1)
            nursery.start_soon(step, 2)
        assert engine.sched.counters.preemptions >= 1
        assert all(decoded >= n for n, decoded in released)
        assert all(s.seq.state == "done" and s.seq.decoded == 700 for s in seats)
        engine.sched.check()


async def test_an_arrival_joins_at_the_next_step_not_at_the_plans_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as engine:
        prompt, hashes = prompt_of(1)
        first = await engine.seat("a", prompt, hashes, 400)
        step_s = SMALL.step_seconds(1, prompt, prompt)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(decode_all, first)
            await trio.sleep(step_s * 2.5)  # mid-plan (a plan runs up to 8 steps)
            arrived = trio.current_time()
            other = await engine.seat("b", prompt, prompt_of(1, 7)[1], 4)
            nursery.start_soon(decode_all, other)
        assert other.seq.admitted_at is not None
        # (admitted when the step in flight ends: within one step of the arrival)
        assert other.seq.admitted_at - arrived <= step_s * 1.01
        assert first.seq.decoded == 400


async def test_a_step_that_stops_early_leaves_the_engine(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as engine:
        prompt, hashes = prompt_of(3)
        seat = await engine.seat("r", prompt, hashes, 500)
        await seat.token(10)
        seat.close()  # (the model stopped: a cancelled stream, a stop sequence)
        await trio.sleep(1.0)
        assert seat.seq.state == "aborted" and not engine.sched.running
        assert engine.counts()["kv_used"] == 0  # (what it left is evictable cache)
        assert engine.sched.mem.hit(hashes) == 3
        engine.sched.check()


@pytest.mark.parametrize(
    ("policy", "hint", "kept"),
    [("pin", True, "pinned"), ("pin", False, "evictable"), ("evict", True, "evictable")],
)
async def test_a_rollouts_end_keeps_its_kv_only_with_a_hint_under_a_keeping_policy(
    autojump_clock: trio.testing.MockClock, policy: str, hint: bool, kept: str
) -> None:
    async with running(KvPolicy(policy)) as engine:  # type: ignore[arg-type]
        prompt, hashes = prompt_of(2)
        seat = await engine.seat("r", prompt, hashes, 30)
        await decode_all(seat)
        held = seat.seq.holding
        assert held is not None and held.state == ("evictable" if policy == "evict" else "pinned")
        engine.close("r", "resp_1", hint)
        await trio.sleep(0.1)
        assert held.state == kept
        # A turn chained to that response claims what it left: its prompt (and output) cached.
        longer, more = prompt_of(3)
        turn = await engine.seat("r2", longer, more, 5, previous="resp_1")
        assert turn.cached_tokens >= prompt and turn.seq.program == held.program
        await decode_all(turn)
        engine.sched.check()


async def test_a_paused_rollout_resumes_on_what_it_left(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The append shape: the same rollout samples again after a tool call; under pin its KV
    # waited pinned and its next step prefills only what is new.
    async with running(KvPolicy("pin")) as engine:
        prompt, hashes = prompt_of(4)
        seat = await engine.seat("r", prompt, hashes, 20)
        await decode_all(seat)
        await trio.sleep(30.0)  # the tool runs
        assert engine.counts()["kv_held"] > 0
        longer, more = prompt_of(5)
        again = await engine.seat("r", longer, more, 20)
        assert again.cached_tokens >= prompt
        assert engine.sched.counters.prefill_tokens <= prompt + (longer - prompt) + 20
        await decode_all(again)
