# The sweeps of `rollout compare` beyond the mode table: --replot DIR (figures again from a
# results.json), --per-turn (per-turn wall time and server CPU against history length),
# --chain-lengths (TTFT against chain length, published figures beside ours) and --agent codex
# (the Codex CLI over each transport). Flag checking, the run with a progress bar, the output.
from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio
from rich.console import Console

from rollout.client import MODES, SCENARIOS
from rollout.experiments.figures.plots import caption, compare_plots
from rollout.experiments.harness.procs import ChildError
from rollout.experiments.harness.results import RunResult
from rollout.experiments.sweeps import chains, codex, perturn
from rollout.experiments.workloads.catalog import workload
from rollout.model.profiles import (
    CostProfile,
    InferenceProfile,
    ProfileError,
    cost_profile,
    inference_profile,
)
from rollout.upstream.config import UpstreamConfig, UpstreamError

#: Printed (through rich markup, hence the escaped bracket) when matplotlib is missing.
NO_PLOTS = "(no plots: install the plot extra, pip install 'rollout\\[plot]')"


def parse_modes(text: str | None, default: Sequence[str] = MODES) -> list[str]:
    """`--modes`: comma-separated modes (default: `default`); ValueError naming the unknown."""
    modes = list(default) if text is None else [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES + SCENARIOS]
    if unknown or not modes:
        raise ValueError(f"unknown modes {unknown}; choose from {', '.join(MODES + SCENARIOS)}")
    return modes


def _profiles(text: str | None, default: str) -> list[InferenceProfile]:
    return [inference_profile(n.strip()) for n in (text or default).split(",") if n.strip()]


def _one_profile(text: str | None, default: str, flag: str) -> InferenceProfile:
    profiles = _profiles(text, default)
    if len(profiles) != 1:
        raise ValueError(f"{flag} runs one inference profile (--profiles NAME)")
    return profiles[0]


def _console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=140)


def _wrote(console: Console, written: Sequence[Path], out: Path | None = None) -> None:
    """The files a run wrote; with `out`, that they are its own directory under `out`, which
    `out/latest` points to and which keeps the earlier runs."""
    if written and out is not None:
        run = written[0].parent
        console.print(
            f"wrote {run}/: " + ", ".join(p.name for p in written) + f" ({out / 'latest'} "
            "points here; earlier runs are kept beside it)"
        )
    else:
        console.print("wrote " + ", ".join(str(p) for p in written))
    if not any(p.suffix == ".png" for p in written):
        console.print(NO_PLOTS)


#: How `rollout compare` builds the upstream settings from its flags (rollout.cli's, passed in
#: so that the harness does not import the command line).
UpstreamFrom = Callable[[argparse.Namespace, Mapping[str, str], str], UpstreamConfig]


def command(args: argparse.Namespace, upstream_from: UpstreamFrom) -> int:
    """`rollout compare`: the mode table, or the one sweep its flags choose."""
    err = Console(stderr=True)
    chosen = [
        f
        for f, on in (
            ("--replot", args.replot),
            ("--per-turn", args.per_turn),
            ("--chain-lengths", args.chain_lengths),
            ("--agent", args.agent),
        )
        if on
    ]
    try:
        if not chosen:
            return _table(args, upstream_from)
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} are separate runs: choose one")
        if args.repeats < 1:
            raise ValueError("--repeats must be >= 1")
        if args.upstream is not None or args.full or args.jobs is not None:
            raise ValueError(f"{chosen[0]} does not take --upstream, --full or --jobs")
        costs = cost_profile(args.costs or SWEEP_COSTS)
        if args.replot:
            return _replot(Path(args.replot))
        if args.per_turn:
            return _per_turn(args, costs)
        if args.chain_lengths:
            return _chains(args, costs)
        return _agent(args, costs)
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


def command_line() -> str:
    """The command as typed (`rollout compare ...`), for a run's provenance."""
    return shlex.join(["rollout", *sys.argv[1:]])


def run_directory(out: Path, label: str) -> Path:
    """A new directory for one run under `out` (`YYYYmmdd-HHMMSS-label`, suffixed when taken),
    with `out/latest` pointing at it; earlier runs stay beside it."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}-{label}"
    n = 2
    while (out / name).exists():
        name = f"{stamp}-{label}-{n}"
        n += 1
    run = out / name
    run.mkdir()
    latest = out / "latest"
    temporary = out / f".latest-{os.getpid()}"
    try:
        temporary.symlink_to(name, target_is_directory=True)
        os.replace(temporary, latest)
    except OSError:  # no symbolic links here (or `latest` is a directory): name the run instead
        temporary.unlink(missing_ok=True)
        if not latest.is_dir() or latest.is_symlink():
            latest.unlink(missing_ok=True)
            (out / "latest.txt").write_text(name + "\n")
    return run


def _table(args: argparse.Namespace, upstream_from: UpstreamFrom) -> int:
    """The mode table: every mode of one workload, per inference profile and repeat."""
    from rollout.experiments.harness.compare import (
        Experiment,
        provenance,
        summarize,
        write_results,
    )
    from rollout.experiments.harness.report import (
        print_header,
        print_published,
        print_tables,
        print_verdicts,
        progress_bar,
    )
    from rollout.experiments.harness.verdict import verdicts

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


def _per_turn(args: argparse.Namespace, costs: CostProfile) -> int:
    from rollout.experiments.harness.report import print_profiles, print_rows, progress_bar

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
        costs_spec=args.costs or SWEEP_COSTS,
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
        perturn.write(run_directory(Path(args.out), "per-turn"), sweep, runs),
        Path(args.out),
    )
    return 0


def _chains(args: argparse.Namespace, costs: CostProfile) -> int:
    from rollout.experiments.harness.report import print_profiles, print_rows, progress_bar
    from rollout.experiments.workloads.catalog import workload

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
        console, chains.write(run_directory(Path(args.out), "chains"), run, runs), Path(args.out)
    )
    return 0


def _agent(args: argparse.Namespace, costs: CostProfile) -> int:
    from rollout.experiments.harness.report import print_profiles

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
    _wrote(console, codex.write(run_directory(Path(args.out), "codex"), runs, meta), Path(args.out))
    return 0


def load_runs(directory: Path) -> tuple[dict[str, Any], list[RunResult]]:
    """A results.json's data and its runs as RunResults (fields it lacks take their defaults)."""
    data = orjson.loads((directory / "results.json").read_bytes())
    return data, [RunResult.from_json(run) for run in data["runs"]]


def replot(directory: Path) -> list[Path]:
    """Draw a run's figures again from what it wrote in `directory`: a compare run's
    results.json, a --per-turn run's per-turn.json, a --chain-lengths run's chains.json, a
    --agent run's codex.json (each that is there). ValueError if none is."""
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
    if not found:
        raise ValueError(
            f"no results.json, per-turn.json, chains.json or codex.json in {directory}"
        )
    return written
