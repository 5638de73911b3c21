# What clients send, as JSON values: append-shape create bodies and the WebSocket client events
# (`response.create`, `response.append`, `response.cancel`).
from __future__ import annotations

from typing import Any

from support.tools import EXEC_TOOL, INSTRUCTIONS, MODEL, PROMPT


def append_body(**extra: Any) -> dict[str, Any]:
    """An append-shape create body (no `type`): the coding agent with the exec tool."""
    out: dict[str, Any] = {
        "model": MODEL,
        "input": PROMPT,
        "instructions": INSTRUCTIONS,
        "tools": [EXEC_TOOL],
        "shape": "append",
        "store": False,
    }
    out.update(extra)
    return out


def streamed_append_body(**extra: Any) -> dict[str, Any]:
    """A streamed, stored append-shape create: the scripted steps of the cluster tests."""
    return {
        "model": "m",
        "input": "run the steps",
        "tools": [EXEC_TOOL],
        "shape": "append",
        "stream": True,
        "store": True,
        **extra,
    }


def create_frame(**extra: Any) -> dict[str, Any]:
    """The append-shape create as a WebSocket `response.create` frame."""
    return {"type": "response.create", **append_body(**extra)}


def append_frame(response_id: Any, items: Any, **extra: Any) -> dict[str, Any]:
    """A `response.append` frame (any values: bad-input tests send wrong ones)."""
    return {"type": "response.append", "response_id": response_id, "input": items, **extra}


def cancel_frame(response_id: str) -> dict[str, Any]:
    return {"type": "response.cancel", "response_id": response_id}
