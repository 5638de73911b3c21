# Reasoning models with the official SDK over HTTP and WebSocket: reasoning items and summary
# parts (every event validated against the SDK's classes), reasoning_tokens in usage, and the
# stateless continuation Codex uses (store: false, include encrypted_content, the full history
# sent back), with the real error for a tampered blob.
from __future__ import annotations

from typing import Any

from rollout.model.policy import ScriptedPolicy, call, refusal, text
from rollout.model.profiles import REASONING_TOKENS
from support.knobs import Serve, kinds, tool, validate
from support.sdk import sdk_client
from support.servers import threaded

INCLUDE: Any = ["reasoning.encrypted_content"]


def test_reasoning_items_and_summary_parts(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("Hello.")]))
    events = s.events(model="o4-mini", input="Hi.", reasoning={"effort": "low", "summary": "auto"})
    response = events[-1].response
    assert kinds(response) == ["reasoning", "message"]
    assert response.usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS["low"]
    assert response.reasoning.effort == "low" and response.reasoning.summary == "auto"
    types = [e.type for e in events]
    for kind in (
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ):
        assert kind in types
    assert response.output[0].summary[0].text
    assert response.output[0].encrypted_content is None


def test_a_model_that_does_not_reason_ignores_the_knob(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("Hello.")]))
    response = s.create(model="gpt-4o-mini", input="Hi.", reasoning={"effort": "high"})
    assert kinds(response) == ["message"]
    assert response.reasoning.effort is None
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_stateless_continuation_with_encrypted_content(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([call("exec", {"q": "ls"}), text("Done.")]))
    common: dict[str, Any] = {"model": "o4-mini", "store": False, "include": INCLUDE}
    first = s.create(input="Go.", tools=[tool("exec")], **common)
    rs, fc = first.output
    assert rs.encrypted_content.startswith("gAAA")
    history = [
        {"role": "user", "content": "Go."},
        rs.to_dict(),
        fc.to_dict(),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "a.txt"},
    ]
    second = s.create(input=history, tools=[tool("exec")], **common)
    assert second.status == "completed"
    assert kinds(second) == ["reasoning", "message"]
    tampered = {**rs.to_dict(), "encrypted_content": rs.encrypted_content[:-8] + "AAAAAAA="}
    failure = s.error(input=[history[0], tampered, *history[2:]], tools=[tool("exec")], **common)
    assert failure.code == "invalid_encrypted_content"
    assert "could not be verified" in failure.message


def test_retrieve_with_stream_replays_reasoning_and_refusals() -> None:
    with threaded(ScriptedPolicy([refusal("Not that.")])) as server, sdk_client(server) as client:
        live = client.responses.create(
            model="o4-mini", input="x", reasoning={"effort": "low", "summary": "auto"}
        )
        replayed = list(client.responses.retrieve(live.id, stream=True))
    for event in replayed:
        validate(event)
    types = [e.type for e in replayed]
    assert "response.reasoning_summary_text.delta" in types
    assert "response.refusal.done" in types
    assert replayed[-1].response.output == live.output
