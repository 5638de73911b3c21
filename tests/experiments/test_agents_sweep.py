"""`rollout compare --agents` (rollout.experiments.sweeps.agents and agents_report): the report's
logic on hand-built runs (medians and spreads over repeats, gains over evict, the verdicts, the
turns trend, the base calls), the sweep's order of runs, --agents parsing, and a few tiny real
runs of a fleet on one shared engine on the virtual clock, and the files they write."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path
from typing import Any

import orjson
import pytest

from rollout.client.agent import AgentResult, Turn
from rollout.experiments.figures.agents import base_calls
from rollout.experiments.sweeps import agents_report as report
from rollout.experiments.sweeps.agents import (
    AGENT_COSTS,
    AGENT_WORKLOAD,
    Config,
    Sweep,
    parse_counts,
    quantile,
    run_config,
    unfinished,
)
from rollout.experiments.workloads.catalog import workload
from rollout.model.accel.profile import DEFAULT_ENGINE, engine_profile
from rollout.model.profiles import cost_profile

REQUIRED = (
    "agents",
    "mode",
    "kv_policy",
    "jct_mean_s",
    "jct_p95_s",
    "rollouts_per_hour",
    "kv_peak_fraction",
    "recomputed_tokens",
    "preemptions",
)
SWEEP = Sweep(
    workload=workload(AGENT_WORKLOAD),
    engine=engine_profile(DEFAULT_ENGINE),
    costs=cost_profile(AGENT_COSTS),
)
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def run(
    agents: int,
    policy: str,
    jct: list[float],
    *,
    mode: str = "ws-append",
    calls: int | None = None,
    repeat: int = 0,
    peak: float = 0.5,
    **fields: Any,
) -> dict[str, Any]:
    """A run as run_config returns it, with the fields the report reads."""
    return {
        "agents": agents,
        "mode": mode,
        "kv_policy": policy,
        "repeat": repeat,
        "calls": calls,
        "completed": len(jct),
        "failed": [],
        "jct_s": sorted(jct),
        "jct_mean_s": statistics.fmean(jct),
        "rollouts_per_hour": 100.0,
        "decode_tokens_per_s": 10.0,
        "queue_s_per_request": 0.5,
        "kv_peak_fraction": peak,
        "kv_held_peak_fraction": 0.0,
        "recomputed_tokens": 0,
        "preemptions": 0,
        "cpu_s": 1.0,
        "series": [[0.0, 0.0, 0.0, 0, 0], [1.0, peak, 0.1, agents, 1]],
        **fields,
    }


def fleet_sizes(*calls: int | None) -> list[dict[str, Any]]:
    """Evict and pin at 4 agents (memory ample: they agree) and 8 and 16 (memory full: pin
    twice as fast), for each value of calls."""
    runs = []
    for c in calls:
        runs += [run(4, "evict", [10.0, 12.0], calls=c), run(4, "pin", [10.0, 12.22], calls=c)]
        for n in (8, 16):
            runs += [run(n, "evict", [40.0], calls=c, peak=0.97), run(n, "pin", [20.0], calls=c)]
    return runs


def test_summaries_take_medians_spreads_and_pooled_percentiles() -> None:
    runs = [
        run(4, "evict", [10.0, 20.0], repeat=0, rollouts_per_hour=100.0),
        run(4, "evict", [50.0, 60.0], repeat=1, rollouts_per_hour=300.0, failed=["agent 1"]),
        run(4, "evict", [30.0, 40.0], repeat=2, rollouts_per_hour=200.0),
        run(2, "pin", [5.0]),
    ]
    rows = report.summaries(runs)
    assert [(r["agents"], r["kv_policy"]) for r in rows] == [(2, "pin"), (4, "evict")]
    row = rows[1]
    assert row["repeats"] == 3 and row["calls"] is None
    assert row["jct_mean_s"] == 35.0  # the median of the repeats' means 15, 55, 35
    assert (row["jct_mean_min_s"], row["jct_mean_max_s"]) == (15.0, 55.0)
    # Percentiles of the six rollouts pooled, not of the means.
    assert row["jct_p10_s"] == pytest.approx(15.0)
    assert row["jct_p90_s"] == pytest.approx(55.0)
    assert row["jct_p95_s"] == pytest.approx(57.5)
    assert row["rollouts_per_hour"] == 200.0
    assert (row["completed"], row["failed"]) == (6, 1)
    assert quantile([], 0.5) != quantile([], 0.5)  # NaN
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0


def test_gains_are_evict_over_the_policy_with_the_repeats_spread() -> None:
    runs = [run(8, "evict", [m], repeat=i, peak=0.99) for i, m in enumerate((15.0, 35.0, 55.0))]
    runs += [run(8, "pin", [m], repeat=i) for i, m in enumerate((10.0, 20.0, 30.0))]
    runs += [run(8, "ttl", [35.0], mode="ws-chain")]  # no evict in its mode: no gain
    [gain] = report.gains(report.summaries(runs))
    assert (gain["agents"], gain["kv_policy"], gain["repeats"]) == (8, "pin", 3)
    assert gain["lower_jct"] == pytest.approx(35.0 / 20.0)
    assert gain["lower_jct_min"] == pytest.approx(15.0 / 30.0)
    assert gain["lower_jct_max"] == pytest.approx(55.0 / 10.0)
    assert gain["pressure"] is True
    lines = report.verdicts(report.summaries(runs))
    assert "ws-append, 8 agents (memory full): pin 1.75x lower mean JCT than evict " in lines[-1]
    assert lines[-1].endswith("(0.50-5.50x over the repeats)")


def test_verdicts_knee_agreement_and_gain_only_under_pressure() -> None:
    lines = report.verdicts(report.summaries(fleet_sizes(None)))
    assert lines[0] == "ws-append: KV memory full from 8 agents (peak 50% at 4)"
    assert "ws-append, 4 agents (ample memory): policies agree within 1.0%" in lines
    lower = [line for line in lines if "lower mean JCT than evict" in line]
    assert lower == [
        "ws-append, 8 agents (memory full): pin 2.00x lower mean JCT than evict",
        "ws-append, 16 agents (memory full): pin 2.00x lower mean JCT than evict",
    ]
    roomy = [run(4, "evict", [10.0]), run(4, "pin", [5.0])]
    lines = report.verdicts(report.summaries(roomy))
    assert lines == [
        "ws-append: KV memory full at none of these counts (peak 50% at 4)",
        "ws-append, 4 agents (ample memory): policies differ by 100.0%",
    ]


@pytest.mark.parametrize(
    ("pins", "trend"),
    [
        ((20.0, 10.0, 5.0), "grows"),
        ((5.0, 10.0, 20.0), "shrinks"),
        ((10.0, 5.0, 10.0), "does not grow"),
    ],
)
def test_turns_trend(pins: tuple[float, ...], trend: str) -> None:
    runs = []
    for calls, pin in zip((10, 20, 40), pins, strict=True):
        runs += [run(8, "evict", [40.0], calls=calls, peak=1.0), run(8, "pin", [pin], calls=calls)]
    [line] = report.turns_trend(report.summaries(runs))
    figures = "/".join(f"{40.0 / p:.2f}x" for p in pins)
    assert line == (
        f"ws-append, 8 agents: pin's gain over evict at 10/20/40 tool calls: {figures} "
        f"({trend} with turns)"
    )
    assert report.turns_trend(report.summaries(runs[:2])) == []  # one value of calls: no trend


def test_base_calls_is_the_draw_when_run_else_the_fewest_calls() -> None:
    assert base_calls([]) is None
    assert base_calls([{"calls": 5}, {"calls": None}]) is None
    assert base_calls([{"calls": 20}, {"calls": 5}, {"calls": 10}]) == 5


def test_only_calls_rows_still_give_the_knee_and_the_trace() -> None:
    """(Regression: both used to look for the calls=None rows only.)"""
    runs = fleet_sizes(5, 10)
    lines = report.verdicts(report.summaries(runs))
    assert lines[0] == "ws-append, 5 tool calls: KV memory full from 8 agents (peak 50% at 4)"
    trace = report.engine_trace(runs)
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"]
    assert names == [
        "16 agents ws-append evict (simulated time)",
        "16 agents ws-append pin (simulated time)",
    ]
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert len(counters) == 2 * 2 * 2  # two runs, two points, two tracks
    assert report.engine_trace([]) == {"traceEvents": []}


def test_configs_repeats_outermost_largest_fleets_first() -> None:
    sweep = Sweep(
        workload=SWEEP.workload,
        engine=SWEEP.engine,
        costs=SWEEP.costs,
        agents=(2, 8, 4),
        modes=("ws-append", "ws-chain"),
        policies=("evict", "pin"),
        calls=(2, 3),
        repeats=2,
    )
    configs = sweep.configs()
    assert len(configs) == 2 * 3 * 2 * 2 * 2
    assert [c.repeat for c in configs] == [0] * 24 + [1] * 24
    assert [c.agents for c in configs[:24:8]] == [8, 4, 2]
    every = {(m, p, c) for m in sweep.modes for p in sweep.policies for c in sweep.calls}
    for start in range(0, 48, 8):
        block = configs[start : start + 8]
        assert len({c.agents for c in block}) == 1
        assert {(c.mode, c.kv_policy, c.calls) for c in block} == every
    assert Config(3, "ws-append", "pin", calls=2).label == "3 agents ws-append pin 2 calls"


def test_parse_counts() -> None:
    assert parse_counts("8,8,2") == (8, 2)
    assert parse_counts(" 4, 1 ,") == (4, 1)
    for bad, message in (("0", ">= 1"), ("", ">= 1"), ("x", "not 'x'"), ("5000", "at most 4096")):
        with pytest.raises(ValueError, match=message):
            parse_counts(bad)


def test_unfinished_names_why_a_rollout_stopped_short() -> None:
    def result(status: str, calls: int, reason: str | None = None) -> AgentResult:
        last = Turn("resp_1", [], [], "", status, None, 0, 0.0, reason)
        return AgentResult("ws-append", "", [("shell", "{}")] * calls, [last], 0.0, 0.0, 0, 0, [])

    assert unfinished(result("completed", 2), 2) is None
    assert unfinished(result("completed", 1), 2) == "completed after 1 of 2 tool calls"
    problem = unfinished(result("incomplete", 1, "max_output_tokens"), 2)
    assert problem == "response resp_1 ended incomplete (max_output_tokens) after 1 of 2 tool calls"


@pytest.fixture(scope="module")
def real_runs() -> list[dict[str, Any]]:
    """Tiny real runs: 3 agents evict (twice), 3 agents pin, 2 agents evict and pin, 2 calls."""
    configs = [
        Config(3, "ws-append", "evict", calls=2),
        Config(3, "ws-append", "evict", calls=2),
        Config(3, "ws-append", "pin", calls=2),
        Config(2, "ws-append", "evict", calls=2),
        Config(2, "ws-append", "pin", calls=2),
    ]
    return [run_config(SWEEP, c) for c in configs]


def test_a_tiny_fleet_runs_to_the_end_on_the_virtual_clock(
    real_runs: list[dict[str, Any]],
) -> None:
    row, again, pin = real_runs[:3]
    assert (row["agents"], row["mode"], row["kv_policy"], row["calls"]) == (
        3,
        "ws-append",
        "evict",
        2,
    )
    assert row["completed"] == 3 and row["failed"] == []
    assert row["jct_s"] == sorted(row["jct_s"]) and all(x > 0 for x in row["jct_s"])
    assert all(field in row for field in REQUIRED)
    assert row["turns_mean"] == 3.0  # two tool calls, then the answer
    assert row["rollouts_per_hour"] > 0 and 0 < row["kv_peak_fraction"] < 1
    assert row["series"] and row["engine"]["admitted"] >= 9
    # The virtual clock: the same run gives the same simulated times.
    assert again["jct_mean_s"] == pytest.approx(row["jct_mean_s"], rel=0.01)
    # Memory ample: keeping paused rollouts' KV changes nothing much.
    assert pin["completed"] == 3 and pin["failed"] == []
    assert pin["jct_mean_s"] == pytest.approx(row["jct_mean_s"], rel=0.05)


def test_write_and_replot(tmp_path: Path, real_runs: list[dict[str, Any]]) -> None:
    runs = [real_runs[0], *real_runs[2:]]
    written = report.write(tmp_path, SWEEP, runs, origin={"command": "test"})
    data = orjson.loads((tmp_path / "agents.json").read_bytes())
    assert len(data["rows"]) == 4 and len(data["runs"]) == 4
    for row in data["rows"]:
        assert all(field in row for field in REQUIRED), row
    assert data["engine_profile"]["name"] == DEFAULT_ENGINE and data["engine_profile"]["derived"]
    assert "virtual clock" in data["simulated"] and data["command"] == "test"
    trace = orjson.loads((tmp_path / "engine-trace.json").read_bytes())
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"KV blocks", "sequences"}
    assert {e["pid"] for e in counters} == {0, 1}  # the 3-agent runs, evict and pin
    assert written[:2] == [tmp_path / "agents.json", tmp_path / "engine-trace.json"]
    if not HAS_MATPLOTLIB:
        assert written[2:] == []
        return
    figures = [tmp_path / "jct-agents.png", tmp_path / "kv-occupancy.png"]
    assert written[2:] == figures
    for figure in figures:
        figure.unlink()
    assert report.replot(tmp_path) == figures
    assert all(f.stat().st_size > 0 for f in figures)
