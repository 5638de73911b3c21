# Owns: merging the keyword dicts that `allOf` and `$ref` flatten a schema node into, into one
# dict the generator reads. Internal keys: `__patterns__` (all `pattern`s) and `__multiples__`
# (all `multipleOf`s); draft-4 boolean exclusive bounds become numeric ones; draft-7 tuple
# `items` becomes `prefixItems`; `type` becomes a list. Work is charged to the call's budget.
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rollout.model.args.budget import UnsupportedSchema
from rollout.model.args.common import brief, canonical, is_number
from rollout.model.args.match import Patterns

TYPES: Final = ("null", "boolean", "integer", "number", "string", "array", "object")
_MAX_OF: Final = frozenset(
    {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"}
)
_MIN_OF: Final = frozenset(
    {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"}
)
_OBJECT_KEYS: Final = frozenset(
    {"properties", "patternProperties", "additionalProperties", "required"}
)
_ARRAY_KEYS: Final = frozenset({"prefixItems", "items"})
_LIST_KEYS: Final = frozenset({"__patterns__", "__multiples__"})
_SKIP_KEYS: Final = frozenset({"$ref", "allOf", "anyOf", "oneOf", "$defs", "definitions"})


def normalize(part: Mapping[str, Any], path: str) -> dict[str, Any]:
    out = {k: v for k, v in part.items() if k not in _SKIP_KEYS}
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(flag), bool):  # draft 4: a flag on minimum/maximum
            if out.pop(flag) and bound in out:
                out[flag] = out.pop(bound)
    if "multipleOf" in out:
        mult = out.pop("multipleOf")
        if not is_number(mult) or mult <= 0 or (isinstance(mult, float) and math.isinf(mult)):
            raise UnsupportedSchema(
                path, f"multipleOf must be a positive number, got {brief(mult)}"
            )
        out["__multiples__"] = [mult]
    if "pattern" in out:
        pattern = out.pop("pattern")
        if not isinstance(pattern, str):
            raise UnsupportedSchema(path, f"pattern must be a string, got {brief(pattern)}")
        out["__patterns__"] = [pattern]
    if isinstance(out.get("items"), list):  # draft 7 tuple form
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out["additionalItems"]
    out.pop("additionalItems", None)
    if "dependencies" in out:
        deps = out.pop("dependencies")
        if not isinstance(deps, Mapping):
            raise UnsupportedSchema(path, "dependencies must be an object")
        lists = {name: dep for name, dep in deps.items() if isinstance(dep, list)}
        if lists:  # copied, never written into the caller's schema
            out["dependentRequired"] = {**out.get("dependentRequired", {}), **lists}
    if "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        for t in types:
            if t not in TYPES:
                raise UnsupportedSchema(path, f"unknown type {brief(t)}")
        out["type"] = list(dict.fromkeys(types))  # a valid schema lists each type once
    if "enum" in out and not isinstance(out["enum"], list):
        raise UnsupportedSchema(path, f"enum must be an array, got {brief(out['enum'])}")
    for key in ("properties", "patternProperties", "dependentRequired"):
        if key in out and not isinstance(out[key], Mapping):
            raise UnsupportedSchema(path, f"{key} must be an object")
    for names in out.get("dependentRequired", {}).values():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise UnsupportedSchema(path, "dependentRequired must map names to arrays of names")
    required = out.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise UnsupportedSchema(path, "required must be an array of names")
    return out


def merge(raw_parts: Sequence[Mapping[str, Any]], path: str, patterns: Patterns) -> dict[str, Any]:
    budget = patterns.budget
    budget.spend(1 + 4 * len(raw_parts) + sum(len(p) for p in raw_parts) // 4, path)
    parts = [normalize(p, path) for p in raw_parts]
    out: dict[str, Any] = {}
    lists: dict[str, dict[Any, None]] = {}  # __patterns__, __multiples__: in order, once each
    for part in parts:
        for key, value in part.items():
            if key in _OBJECT_KEYS or key in _ARRAY_KEYS:
                continue
            if key in _LIST_KEYS:
                lists.setdefault(key, {}).update(dict.fromkeys(value))
                continue
            out[key] = _combine(key, out[key], value, path, patterns) if key in out else value
    out.update((key, list(values)) for key, values in lists.items())
    if any(key in part for part in parts for key in _OBJECT_KEYS):
        _merge_object(parts, out, path, patterns)
    if any(key in part for part in parts for key in _ARRAY_KEYS):
        _merge_array(parts, out, path, patterns)
    return out


def _combine(key: str, a: Any, b: Any, path: str, patterns: Patterns) -> Any:
    if key == "type":
        types = _intersect_types(a, b)
        if not types:
            raise UnsupportedSchema(path, f"allOf: types {a!r} and {b!r} do not intersect")
        return types
    if key == "enum":
        depth = patterns.limits.max_depth
        patterns.budget.spend(1 + len(a) + len(b), path)
        in_b = {canonical(y, path, depth) for y in b}
        both = [x for x in a if canonical(x, path, depth) in in_b]
        if not both:
            raise UnsupportedSchema(path, "allOf: the enums have no value in common")
        return both
    if key == "const":
        depth = patterns.limits.max_depth
        if canonical(a, path, depth) != canonical(b, path, depth):
            raise UnsupportedSchema(
                path, f"allOf: const {brief(a)} conflicts with const {brief(b)}"
            )
        return a
    if key in _MAX_OF or key in _MIN_OF:
        if not (is_number(a) and is_number(b)):
            raise UnsupportedSchema(path, f"{key} must be a number")
        return max(a, b) if key in _MAX_OF else min(a, b)
    if key == "uniqueItems":
        return bool(a) or bool(b)
    if key in ("contains", "propertyNames", "not"):
        return {"allOf": [a, b]}
    if key == "dependentRequired":
        merged = {k: list(v) for k, v in a.items()}
        for k, v in b.items():
            merged[k] = [*merged.get(k, []), *v]
        return merged
    return a  # annotations and keywords the generator does not read: first one wins


def _merge_object(
    parts: list[dict[str, Any]], out: dict[str, Any], path: str, patterns: Patterns
) -> None:
    ordered: dict[str, None] = {}  # dicts as ordered sets: linear in the names
    must: dict[str, None] = {}
    for part in parts:
        ordered.update(dict.fromkeys(part.get("properties", {})))
        must.update(dict.fromkeys(part.get("required", [])))
    ordered.update(must)
    required, names = list(must), list(ordered)
    props: dict[str, Any] = {}
    for name in names:
        patterns.budget.spend(4 * len(parts), path)
        subs: list[Any] = []
        allowed = True
        for part in parts:
            matched = False
            if name in part.get("properties", {}):
                subs.append(part["properties"][name])
                matched = True
            for pattern, sub in part.get("patternProperties", {}).items():
                if patterns.search(pattern, name, path):
                    subs.append(sub)
                    matched = True
            if not matched and "additionalProperties" in part:
                extra = part["additionalProperties"]
                if extra is False:
                    allowed = False
                elif extra is not True:
                    subs.append(extra)
        if not allowed:
            if name in must:
                raise UnsupportedSchema(
                    path, f"required property {name!r} is forbidden by additionalProperties: false"
                )
            continue
        props[name] = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    pattern_props: dict[str, Any] = {}
    for part in parts:
        for pattern, sub in part.get("patternProperties", {}).items():
            old = pattern_props.get(pattern)
            pattern_props[pattern] = sub if old is None else {"allOf": [old, sub]}
    if pattern_props:
        out["patternProperties"] = pattern_props
    _merge_keyword(parts, "additionalProperties", out)


def _merge_keyword(parts: list[dict[str, Any]], key: str, out: dict[str, Any]) -> None:
    """`key` (a schema for the other properties or items) of every part that has it, as one:
    False if any forbids them, else the one schema or their allOf; left out if none limits."""
    values = [p[key] for p in parts if key in p]
    if any(v is False for v in values):
        out[key] = False
        return
    schemas = [v for v in values if v is not True]
    if schemas:
        out[key] = schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _merge_array(
    parts: list[dict[str, Any]], out: dict[str, Any], path: str, patterns: Patterns
) -> None:
    longest = max(len(p.get("prefixItems", [])) for p in parts)
    prefix: list[Any] = []
    cap: int | None = None
    for i in range(longest):
        patterns.budget.spend(len(parts), path)
        subs: list[Any] = []
        for part in parts:
            own = part.get("prefixItems", [])
            if i < len(own):
                subs.append(own[i])
            elif part.get("items", True) is False:
                cap = len(own) if cap is None else min(cap, len(own))
            elif part.get("items", True) is not True:
                subs.append(part["items"])
        prefix.append(True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs})
    if prefix:
        out["prefixItems"] = prefix
    _merge_keyword(parts, "items", out)
    if cap is not None:
        out["maxItems"] = min(out.get("maxItems", cap), cap)


def _intersect_types(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for t in a:
        if t in b:
            keep = t
        elif (t == "integer" and "number" in b) or (t == "number" and "integer" in b):
            keep = "integer"
        else:
            continue
        if keep not in out:
            out.append(keep)
    return out


def infer_type(m: Mapping[str, Any], path: str) -> str:
    keys = set(m)
    families = (
        ("object", {"properties", "required", "additionalProperties", "patternProperties"}),
        ("object", {"minProperties", "maxProperties", "propertyNames", "dependentRequired"}),
        ("array", {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}),
        ("string", {"minLength", "maxLength", "__patterns__", "format"}),
        ("number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
        ("number", {"__multiples__"}),
    )
    for type_name, words in families:
        if keys & words:
            return type_name
    return "object" if path == "$" else "string"
