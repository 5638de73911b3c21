# The sweeps' side of `rollout compare`: --per-turn, --chain-lengths, --agent codex, --agents and
# --multi-agent, each its
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
from rollout.experiments.sweeps import agents as agent_sweep
from rollout.experiments.sweeps import agents_report, chains, codex, multiagent, perturn
from rollout.experiments.sweeps.multishapes import SHAPES, MultiRun, RunFailed
from rollout.experiments.workloads.catalog import workload
from rollout.model.accel.profile import DEFAULT_ENGINE, engine_profile
from rollout.model.accel.requests import DEFAULT_TTL_S, POLICIES, KvPolicy
from rollout.model.profiles import CostProfile, InferenceProfile, cost_profile, inference_profile


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


def agents(args: argparse.Namespace) -> int:
    """`--agents`: the fleet sweep on one shared engine (rollout.experiments.sweeps.agents)."""
    origin = provenance(command_line())  # the checkout as the run starts
    if args.upstream is not None or args.full or args.profiles is not None:
        raise ValueError(
            "--agents runs on a simulated shared engine (--engine); drop --upstream, --full "
            "and --profiles"
        )
    named = args.kv_policy or ",".join(agent_sweep.AGENT_POLICIES)
    policies = tuple(dict.fromkeys(p.strip() for p in named.split(",") if p.strip()))
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        known = ", ".join(POLICIES)
        raise ValueError(f"--kv-policy: unknown {', '.join(unknown) or named!r} (known: {known})")
    ttl = DEFAULT_TTL_S if args.kv_ttl is None else args.kv_ttl
    if not ttl >= 0 or ttl == float("inf"):
        raise ValueError("--kv-ttl must be a number of seconds >= 0")
    if args.calls is not None and args.turns is not None:
        raise ValueError("--turns is a sweep over --calls: give one of them")
    calls: tuple[int | None, ...] = (None,) if args.calls is None else (args.calls,)
    if args.turns is not None:
        calls = agent_sweep.parse_turns(args.turns)
    if any(c is not None and c < 1 for c in calls):
        raise ValueError("--calls must be >= 1")
    jobs = 2 if args.jobs is None else args.jobs
    if jobs < 1:
        raise ValueError("--jobs must be >= 1")
    sweep = agent_sweep.Sweep(
        workload=workload(args.workload or agent_sweep.AGENT_WORKLOAD),
        engine=engine_profile(args.engine or DEFAULT_ENGINE),
        costs=cost_profile(args.costs or agent_sweep.AGENT_COSTS),
        agents=agent_sweep.parse_counts(args.agents),
        modes=tuple(parse_modes(args.modes or ",".join(agent_sweep.AGENT_MODES))),
        policies=policies,
        ttl_s=ttl,
        calls=calls,
        repeats=args.repeats,
        seed=args.seed,
        jobs=jobs,
    )
    console = _console()
    w = sweep.workload
    console.print(f"[bold]workload[/] {w.name} (seed {args.seed}): {w.description}")
    for line in sweep.engine.describe():
        console.print(line, highlight=False)
    policy_lines = [KvPolicy(p, ttl).describe() for p in policies]  # type: ignore[arg-type]
    console.print("[bold]policies[/] " + "; ".join(policy_lines), highlight=False)
    console.print(
        f"[bold]simulated[/] the engine's steps and the tools' latencies, on a virtual clock "
        f"(agents start over the first {agent_sweep.STAGGER_S:g} s); measured: rollout's CPU",
        highlight=False,
    )
    configs = sweep.configs()
    with progress_bar(console) as bar:
        task = bar.add_task("", total=len(configs))

        def advance(run: dict[str, Any]) -> None:
            bar.update(
                task,
                advance=1,
                description=f"{agent_sweep.Config(**_config_of(run)).label}: JCT "
                f"{run['jct_mean_s']:.0f} s (CPU {run['cpu_s']:.0f} s)",
            )

        runs = sweep.run(advance)
    rows = agents_report.summaries(runs)
    title = "per (agents, mode, policy): simulated seconds; CPU measured"
    print_rows(console, title, agents_report.COLUMNS, agents_report.table(rows))
    for line in agents_report.verdicts(rows):
        console.print(line, highlight=False)
    for label, figure in agents_report.PUBLISHED.values():
        console.print(f"published: {label}: {figure}", highlight=False)
    failed = sum(r["failed"] for r in rows)
    if failed:
        console.print(f"[red]{failed} rollouts failed[/] (agents.json lists them)")
    written = agents_report.write(run_directory(Path(args.out), "agents"), sweep, runs, origin)
    _wrote(console, written, Path(args.out))
    return 1 if failed else 0


def _config_of(run: dict[str, Any]) -> dict[str, Any]:
    return {f.name: run[f.name] for f in attrs.fields(agent_sweep.Config)}


def multi_agent(args: argparse.Namespace) -> int:
    """`--multi-agent`: a root and K subagents in each shape, for each K
    (rollout.experiments.sweeps.multiagent)."""
    origin = provenance(command_line())  # the checkout as the run starts
    if args.upstream is not None or args.full or args.workload is not None:
        raise ValueError("--multi-agent runs its own workload; drop --upstream, --full, --workload")
    if args.jobs is not None:
        raise ValueError("--multi-agent runs one rollout at a time; drop --jobs")
    calls = 3 if args.calls is None else args.calls
    if calls < 1:
        raise ValueError("--calls must be >= 1")
    shapes = list(SHAPES)
    if args.modes is not None:
        shapes = list(dict.fromkeys(s.strip() for s in args.modes.split(",") if s.strip()))
        unknown = [s for s in shapes if s not in SHAPES]
        if unknown or not shapes:
            raise ValueError(
                f"--multi-agent runs the shapes {', '.join(SHAPES)}; not {', '.join(unknown)!r}"
            )
    sweep = multiagent.Sweep(
        counts=multiagent.parse_counts(args.multi_agent),
        profile=_one_profile(args.profiles, "1000tps", "--multi-agent"),
        costs=cost_profile(args.costs or "service"),
        calls=calls,
        repeats=args.repeats,
        seed=args.seed,
        shapes=shapes,
    )
    console = _console()
    w = sweep.workload(max(sweep.counts))
    console.print(
        f"[bold]workload[/] {w.name} (seed {args.seed}, K = "
        f"{', '.join(map(str, sweep.counts))}): {w.describe()}",
        highlight=False,
    )
    print_profiles(console, [sweep.profile], sweep.costs)
    console.print(f"[bold]shapes[/] {', '.join(sweep.shapes)}", highlight=False)
    for shape, why in sweep.skipped.items():
        console.print(f"[yellow]skipped[/] {shape}: {why}", highlight=False)
    if not sweep.shapes:
        raise ValueError("--multi-agent: no shape left to run")
    with progress_bar(console) as bar:
        task = bar.add_task("", total=sweep.total)

        def advance(run: MultiRun) -> None:
            bar.update(
                task, advance=1, description=f"K={run.agents} {run.shape} {run.seconds:.2f}s"
            )

        try:
            runs = trio.run(sweep.run, advance)
        except RunFailed as exc:
            print(f"rollout compare: --multi-agent: {exc}", file=sys.stderr)
            return 1
    ps = multiagent.points(runs)
    title = "per (subagents, shape): median (min-max) of the repeats"
    print_rows(console, title, multiagent.COLUMNS, multiagent.table(ps))
    for line in [*multiagent.verdicts(ps), *multiagent.scaling(ps)]:
        console.print(line, highlight=False)
    written = multiagent.write(run_directory(Path(args.out), "multi-agent"), sweep, runs, origin)
    _wrote(console, written, Path(args.out))
    if not multiagent.same_steps(ps):
        console.print("[red]the shapes ran different numbers of model steps[/]")
        return 1
    return 0
