# What a (validated) request asks of the model, resolved into small values the sampling side
# reads: which tools it may or must call (`tool_choice` with `tools`, `parallel_tool_calls`,
# `max_tool_calls`) and what its message must look like (`text.format`). The rules that refuse a
# bad request are in protocol.validate; this module assumes they passed. Pure, no I/O.
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from protocol.clientitems import BUILTIN_CLIENT_TYPES
from protocol.hosted import HOSTED_BY_CHOICE

Mode = Literal["none", "auto", "required"]
FormatType = Literal["text", "json_object", "json_schema"]


@attrs.frozen(kw_only=True)
class ToolChoice:
    """The tools a response may call, and what its first sampling step must call.

    `functions` are the function names the model may call (None: every offered one; an
    `allowed_tools` choice narrows them), `hosted` the hosted tools (by name, of
    protocol.hosted.HOSTED_TOOLS) it may call when they are offered (None: all of them); `forced`
    names the one function the first step must call, `forced_hosted` the hosted tool it must
    call; `mode == "required"` makes the first step call some allowed tool. Custom tools are
    named like functions (`functions`, `forced`); the built-in client tools (`shell`,
    `local_shell`, `apply_patch`: protocol.toolitems) are `client` and `forced_client`, by type.
    """

    mode: Mode = "auto"
    functions: frozenset[str] | None = None
    hosted: frozenset[str] | None = None
    forced: str | None = None
    forced_hosted: str | None = None
    #: What the forcing choice names within that tool: an MCP choice's (server_label, name).
    forced_target: tuple[str | None, ...] = ()
    client: frozenset[str] | None = None
    forced_client: str | None = None
    parallel: bool = True
    max_calls: int | None = None  # tool calls (function and hosted) per response

    def allows(self, name: str) -> bool:
        return self.mode != "none" and (self.functions is None or name in self.functions)

    def allows_hosted(self, name: str) -> bool:
        return self.mode != "none" and (self.hosted is None or name in self.hosted)

    def allows_client(self, kind: str) -> bool:
        return self.mode != "none" and (self.client is None or kind in self.client)

    @property
    def must_call(self) -> bool:
        return (
            self.mode == "required"
            or self.forced is not None
            or self.forced_hosted is not None
            or self.forced_client is not None
        )


@attrs.frozen(kw_only=True)
class OutputFormat:
    type: FormatType = "text"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = False

    @property
    def is_json(self) -> bool:
        return self.type != "text"


def resolve_tool_choice(
    choice: str | Mapping[str, Any],
    *,
    parallel: bool = True,
    max_calls: int | None = None,
) -> ToolChoice:
    if isinstance(choice, str):
        return _named_choice(choice, parallel, max_calls)
    common: dict[str, Any] = {"parallel": parallel, "max_calls": max_calls}
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return ToolChoice(forced=str(choice.get("name")), **common)
    if kind == "mcp":
        label, name = choice.get("server_label"), choice.get("name")
        target = (str(label) if label is not None else None, str(name) if name else None)
        return ToolChoice(forced_hosted=HOSTED_BY_CHOICE[kind].name, forced_target=target, **common)
    if kind in BUILTIN_CLIENT_TYPES:
        return ToolChoice(forced_client=str(kind), **common)
    if kind in HOSTED_BY_CHOICE:
        return ToolChoice(forced_hosted=HOSTED_BY_CHOICE[kind].name, **common)
    if kind == "allowed_tools":
        allowed = [t for t in choice.get("tools", ()) if isinstance(t, Mapping)]
        names = frozenset(
            str(t.get("name")) for t in allowed if t.get("type") in ("function", "custom")
        )
        client = frozenset(str(t["type"]) for t in allowed if t.get("type") in BUILTIN_CLIENT_TYPES)
        hosted = frozenset(
            HOSTED_BY_CHOICE[t["type"]].name for t in allowed if t.get("type") in HOSTED_BY_CHOICE
        )
        mode: Mode = "required" if choice.get("mode") == "required" else "auto"
        return ToolChoice(mode=mode, functions=names, hosted=hosted, client=client, **common)
    # A hosted tool the simulated model does not call (file search, MCP, ...): it may not call
    # function tools instead, so it answers with text.
    return ToolChoice(mode="none", **common)


@functools.lru_cache(maxsize=64)
def _named_choice(choice: str, parallel: bool, max_calls: int | None) -> ToolChoice:
    """`auto`, `none` or `required` (the choice of nearly every request: one object for all)."""
    mode: Mode = choice if choice in ("none", "required") else "auto"  # type: ignore[assignment]
    return ToolChoice(mode=mode, parallel=parallel, max_calls=max_calls)


_TEXT = OutputFormat()


def resolve_format(text: Mapping[str, Any] | None) -> OutputFormat:
    if not text or not text.get("format"):
        return _TEXT
    fmt = text["format"]
    kind = fmt.get("type", "text")
    if kind == "json_schema":
        return OutputFormat(
            type="json_schema",
            name=fmt.get("name"),
            schema=fmt.get("schema"),
            strict=fmt.get("strict") is True,
        )
    if kind == "json_object":
        return OutputFormat(type="json_object")
    return _TEXT


__all__ = [
    "OutputFormat",
    "ToolChoice",
    "resolve_format",
    "resolve_tool_choice",
]
