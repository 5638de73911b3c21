# What the shared engine's tests (tests/model/accel) share: a small engine (the 8B profile with
# memory for 240 KV blocks, 4 sequences and 256 tokens a step, host memory for 8000 tokens), so
# that memory pressure is common; chain hashes of chunk contents; draining a scheduler.
from __future__ import annotations

import attrs

from rollout.model.accel.profile import ENGINE_PROFILES, GIB, AcceleratorProfile
from rollout.model.accel.scheduler import Scheduler

BLOCKS = 240  # KV blocks of the small engine: 3840 tokens, 30 chunks
HOST_TOKENS = 8000
BASE = ENGINE_PROFILES["h100-llama3.1-8b"]
_BLOCK_BYTES = BASE.kv_bytes_per_token * BASE.block_size
SMALL: AcceleratorProfile = attrs.evolve(
    BASE,
    name="small",
    memory_utilization=1.0,
    reserved_gib=0.0,
    memory_gib=(BASE.weights_bytes + (BLOCKS + 0.5) * _BLOCK_BYTES) / GIB,
    max_num_seqs=4,
    max_batched_tokens=256,
    host_memory_gib=HOST_TOKENS * BASE.kv_bytes_per_token / GIB,
)
assert SMALL.kv_blocks == BLOCKS and SMALL.host_tokens == HOST_TOKENS
DRAIN_PLANS = 20_000  # the bound on plans that finish what is on an engine


def chain(labels: list[int], prev: int = 0) -> list[int]:
    """Chain hashes of chunks with these contents (as the Context's block hashes are)."""
    out = []
    for label in labels:
        prev = hash((prev, label))
        out.append(prev)
    return out


def drain(sched: Scheduler, now: float = 0.0) -> float:
    """Run whole plans until nothing runs (checking the scheduler after each); the time then."""
    for _ in range(DRAIN_PLANS):
        plan = sched.plan(now)
        if plan is None:
            return now
        now += plan.seconds
        sched.advance(plan, plan.steps, now)
        sched.check()
    raise AssertionError("the engine did not drain")
