# SSE framing (protocol.sse): encoder/decoder round trips under any chunking and any of the three
# line endings, multi-line data, comments, id/retry fields and the other WHATWG decoding rules,
# and the size bound on one message.
from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.sse import SSEDecoder, SSEError, SSEMessage, encode_event
from support.strategies import SETTINGS

# An event type: any text without a line break (an empty type decodes as "message").
TYPES = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), min_size=1)
# Data: any bytes; CR and CRLF come back as LF (the format has only one line break in data).
DATA = st.binary(max_size=200) | st.text().map(str.encode)
EVENTS = st.lists(st.tuples(TYPES, DATA), max_size=8)
EOL = st.sampled_from([b"\n", b"\r\n", b"\r"])


def expected(events: list[tuple[str, bytes]]) -> list[SSEMessage]:
    return [
        SSEMessage(kind, data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        for kind, data in events
    ]


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(stream)) for c in cuts})
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]


def decode(chunks: list[bytes], decoder: SSEDecoder | None = None) -> list[SSEMessage]:
    decoder = decoder or SSEDecoder()
    return [message for chunk in chunks for message in decoder.feed(chunk)]


@SETTINGS
@given(events=EVENTS, cuts=st.lists(st.integers(min_value=0, max_value=2000)), eol=EOL)
def test_round_trip_under_any_chunking_and_line_ending(
    events: list[tuple[str, bytes]], cuts: list[int], eol: bytes
) -> None:
    stream = b"".join(encode_event(kind, data) for kind, data in events)
    stream = stream.replace(b"\n", eol)  # data holds no line break of its own once encoded
    decoder = SSEDecoder()
    assert decode(chunked(stream, cuts), decoder) == expected(events)
    assert not decoder.pending


@SETTINGS
@given(events=EVENTS, data=st.data())
def test_byte_by_byte_with_comments_ids_and_unknown_fields(
    events: list[tuple[str, bytes]], data: st.DataObject
) -> None:
    """Comment lines, `id`, `retry` and unknown fields between (and inside) messages change
    nothing about the messages."""
    noise = st.sampled_from(
        [b":", b": keep-alive", b":data: not data", b"id: 7", b"retry: 3000", b"x-other: 1"]
    )
    lines: list[bytes] = []
    for kind, value in events:
        for line in encode_event(kind, value).split(b"\n")[:-2]:
            lines += data.draw(st.lists(noise, max_size=2))
            lines.append(line)
        lines += [b"", *data.draw(st.lists(noise, max_size=2))]
    stream = b"".join(line + b"\n" for line in lines)
    assert decode([bytes([b]) for b in stream]) == expected(events)


def test_the_server_framing_of_a_json_event() -> None:
    payload = orjson.dumps({"type": "response.created", "sequence_number": 0})
    frame = encode_event("response.created", payload)
    assert frame == b"event: response.created\ndata: " + payload + b"\n\n"
    assert encode_event(b"response.created", payload) == frame
    [message] = SSEDecoder().feed(frame)
    assert message == ("response.created", payload)
    event, data = message
    assert orjson.loads(data)["type"] == event


def test_multi_line_data_is_joined_with_lf() -> None:
    assert encode_event("m", b"a\nb\r\nc\rd") == b"event: m\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    stream = b"data: first\ndata:second\ndata:  third\ndata\n\n"
    assert SSEDecoder().feed(stream) == [("message", b"first\nsecond\n third\n")]


def test_whatwg_field_rules() -> None:
    decoder = SSEDecoder()
    stream = (
        b"\xef\xbb\xbf"  # a BOM, dropped
        b": a comment\n"
        b"event: ignored\n\n"  # no data: not dispatched, and the type is reset
        b"data: x\nid: 41\nretry: 1500\n\n"
        b"event:typed\ndata\nid: 4\x002\nretry: soon\n\n"  # id with NUL, non-digit retry: ignored
        b"data:y\rdata: z\r\n\r\n"
        b"event: late\ndata: cut"  # no blank line yet
    )
    assert decoder.feed(stream) == [("message", b"x"), ("typed", b""), ("message", b"y\nz")]
    assert decoder.last_event_id == "41" and decoder.retry == 1500
    assert decoder.pending
    assert decoder.feed(b"\n\n") == [("late", b"cut")]
    assert not decoder.pending


def test_crlf_and_bom_split_across_chunks() -> None:
    decoder = SSEDecoder()
    out = decode([b"\xef", b"\xbb", b"\xbfdata: a\r", b"\n", b"\r", b"\n", b"data: b\r", b"\r"])
    assert out == [("message", b"a"), ("message", b"b")]
    # A CR then an empty chunk then LF is still one line end.
    assert decode([b"data: c\r", b"", b"\n\r\n"], decoder) == [("message", b"c")]
    # A LF alone after a CRLF's LF was consumed is a blank line.
    assert decode([b"data: d\r", b"\n", b"\n"], decoder) == [("message", b"d")]


def test_an_event_type_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        encode_event("a\nb", b"{}")
    with pytest.raises(ValueError, match="line break"):
        encode_event(b"a\r", b"{}")


def test_a_message_over_the_bound_is_refused() -> None:
    decoder = SSEDecoder(max_message_size=100)
    assert decoder.feed(b"data: " + b"x" * 40 + b"\n\n") == [("message", b"x" * 40)]
    decoder.feed(b"data: " + b"x" * 50 + b"\n")
    with pytest.raises(SSEError, match="larger than the limit of 100 bytes"):
        decoder.feed(b"data: " + b"x" * 50 + b"\n")
    with pytest.raises(SSEError):
        decoder.feed(b"\n")  # a refused stream stays refused
    with pytest.raises(SSEError):  # also when the whole message comes in one chunk
        SSEDecoder(max_message_size=10).feed(b"data: " + b"x" * 20 + b"\n\n")


def test_an_endless_line_is_refused_without_a_line_break() -> None:
    decoder = SSEDecoder(max_message_size=1000)
    with pytest.raises(SSEError):
        for _ in range(100):
            decoder.feed(b"y" * 64)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_two_chunk_split(eol: bytes) -> None:
    events = [("a", b"1\n2"), ("b", b""), ("c", b"3")]
    stream = b"".join(encode_event(kind, data) for kind, data in events).replace(b"\n", eol)
    for cut in range(len(stream) + 1):
        assert decode([stream[:cut], stream[cut:]]) == expected(events), cut
