# The executors of the sampling loop that the engine itself provides, all behind the loop's one
# interface (`rollout.engine.loop.Executor`). The chain shape's client-tool executor ends the
# response (the client answers with a new response.create carrying previous_response_id); the
# hosted web-search service runs inside the server with a declared latency and deterministic
# results. Calls of async tools go to Deferred, which returns at once: the model does not wait,
# and their outputs join the context whenever they arrive (a later create, an inject). The append
# and multi-agent shapes' executor waits for the client (rollout.service.live).
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import attrs
import trio

from protocol.items import Item, SearchAction, UrlSource, WebSearchCall
from rollout.conversation.calls import WebSearchSpec
from rollout.engine.loop import Call, Rollout
from rollout.model.profiles import CostProfile


class EndResponse:
    """The chain shape: a client tool call ends the response; its state stays for chaining."""

    scans = True

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item] | None:
        del r, calls
        return None


class Deferred:
    """Calls of async tools (`async: true`): nothing to wait for, nothing joins the context now;
    each call stays open until its output arrives on its call_id."""

    scans = True

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        del r, calls
        return ()


@attrs.define
class WebSearch:
    """The hosted web-search service: declared latency, results derived from the query."""

    costs: CostProfile
    results: int = 3
    scans = False  # its results are the server's own items, not client input

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        done: list[Item] = []
        for c in calls:
            assert isinstance(c.spec, WebSearchSpec)
            action = await self.search(c.spec.query, r)
            await r.send(r.stream.end_web_search(c.output_index, action))
            item = r.stream.response.output[c.output_index]
            assert isinstance(item, WebSearchCall)
            done.append(item)
        return done

    async def search(self, query: str, r: Rollout) -> SearchAction:
        with r.work.stage("hosted_tool", items=1):
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
