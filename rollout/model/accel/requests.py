# What the shared engine's scheduler works on, sans-IO: the KV policies (KvPolicy), a request
# on the engine (Seq: one sampling step of a rollout, its progress and what it left), the
# engine's counters and a plan of steps. rollout.model.accel.scheduler moves them.
from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Literal

import attrs

from rollout.model.accel.kv import Holding

Policy = Literal["evict", "pin", "ttl", "offload"]
POLICIES: tuple[Policy, ...] = ("evict", "pin", "ttl", "offload")
#: The `ttl` policy's time-to-live when none is given (`--kv-ttl`): long enough for most of a
#: SWE-bench agent's tool calls (82% of swe-agents' are under 2 s) and the queue behind them,
#: short enough that an abandoned rollout's KV does not stay pinned. Measured (64 swe-agents
#: over ws-append on h100-llama3.1-8b, virtual clock): mean JCT 563 s at a 1 s TTL, 473 at 2,
#: 401 at 5, 394 at 10, 383 at 30; pin 357, evict 1008.
DEFAULT_TTL_S = 5.0


@attrs.frozen
class KvPolicy:
    """What a stopped sequence's KV becomes (docs/shared-engine.md)."""

    name: Policy = "evict"
    ttl_s: float = 0.0  # the `ttl` policy's time-to-live

    @property
    def by_program(self) -> bool:
        """The queue is ordered by each rollout's first arrival (program-level FCFS, as
        Continuum schedules), not by each request's: the pause-aware policies."""
        return self.name != "evict"

    def describe(self) -> str:
        ttl = f", ttl {self.ttl_s:g} s" if self.name == "ttl" else ""
        order = "program" if self.by_program else "request"
        return f"kv-policy {self.name} ({order}-level FCFS{ttl})"


@attrs.define(eq=False)
class Seq:
    """One request on the engine: a sampling step of a rollout."""

    owner: Hashable
    prompt: int  # prompt tokens
    hashes: list[int]  # the prompt's full chunks
    output: int  # tokens it decodes
    arrival: float
    claim: Holding | None = None  # the KV its rollout left when it stopped last
    program: float = math.inf  # its rollout's first arrival (inf: this request's)
    reloaded: int = 0  # tokens copied back from host memory for it (`offload`)
    order: int = 0  # FCFS position
    state: Literal["waiting", "running", "done", "aborted"] = "waiting"
    cached: int = 0  # tokens credited at admission
    prefill_left: int = 0
    decoded: int = 0
    chunks: list[int] = attrs.field(factory=list)  # chunks it references
    tail: int = 0  # private blocks
    lost: int = 0  # tokens of KV a preemption took from it
    admitted_at: float | None = None
    first_token_at: float | None = None
    queue_s: float = 0.0
    holding: Holding | None = None  # what it left when it stopped
    rank: tuple[float, int] = (0.0, 0)  # its place in the queue (lowest first)
    need: tuple[int, int] = (-1, 0)  # (memory epoch, blocks its chunks need then)

    @property
    def tokens(self) -> int:
        """Tokens of KV it has once prefilled: prompt and decoded output."""
        return self.prompt + self.decoded

    @property
    def decoding(self) -> bool:
        return self.state == "running" and self.prefill_left == 0


@attrs.define
class Counters:
    admitted: int = 0
    stopped: int = 0
    preemptions: int = 0
    unpinned: int = 0  # pins released early to let the engine go on (`pin`)
    prefill_tokens: int = 0  # tokens prefilled (computed)
    recomputed_tokens: int = 0  # of them, KV computed before and lost (Scheduler._recomputed)
    cached_tokens: int = 0  # credited from the prefix cache or a holding
    decode_tokens: int = 0
    offloaded_tokens: int = 0
    reloaded_tokens: int = 0
    steps: int = 0
    busy_s: float = 0.0
    queue_s: float = 0.0
    peak_used: int = 0  # blocks of running sequences and pins (the evictable cache not counted)
    peak_held: int = 0  # blocks pinned by stopped sequences


@attrs.frozen
class Plan:
    """The next steps: who decodes, who prefills how many tokens per step, for how long."""

    decode: tuple[Seq, ...]
    prefill: tuple[tuple[Seq, int], ...]
    steps: int
    step_s: float

    @property
    def seconds(self) -> float:
        return self.steps * self.step_s
