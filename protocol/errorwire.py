# The wire forms of the `error` event: nested (WebSocket, and a JSON error body's `error`) and
# flat (SSE, spec §2.5), and the hooks protocol.convert registers for it: null keys left out on
# the way out, either form read on the way in.
from collections.abc import Callable, Mapping
from typing import Any

from cattrs import Converter
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from protocol.events import ErrorEvent
from protocol.invalid import wrong_type


def error_event_unstructure(converter: Converter) -> Callable[[ErrorEvent], dict[str, Any]]:
    """An `error` event carries `sequence_number` only when raised inside a response's stream,
    and `status` only when it stands for an HTTP status (spec §1.3): no null keys."""
    inner = make_dict_unstructure_fn(ErrorEvent, converter)

    def hook(event: ErrorEvent) -> dict[str, Any]:
        data: dict[str, Any] = inner(event)
        for key in ("sequence_number", "status"):
            if data[key] is None:
                del data[key]
        if data["error"].get("headers") is None:
            data["error"].pop("headers", None)
        return data

    return hook


def sse_error_json(event: ErrorEvent) -> dict[str, Any]:
    """The `error` event as an SSE stream carries it (spec §2.5, the SDK's ResponseErrorEvent):
    flat, the error's `code`, `message` and `param` beside `sequence_number`. The nested form's
    `type`, `status` and `headers` have no place in it (an SSE error is always inside a response's
    stream: a refusal before it is an HTTP status)."""
    error = event.error
    data: dict[str, Any] = {
        "type": "error",
        "code": error.code,
        "message": error.message,
        "param": error.param,
    }
    if event.sequence_number is not None:
        data["sequence_number"] = event.sequence_number
    return data


#: The error type a flat (SSE) `error` event stands for: it names none, and the errors raised
#: inside a response's stream are the server's (the response's `error` object has no type).
FLAT_ERROR_TYPE = "server_error"


def error_event_structure(converter: Converter) -> Callable[[object, object], ErrorEvent]:
    """An `error` event in either form: nested (WebSocket) or flat (SSE, spec §2.5)."""
    made: list[Callable[[Any, Any], ErrorEvent]] = []  # built at first use, as the factories'

    def hook(value: object, _: object) -> ErrorEvent:
        if not isinstance(value, Mapping):
            raise wrong_type("an object", value)
        if not made:
            made.append(make_dict_structure_fn(ErrorEvent, converter))
        inner = made[0]
        if "error" not in value and "message" in value:
            nested = {
                "type": "error",
                "error": {
                    "type": FLAT_ERROR_TYPE,
                    "code": value.get("code"),
                    "message": value["message"],
                    "param": value.get("param"),
                },
                "sequence_number": value.get("sequence_number"),
            }
            return inner(nested, ErrorEvent)
        return inner(value, ErrorEvent)

    return hook
