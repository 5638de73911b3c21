# Terminal output of `rollout compare`: a rich progress bar while it runs and one table per
# inference profile afterwards, with the profiles that were simulated printed alongside.
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rollout.experiments.harness.compare import Experiment, Summary
from rollout.experiments.harness.verdict import Verdict
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Scenario
from rollout.experiments.workloads.published import PUBLISHED, beside, shape
from rollout.model.profiles import CostProfile, InferenceProfile


def progress_bar(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]compare"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def print_header(console: Console, experiment: Experiment, calls_flag: bool = False) -> None:
    """What the run does, the workload, and every declared latency it simulates."""
    s = experiment.scenario
    w = s.workload
    low, high = w.tool_calls
    drawn = "set by --calls" if calls_flag else f"the workload draws {low}-{high}"
    if low == high and not calls_flag:
        drawn = "the workload's"
    how = (
        "one at a time in this process"
        if experiment.jobs == 0 or experiment.upstream is not None
        else f"{min(experiment.jobs, experiment.total)} at a time, each in a worker process"
    )
    console.print(
        f"[bold]rollout compare[/]: {len(experiment.modes)} modes x "
        f"{len(experiment.profiles)} profiles x {experiment.repeats} repeats = "
        f"{experiment.total} rollouts, {how}, after an unmeasured warm-up of each mode; modes "
        "interleaved in each repeat, their order rotated"
    )
    console.print(
        f"[bold]workload[/] {w.name} (seed {s.seed}): {w.description}; {s.calls} tool calls "
        f"({drawn}), {len(s.script)} model turns; client tool latency "
        f"{w.client_latency.describe()}"
    )
    if experiment.upstream is not None:
        console.print(
            f"[bold]inference[/] a real engine at {experiment.upstream.base_url} paces the "
            "script: its prefill, decode and prefix cache, measured"
        )
    print_profiles(
        console, experiment.profiles if experiment.upstream is None else (), experiment.costs
    )


#: What each cost profile's latencies stand for, printed with every result.
COSTS_MEANING = {
    "cpu-only": "nothing declared: rollout's own CPU work only (validation, safety scan, "
    "tokenization, encoding), none of the real service's latencies",
    "service": "the real service's stages around inference, declared (simulated) latencies",
}
#: When each declared cost is paid.
COSTS_WHEN = {
    "routing_s": "per request (HTTP) or connection (WebSocket)",
    "safety_base_s": "per scan",
    "safety_per_token_s": "per token scanned",
    "billing_s": "per response (per rollout in the append shapes)",
    "web_search_s": "per hosted web search",
    "code_interpreter_s": "per hosted code interpreter call",
    "file_search_s": "per hosted file search",
    "image_generation_s": "per hosted image generation",
    "connection_setup_s": "per new connection",
}


def profile_lines(profiles: Sequence[InferenceProfile], costs: CostProfile) -> list[str]:
    """The declared inference profiles and cost profile a run simulated, a line each."""
    lines = [
        f"inference {p.name}: ttft {p.ttft_s * 1000:g} ms, prefill {p.prefill_tps:g} tok/s, "
        f"decode {p.decode_tps:g} tok/s"
        for p in profiles
    ]
    c = attrs.asdict(costs)
    name = c.pop("name")
    declared = ", ".join(
        f"{k.removesuffix('_s')} {v * 1000:g} ms {COSTS_WHEN.get(k, '')}".rstrip()
        for k, v in c.items()
        if v
    )
    meaning = COSTS_MEANING.get(name, "declared latencies read from a file")
    lines.append(f"costs {name}: {meaning}" + (f": {declared}" if declared else ""))
    return lines


def print_profiles(
    console: Console, profiles: Sequence[InferenceProfile], costs: CostProfile
) -> None:
    """The declared inference profiles and cost profile a run simulated, one line each."""
    for line in profile_lines(profiles, costs):
        head, rest = line.split(" ", 1)
        console.print(f"[bold]{head}[/] {rest}", highlight=False)


def print_rows(
    console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    """A table of ready-made cells (the first column left-aligned, the rest right)."""
    table = _table(title, columns)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _table(title: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in columns:
        left = col in ("mode", "figure", "profile", "published")
        table.add_column(col, justify="left" if left else "right")
    return table


#: The server-work table's columns (a row: work_row).
WORK_COLUMNS = (
    "mode",
    "scanned tok/turn",
    "tokenized tok/turn",
    "routing decisions",
    "billing writes",
    "bytes/turn",
)


def work_row(s: Summary) -> list[str]:
    """A mode's row of the server-work table: per turn, or per rollout for routing and billing."""
    return [
        s.mode,
        f"{s.scanned_per_turn:,.0f}",
        f"{s.tokenized_per_turn:,.0f}",
        f"{s.routing:g}",
        f"{s.billing:g}",
        f"{s.bytes_per_turn:,.0f}",
    ]


def print_tables(console: Console, summaries: Sequence[Summary]) -> None:
    for profile in dict.fromkeys(s.profile for s in summaries):
        rows = [s for s in summaries if s.profile == profile]
        timing = _table(
            f"{profile}: time (ms, medians)",
            (
                "mode",
                "e2e",
                "min-max",
                "ttft",
                "overhead",
                "inference",
                "client",
                "cpu",
                "declared",
                "vs http-full",
                "vs ideal",
            ),
        )
        work = _table(f"{profile}: server work (medians)", WORK_COLUMNS)
        for s in rows:
            mode = s.mode + ("" if s.same_output else " (!)")
            timing.add_row(
                mode,
                _ms(s.seconds),
                f"{_ms(s.seconds_min)}-{_ms(s.seconds_max)}",
                _ms(s.ttft_s),
                f"{s.overhead_share:.1%}",
                _ms(s.inference_s),
                _ms(s.client_s),
                _ms(s.cpu_s),
                _ms(s.declared_s),
                "-" if s.vs_http_full is None else f"{s.vs_http_full:.3f}",
                f"{s.vs_ideal:.3f}",
            )
            work.add_row(mode, *work_row(s)[1:])
        console.print(timing)
        console.print(work)
        for s in rows:
            if s.steer_s is not None:
                console.print(
                    f"{profile} {s.mode}: steer sent -> first token of the response taking it "
                    f"{_ms(s.steer_s)} ms (median)"
                )
    console.print(
        "overhead: share of end-to-end time beyond inference + client time; cpu: server CPU "
        "stages; declared: simulated service latencies (billing may overlap); vs ideal: "
        "end-to-end / (inference + client time); routing decisions and billing writes: per "
        "rollout. (!) marks a mode whose rollout differed."
    )


def print_verdicts(console: Console, verdicts: Sequence[Verdict]) -> None:
    """The answer: a line per comparison and profile."""
    if not verdicts:
        return
    console.print(
        "[bold]verdict[/] (end to end, medians of the repeats; a difference is called "
        "only where the two modes' min-max do not overlap)"
    )
    for v in verdicts:
        console.print(f"  {v.line()}")


def print_published(console: Console, scenario: Scenario, run: RunResult) -> None:
    """The published figures of the workload's source beside the same figures of this run."""
    name = scenario.workload.name
    if name not in PUBLISHED:
        return
    table = _table(
        f"{name}: published ({scenario.workload.source})", ("figure", "published", "ours")
    )
    for row in beside(name, shape(scenario, run)):
        table.add_row(*row)
    console.print(table)


#: Printed (through rich markup, hence the escaped bracket) when matplotlib is missing.
NO_PLOTS = "(no plots: install the plot extra, pip install 'rollout\\[plot]')"


def console() -> Console:
    found = Console()
    return found if found.is_terminal else Console(width=140)


def wrote(console: Console, written: Sequence[Path], out: Path | None = None) -> None:
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
