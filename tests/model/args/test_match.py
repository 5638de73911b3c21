# Tests for rollout.model.args.match: the bounded pattern matcher gives exactly re.search's
# answer on the subset the parser reads (flags, anchors, lookarounds, counted repetition), and
# does so in work counted by the budget where Python's backtracking engine would not return.
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model.args import DEFAULT_LIMITS, Budget, UnsupportedSchema
from rollout.model.args.match import Patterns

ATOMS = ["a", "b", "ab", ".", "[ab]", "[^a]", "\\d", "\\w", "\\s", "\\b", "\\B", "^", "$"]
ATOMS += ["\\A", "\\Z", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)", "\\.", "{", "\\0", "[a-]", "\\n"]
QUANTIFIERS = ["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{,3}", "{,}", "*?", "+?", "{2,3}?"]

PATTERN = st.recursive(
    st.tuples(st.sampled_from(ATOMS), st.sampled_from(QUANTIFIERS)).map("".join),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.tuples(st.lists(inner, min_size=1, max_size=3), st.sampled_from(QUANTIFIERS)).map(
            lambda t: "(" + "|".join(t[0]) + ")" + t[1]
        ),
    ),
    max_leaves=10,
)
FLAGS = st.sampled_from(["", "(?i)", "(?s)", "(?m)", "(?a)", "(?ms)"])
TEXT = st.text(alphabet="abAB x.\n1_é", max_size=10)


def compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


@given(flags=FLAGS, body=PATTERN, texts=st.lists(TEXT, min_size=1, max_size=5))
@settings(max_examples=1500, deadline=None)
def test_agrees_with_re_search(flags: str, body: str, texts: list[str]) -> None:
    pattern = flags + body
    if not compiles(pattern):
        return
    patterns = Patterns(Budget(10**9), DEFAULT_LIMITS)
    for text in texts:
        try:
            got = patterns.search(pattern, text, "$")
        except UnsupportedSchema:
            return  # outside the subset read exactly (possessive and the like)
        assert got == (re.search(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("(x+x+)+y", "x" * 5000, False),
        ("^(a|a)*$", "a" * 5000 + "b", False),
        ("^(\\w+\\s?)+$", "word " * 1000 + "!", False),
        ("(a*)*(a*)*(a*)*b", "a" * 3000, False),
        ("^(a|aa)+$", "a" * 5000, True),
    ],
)
def test_backtracking_prone_patterns_take_bounded_work(
    pattern: str, text: str, expected: bool
) -> None:
    budget = Budget(10**7)
    assert Patterns(budget, DEFAULT_LIMITS).search(pattern, text, "$") is expected
    assert budget.used < 200_000  # linear in the text per pattern node, not exponential


@pytest.mark.parametrize(
    "pattern", ["(a)\\1", "(?i:a)", "(?x) a", "a*+", "(?>a)", "(?(1)a|b)", "(?P=n)"]
)
def test_constructs_outside_the_subset_are_refused(pattern: str) -> None:
    with pytest.raises(UnsupportedSchema, match=r"does not match|not a valid regex"):
        Patterns(Budget(10**6), DEFAULT_LIMITS).search(pattern, "a", "$.p")
