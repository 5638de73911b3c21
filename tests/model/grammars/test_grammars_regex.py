# Strings sampled from a regex (rollout.model.grammars.regex) match it in full: for the
# grammar after the OpenAI custom-tools guide's regex example, for patterns hypothesis builds from
# the constructs `re` parses, and the same under the same seed; a pattern nothing can match is
# refused with GrammarUnsupported, never looped on.
from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model.grammars import GrammarUnsupported, regex_sample

#: After the guide's `timestamp` custom tool (format: grammar, syntax: regex).
TIMESTAMP = (
    r"^(?P<month>January|February|March|April|May|June|July|August|September|October|"
    r"November|December)\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?P<year>\d{4})\s+at\s+"
    r"(?P<hour>0?[1-9]|1[0-2])(?P<ampm>AM|PM)$"
)
PATTERNS = [
    TIMESTAMP,
    r"\d{3}-\d{4}",
    r"[A-Z][a-z]+(, [A-Z][a-z]+)*",
    r"(?i)select \w+ from \w+",
    r"[^\s,]{1,8}(,[^\s,]{1,8}){0,3}",
    r"(ab|cd)\1+",
    r"\bgit (status|diff|log -n \d)\b",
    r"[\u00e9-\u00ef]{2}x?",
    r"(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?",
    r"[a-f0-9]{8}(-[a-f0-9]{4}){3}-[a-f0-9]{12}",
    r".{0,5}end",
    r"(?=\d)\w+",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_samples_match_in_full(pattern: str) -> None:
    rng = random.Random(7)
    for _ in range(25):
        assert re.fullmatch(pattern, regex_sample(pattern, rng))


def test_same_seed_same_string() -> None:
    assert regex_sample(TIMESTAMP, random.Random(3)) == regex_sample(TIMESTAMP, random.Random(3))


# Patterns built from pieces: literals, classes, groups, alternation and bounded or open repeats.
_atoms = st.sampled_from(
    [r"a", r"\d", r"\w", r"\s", r"[a-c]", r"[^x]", r".", r"\.", r"[0-9A-F]", r"z"]
)
_quantifiers = st.sampled_from(["", "?", "*", "+", "{2}", "{1,3}", "{0,}", "*?", "+?"])


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    # (small: a backtracking matcher takes exponential time on nested open repeats)
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        if depth < 1 and draw(st.booleans()):
            alts = draw(st.lists(patterns(depth + 1), min_size=1, max_size=2))
            atom = "(" + "|".join(alts) + ")" + draw(st.sampled_from(["", "?", "{2}", "{1,3}"]))
        else:
            atom = draw(_atoms) + draw(_quantifiers)
        parts.append(atom)
    return "".join(parts)


@settings(max_examples=200, deadline=None)
@given(patterns(), st.integers(0, 2**32))
def test_generated_patterns_sample_what_they_match(pattern: str, seed: int) -> None:
    assert re.fullmatch(pattern, regex_sample(pattern, random.Random(seed)))


@pytest.mark.parametrize("pattern", [r"a(?=b)c", r"\d\b\d", r"(", r"x{2}(?<!x)"])
def test_unsatisfiable_or_invalid_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(GrammarUnsupported):
        regex_sample(pattern, random.Random(0))
