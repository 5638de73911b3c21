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
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import trio

import rollout
import rollout.server.listen
import rollout.testing.plugin
import rollout.testing.thread
from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    SearchAction,
    UrlSource,
    WebSearchCall,
    text_of,
)
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.engine.loop import Pieces, Rollout
from rollout.engine.simulated import SimulatedModel
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import CallStep, Policy, Step
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.upstream import UpstreamConfig, UpstreamModel
from rollout.upstream.hosted import WEB_SEARCH

ENV = "ROLLOUT_TEST_BEHIND_UPSTREAM"

# Why a test is `simulated_only`, by category (docs/real-inference.md lists them).
#: Tools the engine path never offers an engine (rollout/upstream/chat.py `tools`).
CLIENT_TOOLS = (
    "the engine path offers an engine function tools only (and web search as one): computer, "
    "shell, local_shell, apply_patch and custom (grammar) tools are never offered, so an "
    "engine never calls them"
)
HOSTED_TOOLS = (
    "code interpreter, file search and image generation are hosted tools the engine path does "
    "not offer an engine (web search alone is offered, as a function)"
)
MCP = (
    "MCP tools (their listing, calls and approval requests) are not offered to an engine: "
    "the simulated model alone calls them"
)
MULTI_AGENT = (
    "multi-agent actions (spawn_agent, wait_agent, ...) are not offered to an engine: the "
    "simulated model alone orchestrates subagents"
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
    so a hosted web search it would run is a call of the `web_search` function rollout offers
    for it (rollout.upstream.hosted), which rollout then runs. The policy decides on the
    context as rollout has it (`_hosted_view`): the search offered as the hosted tool, and each
    search made as its `web_search_call` item with its sources (what the function's output
    lists), so the default model searches, and cites, as it does in front."""

    policy: Policy

    def next_step(self, ctx: Context) -> Step:
        offered = ctx.function_tools.get(WEB_SEARCH["name"])
        if offered is None or offered.description != WEB_SEARCH["description"]:
            return self.policy.next_step(ctx)
        with _hosted_view(ctx):
            step = self.policy.next_step(ctx)
        if not isinstance(step, CallStep):
            return step
        calls = tuple(
            FunctionCallSpec(name=WEB_SEARCH["name"], arguments=_query(c.query))
            if isinstance(c, WebSearchSpec)
            else c
            for c in step.calls
        )
        return attrs.evolve(step, calls=calls)


def _query(query: str) -> str:
    return orjson.dumps({"query": query}).decode()


@contextlib.contextmanager
def _hosted_view(ctx: Context) -> Iterator[None]:
    """`ctx` (the back's own, made for this one request) as rollout has it while the policy
    decides: web search a hosted tool, its calls and outputs `web_search_call` items."""
    name = WEB_SEARCH["name"]
    saved = (ctx.hosted, ctx.function_tools, ctx.hosted_since_user, ctx.items)
    queries: dict[str, str] = {}
    items: list[Item] = []
    since_user = 0
    for item in ctx.items:
        if isinstance(item, FunctionCall) and item.name == name:
            queries[item.call_id] = str(orjson.loads(item.arguments or "{}").get("query", ""))
            continue
        if isinstance(item, FunctionCallOutput) and item.call_id in queries:
            lines = text_of(item.output).splitlines()
            sources = tuple(UrlSource(url=line[2:]) for line in lines if line.startswith("- "))
            action = SearchAction(query=queries[item.call_id], sources=sources)
            item = WebSearchCall(id=item.call_id, status="completed", action=action)
            since_user += 1
        elif isinstance(item, Message) and item.role == "user":
            since_user = 0
        items.append(item)
    ctx.hosted = ctx.hosted | {name}
    ctx.function_tools = {k: v for k, v in ctx.function_tools.items() if k != name}
    if since_user:
        ctx.hosted_since_user = {**ctx.hosted_since_user, name: since_user}
    ctx.items = items
    try:
        yield
    finally:
        ctx.hosted, ctx.function_tools, ctx.hosted_since_user, ctx.items = saved


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
