# Shared helpers of the record/replay tests: scripted tool rollouts, recording servers (a
# ServerThread for the official SDK's sync client), the two SDK sessions that get recorded
# (HTTP chained tool rollout; WebSocket chained rollout plus an append-shape rollout through raw
# `conn.send`), and a replay of a recording against a fresh server.
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import trio
from openai import OpenAI

from rollout.client.replay import replay_session
from rollout.engine.engine import Engine
from rollout.model.policy import Policy, ScriptedPolicy, call, text
from rollout.testing.thread import ServerThread

MODEL = "gpt-test"
FINAL = "All done: the suite is green."
INSTRUCTIONS = "You are a careful coding agent. Run one command at a time with exec."
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


def cmd(i: int) -> str:
    return f"pytest -q tests/test_step_{i}.py"


def tool_script(turns: int, final: str = FINAL, offset: int = 0) -> ScriptedPolicy:
    """`turns` exec calls (one per model turn), then the text answer `final`."""
    steps = [call("exec", {"cmd": cmd(i + offset)}) for i in range(turns)]
    return ScriptedPolicy([*steps, text(final)])


def run_tool(arguments: str) -> str:
    return f"ran {orjson.loads(arguments)['cmd']}: exit 0"


@contextlib.contextmanager
def server(policy: Policy, record: Path | None = None) -> Iterator[ServerThread]:
    """A server (recording into `record` if given); stopped, so its files are complete, on exit."""
    engine = Engine(policy=policy)
    with ServerThread(engine, record=record) as s:
        yield s


def sdk(s: ServerThread) -> OpenAI:
    return OpenAI(base_url=s.http_base_url, api_key="t", max_retries=0, timeout=10)


def http_session(client: OpenAI) -> list[str]:
    """A chained tool rollout over HTTP: streamed and JSON turns alternately (every output sent
    with previous_response_id), then a retrieve of the last response. Returns the commands run."""
    ran: list[str] = []
    stream = True
    kwargs: dict[str, Any] = {"input": "Fix the failing tests."}
    while True:
        if stream:
            response = None
            for event in client.responses.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], stream=True, **kwargs
            ):
                if event.type in TERMINAL:
                    response = event.response
            assert response is not None
        else:
            response = client.responses.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], **kwargs
            )
        assert response.status == "completed", response
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        outputs = []
        for c in calls:
            ran.append(orjson.loads(c.arguments)["cmd"])
            outputs.append(
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": run_tool(c.arguments),
                }
            )
        kwargs = {"input": outputs, "previous_response_id": response.id}
        stream = not stream
    client.responses.retrieve(response.id)
    return ran


def ws_session(client: OpenAI) -> tuple[list[str], list[str]]:
    """Over one WebSocket: a chained tool rollout (`conn.response.create`), then an append-shape
    rollout (raw `conn.send` frames: `shape: "append"`, `response.append`). Returns the final
    texts of the two rollouts and the commands run in the append rollout."""
    finals: list[str] = []
    appended: list[str] = []
    with client.responses.connect() as conn:
        extra: dict[str, Any] = {"input": [{"role": "user", "content": "Chain it."}]}
        while True:
            conn.response.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], store=False, **extra
            )
            response = None
            for event in conn:
                if event.type in TERMINAL:
                    response = event.response
                    break
                assert event.type != "error", event
            assert response is not None and response.status == "completed"
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                finals.append(response.output_text)
                break
            outputs = [
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": run_tool(c.arguments),
                }
                for c in calls
            ]
            extra = {"input": outputs, "previous_response_id": response.id}
        conn.send(
            {
                "type": "response.create",
                "model": MODEL,
                "input": "Append it.",
                "instructions": INSTRUCTIONS,
                "tools": [EXEC_TOOL],
                "shape": "append",
                "store": False,
            }
        )
        args: dict[str, str] = {}
        for event in conn:
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                args[event.item.call_id] = event.item.arguments
            elif event.type == "response.done":
                pause = event.model_dump()
                items = []
                for pending in pause["pending_calls"]:
                    arguments = args[pending["call_id"]]
                    appended.append(orjson.loads(arguments)["cmd"])
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": pending["call_id"],
                            "output": run_tool(arguments),
                        }
                    )
                conn.send(
                    {"type": "response.append", "response_id": pause["response_id"], "input": items}
                )
            elif event.type in TERMINAL:
                assert event.response.status == "completed"
                finals.append(event.response.output_text)
                break
            else:
                assert event.type != "error", event
    return finals, appended


def replay(directory: Path, policy: Policy, record: Path | None = None) -> list[dict[str, Any]]:
    """Replay the recorded requests against a fresh server with `policy`; what it sent back."""
    with server(policy, record) as s:
        return trio.run(replay_session, directory, s.url)
