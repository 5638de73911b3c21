# The figure of `rollout compare --multi-agent`: multi-agent.png, a panel per measure (wall
# time, bytes sent and received, API requests, events received, server CPU) against the number
# of subagents, a line per shape (the median of the repeats, whiskers: their min-max).
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollout.experiments.figures.common import (
    OTHER_COLORS,
    figure,
    legend_below,
    pyplot,
    save,
    spread,
    title,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: (field, axis label, unit scale) a panel each.
PANELS = (
    ("seconds", "wall time, ms", 1000.0),
    ("bytes_sent", "bytes sent by the client, KB", 1e-3),
    ("bytes_received", "bytes received by the client, KB", 1e-3),
    ("requests", "API requests (creates, injects)", 1.0),
    ("events", "events received", 1.0),
    ("cpu_s", "server CPU, ms", 1000.0),
)
SHAPE_COLORS = {"hosted": "#8172b3", "client-ws": "#c44e52", "client-http": "#4c72b0"}


def multi_agent_figure(points: Sequence[dict[str, Any]], caption: str) -> Figure:
    """Each panel against the number of subagents, a line per shape."""
    fig, axes = figure(2, 3, 3.2, 2.4, sharex=True)
    shapes = list(dict.fromkeys(p["shape"] for p in points))
    counts = sorted({p["agents"] for p in points})
    for i, (field, label, scale) in enumerate(PANELS):
        ax = axes[i // 3][i % 3]
        for n, shape in enumerate(shapes):
            mine = sorted((p for p in points if p["shape"] == shape), key=lambda p: p["agents"])
            xs = [p["agents"] for p in mine]
            stats = [spread([v * scale for v in p[field]]) for p in mine]
            mid = [s[0] for s in stats]
            err = [[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]]
            color = SHAPE_COLORS.get(shape, OTHER_COLORS[n % len(OTHER_COLORS)])
            ax.errorbar(xs, mid, yerr=err, marker="o", ms=4, capsize=3, color=color, label=shape)
        ax.set_ylabel(label, fontsize=8)
        ax.set_xticks(counts)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
        if i // 3 == 1:
            ax.set_xlabel("subagents", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    legend_below(fig, handles, labels)
    title(
        fig,
        f"A root and its subagents, orchestrated in one response or by the client: {caption}",
        "medians of the repeats, whiskers: their min-max",
    )
    return fig


def multi_agent_plot(path: Path, points: Sequence[dict[str, Any]], caption: str) -> Path | None:
    """multi_agent_figure written to `path` (None without matplotlib)."""
    if pyplot() is None:
        return None
    return save(multi_agent_figure(points, caption), path)
