# The event vocabulary of the tests: which event types end a read (terminal, with or without
# `error`, and the append shape's `response.done` pause), the type sequence of a text answer,
# and checks on received event frames (numbering, pending calls, response ids).
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.events import TERMINAL_TYPES

#: The events that end a response.
TERMINAL = TERMINAL_TYPES
#: What ends a read of one request's answer on a connection: the response's end, or an error.
TERMINAL_OR_ERROR = TERMINAL | {"error"}
#: What ends a read of an append rollout up to its next pause or its end.
PAUSE_OR_END = TERMINAL | {"response.done"}
#: Any of the above.
BOUNDARY = PAUSE_OR_END | {"error"}
#: The first two events of every response.
START = ["response.created", "response.in_progress"]
#: A message's output item and text part opening, before its deltas ...
TEXT_OPEN = ["response.output_item.added", "response.content_part.added"]
#: ... and closing after them.
TEXT_CLOSE = [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
#: A hosted web search call from its output item's opening to its closing.
WEB_SEARCH_CALL = [
    "response.output_item.added",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.output_item.done",
]


def text_answer_types(deltas: int, *, end: str = "response.completed") -> list[str]:
    """The event types of a response that answers in text only, in `deltas` text deltas."""
    return [*START, *TEXT_OPEN, *["response.output_text.delta"] * deltas, *TEXT_CLOSE, end]


def types(frames: Sequence[dict[str, Any]]) -> list[str]:
    return [f["type"] for f in frames]


def pending_ids(pause: dict[str, Any]) -> list[str]:
    """The call ids a `response.done` pause waits for."""
    assert pause["type"] == "response.done", pause
    return [p["call_id"] for p in pause["pending_calls"]]


def assert_contiguous(frames: Sequence[dict[str, Any]], start: int = 0) -> None:
    """`sequence_number` runs start, start+1, ... over the response's events (errors aside)."""
    seqs = [f["sequence_number"] for f in frames if f["type"] != "error"]
    assert seqs == list(range(start, start + len(seqs))), seqs


def response_id_of(frame: dict[str, Any]) -> str:
    """The response an event frame belongs to (lifecycle events and the pause event)."""
    if frame["type"] == "response.done":
        return frame["response_id"]
    if "response" in frame:
        return frame["response"]["id"]
    raise AssertionError(frame)
