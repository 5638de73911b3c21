# The figures of `rollout compare --agents`: mean JCT and throughput against the number of
# agents, a line per KV policy and a panel per mode (the band: every rollout's p10-p90), with
# where KV memory fills marked; KV occupancy over time for one fleet size, a line per policy;
# and, with --turns, each policy's gain over evict against the tool calls per rollout.
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollout.experiments.figures.common import figure, legend_below, pyplot, save, title

POLICY_COLORS = {"evict": "#c44e52", "pin": "#4c72b0", "ttl": "#55a868", "offload": "#8172b2"}
FULL = 0.95


def base_calls(rows: Sequence[dict[str, Any]]) -> int | None:
    """The tool calls per rollout of the sweep over agents proper: None (each agent draws its
    own) when that was run, else the fewest of `--calls`/`--turns`."""
    values = {r.get("calls") for r in rows}
    if None in values or not values:
        return None
    return min(v for v in values if v is not None)


def agent_plots(
    out: Path, rows: Sequence[dict[str, Any]], runs: Sequence[dict[str, Any]], caption: str
) -> list[Path]:
    """jct-agents.png, kv-occupancy.png and (with a turns sweep) gain-turns.png; none
    without matplotlib."""
    if pyplot() is None:
        return []
    written = []
    calls = base_calls(rows)
    base = [r for r in rows if r["calls"] == calls]
    if base and len({r["agents"] for r in base}) > 1:
        written.append(save(jct_figure(base, caption), out / "jct-agents.png"))
    occupancy = occupancy_figure(runs, caption)
    if occupancy is not None:
        written.append(save(occupancy, out / "kv-occupancy.png"))
    turns = [r for r in rows if r["calls"] is not None]
    if len({r["calls"] for r in turns}) > 1:
        written.append(save(turns_figure(turns, caption), out / "gain-turns.png"))
    return written


def _policies(rows: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["kv_policy"] for r in rows))


def jct_figure(rows: Sequence[dict[str, Any]], caption: str) -> Any:
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    fig, axes = figure(2, len(modes), 4.2, 2.6, sharex=True)
    handles, labels = [], []
    for col, mode in enumerate(modes):
        jct_ax, rate_ax = axes[0][col], axes[1][col]
        mine = [r for r in rows if r["mode"] == mode]
        for policy in _policies(mine):
            pts = sorted((r for r in mine if r["kv_policy"] == policy), key=lambda r: r["agents"])
            xs = [r["agents"] for r in pts]
            color = POLICY_COLORS.get(policy, "black")
            (line,) = jct_ax.plot(xs, [r["jct_mean_s"] for r in pts], marker="o", color=color)
            jct_ax.fill_between(
                xs,
                [r["jct_p10_s"] for r in pts],
                [r["jct_p90_s"] for r in pts],
                color=color,
                alpha=0.12,
            )
            rate_ax.plot(xs, [r["rollouts_per_hour"] for r in pts], marker="o", color=color)
            if col == 0:
                handles.append(line)
                labels.append(policy)
        evict = [r for r in mine if r["kv_policy"] == "evict"]
        full = [r["agents"] for r in evict if r["kv_peak_fraction"] >= FULL]
        for ax in (jct_ax, rate_ax):
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
            if full:
                ax.axvline(min(full), color="grey", ls=":", lw=1)
        if full:
            jct_ax.text(min(full), jct_ax.get_ylim()[1], " KV memory full", fontsize=7, va="top")
        jct_ax.set_title(mode, fontsize=9)
        jct_ax.set_ylabel("JCT per rollout, s (mean; band p10-p90)", fontsize=8)
        rate_ax.set_ylabel("rollouts / hour", fontsize=8)
        rate_ax.set_xlabel("agents sharing the engine", fontsize=8)
        xs = sorted({r["agents"] for r in mine})
        rate_ax.set_xticks(xs, [str(x) for x in xs])
    title(fig, "Many agents, one engine: job completion time and throughput", caption)
    legend_below(fig, handles, labels)
    return fig


def occupancy_figure(runs: Sequence[dict[str, Any]], caption: str) -> Any | None:
    """KV memory over time in the largest fleet's runs (first repeat, each workload draw)."""
    calls = base_calls(runs)
    base = [r for r in runs if r.get("calls") == calls and r["repeat"] == 0 and r["series"]]
    if not base:
        return None
    n = max(r["agents"] for r in base)
    at = [r for r in base if r["agents"] == n]
    modes = list(dict.fromkeys(r["mode"] for r in at))
    fig, axes = figure(1, len(modes), 4.2, 2.8, sharey=True)
    handles, labels = [], []
    for col, mode in enumerate(modes):
        ax = axes[0][col]
        for run in (r for r in at if r["mode"] == mode):
            color = POLICY_COLORS.get(run["kv_policy"], "black")
            ts = [p[0] / 60 for p in run["series"]]
            (line,) = ax.plot(ts, [p[1] for p in run["series"]], color=color, lw=1.2)
            ax.plot(ts, [p[2] for p in run["series"]], color=color, lw=0.6, ls="--", alpha=0.6)
            if col == 0:
                handles.append(line)
                labels.append(f"{run['kv_policy']}: used (dashed: held by paused rollouts)")
        ax.set_title(f"{mode}, {n} agents", fontsize=9)
        ax.set_xlabel("simulated minutes", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("fraction of KV blocks", fontsize=8)
    title(fig, "KV memory over time", caption)
    legend_below(fig, handles, labels, columns=2)
    return fig


def turns_figure(rows: Sequence[dict[str, Any]], caption: str) -> Any:
    """Each policy's mean JCT against evict's, by tool calls per rollout."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    fig, axes = figure(1, len(modes), 4.2, 2.8, sharey=True)
    handles, labels = [], []
    for col, mode in enumerate(modes):
        ax = axes[0][col]
        mine = [r for r in rows if r["mode"] == mode]
        for n in sorted({r["agents"] for r in mine}):
            evict = {r["calls"]: r for r in mine if r["agents"] == n and r["kv_policy"] == "evict"}
            for policy in _policies(mine):
                if policy == "evict":
                    continue
                pts = sorted(
                    (r for r in mine if r["agents"] == n and r["kv_policy"] == policy),
                    key=lambda r: r["calls"],
                )
                pts = [r for r in pts if r["calls"] in evict]
                xs = [r["calls"] for r in pts]
                ys = [evict[r["calls"]]["jct_mean_s"] / r["jct_mean_s"] for r in pts]
                (line,) = ax.plot(xs, ys, marker="o", color=POLICY_COLORS.get(policy, "black"))
                if col == 0:
                    handles.append(line)
                    labels.append(f"{policy}, {n} agents")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_title(mode, fontsize=9)
        ax.set_xlabel("tool calls per rollout", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean JCT of evict / of the policy", fontsize=8)
    title(fig, "The gain of keeping a paused rollout's KV, by turns", caption)
    legend_below(fig, handles, labels, columns=3)
    return fig
