# Token accounting done independently of the server: wire items and tools decoded into the
# server's types, rendered and counted one at a time, to compare with the server's counters.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol import codec
from protocol.items import Item, Tool
from rollout.conversation import render
from support.tools import MODEL


def decode_items(items: Sequence[dict[str, Any]]) -> list[Item]:
    """Wire items (as sent or received) as the server's item types."""
    return list(codec.decode_create({"model": MODEL, "input": list(items)}).input)


def decode_tools(tools: Sequence[dict[str, Any]]) -> list[Tool]:
    return list(codec.decode_create({"model": MODEL, "input": "x", "tools": list(tools)}).tools)


def header_tokens(instructions: str | None, tools: Sequence[dict[str, Any]]) -> int:
    return len(render.header_tokens(instructions, decode_tools(tools)))


def item_tokens(items: Sequence[dict[str, Any]]) -> int:
    """Tokens of the items each rendered once, one at a time."""
    return sum(len(render.tokens_of(item, MODEL)) for item in decode_items(items))
