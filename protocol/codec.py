# The wire codec: decode request bodies and frames into protocol types (strict, with the JSON
# path of the first offending field as `param`), decode server events, and encode events and
# objects as JSON bytes, with a fast path for the deltas that make up most of a stream. An event
# is encoded as its transport frames it: `encode_event` for WebSocket frames (and what workers
# relay to each other), `encode_sse_event` for SSE. The converter and its hooks are
# protocol.convert.
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import orjson

from protocol.convert import converter
from protocol.errors import ProtocolError, clip
from protocol.errorwire import sse_error_json
from protocol.events import (
    CLASS_BY_TYPE,
    ArgumentsDeltaEvent,
    ArgumentsDoneEvent,
    ContentPartEvent,
    ErrorEvent,
    Event,
    OutputItemEvent,
    PauseEvent,
    ReasoningSummaryDeltaEvent,
    ReasoningSummaryDoneEvent,
    RefusalDeltaEvent,
    RefusalDoneEvent,
    ResponseEvent,
    TextDeltaEvent,
    TextDoneEvent,
)
from protocol.invalid import Path, format_path, kind_of, to_error
from protocol.items import FunctionCall, FunctionTool, Message, OtherTool, OutputText
from protocol.request import AppendRequest, CreateRequest
from protocol.response import Response, Usage

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


def decode_object(data: bytes | str | Mapping[str, Any], cls: type[T]) -> T:
    """Parse a JSON object body (or an already-parsed mapping) into `cls`."""
    return _structure_object(loads(data) if isinstance(data, bytes | str) else data, cls)


def _structure_object(value: object, cls: type[T]) -> T:
    if not isinstance(value, dict):
        raise ProtocolError(
            message=f"The request body must be a JSON object, but got {kind_of(value)}.",
            code="invalid_type",
        )
    check_depth(value)
    return structure(value, cls)


def decode_create(data: bytes | str | Mapping[str, Any]) -> CreateRequest:
    value = loads(data) if isinstance(data, bytes | str) else data
    return _plain_create(value) or _structure_object(value, CreateRequest)


#: The fields a create often has that hold one plain JSON value, with the type each must have
#: (as the converter's strict hooks require; null is left to the converter).
_PLAIN_CREATE: dict[str, type] = {
    **dict.fromkeys(("model", "input", "instructions", "previous_response_id"), str),
    **dict.fromkeys(("prompt_cache_key", "safety_identifier", "user", "stream_id"), str),
    **dict.fromkeys(("store", "stream", "background", "parallel_tool_calls", "generate"), bool),
    **dict.fromkeys(("max_output_tokens", "max_tool_calls"), int),
}


def _plain_create(value: object) -> CreateRequest | None:
    """A create whose every key is one of _PLAIN_CREATE with a value of its type (and `type`
    `response.create`), built directly: the converter gives the same request, checking each of
    its 39 fields, and it was the largest part of a small create's decoding. Anything else is
    None, for the converter (and its errors)."""
    if type(value) is not dict or "model" not in value:
        return None
    for key, item in value.items():
        if type(item) is not _PLAIN_CREATE.get(key) and (key, item) != ("type", "response.create"):
            return None
    req: CreateRequest = object.__new__(CreateRequest)
    fields = req.__dict__  # (what __init__ does, without a call per field)
    fields.update(_CREATE_DEFAULTS)
    fields.update(value)
    return req


#: Every CreateRequest field's default (all immutable values: shared by every request).
_CREATE_DEFAULTS = {
    f.name: f.default for f in attrs.fields(CreateRequest) if f.default is not attrs.NOTHING
}


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
    cls: tuple(f.name for f in attrs.fields(cls))
    for cls in (
        TextDeltaEvent,
        ArgumentsDeltaEvent,
        TextDoneEvent,
        ArgumentsDoneEvent,
        RefusalDeltaEvent,
        RefusalDoneEvent,
        ReasoningSummaryDeltaEvent,
        ReasoningSummaryDoneEvent,
    )
}
#: Events whose fields are plain JSON values but one item or content part, by class: their
#: fields in wire order, and that one (which alone goes through the converter).
_NESTED: dict[type, tuple[tuple[str, ...], str]] = {
    OutputItemEvent: (tuple(f.name for f in attrs.fields(OutputItemEvent)), "item"),
    ContentPartEvent: (tuple(f.name for f in attrs.fields(ContentPartEvent)), "part"),
}
_last: tuple[Any, bytes] = (None, b"")  # the snapshot encoded last, and its JSON bytes
_RESPONSE_FIELDS = tuple(f.name for f in attrs.fields(Response))
_AS_IS = (str, int, float, bool, type(None), dict)  # the request's dicts are JSON already


def response_json(response: Response) -> dict[str, Any]:
    """A Response in JSON form, as the converter makes it: a field whose value is JSON as it
    is (most are, and always the request's dicts) is taken as it is; items, tools and usage
    take their direct forms where they have one, the rest (errors, say) the converter's. A
    response's lifecycle events each take one, and the converter's pass over every field, with
    its dispatch on each declared type, was most of a first token's encoding when the caches
    are cold (as between the turns of an agent). (The function is generated from the fields:
    `_response_json`.)"""
    return _response_json(response)


def _field_json(name: str, value: Any) -> Any:
    """A Response field's value that is not JSON as it is, in JSON form."""
    if type(value) in (list, tuple):
        if not value:
            return []
        if name == "output":
            return [_item_json(item) for item in value]
        if name == "tools":
            return [_tool_json(tool) for tool in value]
    elif type(value) is Usage:
        return _usage_json(value)
    return converter.unstructure(value)


def _json_of_fields(fields: tuple[str, ...]) -> Any:
    """A function giving the JSON form of a Response field by field (`_field_json` for values not
    JSON as they are; `conversation` left out when None): generated, as attrs generates
    __init__, since a loop over the fields with getattr costs three times as much."""
    lines = ["def to_json(r):", "    data = {}"]
    for name in fields:
        lines.append(f"    v = r.{name}")
        check = "if v is not None:\n        " if name == "conversation" else ""
        value = f'v if type(v) in as_is else other("{name}", v)'
        if name == "output":  # (a list of items, usually)
            value = f"[item(i) for i in v] if type(v) is list else {value}"
        elif name == "tools":  # (a tuple of tools)
            value = f"[tool(t) for t in v] if type(v) is tuple else {value}"
        lines.append(f'    {check}data["{name}"] = {value}')
    lines.append("    return data")
    namespace: dict[str, Any] = {
        "as_is": frozenset(_AS_IS),
        "other": _field_json,
        "item": _item_json,
        "tool": _tool_json,
    }
    exec("\n".join(lines), namespace)  # the source is built from the class's own field names
    return namespace["to_json"]


def _item_json(item: Any) -> Any:
    """An output item in JSON form: its direct form when it has one, else the converter's."""
    direct = _DIRECT.get(type(item))
    done = direct(item) if direct is not None else None
    return converter.unstructure(item) if done is None else done


def _usage_json(usage: Usage) -> dict[str, Any]:
    """Usage in JSON form, as the converter makes it (every field is a number)."""
    cached = usage.input_tokens_details
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": cached.cached_tokens,
            "cache_write_tokens": cached.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.output_tokens_details.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _output_text_json(part: OutputText) -> dict[str, Any] | None:
    """An output text part without annotations or logprobs in JSON form, as the converter
    makes it (None for one with either: the converter's case)."""
    if part.annotations or part.logprobs:
        return None
    return {"type": part.type, "text": part.text, "annotations": [], "logprobs": []}


def _message_json(item: Message) -> dict[str, Any] | None:
    """A message whose parts are plain output text in JSON form, as the converter makes it
    (None for any other: the converter's case). A message's item events are on the way to
    each first token, where the converter's dispatch costs most (the caches are cold)."""
    if type(item.content) is not tuple:
        return None
    parts = []
    for part in item.content:
        done = _output_text_json(part) if type(part) is OutputText else None
        if done is None:
            return None
        parts.append(done)
    data: dict[str, Any] = {"type": item.type, "id": item.id, "role": item.role, "content": parts}
    data["status"] = item.status
    if item.phase is not None:
        data["phase"] = item.phase
    if item.agent is not None:
        data["agent"] = {"agent_name": item.agent.agent_name}
    return data


def _function_call_json(item: FunctionCall) -> dict[str, Any]:
    """A function call in JSON form, as the converter makes it (`async` and `agent` only when
    set)."""
    data: dict[str, Any] = {
        "type": item.type,
        "id": item.id,
        "call_id": item.call_id,
        "name": item.name,
        "arguments": item.arguments,
        "status": item.status,
    }
    if item.async_ is not None:
        data["async"] = item.async_
    if item.agent is not None:
        data["agent"] = {"agent_name": item.agent.agent_name}
    return data


def _pause_json(event: PauseEvent) -> dict[str, Any]:
    """`response.done` in JSON form, as the converter makes it."""
    return {
        "type": event.type,
        "sequence_number": event.sequence_number,
        "response_id": event.response_id,
        "pending_calls": [
            {"call_id": c.call_id, "name": c.name, "item_id": c.item_id}
            for c in event.pending_calls
        ],
        "usage": _usage_json(event.usage),
    }


def _tool_json(tool: Any) -> Any:
    """A tool of the request in JSON form, as the converter makes it: a function's field by
    field (its parameters are the request's JSON), any other as the request sent it."""
    if type(tool) is FunctionTool:
        data = {
            "type": tool.type,
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": tool.strict,
        }
        if tool.async_ is not None:
            data["async"] = tool.async_
        return data
    if type(tool) is OtherTool:
        return tool.raw or {"type": tool.type}
    return converter.unstructure(tool)


#: Items and parts with a direct JSON form for the common case (None: the converter's).
_DIRECT: dict[type, Any] = {
    Message: _message_json,
    OutputText: _output_text_json,
    FunctionCall: _function_call_json,
}
_response_json = _json_of_fields(_RESPONSE_FIELDS)


def _snapshot(response: Response) -> bytes:
    """A lifecycle event's response as JSON bytes. `response.created` and `.in_progress` carry
    one snapshot (with the instructions and tools, often tens of KB), so the second reuses the
    first's bytes; a snapshot is never changed after it is taken. (The pair is replaced whole:
    servers in several threads of one process share it.)"""
    global _last
    last = _last
    if last[0] is response:
        return last[1]
    encoded = orjson.dumps(response_json(response))
    _last = (response, encoded)
    return encoded


def _lifecycle_event(event: ResponseEvent, stream_id: str | None) -> bytes:
    """A lifecycle event as orjson would encode its JSON form, with the snapshot's bytes
    spliced in (its `type` is one of the event's literal names: nothing to escape)."""
    head = b'{"type":"%s","sequence_number":%d,"response":' % (
        event.type.encode(),
        event.sequence_number,
    )
    if stream_id is None:
        return head + _snapshot(event.response) + b"}"
    return head + _snapshot(event.response) + b',"stream_id":' + orjson.dumps(stream_id) + b"}"


def encode_event(event: Event, stream_id: str | None = None) -> bytes:
    """One event as JSON bytes, with `stream_id` added when the create named a lane."""
    data: dict[str, Any]
    fields = _PLAIN.get(type(event))
    if fields is not None:  # a delta: skip the converter
        data = {name: getattr(event, name) for name in fields}
    elif type(event) is ResponseEvent:
        return _lifecycle_event(event, stream_id)
    elif type(event) is PauseEvent:  # an append turn's last event
        data = _pause_json(event)
    elif (nested := _NESTED.get(type(event))) is not None:  # an item or part event
        names, inner = nested
        data = {name: getattr(event, name) for name in names}
        value = data[inner]
        direct = _DIRECT.get(type(value))
        done = direct(value) if direct is not None else None
        data[inner] = converter.unstructure(value) if done is None else done
    else:
        data = converter.unstructure(event)
    if stream_id is not None:
        data["stream_id"] = stream_id
    return orjson.dumps(data)


def encode_sse_event(event: Event) -> bytes:
    """One event as the JSON of an SSE `data:` line. The transports differ only in how they
    frame the `error` event: SSE sends the flat form (spec §2.5, the SDK's ResponseErrorEvent),
    WebSocket the nested one `encode_event` gives (spec §1.3); every other event is the same."""
    if type(event) is ErrorEvent:
        return orjson.dumps(sse_error_json(event))
    return encode_event(event)


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
]
