# The figures of `rollout compare` (matplotlib, the optional `plot` extra), each showing the spread
# of the interleaved repeats: end-to-end time split into API work, inference and client tools
# relative to the ideal rollout, per-turn overhead against history length, and the figures of the
# per-turn and chain-length sweeps. They read the sweeps' data
# (rollout.experiments.harness.results).
from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollout.experiments.harness.results import CodexRun, Point, RunResult

PHASES = (("inference", "#4c72b0"), ("client tools", "#55a868"), ("API work", "#c44e52"))


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or None without the plot extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) of the repeats; nan for none."""
    if not values:
        return (float("nan"),) * 3
    return statistics.median(values), min(values), max(values)


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def phases(run: RunResult) -> tuple[float, float, float]:
    """A rollout's inference, client tools and API work (the rest), each / its ideal."""
    ideal = run.ideal_s or 1.0
    return run.inference_s / ideal, run.client_s / ideal, run.overhead_s / ideal


def end_to_end(
    path: Path, results: Sequence[RunResult], modes: Sequence[str], title: str
) -> Path | None:
    """One panel per profile: each mode's end-to-end time / ideal, stacked by phase (medians
    of the repeats), with the repeats' min-max as an error bar on the total."""
    plt = _pyplot()
    if plt is None:
        return None
    profiles = list(dict.fromkeys(r.profile for r in results))
    fig, axes = plt.subplots(
        1,
        len(profiles),
        figsize=(max(7.0, 4.2 * len(profiles) + 1), 4.8),
        sharey=True,
        squeeze=False,
    )
    for ax, profile in zip(axes[0], profiles, strict=True):
        shown = [m for m in modes if any(r.mode == m and r.profile == profile for r in results)]
        for x, mode in enumerate(shown):
            runs = [r for r in results if r.mode == mode and r.profile == profile]
            parts = [statistics.median(p) for p in zip(*(phases(r) for r in runs), strict=True)]
            bottom = 0.0
            for value, (label, color) in zip(parts, PHASES, strict=True):
                ax.bar(x, value, 0.7, bottom=bottom, color=color, label=label if x == 0 else None)
                bottom += value
            mid, low, high = spread([r.seconds / r.ideal_s for r in runs])
            ax.errorbar(x, mid, yerr=[[mid - low], [high - mid]], color="black", capsize=4)
            ax.annotate(f"{mid:.3f}", (x, high), ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(shown)), shown, rotation=35, ha="right", fontsize=8)
        ax.set_title(profile)
    # Zoomed so that a few percent of API work shows: from just below the smallest inference
    # share to just above the slowest repeat (the axis says where it starts).
    low_y = min(phases(r)[0] for r in results)
    high_y = max(r.seconds / r.ideal_s for r in results)
    axes[0][0].set_ylim(max(0.0, low_y - 0.05), high_y + 0.04 * (high_y - low_y + 0.05))
    axes[0][0].set_ylabel("end-to-end / ideal (inference + client tools)")
    axes[0][-1].legend(fontsize=8, loc="lower right", framealpha=0.95)
    fig.suptitle(f"{title}\n(bars: medians of the repeats; whiskers: their min-max)", fontsize=10)
    return _save(plt, fig, path)


def overhead_per_turn(
    path: Path, results: Sequence[RunResult], modes: Sequence[str], profile: str
) -> Path | None:
    """Per-turn overhead (turn time - ideal inference) against history length: the median of
    the repeats per turn, with their min-max as a band."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for mode in modes:
        runs = [r for r in results if r.mode == mode and r.profile == profile]
        if not runs:
            continue
        n = min(min(len(r.turn_s), len(r.step_prompt)) for r in runs)
        xs, mid, low, high = [], [], [], []
        for i in range(n):
            xs.append(statistics.median(r.step_prompt[i] for r in runs))
            m, lo, hi = spread([(r.turn_s[i] - r.step_ideal_s[i]) * 1000 for r in runs])
            mid.append(m)
            low.append(lo)
            high.append(hi)
        (line,) = ax.plot(xs, mid, marker=".", label=mode)
        ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("history length (prompt tokens)")
    ax.set_ylabel("per-turn overhead, ms (turn time - ideal inference)")
    ax.set_title(f"per-turn overhead against history length ({profile}; band: min-max of repeats)")
    ax.legend(fontsize=8, ncol=3)
    return _save(plt, fig, path)


def compare_plots(
    out: Path, results: Sequence[RunResult], modes: Sequence[str], workload: str
) -> list[Path]:
    """The two figures of a compare run: end-to-end.png and overhead-per-turn.png."""
    if not results:
        return []
    profiles = list(dict.fromkeys(r.profile for r in results))
    written = [
        end_to_end(out / "end-to-end.png", results, modes, f"{workload}: end-to-end by phase"),
        overhead_per_turn(out / "overhead-per-turn.png", results, modes, profiles[-1]),
    ]
    return [p for p in written if p is not None]


Series = dict[str, list[tuple[int, list[float], list[float]]]]


def per_turn(path: Path, series: Series, title: str) -> Path | None:
    """Two panels against history length (log scale): wall time per turn and the server's CPU
    time per turn, each the median of the repeats with their min-max as a band."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, (wall, cpu) = plt.subplots(1, 2, figsize=(12, 4.6), sharex=True)
    for mode, rows in series.items():
        if not rows:
            continue
        xs = [h for h, _, _ in rows]
        for ax, k in ((wall, 1), (cpu, 2)):
            stats = [spread([v * 1000 for v in (row[1] if k == 1 else row[2])]) for row in rows]
            (line,) = ax.plot(xs, [s[0] for s in stats], marker=".", markersize=3, label=mode)
            ax.fill_between(
                xs,
                [s[1] for s in stats],
                [s[2] for s in stats],
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
    for ax, what in ((wall, "wall time per turn, ms (client)"), (cpu, "server CPU per turn, ms")):
        ax.set_xlim(0, None)
        ax.set_ylim(0, None)
        ax.set_xlabel("history length (prompt tokens)")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    wall.legend(fontsize=8, ncol=2)
    fig.suptitle(f"per turn against history length: {title} (band: min-max of repeats)")
    wall.annotate(
        f"first turn: {min(h for rows in series.values() for h, _, _ in rows):,} tokens",
        (0.01, 0.01),
        xycoords="axes fraction",
        fontsize=7,
    )
    return _save(plt, fig, path)


def chain_plot(
    path: Path, points: Sequence[Point], modes: Sequence[str], title: str
) -> Path | None:
    """Two panels against chain length: the median TTFT (the median over a rollout's turns,
    then over the repeats; whiskers: the repeats' min-max), and the API work's share of
    end-to-end time, one line per mode and inference profile."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = ("-", "--", ":", "-.")
    profiles = list(dict.fromkeys(p.profile for p in points))
    for j, profile in enumerate(profiles):
        for mode in modes:
            mine = sorted(
                (p for p in points if p.profile == profile and p.mode == mode),
                key=lambda p: p.turns,
            )
            if not mine:
                continue
            xs = [p.turns for p in mine]
            for ax, values in (
                (left, [[v * 1000 for v in p.ttft_s] for p in mine]),
                (right, [[v * 100 for v in p.api_share] for p in mine]),
            ):
                stats = [spread(v) for v in values]
                mid = [s[0] for s in stats]
                err = [[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]]
                style = styles[j % len(styles)]
                ax.errorbar(
                    xs,
                    mid,
                    yerr=err,
                    marker="o",
                    markersize=4,
                    capsize=3,
                    linestyle=style,
                    label=f"{mode}, {profile}",
                )
    left.set_ylabel("median time to first token, ms")
    right.set_ylabel("API work, % of end-to-end")
    for ax in (left, right):
        ax.set_xlabel("chain length (turns)")
        ax.set_xticks(sorted({p.turns for p in points}))
        ax.set_ylim(0, None)
        ax.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(f"{title}: against chain length (whiskers: min-max of repeats)", fontsize=10)
    return _save(plt, fig, path)


def agent_plot(path: Path, runs: Sequence[CodexRun]) -> Path | None:
    """A real agent's end-to-end time per turn by transport, stacked by phase (medians of the
    repeats: inference, the client's side, API work, Codex's start and exit), whiskers the
    repeats' min-max."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.6))
    transports = list(dict.fromkeys(r.transport for r in runs))
    for x, transport in enumerate(transports):
        mine = [r for r in runs if r.transport == transport]
        bottom = 0.0
        phases = [*PHASES, ("Codex start and exit", "#aaaaaa")]
        attrs_ = ("inference_s", "client_s", "api_s", "startup_s")
        for attr, (label, color) in zip(attrs_, phases, strict=True):
            value = statistics.median(getattr(r, attr) / max(1, r.turns) for r in mine) * 1000
            label = "client (Codex, its tools)" if attr == "client_s" else label
            ax.bar(x, value, 0.6, bottom=bottom, color=color, label=label if x == 0 else None)
            bottom += value
        mid, low, high = spread([r.per_turn_s * 1000 for r in mine])
        ax.errorbar(x, mid, yerr=[[mid - low], [high - mid]], color="black", capsize=4)
        ax.annotate(f"{mid:,.0f} ms", (x, high), ha="center", va="bottom", fontsize=8)
    names = {"ws": "WebSocket (prewarm, chaining)", "http": "HTTP (full history)"}
    ax.set_xticks(range(len(transports)), [names.get(t, t) for t in transports], fontsize=8)
    ax.set_ylabel("end-to-end per model turn, ms")
    ax.set_title("Codex CLI by transport (whiskers: min-max of repeats)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return _save(plt, fig, path)
