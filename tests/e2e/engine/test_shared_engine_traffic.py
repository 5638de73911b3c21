# One server's shared engine (`rollout serve --engine`) is shared by all its traffic: a chained
# HTTP rollout (the official SDK's `responses.create`), a chained WebSocket-mode rollout
# (`responses.connect()`) and an append-shape rollout (`response.append` frames), run at once
# over real sockets, are all admitted on the one engine: every sampling step of the three is a
# sequence it admitted, it decoded exactly their output tokens and prefilled (or found cached)
# exactly their input tokens, and their steps shared batches (fewer engine steps than the three
# would take one after the other). To make that sharing certain rather than likely, the first
# step of each rollout waits (on the server's clock, bounded) until all three have arrived.
from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Hashable, Sequence
from typing import Any

import attrs
import pytest
import trio
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.model.accel.profile import engine_profile
from rollout.model.accel.shared import Seat, Series, SharedEngine
from rollout.model.policy import ScriptedPolicy
from rollout.testing.thread import ServerThread
from support.frames import append_frame, create_frame
from support.sdk import ended, sdk_client
from support.tools import EXEC_TOOL, FINAL, MODEL, PROMPT, output, tool_steps
from support.waits import TIMEOUT

ROLLOUTS = 3  # HTTP, WebSocket mode, append
STEPS = 2  # sampling steps of each: one exec call, then the answer


@attrs.define(eq=False)
class Gathered(SharedEngine):
    """A shared engine whose first `together` steps queue only once all of them have arrived
    (or TIMEOUT has passed, for the assertions to say what went wrong)."""

    together: int = ROLLOUTS
    arrived: int = 0
    gathered: trio.Event = attrs.field(factory=trio.Event)

    async def seat(
        self,
        rollout: Hashable,
        prompt: int,
        hashes: Sequence[int],
        output: int,
        previous: str | None = None,
    ) -> Seat:
        self.arrived += 1
        if self.arrived <= self.together:
            if self.arrived == self.together:
                self.gathered.set()
            with trio.move_on_after(TIMEOUT):
                await self.gathered.wait()
        return await super().seat(rollout, prompt, hashes, output, previous)


@pytest.fixture
def shared() -> Gathered:
    # (every plan's batch recorded: `series` samples at each plan, not every 0.5 s)
    return Gathered(engine_profile("h100-llama3.1-8b"), series=Series(interval=0.0))


@pytest.fixture
def server(shared: Gathered) -> Any:
    engine = Engine(policy=ScriptedPolicy(tool_steps(STEPS - 1)), accelerator=shared)
    with ServerThread(engine) as server:
        yield server


def http_rollout(client: OpenAI) -> list[dict[str, Any]]:
    """Two chained creates over HTTP: the usage of each response."""
    first = client.responses.create(model=MODEL, input=PROMPT, tools=[EXEC_TOOL])
    [call] = [item for item in first.output if item.type == "function_call"]
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[output(call.call_id)],
        tools=[EXEC_TOOL],
    )
    assert second.output_text == FINAL
    assert first.usage is not None and second.usage is not None
    return [first.usage.model_dump(), second.usage.model_dump()]


def ws_rollout(client: OpenAI) -> list[dict[str, Any]]:
    """Two chained creates in WebSocket mode on one connection: the usage of each response."""
    usages: list[dict[str, Any]] = []
    with client.responses.connect() as conn:
        fields: dict[str, Any] = {"input": PROMPT}
        for _ in range(STEPS):
            conn.response.create(model=MODEL, tools=[EXEC_TOOL], store=False, **fields)
            final = next(r for r in map(ended, conn) if r is not None)
            assert final.status == "completed"
            usages.append(final.usage.model_dump())
            calls = [item for item in final.output if item.type == "function_call"]
            fields = {
                "input": [output(c.call_id) for c in calls],
                "previous_response_id": final.id,
            }
    assert final.output_text == FINAL
    return usages


def append_rollout(client: OpenAI) -> list[dict[str, Any]]:
    """One append-shape rollout over WebSocket: the usage of its final response (the whole
    rollout's)."""
    with client.responses.connect() as conn:
        conn.send(create_frame())
        for event in conn:
            if event.type == "response.done":  # the pause: answer the calls
                pause = event.model_dump()
                outputs = [output(p["call_id"]) for p in pause["pending_calls"]]
                conn.send(append_frame(pause["response_id"], outputs))
            elif (final := ended(event)) is not None:
                break
    assert final.status == "completed" and final.output_text == FINAL
    return [final.usage.model_dump()]


def test_http_websocket_and_append_share_one_engine(server: ServerThread, shared: Gathered) -> None:
    traffic = (http_rollout, ws_rollout, append_rollout)
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(ROLLOUTS))
        runs = [pool.submit(run, stack.enter_context(sdk_client(server))) for run in traffic]
        usages = [usage for run in runs for usage in run.result(timeout=4 * TIMEOUT)]
    counts = shared.counts()
    assert shared.arrived == ROLLOUTS * STEPS
    assert counts["admitted"] == counts["stopped"] == ROLLOUTS * STEPS
    assert counts["preemptions"] == 0
    assert counts["decode_tokens"] == sum(u["output_tokens"] for u in usages)
    assert counts["prefill_tokens"] + counts["cached_tokens"] == sum(
        u["input_tokens"] for u in usages
    )
    assert counts["cached_tokens"] == sum(
        u["input_tokens_details"]["cached_tokens"] for u in usages
    )
    # Batched: two or more sequences in one step, so fewer steps than decoding them one by one
    # (alone, a step's first token comes with its prefill and each other with a step of its own).
    batches = [running for _, _, _, running, _ in shared.series.points]
    assert max(batches) >= 2, batches
    assert counts["steps"] < counts["decode_tokens"]
    assert counts["kv_running"] == counts["kv_waiting"] == 0
