# A sample client tool for examples, docs and load runs: one shell tool (`exec`) as a Responses
# function-tool definition, and a stand-in that "runs" it (it echoes the command and exit 0;
# nothing is executed). Agents under test bring their own tools; this is the one the project's
# own scripts share.
from __future__ import annotations

from typing import Any

import orjson

EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "exec",
    "description": "Run a shell command and return its output.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}


def run_exec(name: str, arguments: str) -> str:
    """The sample tool's output for one call (`arguments` as the model wrote them)."""
    if name != "exec":
        return f"unknown tool {name}"
    try:
        cmd = orjson.loads(arguments).get("cmd")
    except (orjson.JSONDecodeError, AttributeError):
        return "error: the arguments are not a JSON object"
    return f"$ {cmd}\n(exit 0)"
