# `rollout bench gateway` in small: both gateways (rollout's own process and agentic-api's Rust
# `agentic-server`) in front of one aimock, every kind of turn completing on each, the figures in
# the bench's line format with a target on every ratio. Skipped without Node, aimock or the pinned
# agentic-api (CI installs it; see .ci/run).
from __future__ import annotations

import pytest
import trio

from rollout.experiments.bench import gateway as gw
from rollout.experiments.bench import peer
from rollout.experiments.bench.gwpeers import peer_missing
from rollout.experiments.bench.run import Figure


def test_figures_are_medians_over_the_peer_with_spreads() -> None:
    samples = {w: {"rollout": [2.0, 4.0, 6.0], "agentic-api": [1.0, 2.0, 3.0]} for w in gw.FIGURES}
    per_round = {w: {"rollout": [3.0, 6.0], "agentic-api": [2.0, 2.0]} for w in gw.FIGURES}
    figures = {f.name: f for f in gw.figures(samples, per_round)}
    ratio = figures["gateway.cpu.turn_50k.full_resend.ratio"]
    assert (ratio.value, ratio.target, ratio.passed) == (2.0, "<=1.5", False)
    assert figures["gateway.first_token.sse.rollout"].value == pytest.approx(4000.0)
    assert figures["gateway.first_token.sse.ratio.low"].value == 1.5
    assert figures["gateway.first_token.sse.ratio.high"].value == 3.0


def test_history_holds_the_tokens_it_is_asked_for() -> None:
    items = gw.history(2000)
    assert items and all(item["role"] in ("user", "assistant", "system") for item in items)
    with pytest.raises(ValueError):
        gw.history(10**9)


@pytest.mark.skipif(
    bool(peer.missing() or peer_missing()), reason=str(peer.missing() or peer_missing())
)
def test_both_gateways_answer_every_turn() -> None:
    figures: list[Figure] = []
    run = gw.gateway(figures.append, rounds=1, shorts=2, longs=1, trips=1, turns=1)
    trio.run(lambda: run)
    names = [f.name for f in figures]
    assert len(names) == 5 * len(gw.FIGURES)
    assert all(f.value > 0 and len(f.line().split()) == 5 for f in figures)
    assert all(f.target != "-" for f in figures if f.name.endswith(".ratio"))
