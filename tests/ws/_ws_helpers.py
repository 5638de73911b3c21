# Shared helpers of the WebSocket-mode tests: the scripted tool rollout, the SDK's class for each
# server event type, the independent token accounting, and polling for background work.
from __future__ import annotations

import functools
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any

from openai.types.responses.responses_server_event import ResponsesServerEvent

from protocol import codec
from protocol.items import Item, Tool
from rollout.engine.context import render, render_header
from rollout.model import tokens
from rollout.model.policy import ScriptedPolicy, call, text

MODEL = "gpt-test"
TURNS = 20
FINAL = "done"
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})
INSTRUCTIONS = (
    "You are a careful coding agent working in a sandboxed repository. Run one shell command at a "
    "time with the exec tool, read its output, and decide the next step. Keep going until the "
    "task is finished, then answer with a one-word summary."
)
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


def cmd(i: int) -> str:
    return f"pytest -q tests/test_step_{i}.py"


def tool_script(turns: int = TURNS) -> ScriptedPolicy:
    """`turns` exec calls (one per model turn), then the text answer FINAL."""
    return ScriptedPolicy([call("exec", {"cmd": cmd(i)}) for i in range(turns)] + [text(FINAL)])


def tool_output(call_id: str, i: int) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": call_id,
        "output": f"exit 0: {i + 1} passed in 0.{i:02d}s",
    }


@functools.cache
def server_event_classes() -> dict[str, type]:
    """The SDK's class for each WebSocket server event `type` (its ResponsesServerEvent union)."""
    union = typing.get_args(ResponsesServerEvent)[0]  # Annotated[Union[...], discriminator]
    out: dict[str, type] = {}
    for cls in typing.get_args(union):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            assert literal not in out, f"two SDK classes for {literal}"
            out[literal] = cls
    return out


def assert_sdk_class(event: Any) -> None:
    """The event parsed into the SDK's own class for its type, and validates strictly as one."""
    expected = server_event_classes().get(event.type)
    assert expected is not None, f"the SDK has no class for event type {event.type!r}"
    assert type(event) is expected, f"{event.type} parsed as {type(event).__name__}"
    expected.model_validate(event.model_dump(mode="json", exclude_unset=True))


# -- independent token accounting ---------------------------------------------------------------


def decode_items(items: Sequence[dict[str, Any]]) -> list[Item]:
    """Wire items (as sent or received) as the server's item types, for `render`."""
    return list(codec.decode_create({"model": MODEL, "input": list(items)}).input)


def decode_tools(tools: Sequence[dict[str, Any]]) -> list[Tool]:
    return list(codec.decode_create({"model": MODEL, "input": "x", "tools": list(tools)}).tools)


def header_tokens(instructions: str | None, tools: Sequence[dict[str, Any]]) -> int:
    return tokens.count(render_header(instructions, decode_tools(tools)))


def item_tokens(items: Sequence[dict[str, Any]]) -> int:
    """Tokens of the items each rendered once, one at a time."""
    return sum(tokens.count(render(item)) for item in decode_items(items))


# -- waiting for background work ----------------------------------------------------------------


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll `check` (background billing, connection counters) until true or fail."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the server"
        time.sleep(0.01)
