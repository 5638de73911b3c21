# Record and replay inside one trio loop (in-process servers, the project's own trio client): the
# model side rebuilt step for step (web search, commentary with parallel calls, citations, a
# model error, two conversations), concurrent WebSocket lanes, a refused frame, an append-shape
# rollout over HTTP, and normalizing. The recorder's own guarantees are in
# tests/service/test_record.py.
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from rollout import CallStep, ErrorStep, ScriptedPolicy, TextStep, search
from rollout.client import ClientError, HttpClient, collect, connect_ws
from rollout.client.replay import normalize, replay_session
from rollout.conversation.calls import Citation, FunctionCallSpec
from rollout.conversation.context import Context
from rollout.model.policy import Step
from rollout.model.recorded import (
    RecordedModel,
    is_recording,
    load,
    recorded_events,
    script_from_recording,
)
from support.servers import serving
from support.tools import EXEC_TOOL, FINAL, INSTRUCTIONS, MODEL, tool_script

ANSWER = "Fixed the parser. See Source 1."
STEPS: list[Step] = [
    search("flaky parser tests"),
    CallStep(
        text="Running both suites.",
        calls=(
            FunctionCallSpec(name="exec", arguments='{"cmd":"pytest -q tests/a"}'),
            FunctionCallSpec(name="exec", arguments='{"cmd":"pytest -q tests/b"}'),
        ),
    ),
    TextStep(
        text=ANSWER,
        citations=(
            Citation(url="https://example.com/x", title="Source 1", start_index=22, end_index=30),
        ),
    ),
]
BROKEN = ErrorStep(code="server_error", message="The model fell over.")


def two_conversations(ctx: Context) -> Step:
    """The STEPS for the user who asks to fix things; a model error for anyone else."""
    first = next(i for i in ctx.items if getattr(i, "role", None) == "user")
    if "Fix" not in str(first.content):
        return BROKEN
    return STEPS[ctx.model_turns] if ctx.model_turns < len(STEPS) else TextStep(text="Done.")


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "input": text,
        "instructions": INSTRUCTIONS,
        "tools": [EXEC_TOOL, {"type": "web_search"}],
        "stream": True,
        **extra,
    }


def outputs(turn: Any) -> list[dict[str, Any]]:
    return [
        {"type": "function_call_output", "call_id": c.call_id, "output": f"ran {c.arguments}"}
        for c in turn.calls
    ]


async def test_model_steps_are_rebuilt_and_replayed(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    policy = ScriptedPolicy(two_conversations)
    async with (
        serving(policy, record=directory) as server,
        HttpClient(server.http_base_url) as http,
    ):
        first = await collect(http.events("/responses", body("Fix the parser.")), 0)
        assert first.status == "completed" and len(first.calls) == 2
        last = await collect(
            http.events(
                "/responses",
                body("", input=outputs(first), previous_response_id=first.response_id),
            ),
            0,
        )
        assert last.text == ANSWER
        failed = await collect(http.events("/responses", body("Something else.")), 0)
        assert failed.status == "failed"
    assert is_recording(directory) and not is_recording(tmp_path)
    policy = script_from_recording(directory)
    model = policy.steps
    assert isinstance(model, RecordedModel)
    assert {k: v for k, v in model.by_key.items() if k[0] == "Fix the parser."} == {
        ("Fix the parser.", k): [step] for k, step in enumerate(STEPS)
    }
    assert model.by_key[("Something else.", 0)] == [BROKEN]
    async with serving(policy) as server:
        replayed = await replay_session(directory, server.url)
    assert normalize(replayed) == normalize(recorded_events(directory))
    kinds = [r["event"]["type"] for r in replayed if "event" in r]
    assert "response.web_search_call.completed" in kinds
    assert "response.output_text.annotation.added" in kinds
    assert kinds[-1] == "response.failed"


async def test_lanes_a_refused_frame_and_http_append_replay(tmp_path: Path) -> None:
    directory = tmp_path / "rec"

    async def chain(ws: Any, lane: str) -> None:
        await ws.create(body(f"Lane {lane}.", stream=None, store=False), lane)
        while True:
            turn = await collect(ws.events(lane), 0)
            if not turn.calls:
                assert turn.text == FINAL
                return
            await ws.create(
                body(
                    "",
                    input=outputs(turn),
                    previous_response_id=turn.response_id,
                    stream=None,
                    store=False,
                ),
                lane,
            )

    async with serving(tool_script(2), record=directory) as server:
        async with connect_ws(server.ws_url) as ws:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(chain, ws, "a")
                nursery.start_soon(chain, ws, "b")
            await ws.send({"type": "response.nope"})
            with pytest.raises(ClientError) as refused:
                await collect(ws.events(), 0)
            assert refused.value.code == "unknown_event_type"
        async with HttpClient(server.http_base_url) as http:
            turn = await collect(http.events("/responses", body("Append.", shape="append")), 0)
            while turn.status == "paused":
                path = f"/responses/{turn.response_id}/append"
                turn = await collect(http.events(path, {"input": outputs(turn)}), 0)
            assert turn.status == "completed" and turn.text == FINAL
    lanes = {r["frame"].get("stream_id") for r in load(directory) if "frame" in r}
    assert lanes == {"a", "b", None}
    async with serving(script_from_recording(directory)) as server:
        replayed = await replay_session(directory, server.url)
    assert normalize(replayed) == normalize(recorded_events(directory))
    async with serving(tool_script(2, offset=5)) as server:
        changed = await replay_session(directory, server.url, timeout=1)
    assert normalize(changed) != normalize(recorded_events(directory))


async def test_normalize_keeps_equal_ids_equal() -> None:
    a = "resp_" + "a" * 48
    b = "resp_" + "b" * 48
    one = [{"event": {"response": {"id": a, "created_at": 1}}, "t": 0.1}, {"body": f"x {a} {b}"}]
    two = [{"event": {"response": {"id": b, "created_at": 2}}, "t": 0.2}, {"body": f"x {b} {a}"}]
    assert normalize(one) == normalize(two)
    assert normalize(one)[1] == {"body": "x resp_1 resp_2"}
    three = [{"event": {"response": {"id": a}}}, {"body": f"x {b} {a}"}]
    assert normalize(one) != normalize(three)
