# The computer-use tool (`computer`, `computer_use_preview`), the module behind its row of the
# hosted tools (rollout.model.hosted): a tool the *client* runs. The default model makes a
# `computer_call` (a screenshot first) when the prompt asks to operate a screen, or when
# `tool_choice` forces it; the call closes at once and goes to the client as a function call
# does (the chain shape ends the response, the append shape pauses), and the client answers
# with a `computer_call_output` (its screenshot: in the next request, or appended); the model
# then answers. Its wire side is protocol's (protocol.items.COMPUTER_TOOL).
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from protocol.hosted import COMPUTER_TOOL, HostedTool
from protocol.items import ComputerCall, HostedItem
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.grounding import Grounding
from rollout.model.profiles import CostProfile

_SCREEN = re.compile(
    r"\b(click|screenshot|browser|scroll|double[- ]click|on (my|the) (screen|desktop)"
    r"|use the computer|computer use|open (the )?(website|web page|page|app|application)"
    r"|navigate to|type into|fill (in|out) the form)\b"
)


@attrs.frozen(kw_only=True)
class ComputerSpec(HostedSpec):
    tool: ClassVar[HostedTool] = COMPUTER_TOOL
    action: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "screenshot"})

    def opening(self, item_id: str) -> HostedItem:
        return ComputerCall(
            id=item_id,
            call_id=f"call_{item_id.partition('_')[2]}",
            action=dict(self.action),
            status="in_progress",
        )


def plan(ctx: Context) -> ComputerSpec:
    """A look at the screen first (a screenshot action), as computer-use models begin."""
    del ctx
    return ComputerSpec()


def wants(ctx: Context, g: Grounding, named: bool) -> ComputerSpec | None:
    """Once per prompt, when the prompt asks to operate a screen."""
    del g
    if named or ctx.hosted_since_user.get(COMPUTER_TOOL.name, 0):
        return None
    return plan(ctx) if _SCREEN.search(ctx.last_user_text.lower()) else None


def from_script(value: Any) -> ComputerSpec:
    """A script's computer call: `{"computer": {"type": "click", "x": 1, "y": 2}}`."""
    return ComputerSpec(
        action=dict(value) if isinstance(value, Mapping) else {"type": "screenshot"}
    )


def from_item(item: Mapping[str, Any]) -> ComputerSpec:
    action = item.get("action")
    return ComputerSpec(
        action=dict(action) if isinstance(action, Mapping) else {"type": "screenshot"}
    )


@attrs.define
class ComputerUse:
    """Nothing runs on the server: the call is complete as it opened (the client runs it)."""

    costs: CostProfile

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, ComputerSpec) and isinstance(item, ComputerCall)
        return attrs.evolve(item, status="completed")
