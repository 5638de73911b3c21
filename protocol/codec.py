# The wire codec: decode request bodies and frames into protocol types (strict, with the JSON
# path of the first offending field as `param`), decode server events, and encode events and
# objects as JSON bytes (the encode side is protocol.encode, re-exported here), with fast paths
# for the deltas that make up most of a stream. The converter and its hooks are
# protocol.convert.
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import orjson

from protocol import direct
from protocol.convert import converter, plain_messages
from protocol.encode import (
    encode,
    encode_event,
    encode_sse_event,
    response_json,
    to_json,
    tools_json,
)
from protocol.errors import ProtocolError, clip
from protocol.events import (
    CLASS_BY_TYPE,
    ArgumentsDeltaEvent,
    Event,
    TextDeltaEvent,
)
from protocol.invalid import Path, format_path, kind_of, to_error
from protocol.request import AppendRequest, CreateRequest

T = TypeVar("T")
#: JSON text as received: a request body read into a buffer of its own is parsed where it lies.
Raw = bytes | bytearray | memoryview | str


# -- public functions ---------------------------------------------------------------------------


def loads(data: Raw) -> Any:
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
    request needs it). Level by level: each container is visited once, with no generator."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            raise ProtocolError(
                message=f"The JSON is nested more than {limit} levels deep.",
                code="invalid_value",
            )
        below: list[Any] = []
        add = below.append
        for v in level:
            for x in v.values() if isinstance(v, dict) else v:
                if isinstance(x, dict | list):
                    add(x)
        level = below
        depth += 1


def decode_object(data: Raw | Mapping[str, Any], cls: type[T]) -> T:
    """Parse a JSON object body (or an already-parsed mapping) into `cls`."""
    return _structure_object(loads(data) if isinstance(data, Raw) else data, cls)


def _structure_object(value: object, cls: type[T]) -> T:
    if not isinstance(value, dict):
        raise ProtocolError(
            message=f"The request body must be a JSON object, but got {kind_of(value)}.",
            code="invalid_type",
        )
    check_depth(value)
    return structure(value, cls)


def decode_create(data: Raw | Mapping[str, Any]) -> CreateRequest:
    value = loads(data) if isinstance(data, Raw) else data
    return _plain_create(value) or _structure_object(value, CreateRequest)


#: The fields a create often has that hold one plain JSON value, with the type each must have
#: (as the converter's strict hooks require; null is left to the converter).
_PLAIN_CREATE: dict[str, type] = {
    **dict.fromkeys(("model", "input", "instructions", "previous_response_id"), str),
    **dict.fromkeys(("prompt_cache_key", "safety_identifier", "user", "stream_id"), str),
    **dict.fromkeys(("store", "stream", "background", "parallel_tool_calls", "generate"), bool),
    **dict.fromkeys(("max_output_tokens", "max_tool_calls"), int),
}
_LISTS = ("input", "tools")  # (the fields of _plain_create's that may be lists)


def _plain_create(value: object) -> CreateRequest | None:
    """A create whose every key is one of _PLAIN_CREATE with a value of its type (and `type`
    `response.create`), its `input` a string or a list of plain messages
    (`protocol.convert.plain_messages`) and of function calls and outputs
    (`protocol.direct.item`), its `tools` function tools (`protocol.direct.function_tools`),
    built directly: the converter gives the same request, checking each of its 39 fields, and
    it was the largest part of a small create's decoding (and of a long history's, with its
    hook per item). Anything else is None, for the converter (and its errors). Only the tools'
    `parameters` may be nested deeper than three levels: their depth is checked (too deep,
    the converter says so)."""
    if type(value) is not dict or "model" not in value:
        return None
    for key, item in value.items():
        if type(item) is not _PLAIN_CREATE.get(key) and (key, item) != ("type", "response.create"):
            if key not in _LISTS or type(item) is not list:
                return None
    req: CreateRequest = object.__new__(CreateRequest)
    fields = req.__dict__  # (what __init__ does, without a call per field)
    fields.update(_CREATE_DEFAULTS)
    fields.update(value)
    if type(fields["input"]) is list:
        items = plain_messages(fields["input"], direct.item)
        if items is None:
            return None
        fields["input"] = items
    if type(fields["tools"]) is list:
        tools = direct.function_tools(fields["tools"])
        if tools is None or not _shallow(fields["tools"]):
            return None
        fields["tools"] = tools
    return req


def _shallow(tools: list[Any]) -> bool:
    """Whether `tools`, a create's (one level below it), is within MAX_DEPTH. Each level opens
    a bracket: JSON text with fewer brackets than the limit (any, strings' too, counted in C)
    is within it, as a few tools' always are; other text is walked level by level."""
    try:
        text = orjson.dumps(tools)
    except orjson.JSONEncodeError:
        text = None
    if text is not None and text.count(b"{") + text.count(b"[") <= MAX_DEPTH - 1:
        return True
    try:
        check_depth(tools, MAX_DEPTH - 1)
    except ProtocolError:
        return False
    return True


#: Every CreateRequest field's default (all immutable values: shared by every request).
_CREATE_DEFAULTS = {
    f.name: f.default for f in attrs.fields(CreateRequest) if f.default is not attrs.NOTHING
}


def decode_append(data: Raw | Mapping[str, Any]) -> AppendRequest:
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


__all__ = [
    "converter",
    "decode_append",
    "decode_create",
    "decode_event",
    "decode_object",
    "encode",
    "encode_event",
    "encode_sse_event",
    "format_path",
    "loads",
    "response_json",
    "structure",
    "to_json",
    "tools_json",
]
