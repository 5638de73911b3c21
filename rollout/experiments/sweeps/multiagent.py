# `rollout compare --multi-agent 1,2,4,8`: a root agent and K subagents, orchestrated inside one
# response (hosted: the multi-agent beta, calls answered by `response.inject`) against by the
# client (K + 1 chained conversations over WebSocket or HTTP), for each K, with the same model
# steps in every shape. Repeats are interleaved (the shapes rotated per repeat); the table and
# the figure give medians and the repeats' min-max; a verdict line per K compares each shape
# with client-http. Writes multi-agent.json and multi-agent.png.
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from rollout.experiments.figures.multiagent import multi_agent_plot
from rollout.experiments.harness.compare import provenance
from rollout.experiments.sweeps.multishapes import (
    CLIENT_SHAPES,
    SHAPES,
    MultiRun,
    hosted_problem,
    run_shape,
)
from rollout.experiments.workloads.multiagent import MultiAgent
from rollout.model.profiles import INFERENCE_PROFILES, CostProfile, InferenceProfile

#: The default numbers of subagents, and what a shape is compared with.
AGENT_COUNTS = (1, 2, 4, 8)
BASE = "client-http"
#: Per run, what the table and the figure show: (field, heading, unit scale).
MEASURES = (
    ("seconds", "wall ms", 1000.0),
    ("bytes_sent", "sent KB", 1e-3),
    ("bytes_received", "received KB", 1e-3),
    ("requests", "requests", 1.0),
    ("events", "events", 1.0),
    ("cpu_s", "server CPU ms", 1000.0),
    ("declared_s", "declared ms", 1000.0),
)


def parse_counts(text: str) -> list[int]:
    """`1,2,4` -> [1, 2, 4]; ValueError unless each is a whole number in 1-16, increasing."""
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or max(counts) > 16 or counts != sorted(set(counts)):
        raise ValueError("--multi-agent takes increasing subagent counts in 1-16, like 1,2,4,8")
    return counts


@attrs.define
class Sweep:
    counts: Sequence[int]
    profile: InferenceProfile
    costs: CostProfile
    calls: int = 3
    repeats: int = 3
    seed: int = 0
    shapes: Sequence[str] = SHAPES
    skipped: dict[str, str] = attrs.field(factory=dict)  # shape -> why it did not run

    def __attrs_post_init__(self) -> None:
        if "hosted" in self.shapes:
            problem = hosted_problem(self.workload(1).build())
            if problem is not None:
                self.skipped["hosted"] = problem
                self.shapes = [s for s in self.shapes if s != "hosted"]

    def workload(self, agents: int) -> MultiAgent:
        return MultiAgent(agents=agents, calls=self.calls, seed=self.seed)

    @property
    def total(self) -> int:
        return len(self.counts) * len(self.shapes) * self.repeats

    async def run(self, progress: Callable[[MultiRun], None] | None = None) -> list[MultiRun]:
        """Every (repeat, K, shape), the shapes rotated per repeat, after one unmeasured run
        of each shape (one subagent, the instant profile) that pays the first-use costs."""
        warm = self.workload(1).build()
        for shape in self.shapes:
            await run_shape(shape, warm, INFERENCE_PROFILES["instant"], self.costs, -1)
        scenarios = {k: self.workload(k).build() for k in self.counts}
        runs = []
        for repeat in range(self.repeats):
            r = repeat % len(self.shapes)
            for k in self.counts:
                for shape in [*self.shapes[r:], *self.shapes[:r]]:
                    run = await run_shape(shape, scenarios[k], self.profile, self.costs, repeat)
                    runs.append(run)
                    if progress is not None:
                        progress(run)
        return runs


def _group(runs: Sequence[MultiRun]) -> dict[tuple[int, str], list[MultiRun]]:
    groups: dict[tuple[int, str], list[MultiRun]] = {}
    for run in sorted(runs, key=lambda r: r.repeat):
        groups.setdefault((run.agents, run.shape), []).append(run)
    return groups


def points(runs: Sequence[MultiRun]) -> list[dict[str, Any]]:
    """Per (K, shape): each measure's values over the repeats (in repeat order), the model
    steps and responses of each run, and the shape's answer."""
    out = []
    for (k, shape), rs in sorted(_group(runs).items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))):
        point: dict[str, Any] = {"agents": k, "shape": shape, "repeats": len(rs)}
        for field, _, _ in MEASURES:
            point[field] = [getattr(r, field) for r in rs]
        point["model_steps"] = [r.model_steps for r in rs]
        point["responses"] = [r.responses for r in rs]
        point["connections"] = rs[0].connections
        point["text"] = rs[0].text
        out.append(point)
    return out


def _order(shape: str) -> int:
    return SHAPES.index(shape) if shape in SHAPES else len(SHAPES)


def _cell(values: Sequence[float], scale: float) -> str:
    mid = statistics.median(values) * scale
    low, high = min(values) * scale, max(values) * scale
    digits = 0 if scale != 1e-3 else 1
    if low == high:
        return f"{mid:,.{digits}f}"
    return f"{mid:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


COLUMNS = ("agents", "shape", "steps", *(head for _, head, _ in MEASURES))


def table(ps: Sequence[dict[str, Any]]) -> list[list[str]]:
    """A row per (K, shape): the model steps, then each measure as median (min-max)."""
    rows = []
    for p in ps:
        steps = sorted(set(p["model_steps"]))
        row = [str(p["agents"]), p["shape"], "/".join(map(str, steps))]
        row += [_cell(p[field], scale) for field, _, scale in MEASURES]
        rows.append(row)
    return rows


def _ratio(a: Sequence[float], b: Sequence[float]) -> str:
    """b against a: the ratio of the medians, and the min-max of the repeats' ratios (repeat
    by repeat: the runs were interleaved)."""
    base = statistics.median(a)
    if not base:
        return "-"
    pairs = [y / x for x, y in zip(a, b, strict=False) if x]
    mid = statistics.median(b) / base
    if len(pairs) < 2:
        return f"{mid:.2f}x"
    return f"{mid:.2f}x ({min(pairs):.2f}-{max(pairs):.2f})"


def verdicts(ps: Sequence[dict[str, Any]]) -> list[str]:
    """A line per K and shape other than client-http: its wall time, bytes each way, requests
    and server CPU against client-http's, and whether the shapes ran the same model steps."""
    lines = []
    by = {(p["agents"], p["shape"]): p for p in ps}
    for k in sorted({p["agents"] for p in ps}):
        base = by.get((k, BASE))
        steps = {s for (kk, _), p in by.items() if kk == k for s in p["model_steps"]}
        same = "same model steps" if len(steps) == 1 else "DIFFERENT model steps"
        if base is None:
            continue
        for shape in SHAPES:
            p = by.get((k, shape))
            if p is None or shape == BASE:
                continue
            req = f"{statistics.median(p['requests']):g} vs {statistics.median(base['requests']):g}"
            lines.append(
                f"{k} subagent{'s' if k > 1 else ''}: {shape} against {BASE}: wall "
                f"{_ratio(base['seconds'], p['seconds'])}, sent "
                f"{_ratio(base['bytes_sent'], p['bytes_sent'])}, received "
                f"{_ratio(base['bytes_received'], p['bytes_received'])}, requests {req}, "
                f"server CPU {_ratio(base['cpu_s'], p['cpu_s'])} ({same}: "
                f"{'/'.join(map(str, sorted(steps)))})"
            )
    return lines


def scaling(ps: Sequence[dict[str, Any]]) -> list[str]:
    """How each shape's requests and wall time grow from the fewest subagents to the most."""
    lines: list[str] = []
    counts = sorted({p["agents"] for p in ps})
    if len(counts) < 2:
        return lines
    first, last = counts[0], counts[-1]
    by = {(p["agents"], p["shape"]): p for p in ps}
    for shape in SHAPES:
        a, b = by.get((first, shape)), by.get((last, shape))
        if a is None or b is None:
            continue
        med = statistics.median
        lines.append(
            f"{shape}, {first} -> {last} subagents: wall {med(a['seconds']) * 1000:,.0f} -> "
            f"{med(b['seconds']) * 1000:,.0f} ms, requests {med(a['requests']):g} -> "
            f"{med(b['requests']):g}, bytes received {med(a['bytes_received']) / 1000:,.1f} -> "
            f"{med(b['bytes_received']) / 1000:,.1f} KB"
        )
    return lines


def same_steps(ps: Sequence[dict[str, Any]]) -> bool:
    """Every shape ran the same number of model steps for each K, in every repeat."""
    for k in {p["agents"] for p in ps}:
        steps = {s for p in ps if p["agents"] == k for s in p["model_steps"]}
        if len(steps) != 1:
            return False
    return True


def caption(sweep_meta: dict[str, Any]) -> str:
    repeats = sweep_meta["repeats"]
    return (
        f"multi-agent, {sweep_meta['calls']} calls per subagent, "
        f"{sweep_meta['inference_profile']['name']}, costs {sweep_meta['cost_profile']['name']}, "
        f"{repeats} repeat{'' if repeats == 1 else 's'}"
    )


def write(
    out: Path, sweep: Sweep, runs: Sequence[MultiRun], origin: dict[str, Any] | None = None
) -> list[Path]:
    """multi-agent.json (every run, the points, the verdicts) and, with matplotlib,
    multi-agent.png."""
    out.mkdir(parents=True, exist_ok=True)
    ps = points(runs)
    data: dict[str, Any] = {
        **(origin if origin is not None else provenance()),
        "workload": {
            "name": MultiAgent.name,
            "description": sweep.workload(max(sweep.counts)).describe(),
            "calls": sweep.calls,
            "client_latency": sweep.workload(1).client_latency.describe(),
        },
        "agent_counts": list(sweep.counts),
        "calls": sweep.calls,
        "seed": sweep.seed,
        "shapes": list(sweep.shapes),
        "skipped": dict(sweep.skipped),
        "inference_profile": attrs.asdict(sweep.profile),
        "cost_profile": attrs.asdict(sweep.costs),
        "repeats": sweep.repeats,
        "points": ps,
        "verdicts": verdicts(ps),
        "scaling": scaling(ps),
        "runs": [r.to_json() for r in runs],
    }
    path = out / "multi-agent.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    plot = multi_agent_plot(out / "multi-agent.png", ps, caption(data))
    return [path] + ([plot] if plot is not None else [])


def replot(directory: Path) -> list[Path]:
    """multi-agent.png again from the directory's multi-agent.json."""
    data = orjson.loads((directory / "multi-agent.json").read_bytes())
    plot = multi_agent_plot(directory / "multi-agent.png", data["points"], caption(data))
    return [] if plot is None else [plot]


__all__ = ["AGENT_COUNTS", "CLIENT_SHAPES", "COLUMNS", "Sweep", "points", "table", "verdicts"]
