"""Workloads: deterministic, shaped as declared, with arguments valid for their tools."""

from __future__ import annotations

import attrs
import jsonschema
import orjson
import pytest
import trio

from rollout.conversation.tokens import count
from rollout.experiments.workloads.catalog import WORKLOADS, Latency, workload
from rollout.model.policy import CallStep, TextStep


def test_same_seed_same_scenario_and_other_seed_differs() -> None:
    a = WORKLOADS["coding-agent"].build(3)
    b = WORKLOADS["coding-agent"].build(3)
    c = WORKLOADS["coding-agent"].build(4)
    assert a.request == b.request and a.script == b.script
    assert a.script != c.script


def test_coding_agent_is_shaped_like_a_coding_agent() -> None:
    s = WORKLOADS["coding-agent"].build(0)
    assert 17_000 <= len(s.request["instructions"]) <= 19_000
    assert 17_000 <= len(orjson.dumps(s.request["tools"])) <= 21_000
    assert 20 <= s.calls <= 30
    steps = [step for step in s.script if isinstance(step, CallStep)]
    assert sum(len(step.calls) for step in steps) == s.calls
    assert isinstance(s.script[-1], TextStep)
    for step in steps:
        assert 40 <= count(step.text) <= 400  # 50-300 words, about as many tokens


def test_arguments_validate_against_each_tool_schema() -> None:
    s = WORKLOADS["coding-agent"].build(1)
    schemas = {t["name"]: t["parameters"] for t in s.request["tools"]}
    for step in s.script:
        if isinstance(step, CallStep):
            for spec in step.calls:
                jsonschema.validate(orjson.loads(spec.arguments), schemas[spec.name])


def test_long_workload_carries_about_100k_tokens_of_history() -> None:
    s = WORKLOADS["long"].build(0)
    history = sum(count(item["content"]) for item in s.request["input"])
    assert 90_000 <= history <= 130_000


async def test_tool_outputs_are_a_function_of_the_call() -> None:
    w = attrs.evolve(WORKLOADS["chat"], client_latency=Latency(kind="fixed", a=0.0))
    s = w.build(0)
    tool = next(iter(s.tools.values()))
    one = await tool({"x": 1, "call": 0})
    assert one == await tool({"x": 1, "call": 0})
    assert one != await tool({"x": 1, "call": 1})
    low, high = w.tool_output_bytes
    assert low <= len(one) <= high


async def test_client_latency_is_declared_and_observed(autojump_clock: trio.abc.Clock) -> None:
    w = attrs.evolve(WORKLOADS["chat"], client_latency=Latency(kind="fixed", a=0.25))
    tool = next(iter(w.build(0).tools.values()))
    start = trio.current_time()
    await tool({"call": 0})
    assert trio.current_time() - start == pytest.approx(0.25)


def test_latency_kinds() -> None:
    import random

    rng = random.Random(0)
    assert Latency(kind="fixed", a=0.1).sample(rng) == 0.1
    u = [Latency(kind="uniform", a=0.1, b=0.2).sample(rng) for _ in range(100)]
    assert all(0.1 <= x <= 0.2 for x in u)
    ln = sorted(Latency(kind="lognormal", a=0.05, b=0.5).sample(rng) for _ in range(1001))
    assert 0.03 < ln[500] < 0.08  # the median is the declared median
    assert "uniform" in Latency(kind="uniform", a=0.1, b=0.2).describe()


def test_unknown_workload_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="coding-agent"):
        workload("nope")


def test_published_workloads_draw_outputs_and_reasoning_from_their_distributions() -> None:
    from rollout.experiments.workloads.catalog import _output

    for name in ("agentx-long", "swe-pro-codex"):
        w = WORKLOADS[name]
        s = w.build(0)
        assert w.source and w.tool_output_tokens and w.reasoning_tokens
        assert s.request["model"] == w.model and s.request["include"]
        thoughts = [step.reasoning_tokens for step in s.script]
        assert all(t is not None for t in thoughts) and len(set(thoughts)) > 5
        sizes = [
            count(_output(c.name, c.arguments, 0, w)[0])
            for step in s.script
            if isinstance(step, CallStep)
            for c in step.calls
        ]
        dist = w.tool_output_tokens
        assert all(dist.low <= n <= dist.high * 1.1 for n in sizes) and len(set(sizes)) > 5


async def test_swe_pro_codex_grows_as_published() -> None:
    from rollout.experiments.harness.run import run_one
    from rollout.experiments.workloads.published import PUBLISHED, shape
    from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES

    s = WORKLOADS["swe-pro-codex"].build(0)
    run = await run_one("ws-append", s, INFERENCE_PROFILES["instant"], COST_PROFILES["cpu-only"])
    got = shape(s, run)
    published = PUBLISHED["swe-pro-codex"]
    assert got.turns == 30
    assert 0.8 <= got.prompt_at_turn_30 / published["prompt_at_turn_30"] <= 1.2
    assert 0.8 <= got.input_per_output / published["input_per_output"] <= 1.2
