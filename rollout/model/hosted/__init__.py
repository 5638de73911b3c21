# The hosted tools, as a table: each row is one tool the server runs itself, declared once. A row
# names its call's spec (whose `tool` is its wire side: protocol.hosted.HOSTED_TOOLS, the request's
# tool types, the output item and its events), the simulated service that answers a call (made
# from the cost profile, which declares its latency), how the simulated model makes a call (when
# the request forces the tool; when the default model wants it), and how a script and a recording
# write one. Everything else reads the table: the engine builds its executors from it
# (rollout.engine.executors.hosted_tools), the loop opens a call through its spec's tool, the
# request's rules (rollout.model.choice) and the default policy consult it, scripts and
# recordings parse with it. A new hosted tool is a module beside web_search.py, its row here, and
# its wire item and events in protocol/.
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from protocol.items import HostedItem
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.grounding import Grounding
from rollout.model.hosted import computer, mcp, simulated, web_search
from rollout.model.profiles import CostProfile


class Service(Protocol):
    """A hosted tool's simulated service, behind the engine's hosted executor."""

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        """The call's item (in progress) completed with its result, after the service's
        declared latency."""
        ...


@attrs.frozen(kw_only=True)
class HostedRow:
    spec: type[HostedSpec]  # its calls' spec; `spec.tool` is the wire side
    service: Callable[[CostProfile], Service]
    #: The call a step the request forces to call it makes (None: it has nothing to call).
    plan: Callable[[Context], HostedSpec | None]
    #: The default model's own call now (given what it knows, and whether a function tool is
    #: named for the subject), or None.
    wants: Callable[[Context, Grounding, bool], HostedSpec | None]
    script: str  # the key of a call in a script (`{"search": "query"}`)
    from_script: Callable[[Any], HostedSpec]  # a call from that key's value
    from_item: Callable[[Mapping[str, Any]], HostedSpec]  # a call from its recorded item
    #: The client answers its call (an MCP approval request, a computer call): after the
    #: service closes it, it goes to the shape's client-tool executor (chain: the response ends;
    #: append: the rollout pauses).
    client_answers: bool = False

    @property
    def name(self) -> str:
        return self.spec.tool.name

    @property
    def offered_as(self) -> str:
        """The tool of the request that offers it (`ctx.hosted`, `tool_choice`)."""
        return self.spec.tool.offered_as


HOSTED: tuple[HostedRow, ...] = (
    HostedRow(
        spec=web_search.WebSearchSpec,
        service=web_search.WebSearch,
        plan=web_search.plan,
        wants=web_search.wants,
        script="search",
        from_script=web_search.from_script,
        from_item=web_search.from_item,
    ),
    # -- issue 26: MCP, code interpreter, file search, image generation --
    HostedRow(
        spec=mcp.McpCallSpec,
        service=mcp.McpCalls,
        plan=mcp.plan,
        wants=mcp.wants,
        script="mcp",
        from_script=mcp.from_script,
        from_item=mcp.from_item,
    ),
    HostedRow(
        spec=mcp.McpApprovalSpec,
        service=mcp.Approvals,
        plan=mcp.no_plan,
        wants=mcp.never,
        script="mcp_approval",
        from_script=mcp.approval_from_script,
        from_item=mcp.approval_from_item,
        client_answers=True,
    ),
    HostedRow(
        spec=simulated.CodeSpec,
        service=simulated.CodeInterpreter,
        plan=simulated.code_plan,
        wants=simulated.code_wants,
        script="code",
        from_script=simulated.code_from_script,
        from_item=simulated.code_from_item,
    ),
    HostedRow(
        spec=simulated.FileSearchSpec,
        service=simulated.FileSearch,
        plan=simulated.search_plan,
        wants=simulated.search_wants,
        script="file_search",
        from_script=simulated.search_from_script,
        from_item=simulated.search_from_item,
    ),
    HostedRow(
        spec=simulated.ImageSpec,
        service=simulated.ImageGeneration,
        plan=simulated.image_plan,
        wants=simulated.image_wants,
        script="image",
        from_script=simulated.image_from_script,
        from_item=simulated.image_from_item,
    ),
    HostedRow(
        spec=computer.ComputerSpec,
        service=computer.ComputerUse,
        plan=computer.plan,
        wants=computer.wants,
        script="computer",
        from_script=computer.from_script,
        from_item=computer.from_item,
        client_answers=True,  # the client runs it and sends its computer_call_output
    ),
)

BY_NAME: dict[str, HostedRow] = {row.name: row for row in HOSTED}
BY_SCRIPT: dict[str, HostedRow] = {row.script: row for row in HOSTED}
#: Rows by the `type` of their output item (a recording's items are JSON).
BY_ITEM_TYPE: dict[str, HostedRow] = {row.spec.tool.item_type: row for row in HOSTED}

__all__ = ["BY_ITEM_TYPE", "BY_NAME", "BY_SCRIPT", "HOSTED", "HostedRow", "Service"]
