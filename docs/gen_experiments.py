"""Generate the tables of docs/experiments.md from the runs kept in docs/results/, so that no
figure on that page is typed by hand.

    python docs/gen_experiments.py                  # rewrite the generated blocks
    python docs/gen_experiments.py --check          # exit 1 if a block is out of date
    python docs/gen_experiments.py --take RUN NAME  # copy a run's directory to docs/results/NAME
                                                    # (replacing it), then rewrite the blocks
    python docs/gen_experiments.py --quick          # run the README's `rollout compare` now,
                                                    # take it as docs/results/quick, rewrite

A generated block is the text between `<!-- generated: KIND NAME -->` and `<!-- end generated
-->`; KIND says what is drawn from docs/results/NAME: `compare` (a mode table's results.json:
the command and commit that produced it, what it simulated, a time and a work table per
profile, the verdict lines), `published` (the workload's published figures beside the run's),
`times` (a mode table's end-to-end times alone), `phases` (where each mode's time goes),
`per-turn` (per-turn.json), `chains`
(chains.json), `codex` (codex.json), `agents` (agents.json of `--agents`), `multi-agent`
(multi-agent.json of `--multi-agent`). The tables are made
by the same functions `rollout compare` prints with. --check also fails when
docs/results/quick was not produced by the quick default of the current code (the workload,
profiles, modes, cost profile and repeats `rollout compare` runs without flags), so changing
the default without running it again fails the tests
(tests/e2e/docs/test_experiments_doc.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cattrs
import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = HERE / "experiments.md"
RESULTS = HERE / "results"
BLOCK = re.compile(
    r"(<!-- generated: (?P<kind>[\w-]+) (?P<name>[\w.-]+) -->\n)"
    r"(?P<body>.*?)(<!-- end generated -->)",
    re.S,
)
sys.path.insert(0, str(ROOT))

from rollout.experiments.command import QUICK  # noqa: E402
from rollout.experiments.harness.compare import load_runs, summarize  # noqa: E402
from rollout.experiments.harness.report import (  # noqa: E402
    WORK_COLUMNS,
    profile_lines,
    work_row,
)
from rollout.experiments.harness.verdict import verdicts  # noqa: E402
from rollout.experiments.workloads.catalog import Workload  # noqa: E402
from rollout.experiments.workloads.published import beside, shape  # noqa: E402
from rollout.model.profiles import CostProfile, InferenceProfile  # noqa: E402


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    align = ["---" if i == 0 else "---:" for i in range(len(columns))]
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _source(name: str, data: dict[str, Any]) -> str:
    files = f"files in [results/{name}](results/{name}/)"
    created = data.get("created")
    if not data.get("command"):
        when = f", {created}" if created else ""
        return (
            f"Produced on an earlier commit{when}, before runs recorded their command and "
            f"commit; {files}."
        )
    commit = data.get("commit") or "a commit outside a git checkout"
    return f"Produced by `{data['command']}` on commit `{commit}`, {created}; {files}."


def compare_block(name: str) -> list[str]:
    data, runs = load_runs(RESULTS / name)
    converter = cattrs.Converter()
    profiles = [converter.structure(p, InferenceProfile) for p in data["inference_profiles"]]
    costs = converter.structure(data["cost_profile"], CostProfile)
    w = data["workload"]
    modes = data.get("modes") or list(dict.fromkeys(r.mode for r in runs))
    jobs = data.get("jobs")
    how = f", {jobs} at a time" if jobs else ""
    lines = [_source(name, data), ""]
    lines.append(
        f"- workload {w['name']} (seed {data['seed']}): {w['description']}; {w['calls']} tool "
        f"calls, {data['repeats']} repeats{how}"
    )
    lines += [f"- {line}" for line in profile_lines(profiles, costs)]
    summaries = summarize(runs)
    for profile in dict.fromkeys(s.profile for s in summaries):
        mine = [s for s in summaries if s.profile == profile]
        runs_n = max(s.runs for s in mine)
        lines += ["", f"**{profile}** (ms; medians of {runs_n} runs)", ""]
        rows = []
        for s in mine:
            rows.append(
                [
                    s.mode + ("" if s.same_output else " (!)"),
                    _ms(s.seconds),
                    f"{_ms(s.seconds_min)}-{_ms(s.seconds_max)}",
                    _ms(s.ttft_s),
                    f"{s.overhead_share:.1%}",
                    _ms(s.cpu_s),
                    _ms(s.declared_s),
                    "-" if s.vs_http_full is None else f"{s.vs_http_full:.3f}",
                    f"{s.vs_ideal:.3f}",
                ]
            )
        lines += _table(
            (
                "mode",
                "end-to-end",
                "min-max",
                "TTFT",
                "overhead",
                "server CPU",
                "declared",
                "vs http-full",
                "vs ideal",
            ),
            rows,
        )
        lines += [""]
        lines += _table(WORK_COLUMNS, [work_row(s) for s in mine])
    found = verdicts(runs, modes)
    if found:
        lines += ["", "The verdict, as the run printed it:", ""]
        lines += [f"- {v.line()}" for v in found]
    return lines


def times_block(name: str) -> list[str]:
    """The run's command and a line per profile and mode: end to end, median (min-max), the
    server's CPU and the run's wall time when it was recorded."""
    data, runs = load_runs(RESULTS / name)
    rows = [
        [
            s.profile,
            s.mode,
            f"{_ms(s.seconds)} ({_ms(s.seconds_min)}-{_ms(s.seconds_max)})",
            _ms(s.cpu_s),
        ]
        for s in summarize(runs)
    ]
    lines = [_source(name, data), ""]
    return lines + _table(("profile", "mode", "end-to-end ms", "server CPU ms"), rows)


def phases_block(name: str) -> list[str]:
    """Where each mode's time goes (seconds, medians of the repeats): inference, the client's
    tools, the API's work and its share; then the end to end less the client's tools against
    http-full's (what the API's work is against the model's alone)."""
    import statistics

    _, runs = load_runs(RESULTS / name)
    rows = []
    for s in summarize(runs):
        mine = [r for r in runs if r.profile == s.profile and r.mode == s.mode]
        base = [r for r in runs if r.profile == s.profile and r.mode == "http-full"]
        api = statistics.median(r.overhead_s for r in mine)
        served = statistics.median(r.seconds - r.client_s for r in mine)
        against = "-"
        if base:
            against = f"{served / statistics.median(r.seconds - r.client_s for r in base):.3f}"
        rows.append(
            [
                s.profile,
                s.mode,
                f"{s.inference_s:,.2f}",
                f"{s.client_s:,.2f}",
                f"{api:,.2f}",
                f"{s.overhead_share:.1%}",
                against,
            ]
        )
    columns = (
        "profile",
        "mode",
        "inference s",
        "client tools s",
        "API work s",
        "API share",
        "without client tools, vs http-full",
    )
    return _table(columns, rows)


def published_block(name: str) -> list[str]:
    data, runs = load_runs(RESULTS / name)
    workload = cattrs.Converter().structure(
        {k: v for k, v in data["workload"].items() if k != "calls"}, Workload
    )
    scenario = workload.build(data["seed"])
    run = next(r for r in runs if r.mode == "http-full") if runs else None
    if run is None:
        return ["(no run)"]
    rows = [list(row) for row in beside(workload.name, shape(scenario, run))]
    head = f"**`{workload.name}`**: published ({workload.source}) beside this run"
    return [head, "", *_table(("figure", "published", "ours"), rows)]


#: The history lengths at which the per-turn block shows each mode's turn.
PER_TURN_AT = (1_000, 10_000, 30_000, 60_000, 100_000)


def per_turn_block(name: str) -> list[str]:
    """Per mode: the server's CPU per turn at the turns nearest PER_TURN_AT tokens of history,
    and the wall time per turn at the last of them (medians of the repeats)."""
    import statistics

    from rollout.experiments.sweeps.perturn import TurnRun, per_turn_rows

    data = orjson.loads((RESULTS / name / "per-turn.json").read_bytes())
    runs = [TurnRun(**r) for r in data["runs"]]
    modes = list(dict.fromkeys(r.mode for r in runs))
    rows = []
    history: list[int] = []
    for mode in modes:
        turns = per_turn_rows(runs, mode)
        near = [min(turns, key=lambda row: abs(row[0] - at)) for at in PER_TURN_AT]
        history = [h for h, _, _ in near]
        cpu = [f"{statistics.median(c) * 1000:,.1f}" for _, _, c in near]
        rows.append([mode, *cpu, f"{statistics.median(near[-1][1]) * 1000:,.1f}"])
    heads = [f"{round(h / 1000):,}k" for h in history]
    columns = [
        "mode",
        f"server CPU ms/turn at {heads[0]}",
        *heads[1:],
        f"wall ms/turn at {heads[-1]}",
    ]
    lines = [_source(name, data), ""]
    lines += _table(columns, rows)
    repeats = data.get("repeats")
    lines += ["", f"(medians of {repeats} repeats; per-turn.json has every turn of every run.)"]
    return lines


def chains_block(name: str) -> list[str]:
    from rollout.experiments.results import Point
    from rollout.experiments.sweeps.chains import beside as chain_beside
    from rollout.experiments.sweeps.chains import columns, table

    data = orjson.loads((RESULTS / name / "chains.json").read_bytes())
    ps = [Point(**p) for p in data["points"]]
    modes = list(dict.fromkeys(p.mode for p in ps))
    lines = [_source(name, data), ""]
    lines += _table(columns(modes), table(ps, modes))
    lines += ["", *_table(("figure", "published", "ours"), chain_beside(ps, modes))]
    return lines


#: The Codex block's rows: (what the row shows, the figure codex.TRANSPORT.NAME it reads).
CODEX_ROWS = (
    ("end-to-end (the process / its turns)", "e2e_per_turn"),
    ("the agent loop", "loop_per_turn"),
    ("inference (ideal)", "per_turn.inference"),
    ("API work", "per_turn.api"),
    ("client: Codex and its commands", "per_turn.client"),
    ("Codex start and exit", "per_turn.startup"),
)


def codex_block(name: str) -> list[str]:
    """Per phase, ms per model turn for each transport (medians of the repeats), then the
    figure lines `rollout compare --agent codex` prints for the ratio."""
    from rollout.experiments.results import CodexRun
    from rollout.experiments.sweeps.codex import TRANSPORTS, figures

    data = orjson.loads((RESULTS / name / "codex.json").read_bytes())
    runs = [CodexRun(**r) for r in data["runs"]]
    found = {f.name: f for f in figures(runs)}
    transports = [t for t in TRANSPORTS if f"codex.{t}.turns" in found]
    names = {"ws": "WebSocket", "http": "HTTP"}
    rows = []
    for label, key in CODEX_ROWS:
        cells = []
        for t in transports:
            cell = f"{found[f'codex.{t}.{key}'].value:,.1f}"
            if key == "e2e_per_turn":
                low = found[f"codex.{t}.e2e_per_turn.min"].value
                high = found[f"codex.{t}.e2e_per_turn.max"].value
                cell += f" ({low:,.0f}-{high:,.0f})"
            cells.append(cell)
        rows.append([label, *cells])
    head = f"figure (ms per model turn, medians of {data.get('repeats')} repeats)"
    lines = [_source(name, data), ""]
    lines += _table([head, *(names.get(t, t) for t in transports)], rows)
    ratios = [f for n, f in found.items() if "_vs_" in n]
    if ratios:
        lines += ["", "```", *(f.line() for f in ratios), "```"]
    return lines


def agents_block(name: str) -> list[str]:
    """A `--agents` sweep (agents.json): the engine profile and policies, the summary table
    (simulated seconds; CPU measured), the verdict lines and the published figures."""
    from rollout.experiments.sweeps.agents_report import COLUMNS, PUBLISHED, table, verdicts

    data = orjson.loads((RESULTS / name / "agents.json").read_bytes())
    w, e = data["workload"], data["engine_profile"]
    lines = [_source(name, data), ""]
    lines.append(
        f"- workload {w['name']} (seed {data['seed']}): {w['description']}; "
        f"{data['repeats']} repeat(s)"
    )
    lines += [f"- {line.strip()}" for line in e["derived"]]
    lines.append(f"- ttl policy: {data['ttl_s']:g} s; {data['simulated']}")
    lines += ["", *_table(COLUMNS, table(data["rows"])), "", "```"]
    lines += verdicts(data["rows"])
    lines += ["```", ""]
    lines += _table(("published", "figure"), [list(v) for v in PUBLISHED.values()])
    return lines


def multi_agent_block(name: str) -> list[str]:
    """A `--multi-agent` sweep (multi-agent.json): what it simulated, the shapes it skipped and
    why, the table per (subagents, shape), the verdict and scaling lines."""
    from rollout.experiments.sweeps.multiagent import COLUMNS, table

    data = orjson.loads((RESULTS / name / "multi-agent.json").read_bytes())
    converter = cattrs.Converter()
    profile = converter.structure(data["inference_profile"], InferenceProfile)
    costs = converter.structure(data["cost_profile"], CostProfile)
    w = data["workload"]
    counts = ", ".join(map(str, data["agent_counts"]))
    lines = [_source(name, data), ""]
    lines.append(
        f"- workload {w['name']} (seed {data['seed']}, K = {counts}): {w['description']}; "
        f"{data['repeats']} repeats, interleaved"
    )
    lines += [f"- {line}" for line in profile_lines([profile], costs)]
    lines += [f"- skipped {shape}: {why}" for shape, why in data.get("skipped", {}).items()]
    lines += ["", "(medians (min-max) of the repeats)", ""]
    lines += _table(COLUMNS, table(data["points"]))
    lines += ["", "```", *data["verdicts"], *data["scaling"], "```"]
    return lines


KINDS: dict[str, Callable[[str], list[str]]] = {
    "agents": agents_block,
    "compare": compare_block,
    "times": times_block,
    "phases": phases_block,
    "published": published_block,
    "per-turn": per_turn_block,
    "chains": chains_block,
    "codex": codex_block,
    "multi-agent": multi_agent_block,
}


def render(text: str) -> str:
    """`text` with every generated block made anew from its results."""

    def block(m: re.Match[str]) -> str:
        kind, name = m.group("kind"), m.group("name")
        if kind not in KINDS:
            raise SystemExit(f"gen_experiments: unknown block kind {kind!r}")
        try:
            body = "\n".join(KINDS[kind](name))
        except FileNotFoundError as exc:
            raise SystemExit(f"gen_experiments: block {kind} {name}: no run ({exc})") from None
        return f"{m.group(1)}{body}\n{m.group(5)}"

    return BLOCK.sub(block, text)


def quick_problems() -> list[str]:
    """How docs/results/quick differs from what `rollout compare` runs without flags."""
    path = RESULTS / "quick" / "results.json"
    if not path.is_file():
        return [f"{path} is missing"]
    data = orjson.loads(path.read_bytes())
    ran = {
        "workload": data["workload"]["name"],
        "profiles": ",".join(p["name"] for p in data["inference_profiles"]),
        "modes": ",".join(data.get("modes") or []),
        "costs": data["cost_profile"]["name"],
    }
    problems = [
        f"docs/results/quick ran {key} {ran[key]!r}, the quick default is {QUICK[key]!r}"
        for key in QUICK
        if ran[key] != QUICK[key]
    ]
    if data.get("repeats") != 3:
        problems.append(f"docs/results/quick ran {data.get('repeats')} repeats, the default is 3")
    return problems


def take(run: Path, name: str) -> None:
    """Copy a run's directory (results, figures, traces) to docs/results/NAME."""
    dest = RESULTS / name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(run.resolve(), dest)


def run_quick() -> Path:
    """The README's first command's run, now, into a scratch directory; its run directory."""
    out = Path(tempfile.mkdtemp()) / "results"
    subprocess.run([sys.executable, "-m", "rollout.cli", "compare", "--out", str(out)], check=True)
    return (out / "latest").resolve()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    parser.add_argument("--take", nargs=2, metavar=("RUN", "NAME"), help="take a run first")
    parser.add_argument("--quick", action="store_true", help="run the quick default first")
    args = parser.parse_args(argv)
    if args.quick:
        take(run_quick(), "quick")
    if args.take:
        take(Path(args.take[0]), args.take[1])
    text = DOC.read_text()
    new = render(text)
    if args.check:
        problems = quick_problems()
        if new != text:
            problems.append("docs/experiments.md is out of date: python docs/gen_experiments.py")
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    DOC.write_text(new)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
