"""GET /metrics: Prometheus text with the server's gauges, counters and stage histograms."""

from __future__ import annotations

import contextlib
import re

import rollout
from rollout.client import ClientError, HttpClient
from rollout.testing.plugin import RolloutServer


async def test_metrics_after_some_traffic(rollout_server: RolloutServer) -> None:
    rollout_server.script([rollout.text("ok")])
    async with HttpClient(rollout_server.url) as http:
        for _ in range(3):
            await http.json("POST", "/v1/responses", {"model": "m", "input": "hi"})
        with contextlib.suppress(ClientError):
            await http.json("POST", "/v1/responses", {"model": 1, "input": "hi"})
        status, head, chunks = await http.request("GET", "/metrics")
        text = b"".join([c async for c in chunks]).decode()
    assert status == 200 and head["content-type"].startswith("text/plain")
    samples = dict(
        (m.group(1), float(m.group(2)))
        for m in re.finditer(r"^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", text, re.M)
    )
    assert samples["rollout_responses_total"] == 3
    assert samples['rollout_errors_total{code="invalid_type"}'] == 1
    assert samples['rollout_stage_calls_total{stage="tokenize"}'] >= 3
    assert samples['rollout_stage_latency_seconds_count{stage="inference"}'] == 3
    assert samples['rollout_stage_latency_seconds_bucket{stage="inference",le="+Inf"}'] == 3
    assert samples["rollout_http_requests_in_flight"] == 1  # this request
    assert samples['rollout_append_rollouts{state="suspended"}'] == 0
    for line in text.splitlines():
        assert line.startswith("#") or re.match(r"^[a-z_]+(\{[^}]*\})? [0-9.e+-]+$", line), line
