# Tests for the limits of rollout.model.args: schemas asking for huge strings, arrays or objects,
# deep nesting, huge or nested regex quantifiers and backtracking-prone patterns either fail fast
# with an UnsupportedSchema naming the limit and the path, or get a clamped value that validates.
# Boundedness is shown by the work budget (steps counted, never time measured).
from __future__ import annotations

import random
import re
import sys
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rollout.model.args import (
    DEFAULT_LIMITS,
    Budget,
    LimitExceeded,
    Limits,
    UnsupportedSchema,
    generate_arguments,
)
from rollout.model.args.common import resolve_pointer
from rollout.model.args.conform import Validator
from rollout.model.args.match import Patterns

# Failing fast: a schema that is refused for a limit is refused after a handful of steps.
FAST = 200


def prop(schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}, "required": ["x"]}


def refused(schema: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[UnsupportedSchema, Budget]:
    budget = Budget(limits.max_steps)
    with pytest.raises(UnsupportedSchema) as info:
        generate_arguments(schema, random.Random(0), limits=limits, budget=budget)
    assert budget.used <= budget.limit
    return info.value, budget


def generated(schema: Any, limits: Limits = DEFAULT_LIMITS, seed: int = 0) -> tuple[Any, Budget]:
    budget = Budget(limits.max_steps)
    value = generate_arguments(schema, random.Random(seed), limits=limits, budget=budget)
    assert budget.used <= budget.limit
    orjson.dumps(value)  # what the server sends
    return value, budget


def assert_valid(schema: Any, value: Any) -> None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = [e.message for e in validator.iter_errors(value)]
    assert not errors, errors


def own_validator_accepts(schema: Any, value: Any) -> bool:
    """The generator's own validator (bounded matcher, budget of its own)."""
    patterns = Patterns(Budget(10**8), DEFAULT_LIMITS)
    resolve = lambda ref, path: resolve_pointer(schema, ref, path)  # noqa: E731
    return Validator(resolve, patterns, formats=True).is_valid(value, schema)


# -- the reported cases -------------------------------------------------------------------------


def test_a_billion_repetitions_fail_fast_naming_the_limit() -> None:
    error, budget = refused(prop({"type": "string", "pattern": "^a{1000000000}$"}))
    assert error.path == "$.x"
    assert "'^a{1000000000}$'" in str(error)
    assert "Limits.max_string_length" in str(error)
    assert budget.used < FAST


@pytest.mark.parametrize("length", [10**8, 10**12])
def test_huge_min_length_fails_fast(length: int) -> None:
    error, budget = refused(prop({"type": "string", "minLength": length}))
    assert str(error) == (
        f"$.x: minLength {length} is over the limit of 10000 (Limits.max_string_length)"
    )
    assert budget.used < FAST


@pytest.mark.parametrize("length", [10**8, 10**12])
def test_huge_max_length_is_clamped(length: int) -> None:
    schema = prop({"type": "string", "minLength": 3, "maxLength": length})
    for seed in range(5):
        value, _ = generated(schema, seed=seed)
        assert 3 <= len(value["x"]) <= DEFAULT_LIMITS.max_string_length
        assert_valid(schema, value)


def test_huge_min_items_fails_fast_and_huge_max_items_is_clamped() -> None:
    error, budget = refused(prop({"type": "array", "minItems": 10**12}))
    assert str(error) == "$.x: minItems 1000000000000 is over the limit of 1000 (Limits.max_items)"
    assert budget.used < FAST
    schema = prop(
        {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 10**12}
    )
    value, _ = generated(schema)
    assert 2 <= len(value["x"]) <= DEFAULT_LIMITS.max_items
    assert_valid(schema, value)
    error, _ = refused(prop({"type": "array", "contains": {"type": "null"}, "minContains": 10**9}))
    assert "minContains 1000000000" in str(error) and "Limits.max_items" in str(error)


def test_huge_min_properties_fails_fast_and_huge_max_properties_is_clamped() -> None:
    error, budget = refused(prop({"type": "object", "minProperties": 10**12}))
    assert "minProperties 1000000000000" in str(error) and "Limits.max_properties" in str(error)
    assert budget.used < FAST
    schema = prop({"type": "object", "minProperties": 3, "maxProperties": 10**12})
    value, _ = generated(schema)
    assert 3 <= len(value["x"]) <= DEFAULT_LIMITS.max_properties
    assert_valid(schema, value)


def chain_of_refs(n: int) -> dict[str, Any]:
    """x -> a0 -> a1 -> ... -> a{n} (a string): indirection only, no nesting."""
    defs: dict[str, Any] = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(n)}
    defs[f"a{n}"] = {"type": "string"}
    return {"$defs": defs, **prop({"$ref": "#/$defs/a0"})}


def nested_refs(n: int) -> dict[str, Any]:
    """x -> {n: a1} -> {n: a2} ...: each level an object that requires the next."""
    defs: dict[str, Any] = {
        f"a{i}": {
            "type": "object",
            "properties": {"n": {"$ref": f"#/$defs/a{i + 1}"}},
            "required": ["n"],
        }
        for i in range(n)
    }
    defs[f"a{n}"] = {"type": "string"}
    return {"$defs": defs, **prop({"$ref": "#/$defs/a0"})}


def test_deep_ref_chains_and_nesting_fail_fast_naming_the_limit() -> None:
    error, budget = refused(chain_of_refs(1000))
    assert str(error) == (
        "$.x: 33 levels of $ref/allOf indirection is over the limit of 32 (Limits.max_depth)"
    )
    assert budget.used < 1000
    error, budget = refused(nested_refs(1000))
    assert error.path == "$.x" + ".n" * 31
    assert "nesting objects and arrays 33 deep" in str(error) and "Limits.max_depth" in str(error)
    assert budget.used < 5000
    # Within the limits the same shapes generate.
    for schema in (chain_of_refs(20), nested_refs(20)):
        value, _ = generated(schema)
        assert_valid(schema, value)


def test_deep_self_recursion_ends_with_an_error_not_a_recursion_error() -> None:
    schema = {
        "$defs": {
            "node": {
                "allOf": [{"$ref": "#/$defs/node"}],
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/node"}},
                "required": ["next"],
            }
        },
        **prop({"$ref": "#/$defs/node"}),
    }
    error, _ = refused(schema)
    assert error.path.startswith("$.x")
    deep_all_of: Any = {"type": "string"}
    for _ in range(500):
        deep_all_of = {"allOf": [deep_all_of]}
    error, _ = refused(prop(deep_all_of))
    assert "Limits.max_depth" in str(error)
    deep_const: Any = 1
    for _ in range(900):
        deep_const = [deep_const]
    error, _ = refused(prop({"const": deep_const}))
    assert "Limits.max_depth" in str(error)


def test_nested_quantifiers_are_bounded() -> None:
    error, budget = refused(prop({"type": "string", "pattern": "^(a{1000}){1000}$"}))
    assert "matches no string shorter than 1000000 characters" in str(error)
    assert budget.used < FAST
    # No minimum to refuse, but a billion possible rounds: sampled within the budget.
    schema = prop({"type": "string", "pattern": "^((a{0,1000}){0,1000}){0,1000}$", "minLength": 50})
    value, _ = generated(schema)
    assert_valid(schema, value)
    # Rounds that match nothing, a billion times over: bounded by the budget, then an error.
    error, budget = refused(prop({"type": "string", "pattern": "^(a?){1000000000}$"}))
    assert isinstance(error, LimitExceeded) and "Limits.max_steps" in str(error)
    assert budget.used <= budget.limit


def test_backtracking_prone_patterns_are_matched_in_bounded_work() -> None:
    # Python's re takes exponential time for (x+x+)+y on a run of x's; the generator does not.
    unsatisfiable = prop(
        {"type": "string", "allOf": [{"pattern": "(x+x+)+y"}, {"pattern": "^x{20}$"}]}
    )
    error, _ = refused(unsatisfiable)
    assert error.path == "$.x" and "could not generate a string" in str(error)
    schema = prop({"type": "string", "pattern": "^(a|aa)*$", "minLength": 60})
    value, _ = generated(schema)
    assert re.fullmatch("(a|aa)*", value["x"]) and len(value["x"]) >= 60
    # Property names from the schema are matched against patternProperties the same way.
    name = "a" * 5000 + "!"
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"}},
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "required": [name],
    }
    value, _ = generated(schema)
    assert isinstance(value[name], int)


def test_an_over_limit_optional_property_is_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "string"}, "huge": {"type": "string", "minLength": 10**9}},
        "required": ["ok"],
    }
    for seed in range(10):
        value, _ = generated(schema, seed=seed)
        assert set(value) == {"ok"}


def test_huge_enums_are_clamped_to_their_first_values() -> None:
    schema = prop({"enum": list(range(100_000))})
    for seed in range(3):
        value, _ = generated(schema, seed=seed)
        assert 0 <= value["x"] < DEFAULT_LIMITS.max_enum


def test_the_budget_ends_a_call_that_needs_more_steps() -> None:
    schema = prop({"type": "array", "minItems": 200, "items": {"type": "string", "minLength": 50}})
    generated(schema)  # fine with the default budget
    small = Limits(max_steps=500)
    error, budget = refused(schema, small)
    assert isinstance(error, LimitExceeded)
    assert "work budget of 500 steps (Limits.max_steps)" in str(error)
    assert budget.used <= 500


def test_limits_are_configurable() -> None:
    tight = Limits(max_string_length=8, max_items=2)
    error, _ = refused(prop({"type": "string", "minLength": 9}), tight)
    assert "over the limit of 8 (Limits.max_string_length)" in str(error)
    value, _ = generated(prop({"type": "array", "items": {"type": "string"}}), tight)
    assert len(value["x"]) <= 2 and all(len(s) <= 8 for s in value["x"])
    error, _ = refused(prop({"type": "string"}), Limits(max_output_chars=4))
    assert "Limits.max_output_chars" in str(error)


def test_numbers_beyond_64_bits_are_sent_as_floats() -> None:
    schema = prop({"type": "integer", "minimum": 1e20, "maximum": 1e21})
    value, _ = generated(schema)
    assert float(value["x"]).is_integer() and 1e20 <= value["x"] <= 1e21
    assert_valid(schema, value)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a{99999999999}", "is not a valid regex"),
        ("(a)\\1", "backreferences"),
        ("a" * 5000, "Limits.max_pattern_length"),
        ("(" * 40 + "a" + ")" * 40, "Limits.max_depth"),
    ],
)
def test_patterns_beyond_reach_are_refused(pattern: str, message: str) -> None:
    error, budget = refused(prop({"type": "string", "pattern": pattern}))
    assert error.path == "$.x" and message in str(error)
    assert budget.used < 10_000


# -- adversarial schemas ------------------------------------------------------------------------

HUGE = st.sampled_from([0, 1, 2, 5, 40, 1000, 10_001, 10**6, 10**8, 10**9, 10**12, 2**63, 10**30])
NUMBER = st.one_of(HUGE, st.sampled_from([-1e308, 1e308, 0.1, 1e-300, -5, 2.5, 1e20]))
ATOM = st.sampled_from(["a", "x", ".", "\\d", "\\w", "[a-z]", "[^/]", "\\b", "^", "$", "(?=a)"])
QUANTIFIER = st.one_of(
    st.sampled_from(["", "*", "+", "?", "*?", "{,}"]),
    HUGE.map(lambda n: f"{{{min(n, 4_294_967_294)}}}"),
    st.tuples(HUGE, HUGE).map(lambda t: f"{{{min(t)},{min(max(t), 4_294_967_294)}}}"),
)
PATTERN = st.recursive(
    st.tuples(ATOM, QUANTIFIER).map("".join),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.tuples(inner, QUANTIFIER).map(lambda t: f"({t[0]}){t[1]}"),
        st.tuples(inner, inner, QUANTIFIER).map(lambda t: f"(?:{t[0]}|{t[1]}){t[2]}"),
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["a", "b", "cmd", "path", "n"])
LEAF = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": HUGE,
            "maxLength": HUGE,
            "pattern": PATTERN,
            "format": st.sampled_from(["email", "uri", "date", "hostname", "regex"]),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": NUMBER,
            "maximum": NUMBER,
            "exclusiveMinimum": NUMBER,
            "multipleOf": st.sampled_from([1, 3, 0.1, 1e-300, 7e20, 2**40]),
        },
    ),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), min_size=1, max_size=5).map(
        lambda values: {"enum": values}
    ),
    st.sampled_from([{"$ref": "#"}, {"$ref": "#/$defs/d"}, {"type": "null"}, {}]),
)


def nest(schema: Any, depth: int) -> Any:
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("array")},
            optional={
                "items": inner,
                "prefixItems": st.lists(inner, max_size=3),
                "minItems": HUGE,
                "maxItems": HUGE,
                "uniqueItems": st.booleans(),
                "contains": inner,
                "minContains": HUGE,
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=3, unique=True),
                "minProperties": HUGE,
                "maxProperties": HUGE,
                "patternProperties": st.dictionaries(PATTERN, inner, max_size=2),
                "additionalProperties": st.one_of(st.booleans(), inner),
            },
        ),
        st.lists(inner, min_size=1, max_size=4).map(lambda xs: {"allOf": xs}),
        st.lists(inner, min_size=1, max_size=4).map(lambda xs: {"anyOf": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"oneOf": xs}),
        inner.map(lambda x: {"not": x}),
        st.tuples(inner, st.integers(1, 300)).map(lambda t: nest(*t)),
    )


SCHEMA = st.tuples(st.recursive(LEAF, _containers, max_leaves=12), LEAF).map(
    lambda t: {**t[0], "$defs": {"d": t[1]}}
)
ADVERSARIAL_LIMITS = Limits(max_steps=20_000)


class CallCounter:
    """Counts Python and C function calls while active: a measure of work that is not time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            self.calls += 1

    def __enter__(self) -> CallCounter:
        sys.setprofile(self)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


@given(schema=SCHEMA, seed=st.integers(0, 2**32))
@example(schema={**prop({"enum": [2**64]}), "$defs": {"d": {}}}, seed=0)  # orjson refused it
# A 308-digit bound: every candidate fails, and exact checks cost ~75 calls per step.
@example(
    schema={"type": "integer", "exclusiveMinimum": 1e308, "$defs": {"d": {"type": "string"}}},
    seed=0,
)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_adversarial_schemas_fail_or_validate_within_the_budget(schema: Any, seed: int) -> None:
    budget = Budget(ADVERSARIAL_LIMITS.max_steps)
    with CallCounter() as counter:
        try:
            value = generate_arguments(
                schema, random.Random(seed), limits=ADVERSARIAL_LIMITS, budget=budget
            )
        except UnsupportedSchema as exc:
            assert str(exc).startswith(exc.path)
            value = exc
    assert budget.used <= ADVERSARIAL_LIMITS.max_steps
    # The steps account for the work: calls stay proportional to them, whatever the schema
    # asks for (unaccounted loops would show up here as calls without steps).
    assert counter.calls <= 40 * budget.used + 2_000, (counter.calls, budget.used)
    if not isinstance(value, UnsupportedSchema):
        assert own_validator_accepts(schema, value), value
        orjson.dumps(value)


# -- enum and const values beyond 64 bits ---------------------------------------------------------


def test_the_hypothesis_example_with_an_enum_integer_beyond_64_bits() -> None:
    # Found by test_adversarial_schemas_fail_or_validate_within_the_budget: orjson (what the
    # server sends arguments with) refused the chosen enum value.
    schema = {**prop({"enum": [18446744073709551616]}), "$defs": {"d": {}}}
    value, _ = generated(schema)
    assert value == {"x": 2**64} and isinstance(value["x"], float)
    assert own_validator_accepts(schema, value)
    assert_valid(schema, value)


def test_enum_and_const_integers_beyond_64_bits_go_out_as_equal_floats_or_not_at_all() -> None:
    value, _ = generated(prop({"type": "integer", "const": -(2**70)}))
    assert value == {"x": -(2**70)}
    for seed in range(10):  # 2**64 + 1 has no equal float: never chosen
        value, _ = generated(prop({"enum": [2**64 + 1, [2**65], "a"]}), seed=seed)
        assert value["x"] in ([2**65], "a")
    assert generated(prop({"enum": [2**64 - 1]}))[0] == {"x": 2**64 - 1}  # orjson writes it
    error, _ = refused(prop({"const": {"n": [2**64 + 1]}}))
    assert error.path == "$.x" and "beyond 64 bits" in str(error)
    error, _ = refused(prop({"enum": [2**64 + 1, 10**400]}))
    assert error.path == "$.x" and "beyond 64 bits" in str(error)
