# The rules of a request's output knobs: `text` (verbosity, and a `text.format` of type text,
# json_object or json_schema, with the real API's strict-schema rules) and `reasoning` (effort and
# summary). Pure functions raising ProtocolError with the offending `param`; protocol.validate
# calls them for every create.
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from protocol.errors import ProtocolError, clip, invalid

FORMAT_NAME = re.compile(r"[a-zA-Z0-9_-]+")
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
SUMMARIES = ("auto", "concise", "detailed")
CONTEXTS = ("auto", "current_turn", "all_turns")  # reasoning.context


def supported(allowed: tuple[object, ...]) -> str:
    """The values a refusal lists: `'a', 'b' and 'c'`."""
    if len(allowed) < 2:
        return "".join(repr(a) for a in allowed)
    return ", ".join(repr(a) for a in allowed[:-1]) + f" and {allowed[-1]!r}"


def one_of(value: object, allowed: tuple[str, ...], param: str) -> None:
    if value is not None and value not in allowed:
        names = supported(allowed)
        raise invalid(
            f"Invalid value: {clip(repr(value))}. Supported values are: {names}.",
            param=param,
            code="invalid_value",
        )


def missing(param: str) -> ProtocolError:
    return invalid(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def wrong_type(param: str, expected: str) -> ProtocolError:
    return invalid(f"Invalid type for '{param}': expected {expected}.", param, "invalid_type")


def required_string(obj: Mapping[str, Any], key: str, param: str) -> str:
    """`obj[key]`, which must be there and be a string (`param` names it in the error)."""
    value = obj.get(key)
    if value is None:
        raise missing(param)
    if not isinstance(value, str):
        raise wrong_type(param, "a string")
    return value


def check_text(text: Mapping[str, Any] | None) -> None:
    """`text.format` (type, name pattern, schema present; strict schema rules) and verbosity."""
    if text is None:
        return
    one_of(text.get("verbosity"), ("low", "medium", "high"), "text.verbosity")
    fmt = text.get("format")
    if fmt is None:
        return
    if not isinstance(fmt, Mapping):
        raise wrong_type("text.format", "an object")
    kind = fmt.get("type")
    if kind is None:
        raise missing("text.format.type")
    one_of(kind, ("text", "json_object", "json_schema"), "text.format.type")
    if kind != "json_schema":
        return
    name = required_string(fmt, "name", "text.format.name")
    if len(name) > 64:
        raise invalid(
            "Invalid 'text.format.name': string too long. Expected a string with maximum length "
            f"64, but got a string with length {len(name)} instead.",
            param="text.format.name",
            code="string_above_max_length",
        )
    if not FORMAT_NAME.fullmatch(name):
        raise invalid(
            "Invalid 'text.format.name': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            param="text.format.name",
            code="invalid_value",
        )
    schema = fmt.get("schema")
    if schema is None:
        raise missing("text.format.schema")
    if not isinstance(schema, Mapping):
        raise wrong_type("text.format.schema", "an object")
    strict = fmt.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise wrong_type("text.format.strict", "a boolean")
    if strict:

        def fail(where: tuple[str, ...], rule: str) -> ProtocolError:
            return invalid(
                f"Invalid schema for response_format '{name}': In context={where!r}, {rule}",
                param="text.format.schema",
                code="invalid_json_schema",
            )

        check_strict_schema(schema, fail)


#: Builds the refusal of a strict schema: (where in the schema, the rule broken) -> the error.
SchemaFail = Callable[[tuple[str, ...], str], ProtocolError]


def check_strict_schema(
    schema: Mapping[str, Any], fail: SchemaFail, where: tuple[str, ...] = ()
) -> None:
    """Structured outputs' strict-mode rules (the real API's messages), for a `text.format`
    schema and a `strict: true` function's parameters alike: every object lists its
    properties and all of them as required, and allows no others (`additionalProperties:
    false`), recursively."""
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise fail(where, "'additionalProperties' is required to be supplied and to be false.")
        if "properties" not in schema:
            raise fail(where, "object schema missing properties.")
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        missing = [k for k in props if k not in required]
        if missing:
            raise fail(
                where,
                "'required' is required to be supplied and to be an array including every key "
                f"in properties. Missing '{clip(str(missing[0]))}'.",
            )
        for key, sub in props.items():
            if isinstance(sub, Mapping):
                check_strict_schema(sub, fail, (*where, "properties", key))
    if isinstance(schema.get("items"), Mapping):
        check_strict_schema(schema["items"], fail, (*where, "items"))
    for keyword in ("anyOf", "allOf"):
        for i, sub in enumerate(schema.get(keyword) or ()):
            if isinstance(sub, Mapping):
                check_strict_schema(sub, fail, (*where, keyword, str(i)))
    for keyword in ("$defs", "definitions"):
        for key, sub in (schema.get(keyword) or {}).items():
            if isinstance(sub, Mapping):
                check_strict_schema(sub, fail, (*where, keyword, key))


def _number(value: float) -> str:
    """A number as the real API's bound messages print it (2, 0.5)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def below_min(param: str, value: float, least: float) -> ProtocolError:
    """The real API's refusal of a number under its least value (`integer_below_min_value`,
    `decimal_below_min_value`)."""
    kind = "integer" if isinstance(value, int) else "decimal"
    return invalid(
        f"Invalid '{param}': {kind} below minimum value. Expected a value >= {_number(least)}, "
        f"but got {_number(value)} instead.",
        param=param,
        code=f"{kind}_below_min_value",
    )


def above_max(param: str, value: float, most: float) -> ProtocolError:
    """The real API's refusal of a number over its greatest value (`..._above_max_value`)."""
    kind = "integer" if isinstance(value, int) else "decimal"
    return invalid(
        f"Invalid '{param}': {kind} above maximum value. Expected a value <= {_number(most)}, "
        f"but got {_number(value)} instead.",
        param=param,
        code=f"{kind}_above_max_value",
    )


def check_reasoning(reasoning: Mapping[str, Any] | None) -> None:
    if reasoning is None:
        return
    one_of(reasoning.get("effort"), EFFORTS, "reasoning.effort")
    one_of(reasoning.get("summary"), SUMMARIES, "reasoning.summary")
    one_of(reasoning.get("generate_summary"), SUMMARIES, "reasoning.generate_summary")
    one_of(reasoning.get("context"), CONTEXTS, "reasoning.context")
