# A multi-agent response in front of a real engine (rollout.upstream.hosted), in both dialects,
# with the SDK's beta client: the root's engine is offered the actions (spawn_agent,
# wait_agent, ...) as functions, its calls of them are the team's actions (multi_agent_call
# items and their outputs, as in front of the simulated model), each subagent's steps are
# requests of its own whose instructions name it, and later steps show the actions as
# function calls and outputs.
from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from rollout.upstream.hosted import AGENT_FUNCTIONS, SUBAGENT
from support.breakable import in_front, responses_sse, sse

BETA = ["responses_multi_agent=v1"]


class TeamEngine:
    """As the root (offered the actions): spawn reader_1, then wait for it, then answer with
    what the wait returned. As reader_1 (told so by its instructions): answer. Keeps every
    request it got, as (who, body)."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def answer(self, body: dict[str, Any], conn: socket.socket) -> None:
        instructions = self.instructions(body)
        if instructions.startswith(SUBAGENT.format(name="reader_1")):
            self.requests.append(("reader_1", body))
            conn.sendall(self.text("a.py prints hello."))
            return
        self.requests.append(("root", body))
        outputs = self.outputs(body)
        if not outputs:
            spawn = {"agent_name": "reader_1", "message": "Read a.py and say what it does."}
            conn.sendall(self.call("spawn_agent", spawn))
        elif len(outputs) == 1:
            conn.sendall(self.call("wait_agent", {"targets": ["reader_1"]}))
        else:
            conn.sendall(self.text(f"Done: {outputs[-1]}"))

    def instructions(self, body: dict[str, Any]) -> str:
        if self.api == "chat":
            first = body["messages"][0]
            return str(first["content"]) if first["role"] == "system" else ""
        return str(body.get("instructions") or "")

    def outputs(self, body: dict[str, Any]) -> list[str]:
        if self.api == "chat":
            return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        return [str(i["output"]) for i in body["input"] if i["type"] == "function_call_output"]

    def offered(self, body: dict[str, Any]) -> set[str]:
        return {str((t.get("function") or t)["name"]) for t in body.get("tools") or ()}

    def call(self, name: str, arguments: dict[str, Any]) -> bytes:
        text = json.dumps(arguments)
        if self.api == "chat":
            call = {"index": 0, "id": "c1", "function": {"name": name, "arguments": text}}
            chunks = [
                {"delta": {"tool_calls": [call]}},
                {"delta": {}, "finish_reason": "tool_calls"},
            ]
            return sse([{"choices": [{"index": 0, **c}]} for c in chunks], done=True)
        item = {"type": "function_call", "name": name, "call_id": "c1"}
        return self._responses(
            [
                {"type": "response.output_item.added", "item": item},
                {"type": "response.function_call_arguments.delta", "delta": text},
                {"type": "response.output_item.done", "item": {**item, "arguments": text}},
            ]
        )

    def text(self, text: str) -> bytes:
        if self.api == "chat":
            chunk = {"index": 0, "delta": {"content": text}, "finish_reason": "stop"}
            return sse([{"choices": [chunk]}], done=True)
        return self._responses(
            [
                {"type": "response.content_part.added", "part": {"type": "output_text"}},
                {"type": "response.output_text.delta", "delta": text},
            ]
        )

    def _responses(self, events: list[dict[str, Any]]) -> bytes:
        return responses_sse(events)


@pytest.fixture(params=["chat", "responses"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[OpenAI, TeamEngine]]:
    engine = TeamEngine(request.param)
    with in_front(engine.answer, request.param) as client:
        yield client, engine


def test_the_root_is_offered_the_actions_and_its_calls_are_the_teams(
    served: tuple[OpenAI, TeamEngine],
) -> None:
    client, engine = served
    final = client.beta.responses.create(
        model="m",
        input="Read a.py.",
        instructions="Be brief.",
        multi_agent={"enabled": True},
        betas=BETA,
    )
    assert final.status == "completed"
    kinds = [(i.type, getattr(i, "action", None), i.agent.agent_name) for i in final.output]
    root = [k for k in kinds if k[2] == "root"]  # (the subagent's items interleave with them)
    assert root == [
        ("multi_agent_call", "spawn_agent", "root"),
        ("multi_agent_call_output", "spawn_agent", "root"),
        ("multi_agent_call", "wait_agent", "root"),
        ("multi_agent_call_output", "wait_agent", "root"),
        ("message", None, "root"),
    ]
    assert [k for k in kinds if k[2] != "root"] == [("message", None, "reader_1")]
    assert kinds.index(("message", None, "reader_1")) > 1  # after its spawn
    spawn_out, wait_out = [i for i in final.output if i.type == "multi_agent_call_output"]
    waited = json.loads(wait_out.output[0].text)
    assert waited["reader_1"]["answer"] == "a.py prints hello."
    assert final.output[-1].content[0].text == f"Done: {wait_out.output[0].text}"

    who = [w for w, _ in engine.requests]
    assert who.count("root") == 3 and who.count("reader_1") == 1
    for w, body in engine.requests:
        if w == "root":
            assert engine.offered(body) == set(AGENT_FUNCTIONS)
            assert engine.instructions(body) == "Be brief."
        else:  # the subagent: told who it is, its task its user message, no actions
            assert engine.offered(body) == set()
            told = SUBAGENT.format(name="reader_1")
            assert engine.instructions(body) == f"{told}\n\nBe brief."
    last = [body for w, body in engine.requests if w == "root"][-1]
    assert json.loads(spawn_out.output[0].text)["agent_name"] == "reader_1"
    shown = [spawn_out.output[0].text, wait_out.output[0].text]
    assert engine.outputs(last) == shown  # the actions' outputs, as functions' outputs


def test_without_multi_agent_no_action_is_offered(served: tuple[OpenAI, TeamEngine]) -> None:
    client, engine = served
    final = client.responses.create(model="m", input="Read a.py.")
    assert final.status == "failed" and final.error is not None
    assert "spawn_agent" in final.error.message and "did not declare" in final.error.message
    assert engine.offered(engine.requests[0][1]) == set()


def test_a_chained_turn_sends_no_agent_field(served: tuple[OpenAI, TeamEngine]) -> None:
    """The items of a multi-agent response carry their `agent` (the beta's field); the engine
    is sent the conversation without it, as the API it speaks has it."""
    client, engine = served
    kw: dict[str, Any] = {"model": "m", "multi_agent": {"enabled": True}, "betas": BETA}
    first = client.beta.responses.create(input="Read a.py.", store=True, **kw)
    assert first.output[-1].agent.agent_name == "root"
    then = client.beta.responses.create(previous_response_id=first.id, input="Thanks.", **kw)
    assert then.status == "completed"
    body = engine.requests[-1][1]
    sent = body["input"] if engine.api == "responses" else body["messages"]
    assert sent and all("agent" not in item for item in sent)
