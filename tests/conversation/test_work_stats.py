# Work accounting (rollout.conversation.work): a latency histogram counts each value in the first
# bucket whose bound is at or above it (none past the last bound), and merging a response's work
# into the totals adds every stage's counters.
from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from rollout.conversation.work import BUCKETS, Histogram, Stats, Work


def first_bucket(value: float) -> int | None:
    return next((i for i, bound in enumerate(BUCKETS) if value <= bound), None)


@given(
    st.lists(st.floats(allow_nan=True) | st.sampled_from([*BUCKETS, 0.0, math.inf]), max_size=30)
)
def test_a_value_is_counted_in_the_first_bucket_at_or_above_it(values: list[float]) -> None:
    histogram = Histogram()
    expected = [0] * len(BUCKETS)
    for value in values:
        histogram.observe(value)
        i = first_bucket(value)
        if i is not None:
            expected[i] += 1
    assert histogram.counts == expected and histogram.total == len(values)


def test_a_responses_stages_add_to_the_totals() -> None:
    stats = Stats()
    for items in (1, 2):
        work = Work(keep_spans=False)
        with work.stage("decode", items=items, tokens=10):
            pass
        with work.stage("billing", items=1):
            pass
        stats.record(work)
    decode, billing = stats.totals.counts["decode"], stats.totals.counts["billing"]
    assert (decode.calls, decode.items, decode.tokens) == (2, 3, 20)
    assert (billing.calls, billing.items, billing.tokens) == (2, 2, 0)
    assert decode.seconds >= 0 and stats.responses == 2
    assert stats.latency["decode"].total == 2 and stats.latency["billing"].total == 2
