# `rollout compare --upstream URL` as the upstream tests run it: a workload's scenario with its
# tool calls pinned, replayed once in each mode, paced by the engine at the URL (no simulated
# inference profile: the engine's time is measured).
from __future__ import annotations

from collections.abc import Sequence

import attrs

from rollout.experiments.compare import Experiment
from rollout.experiments.workloads import Scenario, workload
from rollout.model.profiles import COST_PROFILES, InferenceProfile
from rollout.upstream.config import UpstreamConfig


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
