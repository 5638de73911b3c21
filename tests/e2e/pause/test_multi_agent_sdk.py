# A multi-agent response end to end with the official SDK's beta WebSocket client: the root
# spawns subagents, each makes a client function call, the client injects each output by its
# call_id and exactly that agent resumes, the root waits for them and answers. Every event is
# checked strictly against the SDK's beta types (no field the SDK does not declare), sequence
# numbers are contiguous and output indexes unique; the response's usage is its agents'.
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pydantic
import pytest
from _pause_helpers import BETA, MODEL, check_beta, output, sdk

from protocol.agentitems import MultiAgentCall, MultiAgentCallOutput
from protocol.items import FunctionCallOutput
from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy
from rollout.model.script import agents, step, steps
from rollout.testing.thread import ServerThread

READ_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file of the workspace.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
}
FILES = {"reader_1": "a.py", "reader_2": "b.py", "reader_3": "c.py"}


def team_policy(names: list[str]) -> ScriptedPolicy:
    return ScriptedPolicy(
        steps(
            [
                {"spawn": [{"agent": n, "task": f"Read {FILES[n]}"} for n in names]},
                {"wait": names},
                {"text": "final answer"},
            ]
        ),
        agents=agents(
            {
                n: [
                    {"call": "read_file", "arguments": {"path": FILES[n]}},
                    {"text": f"{FILES[n]} is read"},
                ]
                for n in names
            }
        ),
    )


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread(Engine(policy=team_policy(["reader_1", "reader_2"]))) as s:
        yield s


def no_extra(model: Any, where: str = "event") -> None:
    """No key the SDK's model does not declare, at any depth."""
    assert not model.model_extra, f"{where}: fields beyond the SDK's: {model.model_extra}"
    for name in type(model).model_fields:
        value = getattr(model, name)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, pydantic.BaseModel):
                no_extra(v, f"{where}.{name}")


def strict_items(event: Any) -> None:
    """Every item an event carries (an item event's, a snapshot's output) has only the fields
    of its SDK beta type. (A snapshot's response echoes `store` and the penalties, which the
    standard Response has and BetaResponse lacks: an existing choice, not this feature's.)"""
    if getattr(event, "item", None) is not None:
        no_extra(event.item, f"{event.type}.item")
    if getattr(event, "response", None) is not None and hasattr(event.response, "output"):
        for i, item in enumerate(event.response.output):
            no_extra(item, f"{event.type}.response.output[{i}]")


def agent_of(item: Any) -> str | None:
    return item.agent.agent_name if getattr(item, "agent", None) is not None else None


def create(conn: Any, **extra: Any) -> None:
    conn.response.create(
        model=MODEL,
        input="Read a.py and b.py in parallel and tell me what they do.",
        tools=[READ_TOOL],
        store=False,
        multi_agent={"enabled": True},
        **extra,
    )


def test_subagents_call_the_client_and_each_resumes_on_its_own_inject(
    server: ServerThread,
) -> None:
    client = sdk(server.http_base_url)
    seen: list[Any] = []
    calls: dict[str, Any] = {}  # agent -> its function call
    injected: list[str] = []
    acked = 0
    final: Any = None
    rid = ""
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        for event in conn:
            check_beta(event)
            strict_items(event)
            seen.append(event)
            if event.type == "response.created":
                rid = event.response.id
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                calls[agent_of(event.item) or ""] = event.item
                if len(calls) == 2:  # both wait: answer reader_2 first, reader_1 after it ran
                    item = calls["reader_2"]
                    path = orjson.loads(item.arguments)["path"]
                    conn.response.inject(
                        response_id=rid, input=[output(item.call_id, f"{path}: prints hi")]
                    )
                    injected.append("reader_2")
            elif event.type == "response.output_item.done" and event.item.type == "message":
                if agent_of(event.item) == "reader_2":
                    assert injected == ["reader_2"]  # reader_1 still waits for its output
                    item = calls["reader_1"]
                    conn.response.inject(response_id=rid, input=[output(item.call_id, "a.py")])
                    injected.append("reader_1")
            elif event.type == "response.inject.created":
                acked += 1
            elif event.type == "response.completed":
                final = event.response
            if final is not None and acked == len(injected):
                break
    assert injected == ["reader_2", "reader_1"] and acked == 2
    assert set(calls) == {"reader_1", "reader_2"}
    assert [e.sequence_number for e in seen] == list(range(len(seen)))
    added = [e.output_index for e in seen if e.type == "response.output_item.added"]
    assert len(added) == len(set(added)) == len(final.output)
    # Each agent's message came after its own inject; reader_2's before reader_1's.
    said = [
        (agent_of(e.item), e.item.content[0].text)
        for e in seen
        if e.type == "response.output_item.done" and e.item.type == "message"
    ]
    assert said == [
        ("reader_2", "b.py is read"),
        ("reader_1", "a.py is read"),
        ("root", "final answer"),
    ]
    assert final.status == "completed"
    assert all(agent_of(item) is not None for item in final.output)
    kinds = [(item.type, agent_of(item)) for item in final.output]
    assert kinds.count(("multi_agent_call", "root")) == 3  # two spawns, one wait
    assert kinds.count(("multi_agent_call_output", "root")) == 3
    wait = [i for i in final.output if i.type == "multi_agent_call_output"][-1]
    assert wait.action == "wait_agent"
    result = orjson.loads(wait.output[0].text)
    assert result == {
        "reader_1": {"status": "completed", "answer": "a.py is read"},
        "reader_2": {"status": "completed", "answer": "b.py is read"},
    }
    spawn_outputs = [i for i in final.output if i.type == "multi_agent_call_output"][:2]
    assert {orjson.loads(i.output[0].text)["agent_name"] for i in spawn_outputs} == set(calls)
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0  # (summed: tests/engine)


def test_an_inject_for_an_unknown_or_answered_call_fails_and_the_agents_go_on(
    server: ServerThread,
) -> None:
    client = sdk(server.http_base_url)
    failed: list[Any] = []
    calls: list[Any] = []
    final: Any = None
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        rid = ""
        for event in conn:
            check_beta(event)
            strict_items(event)
            if event.type == "response.created":
                rid = event.response.id
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                calls.append(event.item)
                body = [output(event.item.call_id, "read")]
                conn.response.inject(response_id=rid, input=body)
                if len(calls) == 1:  # the same output again, and one for no call at all
                    conn.response.inject(response_id=rid, input=body)
                    conn.response.inject(response_id=rid, input=[output("call_nope", "x")])
            elif event.type == "response.inject.failed":
                failed.append(event)
            elif event.type == "response.completed":
                final = event.response
            if final is not None and len(failed) == 2:
                break
    assert [f.error.code for f in failed] == ["invalid_input", "invalid_input"]
    assert [f.input[0].call_id for f in failed] == [calls[0].call_id, "call_nope"]
    assert final.status == "completed" and final.output[-1].content[0].text == "final answer"


def test_cancel_ends_every_agent(server: ServerThread) -> None:
    client = sdk(server.http_base_url)
    kinds: list[str] = []
    final: Any = None
    with client.beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        rid = ""
        waiting = 0
        for event in conn:
            check_beta(event)
            kinds.append(event.type)
            if event.type == "response.created":
                rid = event.response.id
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                waiting += 1
                if waiting == 2:  # both subagents wait for the client: cancel instead
                    conn.send({"type": "response.cancel", "response_id": rid})
            elif event.type == "response.incomplete":
                final = event.response
                break
        conn.response.inject(response_id=rid, input=[output("call_x", "late")])
        late = next(e for e in conn if e.type == "response.inject.failed")
    assert final.status == "cancelled"
    assert late.error.code == "response_already_completed"
    assert [i.type for i in final.output].count("message") == 0  # nobody answered
    live = server.service.live
    assert rid not in live.rollouts and live.finished[rid] is None


def test_over_http_subagents_stop_at_client_calls_and_the_chain_answers_them(
    server: ServerThread,
) -> None:
    client = sdk(server.http_base_url)
    kw: dict[str, Any] = {
        "model": MODEL,
        "tools": [READ_TOOL],
        "betas": ["responses_multi_agent=v1"],
        "multi_agent": {"enabled": True},
    }
    first = client.beta.responses.create(input="Read a.py and b.py.", **kw)
    assert first.status == "completed"
    calls = [i for i in first.output if i.type == "function_call"]
    assert sorted(agent_of(c) or "" for c in calls) == ["reader_1", "reader_2"]
    wait = [i for i in first.output if i.type == "multi_agent_call_output"][-1]
    statuses = {k: v["status"] for k, v in orjson.loads(wait.output[0].text).items()}
    assert statuses == {"reader_1": "waiting_for_client", "reader_2": "waiting_for_client"}
    assert first.output[-1].type == "message" and agent_of(first.output[-1]) == "root"
    # The chain carries every agent's items; its continuation answers the open calls.
    second = client.beta.responses.create(
        previous_response_id=first.id,
        input=[output(c.call_id, f"{c.arguments} read") for c in calls],
        **kw,
    )
    assert second.status == "completed" and second.output[-1].type == "message"
    # The same history sent whole (every agent's items as input items) continues alike.
    history = [i.model_dump(mode="json", exclude_none=True) for i in first.output]
    whole = client.beta.responses.create(
        input=[
            {"role": "user", "content": "Read a.py and b.py."},
            *history,
            *[output(c.call_id, "read") for c in calls],
        ],
        **kw,
    )
    assert whole.status == "completed" and whole.output[-1].type == "message"


def test_the_default_model_spawns_a_reader_per_file_and_answers_from_them() -> None:
    with ServerThread(Engine()) as s:
        client = sdk(s.http_base_url)
        final: Any = None
        injected = acked = 0
        with client.beta.responses.connect(extra_headers=BETA) as conn:
            conn.response.create(
                model=MODEL,
                input="Read src/a.py and src/b.py and tell me what they do.",
                tools=[READ_TOOL],
                store=False,
                multi_agent={"enabled": True},
            )
            rid = ""
            for event in conn:
                check_beta(event)
                strict_items(event)
                if event.type == "response.created":
                    rid = event.response.id
                elif (
                    event.type == "response.output_item.done" and event.item.type == "function_call"
                ):
                    path = orjson.loads(event.item.arguments)["path"]
                    body = [output(event.item.call_id, f"def main(): print('{path} says hi')")]
                    conn.response.inject(response_id=rid, input=body)
                    injected += 1
                elif event.type == "response.inject.created":
                    acked += 1
                elif event.type == "response.completed":
                    final = event.response
                if final is not None and acked == injected:
                    break
    spawns = [i for i in final.output if i.type == "multi_agent_call" and i.action == "spawn_agent"]
    assert [orjson.loads(i.arguments)["agent_name"] for i in spawns] == ["reader_1", "reader_2"]
    reads = sorted(
        (agent_of(i), orjson.loads(i.arguments)["path"])
        for i in final.output
        if i.type == "function_call"
    )
    assert reads == [("reader_1", "src/a.py"), ("reader_2", "src/b.py")]
    answer = final.output[-1]
    assert agent_of(answer) == "root" and "reader_1" in answer.content[0].text
    assert "reader_2" in answer.content[0].text


def test_a_chained_response_without_multi_agent_does_not_spawn() -> None:
    """The root's context is cached for the chain; the next response, without multi_agent,
    is one agent again (the default model does not spawn there)."""
    with ServerThread(Engine()) as s:
        client = sdk(s.http_base_url)
        prompt = "Read src/a.py and src/b.py and tell me what they do."
        with client.beta.responses.connect(extra_headers=BETA) as conn:
            conn.response.create(
                model=MODEL,
                input=prompt,
                tools=[READ_TOOL],
                store=False,
                multi_agent={"enabled": True},
            )
            first: Any = None
            rid, injected, acked = "", 0, 0
            for event in conn:
                if event.type == "response.created":
                    rid = event.response.id
                elif (
                    event.type == "response.output_item.done" and event.item.type == "function_call"
                ):
                    conn.response.inject(response_id=rid, input=[output(event.item.call_id, "x")])
                    injected += 1
                elif event.type == "response.inject.created":
                    acked += 1
                elif event.type == "response.completed":
                    first = event.response
                if first is not None and acked == injected:
                    break
            assert any(i.type == "multi_agent_call" for i in first.output)
            conn.response.create(
                model=MODEL,
                input=prompt,
                tools=[READ_TOOL],
                store=False,
                previous_response_id=first.id,
            )
            second = next(e for e in conn if e.type in ("response.completed", "response.failed"))
    assert second.type == "response.completed"
    assert not any(i.type == "multi_agent_call" for i in second.response.output)
    assert all(getattr(i, "agent", None) is None for i in second.response.output)


def resuming_root(ctx: Any) -> Any:
    """The root of a chain: spawns, waits, answers; in the continuation (the calls' outputs in
    its context) it waits again and answers from what the resumed agents said."""
    names = ["reader_1", "reader_2"]
    spawned = any(isinstance(i, MultiAgentCall) for i in ctx.items)
    answered = any(isinstance(i, FunctionCallOutput) for i in ctx.items)
    last = ctx.items[-1]
    if not spawned:
        return step({"spawn": [{"agent": n, "task": f"Read {FILES[n]}"} for n in names]})
    if isinstance(last, MultiAgentCallOutput) and last.action == "wait_agent":
        return step({"text": "all read" if answered else "waiting for the reads"})
    return step({"wait": names})


def test_over_http_a_continuation_resumes_exactly_the_answered_subagents() -> None:
    base = team_policy(["reader_1", "reader_2"])
    engine = Engine(policy=ScriptedPolicy(resuming_root, agents=base.agents))
    with ServerThread(engine) as server:
        client = sdk(server.http_base_url)
        kw: dict[str, Any] = {
            "model": MODEL,
            "tools": [READ_TOOL],
            "betas": ["responses_multi_agent=v1"],
            "multi_agent": {"enabled": True},
        }
        first = client.beta.responses.create(input="Read a.py and b.py.", **kw)
        calls = [i for i in first.output if i.type == "function_call"]
        assert sorted(agent_of(c) or "" for c in calls) == ["reader_1", "reader_2"]
        second = client.beta.responses.create(
            previous_response_id=first.id,
            input=[output(c.call_id, f"{c.arguments} read") for c in calls],
            **kw,
        )
    assert second.status == "completed"
    # Each subagent went on from its call (its script's next step), not from a new task.
    said = {
        agent_of(i): i.content[0].text
        for i in second.output
        if i.type == "message" and agent_of(i) != "root"
    }
    assert said == {"reader_1": "a.py is read", "reader_2": "b.py is read"}
    assert not [i for i in second.output if i.type == "function_call"]
    wait = [i for i in second.output if i.type == "multi_agent_call_output"][-1]
    assert orjson.loads(wait.output[0].text) == {
        "reader_1": {"status": "completed", "answer": "a.py is read"},
        "reader_2": {"status": "completed", "answer": "b.py is read"},
    }
    assert second.output[-1].type == "message" and second.output[-1].content[0].text == "all read"
    assert second.usage is not None and second.usage.output_tokens > 0
    assert not engine.parked.teams  # taken by its continuation
