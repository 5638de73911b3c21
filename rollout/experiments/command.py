# The `rollout compare` command: the mode table (the quick default and --full: the harness's
# experiment, its tables and verdict, a directory per run) and the sweeps beyond it: --replot DIR
# (figures again from a results.json), --per-turn (per-turn wall time and server CPU against
# history length), --chain-lengths (TTFT against chain length, published figures beside ours),
# --agent codex (the Codex CLI over each transport) and --multi-agent (subagents orchestrated in
# one response or by the client). Flag checking, the run with a progress bar, the output. It
# stands above the harness and the sweeps, which it drives.
from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import orjson
import trio
from rich.console import Console

from rollout.client import MODES, SCENARIOS
from rollout.experiments.figures.plots import caption, compare_plots
from rollout.experiments.harness.compare import (
    Experiment,
    command_line,
    load_runs,
    parse_modes,
    provenance,
    run_directory,
    summarize,
    write_results,
)
from rollout.experiments.harness.procs import ChildError
from rollout.experiments.harness.report import console as _console
from rollout.experiments.harness.report import (
    print_header,
    print_published,
    print_tables,
    print_verdicts,
    progress_bar,
)
from rollout.experiments.harness.report import wrote as _wrote
from rollout.experiments.harness.verdict import verdicts
from rollout.experiments.results import RunResult
from rollout.experiments.sweeps import agents_report, chains, codex, multiagent, perturn
from rollout.experiments.sweeps import command as sweep_command
from rollout.experiments.workloads.catalog import workload
from rollout.model.profiles import InferenceProfile, ProfileError, cost_profile, inference_profile
from rollout.upstream.target import UpstreamConfig, UpstreamError

#: How `rollout compare` builds the upstream settings from its flags (rollout.cli's, passed in
#: so that the harness does not import the command line).
UpstreamFrom = Callable[[argparse.Namespace, Mapping[str, str], str], UpstreamConfig]


def command(args: argparse.Namespace, upstream_from: UpstreamFrom) -> int:
    """`rollout compare`: the mode table, or the one sweep its flags choose."""
    err = Console(stderr=True, soft_wrap=True)  # (an error is one line, however long)
    if args.repeats is None:
        args.repeats = 1 if args.agents is not None else 3
    chosen = [
        f
        for f, on in (
            ("--replot", args.replot),
            ("--per-turn", args.per_turn),
            ("--chain-lengths", args.chain_lengths),
            ("--agent", args.agent),
            ("--agents", args.agents),
            ("--multi-agent", args.multi_agent),
        )
        if on
    ]
    engine_flags = [
        f
        for f, v in (
            ("--engine", args.engine),
            ("--kv-policy", args.kv_policy),
            ("--kv-ttl", args.kv_ttl),
            ("--turns", args.turns),
        )
        if v is not None
    ]
    if engine_flags and args.agents is None:
        verb = "goes" if len(engine_flags) == 1 else "go"
        err.print(f"rollout compare: {', '.join(engine_flags)} {verb} with --agents")
        return 2
    try:
        if not chosen:
            return _table(args, upstream_from)
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} are separate runs: choose one")
        if args.repeats < 1:
            raise ValueError("--repeats must be >= 1")
        if args.agents is not None:
            return sweep_command.agents(args)
        if args.multi_agent is not None:
            return sweep_command.multi_agent(args)
        if args.upstream is not None or args.full or args.jobs is not None:
            raise ValueError(f"{chosen[0]} does not take --upstream, --full or --jobs")
        costs = cost_profile(args.costs or SWEEP_COSTS)
        if args.replot:
            return _replot(Path(args.replot))
        if args.per_turn:
            return sweep_command.per_turn(args, costs)
        if args.chain_lengths:
            return sweep_command.chain_lengths(args, costs)
        return sweep_command.agent(args, costs)
    except (ValueError, ProfileError, ChildError, UpstreamError) as exc:
        err.print(f"rollout compare: {exc}")
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the workers are gone; a run writes only at its end
        err.print("rollout compare: interrupted")
        return 128 + signal.SIGINT


#: The mode table's defaults: the quick run, and --full (the whole sweep).
QUICK = {
    "workload": "swe-pro-codex",
    "profiles": "1000tps,4000tps",
    "modes": "http-full,ws-chain,ws-append",
    "costs": "service",
}
FULL = {**QUICK, "profiles": "65tps,1000tps,4000tps", "modes": ",".join(MODES)}
#: The sweeps' cost profile when --costs is not given (they time rollout's own work).
SWEEP_COSTS = "cpu-only"


def default_jobs() -> int:
    """Rollouts at once: one per core, at most 2 (each run is mostly waiting on declared
    latencies; two on two cores measured as one at a time, docs/experiments.md)."""
    return max(1, min(2, os.cpu_count() or 1))


def _table(args: argparse.Namespace, upstream_from: UpstreamFrom) -> int:
    """The mode table: every mode of one workload, per inference profile and repeat."""

    defaults = FULL if args.full else QUICK
    w = workload(args.workload or defaults["workload"])
    if args.calls is not None:
        if args.calls < 0:
            raise ValueError("--calls must be >= 0")
        w = attrs.evolve(w, tool_calls=(args.calls, args.calls))
    names = args.profiles or defaults["profiles"]
    profiles = [inference_profile(n.strip()) for n in names.split(",") if n.strip()]
    modes = parse_modes(args.modes or defaults["modes"])
    if args.repeats < 1:
        raise ValueError("--repeats must be >= 1")
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise ValueError("--jobs must be >= 1")
    costs = cost_profile(args.costs or defaults["costs"])
    upstream = None
    if args.upstream is not None:
        upstream = upstream_from(args, os.environ, "chat")
        profiles = [InferenceProfile(name="upstream")]  # the engine sets the pace
    experiment = Experiment(
        scenario=w.build(args.seed),
        profiles=profiles,
        costs=costs,
        modes=modes,
        repeats=args.repeats,
        upstream=upstream,
        jobs=jobs,
    )
    origin = provenance(command_line())  # the checkout as the run starts
    console = _console()
    print_header(console, experiment, calls_flag=args.calls is not None)
    with progress_bar(console) as bar:
        task = bar.add_task("", total=experiment.total)

        def advance(result: RunResult) -> None:
            bar.update(
                task, advance=1, description=f"{result.profile} {result.mode} {result.seconds:.2f}s"
            )

        results = trio.run(experiment.run, advance)
    summaries = summarize(results)
    print_tables(console, summaries)
    if args.calls is None:  # a session cut by --calls has no published figures to match
        print_published(console, experiment.scenario, results[0])
    print_verdicts(console, verdicts(results, modes))
    out = run_directory(Path(args.out), w.name)
    written = write_results(out, experiment, results, summaries, origin)
    _wrote(console, written, Path(args.out))
    return 0


def _replot(directory: Path) -> int:

    try:
        written = replot(directory)
    except (KeyError, TypeError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"{directory}: not what a compare run writes: {exc!r}") from None
    _wrote(_console(), written)
    return 0


def replot(directory: Path) -> list[Path]:
    """Draw a run's figures again from what it wrote in `directory`: a compare run's
    results.json, a --per-turn run's per-turn.json, a --chain-lengths run's chains.json, a
    --agent run's codex.json, an --agents run's agents.json, a --multi-agent run's
    multi-agent.json (each that is there). ValueError if none is."""
    written: list[Path] = []
    found = False
    if (directory / "results.json").is_file():
        found = True
        data, runs = load_runs(directory)
        seen = list(dict.fromkeys(r.mode for r in runs))
        order = {m: i for i, m in enumerate(MODES + SCENARIOS)}
        modes = sorted(seen, key=lambda m: order.get(m, 99))
        title = caption(data["workload"]["name"], data["cost_profile"]["name"], data["repeats"])
        written += compare_plots(directory, runs, modes, title)
    if (directory / "per-turn.json").is_file():
        found = True
        written += perturn.replot(directory)
    if (directory / "chains.json").is_file():
        found = True
        written += chains.replot(directory)
    if (directory / "codex.json").is_file():
        found = True
        written += codex.replot(directory)
    if (directory / "agents.json").is_file():
        found = True
        written += agents_report.replot(directory)
    if (directory / "multi-agent.json").is_file():
        found = True
        written += multiagent.replot(directory)
    if not found:
        raise ValueError(
            "no results.json, per-turn.json, chains.json, codex.json, agents.json or "
            f"multi-agent.json in {directory}"
        )
    return written
