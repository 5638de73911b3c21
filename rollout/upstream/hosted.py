# Hosted tools in front of a real engine. An engine knows only functions, so each hosted tool
# the request offers (and its tool choice allows) is offered to it as functions that rollout
# runs: web search as `web_search` (rollout's simulated service), each listed tool of an MCP
# server as `mcp__<server_label>__<tool>` (its description, its input schema as parameters),
# called over MCP by rollout as the real API calls it. An engine's call of one is turned into
# the hosted call (the `web_search_call`, the `mcp_call`, or the `mcp_approval_request` when
# `require_approval` holds it back), with its items and events as the real API has them; a
# hosted call already in the context is shown to the engine as that function's call and
# output (a declined approval as the call and a refusal). The root of a multi-agent response is
# offered its actions (`spawn_agent`, `wait_agent`, ...) as functions of those names, and a call
# of one is the team's action (rollout.engine.agents); a subagent is told whose context it is
# (`instructions`); the actions' items are shown as function calls and outputs, an agent's
# message as a user message (`as_plain`). Pure: no I/O.
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import orjson

from protocol.agentitems import (
    AGENT_ACTIONS,
    AgentMessage,
    MultiAgentCall,
    MultiAgentCallOutput,
    output_text,
)
from protocol.hosted import MCP_CALL_TOOL, WEB_SEARCH_TOOL
from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    Message,
    SearchAction,
    WebSearchCall,
    text_of,
)
from rollout.conversation.calls import AgentCallSpec, HostedSpec
from rollout.conversation.context import Context
from rollout.model import pieces as p
from rollout.model.hosted import mcp
from rollout.model.hosted.mcp_client import Server
from rollout.model.hosted.web_search import WebSearchSpec

#: What turns an engine's call (its arguments, JSON text) into the piece of the call rollout
#: runs (a hosted call, a multi-agent action).
Maker = Callable[[str], p.Piece]

WEB_SEARCH = {
    "name": WEB_SEARCH_TOOL.name,
    "description": "Search the web for current information; returns the sources found.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to search for"}},
        "required": ["query"],
        "additionalProperties": False,
    },
}
MCP_PREFIX = "mcp__"
#: What the engine sees as the output of a call whose approval the user declined.
DECLINED = "The user declined to run this tool call."
_UNNAMEABLE = re.compile(r"[^A-Za-z0-9_-]")  # (a function's name: letters, digits, _ and -)
_NO_PARAMETERS = {"type": "object", "properties": {}}


_NAME = {"type": "string", "description": "the agent's name"}
_TEXT = {"type": "string"}


def _action(name: str, description: str, properties: dict[str, Any], *required: str) -> Any:
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return {"name": name, "description": description, "parameters": parameters}


#: The multi-agent actions as functions, their arguments as docs/protocol-choices.md has them.
AGENT_FUNCTIONS: dict[str, dict[str, Any]] = {
    f["name"]: f
    for f in (
        _action(
            "spawn_agent",
            "Start a subagent on a task; it works in parallel with you. (multi-agent action)",
            {
                "agent_name": _NAME,
                "message": {"type": "string", "description": "its task"},
                "model": _TEXT,
                "reasoning_effort": _TEXT,
            },
            "message",
        ),
        _action(
            "wait_agent",
            "Wait until the named subagents have answered; returns their answers. "
            "(multi-agent action)",
            {
                "targets": {"type": "array", "items": _TEXT},
                "timeout_ms": {"type": "integer"},
            },
            "targets",
        ),
        _action(
            "send_message",
            "Send a message to an agent. (multi-agent action)",
            {"target": _NAME, "message": _TEXT},
            "target",
            "message",
        ),
        _action(
            "followup_task",
            "Give an agent a new task, started when its current one ends. (multi-agent action)",
            {"target": _NAME, "message": _TEXT},
            "target",
            "message",
        ),
        _action(
            "interrupt_agent",
            "Stop what an agent is doing. (multi-agent action)",
            {"target": _NAME},
            "target",
        ),
        _action("list_agents", "The agents and their status. (multi-agent action)", {}),
    )
}
assert set(AGENT_FUNCTIONS) == set(AGENT_ACTIONS)  # (a function for each action)
#: What a subagent's engine is told first (its instructions follow).
SUBAGENT = (
    "You are the subagent '{name}' of a multi-agent response: the user's message is your task."
)


def mcp_name(label: str, tool: str) -> str:
    """The function name an MCP server's tool is offered to an engine by (at most 64
    characters, the names chat functions may have)."""
    return _UNNAMEABLE.sub("_", f"{MCP_PREFIX}{label}__{tool}")[:64]


def _offers(ctx: Context) -> dict[str, tuple[dict[str, Any], Maker]]:
    """Each function offered for a hosted tool: its chat function and its Maker, by name;
    none that a function tool of the request already names."""
    out: dict[str, tuple[dict[str, Any], Maker]] = {}
    if not ctx.hosted and not ctx.team:  # (the common request: no hosted tool, no team)
        return out
    choice = ctx.choice
    if ctx.web_search and choice.allows_hosted(WEB_SEARCH_TOOL.offered_as):
        out[WEB_SEARCH_TOOL.name] = (WEB_SEARCH, _search)
    configs = mcp.configs(ctx) if choice.allows_hosted(MCP_CALL_TOOL.offered_as) else {}
    if configs:  # (the listings are looked for in the context only when there are servers)
        for label, listing in mcp.listed(ctx).items():
            config = configs.get(label)
            if config is None:  # (a server listed earlier that this request does not offer)
                continue
            for tool in listing.tools:
                if not config.allows(tool):
                    continue
                name = str(tool.get("name", ""))
                about = tool.get("description") or name
                offered_as = mcp_name(label, name)
                function = {
                    "name": offered_as,
                    "description": f"{about} (tool '{name}' of MCP server '{label}')",
                    "parameters": tool.get("input_schema") or _NO_PARAMETERS,
                }
                approval = config.needs_approval(tool)
                maker = functools.partial(_mcp, config.server, name, approval)
                out.setdefault(offered_as, (function, maker))
    if ctx.team and ctx.agent is None:  # the root of a multi-agent response
        for name, function in AGENT_FUNCTIONS.items():
            out[name] = (function, functools.partial(_agent_call, name))
    for name in ctx.function_tools:
        out.pop(name, None)
    return out


def offered(ctx: Context) -> list[dict[str, Any]]:
    """The hosted tools the request offers (and its tool choice allows), as chat functions."""
    return [{"type": "function", "function": f} for f, _ in _offers(ctx).values()]


def names(ctx: Context) -> dict[str, Maker]:
    """The names the engine may call as hosted tools, with what each call becomes."""
    return {name: maker for name, (_, maker) in _offers(ctx).items()}


def forced(ctx: Context) -> str | None:
    """The function name a hosted `tool_choice` forces, when it is offered: web search's, or
    the named MCP tool's (without a name: the server's first offered tool)."""
    choice = ctx.choice
    offers = _offers(ctx)
    if choice.forced_hosted == WEB_SEARCH_TOOL.offered_as and WEB_SEARCH_TOOL.name in offers:
        return WEB_SEARCH_TOOL.name
    if choice.forced_hosted == MCP_CALL_TOOL.offered_as:
        label, tool = (*choice.forced_target, None, None)[:2]
        if label is not None and tool is not None:
            name = mcp_name(label, tool)
            return name if name in offers else None
        prefix = MCP_PREFIX if label is None else mcp_name(label, "")
        return next((n for n in offers if n.startswith(prefix)), None)
    return None


def approved(ctx: Context) -> HostedSpec | None:
    """The MCP call an approval response since the prompt lets run (and that has not run):
    rollout runs it, as the real API does, with no step of the engine's. (Only a request that
    offers an MCP server runs one: for any other, the context is not looked through.)"""
    if MCP_CALL_TOOL.name not in ctx.hosted:
        return None
    return mcp.approved(ctx)


def parallel(ctx: Context) -> bool:
    """Whether the engine may make several calls in a step: as the request says, but always
    for the root of a multi-agent response, whose actions (offered as functions) come several
    in a step, as the simulated model's do (the request's rule is for its client calls)."""
    return ctx.choice.parallel or (ctx.team and ctx.agent is None)


def instructions(ctx: Context) -> str | None:
    """The instructions the engine is sent: a subagent's say whose context it is."""
    if ctx.agent is None:
        return ctx.instructions
    told = SUBAGENT.format(name=ctx.agent)
    return f"{told}\n\n{ctx.instructions}" if ctx.instructions else told


def _search(arguments: str) -> p.Piece:
    value = _object(arguments)
    query = value.get("query") if value is not None else None
    return p.Hosted(WebSearchSpec(query=str(query or arguments or "").strip() or "search"))


def _mcp(server: Server, name: str, approval: bool, arguments: str) -> p.Piece:
    value = _object(arguments)
    text = orjson.dumps(value if value is not None else {}).decode()
    if approval:
        return p.Hosted(mcp.McpApprovalSpec(server=server, name=name, arguments=text))
    return p.Hosted(mcp.McpCallSpec(server=server, name=name, arguments=text))


def _agent_call(action: str, arguments: str) -> p.Piece:
    return p.AgentCall(AgentCallSpec(action=action, arguments=arguments or "{}"))


def _object(arguments: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def as_call(item: Item, ctx: Context) -> tuple[str, str, str, str] | None:
    """A hosted call of the context as the engine sees it: (call id, function name, arguments,
    output), or None for an item that is not one (an MCP listing is in the functions offered;
    an approval request still unanswered, or answered yes, shows as the call that follows)."""
    if isinstance(item, WebSearchCall) and isinstance(item.action, SearchAction):
        query = item.action.query
        sources = [s.url for s in item.action.sources or ()]
        found = "\n".join(f"- {url}" for url in sources) if sources else "(no sources found)"
        arguments = orjson.dumps({"query": query}).decode()
        return item.id, WEB_SEARCH_TOOL.name, arguments, f"Sources for {query!r}:\n{found}"
    if isinstance(item, McpCall):
        if item.error is not None:
            error = item.error.get("message") if isinstance(item.error, dict) else item.error
            output = f"Error: {error}"
        else:
            output = item.output or ""
        return item.id, mcp_name(item.server_label, item.name), item.arguments, output
    if isinstance(item, McpApprovalResponse) and not item.approve:
        index = ctx.by_id.get(item.approval_request_id)
        request = ctx.items[index] if index is not None else None
        if not isinstance(request, McpApprovalRequest):
            return None
        output = f"{DECLINED} {item.reason}" if item.reason else DECLINED
        name = mcp_name(request.server_label, request.name)
        return request.id, name, request.arguments, output
    return None


def as_plain(item: Item) -> Item:
    """A multi-agent item as the engine sees it: an action's call and output as a function's,
    a message from another agent as a user message naming its author; any other item as is."""
    if isinstance(item, MultiAgentCall):
        return FunctionCall(
            id=item.id, call_id=item.call_id, name=item.action, arguments=item.arguments
        )
    if isinstance(item, MultiAgentCallOutput):
        return FunctionCallOutput(id=item.id, call_id=item.call_id, output=output_text(item))
    if isinstance(item, AgentMessage):
        said = f"Message from agent '{item.author}': {text_of(item.content)}"
        return Message(id=item.id, role="user", content=said)
    return item


__all__ = [
    "AGENT_FUNCTIONS",
    "DECLINED",
    "MCP_PREFIX",
    "SUBAGENT",
    "WEB_SEARCH",
    "Maker",
    "approved",
    "as_call",
    "as_plain",
    "forced",
    "instructions",
    "mcp_name",
    "names",
    "offered",
    "parallel",
]
