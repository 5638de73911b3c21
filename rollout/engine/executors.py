# The executors of the sampling loop that the engine itself provides, all behind the loop's one
# interface (`rollout.engine.loop.Executor`). The chain shape's client-tool executor ends the
# response (the client answers with a new response.create carrying previous_response_id); a
# hosted tool's calls (the table: rollout.model.hosted) run inside the server, each through the
# tool's simulated service (a declared latency, deterministic results); the calls of the hosted
# tools the client answers (computer use, MCP approval) then go on to the client-tool executor,
# as a function call does. Calls of async tools go
# to Deferred, which returns at once: the model does not wait, and their outputs join the context
# whenever they arrive (a later create, an inject). The append and multi-agent shapes' executor
# waits for the client (rollout.service.live).
from __future__ import annotations

from collections.abc import Sequence

import attrs

from protocol.hosted import HOSTED_ITEMS, MCP_LIST_TOOL
from protocol.items import Item
from rollout.conversation.calls import HostedSpec
from rollout.engine.loop import Call, Executor, Rollout
from rollout.model.hosted import HOSTED, Service
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
class Hosted:
    """A hosted tool's calls (rollout.model.hosted): each completed by the tool's simulated
    service (its declared latency, its result), then closed on the wire."""

    service: Service
    scans = False  # its results are the server's own items, not client input

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        done: list[Item] = []
        for c in calls:
            assert isinstance(c.spec, HostedSpec) and isinstance(c.item, HOSTED_ITEMS)
            with r.work.stage("hosted_tool", items=1):
                item = await self.service.complete(c.spec, c.item)
            await r.send(r.stream.end_hosted(c.output_index, item))
            done.append(item)
        return done


async def list_mcp_tools(r: Rollout) -> None:
    """The MCP servers' tool listings the engine made for this request (rollout.model.hosted
    .mcp.listings), as the response's first items: `mcp_list_tools` and its events."""
    listed, r.ctx.mcp_listed = list(r.ctx.mcp_listed.values()), {}
    for item in listed:
        index = r.stream.next_output_index
        await r.send(r.stream.begin_hosted(MCP_LIST_TOOL, item.id, MCP_LIST_TOOL.opened(item)))
        await r.send(r.stream.end_hosted(index, item))
        r.ctx.extend([item], r.work, scan=False)


def hosted_tools(costs: CostProfile) -> dict[type[HostedSpec], Executor]:
    """The executor of each hosted tool of the table, by its spec class."""
    return {row.spec: Hosted(row.service(costs)) for row in HOSTED}


def client_answered() -> frozenset[type[HostedSpec]]:
    """The hosted tools whose completed calls the client answers (a computer call, an MCP
    approval request): the loop hands them on to the shape's client-tool executor, as it does a
    function call, so the chain shape ends the response on them and the append shape pauses."""
    return frozenset(row.spec for row in HOSTED if row.client_answers)
