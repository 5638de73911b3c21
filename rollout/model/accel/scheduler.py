# The shared engine's scheduler, sans-IO (the driver passes times in and sleeps out what a plan
# says): continuous batching as vLLM does it. Requests wait in FCFS order; the head is admitted
# when its prompt's blocks are available (what the prefix cache or the rollout's holding already
# has is credited, the rest prefilled in chunks within a per-step token budget); every step each
# running sequence decodes a token; a sequence that cannot grow preempts the latest admitted one
# (recompute: it goes back to the head of the queue). A sequence that has decoded its output
# stops, and its KV becomes a Holding the KV policy keeps (rollout.model.accel.kv). A plan covers
# up to MAX_STEPS steps over which the batch does not change, so the driver wakes per event, not
# per token.
from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter, OrderedDict
from typing import Any

import attrs

from rollout.model.accel.kv import CHUNK, Holding, KVMemory
from rollout.model.accel.profile import AcceleratorProfile
from rollout.model.accel.requests import (
    Counters,
    KvPolicy,
    Plan,
    Policy,
    Seq,
)

MAX_STEPS = 8  # steps one plan may cover
SEEN_KEPT = 1 << 22  # prompt chunks remembered as computed (for the recomputed count)


@attrs.define(eq=False)
class Scheduler:
    profile: AcceleratorProfile
    policy: KvPolicy = attrs.field(factory=KvPolicy)
    mem: KVMemory = attrs.field(init=False)
    waiting: list[Seq] = attrs.field(factory=list)  # by rank
    running: list[Seq] = attrs.field(factory=list)
    pinned: OrderedDict[int, Holding] = attrs.field(factory=OrderedDict)  # oldest first
    pin_refs: dict[int, int] = attrs.field(factory=dict)  # chunk -> pinned holdings of it
    pinned_tails: int = 0  # private blocks of pinned holdings
    host: OrderedDict[int, Holding] = attrs.field(factory=OrderedDict)  # offloaded, oldest first
    host_used: int = 0  # tokens
    expiries: list[tuple[float, int]] = attrs.field(factory=list)  # (until, holding key)
    counters: Counters = attrs.field(factory=Counters)
    computed: set[int] = attrs.field(factory=set)  # prompt chunks prefilled so far
    _order: int = 0

    def __attrs_post_init__(self) -> None:
        self.mem = KVMemory(self.profile.kv_blocks, self.profile.block_size)

    # -- requests -------------------------------------------------------------------------------

    def fits(self, tokens: int) -> bool:
        """A sequence of `tokens` fits the engine's memory at all."""
        return self.mem.blocks(tokens) <= self.mem.capacity

    def submit(self, seq: Seq, now: float) -> None:
        if not self.fits(seq.prompt + seq.output):
            raise ValueError(f"{seq.prompt + seq.output} tokens exceed the KV memory")
        seq.arrival, seq.order, seq.state = now, self._order, "waiting"
        seq.program = min(seq.program, now)
        self._order += 1
        self._enqueue(seq, (seq.program if self.policy.by_program else now, seq.order))

    def _enqueue(self, seq: Seq, rank: tuple[float, int]) -> None:
        seq.rank = rank
        bisect.insort(self.waiting, seq, key=lambda s: s.rank)

    def abort(self, seq: Seq, now: float) -> None:
        """The request went away (its client, a cancel): its KV is left evictable (a waiting
        one's claim too: nobody else will claim it)."""
        if seq.state == "waiting":
            self.waiting.remove(seq)
            if seq.claim is not None:
                self.release(seq.claim, now)
                seq.claim = None
        elif seq.state == "running":
            self.running.remove(seq)
            self._stop(seq, now, policy="evict")
        seq.state = "aborted"

    # -- holdings -------------------------------------------------------------------------------

    def release(self, holding: Holding, now: float) -> None:
        """Nobody will claim the holding: its KV becomes evictable (a cached prefix)."""
        self._unpin(holding, now)
        self._drop_host(holding)

    def expire(self, now: float) -> None:
        """Pins whose time-to-live has passed become evictable."""
        while self.expiries and self.expiries[0][0] <= now:
            _, key = heapq.heappop(self.expiries)
            holding = self.pinned.get(key)
            if holding is not None and holding.until <= now:
                self._unpin(holding, now)

    def next_expiry(self) -> float:
        return self.expiries[0][0] if self.expiries else math.inf

    def _unpin(self, holding: Holding, now: float) -> None:
        if self.pinned.pop(holding.key, None) is not None:
            for h in holding.chunks:
                n = self.pin_refs[h] - 1
                if n:
                    self.pin_refs[h] = n
                else:
                    del self.pin_refs[h]
            self.pinned_tails -= holding.tail
        if holding.state == "pinned":
            self.mem.make_evictable(holding, now)

    @property
    def pinned_blocks(self) -> int:
        """Blocks pinned holdings hold (a chunk several of them share counted once)."""
        return len(self.pin_refs) * self.mem.per_chunk + self.pinned_tails

    def _drop_host(self, holding: Holding) -> None:
        if self.host.pop(holding.key, None) is not None:
            self.host_used -= holding.host_tokens
        holding.host_tokens = 0

    def _stop(self, seq: Seq, now: float, policy: Policy | None = None) -> None:
        """The sequence stopped: its KV becomes a holding the policy keeps."""
        holding = Holding(seq.owner, seq.chunks, seq.tail, seq.tokens, seq.prompt, since=now)
        holding.program = seq.program
        seq.chunks, seq.tail, seq.holding = [], 0, holding
        self.counters.stopped += 1
        policy = policy or self.policy.name
        if policy in ("pin", "ttl"):
            if policy == "ttl":
                holding.until = now + self.policy.ttl_s
                heapq.heappush(self.expiries, (holding.until, holding.key))
            self.pinned[holding.key] = holding
            for h in holding.chunks:
                self.pin_refs[h] = self.pin_refs.get(h, 0) + 1
            self.pinned_tails += holding.tail
            self.counters.peak_held = max(self.counters.peak_held, self.pinned_blocks)
            return
        if policy == "offload" and holding.tokens <= self.profile.host_tokens:
            while self.host_used + holding.tokens > self.profile.host_tokens:
                _, old = self.host.popitem(last=False)
                self.host_used -= old.host_tokens
                old.host_tokens = 0
            holding.host_tokens = holding.tokens
            self.host[holding.key] = holding
            self.host_used += holding.tokens
            self.counters.offloaded_tokens += holding.tokens
        self.mem.make_evictable(holding, now)

    def needs_reload(self, holding: Holding) -> int:
        """Tokens to copy back from host memory before a request claiming `holding` can run."""
        if self.mem.still_held(holding) or not holding.host_tokens:
            return 0
        return holding.host_tokens

    # -- planning -------------------------------------------------------------------------------

    def plan(self, now: float) -> Plan | None:
        """Admit what fits and plan the next steps (None: nothing to run)."""
        self._admit(now)
        while True:
            plan = self._plan()
            if plan is None:
                return None
            growth = self._growth(plan, plan.steps)
            if growth <= self.mem.available:
                return plan
            if plan.steps > 1 and self._growth(plan, 1) <= self.mem.available:
                return attrs.evolve(plan, steps=1)
            self._make_room(now)

    def _plan(self) -> Plan | None:
        decode = tuple(s for s in self.running if s.prefill_left == 0)
        budget = self.profile.max_batched_tokens - len(decode)
        prefill: list[tuple[Seq, int]] = []
        for s in self.running:
            if s.prefill_left and budget > 0:
                chunk = min(s.prefill_left, budget)
                prefill.append((s, chunk))
                budget -= chunk
        if not decode and not prefill:
            return None
        steps = MAX_STEPS
        for s in decode:
            steps = min(steps, s.output - s.decoded)
        for s, chunk in prefill:
            steps = min(steps, -(-s.prefill_left // chunk))
        steps = max(1, steps)
        tokens = len(decode) + sum(c for _, c in prefill)
        mid = (steps - 1) / 2
        reads = sum(s.tokens + mid for s in decode)
        pairs = reads
        for s, chunk in prefill:
            before = s.prompt + s.decoded - s.prefill_left
            reads += before + chunk
            pairs += chunk * before + chunk * (chunk + 1) / 2
        step_s = self.profile.step_seconds(tokens, int(reads), pairs)
        return Plan(decode, tuple(prefill), steps, step_s)

    def _growth(self, plan: Plan, steps: int) -> int:
        """Blocks `steps` steps of `plan` add: a token per decoding sequence per step, and the
        first token a prefill that ends within them samples."""
        mem = self.mem
        n = sum(mem.tail_blocks(s.tokens + steps, len(s.chunks)) - s.tail for s in plan.decode)
        for s, chunk in plan.prefill:
            if s.decoded < s.output and s.prefill_left <= steps * chunk:
                n += mem.tail_blocks(s.tokens + 1, len(s.chunks)) - s.tail
        return n

    def _make_room(self, now: float) -> None:
        """A running sequence cannot grow: a pin goes first (`pin`), else the latest admitted
        sequence is preempted and recomputed later, as vLLM does."""
        if self.policy.name == "pin" and self.pinned:
            self._force_unpin(now)
            return
        victim = self.running.pop(self._lowest(self.running, key=lambda s: s.rank))
        self.mem.release(victim.chunks)
        self.mem.shrink(victim.tail)
        victim.lost = victim.tokens - victim.prefill_left
        victim.chunks, victim.tail, victim.claim = [], 0, None
        victim.state, victim.admitted_at, victim.arrival = "waiting", None, now
        self.counters.preemptions += 1
        # (back to the head of the queue, as vLLM does; by its program's place, by program)
        by_program = self.policy.by_program
        self._enqueue(
            victim, (victim.program, victim.order) if by_program else (-math.inf, -victim.order)
        )

    @staticmethod
    def _lowest(items: list[Seq], key: Any) -> int:
        """Index of the lowest-priority sequence (the latest admitted when ranks tie)."""
        best = len(items) - 1
        for i in range(len(items) - 2, -1, -1):
            if key(items[i]) > key(items[best]):
                best = i
        return best

    def _force_unpin(self, now: float) -> None:
        """A pin gives way: the youngest program's (by program), else the oldest pause."""
        if self.policy.by_program:
            victim = max(self.pinned.values(), key=lambda h: (h.program, h.key))
        else:
            victim = next(iter(self.pinned.values()))
        self._unpin(victim, now)
        self.counters.unpinned += 1

    def _admit(self, now: float) -> None:
        while self.waiting and len(self.running) < self.profile.max_num_seqs:
            if not self._try_admit(self.waiting[0], now):
                if self.running or not self.pinned or self.policy.name != "pin":
                    return  # (a `ttl` pin ends at its expiry: the driver wakes then)
                self._force_unpin(now)  # nothing runs: a pin must give way
                continue
            self.waiting.pop(0)

    def _try_admit(self, seq: Seq, now: float) -> bool:
        mem = self.mem
        h = seq.claim
        prompt = seq.tokens  # (a preempted one recomputes what it decoded too)
        credit = 0  # what its holding still has of the prompt this one extends
        if h is not None and h.state != "gone" and h.chunks == seq.hashes[: len(h.chunks)]:
            if mem.still_held(h) or seq.reloaded:  # (on the device, or copied back)
                credit = min(h.prompt, prompt - 1)
                credit -= credit % self.profile.block_size
        cached = min(max(mem.hit(seq.hashes) * CHUNK, credit), prompt - 1)
        tail = mem.tail_blocks(prompt, len(seq.hashes))
        pinned_tail = h.tail if h is not None and h.state == "pinned" else 0
        if seq.need[0] != mem.epoch:  # (a blocked head is tried at every step)
            seq.need = (mem.epoch, mem.chunk_need(seq.hashes))
        if seq.need[1] + tail - pinned_tail > mem.available:
            return False
        if h is not None:
            self.release(h, now)
            mem.drop(h)
        self.counters.recomputed_tokens += self._recomputed(seq, cached)
        seq.lost = 0
        mem.acquire(seq.hashes)
        mem.grow(tail)
        seq.chunks, seq.tail = list(seq.hashes), tail
        seq.cached, seq.prefill_left = cached, prompt - cached
        seq.state, seq.admitted_at = "running", now
        seq.queue_s += now - seq.arrival
        seq.claim = None
        c = self.counters
        c.admitted += 1
        c.cached_tokens += cached
        c.queue_s += now - seq.arrival
        c.peak_used = max(c.peak_used, mem.active)
        self.running.append(seq)
        return True

    def _recomputed(self, seq: Seq, cached: int) -> int:
        """Tokens of `seq`'s prefill whose KV this engine computed before and lost: the whole
        prompt chunks it had computed, and the output a preempted sequence decodes again."""
        seen, hashes = self.computed, seq.hashes
        first = cached // CHUNK
        n = sum(CHUNK for h in hashes[first:] if h in seen)
        if n and cached % CHUNK and hashes[first] in seen:
            n -= cached % CHUNK
        if len(seen) < SEEN_KEPT:
            seen.update(hashes[first:])
        return n + (seq.decoded if seq.lost else 0)

    # -- progress -------------------------------------------------------------------------------

    def advance(self, plan: Plan, steps: int, now: float) -> list[Seq]:
        """`steps` steps of `plan` ran, ending at `now`: the sequences that made tokens."""
        mem, c = self.mem, self.counters
        moved: list[Seq] = []
        for s in plan.decode:
            if s.state != "running":
                continue  # (aborted meanwhile)
            n = min(steps, s.output - s.decoded)
            s.decoded += n
            grow = mem.tail_blocks(s.tokens, len(s.chunks)) - s.tail
            mem.grow(grow)
            s.tail += grow
            c.decode_tokens += n
            moved.append(s)
        for s, chunk in plan.prefill:
            if s.state != "running":
                continue
            done = min(s.prefill_left, steps * chunk)
            s.prefill_left -= done
            c.prefill_tokens += done
            if s.prefill_left == 0:
                s.first_token_at = now
                if s.output > 0 and s.decoded < s.output:
                    s.decoded += 1  # the step that ends a prefill samples the first token
                    c.decode_tokens += 1
                    grow = mem.tail_blocks(s.tokens, len(s.chunks)) - s.tail
                    mem.grow(grow)
                    s.tail += grow
                moved.append(s)
        c.steps += steps
        c.busy_s += steps * plan.step_s
        c.peak_used = max(c.peak_used, mem.active)
        for s in moved:
            if s.prefill_left == 0 and s.decoded >= s.output:
                self.running.remove(s)
                s.state = "done"
                self._stop(s, now)
        return moved

    # -- what it holds --------------------------------------------------------------------------

    def occupancy(self) -> dict[str, float]:
        """KV memory now, as fractions of its blocks (used: by running sequences and pins;
        held: by pins; cached: evictable), and the queue."""
        cap = self.mem.capacity
        return {
            "used": self.mem.active / cap,
            "held": self.pinned_blocks / cap,
            "cached": self.mem.lru_blocks / cap,
            "running": len(self.running),
            "waiting": len(self.waiting),
        }

    def check(self) -> None:
        """Invariants (tests): memory within capacity, running within its bound, FCFS held;
        every reference and private block is a running sequence's or a holding's, and each
        running sequence's tail is sized for its tokens."""
        mem = self.mem
        mem.check()
        assert len(self.running) <= self.profile.max_num_seqs
        chunks = {h for held in self.pinned.values() for h in held.chunks}
        assert self.pin_refs.keys() == chunks
        assert self.pinned_tails == sum(h.tail for h in self.pinned.values())
        assert self.waiting == sorted(self.waiting, key=lambda s: s.rank)
        refs = Counter(h for s in self.running for h in s.chunks)
        refs.update(h for p in self.pinned.values() for h in p.chunks)
        assert {h: n for h, n in mem.refs.items() if n} == refs
        tails = sum(s.tail for s in self.running) + sum(h.tail for h in self.pinned.values())
        assert mem.private == tails + sum(h.tail for h in mem.tails.values())
        assert all(s.tail == mem.tail_blocks(s.tokens, len(s.chunks)) for s in self.running)
        assert all(h.state == "pinned" for h in self.pinned.values())
        assert self.host_used <= self.profile.host_tokens
