# What a model can ask for in a step, in the engine's own terms: a function call (the client's
# tool, or an async one), a hosted tool's call (a HostedSpec: each hosted tool's own spec lives
# with the tool, rollout.model.hosted), a multi-agent action, and the citations an answer carries.
# Every model (the simulated policy, a real engine behind the upstream) and the loop speak these.
from __future__ import annotations

from typing import ClassVar

import attrs

from protocol.clientitems import ClientCallItem
from protocol.hosted import HostedTool
from protocol.items import HostedItem


@attrs.frozen(kw_only=True)
class Citation:
    url: str
    title: str
    start_index: int
    end_index: int


@attrs.frozen(kw_only=True)
class FunctionCallSpec:
    name: str
    arguments: str  # JSON text, streamed as argument deltas


@attrs.frozen(kw_only=True)
class HostedSpec:
    """A call of a tool the server runs itself (after the step that asks for it). Each hosted
    tool's spec is a subclass that names its tool: its row of protocol.hosted.HOSTED_TOOLS."""

    tool: ClassVar[HostedTool]

    def opening(self, item_id: str) -> HostedItem:
        """The call's item as it opens (in progress, no result yet)."""
        return self.tool.item(id=item_id, status="in_progress")  # type: ignore[call-arg]


@attrs.frozen(kw_only=True)
class CustomCallSpec:
    """A call of a `custom` tool: its input, free text or a sentence of its grammar, streamed as
    input deltas."""

    name: str
    input: str


@attrs.frozen(kw_only=True)
class ClientCallSpec:
    """A call of a built-in client tool (shell, local_shell, apply_patch), written whole: `call`
    is its item as the model writes it (the loop gives it its ids)."""

    call: ClientCallItem

    @property
    def name(self) -> str:
        return str(self.call.type).removesuffix("_call")


@attrs.frozen(kw_only=True)
class AgentCallSpec:
    """A multi-agent action (`spawn_agent`, `wait_agent`, ...: protocol.agentitems) with its
    arguments as JSON text; the response's team of agents runs it (rollout.engine.agents)."""

    action: str
    arguments: str

    @property
    def name(self) -> str:
        return self.action


CallSpec = FunctionCallSpec | CustomCallSpec | ClientCallSpec | HostedSpec | AgentCallSpec
