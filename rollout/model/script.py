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
from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from rollout.conversation.calls import CallSpec, FunctionCallSpec
from rollout.model.hosted import BY_SCRIPT
from rollout.model.policy import CallStep, ErrorStep, ScriptedPolicy, Step, TextStep

KINDS = ("text", "refusal", "call", "calls", *BY_SCRIPT, "error")  # what a step may be


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


def steps(values: Sequence[Step | Mapping[str, Any]]) -> list[Step]:
    return [step(v, f"steps[{i}]") for i, v in enumerate(values)]


def load(path: str | Path) -> ScriptedPolicy:
    """A ScriptedPolicy from a JSON or TOML file (`{"steps": [...], "final": "..."}`; JSON may
    also be a bare list of steps; TOML uses `[[steps]]` tables)."""
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
    return ScriptedPolicy(steps(data["steps"]), final=str(data.get("final", "Done.")))
