# What `rollout compare --agents` reports from its runs (rollout.experiments.sweeps.agents): one
# summary row per (agents, mode, kv_policy[, calls]) over the repeats, the knee where KV memory
# fills, each policy's mean JCT against evict's, the published figures beside ours, and the
# files: agents.json (rows, runs, profiles), engine-trace.json (the engine's counters over time)
# and the figures (rollout.experiments.figures.agents).
from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from rollout.experiments.figures.agents import agent_plots, base_calls
from rollout.experiments.harness.compare import provenance
from rollout.experiments.sweeps.agents import Sweep, quantile

FULL = 0.95  # KV memory counts as full from this peak fraction
AGREE = 0.05  # policies "agree" within this relative spread of mean JCT
#: Published figures the sweep's direction is checked against (docs/shared-engine.md).
PUBLISHED = {
    "continuum_jct": (
        "Continuum (arXiv 2511.02230), mean delay vs vLLM's default, SWE-bench/BFCL, "
        "Llama-3.1 8B/70B",
        "1.12-3.66x lower",
    ),
    "continuum_turns": ("Continuum: the gain as turns per rollout grow", "grows"),
}

Key = tuple[int, str, str, int | None]


def key_of(run: dict[str, Any]) -> Key:
    return (run["agents"], run["mode"], run["kv_policy"], run.get("calls"))


def summaries(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (agents, mode, kv_policy, calls): medians over the repeats, the spread of
    their means, and percentiles of every rollout's JCT pooled."""
    groups: dict[Key, list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(key_of(run), []).append(run)
    rows = []
    for (agents, mode, policy, calls), rs in sorted(groups.items(), key=_order):
        means = [r["jct_mean_s"] for r in rs]
        pooled = [x for r in rs for x in r["jct_s"]]

        def med(field: str, runs: list[dict[str, Any]] = rs) -> float:
            return statistics.median(r[field] for r in runs)

        rows.append(
            {
                "agents": agents,
                "mode": mode,
                "kv_policy": policy,
                "calls": calls,
                "repeats": len(rs),
                "jct_mean_s": statistics.median(means),
                "jct_mean_min_s": min(means),
                "jct_mean_max_s": max(means),
                "jct_p10_s": quantile(pooled, 0.10),
                "jct_p90_s": quantile(pooled, 0.90),
                "jct_p95_s": quantile(pooled, 0.95),
                "rollouts_per_hour": med("rollouts_per_hour"),
                "decode_tokens_per_s": med("decode_tokens_per_s"),
                "queue_s_per_request": med("queue_s_per_request"),
                "kv_peak_fraction": med("kv_peak_fraction"),
                "kv_held_peak_fraction": med("kv_held_peak_fraction"),
                "recomputed_tokens": med("recomputed_tokens"),
                "preemptions": med("preemptions"),
                "completed": sum(r["completed"] for r in rs),
                "failed": sum(len(r["failed"]) for r in rs),
                "cpu_s": med("cpu_s"),
            }
        )
    return rows


def _order(item: tuple[Key, Any]) -> tuple[Any, ...]:
    (agents, mode, policy, calls), _ = item
    return (calls or 0, mode, agents, policy)


def gains(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each policy's mean JCT against evict's in the same (agents, mode, calls): evict / it."""
    evict = {(r["agents"], r["mode"], r["calls"]): r for r in rows if r["kv_policy"] == "evict"}
    out = []
    for r in rows:
        base = evict.get((r["agents"], r["mode"], r["calls"]))
        if base is None or r["kv_policy"] == "evict" or not r["jct_mean_s"] > 0:
            continue
        out.append(
            {
                "agents": r["agents"],
                "mode": r["mode"],
                "calls": r["calls"],
                "kv_policy": r["kv_policy"],
                "lower_jct": base["jct_mean_s"] / r["jct_mean_s"],
                "lower_jct_min": base["jct_mean_min_s"] / r["jct_mean_max_s"],
                "lower_jct_max": base["jct_mean_max_s"] / r["jct_mean_min_s"],
                "pressure": base["kv_peak_fraction"] >= FULL,
                "repeats": min(base["repeats"], r["repeats"]),
            }
        )
    return out


def verdicts(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The knee, the ordering under pressure, agreement with ample memory, the turns trend."""
    lines = []
    base = base_calls(rows)
    for mode in dict.fromkeys(r["mode"] for r in rows):
        mine = [r for r in rows if r["mode"] == mode and r["calls"] == base]
        evict = sorted((r for r in mine if r["kv_policy"] == "evict"), key=lambda r: r["agents"])
        full = [r["agents"] for r in evict if r["kv_peak_fraction"] >= FULL]
        roomy = [r["agents"] for r in evict if r["kv_peak_fraction"] < FULL]
        if evict:
            knee = f"from {_agents(full[0])}" if full else "at none of these counts"
            below = ""
            if roomy:
                peak = max(r["kv_peak_fraction"] for r in evict if r["agents"] in roomy)
                below = f" (peak {peak:.0%} at {max(roomy)})"
            calls = "" if base is None else f", {base} tool calls"
            lines.append(f"{mode}{calls}: KV memory full {knee}{below}")
        for n in roomy:
            at = [r["jct_mean_s"] for r in mine if r["agents"] == n]
            if len(at) > 1:
                spread = (max(at) - min(at)) / min(at)
                word = "agree within" if spread <= AGREE else "differ by"
                lines.append(f"{mode}, {_agents(n)} (ample memory): policies {word} {spread:.1%}")
    for g in gains(rows):
        if g["pressure"]:
            calls = "" if g["calls"] is None else f", {g['calls']} calls"
            spread = (
                f" ({g['lower_jct_min']:.2f}-{g['lower_jct_max']:.2f}x over the repeats)"
                if g["repeats"] > 1
                else ""
            )
            lines.append(
                f"{g['mode']}, {_agents(g['agents'])}{calls} (memory full): {g['kv_policy']} "
                f"{g['lower_jct']:.2f}x lower mean JCT than evict{spread}"
            )
    return lines + turns_trend(rows)


def _agents(n: int) -> str:
    return f"{n} agent" if n == 1 else f"{n} agents"


def turns_trend(rows: Sequence[dict[str, Any]]) -> list[str]:
    """With more than one `--turns` value: each policy's gain over evict by tool calls per
    rollout, and whether it grows with them."""
    by: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for g in gains(rows):
        if g["calls"] is not None:
            by.setdefault((g["mode"], g["agents"], g["kv_policy"]), []).append(g)
    lines = []
    for (mode, agents, policy), gs in by.items():
        if len(gs) < 2:
            continue
        gs.sort(key=lambda g: g["calls"])
        xs = [g["lower_jct"] for g in gs]
        steps = list(itertools.pairwise(xs))
        trend = "grows" if all(b > a for a, b in steps) else "does not grow"
        if all(b < a for a, b in steps):
            trend = "shrinks"
        calls = "/".join(str(g["calls"]) for g in gs)
        figures = "/".join(f"{x:.2f}x" for x in xs)
        lines.append(
            f"{mode}, {_agents(agents)}: {policy}'s gain over evict at {calls} tool calls: "
            f"{figures} ({trend} with turns)"
        )
    return lines


def table(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    columns = []
    for r in rows:
        calls = "" if r["calls"] is None else str(r["calls"])
        columns.append(
            [
                str(r["agents"]),
                r["mode"],
                r["kv_policy"],
                calls,
                f"{r['jct_mean_s']:.0f} ({r['jct_p10_s']:.0f}-{r['jct_p90_s']:.0f})",
                f"{r['jct_p95_s']:.0f}",
                f"{r['rollouts_per_hour']:.0f}",
                f"{r['kv_peak_fraction']:.2f}",
                f"{r['recomputed_tokens'] / 1e6:.2f}M",
                f"{r['preemptions']:.0f}",
                f"{r['queue_s_per_request']:.1f}",
                f"{r['cpu_s']:.1f}",
            ]
        )
    return columns


COLUMNS = (
    "agents",
    "mode",
    "kv",
    "calls",
    "JCT s mean (p10-p90)",
    "p95",
    "rollouts/h",
    "KV peak",
    "recomputed",
    "preempt",
    "queue s/req",
    "CPU s",
)


def write(
    out: Path,
    sweep: Sweep,
    runs: Sequence[dict[str, Any]],
    origin: dict[str, Any] | None = None,
) -> list[Path]:
    """agents.json and the figures."""
    out.mkdir(parents=True, exist_ok=True)
    rows = summaries(runs)
    data: dict[str, Any] = {
        **(origin if origin is not None else provenance()),
        "workload": attrs.asdict(sweep.workload),
        "engine_profile": attrs.asdict(sweep.engine) | {"derived": sweep.engine.describe()},
        "cost_profile": attrs.asdict(sweep.costs),
        "ttl_s": sweep.ttl_s,
        "seed": sweep.seed,
        "repeats": sweep.repeats,
        "simulated": "jct, makespan, queue and engine figures are simulated time (a virtual "
        "clock); cpu_s and wall_s are measured",
        "published": {k: v[1] for k, v in PUBLISHED.items()},
        "rows": rows,
        "gains": gains(rows),
        "runs": list(runs),
    }
    path = out / "agents.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    trace = out / "engine-trace.json"
    trace.write_bytes(orjson.dumps(engine_trace(runs)))
    return [path, trace, *agent_plots(out, rows, list(runs), _caption(sweep))]


def engine_trace(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The engine's counters over simulated time as a Chrome trace (Perfetto): a process per
    run of the largest fleet, counter tracks of KV memory (used, held) and sequences (running,
    waiting)."""
    calls = base_calls(runs)
    base = [r for r in runs if r.get("calls") == calls and r["repeat"] == 0]
    if not base:
        return {"traceEvents": []}
    n = max(r["agents"] for r in base)
    events: list[dict[str, Any]] = []
    for pid, run in enumerate(r for r in base if r["agents"] == n):
        name = f"{run['agents']} agents {run['mode']} {run['kv_policy']} (simulated time)"
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        for t, used, held, running, waiting in run["series"]:
            ts = round(t * 1e6)
            events.append(
                {
                    "name": "KV blocks",
                    "ph": "C",
                    "ts": ts,
                    "pid": pid,
                    "args": {"used": used, "held by paused": held},
                }
            )
            events.append(
                {
                    "name": "sequences",
                    "ph": "C",
                    "ts": ts,
                    "pid": pid,
                    "args": {"running": running, "waiting": waiting},
                }
            )
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _caption(sweep: Sweep) -> str:
    return (
        f"{sweep.workload.name} on {sweep.engine.name} (simulated time); {sweep.repeats} "
        f"repeat(s); ttl {sweep.ttl_s:g} s"
    )


def replot(directory: Path) -> list[Path]:
    data = orjson.loads((directory / "agents.json").read_bytes())
    caption = (
        f"{data['workload']['name']} on {data['engine_profile']['name']} (simulated time); "
        f"{data['repeats']} repeat(s); ttl {data['ttl_s']:g} s"
    )
    return agent_plots(directory, data["rows"], data["runs"], caption)
