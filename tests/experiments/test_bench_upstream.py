# `rollout bench upstream-client` in small: both clients read the whole stream (every event, of a
# server in its own process) and the figures come out in the bench's line format.
from __future__ import annotations

import pytest
import trio

from rollout.experiments.bench import upstream as upstream_bench
from rollout.experiments.bench.run import Figure


def test_both_clients_read_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_bench, "STREAM_EVENTS", 300)
    monkeypatch.setattr(upstream_bench, "SHORT_REQUESTS", 5)
    monkeypatch.setattr(upstream_bench, "ROUNDS", 1)
    figures: list[Figure] = []
    trio.run(upstream_bench.upstream_client, figures.append)
    names = [f.name for f in figures]
    assert names == [
        f"upstream_client.{what}.{who}"
        for what in ("stream", "requests", "stream_cpu", "requests_cpu")
        for who in ("httpx", "h11", "wire", "h11_vs_httpx", "wire_vs_httpx")
    ]
    assert all(f.value > 0 and len(f.line().split()) == 5 for f in figures)
