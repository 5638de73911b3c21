# The figures of the sweeps of `rollout compare`: per-turn.png (--per-turn: wall time and server
# CPU per turn against the history length, a panel per mode, http-full faint in each),
# ttft-chain.png (--chain-lengths: TTFT and the API work's share against chain length, a column
# per profile) and codex.png (--agent codex: a real agent's time per model turn by transport).
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
from rollout.experiments.results import CodexRun, Point

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Per mode, per turn: (history length, each repeat's wall seconds, each repeat's CPU seconds).
Series = dict[str, list[tuple[int, list[float], list[float]]]]


def per_turn_figure(series: Series, caption: str) -> Figure:
    """Two rows, a panel per mode: wall time per turn (the client's) and the server's CPU time
    per turn against the history length, each the median of the repeats with their min-max as
    a band, http-full faint behind; a row shares its y axis (from 0). Each panel's title gives
    the least-squares line at the first and the last history length (the turns after the
    first, which is the same in every mode)."""
    modes = [m for m, rows in series.items() if rows]
    fig, axes = figure(2, max(1, len(modes)), 2.1, 2.1, sharex=True, sharey="row")
    right = max((h for rows in series.values() for h, _, _ in rows), default=0) * 1.03 or 1.0
    # Per mode: the history lengths, and per row (wall, CPU) each turn's repeats in ms.
    data: dict[str, tuple[list[float], list[list[list[float]]]]] = {
        m: (
            [float(h) for h, _, _ in series[m]],
            [
                [[v * 1000 for v in wall] for _, wall, _ in series[m]],
                [[v * 1000 for v in cpu] for _, _, cpu in series[m]],
            ],
        )
        for m in modes
    }
    for col, mode in enumerate(modes):
        xs, rows = data[mode]
        for row, values in enumerate(rows):
            ax = axes[row][col]
            if mode != REFERENCE and REFERENCE in data:
                ref_xs, ref_rows = data[REFERENCE]
                band(ax, ref_xs, ref_rows[row], REFERENCE_COLOR, faint=True)
            mid = band(ax, xs, values, mode_color(mode, modes))
            first, last = trend(xs[1:], mid[1:])
            fit = f"fit {first:.1f} \N{RIGHTWARDS ARROW} {last:.1f} ms"
            ax.set_title(f"{mode}\n{fit}" if row == 0 else fit, fontsize=8)
            ax.set_xlim(0, right)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
            kilo_tokens(ax)
        axes[1][col].set_xlabel("history, prompt tokens", fontsize=8)
    for row in axes:  # from 0, once drawn: a row shares its y axis, scaled to all its panels
        row[0].set_ylim(bottom=0)
    axes[0][0].set_ylabel("wall time per turn, ms\n(the client's)", fontsize=8)
    axes[1][0].set_ylabel("server CPU per turn, ms", fontsize=8)
    first_turn = min((h for rows in series.values() for h, _, _ in rows), default=0)
    reference_legend(fig)
    title(
        fig,
        f"Per turn against history length: {caption}",
        f"fit: least-squares line over the turns after the first ({first_turn:,} tokens), at "
        "the first and the last history length",
    )
    return fig


def per_turn(path: Path, series: Series, caption: str) -> Path | None:
    """per_turn_figure written to `path` (None without matplotlib). `caption` names the sweep
    in the title, e.g. "history-sweep, instant, costs cpu-only, 3 repeats"."""
    if pyplot() is None:
        return None
    return save(per_turn_figure(series, caption), path)


def chain_figure(points: Sequence[Point], modes: Sequence[str], caption: str) -> Figure:
    """A column per profile (each its own y axes, from 0): the median TTFT (the median over a
    rollout's turns, then over the repeats; whiskers: the repeats' min-max), each mode after
    the first labelled with its difference from the first's, and the API work's share of
    end-to-end time, against chain length."""
    profiles = list(dict.fromkeys(p.profile for p in points))
    fig, axes = figure(2, max(1, len(profiles)), 4.2, 2.5, sharex=True)
    lengths = sorted({p.turns for p in points})
    for col, profile in enumerate(profiles):
        ttft, share = axes[0][col], axes[1][col]
        base = {p.turns: p.ttft for p in points if p.profile == profile and p.mode == modes[0]}
        for mode in modes:
            mine = sorted(
                (p for p in points if p.profile == profile and p.mode == mode),
                key=lambda p: p.turns,
            )
            if not mine:
                continue
            xs = [p.turns for p in mine]
            color = mode_color(mode, modes)
            for ax, values in (
                (ttft, [[v * 1000 for v in p.ttft_s] for p in mine]),
                (share, [[v * 100 for v in p.api_share] for p in mine]),
            ):
                stats = [spread(v) for v in values]
                mid = [s[0] for s in stats]
                err = [[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]]
                ax.errorbar(xs, mid, yerr=err, marker="o", ms=4, capsize=3, color=color, label=mode)
            if mode == modes[0]:
                continue
            for p in mine:
                if p.turns in base and base[p.turns] > 0:
                    ttft.annotate(
                        f"{p.ttft / base[p.turns] - 1:+.1%}",
                        (p.turns, p.ttft * 1000),
                        xytext=(0, -11),
                        textcoords="offset points",
                        ha="center",
                        fontsize=7,
                        color=color,
                    )
        ttft.set_title(profile, fontsize=10)
        ttft.set_ylabel("median TTFT, ms", fontsize=8)
        share.set_ylabel("API work, % of end-to-end", fontsize=8)
        share.set_xlabel("chain length (turns)", fontsize=8)
        for ax in (ttft, share):
            ax.set_xticks(lengths)
            ax.set_xlim(min(lengths) - 3, max(lengths) + 3)
            ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    legend_below(fig, handles, labels)
    versus = f"; labels: TTFT against {modes[0]}'s" if len(modes) > 1 else ""
    title(
        fig,
        f"Time to first token and API work against chain length: {caption}",
        f"medians of the repeats, whiskers: their min-max{versus}",
    )
    return fig


def chain_plot(
    path: Path, points: Sequence[Point], modes: Sequence[str], caption: str
) -> Path | None:
    """chain_figure written to `path` (None without matplotlib). `caption` names the sweep in
    the title, e.g. "coding-chain, costs service, 3 repeats"."""
    if pyplot() is None:
        return None
    return save(chain_figure(points, modes, caption), path)


AGENT_PHASES = (
    ("inference_s", *INFERENCE),
    ("client_s", "client (Codex, its tools)", CLIENT[1]),
    ("api_s", *API),
    ("startup_s", "Codex start and exit", "#aaaaaa"),
)
TRANSPORT_NAMES = {"ws": "WebSocket\n(prewarm, chaining)", "http": "HTTP\n(full history)"}


def agent_figure(runs: Sequence[CodexRun], caption: str = "") -> Figure:
    """A real agent's end-to-end time per model turn by transport, from 0, stacked by phase
    (the repeats' medians of inference, the client's side and API work, then Codex's start and
    exit as the rest of the median end-to-end), whiskers the repeats' min-max, each labelled
    with its median and its ratio to the last transport's."""
    transports = list(dict.fromkeys(r.transport for r in runs))
    fig, axes = figure(1, 1, 1.9 * len(transports) + 2.8, 3.6)
    ax = axes[0][0]
    totals = {t: [r.per_turn_s * 1000 for r in runs if r.transport == t] for t in transports}
    last = statistics.median(totals[transports[-1]]) if transports else 0.0
    for x, transport in enumerate(transports):
        mine = [r for r in runs if r.transport == transport]
        mid, low, high = spread(totals[transport])
        bottom = 0.0
        for attr, label, color in AGENT_PHASES:
            if attr == "startup_s":
                value = max(0.0, mid - bottom)
            else:
                value = statistics.median(getattr(r, attr) / max(1, r.turns) for r in mine) * 1000
            ax.bar(x, value, 0.6, bottom=bottom, color=color, label=label if x == 0 else None)
            inside = value > 0.06 * mid
            ax.annotate(
                f"{value:,.0f}" if inside else f"{value:,.1f}",
                (x if inside else x + 0.31, bottom + value / 2),
                ha="center" if inside else "left",
                va="center",
                fontsize=7,
                color="white" if inside else color,
            )
            bottom += value
        ax.errorbar(x, mid, yerr=[[mid - low], [high - mid]], color="black", capsize=4, lw=1)
        text = f"{mid:,.0f} ms"
        if len(transports) > 1 and last > 0:
            text += f"\n{mid / last:.3f}\N{MULTIPLICATION SIGN}"
        label_above(ax, x, high, text, fontsize=8)
    ax.set_xticks(
        range(len(transports)), [TRANSPORT_NAMES.get(t, t) for t in transports], fontsize=8
    )
    ax.set_xlim(-0.6, len(transports) - 0.4)
    ax.set_ylim(0, max((max(v) for v in totals.values() if v), default=1.0) * 1.18)
    ax.set_ylabel("end-to-end per model turn, ms", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, handles, labels, columns=2)
    repeats = max((len(v) for v in totals.values()), default=0)
    versus = (
        f", \N{MULTIPLICATION SIGN} its ratio to {transports[-1]}'s" if len(transports) > 1 else ""
    )
    title(
        fig,
        f"Codex CLI by transport: {caption or f'{repeats} repeats'}",
        f"medians of the repeats, whiskers: their min-max; labels: ms per turn{versus}",
    )
    return fig


def agent_plot(path: Path, runs: Sequence[CodexRun], caption: str = "") -> Path | None:
    """agent_figure written to `path` (None without matplotlib). `caption` names the run in the
    title, e.g. "list the files here, 1000tps, costs cpu-only, 3 repeats"."""
    if pyplot() is None:
        return None
    return save(agent_figure(runs, caption), path)


__all__ = [
    "Series",
    "agent_figure",
    "agent_plot",
    "chain_figure",
    "chain_plot",
    "per_turn",
    "per_turn_figure",
]
