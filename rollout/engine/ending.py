# How a response's outcome ends its event stream: `completed`, `cancelled` (a cancel, or its
# streaming client gone), `incomplete` (the budget's or the content filter's reason), or
# `failed` (an error, and a graceful shutdown that stopped it mid-way).
from __future__ import annotations

from protocol.events import Event
from protocol.response import Usage
from protocol.stream import ResponseStream
from rollout.engine.loop import Outcome

#: Reasons a response stops that end it with status `cancelled` (the SDK's incomplete reasons
#: are the budget's and the content filter's): a cancel, or its streaming client gone.
CANCEL_REASONS = frozenset({"cancelled", "client_disconnected"})
SHUTDOWN = "The server shut down before this response finished."  # (a graceful shutdown)


def terminal_events(
    stream: ResponseStream, outcome: Outcome, usage: Usage, completed_at: int
) -> list[Event]:
    """The events that end `stream`'s response as `outcome` says (its terminal event last)."""
    if outcome.status == "completed":
        return stream.complete(usage, completed_at=completed_at)
    if outcome.status == "incomplete" and outcome.reason == "shutdown":
        return stream.fail("server_error", SHUTDOWN, usage=usage)
    if outcome.status == "incomplete" and outcome.reason in CANCEL_REASONS:
        return stream.cancelled(usage)
    if outcome.status == "incomplete":
        return stream.incomplete(outcome.reason or "max_output_tokens", usage)
    return stream.fail(outcome.reason or "server_error", outcome.message or "", usage=usage)
