# `rollout compare --chain-lengths 8,16,24,32,40`: time to first token and end-to-end time against
# chain length (turns per rollout), HTTP chaining through the store (`http-chain`) against
# WebSocket mode (`ws-chain`), for each inference profile, with the published figures beside
# ours: the SGLang model gateway's TTFT (PR #1770) and the blog's 65 -> 1,000 tokens/s picture.
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from rollout.client.modes import mode_named
from rollout.experiments.figures.plots import caption, chain_plot
from rollout.experiments.harness.compare import provenance
from rollout.experiments.harness.run import run_one
from rollout.experiments.results import Point, RunResult
from rollout.experiments.workloads.catalog import WORKLOADS, Scenario, Workload
from rollout.model.profiles import CostProfile, InferenceProfile

#: The sweep's question, a pair of chaining modes (each turn carries `previous_response_id`):
#: the stored HTTP chain, and the WebSocket connection cache. Its tables compare exactly two.
CHAIN_MODES = tuple(mode_named(name).name for name in ("http-chain", "ws-chain"))

#: The coding agent with short model steps (20-60 output tokens), so that a 40-turn chain at
#: 65 tokens/s takes under a minute; everything else as `coding-agent`.
CHAIN_WORKLOAD = attrs.evolve(
    WORKLOADS["coding-agent"],
    name="coding-chain",
    description="a coding agent's chain of tool calls: ~18 KB instructions, ~19 KB tool "
    "definitions, outputs 0.2-4 KB, 20-60 output tokens per step",
    output_tokens=(20, 60),
)

#: The published figures, quoted as docs/experiments.md cites them.
PUBLISHED = {
    "ttft": (
        "median TTFT, ws-chain vs http-chain",
        "28-41% lower as chains grew from 8 to 40 turns (SGLang model gateway, PR #1770)",
    ),
    "e2e": (
        "end-to-end, ws-chain vs http-chain",
        "~20% (xAI, versus HTTP with previous_response_id chaining); about 14% for chains "
        "(an SGLang gateway prototype)",
    ),
    "share_slow": (
        "API work share of end-to-end, 65tps",
        "API overhead hid behind inference (around 65 tokens/s)",
    ),
    "share_fast": (
        "API work share of end-to-end, 1000tps",
        "the overhead became the bottleneck (about 1,000 tokens/s, bursts to 4,000)",
    ),
}


def parse_lengths(text: str) -> list[int]:
    """`8,16,24` -> [8, 16, 24]; ValueError unless every length is a whole number >= 2 and
    they increase."""
    try:
        lengths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 2 or lengths != sorted(set(lengths)):
        raise ValueError("--chain-lengths takes increasing turn counts >= 2, like 8,16,24,32,40")
    return lengths


@attrs.define
class Chains:
    workload: Workload
    lengths: Sequence[int]
    profiles: Sequence[InferenceProfile]
    costs: CostProfile
    modes: Sequence[str] = CHAIN_MODES
    repeats: int = 3
    seed: int = 0

    @property
    def total(self) -> int:
        return len(self.profiles) * self.repeats * len(self.lengths) * len(self.modes)

    def scenario(self, turns: int) -> Scenario:
        return attrs.evolve(self.workload, tool_calls=(turns - 1, turns - 1)).build(self.seed)

    async def run(
        self, progress: Callable[[RunResult], None] | None = None
    ) -> list[tuple[int, RunResult]]:
        """(chain length, run) for each profile, repeat, length and mode; the modes side by
        side, rotated per repeat."""
        scenarios = {n: self.scenario(n) for n in self.lengths}
        out = []
        for profile in self.profiles:
            for repeat in range(self.repeats):
                k = repeat % len(self.modes)
                for n in self.lengths:
                    for mode in [*self.modes[k:], *self.modes[:k]]:
                        run = await run_one(mode, scenarios[n], profile, self.costs, repeat)
                        out.append((n, run))
                        if progress is not None:
                            progress(run)
        return out


def points(runs: Sequence[tuple[int, RunResult]]) -> list[Point]:
    groups: dict[tuple[str, int, str], list[RunResult]] = {}
    for n, r in runs:
        groups.setdefault((r.profile, n, r.mode), []).append(r)
    return [
        Point(
            profile=profile,
            turns=n,
            mode=mode,
            ttft_s=[statistics.median(r.ttft_s) for r in rs],
            per_turn_s=[r.seconds / r.turns for r in rs],
            api_share=[max(0.0, r.overhead_s) / r.seconds for r in rs],
        )
        for (profile, n, mode), rs in groups.items()
    ]


def _find(ps: Sequence[Point], profile: str, n: int, mode: str) -> Point | None:
    return next((p for p in ps if (p.profile, p.turns, p.mode) == (profile, n, mode)), None)


def _lower(a: Point | None, b: Point | None, attr: str) -> float | None:
    """How much lower b is than a, as a share of a (by medians)."""
    if a is None or b is None:
        return None
    x, y = getattr(a, attr), getattr(b, attr)
    return 1 - y / x if x else None


def _ms(values: Sequence[float]) -> str:
    mid = statistics.median(values) * 1000
    return f"{mid:,.0f} ({min(values) * 1000:,.0f}-{max(values) * 1000:,.0f})"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def table(ps: Sequence[Point], modes: Sequence[str] = CHAIN_MODES) -> list[list[str]]:
    """Rows: profile, turns, then per mode its TTFT and e2e per turn (ms, median (min-max) of the
    repeats), then how much lower the second mode's TTFT and e2e are than the first's."""
    base, other = modes[0], modes[-1]
    rows = []
    for profile in dict.fromkeys(p.profile for p in ps):
        for n in sorted({p.turns for p in ps if p.profile == profile}):
            a, b = _find(ps, profile, n, base), _find(ps, profile, n, other)
            row = [profile, str(n)]
            for p in (a, b):
                row += ["-", "-"] if p is None else [_ms(p.ttft_s), _ms(p.per_turn_s)]
            row += [_pct(_lower(a, b, "ttft")), _pct(_lower(a, b, "per_turn"))]
            rows.append(row)
    return rows


def columns(modes: Sequence[str] = CHAIN_MODES) -> list[str]:
    base, other = modes[0], modes[-1]
    return [
        "profile",
        "turns",
        f"{base} TTFT",
        f"{base} e2e/turn",
        f"{other} TTFT",
        f"{other} e2e/turn",
        "TTFT lower",
        "e2e lower",
    ]


def beside(ps: Sequence[Point], modes: Sequence[str] = CHAIN_MODES) -> list[list[str]]:
    """The published figures beside ours: (figure, published, ours)."""
    base, other = modes[0], modes[-1]
    profiles = list(dict.fromkeys(p.profile for p in ps))
    rows = []
    for profile in profiles:
        lengths = sorted({p.turns for p in ps if p.profile == profile})
        first, last = lengths[0], lengths[-1]
        ttft = [
            _lower(_find(ps, profile, n, base), _find(ps, profile, n, other), "ttft")
            for n in (first, last)
        ]
        e2e = [
            _lower(_find(ps, profile, n, base), _find(ps, profile, n, other), "per_turn")
            for n in (first, last)
        ]
        span = f"{profile}, {first} -> {last} turns"
        rows.append(
            [
                PUBLISHED["ttft"][0] + f" ({span})",
                PUBLISHED["ttft"][1],
                f"{_pct(ttft[0])} -> {_pct(ttft[1])} lower",
            ]
        )
        rows.append(
            [
                PUBLISHED["e2e"][0] + f" ({span})",
                PUBLISHED["e2e"][1],
                f"{_pct(e2e[0])} -> {_pct(e2e[1])} lower",
            ]
        )
    for key, profile in (("share_slow", "65tps"), ("share_fast", "1000tps")):
        last = max(p.turns for p in ps)
        found = [(m, _find(ps, profile, last, m)) for m in (base, other)]
        ours = ", ".join(f"{m} {p.share:.1%}" for m, p in found if p is not None)
        if ours:
            rows.append([f"{PUBLISHED[key][0]} ({last} turns)", PUBLISHED[key][1], ours])
    return rows


def write(
    out: Path,
    chains: Chains,
    runs: Sequence[tuple[int, RunResult]],
    origin: dict[str, Any] | None = None,
) -> list[Path]:
    """chains.json (every run, the points) and, with matplotlib, ttft-chain.png."""
    out.mkdir(parents=True, exist_ok=True)
    ps = points(runs)
    data: dict[str, Any] = {
        **(origin if origin is not None else provenance()),
        "workload": attrs.asdict(chains.workload),
        "seed": chains.seed,
        "chain_lengths": list(chains.lengths),
        "inference_profiles": [attrs.asdict(p) for p in chains.profiles],
        "cost_profile": attrs.asdict(chains.costs),
        "repeats": chains.repeats,
        "published": {k: v[1] for k, v in PUBLISHED.items()},
        "points": [attrs.asdict(p) for p in ps],
        "runs": [{"turns": n} | r.to_json() for n, r in runs],
    }
    path = out / "chains.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    title = caption(chains.workload.name, chains.costs.name, chains.repeats)
    plot = chain_plot(out / "ttft-chain.png", ps, list(chains.modes), title)
    return [path] + ([plot] if plot is not None else [])


def replot(directory: Path) -> list[Path]:
    """ttft-chain.png again from the directory's chains.json."""
    data = orjson.loads((directory / "chains.json").read_bytes())
    ps = [Point(**p) for p in data["points"]]
    modes = list(dict.fromkeys(p.mode for p in ps))
    title = caption(data["workload"]["name"], data["cost_profile"]["name"], data["repeats"])
    plot = chain_plot(directory / "ttft-chain.png", ps, modes, title)
    return [] if plot is None else [plot]
