# One WebSocket frame's client event, decoded before Session dispatches it (rollout.service.
# session holds the table of events): its lane (a valid `stream_id`, where errors about the frame
# go), its type among the table's, and the decoders of the events that need more than the codec;
# a frame must be a JSON text frame holding an object.
# Pure functions; each bad frame raises the ProtocolError the client is sent.
from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from protocol import codec
from protocol.errors import ProtocolError, clip
from protocol.lanes import Lane
from protocol.request import CancelRequest, InjectRequest
from protocol.validate import INVALID_STREAM_ID, STREAM_ID


def binary_frame() -> ProtocolError:
    """The refusal of a binary frame (every client event is a JSON text frame)."""
    return ProtocolError(
        message="Binary frames are not supported; send each event as a JSON text frame.",
        code="invalid_frame",
    )


def frame_object(value: object) -> dict[str, Any]:
    """The frame's JSON value, which must be an object."""
    if not isinstance(value, dict):
        raise ProtocolError(
            message="Each frame must be a JSON object with a 'type'.", code="invalid_type"
        )
    return value


def lane_of(value: dict[str, Any]) -> Lane:
    """The frame's lane, if it names a valid one (errors about the frame are sent there)."""
    stream_id = value.get("stream_id")
    if stream_id is None:
        return None
    if not isinstance(stream_id, str) or not STREAM_ID.fullmatch(stream_id):
        raise ProtocolError(message=INVALID_STREAM_ID, code="invalid_stream_id", param="stream_id")
    return stream_id


def event_type(value: dict[str, Any], known: Collection[str]) -> str:
    """The frame's `type`, one of `known` (the event types, in the order they are listed)."""
    kind = value.get("type")
    if kind not in known:
        names = [repr(k) for k in known]
        expected = ", ".join(names[:-1]) + f" or {names[-1]}"
        raise ProtocolError(
            message=f"Unknown event type {clip(repr(kind))}; expected {expected}.",
            code="unknown_event_type",
            param="type",
        )
    return str(kind)


def decode_cancel(value: dict[str, Any]) -> CancelRequest:
    return codec.decode_object(value, CancelRequest)


@attrs.frozen
class SteerFrame:
    """A `response.steer` as sent: the response it names, its input as sent, and what is wrong
    with the frame itself, if anything. A bad steer is answered `response.steer.failed` on the
    response it names (rollout.service.steer), never with an `error` event, so decoding one
    does not raise."""

    target_id: str
    raw: Any
    problem: str | None = None


STEER_KEYS = frozenset({"type", "previous_response_id", "input"})


def decode_steer(value: dict[str, Any]) -> SteerFrame:
    target = value.get("previous_response_id")
    target_id = target if isinstance(target, str) else ""
    extra = sorted(set(value) - STEER_KEYS)
    problem = None
    if extra:
        problem = (
            f"Unknown parameter: '{extra[0]}'. response.steer accepts only 'type', "
            "'previous_response_id' and 'input'."
        )
    elif not target_id:
        problem = "Missing required parameter: 'previous_response_id'."
    return SteerFrame(target_id, value.get("input"), problem)


def decode_inject(value: dict[str, Any]) -> tuple[InjectRequest, Any]:
    """The inject and its input as sent (a failure returns it unchanged)."""
    return codec.decode_object(value, InjectRequest), value["input"]
