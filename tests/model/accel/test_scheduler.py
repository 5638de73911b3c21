# Cases of the shared engine's scheduler (rollout.model.accel.scheduler) that its state machine
# (test_scheduler_machine.py) found wrong once, on the small engine: a prefill ending on a full
# memory must leave room for the token it samples; an aborted request's claim must not stay
# pinned.
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


def test_an_aborted_request_leaves_its_claim_evictable() -> None:
    # A rollout's next request claims the pin its last step left, then goes away while it
    # waits: nobody else will claim that pin, so it must not stay pinned (it did, until a forced
    # unpin under `pin`, or its expiry under `ttl`).
    for policy in (KvPolicy("pin"), KvPolicy("ttl", ttl_s=60.0)):
        sched = Scheduler(SMALL, policy)
        first = Seq("r", 300, chain([1, 2]), 10, 0.0)
        sched.submit(first, 0.0)
        now = drain(sched)
        held = first.holding
        assert held is not None and held.state == "pinned" and sched.pinned_blocks == 20
        resumed = Seq("r", 400, chain([1, 2, 3]), 10, now, claim=held, program=held.program)
        sched.submit(resumed, now)
        sched.abort(resumed, now)
        assert held.state == "evictable" and not sched.pinned and sched.pinned_blocks == 0
        assert sched.mem.hit(chain([1, 2])) == 2  # (its chunks stay cached)
        assert sched.mem.available == sched.mem.capacity
        sched.check()
