# Strict by default, over HTTP with the official SDK: what the real API refuses (unknown
# parameters, unknown tool types, strict function schemas it cannot enforce, enumerated values
# and bounds) is openai.BadRequestError with the real API's param, code and message; what the
# SDK itself builds (pydantic_function_tool, responses.parse) passes; and a server started with
# `lenient=True` (`rollout serve --lenient`) accepts all of it as before.
from __future__ import annotations

from typing import Any

import openai
import pydantic
import pytest
from openai import OpenAI

from support.servers import Serve
from support.tools import MODEL

OBJECT = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}


def refused(client: OpenAI, **fields: Any) -> openai.BadRequestError:
    fields.setdefault("input", "hi")
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model=MODEL, **fields)
    return info.value


def error_of(exc: openai.BadRequestError) -> tuple[Any, ...]:
    body = exc.body
    assert isinstance(body, dict)
    assert exc.status_code == 400 and body["type"] == "invalid_request_error"
    return body["param"], body["code"], body["message"]


# (id, fields of the create, param, code, message)
REFUSED: list[tuple[str, dict[str, Any], str, str, str]] = [
    (
        "unknown-parameter",
        {"extra_body": {"bogus": 1}},
        "bogus",
        "unknown_parameter",
        "Unknown parameter: 'bogus'.",
    ),
    (
        "unknown-nested",
        {"reasoning": {"effort": "low"}, "extra_body": {"reasoning": {"effort": "low", "x": 1}}},
        "reasoning.x",
        "unknown_parameter",
        "Unknown parameter: 'reasoning.x'.",
    ),
    (
        "unknown-tool-type",
        {"tools": [{"type": "teleport"}]},
        "tools[0].type",
        "invalid_value",
        "Invalid value: 'teleport'. Supported values are: 'apply_patch', ",  # (a prefix)
    ),
    (
        "strict-function-schema",
        {"tools": [{"type": "function", "name": "exec", "parameters": OBJECT, "strict": True}]},
        "tools[0].parameters",
        "invalid_function_parameters",
        "Invalid schema for function 'exec': In context=(), 'additionalProperties' is required "
        "to be supplied and to be false.",
    ),
    (
        "max-output-tokens",
        {"max_output_tokens": 5},
        "max_output_tokens",
        "integer_below_min_value",
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but "
        "got 5 instead.",
    ),
    (
        "service-tier",
        {"service_tier": "turbo"},
        "service_tier",
        "invalid_value",
        "Invalid value: 'turbo'. Supported values are: 'auto', 'default', 'flex', 'scale', "
        "'priority', 'fast' and 'ultrafast'.",
    ),
    (
        "include",
        {"include": ["reasoning.everything"]},
        "include[0]",
        "invalid_value",
        "Invalid value: 'reasoning.everything'. Supported values are: ",
    ),
]
IDS = [row[0] for row in REFUSED]

IMAGE = {"type": "input_image", "image_url": "https://example.com/a.png"}
CITATION = {"type": "url_citation", "url": "https://x", "title": "t", "start_index": 0}
# Input items breaking the SDK's types: refused in both modes (protocol.itemrules), as
# (id, input, param, code, message).
ITEM_RULES: list[tuple[str, list[dict[str, Any]], str, str, str]] = [
    (
        "item-status",
        [{"role": "user", "content": "hi", "status": "done"}],
        "input[0].status",
        "invalid_value",
        "Invalid value: 'done'. Supported values are: 'in_progress', 'completed' and 'incomplete'.",
    ),
    (
        "image-detail",
        [{"role": "user", "content": [{**IMAGE, "detail": "AAA"}]}],
        "input[0].content[0].detail",
        "invalid_value",
        "Invalid value: 'AAA'. Supported values are: 'low', 'high', 'auto' and 'original'.",
    ),
    (
        "annotation-index",
        [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": "t",
                        "annotations": [{**CITATION, "end_index": -3}],
                    }
                ],
            }
        ],
        "input[0].content[0].annotations[0].end_index",
        "integer_below_min_value",
        "Invalid 'input[0].content[0].annotations[0].end_index': integer below minimum value. "
        "Expected a value >= 0, but got -3 instead.",
    ),
    (
        "input-file",
        [{"role": "user", "content": [{"type": "input_file", "filename": "a.pdf"}]}],
        "input[0].content[0]",
        "missing_required_parameter",
        "Invalid 'input[0].content[0]': an input_file part needs one of 'file_id', 'file_data' "
        "or 'file_url'.",
    ),
]


@pytest.mark.parametrize(("fields", "param", "code", "message"), [r[1:] for r in REFUSED], ids=IDS)
def test_strict_by_default(
    serve: Serve, fields: dict[str, Any], param: str, code: str, message: str
) -> None:
    _, client = serve()
    got_param, got_code, got_message = error_of(refused(client, **fields))
    assert (got_param, got_code) == (param, code)
    assert got_message.startswith(message) and got_message.endswith(".")


@pytest.mark.parametrize("fields", [r[1] for r in REFUSED], ids=IDS)
def test_lenient_accepts_as_before(serve: Serve, fields: dict[str, Any]) -> None:
    _, client = serve(lenient=True)
    response = client.responses.create(model=MODEL, **{"input": "hi", **fields})
    assert response.status in ("completed", "incomplete")
    if "tools" in fields:  # unknown tool types are echoed as sent
        assert [t.type for t in response.tools] == [t["type"] for t in fields["tools"]]


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
@pytest.mark.parametrize(
    ("items", "param", "code", "message"),
    [r[1:] for r in ITEM_RULES],
    ids=[r[0] for r in ITEM_RULES],
)
def test_item_rules_hold_in_both_modes(
    serve: Serve, lenient: bool, items: list[dict[str, Any]], param: str, code: str, message: str
) -> None:
    _, client = serve(lenient=lenient)
    assert error_of(refused(client, input=items)) == (param, code, message)


def test_whole_floats_are_integers(serve: Serve) -> None:
    """`100.0` for an integer field is 100 (JSON Schema's integer); `100.5` is refused."""
    _, client = serve()
    raw = client.responses.with_raw_response.create(
        model=MODEL,
        input="hi",
        max_output_tokens=100.0,
    )
    echoed = raw.http_response.json()["max_output_tokens"]
    assert type(echoed) is int and echoed == 100
    exc = refused(client, max_output_tokens=100.5)
    assert error_of(exc) == (
        "max_output_tokens",
        "invalid_type",
        "Invalid type for 'max_output_tokens': expected an integer, but got a decimal instead.",
    )


class Command(pydantic.BaseModel):
    cmd: str
    cwd: str | None
    steps: list[Command]


def test_what_the_sdk_builds_passes(serve: Serve) -> None:
    """The SDK's own strict schemas (pydantic_function_tool, responses.parse's text_format)
    are what the strict rules accept."""
    _, client = serve()
    function = openai.pydantic_function_tool(Command)["function"]
    assert function.get("strict") is True
    tool = {"type": "function", **function}
    parsed = client.responses.parse(
        model=MODEL,
        input="hi",
        tools=[tool],  # type: ignore[list-item]
        tool_choice="none",
        text_format=Command,
    )
    assert isinstance(parsed.output_parsed, Command)


def test_a_stream_is_refused_before_it_starts(serve: Serve) -> None:
    """An unknown parameter of a streamed create is a 400, not an error inside a stream."""
    _, client = serve()
    param, code, _ = error_of(refused(client, stream=True, extra_body={"stream_optionz": {}}))
    assert (param, code) == ("stream_optionz", "unknown_parameter")
