# What the default model reads of tool results: each call and its output as an Observation
# (a client's wrapper lines and a shell's JSON envelope cut, each output to a bounded prefix),
# a call's arguments as JSON, the shell command a call ran, its exit code, and the files and
# directories an output lists. Pure: no I/O, no clocks.
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import attrs
import orjson

from protocol.clientitems import (
    CLIENT_BY_OUTPUT,
    ApplyPatchCall,
    CustomToolCall,
    LocalShellCall,
    ShellCall,
)
from protocol.items import (
    CALL_ITEMS,
    OUTPUT_ITEMS,
    FunctionCall,
    FunctionCallOutput,
    Item,
    McpCall,
    WebSearchCall,
    answered_call,
    call_name,
    text_of,
)
from rollout.conversation.context import Context

OUTPUT_CHARS: Final = 8_000  # of each tool output read


def _dedupe(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


_LS_LONG: Final = re.compile(
    r"^([dl-])[rwxsStT-]{9}[@+.]?\s+\d+\s+\S+\s+\S+\s+\d+\s+\S+\s+\S+\s+\S+\s+(.+)$"
)
LONE_PATH: Final = re.compile(r"^(?:\./)?[\w@+.-]+(?:/[\w@+.-]+)*/?$")


@attrs.frozen(kw_only=True)
class Observation:
    """One tool result since the prompt: the call and what came back."""

    tool: str
    arguments: str
    output: str  # the body (a client's wrapper lines cut), at most OUTPUT_CHARS
    command: str | None = None  # the shell command, when the call ran one


def observations_of(
    ctx: Context, items: Sequence[Item], limit: int
) -> tuple[tuple[Observation, ...], int]:
    """The tool results among `items` (the latest `limit`, in order) and the web searches."""
    observations: list[Observation] = []
    calls: dict[str, Item] = {}
    searches = 0
    outputs: list[Item] = []
    mcp: list[McpCall] = []
    for item in reversed(items):
        if isinstance(item, OUTPUT_ITEMS):
            if len(outputs) < limit:
                outputs.append(item)
        elif isinstance(item, CALL_ITEMS):
            calls[item.call_id] = item
        elif isinstance(item, WebSearchCall):
            searches += 1
        elif isinstance(item, McpCall) and item.output is not None:  # an MCP tool's result
            if len(mcp) < limit:
                mcp.append(item)
    for out in reversed(outputs):
        call_id = answered_call(out)
        call = calls.get(call_id)
        name = call_name(call) if call else ctx.call_names.get(call_id, "")
        arguments = item_arguments(call) if call else "{}"
        body = _body(_output_text(out)[:OUTPUT_CHARS])
        observations.append(
            Observation(tool=name, arguments=arguments, output=body, command=_command(arguments))
        )
    for mcp_call in reversed(mcp):
        body = _body((mcp_call.output or "")[:OUTPUT_CHARS])
        observations.append(
            Observation(tool=mcp_call.name, arguments=mcp_call.arguments, output=body)
        )
    return tuple(observations), searches


def item_arguments(call: Item) -> str:
    """A call's arguments as JSON: a function's own; a client tool's what the model's plan
    compares (a custom tool's input, a shell's command, a patch's file)."""
    if isinstance(call, FunctionCall):
        return call.arguments
    if isinstance(call, CustomToolCall):
        return orjson.dumps({"input": call.input}).decode()
    if isinstance(call, ShellCall):
        return orjson.dumps({"command": " && ".join(call.action.commands)}).decode()
    if isinstance(call, LocalShellCall):
        return orjson.dumps({"command": list(call.action.command)}).decode()
    if isinstance(call, ApplyPatchCall):
        return orjson.dumps({"type": call.operation.type, "path": call.operation.path}).decode()
    return "{}"


def _output_text(out: Item) -> str:
    if isinstance(out, FunctionCallOutput):
        return text_of(out.output)
    tool = CLIENT_BY_OUTPUT.get(type(out))
    return "" if tool is None else str(tool.output_text(out))


def _command(arguments: str) -> str | None:
    """The shell command of a call's arguments (`cmd`, `command` as text or argv), if any."""
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(args, dict):
        return None
    for key in ("cmd", "command", "commandLine", "script"):
        value = args.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            if value[:2] in (["bash", "-lc"], ["bash", "-c"], ["sh", "-c"]) and len(value) > 2:
                return value[2]
            return " ".join(value)
    return None


def _body(output: str) -> str:
    """A tool output without a client's wrapper lines (Codex puts `Output:` before the text)
    or its JSON envelope (`{"exit_code": 0, "stdout": "..."}`: the streams' text)."""
    head, sep, rest = output.partition("\nOutput:\n")
    if sep and len(head) < 400:
        return rest
    if output.startswith("{") and '"stdout"' in output[:2000]:
        try:
            value = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output
        if isinstance(value, dict) and isinstance(value.get("stdout"), str):
            streams = [value["stdout"], value.get("stderr") or ""]
            code = value.get("exit_code", value.get("returncode"))
            tail = f"\nexit code: {code}" if isinstance(code, int) and code != 0 else ""
            return "\n".join(s for s in streams if isinstance(s, str) and s) + tail
    return output


def exit_code(output: str) -> int | None:
    m = re.search(r"(?:exited with code|exit code:?|Exit code:?)\s*(-?\d+)", output)
    return int(m.group(1)) if m else None


def listed(observations: Sequence[Observation]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Files and directories that the outputs list (`ls -l`, `ls`, `find`, `rg --files`)."""
    files: list[str] = []
    dirs: list[str] = []
    for obs in observations:
        lines = obs.output.splitlines()[:400]
        for line in lines:
            line = line.strip()
            m = _LS_LONG.match(line)
            if m:
                name = m.group(2).split(" -> ")[0]
                if name in (".", ".."):
                    continue
                (dirs if m.group(1) == "d" else files).append(name)
                continue
            if not LONE_PATH.match(line) or line in (".", "./", ".."):
                continue
            if line.startswith("total ") or line.isdigit():
                continue
            name = line[2:] if line.startswith("./") else line
            if name.endswith("/"):
                dirs.append(name.rstrip("/"))
            elif "." in name.rsplit("/", 1)[-1] or "/" in name:
                files.append(name)
            elif obs.command and obs.command.split()[:1] == ["ls"]:
                # a bare name in plain `ls` output: a file unless listed as a directory
                files.append(name)
    return _dedupe(files), _dedupe(dirs)
