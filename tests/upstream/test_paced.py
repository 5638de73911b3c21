# `rollout compare --upstream URL`: the workload's script, paced by a real engine's stream
# (rollout.upstream.paced), against aimock: every mode replays the same rollout, each step asks
# the engine for exactly the step's tokens, and the inference time is the engine's, measured.
from __future__ import annotations

import trio
from _aimock import Aimock

from rollout.experiments.harness.compare import summarize
from support.compare import upstream_experiment


def test_compare_over_an_upstream(aimock: Aimock) -> None:
    modes = ["http-chain", "ws-chain", "ws-append"]
    scenario, experiment = upstream_experiment("coding-agent", 2, modes, f"{aimock.url}/v1")
    results = trio.run(experiment.run)
    summaries = summarize(results)
    assert all(s.same_output for s in summaries)
    assert all(r.turns == 3 and r.inference_s > 0 for r in results)  # 2 calls, then the answer
    first = scenario.request["input"][0]["content"]
    sent = aimock.requests_for(first[:40])
    assert len(sent) == 12  # an unmeasured warm-up run, then 3 steps in each of 3 modes
    assert all(e["body"]["max_tokens"] >= 1 for e in sent)
