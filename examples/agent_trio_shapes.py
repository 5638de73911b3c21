"""One tool-using agent, run in every protocol shape with the trio client.

`rollout.run_agent` drives a rollout in seven modes: HTTP and WebSocket, each with the full
history resent every turn (`*-full`), chained by `previous_response_id` (`*-chain`), or as one
suspended response that the client appends tool outputs to (`*-append`), and the real API's
multi-agent response over WebSocket that waits for `response.inject` (`ws-inject`). The agent
code (the first request and the local tools) is the same in every mode; only how a turn travels
differs.

    python examples/agent_trio_shapes.py                        # its own in-process server
    python examples/agent_trio_shapes.py --base-url http://127.0.0.1:8000/v1   # `rollout serve`

Without `--base-url` the model is scripted (read a file, run the tests, answer), so every mode
must produce the same calls and the same answer; the script exits 1 if they differ.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

import trio

import rollout
from rollout import MODES, AgentResult, run_agent

TOOLS = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    rollout.EXEC_TOOL,  # a shell tool: {"cmd": "..."}
]
REQUEST = {
    "model": "sim-1",
    "instructions": "You are a coding agent. Use the tools, then answer briefly.",
    "input": "Do the tests pass?",
    "tools": TOOLS,
}
# The in-process server's model: two tool turns, then the answer.
SCRIPT = [
    rollout.call("read_file", {"path": "pyproject.toml"}),
    rollout.call("exec", {"cmd": "pytest -q"}),
    rollout.text("Yes: all 12 tests pass."),
]


# The agent's local tools: a function of the parsed arguments (sync or async) per tool name.
def read_file(args: dict[str, Any]) -> str:
    return f"(contents of {args.get('path')})"


async def exec_(args: dict[str, Any]) -> dict[str, Any]:
    await trio.sleep(0)  # a real agent would run the command here
    return {"cmd": args.get("cmd"), "exit_code": 0, "stdout": "12 passed"}


LOCAL_TOOLS = {"read_file": read_file, "exec": exec_}


def show(result: AgentResult) -> None:
    calls = ", ".join(f"{name}({arguments})" for name, arguments in result.calls)
    print(f"{result.mode:12} {len(result.turns)} turns, {result.seconds * 1000:6.1f} ms")
    print(f"{'':12} calls: {calls or '(none)'}")
    print(f"{'':12} text:  {result.text}")


async def run_all(base_url: str) -> list[AgentResult]:
    results = []
    for mode in MODES:
        result = await run_agent(mode, base_url, REQUEST, LOCAL_TOOLS)
        show(result)
        results.append(result)
    return results


async def main(base_url: str | None) -> int:
    if base_url is not None:
        await run_all(base_url)
        return 0
    engine = rollout.Engine(policy=rollout.ScriptedPolicy(SCRIPT))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(rollout.serve, engine))
        results = await run_all(f"http://127.0.0.1:{port}/v1")
        nursery.cancel_scope.cancel()
    if len({(r.text, tuple(r.calls)) for r in results}) != 1:
        print("the modes disagree", file=sys.stderr)
        return 1
    print(f"all {len(results)} modes made the same calls and gave the same answer")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="One agent in every protocol shape (trio).")
    parser.add_argument("--base-url", help="a running server, e.g. http://127.0.0.1:8000/v1")
    sys.exit(trio.run(main, parser.parse_args().base_url))
