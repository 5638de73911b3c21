# `rollout bench`: the engine's limits, each a figure measured in one run against its target,
# most as a ratio to a baseline measured side by side. One line per figure:
# `name value unit target pass|fail|info`.
from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable

import attrs
import trio

from rollout.client import HttpClient
from rollout.experiments.bench.concurrency import first_delta_under_load
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.firsttoken import first_token
from rollout.experiments.bench.gateway import gateway
from rollout.experiments.bench.peer import side_by_side
from rollout.experiments.bench.stages import first_token_stages
from rollout.experiments.bench.streams import events_per_second
from rollout.experiments.bench.turncost import overhead_vs_history
from rollout.experiments.bench.upstream import upstream_client
from rollout.experiments.harness.procs import running
from rollout.experiments.harness.run import run_one
from rollout.experiments.workloads.catalog import WORKLOADS
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES

# -- 1. per-turn server CPU against history length: rollout.experiments.bench.turncost -------------


# -- 2. events per second on one connection: rollout.experiments.bench.streams ---------------------


# -- 3. memory of suspended append rollouts --------------------------------------------------------

_MEMORY_SERVER = """
import sys, rollout
from rollout.experiments.harness.procs import serve_engine
from rollout.service.config import ServerConfig
# The model always calls the tool: every rollout stays suspended after its first step.
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.call("exec", {})))
serve_engine(engine, ServerConfig(append_timeout_s=3600))
"""


async def memory(report: Report, rollouts: int = 1000, context_tokens: int = 8000) -> None:
    async with running(_MEMORY_SERVER) as server:
        base_url = f"http://127.0.0.1:{server.port}/v1"
        baseline = server.rss_mb()
        history = WORKLOADS["long"].build(0).request["input"]
        words = 0
        items = []
        for item in history:
            items.append(item)
            words += len(item["content"].split())
            if words >= context_tokens:
                break
        body = {
            "model": "m",
            "shape": "append",
            "stream": True,
            "input": items,
            "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}],
        }
        paused = 0

        async def worker(k: int) -> None:
            nonlocal paused
            async with HttpClient(base_url) as http:
                for _ in range(k):
                    async for event in http.events("/responses", body):
                        if event.type == "response.done":
                            paused += 1

        per = rollouts // 10
        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(worker, per)
        rss = server.rss_mb()
    report(Figure("memory.baseline_rss", baseline, "MB"))
    report(
        Figure("memory.suspended_rollouts", paused, "rollouts", f"={rollouts}", paused == rollouts)
    )
    report(Figure("memory.rss_with_suspended_rollouts", rss, "MB", "<=300", rss <= 300))


# -- 4. time to first token on a warm connection: rollout.experiments.bench.firsttoken -------------
# (where it goes, stage by stage: rollout.experiments.bench.stages, informational)


# -- 5. the ideal-rollout ratio --------------------------------------------------------------------


async def ideal_ratio(report: Report, repeats: int = 3) -> None:
    scenario = attrs.evolve(WORKLOADS["coding-agent"], tool_calls=(20, 20)).build(0)
    profile = INFERENCE_PROFILES["1000tps"]
    ratios: dict[str, list[float]] = {"ws-append": [], "ws-chain": []}
    for repeat in range(repeats):
        for mode in ratios:
            r = await run_one(mode, scenario, profile, COST_PROFILES["cpu-only"], repeat)
            ratios[mode].append(r.seconds / r.ideal_s)
    append = statistics.median(ratios["ws-append"])
    chain = statistics.median(ratios["ws-chain"])
    report(Figure("ideal_ratio.ws-append.1000tps", append, "x", "<=1.03", append <= 1.03))
    report(Figure("ideal_ratio.ws-chain.1000tps", chain, "x", "-"))
    report(
        Figure(
            "ideal_ratio.ws-chain_vs_ws-append",
            chain / append,
            "x",
            "<=1.05",
            chain / append <= 1.05,
        )
    )


BENCHES: dict[str, Callable[[Report], Awaitable[None]]] = {
    "overhead": overhead_vs_history,
    "events": events_per_second,
    "concurrency": first_delta_under_load,
    "memory": memory,
    "first-token": first_token,
    "first-token-stages": first_token_stages,
    "ideal": ideal_ratio,
    "upstream-client": upstream_client,
    "aimock": side_by_side,
    "gateway": gateway,
}


async def run(names: list[str], report: Report) -> None:
    for name in names:
        await BENCHES[name](report)
