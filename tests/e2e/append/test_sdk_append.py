# The official SDK drives the append shape: `client.responses.connect()` (sync, against a
# ServerThread) sends the extension's frames as raw `conn.send({...})` dicts (`shape: "append"`,
# `response.append`), and an agent loop dispatches on `event.type`. The SDK has no class for the
# pause event, so `response.done` parses into some fallback class; its fields are read with
# `model_dump()`.
from __future__ import annotations

from typing import Any

import pytest

from rollout.model.policy import ScriptedPolicy, text
from support import behind
from support.events import TERMINAL
from support.frames import append_frame, create_frame
from support.sdk import ended
from support.servers import Serve
from support.tools import FINAL, cmd, output, parallel, run_exec, tool_steps

CALLS = 4


def run_tool(name: str, arguments: str) -> str:
    assert name == "exec"
    return run_exec(arguments)


def test_sdk_drives_an_append_rollout_to_completion(serve: Serve) -> None:
    server, client = serve(ScriptedPolicy(tool_steps(CALLS)))
    seqs: list[int] = []
    kinds: list[str] = []
    ids: set[str] = set()
    calls: dict[str, tuple[str, str]] = {}  # call_id -> (name, arguments)
    ran: list[str] = []
    text_parts: list[str] = []
    final: Any = None
    with client.responses.connect() as conn:
        conn.send(create_frame())
        for event in conn:
            kinds.append(event.type)
            seqs.append(event.sequence_number)
            if event.type == "response.created":
                ids.add(event.response.id)
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                calls[event.item.call_id] = (event.item.name, event.item.arguments)
            elif event.type == "response.output_text.delta":
                text_parts.append(event.delta)
            elif event.type == "response.done":
                pause = event.model_dump()
                ids.add(pause["response_id"])
                assert pause["usage"]["output_tokens"] > 0
                outputs = []
                for pending in pause["pending_calls"]:
                    assert set(pending) == {"call_id", "name", "item_id"}
                    name, arguments = calls[pending["call_id"]]
                    assert pending["name"] == name
                    ran.append(arguments)
                    outputs.append(output(pending["call_id"], run_tool(name, arguments)))
                conn.send(append_frame(pause["response_id"], outputs))
            elif (final := ended(event)) is not None:
                break
    assert final is not None and final.status == "completed"
    assert len(ids) == 1 and final.id in ids
    assert seqs == list(range(len(seqs)))
    assert kinds.count("response.done") == CALLS
    assert ran == [f'{{"cmd":"{cmd(i)}"}}' for i in range(CALLS)]
    assert "".join(text_parts) == FINAL
    assert final.output_text == FINAL
    assert [item.type for item in final.output] == ["function_call"] * CALLS + ["message"]
    assert server.engine.stats.totals.counts["routing"].calls == 1


def test_sdk_parallel_calls_and_an_error_event_on_the_way(serve: Serve) -> None:
    _, client = serve(ScriptedPolicy([parallel("a", "b", "c"), text(FINAL)]))
    errors: list[dict[str, Any]] = []
    pauses = 0
    with client.responses.connect() as conn:
        conn.send(create_frame())
        for event in conn:
            if event.type == "response.done":
                pauses += 1
                pause = event.model_dump()
                rid = pause["response_id"]
                pending = [p["call_id"] for p in pause["pending_calls"]]
                assert len(pending) == 3
                conn.send(append_frame(rid, [output("call_wrong")]))  # refused: error event
                for call_id in reversed(pending):  # one frame each, out of order
                    conn.send(append_frame(rid, [output(call_id)]))
            elif event.type == "error":
                errors.append(event.model_dump())
            elif event.type in TERMINAL:
                assert event.type == "response.completed"
                assert event.response.output_text == FINAL
                break
    assert pauses == 1
    assert [e["error"]["code"] for e in errors] == ["unknown_call_id"]
    assert errors[0]["error"]["param"] == "input[0].call_id"


@pytest.mark.simulated_only(behind.CLIENT_TOOLS)
def test_client_tools_other_than_functions_pause_the_append_rollout(serve: Serve) -> None:
    """A shell call and a custom tool's call pause the rollout like function calls; their
    outputs, appended, resume it to an answer."""
    from rollout.model.policy import DefaultPolicy

    _, client = serve(DefaultPolicy(tool_calls=2))
    tools = [{"type": "shell"}, {"type": "custom", "name": "note", "description": "notes"}]
    pending: list[dict[str, Any]] = []
    kinds: dict[str, str] = {}
    final: Any = None
    with client.responses.connect() as conn:
        frame = create_frame(input="List the files in this repo", tools=tools)
        conn.send(frame)
        for event in conn:
            if event.type == "response.output_item.done" and event.item.type.endswith("_call"):
                kinds[event.item.call_id] = event.item.type
            elif event.type == "response.done":
                pause = event.model_dump()
                outputs: list[dict[str, Any]] = []
                for call in pause["pending_calls"]:
                    pending.append(call)
                    if kinds[call["call_id"]] == "shell_call":
                        chunk = {
                            "stdout": "README.md\n",
                            "stderr": "",
                            "outcome": {"type": "exit", "exit_code": 0},
                        }
                        outputs.append(
                            {
                                "type": "shell_call_output",
                                "call_id": call["call_id"],
                                "output": [chunk],
                            }
                        )
                    else:
                        outputs.append(
                            {
                                "type": "custom_tool_call_output",
                                "call_id": call["call_id"],
                                "output": "ok",
                            }
                        )
                conn.send(append_frame(pause["response_id"], outputs))
            elif (final := ended(event)) is not None:
                break
    assert final is not None and final.status == "completed"
    assert pending and pending[0]["name"] == "shell"
    assert final.output[-1].type == "message"
