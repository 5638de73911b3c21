# `rollout compare --agents N,...`: many agents on one shared engine. For each number of agents,
# mode and KV policy (and, with --turns, tool calls per rollout), a fleet of agents
# (rollout.experiments.workloads.agents) runs against one in-process server whose simulated model
# queues on one SharedEngine, over real loopback sockets, on a virtual clock: trio's MockClock
# jumps whenever every task waits, so the engine's steps and the tools' latencies take simulated
# time while rollout's own CPU work (codec, scan, tokenizer, events) is real and takes none of it;
# that CPU time is measured apart. Each run is one process of a pool (`--jobs`). Figures and
# tables: rollout.experiments.sweeps.agents_report.
from __future__ import annotations

import concurrent.futures
import functools
import math
import multiprocessing
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio
import trio.testing

from rollout.client import run_agent
from rollout.client.agent import AgentResult
from rollout.engine.engine import Engine
from rollout.experiments.workloads.agents import fleet
from rollout.experiments.workloads.catalog import Workload
from rollout.model.accel.profile import AcceleratorProfile
from rollout.model.accel.requests import DEFAULT_TTL_S, KvPolicy
from rollout.model.accel.shared import SharedEngine
from rollout.model.profiles import CostProfile
from rollout.server.listen import serve
from rollout.service.config import ServerConfig

AGENT_COUNTS = (8, 16, 32, 64, 128, 256)  # the default sweep
AGENT_MODES = ("ws-append", "ws-chain")
AGENT_POLICIES = ("evict", "pin", "ttl")
AGENT_WORKLOAD = "swe-agents"
AGENT_COSTS = "cpu-only"  # no declared service latencies: the engine and the tools alone
STAGGER_S = 30.0  # agents start at uniform times over the first STAGGER_S simulated seconds
SERIES_KEPT = 400  # occupancy points a run keeps in the results
#: The simulated hours would trip the server's connection age and idle limits (real ones): the
#: sweep's server has none, so a long queue never closes a connection.
SIM_CONFIG = ServerConfig(
    ws_max_age_s=math.inf, ws_idle_timeout_s=math.inf, idle_timeout_s=math.inf
)


@attrs.frozen
class Config:
    agents: int
    mode: str
    kv_policy: str
    repeat: int = 0
    calls: int | None = None  # tool calls per rollout (None: each agent's draw)

    @property
    def label(self) -> str:
        turns = "" if self.calls is None else f" {self.calls} calls"
        return f"{self.agents} agents {self.mode} {self.kv_policy}{turns}"


@attrs.frozen
class Sweep:
    workload: Workload
    engine: AcceleratorProfile
    costs: CostProfile
    agents: tuple[int, ...] = AGENT_COUNTS
    modes: tuple[str, ...] = AGENT_MODES
    policies: tuple[str, ...] = AGENT_POLICIES
    ttl_s: float = DEFAULT_TTL_S
    calls: tuple[int | None, ...] = (None,)
    repeats: int = 1
    seed: int = 0
    jobs: int = 1

    def configs(self) -> list[Config]:
        """Every run, repeats outermost (interleaved), the largest fleets first (so the
        longest runs do not come last on a pool)."""
        return [
            Config(n, mode, policy, repeat, calls)
            for repeat in range(self.repeats)
            for n in sorted(self.agents, reverse=True)
            for calls in self.calls
            for mode in self.modes
            for policy in self.policies
        ]

    def run(self, progress: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
        """Run every config (in a pool of `jobs` processes when more than one)."""
        configs = self.configs()
        one = functools.partial(run_config, self)
        if self.jobs <= 1:
            runs = []
            for c in configs:
                runs.append(one(c))
                progress(runs[-1])
            return runs
        context = multiprocessing.get_context("fork")  # (no trio runs in this process yet)
        with concurrent.futures.ProcessPoolExecutor(self.jobs, mp_context=context) as pool:
            futures = [pool.submit(one, c) for c in configs]
            for future in concurrent.futures.as_completed(futures):
                progress(future.result())
            return [f.result() for f in futures]


def run_config(sweep: Sweep, config: Config) -> dict[str, Any]:
    """One run in this process: its row (JSON-ready)."""
    cpu, wall = time.process_time(), time.perf_counter()
    clock = trio.testing.MockClock(autojump_threshold=0)
    row = trio.run(_run, sweep, config, clock=clock)
    row["cpu_s"] = time.process_time() - cpu
    row["wall_s"] = time.perf_counter() - wall
    return row


async def _run(sweep: Sweep, config: Config) -> dict[str, Any]:
    agents = fleet(sweep.workload, config.agents, sweep.seed + config.repeat, config.calls)
    kv = KvPolicy(config.kv_policy, sweep.ttl_s)  # type: ignore[arg-type]
    accelerator = SharedEngine(sweep.engine, kv)
    engine = Engine(policy=agents.policy(), costs=sweep.costs, accelerator=accelerator)
    jct: list[float] = []
    turns: list[int] = []
    failed: list[str] = []

    async def agent(i: int, url: str) -> None:
        scenario = agents.scenarios[i]
        await trio.sleep(random.Random(scenario.seed).uniform(0, STAGGER_S))
        start = trio.current_time()
        try:
            result = await run_agent(config.mode, url, scenario.request, scenario.tools)
        except Exception as exc:  # (a run reports its failed agents; it does not stop)
            failed.append(f"agent {i}: {exc!r}"[:300])
            return
        problem = unfinished(result, scenario.calls)
        if problem is not None:  # (a response that failed ends the rollout without an error)
            failed.append(f"agent {i}: {problem}"[:300])
            return
        jct.append(trio.current_time() - start)
        turns.append(len(result.turns))

    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve, engine, port=0, config=SIM_CONFIG))
        url = f"http://127.0.0.1:{port}/v1"
        start = trio.current_time()
        async with trio.open_nursery() as fleet_nursery:
            for i in range(config.agents):
                fleet_nursery.start_soon(agent, i, url)
        makespan = trio.current_time() - start
        nursery.cancel_scope.cancel()
    return _row(config, accelerator, jct, turns, failed, makespan)


def unfinished(result: AgentResult, calls: int) -> str | None:
    """Why a rollout did not play its script to the end (its last response failed or ended
    incomplete, or it made other than its `calls` tool calls), or None if it did."""
    last = result.turns[-1]
    made = f"after {len(result.calls)} of {calls} tool calls"
    if last.status != "completed":
        reason = f" ({last.reason})" if last.reason else ""
        return f"response {last.response_id} ended {last.status}{reason} {made}"
    if len(result.calls) != calls:
        return f"completed {made}"
    return None


def _row(
    config: Config,
    engine: SharedEngine,
    jct: Sequence[float],
    turns: Sequence[int],
    failed: Sequence[str],
    makespan: float,
) -> dict[str, Any]:
    counts = engine.counts()
    points = engine.series.points
    step = max(1, math.ceil(len(points) / SERIES_KEPT))
    span = max(makespan, 1e-9)
    return {
        **attrs.asdict(config),
        "completed": len(jct),
        "failed": list(failed),
        "turns_mean": statistics.fmean(turns) if turns else 0.0,
        "jct_s": sorted(jct),
        "jct_mean_s": statistics.fmean(jct) if jct else math.nan,
        "jct_p10_s": quantile(jct, 0.10),
        "jct_p50_s": quantile(jct, 0.50),
        "jct_p90_s": quantile(jct, 0.90),
        "jct_p95_s": quantile(jct, 0.95),
        "makespan_s": makespan,
        "rollouts_per_hour": len(jct) / span * 3600,
        "decode_tokens_per_s": counts["decode_tokens"] / span,
        "queue_s_per_request": counts["queue_s"] / max(1, counts["admitted"]),
        "kv_peak_fraction": counts["kv_peak_fraction"],
        "kv_held_peak_fraction": counts["peak_held"] / max(1, counts["kv_blocks"]),
        "recomputed_tokens": counts["recomputed_tokens"],
        "preemptions": counts["preemptions"],
        "engine": counts,
        "series": [list(p) for p in points[::step]],
    }


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (linear between order statistics); NaN for none."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def parse_counts(text: str) -> tuple[int, ...]:
    """`--agents 1,8,64`: positive whole numbers, each once."""
    try:
        counts = tuple(dict.fromkeys(int(t) for t in text.split(",") if t.strip()))
    except ValueError:
        raise ValueError(f"--agents takes numbers of agents like 8,64,256, not {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError("--agents takes numbers of agents >= 1")
    if max(counts) > 4096:
        raise ValueError("--agents: at most 4096 agents")
    return counts


def parse_turns(text: str) -> tuple[int, ...]:
    """`--turns 10,20,40`: tool calls per rollout, whole numbers >= 1, increasing."""
    try:
        calls = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        calls = ()
    if not calls or min(calls) < 1 or list(calls) != sorted(set(calls)):
        raise ValueError(
            f"--turns takes increasing tool calls per rollout >= 1, like 10,20,40, not {text!r}"
        )
    return calls
