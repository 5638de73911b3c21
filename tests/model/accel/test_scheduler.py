# Cases of the shared engine's scheduler (rollout.model.accel.scheduler) that its state machine
# (test_scheduler_machine.py) found wrong once, on the small engine: a prefill ending on a full
# memory must leave room for the token it samples.
from __future__ import annotations

import attrs

from rollout.model.accel.scheduler import KvPolicy, Scheduler, Seq
from support.accel import SMALL, chain, drain


def test_a_prefill_ending_on_a_full_memory_has_room_for_its_first_token() -> None:
    # B (312 tokens: room for 8 more in its last block) and A (220 blocks exactly) fill the 240
    # blocks; both prefill in one step, and the step that ends a prefill samples a token: A's
    # needs block 221. The plan must count it (it preempted A) rather than run out of blocks.
    sched = Scheduler(attrs.evolve(SMALL, max_batched_tokens=8192), KvPolicy("evict"))
    b = Seq("b", 312, chain([1, 2]), 8, 0.0)
    a = Seq("a", 16 * 220, chain(list(range(10, 37))), 4, 0.0)
    sched.submit(b, 0.0)
    sched.submit(a, 0.0)
    plan = sched.plan(0.0)
    assert plan is not None and sched.counters.peak_used == 240
    sched.advance(plan, plan.steps, plan.seconds)  # (OutOfBlocks before the fix)
    assert sched.counters.preemptions == 1 and [s for s, _ in plan.prefill] == [b]
    drain(sched, plan.seconds)
    assert a.state == b.state == "done" and (a.decoded, b.decoded) == (4, 8)

