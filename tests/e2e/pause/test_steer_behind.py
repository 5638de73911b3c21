# `response.steer` behind an upstream engine, in the normal run too (the whole shape suite runs
# behind one under ROLLOUT_TEST_BEHIND_UPSTREAM=1, support.behind): a steer that arrives while a
# later step waits for the engine's first output ends the response there, `incomplete`
# (`steered`), at once, the engine's request dropped; the successor answers the steering input.
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _pause_helpers import EXEC_TOOL, LOOKUP_TOOL, MODEL, events, sdk

from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.model.policy import CallStep, ScriptedPolicy, Step, TextStep
from rollout.testing.thread import ServerThread
from rollout.upstream import UpstreamModel
from support import behind

STEER = "Use Celsius, please."
THINK = 60.0  # the engine's think time before the second step's output (nothing waits it out)


def policy(ctx: Context) -> Step:
    if ctx.last_user_text == STEER:
        return TextStep(text=f"Steered: {STEER}")
    if ctx.model_turns == 0:  # an async call: the response goes on to a second step
        return CallStep(calls=(FunctionCallSpec(name="lookup", arguments='{"q": "weather"}'),))
    return TextStep(text="Long answer.", delay_s=THINK)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerThread]:
    for module in behind.MODULES:
        monkeypatch.setattr(module, "serve", behind.serve_behind)
    with ServerThread(Engine(policy=ScriptedPolicy(policy))) as server:
        yield server


def test_a_steer_ends_the_wait_for_the_engines_first_output(server: ServerThread) -> None:
    model = server.engine.model
    assert isinstance(model, UpstreamModel)  # the front: its model is the engine behind it
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        conn.response.create(
            model=MODEL, store=False, input="What is the weather?", tools=[EXEC_TOOL, LOOKUP_TOOL]
        )
        seen: list[Any] = []
        for event in events(conn, frozenset({"response.incomplete"})):
            seen.append(event)
            if event.type == "response.created":
                first = event.response.id
            if event.type == "response.output_item.done":  # the async call: step two waits
                conn.response.steer(previous_response_id=first, input=STEER)
        successor = list(events(conn))
    kinds = [e.type for e in seen]
    assert kinds.index("response.steer.accepted") < kinds.index("response.incomplete")
    assert seen[-1].response.incomplete_details.reason == "steered"
    # Nothing of the second step was sampled: its 60 s were not waited out (the read timeout
    # is 60 s too: without the steer ending the wait the response would have failed).
    assert [o.type for o in seen[-1].response.output] == ["function_call"]
    final = successor[-1].response
    assert final.status == "completed" and final.output[-1].content[0].text == f"Steered: {STEER}"
