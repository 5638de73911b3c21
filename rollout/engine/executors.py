# Tool execution behind one interface per kind. Hosted tools (web search) run a simulated service
# inside the server with a declared latency and deterministic results. Client tools are executed
# by the client: the chain shape's executor ends the response (the client answers with a new
# response.create carrying previous_response_id); the append shape's executor (rollout.service.live)
# pauses the loop until the client appends the outputs.
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

import attrs
import trio

from protocol.items import FunctionCall, Item, SearchAction, UrlSource
from rollout.engine.work import Work
from rollout.model.profiles import CostProfile


class ClientTools(Protocol):
    async def call(self, calls: Sequence[FunctionCall], work: Work) -> Sequence[Item] | None:
        """Items for the context (the outputs, unless the executor put them in itself as they
        arrived), or None to end the response here (the chain shape)."""
        ...


class EndResponse:
    """The chain shape: a client tool call ends the response; its state stays for chaining."""

    async def call(self, calls: Sequence[FunctionCall], work: Work) -> Sequence[Item] | None:
        del calls, work
        return None


@attrs.define
class WebSearch:
    """The hosted web-search service: declared latency, results derived from the query."""

    costs: CostProfile
    results: int = 3

    async def call(self, query: str, work: Work) -> SearchAction:
        with work.stage("hosted_tool", items=1):
            if self.costs.web_search_s > 0:
                await trio.sleep(self.costs.web_search_s)
            return SearchAction(query=query, sources=self.sources(query))

    def sources(self, query: str) -> tuple[UrlSource, ...]:
        slug = "-".join(query.lower().split()[:6]) or "search"
        digest = hashlib.sha256(query.encode()).hexdigest()
        return tuple(
            UrlSource(url=f"https://example.com/{digest[i * 6 : i * 6 + 6]}/{slug}")
            for i in range(self.results)
        )
