# The tools of the tests and the scripted models that call them: the one `exec` function tool,
# a coding agent's instructions, the scripted rollouts (`turns` exec calls, then an answer;
# parallel calls in one step), and the client's side (the outputs it sends back).
from __future__ import annotations

from typing import Any

import orjson

from protocol.items import FunctionCallOutput
from rollout.conversation.calls import FunctionCallSpec
from rollout.model.policy import CallStep, ScriptedPolicy, Step, call, text

MODEL = "gpt-test"
FINAL = "All done: the suite is green."
INSTRUCTIONS = "You are a careful coding agent. Run one command at a time with exec."
PROMPT = "Fix the failing tests."


def function_tool(name: str, parameters: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A function tool definition (`extra`: description, strict) taking `parameters`."""
    return {"type": "function", "name": name, **extra, "parameters": parameters}


EXEC_TOOL = function_tool(
    "exec",
    {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
    description="Run a shell command in the sandbox and return its output.",
)
#: The smallest function tool: any object as arguments.
BARE_EXEC_TOOL = function_tool("exec", {"type": "object"})


def out(call_id: str, output: str = "ok") -> FunctionCallOutput:
    """A tool output item for `call_id`, as the protocol types hold it."""
    return FunctionCallOutput(call_id=call_id, output=output)


def cmd(i: int) -> str:
    """The command of the i-th scripted exec call."""
    return f"pytest -q tests/test_step_{i}.py"


def answers(answer: str = "ok") -> ScriptedPolicy:
    """A model that answers every request with `answer` and calls nothing."""
    return ScriptedPolicy(lambda ctx: text(answer))


def tool_steps(turns: int, final: str = FINAL, offset: int = 0) -> list[Step]:
    """`turns` exec calls (one per model turn, commands from `offset`), then the answer `final`."""
    return [*(call("exec", {"cmd": cmd(i + offset)}) for i in range(turns)), text(final)]


def tool_script(turns: int, final: str = FINAL, offset: int = 0) -> ScriptedPolicy:
    """The model that plays `tool_steps`."""
    return ScriptedPolicy(tool_steps(turns, final, offset))


def parallel(*cmds: str) -> CallStep:
    """One step with a parallel exec call per command."""
    return CallStep(
        calls=tuple(
            FunctionCallSpec(name="exec", arguments=orjson.dumps({"cmd": c}).decode()) for c in cmds
        )
    )


def output(call_id: str, out: str = "exit 0") -> dict[str, Any]:
    """A `function_call_output` input item."""
    return {"type": "function_call_output", "call_id": call_id, "output": out}


def run_exec(arguments: str) -> str:
    """What the client's exec tool answers for a call's JSON `arguments`."""
    return f"ran {orjson.loads(arguments)['cmd']}: exit 0"
