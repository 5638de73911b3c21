# Owns: checking a value against a schema: a subset of draft 2020-12 (plus draft-4/7 spellings),
# enough to check what the generator produces, and the formats it generates. Unknown keywords
# are ignored, as JSON Schema does. Every check is charged to the call's budget and patterns go
# through the bounded matcher, so checking a hostile schema cannot run away either.
from __future__ import annotations

import datetime
import ipaddress
import math
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from rollout.model.args.budget import NESTING_PER_DEPTH, Budget, LimitExceeded, UnsupportedSchema
from rollout.model.args.common import canonical, has_type, is_number, json_equal
from rollout.model.args.hints import FORMATS
from rollout.model.args.match import Patterns


class Validator:
    """`is_valid(value, schema)`; `formats` says whether `format` is asserted."""

    def __init__(
        self,
        resolve: Callable[[Any, str], Any],
        patterns: Patterns,
        *,
        formats: bool,
    ) -> None:
        self._resolve = resolve
        self._patterns = patterns
        self._budget: Budget = patterns.budget
        self._formats = formats
        self._max_depth = NESTING_PER_DEPTH * patterns.limits.max_depth

    def is_valid(self, instance: Any, schema: Any) -> bool:
        try:
            return self._ok(instance, schema, 0)
        except LimitExceeded:
            raise
        except (UnsupportedSchema, RecursionError, TypeError, ValueError, re.error):
            return False

    def _ok(self, x: Any, s: Any, depth: int) -> bool:
        if s is True:
            return True
        if s is False or not isinstance(s, Mapping) or depth > self._max_depth:
            return False
        self._budget.spend(3, "$")
        d = depth + 1
        if "$ref" in s and not self._ok(x, self._resolve(s["$ref"], "$"), d):
            return False
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(has_type(x, t) for t in types):
                return False
        if "const" in s and not json_equal(x, s["const"]):
            return False
        if "enum" in s and not self._in_enum(x, s["enum"]):
            return False
        if not all(self._ok(x, sub, d) for sub in s.get("allOf", ())):
            return False
        if "anyOf" in s and not any(self._ok(x, sub, d) for sub in s["anyOf"]):
            return False
        if "oneOf" in s and sum(1 for sub in s["oneOf"] if self._ok(x, sub, d)) != 1:
            return False
        if "not" in s and self._ok(x, s["not"], d):
            return False
        if "if" in s:
            branch = s.get("then", True) if self._ok(x, s["if"], d) else s.get("else", True)
            if not self._ok(x, branch, d):
                return False
        if is_number(x):
            return self._number_ok(x, s)
        if isinstance(x, str):
            return self._string_ok(x, s)
        if isinstance(x, list):
            return self._array_ok(x, s, d)
        if isinstance(x, Mapping):
            return self._object_ok(x, s, d)
        return True

    def _in_enum(self, x: Any, enum: Any) -> bool:
        for i, option in enumerate(enum):
            if i % 64 == 63:
                self._budget.spend(16, "$")
            if json_equal(x, option):
                return True
        return False

    def _search(self, pattern: Any, text: str) -> bool:
        if not isinstance(pattern, str):
            return False
        return self._patterns.search(pattern, text, "$")

    def _number_ok(self, x: float, s: Mapping[str, Any]) -> bool:
        if not in_float_bounds(x, s):
            return False
        multiples = [s["multipleOf"]] if "multipleOf" in s else []
        return all(is_multiple(x, m) for m in [*multiples, *s.get("__multiples__", ())])

    def _string_ok(self, x: str, s: Mapping[str, Any]) -> bool:
        if len(x) < s.get("minLength", 0) or len(x) > s.get("maxLength", math.inf):
            return False
        patterns = [s["pattern"]] if "pattern" in s else []
        if not all(self._search(p, x) for p in [*patterns, *s.get("__patterns__", ())]):
            return False
        fmt = s.get("format")
        if not self._formats or not isinstance(fmt, str) or fmt not in FORMATS:
            return True
        self._budget.spend(1 + len(x), "$")  # `regex` compiles x: about a step a character
        return format_ok(fmt, x)

    def _array_ok(self, x: list[Any], s: Mapping[str, Any], d: int) -> bool:
        if len(x) < s.get("minItems", 0) or len(x) > s.get("maxItems", math.inf):
            return False
        items = s.get("items", True)
        if isinstance(items, list):  # draft 7 tuple form
            prefix, rest = items, s.get("additionalItems", True)
        else:
            prefix, rest = s.get("prefixItems", []), items
        for i, value in enumerate(x):
            sub = prefix[i] if i < len(prefix) else rest
            if not self._ok(value, sub, d):
                return False
        if s.get("uniqueItems"):
            self._budget.spend(1 + len(x), "$")
            if len({canonical(v, "$", self._max_depth) for v in x}) != len(x):
                return False
        if "contains" in s:
            hits = sum(1 for value in x if self._ok(value, s["contains"], d))
            if hits < s.get("minContains", 1) or hits > s.get("maxContains", math.inf):
                return False
        return True

    def _object_ok(self, x: Mapping[str, Any], s: Mapping[str, Any], d: int) -> bool:
        if len(x) < s.get("minProperties", 0) or len(x) > s.get("maxProperties", math.inf):
            return False
        required = s.get("required", ())
        self._budget.spend(1 + len(required) // 16, "$")
        if any(name not in x for name in required):
            return False
        props: Mapping[str, Any] = s.get("properties", {})
        pattern_props: Mapping[str, Any] = s.get("patternProperties", {})
        extra = s.get("additionalProperties", True)
        for key, value in x.items():
            matched = False
            if key in props:
                matched = True
                if not self._ok(value, props[key], d):
                    return False
            for pattern, sub in pattern_props.items():
                if self._search(pattern, key):
                    matched = True
                    if not self._ok(value, sub, d):
                        return False
            if not matched and not self._ok(value, extra, d):
                return False
            if "propertyNames" in s and not self._ok(key, s["propertyNames"], d):
                return False
        dependent = dict(s.get("dependentRequired", {}))
        dependent_schemas = dict(s.get("dependentSchemas", {}))
        for name, dep in s.get("dependencies", {}).items():
            (dependent if isinstance(dep, list) else dependent_schemas)[name] = dep
        self._budget.spend(1 + (len(dependent) + len(dependent_schemas)) // 16, "$")
        for name, needed in dependent.items():
            if name in x and any(n not in x for n in needed):
                return False
        for name, sub in dependent_schemas.items():
            if name in x and not self._ok(x, sub, d):
                return False
        return True


def in_float_bounds(x: float, s: Mapping[str, Any]) -> bool:
    """Bounds checked in the instance's own arithmetic, as validators do (both draft spellings)."""
    low: Any = s.get("minimum")
    high: Any = s.get("maximum")
    low_ex: Any = s.get("exclusiveMinimum")
    high_ex: Any = s.get("exclusiveMaximum")
    if low is not None and (x < low or (low_ex is True and x == low)):
        return False
    if high is not None and (x > high or (high_ex is True and x == high)):
        return False
    if is_number(low_ex) and x <= low_ex:
        return False
    return not (is_number(high_ex) and x >= high_ex)


def is_multiple(x: float, m: float) -> bool:
    """`multipleOf` as Python validators compute it (float division when the divisor is float)."""
    try:
        if isinstance(m, float):
            quotient = x / m
            return bool(int(quotient) == quotient)
        return bool(x % m == 0)
    except (OverflowError, ZeroDivisionError, ValueError):
        return False


_DATE_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_RE: Final = re.compile(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_LABEL: Final = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_RE: Final = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
_DURATION_RE: Final = re.compile(
    r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?"
)


def format_ok(fmt: str, s: str) -> bool:
    """A conservative check of the formats this module generates (each linear in `s`)."""
    try:
        if fmt == "date":
            return bool(_DATE_RE.fullmatch(s)) and bool(datetime.date.fromisoformat(s))
        if fmt == "time":
            return bool(_TIME_RE.fullmatch(s)) and _clock_ok(s)
        if fmt == "date-time":
            day, sep, clock = s[:10], s[10:11], s[11:]
            return sep in ("T", "t", " ") and format_ok("date", day) and format_ok("time", clock)
        if fmt in ("email", "idn-email"):
            return _email_ok(s)
        if fmt in ("uri", "url", "iri"):
            return re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*", s) is not None
        if fmt in ("uri-reference", "iri-reference"):
            return re.search(r"\s", s) is None
        if fmt == "uuid":
            uuid.UUID(s)
            return len(s) == 36 and all(s[i] == "-" for i in (8, 13, 18, 23))
        if fmt == "ipv4":
            ipaddress.IPv4Address(s)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(s)
            return True
        if fmt in ("hostname", "idn-hostname"):
            return _HOST_RE.fullmatch(s) is not None
        if fmt == "duration":
            return _DURATION_RE.fullmatch(s) is not None
        if fmt == "json-pointer":
            return s == "" or s.startswith("/")
        if fmt == "regex":
            re.compile(s)
            return True
    except (ValueError, re.error, OverflowError, RecursionError):
        return False
    return True


def _email_ok(s: str) -> bool:
    """`[^@\\s]+@[^@\\s]+\\.[^@\\s]+` in full, without the regex's quadratic backtracking."""
    local, at, domain = s.partition("@")
    if not at or not local or "@" in domain or any(ch.isspace() for ch in s):
        return False
    return "." in domain[1:-1]


def _clock_ok(s: str) -> bool:
    hour, minute, second = int(s[0:2]), int(s[3:5]), int(s[6:8])
    return hour < 24 and minute < 60 and second < 61
