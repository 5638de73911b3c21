# The rules of an input item's fields that its types alone do not hold, as tables: the values of
# each enumerated field (the SDK's Literals, types/responses/response_input_param.py and the part
# and annotation params it names), the enumerated keys and the integers of the JSON objects an
# item keeps as sent, the indices that cannot be negative, and the parts that need one of several
# keys. check_items walks decoded items (their parts, annotations and other nested objects) and
# raises the first rule broken as a ProtocolError naming the field (`input[0].content[1].detail`).
# They hold in both modes, wherever items come in: a create (protocol.validate), an append or
# inject (protocol.lifetime) and a conversation's items (protocol.conversations), so that no
# stored item breaks the schema it is echoed in. Pure, no I/O.
from __future__ import annotations

import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from protocol.clientitems import CustomToolCall, CustomToolCallOutput, ShellCall
from protocol.errors import invalid
from protocol.formats import below_min, one_of
from protocol.invalid import kind_of, whole
from protocol.items import (
    CodeInterpreterCall,
    ComputerCall,
    ComputerCallOutput,
    ContainerFileCitation,
    FileCitation,
    FilePath,
    FileSearchCall,
    FunctionCall,
    FunctionCallOutput,
    ImageGenerationCall,
    InputFile,
    InputImage,
    InputText,
    McpCall,
    Message,
    OutputText,
    Reasoning,
    UrlCitation,
    WebSearchCall,
)

STATUS = ("in_progress", "completed", "incomplete")
IMAGE_DETAILS = ("low", "high", "auto", "original")  # types/responses/image_detail.py
FILE_DETAILS = ("auto", "low", "high")
BREAKPOINT = {"mode": ("explicit",), "ttl": ("30m", "12h")}  # a part's prompt_cache_breakpoint
COMPUTER_ACTIONS = (
    "click",
    "double_click",
    "drag",
    "keypress",
    "move",
    "screenshot",
    "scroll",
    "type",
    "wait",
)
BUTTONS = ("left", "right", "wheel", "back", "forward")

#: The enumerated fields of each item and part class: field -> the values it may take (None,
#: where the field is optional, is always allowed).
VALUES: dict[type, dict[str, tuple[str, ...]]] = {
    Message: {"status": STATUS},
    FunctionCall: {"status": STATUS},
    FunctionCallOutput: {"status": STATUS},
    CustomToolCall: {"status": STATUS},
    CustomToolCallOutput: {"status": STATUS},
    Reasoning: {"status": STATUS},
    ComputerCall: {"status": STATUS},
    ComputerCallOutput: {"status": STATUS},
    WebSearchCall: {"status": ("in_progress", "searching", "completed", "failed", "incomplete")},
    FileSearchCall: {"status": ("in_progress", "searching", "completed", "incomplete", "failed")},
    CodeInterpreterCall: {
        "status": ("in_progress", "completed", "incomplete", "interpreting", "failed")
    },
    McpCall: {"status": ("in_progress", "completed", "incomplete", "calling", "failed")},
    ImageGenerationCall: {
        "status": ("in_progress", "completed", "generating", "failed"),
        "background": ("transparent", "opaque", "auto"),
        "output_format": ("png", "webp", "jpeg", "gif", "svg"),
        "quality": ("low", "medium", "high", "xhigh", "max", "auto"),
    },
    InputImage: {"detail": IMAGE_DETAILS},
    InputFile: {"detail": FILE_DETAILS},
}
#: The enumerated keys of the JSON objects (or arrays of objects) an item holds as sent:
#: field -> {key: values}.
OBJECTS: dict[type, dict[str, dict[str, tuple[str, ...]]]] = {
    InputText: {"prompt_cache_breakpoint": BREAKPOINT},
    InputImage: {"prompt_cache_breakpoint": BREAKPOINT},
    InputFile: {"prompt_cache_breakpoint": BREAKPOINT},
    ComputerCall: {"action": {"type": COMPUTER_ACTIONS, "button": BUTTONS}},
    ComputerCallOutput: {"output": {"type": ("computer_screenshot",)}},
    ShellCall: {"environment": {"type": ("local", "container_reference")}},
    McpCall: {"error": {"type": ("mcp_protocol_error", "mcp_tool_execution_error", "http_error")}},
    CodeInterpreterCall: {"outputs": {"type": ("logs", "image")}},
}
#: The integers inside the JSON values an item holds as sent: field -> the paths to them from
#: the field's value (`path[].x`: key `x` of each object of the array `path`; `[]` alone, each
#: element of an array). A whole-number float is taken (and decoded as the int,
#: protocol.convert); anything else is refused as the decoder refuses a non-integer.
INTEGERS: dict[type, dict[str, tuple[str, ...]]] = {
    ComputerCall: {"action": ("x", "y", "scroll_x", "scroll_y", "path[].x", "path[].y")},
    McpCall: {"error": ("code",)},  # of an mcp_protocol_error or http_error
    OutputText: {"logprobs": ("[].bytes[]", "[].top_logprobs[].bytes[]")},
}
#: Integer fields that cannot be negative (an annotation's character and file indices).
NON_NEGATIVE: dict[type, tuple[str, ...]] = {
    UrlCitation: ("start_index", "end_index"),
    FileCitation: ("index",),
    ContainerFileCitation: ("start_index", "end_index"),
    FilePath: ("index",),
}
#: Parts that need at least one of these keys (what the file is).
ONE_OF: dict[type, tuple[str, ...]] = {InputFile: ("file_id", "file_data", "file_url")}


def check_items(items: Iterable[Any], where: str) -> None:
    """Every rule of the tables, over the items of `where` (`input`, `instructions`)."""
    for i, item in enumerate(items):
        if type(item) is Message and item.status is None and type(item.content) is str:
            continue  # a plain message, the commonest item: none of its fields has a rule
        plan = _plan(type(item))
        if plan is not None:
            _check(item, plan, f"{where}[{i}]")


@attrs.frozen
class _Plan:
    """What _check looks at in an object of one class (the tables' rows for it, and the
    fields that may hold attrs objects)."""

    values: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]
    objects: tuple[tuple[str, Mapping[str, tuple[str, ...]]], ...]
    integers: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]  # field, each spec's steps
    non_negative: tuple[str, ...]
    needs: tuple[str, ...]
    nested: tuple[str, ...]


_PLANS: dict[type, _Plan | None] = {}


def _plan(cls: type) -> _Plan | None:
    """The class's plan (None: nothing to check in it or below it), built once."""
    if cls in _PLANS:
        return _PLANS[cls]
    values = VALUES.get(cls, {})
    nested = tuple(
        f.name for f in (attrs.fields(cls) if attrs.has(cls) else ()) if _may_hold(f.type)
    )
    plan = _Plan(
        values=tuple((k, frozenset(v), v) for k, v in values.items()),
        objects=tuple(OBJECTS.get(cls, {}).items()),
        integers=tuple(
            (k, tuple(_steps(spec) for spec in v)) for k, v in INTEGERS.get(cls, {}).items()
        ),
        non_negative=NON_NEGATIVE.get(cls, ()),
        needs=ONE_OF.get(cls, ()),
        nested=nested,
    )
    rules = (plan.values, plan.objects, plan.integers, plan.non_negative, plan.needs, nested)
    empty = not any(rules)
    _PLANS[cls] = None if empty else plan
    return _PLANS[cls]


def _may_hold(hint: Any) -> bool:
    """Whether a field of this type may hold an attrs object with rules (in a tuple or not)."""
    if isinstance(hint, type) and attrs.has(hint):
        tables: tuple[Mapping[type, Any], ...] = (VALUES, OBJECTS, INTEGERS, NON_NEGATIVE, ONE_OF)
        return any(hint in t for t in tables) or any(_may_hold(f.type) for f in attrs.fields(hint))
    return any(_may_hold(arg) for arg in typing.get_args(hint))


def _check(obj: Any, plan: _Plan, param: str) -> None:
    for name, allowed, ordered in plan.values:
        value = getattr(obj, name)
        if value is not None and value not in allowed:
            one_of(value, ordered, f"{param}.{name}")
    for name, keys in plan.objects:
        value = getattr(obj, name)
        if value is not None:
            _check_object(value, keys, f"{param}.{name}")
    for name, specs in plan.integers:
        value = getattr(obj, name)
        for steps in specs:
            _check_integers(value, steps, f"{param}.{name}")
    for name in plan.non_negative:
        value = getattr(obj, name)
        if value < 0:
            raise below_min(f"{param}.{name}", value, 0)
    if plan.needs and all(getattr(obj, k) is None for k in plan.needs):
        needs = plan.needs
        names = ", ".join(f"'{k}'" for k in needs[:-1]) + f" or '{needs[-1]}'"
        raise invalid(
            f"Invalid '{param}': an {obj.type} part needs one of {names}.",
            param=param,
            code="missing_required_parameter",
        )
    for name in plan.nested:
        value = getattr(obj, name)
        if isinstance(value, tuple):
            for j, inner in enumerate(value):
                inner_plan = _plan(type(inner))
                if inner_plan is not None:
                    _check(inner, inner_plan, f"{param}.{name}[{j}]")
        elif value is not None and (inner_plan := _plan(type(value))) is not None:
            _check(value, inner_plan, f"{param}.{name}")


def _steps(spec: str) -> tuple[str, ...]:
    """An INTEGERS spec as steps: `path[].x` is ("path", "[]", "x")."""
    return tuple(re.findall(r"\[\]|[^.\[\]]+", spec))


def _check_integers(value: Any, steps: tuple[str, ...], param: str) -> None:
    """The values `steps` reach from `value` (keys of objects, `[]` each element of an array)
    are integers: ints, or floats that are whole numbers."""
    if not steps:
        if value is not None and not whole_number(value):
            raise invalid(
                f"Invalid type for '{param}': expected an integer, but got {kind_of(value)} "
                "instead.",
                param=param,
                code="invalid_type",
            )
    elif steps[0] == "[]":
        for j, inner in enumerate(value if isinstance(value, list | tuple) else ()):
            _check_integers(inner, steps[1:], f"{param}[{j}]")
    elif isinstance(value, Mapping):
        _check_integers(value.get(steps[0]), steps[1:], f"{param}.{steps[0]}")


def whole_number(value: object) -> bool:
    """An int, or a float that is one (`2.0`, in the 64-bit range)."""
    return (isinstance(value, int) and not isinstance(value, bool)) or whole(value)


def as_integers(value: Any, specs: tuple[str, ...]) -> Any:
    """`value` with the whole-number floats `specs` reach (INTEGERS' form) made ints."""
    for spec in specs:
        value = _as_integers(value, _steps(spec))
    return value


def _as_integers(value: Any, steps: tuple[str, ...]) -> Any:
    if not steps:
        return int(value) if whole(value) else value
    if steps[0] == "[]":
        if isinstance(value, list | tuple):
            return [_as_integers(v, steps[1:]) for v in value]
        return value
    if isinstance(value, Mapping) and steps[0] in value:
        return {**value, steps[0]: _as_integers(value[steps[0]], steps[1:])}
    return value


def _check_object(value: Any, keys: Mapping[str, tuple[str, ...]], param: str) -> None:
    """An object's enumerated keys, or each object's of an array."""
    if isinstance(value, tuple | list):
        for j, inner in enumerate(value):
            _check_object(inner, keys, f"{param}[{j}]")
    elif isinstance(value, Mapping):
        for key, allowed in keys.items():
            one_of(value.get(key), allowed, f"{param}.{key}")


__all__ = [
    "IMAGE_DETAILS",
    "INTEGERS",
    "NON_NEGATIVE",
    "OBJECTS",
    "ONE_OF",
    "VALUES",
    "as_integers",
    "check_items",
]
