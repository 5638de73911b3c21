# `rollout compare --upstream URL` as the upstream tests run it: a workload's scenario with its
# tool calls pinned, replayed once in each mode, paced by the engine at the URL (no simulated
# inference profile: the engine's time is measured); and a RunResult made up for the tests of the
# summaries and figures.
from __future__ import annotations

from collections.abc import Sequence

import attrs

from rollout.experiments.harness.compare import Experiment
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Scenario, workload
from rollout.model.profiles import COST_PROFILES, InferenceProfile
from rollout.upstream.target import UpstreamConfig


def upstream_experiment(
    name: str, calls: int, modes: Sequence[str], url: str
) -> tuple[Scenario, Experiment]:
    """The scenario of workload `name` with exactly `calls` tool calls, and its experiment."""
    scenario = attrs.evolve(workload(name), tool_calls=(calls, calls)).build(0)
    experiment = Experiment(
        scenario=scenario,
        profiles=[InferenceProfile(name="upstream")],
        costs=COST_PROFILES["cpu-only"],
        modes=list(modes),
        repeats=1,
        upstream=UpstreamConfig(url=url),
    )
    return scenario, experiment


def run_result(mode: str, seconds: float, profile: str = "p", **kw: object) -> RunResult:
    """A rollout of 2 turns in `mode`: inference 0.4 s and client tools 0.1 s (ideal 0.5 s)."""
    base = dict(
        mode=mode,
        profile=profile,
        repeat=0,
        seconds=seconds,
        client_s=0.1,
        inference_s=0.4,
        cpu_s=0.01,
        declared_s=0.0,
        turns=2,
        ttft_s=[0.2, 0.3],
        turn_s=[0.3, 0.3],
        step_prompt=[100, 200],
        step_ideal_s=[0.2, 0.2],
        counts={
            s: {"calls": 1, "items": 1, "tokens": 10, "seconds": 0.0}
            for s in ("scan", "tokenize", "routing", "billing", "store")
        },
        billed=2,
        bytes_sent=100,
        bytes_received=300,
        text="done",
        calls=[("exec", "{}")],
    )
    base.update(kw)
    return RunResult(**base)  # type: ignore[arg-type]
