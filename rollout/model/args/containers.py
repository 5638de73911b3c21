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

from rollout.model.args.budget import Budget, LimitExceeded, Limits, UnsupportedSchema, over_limit
from rollout.model.args.common import Ctx, canonical, count
from rollout.model.args.hints import ARGV_EXTRA, COMMANDS, WORDS, hint_kind
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
    path = ctx.path
    props: Mapping[str, Any] = m.get("properties", {})
    required: list[str] = m.get("required", [])
    min_props, max_props = _property_counts(gen, m, path)
    depends: Mapping[str, list[str]] = m.get("dependentRequired", {})
    must = _closure(gen, depends, required, [], path)
    max_props = _room_for(gen, must, max_props, path)
    chosen = _choose(gen, props, depends, must, min_props, max_props, ctx)
    result = _fill(gen, props, chosen, set(must), ctx)
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


def _property_counts(gen: Maker, m: dict[str, Any], path: str) -> tuple[int, int | None]:
    """minProperties and maxProperties (None: unbounded), checked against each other and the
    limits."""
    min_props = count(m, "minProperties", path)
    max_props = count(m, "maxProperties", path, default=None)
    if max_props is not None and min_props > max_props:
        raise UnsupportedSchema(
            path, f"minProperties {min_props} is greater than maxProperties {max_props}"
        )
    if min_props > gen.limits.max_properties:
        subject = f"minProperties {min_props}"
        raise over_limit(path, subject, gen.limits.max_properties, "max_properties")
    return min_props, max_props


def _closure(
    gen: Maker,
    depends: Mapping[str, list[str]],
    names: Sequence[str],
    into: list[str],
    path: str,
) -> list[str]:
    """`into`, then `names` and the properties they require in turn (`dependentRequired`),
    each once."""
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


def _room_for(gen: Maker, must: list[str], max_props: int | None, path: str) -> int:
    """The most properties the object may have, once the required ones fit: maxProperties,
    clamped to the limit (fewer properties are still valid)."""
    limits = gen.limits
    if max_props is not None and len(must) > max_props:
        raise UnsupportedSchema(
            path, f"{len(must)} required properties exceed maxProperties {max_props}"
        )
    if len(must) > limits.max_properties:
        what = f"requiring {len(must)} properties"
        raise over_limit(path, what, limits.max_properties, "max_properties")
    if max_props is None or max_props > limits.max_properties:
        max_props = limits.max_properties
    return max_props


def _choose(
    gen: Maker,
    props: Mapping[str, Any],
    depends: Mapping[str, list[str]],
    must: list[str],
    min_props: int,
    max_props: int,
    ctx: Ctx,
) -> list[str]:
    """The names to fill: the required ones, the optional ones a model wants (unless minimal),
    then spare declared ones in random order up to minProperties; never more than max_props."""
    chosen = list(must)
    must_set = set(must)
    optional = [n for n in props if n not in must_set]
    if not ctx.minimal:
        for name in optional:
            if _wanted(gen, name, props[name]):
                candidate = _closure(gen, depends, [name], chosen, ctx.path)
                if len(candidate) <= max_props:
                    chosen = candidate
    chosen_set = set(chosen)
    spare = [n for n in optional if n not in chosen_set]
    gen.rng.shuffle(spare)
    while len(chosen) < min_props and spare:
        candidate = _closure(gen, depends, [spare.pop(0)], chosen, ctx.path)
        if len(candidate) <= max_props:
            chosen = candidate
    return chosen


def _fill(
    gen: Maker, props: Mapping[str, Any], chosen: list[str], must: set[str], ctx: Ctx
) -> dict[str, Any]:
    """Values for the chosen names, declared ones in declaration order first; an optional
    property that cannot be filled is left out (the object stays valid)."""
    chosen_set = set(chosen)
    ordered = [n for n in props if n in chosen_set] + [n for n in chosen if n not in props]
    result: dict[str, Any] = {}
    for name in ordered:
        sub = props.get(name, True)
        meant = gen.vocab.meaning(name, sub) if gen.vocab is not None else None
        if meant is not None and gen.valid(meant, sub):
            result[name] = meant
            continue
        try:
            result[name] = gen.node(sub, ctx.child(name))
        except LimitExceeded:
            raise
        except UnsupportedSchema:
            if name in must:
                raise
    return result


def _wanted(gen: Maker, name: str, schema: Any) -> bool:
    """Whether an optional property is filled in: half of them when fuzzing schemas; as a model
    would (vocabulary.wants_optional) when the conversation's vocabulary is given."""
    if gen.vocab is None:
        return gen.rng.random() < _P_OPTIONAL
    meant = gen.vocab.meaning(name, schema)
    if meant is not None:
        return gen.valid(meant, schema)
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
    path = ctx.path
    prefix: list[Any] = m.get("prefixItems", [])
    lo, hi = _length_bounds(gen, m, prefix, path)
    contains = m.get("contains")
    need_contains = 0
    if contains is not None:
        need_contains = count(m, "minContains", path, default=1) or 0
        if need_contains > gen.limits.max_items:
            subject = f"minContains {need_contains}"
            raise over_limit(path, subject, gen.limits.max_items, "max_items")
    if ctx.minimal:
        n = max(lo, need_contains)
    else:
        n = max(lo, need_contains, len(prefix) if prefix else gen.rng.randint(1, 3))
    n = min(n, hi)
    if n < need_contains:
        raise UnsupportedSchema(path, f"minContains {need_contains} does not fit in maxItems {hi}")
    kind = hint_kind(ctx.hint, m.get("description"))
    if kind == "command" and not prefix and contains is None:
        command = gen.vocab.command if gen.vocab is not None else None
        argv = ["bash", "-lc", command] if command else _argv(gen.rng, lo, hi)
        if gen.valid(argv, m):
            return argv
    return _items(gen, m, n, n - need_contains, lo, ctx)


def _length_bounds(gen: Maker, m: dict[str, Any], prefix: list[Any], path: str) -> tuple[int, int]:
    """minItems and maxItems, with `items: false` stopping at the prefix, checked against each
    other and the limits; maxItems clamped to the limit (a shorter array is still valid)."""
    lo = count(m, "minItems", path)
    hi = count(m, "maxItems", path, default=None)
    if m.get("items", True) is False:
        if lo > len(prefix):
            raise UnsupportedSchema(
                path, f"minItems {lo} but `items: false` allows only {len(prefix)} items"
            )
        hi = len(prefix) if hi is None else min(hi, len(prefix))
    if hi is not None and lo > hi:
        raise UnsupportedSchema(path, f"minItems {lo} is greater than maxItems {hi}")
    if lo > gen.limits.max_items:
        raise over_limit(path, f"minItems {lo}", gen.limits.max_items, "max_items")
    if hi is None or hi > gen.limits.max_items:
        hi = gen.limits.max_items
    return lo, hi


def _items(
    gen: Maker, m: dict[str, Any], n: int, contains_from: int, lo: int, ctx: Ctx
) -> list[Any]:
    """`n` items: the prefix's schemas, then `items`; from `contains_from` on each also matches
    `contains`. Under uniqueItems a duplicate is drawn again, and the array ends early (when it
    may) if no distinct item turns up."""
    prefix: list[Any] = m.get("prefixItems", [])
    items = m.get("items", True)
    contains = m.get("contains")
    unique = bool(m.get("uniqueItems", False))
    values: list[Any] = []
    seen: set[Hashable] = set()  # canonical forms of the values, for uniqueItems
    for i in range(n):
        base = prefix[i] if i < len(prefix) else items
        sub = {"allOf": [base, contains]} if i >= contains_from else base
        for _ in range(_UNIQUE_ATTEMPTS if unique else 1):
            value = gen.node(sub, ctx.item(i))
            if not unique:
                break
            key = canonical(value, ctx.path, gen.limits.max_depth)
            if key not in seen:
                seen.add(key)
                break
        else:
            if len(values) >= lo and contains is None:
                break  # a shorter array of distinct items is still valid
            raise UnsupportedSchema(
                ctx.path, f"uniqueItems: could not find {n} distinct items for the array"
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
