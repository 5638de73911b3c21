# What every figure of `rollout compare` shares: pyplot on the Agg backend (None without the
# `plot` extra), the phases' colours, the repeats' spread (median, min, max), a median line with
# its min-max band, a least-squares trend, and the layout rules: axes from 0, legends outside
# the axes, history lengths in thousands of tokens.
from __future__ import annotations

import statistics
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

INFERENCE = ("inference", "#4c72b0")
CLIENT = ("client tools", "#55a868")
API = ("API work", "#c44e52")
PHASES = (INFERENCE, CLIENT, API)
#: The reference mode, drawn faintly in every other mode's panel and the base of the ratios.
REFERENCE = "http-full"
REFERENCE_COLOR = "#9a9a9a"
#: A colour per mode, the same in every figure.
MODE_COLORS = {
    "http-full": "#4c72b0",
    "http-chain": "#dd8452",
    "ws-full": "#55a868",
    "ws-chain": "#c44e52",
    "ws-append": "#8172b3",
    "http-append": "#937860",
    "ws-inject": "#da8bc3",
    "ws-steer": "#8c8c8c",
}
OTHER_COLORS = ("#ccb974", "#64b5cd", "#4c4c4c")


def caption(workload: str, costs: str, repeats: int) -> str:
    """What every figure's title names: the workload, the cost profile, the repeats."""
    return f"{workload}, costs {costs}, {repeats} repeat{'' if repeats == 1 else 's'}"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or None without the plot extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save(fig: Figure, path: Path) -> Path:
    """Write the figure (its layout is constrained: legends outside the axes keep their room)."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) of the repeats; nan for none."""
    if not values:
        return (float("nan"),) * 3
    return statistics.median(values), min(values), max(values)


def mode_color(mode: str, modes: Sequence[str]) -> str:
    if mode in MODE_COLORS:
        return MODE_COLORS[mode]
    others = [m for m in modes if m not in MODE_COLORS]
    return OTHER_COLORS[others.index(mode) % len(OTHER_COLORS)] if mode in others else "black"


def kilo_tokens(ax: Axes) -> None:
    """History lengths on the x axis as 20k, 40k, ..."""
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:.0f}k"))


def band(
    ax: Axes,
    xs: Sequence[float],
    repeats: Sequence[Sequence[float]],
    color: str,
    *,
    label: str | None = None,
    faint: bool = False,
) -> list[float]:
    """A median line over `xs` (one list of the repeats' values per x) with the repeats'
    min-max as a band; faint: the line alone, thin, for a reference drawn behind. Returns the
    medians."""
    stats = [spread(v) for v in repeats]
    mid = [s[0] for s in stats]
    width, z = (1.0, 1) if faint else (1.4, 3)
    if not faint:
        ax.fill_between(
            xs, [s[1] for s in stats], [s[2] for s in stats], color=color, alpha=0.3, lw=0, zorder=z
        )
    ax.plot(
        xs, mid, color=color, lw=width, marker=None if faint else ".", ms=3, label=label, zorder=z
    )
    return mid


def label_above(ax: Axes, x: float, y: float, text: str, fontsize: float = 7) -> None:
    """`text` centred just above the point (x, y), e.g. a bar's whisker."""
    ax.annotate(
        text,
        (x, y),
        xytext=(0, 2),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=fontsize,
    )


def trend(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The least-squares line through (xs, ys) at the first and the last x."""
    if len(xs) < 2 or len(set(xs)) < 2:
        y = statistics.median(ys) if ys else float("nan")
        return y, y
    slope, intercept = statistics.linear_regression(xs, ys)
    return intercept + slope * xs[0], intercept + slope * xs[-1]


def legend_below(
    fig: Figure, handles: Sequence[Any], labels: Sequence[str], columns: int = 8
) -> None:
    """One legend for the figure, below its axes (outside every axes' data area)."""
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=max(1, min(len(labels), columns)),
        fontsize=8,
        frameon=False,
    )


def title(fig: Figure, *lines: str) -> None:
    """The figure's title: `lines`, each wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 13))  # characters of 10 pt per line
    fig.suptitle(
        "\n".join(textwrap.fill(line, width, break_on_hyphens=False) for line in lines), fontsize=10
    )


def reference_legend(fig: Figure) -> None:
    """The small multiples' legend: the panel's mode against the faint reference."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color="black", marker=".", lw=1.4),
        Line2D([], [], color=REFERENCE_COLOR, lw=1.0),
    ]
    labels = [
        "the panel's mode: median of the repeats, band: their min-max",
        f"{REFERENCE}'s median, for reference",
    ]
    legend_below(fig, handles, labels)


def figure(rows: int, cols: int, width: float, height: float, **kw: Any) -> tuple[Figure, Any]:
    """A grid of axes, `width` x `height` inches each, with a constrained layout."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(max(7.0, width * cols + 0.8), height * rows + 1.3),
        squeeze=False,
        layout="constrained",
        **kw,
    )
    return fig, axes


__all__ = [
    "API",
    "CLIENT",
    "INFERENCE",
    "PHASES",
    "REFERENCE",
    "REFERENCE_COLOR",
    "band",
    "caption",
    "figure",
    "kilo_tokens",
    "label_above",
    "legend_below",
    "mode_color",
    "pyplot",
    "reference_legend",
    "save",
    "spread",
    "title",
    "trend",
]
