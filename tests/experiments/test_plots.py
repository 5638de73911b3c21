"""The figures of `rollout compare` (the `plot` extra): stacked bars from 0 in seconds whose
phases add up to the median end-to-end time, labelled with the ratio to http-full's; a panel per
mode (and profile) against the history length, with http-full as the reference in the others;
no y axis shared across profiles; every legend outside every axes; the caption in every title;
every figure is written; and --replot draws a run's figures again from its results.json alone."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from rollout.cli import main
from rollout.experiments.figures.plots import (
    agent_figure,
    agent_plot,
    chain_figure,
    chain_plot,
    compare_plots,
    end_to_end_figure,
    overhead_per_turn_figure,
    per_turn,
    per_turn_figure,
    phases,
)
from rollout.experiments.figures.sweeps import Series
from rollout.experiments.harness.compare import load_runs
from rollout.experiments.results import CodexRun, Point, RunResult
from support.compare import run_result as result

MODES = ["http-full", "ws-chain", "ws-append"]
PROFILES = ("1000tps", "4000tps")


def runs(turns: int = 5) -> list[RunResult]:
    """3 repeats of MODES at PROFILES; 4000tps about 10x faster; the history grows by 10k
    tokens a turn and http-full's API work per turn with it."""
    out = []
    for p, scale in zip(PROFILES, (10.0, 1.0), strict=True):
        for k in range(3):
            for m in MODES:
                full = m == "http-full"
                out.append(
                    result(
                        m,
                        scale * (0.6 + 0.01 * k + 0.05 * full),
                        profile=p,
                        repeat=k,
                        inference_s=scale * 0.4,
                        turns=turns,
                        turn_s=[0.1 + 0.01 * (1 + 4 * full) * i + 0.001 * k for i in range(turns)],
                        step_prompt=[1_000 + 10_000 * i for i in range(turns)],
                        step_ideal_s=[0.1] * turns,
                    )
                )
    return out


@pytest.fixture
def plt() -> Iterator[Any]:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def legends_outside(fig: Any) -> int:
    """How many legends the figure has, asserting that each lies in the figure and outside
    every axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    for legend in found:
        box = legend.get_window_extent(renderer)
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_title()
    return len(found)


def texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def bars(ax: Any) -> list[Any]:
    """The axes' bars (Rectangles), by x then by height above 0."""
    return sorted(ax.patches, key=lambda b: (b.get_x(), b.get_y()))


def ydata(ax: Any, line: int = 0) -> list[float]:
    return [float(v) for v in ax.lines[line].get_ydata()]


def test_phases_add_up_to_the_median_end_to_end() -> None:
    mine = [result("ws-chain", s) for s in (0.6, 0.7, 0.65)]  # inference 0.4 s, client 0.1 s
    assert phases(mine) == pytest.approx((0.4, 0.1, 0.15))
    assert sum(phases(mine)) == pytest.approx(statistics.median(r.seconds for r in mine))


def test_end_to_end_stacks_seconds_from_zero_with_the_ratio_to_http_full(plt: Any) -> None:
    rs = runs()
    fig = end_to_end_figure(rs, MODES, "coding-agent, costs service, 3 repeats")
    assert "coding-agent, costs service, 3 repeats" in fig.get_suptitle()
    top, low = fig.axes[0], fig.axes[2]  # the first profile's column: phases, API work alone
    assert len(fig.axes) == 2 * len(PROFILES)
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0
    # Three phases per mode, stacked: their tops are the median end-to-end, in seconds.
    stacked = bars(top)
    assert len(stacked) == 3 * len(MODES)
    for x, mode in enumerate(MODES):
        stack = stacked[3 * x : 3 * x + 3]
        assert stack[0].get_y() == 0
        for below, above in itertools.pairwise(stack):
            assert above.get_y() == pytest.approx(below.get_y() + below.get_height())
        mine = [r.seconds for r in rs if r.mode == mode and r.profile == "1000tps"]
        assert stack[-1].get_y() + stack[-1].get_height() == pytest.approx(statistics.median(mine))
    base = statistics.median(
        r.seconds for r in rs if r.mode == "http-full" and r.profile == "1000tps"
    )
    chain = statistics.median(
        r.seconds for r in rs if r.mode == "ws-chain" and r.profile == "1000tps"
    )
    assert any("1.000\N{MULTIPLICATION SIGN}" in t for t in texts(top))
    assert any(f"{chain / base:.3f}\N{MULTIPLICATION SIGN}" in t for t in texts(top))
    assert any(f"{chain:.2f} s" in t for t in texts(top))
    assert [b.get_height() for b in bars(low)] == pytest.approx(
        [
            statistics.median(r.overhead_s for r in rs if r.mode == m and r.profile == "1000tps")
            for m in MODES
        ]
    )
    # Profiles differ in scale: each keeps its own y axis.
    assert not top.get_shared_y_axes().joined(top, fig.axes[1])
    assert fig.axes[1].get_ylim()[1] < top.get_ylim()[1] / 5
    assert legends_outside(fig) == 1


def test_without_http_full_there_is_no_ratio(plt: Any) -> None:
    rs = [r for r in runs() if r.mode != "http-full"]
    fig = end_to_end_figure(rs, MODES, "c")
    assert not any("\N{MULTIPLICATION SIGN}" in t for ax in fig.axes for t in texts(ax))


def test_overhead_per_turn_is_a_panel_per_mode_and_profile(plt: Any) -> None:
    rs = runs()
    fig = overhead_per_turn_figure(rs, MODES, "coding-agent, costs service, 3 repeats")
    assert "coding-agent, costs service, 3 repeats" in fig.get_suptitle()
    assert len(fig.axes) == len(MODES) * len(PROFILES)
    for row, _profile in enumerate(PROFILES):
        panels = fig.axes[row * len(MODES) : (row + 1) * len(MODES)]
        for ax, mode in zip(panels, MODES, strict=True):
            assert ax.get_title().startswith(mode)
            # The mode's median, and http-full's faintly in every other panel.
            assert len(ax.lines) == (1 if mode == "http-full" else 2)
            assert shows_all_its_data(ax) and ax.get_xlim()[0] == 0
            assert ax.get_xlim()[1] >= 41_000  # the whole range of history lengths
        # A row (a profile) shares its y axis; rows do not.
        assert panels[0].get_shared_y_axes().joined(panels[0], panels[1])
    assert not fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[len(MODES)])
    # http-full's API work grows by 50 ms a turn (10k tokens), ws-chain's by 10 ms.
    ms = [round(v) for v in ydata(fig.axes[0])]
    assert ms == [1, 51, 101, 151, 201]
    assert "fit 51 → 201 ms" in fig.axes[0].get_title()
    assert "fit 11 → 41 ms" in fig.axes[1].get_title()
    assert legends_outside(fig) == 1


def series() -> Series:
    """Two modes over 4 turns from 1k tokens, 2 repeats: http-full's CPU grows with the history;
    ws-chain's wall time is the higher (50-52 ms a turn)."""
    return {
        mode: [
            (1_000 + 30_000 * i, [wall + grow * i, wall + 0.002 + grow * i], [0.005 + grow * i] * 2)
            for i in range(4)
        ]
        for mode, grow, wall in (("http-full", 0.01, 0.01), ("ws-chain", 0.0, 0.05))
    }


def shows_all_its_data(ax: Any) -> bool:
    """Whether the axes' y range holds every line and band drawn in it, from 0."""
    low, high = ax.get_ylim()
    tops = [max(ydata(ax, i)) for i in range(len(ax.lines))]
    tops += [float(c.get_paths()[0].vertices[:, 1].max()) for c in ax.collections if c.get_paths()]
    return low == 0 and all(top <= high for top in tops)


def test_per_turn_sweep_is_a_panel_per_mode_for_wall_time_and_cpu(plt: Any) -> None:
    fig = per_turn_figure(series(), "history-sweep, instant, costs cpu-only, 2 repeats")
    assert "history-sweep, instant, costs cpu-only, 2 repeats" in fig.get_suptitle()
    assert len(fig.axes) == 4  # 2 rows (wall, CPU) x 2 modes
    wall_full, wall_chain, cpu_full, cpu_chain = fig.axes
    assert wall_full.get_title().startswith("http-full")
    assert wall_chain.get_title().startswith("ws-chain")
    assert len(wall_chain.lines) == 2 and len(wall_full.lines) == 1
    assert ydata(cpu_full) == pytest.approx([5, 15, 25, 35])
    assert "fit 15.0 → 35.0 ms" in cpu_full.get_title()
    assert cpu_chain.get_title() == "fit 5.0 → 5.0 ms" and len(cpu_chain.lines) == 2
    for ax in fig.axes:
        assert shows_all_its_data(ax), ax.get_title()
        assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] >= 91_000
    assert wall_full.get_shared_y_axes().joined(wall_full, wall_chain)
    assert not wall_full.get_shared_y_axes().joined(wall_full, cpu_full)
    assert legends_outside(fig) == 1


def test_chain_plot_is_a_column_per_profile(plt: Any) -> None:
    points = [
        Point(p, n, m, [t * (1 + 0.5 * (p == "65tps"))] * 2, [0.3, 0.31], [0.05, 0.06])
        for p in ("65tps", "1000tps")
        for n in (8, 16)
        for m, t in (("http-chain", 0.2), ("ws-chain", 0.18))
    ]
    fig = chain_figure(points, ["http-chain", "ws-chain"], "coding-chain, costs service, 2 repeats")
    assert "coding-chain, costs service, 2 repeats" in fig.get_suptitle()
    assert len(fig.axes) == 4
    assert [fig.axes[0].get_title(), fig.axes[1].get_title()] == ["65tps", "1000tps"]
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0
    assert not fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])
    assert texts(fig.axes[0]) == ["-10.0%", "-10.0%"]  # ws-chain's TTFT against http-chain's
    assert legends_outside(fig) == 1


def test_agent_plot_stacks_ms_per_turn_from_zero(plt: Any) -> None:
    runs_ = [
        CodexRun("ws", 0, 2.0, 4, 0.8, 0.9, 1.5, 3, 0, "done"),
        CodexRun("http", 0, 2.4, 4, 0.8, 1.0, 1.6, 3, 0, "done"),
    ]
    fig = agent_figure(runs_, "list the files here, 1000tps, costs cpu-only, 1 repeat")
    assert "list the files here, 1000tps, costs cpu-only, 1 repeat" in fig.get_suptitle()
    (ax,) = fig.axes
    assert ax.get_ylim()[0] == 0
    ws = [b for b in bars(ax) if b.get_x() < 0.5]
    assert len(ws) == 4 and ws[0].get_y() == 0
    assert ws[-1].get_y() + ws[-1].get_height() == pytest.approx(500)  # 2.0 s / 4 turns
    assert [round(b.get_height()) for b in ws] == [200, 150, 25, 125]
    assert any("0.833\N{MULTIPLICATION SIGN}" in t for t in texts(ax))  # 500 / 600 ms
    assert legends_outside(fig) == 1


def test_every_figure_is_written(tmp_path: Path, plt: Any) -> None:
    rs = runs()
    written = compare_plots(tmp_path, rs, MODES, "t")
    assert [p.name for p in written] == ["end-to-end.png", "overhead-per-turn.png"]
    assert per_turn(tmp_path / "p.png", series(), "t")
    point = Point("1000tps", 8, "ws-chain", [0.2, 0.21], [0.3, 0.31], [0.05, 0.06])
    assert chain_plot(tmp_path / "c.png", [point], ["ws-chain"], "t")
    run = CodexRun("ws", 0, 2.0, 4, 0.8, 0.9, 1.5, 3, 0, "done")
    assert agent_plot(tmp_path / "a.png", [run])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["a.png", "c.png", "end-to-end.png", "overhead-per-turn.png", "p.png"]
    assert all(p.stat().st_size > 10_000 for p in tmp_path.iterdir())
    assert compare_plots(tmp_path, [], MODES, "t") == []


def test_replot_draws_a_runs_figures_from_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plt: Any
) -> None:
    data = {
        "workload": {"name": "coding-agent"},
        "cost_profile": {"name": "cpu-only"},
        "repeats": 2,
        "runs": [r.to_json() for r in runs()],
    }
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


def test_replot_draws_the_codex_figure_from_codex_json(tmp_path: Path, plt: Any) -> None:
    from rollout.experiments.sweeps import codex

    run = CodexRun("http", 0, 2.2, 4, 0.85, 0.95, 1.4, 3, 0, "three files")
    codex.write(tmp_path, [run], {"agent": "codex"})
    (tmp_path / "codex.png").unlink()
    assert main(["compare", "--replot", str(tmp_path)]) == 0
    assert (tmp_path / "codex.png").exists()
    data = orjson.loads((tmp_path / "codex.json").read_bytes())
    assert data["agent"] == "codex" and data["runs"][0]["turns"] == 4
