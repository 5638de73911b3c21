# Owns: generating objects (which properties, names for undeclared ones) and arrays (length,
# tuple prefixes, `contains`, distinct items) for a merged schema node, through the generator
# for their members. Sizes and nesting are held to `Limits`: a larger maxItems/maxProperties is
# clamped, a larger minimum (or deeper nesting) fails fast naming the limit.
from __future__ import annotations

import collections
import shlex
from collections.abc import Hashable, Mapping, Sequence
from random import Random
from typing import Any, Final, Protocol

from rollout.model.args.common import Ctx, canonical, count
from rollout.model.args.hints import ARGV_EXTRA, COMMANDS, WORDS, hint_kind
from rollout.model.args.limits import Budget, LimitExceeded, Limits, UnsupportedSchema, over_limit
from rollout.model.args.match import Patterns
from rollout.model.args.strings import pattern_sample
from rollout.model.args.vocabulary import Vocabulary, wants_optional

_P_OPTIONAL: Final = 0.5  # chance that an optional property is included
_UNIQUE_ATTEMPTS: Final = 16


class Maker(Protocol):
    """What containers need from the generator: values for member schemas, and checks."""

    rng: Random
    limits: Limits
    budget: Budget
    patterns: Patterns
    vocab: Vocabulary | None

    def node(self, schema: Any, ctx: Ctx) -> Any: ...

    def valid(self, value: Any, schema: Any) -> bool: ...


def _check_depth(gen: Maker, ctx: Ctx, what: str) -> None:
    if ctx.depth >= gen.limits.max_depth:
        subject = f"nesting objects and arrays {ctx.depth + 1} deep (here an {what})"
        raise over_limit(ctx.path, subject, gen.limits.max_depth, "max_depth")


def object_value(gen: Maker, m: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    _check_depth(gen, ctx, "object")
    rng, limits, path = gen.rng, gen.limits, ctx.path
    props: Mapping[str, Any] = m.get("properties", {})
    required: list[str] = m.get("required", [])
    min_props = count(m, "minProperties", path)
    max_props = count(m, "maxProperties", path, default=None)
    if max_props is not None and min_props > max_props:
        raise UnsupportedSchema(
            path, f"minProperties {min_props} is greater than maxProperties {max_props}"
        )
    if min_props > limits.max_properties:
        subject = f"minProperties {min_props}"
        raise over_limit(path, subject, limits.max_properties, "max_properties")
    depends: Mapping[str, list[str]] = m.get("dependentRequired", {})

    def closure(names: Sequence[str], into: list[str]) -> list[str]:
        gen.budget.spend(1 + len(into) // 16, path)
        out = list(into)
        seen = set(out)
        todo = collections.deque(names)
        while todo:
            name = todo.popleft()
            if name not in seen:
                out.append(name)
                seen.add(name)
                todo.extend(depends.get(name, []))
        return out

    must = closure(required, [])
    if max_props is not None and len(must) > max_props:
        raise UnsupportedSchema(
            path, f"{len(must)} required properties exceed maxProperties {max_props}"
        )
    if len(must) > limits.max_properties:
        what = f"requiring {len(must)} properties"
        raise over_limit(path, what, limits.max_properties, "max_properties")
    if max_props is None or max_props > limits.max_properties:
        max_props = limits.max_properties  # clamped: fewer properties are still valid
    chosen = list(must)
    must_set = set(must)
    optional = [n for n in props if n not in must_set]

    def fits(names: list[str]) -> bool:
        return len(names) <= max_props

    if not ctx.minimal:
        for name in optional:
            if _wanted(gen, name, props[name]):
                candidate = closure([name], chosen)
                if fits(candidate):
                    chosen = candidate
    chosen_set = set(chosen)
    spare = [n for n in optional if n not in chosen_set]
    rng.shuffle(spare)
    while len(chosen) < min_props and spare:
        candidate = closure([spare.pop(0)], chosen)
        if fits(candidate):
            chosen = candidate

    chosen_set = set(chosen)
    ordered = [n for n in props if n in chosen_set] + [n for n in chosen if n not in props]
    result: dict[str, Any] = {}
    for name in ordered:
        try:
            result[name] = gen.node(props.get(name, True), ctx.child(name))
        except LimitExceeded:
            raise
        except UnsupportedSchema:
            if name in must_set:
                raise
            # An optional property we cannot fill is left out; the object stays valid.
    attempts = 0
    while len(result) < min_props:
        attempts += 1
        if attempts > 4 * min_props + 8:
            raise UnsupportedSchema(
                path, f"cannot find {min_props} property names the schema allows"
            )
        extra = _extra_property(gen, m, props, result, ctx)
        if extra is not None:
            key, sub = extra
            result[key] = gen.node(sub, ctx.child(key))
    return result


def _wanted(gen: Maker, name: str, schema: Any) -> bool:
    """Whether an optional property is filled in: half of them when fuzzing schemas; as a model
    would (vocabulary.wants_optional) when the conversation's vocabulary is given."""
    if gen.vocab is None:
        return gen.rng.random() < _P_OPTIONAL
    numeric = isinstance(schema, Mapping) and schema.get("type") in ("integer", "number")
    kind = hint_kind(name, schema.get("description") if isinstance(schema, Mapping) else None)
    return wants_optional(gen.vocab, kind, schema, gen.rng, numeric=numeric)


def _extra_property(
    gen: Maker, m: dict[str, Any], props: Mapping[str, Any], taken: Mapping[str, Any], ctx: Ctx
) -> tuple[str, Any] | None:
    """An undeclared property name (and its schema) to reach minProperties, or None."""
    rng, patterns, path = gen.rng, gen.patterns, ctx.path
    gen.budget.spend(1, path)
    pattern_props: Mapping[str, Any] = m.get("patternProperties", {})
    extra_ok = m.get("additionalProperties", True) is not False
    sources = list(pattern_props)
    if not sources and not extra_ok:
        raise UnsupportedSchema(
            path, "minProperties needs more properties than the schema declares"
        )
    key: str | None = None
    if sources and (not extra_ok or rng.random() < 0.5):
        key = pattern_sample(rng.choice(sources), rng, patterns, path)
    if key is None:
        if not extra_ok:
            return None
        key = f"{rng.choice(WORDS)}_{len(taken) + 1}"
        if "propertyNames" in m:
            names = {"allOf": [{"type": "string"}, m["propertyNames"]]}
            try:
                key = gen.node(names, Ctx(path, "name", ctx.refs, ctx.minimal, ctx.depth))
            except LimitExceeded:
                raise
            except UnsupportedSchema:
                return None
    if key in taken or key in props:
        return None
    if "propertyNames" in m and not gen.valid(key, m["propertyNames"]):
        return None
    subs = [s for p, s in pattern_props.items() if patterns.search(p, key, path)]
    if not subs:
        if not extra_ok:
            return None
        ap = m.get("additionalProperties", True)
        subs = [ap]
    return key, subs[0] if len(subs) == 1 else {"allOf": subs}


def array_value(gen: Maker, m: dict[str, Any], ctx: Ctx) -> list[Any]:
    _check_depth(gen, ctx, "array")
    rng, limits, path = gen.rng, gen.limits, ctx.path
    prefix: list[Any] = m.get("prefixItems", [])
    items = m.get("items", True)
    lo = count(m, "minItems", path)
    hi = count(m, "maxItems", path, default=None)
    if items is False:
        if lo > len(prefix):
            raise UnsupportedSchema(
                path, f"minItems {lo} but `items: false` allows only {len(prefix)} items"
            )
        hi = len(prefix) if hi is None else min(hi, len(prefix))
    if hi is not None and lo > hi:
        raise UnsupportedSchema(path, f"minItems {lo} is greater than maxItems {hi}")
    if lo > limits.max_items:
        raise over_limit(path, f"minItems {lo}", limits.max_items, "max_items")
    if hi is None or hi > limits.max_items:
        hi = limits.max_items  # clamped: a shorter array is still valid
    unique = bool(m.get("uniqueItems", False))
    contains = m.get("contains")
    need_contains = 0
    if contains is not None:
        need_contains = count(m, "minContains", path, default=1) or 0
        if need_contains > limits.max_items:
            subject = f"minContains {need_contains}"
            raise over_limit(path, subject, limits.max_items, "max_items")
    if ctx.minimal:
        n = max(lo, need_contains)
    else:
        n = max(lo, need_contains, len(prefix) if prefix else rng.randint(1, 3))
    n = min(n, hi)
    if n < need_contains:
        raise UnsupportedSchema(path, f"minContains {need_contains} does not fit in maxItems {hi}")

    kind = hint_kind(ctx.hint, m.get("description"))
    if kind == "command" and not prefix and contains is None:
        command = gen.vocab.command if gen.vocab is not None else None
        argv = ["bash", "-lc", command] if command else _argv(rng, lo, hi)
        if gen.valid(argv, m):
            return argv

    values: list[Any] = []
    seen: set[Hashable] = set()  # canonical forms of the values, for uniqueItems
    contains_from = n - need_contains
    for i in range(n):
        base = prefix[i] if i < len(prefix) else items
        sub = {"allOf": [base, contains]} if i >= contains_from else base
        for _ in range(_UNIQUE_ATTEMPTS if unique else 1):
            value = gen.node(sub, ctx.item(i))
            if not unique:
                break
            key = canonical(value, path, limits.max_depth)
            if key not in seen:
                seen.add(key)
                break
        else:
            if len(values) >= lo and contains is None:
                break  # a shorter array of distinct items is still valid
            raise UnsupportedSchema(
                path, f"uniqueItems: could not find {n} distinct items for the array"
            )
        values.append(value)
    return values


def _argv(rng: Random, lo: int, hi: int | None) -> list[str]:
    command = rng.choice(COMMANDS)
    argv = ["bash", "-lc", command] if rng.random() < 0.4 else shlex.split(command)
    extras = [e for e in ARGV_EXTRA if e not in argv]
    while len(argv) < lo and extras:
        argv.append(extras.pop(0))
    return argv if hi is None else argv[:hi]
