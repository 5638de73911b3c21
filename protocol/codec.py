# The wire codec: decode request bodies and frames into protocol types (strict, with the JSON
# path of the first offending field as `param`), decode server events, and encode events and
# objects as JSON bytes, with a fast path for the deltas that make up most of a stream. The
# converter itself and its hooks are protocol.convert.
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import orjson

from protocol.convert import converter
from protocol.errors import ProtocolError, clip
from protocol.events import (
    CLASS_BY_TYPE,
    ArgumentsDeltaEvent,
    Event,
    ResponseEvent,
    TextDeltaEvent,
)
from protocol.invalid import Path, format_path, kind_of, to_error
from protocol.request import AppendRequest, CreateRequest
from protocol.response import Response

T = TypeVar("T")


# -- public functions ---------------------------------------------------------------------------


def loads(data: bytes | str) -> Any:
    """Parse JSON; a parse failure is a ProtocolError (`invalid_json`)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(
            message=f"We could not parse the JSON body of your request: {exc.msg}.",
            code="invalid_json",
        ) from None


def structure(value: Any, cls: type[T], root: Path = ()) -> T:
    """Build `cls` from decoded JSON; any failure is a ProtocolError with the JSON path."""
    try:
        return converter.structure(value, cls)
    except ProtocolError:
        raise
    except Exception as exc:
        raise to_error(exc, root) from None


MAX_DEPTH = 64  # nesting of objects and arrays a request may have


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse JSON nested deeper than `limit` (it could not be encoded back, and no real
    request needs it)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            raise ProtocolError(
                message=f"The JSON is nested more than {limit} levels deep.",
                code="invalid_value",
            )
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v if isinstance(x, dict | list))


def decode_object(data: bytes | str | Mapping[str, Any], cls: type[T]) -> T:
    """Parse a JSON object body (or an already-parsed mapping) into `cls`."""
    value = loads(data) if isinstance(data, bytes | str) else data
    if not isinstance(value, dict):
        raise ProtocolError(
            message=f"The request body must be a JSON object, but got {kind_of(value)}.",
            code="invalid_type",
        )
    check_depth(value)
    return structure(value, cls)


def decode_create(data: bytes | str | Mapping[str, Any]) -> CreateRequest:
    return decode_object(data, CreateRequest)


def decode_append(data: bytes | str | Mapping[str, Any]) -> AppendRequest:
    return decode_object(data, AppendRequest)


def decode_event(data: bytes | str | Mapping[str, Any]) -> Event:
    """Parse one server event (a WebSocket frame or an SSE `data:` line)."""
    value = loads(data) if isinstance(data, bytes | str) else data
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise ProtocolError(message="An event must be a JSON object with a string 'type'.")
    fast = _fast_delta(value)
    if fast is not None:
        return fast
    cls = CLASS_BY_TYPE.get(value["type"])
    if cls is None:
        raise ProtocolError(
            message=f"Unknown event type {clip(repr(value['type']))}.", param="type"
        )
    return structure(value, cls)


def _fast_delta(value: dict[str, Any]) -> Event | None:
    """Delta events are most of a stream: build them directly when their fields are plainly
    right (anything unusual goes through the converter and its error reporting)."""
    kind = value["type"]
    try:
        if kind == "response.output_text.delta":
            event: TextDeltaEvent | ArgumentsDeltaEvent = TextDeltaEvent(
                sequence_number=value["sequence_number"],
                item_id=value["item_id"],
                output_index=value["output_index"],
                content_index=value["content_index"],
                delta=value["delta"],
                logprobs=tuple(value.get("logprobs") or ()),
            )
        elif kind == "response.function_call_arguments.delta":
            event = ArgumentsDeltaEvent(
                sequence_number=value["sequence_number"],
                item_id=value["item_id"],
                output_index=value["output_index"],
                delta=value["delta"],
            )
        else:
            return None
    except (KeyError, TypeError):
        return None
    ok = (
        type(event.sequence_number) is int
        and type(event.output_index) is int
        and type(event.item_id) is str
        and type(event.delta) is str
    )
    return event if ok else None


def to_json(obj: Any) -> Any:
    """The JSON-ready form of a protocol object (dicts, lists, scalars)."""
    return converter.unstructure(obj)


def encode(obj: Any) -> bytes:
    return orjson.dumps(converter.unstructure(obj))


#: Events whose fields are all plain JSON values, by class: their fields in wire order.
_PLAIN: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in attrs.fields(cls)) for cls in (TextDeltaEvent, ArgumentsDeltaEvent)
}
_last: list[Any] = [None, None]  # the snapshot encoded last, and its JSON form


def _snapshot(response: Response) -> Any:
    """A lifecycle event's response in JSON form. `response.created` and `.in_progress` carry
    one snapshot (with the instructions and tools, often tens of KB), so the second reuses the
    first's form; a snapshot is never changed after it is taken."""
    last = _last
    if last[0] is not response:
        last[:] = [response, converter.unstructure(response)]
    return last[1]


def encode_event(event: Event, stream_id: str | None = None) -> bytes:
    """One event as JSON bytes, with `stream_id` added when the create named a lane."""
    data: dict[str, Any]
    fields = _PLAIN.get(type(event))
    if fields is not None:  # a delta: skip the converter
        data = {name: getattr(event, name) for name in fields}
    elif type(event) is ResponseEvent:
        data = {
            "type": event.type,
            "sequence_number": event.sequence_number,
            "response": _snapshot(event.response),
        }
    else:
        data = converter.unstructure(event)
    if stream_id is not None:
        data["stream_id"] = stream_id
    return orjson.dumps(data)


__all__ = [
    "converter",
    "decode_append",
    "decode_create",
    "decode_event",
    "decode_object",
    "encode",
    "encode_event",
    "format_path",
    "loads",
    "structure",
    "to_json",
]
