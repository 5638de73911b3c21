"""A multi-agent response's team (rollout.engine.agents), driven through the engine and the
live rollouts' own inject path (LiveRollouts.accept): the actions, the concurrency limit,
usage summed over agents, and a property over interleavings of spawns, messages, injects and
cancels (no item lost or doubled, every call answered once, sequence numbers contiguous)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import orjson
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.agentitems import AgentMessage
from protocol.errors import ProtocolError
from protocol.events import Event, OutputItemEvent, ResponseEvent
from protocol.items import FunctionCall, FunctionCallOutput
from rollout.engine.agents import TEAMS_KEPT, Agents, Parked
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.engine.loop import CallbackSink
from rollout.model.policy import ScriptedPolicy
from rollout.model.script import agents, steps
from rollout.service.config import ServerConfig
from rollout.service.live import Live, LiveRollouts

TOOL = {"type": "function", "name": "read_file", "parameters": {"type": "object"}}


def policy(root: list[dict[str, Any]], team: dict[str, list[dict[str, Any]]]) -> ScriptedPolicy:
    return ScriptedPolicy(steps(root), agents=agents(team))


def reads(name: str, n: int = 1) -> list[dict[str, Any]]:
    own = [{"call": "read_file", "arguments": {"path": f"{name}_{i}.py"}} for i in range(n)]
    return [*own, {"text": f"{name} read {n}"}]


@attrs.define
class Run:
    events: list[Event] = attrs.field(factory=list)
    live: Live | None = None
    lives: LiveRollouts | None = None

    @property
    def team(self) -> Agents:
        assert self.live is not None
        team = self.live.prepared.rollout.team
        assert isinstance(team, Agents)
        return team

    @property
    def final(self) -> Any:
        return next(
            e.response
            for e in self.events
            if isinstance(e, ResponseEvent) and e.response.status != "in_progress"
        )

    def done_items(self) -> list[Any]:
        return [
            e.item
            for e in self.events
            if isinstance(e, OutputItemEvent) and e.type == "response.output_item.done"
        ]

    def calls(self) -> list[FunctionCall]:
        return [i for i in self.done_items() if isinstance(i, FunctionCall)]

    def inject(self, call: FunctionCall) -> None:
        assert self.lives is not None and self.live is not None
        out = FunctionCallOutput(call_id=call.call_id, output=f"{call.arguments} read")
        self.lives.accept(self.live, [out], self.live.prepared.rollout.work, messages=False)

    async def wait_for(self, check: Callable[[], bool]) -> None:
        while not check():
            await trio.sleep(0)  # (another task's step: the team runs in this trio run)


async def drive(
    engine: Engine, request: dict[str, Any], body: Callable[[Run], Awaitable[None]]
) -> Run:
    """Start the response as a live multi-agent rollout, run `body` beside it, return what it
    sent once it ended."""
    run = Run()

    async def collect(event: Event) -> None:
        run.events.append(event)

    config = ServerConfig()
    lives = LiveRollouts(engine, config)
    req = codec.decode_create(
        {
            "model": "sim",
            "store": False,
            "tools": [TOOL],
            "multi_agent": {"enabled": True},
            **request,
        }
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(lives.run)
        prepared = await engine.prepare(req, engine.stats.new_work(), collect)
        engine.plan_of(prepared, held=True)
        run.lives = lives
        run.live = lives.start(
            prepared,
            sink=CallbackSink(collect),
            holder=object(),
            owner=None,
            lane=None,
            billing=None,
        )
        await body(run)
        await run.live.done.wait()
        nursery.cancel_scope.cancel()
    return run


def check_stream(run: Run) -> None:
    seqs = [e.sequence_number for e in run.events]
    assert seqs == list(range(len(seqs)))
    added = [
        e
        for e in run.events
        if isinstance(e, OutputItemEvent) and e.type == "response.output_item.added"
    ]
    done = [
        e
        for e in run.events
        if isinstance(e, OutputItemEvent) and e.type == "response.output_item.done"
    ]
    assert len({e.output_index for e in added}) == len(added)
    assert sorted(e.output_index for e in done) == sorted(e.output_index for e in added)
    final = run.final
    assert [codec.to_json(i) for i in final.output] == [
        codec.to_json(e.item) for e in sorted(done, key=lambda e: e.output_index)
    ]
    assert all(getattr(i, "agent", None) is not None for i in final.output)


def wait_result(run: Run) -> dict[str, Any]:
    waits = [
        i
        for i in run.done_items()
        if getattr(i, "action", "") == "wait_agent" and i.type == "multi_agent_call_output"
    ]
    return orjson.loads(waits[-1].output[0].text)


async def answer_all(run: Run, expected: int) -> None:
    answered: set[str] = set()
    while len(answered) < expected:
        await run.wait_for(lambda: len(run.calls()) > len(answered))
        for call in run.calls():
            if call.call_id not in answered:
                run.inject(call)
                answered.add(call.call_id)


def test_spawned_agents_run_and_the_root_answers_from_what_they_said() -> None:
    engine = Engine(
        policy=policy(
            [
                {"spawn": [{"agent": "a", "task": "Read a"}, {"agent": "b", "task": "Read b"}]},
                {"wait": ["a", "b"]},
                {"text": "both read"},
            ],
            {"a": reads("a", 2), "b": reads("b")},
        )
    )
    run = trio.run(drive, engine, {"input": "Read a and b."}, lambda r: answer_all(r, 3))
    check_stream(run)
    assert wait_result(run) == {
        "a": {"status": "completed", "answer": "a read 2"},
        "b": {"status": "completed", "answer": "b read 1"},
    }
    assert run.final.status == "completed"
    # The response's usage is the root's and each agent's together.
    team = run.team
    root = run.live.prepared.rollout  # type: ignore[union-attr]
    subs = [a.rollout for a in team]
    assert all(s.input_tokens > 0 and s.output_tokens > 0 for s in subs)
    assert run.final.usage.input_tokens == root.input_tokens
    assert root.input_tokens > sum(s.input_tokens for s in subs)
    # A subagent's context starts with the root's header (instructions and tools).
    assert all(
        s.ctx.tokens[: root.ctx.header_len] == root.ctx.tokens[: root.ctx.header_len] for s in subs
    )
    assert all(s.work.counts["tokenize"].calls > 0 for s in subs)  # each agent's own work
    assert [a.usage.input_tokens for a in team] == [s.input_tokens for s in subs]
    assert root.work.agents == {"a": subs[0].work, "b": subs[1].work}  # per agent, measurable


def test_over_the_limit_an_agent_waits_for_a_slot() -> None:
    engine = Engine(
        policy=policy(
            [
                {"spawn": [{"agent": "a", "task": "x"}, {"agent": "b", "task": "y"}]},
                {"list": True},
                {"wait": ["a", "b"]},
                {"text": "ok"},
            ],
            {"a": reads("a"), "b": reads("b")},
        )
    )

    async def body(run: Run) -> None:
        await run.wait_for(lambda: len(run.calls()) == 1)
        for _ in range(50):
            await trio.sleep(0)
        assert len(run.calls()) == 1  # b has no slot while a waits for its output
        assert {a.name: a.status for a in run.team} == {"a": "running", "b": "pending"}
        run.inject(run.calls()[0])
        await run.wait_for(lambda: len(run.calls()) == 2)
        run.inject(run.calls()[1])

    run = trio.run(
        drive,
        engine,
        {"input": "go", "multi_agent": {"enabled": True, "max_concurrent_subagents": 1}},
        body,
    )
    check_stream(run)
    listed = [
        i
        for i in run.done_items()
        if getattr(i, "action", "") == "list_agents" and i.type == "multi_agent_call_output"
    ]
    assert orjson.loads(listed[0].output[0].text)["agents"][1] == {
        "agent_name": "b",
        "status": "pending",
    }
    assert run.final.status == "completed"


def test_the_default_limit_is_six() -> None:
    assert (
        Agents.of(codec.decode_create({"model": "m", "multi_agent": {"enabled": True}})).limit == 6
    )


def test_send_followup_interrupt_and_list() -> None:
    engine = Engine(
        policy=policy(
            [
                {"spawn": [{"agent": "a", "task": "Read a"}, {"agent": "b", "task": "Read b"}]},
                {"send": {"to": "a", "message": "Look at tests too."}},
                {"wait": ["a"]},
                {"interrupt": "b"},
                {"followup": {"to": "a", "task": "Now c."}},
                {"wait": ["a", "b", "nobody"]},
                {"send": {"to": "nobody", "message": "?"}},
                {"text": "done"},
            ],
            {"a": [*reads("a"), {"text": "c read"}], "b": reads("b")},
        )
    )

    async def body(run: Run) -> None:
        await run.wait_for(lambda: len(run.calls()) == 2)
        a_call = next(c for c in run.calls() if c.agent is not None and c.agent.agent_name == "a")
        run.inject(a_call)
        # b's call is never answered: the interrupt ends its wait, and its output is refused.
        b_call = next(c for c in run.calls() if c is not a_call)
        await run.wait_for(lambda: any(a.status == "interrupted" for a in run.team))
        with pytest.raises(ProtocolError) as refused:
            run.inject(b_call)
        # (nothing waits any more: not suspended; over WebSocket both are `invalid_input`)
        assert refused.value.code in ("unknown_call_id", "response_not_suspended")

    run = trio.run(drive, engine, {"input": "go"}, body)
    check_stream(run)
    messages = [i for i in run.done_items() if isinstance(i, AgentMessage)]
    assert [(m.author, m.recipient, m.agent.agent_name) for m in messages] == [
        ("root", "a", "root")
    ]  # type: ignore[union-attr]
    a = run.team.agents["a"].rollout
    assert any(isinstance(i, AgentMessage) and i.recipient == "a" for i in a.ctx.items)
    assert wait_result(run) == {
        "a": {"status": "completed", "answer": "c read"},
        "b": {"status": "interrupted", "answer": ""},
        "nobody": {"status": "not_found"},
    }
    last = [i for i in run.done_items() if i.type == "multi_agent_call_output"][-1]
    assert orjson.loads(last.output[0].text) == {"error": "No agent named 'nobody'."}


def test_a_multi_agent_action_without_multi_agent_fails_the_response() -> None:
    engine = Engine(policy=policy([{"spawn": [{"agent": "a", "task": "x"}]}], {}))

    async def main() -> list[Event]:
        got: list[Event] = []

        async def collect(e: Event) -> None:
            got.append(e)

        req = codec.decode_create({"model": "sim", "input": "x", "store": False})
        prepared = await engine.prepare(req, engine.stats.new_work(), collect)
        await engine.run(prepared, EndResponse())
        return got

    got = trio.run(main)
    assert got[-1].response.status == "failed"  # type: ignore[union-attr]


# -- interleavings ------------------------------------------------------------------------------

plans = st.fixed_dictionaries(
    {
        "calls": st.lists(st.integers(0, 2), min_size=1, max_size=3),  # per agent
        "order": st.randoms(use_true_random=False),
        "messages": st.lists(st.integers(0, 2), max_size=3),  # root -> agent k
        "cancel_after": st.none() | st.integers(0, 4),  # injects before a cancel
        "duplicates": st.booleans(),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans)
def test_interleaved_spawns_messages_injects_and_cancels(plan: dict[str, Any]) -> None:
    names = [f"r{k}" for k in range(len(plan["calls"]))]
    root: list[dict[str, Any]] = [{"spawn": [{"agent": n, "task": f"Task {n}"} for n in names]}]
    root += [
        {"send": {"to": names[k % len(names)], "message": f"note {k}"}} for k in plan["messages"]
    ]
    root += [{"wait": names}, {"text": "all done"}]
    engine = Engine(
        policy=policy(root, {n: reads(n, c) for n, c in zip(names, plan["calls"], strict=True)})
    )
    total = sum(plan["calls"])
    rng = plan["order"]
    answered: list[str] = []
    refused: list[str] = []

    async def body(run: Run) -> None:
        while len(answered) < total:
            if plan["cancel_after"] is not None and len(answered) == plan["cancel_after"]:
                assert run.live is not None
                run.live.cancel.cancel("cancelled")
                return
            await run.wait_for(lambda: len(run.calls()) > len(answered) or run.live.done.is_set())  # type: ignore[union-attr]
            if run.live.done.is_set():  # type: ignore[union-attr]
                return
            open_calls = [c for c in run.calls() if c.call_id not in answered]
            call = rng.choice(open_calls)
            run.inject(call)
            answered.append(call.call_id)
            if plan["duplicates"]:
                try:
                    run.inject(call)
                except ProtocolError as exc:
                    refused.append(exc.code or "")

    run = trio.run(drive, engine, {"input": "go"}, body)
    check_stream(run)
    calls = run.calls()
    ids = [c.call_id for c in calls]
    assert len(ids) == len(set(ids))  # no call made twice
    assert len(answered) == len(set(answered)) and set(answered) <= set(ids)  # each answered once
    allowed = ("unknown_call_id", "duplicate_call_output", "response_not_suspended")
    assert all(code in allowed for code in refused)
    if plan["duplicates"]:
        assert len(refused) == len(answered)
    final = run.final
    if plan["cancel_after"] is None or plan["cancel_after"] >= total:
        assert final.status == "completed" and len(calls) == total
        assert set(wait_result(run)) == set(names)
    else:
        assert final.status == "cancelled"
    # Messages went out once each, to the agent named.
    sent = [i for i in run.done_items() if isinstance(i, AgentMessage)]
    assert len({m.id for m in sent}) == len(sent)


def test_a_parked_team_ends_after_the_grace_period() -> None:
    """A client gone while two subagents wait: the response is parked; when the grace period
    is over (every agent's wait is shortened to it, not left at the append timeout) the waiting
    agents fail and the root answers without them."""
    engine = Engine(
        policy=policy(
            [
                {"spawn": [{"agent": "a", "task": "x"}, {"agent": "b", "task": "y"}]},
                {"wait": ["a", "b"]},
            ],
            {"a": reads("a"), "b": reads("b")},
        )
    )
    ended_at: list[float] = []

    async def body(run: Run) -> None:
        await run.wait_for(lambda: len(run.calls()) == 2)
        assert run.live is not None
        run.live.detach()
        await run.live.done.wait()
        ended_at.append(trio.current_time())

    config = ServerConfig()
    run = trio.run(
        drive, engine, {"input": "go"}, body, clock=trio.testing.MockClock(autojump_threshold=0)
    )
    assert config.append_grace_s <= ended_at[0] < config.append_timeout_s
    assert {a.name: a.status for a in run.team} == {"a": "failed", "b": "failed"}
    terminal = run.live.prepared.rollout.stream.terminal  # type: ignore[union-attr]
    assert terminal is not None and terminal.response.status == "completed"  # (nobody got it)


def test_subagents_share_the_roots_prefix_in_the_cache() -> None:
    engine = Engine(
        policy=policy(
            [{"spawn": [{"agent": "a", "task": "x"}]}, {"wait": ["a"]}, {"text": "ok"}],
            {"a": [{"text": "hi"}]},
        )
    )
    run = trio.run(
        drive,
        engine,
        {"input": "go", "instructions": "Be careful and thorough. " * 200},
        lambda r: trio.sleep(0),
    )
    sub = run.team.agents["a"].rollout
    header = run.live.prepared.rollout.ctx.header_len  # type: ignore[union-attr]
    assert sub.cached_tokens >= header - header % 128 > 0  # the header's whole blocks hit


def spawn_outputs(run: Run) -> list[dict[str, Any]]:
    return [
        orjson.loads(i.output[0].text)
        for i in run.done_items()
        if getattr(i, "action", "") == "spawn_agent" and i.type == "multi_agent_call_output"
    ]


def test_a_spawns_model_and_reasoning_effort_act_on_the_subagent() -> None:
    engine = Engine(
        policy=policy(
            [
                {
                    "spawn": [
                        {"agent": "hi", "task": "Think hard", "reasoning_effort": "high"},
                        {"agent": "plain", "task": "Answer", "model": "gpt-4o"},
                        {"agent": "same", "task": "As the root"},
                    ]
                },
                {"wait": ["hi", "plain", "same"]},
                {"text": "done"},
            ],
            {"hi": [{"text": "thought"}], "plain": [{"text": "said"}], "same": [{"text": "ok"}]},
        )
    )
    req = {"model": "gpt-5", "input": "Go.", "reasoning": {"effort": "low"}}
    run = trio.run(drive, engine, req, lambda r: trio.sleep(0))
    check_stream(run)
    assert spawn_outputs(run) == [
        {"agent_name": "hi", "status": "running", "model": "gpt-5", "reasoning_effort": "high"},
        {"agent_name": "plain", "status": "running", "model": "gpt-4o", "reasoning_effort": None},
        {"agent_name": "same", "status": "running", "model": "gpt-5", "reasoning_effort": "low"},
    ]
    hi, plain, same = (run.team.agents[n].rollout for n in ("hi", "plain", "same"))
    # Each reasons as a create with its model and effort would: its tokens per step.
    assert hi.reasoning is not None and hi.reasoning.effort == "high"
    assert hi.reasoning_tokens == 1024 and same.reasoning_tokens == 64
    assert plain.reasoning is None and plain.reasoning_tokens == 0
    reasoned = {i.agent.agent_name for i in run.final.output if i.type == "reasoning" and i.agent}
    assert reasoned == {"root", "hi", "same"}
    # `model` gives the subagent that model's window, route and request (a real engine's knobs).
    assert plain.window == 128_000 and hi.window == 400_000
    assert plain.route.model == "gpt-4o" and plain.ctx.model == "gpt-4o"
    assert plain.request is not None and plain.request.model == "gpt-4o"
    assert hi.request is not None and hi.request.reasoning == {"effort": "high"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"reasoning_effort": "huge"}, "'reasoning_effort' must be one of 'none', "),
        ({"reasoning_effort": 3}, "'reasoning_effort' must be one of"),
        ({"model": ""}, "'model' must be a model name"),
        ({"model": ["gpt-4o"]}, "'model' must be a model name"),
    ],
)
def test_a_bad_model_or_effort_fails_that_spawn_only(extra: dict[str, Any], message: str) -> None:
    engine = Engine(
        policy=policy(
            [
                {"spawn": [{"agent": "bad", "task": "x", **extra}, {"agent": "ok", "task": "y"}]},
                {"wait": ["ok"]},
                {"text": "went on"},
            ],
            {"bad": [{"text": "never"}], "ok": [{"text": "fine"}]},
        )
    )
    run = trio.run(drive, engine, {"input": "Go."}, lambda r: trio.sleep(0))
    check_stream(run)
    bad, ok = spawn_outputs(run)
    assert bad["error"].startswith("Invalid arguments for spawn_agent: " + message)
    assert ok["agent_name"] == "ok"
    assert list(run.team.agents) == ["ok"]
    assert run.final.status == "completed"


def test_parked_teams_are_bounded_and_taken_once() -> None:
    parked = Parked()
    for n in range(TEAMS_KEPT + 3):
        parked.keep(f"resp_{n}", [])
    assert len(parked.teams) == TEAMS_KEPT
    assert parked.take("resp_0") is None  # the oldest were dropped
    assert parked.take(f"resp_{TEAMS_KEPT + 2}") == []
    assert parked.take(f"resp_{TEAMS_KEPT + 2}") is None  # a second continuation: a new team
    assert parked.take(None) is None
