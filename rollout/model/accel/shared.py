# The shared engine (`--engine NAME`): one simulated accelerator for every response of a server,
# the scheduler (rollout.model.accel.scheduler) driven on trio's clock. Its task plans steps and
# sleeps them out; a request arriving mid-plan cuts the plan at the step in flight (it joins the
# batch at the next step, as in vLLM). A sampling step takes a Seat: it waits for admission and
# prefill, then for its tokens as the steps decode them (the Seat paces the model as an
# InferenceProfile's Pacer does). What each shape tells the engine (docs/shared-engine.md):
# a rollout that samples again (the append and inject shapes, async tools) claims the KV its
# previous step left; a chained turn claims the KV of the response it names as
# `previous_response_id`. A rollout's end releases its KV to the prefix cache, unless the
# response ended on client tool calls and carried a hint that it will come back
# (`prompt_cache_key`, or a `previous_response_id`): then the KV policy keeps it.
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import attrs
import trio

from rollout.model.accel.kv import Holding
from rollout.model.accel.profile import AcceleratorProfile
from rollout.model.accel.requests import KvPolicy, Plan, Seq
from rollout.model.accel.scheduler import Scheduler

#: Output items a client answers (a response ending on one continues in the next turn).
CALL_TYPES = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "shell_call",
        "local_shell_call",
        "apply_patch_call",
        "computer_call",
        "mcp_approval_request",
    }
)
FINISHED_KEPT = 10_000  # finished responses whose KV a chained turn may claim
SERIES_POINTS = 4096  # occupancy samples kept (then every other one goes, the interval doubles)


@attrs.define(eq=False)
class Series:
    """KV occupancy over time, sampled at most every `interval` seconds, bounded."""

    interval: float = 0.5
    points: list[tuple[float, float, float, int, int]] = attrs.field(factory=list)
    # (time, used fraction, held fraction, running, waiting)

    def add(self, now: float, occupancy: dict[str, float]) -> None:
        if self.points and now - self.points[-1][0] < self.interval:
            return
        self.points.append(
            (
                now,
                occupancy["used"],
                occupancy["held"],
                int(occupancy["running"]),
                int(occupancy["waiting"]),
            )
        )
        if len(self.points) > SERIES_POINTS:
            self.points = self.points[::2]
            self.interval *= 2


@attrs.define(eq=False)
class Seat:
    """A sampling step's place on the engine; paces the model's tokens as they are decoded."""

    engine: SharedEngine
    seq: Seq
    started: float
    _n: int = 0  # tokens the model has asked for
    unpaced: bool = False

    @property
    def prompt_tokens(self) -> int:
        return self.seq.prompt

    @property
    def cached_tokens(self) -> int:
        return self.seq.cached

    def due(self, n: int, now: float) -> int | None:
        """Count `n` more tokens: the count to wait for, or None when they are decoded."""
        del now
        self._n += n
        want = min(self._n, self.seq.output)
        live = self.seq.state in ("waiting", "running")  # (a preempted one waits again)
        return want if self.seq.decoded < want and live else None

    async def sleep(self, due: float) -> None:
        await self.engine.decoded(self.seq, int(due))

    async def token(self, n: int = 1) -> None:
        due = self.due(n, 0.0)
        if due is not None:
            await self.sleep(due)

    def close(self) -> None:
        """The step ended (or stopped early: its request leaves the engine)."""
        self.engine.leave(self.seq)


@attrs.define(eq=False)
class SharedEngine:
    profile: AcceleratorProfile
    policy: KvPolicy = attrs.field(factory=KvPolicy)
    sched: Scheduler = attrs.field(init=False)
    series: Series = attrs.field(factory=Series)
    _wake: trio.Event = attrs.field(factory=trio.Event)
    _waiters: dict[Seq, tuple[int, trio.Event]] = attrs.field(factory=dict)
    _paused: dict[Hashable, Holding] = attrs.field(factory=dict)  # by rollout
    _finished: OrderedDict[str, Holding] = attrs.field(factory=OrderedDict)  # by response id
    _plan: Plan | None = None
    _plan_start: float = 0.0
    started: bool = False

    def __attrs_post_init__(self) -> None:
        self.sched = Scheduler(self.profile, self.policy)

    @property
    def window(self) -> int:
        """Prompt tokens one request may hold: all the KV memory (a longer prompt gets
        `context_length_exceeded`, as vLLM refuses one over its max_model_len)."""
        return self.profile.kv_tokens

    # -- the sampling side ----------------------------------------------------------------------

    async def seat(
        self,
        rollout: Hashable,
        prompt: int,
        hashes: Sequence[int],
        output: int,
        previous: str | None = None,
    ) -> Seat:
        """Queue a step of `rollout` (a prompt of `prompt` tokens whose full chunks are
        `hashes`, decoding `output` tokens) and wait until its prefill is done."""
        if not self.started:
            raise RuntimeError("the shared engine is not running (Service.serve starts it)")
        # (a step whose output would outgrow the memory decodes what fits; the rest is
        # released unpaced)
        output = max(0, min(output, self.profile.kv_tokens - prompt))
        claim = self._paused.pop(rollout, None)
        if claim is None and previous is not None:
            claim = self._finished.pop(previous, None)
        seq = Seq(rollout, prompt, list(hashes), output, trio.current_time(), claim)
        if claim is not None:
            seq.program = claim.program
        if claim is not None and (reload := self.sched.needs_reload(claim)):
            await trio.sleep(self.profile.offload_seconds(reload))  # a copy back from the host
            seq.reloaded = reload
            self.sched.counters.reloaded_tokens += reload
        now = trio.current_time()
        self.sched.submit(seq, now)
        self._wake.set()
        await self._until(seq, lambda: seq.first_token_at is not None)
        return Seat(self, seq, now)

    async def decoded(self, seq: Seq, n: int) -> None:
        """Wait until `seq` has decoded `n` tokens (or stopped)."""
        if seq.decoded < n and seq.state in ("waiting", "running"):
            event = trio.Event()
            self._waiters[seq] = (n, event)
            try:
                await event.wait()
            finally:
                self._waiters.pop(seq, None)

    async def _until(self, seq: Seq, ready: Any) -> None:
        while not ready() and seq.state in ("waiting", "running"):
            await self.decoded(seq, seq.decoded + 1)

    def leave(self, seq: Seq) -> None:
        """The step is over: what it left is its rollout's (an early stop leaves it evictable)."""
        if seq.state in ("waiting", "running"):
            self.sched.abort(seq, trio.current_time())
            self._wake.set()
        if seq.holding is not None:
            old = self._paused.pop(seq.owner, None)
            if old is not None and old is not seq.holding:
                self.sched.release(old, trio.current_time())
            self._paused[seq.owner] = seq.holding

    def close(self, rollout: Hashable, response_id: str, hint: bool) -> None:
        """The rollout's response ended: its KV may be claimed by a turn chained to
        `response_id`; the policy keeps it only with `hint`, else it is released."""
        holding = self._paused.pop(rollout, None)
        if holding is None:
            return
        now = trio.current_time()
        if not hint:
            self.sched.release(holding, now)
        self._finished[response_id] = holding
        while len(self._finished) > FINISHED_KEPT:
            _, old = self._finished.popitem(last=False)
            self.sched.release(old, now)
        self._wake.set()

    # -- the engine's task ----------------------------------------------------------------------

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Plan, sleep out the plan (cut short by an arrival or a pin's end), advance; idle
        until something arrives."""
        self.started = True
        task_status.started()
        try:
            while True:
                now = trio.current_time()
                self.sched.expire(now)
                plan = self.sched.plan(now)
                self.series.add(now, self.sched.occupancy())
                if plan is None:
                    self._wake = trio.Event()
                    with trio.move_on_at(self.sched.next_expiry()):
                        await self._wake.wait()
                    continue
                steps = await self._sleep_plan(plan, now)
                self._advance(plan, steps)
        finally:
            self.started = False

    async def _sleep_plan(self, plan: Plan, start: float) -> int:
        """Sleep the plan's steps; an arrival or a pin's end cuts it after the step in
        flight. Returns the steps that ran."""
        end = start + plan.seconds
        self._wake = trio.Event()
        with trio.move_on_at(min(end, self.sched.next_expiry())):
            await self._wake.wait()
        now = trio.current_time()
        if now >= end or plan.step_s <= 0:
            return plan.steps
        steps = min(plan.steps, math.floor((now - start) / plan.step_s) + 1)
        await trio.sleep_until(start + steps * plan.step_s)
        return steps

    def _advance(self, plan: Plan, steps: int) -> None:
        moved = self.sched.advance(plan, steps, trio.current_time())
        for seq in moved:
            waiter = self._waiters.get(seq)
            if waiter is not None and (seq.decoded >= waiter[0] or seq.state != "running"):
                waiter[1].set()

    # -- what it reports ------------------------------------------------------------------------

    def counts(self) -> dict[str, Any]:
        """Counters and gauges, as results and `/metrics` report them."""
        c = self.sched.counters
        return {
            **attrs.asdict(c),
            **{f"kv_{k}": v for k, v in self.sched.occupancy().items()},
            "kv_blocks": self.sched.mem.capacity,
            "kv_peak_fraction": c.peak_used / max(1, self.sched.mem.capacity),
            "evicted_blocks": self.sched.mem.evicted_blocks,
        }


def comes_back(r: Any) -> bool:
    """A rollout's response (a `rollout.engine.loop.Rollout`) ended on calls its client
    answers, and its request hints that the conversation goes on: a `prompt_cache_key`, or a
    `previous_response_id` (it is a chained turn)."""
    req = r.request
    if req is None or not (req.prompt_cache_key or req.previous_response_id):
        return False
    output = r.stream.response.output
    return bool(output) and getattr(output[-1], "type", None) in CALL_TYPES
