# The flags of `rollout compare` (rollout/cli/parser.py builds the rest of the command line):
# the workload and its sweep, the real engine that may pace it, and the other kinds of run.
from __future__ import annotations

import argparse

from rollout.client import MODES, SCENARIOS
from rollout.experiments.sweeps.agents import (
    AGENT_COUNTS,
    AGENT_MODES,
    AGENT_POLICIES,
    AGENT_WORKLOAD,
)
from rollout.experiments.sweeps.multiagent import AGENT_COUNTS as SUBAGENT_COUNTS
from rollout.experiments.sweeps.multishapes import SHAPES
from rollout.experiments.workloads.catalog import WORKLOADS
from rollout.model.accel.profile import DEFAULT_ENGINE, ENGINE_PROFILES
from rollout.model.accel.requests import DEFAULT_TTL_S, POLICIES
from rollout.model.profiles import COST_PROFILES


def add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `rollout compare` to the subcommands: its sweep, upstream and run flags, in the
    order its help lists them."""
    c = sub.add_parser(
        "compare",
        help="run the same agent rollout in each protocol mode and compare (the main job)",
        description="Run one workload's rollout in each mode against a fresh in-process server "
        "over loopback, for each inference profile and repeat, and report end-to-end time, "
        "time to first token, the phase breakdown, the server's work counters and a verdict "
        "line per profile (how much less time each mode takes than http-full, with the "
        "spread). The quick default (about three minutes on 2 cores): the swe-pro-codex "
        "session (30 turns, history to ~80k tokens) in http-full, ws-chain and ws-append at "
        "1000tps and 4000tps, costs service, 3 repeats. --full: every mode at 65tps, 1000tps "
        f"and 4000tps (about 40 minutes). Modes: {', '.join(MODES)}; scenarios: "
        f"{', '.join(SCENARIOS)}. Each run writes a directory of its own under --out.",
    )
    _sweep_flags(c)
    _upstream_flags(c)
    _run_flags(c)


def _sweep_flags(c: argparse.ArgumentParser) -> None:
    """The workload, profiles, modes, repeats, seed, calls, costs and jobs of the sweep."""
    c.add_argument(
        "--workload",
        default=None,
        help=f"one of {', '.join(WORKLOADS)} (default: swe-pro-codex; with --chain-lengths: "
        "coding-chain, its short-step variant; --per-turn runs its own)",
    )
    c.add_argument(
        "--profiles",
        default=None,
        help="comma-separated inference profiles (default: 1000tps,4000tps; with --full: "
        "65tps,1000tps,4000tps; --per-turn: instant)",
    )
    c.add_argument(
        "--modes",
        default=None,
        help="comma-separated modes (default: http-full,ws-chain,ws-append; with --full: all "
        f"of {','.join(MODES)}; with --chain-lengths: http-chain,ws-chain; also the scenario "
        f"{', '.join(SCENARIOS)}; with --multi-agent: shapes of {','.join(SHAPES)})",
    )
    c.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="rollouts per mode and profile (default: 3; with --agents: 1)",
    )
    c.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    c.add_argument(
        "--calls",
        type=int,
        default=None,
        help="tool calls per rollout (default: the workload's draw; swe-pro-codex: 29; with "
        "--multi-agent: per subagent, default 3)",
    )
    c.add_argument(
        "--costs",
        default=None,
        help=f"declared service latencies: {', '.join(COST_PROFILES)}, or a .toml file "
        "(default: service, the real service's stages around inference; the sweeps: "
        "cpu-only, rollout's own CPU work alone)",
    )
    c.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="rollouts at once, each in a worker process of its own (default: one per core, at "
        "most 2; each run mostly waits on declared latencies); 1 runs them one at a time",
    )


def _upstream_flags(c: argparse.ArgumentParser) -> None:
    """The real engine that paces the workload's script instead of an inference profile."""
    c.add_argument(
        "--upstream",
        metavar="URL",
        help="pace the workload's script by this real engine (chat completions): each step's "
        "prompt is prefilled and each of its tokens decoded by the engine "
        "(docs/real-inference.md); --profiles and --jobs are then unused",
    )
    c.add_argument(
        "--upstream-model",
        action="append",
        default=[],
        metavar="NAME|FROM=TO",
        help="the engine's model name, as for rollout serve",
    )
    c.add_argument("--upstream-key-env", metavar="VAR", help="the engine's API key, from $VAR")
    c.add_argument(
        "--upstream-first-byte-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="the longest wait for a step's first event, as for rollout serve (default: 120)",
    )
    c.add_argument(
        "--upstream-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the longest wait between the engine's chunks (default: 60)",
    )


def _agents_flags(c: argparse.ArgumentParser) -> None:
    """Many agents on one shared engine, on a virtual clock (docs/shared-engine.md)."""
    counts = ",".join(map(str, AGENT_COUNTS))
    c.add_argument(
        "--agents",
        nargs="?",
        const=counts,
        default=None,
        metavar="N,M,...",
        help=f"many agents on one shared engine: for each number of agents (alone: {counts}), "
        f"mode (default: {','.join(AGENT_MODES)}) and KV policy, a fleet of {AGENT_WORKLOAD} "
        "agents against one server whose simulated model queues on one accelerator, on a "
        "virtual clock (engine and tool times simulated; rollout's CPU real, measured apart); "
        "--repeats default 1, --jobs default 2; writes agents.json, jct-agents.png, "
        "kv-occupancy.png (about ten minutes for the default sweep)",
    )
    c.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help=f"with --agents: the engine profile ({', '.join(ENGINE_PROFILES)}; default: "
        f"{DEFAULT_ENGINE})",
    )
    c.add_argument(
        "--kv-policy",
        default=None,
        metavar="P,Q,...",
        help=f"with --agents: KV policies for a paused rollout, of {', '.join(POLICIES)} "
        f"(default: {','.join(AGENT_POLICIES)})",
    )
    c.add_argument(
        "--kv-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"with --agents: the ttl policy's time-to-live (default: {DEFAULT_TTL_S:g})",
    )
    c.add_argument(
        "--turns",
        default=None,
        metavar="N,M,...",
        help="with --agents: tool calls per rollout, each value a run of every agent count, "
        "mode and policy, in place of each agent's own draw (e.g. 10,20,40); writes "
        "gain-turns.png",
    )


def _run_flags(c: argparse.ArgumentParser) -> None:
    """The kind of run (the full sweep, chain lengths, per turn, a real agent, a replot) and
    where its results go."""
    c.add_argument(
        "--full",
        action="store_true",
        help="the whole sweep: every mode at 65tps, 1000tps and 4000tps (about 40 minutes)",
    )
    c.add_argument(
        "--chain-lengths",
        default=None,
        metavar="N,M,...",
        help="time to first token and end-to-end against chain length (turns per rollout), "
        "http-chain against ws-chain, with the published figures beside ours (--profiles "
        "default: 1000tps); writes chains.json and ttft-chain.png",
    )
    c.add_argument(
        "--per-turn",
        action="store_true",
        help="wall time and server CPU per turn against history length (~1k to ~110k tokens; "
        "the server in a child process, its CPU clock read around each turn); one profile "
        "(default: instant); writes per-turn.json and per-turn.png",
    )
    c.add_argument(
        "--agent",
        choices=("codex",),
        default=None,
        help="drive a real agent CLI instead of rollout's agent runner: codex ($ROLLOUT_CODEX or "
        "codex on PATH) over each transport it supports (ws: WebSocket with prewarm; http: the "
        "full history), on one scripted task; one profile (default: 1000tps)",
    )
    _agents_flags(c)
    subagents = ",".join(map(str, SUBAGENT_COUNTS))
    c.add_argument(
        "--multi-agent",
        nargs="?",
        const=subagents,
        default=None,
        metavar="K,L,...",
        help=f"a root agent and K subagents (alone: {subagents}), each subagent with --calls "
        "client tool calls (3 unless given), the root answering from their results, with the same "
        f"model steps in each shape ({', '.join(SHAPES)}; --modes picks some): one multi-agent "
        "response whose calls the client injects, or the client orchestrating K + 1 chained "
        "conversations over WebSocket or HTTP; one profile (1000tps unless --profiles), "
        "--costs service unless given; writes multi-agent.json and multi-agent.png",
    )
    c.add_argument(
        "--replot",
        default=None,
        metavar="DIR",
        help="draw the figures of an earlier run again from what it wrote in DIR (results.json, "
        "per-turn.json, chains.json, codex.json, agents.json, multi-agent.json), in DIR; "
        "nothing is run",
    )
    c.add_argument(
        "--out",
        default="results",
        help="where runs go: each run writes OUT/YYYYmmdd-HHMMSS-NAME/ (results, figures, "
        "traces) and points OUT/latest at it; earlier runs are kept (default: results)",
    )
