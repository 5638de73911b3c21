# The rollout-lifetime and steering tables of protocol.lifetime, without I/O: every legal and
# illegal move, the atomic accept of tool outputs (sync outputs need a waiting rollout, async
# outputs are accepted in any live state, nothing is recorded from a bad batch), and the steering
# queue (phases, refusals, the pending limit, at most one pending notice per submission, what a
# steering input may hold).
from __future__ import annotations

import pytest

from protocol.errors import ProtocolError
from protocol.items import ComputerCallOutput, InputText, McpApprovalResponse, Message
from protocol.lifetime import (
    REFUSALS,
    STEER_TRANSITIONS,
    TRANSITIONS,
    IllegalTransition,
    Lifetime,
    Move,
    Phase,
    State,
    Steering,
    SteerRefused,
    SteerStep,
    Submission,
    steer_items,
)
from support.tools import out


@pytest.mark.parametrize("state", list(State))
@pytest.mark.parametrize("event", list(Move))
def test_every_pair_of_the_lifetime_table(state: State, event: Move) -> None:
    life = Lifetime("resp_1", state=state)
    expected = TRANSITIONS[state].get(event)
    if expected is None:
        with pytest.raises(IllegalTransition):
            life.handle(event)
        assert life.state is state
    else:
        assert life.handle(event) is expected


def test_late_outputs_are_legal_in_every_live_state_and_change_nothing() -> None:
    for state in (State.RUNNING, State.SUSPENDED, State.PARKED):
        assert TRANSITIONS[state][Move.LATE_OUTPUT] is state
    assert Move.LATE_OUTPUT not in TRANSITIONS[State.FINISHED]


def test_async_output_accepted_while_running_sync_output_refused() -> None:
    life = Lifetime("resp_1")
    assert life.accept([out("call_async")], {"call_async"}) is False
    assert life.take_late() == [out("call_async")] and life.take_late() == []
    with pytest.raises(ProtocolError) as refused:
        life.accept([out("call_sync")], {"call_async"})
    assert refused.value.code == "response_not_suspended"
    with pytest.raises(ProtocolError) as again:
        life.accept([out("call_async")], {"call_async"})
    assert again.value.code == "duplicate_call_output"


def test_a_batch_of_late_and_pending_outputs_resumes_and_returns_the_late_ones() -> None:
    life = Lifetime("resp_1")
    life.pause({"call_a": "exec"})
    assert life.accept([out("call_x"), out("call_a")], {"call_x"}) is True
    assert life.take_late() == [out("call_x")] and life.state is State.RUNNING
    assert life.take_outputs() == [out("call_a")]


def test_nothing_is_recorded_from_a_bad_batch() -> None:
    life = Lifetime("resp_1")
    life.pause({"call_a": "exec", "call_b": "exec"})
    with pytest.raises(ProtocolError) as refused:
        life.accept([out("call_a"), out("call_nope")])
    assert refused.value.code == "unknown_call_id"
    assert life.accept([out("call_a")]) is False  # call_a was not recorded before
    assert life.accept([out("call_b")]) is True


def test_an_inject_takes_no_messages() -> None:
    life = Lifetime("resp_1")
    life.pause({"call_a": "exec"})
    with pytest.raises(ProtocolError) as refused:
        life.accept([Message(role="user", content="hi")], messages=False)
    assert refused.value.param == "input[0].type"
    assert life.accept([Message(role="user", content="hi"), out("call_a")]) is True


def test_a_computer_output_and_an_approval_answer_their_pending_calls() -> None:
    life = Lifetime("resp_1")
    life.pause({"call_cu": "computer", "mcpr_1": "add"})
    screen = ComputerCallOutput(call_id="call_cu", output={"type": "computer_screenshot"})
    yes = McpApprovalResponse(approval_request_id="mcpr_1", approve=True)
    with pytest.raises(ProtocolError) as refused:
        life.accept([screen, McpApprovalResponse(approval_request_id="mcpr_x", approve=True)])
    assert refused.value.code == "unknown_call_id"
    assert refused.value.param == "input[1].approval_request_id"
    assert life.accept([screen]) is False
    with pytest.raises(ProtocolError) as again:
        life.accept([screen])
    assert (again.value.code, again.value.param) == ("duplicate_call_output", "input[0].call_id")
    assert life.accept([yes]) is True
    assert life.take_outputs() == [screen, yes]


def test_a_finished_rollout_takes_nothing_not_even_late_outputs() -> None:
    life = Lifetime("resp_1", state=State.FINISHED)
    with pytest.raises(ProtocolError) as refused:
        life.accept([out("call_async")], {"call_async"})
    assert refused.value.code == "response_not_suspended"


# -- steering -------------------------------------------------------------------------------


def sub(n: int) -> Submission:
    return Submission(id=f"steer_{n}", raw="x", items=[Message(role="user", content="x")])


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("step", list(SteerStep))
def test_every_pair_of_the_steering_table(phase: Phase, step: SteerStep) -> None:
    steering = Steering("resp_1", limit=4, phase=phase)
    expected = STEER_TRANSITIONS[phase].get(step)
    if expected is None:
        with pytest.raises(IllegalTransition):
            steering.handle(step)
    else:
        assert steering.handle(step) is expected


@pytest.mark.parametrize("phase", list(Phase))
def test_which_phases_accept_steering(phase: Phase) -> None:
    steering = Steering("resp_1", limit=4, phase=phase)
    if phase in REFUSALS:
        with pytest.raises(SteerRefused) as refused:
            steering.submit(sub(0))
        assert refused.value.code == REFUSALS[phase][0]
        assert not steering.queue
    else:
        steering.submit(sub(0))
        assert steering.queue == [sub(0)] and steering.phase is phase


def test_the_pending_limit_and_the_commit_in_submission_order() -> None:
    steering = Steering("resp_1", limit=2)
    steering.submit(sub(0))
    steering.submit(sub(1))
    with pytest.raises(SteerRefused) as refused:
        steering.submit(sub(2))
    assert refused.value.code == "too_many_pending_steers"
    steering.handle(SteerStep.WAIT_FOR_INPUT)
    assert [s.id for s in steering.unannounced()] == ["steer_0", "steer_1"]
    assert steering.unannounced() == []  # at most one pending notice per submission
    assert [s.id for s in steering.take()] == ["steer_0", "steer_1"]
    assert steering.phase is Phase.COMPLETED and steering.queue == []


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        ("Use Celsius.", True),
        ([{"role": "user", "content": "a"}], True),
        (
            [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]}],
            True,
        ),
        ("", False),
        ([], False),
        (7, False),
        ([{"role": "assistant", "content": "a"}], False),
        ([{"role": "developer", "content": "a"}], False),
        ([{"type": "function_call_output", "call_id": "c", "output": "a"}], False),
        ([{"role": "user", "content": "a", "id": "msg_1"}], False),
        ([{"role": "user", "content": [{"type": "output_text", "text": "a"}]}], False),
        ([{"role": "user", "content": ""}], False),
        (["a"], False),
    ],
)
def test_what_a_steering_input_may_hold(raw: object, ok: bool) -> None:
    if ok:
        items = steer_items(raw)
        assert all(m.role == "user" for m in items)
    else:
        with pytest.raises(SteerRefused) as refused:
            steer_items(raw)
        assert refused.value.code == "invalid_input"


def test_steering_parts_are_kept() -> None:
    raw = [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]
    assert steer_items(raw)[0].content == (InputText(text="a"),)
