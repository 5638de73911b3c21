# `response.steer` with the official SDK's beta WebSocket client (`conn.response.steer`), every
# event checked against the SDK's beta classes: steering mid-stream (the response ends
# `incomplete`/`steered` at a step boundary and an automatic successor continues from it with the
# steering input), steering during a tool call (`response.steer.pending` after
# `response.completed`, the queued input prepended to the explicit continuation), an automatic
# successor after normal completion, and the failures (unknown response, invalid input, a
# completed response, a response that does not steer, the pending limit).
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _pause_helpers import BETA, EXEC_TOOL, LOOKUP_TOOL, MODEL, events, output, sdk

from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.model.policy import CallStep, Step, TextStep
from rollout.service.config import ServerConfig
from rollout.testing.thread import ServerThread
from support import behind

STEER = "Use Celsius, please."
THINK = 60.0  # a scripted step's think time: a steer ends it (nothing waits this long)


def reacting(first: Step, then: Step) -> Any:
    """A script that reacts to steering: once the latest user message is the steering input,
    the model answers it; before, `first` then `then`."""

    def policy(ctx: Context) -> Step:
        if ctx.last_user_text == STEER:
            return TextStep(text=f"Steered: {ctx.last_user_text}")
        return first if ctx.model_turns == 0 else then

    return policy


def serve(policy: Any, **config: Any) -> ServerThread:
    from rollout.model.policy import ScriptedPolicy

    return ServerThread(Engine(policy=ScriptedPolicy(policy)), config=ServerConfig(**config))


@pytest.fixture
def servers() -> Iterator[list[ServerThread]]:
    started: list[ServerThread] = []
    yield started
    for s in started:
        s.stop()


def start(servers: list[ServerThread], policy: Any, **config: Any) -> ServerThread:
    server = serve(policy, **config).start()
    servers.append(server)
    return server


def create(conn: Any, **extra: Any) -> None:
    extra.setdefault("tools", [EXEC_TOOL])
    extra.setdefault("input", "What is the weather?")
    conn.response.create(model=MODEL, store=False, **extra)


LOOKUP_THEN_THINK = reacting(  # the async call does not stop the response: the model goes on
    CallStep(calls=(FunctionCallSpec(name="lookup", arguments='{"q": "weather"}'),)),
    TextStep(text="Long answer.", delay_s=THINK),
)
CALL_THEN_TEXT = reacting(
    CallStep(calls=(FunctionCallSpec(name="exec", arguments='{"cmd": "ls"}'),)),
    TextStep(text="Listed."),
)


def test_steer_mid_stream_ends_at_a_boundary_and_a_successor_follows(
    servers: list[ServerThread],
) -> None:
    server = start(servers, LOOKUP_THEN_THINK)
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        create(conn, tools=[EXEC_TOOL, LOOKUP_TOOL])
        seen: list[Any] = []
        for event in events(conn, frozenset({"response.incomplete"})):
            seen.append(event)
            if event.type == "response.created":
                first = event.response.id
            if event.type == "response.output_item.done":
                conn.response.steer(previous_response_id=first, input=STEER)
        successor = list(events(conn))
    kinds = [e.type for e in seen]
    accepted = next(e for e in seen if e.type == "response.steer.accepted")
    assert accepted.steer.previous_response_id == first and accepted.steer.id.startswith("steer_")
    assert kinds.index("response.steer.accepted") < kinds.index("response.incomplete")
    assert seen[-1].response.incomplete_details.reason == "steered"
    assert [e.sequence_number for e in seen] == list(range(len(seen)))
    created = successor[0]
    assert created.type == "response.created"  # the commit point
    assert created.response.previous_response_id == first
    final = successor[-1].response
    assert final.status == "completed" and final.output[-1].content[0].text == f"Steered: {STEER}"
    assert [t.name for t in final.tools] == ["exec", "lookup"]  # it inherits the settings
    lookup = next(e.item for e in seen if e.type == "response.output_item.done")
    assert lookup.async_ is True


def test_steer_during_a_tool_call_is_pending_and_joins_the_continuation(
    servers: list[ServerThread],
) -> None:
    server = start(servers, CALL_THEN_TEXT)
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        create(conn)
        for event in events(conn):
            if event.type == "response.created":
                first = event.response.id
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                call = event.item
                conn.response.steer(previous_response_id=first, input=STEER)
        assert event.type == "response.completed"
        after = list(events(conn, frozenset({"response.steer.pending"})))
        pending = after[-1]
        assert [x.model_dump() for x in pending.required_input] == [
            {"type": "function_call_output", "call_id": call.call_id, "name": "exec"}
        ]
        assert pending.reason == "waiting_for_required_input"
        assert pending.steer.previous_response_id == first
        create(conn, previous_response_id=first, input=[output(call.call_id, "a b c")])
        continuation = list(events(conn))
    final = continuation[-1].response
    assert final.previous_response_id == first
    assert final.output[-1].content[0].text == f"Steered: {STEER}"  # the queued input joined


@pytest.mark.simulated_only(behind.THINK_TIME)
def test_normal_completion_is_followed_by_an_automatic_successor(
    servers: list[ServerThread],
) -> None:
    server = start(servers, reacting(TextStep(text="Sunny.", delay_s=THINK), TextStep(text="x")))
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        create(conn)
        for event in events(conn):
            if event.type == "response.created":
                first = event.response.id
                conn.response.steer(previous_response_id=first, input=STEER)
        assert event.type == "response.completed" and event.response.id == first
        successor = list(events(conn))
    assert successor[0].response.previous_response_id == first
    assert successor[-1].response.output[-1].content[0].text == f"Steered: {STEER}"


def failure(conn: Any) -> Any:
    return list(events(conn, frozenset({"response.steer.failed"})))[-1]


def test_steer_to_an_unknown_response_fails_with_its_input(servers: list[ServerThread]) -> None:
    server = start(servers, CALL_THEN_TEXT)
    body = [{"type": "message", "role": "user", "content": "hi"}]
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        conn.response.steer(previous_response_id="resp_nope", input=body)
        failed = failure(conn)
    assert (
        failed.error.code == "response_not_found" and failed.error.type == "invalid_request_error"
    )
    assert failed.steer.previous_response_id == "resp_nope" and failed.steer.id is None
    assert [m.model_dump(exclude_unset=True) for m in failed.steer.input] == body
    assert failed.stream_id is None


def test_steer_failures_on_a_known_response(servers: list[ServerThread]) -> None:
    server = start(servers, CALL_THEN_TEXT, max_pending_steers=2)
    with sdk(server.http_base_url).beta.responses.connect() as conn:
        create(conn, stream_id="lane-a")
        for event in events(conn):
            if event.type == "response.created":
                first = event.response.id
        conn.response.steer(
            previous_response_id=first, input=[{"role": "assistant", "content": "x"}]
        )
        invalid = failure(conn)
        assert invalid.error.code == "invalid_input" and invalid.stream_id == "lane-a"
        for _ in range(3):  # the response waits for its tool output: steering stays queued
            conn.response.steer(previous_response_id=first, input=STEER)
        over = failure(conn)
        assert over.error.code == "too_many_pending_steers" and over.steer.id is None
        create(conn, previous_response_id=first, input="no tool output", stream_id="lane-a")
        # A continuation that fails (the call is unanswered) returns the queued input.
        assert list(events(conn, frozenset({"error"})))[-1].type == "error"
        lost = [failure(conn), failure(conn)]
    assert {f.error.code for f in lost} == {"successor_creation_failed"}
    assert all(f.steer.id for f in lost)


def test_steer_to_a_completed_response_and_to_a_multi_agent_one(
    servers: list[ServerThread],
) -> None:
    server = start(servers, reacting(TextStep(text="Sunny."), TextStep(text="x")))
    with sdk(server.http_base_url).beta.responses.connect(extra_headers=BETA) as conn:
        create(conn)
        done = list(events(conn))[-1].response.id
        conn.response.steer(previous_response_id=done, input=STEER)
        assert failure(conn).error.code == "response_already_completed"
        create(conn, multi_agent={"enabled": True})
        agent = list(events(conn))[-1].response.id
        conn.response.steer(previous_response_id=agent, input=STEER)
        assert failure(conn).error.code == "steering_not_supported"


def test_steer_to_a_response_bound_to_a_conversation_is_not_supported(
    servers: list[ServerThread],
) -> None:
    """As in the real API (pause-resume.md): steering is not available for a response bound to
    a conversation, while it runs (here: its tool call) or after."""
    server = start(servers, CALL_THEN_TEXT)
    client = sdk(server.http_base_url)
    conv = client.conversations.create()
    with client.beta.responses.connect() as conn:
        create(conn, conversation=conv.id)
        seen = list(events(conn))
        bound = seen[-1].response
        assert bound.conversation.id == conv.id
        conn.response.steer(previous_response_id=bound.id, input=STEER)
        failed = failure(conn)
    assert failed.error.code == "steering_not_supported"
    assert "conversation" in failed.error.message
    assert failed.steer.previous_response_id == bound.id
