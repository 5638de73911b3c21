# `rollout compare --agent codex`: the Codex CLI, a real agent, against a fresh in-process server
# over each transport it supports (WebSocket with prewarm and chaining; HTTP with the full
# history), on one task in a scratch workspace, the model the default policy under one seed.
# Per transport and repeat: end-to-end time, model turns and, from the server's marks, each
# turn's split into inference (the profile's ideal), API work and the client (Codex and tools).
from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from rollout.conversation.work import Stats, Work
from rollout.engine.engine import Engine
from rollout.experiments.bench.figure import Figure
from rollout.experiments.figures.plots import agent_plot, caption
from rollout.experiments.harness.compare import provenance
from rollout.experiments.results import CodexRun
from rollout.model.policy import DefaultPolicy
from rollout.model.profiles import CostProfile, InferenceProfile
from rollout.server.listen import serve

CODEX_VERSION = "0.171.0"  # as pinned in .ci/run and examples/coding_agent_cli.md
TRANSPORTS = ("ws", "http")
PROMPT = "list the files here"
TIMEOUT_S = 300.0

CONFIG = """\
model = "sim-1"
model_provider = "rollout"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.rollout]
name = "rollout (simulated model)"
base_url = "{base_url}"
env_key = "ROLLOUT_API_KEY"
wire_api = "responses"
supports_websockets = {websockets}
"""


class AgentError(Exception):
    """The agent is not installed, or a run of it failed (the message says which and why)."""


def find_codex(env: Mapping[str, str]) -> str:
    """The Codex CLI: $ROLLOUT_CODEX, else `codex` on PATH; AgentError saying how to get it."""
    path = env.get("ROLLOUT_CODEX") or shutil.which("codex", path=env.get("PATH"))
    if not path or not os.access(path, os.X_OK):
        raise AgentError(
            "the Codex CLI is not installed: set ROLLOUT_CODEX to its binary or put codex on "
            f"PATH (npm install --prefix DIR @openai/codex@{CODEX_VERSION})"
        )
    return path


def codex_version(codex: str) -> str:
    """What `codex --version` says (e.g. `codex-cli 0.171.0`); AgentError if it cannot run."""
    try:
        done = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentError(f"{codex} --version failed: {exc}") from None
    return done.stdout.strip() or done.stderr.strip()


def workspace(root: Path) -> Path:
    """The task's scratch project: a README, a pyproject and one source file."""
    work = root / "work"
    (work / "src").mkdir(parents=True)
    (work / "README.md").write_text("# Demo project\nA small demo.\n")
    (work / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (work / "src" / "main.py").write_text("print('hello')\n")
    return work


def exec_command(
    codex: str, root: Path, base_url: str, websockets: bool, prompt: str = PROMPT
) -> tuple[list[str], dict[str, str]]:
    """`codex exec --json` of `prompt` in a fresh workspace under `root`, its CODEX_HOME there
    with a config.toml pointing at `base_url`: the command and its environment."""
    work, home = workspace(root), root / "codex-home"
    home.mkdir()
    config = CONFIG.format(base_url=base_url, websockets=str(websockets).lower())
    (home / "config.toml").write_text(config)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "CODEX_HOME": str(home),
        "ROLLOUT_API_KEY": "unused",
    }
    args = [codex, "exec", "--json", "--ephemeral", "--skip-git-repo-check"]
    args += ["--sandbox", "read-only", "--cd", str(work), prompt]
    return args, env


def server_time(marks: Sequence[tuple[str, float]]) -> tuple[int, float, float]:
    """From the server's marks: (turns that sampled, their total time from received to
    terminal, the loop from the first received to the last terminal)."""
    turns, total = 0, 0.0
    received: float | None = None
    first = last = None
    sampled = False
    for name, at in sorted(marks, key=lambda m: m[1]):
        if name == "received":
            received, sampled = at, False
            first = at if first is None else first
        elif name == "sampled":
            sampled = True
        elif name == "terminal" and received is not None:
            if sampled:
                turns += 1
                total += at - received
            received, last = None, at
    loop = last - first if first is not None and last is not None else 0.0
    return turns, total, loop


async def run_codex(
    codex: str,
    transport: str,
    profile: InferenceProfile,
    costs: CostProfile,
    repeat: int = 0,
    calls: int = 3,
    seed: int = 0,
) -> CodexRun:
    """One `codex exec --json` of the task against a fresh server; AgentError if it fails."""
    stats = Stats(totals=Work(keep_spans=True))
    policy = DefaultPolicy(tool_calls=calls, seed=seed)
    engine = Engine(policy=policy, inference=profile, costs=costs, stats=stats)
    with tempfile.TemporaryDirectory(prefix="rollout-codex-") as tmp:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(functools.partial(serve, engine, port=0))
            url = f"http://127.0.0.1:{port}/v1"
            args, env = exec_command(codex, Path(tmp), url, transport == "ws")
            start = time.perf_counter()
            with trio.move_on_after(TIMEOUT_S):
                done = await trio.run_process(
                    args,
                    env=env,
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                    stdin=subprocess.DEVNULL,
                )
            seconds = time.perf_counter() - start
            nursery.cancel_scope.cancel()
    if seconds >= TIMEOUT_S:
        raise AgentError(f"codex over {transport} did not finish in {TIMEOUT_S:g} s")
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace")[-1500:].strip()
        raise AgentError(f"codex over {transport} exited with {done.returncode}: {tail}")
    events = [orjson.loads(x) for x in done.stdout.splitlines() if x.startswith(b"{")]
    items = [e["item"] for e in events if e.get("type") == "item.completed"]
    commands = [i for i in items if i.get("type") == "command_execution"]
    messages = [i.get("text", "") for i in items if i.get("type") == "agent_message"]
    turns, server_s, loop_s = server_time(stats.totals.marks)
    return CodexRun(
        transport=transport,
        repeat=repeat,
        seconds=seconds,
        turns=turns,
        inference_s=stats.totals.ideal_inference_s,
        server_s=server_s,
        loop_s=loop_s,
        commands=len(commands),
        failed_commands=sum(1 for c in commands if c.get("exit_code") != 0),
        final=messages[-1] if messages else "",
    )


async def run_all(
    codex: str,
    profile: InferenceProfile,
    costs: CostProfile,
    transports: Sequence[str] = TRANSPORTS,
    repeats: int = 3,
    calls: int = 3,
    seed: int = 0,
    progress: Callable[[CodexRun], None] | None = None,
) -> list[CodexRun]:
    """Every transport in every repeat, side by side, rotated per repeat."""
    runs = []
    for repeat in range(repeats):
        k = repeat % len(transports)
        for transport in [*transports[k:], *transports[:k]]:
            run = await run_codex(codex, transport, profile, costs, repeat, calls, seed)
            runs.append(run)
            if progress is not None:
                progress(run)
    return runs


def figures(runs: Sequence[CodexRun], transports: Sequence[str] = TRANSPORTS) -> list[Figure]:
    """Per transport (medians of the repeats): turns, commands, end-to-end (the process), per
    turn: end-to-end, the agent loop (first request to last response) and its phases; then each
    transport's end-to-end per turn against the last one's."""
    out = []
    per_turn: dict[str, float] = {}
    for t in transports:
        mine = [r for r in runs if r.transport == t]
        if not mine:
            continue
        per_turn[t] = statistics.median(r.per_turn_s for r in mine)
        out.append(Figure(f"codex.{t}.turns", statistics.median(r.turns for r in mine), "turns"))
        out.append(Figure(f"codex.{t}.commands", min(r.commands for r in mine), "commands"))
        out.append(Figure(f"codex.{t}.e2e", statistics.median(r.seconds for r in mine) * 1e3, "ms"))
        out.append(Figure(f"codex.{t}.e2e_per_turn", per_turn[t] * 1000, "ms"))
        out.append(
            Figure(f"codex.{t}.e2e_per_turn.min", min(r.per_turn_s for r in mine) * 1e3, "ms")
        )
        out.append(
            Figure(f"codex.{t}.e2e_per_turn.max", max(r.per_turn_s for r in mine) * 1e3, "ms")
        )
        loop = statistics.median(r.loop_s / max(1, r.turns) for r in mine)
        out.append(Figure(f"codex.{t}.loop_per_turn", loop * 1000, "ms"))
        for phase in ("inference_s", "api_s", "client_s", "startup_s"):
            value = statistics.median(getattr(r, phase) / max(1, r.turns) for r in mine)
            out.append(Figure(f"codex.{t}.per_turn.{phase[:-2]}", value * 1000, "ms"))
    if len(per_turn) > 1:
        *others, last = list(per_turn)
        for t in others:
            out.append(
                Figure(f"codex.{t}_vs_{last}.e2e_per_turn", per_turn[t] / per_turn[last], "x")
            )
    return out


def write(
    out: Path,
    runs: Sequence[CodexRun],
    meta: dict[str, object],
    origin: dict[str, Any] | None = None,
) -> list[Path]:
    """codex.json (every run) and, with matplotlib, codex.png."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "codex.json"
    data = (origin if origin is not None else provenance()) | meta
    data |= {"runs": [attrs.asdict(r) for r in runs]}
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    plot = agent_plot(out / "codex.png", runs, _caption(meta))
    return [path] + ([plot] if plot is not None else [])


def _caption(meta: Mapping[str, Any]) -> str:
    """The figure's title: the task, the profile, the costs and the repeats."""
    profile = meta.get("inference_profile", {}).get("name", "?")
    costs = meta.get("cost_profile", {}).get("name", "?")
    task = repr(meta.get("prompt", "codex"))
    return f"{caption(task, costs, int(meta.get('repeats', 0)))}, {profile}"


def replot(directory: Path) -> list[Path]:
    """codex.png again from the directory's codex.json."""
    data = orjson.loads((directory / "codex.json").read_bytes())
    runs = [CodexRun(**r) for r in data["runs"]]
    plot = agent_plot(directory / "codex.png", runs, _caption(data))
    return [] if plot is None else [plot]
