# How the simulated model calls the client's tools other than functions: `custom` tools (input in
# the tool's format: rollout.model.grammars) and the built-in `shell`, `local_shell` and
# `apply_patch`. Each offered one stands in, for ranking, as a function tool of its name and
# description (rollout.model.toolpick: a shell for coding prompts, apply_patch when the prompt
# asks for a file to be written), and a chosen one becomes its call's spec. Pure: no I/O.
from __future__ import annotations

import re
from random import Random
from typing import Final

import orjson

from protocol.choices import ToolChoice
from protocol.clientitems import (
    ApplyPatchCall,
    CreateFile,
    DeleteFile,
    LocalShellAction,
    LocalShellCall,
    PatchOperation,
    ShellAction,
    ShellCall,
    UpdateFile,
)
from protocol.items import FunctionTool
from rollout.conversation.calls import CallSpec, ClientCallSpec, CustomCallSpec
from rollout.conversation.context import Context
from rollout.model import prose
from rollout.model.commands import next_command
from rollout.model.grammars import custom_input
from rollout.model.grounding import Grounding
from rollout.model.observations import item_arguments

__all__ = ["allows_client", "call_arguments", "client_spec", "is_client_tool", "stand_ins"]

#: What the built-in client tools say they do (the API's tools carry no description).
_BUILTIN: Final = {
    "shell": "Run shell commands in the user's workspace.",
    "local_shell": "Run a shell command on the local machine.",
    "apply_patch": "Create, update or delete files by applying a patch.",
}
_DELETE: Final = re.compile(r"\b(delete|remove)\b")
_CREATE: Final = re.compile(r"\b(create|new|add|write)\b")
_FILE: Final = re.compile(r"[\w./-]+\.[A-Za-z0-9]{1,6}\b")


def is_client_tool(name: str, ctx: Context) -> bool:
    """Whether `name` is one of the request's client tools other than a function (a function
    of the same name is the function)."""
    if name in ctx.function_tools:
        return False
    return name in ctx.custom_tools or name in ctx.client_tools


def stand_ins(ctx: Context) -> list[FunctionTool]:
    """The request's custom and built-in client tools as function tools, for ranking."""
    out = []
    for name, tool in ctx.custom_tools.items():
        if name not in ctx.function_tools:
            out.append(FunctionTool(name=name, description=tool.raw.get("description") or None))
    for kind in ("shell", "local_shell", "apply_patch"):
        if kind in ctx.client_tools and kind not in ctx.function_tools:
            out.append(FunctionTool(name=kind, description=_BUILTIN[kind]))
    return out


def client_spec(
    name: str, ctx: Context, g: Grounding, rng: Random, command: str | None = None
) -> CallSpec:
    """The call of client tool `name` a model writes now (`command`: the shell command planned
    for it, if it is a shell). Raises GrammarUnsupported for a grammar it cannot write."""
    if name in ctx.custom_tools:
        fmt = ctx.custom_tools[name].raw.get("format")
        if command is None and name == "apply_patch":
            free = _v4a_patch(g, rng)
        else:
            free = command or prose.answer(g, rng, 12)
        return CustomCallSpec(name=name, input=custom_input(fmt, rng, free))
    command = command or next_command(g, ctx.calls_since_user, rng) or "ls -la"
    if name == "shell":
        return ClientCallSpec(call=ShellCall(call_id="", action=ShellAction(commands=(command,))))
    if name == "local_shell":
        action = LocalShellAction(command=("bash", "-lc", command))
        return ClientCallSpec(call=LocalShellCall(call_id="", action=action))
    return ClientCallSpec(call=ApplyPatchCall(call_id="", operation=operation(g, rng)))


def _path(g: Grounding) -> str:
    found = _FILE.search(g.prompt)
    return found.group(0) if found else (g.paths[0] if g.paths else "NOTES.md")


def operation(g: Grounding, rng: Random) -> PatchOperation:
    """The file operation the prompt asks for: a delete, a new file, or an edit (V4A diffs)."""
    path = _path(g)
    if _DELETE.search(g.lower):
        return DeleteFile(path=path)
    line = prose.answer(g, rng, 10)
    if _CREATE.search(g.lower):
        return CreateFile(path=path, diff=f"+{line}\n")
    return UpdateFile(path=path, diff=f"@@\n+{line}\n")


def _v4a_patch(g: Grounding, rng: Random) -> str:
    """A whole apply_patch envelope (as Codex's freeform apply_patch tool takes it)."""
    op = operation(g, rng)
    if isinstance(op, DeleteFile):
        body = f"*** Delete File: {op.path}\n"
    elif isinstance(op, CreateFile):
        body = f"*** Add File: {op.path}\n{op.diff}"
    else:
        body = f"*** Update File: {op.path}\n{op.diff}"
    return f"*** Begin Patch\n{body}*** End Patch"


def call_arguments(spec: CallSpec) -> str:
    """A client tool call's arguments as JSON, as the model's plan compares calls (the same as
    rollout.model.grounding reads back from the item it became)."""
    if isinstance(spec, CustomCallSpec):
        return orjson.dumps({"input": spec.input}).decode()
    assert isinstance(spec, ClientCallSpec)
    return item_arguments(spec.call)


def allows_client(choice: ToolChoice, name: str, ctx: Context) -> bool:
    """Whether the request's `tool_choice` lets the model call client tool `name` (a custom
    tool by its name, like a function; a built-in one by its type)."""
    if name in ctx.custom_tools:
        return choice.allows(name)
    return choice.allows_client(name)
