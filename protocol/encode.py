# The encode side of the wire codec (protocol.codec, which re-exports it): events and objects
# as JSON bytes, exactly as the converter (protocol.convert) would make them, by direct forms
# for what a stream is made of: each plain event class's JSON is built by a function generated
# from its fields, items and parts that have one take a direct form, and a lifecycle event
# splices its snapshot's bytes. An event is encoded as its transport frames it: `encode_event`
# for WebSocket frames (and what workers relay to each other), `encode_sse_event` for SSE.
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import orjson

from protocol.convert import converter
from protocol.errorwire import sse_error_json
from protocol.events import (
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
from protocol.items import FunctionCall, FunctionTool, Message, OtherTool, OutputText
from protocol.response import Response, Usage


def to_json(obj: Any) -> Any:
    """The JSON-ready form of a protocol object (dicts, lists, scalars)."""
    return converter.unstructure(obj)


def encode(obj: Any) -> bytes:
    return orjson.dumps(converter.unstructure(obj))


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
    """An output item, or an event's item or content part, in JSON form: its direct form when
    it has one, else the converter's."""
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


def _error_json(event: ErrorEvent) -> dict[str, Any]:
    """The `error` event in its nested JSON form, as the converter makes it (no null
    `status`, `sequence_number` or `headers`: protocol.errorwire)."""
    error = event.error
    payload: dict[str, Any] = {
        "type": error.type,
        "code": error.code,
        "message": error.message,
        "param": error.param,
    }
    if error.headers is not None:
        payload["headers"] = dict(error.headers)
    data: dict[str, Any] = {"type": event.type, "error": payload}
    if event.status is not None:
        data["status"] = event.status
    if event.sequence_number is not None:
        data["sequence_number"] = event.sequence_number
    return data


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


def tools_json(tools: Iterable[Any]) -> list[Any]:
    """A request's tools in JSON form, as the converter makes them (each one's direct form)."""
    return [_tool_json(tool) for tool in tools]


#: Items and parts with a direct JSON form for the common case (None: the converter's).
_DIRECT: dict[type, Any] = {
    Message: _message_json,
    OutputText: _output_text_json,
    FunctionCall: _function_call_json,
}
_response_json = _json_of_fields(_RESPONSE_FIELDS)


def _json_of_event(cls: type, nested: str | None = None) -> Callable[[Any], dict[str, Any]]:
    """A function giving the JSON form of an event of `cls`, whose fields are plain JSON values
    (strings, numbers, tuples of them) but `nested` (an item or a content part, given its
    direct form where it has one, else the converter's): generated, as `_json_of_fields`."""
    lines = ["def to_json(e):", "    return {"]
    for f in attrs.fields(cls):
        value = f"part(e.{f.name})" if f.name == nested else f"e.{f.name}"
        lines.append(f'        "{f.name}": {value},')
    lines.append("    }")
    namespace: dict[str, Any] = {"part": _item_json}
    exec("\n".join(lines), namespace)  # the source is built from the class's own field names
    return namespace["to_json"]


#: The events encoded without the converter, by class: plain ones field by field (generated),
#: an item's or a part's with the item's direct form, the append shape's pause.
_EVENTS: dict[type, Callable[[Any], dict[str, Any]]] = {
    **{
        cls: _json_of_event(cls)
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
    },
    OutputItemEvent: _json_of_event(OutputItemEvent, "item"),
    ContentPartEvent: _json_of_event(ContentPartEvent, "part"),
    PauseEvent: _pause_json,
    ErrorEvent: _error_json,
}


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
    direct = _EVENTS.get(type(event))
    if direct is not None:  # a delta, a done, an item or part event, a pause
        data = direct(event)
    elif type(event) is ResponseEvent:
        return _lifecycle_event(event, stream_id)
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
    "encode",
    "encode_event",
    "encode_sse_event",
    "response_json",
    "to_json",
    "tools_json",
]
