"""The shape tests behind an upstream engine: `ROLLOUT_TEST_BEHIND_UPSTREAM=1 pytest ...`.

The choice: a real two-server chain over real sockets, not a stub. Every in-process server
goes through `rollout.serve` (ServerThread, the `rollout_server` plugin, `support.servers`,
`nursery.start(rollout.serve, ...)`); `install` wraps it so that a server whose engine has no
model of its own is put in front of a second rollout server (same trio run, its own loopback
port) as its `--upstream-api responses` engine: rollout's real upstream path (UpstreamModel,
the Responses translator, the pooled client) to the back's `/v1/responses`. The back plays the
test's model: each step is the simulated model made of the front engine's *current* policy,
profile, cache and accelerator (`Played`), so scripting `server.engine.policy` after the start
scripts the engine, and a script's position (from the context) is the same in the stateless
request. The back is as strict as the front (a strict one refuses fields the API does not
know), its limits wide (the front's are under test), its informational log lines dropped.
Servers started as processes (`rollout serve`, workers, benches) are not put behind one.
Tests that cannot hold behind an engine are marked `simulated_only(reason)` (the reasons
below, by category) and skipped with it under the switch (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import trio

import rollout
import rollout.server.listen
import rollout.testing.plugin
import rollout.testing.thread
from protocol.agentitems import MultiAgentCall, MultiAgentCallOutput
from protocol.hosted import HOSTED_BY_ITEM, WEB_SEARCH_TOOL
from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    McpApprovalRequest,
    McpApprovalResponse,
    McpCall,
    McpListTools,
    Message,
    OtherTool,
    OutputText,
    SearchAction,
    UrlSource,
    WebSearchCall,
    text_of,
)
from rollout.conversation.calls import AgentCallSpec, CallSpec, FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.engine.loop import Pieces, Rollout
from rollout.engine.simulated import SimulatedModel
from rollout.model.hosted.mcp import McpApprovalSpec, McpCallSpec
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import CallStep, Policy, Step
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.upstream import UpstreamConfig, UpstreamModel
from rollout.upstream.hosted import (
    AGENT_FUNCTIONS,
    DECLINED,
    MCP_PREFIX,
    SUBAGENT,
    WEB_SEARCH,
    mcp_name,
)

ENV = "ROLLOUT_TEST_BEHIND_UPSTREAM"

# Why a test is `simulated_only`, by category (docs/real-inference.md lists them).
#: Tools the engine path never offers an engine (rollout/upstream/chat.py `tools`).
CLIENT_TOOLS = (
    "the engine path offers an engine function tools only (and web search and MCP tools as "
    "functions): computer, shell, local_shell, apply_patch and custom (grammar) tools are "
    "never offered, so an engine never calls them"
)
HOSTED_TOOLS = (
    "code interpreter, file search and image generation are hosted tools the engine path does "
    "not offer an engine (web search and MCP tools are offered, as functions)"
)
SIMULATED_ENGINE = (
    "it is about the simulated engine itself (that it never uses the prompt memo, the shared "
    "simulated accelerator's KV memory figures); behind an upstream those are the engine's"
)
THINK_TIME = (
    "a steer cuts a scripted think time short even before any output (the step then samples "
    "at once); an engine's latency is its own, nothing the client sends shortens it"
)
#: The back server's limits: wide, so that the front's are the ones a test exercises.
BACK = ServerConfig(
    max_body_bytes=1 << 30,
    max_body_bytes_in_flight=1 << 32,
    max_in_flight=1 << 16,
    max_queued=1 << 16,
    max_queued_bytes=1 << 32,
)
_serve = rollout.server.listen.serve  # the real one


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


@attrs.define(eq=False)
class Played:
    """The back server's model: the simulated model the front engine would have run, as the
    front engine is now (its policy, profile, cache and accelerator may be replaced by the
    test at any time)."""

    front: Engine

    async def open(self, r: Rollout) -> Pieces | None:
        del r
        return None

    def sample(self, r: Rollout) -> Pieces:
        f = self.front
        policy = AsEngine(f.policy)
        return SimulatedModel(policy, f.inference, f.cache, f.accelerator).sample(r)


@attrs.define(eq=False)
class AsEngine:
    """The test's policy as an engine behind rollout plays it: an engine knows only functions,
    so a hosted call it would make (a web search, an MCP tool's call) is a call of the
    function rollout offers for it (rollout.upstream.hosted), which rollout then runs. The
    policy decides on the context as rollout has it (`_hosted_view`): the hosted tools offered
    as such (each MCP server with its listing), each call made as its hosted item
    (`web_search_call` with the sources the function's output lists, `mcp_call` with its
    output, a declined call as its approval request and the refusal), and a multi-agent
    response's agents as the team has them (`_team_view`), so the default model searches,
    cites, calls MCP tools and orchestrates subagents as it does in front."""

    policy: Policy

    def next_step(self, ctx: Context) -> Step:
        with _team_view(ctx):
            search = ctx.function_tools.get(WEB_SEARCH_TOOL.name)
            searches = search is not None and search.description == WEB_SEARCH["description"]
            servers = _mcp_offered(ctx)
            if not searches and not servers:
                step = self.policy.next_step(ctx)
            else:
                with _hosted_view(ctx, searches, servers):
                    step = self.policy.next_step(ctx)
        if not isinstance(step, CallStep):
            return step
        return attrs.evolve(step, calls=tuple(_as_function(c) for c in step.calls))


#: A subagent's instructions, as rollout sends them (rollout.upstream.hosted SUBAGENT).
_SUBAGENT = re.compile(re.escape(SUBAGENT).replace(re.escape("{name}"), "(?P<name>[^']+)"))


@contextlib.contextmanager
def _team_view(ctx: Context) -> Iterator[None]:
    """`ctx` as rollout has it for an agent of a multi-agent response: a subagent's context
    named for its agent; the root's actions the team's (not functions), their calls and
    outputs `multi_agent_call` and `multi_agent_call_output` items."""
    tools = ctx.function_tools
    root = all(
        (tool := tools.get(name)) is not None and tool.description == f["description"]
        for name, f in AGENT_FUNCTIONS.items()
    )
    found = _SUBAGENT.match(ctx.instructions or "")
    if not root and found is None:
        yield
        return
    with _restored(ctx, "function_tools", "items", "team", "agent"):
        _as_team(ctx, root, found["name"] if found is not None else None)
        yield


def _as_team(ctx: Context, root: bool, agent: str | None) -> None:
    """`ctx` made an agent's (`agent`) or the root's, in place."""
    if agent is not None:
        ctx.agent = agent
    if root:
        ctx.team = True
        tools = ctx.function_tools
        ctx.function_tools = {k: v for k, v in tools.items() if k not in AGENT_FUNCTIONS}
        actions: dict[str, Any] = {}
        items: list[Item] = []
        for item in ctx.items:
            if isinstance(item, FunctionCall) and item.name in AGENT_FUNCTIONS:
                actions[item.call_id] = item.name
                item = MultiAgentCall(
                    id=item.id,
                    action=item.name,  # type: ignore[arg-type]
                    arguments=item.arguments,
                    call_id=item.call_id,
                )
            elif isinstance(item, FunctionCallOutput) and item.call_id in actions:
                said = (OutputText(text=text_of(item.output)),)
                action = actions[item.call_id]
                item = MultiAgentCallOutput(
                    id=item.id, action=action, call_id=item.call_id, output=said
                )
            items.append(item)
        ctx.items = items


#: An MCP tool rollout offers an engine: its description ends naming the tool and its server.
_MCP_OFFER = re.compile(r"\(tool '(?P<tool>.+)' of MCP server '(?P<label>.+)'\)$")
#: The server URL of the MCP tools the back's view has (the back never calls one itself).
BACK_MCP_URL = "http://mcp.behind.invalid/mcp"


def _mcp_offered(ctx: Context) -> dict[str, dict[str, tuple[str, dict[str, Any]]]]:
    """The MCP tools offered to the back as functions: by server label, by tool name, the
    function's name and the tool as its listing has it."""
    out: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {}
    for name, tool in ctx.function_tools.items():
        found = _MCP_OFFER.search(tool.description or "")
        if not name.startswith(MCP_PREFIX) or found is None:
            continue
        label, tool_name = found["label"], found["tool"]
        about = (tool.description or "")[: found.start()].rstrip()
        listed = {"name": tool_name, "description": about, "input_schema": tool.parameters}
        out.setdefault(label, {})[tool_name] = (name, listed)
    return out


def _as_function(spec: CallSpec) -> CallSpec:
    """A hosted call the policy makes, as the engine's call of the function offered for it."""
    if isinstance(spec, WebSearchSpec):
        return FunctionCallSpec(name=WEB_SEARCH_TOOL.name, arguments=_query(spec.query))
    if isinstance(spec, AgentCallSpec):
        return FunctionCallSpec(name=spec.action, arguments=spec.arguments)
    if isinstance(spec, McpCallSpec | McpApprovalSpec):  # (the front decides on approval)
        return FunctionCallSpec(
            name=mcp_name(spec.server.label, spec.name), arguments=spec.arguments
        )
    return spec


def _query(query: str) -> str:
    return orjson.dumps({"query": query}).decode()


@contextlib.contextmanager
def _hosted_view(
    ctx: Context, searches: bool, servers: dict[str, dict[str, tuple[str, dict[str, Any]]]]
) -> Iterator[None]:
    """`ctx` (the back's own, made for this one request) as rollout has it while the policy
    decides: web search and the MCP servers hosted tools, their calls and outputs hosted
    items."""
    fields = ("hosted", "function_tools", "hosted_since_user", "items", "tools", "mcp_listed")
    with _restored(ctx, *fields, "choice"):
        _as_hosted(ctx, searches, servers)
        yield


def _as_hosted(
    ctx: Context, searches: bool, servers: dict[str, dict[str, tuple[str, dict[str, Any]]]]
) -> None:
    """`ctx` made as rollout has it, in place: its hosted calls hosted items."""
    search = WEB_SEARCH_TOOL.name if searches else None
    mcp_tools = {
        name: (label, tool) for label, ts in servers.items() for tool, (name, _) in ts.items()
    }
    calls: dict[str, FunctionCall] = {}
    items: list[Item] = []
    since_user: dict[str, int] = {}
    for item in ctx.items:
        if isinstance(item, FunctionCall) and (item.name == search or item.name in mcp_tools):
            calls[item.call_id] = item
            continue
        if isinstance(item, FunctionCallOutput) and item.call_id in calls:
            made = _hosted_items(calls[item.call_id], text_of(item.output), mcp_tools)
            for one in made:
                kind = HOSTED_BY_ITEM.get(type(one))
                if kind is not None:
                    since_user[kind.name] = since_user.get(kind.name, 0) + 1
            items.extend(made)
            continue
        if isinstance(item, Message) and item.role == "user":
            since_user = {}
        items.append(item)
    offered = {search} | set(mcp_tools)
    ctx.function_tools = {k: v for k, v in ctx.function_tools.items() if k not in offered}
    ctx.hosted = ctx.hosted | ({search} if search else set()) | ({"mcp"} if servers else set())
    if since_user:
        ctx.hosted_since_user = {**ctx.hosted_since_user, **since_user}
    ctx.items = items
    ctx.tools = (*ctx.tools, *(_mcp_tool(label) for label in servers))
    ctx.mcp_listed = {
        label: McpListTools(
            id=f"mcpl_{label}", server_label=label, tools=tuple(t for _, t in ts.values())
        )
        for label, ts in servers.items()
    }
    forced = ctx.choice.forced
    if forced in mcp_tools:  # a forced MCP tool: the choice the front's request made
        label, tool = mcp_tools[forced]
        ctx.choice = attrs.evolve(
            ctx.choice, forced=None, forced_hosted="mcp", forced_target=(label, tool)
        )


@contextlib.contextmanager
def _restored(ctx: Context, *fields: str) -> Iterator[None]:
    """`ctx`'s `fields` as they were, once the block (which changes them) is done."""
    saved = [getattr(ctx, name) for name in fields]
    try:
        yield
    finally:
        for name, value in zip(fields, saved, strict=True):
            setattr(ctx, name, value)


def _hosted_items(
    call: FunctionCall, output: str, mcp_tools: dict[str, tuple[str, str]]
) -> list[Item]:
    """The hosted items a function call and its output stand for."""
    if call.name not in mcp_tools:  # a web search
        lines = output.splitlines()
        sources = tuple(UrlSource(url=line[2:]) for line in lines if line.startswith("- "))
        query = str(orjson.loads(call.arguments or "{}").get("query", ""))
        action = SearchAction(query=query, sources=sources)
        return [WebSearchCall(id=call.call_id, status="completed", action=action)]
    label, tool = mcp_tools[call.name]
    if output.startswith(DECLINED):
        request = McpApprovalRequest(
            id=call.call_id, server_label=label, name=tool, arguments=call.arguments
        )
        answer = McpApprovalResponse(approval_request_id=call.call_id, approve=False)
        return [request, answer]
    failed = output.startswith("Error: ")
    return [
        McpCall(
            id=call.call_id,
            server_label=label,
            name=tool,
            arguments=call.arguments,
            output=None if failed else output,
            error={"type": "mcp_tool_execution_error", "message": output[7:]} if failed else None,
            status="failed" if failed else "completed",
        )
    ]


def _mcp_tool(label: str) -> OtherTool:
    raw = {"type": "mcp", "server_label": label, "server_url": BACK_MCP_URL}
    return OtherTool(type="mcp", raw={**raw, "require_approval": "never"})


async def serve_behind(
    engine: Engine | None = None,
    *,
    config: ServerConfig | None = None,
    service: Service | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    **kwargs: Any,
) -> None:
    """`rollout.serve`, in front of a back server playing the front engine's model (the
    front is served as given when its engine already has a model: a real upstream)."""
    if service is None:
        service = Service(engine or Engine(), config or ServerConfig())
    front = service.engine
    if front.model is not None:
        await _serve(service=service, task_status=task_status, **kwargs)
        return
    config = attrs.evolve(BACK, lenient=service.config.lenient)  # as strict as the front
    back = Service(Engine(model=Played(front), models=front.models), config)
    async with trio.open_nursery() as nursery:
        token = _in_back.set(True)  # the back's tasks inherit it (trio copies the context)
        try:
            port = await nursery.start(functools.partial(_serve, service=back))
        finally:
            _in_back.reset(token)
        url = f"http://127.0.0.1:{port}/v1"
        front.model = UpstreamModel(UpstreamConfig(url=url, api="responses"))
        try:
            await _serve(service=service, task_status=task_status, **kwargs)
        finally:
            front.model = None
            nursery.cancel_scope.cancel()


_in_back: contextvars.ContextVar[bool] = contextvars.ContextVar("in_back", default=False)


def _front_only(record: logging.LogRecord) -> bool:
    """The back server's informational lines (its access log, `serving on`) are dropped."""
    return record.levelno >= logging.WARNING or not _in_back.get()


#: The loggers rollout logs on (the back's lines among them are filtered: `_front_only`).
LOGGERS = ("rollout", "rollout.access", "rollout.server.httpconn", "rollout.server.wsmode")

#: The modules that bind `rollout.serve` by name (at import): where `install` replaces it.
MODULES = (rollout, rollout.server.listen, rollout.testing.thread, rollout.testing.plugin)


def install() -> None:
    """Route every in-process server through `serve_behind`."""
    for module in MODULES:
        module.serve = serve_behind  # type: ignore[attr-defined]
    for name in LOGGERS:
        logging.getLogger(name).addFilter(_front_only)
