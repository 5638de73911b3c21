# `rollout bench overhead`: what one turn costs the server, as the CPU time of the server's
# process (parsing, writes and all; not the gap between marks inside it), against the length of
# the history. One server process per history size; rollouts of every mode and size run
# round-robin, and each rollout's turns after the first (which carries the history in) form one
# measurement window, divided by its turns. Medians over the repeats.
from __future__ import annotations

import statistics
from collections.abc import Sequence
from contextlib import AsyncExitStack

import attrs
import trio

from rollout.client import run_agent
from rollout.client.agent import Turn
from rollout.client.modes import TABLE
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.harness.procs import ChildServer, running
from rollout.experiments.workloads.catalog import Latency, Scenario, Workload

#: The compared modes whose turns end at a pause or terminal event, after which the server is
#: idle and its CPU clock can be read (not a multi-agent response's turn, which ends at a call).
MODES = tuple(m.name for m in TABLE if not m.scenario and not m.at_call)
GATED = ("ws-chain", "ws-append")  # history-independent by design: 100k <= 1.2 x 1k
PER_TOKEN = ("http-full", "http-chain")  # resend (or re-read) the history: cost per token
#: http-full at 100k tokens: <= 0.6 x the 118 ms of server CPU per turn that
#: scripts/history_cpu.py (a one-off, last at 5d4eeb7) measured at the commit before the
#: streaming work (74bf0db^), side by side with main, on a history of the same size: 71 ms, that
#: comparison's figure carried over to the bench's own scenario.
HTTP_FULL_100K_MS = 71
CALLS = 12  # tool calls per rollout: the window is the 12 turns after the first
SETTLE_S = 0.05  # after a window, for work the server does after its last event (billing, store)

BASE = Workload(
    name="bench-history",
    description="history of a given size, then one-token steps, each calling a tool",
    tool_calls=(CALLS, CALLS),
    instructions_bytes=500,
    tool_defs_bytes=1_500,
    first_message="go on",
    tool_output_bytes=(100, 100),
    output_tokens=(1, 1),
    client_latency=Latency(kind="fixed", a=0.0),
)


def scenario(history_tokens: int, calls: int = CALLS) -> Scenario:
    return attrs.evolve(BASE, history_tokens=history_tokens, tool_calls=(calls, calls)).build(0)


# The server of one history size (argv[1] tokens, argv[2] calls): the scenario's script, no
# inference time, CPU-only costs.
SERVER = """
import sys, rollout
from rollout.experiments.harness.procs import serve_engine
from rollout.experiments.bench.turncost import scenario
engine = rollout.Engine(policy=scenario(int(sys.argv[1]), int(sys.argv[2])).policy())
serve_engine(engine)
"""


async def cpu_per_turn(server: ChildServer, mode: str, s: Scenario) -> float:
    """One rollout in `mode`; the server's CPU seconds per turn over its turns after the first
    (read once the server is idle after the first turn, and again after the last)."""
    marks: list[float] = []

    async def after(turn: Turn) -> None:
        if not marks or not turn.calls:
            await trio.sleep(SETTLE_S)
            marks.append(server.cpu_seconds())

    result = await run_agent(
        mode, f"http://127.0.0.1:{server.port}/v1", s.request, s.tools, after_turn=after
    )
    turns = len(result.turns) - 1
    if len(marks) != 2 or turns < 1:
        raise RuntimeError(f"{mode}: the rollout had {len(result.turns)} turns, expected more")
    return (marks[1] - marks[0]) / turns


async def overhead_vs_history(
    report: Report,
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000),
    repeats: int = 7,
    modes: Sequence[str] = MODES,
    calls: int = CALLS,
) -> None:
    scenarios = {size: scenario(size, calls) for size in sizes}
    values: dict[tuple[str, int], list[float]] = {(m, n): [] for m in modes for n in sizes}
    async with AsyncExitStack() as stack:
        servers = {
            size: await stack.enter_async_context(running(SERVER, [str(size), str(calls)]))
            for size in sizes
        }
        for repeat in range(repeats + 1):  # interleaved; the first round warms every server up
            k = repeat % len(sizes)
            for size in [*sizes[k:], *sizes[:k]]:
                j = repeat % len(modes)
                for mode in [*modes[j:], *modes[:j]]:
                    value = await cpu_per_turn(servers[size], mode, scenarios[size])
                    if repeat:
                        values[(mode, size)].append(value)
    for figure in figures({key: statistics.median(v) for key, v in values.items()}, sizes, modes):
        report(figure)


def label(tokens: int) -> str:
    """A history size in a figure's name: `100k`, or the count below a thousand."""
    return f"{tokens // 1000}k" if tokens % 1000 == 0 else str(tokens)


def figures(
    cpu: dict[tuple[str, int], float], sizes: Sequence[int], modes: Sequence[str]
) -> list[Figure]:
    """The bench's lines from the medians (CPU seconds per turn by mode and size)."""
    out = []
    small, large = sizes[0], sizes[-1]
    for size in sizes:
        for mode in modes:
            ms = cpu[(mode, size)] * 1000
            if mode == "http-full" and size == 100_000:
                target = f"<={HTTP_FULL_100K_MS}"
                out.append(
                    Figure(f"turn_cpu.{mode}.100k", ms, "ms", target, ms <= HTTP_FULL_100K_MS)
                )
            else:
                out.append(Figure(f"turn_cpu.{mode}.{label(size)}", ms, "ms"))
    for mode in modes:
        ratio = cpu[(mode, large)] / cpu[(mode, small)]
        name = f"turn_cpu_ratio.{mode}.{label(large)}_vs_{label(small)}"
        if mode in GATED:
            out.append(Figure(name, ratio, "x", "<=1.2", ratio <= 1.2))
        else:
            out.append(Figure(name, ratio, "x"))
    for mode in PER_TOKEN:
        if mode in modes:
            slope = (cpu[(mode, large)] - cpu[(mode, small)]) / (large - small)
            out.append(Figure(f"turn_cpu_per_history_token.{mode}", slope * 1e6, "us/token"))
    return out
