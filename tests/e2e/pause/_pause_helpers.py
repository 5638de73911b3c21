# Shared helpers of the pause/resume tests: the SDK's beta WebSocket client against a
# ServerThread, every server event checked strictly against the SDK's beta event class for its
# type (BetaResponsesServerEvent), scripted policies, and tool outputs.
from __future__ import annotations

import functools
import typing
import warnings
from collections.abc import Iterator
from typing import Any

from openai import OpenAI
from openai.types.beta.beta_response_inject_failed_event import BetaResponseInjectFailedEvent
from openai.types.beta.beta_response_steer_failed_event import BetaResponseSteerFailedEvent
from openai.types.beta.beta_responses_server_event import BetaResponsesServerEvent

MODEL = "gpt-test"
BETA = {"OpenAI-Beta": "responses_multi_agent=v1"}
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "exec",
    "description": "Run a shell command in the sandbox and return its output.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}
LOOKUP_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "lookup",
    "description": "A slow lookup: the model does not wait for it.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    "async": True,
}
#: The codes the real API sends in response.inject.failed. The SDK's Literal lists the first two;
#: `invalid_input` (an output whose call is already resolved) was observed against the real API.
INJECT_CODES_BEYOND_SDK = frozenset({"invalid_input"})


def sdk(base_url: str) -> OpenAI:
    return OpenAI(api_key="test", base_url=base_url, max_retries=0, timeout=10)


@functools.cache
def beta_classes() -> dict[str, type]:
    """The SDK's beta class for each WebSocket server event `type`."""
    union = typing.get_args(BetaResponsesServerEvent)[0]
    out: dict[str, type] = {}
    for cls in typing.get_args(union):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            out[literal] = cls
    return out


def check_beta(event: Any) -> None:
    """The event parsed into the SDK's beta class for its type, and validates strictly as one
    (re-validated from its JSON). Two documented exceptions, where the SDK's types are narrower
    than what the real API sends: an inject failure's code beyond the SDK's Literal
    (`invalid_input`), and the input a steering failure for invalid input returns as it was sent
    (which is, by definition, not a valid steering input); the rest of such events strictly."""
    expected = beta_classes().get(event.type)
    assert expected is not None, f"the SDK has no beta class for {event.type!r}"
    assert type(event) is expected, f"{event.type} parsed as {type(event).__name__}"
    with warnings.catch_warnings():  # an invalid steering input, returned as sent, warns
        warnings.simplefilter("ignore", UserWarning)
        data = event.model_dump(mode="json", exclude_unset=True, by_alias=True)
    if expected is BetaResponseInjectFailedEvent and data["error"]["code"] in (
        INJECT_CODES_BEYOND_SDK
    ):
        data["error"]["code"] = "response_not_found"
    if expected is BetaResponseSteerFailedEvent and data["error"]["code"] == "invalid_input":
        data["steer"]["input"] = "(the invalid input, as sent)"
    expected.model_validate(data)


def events(conn: Any, until: frozenset[str] = TERMINAL) -> Iterator[Any]:
    """Events from the connection, each checked, up to and including one whose type is in
    `until`."""
    for event in conn:
        check_beta(event)
        yield event
        if event.type in until:
            return


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}
