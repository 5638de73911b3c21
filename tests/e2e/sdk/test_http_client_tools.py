# The client's tools other than functions, over HTTP with the official SDK: the default model
# calls a custom tool (input valid under its grammar), the shell, local_shell and apply_patch
# tools when the prompt wants them or tool_choice forces them, each streamed as the SDK's own
# events; the call's output goes back (previous_response_id, or the full history with
# store=false) and the model answers; an output for a call the conversation lacks is refused.
from __future__ import annotations

import json
import re
from typing import Any

import lark
import pytest
from openai import BadRequestError, OpenAI

from rollout.model.policy import DefaultPolicy
from support import behind
from support.sdk import assert_event_class
from support.tools import MODEL

REGEX = r"\d{4}-\d{2}-\d{2} [A-Z]{3}"
LARK = (
    'start: NAME "(" NUMBER ("," NUMBER)* ")"\n'
    "%import common.CNAME -> NAME\n%import common.INT -> NUMBER\n"
)


def _tool(name: str, fmt: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "custom", "name": name, "description": f"The {name} tool."}
    if fmt is not None:
        out["format"] = fmt
    return out


def _output_for(item: Any) -> dict[str, Any]:
    """What a client sends back for a call item."""
    if item.type == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": item.call_id, "output": "done"}
    if item.type == "shell_call":
        out = {
            "stdout": "README.md\nsrc\n",
            "stderr": "",
            "outcome": {"type": "exit", "exit_code": 0},
        }
        return {"type": "shell_call_output", "call_id": item.call_id, "output": [out]}
    if item.type == "local_shell_call":
        body = json.dumps({"stdout": "ok", "exit_code": 0})
        return {"type": "local_shell_call_output", "id": item.call_id, "output": body}
    assert item.type == "apply_patch_call"
    return {"type": "apply_patch_call_output", "call_id": item.call_id, "status": "completed"}


CASES = [
    pytest.param(
        [_tool("stamp", {"type": "grammar", "syntax": "regex", "definition": REGEX})],
        "Stamp the release",
        {"type": "custom", "name": "stamp"},
        "custom_tool_call",
        id="regex",
    ),
    pytest.param(
        [_tool("calc", {"type": "grammar", "syntax": "lark", "definition": LARK})],
        "Compute it",
        "required",
        "custom_tool_call",
        id="lark",
    ),
    pytest.param(
        [_tool("notes", {"type": "text"})],
        "Take notes",
        {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "custom", "name": "notes"}],
        },
        "custom_tool_call",
        id="text",
    ),
    pytest.param(
        [{"type": "shell"}], "List the files in this repo", "auto", "shell_call", id="shell"
    ),
    pytest.param(
        [{"type": "local_shell"}], "Run the tests", "auto", "local_shell_call", id="local_shell"
    ),
    pytest.param(
        [{"type": "apply_patch"}, {"type": "shell"}],
        "Create a file hello.py that prints hi",
        "auto",
        "apply_patch_call",
        id="apply_patch",
    ),
    pytest.param(
        [{"type": "apply_patch"}],
        "hello",
        {"type": "apply_patch"},
        "apply_patch_call",
        id="forced_patch",
    ),
    pytest.param([{"type": "shell"}], "hello", {"type": "shell"}, "shell_call", id="forced_shell"),
]


def _call(client: OpenAI, tools: list[dict[str, Any]], prompt: str, choice: Any) -> Any:
    with client.responses.stream(
        model=MODEL,
        input=prompt,
        tools=tools,
        tool_choice=choice,  # type: ignore[arg-type]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    for event in events:
        assert_event_class(event, exact=False)
    return final, [e.type for e in events]


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
@pytest.mark.parametrize(("tools", "prompt", "choice", "kind"), CASES)
def test_called_streamed_and_continued(
    serve: Any, tools: list[dict[str, Any]], prompt: str, choice: Any, kind: str
) -> None:
    _, client = serve(policy=DefaultPolicy(tool_calls=1))
    final, types = _call(client, tools, prompt, choice)
    [call] = [o for o in final.output if o.type.endswith("_call") and o.type != "reasoning"]
    assert call.type == kind
    if kind == "custom_tool_call":
        fmt = tools[0].get("format") or {}
        assert "response.custom_tool_call_input.done" in types
        if fmt.get("syntax") == "regex":
            assert re.fullmatch(REGEX, call.input)
        elif fmt.get("syntax") == "lark":
            lark.Lark(LARK).parse(call.input)
        else:
            assert call.input
    elif kind == "shell_call":
        assert call.action.commands and call.status == "completed"
        assert "response.shell_call_command.done" in types
    elif kind == "local_shell_call":
        assert call.action.type == "exec" and call.action.command
    else:
        assert call.operation.type in ("create_file", "update_file", "delete_file")
        assert call.operation.path
    output = _output_for(call)
    # chained by id
    chained = client.responses.create(
        model=MODEL,
        previous_response_id=final.id,
        input=[output],
        tools=tools,  # type: ignore[list-item,arg-type]
    )
    assert chained.status == "completed"
    assert chained.output[-1].type == "message"
    # the full history, nothing stored
    history = [{"role": "user", "content": prompt}]
    history += [o.model_dump(exclude_none=True) for o in final.output]
    history.append(output)
    replayed = client.responses.create(
        model=MODEL,
        input=history,
        tools=tools,
        store=False,  # type: ignore[arg-type]
    )
    assert replayed.status == "completed"
    assert replayed.output[-1].type == "message"


@pytest.mark.parametrize(
    "output",
    [
        {"type": "custom_tool_call_output", "call_id": "call_nope", "output": "x"},
        {"type": "shell_call_output", "call_id": "call_nope", "output": []},
        {"type": "local_shell_call_output", "id": "call_nope", "output": "{}"},
        {"type": "apply_patch_call_output", "call_id": "call_nope", "status": "failed"},
    ],
)
def test_an_output_for_no_call_is_refused(serve: Any, output: dict[str, Any]) -> None:
    _, client = serve()
    with pytest.raises(BadRequestError) as caught:
        client.responses.create(model=MODEL, input=[{"role": "user", "content": "hi"}, output])  # type: ignore[list-item]
    body: Any = caught.value.body
    assert body["param"] == "input[1].call_id"
    assert "No tool call found for" in body["message"] and "call_nope" in body["message"]


def test_tool_choice_none_answers_in_text(serve: Any) -> None:
    _, client = serve()
    final = client.responses.create(
        model=MODEL,
        input="List the files",
        tools=[{"type": "shell"}],
        tool_choice="none",  # type: ignore[list-item]
    )
    assert [o.type for o in final.output if o.type != "reasoning"] == ["message"]
