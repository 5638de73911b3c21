# The figures of `rollout compare` under the names the harness and the sweeps import: the compare
# run's (rollout.experiments.figures.compare) and the sweeps' (rollout.experiments.figures.sweeps),
# on what they share (rollout.experiments.figures.common).
from __future__ import annotations

from rollout.experiments.figures.common import PHASES, caption, spread
from rollout.experiments.figures.compare import (
    compare_plots,
    end_to_end,
    end_to_end_figure,
    overhead_per_turn,
    overhead_per_turn_figure,
    phases,
)
from rollout.experiments.figures.sweeps import (
    Series,
    agent_figure,
    agent_plot,
    chain_figure,
    chain_plot,
    per_turn,
    per_turn_figure,
)

__all__ = [
    "PHASES",
    "Series",
    "agent_figure",
    "agent_plot",
    "caption",
    "chain_figure",
    "chain_plot",
    "compare_plots",
    "end_to_end",
    "end_to_end_figure",
    "overhead_per_turn",
    "overhead_per_turn_figure",
    "per_turn",
    "per_turn_figure",
    "phases",
    "spread",
]
