"""`rollout compare`: aggregation, overhead marks, and one small end-to-end run of every mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import attrs
import orjson
import pytest
import trio

from rollout.cli import main
from rollout.client import MODES, ONE_RESPONSE
from rollout.experiments.harness.compare import (
    Experiment,
    provenance,
    summarize,
    turn_overheads,
    write_results,
)
from rollout.experiments.harness.procs import ChildError
from rollout.experiments.workloads.catalog import WORKLOADS
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES
from support.compare import run_result as result


def test_summary_takes_medians_and_ratios() -> None:
    runs = [result("http-full", s) for s in (1.0, 2.0, 3.0)] + [
        result("ws-append", s) for s in (0.5, 0.6, 0.7)
    ]
    by_mode = {s.mode: s for s in summarize(runs)}
    assert by_mode["http-full"].seconds == 2.0
    assert (by_mode["http-full"].seconds_min, by_mode["http-full"].seconds_max) == (1.0, 3.0)
    assert by_mode["ws-append"].vs_http_full == pytest.approx(0.3)
    assert by_mode["ws-append"].vs_ideal == pytest.approx(0.6 / 0.5)
    assert by_mode["ws-append"].ttft_s == pytest.approx(0.25)
    assert by_mode["ws-append"].bytes_per_turn == 200
    assert all(s.same_output for s in by_mode.values())


def test_summary_flags_a_mode_whose_rollout_differs() -> None:
    runs = [result("http-full", 1.0), result("ws-chain", 1.0, text="other")]
    flags = {s.mode: s.same_output for s in summarize(runs)}
    assert flags == {"http-full": True, "ws-chain": False}


def test_turn_overheads_from_marks() -> None:
    marks = [
        ("received", 0.0),
        ("first_token", 0.010),
        ("sampled", 0.500),
        ("terminal", 0.502),
        ("received", 1.0),
        ("received", 1.1),  # a second partial append: overhead counts from the last
        ("first_token", 1.103),
        ("sampled", 1.4),
        ("paused", 1.401),
    ]
    assert turn_overheads(marks) == pytest.approx([0.012, 0.004])


async def test_every_mode_replays_the_same_rollout(tmp_path: Path) -> None:
    scenario = attrs.evolve(WORKLOADS["coding-agent"], tool_calls=(3, 3)).build(0)
    experiment = Experiment(
        scenario=scenario,
        profiles=[INFERENCE_PROFILES["instant"]],
        costs=COST_PROFILES["cpu-only"],
        repeats=1,
    )
    seen: list[str] = []
    results = await experiment.run(lambda r: seen.append(r.mode))
    assert sorted(seen) == sorted(MODES)
    assert len({(r.text, tuple(r.calls)) for r in results}) == 1
    assert len(results[0].calls) == 3
    by_mode = {r.mode: r for r in results}
    for mode, r in by_mode.items():
        assert r.turns == 4
        assert r.counts["routing"]["calls"] == (4 if mode in ("http-full", "http-chain") else 1)
        assert r.billed == (1 if mode in ONE_RESPONSE else 4)
        assert r.bytes_sent > 0 and r.bytes_received > 0
        assert len(turn_overheads(r.marks)) == 4
    # Without the cache, the history is scanned again every turn.
    full, append = by_mode["http-full"], by_mode["ws-append"]
    assert full.counts["scan"]["tokens"] > 2 * append.counts["scan"]["tokens"]
    assert by_mode["ws-chain"].counts["scan"]["tokens"] == append.counts["scan"]["tokens"]
    summaries = summarize(results)
    written = write_results(tmp_path, experiment, results, summaries)
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    assert {s["mode"] for s in data["summary"]} == set(MODES)
    assert data["cost_profile"]["name"] == "cpu-only"
    trace = orjson.loads((tmp_path / "trace-ws-append.json").read_bytes())
    assert {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"} >= {"turn", "inference"}
    assert tmp_path / "results.json" in written


def test_cli_compare_quick_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "compare",
            "--profiles",
            "instant",
            "--calls",
            "1",
            "--repeats",
            "1",
            "--modes",
            "http-full,ws-append",
            "--costs",
            "cpu-only",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "ws-append" in out and "costs cpu-only" in out
    assert "verdict" in out and "ws-append: " in out
    first = (tmp_path / "latest").resolve()
    data = orjson.loads((first / "results.json").read_bytes())
    assert data["command"].startswith("rollout ") or data["command"] is None
    assert data["modes"] == ["http-full", "ws-append"]
    # A second run gets a directory of its own; `latest` moves to it and the first stays.
    assert (
        main(
            [
                "compare",
                "--profiles",
                "instant",
                "--calls",
                "1",
                "--repeats",
                "1",
                "--modes",
                "ws-append",
                "--jobs",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    second = (tmp_path / "latest").resolve()
    assert second != first and (first / "results.json").exists()
    assert (second / "results.json").exists()
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and not p.is_symlink())
    assert len(runs) == 2


def test_the_schedule_interleaves_modes_and_rotates_their_order() -> None:
    scenario = attrs.evolve(WORKLOADS["chat"], tool_calls=(1, 1)).build(0)
    profiles = [INFERENCE_PROFILES["1000tps"], INFERENCE_PROFILES["4000tps"]]
    experiment = Experiment(
        scenario=scenario,
        profiles=profiles,
        costs=COST_PROFILES["service"],
        modes=["http-full", "ws-chain", "ws-append"],
        repeats=3,
    )
    order = [(j.repeat, j.profile.name, j.mode) for j in experiment.schedule()]
    assert len(order) == experiment.total == 18
    firsts = [mode for repeat, profile, mode in order if profile == "1000tps"][::3]
    assert firsts == ["http-full", "ws-chain", "ws-append"]
    # Each repeat holds every mode of every profile before the next repeat starts.
    assert [r for r, _, _ in order] == [0] * 6 + [1] * 6 + [2] * 6


def test_workers_run_the_same_rollouts_as_this_process() -> None:
    """Two worker processes (rollout compare's --jobs 2) give what a run in this process
    gives: the same rollout, work counters, marks and trace, in the schedule's order."""
    scenario = attrs.evolve(WORKLOADS["coding-agent"], tool_calls=(2, 2)).build(0)
    common = dict(
        scenario=scenario,
        profiles=[INFERENCE_PROFILES["instant"]],
        costs=COST_PROFILES["cpu-only"],
        modes=["http-full", "ws-chain", "ws-append"],
        repeats=2,
    )
    here = trio.run(Experiment(**common).run)
    there = trio.run(Experiment(**common, jobs=2).run)
    assert [(r.mode, r.repeat) for r in there] == [(r.mode, r.repeat) for r in here]
    for a, b in zip(here, there, strict=True):
        assert (a.text, a.calls, a.turns) == (b.text, b.calls, b.turns)
        assert a.counts["scan"]["tokens"] == b.counts["scan"]["tokens"]
        assert [name for name, _ in a.marks] == [name for name, _ in b.marks]
        assert b.trace and all(isinstance(at, float) for _, at in b.marks)


def test_a_worker_that_fails_is_a_child_error_with_its_stderr() -> None:
    scenario = attrs.evolve(WORKLOADS["chat"], tool_calls=(1, 1)).build(0)
    experiment = Experiment(
        scenario=scenario,
        profiles=[INFERENCE_PROFILES["instant"]],
        costs=COST_PROFILES["cpu-only"],
        modes=["ws-telepathy"],  # the worker's warm-up fails on it
        repeats=1,
        jobs=1,
    )
    with pytest.raises(ChildError, match="ws-telepathy"):
        trio.run(experiment.run)


def test_a_summary_without_http_full_has_no_ratio_to_it() -> None:
    summary = summarize([result("ws-chain", 1.0), result("ws-append", 0.9)])
    assert {s.mode: s.vs_http_full for s in summary} == {"ws-chain": None, "ws-append": None}


@pytest.mark.parametrize(
    "args",
    [
        ["--modes", "ws-telepathy"],
        ["--profiles", "9000tps"],
        ["--repeats", "0"],
        ["--costs", "nope"],
        ["--workload", "nope"],
        ["--jobs", "0"],
        ["--per-turn", "--jobs", "2"],
    ],
)
def test_cli_compare_refuses_bad_flags(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *args]) == 2
    assert "rollout compare:" in capsys.readouterr().err


async def test_the_steering_scenario_times_steer_to_first_token() -> None:
    scenario = attrs.evolve(WORKLOADS["coding-agent"], tool_calls=(2, 2)).build(0)
    experiment = Experiment(
        scenario=scenario,
        profiles=[INFERENCE_PROFILES["instant"]],
        costs=COST_PROFILES["cpu-only"],
        modes=["ws-chain", "ws-steer"],
        repeats=1,
    )
    results = await experiment.run()
    by_mode = {r.mode: r for r in results}
    steer = by_mode["ws-steer"]
    assert steer.steer_s is not None and steer.steer_s > 0
    assert by_mode["ws-chain"].steer_s is None
    # The steering input joins the rollout once, in the response that takes it.
    assert steer.counts["scan"]["tokens"] > by_mode["ws-chain"].counts["scan"]["tokens"]
    summary = {s.mode: s for s in summarize(results)}
    assert summary["ws-steer"].steer_s == steer.steer_s


def test_an_interrupted_compare_says_so_and_leaves_no_worker(tmp_path: Path) -> None:
    """Ctrl-C during the runs: one line, exit 128 + SIGINT, nothing written, no worker left."""
    args = ["compare", "--profiles", "1000tps", "--repeats", "1", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: the signal reaches it and its workers only
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while line and not line.startswith("costs"):  # the header's last line: the runs start
        line = proc.stdout.readline()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, (out, err)
    assert "rollout compare: interrupted" in err
    assert "Traceback" not in err
    assert not (tmp_path / "latest").exists()
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_provenance_names_the_checkout_the_package_came_from() -> None:
    """The commit of the checkout `rollout` was imported from, `-dirty` with uncommitted
    changes; None when the package is installed outside a checkout (pip install .)."""
    import rollout

    origin = provenance("rollout compare")
    assert origin["command"] == "rollout compare" and origin["created"].endswith("Z")
    root = Path(rollout.__file__).resolve().parents[1]
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True
    )
    if head.returncode != 0:
        assert origin["commit"] is None
        return
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    dirty = "-dirty" if status.stdout.strip() else ""
    assert origin["commit"] == head.stdout.strip() + dirty
