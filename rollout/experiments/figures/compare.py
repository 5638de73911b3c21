# The two figures of a `rollout compare` run, from its RunResults: end-to-end.png (each mode's
# end-to-end time in seconds from 0, stacked by phase, with its ratio to http-full's, and the API
# work alone beneath) and overhead-per-turn.png (each turn's API work against the history length,
# one panel per mode and profile, http-full faint in each as the reference).
from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rollout.experiments.figures.common import (
    API,
    CLIENT,
    INFERENCE,
    REFERENCE,
    REFERENCE_COLOR,
    band,
    figure,
    kilo_tokens,
    label_above,
    legend_below,
    mode_color,
    pyplot,
    reference_legend,
    save,
    spread,
    title,
    trend,
)
from rollout.experiments.results import RunResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def phases(runs: Sequence[RunResult]) -> tuple[float, float, float]:
    """The repeats' median inference and client tools, s, and the API work as the rest of their
    median end-to-end time, so that the three add up to it."""
    inference = statistics.median(r.inference_s for r in runs)
    client = statistics.median(r.client_s for r in runs)
    return inference, client, statistics.median(r.seconds for r in runs) - inference - client


def _s(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def end_to_end_figure(results: Sequence[RunResult], modes: Sequence[str], caption: str) -> Figure:
    """One column per profile (each its own y axis, from 0): above, each mode's end-to-end
    time stacked by phase, labelled with its median and its ratio to http-full's; below, the
    API work alone, labelled with its share of end-to-end. Bars are medians, whiskers the
    repeats' min-max."""
    profiles = list(dict.fromkeys(r.profile for r in results))
    most = max(len({r.mode for r in results if r.profile == p}) for p in profiles)
    fig, axes = figure(
        2, len(profiles), 0.62 * most + 1.0, 2.5, sharex="col", height_ratios=(1.5, 1.0)
    )
    for col, profile in enumerate(profiles):
        at = [r for r in results if r.profile == profile]
        _end_to_end_column(axes[0][col], axes[1][col], profile, at, modes)
    handles, labels = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    legend_below(fig, list(unique.values()), list(unique))
    has_ref = any(r.mode == REFERENCE for r in results)
    ratio = f", \N{MULTIPLICATION SIGN} its ratio to {REFERENCE}'s" if has_ref else ""
    title(
        fig,
        f"End-to-end time by phase, and the API work alone: {caption}",
        f"above: end-to-end, labelled with its median{ratio}; below: the API work, labelled "
        "with its share of end-to-end",
        "bars: medians of the repeats, whiskers: their min-max",
    )
    return fig


def _end_to_end_column(
    top: Axes, low: Axes, profile: str, results: Sequence[RunResult], modes: Sequence[str]
) -> None:
    """The profile's column of end_to_end_figure, from that profile's results."""
    shown = [m for m in modes if any(r.mode == m for r in results)]
    ref = [r.seconds for r in results if r.mode == REFERENCE]
    base = statistics.median(ref) if ref else None
    highest = api_highest = 0.0
    for x, mode in enumerate(shown):
        hi, api_hi = _end_to_end_bars(top, low, x, [r for r in results if r.mode == mode], base)
        highest = max(highest, hi)
        api_highest = max(api_highest, api_hi)
    top.set_ylim(0, highest * 1.22 or 1.0)
    low.set_ylim(0, api_highest * 1.4 or 1.0)
    top.set_title(profile, fontsize=10)
    low.set_xticks(range(len(shown)), shown, rotation=35, ha="right", fontsize=8)
    for ax in (top, low):
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    top.set_ylabel("end-to-end, s")
    low.set_ylabel("API work, s")


def _end_to_end_bars(
    top: Axes, low: Axes, x: int, runs: Sequence[RunResult], base: float | None
) -> tuple[float, float]:
    """One mode's bars at `x`: end-to-end stacked by phase above (the phases labelled in the
    first), the API work below; returns the tops of their whiskers and labels' anchors."""
    bottom = 0.0
    for value, (label, color) in zip(phases(runs), (INFERENCE, CLIENT, API), strict=True):
        top.bar(x, value, 0.7, bottom=bottom, color=color, label=label)
        if x == 0 and label != API[0] and value > 0.06 * sum(phases(runs)):
            top.annotate(
                _s(value),
                (x, bottom + value / 2),
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
        bottom += value
    mid, lo, hi = spread([r.seconds for r in runs])
    top.errorbar(x, mid, yerr=[[mid - lo], [hi - mid]], color="black", capsize=3, lw=1)
    text = _s(mid) if base is None else f"{_s(mid)}\n{mid / base:.3f}\N{MULTIPLICATION SIGN}"
    label_above(top, x, hi, text)
    amid, alo, ahi = spread([r.overhead_s for r in runs])
    low.bar(x, amid, 0.7, color=API[1])
    low.errorbar(x, amid, yerr=[[amid - alo], [ahi - amid]], color="black", capsize=3, lw=1)
    label_above(low, x, max(ahi, amid), f"{_s(amid)}\n{amid / mid:.1%}")
    return hi, max(ahi, amid)


def end_to_end(
    path: Path, results: Sequence[RunResult], modes: Sequence[str], caption: str
) -> Path | None:
    """end_to_end_figure written to `path` (None without matplotlib)."""
    if pyplot() is None:
        return None
    return save(end_to_end_figure(results, modes, caption), path)


def _turns(runs: Sequence[RunResult]) -> tuple[list[float], list[list[float]]]:
    """Per turn: the median history length (prompt tokens) and each repeat's API work, ms
    (turn time less that step's ideal inference)."""
    n = min(min(len(r.turn_s), len(r.step_prompt), len(r.step_ideal_s)) for r in runs)
    xs = [float(statistics.median(r.step_prompt[i] for r in runs)) for i in range(n)]
    work = [[(r.turn_s[i] - r.step_ideal_s[i]) * 1000 for r in runs] for i in range(n)]
    return xs, work


def overhead_per_turn_figure(
    results: Sequence[RunResult], modes: Sequence[str], caption: str
) -> Figure:
    """A row per profile (its own y axis, from 0), a panel per mode: each turn's API work
    against the history length over the whole range, the median of the repeats with their
    min-max as a band, http-full faint behind; each panel's title gives the least-squares line
    at the first and the last history length (the turns after the first)."""
    profiles = list(dict.fromkeys(r.profile for r in results))
    shown = [m for m in modes if any(r.mode == m for r in results)]
    fig, axes = figure(len(profiles), len(shown), 2.2, 2.0, sharex=True, sharey="row")
    right = max(max(r.step_prompt, default=0) for r in results) * 1.03 or 1.0
    for row, profile in enumerate(profiles):
        series = {}
        for mode in shown:
            runs = [r for r in results if r.mode == mode and r.profile == profile]
            if runs:
                series[mode] = _turns(runs)
        for col, mode in enumerate(shown):
            ax = axes[row][col]
            if mode != REFERENCE and REFERENCE in series:
                band(ax, *series[REFERENCE], REFERENCE_COLOR, faint=True)
            heading = mode
            if mode in series:
                xs, work = series[mode]
                mid = band(ax, xs, work, mode_color(mode, shown))
                first, last = trend(xs[1:], mid[1:])
                heading += f"\nfit {first:.0f} → {last:.0f} ms"
            ax.set_title(heading, fontsize=8)
            ax.set_xlim(0, right)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
            kilo_tokens(ax)
        axes[row][0].set_ylabel(f"{profile}\nAPI work per turn, ms", fontsize=8)
        # From 0, once the whole row is drawn: its panels share the y axis, scaled to them all.
        axes[row][0].set_ylim(bottom=0)
    for ax in axes[-1]:
        ax.set_xlabel("history, prompt tokens", fontsize=8)
    reference_legend(fig)
    title(
        fig,
        f"API work per turn against history length: {caption}",
        "API work: the turn's time (request sent to pause or end) less its step's ideal "
        "inference; fit: least-squares line over the turns after the first, at the first and "
        "the last history length",
    )
    return fig


def overhead_per_turn(
    path: Path, results: Sequence[RunResult], modes: Sequence[str], caption: str
) -> Path | None:
    """overhead_per_turn_figure written to `path` (None without matplotlib)."""
    if pyplot() is None:
        return None
    return save(overhead_per_turn_figure(results, modes, caption), path)


def compare_plots(
    out: Path, results: Sequence[RunResult], modes: Sequence[str], caption: str
) -> list[Path]:
    """The two figures of a compare run: end-to-end.png and overhead-per-turn.png. `caption`
    names the run in every title, e.g. "swe-pro-codex, costs service, 3 repeats"."""
    if not results:
        return []
    written = [
        end_to_end(out / "end-to-end.png", results, modes, caption),
        overhead_per_turn(out / "overhead-per-turn.png", results, modes, caption),
    ]
    return [p for p in written if p is not None]


__all__ = [
    "compare_plots",
    "end_to_end",
    "end_to_end_figure",
    "overhead_per_turn",
    "overhead_per_turn_figure",
    "phases",
]
