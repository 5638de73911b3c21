# Owns: the small pieces every part of the generator shares: `Ctx` (where a value goes), JSON
# value types and equality (and a hashable form for set lookups), bounded size measurement,
# counts read from a schema, local `$ref` resolution and JSON paths. Pure functions; nothing here
# loops over more than the value or schema it is handed.
from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Hashable, Mapping
from typing import Any

import attrs

from rollout.model.args.budget import Budget, UnsupportedSchema


@attrs.frozen
class Ctx:
    """Where a value goes: its path, the name it is for, the `$ref`s entered to get there, whether
    to keep it minimal, and how many objects/arrays enclose it."""

    path: str
    hint: str
    refs: tuple[str, ...] = ()
    minimal: bool = False
    depth: int = 0

    def child(self, name: str) -> Ctx:
        return Ctx(child_path(self.path, name), name, self.refs, self.minimal, self.depth + 1)

    def item(self, index: int) -> Ctx:
        path = f"{self.path}[{index}]"
        return Ctx(path, singular(self.hint), self.refs, self.minimal, self.depth + 1)


def brief(value: Any, limit: int = 80) -> str:
    """`repr(value)` for a message, cut to about `limit` characters (schemas can be huge)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."
    if json_size(value, 4 * limit, 8) is None:
        return f"<a {type(value).__name__} too large to show>"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def child_path(path: str, name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def singular(name: str) -> str:
    if name.endswith("ies") and len(name) > 3:
        return name[:-3] + "y"
    if name.endswith(("sses", "xes", "ches", "shes")):
        return name[:-2]
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return name


def is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def has_type(x: Any, t: str) -> bool:
    if t == "null":
        return x is None
    if t == "boolean":
        return isinstance(x, bool)
    if t == "integer":
        return is_number(x) and (isinstance(x, int) or float(x).is_integer())
    if t == "number":
        return is_number(x)
    if t == "string":
        return isinstance(x, str)
    if t == "array":
        return isinstance(x, list)
    if t == "object":
        return isinstance(x, Mapping)
    return False


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (1 == 1.0, True != 1). Recurses only as deep as both values nest."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and bool(a == b)


def canonical(value: Any, path: str, max_depth: int, depth: int = 0) -> Hashable:
    """A hashable stand-in: canonical(a) == canonical(b) exactly when json_equal(a, b)."""
    if depth > max_depth:
        raise UnsupportedSchema(path, f"a value nests deeper than {max_depth} levels")
    if isinstance(value, bool) or value is None:
        return ("k", value)
    if is_number(value):
        if isinstance(value, float) and value.is_integer():
            return ("n", int(value))
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("l", tuple(canonical(v, path, max_depth, depth + 1) for v in value))
    if isinstance(value, Mapping):
        items = (
            (k if isinstance(k, str) else ("?", k), canonical(v, path, max_depth, depth + 1))
            for k, v in value.items()
        )
        return ("d", frozenset(items))
    try:
        return ("?", hash(value), value)
    except TypeError:
        return ("?", id(value))


def json_size(value: Any, cap: int, max_depth: int) -> int | None:
    """About how many characters `value` takes as JSON; None once over `cap` characters or
    `max_depth` levels of nesting. Visits at most about `cap` nodes."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            size += len(node) + 2
        elif isinstance(node, bool) or node is None:
            size += 5
        elif isinstance(node, int):
            size += node.bit_length() // 3 + 2  # ~digits, without str() (4,300-digit limit)
        elif isinstance(node, float):
            size += 24
        elif isinstance(node, list | Mapping):
            size += 2 + len(node)
            if depth >= max_depth or size > cap:
                return None
            if isinstance(node, Mapping):
                size += sum(len(str(k)) + 3 for k in node)
                stack.extend((v, depth + 1) for v in node.values())
            else:
                stack.extend((v, depth + 1) for v in node)
        else:
            size += 8
        if size > cap:
            return None
    return size


# orjson, the server's JSON encoder, writes integers in this range only; beyond it a value goes
# out as the float equal to it, where there is one.
_WIRE_INTS = range(-(2**63), 2**64)


def _exact_float(n: int) -> float | None:
    try:
        f = float(n)
    except OverflowError:
        return None
    return f if f == n else None


def sendable(value: Any) -> bool:
    """Whether a schema-given JSON value can go out exactly: every integer beyond 64 bits in it
    equals a float. Visits each node once, without recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, int) and node not in _WIRE_INTS and _exact_float(node) is None:
            return False
        if isinstance(node, Mapping):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def wire_copy(value: Any) -> Any:
    """A copy of a sendable JSON value (nested no deeper than the limits allow) with its integers
    beyond 64 bits as the floats equal to them (JSON Schema holds them equal)."""
    if isinstance(value, Mapping):
        return {k: wire_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire_copy(v) for v in value]
    if isinstance(value, int) and value not in _WIRE_INTS:
        f = _exact_float(value)
        assert f is not None, "wire_copy of a value that is not sendable"
        return f
    return value


def count(m: Mapping[str, Any], key: str, path: str, default: int | None = 0) -> Any:
    """A non-negative integer keyword (minLength, maxItems, ...), or `default` when absent."""
    if key not in m:
        return default
    value = m[key]
    if (
        isinstance(value, bool)
        or not is_number(value)
        or not math.isfinite(value)
        or value < 0
        or value != int(value)
    ):
        raise UnsupportedSchema(path, f"{key} must be a non-negative integer, got {value!r}")
    return int(value)


def resolve_pointer(root: Mapping[str, Any], ref: Any, path: str) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise UnsupportedSchema(path, f"only local $ref ('#/...') is supported, got {ref!r}")
    pointer = urllib.parse.unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        raise UnsupportedSchema(path, f"$ref {ref!r}: anchors are not supported")
    node: Any = root
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise UnsupportedSchema(path, f"$ref {ref!r} does not resolve in this schema")
    return node


def dependent_schemas(s: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(s.get("dependentSchemas") or {})
    for name, dep in (s.get("dependencies") or {}).items():
        if not isinstance(dep, list):  # draft 7: a list is dependentRequired
            out[name] = dep
    return out


def schema_list(value: Any, keyword: str, path: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise UnsupportedSchema(path, f"{keyword} must be a non-empty array of schemas")
    return list(value)


def is_null_schema(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type") in ("null", ["null"]):
        return True
    return ("const" in schema and schema["const"] is None) or schema.get("enum") == [None]


def mentions_ref(schema: Any, budget: Budget, path: str) -> bool:
    """Whether `schema` contains a `$ref` anywhere (iterative, so any depth; charged per node)."""
    stack = [schema]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen % 1024 == 0:
            budget.chars(1024, path)
        if isinstance(node, Mapping):
            if "$ref" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
