# protocol/strictness.py: the real API's stricter rules as tables of bad creates (the error
# each gets, with its param, code and message), the same creates passing a lenient server's
# rules, and the tables themselves checked against the installed SDK's types.
from __future__ import annotations

import typing
from typing import Any

import pytest
import typing_extensions
from openai.types.beta import response_create_params as beta_params
from openai.types.responses import (
    image_detail,
    response_create_params,
    response_includable,
    responses_client_event_param,
    service_tier,
    tool_param,
)

from protocol import codec, strictness
from protocol.errors import ProtocolError
from protocol.validate import validate_create

MODEL = "gpt-test"
OBJECT = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
STRICT_OBJECT = {**OBJECT, "additionalProperties": False}
JSON_SCHEMA = {"type": "json_schema", "name": "n", "schema": STRICT_OBJECT, "strict": True}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "hi", **fields}


def function(parameters: dict[str, Any], strict: bool | None = True) -> dict[str, Any]:
    return {"type": "function", "name": "f", "parameters": parameters, "strict": strict}


def image(detail: str) -> dict[str, Any]:
    part = {"type": "input_image", "image_url": "https://x/y.png", "detail": detail}
    return {"role": "user", "content": [part]}


def unknown(name: str, value: dict[str, Any]) -> tuple[str, dict[str, Any], str, str, str]:
    return (name, value, name, "unknown_parameter", f"Unknown parameter: '{name}'.")


def check(value: dict[str, Any], *, websocket: bool = False, strict: bool = True) -> None:
    """A create as a server of that strictness checks it: keys, then decode, then rules."""
    if strict:
        strictness.check_params(value, websocket=websocket)
    validate_create(codec.decode_create(value), websocket=websocket, strict=strict)


# (id, body, param, code, message): refused by a strict server, accepted by a lenient one.
STRICT_ONLY: list[tuple[str, dict[str, Any], str, str, str]] = [
    unknown("bogus", body(bogus=1)),
    unknown("type", body(type="response.create")),  # a WebSocket frame's key, not over HTTP
    unknown("reasoning.bogus", body(reasoning={"effort": "low", "bogus": True})),
    unknown("text.bogus", body(text={"bogus": 1})),
    unknown("text.format.bogus", body(text={"format": {"type": "text", "bogus": 1}})),
    unknown("stream_options.include_usage", body(stream_options={"include_usage": True})),
    (
        "tool-type",
        body(tools=[{"type": "function", "name": "f"}, {"type": "foo"}]),
        "tools[1].type",
        "invalid_value",
        "Invalid value: 'foo'. Supported values are: "
        + ", ".join(repr(t) for t in sorted(strictness.TOOL_TYPES)[:-1])
        + f" and {sorted(strictness.TOOL_TYPES)[-1]!r}.",
    ),
    (
        "strict-function-additional-properties",
        body(tools=[function(OBJECT)]),
        "tools[0].parameters",
        "invalid_function_parameters",
        "Invalid schema for function 'f': In context=(), 'additionalProperties' is required to be "
        "supplied and to be false.",
    ),
    (
        "strict-function-required",
        body(tools=[function({**STRICT_OBJECT, "required": []})]),
        "tools[0].parameters",
        "invalid_function_parameters",
        "Invalid schema for function 'f': In context=(), 'required' is required to be supplied "
        "and to be an array including every key in properties. Missing 'x'.",
    ),
    (
        "strict-function-nested",
        body(tools=[function({**STRICT_OBJECT, "properties": {"x": OBJECT}})]),
        "tools[0].parameters",
        "invalid_function_parameters",
        "Invalid schema for function 'f': In context=('properties', 'x'), 'additionalProperties' "
        "is required to be supplied and to be false.",
    ),
    (
        "strict-function-no-properties",
        body(tools=[function({"type": "object", "additionalProperties": False})]),
        "tools[0].parameters",
        "invalid_function_parameters",
        "Invalid schema for function 'f': In context=(), object schema missing properties.",
    ),
    (
        "max-output-tokens-16",
        body(max_output_tokens=15),
        "max_output_tokens",
        "integer_below_min_value",
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but "
        "got 15 instead.",
    ),
    (
        "service-tier",
        body(service_tier="turbo"),
        "service_tier",
        "invalid_value",
        "Invalid value: 'turbo'. Supported values are: 'auto', 'default', 'flex', 'scale', "
        "'priority', 'fast' and 'ultrafast'.",
    ),
    (
        "include",
        body(include=["reasoning.encrypted_content", "file_search_results"]),
        "include[1]",
        "invalid_value",
        "Invalid value: 'file_search_results'. Supported values are: "
        + ", ".join(repr(v) for v in strictness.INCLUDABLE[:-1])
        + f" and {strictness.INCLUDABLE[-1]!r}.",
    ),
]  # fmt: skip

# Refused in both modes, with the real API's bound messages, and the input item rules
# (protocol.itemrules: a stored item must not break the schema it is echoed in).
BOTH: list[tuple[str, dict[str, Any], str, str, str]] = [
    (
        "item-status",
        body(input=[{"role": "user", "content": "hi", "status": "done"}]),
        "input[0].status",
        "invalid_value",
        "Invalid value: 'done'. Supported values are: 'in_progress', 'completed' and 'incomplete'.",
    ),
    (
        "image-detail",
        body(input=[image("ultra")]),
        "input[0].content[0].detail",
        "invalid_value",
        "Invalid value: 'ultra'. Supported values are: 'low', 'high', 'auto' and 'original'.",
    ),
    (
        "temperature",
        body(temperature=2.5),
        "temperature",
        "decimal_above_max_value",
        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 "
        "instead.",
    ),
    (
        "top-p",
        body(top_p=-0.5),
        "top_p",
        "decimal_below_min_value",
        "Invalid 'top_p': decimal below minimum value. Expected a value >= 0, but got -0.5 "
        "instead.",
    ),
    (
        "top-logprobs",
        body(top_logprobs=21),
        "top_logprobs",
        "integer_above_max_value",
        "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 21 "
        "instead.",
    ),
    (
        "max-output-tokens-1",
        body(max_output_tokens=0),
        "max_output_tokens",
        "integer_below_min_value",
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but "
        "got 0 instead.",
    ),
]

# Accepted by a strict server: what real clients send (spec/real-clients.md) and the extensions.
ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("codex-client-metadata", body(client_metadata={"x-session": "1"})),
    ("prompt-cache-key", body(prompt_cache_key="k", include=["reasoning.encrypted_content"])),
    ("reasoning-summary", body(reasoning={"effort": "low", "summary": "auto"})),
    ("stream-options", body(stream=True, stream_options={"include_obfuscation": False})),
    ("namespace-tool", body(tools=[{"type": "namespace", "name": "ns", "tools": []}])),
    ("hosted-tools", body(tools=[{"type": t} for t in ("web_search", "shell", "apply_patch")])),
    ("custom-tool", body(tools=[{"type": "custom", "name": "patch"}])),
    ("strict-function", body(tools=[function(STRICT_OBJECT)])),
    ("non-strict-function", body(tools=[function(OBJECT, strict=False)])),
    ("strict-unset-function", body(tools=[function(OBJECT, strict=None)])),
    ("penalties", body(presence_penalty=0.5, frequency_penalty=-0.5)),
    ("append-shape", body(shape="append", stream=True)),
    ("json-schema", body(text={"format": JSON_SCHEMA, "verbosity": "low"})),
    ("max-output-tokens-16", body(max_output_tokens=16)),
    ("image-detail-original", body(input=[image("original")])),
    ("every-service-tier", body(service_tier="priority")),
]  # fmt: skip


def refusal(value: dict[str, Any], **mode: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        check(value, **mode)
    return info.value


@pytest.mark.parametrize(
    ("body_", "param", "code", "message"),
    [r[1:] for r in STRICT_ONLY],
    ids=[r[0] for r in STRICT_ONLY],
)
def test_strict_refuses(body_: dict[str, Any], param: str, code: str, message: str) -> None:
    error = refusal(body_)
    assert (error.param, error.code, error.message) == (param, code, message)
    assert (error.status, error.type) == (400, "invalid_request_error")


@pytest.mark.parametrize("body_", [r[1] for r in STRICT_ONLY], ids=[r[0] for r in STRICT_ONLY])
def test_lenient_accepts(body_: dict[str, Any]) -> None:
    check(body_, strict=False)


@pytest.mark.parametrize(
    ("body_", "param", "code", "message"), [r[1:] for r in BOTH], ids=[r[0] for r in BOTH]
)
def test_both_modes_refuse(body_: dict[str, Any], param: str, code: str, message: str) -> None:
    strict = refusal(body_)
    assert (strict.param, strict.code, strict.message) == (param, code, message)
    lenient = refusal(body_, strict=False)
    assert (lenient.param, lenient.code) == (param, code)


def test_lenient_least_max_output_tokens_is_one() -> None:
    check(body(max_output_tokens=1), strict=False)
    error = refusal(body(max_output_tokens=0), strict=False)
    assert error.message == (
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got "
        "0 instead."
    )


@pytest.mark.parametrize("body_", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_strict_accepts(body_: dict[str, Any]) -> None:
    check(body_)


def test_websocket_frame_keys_are_not_parameters() -> None:
    frame = body(type="response.create", stream_id="lane", generate=False, stream=True)
    check(frame, websocket=True)
    error = refusal({**frame, "bogus": {"nested": 1}}, websocket=True)
    assert (error.param, error.code) == ("bogus", "unknown_parameter")


def test_unknown_names_are_clipped() -> None:
    error = refusal(body(**{"k" * 500: 1}))
    assert error.message.startswith("Unknown parameter: 'kkk") and len(error.message) < 200


# -- the tables against the installed SDK's types ---------------------------------------------


def literals(alias: Any) -> set[str]:
    """The string values of a Literal, or of the Literals inside a union or a Required[...]."""
    if typing.get_origin(alias) is typing.Literal:
        return {a for a in typing.get_args(alias) if isinstance(a, str)}
    out: set[str] = set()
    for arg in typing.get_args(alias):
        out |= literals(arg)
    return out


def test_params_are_the_sdks() -> None:
    http = set(response_create_params.ResponseCreateParamsStreaming.__annotations__)
    http |= set(response_create_params.ResponseCreateParamsBase.__annotations__)
    beta = set(beta_params.ResponseCreateParamsBase.__annotations__) - {"betas"}  # a header
    assert http | beta == strictness.API_PARAMS
    ws = set(responses_client_event_param.ResponseCreate.__annotations__)
    assert ws - strictness.CREATE_PARAMS == set(strictness.FRAME_KEYS)


def test_tool_types_are_the_sdks() -> None:
    types: set[str] = set()
    for member in typing.get_args(tool_param.ToolParam):
        hint = typing_extensions.get_type_hints(member)["type"]
        types |= literals(hint)
    assert types == strictness.TOOL_TYPES


def test_enumerations_are_the_sdks() -> None:
    assert literals(response_includable.ResponseIncludable) == set(strictness.INCLUDABLE)
    assert literals(service_tier.ServiceTier) == set(strictness.SERVICE_TIERS)
    assert literals(image_detail.ImageDetail) == set(strictness.IMAGE_DETAILS)
