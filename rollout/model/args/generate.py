# Owns: `generate_arguments`, making up a function call's `arguments` (a JSON value) valid for
# the tool's `parameters` JSON Schema: flattening `$ref`/`allOf` into parts, choosing among
# `anyOf`/`oneOf`/conditional branches, dispatching on type, and checking what it returns.
# Pure and deterministic: no I/O, no clocks, no global state; every random choice comes from the
# caller's `random.Random`, and all work is held to `Limits` (budget.py).
from __future__ import annotations

from collections.abc import Mapping
from random import Random
from typing import Any, Final

from rollout.model.args.budget import (
    DEFAULT_LIMITS,
    MAX_REFS_ON_PATH,
    NESTING_PER_DEPTH,
    REF_REPEATS,
    Budget,
    LimitExceeded,
    Limits,
    UnsupportedSchema,
    over_limit,
)
from rollout.model.args.common import (
    Ctx,
    brief,
    dependent_schemas,
    is_null_schema,
    json_size,
    mentions_ref,
    resolve_pointer,
    schema_list,
    sendable,
    wire_copy,
)
from rollout.model.args.conform import Validator
from rollout.model.args.containers import array_value, object_value
from rollout.model.args.match import Patterns
from rollout.model.args.merge import infer_type, merge
from rollout.model.args.numbers import generate_number
from rollout.model.args.strings import generate_string
from rollout.model.args.vocabulary import Vocabulary


def generate_arguments(
    schema: Mapping[str, Any] | None,
    rng: Random,
    *,
    limits: Limits = DEFAULT_LIMITS,
    budget: Budget | None = None,
    vocabulary: Vocabulary | None = None,
) -> Any:
    """A JSON value (dicts, lists, str, int, float, bool, None) valid for `schema`.

    `None`, `{}` and an object schema without properties give `{}`. Deterministic for a given
    `rng` state; raises UnsupportedSchema (naming the JSON path) when it cannot satisfy `schema`
    within `limits`. `budget` (default: a fresh `Budget(limits.max_steps)`) is charged for the
    work; pass one to see how many steps a call used. With a `vocabulary` (what the conversation
    says) the value reads like a model wrote it: strings from the conversation first, optional
    properties only where the conversation gives a value (vocabulary.py).
    """
    if schema is None or schema is True:
        return {}
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema("$", f"a schema must be a JSON object, got {type(schema).__name__}")
    try:
        gen = _Generator(schema, rng, limits, budget or Budget(limits.max_steps), vocabulary)
        return gen.generate()
    except RecursionError:  # the limits below keep well clear of it; a last line of defence
        raise UnsupportedSchema("$", "the schema nests too deeply to follow") from None


# Recursion through `$ref`: a reference entered more than _SOFT_RECURSION times on one path
# switches its subtree to minimal values (no optional properties, minItems-long arrays,
# null/ref-free branches first); more than REF_REPEATS times means the schema has no finite
# instance.
_SOFT_RECURSION: Final = 2
_P_NULL_FIRST: Final = 0.2  # chance that a nullable value is null
_NODE_ATTEMPTS: Final = 4  # regenerations of a node whose value fails the final check
_MINIMAL_TYPE_ORDER: Final = ("null", "boolean", "integer", "number", "string", "array", "object")
# Keywords the generator does not build values from, only checks values against.
_CHECK_ONLY: Final = ("not", "maxContains", "propertyNames")

_Group = tuple[str, list[Any]]  # ("anyOf" | "oneOf" | ..., branches)


class _NoValidBranch(UnsupportedSchema):
    """Every branch produced a value and none was valid for the whole node (worth a retry)."""


def _entered(ctx: Ctx, ref: str) -> Ctx:
    refs = (*ctx.refs, ref)
    count = refs.count(ref)
    if count > REF_REPEATS or len(refs) > MAX_REFS_ON_PATH:
        raise UnsupportedSchema(
            ctx.path, f"$ref {brief(ref)} recurses without end (no finite value satisfies it)"
        )
    minimal = ctx.minimal or count > _SOFT_RECURSION
    return Ctx(ctx.path, ctx.hint, refs, minimal, ctx.depth)


class _Generator:
    def __init__(
        self,
        root: Mapping[str, Any],
        rng: Random,
        limits: Limits,
        budget: Budget,
        vocab: Vocabulary | None = None,
    ):
        self._root = root
        self.vocab = vocab
        self.rng = rng
        self.limits = limits
        self.budget = budget
        self.patterns = Patterns(budget, limits)  # parsed per call: no shared state
        # Valid both where `format` is asserted and where it is only an annotation (the 2020-12
        # default), so `oneOf`/`not` give the same answer to every validator.
        self._checkers = (
            Validator(self._resolve, self.patterns, formats=True),
            Validator(self._resolve, self.patterns, formats=False),
        )
        self._nodes = 0
        self._nesting = 0  # _node/_from_parts/_collect frames open: Python's stack stays small

    def generate(self) -> Any:
        value = self.node(self._root, Ctx("$", ""))
        cap = self.limits.max_output_chars
        if json_size(value, cap, self.limits.max_depth + 1) is None:
            raise UnsupportedSchema(
                "$", f"the arguments would be over {cap} characters of JSON "
                "(Limits.max_output_chars); not generated",
            )  # fmt: skip
        return value

    # -- schema plumbing ------------------------------------------------------------------

    def valid(self, value: Any, schema: Any) -> bool:
        return all(checker.is_valid(value, schema) for checker in self._checkers)

    def _resolve(self, ref: Any, path: str) -> Any:
        return resolve_pointer(self._root, ref, path)

    def _enter(self, path: str) -> None:
        self._nesting += 1
        limit = NESTING_PER_DEPTH * self.limits.max_depth
        if self._nesting > limit:
            self._nesting -= 1
            what = f"nesting {limit + 1} levels of objects, arrays, $ref, allOf and anyOf choices"
            raise over_limit(path, what, limit, "max_depth, times 4")

    def _collect(self, schema: Any, ctx: Ctx) -> tuple[list[Mapping[str, Any]], list[_Group], Ctx]:
        """Flatten `$ref` and `allOf` into a list of keyword dicts; `anyOf`/`oneOf` stay groups."""
        parts: list[Mapping[str, Any]] = []
        groups: list[_Group] = []
        state = [ctx]

        def visit(s: Any, level: int) -> None:
            if s is True:
                return
            if s is False:
                raise UnsupportedSchema(ctx.path, "the schema is `false`; no value satisfies it")
            if not isinstance(s, Mapping):
                raise UnsupportedSchema(
                    ctx.path, f"a schema must be a JSON object, got {type(s).__name__}"
                )
            if level > self.limits.max_depth:
                what = f"{level} levels of $ref/allOf indirection"
                raise over_limit(ctx.path, what, self.limits.max_depth, "max_depth")
            self.budget.spend(2 + len(s) // 16, ctx.path)
            if "$ref" in s:
                ref = s["$ref"]
                state[0] = _entered(state[0], str(ref))
                visit(self._resolve(ref, ctx.path), level + 1)
            if "allOf" in s:
                for sub in schema_list(s["allOf"], "allOf", ctx.path):
                    visit(sub, level + 1)
            for keyword in ("anyOf", "oneOf"):
                if keyword in s:
                    groups.append((keyword, schema_list(s[keyword], keyword, ctx.path)))
            # Conditionals become choices too: satisfy `if` and `then`, or satisfy `else` (a
            # value that then matches `if` after all is refused by the check of the whole).
            if "if" in s:
                branches = [{"allOf": [s["if"], s.get("then", True)]}, s.get("else", True)]
                groups.append(("if/then/else", branches))
            for name, sub in dependent_schemas(s).items():
                groups.append(("dependentSchemas", [{"required": [name], "allOf": [sub]}, True]))
            parts.append(s)

        visit(schema, 0)
        return parts, groups, state[0]

    def node(self, schema: Any, ctx: Ctx) -> Any:
        self._nodes += 1
        if self._nodes > self.limits.max_nodes:
            raise LimitExceeded(
                ctx.path,
                f"the schema needs too many attempts to satisfy (more than "
                f"{self.limits.max_nodes} values, Limits.max_nodes)",
            )
        self._enter(ctx.path)
        try:
            return self._node(schema, ctx)
        finally:
            self._nesting -= 1

    def _node(self, schema: Any, ctx: Ctx) -> Any:
        self.budget.spend(2, ctx.path)
        parts, groups, ctx = self._collect(schema, ctx)
        # Values are built to satisfy what the generator reads (and anyOf/oneOf branches are
        # checked where chosen); a node is re-checked where it has keywords that are only
        # verified, and the root always, so no unchecked value is returned.
        check = ctx.path == "$" or any(k in part for part in parts for k in _CHECK_ONLY)
        missed: _NoValidBranch | None = None
        for _ in range(_NODE_ATTEMPTS * (2 if groups else 1)):
            try:
                value = self._from_parts(parts, groups, ctx, schema)
            except _NoValidBranch as exc:  # values came out, none valid: another draw may do
                missed = exc
                continue
            if not check or self.valid(value, schema):
                return value
        if missed is not None:
            raise missed
        raise UnsupportedSchema(
            ctx.path,
            "could not generate a value that satisfies the schema (`not`, `maxContains` and "
            "`propertyNames` are only checked, not built towards)",
        )

    def _from_parts(
        self, parts: list[Mapping[str, Any]], groups: list[_Group], ctx: Ctx, whole: Any
    ) -> Any:
        self.budget.spend(1 + (len(parts) + len(groups)) // 8, ctx.path)
        if not groups:
            return self._from_merged(merge(parts, ctx.path, self.patterns), ctx)
        keyword, branches = groups[0]
        first_error: UnsupportedSchema | None = None
        self._enter(ctx.path)
        try:
            for branch in self._order_branches(branches, ctx):
                try:
                    b_parts, b_groups, b_ctx = self._collect(branch, ctx)
                    rest = groups[1:] + b_groups
                    value = self._from_parts(parts + b_parts, rest, b_ctx, whole)
                except LimitExceeded:
                    raise
                except UnsupportedSchema as exc:
                    first_error = first_error or exc
                    continue
                # The whole node's schema decides, so a oneOf value matching two branches is
                # refused.
                if self.valid(value, whole):
                    return value
        finally:
            self._nesting -= 1
        if first_error is None:
            raise _NoValidBranch(ctx.path, f"no {keyword} branch gave a valid value")
        raise UnsupportedSchema(
            ctx.path, f"no {keyword} branch could be satisfied (first failure: {first_error})"
        )

    def _order_branches(self, branches: list[Any], ctx: Ctx) -> list[Any]:
        if ctx.minimal:

            def key(b: Any) -> tuple[bool, bool]:
                return (not is_null_schema(b), mentions_ref(b, self.budget, ctx.path))

            return sorted(branches, key=key)
        ordered = list(branches)
        self.rng.shuffle(ordered)
        nulls = [b for b in ordered if is_null_schema(b)]
        others = [b for b in ordered if not is_null_schema(b)]
        if nulls and self.rng.random() < _P_NULL_FIRST:
            return nulls + others
        return others + nulls

    def _order_types(self, types: list[str], ctx: Ctx) -> list[str]:
        if ctx.minimal:
            return sorted(types, key=_MINIMAL_TYPE_ORDER.index)
        others = [t for t in types if t != "null"]
        self.rng.shuffle(others)
        if "null" not in types:
            return others
        if self.rng.random() < _P_NULL_FIRST:
            return ["null", *others]
        return [*others, "null"]

    # -- one merged schema ----------------------------------------------------------------

    def _copy(self, value: Any, what: str, ctx: Ctx) -> Any:
        """A copy of a schema-given value, once it is known to fit the limits."""
        limits = self.limits
        size = json_size(value, limits.max_output_chars, limits.max_depth - ctx.depth)
        if size is None:
            raise UnsupportedSchema(
                ctx.path,
                f"the {what} value is over Limits.max_output_chars ({limits.max_output_chars}) "
                f"or nests deeper than Limits.max_depth ({limits.max_depth})",
            )
        if not sendable(value):
            raise UnsupportedSchema(
                ctx.path,
                f"the {what} value {brief(value)} holds an integer beyond 64 bits that no JSON "
                "number the server writes equals",
            )
        self.budget.chars(size, ctx.path)
        return wire_copy(value)

    def _from_merged(self, m: dict[str, Any], ctx: Ctx) -> Any:
        if "const" in m:
            value = self._copy(m["const"], "const", ctx)
            rest = {k: v for k, v in m.items() if k != "const"}
            if not self.valid(value, rest):
                raise UnsupportedSchema(
                    ctx.path, f"const {brief(value)} contradicts the other keywords"
                )
            return value
        if "enum" in m:
            rest = {k: v for k, v in m.items() if k != "enum"}
            first = m["enum"][: self.limits.max_enum]  # clamped: later values are not chosen
            options = [e for e in first if self.valid(e, rest) and sendable(e)]
            if not options:
                raise UnsupportedSchema(
                    ctx.path,
                    f"no enum value {brief(m['enum'])} satisfies the other keywords "
                    "(and can be sent exactly: integers beyond 64 bits only as equal floats)",
                )
            return self._copy(self.rng.choice(options), "enum", ctx)
        types: list[str] = m.get("type") or [infer_type(m, ctx.path)]
        first_error: UnsupportedSchema | None = None
        for type_name in self._order_types(types, ctx):
            try:
                return self._typed(type_name, m, ctx)
            except LimitExceeded:
                raise
            except UnsupportedSchema as exc:
                first_error = first_error or exc
        assert first_error is not None
        raise first_error

    def _typed(self, type_name: str, m: dict[str, Any], ctx: Ctx) -> Any:
        if type_name == "object":
            return object_value(self, m, ctx)
        if type_name == "array":
            return array_value(self, m, ctx)
        if type_name == "string":
            return generate_string(m, ctx, self.rng, self.patterns, self.vocab)
        if type_name in ("integer", "number"):
            return generate_number(m, ctx, self.rng, self.budget, integer=type_name == "integer")
        if type_name == "boolean":
            return self.rng.random() < 0.5
        return None
