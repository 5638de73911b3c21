# How the default model calls the client's tools other than functions (rollout.model.clienttools,
# through rollout.model.policy and rollout.model.choice), driven directly on a Context: which one
# a prompt leads to, what a forcing tool_choice makes it call, what tool_choice rules out, and
# the input of a custom tool under each format; the tool_choice values as protocol resolves them.
from __future__ import annotations

import re
from typing import Any

import lark
import pytest

from protocol import codec
from protocol.choices import resolve_tool_choice
from protocol.clientitems import ApplyPatchCall, CreateFile, DeleteFile, LocalShellCall, ShellCall
from protocol.items import Message, Tool
from rollout.conversation.calls import ClientCallSpec, CustomCallSpec, FunctionCallSpec
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.model.choice import constrain
from rollout.model.policy import CallStep, DefaultPolicy, ErrorStep, TextStep

EXEC = {
    "type": "function",
    "name": "exec",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}


def context(prompt: str, tools: list[dict[str, Any]], choice: Any = "auto") -> Context:
    ctx = Context()
    parsed: list[Tool] = [codec.converter.structure(t, Tool) for t in tools]  # type: ignore[arg-type]
    ctx.set_header(None, parsed, Work())
    ctx.extend([Message(role="user", content=prompt)], Work())
    ctx.choice = resolve_tool_choice(choice)
    return ctx


def step(prompt: str, tools: list[dict[str, Any]], choice: Any = "auto") -> Any:
    ctx = context(prompt, tools, choice)
    return constrain(DefaultPolicy(seed=1).next_step(ctx), ctx)


def only_call(s: Any) -> Any:
    assert isinstance(s, CallStep), s
    [spec] = s.calls
    return spec


def test_a_coding_prompt_runs_the_shell() -> None:
    spec = only_call(step("List the files in this repo", [{"type": "shell"}]))
    assert isinstance(spec, ClientCallSpec) and isinstance(spec.call, ShellCall)
    assert spec.call.action.commands


def test_local_shell_runs_through_bash() -> None:
    spec = only_call(step("Run the tests", [{"type": "local_shell"}]))
    assert isinstance(spec.call, LocalShellCall)
    assert spec.call.action.command[:2] == ("bash", "-lc")


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [("Create a file hello.py that prints hi", CreateFile), ("Delete old.txt", DeleteFile)],
)
def test_writing_a_file_applies_a_patch_before_the_shell(prompt: str, kind: type) -> None:
    spec = only_call(step(prompt, [{"type": "shell"}, {"type": "apply_patch"}]))
    assert isinstance(spec.call, ApplyPatchCall) and isinstance(spec.call.operation, kind)


def test_a_function_of_the_same_name_is_the_function() -> None:
    shell_fn = {**EXEC, "name": "shell"}
    spec = only_call(step("List the files", [{"type": "shell"}, shell_fn]))
    assert isinstance(spec, FunctionCallSpec) and spec.name == "shell"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "shell"}, ShellCall),
        ({"type": "apply_patch"}, ApplyPatchCall),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"type": "local_shell"}]},
            LocalShellCall,
        ),
    ],
)
def test_a_forcing_choice_is_honoured(choice: Any, expected: type) -> None:
    tools = [EXEC, {"type": "shell"}, {"type": "apply_patch"}, {"type": "local_shell"}]
    spec = only_call(step("hello there", tools, choice))
    assert isinstance(spec, ClientCallSpec) and isinstance(spec.call, expected)


def test_a_forced_custom_tool_writes_its_grammar() -> None:
    grammar = 'start: "go " DIR\nDIR: "north" | "south"\n'
    tool = {
        "type": "custom",
        "name": "move",
        "format": {"type": "grammar", "syntax": "lark", "definition": grammar},
    }
    spec = only_call(step("hello", [EXEC, tool], {"type": "custom", "name": "move"}))
    assert isinstance(spec, CustomCallSpec) and spec.name == "move"
    lark.Lark(grammar).parse(spec.input)


def test_required_takes_a_custom_tool_when_there_is_no_function() -> None:
    tool = {
        "type": "custom",
        "name": "ts",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"\d{2}:\d{2}"},
    }
    spec = only_call(step("hello", [tool, {"type": "shell"}], "required"))
    assert isinstance(spec, CustomCallSpec) and re.fullmatch(r"\d{2}:\d{2}", spec.input)


def test_none_rules_them_out() -> None:
    assert isinstance(step("List the files", [{"type": "shell"}], "none"), TextStep)


def test_an_unsatisfiable_grammar_fails_the_step() -> None:
    tool = {
        "type": "custom",
        "name": "never",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"a(?=b)c"},
    }
    s = step("hello", [tool], {"type": "custom", "name": "never"})
    assert isinstance(s, ErrorStep) and "cannot be satisfied" in s.message


def test_seeded_inputs_repeat() -> None:
    tool = {
        "type": "custom",
        "name": "id",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"[a-z]{3}\d{3}"},
    }
    first = only_call(step("hello", [tool], "required"))
    assert first == only_call(step("hello", [tool], "required"))


def test_protocol_resolves_the_choices() -> None:
    assert resolve_tool_choice({"type": "shell"}).forced_client == "shell"
    assert resolve_tool_choice({"type": "custom", "name": "x"}).forced == "x"
    allowed = resolve_tool_choice(
        {
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "apply_patch"}, {"type": "custom", "name": "x"}],
        }
    )
    assert allowed.allows_client("apply_patch") and not allowed.allows_client("shell")
    assert allowed.allows("x") and not allowed.allows("exec")
