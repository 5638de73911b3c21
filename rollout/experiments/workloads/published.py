# Published statistics of real agent sessions beside the same figures measured on a workload's
# rollout: turns, the prompt's length at a turn, output tokens per turn, input:output tokens
# and the share of prompt tokens a prefix cache can serve within the session. Pure arithmetic
# over a RunResult (rollout.experiments.results) and the workload's script; docs/experiments.md
# cites each source.
from __future__ import annotations

from itertools import pairwise

import attrs

from rollout.conversation.tokens import count
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Scenario
from rollout.model.policy import CallStep, ErrorStep

#: What each published source reports, by workload name (figure -> value).
PUBLISHED: dict[str, dict[str, float]] = {
    "agentx-long": {"turns": 43, "final_prompt": 142_000, "output_per_turn": 444},
    "swe-pro-codex": {"prompt_at_turn_30": 80_000, "input_per_output": 131},
}
PUBLISHED_NOTES = {
    "agentx-long": "prefix-cache hits >96% (across sessions; ours is one session, cold cache)",
}


@attrs.frozen
class Shape:
    turns: int
    first_prompt: int
    prompt_at_turn_30: int
    final_prompt: int
    output_per_turn: float  # visible (text, arguments) and reasoning tokens
    input_per_output: float
    cacheable_share: float  # prompt tokens seen before in the session / all prompt tokens


def shape(scenario: Scenario, run: RunResult) -> Shape:
    """The session's figures: prompts from the run's sampling steps, outputs from the script."""
    prompts = run.step_prompt
    visible = 0
    thought = 0
    for step in scenario.script:
        if isinstance(step, ErrorStep):
            continue
        visible += count(step.text)
        if isinstance(step, CallStep):
            visible += sum(count(getattr(c, "arguments", "")) for c in step.calls)
        thought += step.reasoning_tokens or 0
    output = max(1, visible + thought)
    total = sum(prompts) or 1
    new = (prompts[0] if prompts else 0) + sum(max(0, b - a) for a, b in pairwise(prompts))
    return Shape(
        turns=len(scenario.script),
        first_prompt=prompts[0] if prompts else 0,
        prompt_at_turn_30=prompts[min(29, len(prompts) - 1)] if prompts else 0,
        final_prompt=prompts[-1] if prompts else 0,
        output_per_turn=output / max(1, len(scenario.script)),
        input_per_output=total / output,
        cacheable_share=1 - new / total,
    )


def beside(name: str, s: Shape) -> list[tuple[str, str, str]]:
    """(figure, published, measured) rows for the figures the source reports."""
    measured = attrs.asdict(s)
    rows = []
    for figure, value in PUBLISHED.get(name, {}).items():
        got = measured[figure]
        rows.append((figure, f"{value:,g}", f"{got:,.0f}" if got >= 1000 else f"{got:,.1f}"))
    rows.append(("cacheable_share", PUBLISHED_NOTES.get(name, "-"), f"{s.cacheable_share:.1%}"))
    return rows
