# The answer of a `rollout compare` run, a line per comparison and inference profile: how much
# less (or more) time end to end a mode takes than the baseline (http-full; and ws-chain against
# ws-append, how close chaining comes to the append shape), with the spread of the repeats. A
# difference is called only when the two modes' end-to-end times do not overlap (the slowest
# repeat of one is faster than the fastest of the other); otherwise the line says there is none
# within the spread. The spread of the ratio pairs each repeat of a mode with the same repeat of
# the baseline (they ran side by side). Pure arithmetic over RunResults.
from __future__ import annotations

import statistics
from collections.abc import Sequence

import attrs

from rollout.client import SCENARIOS
from rollout.experiments.results import RunResult

BASELINE = "http-full"
#: Comparisons beyond each mode against the baseline: (mode, against).
PAIRS = (("ws-chain", "ws-append"),)


@attrs.frozen
class Verdict:
    profile: str
    mode: str
    against: str
    ratio: float  # median end-to-end of `mode` / median of `against`
    low: float  # the repeats' ratios (repeat r of mode / repeat r of against): min
    high: float  # and max
    runs: int
    apart: bool  # the end-to-end times of the two modes do not overlap

    def line(self) -> str:
        head = f"{self.profile} {self.mode}:"
        if self.runs < 2:
            return (
                f"{head} {_change(self.ratio)} end to end than {self.against} (1 run: no "
                "spread to judge it by; --repeats 3 gives one)"
            )
        if not self.apart:
            return (
                f"{head} no difference from {self.against} within the spread (ratio "
                f"{self.low:.3f}-{self.high:.3f}, {self.runs} runs)"
            )
        a, b = sorted((_percent(self.low), _percent(self.high)))
        return (
            f"{head} {_change(self.ratio)} end to end than {self.against} (spread "
            f"{a:.1f}-{b:.1f}%, {self.runs} runs)"
        )


def _percent(ratio: float) -> float:
    return abs(1 - ratio) * 100


def _change(ratio: float) -> str:
    word = "less" if ratio <= 1 else "more"
    return f"{_percent(ratio):.1f}% {word} time"


def compare(runs: Sequence[RunResult], mode: str, against: str) -> Verdict | None:
    """`mode` against `against` at one profile (`runs` of that profile); None unless both ran."""
    mine = {r.repeat: r.seconds for r in runs if r.mode == mode}
    base = {r.repeat: r.seconds for r in runs if r.mode == against}
    if not mine or not base:
        return None
    paired = [mine[k] / base[k] for k in sorted(mine.keys() & base.keys())]
    if not paired:
        return None
    apart = max(mine.values()) < min(base.values()) or min(mine.values()) > max(base.values())
    return Verdict(
        profile=runs[0].profile,
        mode=mode,
        against=against,
        ratio=statistics.median(mine.values()) / statistics.median(base.values()),
        low=min(paired),
        high=max(paired),
        runs=len(paired),
        apart=apart,
    )


def verdicts(results: Sequence[RunResult], modes: Sequence[str]) -> list[Verdict]:
    """Each mode against the baseline, then PAIRS, per profile, in the order they ran (not the
    scenarios: a scenario's rollout is another one)."""
    out = []
    for profile in dict.fromkeys(r.profile for r in results):
        runs = [r for r in results if r.profile == profile]
        pairs = [(m, BASELINE) for m in modes if m not in (BASELINE, *SCENARIOS)]
        pairs += [p for p in PAIRS if p[0] in modes and p[1] in modes]
        for mode, against in pairs:
            found = compare(runs, mode, against)
            if found is not None:
                out.append(found)
    return out
