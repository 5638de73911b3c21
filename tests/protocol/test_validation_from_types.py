# Request validation checked against the installed `openai` SDK's param types: its TypedDicts
# (every input item of ResponseInputItemParam, with their content parts and annotations, and the
# create's scalar and enumerated parameters) are walked with get_type_hints, and each field gives
# cases: a Literal's every value is accepted and a bogus one refused at that field's `param`; an
# integer takes a whole-number float (normalised to int) and refuses a fractional one; an
# Optional field takes null. The cases run through a strict server's checks (keys, decode,
# rules), as `rollout serve` runs them.
from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Union

import attrs
import pytest
import typing_extensions
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import response_create_params, response_input_param

from protocol import codec, strictness
from protocol.errors import ProtocolError
from protocol.invalid import format_path
from protocol.request import CreateRequest
from protocol.validate import validate_create

Path = tuple[str | int, ...]
BOGUS = "bogus_value"
MAX_DEPTH = 6  # nesting walked below an item (every SDK input shape is shallower)

#: Input items of the SDK that this server does not take (refused as an unknown `type`); the
#: test checks the list is exact, so an item the decoder learns must leave it.
UNSUPPORTED_ITEMS = frozenset(
    {
        "additional_tools",
        "compaction_trigger",
        "configuration_update",
        "program",
        "program_output",
        "tool_search_call",
        "tool_search_output",
    }
)
#: (item type, path in the item) of fields whose SDK type the server knowingly differs from,
#: with why (docs/protocol-choices.md): skipped by the generated cases.
DIFFERS: dict[tuple[str, Path], str] = {
    ("function_call_output", ("call_id",)): "an output must name its call (Optional in the SDK "
    "only for outputs of programmatic calls, which the server does not run)",
    ("local_shell_call_output", ("id",)): "the call it answers may be named by `call_id` "
    "instead (clientitems.LocalShellCallOutput)",
}
#: Keys an object is built with beyond the SDK's required ones, by its `type`: what the server
#: needs of it (docs/protocol-choices.md).
EXTRA: dict[str, dict[str, Any]] = {
    "function_call_output": {"call_id": "c"},  # (DIFFERS)
    "input_file": {"file_id": "file_1", "file_url": "https://x/f.pdf"},  # one of three keys
    "search": {"query": "q"},  # a web search call's action: the server keeps its query
}
#: Fields of the SDK's items that the server does not keep (it neither stores nor echoes them),
#: by the item's `type` and the field: their values are not checked.
DROPPED: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output",
            "shell_call",
            "shell_call_output",
            "apply_patch_call",
            "apply_patch_call_output",
        ),
        frozenset({"caller", "namespace", "name"}),
    ),
    "computer_call": frozenset({"actions"}),
    "image_generation_call": frozenset({"action", "error", "svg_usage"}),
}
#: Create parameters not walked here: items (`input`, `instructions`) are walked one by one
#: above; tools are echoed as sent (only their `type` is checked); `tool_choice` names tools
#: (test_strictness, test_sans_io); `stream` is Literal[True] or Literal[False], a boolean; the
#: others are objects the server passes through or refuses (`background` has its own rules).
CREATE_SKIPPED = frozenset(
    {
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "metadata",
        "model",
        "moderation",
        "access_programs",
        "background_options",
        "image",
        "stream",
        "background",
    }
)
#: A create parameter the server requires other parameters for: what it is sent with.
CREATE_WITH: dict[str, dict[str, Any]] = {"stream_options": {"stream": True}}
#: Integer values that a field's bounds need (the generic value is 2).
INTEGERS: dict[str, int] = {"max_output_tokens": 100}


# -- walking the types --------------------------------------------------------------------------


def hints(cls: type) -> dict[str, Any]:
    return typing_extensions.get_type_hints(cls)


def required(cls: type) -> frozenset[str]:
    """The TypedDict's Required keys (its __required_keys__ misses them under the SDK's
    `from __future__ import annotations`)."""
    full = typing_extensions.get_type_hints(cls, include_extras=True)
    return frozenset(k for k, h in full.items() if typing.get_origin(h) is typing.Required)


def is_typeddict(t: Any) -> bool:
    return typing_extensions.is_typeddict(t)


def members(t: Any) -> tuple[Any, ...]:
    return typing.get_args(t) if typing.get_origin(t) in (Union, types.UnionType) else (t,)


def element(t: Any) -> Any | None:
    """The element type of a list/Iterable/Sequence hint, else None."""
    if typing.get_origin(t) in (list, collections.abc.Iterable, collections.abc.Sequence):
        return typing.get_args(t)[0]
    return None


def build(t: Any, depth: int = 0) -> Any:
    """A minimal valid JSON value of hint `t` (TypedDicts with their required keys, and EXTRA's
    keys)."""
    choices = [m for m in members(t) if m is not type(None)]
    structured = [m for m in choices if is_typeddict(m) or element(m) is not None]
    m = (structured or choices)[0]
    if typing.get_origin(m) is Literal:
        return typing.get_args(m)[0]
    if is_typeddict(m):
        out = {k: build(h, depth + 1) for k, h in hints(m).items() if k in required(m)}
        return {**out, **EXTRA.get(out.get("type", ""), {})}
    if element(m) is not None:
        return [build(element(m), depth + 1)] if depth < MAX_DEPTH else []
    return {str: "x", bool: True, int: 2, float: 0.5}.get(m, {})


@attrs.frozen
class Case:
    id: str
    value: Any  # the item (or create parameter) with the change
    path: Path  # where the change is, inside it
    refused: str | None  # the error code expected there; None: accepted
    whole: bool = False  # the change is a whole-number float, decoded as an int


def cases(t: Any, depth: int = 0) -> Iterator[Case]:
    """The changes to a value of hint `t` (each a whole value with one field changed)."""
    choices = members(t)
    if type(None) in choices:
        yield Case("null", None, (), None)
    for m in choices:
        if m is type(None):
            continue
        if typing.get_origin(m) is Literal:
            values = [v for v in typing.get_args(m) if isinstance(v, str)]
            if len(values) > 1:
                yield from (Case(v, v, (), None) for v in values)
            if not any(x is str for x in choices):
                yield Case("bogus", BOGUS, (), "invalid_value")
        elif m is int:
            yield Case("whole-float", 2.0, (), None, whole=True)
            yield Case("fraction", 2.5, (), "invalid_type")
        elif is_typeddict(m) and depth < MAX_DEPTH:
            base = build(m)
            for key, hint in hints(m).items():
                if key in DROPPED.get(base.get("type", ""), ()):
                    continue
                for c in cases(hint, depth + 1):
                    value = {**base, key: c.value}
                    if c.value is None and key not in required(m) and key not in base:
                        value = {**base, key: None}
                    tag = base.get("type", m.__name__)
                    yield attrs.evolve(
                        c, id=f"{tag}.{key}.{c.id}", value=value, path=(key, *c.path)
                    )
        elif element(m) is not None and depth < MAX_DEPTH:
            for c in cases(element(m), depth + 1):
                yield attrs.evolve(c, value=[c.value], path=(0, *c.path))


def item_cases() -> list[Case]:
    out: list[Case] = []
    for member in typing.get_args(response_input_param.ResponseInputItemParam):
        tag = build(member).get("type", "message")
        if tag in UNSUPPORTED_ITEMS:
            continue
        for c in cases(member):
            if (tag, c.path[:1]) in DIFFERS or (tag, c.path) in DIFFERS:
                continue
            out.append(attrs.evolve(c, id=f"{member.__name__}:{c.id}"))
    return out


def create_cases() -> list[Case]:
    out: list[Case] = []
    base = response_create_params.ResponseCreateParamsNonStreaming
    for key, hint in hints(base).items():
        if key in CREATE_SKIPPED:
            continue
        for c in cases(hint):
            value = c.value
            if c.path == () and isinstance(value, float) and c.whole:
                value = float(INTEGERS.get(key, 2))
            out.append(attrs.evolve(c, id=f"{key}:{c.id}", value=value, path=(key, *c.path)))
    return out


# -- checking a case ----------------------------------------------------------------------------


def strict_check(body: dict[str, Any]) -> CreateRequest:
    """A create as a strict server checks it: unknown keys, then decode, then the rules."""
    strictness.check_params(body, websocket=False)
    req = codec.decode_create(body)
    validate_create(req, websocket=False, strict=True)
    return req


def at(value: Any, path: Path) -> Any:
    for step in path:
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and len(value) > step else None
        else:
            value = value.get(step) if isinstance(value, Mapping) else None
    return value


def run(case: Case, body: dict[str, Any], param: str, encoded: Any) -> None:
    if case.refused is None:
        req = strict_check(body)
        if case.whole:
            found = at(encoded(req), case.path)
            assert found is None or ((type(found) is int and found == 2) or found == 100), found
        return
    with pytest.raises(ProtocolError) as info:
        strict_check(body)
    error = info.value
    assert (error.status, error.type) == (400, "invalid_request_error")
    assert (error.param, error.code) == (param, case.refused), error.message


ITEMS = item_cases()
CREATES = create_cases()


@pytest.mark.parametrize("case", ITEMS, ids=[c.id for c in ITEMS])
def test_input_item_field(case: Case) -> None:
    body = {"model": "gpt-test", "input": [case.value]}
    param = format_path(("input", 0, *case.path))

    def encoded(req: CreateRequest) -> Any:
        assert isinstance(req.input, tuple)
        return codec.to_json(req.input[0])

    run(case, body, param, encoded)


@pytest.mark.parametrize("case", CREATES, ids=[c.id for c in CREATES])
def test_create_parameter(case: Case) -> None:
    key = str(case.path[0])
    body = {"model": "gpt-test", "input": "hi", **CREATE_WITH.get(key, {}), key: case.value}

    def encoded(req: CreateRequest) -> Any:
        return {key: codec.to_json(getattr(req, key))}

    run(case, body, format_path(case.path), encoded)


def test_the_walk_covers_enums_integers_and_nulls() -> None:
    kinds = {(c.refused, c.whole, c.id.endswith("null")) for c in ITEMS + CREATES}
    assert kinds >= {("invalid_value", False, False), ("invalid_type", False, False)}
    assert (None, True, False) in kinds and (None, False, True) in kinds
    assert len(ITEMS) > 200 and len(CREATES) > 20  # the SDK's types were found


def test_unsupported_items_are_exactly_those_refused() -> None:
    refused = set()
    for member in typing.get_args(response_input_param.ResponseInputItemParam):
        item = build(member)
        try:
            codec.decode_create({"model": "gpt-test", "input": [item]})
        except ProtocolError as exc:
            if exc.param == "input[0].type":
                refused.add(item["type"])
    assert refused == UNSUPPORTED_ITEMS


# -- hypothesis: any whole number, any fraction ---------------------------------------------------

INTEGER_FIELDS = ("max_output_tokens", "max_tool_calls", "top_logprobs")
LEAST = {"max_output_tokens": 16, "max_tool_calls": 0, "top_logprobs": 0}
MOST = {"max_output_tokens": 10**6, "max_tool_calls": 10**6, "top_logprobs": 20}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(INTEGER_FIELDS), st.data())
def test_whole_floats_are_integers(field: str, data: st.DataObject) -> None:
    n = data.draw(st.integers(LEAST[field], MOST[field]))
    req = strict_check({"model": "gpt-test", "input": "hi", field: float(n)})
    assert type(getattr(req, field)) is int and getattr(req, field) == n


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(INTEGER_FIELDS),
    st.floats(0, 20, allow_nan=False).filter(lambda f: not f.is_integer()),
)
def test_fractions_are_refused(field: str, value: float) -> None:
    with pytest.raises(ProtocolError) as info:
        strict_check({"model": "gpt-test", "input": "hi", field: value})
    assert (info.value.param, info.value.code) == (field, "invalid_type")
    assert info.value.message == (
        f"Invalid type for '{field}': expected an integer, but got a decimal instead."
    )


# -- hypothesis: nulls together ------------------------------------------------------------------


def nullable(cls: Any) -> tuple[str, ...]:
    """The keys of a TypedDict whose type takes None (the SDK's Optional fields)."""
    tag = build(cls).get("type", "")
    found = (k for k, h in hints(cls).items() if type(None) in members(h))
    return tuple(k for k in found if k not in DROPPED.get(tag, ()) and (tag, (k,)) not in DIFFERS)


def supported(cls: Any) -> bool:
    return build(cls).get("type", "message") not in UNSUPPORTED_ITEMS


ITEM_TYPES = [
    m for m in typing.get_args(response_input_param.ResponseInputItemParam) if supported(m)
]
TOOL_OUTPUT_PARTS = typing.get_args(
    typing_extensions.get_type_hints(response_input_param.FunctionCallOutput)["output"]
)[1]  # str | list of parts: the parts' union
PART_TYPES = members(element(TOOL_OUTPUT_PARTS))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ITEM_TYPES), st.data())
def test_an_items_nullable_fields_take_null_together(cls: Any, data: st.DataObject) -> None:
    keys = data.draw(st.sets(st.sampled_from(nullable(cls))) if nullable(cls) else st.just(set()))
    item = {**build(cls), **dict.fromkeys(keys)}
    strict_check({"model": "gpt-test", "input": [item]})


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PART_TYPES), st.data())
def test_a_tool_output_parts_nullable_fields_take_null(cls: Any, data: st.DataObject) -> None:
    """Nulls in a function call output's parts (the SDK's *ContentParam types), where clients
    send them most: any together, but never all of an input_file's file keys (ONE_OF)."""
    keys = set(data.draw(st.sets(st.sampled_from(nullable(cls)))))
    part = {**build(cls), **dict.fromkeys(keys)}
    call = {"type": "function_call_output", "call_id": "c", "output": [part]}
    if part["type"] == "input_file" and not any(part.get(k) for k in ("file_id", "file_url")):
        with pytest.raises(ProtocolError) as info:
            strict_check({"model": "gpt-test", "input": [call]})
        assert info.value.param == "input[0].output[0]"
        return
    strict_check({"model": "gpt-test", "input": [call]})
