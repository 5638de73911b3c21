# The shared engine's scheduler (rollout.model.accel.scheduler) driven by a hypothesis state
# machine, once per KV policy, on an engine small enough that memory pressure is common: new
# requests (some sharing a prefix), resumed ones claiming what their rollout left, plans run for
# part or all of their steps on a virtual clock, ttl pins expired, requests aborted, holdings
# released. After every rule the pool and the scheduler must be consistent (references and
# private blocks match their holders), admissions FCFS, tokens conserved, pins kept as the policy
# says; at the end, with no new arrivals, every request still there must finish.
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable
from typing import ClassVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rollout.model.accel.kv import CHUNK, Holding
from rollout.model.accel.requests import KvPolicy, Seq
from rollout.model.accel.scheduler import Scheduler
from support.accel import DRAIN_PLANS, SMALL, chain

MAX_TOKENS = 3000  # prompt and output of one request (the small engine holds 3840)
PREFIXES = 3  # common prefixes requests may start with


def tokens_st(most: int) -> st.SearchStrategy[int]:
    """Token counts, often on a block or chunk boundary (where a tail is empty or full)."""
    return st.one_of(
        st.integers(1, most),
        st.integers(1, most // 16).map(lambda n: 16 * n),
        st.integers(1, most // CHUNK).map(lambda n: CHUNK * n),
    )


class SchedulerMachine(RuleBasedStateMachine):
    policy: ClassVar[KvPolicy] = KvPolicy("evict")

    def __init__(self) -> None:
        super().__init__()
        self.sched = Scheduler(SMALL, self.policy)
        self.now = 0.0
        self.seqs: list[Seq] = []
        self.labels = itertools.count(1000)
        self.owners = itertools.count()
        self.busy: set[Hashable] = set()  # owners with a request on the engine
        self.latest: dict[Hashable, Holding] = {}  # owner -> the holding it left, unclaimed
        self.claimed: dict[int, Seq] = {}  # holding key -> the request claiming it
        self.extends: dict[Seq, tuple[Holding, bool]] = {}  # claim, and whether it extends it
        self.holdings: list[Holding] = []  # every holding left
        self.gone_ok: set[int] = set()  # pins that a claim or a release may have ended
        self.prev_pinned: set[int] = set()
        self.prev_unpinned = 0
        self.target: dict[Seq, int] = {}  # tokens each admission prefills
        self.prefilled: dict[Seq, int] = {}  # of them, done so far
        self.prefilled_total = 0
        self.cached_total = 0
        self.clean = True  # every rule so far completed (teardown drains only then)

    # -- rules ----------------------------------------------------------------------------------

    def _submit(self, seq: Seq) -> None:
        self.sched.submit(seq, self.now)
        self.seqs.append(seq)
        self.busy.add(seq.owner)
        assert seq.rank == ((seq.program if self.policy.by_program else self.now), seq.order)

    @rule(
        prefix=st.integers(0, PREFIXES),
        shared=st.integers(0, 4),
        prompt=tokens_st(1500),
        output=st.one_of(st.integers(0, 40), st.integers(200, 700)),
    )
    def new_request(self, prefix: int, shared: int, prompt: int, output: int) -> None:
        self.clean = False
        full = prompt // CHUNK
        shared = min(shared, full) if prefix else 0
        labels = [prefix * 100 + i for i in range(shared)]
        labels += [next(self.labels) for _ in range(full - shared)]
        self._submit(Seq(next(self.owners), prompt, chain(labels), output, self.now))

    @rule(prompt=st.integers(2000, MAX_TOKENS - 40), output=st.integers(0, 40))
    def big_request(self, prompt: int, output: int) -> None:
        """A prompt of most of the memory, run for a while: it evicts the cached KV (an
        offloaded holding then has to be copied back) and preempts what grows meanwhile."""
        self.clean = False
        labels = [next(self.labels) for _ in range(prompt // CHUNK)]
        self._submit(Seq(next(self.owners), prompt, chain(labels), output, self.now))
        for _ in range(30):
            if not self._plan_and_advance(lambda n: n):
                break

    @precondition(lambda self: any(o not in self.busy for o in self.latest))
    @rule(
        data=st.data(),
        extra=tokens_st(600),
        output=st.one_of(st.integers(0, 40), st.integers(200, 400)),
        extends=st.booleans(),
    )
    def resumed_request(self, data: st.DataObject, extra: int, output: int, extends: bool) -> None:
        self.clean = False
        owner = data.draw(st.sampled_from([o for o in self.latest if o not in self.busy]))
        h = self.latest[owner]
        prompt = min(h.tokens + extra, MAX_TOKENS - output)
        if prompt < 1:
            return
        kept = h.chunks[: prompt // CHUNK] if extends else []
        hashes = kept + chain(
            [next(self.labels) for _ in range(prompt // CHUNK - len(kept))],
            prev=kept[-1] if kept else 0,
        )
        del self.latest[owner]
        seq = Seq(owner, prompt, hashes, output, self.now, claim=h, program=h.program)
        self.claimed[h.key] = seq
        self.extends[seq] = h, kept == h.chunks
        if reload := self.sched.needs_reload(h):  # (as the driver does: a copy back first)
            assert self.policy.name == "offload" and h.host_tokens == reload
            seq.reloaded = reload
            self.sched.counters.reloaded_tokens += reload
            self.now += SMALL.offload_seconds(reload)
        self._submit(seq)

    @rule(plans=st.integers(1, 30), steps=st.integers(1, 8), wait=st.booleans())
    def run_plans(self, plans: int, steps: int, wait: bool) -> None:
        """Whole plans, then the last cut after `steps` steps (as an arrival cuts one)."""
        self.clean = False
        for _ in range(plans - 1):
            if not self._plan_and_advance(lambda n: n):
                break
        self._plan_and_advance(lambda n: min(n, steps))
        if wait:
            self.now += 0.05

    @rule(dt=st.sampled_from([0.0, 0.1, 0.4, 1.0]))
    def expire(self, dt: float) -> None:
        self.clean = False
        self.now += dt
        self.sched.expire(self.now)
        assert all(h.until > self.now for h in self.sched.pinned.values())

    @precondition(lambda self: any(s.state in ("waiting", "running") for s in self.seqs))
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        self.clean = False
        live = [s for s in self.seqs if s.state in ("waiting", "running")]
        seq = data.draw(st.sampled_from(live))
        claim = seq.claim if seq.state == "waiting" else None
        if claim is not None:
            self.gone_ok.add(claim.key)
        self.sched.abort(seq, self.now)
        assert seq.state == "aborted"
        self._stopped(seq)

    @precondition(lambda self: bool(self.latest))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self.clean = False
        owner = data.draw(st.sampled_from(list(self.latest)))
        h = self.latest.pop(owner)
        self.gone_ok.add(h.key)
        self.sched.release(h, self.now)
        assert h.state != "pinned" and h.key not in self.sched.pinned and h.host_tokens == 0

    # -- driving --------------------------------------------------------------------------------

    def _plan_and_advance(self, steps_of: Callable[[int], int]) -> bool:
        """One plan, `steps_of(plan.steps)` of its steps run; False when nothing runs."""
        sched, c, now = self.sched, self.sched.counters, self.now
        waiting = sorted(sched.waiting, key=lambda s: s.rank)
        assert waiting == sched.waiting
        before = set(sched.running)
        ranks = {s: s.rank for s in [*sched.running, *waiting]}
        admitted, preempted = c.admitted, c.preemptions
        plan = sched.plan(now)
        # FCFS: the admitted are the lowest-ranked of those waiting (none are added meanwhile).
        n = c.admitted - admitted
        for s in waiting[:n]:
            if s.state == "running":
                assert s.admitted_at == now
                self._admitted(s)
            else:  # (admitted, then preempted in the same plan)
                assert s.state == "waiting" and c.preemptions > preempted
                self.cached_total += s.cached
        assert all(s.state == "waiting" and s.admitted_at is None for s in waiting[n:])
        # Preemption takes the lowest-priority running sequence, each time.
        victims = [s for s in [*before, *waiting[:n]] if s.state == "waiting"]
        assert len(victims) == c.preemptions - preempted
        for v in victims:
            assert all(ranks[v] >= ranks[s] for s in sched.running), (v, sched.running)
            assert v.admitted_at is None and v.rank == (
                (v.program, v.order) if self.policy.by_program else (-math.inf, -v.order)
            )
        if plan is None:
            assert not sched.running
            return False
        assert 1 <= plan.steps <= 8 and plan.step_s > 0
        assert len(plan.decode) + sum(k for _, k in plan.prefill) <= SMALL.max_batched_tokens
        k = steps_of(plan.steps)
        left = {s: s.prefill_left for s, _ in plan.prefill}
        self.now = now + k * plan.step_s
        sched.advance(plan, k, self.now)
        for s, before_left in left.items():
            done = before_left - s.prefill_left
            self.prefilled[s] += done
            self.prefilled_total += done
            if s.prefill_left == 0:  # (the admission's prefill is complete)
                assert self.prefilled[s] == self.target[s]
                assert s.first_token_at == self.now
                assert s.decoded >= min(1, s.output)
        for s in [*plan.decode, *left]:
            if s.state == "done":
                self._stopped(s)
        self.pins_end_only_as_the_policy_says()  # (a plan may end pins that a later one made)
        return True

    def _admitted(self, s: Seq) -> None:
        # What was credited and what is prefilled make the prompt (a preempted request's
        # prompt includes what it had decoded: it is recomputed).
        assert s.cached + s.prefill_left == s.prompt + s.decoded
        assert 0 <= s.cached < s.prompt + s.decoded
        assert s.chunks == s.hashes and s.claim is None
        self.target[s], self.prefilled[s] = s.prefill_left, 0
        self.cached_total += s.cached
        h, extends = self.extends.pop(s, (None, False))
        if h is not None and extends and s.reloaded:  # (copied back: all it had is credited)
            reusable = min(h.prompt, s.prompt - 1)
            assert s.cached >= reusable - reusable % SMALL.block_size
        for key, q in self.claimed.items():
            if q is s:  # (its claim is consumed: the holding is gone)
                self.gone_ok.add(key)

    def _stopped(self, s: Seq) -> None:
        self.busy.discard(s.owner)
        for key, q in list(self.claimed.items()):
            if q is s:
                self.gone_ok.add(key)
        if s.holding is not None:
            assert s.owner not in self.latest
            self.latest[s.owner] = s.holding
            self.holdings.append(s.holding)
            assert s.holding.tokens == s.tokens and s.holding.program == s.program

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def consistent(self) -> None:
        self.memory_is_consistent()
        self.tokens_are_conserved()
        self.pins_end_only_as_the_policy_says()
        self.clean = True

    def memory_is_consistent(self) -> None:
        sched, mem = self.sched, self.sched.mem
        sched.check()
        assert mem.used <= mem.capacity and mem.available >= 0
        # (sched.check: every reference and private block is a running request's or a
        # holding's, the LRU holds exactly what nobody references, tails sized for tokens)
        assert all(
            h.tail == mem.tail_blocks(h.tokens, len(h.chunks)) for h in sched.pinned.values()
        )
        assert all(s.state == "waiting" and not s.chunks and not s.tail for s in sched.waiting)
        assert all(s.state == "running" for s in sched.running)
        assert sched.host_used == sum(h.host_tokens for h in sched.host.values())
        if self.policy.name in ("evict", "offload"):
            assert not sched.pinned and sched.pinned_blocks == 0
        if self.policy.name != "offload":
            assert not sched.host

    def tokens_are_conserved(self) -> None:
        c = self.sched.counters
        assert c.decode_tokens == sum(s.decoded for s in self.seqs)
        assert c.prefill_tokens == self.prefilled_total
        assert c.cached_tokens == self.cached_total
        for s in self.seqs:
            assert 0 <= s.decoded <= s.output
            if s.state == "done":
                assert s.decoded == s.output and s.prefill_left == 0

    def pins_end_only_as_the_policy_says(self) -> None:
        sched = self.sched
        now_pinned = set(sched.pinned)
        ended = self.prev_pinned - now_pinned
        unexplained = ended - self.gone_ok  # (not by a claim or a release)
        unpinned = sched.counters.unpinned - self.prev_unpinned
        if self.policy.name == "pin":
            # Each forced unpin ends one pin (perhaps one a claim then takes, in one plan).
            assert len(unexplained) <= unpinned <= len(ended), (ended, unexplained, unpinned)
        else:
            assert unpinned == 0
        by_key = {h.key: h for h in self.holdings}
        for key in unexplained:
            h = by_key[key]
            assert h.state != "pinned"
            if self.policy.name == "ttl":
                assert h.until <= self.now  # a ttl pin ends at its expiry, never before
        if self.policy.name == "ttl":
            for h in self.holdings:
                if h.key not in self.gone_ok and h.until < math.inf and self.now < h.until:
                    assert h.state == "pinned" and h.key in sched.pinned
                    assert sched.mem.still_held(h)
        # A pin is someone's: its rollout's to claim or release, or a waiting request's claim.
        for h in sched.pinned.values():
            q = self.claimed.get(h.key)
            assert self.latest.get(h.owner) is h or (
                q is not None and q.state == "waiting" and q.claim is h
            ), h
        self.prev_pinned = now_pinned
        self.prev_unpinned = sched.counters.unpinned

    def teardown(self) -> None:
        """No more arrivals: everything on the engine finishes within a bound of plans (a ttl
        pin that blocks the queue ends at its expiry)."""
        if not self.clean:
            return  # (a rule or an invariant failed: that is the report)
        for _ in range(DRAIN_PLANS):
            self.sched.expire(self.now)
            if not self._plan_and_advance(lambda n: n):
                if not self.sched.waiting:
                    break
                expiry = self.sched.next_expiry()
                assert self.policy.name == "ttl" and expiry < math.inf, self.sched.waiting
                self.now = max(self.now, expiry)
            self.consistent()
        left = [s for s in self.seqs if s.state not in ("done", "aborted")]
        assert not left, left


SETTINGS = settings(
    max_examples=40, stateful_step_count=40, deadline=None, report_multiple_bugs=False
)


class EvictMachine(SchedulerMachine):
    policy = KvPolicy("evict")


class PinMachine(SchedulerMachine):
    policy = KvPolicy("pin")


class TtlMachine(SchedulerMachine):
    policy = KvPolicy("ttl", ttl_s=0.5)


class OffloadMachine(SchedulerMachine):
    policy = KvPolicy("offload")


TestEvict = EvictMachine.TestCase
TestPin = PinMachine.TestCase
TestTtl = TtlMachine.TestCase
TestOffload = OffloadMachine.TestCase
for case in (TestEvict, TestPin, TestTtl, TestOffload):
    case.settings = SETTINGS
