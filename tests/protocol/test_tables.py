# The rules as tables, tested without a server: the live rollout's lifetime (the finished state,
# the atomic accept of tool outputs; every pair of its table is in test_lifetime.py) and a
# WebSocket connection's lane book (admission limits, pins, in-place takes, forks, eviction),
# with hypothesis driving sequences.
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.items import InputText, Message
from protocol.lanes import LaneBook, LaneLimits
from protocol.lifetime import TRANSITIONS, IllegalTransition, Lifetime, Move, State
from support.tools import out

# -- lifetime -----------------------------------------------------------------------------------


def test_finished_is_final_and_reachable_from_every_other_state() -> None:
    assert TRANSITIONS[State.FINISHED] == {}
    for state in State:
        if state is not State.FINISHED:
            assert TRANSITIONS[state][Move.FINISH] is State.FINISHED


def test_outputs_complete_the_pause_in_any_order_and_split() -> None:
    life = Lifetime("resp_1")
    life.pause({"a": "exec", "b": "exec"})
    assert life.accept([out("b")]) is False
    assert life.state is State.SUSPENDED
    note = Message(role="user", content=(InputText(text="also"),))
    assert life.accept([note, out("a")]) is True
    assert life.state is State.RUNNING
    assert life.take_outputs() == [out("b"), note, out("a")]


@pytest.mark.parametrize(
    ("items", "code", "param"),
    [
        ([], "empty_input", "input"),
        ([out("zzz")], "unknown_call_id", "input[0].call_id"),
        ([out("a"), out("a")], "duplicate_call_output", "input[1].call_id"),
    ],
)
def test_a_refused_append_records_nothing(items: list, code: str, param: str) -> None:
    life = Lifetime("resp_1")
    life.pause({"a": "exec", "b": "exec"})
    with pytest.raises(ProtocolError) as info:
        life.accept(items)
    assert (info.value.code, info.value.param) == (code, param)
    assert life.received == [] and life.state is State.SUSPENDED
    assert life.accept([out("a"), out("b")]) is True


def test_of_two_identical_appends_exactly_one_is_accepted() -> None:
    life = Lifetime("resp_1")
    life.pause({"a": "exec"})
    assert life.accept([out("a")]) is True
    with pytest.raises(ProtocolError) as info:
        life.accept([out("a")])
    assert info.value.code == "response_not_suspended" and info.value.status == 409


def test_a_parked_rollout_takes_outputs_and_a_new_client() -> None:
    life = Lifetime("resp_1")
    life.pause({"a": "exec"})
    assert life.handle(Move.DETACH) is State.PARKED
    assert life.handle(Move.ATTACH) is State.SUSPENDED
    assert life.accept([out("a")]) is True


@given(st.lists(st.sampled_from(list(Move)), max_size=30))
def test_random_event_sequences_stay_inside_the_table(events: list[Move]) -> None:
    life = Lifetime("resp_1")
    for event in events:
        before = life.state
        try:
            after = life.handle(event)
        except IllegalTransition:
            assert event not in TRANSITIONS[before]
            assert life.state is before
        else:
            assert TRANSITIONS[before][event] is after


# -- lanes --------------------------------------------------------------------------------------


def test_named_lanes_are_limited_and_the_default_lane_is_free() -> None:
    book: LaneBook[str] = LaneBook(LaneLimits(max_lanes=2, max_queued=100))
    assert book.admit(None, None, 1) is True
    assert book.admit("a", None, 1) is True
    assert book.admit("b", None, 1) is True
    assert book.admit("a", None, 1) is False  # an existing lane
    with pytest.raises(ProtocolError) as info:
        book.admit("c", None, 1)
    assert info.value.code == "websocket_stream_limit_reached"


def test_queue_limits_count_and_bytes() -> None:
    book: LaneBook[str] = LaneBook(LaneLimits(max_queued=2, max_queued_bytes=100))
    book.admit(None, None, 40)
    book.admit(None, None, 40)
    with pytest.raises(ProtocolError) as info:
        book.admit(None, None, 1)
    assert (info.value.code, info.value.status) == ("websocket_queue_limit_reached", 429)
    book.dequeued(40)
    with pytest.raises(ProtocolError):
        book.admit(None, None, 61)  # over the bytes
    book.admit(None, None, 60)


def test_same_lane_continuation_takes_in_place_and_evicts() -> None:
    book: LaneBook[str] = LaneBook()
    book.remember("a", "r1", "ctx1")
    book.admit("a", "r1", 1)
    taken = book.take("r1", "a")
    assert taken is not None and (taken.how, taken.value) == ("in_place", "ctx1")
    assert "r1" not in book
    book.unpin("r1")
    assert book.take("r1", "a") is None  # a miss now


def test_a_fork_copies_and_keeps_the_parent() -> None:
    book: LaneBook[str] = LaneBook()
    book.remember("a", "r1", "ctx1")
    book.admit("b", "r1", 1)
    taken = book.take("r1", "b")
    assert taken is not None and taken.how == "fork"
    assert "r1" in book


def test_pins_keep_a_parent_that_is_no_longer_latest() -> None:
    book: LaneBook[str] = LaneBook()
    book.remember("a", "r1", "ctx1")
    book.admit("b", "r1", 1)  # a fork of r1 is queued
    book.remember("a", "r2", "ctx2")  # lane a moved on
    assert "r1" in book  # pinned by the queued fork
    book.unpin("r1")
    assert "r1" not in book and "r2" in book


def test_a_refused_same_lane_continuation_evicts_its_parent() -> None:
    book: LaneBook[str] = LaneBook()
    book.remember("a", "r1", "ctx1")
    book.refused("r1", "b")  # another lane: kept
    assert "r1" in book
    book.refused("r1", "a")
    assert "r1" not in book and book.latest == {}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["remember", "admit", "unpin"]),
            st.sampled_from([None, "a", "b"]),
            st.sampled_from(["r1", "r2", "r3"]),
        ),
        max_size=40,
    )
)
def test_the_cache_holds_exactly_the_latest_and_the_pinned(
    ops: list[tuple[str, str | None, str]],
) -> None:
    book: LaneBook[str] = LaneBook(LaneLimits(max_queued=1000))
    pins: dict[str, int] = {}
    for op, lane, rid in ops:
        if op == "remember":
            book.remember(lane, rid, rid)
        elif op == "admit":
            book.admit(lane, rid, 1)
            pins[rid] = pins.get(rid, 0) + 1
        elif pins.get(rid):
            book.unpin(rid)
            pins[rid] -= 1
    for rid in ("r1", "r2", "r3"):
        if rid in book:
            assert rid in book.latest.values() or pins.get(rid), rid
    for rid in book.latest.values():
        assert rid in book
