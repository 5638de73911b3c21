"""A fleet of agents (rollout.experiments.workloads.agents): shared instructions and tools, a
task, script and tool outputs of each agent's own, deterministic under the seed; one policy that
plays agent i's script in agent i's conversation, here driven on a Context and through one
in-process server; the `swe-agents` workload's shape and its one-token tool text."""

from __future__ import annotations

import functools
import random
import statistics

import attrs
import orjson
import trio

from protocol.items import FunctionCall, FunctionCallOutput, Message
from rollout.client import run_agent
from rollout.client.agent import AgentResult
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.conversation.tokens import count, encoding
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.experiments.workloads.agents import Fleet, agent_seed, fleet
from rollout.experiments.workloads.catalog import WORKLOADS, Latency, Scenario, _output
from rollout.experiments.workloads.text import ONE_TOKEN_WORDS, words_of_tokens
from rollout.model.policy import CallStep, ErrorStep, Step, TextStep
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES
from rollout.server.listen import serve

SWE = WORKLOADS["swe-agents"]


def function_calls(step: Step) -> list[FunctionCallSpec]:
    calls = step.calls if isinstance(step, CallStep) else ()
    return [c for c in calls if isinstance(c, FunctionCallSpec)]


def first_message(s: Scenario) -> str:
    content = s.request["input"][-1]["content"]
    assert isinstance(content, str)
    return content


def test_agents_have_their_own_tasks_and_share_instructions_and_tools() -> None:
    f = fleet(SWE, 8)
    firsts = [first_message(s) for s in f.scenarios]
    assert len(set(firsts)) == 8
    assert all(text.startswith(f"Task {i}: ") for i, text in enumerate(firsts))
    requests = [s.request for s in f.scenarios]
    assert all(r["instructions"] == requests[0]["instructions"] for r in requests)
    assert all(r["tools"] == requests[0]["tools"] for r in requests)
    assert all(r["model"] == SWE.model and r["include"] for r in requests)
    assert len({s.script for s in f.scenarios}) == 8
    assert [s.seed for s in f.scenarios] == [agent_seed(0, i) for i in range(8)]


def test_same_seed_same_fleet_and_another_seed_differs() -> None:
    a, b, c = fleet(SWE, 4, seed=3), fleet(SWE, 4, seed=3), fleet(SWE, 4, seed=4)
    assert [s.request for s in a.scenarios] == [s.request for s in b.scenarios]
    assert [s.script for s in a.scenarios] == [s.script for s in b.scenarios]
    assert a.scenarios[0].script != c.scenarios[0].script
    assert a.scenarios[0].request["instructions"] != c.scenarios[0].request["instructions"]
    # An agent does not depend on how many others there are.
    wide = fleet(SWE, 8, seed=3)
    assert wide.scenarios[3].script == a.scenarios[3].script


def test_calls_override_sets_the_turns_and_keeps_the_first_steps() -> None:
    short, long = fleet(SWE, 3, calls=5), fleet(SWE, 3, calls=12)
    for s, t in zip(short.scenarios, long.scenarios, strict=True):
        assert s.calls == 5 and t.calls == 12
        steps = [step for step in s.script if isinstance(step, CallStep)]
        assert len(steps) == 5 and isinstance(s.script[-1], TextStep)
        assert s.script[:5] == t.script[:5]
        assert first_message(s) == first_message(t)


def _played(f: Fleet, agent: int, steps: int) -> tuple[Context, list[Step]]:
    """Agent `agent`'s conversation after the policy's first `steps` steps (tool outputs 'ok',
    an answer as the assistant's message)."""
    policy = f.policy()
    ctx = Context()
    ctx.extend([Message(role="user", content=first_message(f.scenarios[agent]))], Work())
    played: list[Step] = []
    for n in range(steps):
        step = policy.next_step(ctx)
        played.append(step)
        if isinstance(step, TextStep):  # the answer
            ctx.extend([Message(role="assistant", content=step.text)], Work(), scan=False)
            continue
        assert isinstance(step, CallStep)
        calls = [
            FunctionCall(call_id=f"c{n}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(function_calls(step))
        ]
        ctx.extend(calls, Work(), scan=False)
        ctx.extend([FunctionCallOutput(call_id=c.call_id, output="ok") for c in calls], Work())
    return ctx, played


def test_policy_plays_each_agents_script_in_its_own_context() -> None:
    f = fleet(SWE, 4, calls=3)
    for agent in (0, 2, 3):
        s = f.scenarios[agent]
        ctx, played = _played(f, agent, 3)
        assert played == list(s.script[:3])
        assert f.policy().next_step(ctx) == s.script[3]  # the answer
    assert f.scenarios[0].script[0] != f.scenarios[2].script[0]


def test_policy_past_the_script_answers_final_and_refuses_strangers() -> None:
    f = fleet(SWE, 2, calls=2)
    ctx, _ = _played(f, 1, 3)  # two calls, the answer, then one more model turn
    step = f.policy().next_step(ctx)
    assert isinstance(step, TextStep) and step.text == f.final
    stranger = Context()
    stranger.extend([Message(role="user", content="Task 1: something else")], Work())
    assert isinstance(f.policy().next_step(stranger), ErrorStep)
    beyond = Context()
    beyond.extend([Message(role="user", content="Task 7: " + "x")], Work())
    assert isinstance(f.policy().next_step(beyond), ErrorStep)


async def test_tool_outputs_are_the_agents_own_and_a_function_of_the_call() -> None:
    w = attrs.evolve(SWE, client_latency=Latency(kind="fixed", a=0.0))
    f = fleet(w, 2)
    a, b = (s.tools["shell"] for s in f.scenarios)
    args = {"command": ["ls"], "call": 4}
    one = await a(args)
    assert one == await a(dict(args))
    assert one != await b(args)
    assert one != await a({**args, "call": 5})
    dist = w.tool_output_tokens
    assert dist is not None and dist.low <= count(one) <= dist.high


def test_latency_is_drawn_per_agent_and_call_as_declared() -> None:
    key = orjson.dumps({"call": 0, "command": ["ls"]}).decode()
    draws = sorted(_output("shell", key, agent_seed(0, i), SWE)[1] for i in range(401))
    assert draws == sorted(_output("shell", key, agent_seed(0, i), SWE)[1] for i in range(401))
    assert 0.3 < draws[200] < 0.8  # the declared median, 0.5 s
    assert draws[0] < 0.1 and draws[-1] > 5  # milliseconds to tens of seconds


async def test_two_agents_run_through_one_server_with_the_fleet_policy() -> None:
    w = attrs.evolve(SWE, client_latency=Latency(kind="fixed", a=0.0))
    f = fleet(w, 2, calls=3)
    engine = Engine(
        policy=f.policy(),
        inference=INFERENCE_PROFILES["instant"],
        costs=COST_PROFILES["cpu-only"],
    )
    results: dict[int, AgentResult] = {}
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve, engine, port=0))
        url = f"http://127.0.0.1:{port}/v1"

        async def agent(i: int) -> None:
            s = f.scenarios[i]
            results[i] = await run_agent("ws-append", url, s.request, s.tools)

        async with trio.open_nursery() as agents:
            for i in (0, 1):
                agents.start_soon(agent, i)
        nursery.cancel_scope.cancel()
    for i, s in enumerate(f.scenarios):
        result = results[i]
        expected = [(c.name, c.arguments) for step in s.script for c in function_calls(step)]
        assert result.calls == expected
        answer = s.script[-1]
        assert isinstance(answer, TextStep) and result.text == answer.text


def test_swe_agents_starts_small_and_grows_to_tens_of_thousands_of_tokens() -> None:
    f = fleet(SWE, 16)
    finals = []
    for s in f.scenarios:
        r = s.request
        first = count(r["instructions"]) + count(orjson.dumps(r["tools"]).decode())
        first += count(first_message(s))
        assert 2_000 <= first <= 4_000
        assert 20 <= s.calls <= 40
        grown = 0
        for step in s.script:
            assert isinstance(step, CallStep | TextStep) and step.reasoning_tokens
            assert 8 <= count(step.text) <= 40  # 8-30 words: small visible output
            grown += step.reasoning_tokens
            for c in function_calls(step):
                key = orjson.dumps(orjson.loads(c.arguments), option=orjson.OPT_SORT_KEYS)
                grown += count(_output(c.name, key.decode(), s.seed, SWE)[0])
        finals.append(first + grown)
    assert 20_000 <= statistics.median(finals) <= 40_000


def test_one_token_words_give_exactly_the_tokens_asked() -> None:
    enc = encoding()
    assert len(ONE_TOKEN_WORDS) == 64
    for word in ONE_TOKEN_WORDS:
        assert len(enc.encode(word)) == 1 and len(enc.encode(" " + word)) == 1, word
    rng = random.Random(0)
    for n in [*range(1, 40), 500, 1_234]:
        assert len(enc.encode(words_of_tokens(rng, n))) == n
