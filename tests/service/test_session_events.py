# The table of WebSocket client events (rollout.service.session.EVENTS) is the one place an
# event is declared: every row decodes its frame, has a handler and a refusal, and the events
# forwarded to another worker are exactly those the owner's side serves (owning.SERVE).
import pytest

from protocol.errors import ProtocolError
from rollout.service import frames
from rollout.service.session import EVENTS, FORWARDED


def test_every_client_event_is_a_row_and_the_refusal_names_them_in_order() -> None:
    assert list(EVENTS) == [
        "response.create",
        "response.append",
        "response.inject",
        "response.steer",
        "response.cancel",
    ]
    with pytest.raises(ProtocolError) as caught:
        frames.event_type({"type": "response.nope"}, EVENTS)
    assert caught.value.code == "unknown_event_type"
    assert "'response.create', " in caught.value.message
    assert caught.value.message.endswith("or 'response.cancel'.")


def test_the_forwarded_events_are_the_ones_the_owner_serves() -> None:
    pytest.importorskip("coredis")  # the owner's side is the `redis` extra's
    from rollout.service.owning import SERVE

    assert FORWARDED == set(SERVE) == {"append", "inject", "cancel"}


def test_a_steer_frame_is_decoded_without_raising_and_says_what_is_wrong() -> None:
    ok = frames.decode_steer(
        {"type": "response.steer", "previous_response_id": "resp_1", "input": "go on"}
    )
    assert (ok.target_id, ok.raw, ok.problem) == ("resp_1", "go on", None)
    extra = frames.decode_steer({"type": "response.steer", "previous_response_id": "r", "x": 1})
    assert extra.problem is not None and "Unknown parameter: 'x'" in extra.problem
    missing = frames.decode_steer({"type": "response.steer", "input": "go on"})
    assert missing.problem == "Missing required parameter: 'previous_response_id'."
