# The one cattrs converter of the wire (orjson preconf), built once at import: strict JSON typing
# (no "1" for 1, no "false" for True), `type`-discriminated unions, and the hooks that keep
# optional keys off the wire where the real API omits them. Its hooks raise protocol.invalid's
# Invalid, located by JSON path; protocol.codec is the public face of it.
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.orjson import make_converter

from protocol.agentitems import OMIT_NONE as AGENT_OMIT_NONE
from protocol.clientitems import OMIT_NONE as CLIENT_OMIT_NONE
from protocol.errors import clip
from protocol.errorwire import error_event_structure, error_event_unstructure
from protocol.events import (
    ErrorEvent,
    FailedSteer,
)
from protocol.formats import supported
from protocol.hosted import HOSTED_TOOLS
from protocol.invalid import Invalid, at_path, locate, missing, whole, wrong_type
from protocol.itemrules import INTEGERS, as_integers
from protocol.items import (
    Compaction,
    FunctionCall,
    FunctionTool,
    InputFile,
    InputImage,
    InputText,
    ItemReference,
    Message,
    OtherTool,
    Reasoning,
    Role,
)
from protocol.plain import decoded, decoded_all
from protocol.request import CreateRequest
from protocol.response import Response

T = TypeVar("T")


# -- the converter ------------------------------------------------------------------------------

converter = make_converter(detailed_validation=True, prefer_attrib_converters=False)


def _strict(expected: str, check: Callable[[object], bool]) -> Callable[[object, object], Any]:
    def hook(value: object, _: object) -> Any:
        if not check(value):
            raise wrong_type(expected, value)
        return value

    return hook


converter.register_structure_hook(str, _strict("a string", lambda v: isinstance(v, str)))
converter.register_structure_hook(bool, _strict("a boolean", lambda v: isinstance(v, bool)))


def _integer(value: object, _: object) -> int:
    """An integer, or a whole-number float decoded as the int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if whole(value):
        return int(value)
    raise wrong_type("an integer", value)


converter.register_structure_hook(int, _integer)
converter.register_structure_hook(
    float,
    lambda v, _: (
        float(v)
        if isinstance(v, int | float) and not isinstance(v, bool)
        else _raise(wrong_type("a number", v))
    ),
)

converter.register_structure_hook(Any, lambda v, _: v)


def _raise(exc: Exception) -> Any:
    raise exc


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _literal_hook(t: Any) -> Callable[[object, object], Any]:
    allowed = get_args(t)
    names = supported(allowed)

    def hook(value: object, _: object) -> Any:
        if not any(value == a and type(value) is type(a) for a in allowed):
            raise Invalid(
                (),
                f"Invalid value: {clip(repr(value))}. Supported values are: {names}.",
                "invalid_value",
            )
        return value

    return hook


def _is_sequence(t: Any) -> bool:
    origin = get_origin(t)
    if origin is list:
        return True
    return origin is tuple and len(get_args(t)) == 2 and get_args(t)[1] is Ellipsis


def _sequence_hook(t: Any) -> Callable[[object, object], Any]:
    element = get_args(t)[0]
    make = list if get_origin(t) is list else tuple
    inner = converter.get_structure_hook(element)

    def hook(value: object, _: object) -> Any:
        if not isinstance(value, list):
            raise wrong_type("an array", value)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(inner(v, element))
            except Exception as exc:
                path, template, code = locate(exc)
                raise Invalid((i, *path), template, code) from None
        return make(out)

    return hook


def _is_dict(t: Any) -> bool:
    return t is dict or get_origin(t) is dict


def _dict_hook(t: Any) -> Callable[[object, object], Any]:
    args = get_args(t)
    string_values = len(args) == 2 and args[1] is str

    def hook(value: object, _: object) -> Any:
        if not isinstance(value, dict):
            raise wrong_type("an object", value)
        if string_values:
            for k, v in value.items():
                if not isinstance(v, str):
                    raise at_path((k,), wrong_type("a string", v))
        return value

    return hook


def _is_union(t: Any) -> bool:
    return get_origin(t) in (Union, types.UnionType)


def _type_literals(cls: type) -> tuple[str, ...]:
    field = attrs.fields_dict(cls).get("type")
    if field is None or get_origin(field.type) is not Literal:
        return ()
    return get_args(field.type)


def _describe(members: tuple[Any, ...]) -> str:
    names = []
    for m in members:
        if m is str:
            names.append("a string")
        elif _is_sequence(m):
            names.append("an array")
        elif attrs.has(m) or _is_dict(m):
            names.append("an object")
        elif m is bool:
            names.append("a boolean")
        elif m is int:
            names.append("an integer")
        elif m is float:
            names.append("a number")
        elif _is_literal(m):
            names.append("one of " + ", ".join(repr(a) for a in get_args(m)))
        else:
            names.append(getattr(m, "__name__", str(m)))
    return " or ".join(dict.fromkeys(names))


def _union_hook(t: Any) -> Callable[[object, object], Any]:
    """Structure a union by the JSON kind of the value, then by its `type` discriminator."""
    members = tuple(m for m in get_args(t) if m is not type(None))
    nullable = len(members) != len(get_args(t))
    by_type, fallback = _discriminated(members)
    seq = next((m for m in members if _is_sequence(m)), None)
    mapping = next((m for m in members if _is_dict(m)), None)
    scalars = [m for m in members if m in (str, bool, int, float)]
    literal = next((_literal_hook(m) for m in members if _is_literal(m)), None)
    expected = _describe(members)
    tags = supported(tuple(by_type))

    def hook(value: object, _: object) -> Any:
        if value is None and nullable:
            return None
        if isinstance(value, dict):
            if by_type or fallback is not None:
                return _by_discriminator(value, by_type, fallback, tags)
            if mapping is not None:
                return converter.structure(value, mapping)
        elif isinstance(value, list) and seq is not None:
            return converter.structure(value, seq)
        elif literal is not None:
            return literal(value, t)
        else:
            for s in scalars:
                if isinstance(value, s) and not (s is not bool and isinstance(value, bool)):
                    return value
            if float in scalars and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            if int in scalars and whole(value):
                return int(value)
        raise wrong_type(expected, value)

    return hook


def _discriminated(members: tuple[Any, ...]) -> tuple[dict[str, type], type | None]:
    """The union's attrs members by their `type` literals, and the member without one (taken
    for a tag no member names), if any."""
    by_type: dict[str, type] = {}
    fallback: type | None = None
    for m in members:
        if attrs.has(m):
            literals = _type_literals(m)
            by_type.update(dict.fromkeys(literals, m))
            if not literals:
                fallback = m
    return by_type, fallback


def _by_discriminator(
    value: dict[str, Any], by_type: Mapping[str, type], fallback: type | None, tags: str
) -> Any:
    """A JSON object structured as the member its `type` names (a `role` without `type` is a
    message; no `type` at all, the fallback member)."""
    tag = value.get("type")
    plain = _plain_message(value, tag)
    if plain is not None and by_type.get("message") is Message:
        return plain
    if tag is None and Message in by_type.values() and "role" in value:
        tag = "message"
    elif tag is None and ItemReference in by_type.values() and set(value) <= {"id", "type"}:
        tag = "item_reference"  # its `type` is optional (and nullable) in the SDK
    if tag is None:
        if fallback is None:
            raise at_path(("type",), missing())
        tag = ""
    if not isinstance(tag, str):
        raise at_path(("type",), wrong_type("a string", tag))
    cls = by_type.get(tag, fallback)
    if cls is None:
        raise Invalid(
            ("type",),
            f"Invalid value: {clip(repr(tag))}. Supported values are: {tags}.",
            "invalid_value",
        )
    if value.get("type") is None and tag in ("message", "item_reference"):
        value = {**value, "type": tag}
    return converter.structure(value, cls)


_ROLES = frozenset(get_args(Role))


def _plain_message(value: dict[str, Any], tag: object) -> Message | None:
    """The commonest input item, `{"role": ..., "content": "..."}` (with or without its `type`),
    made at once (or the one made before: protocol.plain): what the converter would make of
    it, at a fifth of the cost."""
    if len(value) != (2 if tag is None else 3) or (tag is not None and tag != "message"):
        return None
    role, content = value.get("role"), value.get("content")
    if type(content) is not str or role not in _ROLES:
        return None
    return decoded(role, content)  # type: ignore[arg-type]


def plain_messages(
    values: list[Any], other: Callable[[dict[str, Any]], Any] | None = None
) -> tuple[Any, ...] | None:
    """A list of plain messages (`_plain_message`'s) as the converter makes it, the items
    built at once (`protocol.plain.decoded_all`), any other object what `other` makes of it;
    None if any item is something else."""
    return decoded_all(values, _ROLES, other)


def _attrs_hook(cls: type) -> Callable[[object, object], Any]:
    inner: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, converter)

    def hook(value: object, _: object) -> Any:
        if not isinstance(value, Mapping):
            raise wrong_type("an object", value)
        return inner(value, cls)

    return hook


#: The fields that take null for their default (docs/protocol-choices.md).
NULL_IS_DEFAULT: dict[type, frozenset[str]] = {
    CreateRequest: frozenset({"store"}),
    InputImage: frozenset({"detail"}),  # null in a tool output's image (the SDK's Optional)
}


def _normalizing_hook(cls: type) -> Callable[[object, object], Any]:
    """Null for a NULL_IS_DEFAULT field is the key left out (the field takes its default); the
    objects of protocol.itemrules.INTEGERS' fields have their whole-number floats made ints."""
    inner = _attrs_hook(cls)
    nulls = NULL_IS_DEFAULT.get(cls, frozenset())
    integers = INTEGERS.get(cls, {})

    def hook(value: object, _: object) -> Any:
        if isinstance(value, Mapping) and any(
            (v is None and k in nulls) or (k in integers and v) for k, v in value.items()
        ):
            value = {
                k: as_integers(v, integers[k]) if k in integers and v else v
                for k, v in value.items()
                if v is not None or k not in nulls
            }
        return inner(value, cls)

    return hook


def _other_tool(value: object, _: object) -> OtherTool:
    if not isinstance(value, dict):
        raise wrong_type("an object", value)
    tag = value.get("type")
    if tag is None:
        raise at_path(("type",), missing())
    if not isinstance(tag, str):
        raise at_path(("type",), wrong_type("a string", tag))
    return OtherTool(type=tag, raw=value)


def _omit_none_hook(cls: type, keys: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    """Optional keys the real API leaves out rather than sending as null."""
    inner: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, converter)

    def hook(obj: Any) -> dict[str, Any]:
        data: dict[str, Any] = inner(obj)
        for key in keys:
            if data.get(key) is None:
                data.pop(key, None)
        return data

    return hook


_OMIT_NONE: tuple[tuple[type, tuple[str, ...]], ...] = (
    (Reasoning, ("encrypted_content", "content", "status", "agent")),
    (Compaction, ("created_by",)),
    (Message, ("phase", "agent")),
    *((tool.item, tool.omit_none) for tool in HOSTED_TOOLS if tool.omit_none),
    (InputText, ("prompt_cache_breakpoint",)),
    (InputImage, ("prompt_cache_breakpoint",)),
    (InputFile, ("detail", "prompt_cache_breakpoint")),
    (Response, ("conversation",)),
    *CLIENT_OMIT_NONE,  # the client's tools other than functions (protocol.clientitems)
    *AGENT_OMIT_NONE,  # a multi-agent response's items (protocol.agentitems)
)
for _cls, _keys in _OMIT_NONE:
    converter.register_unstructure_hook(_cls, _omit_none_hook(_cls, _keys))


def _async_hooks(cls: type) -> None:
    """`async` is a Python keyword: the field is `async_`, the JSON key `async`, left out when
    unset (only async tools and their calls carry it)."""
    inner: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, converter, async_=override(rename="async")
    )

    def structure_hook(value: object, _: object) -> Any:
        if not isinstance(value, Mapping):
            raise wrong_type("an object", value)
        return inner(value, cls)

    converter.register_structure_hook(cls, structure_hook)
    overrides: dict[str, Any] = {"async_": override(rename="async", omit_if_default=True)}
    if cls is FunctionCall:
        overrides["agent"] = override(omit_if_default=True)
    converter.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, converter, **overrides))


converter.register_structure_hook(OtherTool, _other_tool)
converter.register_unstructure_hook(
    FailedSteer, make_dict_unstructure_fn(FailedSteer, converter, id=override(omit_if_default=True))
)
converter.register_unstructure_hook(ErrorEvent, error_event_unstructure(converter))
converter.register_structure_hook(ErrorEvent, error_event_structure(converter))
converter.register_unstructure_hook(OtherTool, lambda t: t.raw or {"type": t.type})
converter.register_structure_hook_factory(_is_literal, _literal_hook)
converter.register_structure_hook_factory(_is_sequence, _sequence_hook)
converter.register_structure_hook_factory(_is_dict, _dict_hook)
converter.register_structure_hook_factory(_is_union, _union_hook)
converter.register_structure_hook_factory(attrs.has, _attrs_hook)
for _cls in (FunctionTool, FunctionCall):
    _async_hooks(_cls)
for _cls in {*NULL_IS_DEFAULT, *INTEGERS}:
    converter.register_structure_hook(_cls, _normalizing_hook(_cls))
