# The `mcp` tool, the module behind its rows of the hosted tools (rollout.model.hosted): rollout
# is the MCP client, as the real API is. Before a response samples, the engine lists the tools
# of each offered server the conversation has no `mcp_list_tools` item for (`listings`; an
# unreachable server refuses the request with the API's 424); the response opens with those
# listings. The default model then calls a listed tool the prompt names (or the one
# `tool_choice` forces), its arguments generated from the tool's input schema; a call that
# `require_approval` holds back is an `mcp_approval_request` the client answers, as it answers a
# function call (the chain shape ends the response on it, the append shape pauses), and its
# `mcp_approval_response` (the next request's, or the appended one) lets it run (or not). The
# call itself goes over MCP (rollout.model.hosted.mcp_client); its output or error is the
# `mcp_call` item's.
from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import orjson

from protocol.errors import ProtocolError
from protocol.hosted import MCP_APPROVAL_TOOL, MCP_CALL_TOOL, HostedTool
from protocol.items import (
    HostedItem,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    McpListTools,
    Message,
    OtherTool,
)
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.args import UnsupportedSchema, generate_arguments
from rollout.model.grounding import STOPWORDS, Grounding, ground
from rollout.model.hosted import mcp_client
from rollout.model.hosted.mcp_client import McpFailure, Server
from rollout.model.profiles import CostProfile
from rollout.model.understand.fill import Filler
from rollout.store.base import MissingExtra

_WORD = re.compile(r"[a-z0-9]+")


# -- the request's servers -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Config:
    """One `mcp` tool of the request."""

    server: Server
    allowed: Any = None  # allowed_tools: names, or {tool_names, read_only}
    approval: Any = "always"  # require_approval (the API asks before any call by default)
    connector: bool = False  # a connector_id without a server_url (rollout reaches none)

    def allows(self, tool: Mapping[str, Any]) -> bool:
        return self.allowed is None or _matches(self.allowed, tool)

    def needs_approval(self, tool: Mapping[str, Any]) -> bool:
        rule = self.approval
        if rule == "never":
            return False
        if isinstance(rule, Mapping):
            if isinstance(rule.get("never"), Mapping) and _matches(rule["never"], tool):
                return False
            if isinstance(rule.get("always"), Mapping):
                return _matches(rule["always"], tool) or "never" not in rule
        return True


def _matches(rule: Any, tool: Mapping[str, Any]) -> bool:
    """Whether a tool filter (a list of names, or {tool_names, read_only}) takes `tool`."""
    if isinstance(rule, list | tuple):
        return tool.get("name") in rule
    if not isinstance(rule, Mapping):
        return False
    names, read_only = rule.get("tool_names"), rule.get("read_only")
    if names is not None and tool.get("name") not in names:
        return False
    if read_only is not None:
        hint = bool((tool.get("annotations") or {}).get("readOnlyHint", False))
        return hint == bool(read_only)
    return names is not None


def configs(ctx: Context) -> dict[str, Config]:
    """The request's `mcp` tools by server label."""
    out: dict[str, Config] = {}
    for tool in ctx.tools:
        if not isinstance(tool, OtherTool) or tool.type != "mcp":
            continue
        raw = tool.raw
        label = str(raw.get("server_label", ""))
        headers = {str(k): str(v) for k, v in (raw.get("headers") or {}).items()}
        if raw.get("authorization"):
            headers.setdefault("Authorization", f"Bearer {raw['authorization']}")
        url = str(raw.get("server_url") or "")
        approval = raw.get("require_approval")
        out[label] = Config(
            server=Server(label=label, url=url, headers=headers),
            allowed=raw.get("allowed_tools"),
            approval="always" if approval is None else approval,
            connector=not url,
        )
    return out


def listed(ctx: Context) -> dict[str, McpListTools]:
    """The latest tool listing of each server in the conversation (and this request's)."""
    found: dict[str, McpListTools] = {}
    for item in ctx.items:
        if isinstance(item, McpListTools) and item.error is None:
            found[item.server_label] = item
    return {**found, **ctx.mcp_listed}


def list_error(label: str) -> ProtocolError:
    """The API's refusal when a server's tools cannot be listed."""
    return ProtocolError(
        message=f"Error retrieving tool list from MCP server: '{label}'. "
        "Http status code: 424 (Failed Dependency)",
        type="external_connector_error",
        code="http_error",
        param="tools",
        status=424,
    )


async def listings(ctx: Context, new_id: Any) -> dict[str, McpListTools]:
    """The listings this request must make (servers the conversation has not listed), each
    filtered by its `allowed_tools`: pre-inference work, so a server that cannot be reached
    refuses the request (424) before the response starts."""
    wanted = configs(ctx)
    if not wanted:
        return {}
    have = listed(ctx)
    out: dict[str, McpListTools] = {}
    for label, config in wanted.items():
        if label in have:
            continue
        if config.connector:
            raise list_error(label)
        try:
            tools = await mcp_client.list_tools(config.server)
        except MissingExtra as exc:
            raise ProtocolError(
                message=f"The mcp tool is not available on this server: it {exc}.",
                type="server_error",
                code="mcp_unavailable",
                param="tools",
                status=500,
            ) from None
        except McpFailure:
            raise list_error(label) from None
        allowed = tuple(t for t in tools if config.allows(t))
        out[label] = McpListTools(id=new_id("mcpl"), server_label=label, tools=allowed)
    return out


# -- the calls -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class McpCallSpec(HostedSpec):
    tool: ClassVar[HostedTool] = MCP_CALL_TOOL
    server: Server
    name: str
    arguments: str
    approval_request_id: str | None = None

    def opening(self, item_id: str) -> HostedItem:
        return McpCall(
            id=item_id,
            server_label=self.server.label,
            name=self.name,
            arguments=self.arguments,
            approval_request_id=self.approval_request_id,
            status="in_progress",
        )


@attrs.frozen(kw_only=True)
class McpApprovalSpec(HostedSpec):
    """A call `require_approval` holds back: its approval request (the client answers it)."""

    tool: ClassVar[HostedTool] = MCP_APPROVAL_TOOL
    server: Server
    name: str
    arguments: str

    def opening(self, item_id: str) -> HostedItem:
        label = self.server.label
        return McpApprovalRequest(
            id=item_id, server_label=label, name=self.name, arguments=self.arguments
        )


def _relevance(tool: Mapping[str, Any], words: set[str]) -> int:
    name = str(tool.get("name", "")).lower()
    parts = set(_WORD.findall(name.replace("_", " ")))
    score = 3 if name in words or (parts and parts <= words) else 0
    described = set(_WORD.findall(str(tool.get("description") or "").lower())) - STOPWORDS
    return score + len({w for w in described if len(w) > 3} & words)


def _arguments(tool: Mapping[str, Any], g: Grounding, seed: str) -> str | None:
    about = f"{tool.get('name', '')} {tool.get('description') or ''}"
    vocabulary = g.vocabulary(meant=Filler(g.understanding, about))  # values from meaning
    try:
        args = generate_arguments(
            tool.get("input_schema") or {}, random.Random(seed), vocabulary=vocabulary
        )
    except UnsupportedSchema:
        return None
    return orjson.dumps(args).decode()


def _call(ctx: Context, g: Grounding, label: str, tool: Mapping[str, Any]) -> HostedSpec | None:
    config = configs(ctx).get(label)
    if config is None:
        return None
    arguments = _arguments(tool, g, f"mcp:{label}:{tool.get('name')}:{ctx.last_user_text[:64]}")
    if arguments is None:
        return None
    name = str(tool.get("name", ""))
    if config.needs_approval(tool):
        return McpApprovalSpec(server=config.server, name=name, arguments=arguments)
    return McpCallSpec(server=config.server, name=name, arguments=arguments)


def approved(ctx: Context) -> HostedSpec | None:
    """The call an approval response since the prompt lets run, if it has not run yet."""
    requests: dict[str, McpApprovalRequest] = {}
    ran: set[str] = set()
    answer: McpApprovalResponse | None = None
    for item in reversed(ctx.items):
        if isinstance(item, Message) and item.role == "user":
            break
        if isinstance(item, McpApprovalRequest):
            requests[item.id] = item
        elif isinstance(item, McpCall) and item.approval_request_id:
            ran.add(item.approval_request_id)
        elif isinstance(item, McpApprovalResponse) and answer is None:
            answer = item
    if answer is None or not answer.approve or answer.approval_request_id in ran:
        return None
    request = requests.get(answer.approval_request_id) or _request_anywhere(ctx, answer)
    config = configs(ctx).get(request.server_label) if request is not None else None
    if request is None or config is None:
        return None
    return McpCallSpec(
        server=config.server,
        name=request.name,
        arguments=request.arguments,
        approval_request_id=request.id,
    )


def _request_anywhere(ctx: Context, answer: McpApprovalResponse) -> McpApprovalRequest | None:
    index = ctx.by_id.get(answer.approval_request_id)
    item = ctx.items[index] if index is not None else None
    return item if isinstance(item, McpApprovalRequest) else None


def _ranked(ctx: Context, g: Grounding) -> list[tuple[int, str, Mapping[str, Any]]]:
    words = set(_WORD.findall(g.prompt.lower()))
    return sorted(
        (
            (_relevance(t, words), label, t)
            for label, item in listed(ctx).items()
            for t in item.tools
        ),
        key=lambda row: -row[0],
    )


def wants(ctx: Context, g: Grounding, named: bool) -> HostedSpec | None:
    """The default model's MCP call: the one an approval lets run; else, once per prompt, a
    call of the listed tool the prompt is most about (by name, then by description words),
    unless a function tool is named for the subject."""
    allowed = approved(ctx)
    if allowed is not None:
        return allowed
    done = ctx.hosted_since_user
    if done.get(MCP_CALL_TOOL.name, 0) or done.get(MCP_APPROVAL_TOOL.name, 0) or named:
        return None
    if any(isinstance(i, McpApprovalResponse) for i in _since_user(ctx)):
        return None  # the user answered an approval (and said no): answer instead
    ranked = [row for row in _ranked(ctx, g) if row[0] >= 2]
    if not ranked:
        return None
    _, label, tool = ranked[0]
    return _call(ctx, g, label, tool)


def _since_user(ctx: Context) -> Sequence[Any]:
    out = []
    for item in reversed(ctx.items):
        if isinstance(item, Message) and item.role == "user":
            break
        out.append(item)
    return out


def plan(ctx: Context) -> HostedSpec | None:
    """The call a forcing `tool_choice` makes: of the named server's named tool, else the
    most relevant listed one."""
    g = ground(ctx)
    allowed = approved(ctx)
    if allowed is not None:
        return allowed
    target = ctx.choice.forced_target
    label = target[0] if target else None
    name = target[1] if len(target) > 1 else None
    for _, server, tool in _ranked(ctx, g):
        if (label is None or server == label) and (name is None or tool.get("name") == name):
            return _call(ctx, g, server, tool)
    return None


def from_script(value: Any) -> HostedSpec:
    """A script's MCP call: `{"mcp": {"server_label", "name", "arguments"}}`."""
    value = value if isinstance(value, Mapping) else {}
    arguments = value.get("arguments", {})
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    server = Server(label=str(value.get("server_label", "")), url=str(value.get("server_url", "")))
    return McpCallSpec(server=server, name=str(value.get("name", "")), arguments=text)


def from_item(item: Mapping[str, Any]) -> HostedSpec:
    """The call a recorded `mcp_call` item shows (replayed against no server: its error)."""
    server = Server(label=str(item.get("server_label", "")), url="")
    return McpCallSpec(
        server=server, name=str(item.get("name", "")), arguments=str(item.get("arguments", "{}"))
    )


def approval_from_item(item: Mapping[str, Any]) -> HostedSpec:
    server = Server(label=str(item.get("server_label", "")), url="")
    return McpApprovalSpec(
        server=server, name=str(item.get("name", "")), arguments=str(item.get("arguments", "{}"))
    )


def approval_from_script(value: Any) -> HostedSpec:
    spec = from_script(value)
    assert isinstance(spec, McpCallSpec)
    return McpApprovalSpec(server=spec.server, name=spec.name, arguments=spec.arguments)


def never(ctx: Context, g: Grounding, named: bool) -> None:
    """The approval row's own wants: none (the call row decides when to ask)."""
    del ctx, g, named


def no_plan(ctx: Context) -> None:
    del ctx


# -- the services --------------------------------------------------------------------------------


@attrs.define
class McpCalls:
    """Calls over MCP: the server's answer (no declared latency: the server's own)."""

    costs: CostProfile

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, McpCallSpec) and isinstance(item, McpCall)
        try:
            arguments = orjson.loads(spec.arguments or "{}")
        except orjson.JSONDecodeError:
            arguments = {}
        if not spec.server.url:
            error = {"type": "http_error", "code": 424, "message": "No MCP server URL."}
            return attrs.evolve(item, status="failed", error=error)
        result = await mcp_client.call_tool(spec.server, spec.name, arguments)
        if result.error is not None:
            return attrs.evolve(item, status="failed", error=result.error)
        return attrs.evolve(item, status="completed", output=result.output)


@attrs.define
class Approvals:
    """An approval request has nothing to run: it is complete as it opened."""

    costs: CostProfile

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        del spec
        return item
