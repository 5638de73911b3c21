# Reasoning models through the engine (no sockets): which models reason and at which default
# effort (the printed profile table), reasoning items before each step's output with
# `reasoning_tokens` in usage, decoded at the profile's speed (measured on trio's autojump
# MockClock), the output budget cutting reasoning short, and the encrypted content that restores
# the reasoning of a `store: false` conversation sent back in full.
from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.items import FunctionCall, Reasoning
from protocol.response import Response
from protocol.sealing import Sealed, seal, unseal
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.engine.loop import DEFAULT_SECRET
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.model.profiles import REASONING_TOKENS, InferenceProfile, model_profile
from rollout.model.reasoning import plan


@attrs.define
class Ran:
    prepared: Prepared
    events: list[Event]
    started: float

    @property
    def response(self) -> Response:
        return self.prepared.rollout.stream.response

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


async def drive(engine: Engine, body: dict[str, Any]) -> Ran:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    prepared = await engine.prepare(codec.decode_create(body), Work(), emit)
    started = trio.current_time()
    await engine.run(prepared, EndResponse())
    return Ran(prepared, events, started)


def reasoner(*steps: Any, **engine: Any) -> Engine:
    return Engine(policy=ScriptedPolicy(list(steps) or [text("Fine.")]), **engine)


def test_the_profile_table_says_which_models_reason() -> None:
    assert model_profile("o4-mini").reasoning and model_profile("o4-mini").default_effort
    assert not model_profile("gpt-4o-mini").reasoning
    assert not model_profile("some-local-model").reasoning
    assert plan(model_profile("gpt-5.1"), None, None) is None  # its default effort is none
    assert plan(model_profile("gpt-test"), {"effort": "high"}, None) is None


async def test_reasoning_item_comes_before_the_output() -> None:
    ran = await drive(reasoner(), {"model": "o4-mini", "input": "Hi."})
    assert [o.type for o in ran.response.output] == ["reasoning", "message"]
    usage = ran.response.usage
    assert usage is not None
    assert usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS["medium"]
    assert usage.output_tokens > REASONING_TOKENS["medium"]
    assert ran.response.reasoning["effort"] == "medium"
    assert ran.types[2:4] == ["response.output_item.added", "response.output_item.done"]


async def test_each_step_reasons_and_effort_sets_the_tokens() -> None:
    engine = reasoner(call("f", {}))
    body = {"model": "o3", "input": "Go.", "reasoning": {"effort": "low"}}
    ran = await drive(engine, body)
    assert [o.type for o in ran.response.output] == ["reasoning", "function_call"]
    assert ran.response.usage is not None
    assert ran.response.usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS["low"]


async def test_summary_parts_stream_when_asked() -> None:
    body = {"model": "o4-mini", "input": "Hi.", "reasoning": {"summary": "auto"}}
    ran = await drive(reasoner(), body)
    kinds = [t for t in ran.types if "reasoning_summary" in t]
    assert kinds[0] == "response.reasoning_summary_part.added"
    assert kinds[-2:] == [
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    item = ran.response.output[0]
    assert isinstance(item, Reasoning) and item.summary[0].text.startswith("**")
    assert item.encrypted_content is None


async def test_reasoning_is_decoded_at_the_profile_speed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    del autojump_clock
    profile = InferenceProfile(name="t", decode_tps=100)
    ran = await drive(reasoner(inference=profile), {"model": "o4-mini", "input": "Hi."})
    assert ran.response.usage is not None
    output = ran.response.usage.output_tokens
    assert trio.current_time() - ran.started == pytest.approx(output / 100, abs=1e-3)
    assert output / 100 > REASONING_TOKENS["medium"] / 100


async def test_the_output_budget_can_end_the_response_while_reasoning() -> None:
    body = {"model": "o4-mini", "input": "Hi.", "max_output_tokens": 40}
    ran = await drive(reasoner(), body)
    assert ran.response.status == "incomplete"
    assert ran.response.incomplete_details is not None
    assert ran.response.incomplete_details.reason == "max_output_tokens"
    assert ran.response.usage is not None
    assert ran.response.usage.output_tokens_details.reasoning_tokens == 40
    assert [o.type for o in ran.response.output] == ["reasoning"]


async def test_encrypted_content_restores_a_store_false_conversation() -> None:
    include = ["reasoning.encrypted_content"]
    common = {
        "model": "o4-mini",
        "store": False,
        "include": include,
        "reasoning": {"effort": "low"},
    }
    steps = [call("f", {}), text("Done.")]
    first = await drive(reasoner(*steps), {**common, "input": "Go."})
    rs, fc = first.response.output
    assert isinstance(rs, Reasoning) and rs.encrypted_content is not None
    assert rs.encrypted_content.startswith("gAAA")
    assert unseal(rs.encrypted_content, DEFAULT_SECRET).tokens == REASONING_TOKENS["low"]
    assert isinstance(fc, FunctionCall)
    history = [
        {"role": "user", "content": "Go."},
        codec.to_json(rs),
        codec.to_json(fc),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "ok"},
    ]
    # The same conversation, chained in one engine (the reasoning stays in its context) and sent
    # back in full to another: the restored reasoning gives the same prompt.
    engine = reasoner(*steps)
    chained_first = await drive(engine, {**common, "input": "Go.", "store": True})
    _, c_fc = chained_first.response.output
    assert isinstance(c_fc, FunctionCall)
    chained = await drive(
        engine,
        {
            **common,
            "previous_response_id": chained_first.response.id,
            "input": [{"type": "function_call_output", "call_id": c_fc.call_id, "output": "ok"}],
        },
    )
    stateless = await drive(reasoner(*steps), {**common, "input": history})
    assert stateless.response.status == chained.response.status == "completed"
    assert stateless.response.usage is not None and chained.response.usage is not None
    assert stateless.response.usage.input_tokens == chained.response.usage.input_tokens
    # Without its blob (accepted only for a stored request), a new engine has nothing to restore.
    without = {**history[1], "encrypted_content": None}
    body = {**common, "store": True, "input": [history[0], without, *history[2:]]}
    cut = await drive(reasoner(*steps), body)
    assert cut.response.usage is not None
    assert cut.response.usage.input_tokens < stateless.response.usage.input_tokens - 32


async def test_a_store_false_reasoning_item_without_its_blob_is_not_found() -> None:
    item = {"type": "reasoning", "id": "rs_gone", "summary": []}
    body = {"model": "o4-mini", "store": False, "input": [item, {"role": "user", "content": "x"}]}
    with pytest.raises(ProtocolError) as exc:
        await drive(reasoner(), body)
    assert exc.value.param == "input[0]"
    assert exc.value.message.startswith("Item with id 'rs_gone' not found.")


async def test_a_tampered_blob_gets_the_real_error() -> None:
    blob = seal(Sealed(item_id="rs_1", tokens=3, text="hmm"), DEFAULT_SECRET)
    tampered = blob[:20] + ("A" if blob[20] != "A" else "B") + blob[21:]
    for bad in (tampered, "not a blob", seal(Sealed(item_id="rs_1", tokens=3, text="x"), b"k")):
        item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": bad}
        with pytest.raises(ProtocolError) as exc:
            await drive(reasoner(), {"model": "o4-mini", "store": False, "input": [item]})
        assert exc.value.code == "invalid_encrypted_content"
        assert "could not be verified" in exc.value.message
