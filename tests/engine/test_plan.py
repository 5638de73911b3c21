# A create's decisions (rollout.engine.plan.CreatePlan) are made once: whether it samples,
# whether it runs as a live rollout and announces its pauses, and its injected faults, drawn
# the first time the plan is asked for and never again for the same create.
from typing import Any

import trio

from protocol import codec
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.engine.faults import FaultPlan, Faults
from rollout.engine.plan import CreatePlan


def request(**body: Any) -> Any:
    return codec.decode_create({"model": "m", "input": "hi", **body})


def test_the_shape_of_a_create_is_decided_by_its_request_and_who_holds_it() -> None:
    chain = CreatePlan.of(request())
    assert (chain.samples, chain.live, chain.announces) == (True, False, True)
    append = CreatePlan.of(request(shape="append"))
    assert (append.live, append.announces) == (True, True)
    multi = {"multi_agent": {"enabled": True}}
    assert not CreatePlan.of(request(**multi)).live  # over HTTP it completes when it waits
    held = CreatePlan.of(request(**multi), held=True)
    assert (held.live, held.announces) == (True, False)
    assert not CreatePlan.of(request(generate=False)).samples


def test_a_warm_up_is_never_refused_by_an_injected_fault() -> None:
    refusing = FaultPlan(error="rate_limit_exceeded")
    assert CreatePlan.of(request(), refusing).refusal() is not None
    assert CreatePlan.of(request(generate=False), refusing).refusal() is None


async def test_faults_are_drawn_once_per_create() -> None:
    faults = Faults()
    engine = Engine(faults=faults)
    faults.queued.extend([FaultPlan(latency_s=0.25), FaultPlan(latency_s=0.5)])
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    prepared = await engine.prepare(request(), Work(), emit)
    first = engine.plan_of(prepared)
    assert engine.plan_of(prepared) is first and first.faults.latency_s == 0.25
    with trio.fail_after(5):
        await engine.run(prepared, EndResponse())
    assert engine.plan_of(prepared) is first
    assert [p.latency_s for p in faults.queued] == [0.5]  # the second is not drawn
