"""WebSocket frames as bytes (rollout.server.wsframes): a run's frames joined at once are the
frames one by one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rollout.server.wsframes import text_frame, text_frames

SIZES = st.integers(0, 130) | st.sampled_from([125, 126, 127, 65_535, 65_536, 70_000])


@given(st.lists(SIZES.map(lambda n: b"x" * n), min_size=1, max_size=6))
def test_frames_joined_are_each_frame(payloads: list[bytes]) -> None:
    assert text_frames(payloads) == b"".join(map(text_frame, payloads))


def test_a_short_frame_has_a_two_byte_header() -> None:
    assert text_frames([b"ab", b""]) == b"\x81\x02ab\x81\x00"
