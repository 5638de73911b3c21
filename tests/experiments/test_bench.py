"""`rollout bench` output: one parseable line per figure."""

from __future__ import annotations

import pytest

from rollout.cli import main
from rollout.experiments.bench import BENCHES, Figure


def test_figure_lines_are_stable_and_parseable() -> None:
    lines = [
        Figure("events_per_second.ratio", 0.91234, "x", ">=0.8", True).line(),
        Figure("memory.rss_with_suspended_rollouts", 312.5, "MB", "<=300", False).line(),
        Figure("first_token.raw_round_trip", 0.25, "ms").line(),
    ]
    assert lines == [
        "events_per_second.ratio 0.9123 x >=0.8 pass",
        "memory.rss_with_suspended_rollouts 312.5 MB <=300 fail",
        "first_token.raw_round_trip 0.25 ms - info",
    ]
    for line in lines:
        assert len(line.split()) == 5


def test_cli_bench_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "nope"]) == 2
    assert "overhead" in capsys.readouterr().err
    assert set(BENCHES) == {"overhead", "events", "memory", "first-token", "ideal"}


def test_cli_bench_reports_a_server_that_did_not_start(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rollout.experiments.bench._MEMORY_SERVER", "raise SystemExit('broken')")
    assert main(["bench", "memory"]) == 2
    err = capsys.readouterr().err
    assert "rollout bench: the server process did not start: broken" in err
    assert "Traceback" not in err
