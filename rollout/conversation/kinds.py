# What the context tells apart by an item's kind: the items a model makes (a model step is a run
# of them), and where an item marks an explicit prompt-cache breakpoint.
from __future__ import annotations

from typing import Any

from protocol.agentitems import MultiAgentCall
from protocol.clientitems import CLIENT_CALLS, CustomToolCallOutput
from protocol.hosted import HOSTED_BY_ITEM
from protocol.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning

#: The items a model makes, besides assistant messages.
_MODEL_ITEMS: tuple[type, ...] = (
    FunctionCall,
    *CLIENT_CALLS,
    *(item for item, tool in HOSTED_BY_ITEM.items() if tool.model),
    Reasoning,
    MultiAgentCall,  # (a multi-agent action; its output is the server's, as a hosted call's)
)
_OUTPUTS_WITH_PARTS = (FunctionCallOutput, CustomToolCallOutput)


def breakpoint_of(item: Item) -> dict[str, Any] | None:
    """The `prompt_cache_breakpoint` of an item's content parts (the last one), if any."""
    if isinstance(item, Message):
        content = item.content
    elif isinstance(item, _OUTPUTS_WITH_PARTS):
        content = item.output
    else:
        return None
    if isinstance(content, str):
        return None
    for part in reversed(content):
        mark = getattr(part, "prompt_cache_breakpoint", None)
        if isinstance(mark, dict):
            return mark
    return None


def is_model_item(item: Item) -> bool:
    if isinstance(item, Message):
        return item.role == "assistant"
    return isinstance(item, _MODEL_ITEMS)
