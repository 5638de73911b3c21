# `rollout compare --per-turn`: wall time and server CPU per turn against history length, from
# about 1k to beyond 100k tokens, in each mode. The server runs in a child process (procs.py), so
# its CPU time is the kernel's: the child's process CPU clock, read by the client before the
# rollout, at the start of each of its tool calls (a turn's end) and after it.
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import attrs
import orjson

from rollout.client import HttpClient, run_agent
from rollout.experiments.figures.plots import caption, per_turn
from rollout.experiments.harness.compare import provenance
from rollout.experiments.harness.procs import running
from rollout.experiments.harness.run import run_one
from rollout.experiments.workloads.catalog import Dist, Latency, Scenario, Tool, Workload
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES, CostProfile, InferenceProfile

#: The session of the sweep: short model steps, ~2,600-token tool outputs and no client latency,
#: so the history grows by about 2.6k tokens a turn and a turn's time is the API's.
SWEEP = Workload(
    name="history-sweep",
    description="a session whose prompt grows from ~1k to ~110k tokens: 42 tool calls with "
    "~2,600-token outputs, 20-40 output tokens per step, no client latency",
    tool_calls=(42, 42),
    instructions_bytes=3_000,
    tool_defs_bytes=1_500,
    first_message="Read the build logs one by one and tell me which step fails first.",
    tool_output_bytes=(0, 0),
    tool_output_tokens=Dist(median=2_600),
    output_tokens=(20, 40),
    client_latency=Latency(kind="fixed", a=0.0),
)

#: The child: a fresh server for one rollout of the sweep; argv: seed, calls, profile, costs.
_SERVER = """
import functools, sys, trio, attrs
from rollout.engine.engine import Engine
from rollout.experiments.sweeps.perturn import scenario
from rollout.model.profiles import cost_profile, inference_profile
from rollout.server.listen import serve
s = scenario(int(sys.argv[1]), int(sys.argv[2]))
engine = Engine(policy=s.policy(), inference=inference_profile(sys.argv[3]),
                costs=cost_profile(sys.argv[4]))
async def main():
    async with trio.open_nursery() as n:
        port = await n.start(functools.partial(serve, engine, port=0))
        print(port, flush=True)
trio.run(main)
"""


def scenario(seed: int = 0, calls: int = 42) -> Scenario:
    return attrs.evolve(SWEEP, tool_calls=(calls, calls)).build(seed)


@attrs.define
class TurnRun:
    """One rollout of the sweep in one mode: per turn, its history, wall time and server CPU."""

    mode: str
    repeat: int
    history: list[int]  # prompt tokens of each turn's sampling step
    wall_s: list[float]  # the client's: request sent to pause or terminal event
    cpu_s: list[float]  # the server process's CPU time during the turn
    seconds: float


def _timed(tools: dict[str, Tool], cpu: Callable[[], float], at: list[float]) -> dict[str, Tool]:
    def wrap(fn: Tool) -> Tool:
        async def tool(args: dict[str, Any]) -> str:
            at.append(cpu())  # the turn that asked for this call has ended
            result: str = await fn(args)
            return result

        return tool

    return {name: wrap(fn) for name, fn in tools.items()}


async def run_turns(
    mode: str, s: Scenario, profile: str, costs: str, repeat: int, history: Sequence[int]
) -> TurnRun:
    """One rollout against a fresh server in a child process."""
    args = [str(s.seed), str(s.calls), profile, costs]
    async with running(_SERVER, args) as server:
        await _warm_up(server.port, s)
        at = [server.cpu_clock()]
        tools = _timed(s.tools, server.cpu_clock, at)
        result = await run_agent(mode, f"http://127.0.0.1:{server.port}/v1", s.request, tools)
        at.append(server.cpu_clock())
    cpu = [b - a for a, b in pairwise(at)]
    n = min(len(result.turns), len(cpu), len(history))
    return TurnRun(
        mode=mode,
        repeat=repeat,
        history=list(history[:n]),
        wall_s=[t.seconds for t in result.turns[:n]],
        cpu_s=cpu[:n],
        seconds=result.seconds,
    )


async def _warm_up(port: int, s: Scenario) -> None:
    """One short unrelated request first, so the first turn is not the fresh process's first
    request (its imports and first-use setup)."""
    body = {"model": s.request["model"], "input": "warm up", "stream": True, "store": False}
    async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
        async for _ in http.events("/responses", body):
            pass


async def history_of(s: Scenario) -> list[int]:
    """Each sampling step's prompt tokens, the same in every mode (one in-process run)."""
    run = await run_one("ws-append", s, INFERENCE_PROFILES["instant"], COST_PROFILES["cpu-only"])
    return run.step_prompt


@attrs.define
class Sweep:
    scenario: Scenario
    profile: InferenceProfile
    costs: CostProfile
    costs_spec: str  # what the child is told: a profile's name or a TOML file
    modes: Sequence[str]
    repeats: int = 3

    @property
    def total(self) -> int:
        return self.repeats * len(self.modes)

    async def run(self, progress: Callable[[TurnRun], None] | None = None) -> list[TurnRun]:
        history = await history_of(self.scenario)
        runs = []
        for repeat in range(self.repeats):
            k = repeat % len(self.modes)  # interleaved, rotated per repeat
            for mode in [*self.modes[k:], *self.modes[:k]]:
                run = await run_turns(
                    mode, self.scenario, self.profile.name, self.costs_spec, repeat, history
                )
                runs.append(run)
                if progress is not None:
                    progress(run)
        return runs


def per_turn_rows(runs: Sequence[TurnRun], mode: str) -> list[tuple[int, list[float], list[float]]]:
    """Per turn of `mode`: (history tokens, wall seconds of each repeat, CPU seconds of each)."""
    mine = [r for r in runs if r.mode == mode]
    n = min((len(r.wall_s) for r in mine), default=0)
    return [
        (mine[0].history[i], [r.wall_s[i] for r in mine], [r.cpu_s[i] for r in mine])
        for i in range(n)
    ]


def table(runs: Sequence[TurnRun], modes: Sequence[str], at: Sequence[int]) -> list[list[str]]:
    """Rows (mode, history, wall ms median (min-max), CPU ms median (min-max)) at the turns
    nearest each history length in `at`."""
    out = []
    for mode in modes:
        rows = per_turn_rows(runs, mode)
        if not rows:
            continue
        for target in at:
            history, wall, cpu = min(rows, key=lambda row: abs(row[0] - target))
            out.append([mode, f"{history:,}", _cell(wall), _cell(cpu)])
    return out


def _cell(values: Sequence[float]) -> str:
    mid = statistics.median(values) * 1000
    return f"{mid:,.1f} ({min(values) * 1000:,.1f}-{max(values) * 1000:,.1f})"


def write(
    out: Path, sweep: Sweep, runs: Sequence[TurnRun], origin: dict[str, Any] | None = None
) -> list[Path]:
    """per-turn.json (every run) and, with matplotlib, per-turn.png."""
    out.mkdir(parents=True, exist_ok=True)
    data = {
        **(origin if origin is not None else provenance()),
        "workload": attrs.asdict(sweep.scenario.workload) | {"calls": sweep.scenario.calls},
        "seed": sweep.scenario.seed,
        "inference_profile": attrs.asdict(sweep.profile),
        "cost_profile": attrs.asdict(sweep.costs),
        "repeats": sweep.repeats,
        "cpu": "the server process's CPU clock (user + system, all threads), read by the client",
        "runs": [attrs.asdict(r) for r in runs],
    }
    path = out / "per-turn.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    return [path, *_plot(out, data, runs)]


def _plot(out: Path, data: dict[str, Any], runs: Sequence[TurnRun]) -> list[Path]:
    modes = list(dict.fromkeys(r.mode for r in runs))
    series = {m: per_turn_rows(runs, m) for m in modes}
    title = caption(data["workload"]["name"], data["cost_profile"]["name"], data["repeats"])
    title += f", {data['inference_profile']['name']}"
    plot = per_turn(out / "per-turn.png", series, title)
    return [] if plot is None else [plot]


def replot(directory: Path) -> list[Path]:
    """per-turn.png again from the directory's per-turn.json."""
    data = orjson.loads((directory / "per-turn.json").read_bytes())
    return _plot(directory, data, [TurnRun(**r) for r in data["runs"]])
