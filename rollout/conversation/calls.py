# What a model can ask for in a step, in the engine's own terms: a function call (the client's
# tool, or an async one), a hosted tool's call (a HostedSpec: each hosted tool's own spec lives
# with the tool, rollout.model.hosted), and the citations an answer carries.
# Every model (the simulated policy, a real engine behind the upstream) and the loop speak these.
from __future__ import annotations

from typing import ClassVar

import attrs

from protocol.items import HostedItem, HostedTool


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
    tool's spec is a subclass that names its tool: its row of protocol.items.HOSTED_TOOLS."""

    tool: ClassVar[HostedTool]

    def opening(self, item_id: str) -> HostedItem:
        """The call's item as it opens (in progress, no result yet)."""
        return self.tool.item(id=item_id, status="in_progress")  # type: ignore[call-arg]


CallSpec = FunctionCallSpec | HostedSpec
