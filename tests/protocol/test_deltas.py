# Delta runs (protocol.deltas): a run's template encoding is byte for byte the codec's encoding of
# its events (with and without a lane's stream_id, as SSE and as JSON), for any delta text and any
# ids, and the stream numbers a run's events in line with the events around it.
from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec, sse
from protocol.deltas import FEW, DeltaRun, encode_run, plain, sse_run
from protocol.events import (
    ArgumentsDeltaEvent,
    CustomInputDeltaEvent,
    ReasoningSummaryDeltaEvent,
    RefusalDeltaEvent,
    TextDeltaEvent,
)
from protocol.response import Response
from protocol.stream import ResponseStream
from support.strategies import SETTINGS

TEXT = st.text()  # any text: quotes, backslashes, control characters, astral planes, "%"
IDS = st.text(min_size=1, max_size=40)
INDEX = st.integers(0, 1 << 40)
FIELDS: dict[type, Any] = {
    TextDeltaEvent: st.tuples(
        st.tuples(st.just("item_id"), IDS),
        st.tuples(st.just("output_index"), INDEX),
        st.tuples(st.just("content_index"), INDEX),
    ),
    RefusalDeltaEvent: st.tuples(
        st.tuples(st.just("item_id"), IDS),
        st.tuples(st.just("output_index"), INDEX),
        st.tuples(st.just("content_index"), INDEX),
    ),
    ArgumentsDeltaEvent: st.tuples(
        st.tuples(st.just("item_id"), IDS), st.tuples(st.just("output_index"), INDEX)
    ),
    ReasoningSummaryDeltaEvent: st.tuples(
        st.tuples(st.just("item_id"), IDS),
        st.tuples(st.just("output_index"), INDEX),
        st.tuples(st.just("summary_index"), INDEX),
    ),
    CustomInputDeltaEvent: st.tuples(
        st.tuples(st.just("item_id"), IDS), st.tuples(st.just("output_index"), INDEX)
    ),
}


@pytest.mark.parametrize("cls", list(FIELDS), ids=lambda c: c.__name__)
@SETTINGS
@given(data=st.data())
def test_a_run_encodes_as_the_codec_encodes_its_events(cls: type, data: st.DataObject) -> None:
    run = DeltaRun(
        cls,
        data.draw(st.integers(0, 70_000) | st.integers(0, 1 << 50)),  # numbers from a table, or not
        data.draw(FIELDS[cls]),
        data.draw(st.lists(TEXT, max_size=12) | st.lists(TEXT, min_size=FEW, max_size=FEW + 8)),
    )
    stream_id = data.draw(st.none() | IDS)
    events = run.events()
    assert [e.delta for e in events] == list(run.deltas)
    assert encode_run(run, stream_id) == [codec.encode_event(e, stream_id) for e in events]
    framed = b"".join(sse.encode_event(e.type, codec.encode_event(e)) for e in events)
    assert sse_run(run) == framed
    if plain("".join(run.deltas)):  # a model's run known to be plain takes the joined path
        assert sse_run(attrs.evolve(run, plain=True)) == framed


ASCII = st.text(st.characters(max_codepoint=0x7F))


@SETTINGS
@given(text=TEXT | ASCII)
def test_a_plain_text_is_what_json_writes_as_it_is(text: str) -> None:
    as_is = orjson.dumps(text) == b'"' + text.encode() + b'"'
    assert not plain(text) or as_is
    if text.isascii():  # exact for ASCII: every character JSON writes as it is
        assert plain(text) == as_is


@SETTINGS
@given(deltas=st.lists(TEXT, min_size=1, max_size=10), k=st.integers(0, 10))
def test_a_split_run_is_the_same_events(deltas: list[str], k: int) -> None:
    run = DeltaRun(ArgumentsDeltaEvent, 7, (("item_id", "fc_1"), ("output_index", 2)), deltas)
    head, tail = run.split(k)
    assert head.events() + tail.events() == run.events()


def test_the_stream_numbers_a_run_between_its_neighbours() -> None:
    s = ResponseStream(Response(id="resp_1", created_at=0, model="m"))
    events: list[Any] = [*s.start(), *s.begin_text("msg_1")]
    run = s.text_run(["It", " is", " sunny"])
    events += run.events()
    events += [s.text_delta("."), *s.end_text()]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].item.content[0].text == "It is sunny."
    assert run.type == "response.output_text.delta"


def test_a_refusal_run_is_refusal_deltas() -> None:
    s = ResponseStream(Response(id="resp_1", created_at=0, model="m"))
    s.start()
    s.begin_text("msg_1", refusal=True)
    run = s.text_run(["No", "."])
    assert run.type == "response.refusal.delta"
    assert all(type(e) is RefusalDeltaEvent for e in run.events())
