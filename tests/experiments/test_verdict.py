"""The verdict lines of `rollout compare`: a difference only where the modes' spreads are apart."""

from __future__ import annotations

from collections.abc import Sequence

from rollout.experiments.harness.verdict import compare, verdicts
from rollout.experiments.results import RunResult
from support.compare import run_result


def _runs(mode: str, seconds: Sequence[float], profile: str = "1000tps") -> list[RunResult]:
    return [run_result(mode, s, profile=profile, repeat=i) for i, s in enumerate(seconds)]


def test_a_difference_is_called_when_the_spreads_are_apart() -> None:
    runs = _runs("http-full", [10.0, 10.2, 10.1]) + _runs("ws-append", [9.0, 9.1, 9.05])
    found = compare(runs, "ws-append", "http-full")
    assert found is not None and found.apart
    assert found.runs == 3
    assert found.ratio == 9.05 / 10.1
    # Each repeat against the same repeat of the baseline: 9.0/10.0, 9.1/10.2, 9.05/10.1.
    assert (found.low, found.high) == (9.1 / 10.2, 9.0 / 10.0)
    assert found.line() == (
        "1000tps ws-append: 10.4% less time end to end than http-full (spread 10.0-10.8%, 3 runs)"
    )


def test_overlapping_spreads_are_no_difference() -> None:
    runs = _runs("http-full", [10.0, 10.4, 10.1]) + _runs("ws-full", [10.3, 9.9, 10.2])
    found = compare(runs, "ws-full", "http-full")
    assert found is not None and not found.apart
    assert "no difference from http-full within the spread" in found.line()
    assert "3 runs" in found.line()


def test_a_slower_mode_is_more_time() -> None:
    runs = _runs("http-full", [10.0, 10.1]) + _runs("http-chain", [11.0, 11.2])
    found = compare(runs, "http-chain", "http-full")
    assert found is not None and found.apart
    assert "more time end to end than http-full" in found.line()


def test_one_run_has_no_spread_to_judge_by() -> None:
    runs = _runs("http-full", [10.0]) + _runs("ws-append", [9.0])
    found = compare(runs, "ws-append", "http-full")
    assert found is not None
    assert "1 run: no spread" in found.line()


def test_verdicts_per_profile_against_the_baseline_and_chain_against_append() -> None:
    runs = []
    for profile in ("1000tps", "4000tps"):
        runs += _runs("http-full", [10.0, 10.1, 10.2], profile)
        runs += _runs("ws-chain", [9.5, 9.6, 9.55], profile)
        runs += _runs("ws-append", [9.0, 9.1, 9.05], profile)
        runs += _runs("ws-steer", [9.0, 9.1, 9.05], profile)
    found = verdicts(runs, ["http-full", "ws-chain", "ws-append", "ws-steer"])
    pairs = [(v.profile, v.mode, v.against) for v in found]
    assert pairs == [
        ("1000tps", "ws-chain", "http-full"),
        ("1000tps", "ws-append", "http-full"),
        ("1000tps", "ws-chain", "ws-append"),
        ("4000tps", "ws-chain", "http-full"),
        ("4000tps", "ws-append", "http-full"),
        ("4000tps", "ws-chain", "ws-append"),
    ]


def test_no_baseline_no_baseline_lines() -> None:
    runs = _runs("ws-chain", [9.5, 9.6]) + _runs("ws-append", [9.0, 9.1])
    found = verdicts(runs, ["ws-chain", "ws-append"])
    assert [(v.mode, v.against) for v in found] == [("ws-chain", "ws-append")]
