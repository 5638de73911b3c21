# The simulated hosted code interpreter, file search and image generation through the official
# SDK: the default model calls each when the prompt asks for it and when `tool_choice` forces
# it, with the real items and events; each item goes back as input (a round trip).
from __future__ import annotations

import base64
import zlib
from typing import Any

import openai
import pytest
from openai import OpenAI

from support import behind
from support.sdk import assert_event_class
from support.tools import MODEL

TOOLS: dict[str, dict[str, Any]] = {
    "code_interpreter": {"type": "code_interpreter", "container": {"type": "auto"}},
    "file_search": {"type": "file_search", "vector_store_ids": ["vs_1"]},
    "image_generation": {"type": "image_generation"},
}
CASES = [
    (
        "code_interpreter",
        "Calculate the average of 3, 5 and 10 with python.",
        [
            "response.code_interpreter_call.in_progress",
            "response.code_interpreter_call_code.delta",
            "response.code_interpreter_call_code.done",
            "response.code_interpreter_call.interpreting",
            "response.code_interpreter_call.completed",
        ],
    ),
    (
        "file_search",
        "Search my documents for the onboarding checklist.",
        [
            "response.file_search_call.in_progress",
            "response.file_search_call.searching",
            "response.file_search_call.completed",
        ],
    ),
    (
        "image_generation",
        "Draw a lighthouse at dusk.",
        [
            "response.image_generation_call.in_progress",
            "response.image_generation_call.generating",
            "response.image_generation_call.completed",
        ],
    ),
]


@pytest.mark.simulated_only(behind.HOSTED_TOOLS)
@pytest.mark.parametrize(("kind", "prompt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_default_model_calls_it_when_asked(
    client: OpenAI, kind: str, prompt: str, expected: list[str]
) -> None:
    events = list(
        client.responses.create(model=MODEL, input=prompt, tools=[TOOLS[kind]], stream=True)  # type: ignore[list-item]
    )
    for e in events:
        assert_event_class(e)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    prefix = f"response.{kind}_call"
    assert [e.type for e in events if e.type.startswith(prefix)] == expected
    final = events[-1]
    assert final.type == "response.completed"
    call, answer = final.response.output
    assert call.type == f"{kind}_call" and call.status == "completed"
    assert answer.type == "message"
    if kind == "code_interpreter":
        assert call.code and call.outputs and call.outputs[0].type == "logs"  # type: ignore[union-attr]
    elif kind == "file_search":
        assert call.queries and call.results and call.results[0].file_id  # type: ignore[union-attr]
    else:
        raw = base64.b64decode(call.result or "")  # type: ignore[union-attr]
        assert raw.startswith(b"\x89PNG\r\n\x1a\n")
        zlib.decompress(raw[raw.index(b"IDAT") + 4 : raw.index(b"IEND") - 8])  # valid data


@pytest.mark.simulated_only(behind.HOSTED_TOOLS)
@pytest.mark.parametrize("kind", list(TOOLS))
def test_a_forcing_tool_choice_calls_it_and_its_item_round_trips(client: OpenAI, kind: str) -> None:
    first = client.responses.create(
        model=MODEL,
        input="hello there",
        tools=[TOOLS[kind]],  # type: ignore[list-item]
        tool_choice={"type": kind},  # type: ignore[arg-type,misc]
    )
    assert first.output[0].type == f"{kind}_call"
    history = [o.model_dump(exclude_none=True) for o in first.output]
    again = client.responses.create(
        model=MODEL,
        input=[*history, {"role": "user", "content": "thanks, and one more thing?"}],  # type: ignore[list-item]
        tools=[TOOLS[kind]],  # type: ignore[list-item]
    )
    assert again.status == "completed" and again.output[-1].type == "message"


def test_without_the_tool_it_is_not_called(client: OpenAI) -> None:
    response = client.responses.create(model=MODEL, input="Draw a lighthouse at dusk.")
    assert [o.type for o in response.output] == ["message"]


# -- computer use: a tool the client runs ---------------------------------------------------

COMPUTER = {
    "type": "computer_use_preview",
    "display_width": 1024,
    "display_height": 768,
    "environment": "browser",
}
SCREENSHOT = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
def test_a_computer_call_ends_the_response_and_its_output_continues_it(client: OpenAI) -> None:
    events = list(
        client.responses.create(
            model=MODEL,
            input="Open the website and take a screenshot.",
            tools=[COMPUTER],  # type: ignore[list-item]
            stream=True,
        )
    )
    for e in events:
        assert_event_class(e)
    final = events[-1]
    assert final.type == "response.completed"
    (call,) = final.response.output
    assert call.type == "computer_call" and call.status == "completed"
    assert call.action is not None and call.action.type == "screenshot"
    assert call.call_id and call.pending_safety_checks == []
    assert [e.type for e in events[2:-1]] == [
        "response.output_item.added",
        "response.output_item.done",
    ]
    output = {
        "type": "computer_call_output",
        "call_id": call.call_id,
        "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
    }
    after = client.responses.create(
        model=MODEL,
        previous_response_id=final.response.id,
        input=[output],  # type: ignore[list-item]
        tools=[COMPUTER],  # type: ignore[list-item]
    )
    assert [o.type for o in after.output] == ["message"]
    # The call must be answered, as a function call must.
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL,
            previous_response_id=final.response.id,
            input="never mind",
            tools=[COMPUTER],  # type: ignore[list-item]
        )
    assert caught.value.body["param"] == "input"  # type: ignore[index]


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
def test_a_forced_computer_call(client: OpenAI) -> None:
    response = client.responses.create(
        model=MODEL,
        input="hello",
        tools=[COMPUTER],  # type: ignore[list-item]
        tool_choice={"type": "computer_use_preview"},
    )
    assert [o.type for o in response.output] == ["computer_call"]
