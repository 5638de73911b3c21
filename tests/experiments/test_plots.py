"""The figures of `rollout compare` (the `plot` extra): the end-to-end phases add up to the
rollout's time over its ideal, every figure is written, and --replot draws a run's figures again
from its results.json alone."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rollout.cli import main
from rollout.experiments.figures.plots import (
    agent_plot,
    chain_plot,
    end_to_end,
    overhead_per_turn,
    per_turn,
    phases,
)
from rollout.experiments.harness.cli import load_runs
from rollout.experiments.harness.results import CodexRun, Point, RunResult
from support.compare import run_result as result


def runs() -> list[RunResult]:
    modes = ("http-full", "ws-chain")
    return [
        result(m, 0.6 + 0.01 * k + 0.05 * (m == "http-full"), profile=p, repeat=k)
        for p in ("1000tps", "4000tps")
        for k in range(3)
        for m in modes
    ]


def test_phases_add_up_to_end_to_end_over_ideal() -> None:
    r = result("ws-chain", 0.6)
    assert phases(r) == pytest.approx((0.8, 0.2, 0.2))  # inference 0.4, client 0.1, ideal 0.5
    assert sum(phases(r)) == pytest.approx(r.seconds / r.ideal_s)


def test_every_figure_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rs = runs()
    assert end_to_end(tmp_path / "e.png", rs, ["http-full", "ws-chain"], "t") is not None
    assert overhead_per_turn(tmp_path / "o.png", rs, ["http-full", "ws-chain"], "4000tps")
    series = {"ws-chain": [(1_000, [0.01, 0.02], [0.005, 0.006]), (9_000, [0.02], [0.007])]}
    assert per_turn(tmp_path / "p.png", series, "t")
    point = Point("1000tps", 8, "ws-chain", [0.2, 0.21], [0.3, 0.31], [0.05, 0.06])
    assert chain_plot(tmp_path / "c.png", [point], ["ws-chain"], "t")
    run = CodexRun("ws", 0, 2.0, 4, 0.8, 0.9, 1.5, 3, 0, "done")
    assert agent_plot(tmp_path / "a.png", [run])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.png",
        "c.png",
        "e.png",
        "o.png",
        "p.png",
    ]


def test_replot_draws_a_runs_figures_from_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    data = {"workload": {"name": "coding-agent"}, "runs": [r.to_json() for r in runs()]}
    (tmp_path / "results.json").write_bytes(orjson.dumps(data))
    assert main(["compare", "--replot", str(tmp_path)]) == 0
    assert (tmp_path / "end-to-end.png").exists() and (tmp_path / "overhead-per-turn.png").exists()
    _, loaded = load_runs(tmp_path)
    assert [(r.mode, r.profile, r.seconds) for r in loaded] == [
        (r.mode, r.profile, r.seconds) for r in runs()
    ]
    (tmp_path / "results.json").write_text("{}")
    assert main(["compare", "--replot", str(tmp_path)]) == 2
    assert "not what a compare run writes" in capsys.readouterr().err


def test_replot_draws_the_codex_figure_from_codex_json(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from rollout.experiments.sweeps import codex

    run = CodexRun("http", 0, 2.2, 4, 0.85, 0.95, 1.4, 3, 0, "three files")
    codex.write(tmp_path, [run], {"agent": "codex"})
    (tmp_path / "codex.png").unlink()
    assert main(["compare", "--replot", str(tmp_path)]) == 0
    assert (tmp_path / "codex.png").exists()
    data = orjson.loads((tmp_path / "codex.json").read_bytes())
    assert data["agent"] == "codex" and data["runs"][0]["turns"] == 4
