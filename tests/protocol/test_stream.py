# The event builders (protocol.stream.ResponseStream) against the exact sequences of spec §2.5
# (text, parallel function calls, hosted web search with citations) and the append shape's pause
# (append-protocol.md): event order, contiguous sequence numbers, output indices, final snapshots.
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import codec
from protocol import events as ev
from protocol import items as it
from protocol.response import Response, Usage
from protocol.stream import ResponseStream, _ended_call
from support.events import START, TEXT_CLOSE, TEXT_OPEN, WEB_SEARCH_CALL, text_answer_types
from support.strategies import SETTINGS, function_calls

USAGE = Usage.of(input_tokens=10, cached_tokens=4, output_tokens=7)
deltas = st.lists(st.text(max_size=8), max_size=6)


def new_stream(**fields: Any) -> ResponseStream:
    return ResponseStream(Response(id="resp_1", created_at=100, model="m", **fields))


def types_of(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def assert_numbered_from_zero(events: list[Any]) -> None:
    assert [e.sequence_number for e in events] == list(range(len(events)))


def assert_wire_round_trip(events: list[Any]) -> None:
    for event in events:
        assert codec.decode_event(codec.encode_event(event)) == event


def citation(i: int) -> it.UrlCitation:
    return it.UrlCitation(url=f"https://e.com/{i}", title=f"t{i}", start_index=i, end_index=i + 1)


# -- (a) a text answer --------------------------------------------------------------------------


@SETTINGS
@given(deltas)
def test_text_answer_sequence(chunks: list[str]) -> None:
    s = new_stream()
    events = [
        *s.start(),
        *s.begin_text("msg_1"),
        *(s.text_delta(d) for d in chunks),
        *s.end_text(),
        *s.complete(USAGE, completed_at=200),
    ]
    full = "".join(chunks)
    assert types_of(events) == text_answer_types(len(chunks))
    assert_numbered_from_zero(events)
    created, in_progress, added, part_added, *rest = events
    *text_deltas, text_done, part_done, item_done, completed = rest

    for lifecycle in (created, in_progress):
        assert lifecycle.response.status == "in_progress"
        assert lifecycle.response.output == []
        assert lifecycle.response.usage is None
        assert lifecycle.response.completed_at is None

    assert added.output_index == 0
    assert added.item == it.Message(id="msg_1", role="assistant", content=(), status="in_progress")
    assert (part_added.item_id, part_added.output_index, part_added.content_index) == (
        "msg_1",
        0,
        0,
    )
    assert part_added.part == it.OutputText(text="")
    assert codec.to_json(part_added.part) == {
        "type": "output_text",
        "text": "",
        "annotations": [],
        "logprobs": [],
    }
    for delta, chunk in zip(text_deltas, chunks, strict=True):
        assert (delta.item_id, delta.output_index, delta.content_index) == ("msg_1", 0, 0)
        assert delta.delta == chunk
        assert codec.to_json(delta)["logprobs"] == []
    assert (text_done.item_id, text_done.output_index, text_done.content_index) == ("msg_1", 0, 0)
    assert text_done.text == full
    assert part_done.part == it.OutputText(text=full)
    assert item_done.output_index == 0
    final = it.Message(id="msg_1", role="assistant", content=(part_done.part,), status="completed")
    assert item_done.item == final

    assert completed.response.status == "completed"
    assert completed.response.completed_at == 200
    assert completed.response.usage == USAGE
    assert completed.response.output == [final]
    assert s.response.output == [final]
    assert s.terminal is completed
    assert_wire_round_trip(events)


def test_text_events_on_the_wire() -> None:
    s = new_stream()
    events = [*s.start(), *s.begin_text("msg_1"), s.text_delta("Hi"), *s.end_text()]
    wire = [orjson.loads(codec.encode_event(e)) for e in events]
    assert wire[2]["item"] == {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [],
        "status": "in_progress",
    }
    assert wire[4] == {
        "type": "response.output_text.delta",
        "sequence_number": 4,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "Hi",
        "logprobs": [],
    }
    assert wire[-1]["item"]["content"] == [
        {"type": "output_text", "text": "Hi", "annotations": [], "logprobs": []}
    ]
    assert wire[0]["response"]["usage"] is None
    assert wire[0]["response"]["output"] == []


# -- (b) two parallel function calls ------------------------------------------------------------


@SETTINGS
@given(deltas, deltas)
def test_two_parallel_function_calls(first: list[str], second: list[str]) -> None:
    s = new_stream()
    events = [*s.start()]
    calls = [("fc_1", "call_1", "search", first), ("fc_2", "call_2", "fetch", second)]
    for index, (item_id, call_id, name, chunks) in enumerate(calls):
        assert s.next_output_index == index
        events += s.begin_call(item_id, call_id, name)
        events += [s.arguments_delta(index, d) for d in chunks]
        events += s.end_call(index, "".join(chunks))
    events += s.complete(USAGE, completed_at=300)

    per_call = [
        [
            "response.output_item.added",
            *["response.function_call_arguments.delta"] * len(chunks),
            "response.function_call_arguments.done",
            "response.output_item.done",
        ]
        for *_, chunks in calls
    ]
    assert types_of(events) == [
        "response.created",
        "response.in_progress",
        *per_call[0],
        *per_call[1],
        "response.completed",
    ]
    assert_numbered_from_zero(events)
    assert not any(isinstance(e, ev.ContentPartEvent) for e in events)

    body = events[2:-1]
    finals = []
    for index, (item_id, call_id, name, chunks) in enumerate(calls):
        span, body = body[: len(chunks) + 3], body[len(chunks) + 3 :]
        added, *arg_deltas, done, item_done = span
        assert added.output_index == index
        assert added.item == it.FunctionCall(
            id=item_id, call_id=call_id, name=name, arguments="", status="in_progress"
        )
        for delta, chunk in zip(arg_deltas, chunks, strict=True):
            assert (delta.item_id, delta.output_index, delta.delta) == (item_id, index, chunk)
        assert isinstance(done, ev.ArgumentsDoneEvent)
        assert (done.item_id, done.output_index, done.name) == (item_id, index, name)
        assert done.arguments == "".join(chunks)
        assert item_done.output_index == index
        assert item_done.item == it.FunctionCall(
            id=item_id, call_id=call_id, name=name, arguments=done.arguments, status="completed"
        )
        finals.append(item_done.item)
    assert body == []

    completed = events[-1]
    assert completed.response.status == "completed"
    assert completed.response.output == finals
    assert_wire_round_trip(events)


# -- (c) hosted web search, then a cited answer -------------------------------------------------


def test_web_search_then_cited_text() -> None:
    s = new_stream()
    action = it.SearchAction(query="weather paris", sources=(it.UrlSource(url="https://e.com/0"),))
    events = [*s.start(), *s.begin_web_search("ws_1"), *s.end_web_search(0, action)]
    events += s.begin_text("msg_1")
    events += [
        s.text_delta("It is "),
        s.annotate(citation(0)),
        s.text_delta("sunny"),
        s.annotate(citation(1)),
        s.text_delta("."),
    ]
    events += s.end_text()
    events += s.complete(USAGE, completed_at=400)

    assert types_of(events) == [
        *START,
        *WEB_SEARCH_CALL,
        *TEXT_OPEN,
        "response.output_text.delta",
        "response.output_text.annotation.added",
        "response.output_text.delta",
        "response.output_text.annotation.added",
        "response.output_text.delta",
        *TEXT_CLOSE,
        "response.completed",
    ]
    assert_numbered_from_zero(events)

    search_added, *search_events, search_done = events[2:7]
    assert search_added.output_index == 0
    assert search_added.item == it.WebSearchCall(id="ws_1", status="in_progress")
    assert search_added.item.action is None
    for e in search_events:
        assert (e.output_index, e.item_id) == (0, "ws_1")
    assert search_done.output_index == 0
    assert search_done.item == it.WebSearchCall(id="ws_1", status="completed", action=action)
    assert codec.to_json(search_done.item)["action"] == {
        "type": "search",
        "query": "weather paris",
        "sources": [{"type": "url", "url": "https://e.com/0"}],
    }

    text_events = events[7:-1]
    assert all(e.output_index == 1 for e in text_events)
    annotations = [e for e in text_events if isinstance(e, ev.AnnotationAddedEvent)]
    assert [a.annotation_index for a in annotations] == [0, 1]
    assert [a.annotation for a in annotations] == [citation(0), citation(1)]
    assert all((a.item_id, a.content_index) == ("msg_1", 0) for a in annotations)

    text_done, part_done, item_done = text_events[-3:]
    assert text_done.text == "It is sunny."
    expected = it.OutputText(text="It is sunny.", annotations=(citation(0), citation(1)))
    assert part_done.part == expected
    assert item_done.item.content == (expected,)
    assert codec.to_json(part_done.part)["annotations"][1] == {
        "type": "url_citation",
        "url": "https://e.com/1",
        "title": "t1",
        "start_index": 1,
        "end_index": 2,
    }
    completed = events[-1]
    assert completed.response.output == [search_done.item, item_done.item]
    assert_wire_round_trip(events)


def test_annotation_index_restarts_for_each_message() -> None:
    s = new_stream()
    s.start()
    s.begin_text("msg_1")
    assert s.annotate(citation(0)).annotation_index == 0
    assert s.annotate(citation(1)).annotation_index == 1
    s.end_text()
    s.begin_text("msg_2")
    second = s.annotate(citation(2))
    assert (second.annotation_index, second.output_index, second.item_id) == (0, 1, "msg_2")


def test_text_builders_need_an_open_text_item() -> None:
    s = new_stream()
    s.start()
    with pytest.raises(RuntimeError):
        s.text_delta("x")
    with pytest.raises(RuntimeError):
        s.annotate(citation(0))
    with pytest.raises(RuntimeError):
        s.end_text()


# -- (d) the append shape, terminal events, failure, snapshots ----------------------------------


def call_step(s: ResponseStream, item_id: str, call_id: str, name: str) -> list[Any]:
    index = s.next_output_index
    return [
        *s.begin_call(item_id, call_id, name),
        s.arguments_delta(index, "{}"),
        *s.end_call(index, "{}"),
    ]


def test_append_pause_keeps_counting() -> None:
    s = new_stream()
    events = [*s.start(), *call_step(s, "fc_1", "call_1", "exec")]
    events += call_step(s, "fc_2", "call_2", "read")
    calls = [e.item for e in events if e.type == "response.output_item.done"]
    pause = s.pause(calls, USAGE)
    events.append(pause)

    assert isinstance(pause, ev.PauseEvent)
    assert pause.type == "response.done"
    assert pause.sequence_number == len(events) - 1
    assert pause.response_id == "resp_1"
    assert pause.pending_calls == (
        ev.PendingCall(call_id="call_1", name="exec", item_id="fc_1"),
        ev.PendingCall(call_id="call_2", name="read", item_id="fc_2"),
    )
    assert pause.usage == USAGE
    wire = orjson.loads(codec.encode_event(pause))
    assert "response" not in wire
    assert wire["pending_calls"][0] == {"call_id": "call_1", "name": "exec", "item_id": "fc_1"}

    assert s.next_output_index == 2  # appended input is not output
    events += call_step(s, "fc_3", "call_3", "exec")
    events.append(s.pause([events[-1].item], USAGE + USAGE))
    events += s.begin_text("msg_1")
    events.append(s.text_delta("done"))
    events += s.end_text()
    events += s.complete(USAGE + USAGE, completed_at=500)

    assert_numbered_from_zero(events)
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [e.output_index for e in added] == [0, 1, 2, 3]
    assert [e.type for e in events].count("response.done") == 2
    terminals = [e for e in events if e.type in ev.TERMINAL_TYPES]
    assert terminals == [events[-1]]
    assert [getattr(i, "id", None) for i in events[-1].response.output] == [
        "fc_1",
        "fc_2",
        "fc_3",
        "msg_1",
    ]
    assert_wire_round_trip(events)


@pytest.mark.parametrize(
    "second",
    [
        lambda s: s.complete(USAGE, completed_at=2),
        lambda s: s.incomplete("max_output_tokens", USAGE),
        lambda s: s.fail("server_error", "boom"),
    ],
    ids=["complete", "incomplete", "fail"],
)
def test_exactly_one_terminal_event(second: Any) -> None:
    s = new_stream()
    s.start()
    (terminal,) = s.complete(USAGE, completed_at=1)
    assert terminal.type == "response.completed"
    assert s.terminal is terminal
    with pytest.raises(RuntimeError):
        second(s)
    assert s.terminal is terminal
    assert terminal.response.status == "completed"


@pytest.mark.parametrize(
    "second",
    [
        lambda s: s.complete(Usage(), completed_at=2),
        lambda s: s.incomplete("max_output_tokens", Usage()),
        lambda s: s.fail("server_error", "boom"),
    ],
    ids=["complete", "incomplete", "fail"],
)
def test_refused_second_terminal_leaves_response_untouched(second: Any) -> None:
    s = new_stream()
    s.start()
    s.complete(USAGE, completed_at=1)
    before = s.response.snapshot()
    seq = s.next_sequence_number
    with pytest.raises(RuntimeError):
        second(s)
    assert s.response == before
    assert s.next_sequence_number == seq


def test_incomplete_terminal() -> None:
    s = new_stream()
    events = [*s.start(), *s.begin_text("msg_1"), s.text_delta("partial"), *s.end_text()]
    events += s.incomplete("max_output_tokens", USAGE)
    assert_numbered_from_zero(events)
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert last.response.usage == USAGE


def test_fail_emits_error_then_failed() -> None:
    s = new_stream()
    events = [*s.start(), *s.begin_text("msg_1"), s.text_delta("par")]
    events += s.fail("server_error", "The model failed to generate a response.")
    assert types_of(events)[-2:] == ["error", "response.failed"]
    assert_numbered_from_zero(events)
    error, failed = events[-2:]
    assert error.error == ev.ErrorPayload(
        type="server_error",
        code="server_error",
        message="The model failed to generate a response.",
        param=None,
    )
    wire = orjson.loads(codec.encode_event(error))
    assert wire["type"] == "error"
    assert wire["sequence_number"] == len(events) - 2
    assert wire["error"] == {
        "type": "server_error",
        "code": "server_error",
        "message": "The model failed to generate a response.",
        "param": None,
    }
    assert orjson.loads(codec.encode_sse_event(error)) == {
        "type": "error",
        "code": "server_error",
        "message": "The model failed to generate a response.",
        "param": None,
        "sequence_number": len(events) - 2,
    }
    assert failed.response.status == "failed"
    assert failed.response.error.code == "server_error"
    assert failed.response.error.message == "The model failed to generate a response."
    assert s.terminal is failed
    with pytest.raises(RuntimeError):
        s.text_delta("more")  # the open text item was closed by the failure
    assert_wire_round_trip(events)


def test_lifecycle_events_carry_snapshots() -> None:
    s = new_stream()
    created, in_progress = s.start()
    assert created.response is not s.response
    assert in_progress.response is created.response  # one snapshot: nothing changed between
    s.begin_text("msg_1")
    s.text_delta("x")
    s.end_text()
    s.response.output.append(it.ItemReference(id="ref_1"))
    (completed,) = s.complete(USAGE, completed_at=9)
    assert created.response.output == []
    assert in_progress.response.output == []
    assert created.response.status == "in_progress"
    assert created.response.usage is None
    assert created.response.completed_at is None
    assert len(completed.response.output) == 2
    s.response.output.clear()
    assert len(completed.response.output) == 2


def test_created_only_and_counters() -> None:
    s = new_stream()
    assert (s.next_sequence_number, s.next_output_index) == (0, 0)
    (created,) = s.created_only()
    assert (created.type, created.sequence_number) == ("response.created", 0)
    assert s.next_sequence_number == 1
    assert created.response.status == "in_progress"
    assert s.terminal is None


def test_an_end_not_yet_sent_can_be_taken_back_for_another() -> None:
    """The engine's way when storing a response fails after its end was made: `retract`, then
    `fail`; the numbers go on from where the taken-back end began, the response bears no trace
    of that end."""
    s = new_stream()
    s.start()
    s.begin_text("msg_1")
    s.text_delta("Hi.")
    s.end_text()
    completed = s.complete(USAGE, completed_at=200)
    assert s.response.status == "completed" and s.response.completed_at == 200
    s.retract(completed)
    assert s.response.status == "in_progress" and s.terminal is None
    assert s.response.completed_at is None and s.response.usage is None
    failed = s.fail("store_unavailable", "The store is full.", usage=USAGE)
    assert types_of(failed) == ["error", "response.failed"]
    assert [e.sequence_number for e in failed] == [
        completed[0].sequence_number,
        completed[0].sequence_number + 1,
    ]
    assert s.response.status == "failed" and s.response.completed_at is None
    assert s.response.output[0].content[0].text == "Hi."
    with pytest.raises(RuntimeError, match="not yet sent"):
        new_stream().retract([])


@SETTINGS
@given(function_calls, st.text(max_size=20), st.sampled_from(["completed", "incomplete"]))
def test_a_calls_end_is_its_item_with_the_arguments_and_status_set(
    item: Any, arguments: str, status: str
) -> None:
    """The end's item, by the function generated from FunctionCall's fields, is what
    attrs.evolve makes (every other field kept)."""
    assert _ended_call(item, arguments, status) == attrs.evolve(
        item, arguments=arguments, status=status
    )
