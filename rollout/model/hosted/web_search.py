# The hosted web search, the module behind its row of the hosted tools (rollout.model.hosted):
# what a call asks (WebSearchSpec, a query), how the simulated model comes to make one (the
# default model when the prompt asks for current information; any model the request forces to
# search), how a script or a recording writes one, and the simulated service that answers it: a
# declared latency (the cost profile's `web_search_s`), then sources derived from the query
# alone, so runs repeat exactly. Its wire side (the `web_search_call` item, its events, the
# request's tool types) is protocol's (protocol.hosted.WEB_SEARCH_TOOL).
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import trio

from protocol.hosted import WEB_SEARCH_TOOL, HostedTool
from protocol.items import HostedItem, SearchAction, UrlSource, WebSearchCall
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.grounding import Grounding, ground
from rollout.model.profiles import CostProfile


@attrs.frozen(kw_only=True)
class WebSearchSpec(HostedSpec):
    tool: ClassVar[HostedTool] = WEB_SEARCH_TOOL
    query: str


def plan(ctx: Context) -> WebSearchSpec:
    """A web search for the latest user message (its content words)."""
    g = ground(ctx)
    places = {p.lower() for p in g.places}
    words = [*g.places[:2], *(w for w in g.words if w.lower() not in places)]
    words = words[:8] or ctx.last_user_text.split()[:8] or ["latest", "news"]
    return WebSearchSpec(query=" ".join(words))


def wants(ctx: Context, g: Grounding, named: bool) -> WebSearchSpec | None:
    """The default model's own search: when the prompt asks for current information and it has
    not searched since, unless a function tool is named for the subject (`named`: get_weather
    for the weather beats a search)."""
    if ctx.hosted_since_user.get(WEB_SEARCH_TOOL.name, 0) == 0 and g.current_info and not named:
        return plan(ctx)
    return None


def from_script(query: Any) -> WebSearchSpec:
    """A script's search (`{"search": "query"}`)."""
    return WebSearchSpec(query=str(query))


def from_item(item: Mapping[str, Any]) -> WebSearchSpec:
    """The search a recorded `web_search_call` item shows."""
    action = item.get("action") or {}
    return WebSearchSpec(query=str(action.get("query", "")))


@attrs.define
class WebSearch:
    """The simulated web-search service: declared latency, results derived from the query."""

    costs: CostProfile  # its latency: `web_search_s`, per call
    results: int = 3

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, WebSearchSpec) and isinstance(item, WebSearchCall)
        if self.costs.web_search_s > 0:
            await trio.sleep(self.costs.web_search_s)
        action = SearchAction(query=spec.query, sources=self.sources(spec.query))
        return attrs.evolve(item, status="completed", action=action)

    def sources(self, query: str) -> tuple[UrlSource, ...]:
        slug = "-".join(query.lower().split()[:6]) or "search"
        digest = hashlib.sha256(query.encode()).hexdigest()
        return tuple(
            UrlSource(url=f"https://example.com/{digest[i * 6 : i * 6 + 6]}/{slug}")
            for i in range(self.results)
        )
