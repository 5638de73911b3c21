# `rollout compare`: the experiment. For each inference profile, each repeat and each mode (side by
# side, interleaved), one rollout of a named workload (harness/run.py), here or in worker
# processes (harness/worker.py); the summaries per profile and mode; what a run writes: a JSON
# file, PNG plots (with the `plot` extra) and a Chrome trace per mode.
from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from rollout.client import MODES, SCENARIOS
from rollout.experiments.figures.plots import caption, compare_plots
from rollout.experiments.harness.procs import ChildError
from rollout.experiments.harness.run import run_one
from rollout.experiments.harness.worker import Worker, setup_of, warm_up, workers
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Scenario
from rollout.model.profiles import CostProfile, InferenceProfile
from rollout.upstream.target import UpstreamConfig

# -- aggregation --------------------------------------------------------------------------------


def turn_overheads(marks: Sequence[tuple[str, float]]) -> list[float]:
    """Server overhead per turn from a rollout's marks: request (or append) received to first
    token sampled, plus a step's last token to the pause or terminal event sent."""
    out: list[float] = []
    received = sampled = None
    before_first = None
    for name, at in marks:
        if name == "received":
            received = at
        elif name == "first_token" and received is not None:
            before_first = at - received
            received = None
        elif name == "sampled":
            sampled = at
        elif name in ("paused", "terminal") and sampled is not None and before_first is not None:
            out.append(before_first + (at - sampled))
            sampled = before_first = None
    return out


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@attrs.frozen
class Summary:
    profile: str
    mode: str
    runs: int
    seconds: float
    seconds_min: float
    seconds_max: float
    ttft_s: float
    overhead_share: float
    inference_s: float
    client_s: float
    cpu_s: float
    declared_s: float
    scanned_per_turn: float
    tokenized_per_turn: float
    routing: float
    billing: float
    bytes_per_turn: float
    vs_http_full: float | None  # None: http-full is not in the run
    vs_ideal: float
    same_output: bool
    steer_s: float | None = None  # ws-steer: steer sent -> first token of its response


def summarize(results: Sequence[RunResult]) -> list[Summary]:
    """Medians per (profile, mode); ratios against http-full and the ideal rollout."""
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.profile, r.mode), []).append(r)
    reference: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for r in results:
        if r.mode not in SCENARIOS:  # a scenario changes the rollout: it is no reference
            reference.setdefault(r.profile, (r.text, r.calls))
    for r in results:
        reference.setdefault(r.profile, (r.text, r.calls))
    out = []
    for (profile, mode), runs in groups.items():
        secs = [r.seconds for r in runs]
        base = groups.get((profile, "http-full"))
        turns = median([r.turns for r in runs]) or 1
        ref_text, ref_calls = reference[profile]
        out.append(
            Summary(
                profile=profile,
                mode=mode,
                runs=len(runs),
                seconds=median(secs),
                seconds_min=min(secs),
                seconds_max=max(secs),
                ttft_s=median([t for r in runs for t in r.ttft_s]),
                overhead_share=median([max(0.0, r.overhead_s) / r.seconds for r in runs]),
                inference_s=median([r.inference_s for r in runs]),
                client_s=median([r.client_s for r in runs]),
                cpu_s=median([r.cpu_s for r in runs]),
                declared_s=median([r.declared_s for r in runs]),
                scanned_per_turn=median([r.counts["scan"]["tokens"] for r in runs]) / turns,
                tokenized_per_turn=median([r.counts["tokenize"]["tokens"] for r in runs]) / turns,
                routing=median([r.counts["routing"]["calls"] for r in runs]),
                billing=median([r.billed for r in runs]),
                bytes_per_turn=median([r.bytes_sent + r.bytes_received for r in runs]) / turns,
                vs_http_full=median(secs) / median([r.seconds for r in base]) if base else None,
                vs_ideal=median([r.seconds / r.ideal_s for r in runs]),
                same_output=all(r.text == ref_text and r.calls == ref_calls for r in runs),
                steer_s=median([r.steer_s for r in runs if r.steer_s is not None])
                if any(r.steer_s is not None for r in runs)
                else None,
            )
        )
    order = {m: i for i, m in enumerate(MODES + SCENARIOS)}
    profiles = {p: i for i, p in enumerate(dict.fromkeys(r.profile for r in results))}
    return sorted(out, key=lambda s: (profiles[s.profile], order.get(s.mode, 99)))


# -- the experiment -----------------------------------------------------------------------------


@attrs.frozen
class Job:
    """One measured rollout of an experiment: a mode, at a profile, in a repeat."""

    profile: InferenceProfile
    repeat: int
    mode: str


@attrs.define
class Experiment:
    scenario: Scenario
    profiles: Sequence[InferenceProfile]
    costs: CostProfile
    modes: Sequence[str] = MODES
    repeats: int = 3
    upstream: UpstreamConfig | None = None  # a real engine paces the script (profiles unused)
    #: Rollouts at once, each in a worker process of its own (harness/worker.py); 0 runs them
    #: one at a time in this process (the tests' way, and the only one with an upstream).
    jobs: int = 0

    @property
    def total(self) -> int:
        return len(self.profiles) * self.repeats * len(self.modes)

    def schedule(self) -> list[Job]:
        """Every measured rollout in the order they start: repeat by repeat, each profile's
        modes side by side, rotated per repeat so that none always runs first."""
        jobs = []
        for repeat in range(self.repeats):
            k = repeat % len(self.modes)
            for profile in self.profiles:
                for mode in [*self.modes[k:], *self.modes[:k]]:
                    jobs.append(Job(profile, repeat, mode))
        return jobs

    async def run(self, progress: Callable[[RunResult], None] | None = None) -> list[RunResult]:
        """Every job of the schedule (after a warm-up), in the schedule's order."""
        if self.jobs > 0 and self.upstream is None:
            results = await self._run_in_workers(progress)
        else:
            results = await self._run_here(progress)
        order = {(j.profile.name, j.repeat, j.mode): i for i, j in enumerate(self.schedule())}
        return sorted(results, key=lambda r: order[(r.profile, r.repeat, r.mode)])

    async def _run_here(self, progress: Callable[[RunResult], None] | None) -> list[RunResult]:
        if self.upstream is None:
            await warm_up(self.scenario, self.costs, self.modes)
        else:
            # A real engine keeps its cache across runs: one unmeasured run first, so every
            # measured run starts with the engine holding the previous (same) conversation.
            await run_one(
                self.modes[0], self.scenario, self.profiles[0], self.costs, -1, self.upstream
            )
        results: list[RunResult] = []
        for job in self.schedule():
            result = await run_one(
                job.mode, self.scenario, job.profile, self.costs, job.repeat, self.upstream
            )
            results.append(result)
            if progress is not None:
                progress(result)
        return results

    async def _run_in_workers(
        self, progress: Callable[[RunResult], None] | None
    ) -> list[RunResult]:

        pending = list(reversed(self.schedule()))
        results: list[RunResult] = []
        failed: list[ChildError] = []
        setup = setup_of(self.scenario, self.profiles, self.costs, self.modes)

        async def drain(worker: Worker, scope: trio.CancelScope) -> None:
            try:
                while pending:
                    job = pending.pop()
                    result = await worker.run(job.mode, job.profile.name, job.repeat)
                    results.append(result)
                    if progress is not None:
                        progress(result)
            except ChildError as exc:  # a worker died: the run stops, with its stderr
                failed.append(exc)
                scope.cancel()

        count = min(self.jobs, self.total)
        async with workers(count, setup) as started, trio.open_nursery() as nursery:
            for worker in started:
                nursery.start_soon(drain, worker, nursery.cancel_scope)
        if failed:
            raise failed[0]
        return results


def command_line() -> str:
    """The command as typed (`rollout compare ...`), for a run's provenance."""
    return shlex.join(["rollout", *sys.argv[1:]])


def provenance(command: str | None = None) -> dict[str, Any]:
    """Where a run's figures come from: the command (as typed, when known), the commit of the
    checkout the `rollout` package was imported from (None outside a git checkout; `dirty`
    when it had uncommitted changes) and the time."""
    root = Path(__file__).resolve().parents[3]
    commit = None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=10", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode == 0:
            commit = head.stdout.strip()
            status = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            if status.stdout.strip():
                commit += "-dirty"
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "command": command,
        "commit": commit,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_results(
    out: Path,
    experiment: Experiment,
    results: Sequence[RunResult],
    summaries: Sequence[Summary],
    origin: dict[str, Any] | None = None,
) -> list[Path]:
    """results.json, one trace per mode (first run of the fastest profile) and, if matplotlib is
    installed, the plots. Returns the files written. `origin`: the run's provenance, taken as
    it started (the checkout may change while it runs); without it, taken now."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    w = experiment.scenario.workload
    data = {
        **(origin if origin is not None else provenance()),
        "modes": list(experiment.modes),
        "jobs": experiment.jobs,
        "workload": attrs.asdict(w) | {"calls": experiment.scenario.calls},
        "seed": experiment.scenario.seed,
        "inference_profiles": [attrs.asdict(p) for p in experiment.profiles],
        "cost_profile": attrs.asdict(experiment.costs),
        "repeats": experiment.repeats,
        "upstream": None if experiment.upstream is None else experiment.upstream.base_url,
        "summary": [attrs.asdict(s) for s in summaries],
        "runs": [r.to_json() for r in results],
    }
    path = out / "results.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    written.append(path)
    fastest = experiment.profiles[-1].name
    for mode in experiment.modes:
        run = next((r for r in results if r.mode == mode and r.profile == fastest), None)
        if run is None:
            continue
        path = out / f"trace-{mode}.json"
        path.write_bytes(orjson.dumps({"traceEvents": run.trace, "displayTimeUnit": "ms"}))
        written.append(path)
    title = caption(w.name, experiment.costs.name, experiment.repeats)
    written += compare_plots(out, results, experiment.modes, title)
    return written


def parse_modes(text: str | None, default: Sequence[str] = MODES) -> list[str]:
    """`--modes`: comma-separated modes (default: `default`); ValueError naming the unknown."""
    modes = list(default) if text is None else [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES + SCENARIOS]
    if unknown or not modes:
        raise ValueError(f"unknown modes {unknown}; choose from {', '.join(MODES + SCENARIOS)}")
    return modes


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


def load_runs(directory: Path) -> tuple[dict[str, Any], list[RunResult]]:
    """A results.json's data and its runs as RunResults (fields it lacks take their defaults)."""
    data = orjson.loads((directory / "results.json").read_bytes())
    return data, [RunResult.from_json(run) for run in data["runs"]]
