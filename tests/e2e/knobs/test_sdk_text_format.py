# text.format with the official SDK over HTTP and WebSocket: JSON valid for the format's schema
# (strict: exactly the schema's properties; not strict: still valid), `json_object`, plain text,
# `responses.parse` with a pydantic model (and its parse helper on a WebSocket response), scripted
# refusals as `refusal` content parts, and the format's validation with the right `param`.
from __future__ import annotations

import json
from typing import Any

import jsonschema
import pydantic
from openai import omit
from openai.lib._parsing._responses import parse_response, type_to_text_format_param

from rollout.model.policy import DefaultPolicy, ScriptedPolicy, refusal, text
from rollout.model.script import steps
from support.knobs import MODEL, Serve, kinds


class Weather(pydantic.BaseModel):
    city: str
    celsius: float
    days: list[int]
    sky: str | None


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 3},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name"],
}


def json_schema(schema: dict[str, Any], *, strict: bool, name: str = "person") -> Any:
    return {"format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}}


def test_parse_with_a_pydantic_model(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=0))
    if s.transport == "http":
        parsed = s.client.responses.parse(model=MODEL, input="Weather?", text_format=Weather)
    else:
        response = s.create(input="Weather?", text={"format": type_to_text_format_param(Weather)})
        parsed = parse_response(text_format=Weather, input_tools=omit, response=response)
    assert isinstance(parsed.output_parsed, Weather)


def test_strict_json_has_exactly_the_schema_properties(serve: Serve) -> None:
    strict = {**SCHEMA, "required": list(SCHEMA["properties"]), "additionalProperties": False}
    s = serve(policy=DefaultPolicy(tool_calls=0))
    events = s.events(input="Who?", text=json_schema(strict, strict=True))
    response = events[-1].response
    value = json.loads(response.output_text)
    jsonschema.validate(value, strict)
    assert set(value) == set(strict["properties"])
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == response.output_text
    assert response.text.format.type == "json_schema" and response.text.format.strict is True


def test_non_strict_json_is_valid_for_the_schema(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=0, seed=3))
    response = s.create(input="Who?", text=json_schema(SCHEMA, strict=False))
    jsonschema.validate(json.loads(response.output_text), SCHEMA)


def test_json_object_is_an_object_and_text_is_prose(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=0))
    response = s.create(input="JSON please.", text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(response.output_text), dict)
    plain = s.create(input="Hi.", text={"format": {"type": "text"}})
    assert not plain.output_text.startswith("{")


def test_a_script_past_its_end_answers_in_the_format(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([]))
    response = s.create(input="Weather?", text={"format": type_to_text_format_param(Weather)})
    Weather.model_validate_json(response.output_text)


def test_scripted_refusal_streams_a_refusal_part(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy(steps([{"refusal": "I can't help with that."}])))
    events = s.events(
        input="Do something bad.", text={"format": type_to_text_format_param(Weather)}
    )
    types = [e.type for e in events]
    assert "response.refusal.delta" in types and "response.refusal.done" in types
    assert "response.output_text.delta" not in types
    [done] = [e for e in events if e.type == "response.refusal.done"]
    assert done.refusal == "I can't help with that."
    [part] = events[-1].response.output[0].content
    assert (part.type, part.refusal) == ("refusal", "I can't help with that.")
    parsed = parse_response(text_format=Weather, input_tools=omit, response=events[-1].response)
    assert parsed.output_parsed is None


def test_refusal_step_helper(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([refusal("No."), text("Fine.")]))
    assert kinds(s.create(input="x")) == ["message"]


def test_unknown_format_type_is_refused(serve: Serve) -> None:
    failure = serve().error(input="x", text={"format": {"type": "yaml"}})
    assert (failure.code, failure.param) == ("invalid_value", "text.format.type")


def test_format_name_must_match_the_pattern(serve: Serve) -> None:
    failure = serve().error(input="x", text=json_schema(SCHEMA, strict=False, name="my format"))
    assert (failure.code, failure.param) == ("invalid_value", "text.format.name")


def test_format_needs_a_name_and_a_schema(serve: Serve) -> None:
    s = serve()
    failure = s.error(input="x", text={"format": {"type": "json_schema", "schema": SCHEMA}})
    assert (failure.code, failure.param) == ("missing_required_parameter", "text.format.name")
    failure = s.error(input="x", text={"format": {"type": "json_schema", "name": "p"}})
    assert (failure.code, failure.param) == ("missing_required_parameter", "text.format.schema")


def test_strict_schema_rules_are_the_real_apis(serve: Serve) -> None:
    s = serve()
    failure = s.error(input="x", text=json_schema(SCHEMA, strict=True))
    assert (failure.code, failure.param) == ("invalid_json_schema", "text.format.schema")
    assert "'additionalProperties' is required to be supplied and to be false" in failure.message
    closed = {**SCHEMA, "additionalProperties": False}
    failure = s.error(input="x", text=json_schema(closed, strict=True))
    assert failure.message.endswith("Missing 'age'.")
