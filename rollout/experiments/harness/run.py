# One rollout against a fresh server, measured from the client: the server in this process over
# real loopback sockets, the client library's agent runner in the given mode, the engine's
# counts and spans gathered into a RunResult (with a Chrome trace of the client's and the
# server's stages). Every run of `rollout compare` and its sweeps is one of these.
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from rollout.client import ONE_RESPONSE, run_agent
from rollout.conversation.work import CPU, DECLARED, Stats, Work
from rollout.engine.engine import Engine
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Scenario
from rollout.model.profiles import CostProfile, InferenceProfile
from rollout.server.listen import serve
from rollout.upstream.paced import EnginePaced
from rollout.upstream.target import UpstreamConfig


async def run_one(
    mode: str,
    scenario: Scenario,
    profile: InferenceProfile,
    costs: CostProfile,
    repeat: int = 0,
    upstream: UpstreamConfig | None = None,
) -> RunResult:
    """One rollout against a fresh server (fresh caches), measured from the client. With
    `upstream`, a real engine paces the script (rollout.upstream.paced)."""
    stats = Stats(totals=Work(keep_spans=True))
    engine = Engine(policy=scenario.policy(), inference=profile, costs=costs, stats=stats)
    if upstream is not None:
        engine.model = EnginePaced(engine.policy, upstream)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve, engine, port=0))
        result = await run_agent(
            mode, f"http://127.0.0.1:{port}/v1", scenario.request, scenario.tools
        )
        expected = 1 if mode in ONE_RESPONSE else len(result.turns)
        with trio.move_on_after(10):  # background billing completes (it is never lost)
            while stats.responses < expected:
                await trio.sleep(0.002)
        nursery.cancel_scope.cancel()
    totals = stats.totals
    counts = {k: attrs.asdict(v) for k, v in totals.counts.items()}
    return RunResult(
        mode=mode,
        profile=profile.name,
        repeat=repeat,
        seconds=result.seconds,
        client_s=result.client_seconds,
        inference_s=totals.ideal_inference_s,
        cpu_s=sum(totals.counts[s].seconds for s in CPU),
        declared_s=sum(totals.counts[s].seconds for s in DECLARED),
        turns=len(result.turns),
        ttft_s=[t.first_token_s for t in result.turns if t.first_token_s is not None],
        turn_s=[t.seconds for t in result.turns],
        step_prompt=[p for p, _ in totals.steps],
        step_ideal_s=[s for _, s in totals.steps],
        counts=counts,
        billed=stats.billed,
        bytes_sent=result.bytes_sent,
        bytes_received=result.bytes_received,
        text=result.text,
        calls=result.calls,
        steer_s=result.steer_to_first_token_s,
        trace=_trace(mode, totals, result.spans),
        marks=sorted(totals.marks, key=lambda m: m[1]),
    )


def _trace(
    mode: str, work: Work, client: Sequence[tuple[str, float, float]]
) -> list[dict[str, Any]]:
    """Chrome trace events (Perfetto): the client on one track, server stages on others."""
    spans = [("client", name, a, b) for name, a, b in client]
    for span in work.spans:
        track = (
            "inference"
            if span.stage == "inference"
            else ("services (declared)" if span.stage in DECLARED else "server CPU")
        )
        spans.append((track, span.stage, span.start, span.end))
    if not spans:
        return []
    t0 = min(a for _, _, a, _ in spans)
    tracks = {name: i + 1 for i, name in enumerate(dict.fromkeys(s[0] for s in spans))}
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": f"rollout {mode}"}}
    ]
    events += [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}}
        for name, tid in tracks.items()
    ]
    for track, name, a, b in spans:
        events.append(
            {
                "ph": "X",
                "name": name,
                "pid": 1,
                "tid": tracks[track],
                "ts": round((a - t0) * 1e6, 1),
                "dur": round((b - a) * 1e6, 1),
            }
        )
    return events
