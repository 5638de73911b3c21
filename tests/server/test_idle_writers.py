# An idle transport writer blocks: with trio's autojump clock, virtual time advances only when
# every task is blocked, so a paced answer finishes in virtual seconds over every mode only if no
# writer (SSE's or WebSocket's) spins between writes. A watchdog thread cancels the run after a
# minute of real time, so a spinning writer fails the test instead of hanging it.
from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from rollout import MODES, run_agent

TEXT = " ".join(["word"] * 130)  # at 65 tokens/s: two virtual seconds


@pytest.mark.trio
@pytest.mark.parametrize("mode", MODES)
async def test_a_paced_answer_runs_on_virtual_time_in_every_mode(
    mode: str, rollout_server: Any, autojump_clock: trio.testing.MockClock
) -> None:
    rollout_server.profile("65tps")
    rollout_server.script([{"text": TEXT}])
    start = trio.current_time()
    token = trio.lowlevel.current_trio_token()
    with trio.CancelScope() as scope:
        watchdog = threading.Timer(60, lambda: token.run_sync_soon(scope.cancel))
        watchdog.start()
        try:
            request = {"model": "m", "input": "Go."}
            result = await run_agent(mode, rollout_server.http_base_url, request, {})
        finally:
            watchdog.cancel()
    assert not scope.cancelled_caught, "virtual time stood still: a task never blocked"
    assert result.text == TEXT
    assert trio.current_time() - start > 2.0
