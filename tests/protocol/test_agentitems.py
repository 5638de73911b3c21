"""A multi-agent response's items (protocol.agentitems) against the SDK's beta types: each
encodes as the SDK parses it, with no field the SDK lacks, and decodes back as it was; an item
without an agent has no `agent` key."""

from __future__ import annotations

from typing import Any

import orjson
import pydantic
from hypothesis import given
from hypothesis import strategies as st
from openai.types.beta.beta_response_input_item_param import BetaResponseInputItemParam
from openai.types.beta.beta_response_output_item import BetaResponseOutputItem

from protocol import codec
from protocol.agentitems import AgentMessage, AgentRef, MultiAgentCall, MultiAgentCallOutput
from protocol.items import (
    FunctionCall,
    InputText,
    Message,
    OutputText,
    Reasoning,
    SearchAction,
    WebSearchCall,
)
from support.strategies import agent_messages, multi_agent_call_outputs, multi_agent_calls

OUTPUT = pydantic.TypeAdapter(BetaResponseOutputItem)
INPUT = pydantic.TypeAdapter(BetaResponseInputItemParam)


def _no_extra(model: Any, data: dict[str, Any]) -> None:
    """Every key of `data` is a field the SDK's model declares (recursively for objects)."""
    assert not (model.model_extra or {}), model.model_extra
    for key, value in data.items():
        inner = getattr(model, key)
        if isinstance(value, dict) and isinstance(inner, pydantic.BaseModel):
            _no_extra(inner, value)


ROOT = AgentRef(agent_name="root")
MADE = [
    MultiAgentCall(
        id="mac_1", action="spawn_agent", arguments='{"message":"Read a.py"}', call_id="c1"
    ),
    MultiAgentCallOutput(
        id="maco_1",
        action="spawn_agent",
        call_id="c1",
        output=(OutputText(text='{"agent_name":"reader_1"}'),),
        agent=ROOT,
    ),
    AgentMessage(
        id="amsg_1",
        author="root",
        recipient="reader_1",
        content=(InputText(text="Look at b.py too."),),
        agent=ROOT,
    ),
    Message(id="m", role="assistant", content=(OutputText(text="hi"),), status="completed"),
    FunctionCall(id="fc", call_id="c", name="f", arguments="{}", status="completed", agent=ROOT),
    Reasoning(id="rs", agent=ROOT),
    WebSearchCall(id="ws", status="completed", action=SearchAction(query="q"), agent=ROOT),
]


def test_each_item_is_an_sdk_output_item_with_no_extra_field() -> None:
    for item in MADE:
        data = codec.to_json(item)
        parsed = OUTPUT.validate_python(data)
        _no_extra(parsed, data)
        assert codec.structure(orjson.loads(codec.encode(item)), type(item)) == item


def test_an_item_without_an_agent_has_no_agent_key() -> None:
    for item in MADE:
        assert ("agent" in codec.to_json(item)) == (getattr(item, "agent", None) is not None)


@given(st.one_of(multi_agent_calls, multi_agent_call_outputs, agent_messages))
def test_agent_items_round_trip_as_input(item: Any) -> None:
    data = orjson.loads(codec.encode(item))
    INPUT.validate_python(data)
    request = codec.decode_create({"model": "m", "input": [data]})
    assert request.input == (item,)
