# Model scripts as data: the steps of a ScriptedPolicy written as JSON or TOML (for
# `rollout serve --script FILE` and for the test fixture's `script([...])`).
#
#   {"text": "..."}                                 a message; ends the rollout
#   {"refusal": "..."}                              a refusal (a `refusal` content part)
#   {"call": "exec", "arguments": {...}}            one function call
#   {"calls": [{"name": ..., "arguments": ...}, {"search": "..."}], "text": "..."}
#                                                   several calls (and hosted searches) in one
#                                                   step, after an optional commentary message
#   {"search": "query"}                             a hosted web search
#   {"error": "server_error", "message": "..."}     the model fails
# Any step may add "delay": seconds, waited before the step is sampled.
#
# A multi-agent response (`multi_agent: {"enabled": true}`) adds the team's actions, each step
# one `multi_agent_call` per action (rollout.engine.agents runs them):
#   {"spawn": [{"agent": "reader_1", "task": "Read a.py"}, ...]}   spawn_agent, per agent
#       (an agent may add "model" and "reasoning_effort": spawn_agent's, passed as given)
#   {"wait": ["reader_1", "reader_2"]}              wait_agent until each has answered
#   {"send": {"to": "reader_1", "message": "..."}}  send_message (an agent_message item)
#   {"followup": {"to": "reader_1", "task": "..."}} followup_task: a new task for an agent
#   {"interrupt": "reader_1"}                       interrupt_agent
#   {"list": true}                                  list_agents
# and, beside "steps", "agents": {"reader_1": [steps...]}: each subagent's own script.
from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from rollout.conversation.calls import AgentCallSpec, CallSpec, FunctionCallSpec
from rollout.model.hosted import BY_SCRIPT
from rollout.model.policy import CallStep, ErrorStep, ScriptedPolicy, Step, TextStep

#: The multi-agent step kinds, with the action each one's calls take.
AGENT_KINDS = {
    "spawn": "spawn_agent",
    "wait": "wait_agent",
    "send": "send_message",
    "followup": "followup_task",
    "interrupt": "interrupt_agent",
    "list": "list_agents",
}
KINDS = ("text", "refusal", "call", "calls", *BY_SCRIPT, *AGENT_KINDS, "error")


class ScriptError(ValueError):
    pass


def _call(spec: Mapping[str, Any], where: str) -> CallSpec:
    for key, row in BY_SCRIPT.items():
        if key in spec:
            return row.from_script(spec[key])
    name = spec.get("name") or spec.get("call")
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}: a call needs a 'name'")
    arguments = spec.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return FunctionCallSpec(name=name, arguments=arguments)


def _names(value: Any, where: str) -> list[str]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ScriptError(f"{where}: expected an agent name or a non-empty list of names")
    return names


def _agent_args(kind: str, value: Any, where: str) -> list[dict[str, Any]]:
    """The arguments of each multi_agent_call a step of `kind` makes."""
    if kind == "spawn":
        spawns = [value] if isinstance(value, dict) else value
        if not isinstance(spawns, list) or not spawns:
            raise ScriptError(f"{where}: 'spawn' must be a non-empty list of agents")
        out = []
        for i, one in enumerate(spawns):
            if not isinstance(one, dict) or not isinstance(one.get("agent"), str):
                raise ScriptError(f"{where}.spawn[{i}]: needs an 'agent' name and a 'task'")
            args = {"agent_name": one["agent"], "message": str(one.get("task", ""))}
            args |= {k: one[k] for k in ("model", "reasoning_effort") if k in one}
            out.append(args)
        return out
    if kind == "wait":
        return [{"targets": _names(value, f"{where}.wait")}]
    if kind in ("send", "followup"):
        if not isinstance(value, dict) or not isinstance(value.get("to"), str):
            raise ScriptError(f"{where}: '{kind}' needs 'to' (an agent name)")
        text = value.get("message", value.get("task", ""))
        return [{"target": value["to"], "message": str(text)}]
    if kind == "interrupt":
        return [{"target": name} for name in _names(value, f"{where}.interrupt")]
    return [{}]  # list


def step(value: Step | Mapping[str, Any], where: str = "step") -> Step:
    """One step from its data form (a Step passes through)."""
    if isinstance(value, TextStep | CallStep | ErrorStep):
        return value
    if not isinstance(value, Mapping):
        raise ScriptError(f"{where}: expected an object, got {type(value).__name__}")
    delay = value.get("delay", 0.0)
    if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
        raise ScriptError(f"{where}: 'delay' must be a non-negative number of seconds")
    delay = float(delay)
    if "error" in value:
        return ErrorStep(
            code=str(value["error"]),
            message=str(value.get("message", "The model failed to generate a response.")),
            delay_s=delay,
        )
    for kind, action in AGENT_KINDS.items():
        if kind in value:
            calls = tuple(
                AgentCallSpec(action=action, arguments=orjson.dumps(a).decode())
                for a in _agent_args(kind, value[kind], where)
            )
            return CallStep(calls=calls, text=str(value.get("text", "")), delay_s=delay)
    if "call" in value or any(key in value for key in BY_SCRIPT):
        return CallStep(calls=(_call(value, where),), delay_s=delay)
    if "calls" in value:
        calls = value["calls"]
        if not isinstance(calls, list) or not calls:
            raise ScriptError(f"{where}: 'calls' must be a non-empty list")
        specs = tuple(_call(c, f"{where}.calls[{i}]") for i, c in enumerate(calls))
        return CallStep(calls=specs, text=str(value.get("text", "")), delay_s=delay)
    if "text" in value:
        return TextStep(text=str(value["text"]), delay_s=delay)
    if "refusal" in value:
        return TextStep(text=str(value["refusal"]), delay_s=delay, refusal=True)
    raise ScriptError(f"{where}: expected one of {', '.join(repr(k) for k in KINDS)}")


def steps(values: Sequence[Step | Mapping[str, Any]], where: str = "steps") -> list[Step]:
    return [step(v, f"{where}[{i}]") for i, v in enumerate(values)]


def agents(values: Any) -> dict[str, list[Step]]:
    """The subagents' scripts (`"agents": {"name": [steps...]}`)."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ScriptError("'agents' must map agent names to lists of steps")
    out = {}
    for name, own in values.items():
        if not isinstance(own, list):
            raise ScriptError(f"agents.{name}: expected a list of steps")
        out[str(name)] = steps(own, f"agents.{name}")
    return out


def load(path: str | Path) -> ScriptedPolicy:
    """A ScriptedPolicy from a JSON or TOML file (`{"steps": [...], "final": "...", "agents":
    {...}}`; JSON may also be a bare list of steps; TOML uses `[[steps]]` tables)."""
    p = Path(path)
    try:
        text = p.read_text()
        data: Any = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ScriptError(f"cannot read script {p}: {exc}") from None
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ScriptError(f"{p}: expected a list of steps, or an object with 'steps'")
    return ScriptedPolicy(
        steps(data["steps"]),
        final=str(data.get("final", "Done.")),
        agents=agents(data.get("agents")),
    )
