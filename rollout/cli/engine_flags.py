# The shared engine's side of `rollout serve` (`--engine`, `--kv-policy`, `--kv-ttl`: one
# simulated accelerator, rollout.model.accel, that every response of the server queues on):
# the flags, the combinations that cannot work, the SharedEngine they build, the lines serve
# prints about it, and the listing `rollout engines` prints.
from __future__ import annotations

import argparse

from rollout.model.accel.profile import ENGINE_PROFILES, engine_profile
from rollout.model.accel.requests import DEFAULT_TTL_S, POLICIES, KvPolicy, Policy
from rollout.model.accel.shared import SharedEngine


def add_engine_flags(s: argparse.ArgumentParser) -> None:
    """Serve's shared-engine flags (rollout/cli/parser.py adds the others)."""
    s.add_argument(
        "--engine",
        metavar="NAME",
        help=f"run every response's model steps on one shared simulated accelerator: "
        f"{', '.join(ENGINE_PROFILES)} (`rollout engines` prints their figures). Steps are "
        "batched continuously and their prompts' KV held in its memory, so concurrent "
        "responses slow each other down as on a real engine; without it each response gets "
        "--profile's speed alone (the no-contention limit). One process only: not with "
        "--workers N or --upstream",
    )
    s.add_argument(
        "--kv-policy",
        choices=POLICIES,
        metavar="POLICY",
        help="with --engine, what becomes of the KV of a rollout paused on its client's tool "
        "calls (or of a response a chained turn may continue): evict (evictable at once, as "
        "vLLM frees it), pin (kept until the rollout resumes or ends, unless running requests "
        "need the memory), ttl (pinned for --kv-ttl seconds), offload (evictable, with a copy "
        "in host memory that is copied back if it was evicted); evict queues requests in "
        "arrival order, the others by their rollout's first arrival (default: evict)",
    )
    s.add_argument(
        "--kv-ttl",
        type=float,
        metavar="SECONDS",
        help=f"with --engine --kv-policy ttl, how long a waiting rollout's KV stays pinned "
        f"(default: {DEFAULT_TTL_S:g} s)",
    )


def engine_problem(args: argparse.Namespace) -> str | None:
    """Why the shared-engine flags cannot work with the others (a line for the user), or None."""
    if args.engine is None:
        if args.kv_policy is not None:
            return "--kv-policy needs --engine NAME (without it no KV memory is shared)"
        if args.kv_ttl is not None:
            return "--kv-ttl needs --engine NAME --kv-policy ttl"
        return None
    if args.upstream is not None:
        return (
            "--engine simulates the accelerator of the simulated model; --upstream is a real "
            "engine, which sets its own pace: choose one"
        )
    if args.workers != 1:
        return (
            f"--engine simulates one accelerator in one process: with --workers {args.workers} "
            f"each worker would simulate its own ({args.workers} accelerators, each with its own "
            "KV memory, and a rollout resumed on another worker would find none of its KV): "
            "use --workers 1"
        )
    if args.profile != "instant":
        return (
            f"--profile {args.profile} gives each response a speed of its own; with --engine the "
            "shared accelerator paces every response: drop --profile"
        )
    if args.kv_ttl is not None:
        if args.kv_policy != "ttl":
            return f"--kv-ttl needs --kv-policy ttl (not {args.kv_policy or 'evict'})"
        if not args.kv_ttl > 0:
            return f"--kv-ttl must be positive, not {args.kv_ttl:g}"
    return None


def accelerator(args: argparse.Namespace) -> SharedEngine | None:
    """The shared engine of --engine NAME under --kv-policy, after `engine_problem` found
    nothing (EngineProfileError for an unknown NAME)."""
    if args.engine is None:
        return None
    profile = engine_profile(args.engine)
    name: Policy = args.kv_policy if args.kv_policy is not None else "evict"
    ttl = args.kv_ttl if args.kv_ttl is not None else DEFAULT_TTL_S
    return SharedEngine(profile, KvPolicy(name, ttl if name == "ttl" else 0.0))


def banner(engine: SharedEngine) -> tuple[str, list[str]]:
    """What serve's start-up line says of the engine, and the lines it prints after it (the
    profile's `describe()` and the policy's)."""
    policy = engine.policy
    ttl = f" {policy.ttl_s:g} s" if policy.name == "ttl" else ""
    return (
        f"engine {engine.profile.name}, kv-policy {policy.name}{ttl}",
        [*engine.profile.describe(), policy.describe()],
    )


def engine_table() -> list[str]:
    """The accelerator profiles of `--engine NAME` as a result prints them, with their sources,
    and the KV policies: what `rollout engines` prints (and docs/reference.md shows)."""
    lines: list[str] = []
    for profile in ENGINE_PROFILES.values():
        lines += [*profile.describe(), f"  source: {profile.source}"]
    policies = ", ".join(POLICIES)
    return [*lines, f"kv policies (--kv-policy): {policies}; ttl's default {DEFAULT_TTL_S:g} s"]
