# The direct forms of a create's commonest parts besides plain messages (protocol.plain): a
# function tool, and the function calls and their outputs an agent sends back. Each is built at
# once from its JSON object when every key is one of its fields with a value of the plain type
# the converter takes for it (a string, a boolean, an object, null where the field allows it):
# exactly what the converter makes of it, at a fraction of the cost (its union and field hooks
# run for every key, and a turn with tools has all three). Anything else is None, for the
# converter and its errors; an `agent`, say, or an output made of parts.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from protocol.items import FunctionCall, FunctionCallOutput, FunctionTool

_NONE = type(None)
_STR: tuple[type, ...] = (str,)
_STR_OR_NULL: tuple[type, ...] = (str, _NONE)
_BOOL_OR_NULL: tuple[type, ...] = (bool, _NONE)
_OBJECT_OR_NULL: tuple[type, ...] = (dict, _NONE)

#: JSON key -> attrs field, where they differ (`async` is a Python keyword).
_RENAMED = {"async": "async_"}
_KEYS = {name: key for key, name in _RENAMED.items()}


class Form:
    """The direct form of `cls`: its JSON keys with the types each may hold; `required`, the
    keys without a default. `type` must be there, the class's own tag."""

    def __init__(self, cls: type, types: dict[str, tuple[type, ...]]) -> None:
        fields = attrs.fields_dict(cls)
        self.cls, self.tag = cls, fields["type"].default
        self.types = {"type": _STR, **types}
        self.required = tuple(
            key for key in self.types if fields[_RENAMED.get(key, key)].default is attrs.NOTHING
        )
        for name, f in fields.items():  # (a field the form leaves out takes its default)
            if isinstance(f.default, attrs.Factory) or (  # type: ignore[arg-type]
                f.default is attrs.NOTHING and _KEYS.get(name, name) not in self.types
            ):
                raise TypeError(f"{cls.__name__}.{name}: no direct form for it")
        # Each field's JSON key, its default (a required one is never missing here) and its
        # slot setter, in the class's order.
        self.setters: tuple[tuple[str, Any, Callable[[object, Any], None]], ...] = tuple(
            (
                _KEYS.get(name, name),
                None if f.default is attrs.NOTHING else f.default,
                cls.__dict__[name].__set__,
            )
            for name, f in fields.items()
        )

    def __call__(self, value: dict[str, Any]) -> Any:
        """The object `value` stands for, or None if it is anything but plainly right."""
        types = self.types
        for key, item in value.items():
            allowed = types.get(key)
            if allowed is None or type(item) not in allowed:
                return None
        if value.get("type") != self.tag:
            return None
        for key in self.required:
            if key not in value:
                return None
        made: Any = object.__new__(self.cls)
        get = value.get
        for key, default, setter in self.setters:
            setter(made, get(key, default))
        return made


function_tool = Form(
    FunctionTool,
    {
        "name": _STR,
        "description": _STR_OR_NULL,
        "parameters": _OBJECT_OR_NULL,
        "strict": _BOOL_OR_NULL,
        "async": _BOOL_OR_NULL,
    },
)
#: Input items by their `type`.
ITEMS: dict[object, Form] = {
    "function_call": Form(
        FunctionCall,
        {
            "id": _STR_OR_NULL,
            "call_id": _STR,
            "name": _STR,
            "arguments": _STR,
            "status": _STR_OR_NULL,
            "async": _BOOL_OR_NULL,
        },
    ),
    "function_call_output": Form(
        FunctionCallOutput,
        {"id": _STR_OR_NULL, "call_id": _STR, "output": _STR, "status": _STR_OR_NULL},
    ),
}


def item(value: dict[str, Any]) -> Any:
    """The input item `value` stands for, if it is a function call or a call's output of
    plain fields; else None."""
    form = ITEMS.get(value.get("type"))
    return None if form is None else form(value)


def function_tools(values: list[Any]) -> tuple[FunctionTool, ...] | None:
    """`tools` of function tools of plain fields, built at once; None if any is something
    else."""
    out = []
    for value in values:
        if type(value) is not dict:
            return None
        made = function_tool(value)
        if made is None:
            return None
        out.append(made)
    return tuple(out)


__all__ = ["ITEMS", "Form", "function_tool", "function_tools", "item"]
