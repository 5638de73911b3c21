# Hosted tools in front of a real engine: an engine knows only functions, so a hosted tool the
# request offers (web search) is offered to it as a function of the same name, its call is
# turned into the hosted call that rollout runs (its simulated service: the `web_search_call`
# item and its events, as the real API has them), and a hosted call already in the context is
# shown to the engine as that function's call and output. Pure: no I/O.
from __future__ import annotations

from typing import Any

import orjson

from protocol.hosted import WEB_SEARCH_TOOL
from protocol.items import Item, SearchAction, WebSearchCall
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.hosted.web_search import WebSearchSpec

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


def offered(ctx: Context) -> list[dict[str, Any]]:
    """The hosted tools the request offers (and its tool choice allows), as chat functions;
    none that a function tool of the request already names."""
    allowed = ctx.choice.allows_hosted(WEB_SEARCH_TOOL.offered_as)
    if ctx.web_search and allowed and WEB_SEARCH_TOOL.name not in ctx.function_tools:
        return [{"type": "function", "function": WEB_SEARCH}]
    return []


def names(ctx: Context) -> frozenset[str]:
    """The names the engine may call as hosted tools."""
    return frozenset(t["function"]["name"] for t in offered(ctx))


def forced(ctx: Context) -> str | None:
    """The function name a hosted `tool_choice` forces, when it is offered."""
    if ctx.choice.forced_hosted == WEB_SEARCH_TOOL.offered_as and names(ctx):
        return WEB_SEARCH_TOOL.name
    return None


def spec_of(name: str, arguments: str) -> HostedSpec:
    """The hosted call an engine's call of `name` with `arguments` (JSON) asks for."""
    del name  # web search is the one hosted tool offered as a function
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        value = {}
    query = value.get("query") if isinstance(value, dict) else None
    return WebSearchSpec(query=str(query or arguments or "").strip() or "search")


def as_call(item: Item) -> tuple[str, str, str, str] | None:
    """A hosted call of the context as the engine sees it: (call id, function name, arguments,
    output), or None for an item that is not one."""
    if not isinstance(item, WebSearchCall) or not isinstance(item.action, SearchAction):
        return None
    query = item.action.query
    sources = [s.url for s in item.action.sources or ()]
    found = "\n".join(f"- {url}" for url in sources) if sources else "(no sources found)"
    arguments = orjson.dumps({"query": query}).decode()
    return item.id, WEB_SEARCH_TOOL.name, arguments, f"Sources for {query!r}:\n{found}"


__all__ = ["WEB_SEARCH", "as_call", "forced", "names", "offered", "spec_of"]
