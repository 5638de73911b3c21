# Error messages repeat what the client sent only in part: `clip` cuts an echoed value (saying
# its length), and a ProtocolError bounds its message and `param` however they were built.
from __future__ import annotations

from protocol import codec
from protocol.errors import ECHO, MAX_MESSAGE, ProtocolError, clip, response_not_found


def test_clip_keeps_short_values_and_cuts_long_ones() -> None:
    assert clip("resp_123") == "resp_123"
    assert clip("x" * ECHO) == "x" * ECHO
    cut = clip("x" * 1_000_000)
    assert cut == "x" * ECHO + "... (1000000 characters)"
    assert clip("abcdef", 3) == "abc... (6 characters)"


def test_messages_of_the_constructors_echo_ids_truncated() -> None:
    assert response_not_found("resp_x").message == "Response with id 'resp_x' not found."
    assert len(response_not_found("r" * 1_000_000).message) < 200


def test_a_protocol_error_bounds_its_message_and_param() -> None:
    exc = ProtocolError(message="m" * 10_000, param="p" * 10_000)
    assert len(exc.message) <= MAX_MESSAGE + 40
    assert exc.param is not None and len(exc.param) <= MAX_MESSAGE + 40


def test_decode_errors_echo_a_huge_value_truncated() -> None:
    for body in (
        {"model": "m", "input": "hi", "shape": "x" * 1_000_000},
        {"model": "m", "input": [{"type": "t" * 1_000_000}]},
        {"model": "m", "input": "hi", "metadata": {"k" * 1_000_000: 1}},
    ):
        try:
            codec.decode_create(body)
        except ProtocolError as exc:
            # (the huge value clipped; the list of supported item types follows it in full)
            assert len(exc.message) < 800, exc.message[:300]
            assert exc.param is not None and len(exc.param) < 200, exc.param[:300]
        else:
            raise AssertionError("accepted")
