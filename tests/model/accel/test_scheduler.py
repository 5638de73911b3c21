# Cases of the shared engine's scheduler (rollout.model.accel.scheduler) that its state machine
# (test_scheduler_machine.py) found wrong once, on the small engine: a prefill ending on a full
# memory must leave room for the token it samples; an aborted request's claim must not stay
# pinned; a request preempted twice must still recompute what it had decoded.
from __future__ import annotations

import attrs

from rollout.model.accel.requests import KvPolicy, Seq
from rollout.model.accel.scheduler import Scheduler
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


def test_a_request_preempted_twice_still_recomputes_what_it_decoded() -> None:
    # 234 of the 240 blocks are pinned (ttl), two requests decode in the other 6 until both are
    # preempted: x (9 + 87 tokens decoded) needs 6 blocks, and 1 more for its next token. A wake
    # admits x again and, in the same plan, preempts it before it prefilled anything; when the
    # pin expires x is admitted once more and must recompute all 96 tokens (it recomputed its
    # 9-token prompt only, in a 1-block tail, before the fix).
    sched = Scheduler(SMALL, KvPolicy("ttl", ttl_s=1000.0))
    sched.submit(Seq("fill", 16 * 234, [], 0, 0.0), 0.0)
    now = drain(sched)
    x, a = Seq("x", 9, [], 300, now), Seq("a", 1, [], 300, now)
    sched.submit(x, now)
    sched.submit(a, now)
    while (plan := sched.plan(now)) is not None:
        now += plan.seconds
        sched.advance(plan, plan.steps, now)
    assert x.state == a.state == "waiting" and (x.tokens, a.tokens) == (96, 40)
    assert sched.counters.preemptions == 2
    assert sched.plan(now) is None  # (a wake: x admitted, and preempted again at once)
    assert sched.counters.preemptions == 3 and x.state == "waiting"
    now = sched.next_expiry()
    sched.expire(now)
    plan = sched.plan(now)
    assert plan is not None and x.state == "running"
    assert (x.cached, x.prefill_left) == (0, 96)
    assert x.tail == sched.mem.tail_blocks(96, 0) == 6
    drain(sched, now)
    assert (x.state, x.decoded, a.state, a.decoded) == ("done", 300, "done", 300)
    assert sched.counters.decode_tokens == 600
