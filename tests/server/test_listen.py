# The collector settings of a server process (rollout.server.listen.tune_gc): `rollout serve` and
# a bench's child server collect less often; a program that embeds a server keeps its own.
from __future__ import annotations

import gc

from rollout.server.listen import GC_THRESHOLDS, tune_gc
from rollout.testing.plugin import RolloutServer


def test_a_server_process_collects_less_often() -> None:
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > before[0]
    finally:
        gc.set_threshold(*before)


async def test_an_embedded_server_leaves_the_collector_as_it_was(
    rollout_server: RolloutServer,
) -> None:
    del rollout_server
    assert gc.get_threshold() != GC_THRESHOLDS
