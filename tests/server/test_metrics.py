"""GET /metrics: Prometheus text with the server's gauges, counters and stage histograms, and
with a shared engine (`rollout serve --engine`) the engine's KV memory, queue and counters."""

from __future__ import annotations

import contextlib
import re

import rollout
from rollout.client import ClientError, HttpClient
from rollout.engine.engine import Engine
from rollout.model.accel.profile import engine_profile
from rollout.model.accel.shared import SharedEngine
from rollout.model.policy import ScriptedPolicy
from rollout.server.metrics import ENGINE_COUNTERS, ENGINE_GAUGES
from rollout.testing.plugin import RolloutServer
from support.servers import serving

SAMPLE = re.compile(r"^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", re.M)


async def scrape(http: HttpClient) -> tuple[str, dict[str, float]]:
    """GET /metrics: its text and each sample's value by name (and labels)."""
    status, head, chunks = await http.request("GET", "/metrics")
    text = b"".join([c async for c in chunks]).decode()
    assert status == 200 and head["content-type"].startswith("text/plain")
    return text, {m.group(1): float(m.group(2)) for m in SAMPLE.finditer(text)}


async def test_metrics_after_some_traffic(rollout_server: RolloutServer) -> None:
    rollout_server.script([rollout.text("ok")])
    async with HttpClient(rollout_server.url) as http:
        for _ in range(3):
            await http.json("POST", "/v1/responses", {"model": "m", "input": "hi"})
        with contextlib.suppress(ClientError):
            await http.json("POST", "/v1/responses", {"model": 1, "input": "hi"})
        text, samples = await scrape(http)
    assert samples["rollout_responses_total"] == 3
    assert samples['rollout_errors_total{code="invalid_type"}'] == 1
    assert samples['rollout_stage_calls_total{stage="tokenize"}'] >= 3
    assert samples['rollout_stage_latency_seconds_count{stage="inference"}'] == 3
    assert samples['rollout_stage_latency_seconds_bucket{stage="inference",le="+Inf"}'] == 3
    assert samples["rollout_http_requests_in_flight"] == 1  # this request
    assert samples['rollout_append_rollouts{state="suspended"}'] == 0
    for line in text.splitlines():
        assert line.startswith("#") or re.match(r"^[a-z_]+(\{[^}]*\})? [0-9.e+-]+$", line), line
    assert "rollout_engine_" not in text  # no shared engine


async def test_the_shared_engine_after_a_request() -> None:
    profile = engine_profile("h100-llama3.1-8b")
    accelerator = SharedEngine(profile)
    answer = "The tests pass now; the fix was a missing import in the parser module."
    engine = Engine(policy=ScriptedPolicy([rollout.text(answer)]), accelerator=accelerator)
    async with serving(engine) as server, HttpClient(server.url) as http:
        reply = await http.json("POST", "/v1/responses", {"model": "m", "input": "fix it"})
        text, samples = await scrape(http)
    usage = reply["usage"]
    assert usage["output_tokens"] > 1
    engine_samples = {k: v for k, v in samples.items() if k.startswith("rollout_engine_")}
    assert set(engine_samples) == {n for _, n, _ in (*ENGINE_GAUGES, *ENGINE_COUNTERS)}
    assert samples["rollout_engine_admitted_total"] == 1
    assert samples["rollout_engine_stopped_total"] == 1
    assert samples["rollout_engine_decode_tokens_total"] == usage["output_tokens"]
    prompt = samples["rollout_engine_prefill_tokens_total"]
    prompt += samples["rollout_engine_cached_tokens_total"]
    assert prompt == usage["input_tokens"]
    # (the first token comes with the prefill's step, every other one with a decode step)
    assert samples["rollout_engine_steps_total"] == usage["output_tokens"]
    assert samples["rollout_engine_busy_seconds_total"] >= profile.decode_seconds(1, 1) * (
        usage["output_tokens"] - 1
    )
    assert samples["rollout_engine_kv_blocks"] == profile.kv_blocks
    assert samples["rollout_engine_running_sequences"] == 0
    assert samples["rollout_engine_waiting_sequences"] == 0
    # (the finished response's KV stays as evictable prefix cache, nothing pinned: evict)
    assert samples["rollout_engine_kv_held_fraction"] == 0
    # (nothing runs: no block is used; the response's KV is cached, evictable)
    assert samples["rollout_engine_kv_used_fraction"] == 0
    assert 0 < samples["rollout_engine_kv_cached_fraction"] < 1
    for counter in ("preemptions", "recomputed_tokens", "offloaded_tokens", "reloaded_tokens"):
        assert samples[f"rollout_engine_{counter}_total"] == 0, counter
    for _, name, help_ in ENGINE_COUNTERS:
        assert name.endswith("_total")
        assert f"# HELP {name} {help_}" in text and f"# TYPE {name} counter" in text
    for _, name, help_ in ENGINE_GAUGES:
        assert f"# HELP {name} {help_}" in text and f"# TYPE {name} gauge" in text
