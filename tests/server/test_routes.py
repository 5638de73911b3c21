# Routing (rollout.server.resources): a path equal to a literal pattern is looked up at once, and
# routed exactly as the general match (the first pattern of ROUTES that fits) routes it, for any
# path made of the patterns' own segments and others.
from __future__ import annotations

import hypothesis
import hypothesis.strategies as st

from rollout.server.resources import LITERAL, ROUTES, match, resolve

SEGMENTS = [*sorted({s for pattern in ROUTES for s in pattern if s != "{id}"}), "", "x", "resp_1"]


def test_every_literal_pattern_is_looked_up_and_none_is_lost() -> None:
    assert ("v1", "responses") in LITERAL
    for pattern in ROUTES:
        if "{id}" not in pattern:
            assert resolve(pattern) == match(pattern)


@hypothesis.given(st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=5), max_size=6))
def test_a_path_is_resolved_as_the_general_match_resolves_it(parts: list[str]) -> None:
    path = tuple(parts) or ("",)
    assert resolve(path) == match(path)
