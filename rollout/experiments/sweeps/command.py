# The sweeps' side of `rollout compare`: --per-turn, --chain-lengths and --agent codex, each its
# flags checked, its run with a progress bar (or a line per run), its table and its files in a
# run directory of its own. rollout.experiments.command dispatches to them.
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

from rollout.experiments.harness.compare import (
    command_line,
    parse_modes,
    provenance,
    run_directory,
)
from rollout.experiments.harness.report import console as _console
from rollout.experiments.harness.report import print_profiles, print_rows, progress_bar
from rollout.experiments.harness.report import wrote as _wrote
from rollout.experiments.results import RunResult
from rollout.experiments.sweeps import chains, codex, perturn
from rollout.experiments.workloads.catalog import workload
from rollout.model.profiles import CostProfile, InferenceProfile, inference_profile


def _profiles(text: str | None, default: str) -> list[InferenceProfile]:
    return [inference_profile(n.strip()) for n in (text or default).split(",") if n.strip()]


def _one_profile(text: str | None, default: str, flag: str) -> InferenceProfile:
    profiles = _profiles(text, default)
    if len(profiles) != 1:
        raise ValueError(f"{flag} runs one inference profile (--profiles NAME)")
    return profiles[0]


def per_turn(args: argparse.Namespace, costs: CostProfile) -> int:
    origin = provenance(command_line())  # the checkout as the run starts

    profile = _one_profile(args.profiles, "instant", "--per-turn")
    if args.workload is not None:
        raise ValueError("--per-turn runs its own workload (history-sweep); drop --workload")
    calls = 42 if args.calls is None else args.calls
    if calls < 1:
        raise ValueError("--calls must be >= 1")
    sweep = perturn.Sweep(
        scenario=perturn.scenario(args.seed, calls),
        profile=profile,
        costs=costs,
        costs_spec=args.costs or costs.name,
        modes=parse_modes(args.modes),
        repeats=args.repeats,
    )
    console = _console()
    w = sweep.scenario.workload
    console.print(
        f"[bold]workload[/] {w.name} ({calls} tool calls, seed {args.seed}): {w.description}"
    )
    print_profiles(console, [profile], costs)
    with progress_bar(console) as bar:
        task = bar.add_task("", total=sweep.total)

        def advance(run: perturn.TurnRun) -> None:
            bar.update(task, advance=1, description=f"{run.mode} {run.seconds:.2f}s")

        runs = trio.run(sweep.run, advance)
    rows = perturn.table(runs, sweep.modes, (1_000, 10_000, 30_000, 60_000, 100_000))
    columns = ("mode", "history tokens", "wall ms/turn", "server CPU ms/turn")
    print_rows(console, "per turn (median (min-max) of the repeats)", columns, rows)
    _wrote(
        console,
        perturn.write(run_directory(Path(args.out), "per-turn"), sweep, runs, origin),
        Path(args.out),
    )
    return 0


def chain_lengths(args: argparse.Namespace, costs: CostProfile) -> int:
    origin = provenance(command_line())  # the checkout as the run starts

    lengths = chains.parse_lengths(args.chain_lengths)
    if args.calls is not None:
        raise ValueError("--chain-lengths sets the calls per rollout; drop --calls")
    w = chains.CHAIN_WORKLOAD if args.workload is None else workload(args.workload)
    modes = parse_modes(args.modes, chains.CHAIN_MODES)
    if len(modes) != 2:
        raise ValueError("--chain-lengths compares two modes (default: http-chain,ws-chain)")
    run = chains.Chains(
        workload=w,
        lengths=lengths,
        profiles=_profiles(args.profiles, "1000tps"),
        costs=costs,
        modes=modes,
        repeats=args.repeats,
        seed=args.seed,
    )
    console = _console()
    console.print(
        f"[bold]workload[/] {w.name} (seed {args.seed}): {w.description}; chain lengths "
        f"{', '.join(map(str, lengths))} turns"
    )
    print_profiles(console, run.profiles, costs)
    with progress_bar(console) as bar:
        task = bar.add_task("", total=run.total)

        def advance(r: RunResult) -> None:
            bar.update(task, advance=1, description=f"{r.profile} {r.mode} {r.turns} turns")

        runs = trio.run(run.run, advance)
    points = chains.points(runs)
    title = "by chain length (ms, median (min-max) of the repeats)"
    print_rows(console, title, chains.columns(modes), chains.table(points, modes))
    print_rows(
        console,
        "published beside ours",
        ("figure", "published", "ours"),
        chains.beside(points, modes),
    )
    _wrote(
        console,
        chains.write(run_directory(Path(args.out), "chains"), run, runs, origin),
        Path(args.out),
    )
    return 0


def agent(args: argparse.Namespace, costs: CostProfile) -> int:
    origin = provenance(command_line())  # the checkout as the run starts

    profile = _one_profile(args.profiles, "1000tps", "--agent")
    if args.modes is not None or args.workload is not None:
        raise ValueError(
            "--agent codex runs its transports (ws, http) on its own task; drop "
            "--modes and --workload"
        )
    calls = 3 if args.calls is None else args.calls
    try:
        binary = codex.find_codex(os.environ)
        version = codex.codex_version(binary)
        console = _console()
        console.print(
            f"[bold]agent[/] {version} ({binary}): {codex.PROMPT!r} in a scratch "
            f"workspace; the default model, {calls} tool calls, seed {args.seed}"
        )
        print_profiles(console, [profile], costs)

        def progress(run: codex.CodexRun) -> None:
            console.print(
                f"  {run.transport} repeat {run.repeat}: {run.seconds:.2f} s, "
                f"{run.turns} turns, {run.commands} commands"
            )

        runs = trio.run(
            codex.run_all,
            binary,
            profile,
            costs,
            codex.TRANSPORTS,
            args.repeats,
            calls,
            args.seed,
            progress,
        )
    except codex.AgentError as exc:
        print(f"rollout compare: {exc}", file=sys.stderr)
        return 2
    for figure in codex.figures(runs):
        print(figure.line())
    meta: dict[str, Any] = {
        "agent": "codex",
        "binary": binary,
        "version": version,
        "prompt": codex.PROMPT,
        "calls": calls,
        "seed": args.seed,
        "inference_profile": attrs.asdict(profile),
        "cost_profile": attrs.asdict(costs),
        "repeats": args.repeats,
    }
    written = codex.write(run_directory(Path(args.out), "codex"), runs, meta, origin)
    _wrote(console, written, Path(args.out))
    return 0
